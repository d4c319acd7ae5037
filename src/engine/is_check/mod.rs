//! Checking a Gaussian approximation q = N(m, V) against the exact Gibbs
//! posterior by importance sampling (ALGORITHMS.md §13). Draws come from a
//! widened proposal — a multivariate Student-t (ν = 5) with location m and
//! scale `scale`·V, optionally mixed with the prior (defensive: weights then
//! stay below 1/α times the likelihood) — and are weighted by
//! `w = π_ξ(θ) exp(−γ R_n(θ)) / q̃(θ)`, one O(n log n) risk per draw.
//! Pareto smoothing gives k̂ (the trust signal), the ESS of the weights, the
//! corrected means and sds; `log Z ≈ log mean(w)` uses the raw weights.
//!
//! Determinism: draw s uses its own stream (seed, s), risks are per draw, and
//! every sum runs over draws in order: the same answer for any thread count.

pub mod psis;
pub mod risks;
pub mod subsample;

use std::time::Instant;

use nalgebra::{DMatrix, DVector};
use rand_distr::Distribution;
use rayon::prelude::*;
use serde::{Deserialize, Serialize};

use crate::engine::bounds::row_space::RowSpace;
use crate::engine::fit::{Fit, LowRankCov};
use crate::engine::numerics::rng::{normal, stream};
use crate::engine::prior::Prior;
use crate::engine::problem::Problem;
use risks::risks_of;

const IS_KEY: u64 = 0x6973_6368;

#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct IsSettings {
    /// Importance draws (0: no check). Default 20 000: k̂ needs the tail, and
    /// a proposal that misses a mode shows it late (EP's all-spike fixed point
    /// on the sparse demo: k̂ 0.54 from 4000 draws, 0.76 from 20 000); fewer
    /// on large data by default (`risks::auto_draws`: a time budget).
    pub draws: usize,
    /// Degrees of freedom of the Student-t proposal.
    pub df: f64,
    /// The proposal's scale matrix is `scale`·V.
    pub scale: f64,
    /// Share of draws from the prior (defensive mixture), in [0, 1).
    pub prior_mix: f64,
    pub seed: u64,
    /// Score the draws on a class-stratified subsample of this many training
    /// rows (`subsample`; None: all rows).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rows: Option<usize>,
}

impl Default for IsSettings {
    fn default() -> Self {
        IsSettings {
            draws: 20_000,
            df: 5.0,
            scale: 2.0,
            prior_mix: 0.0,
            seed: 0,
            rows: None,
        }
    }
}

/// The result of a check (`details.is_check` of a record).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct IsCheck {
    pub draws: usize,
    /// Pareto shape of the weights' tail: < 0.5 good, ≤ `khat_threshold` usable.
    pub khat: f64,
    pub khat_threshold: f64,
    /// k̂ ≤ threshold: the corrected estimates can be trusted.
    pub trusted: bool,
    /// Effective sample size of the smoothed weights.
    pub ess: f64,
    /// log Z_γ ≈ log mean(w) (raw weights).
    pub log_z: f64,
    /// IS-corrected posterior means and sds of θ.
    pub mean: Vec<f64>,
    pub sd: Vec<f64>,
    /// (corrected mean − q's mean) / corrected sd, per coefficient.
    pub shift_sd: Vec<f64>,
    /// q's sd / corrected sd, per coefficient.
    pub sd_ratio: Vec<f64>,
    pub max_abs_shift_sd: f64,
    /// The check's own Monte Carlo error: standard error of a corrected mean
    /// in units of its sd, 1/√ESS (so of every `shift_sd`).
    #[serde(default)]
    pub shift_se: f64,
    /// Standard error of `log_z` (delta method on the raw weights; only
    /// meaningful when k̂ < ½, where their variance is finite).
    #[serde(default)]
    pub log_z_se: f64,
    pub proposal: IsSettings,
    pub seconds: f64,
    /// Why the draws are as many as they are when the default chose fewer
    /// than 20 000 (`risks::auto_draws_note`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub draws_note: Option<String>,
    /// CPU seconds of the process during the check (all threads), where the
    /// certifying wrapper measured them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_seconds: Option<f64>,
    /// Training rows the draws were scored on, when a subsample
    /// (`subsample`: `GROUPS` disjoint groups, R̂ their mean risk).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rows: Option<usize>,
    /// τ = γ · sd over draws of R̂ − R_n: the subsample's error on the log
    /// weights, estimated from the groups' spread.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subsample_log_w_sd: Option<f64>,
    /// What the numbers say, in words.
    pub verdict: String,
}

