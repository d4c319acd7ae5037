//! Certificates of fits: Gaussian ρ (EP, VB, particles' fits) with E_ρ R_n
//! by the pair pass (or, above `EXACT_PAIRS_MAX` pairs, from sampled pairs with
//! their Monte Carlo term) and the KL at ρ's best scale; the Gibbs posterior
//! (SMC, gcs) through log Z with E_ρ R_n from draws and its Monte Carlo term;
//! SMC's whole γ path as candidates, the smallest certificate the headline.

use nalgebra::DMatrix;

use super::row_space::RowSpace;
use super::spread;
use super::{Bound, DRAWS_SHARE, Draws, Sizes, draws_term, from_parts, kl, pick_best, settle};
use crate::engine::event::Event;
use crate::engine::fit::{EngineKind, Fit, LowRankCov, MethodReport};
use crate::engine::numerics::pair_risk::{SampleMean, gaussian_pair_risk};
use crate::engine::numerics::pair_sample::sampled_gaussian_pair_risks;
use crate::engine::prior::Prior;
use crate::engine::problem::Problem;

/// Above this many positive/negative pairs the certificate's E_ρ R_n of a
/// Gaussian ρ is not a pass over all of them (O(n₊n₋): hours at 10⁶ rows) but
/// the mean over `SAMPLED_PAIRS` pairs drawn uniformly, whose Monte Carlo error
/// enters the bound as its own concentration term (`Draws`, source "pairs").
pub const EXACT_PAIRS_MAX: usize = 100_000_000;
/// Pairs of that sample: at the AUC risks seen (sd of a pair's Φ ≲ 0.45) the
/// empirical Bernstein half-width is ≲ 0.0006 at ε/4, for ~1 s of CPU.
pub const SAMPLED_PAIRS: usize = 10_000_000;
/// What `Draws.source` says for sampled pairs.
pub const PAIRS_SOURCE: &str = "pairs";

/// How the certificate takes E_ρ R_n of a Gaussian ρ: exact up to `exact_max`
/// pairs, else from `sample` pairs drawn with `seed` (fixed by default: the
/// sample does not depend on the data, so the bound holds for it); the
/// candidate is one of `shared_by` that share the sample's Monte Carlo budget.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PairPlan {
    pub exact_max: usize,
    pub sample: usize,
    pub seed: u64,
    pub shared_by: usize,
}

impl Default for PairPlan {
    fn default() -> Self {
        PairPlan {
            exact_max: EXACT_PAIRS_MAX,
            sample: SAMPLED_PAIRS,
            seed: 0,
            shared_by: 1,
        }
    }
}

/// The Cholesky factor of a covariance.
fn cholesky(cov: &DMatrix<f64>) -> Result<DMatrix<f64>, String> {
    Ok(nalgebra::Cholesky::new(cov.clone())
        .ok_or("the covariance is not positive definite")?
        .l())
}

/// E_ρ R_n for ρ = N(mean, cov): the mean over all pairs of Φ(−μ_ij/s_ij).
pub fn gaussian_empirical_risk(
    x: &DMatrix<f64>,
    y: &[bool],
    mean: &[f64],
    cov: &DMatrix<f64>,
) -> Result<f64, String> {
    let mut l = cholesky(cov)?;
    // Σ = L Lᵀ with L's diagonal through log/exp, as the pass has always
    // taken it (VB's parameterisation): the records keep their bits.
    for i in 0..l.nrows() {
        l[(i, i)] = l[(i, i)].ln().exp();
    }
    Ok(gaussian_pair_risk(x, y, mean, &(&l * l.transpose())))
}

/// E_ρ R_n of one candidate Gaussian: exact, or a sample of pairs' mean and
/// sd (its interval is made at the candidate's own ε, `RiskTerm::at`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum RiskTerm {
    Exact(f64),
    Sampled(SampleMean),
}

