//! SMC with `smc_reference = ep`: EP runs first and its Gaussian (mean and
//! covariance of θ) becomes the tempering's reference (`engine::smc::reference`).
//! Methods do not import each other, so the hand-over is here. The draws and
//! log Z stay exact whatever EP's quality; a poor EP only costs stages. Where
//! EP fails or does not converge SMC tempers from the prior (announced).

use crate::engine::ep::Ep;
use crate::engine::interface::{Control, Engine, EngineError, NoObserver, Observer};
use crate::engine::smc::Smc;
use crate::engine::smc::reference::{GaussianReference, ReferenceOrigin};
use crate::engine::{Fit, Problem};
use nalgebra::DVector;

/// EP, then SMC tempered from EP's Gaussian.
pub struct SmcAfterEp {
    pub ep: Ep,
    pub smc: Smc,
}

impl Engine for SmcAfterEp {
    fn name(&self) -> &'static str {
        "smc"
    }

    fn params(&self) -> serde_json::Value {
        self.smc.params()
    }

    fn run(
        &self,
        problem: &Problem,
        ctl: &Control,
        obs: &mut dyn Observer,
    ) -> Result<Fit, EngineError> {
        let t0 = std::time::Instant::now();
        let (reference, why) = match self.ep.run(problem, ctl, &mut NoObserver) {
            Ok(ep) => match ep.covariance.clone().or_else(|| dense(&ep)) {
                Some(cov) if ep.converged => (
                    Some(GaussianReference {
                        mean: DVector::from_vec(ep.mean),
                        cov,
                    }),
                    None,
                ),
                Some(_) => (None, Some("EP did not converge".to_string())),
                None => (None, Some("EP gave no full covariance".to_string())),
            },
            Err(EngineError::Cancelled) => return Err(EngineError::Cancelled),
            Err(e) => (None, Some(format!("EP failed: {e}"))),
        };
        let origin = ReferenceOrigin {
            source: if why.is_none() { "ep" } else { "prior" }.into(),
            seconds: t0.elapsed().as_secs_f64(),
            why_not: why,
        };
        let smc = Smc {
            settings: crate::engine::smc::SmcSettings {
                reference_gaussian: reference,
                reference_origin: Some(origin),
                ..self.smc.settings.clone()
            },
        };
        smc.run(problem, ctl, obs)
    }
}

/// Most coefficients for which EP's factored covariance (its reduced form) is
/// made dense for the hand-over (SMC projects it to the data's row space).
const DENSE_MAX_D: usize = 5000;

/// EP's factored covariance `diag + F·C·Fᵀ` as a d × d matrix (small d only).
fn dense(ep: &Fit) -> Option<nalgebra::DMatrix<f64>> {
    let lr = ep.low_rank_covariance.as_ref()?;
    if lr.diag.len() > DENSE_MAX_D {
        return None;
    }
    let fc = &lr.factor * &lr.core;
    let mut cov = fc * lr.factor.transpose();
    for (k, v) in lr.diag.iter().enumerate() {
        cov[(k, k)] += v;
    }
    Some(cov)
}
