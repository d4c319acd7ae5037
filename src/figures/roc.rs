//! ROC curves of one or more runs (RACL14 Fig. 2).

use super::{Axis, Dash, Data, Figure, Panel, Series, Style, finite};
use crate::engine::record::Curve;

/// One run's curve for the ROC figure.
pub struct RocSource<'a> {
    pub label: String,
    pub curve: &'a Curve,
    /// The AUC the run reports for this curve's rows.
    pub auc: f64,
    /// Its 95% confidence interval (DeLong), where the record has one.
    pub interval: Option<(f64, f64)>,
}

impl RocSource<'_> {
    /// "smc (AUC 0.787, 95% CI 0.737–0.837)".
    pub fn legend(&self) -> String {
        match self.interval {
            Some((lo, hi)) => format!(
                "{} (AUC {:.3}, 95% CI {lo:.3}–{hi:.3})",
                self.label, self.auc
            ),
            None => format!("{} (AUC {:.4})", self.label, self.auc),
        }
    }
}

/// Trapezoid area under a ROC polyline (equal to the AUC with ties counted ½
/// when the polyline has a point per distinct score).
pub fn auc_under(curve: &Curve) -> f64 {
    curve
        .fpr
        .windows(2)
        .zip(curve.tpr.windows(2))
        .map(|(f, t)| (f[1] - f[0]) * (t[0] + t[1]) / 2.0)
        .sum()
}

/// The ROC figure; `rows` says which rows the curves are of ("test set (133
/// rows)", "training set").
pub fn roc(runs: &[RocSource], rows: &str) -> Figure {
    let mut panel = Panel::new(
        None,
        Axis::linear("false positive rate").range(0.0, 1.0),
        Axis::linear("true positive rate").range(0.0, 1.0),
    );
    panel.series.push(Series {
        name: "chance (AUC 0.5)".into(),
        style: Style::reference(Dash::Dotted),
        data: Data::Line(vec![[0.0, 0.0], [1.0, 1.0]]),
    });
    for (i, r) in runs.iter().enumerate() {
        let pts = finite(r.curve.fpr.iter().zip(&r.curve.tpr).map(|(&f, &t)| [f, t]));
        panel.series.push(Series {
            name: r.legend(),
            style: Style::nth(i),
            data: Data::Line(pts),
        });
    }
    Figure::single("roc", "ROC curves".into(), Some(rows.to_string()), panel)
}