impl RiskTerm {
    /// The value and, when sampled, its empirical Bernstein interval at `eps_draws`.
    pub(crate) fn at(self, eps_draws: f64) -> (f64, Option<Draws>) {
        match self {
            RiskTerm::Exact(v) => (v, None),
            RiskTerm::Sampled(s) => (
                s.mean,
                Some(Draws {
                    source: Some(PAIRS_SOURCE.into()),
                    ..draws_term(s.mean, s.sd, s.count as f64, eps_draws)
                }),
            ),
        }
    }
}

/// E_ρ R_n of ρ_ab = N(`means[a]`, `spreads[b]`·cov) for every a and b (result
/// `a · spreads.len() + b`) as `plan` takes it: a pass over all pairs each, or
/// one sample of pairs shared by all (`pair_sample`: the rows' projections,
/// the draws and the row reads paid once, not once per candidate).
pub(crate) fn gaussian_risk_terms(
    x: &DMatrix<f64>,
    y: &[bool],
    means: &[&[f64]],
    cov: &DMatrix<f64>,
    spreads: &[f64],
    plan: PairPlan,
) -> Result<Vec<RiskTerm>, String> {
    let np = y.iter().filter(|&&b| b).count();
    if np * (y.len() - np) <= plan.exact_max {
        let mut out = Vec::with_capacity(means.len() * spreads.len());
        for m in means {
            for &s in spreads {
                out.push(RiskTerm::Exact(gaussian_empirical_risk(
                    x,
                    y,
                    m,
                    &(cov * s),
                )?));
            }
        }
        return Ok(out);
    }
    let l = cholesky(cov)?;
    let s = sampled_gaussian_pair_risks(x, y, means, &l, spreads, plan.sample, plan.seed);
    Ok(s.into_iter().map(RiskTerm::Sampled).collect())
}

/// E_ρ R_n of ρ = N(mean, cov) as `plan` takes it: exact, or the sampled
/// pairs' mean with their empirical Bernstein interval at `eps_draws`.
pub(crate) fn gaussian_risk_term(
    x: &DMatrix<f64>,
    y: &[bool],
    mean: &[f64],
    cov: &DMatrix<f64>,
    plan: PairPlan,
    eps_draws: f64,
) -> Result<(f64, Option<Draws>), String> {
    Ok(gaussian_risk_terms(x, y, &[mean], cov, &[1.0], plan)?[0].at(eps_draws))
}

/// `b` with E_ρ R_n from draws: their interval's worst value, at ε less theirs.
fn with_draws(mut b: Bound, draws: Option<Draws>) -> Bound {
    if draws.is_some() {
        b.draws = draws;
        settle(&mut b);
    }
    b
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
    certify_gaussian_with(pb, prior, mean, cov, epsilon, rho, PairPlan::default())
}

/// `certify_gaussian` with E_ρ R_n taken as `plan` says.
pub fn certify_gaussian_with(
    pb: &Problem,
    prior: &Prior,
    mean: &[f64],
    cov: &DMatrix<f64>,
    epsilon: f64,
    rho: &str,
    plan: PairPlan,
) -> Result<Bound, String> {
    let term = gaussian_risk_terms(&pb.x, &pb.y, &[mean], cov, &[1.0], plan)?[0];
    gaussian_of_term(pb, prior, mean, cov, term, epsilon, rho, plan.shared_by)
}

/// The certificate of N(mean, cov) given its E_ρ R_n term, one of `shared_by`
/// candidates sharing the Monte Carlo budget.
#[allow(clippy::too_many_arguments)]
fn gaussian_of_term(
    pb: &Problem,
    prior: &Prior,
    mean: &[f64],
    cov: &DMatrix<f64>,
    term: RiskTerm,
    epsilon: f64,
    rho: &str,
    shared_by: usize,
) -> Result<Bound, String> {
    let shared_by = shared_by.max(1);
    let (emp, draws) = term.at(DRAWS_SHARE * epsilon / shared_by as f64);
    let (kl, c) = kl::kl_to_prior_best_scale(mean, cov, prior)?;
    let b = scaled(from_parts(emp, kl, Sizes::of(pb), epsilon, rho), c);
    Ok(with_draws(b, draws.map(|d| Draws { shared_by, ..d })))
}

