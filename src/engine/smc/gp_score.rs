//! Tempering SMC in score space for the Gaussian-process prior (ALGORITHMS.md
//! §6, §3): the gold standard GP-EP is tested against.
//!
//! The prior `s ~ N(0, K)` is written `s = Z w`, `w ~ N(0, I_r)` with the exact
//! whitened factor of `gp::factor` (pivoted Cholesky to 1e-10, the same prior
//! as GP-EP's whitened form). The tempering follows §3 (ESS bisection, log Z
//! increments, systematic resampling, `smc::tempering`); the moves need no
//! covariance calibration, so the student report's failure (Cholesky errors of
//! a random-walk proposal in dimension n) cannot happen:
//! - **exact ellipse move** (M ≤ `EXACT_MAX_PAIRS`): draw ν ~ N(0, I) and the
//!   angle φ of `w cos φ + ν sin φ` from its exact conditional. On the ellipse
//!   the pair (i, j) is discordant on an arc of length π bounded by the roots of
//!   `a cos φ + b sin φ = 0` (a, b: differences of the scores of w and ν): the
//!   2M breakpoints, sorted, give the piecewise-constant risk, and φ is drawn
//!   arc ∝ length · exp(−γ R), then uniform in it (as §10's great circle).
//! - **elliptical slice sampling** (Murray, Adams & MacKay 2010) above it:
//!   O(n log n) per risk evaluation instead of O(M log M) per move.
//!
//! Each particle moves until its risk and the scores of a few rows have
//! decorrelated from their stage-start values (as the linear sampler).

use std::f64::consts::{PI, TAU};
use std::time::Instant;

use nalgebra::DMatrix;
use rand::RngExt;
use rayon::prelude::*;
use serde_json::json;

use super::energy_mixing::pearson;
use super::settings::{Moves, SmcSettings};
use super::tempering::{next_delta, reweight, systematic};
use crate::engine::Prior;
use crate::engine::error::NonConvergence;
use crate::engine::event::{Event, SmcStage};
use crate::engine::fit::{EngineKind, Fit, ScoreModel};
use crate::engine::gp::factor::{Distinct, pivoted_cholesky};
use crate::engine::gp::model::{FeatureBasis, GpModel, pack_lower};
use crate::engine::gp::{EXACT_TOL, GpApprox, GpPrior, KernelKind, LengthScale, median_distance};
use crate::engine::interface::{Control, EngineError, Observer};
use crate::engine::metrics::auc_risk;
use crate::engine::numerics::rng::{self, Rng};
use crate::engine::problem::Problem;

/// Largest number of pairs for the exact ellipse move (O(M log M) per move).
pub const EXACT_MAX_PAIRS: usize = 20_000;
/// Score coordinates watched for decorrelation (besides the risk).
const WATCHED: usize = 8;
const KEY_PRIOR: u64 = 0x6750_0001;
const KEY_RESAMPLE: u64 = 0x6750_0002;
const KEY_MOVE: u64 = 0x6750_0003;

/// The whitened prior and the pairs.
struct Space {
    /// Distinct rows × r.
    z: DMatrix<f64>,
    /// Distinct-row index of every training row.
    map: Vec<usize>,
    y: Vec<bool>,
    /// Distinct-row indices of the positives and negatives.
    up: Vec<usize>,
    un: Vec<usize>,
    exact: bool,
}

impl Space {
    fn r(&self) -> usize {
        self.z.ncols()
    }
    fn scores(&self, w: &[f64]) -> Vec<f64> {
        (0..self.z.nrows())
            .map(|a| self.z.row(a).iter().zip(w).map(|(z, w)| z * w).sum())
            .collect()
    }
    fn risk(&self, s: &[f64]) -> f64 {
        let rows: Vec<f64> = self.map.iter().map(|&u| s[u]).collect();
        auc_risk(&rows, &self.y)
    }

    /// One move of particle (w, s, risk) at inverse temperature γ.
    fn step(&self, w: &mut [f64], s: &mut [f64], risk: &mut f64, gamma: f64, rng: &mut Rng) -> u64 {
        let nu: Vec<f64> = (0..self.r()).map(|_| rng::normal(rng)).collect();
        let v = self.scores(&nu);
        let (phi, new_risk, evals) = if self.exact {
            let (phi, r) = self.ellipse_angle(s, &v, gamma, rng);
            (phi, r, 1)
        } else {
            self.slice_angle(s, &v, *risk, gamma, rng)
        };
        let (c, sn) = (phi.cos(), phi.sin());
        for (wi, ni) in w.iter_mut().zip(&nu) {
            *wi = *wi * c + ni * sn;
        }
        for (si, vi) in s.iter_mut().zip(&v) {
            *si = *si * c + vi * sn;
        }
        *risk = new_risk;
        evals
    }

