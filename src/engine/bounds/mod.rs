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

pub mod kl;
pub mod row_space;

use nalgebra::DMatrix;
use serde::{Deserialize, Serialize};

use crate::engine::event::Event;
use crate::engine::fit::{Fit, LowRankCov};
use crate::engine::prior::Prior;
use crate::engine::problem::Problem;
use crate::engine::vb::{Family, PairRisk, Params};
use row_space::RowSpace;

pub const DEFAULT_EPSILON: f64 = 0.05;

/// A bound on 1 − AUC at or above this certifies nothing: a score drawn at
/// random has an expected AUC risk of ½ (ties ½), whatever the data.
pub const VACUOUS_RISK: f64 = 0.5;

/// The sample sizes a bound depends on.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Sizes {
    pub n_pos: usize,
    pub n_neg: usize,
    pub d: usize,
}

impl Sizes {
    pub fn of(pb: &Problem) -> Sizes {
        Sizes {
            n_pos: pb.n_pos(),
            n_neg: pb.n_neg(),
            d: pb.d(),
        }
    }
    pub fn n(&self) -> usize {
        self.n_pos + self.n_neg
    }
    /// ⌊n/2⌋: Hoeffding's independent blocks.
    pub fn blocks(&self) -> usize {
        self.n() / 2
    }
    /// `c = 2 n₊ n₋/(n(n−1))`: r^U = c·R_n.
    pub fn u_scale(&self) -> f64 {
        let n = self.n() as f64;
        2.0 * (self.n_pos * self.n_neg) as f64 / (n * (n - 1.0))
    }
}

/// The bound of ARC16's ranking corollary (the PACVB package's formula):
/// `E_ρ r^U + λ/(n−1) + (KL + log(1/ε))/λ` (their Hoeffding constant
/// f(λ, n) = λ²/(n−1)), at their theory λ = √(d(n−1))/2 and, for comparison
/// on equal terms, optimised over the same grid with the same union bound.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PacVb {
    pub lambda_theory: f64,
    pub risk_at_theory_lambda: f64,
    pub lambda: f64,
    pub risk: f64,
}

/// One of the two bounds, at ε/2.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Part {
    pub risk: f64,
    pub risk_u: f64,
    pub epsilon: f64,
    /// The Hoeffding form's best λ on the grid (U-statistic scale).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lambda: Option<f64>,
}

/// A certificate: every risk on the AUC-risk scale (1 − AUC) unless named `_u`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Bound {
    /// Upper bound on the expected AUC risk of a score drawn from ρ, with
    /// probability ≥ 1 − ε: the smaller of `hoeffding` and `kl_inverse`.
    pub risk: f64,
    /// E_ρ R_n on the training pairs.
    pub empirical_risk: f64,
    /// The Hoeffding form's best λ (U-statistic scale).
    pub lambda: f64,
    pub epsilon: f64,
    pub kl: f64,
    /// What ρ is: "gaussian", "gibbs" (SMC's log Z), "particles_gaussian", "gibbs_path_best".
    pub rho: String,
    /// The same bound on the U-statistic scale.
    pub risk_u: f64,
    pub empirical_risk_u: f64,
    /// c = 2n₊n₋/(n(n−1)): risk = risk_u / c.
    pub u_scale: f64,
    /// ⌊n/2⌋.
    pub blocks: usize,
    pub sizes: Sizes,
    pub grid_size: usize,
    /// Which bound gave `risk`: "hoeffding" or "kl_inverse".
    pub tighter: String,
    pub hoeffding: Part,
    pub kl_inverse: Part,
    /// γ = λ·c: the Gibbs posterior whose λ this is, in this program's convention.
    pub gamma_equivalent: f64,
    pub pacvb: PacVb,
    /// Why the value is only approximate (Monte Carlo inputs), if it is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approximate: Option<String>,
    /// For an SMC fit: the ρ at the path's best stage (γ_t in `gamma_equivalent` of
    /// the stage) and the particles' Gaussian fit.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub others: Vec<Bound>,
}

impl Bound {
    /// Whether the certificate says no more than a random score's ½.
    pub fn is_vacuous(&self) -> bool {
        self.risk >= VACUOUS_RISK
    }
}

