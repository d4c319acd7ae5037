//! PAC-Bayes certificates for the AUC risk (ALGORITHMS.md §9; RACL14 App. A.2).
//!
//! `r^U` is the U-statistic risk over ordered pairs, `r^U = 2M/(n(n−1))·R_n`;
//! its kernel lies in [0, 1], and Hoeffding's decomposition writes it as an
//! average over permutations of means of k = ⌊n/2⌋ independent blocks — never
//! M independent pairs, which share rows. Two bounds, each at ε/2 (union
//! bound), `risk` the smaller:
//! - §9's Hoeffding form: for every ρ and every λ of a fixed grid G,
//!   `E_ρ R^U ≤ E_ρ r^U + λ/(8k) + (KL(ρ‖π) + log(2|G|/ε))/λ`, λ over
//!   2^{g/2}, g = 0…⌈2 log₂(8k)⌉;
//! - the Seeger–Maurer kl form, `kl(E_ρ r^U ‖ E_ρ R^U) ≤ (KL + log(4√k/ε))/k`:
//!   kl(·‖R) is convex, so Jensen over the permutations carries Maurer's
//!   `E exp(k·kl(W‖R)) ≤ 2√k` for a mean W of k independent [0, 1] terms to the
//!   U-statistic. Much tighter when the risk is small (all of Pima, VB at
//!   γ = 100: Hoeffding 0.50, kl 0.40 on the AUC-risk scale).
//!
//! AUC-risk scale: `risk = (bound on R^U)/c` with `c = 2 n₊ n₋/(n(n−1))`, the
//! factor that maps R_n to r^U on this sample; for the population
//! (`R^U = 2p(1−p)(1 − AUC)`) it is approximate, as p is estimated by the
//! sample share. `empirical_risk` is E_ρ R_n, on the same scale.
//!
//! For a Gaussian ρ (EP, VB, a Gaussian fit of SMC's particles) E_ρ R_n is
//! exact (`vb::PairRisk`, the mean of Φ(−μ_ij/s_ij)) and KL closed-form (or 1-D
//! quadrature for spike-and-slab). For the Gibbs posterior π_γ itself,
//! `KL(π_γ‖π) = −log Z_γ − γ E_{π_γ} R_n`, from SMC's log Z and mean risk —
//! Monte Carlo estimates, so that bound is marked approximate.

pub mod certificate;
pub mod kl;
pub mod row_space;

use nalgebra::DMatrix;

use crate::engine::event::Event;
use crate::engine::fit::{EngineKind, Fit, LowRankCov};
use crate::engine::prior::Prior;
use crate::engine::problem::Problem;
use crate::engine::vb::{Family, PairRisk, Params};
use row_space::RowSpace;

pub use certificate::{
    Bound, DEFAULT_EPSILON, PacVb, Part, Sizes, VACUOUS_RISK, from_parts, kl_inverse_upper,
    lambda_grid, recompute,
};

/// E_ρ R_n for ρ = N(mean, cov): the mean over all pairs of Φ(−μ_ij/s_ij).
pub fn gaussian_empirical_risk(
    x: &DMatrix<f64>,
    y: &[bool],
    mean: &[f64],
    cov: &DMatrix<f64>,
) -> Result<f64, String> {
    let d = mean.len();
    let l = nalgebra::Cholesky::new(cov.clone())
        .ok_or("the covariance is not positive definite")?
        .l();
    let mut v = mean.to_vec();
    for j in 0..d {
        for i in j..d {
            v.push(if i == j { l[(i, i)].ln() } else { l[(i, j)] });
        }
    }
    let p = Params {
        family: Family::Full,
        d,
        v,
    };
    Ok(PairRisk::new(x, y).value(&p))
}

/// The certificate of a Gaussian ρ = N(mean, cov) under `prior`.
pub fn certify_gaussian(
    pb: &Problem,
    prior: &Prior,
    mean: &[f64],
    cov: &DMatrix<f64>,
    epsilon: f64,
    rho: &str,
) -> Result<Bound, String> {
    let emp = gaussian_empirical_risk(&pb.x, &pb.y, mean, cov)?;
    let kl = kl::kl_to_prior(mean, cov, prior)?;
    Ok(from_parts(emp, kl, Sizes::of(pb), epsilon, rho))
}

/// The certificate of ρ = N(mean, V) with a factored V (EP's reduced form):
/// E_ρ R_n in the data's row space (`row_space`), KL by the determinant lemma.
pub fn certify_low_rank(
    pb: &Problem,
    prior: &Prior,
    mean: &[f64],
    v: &LowRankCov,
    epsilon: f64,
    rho: &str,
) -> Result<Bound, String> {
    let rs = RowSpace::new(&pb.x, mean, v)?;
    let emp = gaussian_empirical_risk(&rs.rows, &pb.y, &rs.mean, &rs.cov)?;
    let kl = kl::kl_to_prior_low_rank(mean, v, prior)?;
    Ok(from_parts(emp, kl, Sizes::of(pb), epsilon, rho))
}

const GIBBS_NOTE: &str = "KL(π_γ‖π) = −log Z_γ − γ·E[R_n] from SMC's estimates of log Z and of the mean risk (Monte Carlo error not included)";

/// The certificate of the Gibbs posterior at γ from its log evidence and mean risk.
pub fn certify_gibbs(log_z: f64, gamma: f64, mean_risk: f64, sizes: Sizes, epsilon: f64) -> Bound {
    // Clamped at 0: a Monte Carlo log Z can put a tiny KL slightly below.
    let kl = (-log_z - gamma * mean_risk).max(0.0);
    let mut b = from_parts(mean_risk, kl, sizes, epsilon, "gibbs");
    b.approximate = Some(GIBBS_NOTE.into());
    b
}

