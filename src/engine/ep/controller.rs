//! The step controller `--ep-controller anderson`: damped parallel EP with
//! safeguarded Anderson mixing, and one typed non-progress verdict.
//!
//! # Anderson mixing (type II, Walker & Ni 2011)
//! A damped sweep is a fixed-point map x ↦ G(x) on the sites. From the last
//! m pairs (x_i, G(x_i)) with residuals f_i = G(x_i) − x_i, the mixed point
//! is G(x_k) − ΔG·c with c = argmin ‖f_k − ΔF·c‖ (ΔF, ΔG: differences of
//! consecutive f and G), a secant step that removes the slow modes plain
//! damping crawls along. Safeguards: the mixed point must pass the checks of
//! any state (Q positive definite, valid cavities), and it is kept only if
//! the residual at it, ‖G(x) − x‖, falls below the last one; otherwise EP
//! goes back to the plain point G(x_k) and the history restarts. The fixed
//! point and the convergence test (Δ_t < tol·η_t on a plain step) are those
//! of plain damping. The history copies every site each sweep, about the
//! cost of a sweep, so mixing starts after `PLAIN_SWEEPS` plain sweeps: on
//! `bench-ep` (γ = 400) this cut the controller's CPU by 2.3–2.9× where
//! plain damping converges within them, and kept its gain where it does not
//! (ionosphere: 13–21 sweeps against the classic driver's 242).
//!
//! # The non-progress verdict (`Progress`)
//! One rule instead of stall, cycle, drift and wandering: over a window of
//! `WINDOW` accepted steps the residual r_t = Δ_t/η_t must contract at a
//! rate that reaches the tolerance within the sweeps left. Robust to cycles
//! of period < `WINDOW`/2: the rate compares the smallest r of the window's
//! later half with the smallest of its earlier half. A cycle or a drift
//! (rate ≥ 1) and a contraction too slow for the budget end the run with a
//! typed reason (`NonProgress`) after at most `2·WINDOW` sweeps at one η; a
//! window without contraction first halves η (`VERDICT_HALVINGS` times), as
//! a cycle at a large step converges at a smaller one.

use std::collections::VecDeque;

use serde::Serialize;

/// Accepted steps of the verdict's window.
pub const WINDOW: usize = 24;
/// Halvings of η on a window without contraction before the verdict: a
/// cycle of the damped map at a large step ends at a smaller one, a drift
/// does not (its verdict comes (`VERDICT_HALVINGS` + 1)·`WINDOW` = 48
/// sweeps past the warm-up).
pub const VERDICT_HALVINGS: usize = 1;
/// Plain damped sweeps before the mixing starts (most runs converge
/// within them; the history costs about one sweep per sweep).
pub const PLAIN_SWEEPS: usize = 12;
/// Pairs (x, G(x)) of the mixing's history.
pub const HISTORY: usize = 5;
/// Largest memory of the mixing's history (else plain damping).
pub const HISTORY_BYTES: usize = 256 << 20;

/// Why a run makes no progress.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum NonProgress {
    /// The residual did not fall over the window: a cycle or a drift.
    NoContraction { ratio: f64 },
    /// It falls, too slowly to reach the tolerance within the sweeps left.
    TooSlow { rate: f64, needed: f64, left: usize },
}

impl NonProgress {
    pub fn describe(&self) -> String {
        match self {
            NonProgress::NoContraction { ratio } => format!(
                "no progress: over {WINDOW} sweeps the smallest Δ/η of the later half is {ratio:.3}× \
                 the earlier half's (a cycle or a drift: no fixed point in reach at this γ)"
            ),
            NonProgress::TooSlow { rate, needed, left } => format!(
                "no progress: Δ/η contracts by {rate:.4} a sweep, {needed:.0} more sweeps to the \
                 tolerance but {left} left"
            ),
        }
    }
}

/// The verdict's state over a run (reset when η changes).
#[derive(Debug, Default)]
pub struct Progress {
    window: VecDeque<f64>,
}

impl Progress {
    pub fn reset(&mut self) {
        self.window.clear();
    }

    /// An accepted step with residual `r` = Δ/η; `goal` the convergence
    /// threshold of r (tol), `left` the sweeps left. Some(reason) when the
    /// run cannot converge at this rate.
    pub fn step(&mut self, r: f64, goal: f64, left: usize) -> Option<NonProgress> {
        self.window.push_back(r);
        if self.window.len() > WINDOW {
            self.window.pop_front();
        }
        if self.window.len() < WINDOW {
            return None;
        }
        let half = WINDOW / 2;
        let min = |it: &mut dyn Iterator<Item = &f64>| it.fold(f64::INFINITY, |a, &b| a.min(b));
        let early = min(&mut self.window.iter().take(half));
        let late = min(&mut self.window.iter().skip(half));
        let ratio = late / early;
        if ratio.is_nan() || ratio >= 1.0 {
            return Some(NonProgress::NoContraction { ratio });
        }
        let rate = ratio.powf(1.0 / half as f64);
        let now = *self.window.back().expect("full");
        let needed = ((goal / now).ln() / rate.ln()).max(0.0);
        (needed > left as f64).then_some(NonProgress::TooSlow { rate, needed, left })
    }
}

/// Anderson mixing's history and its least-squares step.
#[derive(Debug)]
pub struct Anderson {
    m: usize,
    x: VecDeque<Vec<f64>>,
    g: VecDeque<Vec<f64>>,
}

