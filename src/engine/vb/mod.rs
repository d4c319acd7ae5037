//! Variational Gaussian approximations of the Gibbs posterior (Alquier,
//! Ridgway & Chopin 2016, "ARC16"; ALGORITHMS.md §7): minimise
//! `F(ρ) = γ·E_ρ[R] + KL(ρ ‖ prior)` over ρ = N(m, Σ) in a family F1/F2/F3,
//! for the AUC risk or a classification loss (0-1, hinge, exponential) of the
//! same linear score.
//!
//! Convention: γ multiplies the *mean* risk — `R_n` over the M pairs (1/M) for
//! the AUC, over the n rows (1/n) for classification — as everywhere in this
//! program (§2). ARC16 write the ranking bound with λ on the U-statistic scale
//! `r^U = 2M/(n(n−1))·R_n`, so γ = λ·2M/(n(n−1)); for classification γ = λ.
//!
//! - `family`: the parameterisation (whitened), KL and the chain rule;
//! - `loss`: the per-item expected losses and their mini-batch evaluator;
//! - `pairs`: the exact AUC term over all pairs by GEMMs + SIMD;
//! - `lbfgs`: full-batch optimiser with strong-Wolfe line search;
//! - `stochastic`: Adam on random pair mini-batches for large M;
//! - `cv`: γ by k-fold cross-validation (VB as a method of `engine/select`);
//! - `engine`: the `Engine` (`--method vb`).

pub mod cv;
pub mod engine;
pub mod family;
pub mod lbfgs;
pub mod loss;
pub mod pairs;
pub mod stochastic;

use std::time::Instant;

use nalgebra::DMatrix;
use serde::{Deserialize, Serialize};

pub use engine::Vb;
pub use family::{Family, Params, SigmaGrad};
pub use lbfgs::LbfgsSettings;
pub use loss::Loss;
pub use pairs::PairRisk;
pub use stochastic::AdamSettings;

use crate::engine::event::VbIter;
use crate::engine::interface::{Control, EngineError};
use crate::engine::prior::Prior;

/// Full-batch (L-BFGS over all items) or stochastic (Adam on mini-batches).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum Optimizer {
    /// Full batch up to `full_batch_max_items` items, stochastic above.
    #[default]
    Auto,
    FullBatch,
    Stochastic,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct VbSettings {
    pub family: Family,
    pub loss: Loss,
    pub optimizer: Optimizer,
    /// `Auto` optimises all items at once up to this many (pairs or rows).
    pub full_batch_max_items: usize,
    #[serde(skip, default)]
    pub lbfgs: LbfgsSettings,
    pub adam: AdamSettings,
    pub seed: u64,
    /// Above this many items (pairs or rows) a stochastic run reports E_ρ[R]
    /// (and F) from `risk_sample` random items with a standard error instead
    /// of a pass over all of them (O(n₊n₋) for the AUC: hours at 10⁶ rows).
    #[serde(default = "default_exact_risk_max_items")]
    pub exact_risk_max_items: usize,
    #[serde(default = "default_risk_sample")]
    pub risk_sample: usize,
}

fn default_exact_risk_max_items() -> usize {
    100_000_000
}

fn default_risk_sample() -> usize {
    1_000_000
}

impl Default for VbSettings {
    fn default() -> Self {
        VbSettings {
            family: Family::Diag,
            loss: Loss::Auc,
            optimizer: Optimizer::Auto,
            full_batch_max_items: 4_000_000,
            lbfgs: LbfgsSettings::default(),
            adam: AdamSettings::default(),
            seed: 0,
            exact_risk_max_items: default_exact_risk_max_items(),
            risk_sample: default_risk_sample(),
        }
    }
}

/// ARC16's theory γ (their λ, converted to this program's γ, see the module
/// doc): ranking λ = √(d(n−1))/2 on the U-statistic scale (Cor. 21);
/// classification λ = √(nd) (Cor. 13).
pub fn theory_gamma(loss: Loss, n_pos: usize, n_neg: usize, d: usize) -> f64 {
    let n = (n_pos + n_neg) as f64;
    if loss.is_ranking() {
        let lambda = (d as f64 * (n - 1.0)).sqrt() / 2.0;
        lambda * 2.0 * (n_pos * n_neg) as f64 / (n * (n - 1.0))
    } else {
        (n * d as f64).sqrt()
    }
}