    /// φ from its exact conditional on the ellipse `s cos φ + v sin φ`.
    fn ellipse_angle(&self, s: &[f64], v: &[f64], gamma: f64, rng: &mut Rng) -> (f64, f64) {
        let m = (self.up.len() * self.un.len()) as f64;
        // Events (angle, ±1): a pair enters discordance at φ0 + π/2, leaves at φ0 + 3π/2.
        let mut ev: Vec<(f64, i32)> = Vec::with_capacity(2 * self.up.len() * self.un.len());
        let (mut at_zero, mut ties) = (0i64, 0usize);
        for &i in &self.up {
            for &j in &self.un {
                if i == j {
                    ties += 1; // identical rows: always tied (½)
                    continue;
                }
                let (a, b) = (s[i] - s[j], v[i] - v[j]);
                let phi0 = b.atan2(a);
                let enter = (phi0 + 0.5 * PI).rem_euclid(TAU);
                let leave = (phi0 + 1.5 * PI).rem_euclid(TAU);
                ev.push((enter, 1));
                ev.push((leave, -1));
                // Discordant at φ = 0 iff the arc (enter, enter + π) covers 0.
                if leave < enter {
                    at_zero += 1;
                }
            }
        }
        ev.sort_unstable_by(|x, y| x.0.total_cmp(&y.0));
        // Arcs between consecutive events, weight len · exp(−γ (R − R_min)).
        let mut arcs: Vec<(f64, f64, f64)> = Vec::with_capacity(ev.len() + 1); // (start, len, R)
        let mut count = at_zero;
        let mut prev = 0.0;
        for &(a, dlt) in &ev {
            if a > prev {
                arcs.push((prev, a - prev, (count as f64 + 0.5 * ties as f64) / m));
            }
            count += dlt as i64;
            prev = a;
        }
        if TAU > prev {
            arcs.push((prev, TAU - prev, (count as f64 + 0.5 * ties as f64) / m));
        }
        let r_min = arcs.iter().map(|a| a.2).fold(f64::INFINITY, f64::min);
        let weights: Vec<f64> = arcs
            .iter()
            .map(|&(_, len, r)| len * (-gamma * (r - r_min)).exp())
            .collect();
        let total: f64 = weights.iter().sum();
        let mut u = rng.random::<f64>() * total;
        for (k, &wk) in weights.iter().enumerate() {
            if u < wk || k == weights.len() - 1 {
                let (start, len, r) = arcs[k];
                let t = (u / wk).clamp(0.0, 1.0);
                return (start + t * len, r);
            }
            u -= wk;
        }
        unreachable!("weights are positive")
    }

    /// Elliptical slice sampling of φ; returns (φ, risk, evaluations).
    fn slice_angle(
        &self,
        s: &[f64],
        v: &[f64],
        risk: f64,
        gamma: f64,
        rng: &mut Rng,
    ) -> (f64, f64, u64) {
        let log_y = -gamma * risk + rng.random::<f64>().ln();
        let mut phi = rng.random::<f64>() * TAU;
        let (mut lo, mut hi) = (phi - TAU, phi);
        let mut evals = 0;
        loop {
            let (c, sn) = (phi.cos(), phi.sin());
            let cand: Vec<f64> = s.iter().zip(v).map(|(a, b)| a * c + b * sn).collect();
            let r = self.risk(&cand);
            evals += 1;
            if -gamma * r > log_y || hi - lo < 1e-12 {
                return (phi, if -gamma * r > log_y { r } else { risk }, evals);
            }
            if phi < 0.0 {
                lo = phi;
            } else {
                hi = phi;
            }
            phi = lo + rng.random::<f64>() * (hi - lo);
        }
    }
}