/// The fixed λ grid for n rows: 2^{g/2} from 1 to 8⌊n/2⌋ (where the
/// λ/(8⌊n/2⌋) term reaches 1, beyond which every bound is vacuous).
pub fn lambda_grid(sizes: &Sizes) -> Vec<f64> {
    let top = (8 * sizes.blocks().max(1)) as f64;
    let g = (2.0 * top.log2()).ceil() as usize + 1;
    (0..g).map(|i| 2f64.powf(0.5 * i as f64)).collect()
}

/// kl(p‖q) of two Bernoulli means.
fn kl_bernoulli(p: f64, q: f64) -> f64 {
    let t = |a: f64, b: f64| if a <= 0.0 { 0.0 } else { a * (a / b).ln() };
    t(p, q) + t(1.0 - p, 1.0 - q)
}

/// sup{q ∈ [p, 1] : kl(p‖q) ≤ b} by bisection.
pub fn kl_inverse_upper(p: f64, b: f64) -> f64 {
    let (mut lo, mut hi) = (p.clamp(0.0, 1.0), 1.0);
    if kl_bernoulli(lo, hi - 1e-15) <= b {
        return 1.0;
    }
    for _ in 0..100 {
        let mid = 0.5 * (lo + hi);
        if kl_bernoulli(p, mid) > b {
            hi = mid;
        } else {
            lo = mid;
        }
    }
    hi
}

/// The bound from E_ρ R_n and KL(ρ‖π).
pub fn from_parts(empirical_risk: f64, kl: f64, sizes: Sizes, epsilon: f64, rho: &str) -> Bound {
    let c = sizes.u_scale();
    let k = sizes.blocks().max(1) as f64;
    let emp_u = c * empirical_risk;
    let grid = lambda_grid(&sizes);
    let half = 0.5 * epsilon;
    let best = |term: &dyn Fn(f64) -> f64, pen: f64| {
        grid.iter()
            .map(|&l| (emp_u + term(l) + (kl + pen) / l, l))
            .fold((f64::INFINITY, 0.0), |a, b| if b.0 < a.0 { b } else { a })
    };
    let (h_u, lambda) = best(&|l| l / (8.0 * k), (grid.len() as f64 / half).ln());
    let kl_u = kl_inverse_upper(emp_u, (kl + (2.0 * k.sqrt() / half).ln()) / k);
    let n1 = (sizes.n() - 1) as f64;
    let (pv_u, pv_l) = best(&|l| l / n1, (grid.len() as f64 / epsilon).ln());
    let lt = (sizes.d as f64 * n1).sqrt() / 2.0;
    let pv_theory = emp_u + lt / n1 + (kl + (1.0 / epsilon).ln()) / lt;
    let risk_u = h_u.min(kl_u);
    Bound {
        risk: risk_u / c,
        empirical_risk,
        lambda,
        epsilon,
        kl,
        rho: rho.to_string(),
        risk_u,
        empirical_risk_u: emp_u,
        u_scale: c,
        blocks: sizes.blocks(),
        sizes,
        grid_size: grid.len(),
        tighter: if kl_u < h_u {
            "kl_inverse"
        } else {
            "hoeffding"
        }
        .into(),
        hoeffding: Part {
            risk: h_u / c,
            risk_u: h_u,
            epsilon: half,
            lambda: Some(lambda),
        },
        kl_inverse: Part {
            risk: kl_u / c,
            risk_u: kl_u,
            epsilon: half,
            lambda: None,
        },
        gamma_equivalent: lambda * c,
        pacvb: PacVb {
            lambda_theory: lt,
            risk_at_theory_lambda: pv_theory / c,
            lambda: pv_l,
            risk: pv_u / c,
        },
        approximate: None,
        others: Vec::new(),
    }
}

/// The same certificate at another ε (`pacauc bound RUN.json --epsilon E`):
/// a bound depends on ρ only through E_ρ R_n and KL.
pub fn recompute(b: &Bound, epsilon: f64) -> Bound {
    let mut out = from_parts(b.empirical_risk, b.kl, b.sizes, epsilon, &b.rho);
    out.approximate = b.approximate.clone();
    out.others = b.others.iter().map(|o| recompute(o, epsilon)).collect();
    out
}

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
    if fit.engine == "gcs" {
        return certify_gcs(fit, sizes, epsilon, gaussian);
    }
    if fit.particles.is_some() || fit.engine == "smc" {
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