/// N(mean, cov) at the best of its spreads N(mean, s·cov) (`spread`), each
/// as `certify_gaussian_with` would certify it alone; E_ρ R_n of all spreads
/// from one pass over one sample of pairs (`gaussian_risk_terms`).
pub fn certify_gaussian_spreads(
    pb: &Problem,
    prior: &Prior,
    mean: &[f64],
    cov: &DMatrix<f64>,
    epsilon: f64,
    rho: &str,
    plan: PairPlan,
) -> Result<Bound, String> {
    let grid = &spread::SPREADS;
    let terms = gaussian_risk_terms(&pb.x, &pb.y, &[mean], cov, grid, plan)?;
    spread::best_spread(|s, shared_by| {
        let k = grid
            .iter()
            .position(|&g| g == s)
            .expect("a spread of the grid");
        gaussian_of_term(
            pb,
            prior,
            mean,
            &(cov * s),
            terms[k],
            epsilon,
            rho,
            shared_by,
        )
    })
}

/// The certificate of ρ = N(mean, V) with a factored V (EP's reduced form):
/// E_ρ R_n in the data's row space (`row_space`), KL by the determinant lemma;
/// one of `shared_by` candidates sharing the Monte Carlo budget (as `PairPlan`).
pub fn certify_low_rank(
    pb: &Problem,
    prior: &Prior,
    mean: &[f64],
    v: &LowRankCov,
    epsilon: f64,
    rho: &str,
    shared_by: usize,
) -> Result<Bound, String> {
    let rs = RowSpace::new(&pb.x, mean, v)?;
    let (emp, draws) = gaussian_risk_term(
        &rs.rows,
        &pb.y,
        &rs.mean,
        &rs.cov,
        PairPlan::default(),
        DRAWS_SHARE * epsilon / shared_by as f64,
    )?;
    let (kl, c) = kl::kl_to_prior_low_rank_best_scale(mean, v, prior)?;
    let b = scaled(from_parts(emp, kl, Sizes::of(pb), epsilon, rho), c);
    Ok(with_draws(b, draws.map(|d| Draws { shared_by, ..d })))
}

/// V scaled by s, in its factored form.
pub(crate) fn scaled_low_rank(v: &LowRankCov, s: f64) -> LowRankCov {
    LowRankCov {
        diag: v.diag.iter().map(|x| s * x).collect(),
        factor: v.factor.clone(),
        core: &v.core * s,
    }
}

fn scaled(mut b: Bound, c: f64) -> Bound {
    b.rho_scale = Some(c);
    b
}

const GIBBS_NOTE: &str = "KL(π_γ‖π) = −log Z_γ − γ·E[R_n] from SMC's estimates of log Z and of the mean risk (Monte Carlo error not included)";

/// The Gibbs posterior's certificate with E_ρ R_n from draws (mean, sd, S):
/// the worst value over the draws' interval, at DRAWS_SHARE·ε / `shared_by`.
#[allow(clippy::too_many_arguments)]
pub fn certify_gibbs_draws(
    log_z: f64,
    gamma: f64,
    mean_risk: f64,
    risk_sd: f64,
    count: f64,
    shared_by: usize,
    sizes: Sizes,
    epsilon: f64,
) -> Bound {
    let mut b = certify_gibbs(log_z, gamma, mean_risk, sizes, epsilon);
    b.draws = Some(Draws {
        log_z: Some(log_z),
        gamma: Some(gamma),
        shared_by,
        ..draws_term(
            mean_risk,
            risk_sd,
            count,
            DRAWS_SHARE * epsilon / shared_by.max(1) as f64,
        )
    });
    settle(&mut b);
    b.approximate = Some(GIBBS_DRAWS_NOTE.into());
    b
}

