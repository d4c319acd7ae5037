//! Model choice: cross-validation curves, spike-and-slab inclusion
//! probabilities and the regularisation path over the spike variance.

use super::records::PathRecord;
use super::{Axis, Bar, Dash, Data, Figure, Mark, Panel, Series, Style, finite};
use crate::engine::record::Inclusion;

/// Most bars in an inclusion figure (the highest probabilities).
pub const MAX_BARS: usize = 40;
/// Features named in the path's legend (the largest |mean| along the path).
pub const PATH_NAMED: usize = 8;

pub use crate::engine::record_details::CvCurve;

fn parameter_label(p: &str) -> &str {
    match p {
        "gamma_over_n" => "γ/n",
        "lambda" => "λ (L2 penalty)",
        "rounds" => "boosting rounds",
        other => other,
    }
}

/// Held-out AUC against the grid: the fold mean, the range over folds, and the
/// chosen point.
pub fn cv_curve(cv: &CvCurve, label: &str, id: &str) -> Option<Figure> {
    if cv.grid.is_empty() {
        return None;
    }
    let positive = cv.grid.iter().all(|&g| g > 0.0);
    let xl = parameter_label(&cv.parameter);
    let x = if positive {
        Axis::log(xl)
    } else {
        Axis::linear(xl)
    };
    let mut p = Panel::new(None, x, Axis::linear("held-out AUC"));
    let folds: Vec<(f64, f64, f64)> = cv
        .grid
        .iter()
        .enumerate()
        .filter_map(|(j, &g)| {
            let v: Vec<f64> = cv
                .fold_auc
                .iter()
                .filter_map(|f| f.get(j).copied().flatten())
                .filter(|a| a.is_finite())
                .collect();
            (!v.is_empty()).then(|| {
                let lo = v.iter().copied().fold(f64::INFINITY, f64::min);
                let hi = v.iter().copied().fold(f64::NEG_INFINITY, f64::max);
                (g, lo, hi)
            })
        })
        .collect();
    if !folds.is_empty() {
        p.series.push(Series {
            name: format!("range over {} folds", cv.fold_auc.len()),
            style: Style::nth(0),
            data: Data::Band {
                x: folds.iter().map(|f| f.0).collect(),
                lo: folds.iter().map(|f| f.1).collect(),
                hi: folds.iter().map(|f| f.2).collect(),
            },
        });
    }
    let mean: Vec<[f64; 2]> = cv
        .grid
        .iter()
        .zip(&cv.mean_auc)
        .filter_map(|(&g, a)| Some([g, (*a)?]))
        .collect();
    p.series.push(Series {
        name: "mean over folds".into(),
        style: Style::nth(0),
        data: Data::Line(finite(mean.clone())),
    });
    if let Some(c) = cv.chosen {
        p.marks.push(Mark::VLine {
            x: c,
            label: format!("chosen {xl} = {c}"),
        });
        if let Some(pt) = mean.iter().find(|m| m[0] == c) {
            p.series.push(Series {
                name: "chosen".into(),
                style: Style::nth(1),
                data: Data::Points(vec![*pt]),
            });
        }
    }
    Some(Figure::single(
        id,
        format!("Cross-validation: {label}"),
        Some(format!(
            "{} folds; the grid point with the best mean is chosen",
            cv.fold_auc.len()
        )),
        p,
    ))
}

/// Inclusion probabilities P(z_k = 1 | D), highest first, with the ½ line
/// (the `MAX_BARS` highest).
pub fn inclusion(probs: &[Inclusion], label: &str, id: &str) -> Option<Figure> {
    inclusion_top(probs, label, id, MAX_BARS)
}

