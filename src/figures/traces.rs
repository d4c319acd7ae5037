//! Engine traces: SMC's tempering stages and EP's sweeps.

use super::{Axis, Dash, Data, Figure, Mark, Panel, Series, Style, finite};
use crate::engine::event::{EpSweep, SmcStage};

fn line(name: &str, style: Style, pts: Vec<[f64; 2]>) -> Series {
    Series {
        name: name.to_string(),
        style,
        data: Data::Line(finite(pts)),
    }
}

/// SMC per stage: γ_t (log scale), ESS/N and acceptance with the ESS target τ,
/// moves per stage, and the running log Z_t. None without stages.
pub fn smc_trace(stages: &[SmcStage], tau: Option<f64>, label: &str, id: &str) -> Option<Figure> {
    if stages.is_empty() {
        return None;
    }
    let stage = |s: &SmcStage| s.stage as f64;
    let mut gamma = Panel::new(
        Some("temperature γ_t".into()),
        Axis::linear("stage"),
        Axis::log("γ_t"),
    );
    gamma.series.push(line(
        "γ_t",
        Style::nth(0),
        stages
            .iter()
            .filter(|s| s.gamma > 0.0)
            .map(|s| [stage(s), s.gamma])
            .collect(),
    ));
    let mut mix = Panel::new(
        Some("reweighting and moves".into()),
        Axis::linear("stage"),
        Axis::linear("share").range(0.0, 1.0),
    );
    // Stage 0 is the prior draw: no reweighting, no moves.
    let moved = || stages.iter().filter(|s| s.stage > 0);
    mix.series.push(line(
        "ESS/N before resampling",
        Style::nth(1),
        moved().map(|s| [stage(s), s.ess_frac]).collect(),
    ));
    mix.series.push(line(
        "acceptance rate",
        Style::nth(2),
        moved().map(|s| [stage(s), s.acceptance]).collect(),
    ));
    if let Some(t) = tau {
        mix.marks.push(Mark::HLine {
            y: t,
            label: format!("ESS target τ = {t}"),
        });
    }
    let mut moves = Panel::new(
        Some("move steps per stage".into()),
        Axis::linear("stage"),
        Axis::linear("moves").range(0.0, f64::NAN),
    );
    moves.series.push(line(
        "moves",
        Style::nth(3),
        moved().map(|s| [stage(s), s.moves as f64]).collect(),
    ));
    let mut log_z = Panel::new(
        Some("evidence".into()),
        Axis::linear("stage"),
        Axis::linear("log Z_t"),
    );
    log_z.series.push(line(
        "log Z_t",
        Style::nth(4),
        stages.iter().map(|s| [stage(s), s.log_z]).collect(),
    ));
    let last = stages.last().expect("non-empty");
    Some(Figure {
        id: id.to_string(),
        title: format!("SMC trace: {label}"),
        subtitle: Some(format!(
            "{} stages to γ = {}, log Z = {:.3}",
            last.stage,
            (last.gamma * 1e4).round() / 1e4,
            last.log_z
        )),
        panels: vec![gamma, mix, moves, log_z],
        columns: 2,
    })
}

/// EP per sweep: the convergence measure Δ_t on a log scale against the
/// tolerance line tol·η_t, log Z_EP when recorded, and the damping η and the
/// share of negative sites. x is the sweep's position in the run: tuning loops
/// (ARD, γ by CV) restart the engine's sweep count. None without sweeps.
pub fn ep_convergence(
    sweeps: &[EpSweep],
    tol: Option<f64>,
    label: &str,
    id: &str,
) -> Option<Figure> {
    if sweeps.is_empty() {
        return None;
    }
    let at = |i: usize| (i + 1) as f64;
    let mut delta = Panel::new(
        Some("convergence".into()),
        Axis::linear("sweep"),
        Axis::log("Δ_t (max change, in sds)"),
    );
    delta.series.push(line(
        "Δ_t",
        Style::nth(0),
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
    let z: Vec<[f64; 2]> = sweeps
        .iter()
        .enumerate()
        .filter_map(|(i, s)| Some([at(i), s.log_z?]))
        .collect();
    if !z.is_empty() {
        let mut p = Panel::new(
            Some("evidence".into()),
            Axis::linear("sweep"),
            Axis::linear("log Z_EP"),
        );
        p.series.push(line("log Z_EP", Style::nth(1), z));
        panels.push(p);
    }
    let mut damp = Panel::new(
        Some("damping and negative sites".into()),
        Axis::linear("sweep"),
        Axis::linear("value").range(0.0, f64::NAN),
    );
    damp.series.push(line(
        "damping η",
        Style::nth(2),
        sweeps
            .iter()
            .enumerate()
            .map(|(i, s)| [at(i), s.eta])
            .collect(),
    ));
    damp.series.push(line(
        "share of negative sites",
        Style::nth(3),
        sweeps
            .iter()
            .enumerate()
            .map(|(i, s)| [at(i), s.negative_share])
            .collect(),
    ));
    panels.push(damp);
    let last = sweeps.last().expect("non-empty");
    let columns = if panels.len() == 3 { 3 } else { 2 };
    Some(Figure {
        id: id.to_string(),
        title: format!("EP convergence: {label}"),
        subtitle: Some(format!(
            "{} sweeps, last Δ = {:.2e}{}",
            sweeps.len(),
            last.delta,
            last.log_z
                .map_or(String::new(), |z| format!(", log Z_EP = {z:.3}"))
        )),
        panels,
        columns,
    })
}