/// `Smc::run` for a GP prior.
pub fn run(
    s: &SmcSettings,
    pb: &Problem,
    gp: &GpPrior,
    ctl: &Control,
    obs: &mut dyn Observer,
) -> Result<Fit, EngineError> {
    let t0 = Instant::now();
    if gp.lengthscale == LengthScale::Auto {
        return Err(EngineError::InvalidParams(
            "SMC with the GP prior needs a fixed length-scale (the evidence search is GP-EP's; \
             use the ℓ it chose)"
                .into(),
        ));
    }
    if !matches!(gp.approx, GpApprox::Exact | GpApprox::Auto) {
        return Err(EngineError::InvalidParams(
            "score-space SMC samples the exact GP prior; feature approximations are for GP-EP"
                .into(),
        ));
    }
    let median = median_distance(&pb.x);
    let ell = match gp.lengthscale {
        LengthScale::Value(l) => l,
        _ => median,
    };
    let kernel = gp.kernel_at(ell);
    let distinct = Distinct::of(&pb.x);
    let xu = pb.x.select_rows(&distinct.reps);
    let factor = pivoted_cholesky(&kernel, &xu, EXACT_TOL, xu.nrows());
    let up: Vec<usize> = (0..pb.n())
        .filter(|&i| pb.y[i])
        .map(|i| distinct.map[i])
        .collect();
    let un: Vec<usize> = (0..pb.n())
        .filter(|&i| !pb.y[i])
        .map(|i| distinct.map[i])
        .collect();
    let space = Space {
        exact: up.len() * un.len() <= EXACT_MAX_PAIRS,
        z: factor.z.clone(),
        map: distinct.map.clone(),
        y: pb.y.clone(),
        up,
        un,
    };
    let (n_part, r, nu) = (s.particles, space.r(), space.z.nrows());
    obs.observe(Event::Started {
        engine: "smc".into(),
        n: pb.n(),
        d: r,
        pairs: pb.pairs(),
        gamma: pb.gamma,
    });
    let mut trace = Vec::new();
    // Prior draws.
    let mut w: Vec<Vec<f64>> = (0..n_part)
        .into_par_iter()
        .map(|i| {
            let mut g = rng::stream(s.seed, &[KEY_PRIOR, i as u64]);
            (0..r).map(|_| rng::normal(&mut g)).collect()
        })
        .collect();
    let mut sc: Vec<Vec<f64>> = w.par_iter().map(|wi| space.scores(wi)).collect();
    let mut risk: Vec<f64> = sc.par_iter().map(|si| space.risk(si)).collect();
    let watched: Vec<usize> = (0..WATCHED.min(nu))
        .map(|k| k * nu / WATCHED.min(nu))
        .collect();
    let (min_moves, max_moves) = match s.moves {
        Moves::Fixed(k) => (k, k),
        Moves::Adaptive { min, max } => (min, max),
    };
    let (mut gamma, mut log_z, mut stage) = (0.0f64, 0.0f64, 0usize);
    let mut path = Vec::new();
    let mut decorrelated = true;
    let mut evaluations = n_part as u64;
    while gamma < pb.gamma {
        ctl.checkpoint()?;
        if stage >= s.max_stages {
            return Err(EngineError::NotConverged {
                reason: NonConvergence::StageCap,
                account: None,
                message: format!(
                    "SMC reached {} stages at γ = {gamma} < {}",
                    s.max_stages, pb.gamma
                ),
                diagnostics: json!({ "gamma": gamma, "stages": stage }),
            });
        }
        stage += 1;
        let delta = next_delta(&risk, pb.gamma - gamma, s.ess);
        let rw = reweight(&risk, delta);
        log_z += rw.log_z_increment;
        gamma = if delta >= pb.gamma - gamma {
            pb.gamma
        } else {
            gamma + delta
        };
        let idx = systematic(
            &rw.weights,
            n_part,
            &mut rng::stream(s.seed, &[KEY_RESAMPLE, stage as u64]),
        );
        w = idx.iter().map(|&i| w[i].clone()).collect();
        sc = idx.iter().map(|&i| sc[i].clone()).collect();
        risk = idx.iter().map(|&i| risk[i]).collect();
        let start_risk = risk.clone();
        let start_watch: Vec<Vec<f64>> = watched
            .iter()
            .map(|&a| sc.iter().map(|p| p[a]).collect())
            .collect();
        let (mut moves, mut max_corr) = (0usize, 1.0f64);
        while moves < max_moves && (moves < min_moves || max_corr > s.decorrelation) {
            ctl.checkpoint()?;
            let g = gamma;
            let evals: u64 = w
                .par_iter_mut()
                .zip(sc.par_iter_mut())
                .zip(risk.par_iter_mut())
                .enumerate()
                .map(|(i, ((wi, si), ri))| {
                    let mut rg =
                        rng::stream(s.seed, &[KEY_MOVE, stage as u64, moves as u64, i as u64]);
                    space.step(wi, si, ri, g, &mut rg)
                })
                .sum();
            evaluations += evals;
            moves += 1;
            max_corr = pearson(&start_risk, &risk).abs();
            for (k, &a) in watched.iter().enumerate() {
                let now: Vec<f64> = sc.iter().map(|p| p[a]).collect();
                max_corr = max_corr.max(pearson(&start_watch[k], &now).abs());
            }
        }
        if max_corr > s.decorrelation {
            decorrelated = false;
        }
        let mean_risk = risk.iter().sum::<f64>() / n_part as f64;
        let risk_sd =
            (risk.iter().map(|r| (r - mean_risk).powi(2)).sum::<f64>() / n_part as f64).sqrt();
        let small = nu <= 200;
        let (mean, sd) = if small {
            moments(&sc, nu)
        } else {
            (Vec::new(), Vec::new())
        };
        let ev = Event::SmcStage(SmcStage {
            stage,
            gamma,
            ess_frac: rw.ess_frac,
            acceptance: 1.0,
            scale: 1.0,
            moves,
            max_correlation: None,
            log_z,
            mean,
            sd,
            mean_risk,
            risk_sd: Some(risk_sd),
            evaluations,
            elapsed: t0.elapsed().as_secs_f64(),
            histograms: Vec::new(),
            inclusion: None,
        });
        trace.push(ev.clone());
        obs.observe(ev);
        path.push(json!({
            "stage": stage, "gamma": gamma, "log_z": log_z, "ess_frac": rw.ess_frac,
            "moves": moves, "max_correlation": max_corr, "mean_risk": mean_risk,
        }));
    }
    // The posterior of w: mean and covariance of the particles.
    let wm = DMatrix::from_fn(n_part, r, |i, k| w[i][k]);
    let mean_w: Vec<f64> = (0..r).map(|k| wm.column(k).mean()).collect();
    let mut centred = wm.clone();
    for (k, &m) in mean_w.iter().enumerate() {
        centred.column_mut(k).add_scalar_mut(-m);
    }
    let cov = crate::engine::numerics::linalg::at_b(&centred, &centred) / n_part as f64;
    let (s_mean, s_sd) = moments(&sc, nu);
    let model = GpModel {
        kernel: kernel.clone(),
        basis: FeatureBasis::Landmarks {
            d: pb.d(),
            rows: xu
                .select_rows(&factor.pivots)
                .transpose()
                .as_slice()
                .to_vec(),
        },
        mean: mean_w,
        spread: crate::engine::gp::GpSpread::Covariance {
            packed: pack_lower(&cov),
        },
        alpha: Vec::new(),
    }
    .with_alpha();
    let mut fit = Fit::new(
        EngineKind::Smc,
        pb.names.clone(),
        ScoreModel::Gp(Box::new(model)),
    );
    fit.log_evidence = Some(log_z);
    fit.gamma = Some(pb.gamma);
    fit.prior = Some(Prior::Gp(GpPrior {
        kernel: gp.kernel,
        lengthscale: if gp.kernel == KernelKind::Linear {
            gp.lengthscale
        } else {
            LengthScale::Value(ell)
        },
        approx: GpApprox::Exact,
    }));
    fit.converged = decorrelated;
    fit.details = json!({
        "model": "gp",
        "log_evidence": log_z,
        "stages": stage,
        "move": if space.exact { "exact ellipse" } else { "elliptical slice" },
        "rank": r,
        "factor_residual": factor.residual,
        "particles": n_part,
        "risk_evaluations": evaluations,
        "lengthscale": { "value": (gp.kernel != KernelKind::Linear).then_some(ell), "median_distance": median },
        "training_scores": {
            "mean": distinct.map.iter().map(|&u| s_mean[u]).collect::<Vec<_>>(),
            "sd": distinct.map.iter().map(|&u| s_sd[u]).collect::<Vec<_>>(),
        },
        "converged_means": format!(
            "every stage's moves decorrelated the risk and {} watched scores from their stage-start values (|correlation| ≤ {})",
            watched.len(), s.decorrelation
        ),
        "path": path,
        "sampler_seconds": t0.elapsed().as_secs_f64(),
    });
    fit.trace = trace;
    Ok(fit)
}

/// Mean and sd of every coordinate of the particles.
fn moments(p: &[Vec<f64>], dim: usize) -> (Vec<f64>, Vec<f64>) {
    let n = p.len() as f64;
    let mut mean = vec![0.0; dim];
    for x in p {
        for (m, v) in mean.iter_mut().zip(x) {
            *m += v / n;
        }
    }
    let mut var = vec![0.0; dim];
    for x in p {
        for ((a, v), m) in var.iter_mut().zip(x).zip(&mean) {
            *a += (v - m) * (v - m) / n;
        }
    }
    (mean, var.iter().map(|v| v.sqrt()).collect())
}