/// Importance-sampling check of N(mean, cov) for the Gibbs posterior
/// `prior · exp(−γ R_n)` on `pb`'s training rows.
pub fn is_check(
    pb: &Problem,
    prior: &Prior,
    gamma: f64,
    mean: &[f64],
    cov: &DMatrix<f64>,
    s: &IsSettings,
) -> Result<IsCheck, String> {
    check(pb, prior, gamma, mean, cov, s, false).map(|(c, _)| c)
}

/// The check, and with `want_cov` the corrected covariance (d × d: only for
/// small d, the reduced form's row space).
fn check(
    pb: &Problem,
    prior: &Prior,
    gamma: f64,
    mean: &[f64],
    cov: &DMatrix<f64>,
    s: &IsSettings,
    want_cov: bool,
) -> Result<(IsCheck, Option<DMatrix<f64>>), String> {
    let t0 = Instant::now();
    let d = mean.len();
    if s.draws < 10 {
        return Err(format!(
            "an importance-sampling check needs at least 10 draws; got {}",
            s.draws
        ));
    }
    if !(s.df > 0.0 && s.scale > 0.0 && (0.0..1.0).contains(&s.prior_mix)) {
        return Err(
            "the proposal needs ν > 0, a positive scale and a prior share in [0, 1)".into(),
        );
    }
    let l = nalgebra::Cholesky::new(cov * s.scale)
        .ok_or("the approximation's covariance is not positive definite")?
        .l();
    let log_det: f64 = 2.0 * l.diagonal().iter().map(|v| v.ln()).sum::<f64>();
    let (nu, df) = (s.df, d as f64);
    let log_t_const = statrs::function::gamma::ln_gamma(0.5 * (nu + df))
        - statrs::function::gamma::ln_gamma(0.5 * nu)
        - 0.5 * df * (nu * std::f64::consts::PI).ln()
        - 0.5 * log_det;
    let m = DVector::from_column_slice(mean);
    let chi2 = rand_distr::ChiSquared::new(nu).map_err(|e| e.to_string())?;
    // Draws and their proposal densities.
    let draws: Vec<(Vec<f64>, f64)> = (0..s.draws)
        .into_par_iter()
        .map(|i| {
            let mut r = stream(s.seed, &[IS_KEY, i as u64]);
            let u: f64 = rand::RngExt::random(&mut r);
            let theta = if u < s.prior_mix {
                let mut t = vec![0.0; d];
                prior.sample(&mut r, &mut t);
                DVector::from_vec(t)
            } else {
                let z = DVector::from_fn(d, |_, _| normal(&mut r));
                let w: f64 = chi2.sample(&mut r);
                &m + &l * z * (nu / w).sqrt()
            };
            let delta2 = l
                .solve_lower_triangular(&(&theta - &m))
                .map_or(f64::INFINITY, |y| y.norm_squared());
            let log_t = log_t_const - 0.5 * (nu + df) * (delta2 / nu).ln_1p();
            let log_q = if s.prior_mix > 0.0 {
                psis::log_sum_exp(&[
                    (1.0 - s.prior_mix).ln() + log_t,
                    s.prior_mix.ln() + prior.log_density(theta.as_slice()),
                ])
            } else {
                log_t
            };
            (theta.as_slice().to_vec(), log_q)
        })
        .collect();
    let thetas: Vec<&[f64]> = draws.iter().map(|d| d.0.as_slice()).collect();
    let (risks, sub) = match s.rows {
        Some(m) if m < pb.n() => {
            let groups = subsample::groups(pb, m, s.seed)?;
            let rows = groups.iter().map(Problem::n).sum::<usize>();
            let (r, sd) = subsample::risks(&groups, &thetas);
            (r, Some((rows, gamma * sd)))
        }
        _ => (risks_of(pb, &thetas), None),
    };
    let log_w: Vec<f64> = draws
        .iter()
        .zip(&risks)
        .map(|((t, lq), r)| prior.log_density(t) - gamma * r - lq)
        .collect();
    let log_z = psis::log_sum_exp(&log_w) - (s.draws as f64).ln();
    let log_z_se = log_mean_se(&log_w);
    let ps = psis::psis(&log_w);
    let w: Vec<f64> = ps.log_weights.iter().map(|v| v.exp()).collect();
    let ess = 1.0 / w.iter().map(|v| v * v).sum::<f64>();
    let mut cmean = vec![0.0; d];
    for (wi, (t, _)) in w.iter().zip(&draws) {
        for k in 0..d {
            cmean[k] += wi * t[k];
        }
    }
    let mut cvar = vec![0.0; d];
    for (wi, (t, _)) in w.iter().zip(&draws) {
        for k in 0..d {
            cvar[k] += wi * (t[k] - cmean[k]).powi(2);
        }
    }
    let full_cov = want_cov.then(|| {
        let mut c = DMatrix::zeros(d, d);
        for (wi, (t, _)) in w.iter().zip(&draws) {
            let dt = DVector::from_fn(d, |k, _| t[k] - cmean[k]);
            c.syger(*wi, &dt, &dt, 1.0);
        }
        c.fill_upper_triangle_with_lower_triangle();
        c
    });
    let sd: Vec<f64> = cvar.iter().map(|v| v.sqrt()).collect();
    let q_sd: Vec<f64> = (0..d).map(|k| cov[(k, k)].sqrt()).collect();
    let mut out = IsCheck {
        draws: s.draws,
        khat: ps.khat,
        khat_threshold: psis::khat_threshold(s.draws),
        trusted: false,
        ess,
        log_z,
        mean: cmean,
        sd,
        shift_sd: Vec::new(),
        sd_ratio: Vec::new(),
        max_abs_shift_sd: 0.0,
        shift_se: 1.0 / ess.sqrt(),
        log_z_se,
        proposal: *s,
        seconds: 0.0,
        verdict: String::new(),
        draws_note: None,
        cpu_seconds: None,
        rows: sub.map(|t| t.0),
        subsample_log_w_sd: sub.map(|t| t.1),
    };
    out.judge(mean, &q_sd);
    out.seconds = t0.elapsed().as_secs_f64();
    Ok((out, full_cov))
}

