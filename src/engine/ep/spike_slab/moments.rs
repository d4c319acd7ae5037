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

    pub fn sd(&self) -> Vec<f64> {
        self.var.iter().map(|v| v.sqrt()).collect()
    }

    /// `posterior::delta` on the marginals: max_k max(|m_k − m'_k|/sd'_k, |sd_k/sd'_k − 1|).
    pub fn delta(&self, old: &ThetaMoments) -> f64 {
        let mut d: f64 = 0.0;
        for k in 0..self.mean.len() {
            let (sd, sd_old) = (self.var[k].sqrt(), old.var[k].sqrt());
            d = d
                .max((self.mean[k] - old.mean[k]).abs() / sd_old)
                .max((sd / sd_old - 1.0).abs());
        }
        d
    }
}
