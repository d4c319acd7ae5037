//! Posterior summaries of an equally weighted particle cloud: quantiles,
//! histograms, component-wise marginal modes, spike-and-slab inclusion.

use crate::engine::prior::Prior;

/// The 2.5, 25, 50, 75 and 97.5% quantiles of every coordinate (linear
/// interpolation between order statistics).
pub fn quantiles(theta: &[f64], d: usize) -> Vec<[f64; 5]> {
    let mut col = Vec::with_capacity(theta.len() / d.max(1));
    (0..d)
        .map(|k| {
            col.clear();
            col.extend(theta.chunks_exact(d).map(|r| r[k]));
            col.sort_unstable_by(f64::total_cmp);
            [0.025, 0.25, 0.5, 0.75, 0.975].map(|p| quantile_sorted(&col, p))
        })
        .collect()
}

fn quantile_sorted(v: &[f64], p: f64) -> f64 {
    if v.is_empty() {
        return f64::NAN;
    }
    let h = p * (v.len() - 1) as f64;
    let (i, f) = (h.floor() as usize, h - h.floor());
    if i + 1 < v.len() {
        v[i] + f * (v[i + 1] - v[i])
    } else {
        v[i]
    }
}

/// Grid points of the mode search.
const MODE_GRID: usize = 512;

/// The mode of every coordinate's marginal: the maximum of a Gaussian kernel
/// density estimate (Silverman's bandwidth) evaluated on a grid by binning
/// (the student report's point score, robust when a marginal is skewed).
pub fn marginal_modes(theta: &[f64], d: usize) -> Vec<f64> {
    let mut col = Vec::with_capacity(theta.len() / d.max(1));
    (0..d)
        .map(|k| {
            col.clear();
            col.extend(theta.chunks_exact(d).map(|r| r[k]));
            kde_mode(&col)
        })
        .collect()
}

fn kde_mode(v: &[f64]) -> f64 {
    let n = v.len();
    if n == 0 {
        return f64::NAN;
    }
    let lo = v.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = v.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    if hi <= lo || hi.is_nan() || lo.is_nan() {
        return lo;
    }
    let mean = v.iter().sum::<f64>() / n as f64;
    let sd = (v.iter().map(|x| (x - mean) * (x - mean)).sum::<f64>() / n as f64).sqrt();
    let mut sorted = v.to_vec();
    sorted.sort_unstable_by(f64::total_cmp);
    let iqr = quantile_sorted(&sorted, 0.75) - quantile_sorted(&sorted, 0.25);
    let spread = if iqr > 0.0 { sd.min(iqr / 1.34) } else { sd };
    let h = 0.9 * spread * (n as f64).powf(-0.2);
    if h <= 0.0 || h.is_nan() {
        return sorted[n / 2];
    }
    // Linear binning onto the grid, then a discrete Gaussian convolution.
    let step = (hi - lo) / (MODE_GRID - 1) as f64;
    let mut counts = vec![0.0; MODE_GRID];
    for &x in v {
        let t = (x - lo) / step;
        let i = (t.floor() as usize).min(MODE_GRID - 2);
        let f = t - i as f64;
        counts[i] += 1.0 - f;
        counts[i + 1] += f;
    }
    let reach = ((4.0 * h / step).ceil() as usize).min(MODE_GRID);
    let kernel: Vec<f64> = (0..=reach)
        .map(|j| (-0.5 * (j as f64 * step / h).powi(2)).exp())
        .collect();
    let (mut best, mut best_i) = (f64::NEG_INFINITY, 0);
    for i in 0..MODE_GRID {
        let mut dens = counts[i] * kernel[0];
        for (j, w) in kernel.iter().enumerate().skip(1) {
            if i >= j {
                dens += counts[i - j] * w;
            }
            if i + j < MODE_GRID {
                dens += counts[i + j] * w;
            }
        }
        if dens > best {
            best = dens;
            best_i = i;
        }
    }
    lo + best_i as f64 * step
}

/// Spike-and-slab: P(z_k = 1 | D) = E[P(z_k = 1 | θ_k)] over the particles (the
/// data touch z only through θ, so this Rao–Blackwellised average is exact in
/// expectation and less noisy than counting).
pub fn inclusion(theta: &[f64], d: usize, prior: &Prior) -> Option<Vec<f64>> {
    let Prior::SpikeSlab {
        spike_var,
        slab_var,
        incl,
    } = *prior
    else {
        return None;
    };
    let n = (theta.len() / d) as f64;
    let log_odds0 = incl.ln() - (-incl).ln_1p() + 0.5 * (spike_var / slab_var).ln();
    let mut p = vec![0.0; d];
    for row in theta.chunks_exact(d) {
        for (pk, &t) in p.iter_mut().zip(row) {
            let lo = log_odds0 + 0.5 * t * t * (1.0 / spike_var - 1.0 / slab_var);
            *pk += 1.0 / (1.0 + (-lo).exp());
        }
    }
    Some(p.into_iter().map(|s| s / n).collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::numerics::rng;

    #[test]
    fn quantiles_and_mode_of_a_known_sample() {
        let mut r = rng::stream(2, &[]);
        // Column 0: N(1, 1); column 1: a skewed sample whose mode is 0.
        let theta: Vec<f64> = (0..40000)
            .flat_map(|_| {
                let a = 1.0 + rng::normal(&mut r);
                let b = rng::normal(&mut r).abs().powi(2);
                [a, b]
            })
            .collect();
        let q = quantiles(&theta, 2);
        assert!((q[0][2] - 1.0).abs() < 0.03 && (q[0][0] - (1.0 - 1.96)).abs() < 0.05);
        let m = marginal_modes(&theta, 2);
        assert!((m[0] - 1.0).abs() < 0.15, "{m:?}");
        assert!(m[1] < 0.15, "{m:?}");
    }

    #[test]
    fn inclusion_probability_of_one_value() {
        let prior = Prior::SpikeSlab {
            spike_var: 0.01,
            slab_var: 1.0,
            incl: 0.2,
        };
        let t = 0.3f64;
        let n = |v: f64| (-(t * t) / (2.0 * v)).exp() / v.sqrt();
        let want = 0.2 * n(1.0) / (0.2 * n(1.0) + 0.8 * n(0.01));
        let got = inclusion(&[t], 1, &prior).unwrap()[0];
        assert!((got - want).abs() < 1e-12);
    }
}
