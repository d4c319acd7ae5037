//! Engine traces: SMC's tempering stages and EP's sweeps. Each takes the
//! events as an iterator, so a live run's ring buffer and a record's trace
//! make the same figure (the explorer's panes draw its first panels).

use super::{Axis, Dash, Data, Figure, Mark, Panel, Series, Style, finite};
use crate::engine::event::{EpSweep, SmcStage};

pub(crate) fn line(name: &str, style: Style, pts: Vec<[f64; 2]>) -> Series {
    Series {
        name: name.to_string(),
        style,
        data: Data::Line(finite(pts)),
    }
}

/// A palette slot with its own dash: the slots are chosen so that a series
/// keeps the colour it has on screen (the terminal maps slot i to its i-th
/// ANSI colour) and the file keeps series apart in greyscale.
pub(crate) fn slot(color: usize, dash: Dash) -> Style {
    Style { color, dash }
}

/// What an SMC run aimed at, for the reference lines and the shares: the ESS
/// target τ, the final temperature γ_T, the cap on move steps per stage and
/// the decorrelation threshold of the adaptive moves. Unknown ones are left out.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct SmcTargets {
    pub tau: Option<f64>,
    pub gamma: Option<f64>,
    /// The most move steps a stage may take, and whether the moves stop early
    /// once decorrelated (adaptive) or always take that many (fixed).
    pub moves_cap: Option<(usize, bool)>,
    pub decorrelation: Option<f64>,
}

impl SmcTargets {
    /// From a record's `parameters` (the engine's settings) and its γ.
    pub fn of_parameters(p: &serde_json::Value, gamma: Option<f64>) -> SmcTargets {
        let num = |k: &str| p.get(k).and_then(|x| x.as_f64());
        let moves = p.get("moves");
        let adaptive = moves
            .and_then(|m| m.get("adaptive"))
            .and_then(|a| a.get("max"))
            .and_then(|x| x.as_u64());
        let fixed = moves
            .and_then(|m| m.get("fixed").or(Some(m)))
            .and_then(|x| x.as_u64());
        // Waste-free SMC moves every chain P − 1 steps.
        let waste_free = p.get("waste_free").and_then(|x| x.as_u64());
        let moves_cap = match (waste_free, adaptive, fixed) {
            (Some(w), _, _) => Some(((w.saturating_sub(1)).max(1) as usize, false)),
            (None, Some(k), _) => Some((k as usize, true)),
            (None, None, Some(k)) => Some((k as usize, false)),
            _ => None,
        };
        SmcTargets {
            tau: num("ess"),
            gamma,
            moves_cap,
            decorrelation: num("decorrelation"),
        }
    }
}

/// Panel titles the explorer's panes look up.
pub const SMC_SHARES: &str = "tempering and reweighting";
pub const SMC_MOVES: &str = "moves per stage";
pub const EP_DELTA: &str = "convergence";
pub const EVIDENCE: &str = "evidence";

