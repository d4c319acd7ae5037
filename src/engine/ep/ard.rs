//! Automatic relevance determination: prior `θ_k ~ N(0, ϑ_k)` with the ϑ_k
//! maximising log Z_EP (ALGORITHMS.md §4, §8). At an EP fixed point
//! `∂ log Z_EP/∂ log ϑ_k = ½((V_kk + m_k²)/ϑ_k − 1)`; we iterate MacKay's
//! fixed point `ϑ_k ← m_k²/(1 − V_kk/ϑ_k)` (EM's `ϑ_k ← V_kk + m_k²` where that
//! is undefined; `select::fixed_point`), each step a warm-started EP run. A common rescaling of all
//! ϑ_k leaves the evidence unchanged (§2), so the mean of the ϑ_k is held at
//! its starting value.

use serde::Serialize;

use super::design::Design;
use super::linear::LinearEp;
use super::outcome::{EpOutcome, SweepInfo};
use super::settings::EpSettings;
use crate::engine::interface::{Control, EngineError};
use crate::engine::select::{FixedPointRule, fixed_point};

#[derive(Debug, Clone, Copy, PartialEq, Serialize, serde::Deserialize)]
pub struct ArdSettings {
    /// Most evidence iterations (EP runs).
    pub max_iter: usize,
    /// Stop when no relevant ϑ_k changes by more than this factor (log scale)…
    pub tol: f64,
    /// …or when log Z_EP changed by less than this over an iteration (the
    /// evidence is flat along common and, often, along extreme ratios).
    pub evidence_tol: f64,
}

impl Default for ArdSettings {
    fn default() -> Self {
        ArdSettings {
            max_iter: 100,
            tol: 1e-3,
            evidence_tol: 1e-6,
        }
    }
}

/// One evidence iteration.
#[derive(Debug, Clone, Serialize)]
pub struct ArdStep {
    pub iteration: usize,
    /// log Z_EP at the variances of this iteration.
    pub log_z: Option<f64>,
    /// Largest |Δ log ϑ_k| of the update that followed (relevant features).
    pub max_change: f64,
    pub sweeps: usize,
}

/// The result: last EP outcome (at `vars`), the variances and the trace.
pub struct ArdResult {
    pub outcome: EpOutcome,
    pub vars: Vec<f64>,
    pub trace: Vec<ArdStep>,
    pub converged: bool,
}

/// Variances below this share of the largest are "pruned": their further
/// shrinking does not hold up convergence (relative, so scale-free).
const PRUNED: f64 = 1e-8;

/// The update of the ϑ_k from q's moments (θ-space), normalised to keep the
/// mean `level`.
pub fn update_vars(vars: &[f64], mean: &[f64], sd: &[f64], level: f64) -> Vec<f64> {
    let mut new: Vec<f64> = vars
        .iter()
        .zip(mean.iter().zip(sd))
        .map(|(&v, (&m, &s))| {
            let var = s * s;
            let well_determined = 1.0 - var / v;
            if well_determined > 1e-12 && well_determined < 1.0 && m * m > 0.0 {
                m * m / well_determined
            } else {
                var + m * m
            }
        })
        .collect();
    let max = new.iter().cloned().fold(0.0, f64::max);
    for v in new.iter_mut() {
        *v = v.max(max * 1e-10).max(f64::MIN_POSITIVE);
    }
    let scale = level / (new.iter().sum::<f64>() / new.len() as f64);
    new.iter().map(|v| v * scale).collect()
}

/// Runs EP and the evidence iterations at γ (`select::fixed_point`),
/// warm-starting every EP run. A step whose EP run does not converge is halved
/// (in log ϑ) up to four times; after that the last converged variances are
/// kept (`converged = false`).
pub fn optimise(
    lep: &mut LinearEp,
    gamma: f64,
    s: &EpSettings,
    a: &ArdSettings,
    ctl: &Control,
    on_sweep: &mut dyn FnMut(&SweepInfo<'_>, &Design),
    on_step: &mut dyn FnMut(&ArdStep),
) -> Result<ArdResult, EngineError> {
    let level = lep.vars().iter().sum::<f64>() / lep.vars().len() as f64;
    let mut trace: Vec<ArdStep> = Vec::new();
    let rule = FixedPointRule {
        max_iter: a.max_iter,
        halvings: 4,
        reevaluate: true,
    };
    let start = lep.vars().to_vec();
    // An evaluation: EP's outcome and θ's moments at the variances.
    let fp = fixed_point(
        start,
        &rule,
        &mut |vars: &Vec<f64>| {
            if lep.vars() != vars.as_slice() {
                lep.set_vars(vars);
            }
            let o = lep.run(gamma, s, ctl, on_sweep)?;
            Ok((o, lep.mean(), lep.sd()))
        },
        &mut |vars, (outcome, mean, sd), iteration| {
            let new = update_vars(vars, mean, sd, level);
            let top = new.iter().cloned().fold(0.0, f64::max);
            let max_change = new
                .iter()
                .zip(vars)
                .filter(|(n, o)| **n > PRUNED * top || **o > PRUNED * top)
                .map(|(n, o)| (n / o).ln().abs())
                .fold(0.0, f64::max);
            let step = ArdStep {
                iteration,
                log_z: outcome.evidence.log_z(),
                max_change,
                sweeps: outcome.sweeps,
            };
            let flat = match (trace.last().and_then(|s| s.log_z), step.log_z) {
                (Some(z0), Some(z1)) => (z1 - z0).abs() < a.evidence_tol,
                _ => false,
            };
            on_step(&step);
            trace.push(step);
            (new, max_change < a.tol || flat)
        },
        &|old: &Vec<f64>, new: &Vec<f64>, t| {
            old.iter()
                .zip(new)
                .map(|(o, n)| (o.ln() + t * (n.ln() - o.ln())).exp())
                .collect()
        },
    )?;
    Ok(ArdResult {
        outcome: fp.eval.0,
        vars: fp.point,
        trace,
        converged: fp.settled,
    })
}
