//! The step controller `--ep-controller anderson`: damped parallel EP with
//! a safeguarded secant step, Anderson mixing where the run stays slow, and
//! one typed non-progress verdict.
//!
//! # The secant step (Anderson(1) on the last plain pair)
//! After two plain steps x_{k−1} → x_k → G(x_k), the one-difference
//! Anderson point is x_k + ω·(G(x_k) − x_k) (`secant_factor`; Aitken's
//! 1/(1 − r) on a geometric convergence), ω from the marginals q_{k−1},
//! q_k, q_{k+1} in the coordinates Δ is judged in (`marginal_dots`: p values,
//! no pass over the sites). Taken when ω ≥ `MIN_FACTOR`, capped so that it
//! moves q by at most `SPAN` sds and by a trust factor (half an undone
//! step's, doubled by a kept one or a sweep without one). It is written
//! straight into the store, its aggregates combined linearly from the two
//! ends' (held, `secant`), so it costs one pass over the sites without Z,
//! less than the classic driver's extrapolation. Kept only if the residual
//! ‖G(x) − x‖ at it falls below ‖G(x_k) − x_k‖, else scaled back by 1/ω to
//! the plain step G(x_k) (no rebuild of the aggregates, no repeated sweep).
//! On `bench-ep` (γ = 400) it takes ionosphere from 334 plain sweeps to 40
//! (classic 242).
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
//! cost of a sweep, so mixing starts (and the secant stops) after
//! `PLAIN_SWEEPS` sweeps, and only when the run, at its rate, needs more
//! than as many again: where the secant cannot act (Pima's period-2
//! oscillation gives ω < 2: 30 sweeps without the mixing, 19 with it).
//!
//! # The non-progress verdict (`Progress`)
//! One rule instead of stall, cycle, drift and wandering: over a window of
//! `WINDOW` accepted steps the residual r_t = Δ_t/η_t must contract at a
//! rate that reaches the tolerance within the sweeps left. Robust to cycles
//! of period < `WINDOW`/2: the rate compares the smallest r of the window's
//! later half with the smallest of its earlier half. A cycle or a drift
//! (rate ≥ 1) and a contraction too slow for the budget end the run with a
//! typed reason (`NonProgress`) after at most `2·WINDOW` sweeps at one η
//! (too slow only once the projection stopped improving over a window); a
//! window without contraction first halves η (`VERDICT_HALVINGS` times), as
//! a cycle at a large step converges at a smaller one.

use std::collections::VecDeque;

use serde::Serialize;

use super::sweep_state::Marginal;

/// Accepted steps of the verdict's window.
pub const WINDOW: usize = 24;
/// Halvings of η on a window without contraction before the verdict: a
/// cycle of the damped map at a large step ends at a smaller one, a drift
/// does not (its verdict comes (`VERDICT_HALVINGS` + 1)·`WINDOW` = 48
/// sweeps past the warm-up).
pub const VERDICT_HALVINGS: usize = 1;
/// Plain damped sweeps before the mixing may start, and the most sweeps
/// plain damping may still need at its current rate for the mixing not to
/// start: the history costs about a sweep per sweep (DNA at γ = 400: 15
/// sweeps either way, +25% CPU when it mixed from sweep 12).
pub const PLAIN_SWEEPS: usize = 12;
/// Pairs (x, G(x)) of the mixing's history.
pub const HISTORY: usize = 5;
/// Largest memory of the mixing's history (else plain damping).
pub const HISTORY_BYTES: usize = 256 << 20;

/// A projection beyond this many times the sweeps left is too slow at once,
/// without waiting for the rate to improve: a drift whose residual is
/// constant up to round-off projects ≥ 10⁵ sweeps (`controller_tests`), a
/// transient 1.4–2.2× the sweeps left (spike-and-slab Glass).
pub const RESCUE: f64 = 10.0;

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
    /// The projected sweeps to the goal at each of the last `WINDOW` + 1
    /// steps (from the first full window on).
    needed: VecDeque<f64>,
}

impl Progress {
    pub fn reset(&mut self) {
        self.window.clear();
        self.needed.clear();
    }

