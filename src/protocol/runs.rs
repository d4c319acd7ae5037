//! One run of the protocol: its spec (the same `RunSpec` that `pacauc fit`
//! makes from the same flags), its record on disk (reused when its spec is
//! the one that would run now, re-run otherwise), and the run itself.

use std::path::{Path, PathBuf};
use std::time::Instant;

use serde::{Deserialize, Serialize};

use super::Mode;
use super::config::{DataPlan, EP_KEY, GammaPolicy, MethodPlan, QUICK_FOLDS, QUICK_GRID};
use crate::engine::Control;
use crate::engine::data::{Dataset, Prepared};
use crate::engine::record::{RunRecord, write_atomic};
use crate::spec::{self, PriorKind, RunSpec, registry};

/// Which run: data set, method column, split seed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunId {
    pub data: String,
    pub key: &'static str,
    pub seed: u64,
}

impl RunId {
    /// `pima_ep-ard_3`: the record's file stem.
    pub fn stem(&self) -> String {
        format!("{}_{}_{}", self.data, self.key, self.seed)
    }
    pub fn record_path(&self, records: &Path) -> PathBuf {
        records.join(format!("{}.json", self.stem()))
    }
    /// A failed run's file (its spec and error), so a resume does not repeat it.
    pub fn failure_path(&self, records: &Path) -> PathBuf {
        records.join(format!("{}.failed", self.stem()))
    }
}

/// Where a run's γ came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GammaSource {
    /// A baseline: no γ.
    None,
    /// The method's own cross-validation.
    Cv,
    /// EP Gaussian's CV on the same split, and why.
    FromEp(String),
}

impl GammaSource {
    /// The γ source of `m` on `data` (the policy table, the data set's
    /// exceptions, and what the registry allows).
    pub fn of(m: &MethodPlan, data: &DataPlan, mode: Mode) -> GammaSource {
        match m.gamma {
            GammaPolicy::None => GammaSource::None,
            GammaPolicy::FromEp => GammaSource::FromEp(m.gamma_why.into()),
            GammaPolicy::Cv => {
                if let Some(why) = data.from_ep_reason(m.key) {
                    return GammaSource::FromEp(why.into());
                }
                let prior = prior_of(m.settings_for(mode));
                let gamma = registry::setting_of("gamma").expect("γ is a setting");
                if gamma.auto_allowed(m.method, Some(prior)) {
                    GammaSource::Cv
                } else {
                    GammaSource::FromEp(format!(
                        "no γ by CV for {} with the {} prior yet",
                        m.method,
                        prior.name()
                    ))
                }
            }
        }
    }
}

fn prior_of(settings: &[(&str, &str)]) -> PriorKind {
    settings
        .iter()
        .find(|(k, _)| *k == "prior")
        .and_then(|(_, v)| serde_json::from_value(serde_json::json!(v)).ok())
        .unwrap_or_default()
}

/// The spec of method `m` on `data` for split `seed`; `ep_gamma` is the γ EP
/// Gaussian chose on this split (needed by the `FromEp` runs: Err says why
/// the run cannot be made without it).
pub fn spec_of(
    m: &MethodPlan,
    data: &DataPlan,
    file: &Path,
    seed: u64,
    mode: Mode,
    ep_gamma: Option<f64>,
) -> Result<RunSpec, String> {
    let settings = m.settings_for(mode);
    let prior = prior_of(settings);
    let source = GammaSource::of(m, data, mode);
    let gamma_text = match &source {
        GammaSource::None => None,
        GammaSource::Cv => Some("auto".to_string()),
        GammaSource::FromEp(_) => Some(ep_gamma.map(|g| format!("{g}")).ok_or_else(|| {
            "needs the γ EP Gaussian chose on this split, and that run did not finish".to_string()
        })?),
    };
    let cv = source == GammaSource::Cv;
    let bayesian = registry::method(m.method).is_some_and(|i| i.bayesian);
    let applies = |key: &str| {
        registry::setting_of(key).is_some_and(|s| s.applies(m.method, bayesian.then_some(prior)))
    };
    let seed_text = seed.to_string();
    let quick = mode == Mode::Quick;
    let folds = (data.folds)
        .or(quick.then_some(QUICK_FOLDS))
        .map(|f| f.to_string());
    let grid = data.grid.or(quick.then_some(QUICK_GRID));
    let mut given: Vec<(&str, &str)> = settings.to_vec();
    for o in data.overrides_of(m.key) {
        given.retain(|(k, _)| *k != o.key);
        if !o.value.is_empty() {
            given.push((o.key, o.value));
        }
    }
    if let Some(f) = folds.as_ref().filter(|_| applies("folds")) {
        given.push(("folds", f));
    }
    if let (Some(g), true) = (grid, cv) {
        given.push(("gamma_grid", g));
    }
    if quick && applies("is_draws") {
        given.push(("is_draws", "0"));
    }
    if let Some(g) = &gamma_text {
        given.push(("gamma", g));
    }
    for (k, v) in &data.data_settings {
        given.push((k, v));
    }
    given.push(("seed", &seed_text));
    spec::from_given(file.to_path_buf(), m.method, &given).map_err(|e| e.to_string())
}

