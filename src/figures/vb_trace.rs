//! Variational Bayes per iteration: the objective F = γ·E_ρ[R] + KL (the
//! negative ELBO up to a constant), the gradient's largest component and the
//! step (L-BFGS line-search step, or the stochastic optimiser's step size).

use super::traces::{line, slot};
use super::{Axis, Dash, Data, Figure, Mark, Panel, Series, finite};
use crate::engine::event::VbIter;

pub const VB_OBJECTIVE: &str = "objective";
pub const VB_GRADIENT: &str = "gradient";

/// The VB trace. `exact`: the objective over every item, known once the run
/// ends (the stochastic optimiser's points are held-out estimates of it).
/// None without iterations.
pub fn vb_trace<'a>(
    iters: impl IntoIterator<Item = &'a VbIter>,
    exact: Option<f64>,
    label: &str,
    id: &str,
) -> Option<Figure> {
    let iters: Vec<&VbIter> = iters.into_iter().collect();
    let last = *iters.last()?;
    let estimated = iters.iter().any(|it| it.estimate);
    let at = |it: &VbIter| it.iteration as f64;
    let mut f = Panel::new(
        Some(VB_OBJECTIVE.into()),
        Axis::linear("iteration"),
        Axis::linear("F = γ·E[R] + KL"),
    );
    let pts: Vec<[f64; 2]> = iters.iter().map(|it| [at(it), it.objective]).collect();
    if estimated {
        f.series.push(Series {
            name: "F, held-out estimate".into(),
            style: slot(2, Dash::Solid),
            data: Data::Points(finite(pts)),
        });
        if let Some(e) = exact.filter(|e| e.is_finite()) {
            f.marks.push(Mark::HLine {
                y: e,
                label: format!("exact F = {e:.4} at the end"),
            });
        }
    } else {
        f.series
            .push(line("F = γ·E[R] + KL", slot(2, Dash::Solid), pts));
    }
    let mut g = Panel::new(
        Some(VB_GRADIENT.into()),
        Axis::linear("iteration"),
        Axis::log("‖∇F‖∞"),
    );
    g.series.push(line(
        "‖∇F‖∞",
        slot(4, Dash::Dashed),
        iters
            .iter()
            .filter(|it| it.grad_norm > 0.0)
            .map(|it| [at(it), it.grad_norm])
            .collect(),
    ));
    let optimiser = if estimated { "Adam" } else { "L-BFGS" };
    let mut s = Panel::new(
        Some("step".into()),
        Axis::linear("iteration"),
        Axis::log(if estimated {
            "step size"
        } else {
            "line-search step"
        }),
    );
    s.series.push(line(
        "step",
        slot(0, Dash::Dotted),
        iters
            .iter()
            .filter(|it| it.step > 0.0)
            .map(|it| [at(it), it.step])
            .collect(),
    ));
    let shown = exact.unwrap_or(last.objective);
    Some(Figure {
        id: id.to_string(),
        title: format!("VB trace: {label}"),
        subtitle: Some(format!(
            "{} iterations ({optimiser}), F = {shown:.4}{}, ‖∇F‖∞ = {:.2e}",
            last.iteration,
            if exact.is_none() && last.estimate {
                " (held-out estimate)"
            } else {
                ""
            },
            last.grad_norm
        )),
        panels: vec![f, g, s],
        columns: 3,
    })
}