    /// An accepted step with residual `r` = Δ/η; `goal` the convergence
    /// threshold of r (tol), `left` the sweeps left. Some(reason) when the
    /// run cannot converge at this rate.
    ///
    /// Too slow is said only of a projection that has stopped improving:
    /// a window earlier it ended no later (the projected end came less than
    /// a window nearer). A damped run's rate improves after a transient
    /// (spike-and-slab Glass at γ = 2n, split 0, η = 0.1: Δ/η contracts by
    /// 0.999 a sweep over its first window and by 0.97 from sweep ~90 on;
    /// the first window's projection of 2108 sweeps condemned it at sweep
    /// 24). A steady too-slow rate gets its verdict after two windows, a
    /// hopeless one (beyond `RESCUE`× the sweeps left) after one.
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
        self.needed.push_back(needed);
        let then = (self.needed.len() > WINDOW).then(|| self.needed.pop_front().expect("full"));
        let left_f = left as f64;
        let too_slow = needed > left_f
            && (needed > RESCUE * left_f
                // The projected end (sweep + needed) came a window nearer
                // or more over the last window: improving, wait.
                || then.is_some_and(|then| needed > then - 2.0 * WINDOW as f64));
        too_slow.then_some(NonProgress::TooSlow { rate, needed, left })
    }
}

impl Progress {
    /// Sweeps plain damping still needs to bring r to `goal` at the rate of
    /// its last `RATE_SPAN` steps (infinite when r does not fall).
    pub fn sweeps_to(&self, goal: f64) -> f64 {
        let w = &self.window;
        if w.len() <= RATE_SPAN {
            return f64::INFINITY;
        }
        let (now, then) = (w[w.len() - 1], w[w.len() - 1 - RATE_SPAN]);
        let rate = (now / then).powf(1.0 / RATE_SPAN as f64);
        if rate.is_nan() || rate >= 1.0 {
            return f64::INFINITY;
        }
        ((goal / now).ln() / rate.ln()).max(0.0)
    }
}

/// Steps over which `Progress::sweeps_to` measures plain damping's rate.
const RATE_SPAN: usize = 4;

/// Anderson mixing's history in preallocated rings, and its least-squares
/// step. Each slot holds G(x_i) and the residual f_i = G(x_i) − x_i (x_i
/// itself is never needed again: the mixed point is Σ w_i G(x_i)); the
/// Gram matrix ⟨f_a, f_b⟩ of the slots is updated by one row per step, and
/// the normal equations of the differences ΔF are formed from it. No
/// allocation per sweep, and every pass over the slots fused into one (by
/// blocks of `BLOCK` values): the history's memory traffic, not its
/// arithmetic, is its cost next to a sweep at small d (Pima: 47 passes of
/// the sites per mixing sweep before, ≈ 1 sweep's CPU).
#[derive(Debug)]
pub struct Anderson {
    /// Differences of the least squares (pairs kept: m + 1).
    m: usize,
    g: Vec<Vec<f64>>,
    f: Vec<Vec<f64>>,
    /// Committed slots, oldest first.
    order: VecDeque<usize>,
    /// The slot `stage` writes (never in `order`).
    staged: usize,
    /// ⟨f_a, f_b⟩ by slot, row-major over the m + 2 slots.
    gram: Vec<f64>,
    /// ‖x_a‖² by slot (the ridge's round-off term).
    xx: Vec<f64>,
    /// The last mixed point's weights by slot.
    weights: Vec<(usize, f64)>,
}

/// A mixed point and its weights on the history's slots (`Anderson::mix`).
pub type Mixed<'a> = (&'a [f64], &'a [(usize, f64)]);