/// What became of a run.
#[derive(Debug, Clone, PartialEq)]
pub enum Status {
    /// Fitted now.
    Fresh,
    /// Its record was on disk with the same spec.
    Reused,
    /// The engine or the data refused (the message); reused failures too.
    Failed(String),
    /// Not run, and why.
    Skipped(String),
}

/// The numbers the tables need from a record.
#[derive(Debug, Clone, PartialEq)]
pub struct Summary {
    pub test_auc: Option<f64>,
    /// DeLong's SE of `test_auc` (None in records from before it).
    pub test_se: Option<f64>,
    pub fit_seconds: f64,
    pub gamma: Option<f64>,
    pub train_rows: usize,
    pub converged: bool,
    /// The record's answer is not the method's own but a named alternative
    /// (power EP where EP has no fixed point in reach): the warning saying so.
    pub alternative: Option<String>,
}

impl Summary {
    pub fn of(r: &RunRecord) -> Summary {
        Summary {
            test_auc: r.auc.test,
            test_se: r.auc.test_interval.as_ref().map(|i| i.se),
            fit_seconds: r.seconds.fit,
            gamma: r.gamma,
            train_rows: r.split.train_rows,
            converged: r.converged,
            alternative: (r.warnings.iter())
                .find(|w| w.code == crate::engine::quality::code::POWER_EP)
                .map(|w| w.message.clone()),
        }
    }
    pub fn gamma_over_n(&self) -> Option<f64> {
        self.gamma
            .filter(|_| self.train_rows > 0)
            .map(|g| g / self.train_rows as f64)
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct RunResult {
    pub id: RunId,
    pub status: Status,
    pub summary: Option<Summary>,
    /// Wall seconds this invocation spent on it (0 when reused or skipped).
    pub wall: f64,
}

/// A failed run as saved (`RunId::failure_path`).
#[derive(Debug, Serialize, Deserialize)]
struct Failure {
    spec: serde_json::Value,
    error: String,
    seconds: f64,
}

/// A record on disk whose spec is `spec`, or None (absent, unreadable, or
/// made with another spec: then it is run again).
pub fn reusable(path: &Path, spec: &RunSpec) -> Option<RunRecord> {
    let text = std::fs::read_to_string(path).ok()?;
    let record = RunRecord::from_json(&text).ok()?;
    (RunSpec::from_value(&record.spec).ok()? == *spec).then_some(record)
}

fn reusable_failure(path: &Path, spec: &RunSpec) -> Option<String> {
    let text = std::fs::read_to_string(path).ok()?;
    let f: Failure = serde_json::from_str(&text).ok()?;
    (RunSpec::from_value(&f.spec).ok()? == *spec).then_some(f.error)
}

/// The data of one split, loaded once for all the runs of the split that need fitting.
#[derive(Default)]
pub struct SplitData {
    loaded: Option<Result<(Dataset, Prepared), String>>,
}

impl SplitData {
    fn get(&mut self, spec: &RunSpec) -> Result<&(Dataset, Prepared), String> {
        self.loaded
            .get_or_insert_with(|| spec.data.load())
            .as_ref()
            .map_err(Clone::clone)
    }
}

/// Runs `spec` (or reuses its record) and saves the record atomically.
/// Returns the status and, for a finished run, the record.
pub fn run_or_reuse(
    id: &RunId,
    spec: &RunSpec,
    records: &Path,
    data: &mut SplitData,
) -> (Status, Option<RunRecord>) {
    let path = id.record_path(records);
    if let Some(r) = reusable(&path, spec) {
        return (Status::Reused, Some(r));
    }
    let failed = id.failure_path(records);
    if let Some(e) = reusable_failure(&failed, spec) {
        return (Status::Failed(e), None);
    }
    let t0 = Instant::now();
    match fit(spec, data) {
        Ok(record) => {
            let _ = std::fs::remove_file(&failed);
            match write_atomic(&path, record.to_json().as_bytes()) {
                Ok(()) => (Status::Fresh, Some(record)),
                Err(e) => (
                    Status::Failed(format!("{}: cannot write the record: {e}", path.display())),
                    None,
                ),
            }
        }
        Err(error) => {
            let f = Failure {
                spec: spec.to_value(),
                error: error.clone(),
                seconds: t0.elapsed().as_secs_f64(),
            };
            let text = serde_json::to_string_pretty(&f).expect("failures serialise");
            let _ = write_atomic(&failed, text.as_bytes());
            (Status::Failed(error), None)
        }
    }
}

/// Loads, builds and runs `spec` as `pacauc fit` does, and makes its record.
fn fit(spec: &RunSpec, data: &mut SplitData) -> Result<RunRecord, String> {
    let t0 = Instant::now();
    let (ds, prepared) = data.get(spec)?;
    let load = t0.elapsed().as_secs_f64();
    let spec::Built { engine, problem } = spec::build(spec, prepared).map_err(|e| e.to_string())?;
    spec::run::record(
        spec,
        (ds, prepared),
        engine.as_ref(),
        &problem,
        &Control::new(),
        &mut crate::engine::NoObserver,
        load,
    )
    .map_err(|e| e.to_string())
}

/// The runs of one split of `data`, in `methods` order (EP Gaussian first:
/// the `FromEp` runs take its γ). `fit`: run what has no record; otherwise
/// only the records on disk count and the runs without one are left out.
#[allow(clippy::too_many_arguments)]
pub fn run_split(
    data: &DataPlan,
    file: &Path,
    seed: u64,
    methods: &[&'static MethodPlan],
    mode: Mode,
    records: &Path,
    fit: bool,
    report: &(dyn Fn(&RunResult) + Sync),
) -> Vec<RunResult> {
    let mut split = SplitData::default();
    let mut ep_gamma = None;
    let mut out = Vec::new();
    for m in methods {
        let id = RunId {
            data: data.name.clone(),
            key: m.key,
            seed,
        };
        let t0 = Instant::now();
        let (status, record) = match data.skip_reason(m.key) {
            Some(why) => (Status::Skipped(why.to_string()), None),
            None => match spec_of(m, data, file, seed, mode, ep_gamma) {
                Ok(spec) if fit => run_or_reuse(&id, &spec, records, &mut split),
                // From disk: a saved failure counts too (the tables say why a
                // split is missing instead of dropping it silently).
                Ok(spec) => match reusable(&id.record_path(records), &spec) {
                    Some(r) => (Status::Reused, Some(r)),
                    None => match reusable_failure(&id.failure_path(records), &spec) {
                        Some(e) => (Status::Failed(e), None),
                        None => continue,
                    },
                },
                Err(why) if fit => (Status::Skipped(why), None),
                // Waiting for EP Gaussian's γ on this split: not run yet.
                Err(_) => continue,
            },
        };
        if m.key == EP_KEY {
            ep_gamma = record.as_ref().and_then(|r| r.gamma);
        }
        let result = RunResult {
            id,
            wall: if status == Status::Fresh {
                t0.elapsed().as_secs_f64()
            } else {
                0.0
            },
            summary: record.as_ref().map(Summary::of),
            status,
        };
        if fit {
            report(&result);
        }
        out.push(result);
    }
    out
}
