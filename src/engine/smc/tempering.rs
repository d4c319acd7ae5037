//! The tempering step (ALGORITHMS.md §3 a–c): the next temperature from the ESS
//! of the incremental weights, the incremental evidence, systematic resampling.

use rand::RngExt;
use rayon::prelude::*;

use crate::engine::numerics::rng::Rng;

/// Incremental weights `exp(−δ (R_i − R_min))` of one step, normalised to sum 1,
/// with the step's evidence increment and ESS.
#[derive(Debug, Clone)]
pub struct Reweighting {
    pub delta: f64,
    /// `log((1/N) Σ exp(−δ R_i))`.
    pub log_z_increment: f64,
    /// ESS / N.
    pub ess_frac: f64,
    pub weights: Vec<f64>,
}

/// Particles per partial sum: fixed, so the sums do not depend on the threads.
const SUM_CHUNK: usize = 2048;

/// Sums of `w` and `w²` with `w = exp(−δ (R − R_min))` ∈ (0, 1]: no overflow, and
/// at least one weight is 1 so no underflow to an all-zero sum. Partial sums of
/// fixed chunks in parallel, added in order.
fn sums(risks: &[f64], r_min: f64, delta: f64) -> (f64, f64) {
    let parts: Vec<(f64, f64)> = risks
        .par_chunks(SUM_CHUNK)
        .map(|c| {
            let (mut s1, mut s2) = (0.0, 0.0);
            for &r in c {
                let w = (-delta * (r - r_min)).exp();
                s1 += w;
                s2 += w * w;
            }
            (s1, s2)
        })
        .collect();
    parts
        .iter()
        .fold((0.0, 0.0), |(a, b), &(c, e)| (a + c, b + e))
}

fn ess_frac(risks: &[f64], r_min: f64, delta: f64) -> f64 {
    let (s1, s2) = sums(risks, r_min, delta);
    s1 * s1 / (s2 * risks.len() as f64)
}

/// The largest step δ ≤ `remaining` whose ESS is at least `tau`·N (the whole
/// remaining step when it already is): bracketed root finding on the ESS, which
/// decreases in δ (Illinois steps, bisection when they stall).
pub fn next_delta(risks: &[f64], remaining: f64, tau: f64) -> f64 {
    let r_min = risks.iter().copied().fold(f64::INFINITY, f64::min);
    let f = |delta: f64| ess_frac(risks, r_min, delta) - tau;
    let f_hi = f(remaining);
    if f_hi >= 0.0 {
        return remaining;
    }
    // f(0) = 1 − τ > 0 > f(remaining).
    let (mut lo, mut hi) = (0.0, remaining);
    let (mut f_lo, mut f_hi) = (1.0 - tau, f_hi);
    let mut side = 0i8;
    for _ in 0..200 {
        // Regula falsi with the Illinois modification; bisect if it lands outside.
        let mut x = hi - f_hi * (hi - lo) / (f_hi - f_lo);
        if !(x > lo && x < hi) {
            x = 0.5 * (lo + hi);
        }
        let fx = f(x);
        if fx.abs() <= 1e-6 * tau || hi - lo <= 1e-12 * hi {
            return x;
        }
        if fx > 0.0 {
            lo = x;
            f_lo = fx;
            if side == 1 {
                f_hi *= 0.5;
            }
            side = 1;
        } else {
            hi = x;
            f_hi = fx;
            if side == -1 {
                f_lo *= 0.5;
            }
            side = -1;
        }
    }
    // Any point of the bracket keeps ESS ≥ τN at `lo`.
    lo
}

/// Weights, evidence increment and ESS of the step δ.
pub fn reweight(risks: &[f64], delta: f64) -> Reweighting {
    let r_min = risks.iter().copied().fold(f64::INFINITY, f64::min);
    let (s1, s2) = sums(risks, r_min, delta);
    let n = risks.len() as f64;
    let weights = risks
        .iter()
        .map(|&r| (-delta * (r - r_min)).exp() / s1)
        .collect();
    Reweighting {
        delta,
        log_z_increment: -delta * r_min + (s1 / n).ln(),
        ess_frac: s1 * s1 / (s2 * n),
        weights,
    }
}