/// Standard error of log mean(w) from log weights: sd(w)/(mean(w)·√S).
fn log_mean_se(log_w: &[f64]) -> f64 {
    let max = log_w.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let w: Vec<f64> = log_w.iter().map(|v| (v - max).exp()).collect();
    let s = w.len() as f64;
    let mean = w.iter().sum::<f64>() / s;
    let var = w.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (s - 1.0).max(1.0);
    (var / s).sqrt() / mean
}

impl IsCheck {
    /// The shifts and sd ratios against q's means and sds, and the verdict.
    fn judge(&mut self, q_mean: &[f64], q_sd: &[f64]) {
        let (mean, sd) = (&self.mean, &self.sd);
        self.shift_sd = (0..mean.len())
            .map(|k| (mean[k] - q_mean[k]) / sd[k])
            .collect();
        self.sd_ratio = (0..mean.len()).map(|k| q_sd[k] / sd[k]).collect();
        self.max_abs_shift_sd = self.shift_sd.iter().fold(0.0f64, |a, v| a.max(v.abs()));
        let (khat, threshold) = (self.khat, self.khat_threshold);
        let tau = self.subsample_log_w_sd.unwrap_or(0.0);
        self.trusted = khat <= threshold && tau <= subsample::TAU_MAX;
        self.verdict = if tau > subsample::TAU_MAX {
            format!(
                "the row subsample's error on the log weights, τ = {tau:.2} > {:.1}, is too large for the check to judge the approximation (k̂ = {khat:.2}); --is-draws N scores every draw on all rows",
                subsample::TAU_MAX
            )
        } else if !self.trusted {
            format!(
                "k̂ = {khat:.2} > {threshold:.2}: the approximation misses mass of the Gibbs posterior; do not trust it nor the corrected estimates (run SMC)"
            )
        } else if khat > 0.5 {
            format!("k̂ = {khat:.2}: usable, the corrected estimates are noisy")
        } else {
            format!(
                "k̂ = {khat:.2}: good; the approximation's means are within {:.2} sd of the corrected ones (Monte Carlo error ±{:.2} sd)",
                self.max_abs_shift_sd, self.shift_se
            )
        };
        if let (Some(rows), Some(tau)) = (self.rows, self.subsample_log_w_sd) {
            self.verdict.push_str(&format!(
                "; draws scored on a stratified subsample of {rows} training rows in {} groups: the log weights carry ±{tau:.3} (sd over draws) of subsample error",
                subsample::GROUPS
            ));
        }
    }
}

