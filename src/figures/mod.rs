//! Chart data computed from run records: one truth for exported plots
//! (`plot/`, `pacauc plot`, the explorer's `p`) and the explorer's panes. A [`Figure`] is a
//! small serde-able value — titles, axes, series, reference marks — with no
//! rendering in it: `plot/` draws it to SVG/PNG, a terminal pane can draw the
//! same series with its own widgets.
//!
//! The computations take the engine's own types (`SmcStage`, `EpSweep`,
//! `Coefficient`, `Histogram`, `Curve`), so a pane can build a figure from a
//! live run's events as well as from a finished record; `from_records` picks
//! every figure a set of records supports and says why the others are skipped.

mod gcs_trace;
mod marginals;
mod records;
mod roc;
mod runs;
mod selection;
mod traces;
mod vb_trace;

use serde::{Deserialize, Serialize};

pub use gcs_trace::gcs_trace;
pub use marginals::{
    GaussianSource, HistogramSource, density_steps, marginal_panel, marginals, normal_curve,
};
pub use records::{PathPoint, PathRecord, Source, file_name, from_records, load};
pub use roc::{RocSource, auc_under, roc};
pub use runs::smc_runs;
pub use selection::{CvCurve, cv_curve, inclusion, inclusion_top, spike_slab_path};
pub use traces::{
    EP_DELTA, EVIDENCE, SMC_MOVES, SMC_SHARES, SmcTargets, ep_convergence, smc_trace,
};
pub use vb_trace::{VB_GRADIENT, VB_OBJECTIVE, vb_trace};

/// A chart: one or more panels under a common title and legend.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Figure {
    /// Short name, used for file names (`roc`, `marginals`, `smc-trace-smc`…).
    pub id: String,
    pub title: String,
    /// What the figure shows beyond its title (data set, which split, what was left out).
    pub subtitle: Option<String>,
    pub panels: Vec<Panel>,
    /// Panels per row.
    pub columns: usize,
}

/// One set of axes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Panel {
    pub title: Option<String>,
    pub x: Axis,
    pub y: Axis,
    pub series: Vec<Series>,
    pub marks: Vec<Mark>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Axis {
    pub label: String,
    /// Base-10 logarithmic scale (non-positive values are left out).
    pub log: bool,
    /// Fixed range; None = the data's range (with a little room); a NaN bound
    /// is taken from the data (e.g. `[0, NaN]`: from 0 to the largest value).
    pub range: Option<[f64; 2]>,
    /// Category names at positions 0, 1, … (bar charts); empty = numeric axis.
    pub categories: Vec<String>,
}