const GIBBS_DRAWS_NOTE: &str = "KL(π_γ‖π) = −log Z_γ − γ·E[R_n] with log Z_γ from SMC (its Monte Carlo error not included); E[R_n] from the particles, its Monte Carlo error in the bound as an empirical Bernstein interval with the stage's ESS standing in for independent draws";

/// The certificate of the Gibbs posterior at γ from its log evidence and mean risk.
pub fn certify_gibbs(log_z: f64, gamma: f64, mean_risk: f64, sizes: Sizes, epsilon: f64) -> Bound {
    // Clamped at 0: a Monte Carlo log Z can put a tiny KL slightly below.
    let kl = (-log_z - gamma * mean_risk).max(0.0);
    let mut b = from_parts(mean_risk, kl, sizes, epsilon, "gibbs");
    b.approximate = Some(GIBBS_NOTE.into());
    b
}

/// Why a gcs run without `evidence` certifies only its draws' Gaussian fit.
pub const GCS_NEEDS_EVIDENCE: &str = "gcs estimates log Z_γ only with `evidence` (stepping \
     stones from γ = 0), and the Gibbs posterior's KL needs it";

const GCS_NOTE: &str = "KL(π_γ‖π) = −log Z_γ − γ·E[R_n] from the great-circle sampler's stepping-stone log Z (its MCSE in details.log_evidence_mcse) and the mean risk of its draws (Monte Carlo error not included)";

