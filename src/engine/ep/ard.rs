//! Automatic relevance determination: prior `θ_k ~ N(0, ϑ_k)` with the ϑ_k
//! maximising log Z_EP (ALGORITHMS.md §4, §8). At an EP fixed point
//! `∂ log Z_EP/∂ log ϑ_k = ½((V_kk + m_k²)/ϑ_k − 1)`; we iterate MacKay's
//! fixed point `ϑ_k ← m_k²/(1 − V_kk/ϑ_k)` (EM's `ϑ_k ← V_kk + m_k²` where that
//! is undefined), each step a warm-started EP run. A common rescaling of all
//! ϑ_k leaves the evidence unchanged (§2), so the geometric mean is held at its
//! starting value.

use serde::Serialize;

use super::design::Design;
use super::linear::LinearEp;
use super::pair_ep::{EpOutcome, EpSettings, SweepInfo};
use crate::engine::run::{Control, EngineError};

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
/// geometric mean `gm`.
pub fn update_vars(vars: &[f64], mean: &[f64], sd: &[f64], gm: f64) -> Vec<f64> {
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
        *v = v.max(max * 1e-12).max(f64::MIN_POSITIVE);
    }
    let log_gm = new.iter().map(|v| v.ln()).sum::<f64>() / new.len() as f64;
    let scale = gm / log_gm.exp();
    new.iter().map(|v| v * scale).collect()
}

/// Runs EP and the evidence iterations at γ, warm-starting every EP run.
pub fn optimise(
    lep: &mut LinearEp,
    gamma: f64,
    s: &EpSettings,
    a: &ArdSettings,
    ctl: &Control,
    on_sweep: &mut dyn FnMut(&SweepInfo<'_>, &Design),
    on_step: &mut dyn FnMut(&ArdStep),
) -> Result<ArdResult, EngineError> {
    let gm = (lep.vars().iter().map(|v| v.ln()).sum::<f64>() / lep.vars().len() as f64).exp();
    let mut trace = Vec::new();
    for iteration in 1..=a.max_iter.max(1) {
        let outcome = lep.run(gamma, s, ctl, on_sweep)?;
        let vars = lep.vars().to_vec();
        let new = update_vars(&vars, &lep.mean(), &lep.sd(), gm);
        let top = new.iter().cloned().fold(0.0, f64::max);
        let max_change = new
            .iter()
            .zip(&vars)
            .filter(|(n, o)| **n > PRUNED * top || **o > PRUNED * top)
            .map(|(n, o)| (n / o).ln().abs())
            .fold(0.0, f64::max);
        let step = ArdStep {
            iteration,
            log_z: outcome.evidence.log_z(),
            max_change,
            sweeps: outcome.sweeps,
        };
        let flat = match (trace.last().and_then(|s: &ArdStep| s.log_z), step.log_z) {
            (Some(a0), Some(a1)) => (a1 - a0).abs() < a.evidence_tol,
            _ => false,
        };
        on_step(&step);
        trace.push(step);
        let converged = max_change < a.tol || flat;
        if converged || iteration == a.max_iter.max(1) {
            return Ok(ArdResult {
                outcome,
                vars,
                trace,
                converged,
            });
        }
        lep.set_vars(&new);
    }
    unreachable!("the loop returns")
}