/// Values per block of the fused passes (a block of every slot stays in L1).
const BLOCK: usize = 512;

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
    /// A history of `m` differences for vectors of `len` values.
    pub fn new(m: usize, len: usize) -> Anderson {
        let m = m.min(HISTORY);
        let slots = m + 2;
        Anderson {
            m,
            // One zeroed allocation each, so that the pages a short run
            // never writes are never touched: `vec![v; n]` clones v, writing
            // every slot up front (credit: the page faults of 15 slots were
            // most of the controller's extra CPU where the run mixed once).
            g: (0..slots).map(|_| vec![0.0; len]).collect(),
            f: (0..slots).map(|_| vec![0.0; len]).collect(),
            order: VecDeque::with_capacity(slots),
            staged: 0,
            gram: vec![0.0; slots * slots],
            xx: vec![0.0; slots],
            weights: Vec::with_capacity(slots),
        }
    }

    /// The history for vectors of `len` values, `HISTORY` pairs when they fit
    /// in `HISTORY_BYTES`, else None (plain damping).
    pub fn within_budget(len: usize) -> Option<Anderson> {
        // G(x) and f per slot (m + 2 slots; the mixed point goes into the
        // staging slot).
        let per = 2 * 8 * len.max(1);
        let m = (HISTORY_BYTES / per).saturating_sub(2).min(HISTORY);
        (m >= 2).then(|| Anderson::new(m, len))
    }

    pub fn clear(&mut self) {
        self.order.clear();
        self.staged = 0;
    }

    pub fn len(&self) -> usize {
        self.order.len()
    }

    pub fn is_empty(&self) -> bool {
        self.order.is_empty()
    }

    /// Writes a pair (x, G(x)) into the staging slot through `fill(x, g)`
    /// and returns its residual ‖G(x) − x‖; `commit` adds it to the history.
    pub fn stage(&mut self, fill: impl FnOnce(&mut [f64], &mut [f64])) -> f64 {
        let i = self.staged;
        let (g, f) = (&mut self.g[i], &mut self.f[i]);
        // x goes into f's slot, then f = g − x in place, with ‖f‖² and ‖x‖².
        fill(f, g);
        let (mut ff, mut xx) = (0.0, 0.0);
        for (fv, gv) in f.iter_mut().zip(g.iter()) {
            xx += *fv * *fv;
            *fv = gv - *fv;
            ff += *fv * *fv;
        }
        let slots = self.xx.len();
        self.gram[i * slots + i] = ff;
        self.xx[i] = xx;
        ff.sqrt()
    }

    /// Adds the staged pair to the history (the oldest leaves a full one).
    pub fn commit(&mut self) {
        let slots = self.xx.len();
        let i = self.staged;
        if self.order.len() == self.m + 1 {
            self.order.pop_front();
        }
        // ⟨f_i, f_j⟩ for every committed j in one pass over the slots.
        let mut dots = [0.0; HISTORY + 2];
        let fi = &self.f[i];
        for start in (0..fi.len()).step_by(BLOCK) {
            let end = (start + BLOCK).min(fi.len());
            let a = &fi[start..end];
            for (d, &j) in dots.iter_mut().zip(&self.order) {
                *d += dot(a, &self.f[j][start..end]);
            }
        }
        for (&v, &j) in dots.iter().zip(&self.order) {
            self.gram[i * slots + j] = v;
            self.gram[j * slots + i] = v;
        }
        self.order.push_back(i);
        self.staged = (0..slots)
            .find(|s| !self.order.contains(s))
            .expect("m + 2 slots, at most m + 1 committed");
    }

    /// The slot the next `stage` writes (the flavour keeps what it needs of
    /// G(x) under it: `SweepState::hold_trial`).
    pub fn staged_slot(&self) -> usize {
        self.staged
    }

    /// The mixed point from the history (None with fewer than two pairs or a
    /// singular system): G(x_k) − ΔG·c with c the ridge least squares of
    /// f_k ≈ ΔF·c; with its weights on the slots' G(x_i) (summing to 1).
    pub fn mix(&mut self) -> Option<Mixed<'_>> {
        let k = self.order.len();
        if k < 2 {
            return None;
        }
        let slots = self.xx.len();
        let s: Vec<usize> = self.order.iter().copied().collect();
        let g = |a: usize, b: usize| self.gram[s[a] * slots + s[b]];
        let n = k - 1;
        // Normal equations (ΔFᵀΔF + λI) c = ΔFᵀ f_k, ΔF_j = f_{j+1} − f_j,
        // λ relative to ‖f_k‖² (`RIDGE`) and at least the round-off of the
        // differences (`ridge`).
        let mut a: Vec<Vec<f64>> = (0..n)
            .map(|i| {
                (0..=n)
                    .map(|j| match j {
                        j if j < n => g(i + 1, j + 1) - g(i + 1, j) - g(i, j + 1) + g(i, j),
                        _ => g(i + 1, n) - g(i, n),
                    })
                    .collect()
            })
            .collect();
        let lambda = ridge(g(n, n), self.xx[s[n]]);
        if !(lambda > 0.0 && lambda.is_finite()) {
            return None;
        }
        for (i, row) in a.iter_mut().enumerate() {
            row[i] += lambda;
        }
        let c = solve(a)?;
        // out = Σ w_i G(x_i), in one pass over the slots.
        let mut w = vec![0.0; k];
        w[n] = 1.0;
        for (j, cj) in c.iter().enumerate() {
            w[j + 1] -= cj;
            w[j] += cj;
        }
        // Written into the staging slot's G(x), free until the next `stage`
        // (the caller copies it out before).
        let mut out = std::mem::take(&mut self.g[self.staged]);
        for (start, o) in (0..).step_by(BLOCK).zip(out.chunks_mut(BLOCK)) {
            let end = start + o.len();
            for (ov, gv) in o.iter_mut().zip(&self.g[s[n]][start..end]) {
                *ov = w[n] * gv;
            }
            for (i, wi) in w.iter().enumerate().take(n) {
                for (ov, gv) in o.iter_mut().zip(&self.g[s[i]][start..end]) {
                    *ov += wi * gv;
                }
            }
        }
        self.g[self.staged] = out;
        self.weights.clear();
        self.weights.extend(s.iter().copied().zip(w));
        let out = &self.g[self.staged];
        out.iter()
            .all(|v| v.is_finite())
            .then_some((&out[..], &self.weights[..]))
    }
}

