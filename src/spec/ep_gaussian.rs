//! EP's Gaussian for the samplers that start from it (`gcs_reference`,
//! `smc_reference`). Methods do not import each other, so the spec layer
//! runs EP and hands its mean and covariance over as plain matrices.

use crate::engine::Problem;
use crate::engine::ep::Ep;
use crate::engine::interface::{Control, Engine, EngineError, NoObserver};
use nalgebra::{DMatrix, DVector};

/// EP's posterior mean and covariance of θ.
pub struct EpGaussian {
    pub mean: DVector<f64>,
    pub cov: DMatrix<f64>,
}

/// Most coefficients for which EP's factored covariance (its reduced form,
/// d ≥ n) is made dense when `dense_low_rank` asks for it.
const DENSE_MAX_D: usize = 5000;

/// Runs `ep` on `problem`: its Gaussian, or why there is none (EP failed,
/// did not converge, or gave no full covariance). Cancelling is an error.
pub fn ep_gaussian(
    ep: &Ep,
    problem: &Problem,
    ctl: &Control,
    dense_low_rank: bool,
) -> Result<Result<EpGaussian, String>, EngineError> {
    let fit = match ep.run(problem, ctl, &mut NoObserver) {
        Ok(fit) => fit,
        Err(EngineError::Cancelled) => return Err(EngineError::Cancelled),
        Err(e) => return Ok(Err(format!("EP failed: {e}"))),
    };
    if !fit.converged {
        return Ok(Err("EP did not converge".into()));
    }
    let cov = match fit.covariance.clone() {
        Some(cov) => Some(cov),
        None if dense_low_rank => dense(&fit),
        None => None,
    };
    Ok(match cov {
        Some(cov) => Ok(EpGaussian {
            mean: DVector::from_vec(fit.mean),
            cov,
        }),
        None => Err("EP gave no full covariance".into()),
    })
}

/// EP's factored covariance `diag + F·C·Fᵀ` as a d × d matrix (small d only).
fn dense(ep: &crate::engine::Fit) -> Option<DMatrix<f64>> {
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
