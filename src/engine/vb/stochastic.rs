//! Stochastic optimisation of the VB objective for many items (large M):
//! Adam (Kingma & Ba 2015) on unbiased gradients from random mini-batches.
//!
//! A step samples B items uniformly with replacement — pairs (i, j) with i
//! positive and j negative drawn independently, or rows — so the batch mean of
//! the per-item gradients is an unbiased estimate of ∇E_ρ[R]; the KL part is
//! exact. The iterates of each window of `check_every` steps are averaged
//! (Polyak–Ruppert) and the average is scored on a fixed held-out sample of
//! items (the same sample at every check, so differences between checks are
//! not sampling noise). Schedule: when a check improves the held-out objective
//! by less than `tol·max(1, |F̂|)` the step size is halved. Convergence rule:
//! two checks in a row where no mean moved by more than `param_tol` of its sd
//! and no sd by more than a factor `1 ± param_tol` (window averages). The
//! objective alone is not enough: the AUC risk is scale-free, so F is nearly
//! flat along some directions (a 0.1 sd shift of the means changed F by 7e-5
//! relative in a test). The last window's average is returned.

use nalgebra::DMatrix;

use super::family::Params;
use super::loss::{Loss, eval_items, item_losses};
use crate::engine::interface::{Control, EngineError};
use crate::engine::numerics::rng::{Rng, stream};

/// Stream keys.
const BATCH_KEY: u64 = 0x7662_6261;
const HOLDOUT_KEY: u64 = 0x7662_686f;
const ESTIMATE_KEY: u64 = 0x7662_6573;
/// Items per independently seeded chunk of a risk estimate.
const ESTIMATE_CHUNK: usize = 1 << 16;

#[derive(Debug, Clone, Copy, serde::Serialize, serde::Deserialize)]
pub struct AdamSettings {
    /// Items per step.
    pub batch: usize,
    /// Initial step (whitened units: prior sds for m, log-sd for the scales).
    pub step: f64,
    pub check_every: usize,
    /// Items of the held-out sample.
    pub holdout: usize,
    /// Relative improvement of the held-out objective below which the step is halved.
    pub tol: f64,
    /// Largest change of a mean (in sds) or of log sd between checks at convergence.
    pub param_tol: f64,
    pub max_steps: usize,
}

impl Default for AdamSettings {
    fn default() -> Self {
        AdamSettings {
            batch: 4000,
            step: 0.05,
            check_every: 100,
            holdout: 1 << 16,
            tol: 1e-4,
            param_tol: 0.01,
            max_steps: 100_000,
        }
    }
}

/// Where items come from: all positive/negative pairs of whitened rows (kept
/// row-major: a pair reads two contiguous rows, where column-wise gathers
/// cost 65% of a step on adult), or the signed rows themselves.
pub enum Items<'a> {
    Pairs {
        xp: Vec<f64>,
        xn: Vec<f64>,
        d: usize,
    },
    Rows(&'a DMatrix<f64>),
}

/// The rows of `x` picked by `rows`, each column scaled by `scale`, row-major
/// (one copy: no transposed matrix in between).
fn row_major(x: &DMatrix<f64>, rows: impl Iterator<Item = usize>, scale: &[f64]) -> Vec<f64> {
    let d = x.ncols();
    let mut out = Vec::with_capacity(x.nrows() * d);
    for i in rows {
        out.extend((0..d).map(|k| x[(i, k)] * scale[k]));
    }
    out
}