fn sub(a: &[f64], b: &[f64]) -> Vec<f64> {
    a.iter().zip(b).map(|(x, y)| x - y).collect()
}

fn dot(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

/// Residual norm ‖g − x‖.
pub fn residual(x: &[f64], g: &[f64]) -> f64 {
    x.iter()
        .zip(g)
        .map(|(a, b)| (b - a) * (b - a))
        .sum::<f64>()
        .sqrt()
}

impl Anderson {
    pub fn new(m: usize) -> Anderson {
        Anderson {
            m,
            x: VecDeque::new(),
            g: VecDeque::new(),
        }
    }

    /// The history for vectors of `len` values, `HISTORY` pairs when they fit
    /// in `HISTORY_BYTES`, else None (plain damping).
    pub fn within_budget(len: usize) -> Option<Anderson> {
        let per = 2 * 8 * len;
        let m = (HISTORY_BYTES / per.max(1)).min(HISTORY);
        (m >= 2).then(|| Anderson::new(m))
    }

    pub fn clear(&mut self) {
        self.x.clear();
        self.g.clear();
    }

    pub fn len(&self) -> usize {
        self.x.len()
    }

    pub fn is_empty(&self) -> bool {
        self.x.is_empty()
    }

    /// Adds (x, G(x)).
    pub fn push(&mut self, x: Vec<f64>, g: Vec<f64>) {
        if self.x.len() == self.m + 1 {
            self.x.pop_front();
            self.g.pop_front();
        }
        self.x.push_back(x);
        self.g.push_back(g);
    }

    /// The mixed point from the history (None with fewer than two pairs or a
    /// singular system).
    pub fn mix(&self) -> Option<Vec<f64>> {
        let k = self.x.len();
        if k < 2 {
            return None;
        }
        let f: Vec<Vec<f64>> = (0..k).map(|i| sub(&self.g[i], &self.x[i])).collect();
        let df: Vec<Vec<f64>> = (1..k).map(|i| sub(&f[i], &f[i - 1])).collect();
        let dg: Vec<Vec<f64>> = (1..k).map(|i| sub(&self.g[i], &self.g[i - 1])).collect();
        let n = df.len();
        // Normal equations (ΔFᵀΔF + λI) c = ΔFᵀ f_k, λ relative to ‖f_k‖²
        // (`RIDGE`) and at least the round-off of the differences (`ridge`).
        let mut a = vec![vec![0.0; n + 1]; n];
        for i in 0..n {
            for j in 0..n {
                a[i][j] = dot(&df[i], &df[j]);
            }
            a[i][n] = dot(&df[i], &f[k - 1]);
        }
        let lambda = ridge(&f[k - 1], &self.x[k - 1]);
        if !(lambda > 0.0 && lambda.is_finite()) {
            return None;
        }
        for (i, row) in a.iter_mut().enumerate() {
            row[i] += lambda;
        }
        let c = solve(a)?;
        let mut out = self.g[k - 1].clone();
        for (j, cj) in c.iter().enumerate() {
            for (o, d) in out.iter_mut().zip(&dg[j]) {
                *o -= cj * d;
            }
        }
        out.iter().all(|v| v.is_finite()).then_some(out)
    }
}

/// Tikhonov weight of the mixing's least squares, relative to ‖f_k‖²: a
/// secant whose residual differences ΔF are a share s of ‖f_k‖ extrapolates
/// by about s/(s² + RIDGE) steps — 1/(1 − r) for a geometric convergence of
/// rate r with 1 − r ≫ √RIDGE, at most 1/(2√RIDGE) = 5·10⁴ steps whatever ΔF.
pub const RIDGE: f64 = 1e-10;

/// λ of the least squares for the newest residual `f` at the iterate `x`:
/// `RIDGE`·‖f‖², and no less than the round-off of a residual difference
/// (each g − x is known to about ε·|x|). Relative to ΔF itself, as it was,
/// λ cannot tell a secant from round-off: on a drift (f constant) ΔF is pure
/// round-off, c came out near 10¹⁵, and the mixed point landed where x + step
/// rounds to x, a false fixed point.
fn ridge(f: &[f64], x: &[f64]) -> f64 {
    let noise = 4.0 * f64::EPSILON * dot(x, x).sqrt();
    RIDGE * dot(f, f) + noise * noise
}

/// Gaussian elimination with partial pivoting on an augmented n × (n+1) system.
fn solve(mut a: Vec<Vec<f64>>) -> Option<Vec<f64>> {
    let n = a.len();
    for col in 0..n {
        let piv = (col..n).max_by(|&i, &j| a[i][col].abs().total_cmp(&a[j][col].abs()))?;
        if a[piv][col].abs() < 1e-300 {
            return None;
        }
        a.swap(col, piv);
        let (top, rest) = a.split_at_mut(col + 1);
        let pivot = &top[col];
        for row in rest.iter_mut() {
            let f = row[col] / pivot[col];
            for (v, p) in row[col..=n].iter_mut().zip(&pivot[col..=n]) {
                *v -= f * p;
            }
        }
    }
    let mut x = vec![0.0; n];
    for r in (0..n).rev() {
        let s: f64 = (r + 1..n).map(|c| a[r][c] * x[c]).sum();
        x[r] = (a[r][n] - s) / a[r][r];
    }
    x.iter().all(|v| v.is_finite()).then_some(x)
}

#[path = "controller_run.rs"]
mod run;
pub use run::run_once;

#[cfg(test)]
#[path = "controller_tests.rs"]
mod tests;
