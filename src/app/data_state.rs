//! The data the explorer runs on: being loaded, loaded (what it knows of
//! it) or failed, and what each state says in the status line and the log.

use crate::engine::data::{Dataset, LoadProgress, Prepared, SplitInfo};
use crate::engine::record::DatasetReport;
use crate::spec::DataSpec;
use crate::spec::cost::Sizes;

use super::StatusLine;
use super::messages::{Level, Messages};

/// What the explorer knows of its data.
#[derive(Debug, Clone)]
pub struct DataInfo {
    pub report: DatasetReport,
    pub split: SplitInfo,
    /// Feature names after preparation (the coefficients' order).
    pub names: Vec<String>,
    /// How the data was loaded (None when replaying: nothing to re-run on).
    pub spec: Option<DataSpec>,
}

impl DataInfo {
    pub fn of(ds: &Dataset, prepared: &Prepared, spec: DataSpec) -> DataInfo {
        DataInfo {
            report: DatasetReport::of(ds),
            split: prepared.info.clone(),
            names: prepared.names.clone(),
            spec: Some(spec),
        }
    }

    /// The training set's sizes, as the cost model takes them.
    pub fn sizes(&self) -> Sizes {
        Sizes {
            rows: self.split.train_rows,
            positives: self.split.train_positives,
            features: self.names.len(),
        }
    }
}

#[derive(Debug, Clone)]
pub enum DataState {
    /// The file is being read on its own thread (`pacauc explore`): keys
    /// answer meanwhile, and the default runs start when it arrives.
    Loading {
        path: String,
        /// The file's size, when known.
        bytes: Option<u64>,
        since: std::time::Instant,
        /// Written by the loading thread: the stage, the share of the file
        /// read and the rows counted.
        progress: std::sync::Arc<LoadProgress>,
    },
    Loaded(Box<DataInfo>),
    /// The file could not be loaded; the message says why.
    Failed {
        path: String,
        error: String,
    },
}

/// The status line a data state starts with (None: nothing to say).
pub(super) fn data_status(data: &DataState) -> Option<StatusLine> {
    match data {
        DataState::Failed { .. } => Some(StatusLine {
            text: "the data could not be loaded: see the Dataset pane or the message log (m)"
                .into(),
            error: true,
        }),
        DataState::Loading { path, .. } => Some(StatusLine {
            text: format!("loading {path}… (q quits)"),
            error: false,
        }),
        DataState::Loaded(_) => None,
    }
}

pub(super) fn log_data_state(messages: &mut Messages, data: &DataState) {
    match data {
        DataState::Failed { path, error } => {
            messages.push(Level::Error, format!("could not load {path}: {error}"))
        }
        DataState::Loading { path, bytes, .. } => messages.push(
            Level::Info,
            match bytes {
                Some(b) => format!("loading {path} ({})", crate::spec::cost::bytes(*b as f64)),
                None => format!("loading {path}"),
            },
        ),
        DataState::Loaded(d) => log_data(messages, d),
    }
}

/// Logs what was loaded: the file, the choices made, the features, the data's warnings.
pub(super) fn log_data(messages: &mut Messages, d: &DataInfo) {
    let r = &d.report;
    messages.push(Level::Info, format!("data: {}", r.path));
    if let Some(name) = crate::spec::demo_source::bundled_demo(r.path.as_ref()) {
        messages.push(Level::Info, crate::spec::demo_source::announce(name));
    }
    messages.push(Level::Info, format!("target: {}", r.target_rule));
    messages.push(Level::Info, format!("positive class: {}", r.positive_rule));
    // The panes cut long names; here they are whole.
    messages.push(
        Level::Info,
        format!("features ({}): {}", d.names.len(), d.names.join(", ")),
    );
    for w in &r.warnings {
        messages.push(Level::Warn, format!("data: {w}"));
    }
}