impl Items<'_> {
    pub fn pairs(xp: &DMatrix<f64>, xn: &DMatrix<f64>) -> Items<'static> {
        let one = vec![1.0; xp.ncols()];
        Items::Pairs {
            xp: row_major(xp, 0..xp.nrows(), &one),
            xn: row_major(xn, 0..xn.nrows(), &one),
            d: xp.ncols(),
        }
    }

    /// The pairs of the rows of `x` whitened by `scale` (column k times
    /// `scale[k]`), positives and negatives in row order: the same items as
    /// `pairs` of the whitened class split, without that split.
    pub fn whitened_pairs(x: &DMatrix<f64>, y: &[bool], scale: &[f64]) -> Items<'static> {
        let rows = |label: bool| (0..y.len()).filter(move |&i| y[i] == label);
        Items::Pairs {
            xp: row_major(x, rows(true), scale),
            xn: row_major(x, rows(false), scale),
            d: x.ncols(),
        }
    }

    /// B items as rows of a matrix.
    fn sample(&self, rng: &mut Rng, b: usize) -> DMatrix<f64> {
        let d = match self {
            Items::Pairs { d, .. } => *d,
            Items::Rows(x) => x.ncols(),
        };
        let mut a = DMatrix::zeros(b, d);
        self.sample_into(rng, &mut a);
        a
    }

    /// Fills the rows of `a` with random items (no allocation per step).
    fn sample_into(&self, rng: &mut Rng, a: &mut DMatrix<f64>) {
        let b = a.nrows();
        use rand::RngExt;
        match self {
            Items::Pairs { xp, xn, d } => {
                let d = *d;
                let (np, nn) = (xp.len() / d, xn.len() / d);
                let out = a.as_mut_slice();
                for r in 0..b {
                    let (i, j) = (rng.random_range(0..np), rng.random_range(0..nn));
                    let (pi, nj) = (&xp[i * d..(i + 1) * d], &xn[j * d..(j + 1) * d]);
                    for k in 0..d {
                        out[k * b + r] = pi[k] - nj[k];
                    }
                }
            }
            Items::Rows(x) => {
                let idx: Vec<usize> = (0..b).map(|_| rng.random_range(0..x.nrows())).collect();
                for k in 0..x.ncols() {
                    let c = x.column(k);
                    for (dst, &i) in a.column_mut(k).iter_mut().zip(&idx) {
                        *dst = c[i];
                    }
                }
            }
        }
    }
}

/// One check of the run.
#[derive(Debug, Clone, Copy)]
pub struct Check {
    pub step: usize,
    /// Held-out estimate of the objective at the window's average.
    pub objective: f64,
    /// ‖·‖_∞ of the last mini-batch gradient.
    pub grad_inf: f64,
    pub step_size: f64,
}

pub struct StochasticOutcome {
    pub params: Params,
    pub holdout_objective: f64,
    pub steps: usize,
    pub converged: bool,
    pub reason: String,
}

/// Minimises `γ E_ρ[R] + KL` from `p0`.
#[allow(clippy::too_many_arguments)]
pub fn minimize(
    items: &Items<'_>,
    loss: Loss,
    gamma: f64,
    p0: Params,
    s: &AdamSettings,
    seed: u64,
    ctl: &Control,
    on_check: &mut dyn FnMut(&Check, &Params),
) -> Result<StochasticOutcome, EngineError> {
    let holdout = items.sample(&mut stream(seed, &[HOLDOUT_KEY]), s.holdout.max(1));
    let score = |p: &Params| gamma * eval_items(&holdout, loss, p).value + p.kl();
    let n = p0.v.len();
    let mut p = p0;
    let (mut m1, mut m2) = (vec![0.0; n], vec![0.0; n]);
    let (b1, b2, eps) = (0.9f64, 0.999f64, 1e-8);
    let mut alpha = s.step;
    let mut best = score(&p);
    let mut prev: Option<Params> = None;
    let mut avg = vec![0.0; n];
    let mut in_window = 0usize;
    let mut settled = 0;
    let mut grad_inf;
    let mut batch = DMatrix::zeros(batch_rows(s.batch), p.d);
    for t in 1..=s.max_steps {
        items.sample_into(&mut stream(seed, &[BATCH_KEY, t as u64]), &mut batch);
        let r = eval_items(&batch, loss, &p);
        let g = p.objective_grad(gamma, &r.grad_m, &r.grad_sigma);
        grad_inf = g.iter().fold(0.0f64, |a, x| a.max(x.abs()));
        let (c1, c2) = (1.0 - b1.powi(t as i32), 1.0 - b2.powi(t as i32));
        for i in 0..n {
            m1[i] = b1 * m1[i] + (1.0 - b1) * g[i];
            m2[i] = b2 * m2[i] + (1.0 - b2) * g[i] * g[i];
            p.v[i] -= alpha * (m1[i] / c1) / ((m2[i] / c2).sqrt() + eps);
        }
        for (a, v) in avg.iter_mut().zip(&p.v) {
            *a += v;
        }
        in_window += 1;
        if t % s.check_every.max(1) != 0 {
            continue;
        }
        ctl.checkpoint()?;
        let mean = Params {
            v: avg.iter().map(|a| a / in_window as f64).collect(),
            ..p.clone()
        };
        avg.iter_mut().for_each(|a| *a = 0.0);
        in_window = 0;
        let f = score(&mean);
        if !f.is_finite() {
            return Err(EngineError::Numerical(format!(
                "the held-out objective became {f} after {t} stochastic steps"
            )));
        }
        on_check(
            &Check {
                step: t,
                objective: f,
                grad_inf,
                step_size: alpha,
            },
            &mean,
        );
        if f >= best - s.tol * f.abs().max(1.0) {
            alpha *= 0.5;
        }
        best = best.min(f);
        let moved = prev.as_ref().map_or(f64::INFINITY, |q| change(q, &mean));
        settled = if moved < s.param_tol { settled + 1 } else { 0 };
        if settled >= 2 {
            return Ok(StochasticOutcome {
                params: mean,
                holdout_objective: f,
                steps: t,
                converged: true,
                reason: format!("window averages moved < {} sd twice in a row", s.param_tol),
            });
        }
        prev = Some(mean);
    }
    let last = prev.unwrap_or(p);
    let f = score(&last);
    Ok(StochasticOutcome {
        params: last,
        holdout_objective: f,
        steps: s.max_steps,
        converged: false,
        reason: "step limit".into(),
    })
}