impl Axis {
    pub fn linear(label: &str) -> Axis {
        Axis {
            label: label.to_string(),
            log: false,
            range: None,
            categories: Vec::new(),
        }
    }
    pub fn log(label: &str) -> Axis {
        Axis {
            log: true,
            ..Axis::linear(label)
        }
    }
    pub fn range(mut self, lo: f64, hi: f64) -> Axis {
        self.range = Some([lo, hi]);
        self
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Series {
    /// Legend entry (series with the same name and style share one entry).
    pub name: String,
    pub style: Style,
    pub data: Data,
}

/// How a series looks: a palette slot and a dash pattern, so that series stay
/// apart in colour (Okabe–Ito, colour-blind safe) and in greyscale.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Style {
    /// Palette slot (`plot::PALETTE`); `REFERENCE` is the neutral grey of guides.
    pub color: usize,
    pub dash: Dash,
}

/// The palette slot of reference lines and de-emphasised series.
pub const REFERENCE: usize = usize::MAX;

/// The dash patterns series cycle through (`Style::nth`).
pub const DASHES: [Dash; 4] = [Dash::Solid, Dash::Dashed, Dash::Dotted, Dash::DashDot];
/// Series styles before a (colour, dash) pair repeats: the palette's eight
/// colours (`plot::PALETTE`) × the four dashes.
pub const DISTINCT_STYLES: usize = 32;

impl Style {
    /// The `i`-th series' style: colour `i` and dash pattern `i`, both
    /// cycling, the dashes shifted by one at every pass through the palette,
    /// so that no two of the first `DISTINCT_STYLES` series share both colour
    /// and dash (with the dash alone cycling, series 8 looked like series 0).
    pub fn nth(i: usize) -> Style {
        let colors = DISTINCT_STYLES / DASHES.len();
        Style {
            color: i,
            dash: DASHES[(i + i / colors) % DASHES.len()],
        }
    }
    pub fn reference(dash: Dash) -> Style {
        Style {
            color: REFERENCE,
            dash,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Dash {
    Solid,
    Dashed,
    Dotted,
    DashDot,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Data {
    /// A polyline through (x, y) points.
    Line(Vec<[f64; 2]>),
    /// Markers at (x, y) points.
    Points(Vec<[f64; 2]>),
    /// Bars from 0 to `y` over [x0, x1] (histograms, inclusion probabilities).
    Bars(Vec<Bar>),
    /// A shaded region between `lo` and `hi` over `x` (fold ranges).
    Band {
        x: Vec<f64>,
        lo: Vec<f64>,
        hi: Vec<f64>,
    },
}

impl Data {
    /// Number of drawn elements (points, bars, band columns).
    pub fn len(&self) -> usize {
        match self {
            Data::Line(p) | Data::Points(p) => p.len(),
            Data::Bars(b) => b.len(),
            Data::Band { x, .. } => x.len(),
        }
    }
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// How a legend entry shows its series.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Swatch {
    Line,
    Fill,
    Point,
}

#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Bar {
    pub x0: f64,
    pub x1: f64,
    pub y: f64,
}

/// A reference mark with its label.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Mark {
    /// Horizontal guide at y (a target, a tolerance, ½).
    HLine { y: f64, label: String },
    /// Vertical guide at x (a chosen grid point).
    VLine { x: f64, label: String },
}

impl Panel {
    pub fn new(title: Option<String>, x: Axis, y: Axis) -> Panel {
        Panel {
            title,
            x,
            y,
            series: Vec::new(),
            marks: Vec::new(),
        }
    }
}

impl Figure {
    /// A figure of one panel.
    pub fn single(id: &str, title: String, subtitle: Option<String>, panel: Panel) -> Figure {
        Figure {
            id: id.to_string(),
            title,
            subtitle,
            panels: vec![panel],
            columns: 1,
        }
    }

    /// The panel titled `title` (the explorer's panes pick theirs by title).
    pub fn panel(&self, title: &str) -> Option<&Panel> {
        self.panels
            .iter()
            .find(|p| p.title.as_deref() == Some(title))
    }

    /// The distinct (name, style) legend entries, in order of appearance.
    pub fn legend(&self) -> Vec<(String, Style, Swatch)> {
        let mut out: Vec<(String, Style, Swatch)> = Vec::new();
        for s in self.panels.iter().flat_map(|p| &p.series) {
            let swatch = match s.data {
                Data::Line(_) => Swatch::Line,
                Data::Points(_) => Swatch::Point,
                Data::Bars(_) | Data::Band { .. } => Swatch::Fill,
            };
            let seen = out
                .iter()
                .any(|(n, st, sw)| *n == s.name && *st == s.style && *sw == swatch);
            if !s.name.is_empty() && !seen {
                out.push((s.name.clone(), s.style, swatch));
            }
        }
        out
    }
}

/// Only the points whose coordinates are finite (charts never see NaN or ±inf).
pub fn finite(points: impl IntoIterator<Item = [f64; 2]>) -> Vec<[f64; 2]> {
    points
        .into_iter()
        .filter(|p| p[0].is_finite() && p[1].is_finite())
        .collect()
}

#[cfg(test)]
pub(crate) mod tests;
