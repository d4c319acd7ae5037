//! Sampling coordinates for the spike-and-slab prior. In θ the prior is a
//! mixture of scales 100× apart, and Gaussian-shaped proposals either never
//! reach the spike or never leave it. Each coordinate is therefore sampled as
//! η with θ = g(η), g the prior's quantile function composed with Φ (the
//! probability integral transform), so the prior of η is ≈ N(0, 1) and a move
//! from spike to slab is a smooth step in η. g is tabulated and interpolated
//! linearly; the sampler uses the exact density of η under that interpolant
//! (prior of g(η) times the slope), so the approximation costs efficiency
//! only, never correctness.

use statrs::function::erf::erfc;

/// Grid of η: [−HALF_WIDTH, HALF_WIDTH] in steps of 1/STEPS_PER_UNIT
/// (|η| > 9 has prior probability 2e-19; beyond, g continues linearly).
const HALF_WIDTH: f64 = 9.0;
const STEPS_PER_UNIT: f64 = 64.0;

/// The monotone map g for one spike-and-slab prior (the same for every coordinate).
#[derive(Debug, Clone)]
pub struct PitMap {
    /// g at the grid points η_i = −HALF_WIDTH + i/STEPS_PER_UNIT (strictly increasing).
    theta: Vec<f64>,
    /// log of the slope of each segment.
    log_slope: Vec<f64>,
}

/// Upper tail of the standard normal, accurate far out.
fn upper(x: f64) -> f64 {
    0.5 * erfc(x / std::f64::consts::SQRT_2)
}

impl PitMap {
    pub fn new(spike_var: f64, slab_var: f64, incl: f64) -> PitMap {
        let (s0, s1) = (spike_var.sqrt(), slab_var.sqrt());
        // Upper tail of the prior mixture.
        let tail = |t: f64| incl * upper(t / s1) + (1.0 - incl) * upper(t / s0);
        let half = (HALF_WIDTH * STEPS_PER_UNIT).round() as usize;
        // g(η) for η ≥ 0 solves tail(t) = upper(η) (symmetric prior: g(−η) = −g(η)).
        let mut pos = Vec::with_capacity(half + 1);
        for i in 0..=half {
            let eta = i as f64 / STEPS_PER_UNIT;
            if i == 0 {
                pos.push(0.0);
                continue;
            }
            let u = upper(eta);
            let (mut lo, mut hi) = (0.0, s1);
            while tail(hi) > u {
                hi *= 2.0;
            }
            // Bisection to the last bit (tail is decreasing in t).
            for _ in 0..200 {
                let mid = 0.5 * (lo + hi);
                if mid <= lo || mid >= hi {
                    break;
                }
                if tail(mid) > u {
                    lo = mid;
                } else {
                    hi = mid;
                }
            }
            pos.push(0.5 * (lo + hi));
        }
        let mut theta: Vec<f64> = pos.iter().rev().map(|t| -t).collect();
        theta.extend_from_slice(&pos[1..]);
        let h = 1.0 / STEPS_PER_UNIT;
        let log_slope = theta.windows(2).map(|w| ((w[1] - w[0]) / h).ln()).collect();
        PitMap { theta, log_slope }
    }

    fn segment(&self, eta: f64) -> (usize, f64) {
        let t = (eta + HALF_WIDTH) * STEPS_PER_UNIT;
        let last = self.log_slope.len() - 1;
        let i = if t <= 0.0 {
            0
        } else {
            (t.floor() as usize).min(last)
        };
        (i, t - i as f64)
    }

    /// θ = g(η).
    pub fn forward(&self, eta: f64) -> f64 {
        let (i, f) = self.segment(eta);
        self.theta[i] + f * (self.theta[i + 1] - self.theta[i])
    }

    /// log g'(η).
    pub fn log_slope(&self, eta: f64) -> f64 {
        self.log_slope[self.segment(eta).0]
    }

    /// η = g⁻¹(θ).
    pub fn inverse(&self, theta: f64) -> f64 {
        let last = self.log_slope.len() - 1;
        let i = self
            .theta
            .partition_point(|&t| t <= theta)
            .saturating_sub(1)
            .min(last);
        let f = (theta - self.theta[i]) / (self.theta[i + 1] - self.theta[i]);
        -HALF_WIDTH + (i as f64 + f) / STEPS_PER_UNIT
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::numerics::rng;
    use crate::engine::prior::Prior;

    #[test]
    fn the_map_is_monotone_invertible_and_gaussianises_the_prior() {
        let (v0, v1, p) = (1e-4, 1.0, 0.1);
        let g = PitMap::new(v0, v1, p);
        assert!(g.theta.windows(2).all(|w| w[1] > w[0]));
        for eta in [-12.0, -3.3, -0.01, 0.0, 0.7, 2.5, 9.5] {
            let t = g.forward(eta);
            assert!((g.inverse(t) - eta).abs() < 1e-9, "{eta}");
        }
        // Prior draws of θ map to ≈ N(0, 1) draws of η.
        let prior = Prior::SpikeSlab {
            spike_var: v0,
            slab_var: v1,
            incl: p,
        };
        let mut r = rng::stream(1, &[]);
        let n = 100_000;
        let mut t = vec![0.0];
        let (mut s1, mut s2, mut tail) = (0.0, 0.0, 0);
        for _ in 0..n {
            prior.sample(&mut r, &mut t);
            let e = g.inverse(t[0]);
            s1 += e;
            s2 += e * e;
            tail += usize::from(e > 1.6449);
        }
        let (m, v) = (s1 / n as f64, s2 / n as f64);
        assert!(m.abs() < 0.015 && (v - 1.0).abs() < 0.02, "{m} {v}");
        assert!((tail as f64 / n as f64 - 0.05).abs() < 0.003);
    }
}
