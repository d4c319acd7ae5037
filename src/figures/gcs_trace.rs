//! The great-circle sampler per batch: the largest R-hat and the smallest
//! bulk and tail ESS against steps per chain, each with its stopping target
//! and the end of the warm-up.

use super::traces::{line, slot};
use super::{Axis, Dash, Figure, Mark, Panel, finite};
use crate::engine::event::GcsBatch;

/// Highest R-hat drawn (early batches can be far above; they are clipped).
const RHAT_CEILING: f64 = 2.0;

/// The gcs trace with the run's targets (smallest ESS, largest R-hat). None
/// without batches.
pub fn gcs_trace<'a>(
    batches: impl IntoIterator<Item = &'a GcsBatch>,
    min_ess: f64,
    max_rhat: f64,
    label: &str,
    id: &str,
) -> Option<Figure> {
    let batches: Vec<&GcsBatch> = batches.into_iter().collect();
    let last = *batches.last()?;
    let steps = |b: &GcsBatch| b.steps as f64;
    let warmup = last.warmup as f64;
    let x = || Axis::linear("steps per chain").range(0.0, f64::NAN);
    let rhat = finite(batches.iter().filter_map(|b| Some([steps(b), b.rhat?])));
    let r_hi = rhat
        .iter()
        .map(|p| p[1])
        .fold(max_rhat + 0.01, f64::max)
        .min(RHAT_CEILING);
    let mut r = Panel::new(
        Some("R-hat".into()),
        x(),
        Axis::linear("largest R-hat").range(1.0, r_hi),
    );
    r.series.push(line("R-hat", slot(2, Dash::Solid), rhat));
    r.marks.push(Mark::HLine {
        y: max_rhat,
        label: format!("R-hat ≤ {max_rhat} (target)"),
    });
    let mut e = Panel::new(
        Some("ESS".into()),
        x(),
        Axis::linear("smallest ESS").range(0.0, f64::NAN),
    );
    e.series.push(line(
        "bulk ESS",
        slot(0, Dash::Solid),
        batches
            .iter()
            .filter_map(|b| Some([steps(b), b.ess_bulk?]))
            .collect(),
    ));
    e.series.push(line(
        "tail ESS",
        slot(1, Dash::Dashed),
        batches
            .iter()
            .filter_map(|b| Some([steps(b), b.ess_tail?]))
            .collect(),
    ));
    e.marks.push(Mark::HLine {
        y: min_ess,
        label: format!("ESS ≥ {min_ess} (target)"),
    });
    for p in [&mut r, &mut e] {
        p.marks.push(Mark::VLine {
            x: warmup,
            label: "warm-up end".into(),
        });
    }
    let opt = |v: Option<f64>, d: usize| v.map_or("-".into(), |x| format!("{x:.d$}"));
    Some(Figure {
        id: id.to_string(),
        title: format!("Great-circle sampler: {label}"),
        subtitle: Some(format!(
            "{} chains × {} steps ({} warm-up), R-hat {}, ESS bulk {} / tail {}",
            last.risk.len(),
            last.steps,
            last.warmup,
            opt(last.rhat, 3),
            opt(last.ess_bulk, 0),
            opt(last.ess_tail, 0)
        )),
        panels: vec![r, e],
        columns: 2,
    })
}