/// ARC16's theory prior variance ϑ: 1 for ranking (the AUC risk is scale-free,
/// so it only fixes the scale of θ), 1/d for classification (Cor. 13).
pub fn theory_prior_var(loss: Loss, d: usize) -> f64 {
    if loss.is_ranking() {
        1.0
    } else {
        1.0 / d as f64
    }
}

/// A fitted variational posterior.
#[derive(Debug, Clone)]
pub struct VbFit {
    pub family: Family,
    pub loss: Loss,
    pub gamma: f64,
    /// The optimum in whitened coordinates (warm starts).
    pub params: Params,
    /// m and Σ of θ.
    pub mean: Vec<f64>,
    pub cov: DMatrix<f64>,
    /// F = γ·E_ρ[R] + KL at the optimum: over all items, or estimated from
    /// `risk_estimate.items` random ones after a stochastic run on more than
    /// `exact_risk_max_items` items.
    pub objective: f64,
    pub expected_risk: f64,
    /// Set when E_ρ[R] is a sample estimate (its standard error: F's is γ·se).
    pub risk_estimate: Option<stochastic::RiskEstimate>,
    pub kl: f64,
    pub iterations: usize,
    pub evaluations: usize,
    pub converged: bool,
    pub reason: String,
    pub stochastic: bool,
    /// The stochastic run's held-out estimate of F at its optimum.
    pub holdout_objective: Option<f64>,
    pub seconds: f64,
}

/// The prior variances of a Gaussian prior, per coordinate.
pub fn prior_vars(prior: &Prior, d: usize) -> Result<Vec<f64>, EngineError> {
    match prior {
        Prior::Gaussian { var } => Ok(vec![*var; d]),
        Prior::Ard { vars } => Ok(vars.clone()),
        Prior::SpikeSlab { .. } => Err(EngineError::InvalidParams(
            "variational Bayes needs a Gaussian prior (isotropic or ARD): the KL to a \
             spike-and-slab prior has no closed form"
                .into(),
        )),
        Prior::Gp(_) => Err(EngineError::InvalidParams(
            "variational Bayes needs a Gaussian prior on θ (isotropic or ARD), not the GP prior \
             on the scores"
                .into(),
        )),
    }
}

/// The exact objective over all items, in whitened coordinates.
enum FullData {
    Pairs(PairRisk),
    Rows(DMatrix<f64>),
}

impl FullData {
    fn risk(&mut self, loss: Loss, p: &Params) -> loss::RiskEval {
        match self {
            FullData::Pairs(pr) => pr.eval(p),
            FullData::Rows(a) => loss::eval_items(a, loss, p),
        }
    }
    fn value(&mut self, loss: Loss, p: &Params) -> f64 {
        match self {
            FullData::Pairs(pr) => pr.value(p),
            FullData::Rows(a) => loss::eval_items(a, loss, p).value,
        }
    }
}