/// The sd log Ẑ would have if every stage's particles were independent
/// draws of that stage's target (the floor of moves that mix perfectly). Then each increment log((1/N)Σw) has variance ≈ χ²/N (delta
/// method), χ² the chi-square divergence of the next target from the current
/// one, which the weights estimate as N·Σw²/(Σw)² − 1 = 1/ESS_frac − 1, and
/// the stages' errors are independent: var log Ẑ ≈ Σ_t (1/ESS_t − 1)/N
/// (T/N at τ = ½). Moves that leave the particles correlated with their
/// ancestors make the errors of successive stages correlated and the real sd
/// larger (docs/BENCHMARKS.md, "log Z's spread at 84 features").
pub fn log_z_sd_floor(ess_fracs: impl IntoIterator<Item = f64>, particles: usize) -> f64 {
    let chi2: f64 = ess_fracs
        .into_iter()
        .map(|e| (1.0 / e - 1.0).max(0.0))
        .sum();
    (chi2 / particles.max(1) as f64).sqrt()
}

/// Systematic resampling (RACL14 Alg. 2): `m` ancestor indices, ascending, from
/// normalised weights, with one uniform draw.
pub fn systematic(weights: &[f64], m: usize, rng: &mut Rng) -> Vec<usize> {
    let u: f64 = rng.random();
    let mut out = Vec::with_capacity(m);
    let mut cum = weights.first().copied().unwrap_or(0.0);
    let mut i = 0;
    let last = weights.len().saturating_sub(1);
    for j in 0..m {
        let point = (j as f64 + u) / m as f64;
        while cum < point && i < last {
            i += 1;
            cum += weights[i];
        }
        out.push(i);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::numerics::rng;

    #[test]
    fn delta_hits_the_ess_target() {
        let mut r = rng::stream(1, &[]);
        let risks: Vec<f64> = (0..5000)
            .map(|_| 0.3 + 0.05 * rng::normal(&mut r).abs())
            .collect();
        let d = next_delta(&risks, 1e6, 0.5);
        let w = reweight(&risks, d);
        assert!((w.ess_frac - 0.5).abs() < 1e-5, "{}", w.ess_frac);
        assert!((w.weights.iter().sum::<f64>() - 1.0).abs() < 1e-12);
        // A step that keeps the ESS above τ is taken whole.
        assert_eq!(next_delta(&risks, d / 2.0, 0.5), d / 2.0);
    }

    #[test]
    fn increment_is_the_log_mean_weight() {
        let risks = [0.1, 0.2, 0.4];
        let w = reweight(&risks, 3.0);
        let want = ((-0.3f64).exp() + (-0.6f64).exp() + (-1.2f64).exp()).ln() - 3f64.ln();
        assert!((w.log_z_increment - want).abs() < 1e-14);
        // Huge δ: log-sum-exp keeps it finite.
        let w = reweight(&risks, 1e6);
        assert!((w.log_z_increment - (-1e5 - 3f64.ln())).abs() < 1e-9);
    }

    #[test]
    fn systematic_resampling_is_unbiased_and_ordered() {
        let weights = [0.1, 0.0, 0.6, 0.3];
        let mut counts = [0usize; 4];
        for s in 0..2000 {
            let idx = systematic(&weights, 10, &mut rng::stream(s, &[]));
            assert!(idx.windows(2).all(|w| w[0] <= w[1]));
            for i in idx {
                counts[i] += 1;
            }
        }
        // Systematic resampling puts ⌊mW⌋ or ⌈mW⌉ copies on each particle.
        assert_eq!(counts[1], 0);
        for (c, w) in counts.iter().zip(weights) {
            assert!((*c as f64 / 20000.0 - w).abs() < 0.01, "{counts:?}");
        }
    }
}