/// The great-circle sampler's certificate: the Gibbs posterior's, as for SMC,
/// from its stepping-stone log Z_γ (only with `evidence`) and its draws' mean
/// risk (`MethodReport::SampledRisk`), with the draws' Gaussian fit in `others`;
/// without `evidence`, the draws' Gaussian fit alone. The label-noise
/// posterior is not the AUC risk's Gibbs posterior: no certificate.
fn certify_gcs(
    fit: &Fit,
    sizes: Sizes,
    epsilon: f64,
    gaussian: impl Fn(&str) -> Result<Bound, String>,
) -> Result<Bound, String> {
    let (loss, mean_risk) = fit
        .reports
        .iter()
        .find_map(|r| match r {
            MethodReport::SampledRisk { loss, mean_risk } => Some((*loss, *mean_risk)),
            _ => None,
        })
        .ok_or("the gcs fit has no mean risk of its draws")?;
    if loss != "auc" {
        return Err(format!(
            "the gcs posterior of the {loss} loss is not the Gibbs posterior of the AUC risk \
             (its γ is on the training error rate): the certificate is for `loss` auc"
        ));
    }
    let gamma = fit.gamma.ok_or("the fit has no γ")?;
    let Some(log_z) = fit.log_evidence else {
        // Without stepping stones the Gibbs posterior's KL is out of reach, but
        // the bound holds for every ρ: the Gaussian fitted to the draws is
        // certified exactly (pair pass, closed-form KL).
        if fit.covariance.is_some() {
            return gaussian("draws_gaussian");
        }
        return Err(GCS_NEEDS_EVIDENCE.into());
    };
    let mut b = certify_gibbs(log_z, gamma, mean_risk, sizes, epsilon);
    b.approximate = Some(GCS_NOTE.into());
    if fit.covariance.is_some() {
        b.others.push(gaussian("draws_gaussian")?);
    }
    Ok(pick_best(vec![b]).expect("one certificate"))
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
    // The fit's Gaussian at the best of its spreads (`spread`).
    let gaussian = |rho: &str| -> Result<Bound, String> {
        match (&fit.covariance, &fit.low_rank_covariance) {
            (Some(cov), _) => certify_gaussian_spreads(
                pb,
                prior,
                &fit.mean,
                cov,
                epsilon,
                rho,
                PairPlan::default(),
            ),
            (None, Some(lr)) => spread::best_spread(|s, shared_by| {
                certify_low_rank(
                    pb,
                    prior,
                    &fit.mean,
                    &scaled_low_rank(lr, s),
                    epsilon,
                    rho,
                    shared_by,
                )
            }),
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
        return certify_smc(fit, sizes, epsilon, gaussian);
    }
    if fit.gamma.is_none() || fit.prior.is_none() {
        return Err(format!(
            "{} gives a point estimate, not a posterior: no PAC-Bayes certificate",
            fit.engine
        ));
    }
    gaussian("gaussian")
}

/// SMC: the Gibbs posterior at every stage of the (last run's) path, each with
/// its draws' Monte Carlo term, and the particles' Gaussian fit; the smallest
/// certificate is the headline, the final γ's and the Gaussian fit's beside it.
fn certify_smc(
    fit: &Fit,
    sizes: Sizes,
    epsilon: f64,
    gaussian: impl Fn(&str) -> Result<Bound, String>,
) -> Result<Bound, String> {
    let gamma = fit.gamma.ok_or("the fit has no γ")?;
    let log_z = fit.log_evidence.ok_or("the SMC fit has no log evidence")?;
    // Several runs: the pooled cloud's mean risk with the pooled log Z;
    // the path's stages are the last run's (runs reach different γ_t).
    let stages: Vec<_> = crate::engine::event::last_run(&fit.trace)
        .iter()
        .filter_map(|e| match e {
            Event::SmcStage(s) => Some(s.clone()),
            _ => None,
        })
        .collect();
    let last = stages.last();
    let mean_risk = fit
        .runs
        .as_ref()
        .map(|r| r.mean_risk)
        .or(last.map(|s| s.mean_risk))
        .ok_or("the SMC fit's trace has no stage")?;
    let runs = fit.runs.as_ref().map_or(1, |r| r.count.max(1));
    let n_total = fit.particles.as_ref().map(|p| p.theta.nrows());
    // Draws per stage: the cloud's size times the stage's ESS share.
    let count = |ess: f64, pooled: bool| {
        n_total.map(|n| n as f64 * ess.clamp(0.0, 1.0) / if pooled { 1.0 } else { runs as f64 })
    };
    let path: Vec<_> = stages.iter().filter(|s| s.gamma > 0.0).collect();
    let shared_by = path.len() + 1;
    let mut b = match (
        last.and_then(|s| s.risk_sd),
        last.and_then(|s| count(s.ess_frac, true)),
    ) {
        (Some(sd), Some(s)) => {
            certify_gibbs_draws(log_z, gamma, mean_risk, sd, s, shared_by, sizes, epsilon)
        }
        _ => certify_gibbs(log_z, gamma, mean_risk, sizes, epsilon),
    };
    if let Some(r) = &fit.runs {
        b.approximate = Some(format!(
            "{}; pooled over {} independent runs: log Z_γ is the log of their mean Ẑ (sd of \
             log Ẑ across runs {:.3}), E[R_n] the pooled cloud's; the number of runs does not \
             enter the bound (the sample does), only the Monte Carlo error of its inputs",
            b.approximate.as_deref().unwrap_or(GIBBS_NOTE),
            r.count,
            r.log_z.sd
        ));
    }
    let mut cands = vec![b];
    // The path's best stage (the final stage is the fit itself).
    if let Some(best) = path
        .iter()
        .take(path.len().saturating_sub(1))
        .map(|s| {
            let mut o = match (s.risk_sd, count(s.ess_frac, false)) {
                (Some(sd), Some(c)) => certify_gibbs_draws(
                    s.log_z,
                    s.gamma,
                    s.mean_risk,
                    sd,
                    c,
                    shared_by,
                    sizes,
                    epsilon,
                ),
                _ => certify_gibbs(s.log_z, s.gamma, s.mean_risk, sizes, epsilon),
            };
            o.rho = format!("gibbs_path_best (γ_t = {})", s.gamma);
            o
        })
        .min_by(|a, b| a.risk.total_cmp(&b.risk))
    {
        cands.push(best);
    }
    if fit.covariance.is_some() {
        cands.push(gaussian("particles_gaussian")?);
    }
    Ok(pick_best(cands).expect("the final stage's certificate"))
}