/// SMC per stage: ESS/N, γ_t/γ_T and the acceptance rate on one [0, 1] panel
/// with the ESS target τ; the move steps (as a share of their cap) and the
/// largest |correlation| with the stage start against the decorrelation
/// threshold; γ_t on a log scale; the running log Z_t. None without stages.
pub fn smc_trace<'a>(
    stages: impl IntoIterator<Item = &'a SmcStage>,
    targets: &SmcTargets,
    label: &str,
    id: &str,
) -> Option<Figure> {
    let stages: Vec<&SmcStage> = stages.into_iter().collect();
    let last = *stages.last()?;
    let at = |s: &SmcStage| s.stage as f64;
    // Stage 0 is the prior draw: no reweighting, no moves.
    let moved = || stages.iter().filter(|s| s.stage > 0);
    let gamma_t = targets
        .gamma
        .filter(|g| g.is_finite() && *g > 0.0)
        .unwrap_or(last.gamma);
    let mut shares = Panel::new(
        Some(SMC_SHARES.into()),
        Axis::linear("stage"),
        Axis::linear("share").range(0.0, 1.0),
    );
    shares.series.push(line(
        "ESS/N",
        slot(0, Dash::Solid),
        moved().map(|s| [at(s), s.ess_frac]).collect(),
    ));
    if gamma_t > 0.0 {
        shares.series.push(line(
            "γ/γ_T",
            slot(1, Dash::Dashed),
            stages.iter().map(|s| [at(s), s.gamma / gamma_t]).collect(),
        ));
    }
    shares.series.push(line(
        "accepted",
        slot(3, Dash::Dotted),
        moved().map(|s| [at(s), s.acceptance]).collect(),
    ));
    if let Some(t) = targets.tau {
        shares.marks.push(Mark::HLine {
            y: t,
            label: format!("τ = {t}: the ESS target"),
        });
    }
    let mut moves = match targets.moves_cap {
        Some((cap, adaptive)) => {
            let mut p = Panel::new(
                Some(SMC_MOVES.into()),
                Axis::linear("stage"),
                Axis::linear("share").range(0.0, 1.0),
            );
            let kind = if adaptive { "≤" } else { "=" };
            p.series.push(line(
                &format!("moves/K (K {kind} {cap})"),
                slot(4, Dash::DashDot),
                moved()
                    .map(|s| [at(s), s.moves as f64 / cap.max(1) as f64])
                    .collect(),
            ));
            p
        }
        None => {
            let mut p = Panel::new(
                Some(SMC_MOVES.into()),
                Axis::linear("stage"),
                Axis::linear("moves").range(0.0, f64::NAN),
            );
            p.series.push(line(
                "moves",
                slot(4, Dash::DashDot),
                moved().map(|s| [at(s), s.moves as f64]).collect(),
            ));
            p
        }
    };
    let corr: Vec<[f64; 2]> = stages
        .iter()
        .filter_map(|s| Some([at(s), s.max_correlation?.min(1.0)]))
        .collect();
    if !corr.is_empty() && targets.moves_cap.is_some() {
        moves
            .series
            .push(line("|corr|", slot(2, Dash::Dashed), corr));
        if let Some(c) = targets.decorrelation {
            moves.marks.push(Mark::HLine {
                y: c,
                label: format!("|corr| ≤ {c} stops the moves"),
            });
        }
    }
    let mut gamma = Panel::new(
        Some("temperature γ_t".into()),
        Axis::linear("stage"),
        Axis::log("γ_t"),
    );
    gamma.series.push(line(
        "γ_t",
        slot(1, Dash::Solid),
        stages
            .iter()
            .filter(|s| s.gamma > 0.0)
            .map(|s| [at(s), s.gamma])
            .collect(),
    ));
    let mut log_z = Panel::new(
        Some(EVIDENCE.into()),
        Axis::linear("stage"),
        Axis::linear("log Z_t"),
    );
    log_z.series.push(line(
        "log Z_t",
        slot(5, Dash::Solid),
        stages.iter().map(|s| [at(s), s.log_z]).collect(),
    ));
    Some(Figure {
        id: id.to_string(),
        title: format!("SMC trace: {label}"),
        subtitle: Some(format!(
            "{} stages to γ = {}, log Z = {:.3}",
            last.stage,
            (last.gamma * 1e4).round() / 1e4,
            last.log_z
        )),
        panels: vec![shares, moves, gamma, log_z],
        columns: 2,
    })
}

/// A y range for a trace whose first points may be far off its settled
/// values (EP's log Z before the sites agree): the range of the points after
/// the first `skip`, widened to hold them; None when the whole range is fine.
fn settled_range(values: &[f64], skip: usize) -> Option<[f64; 2]> {
    let rest = values.get(skip..).filter(|r| r.len() >= 2)?;
    let (lo, hi) = rest
        .iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(l, h), &v| {
            (l.min(v), h.max(v))
        });
    let (all_lo, all_hi) = values
        .iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(l, h), &v| {
            (l.min(v), h.max(v))
        });
    let span = (hi - lo).max(1e-9 * lo.abs().max(1.0));
    // Only worth it when the early points stretch the axis several times over.
    if (all_hi - all_lo) <= 4.0 * span {
        return None;
    }
    let pad = 0.5 * span.max(1.0);
    Some([lo - pad, hi + pad])
}