/// The inclusion figure with the `most` highest bars (the explorer's pane
/// scrolls through all of them).
pub fn inclusion_top(probs: &[Inclusion], label: &str, id: &str, most: usize) -> Option<Figure> {
    if probs.is_empty() {
        return None;
    }
    let mut sorted: Vec<&Inclusion> = probs.iter().collect();
    sorted.sort_by(|a, b| b.prob.total_cmp(&a.prob));
    sorted.truncate(most);
    let mut x = Axis::linear("feature");
    x.categories = sorted.iter().map(|p| p.name.clone()).collect();
    let mut p = Panel::new(None, x, Axis::linear("P(z_k = 1 | D)").range(0.0, 1.0));
    p.series.push(Series {
        name: format!("{label} inclusion probability"),
        style: Style::nth(2),
        data: Data::Bars(
            sorted
                .iter()
                .enumerate()
                .map(|(i, q)| Bar {
                    x0: i as f64 - 0.35,
                    x1: i as f64 + 0.35,
                    y: if q.prob.is_finite() { q.prob } else { 0.0 },
                })
                .collect(),
        ),
    });
    p.marks.push(Mark::HLine {
        y: 0.5,
        label: "P(z_k = 1 | D) = ½".into(),
    });
    let above = probs.iter().filter(|p| p.prob > 0.5).count();
    let mut sub = format!("{above} of {} features above ½", probs.len());
    if probs.len() > most {
        sub.push_str(&format!(" · the {most} highest shown"));
    }
    Some(Figure::single(
        id,
        format!("Inclusion probabilities: {label}"),
        Some(sub),
        p,
    ))
}

/// RACL14 Fig. 3a: posterior means and inclusion probabilities of every
/// feature against v0/v1, and the evidence. The `PATH_NAMED` features with the
/// largest |mean| along the path are named; the others share one grey entry.
pub fn spike_slab_path(path: &PathRecord, id: &str) -> Option<Figure> {
    let pts: Vec<_> = path.points.iter().filter(|p| p.converged).collect();
    if pts.is_empty() {
        return None;
    }
    let names: Vec<String> = pts[0].coefficients.iter().map(|c| c.name.clone()).collect();
    let peak = |k: usize| {
        pts.iter()
            .filter_map(|p| p.coefficients.get(k))
            .map(|c| c.mean.abs())
            .filter(|m| m.is_finite())
            .fold(0.0, f64::max)
    };
    let mut by_peak: Vec<usize> = (0..names.len()).collect();
    by_peak.sort_by(|&a, &b| peak(b).total_cmp(&peak(a)));
    let rank = |k: usize| by_peak.iter().position(|&j| j == k).unwrap_or(usize::MAX);
    let others = names.len().saturating_sub(PATH_NAMED);
    let style_name = |k: usize| {
        let r = rank(k);
        if r < PATH_NAMED {
            (Style::nth(r), names[k].clone())
        } else {
            (
                Style::reference(Dash::Solid),
                format!("the other {others} features"),
            )
        }
    };
    let x = || Axis::log("spike variance v0 / slab variance v1");
    let mut means = Panel::new(Some("posterior means".into()), x(), Axis::linear("mean"));
    let mut incl = Panel::new(
        Some("inclusion probabilities".into()),
        x(),
        Axis::linear("P(z_k = 1 | D)").range(0.0, 1.0),
    );
    // Grey lines first, so the named features are drawn over them.
    let drawn = by_peak[PATH_NAMED.min(by_peak.len())..]
        .iter()
        .chain(&by_peak[..PATH_NAMED.min(by_peak.len())]);
    for &k in drawn {
        let (style, name) = style_name(k);
        let along = |f: &dyn Fn(&super::records::PathCoefficient) -> f64| {
            finite(
                pts.iter()
                    .filter_map(|p| Some([p.spike_over_slab, f(p.coefficients.get(k)?)])),
            )
        };
        means.series.push(Series {
            name: name.clone(),
            style,
            data: Data::Line(along(&|c| c.mean)),
        });
        incl.series.push(Series {
            name,
            style,
            data: Data::Line(along(&|c| c.inclusion)),
        });
    }
    incl.marks.push(Mark::HLine {
        y: 0.5,
        label: "P(z_k = 1 | D) = ½".into(),
    });
    let mut ev = Panel::new(Some("evidence".into()), x(), Axis::linear("log Z_EP"));
    ev.series.push(Series {
        name: "log Z_EP".into(),
        style: Style::reference(Dash::Dashed),
        data: Data::Line(finite(
            pts.iter()
                .filter_map(|p| Some([p.spike_over_slab, p.log_evidence?])),
        )),
    });
    let failed = path.points.len() - pts.len();
    let mut sub = format!(
        "γ = {}, slab variance {}, prior inclusion p = {:.3}",
        path.gamma, path.slab_var, path.inclusion_prior
    );
    if failed > 0 {
        sub.push_str(&format!(
            " · {failed} grid point(s) did not converge (left out)"
        ));
    }
    Some(Figure {
        id: id.to_string(),
        title: "Spike-and-slab regularisation path".into(),
        subtitle: Some(sub),
        panels: vec![means, incl, ev],
        columns: 3,
    })
}
