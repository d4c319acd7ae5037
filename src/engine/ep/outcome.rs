//! What an EP run reports: each accepted sweep (`SweepInfo`), the pieces of
//! the evidence log Z_EP, and a converged run's outcome.

use super::kernel::PassStats;
use super::posterior::Posterior;

/// One accepted sweep.
pub struct SweepInfo<'a> {
    pub sweep: usize,
    pub delta: f64,
    /// log Z_EP of the accepted state (None when a site was skipped).
    pub log_z: Option<f64>,
    pub eta: f64,
    pub negative_share: f64,
    pub skipped: usize,
    pub elapsed: f64,
    pub q: &'a Posterior,
}

/// The pieces of log Z_EP; `log_z()` for a centred Gaussian prior.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct EvidenceParts {
    /// Σ log C_ij over the sites.
    pub sum_log_c: f64,
    /// ½ Σ_k log P_k (the Gaussian prior's normaliser, P = prior precisions).
    pub half_log_det_prior_prec: f64,
    pub log_det_q: f64,
    pub r_v_r: f64,
    /// Identical positive/negative rows (not sites): each multiplies Z by e^{−g/2}.
    pub identical_pairs: usize,
    pub g: f64,
    /// Degenerate sites skipped in the final state (then the evidence is invalid).
    pub skipped: usize,
}

impl EvidenceParts {
    /// `Σ log C − ½ log|Σ_prior| − ½ log|Q| + ½ rᵀQ⁻¹r − (g/2)·identical`, or None
    /// when sites were skipped.
    pub fn log_z(&self) -> Option<f64> {
        (self.skipped == 0).then_some(
            self.sum_log_c + self.half_log_det_prior_prec - 0.5 * self.log_det_q + 0.5 * self.r_v_r
                - 0.5 * self.g * self.identical_pairs as f64,
        )
    }
}

/// The result of a converged run (q is `PairEp::posterior`).
#[derive(Debug, Clone)]
pub struct EpOutcome {
    pub sweeps: usize,
    pub eta: f64,
    pub delta: f64,
    pub stats: PassStats,
    pub evidence: EvidenceParts,
    pub negative_share: f64,
    /// The starting (warm) state was invalid and the run restarted from the prior.
    pub cold_restart: bool,
    pub seconds: f64,
    /// Mixed and secant steps taken (`controller`).
    pub extrapolations: usize,
}
