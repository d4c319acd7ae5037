//! An exact Gaussian likelihood `N(y; Xθ, σ² I)` as the likelihood part of
//! spike-and-slab EP: its "site" is the factor itself, so only the prior sites
//! iterate. With an orthogonal design (XᵀX diagonal) q factorises and EP is
//! exact; the tests compare it with enumeration over z ∈ {0,1}^d.

use nalgebra::{DMatrix, DVector};

use super::sweep::{LikelihoodSites, ThetaMoments};
use crate::engine::ep::controller::Mixed;
use crate::engine::ep::kernel::PassStats;
use crate::engine::ep::posterior::{Posterior, PriorTerms};
use crate::engine::numerics::normal::LN_2PI;

pub struct GaussianLik {
    /// XᵀX/σ².
    a: DMatrix<f64>,
    /// Xᵀy/σ².
    b: DVector<f64>,
    /// log of the factor's normaliser: `−(n/2) log(2πσ²) − ‖y‖²/(2σ²)`.
    log_norm: f64,
    q: Option<Posterior>,
    moments: Option<ThetaMoments>,
}

impl GaussianLik {
    pub fn new(x: &DMatrix<f64>, y: &[f64], noise_var: f64) -> GaussianLik {
        let yv = DVector::from_column_slice(y);
        GaussianLik {
            a: x.transpose() * x / noise_var,
            b: x.transpose() * &yv / noise_var,
            log_norm: -0.5 * y.len() as f64 * (LN_2PI + noise_var.ln())
                - 0.5 * yv.norm_squared() / noise_var,
            q: None,
            moments: None,
        }
    }
}

impl LikelihoodSites for GaussianLik {
    fn rebuild(&mut self, prior: &PriorTerms) -> bool {
        let mut q = self.a.clone();
        for (k, p) in prior.prec.iter().enumerate() {
            q[(k, k)] += p;
        }
        let r = &self.b + DVector::from_column_slice(&prior.lin);
        let Some(chol) = q.cholesky() else {
            return false;
        };
        let m = chol.solve(&r);
        let log_det_q = 2.0
            * chol
                .l_dirty()
                .diagonal()
                .iter()
                .map(|d| d.ln())
                .sum::<f64>();
        let q = Posterior {
            v: chol.inverse(),
            r_v_r: r.dot(&m),
            m,
            log_det_q,
        };
        self.moments = Some(ThetaMoments::of(&q));
        self.q = Some(q);
        true
    }
    fn posterior(&self) -> &Posterior {
        self.q.as_ref().expect("rebuilt")
    }
    fn moments(&self) -> &ThetaMoments {
        self.moments.as_ref().expect("rebuilt")
    }
    fn pass(&mut self, _eta: Option<f64>, _evidence: bool) -> PassStats {
        PassStats {
            sum_log_c: self.log_norm,
            ..PassStats::default()
        }
    }
    fn accept(&mut self) {}
    fn shrink(&mut self) {}
    fn can_roll_back(&self) -> bool {
        true
    }
    fn forget_rollback(&mut self) {}
    fn reset(&mut self) {}
    /// No sites of its own: the controller mixes the prior sites alone.
    fn mix_len(&self) -> Option<usize> {
        Some(0)
    }
    fn stage_trial(&mut self, _: usize, _: &mut [f64], _: &[usize], _: &mut [f64]) -> f64 {
        0.0
    }
    fn mix_trial(&mut self, _mixed: Mixed<'_>) -> bool {
        true
    }
    fn is_cold(&self) -> bool {
        true
    }
    fn sites(&self) -> usize {
        0
    }
    fn log_z_const(&self) -> f64 {
        0.0
    }
}