/// Largest predicted move of a secant step (ω times the last plain step's
/// Δ), in posterior sds: the secant trusts a linear model of the sweep map,
/// as far as the classic driver's extrapolation does.
pub const SPAN: f64 = 0.5;
/// Smallest factor of a secant step: a gain of less than a sweep does not
/// pay the risk of an undone one.
pub const MIN_FACTOR: f64 = 2.0;

/// The factor ω of the secant step x_k + ω·(G(x_k) − x_k): Anderson mixing
/// with one difference on a plain pair (x_{k−1}, x_k = G(x_{k−1})), whose
/// mixed point G(x_k) − c·(G(x_k) − G(x_{k−1})) is x_k + (1 − c)·f_k; on a
/// geometric convergence f_k = r·f_{k−1} it is Aitken's ω = 1/(1 − r).
/// `dots` as `marginal_dots`; the least squares regularised as Anderson's
/// (`ridge`).
pub fn secant_factor(dots: [f64; 4]) -> Option<f64> {
    let [ff, fg, gg, xx] = dots;
    let den = ff - 2.0 * fg + gg + ridge(ff, xx);
    let omega = 1.0 - (ff - fg) / den;
    (den > 0.0 && omega.is_finite()).then_some(omega)
}

/// The secant's inner products on three states' marginals q_{k−1}, q_k,
/// q_{k+1} (`old`, `mid`, `now`), in the coordinates Δ is judged in (each
/// mean in sds of `mid`, log sds): [‖f_k‖², ⟨f_k, f_{k−1}⟩, ‖f_{k−1}‖²,
/// ‖y_k‖²] with f_k = y_{k+1} − y_k. The marginals are a smooth image of the
/// sites, so on a geometric convergence their secant has the sites' factor,
/// without a pass over the sites (p values instead of 2·n+·n−).
pub fn marginal_dots(old: &Marginal, mid: &Marginal, now: &Marginal) -> [f64; 4] {
    let mut out = [0.0; 4];
    for k in 0..mid.mean.len() {
        let sd = mid.var[k].sqrt();
        let y = |q: &Marginal| [q.mean[k] / sd, 0.5 * q.var[k].ln()];
        let (yo, ym, yn) = (y(old), y(mid), y(now));
        for c in 0..2 {
            let (f, g) = (yn[c] - ym[c], ym[c] - yo[c]);
            out[0] += f * f;
            out[1] += f * g;
            out[2] += g * g;
            out[3] += ym[c] * ym[c];
        }
    }
    out
}

/// Tikhonov weight of the mixing's least squares, relative to ‖f_k‖²: a
/// secant whose residual differences ΔF are a share s of ‖f_k‖ extrapolates
/// by about s/(s² + RIDGE) steps — 1/(1 − r) for a geometric convergence of
/// rate r with 1 − r ≫ √RIDGE, at most 1/(2√RIDGE) = 5·10⁴ steps whatever ΔF.
pub const RIDGE: f64 = 1e-10;

/// λ of the least squares for the newest residual f (‖f‖² = `ff`) at the
/// iterate x (‖x‖² = `xx`):
/// `RIDGE`·‖f‖², and no less than the round-off of a residual difference
/// (each g − x is known to about ε·|x|). Relative to ΔF itself, as it was,
/// λ cannot tell a secant from round-off: on a drift (f constant) ΔF is pure
/// round-off, c came out near 10¹⁵, and the mixed point landed where x + step
/// rounds to x, a false fixed point.
fn ridge(ff: f64, xx: f64) -> f64 {
    let noise = 4.0 * f64::EPSILON * xx.sqrt();
    RIDGE * ff + noise * noise
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