/// Fits ρ at a given γ: the function a cross-validation calls per fold and
/// grid point. `warm`: a previous optimum (same d; a poorer family is
/// promoted; a richer one is ignored: the fit starts from m = 0, Σ = prior). `on_iter` sees every L-BFGS iteration or stochastic check.
#[allow(clippy::too_many_arguments)]
pub fn fit(
    x: &DMatrix<f64>,
    y: &[bool],
    prior: &Prior,
    gamma: f64,
    s: &VbSettings,
    warm: Option<&Params>,
    ctl: &Control,
    on_iter: &mut dyn FnMut(&VbIter),
) -> Result<VbFit, EngineError> {
    let t0 = Instant::now();
    let d = x.ncols();
    let vars = prior_vars(prior, d)?;
    let sq: Vec<f64> = vars.iter().map(|v| v.sqrt()).collect();
    let items = if s.loss.is_ranking() {
        let np = y.iter().filter(|&&b| b).count();
        np * (y.len() - np)
    } else {
        y.len()
    };
    let stochastic = match s.optimizer {
        Optimizer::Auto => items > s.full_batch_max_items,
        Optimizer::FullBatch => false,
        Optimizer::Stochastic => true,
    };
    let p0 = match warm {
        Some(w) if w.d == d && w.family.rank() <= s.family.rank() => w.promote(s.family),
        _ => Params::init(s.family, d, 1.0),
    };
    let unwhiten = |p: &Params| -> (Vec<f64>, Vec<f64>) {
        let mean = p.mean().iter().zip(&sq).map(|(m, q)| m * q).collect();
        let sd = p
            .marginal_var()
            .iter()
            .zip(&sq)
            .map(|(v, q)| v.sqrt() * q)
            .collect();
        (mean, sd)
    };
    let estimate = stochastic && items > s.exact_risk_max_items;
    // A stochastic ranking fit that estimates its objective never passes over
    // all pairs: its items are the whitened rows split by class, built straight
    // from x, with no whitened copy or column-major split beside them (at 10⁷
    // rows those held 2.4 GB of a 6 GB peak).
    let pairs_only = estimate && s.loss.is_ranking();
    let mut full = (!pairs_only).then(|| {
        let mut xw = x.clone();
        for (k, mut col) in xw.column_iter_mut().enumerate() {
            col *= sq[k];
        }
        if s.loss.is_ranking() {
            FullData::Pairs(PairRisk::new(&xw, y))
        } else {
            FullData::Rows(loss::signed_rows(&xw, y))
        }
    });
    let mut risk_estimate = None;
    let (params, iterations, evaluations, converged, reason, holdout) = if stochastic {
        let source = match &full {
            None => stochastic::Items::whitened_pairs(x, y, &sq),
            Some(FullData::Pairs(pr)) => stochastic::Items::pairs(&pr.pass.xp, &pr.pass.xn),
            Some(FullData::Rows(a)) => stochastic::Items::Rows(a),
        };
        let out = stochastic::minimize(
            &source,
            s.loss,
            gamma,
            p0,
            &s.adam,
            s.seed,
            ctl,
            &mut |c, p| {
                let (mean, sd) = unwhiten(p);
                on_iter(&VbIter {
                    iteration: c.step,
                    objective: c.objective,
                    grad_norm: c.grad_inf,
                    step: c.step_size,
                    estimate: true,
                    mean,
                    sd,
                    elapsed: t0.elapsed().as_secs_f64(),
                })
            },
        )?;
        if estimate {
            risk_estimate = Some(stochastic::estimate_risk(
                &source,
                s.loss,
                &out.params,
                s.risk_sample,
                s.seed,
            ));
        }
        (
            out.params,
            out.steps,
            out.steps,
            out.converged,
            out.reason,
            Some(out.holdout_objective),
        )
    } else {
        let full = full.as_mut().ok_or_else(|| {
            EngineError::InvalidParams("vb: a full-batch fit without its data".into())
        })?;
        let (family, loss) = (s.family, s.loss);
        // The point of the last evaluation: the accepted one when `on_iter` runs.
        let last = std::cell::RefCell::new(p0.clone());
        let out = lbfgs::minimize(
            p0.v.clone(),
            |v, g| {
                let p = Params {
                    family,
                    d,
                    v: v.to_vec(),
                };
                let r = full.risk(loss, &p);
                g.copy_from_slice(&p.objective_grad(gamma, &r.grad_m, &r.grad_sigma));
                let f = gamma * r.value + p.kl();
                *last.borrow_mut() = p;
                f
            },
            &s.lbfgs,
            |it| {
                ctl.checkpoint()?;
                let (mean, sd) = unwhiten(&last.borrow());
                on_iter(&VbIter {
                    iteration: it.iter,
                    objective: it.f,
                    grad_norm: it.grad_inf,
                    step: it.step,
                    estimate: false,
                    mean,
                    sd,
                    elapsed: t0.elapsed().as_secs_f64(),
                });
                Ok(())
            },
        )?;
        let p = Params {
            family,
            d,
            v: out.x,
        };
        (
            p,
            out.iterations,
            out.evaluations,
            out.converged,
            out.reason,
            None,
        )
    };
    let expected_risk = match (&risk_estimate, full.as_mut()) {
        (Some(e), _) => e.value,
        (None, Some(f)) => f.value(s.loss, &params),
        (None, None) => {
            return Err(EngineError::InvalidParams(
                "vb: no estimate of the objective and no data to compute it".into(),
            ));
        }
    };
    let kl = params.kl();
    let (mean, _) = unwhiten(&params);
    let mut cov = params.sigma();
    for i in 0..d {
        for j in 0..d {
            cov[(i, j)] *= sq[i] * sq[j];
        }
    }
    Ok(VbFit {
        family: s.family,
        loss: s.loss,
        gamma,
        params,
        mean,
        cov,
        objective: gamma * expected_risk + kl,
        expected_risk,
        risk_estimate,
        kl,
        iterations,
        evaluations,
        converged,
        reason,
        stochastic,
        holdout_objective: holdout,
        seconds: t0.elapsed().as_secs_f64(),
    })
}

#[cfg(test)]
mod tests;