const GCS_NOTE: &str = "KL(π_γ‖π) = −log Z_γ − γ·E[R_n] from the great-circle sampler's stepping-stone log Z (its MCSE in details.log_evidence_mcse) and the mean risk of its draws (Monte Carlo error not included)";

/// The great-circle sampler's certificate: the Gibbs posterior's, as for SMC,
/// from its stepping-stone log Z_γ (only with `evidence`) and its draws' mean
/// risk (`details.risk.mean`), with the draws' Gaussian fit in `others`. The
/// label-noise posterior is not the AUC risk's Gibbs posterior: no certificate.
fn certify_gcs(
    fit: &Fit,
    sizes: Sizes,
    epsilon: f64,
    gaussian: impl Fn(&str) -> Result<Bound, String>,
) -> Result<Bound, String> {
    let loss = fit.details["loss"]["kind"]
        .as_str()
        .unwrap_or("auc")
        .replace('_', "-");
    if loss != "auc" {
        return Err(format!(
            "the gcs posterior of the {loss} loss is not the Gibbs posterior of the AUC risk \
             (its γ is on the training error rate): the certificate is for `loss` auc"
        ));
    }
    let gamma = fit.gamma.ok_or("the fit has no γ")?;
    let log_z = fit.log_evidence.ok_or(
        "gcs estimates log Z_γ only with `evidence` (stepping stones from γ = 0), and the \
         Gibbs posterior's KL needs it",
    )?;
    let mean_risk = fit.details["risk"]["mean"]
        .as_f64()
        .ok_or("the gcs fit has no mean risk (details.risk.mean)")?;
    let mut b = certify_gibbs(log_z, gamma, mean_risk, sizes, epsilon);
    b.approximate = Some(GCS_NOTE.into());
    if fit.covariance.is_some() {
        b.others.push(gaussian("draws_gaussian")?);
    }
    Ok(b)
}

/// The certificate of a fit (`Fit.mean` + `Fit.covariance` for Gaussian
/// approximations; for SMC the Gibbs posterior through its log Z, with the
/// best stage of its path and the particles' Gaussian fit in `others`; for gcs
/// the same from its stepping stones, when it has them: `certify_gcs`).
pub fn certify(fit: &Fit, pb: &Problem, epsilon: f64) -> Result<Bound, String> {
    if !(epsilon > 0.0 && epsilon < 1.0) {
        return Err(format!("ε must be in (0, 1); got {epsilon}"));
    }
    let prior = fit.prior.as_ref().unwrap_or(&pb.prior);
    let sizes = Sizes::of(pb);
    let gaussian = |rho: &str| -> Result<Bound, String> {
        match (&fit.covariance, &fit.low_rank_covariance) {
            (Some(cov), _) => certify_gaussian(pb, prior, &fit.mean, cov, epsilon, rho),
            (None, Some(lr)) => certify_low_rank(pb, prior, &fit.mean, lr, epsilon, rho),
            (None, None) => Err(format!(
                "the {} fit has no covariance: no Gaussian certificate",
                fit.engine
            )),
        }
    };
    if fit.engine == EngineKind::Gcs {
        return certify_gcs(fit, sizes, epsilon, gaussian);
    }
    if fit.particles.is_some() || fit.engine == EngineKind::Smc {
        let gamma = fit.gamma.ok_or("the fit has no γ")?;
        let log_z = fit.log_evidence.ok_or("the SMC fit has no log evidence")?;
        // Several runs: the pooled cloud's mean risk with the pooled log Z;
        // the path's stages are the last run's (runs reach different γ_t).
        let stages: Vec<(f64, f64, f64)> = crate::engine::event::last_run(&fit.trace)
            .iter()
            .filter_map(|e| match e {
                Event::SmcStage(s) => Some((s.gamma, s.log_z, s.mean_risk)),
                _ => None,
            })
            .collect();
        let mean_risk = fit
            .runs
            .as_ref()
            .map(|r| r.mean_risk)
            .or(stages.last().map(|s| s.2))
            .ok_or("the SMC fit's trace has no stage")?;
        let mut b = certify_gibbs(log_z, gamma, mean_risk, sizes, epsilon);
        if let Some(r) = &fit.runs {
            b.approximate = Some(format!(
                "{GIBBS_NOTE}; pooled over {} independent runs: log Z_γ is the log of their mean \
                 Ẑ (sd of log Ẑ across runs {:.3}), E[R_n] the pooled cloud's; the number of \
                 runs does not enter the bound (the sample does), only the Monte Carlo error of \
                 its inputs",
                r.count, r.log_z.sd
            ));
        }
        if let Some(best) = stages
            .iter()
            .filter(|s| s.0 > 0.0)
            .map(|&(g, z, r)| {
                let mut o = certify_gibbs(z, g, r, sizes, epsilon);
                o.rho = format!("gibbs_path_best (γ_t = {g})");
                o
            })
            .min_by(|a, b| a.risk.total_cmp(&b.risk))
        {
            b.others.push(best);
        }
        if fit.covariance.is_some() {
            b.others.push(gaussian("particles_gaussian")?);
        }
        return Ok(b);
    }
    if fit.gamma.is_none() || fit.prior.is_none() {
        return Err(format!(
            "{} gives a point estimate, not a posterior: no PAC-Bayes certificate",
            fit.engine
        ));
    }
    gaussian("gaussian")
}

#[cfg(test)]
mod tests;