/// The largest change between two points: of a mean in sds of `b`, or of a log sd.
fn change(a: &Params, b: &Params) -> f64 {
    let (va, vb) = (a.marginal_var(), b.marginal_var());
    let mut worst = 0.0f64;
    for k in 0..a.d {
        worst = worst.max((a.mean()[k] - b.mean()[k]).abs() / vb[k].sqrt());
        worst = worst.max(0.5 * (va[k] / vb[k]).ln().abs());
    }
    worst
}

/// The batch size used for `b` requested items: `b`, or `b + 8` when the
/// batch's column stride (8b bytes) is a multiple of 4 KiB — the columns would
/// then share cache sets and filling the batch ran 3× slower (adult, b = 4096).
pub fn batch_rows(b: usize) -> usize {
    let b = b.max(1);
    if (8 * b).is_multiple_of(4096) {
        b + 8
    } else {
        b
    }
}

/// E_ρ[R] estimated from random items (ALGORITHMS.md §14): its value, standard
/// error and the number of items.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RiskEstimate {
    pub value: f64,
    pub se: f64,
    pub items: usize,
}

/// The mean expected loss of `count` items drawn uniformly with replacement
/// (pairs: a random positive and a random negative), and sd/√count. Chunks of
/// items have their own streams and are combined in order (Chan's update):
/// the same bits for any thread count.
pub fn estimate_risk(
    items: &Items<'_>,
    loss: Loss,
    p: &Params,
    count: usize,
    seed: u64,
) -> RiskEstimate {
    use rayon::prelude::*;
    let count = count.max(2);
    let chunks = count.div_ceil(ESTIMATE_CHUNK);
    // (items, mean, sum of squared deviations) per chunk.
    let parts: Vec<(f64, f64, f64)> = (0..chunks)
        .into_par_iter()
        .map(|c| {
            let b = ESTIMATE_CHUNK.min(count - c * ESTIMATE_CHUNK);
            let a = items.sample(&mut stream(seed, &[ESTIMATE_KEY, c as u64]), b);
            let l = item_losses(&a, loss, p);
            let mean = l.iter().sum::<f64>() / b as f64;
            let m2 = l.iter().map(|v| (v - mean).powi(2)).sum::<f64>();
            (b as f64, mean, m2)
        })
        .collect();
    let (n, mean, m2) = crate::engine::numerics::pair_risk::pool_chunks(&parts);
    RiskEstimate {
        value: mean,
        se: (m2 / (n - 1.0)).sqrt() / n.sqrt(),
        items: count,
    }
}
