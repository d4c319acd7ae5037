//! What the sweep needs from q, whatever coordinates EP runs in: θ's
//! marginals (for the prior sites and Δ) and θ-space evidence terms.

use crate::engine::ep::posterior::Posterior;

/// θ's marginal moments under q and the θ-space terms of log Z_EP: all the
/// sweep needs from q (a reduced form never builds θ's d × d covariance).
#[derive(Debug, Clone, PartialEq)]
pub struct ThetaMoments {
    pub mean: Vec<f64>,
    /// Var θ_k.
    pub var: Vec<f64>,
    /// log |Q| of θ's precision.
    pub log_det_q: f64,
    /// rᵀ Q⁻¹ r in θ's coordinates.
    pub r_v_r: f64,
}

impl ThetaMoments {
    /// From q in θ's coordinates (the primal form).
    pub fn of(q: &Posterior) -> ThetaMoments {
        ThetaMoments {
            mean: q.m.iter().copied().collect(),
            var: (0..q.m.len()).map(|k| q.v[(k, k)]).collect(),
            log_det_q: q.log_det_q,
            r_v_r: q.r_v_r,
        }
    }
}

#[cfg(test)]
impl ThetaMoments {
    pub fn sd(&self) -> Vec<f64> {
        self.var.iter().map(|v| v.sqrt()).collect()
    }
}