/// The check of ρ = N(mean, V) with a factored V (EP's reduced form, d ≥ n):
/// run in the data's row space, where ρ and the Gibbs posterior differ
/// (`bounds::row_space`), then mapped back to θ.
pub fn is_check_low_rank(
    pb: &Problem,
    prior: &Prior,
    gamma: f64,
    mean: &[f64],
    v: &LowRankCov,
    s: &IsSettings,
) -> Result<IsCheck, String> {
    let t0 = Instant::now();
    let rs = RowSpace::new(&pb.x, mean, v)?;
    rs.exact_for_prior(prior)?;
    let unit = Prior::Gaussian { var: 1.0 };
    let names = (0..rs.rank()).map(|a| format!("w{a}")).collect();
    let sub = Problem::new(names, rs.rows.clone(), pb.y.clone(), gamma, unit.clone())
        .map_err(|e| e.to_string())?;
    let (c, cov_w) = check(&sub, &unit, gamma, &rs.mean, &rs.cov, s, true)?;
    let (c_mean, c_sd) = rs.theta_moments(&c.mean, &cov_w.expect("asked for"));
    let (_, q_sd) = rs.theta_moments(&rs.mean, &rs.cov);
    let mut out = IsCheck {
        mean: c_mean,
        sd: c_sd,
        ..c
    };
    out.judge(mean, &q_sd);
    out.seconds = t0.elapsed().as_secs_f64();
    Ok(out)
}

/// The check of a fit's Gaussian approximation (`Fit.mean` and
/// `Fit.covariance`, or `Fit.low_rank_covariance`).
pub fn is_check_fit(fit: &Fit, pb: &Problem, s: &IsSettings) -> Result<IsCheck, String> {
    let gamma = fit.gamma.ok_or("the fit has no γ")?;
    let prior = fit.prior.as_ref().unwrap_or(&pb.prior);
    match (&fit.covariance, &fit.low_rank_covariance) {
        (Some(cov), _) => is_check(pb, prior, gamma, &fit.mean, cov, s),
        (None, Some(v)) => is_check_low_rank(pb, prior, gamma, &fit.mean, v, s),
        (None, None) => Err(format!(
            "the {} fit has no covariance: no importance-sampling check",
            fit.engine
        )),
    }
}

#[cfg(test)]
mod tests;