/// EP per sweep: the convergence measure Δ_t on a log scale against the
/// tolerance line tol·η_t, log Z_EP when recorded, and the damping η and the
/// share of negative sites. x is the sweep's position in the run: tuning loops
/// (ARD, γ by CV) restart the engine's sweep count. None without sweeps.
pub fn ep_convergence<'a>(
    sweeps: impl IntoIterator<Item = &'a EpSweep>,
    tol: Option<f64>,
    label: &str,
    id: &str,
) -> Option<Figure> {
    let sweeps: Vec<&EpSweep> = sweeps.into_iter().collect();
    let last = *sweeps.last()?;
    let at = |i: usize| (i + 1) as f64;
    let mut delta = Panel::new(
        Some(EP_DELTA.into()),
        Axis::linear("sweep"),
        Axis::log("Δ_t (max change, in sds)"),
    );
    delta.series.push(line(
        "Δ_t",
        slot(2, Dash::Solid),
        sweeps
            .iter()
            .enumerate()
            .filter(|(_, s)| s.delta > 0.0)
            .map(|(i, s)| [at(i), s.delta])
            .collect(),
    ));
    if let Some(t) = tol {
        delta.series.push(line(
            "stop below tol·η_t",
            Style::reference(Dash::Dashed),
            sweeps
                .iter()
                .enumerate()
                .map(|(i, s)| [at(i), t * s.eta])
                .collect(),
        ));
    }
    let mut panels = vec![delta];
    let z: Vec<[f64; 2]> = finite(
        sweeps
            .iter()
            .enumerate()
            .filter_map(|(i, s)| Some([at(i), s.log_z?])),
    );
    let mut note = String::new();
    if !z.is_empty() {
        let mut y = Axis::linear("log Z_EP");
        // The first sweeps' log Z (sites far from agreeing) can be thousands
        // away from the settled value and flatten the rest: kept off the scale.
        let values: Vec<f64> = z.iter().map(|p| p[1]).collect();
        let skip = (values.len() / 10).max(3);
        if let Some([lo, hi]) = settled_range(&values, skip) {
            let off = values.iter().filter(|v| **v < lo || **v > hi).count();
            y = y.range(lo, hi);
            note = format!(" · {off} early log Z_EP value(s) off the evidence scale");
        }
        let mut p = Panel::new(Some(EVIDENCE.into()), Axis::linear("sweep"), y);
        p.series.push(line("log Z_EP", slot(4, Dash::Solid), z));
        panels.push(p);
    }
    let mut damp = Panel::new(
        Some("damping and negative sites".into()),
        Axis::linear("sweep"),
        Axis::linear("value").range(0.0, f64::NAN),
    );
    damp.series.push(line(
        "damping η",
        slot(1, Dash::Dotted),
        sweeps
            .iter()
            .enumerate()
            .map(|(i, s)| [at(i), s.eta])
            .collect(),
    ));
    damp.series.push(line(
        "share of negative sites",
        slot(3, Dash::DashDot),
        sweeps
            .iter()
            .enumerate()
            .map(|(i, s)| [at(i), s.negative_share])
            .collect(),
    ));
    panels.push(damp);
    let columns = if panels.len() == 3 { 3 } else { 2 };
    Some(Figure {
        id: id.to_string(),
        title: format!("EP convergence: {label}"),
        subtitle: Some(format!(
            "{} sweeps, last Δ = {:.2e}{}{note}",
            sweeps.len(),
            last.delta,
            last.log_z
                .map_or(String::new(), |z| format!(", log Z_EP = {z:.3}"))
        )),
        panels,
        columns,
    })
}
