//! Convergence diagnostics of Markov chains, shared by every sampler (the
//! great-circle sampler's chains, SMC's independent runs): rank-normalised split
//! R-hat, bulk and tail effective sample sizes and Monte Carlo standard errors,
//! as in Vehtari, Gelman, Simpson, Carpenter & Bürkner (2021), "Rank-normalization,
//! folding, and localization: an improved R-hat", the definitions of Stan and
//! ArviZ. Input: one scalar quantity as `m` chains of draws (equal lengths).

use serde::{Deserialize, Serialize};
use statrs::distribution::{ContinuousCDF, Normal};

/// The diagnostics of one scalar quantity.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Diagnostics {
    pub mean: f64,
    pub sd: f64,
    /// max(bulk, tail) rank-normalised split R-hat; ≤ 1.01 is the usual target.
    pub rhat: f64,
    /// ESS of the rank-normalised split chains (the centre of the distribution).
    pub ess_bulk: f64,
    /// min ESS of the 5% and 95% quantile indicators (the tails).
    pub ess_tail: f64,
    /// Monte Carlo standard error of the mean, `sd/√ESS_mean`.
    pub mcse_mean: f64,
    /// Monte Carlo standard error of the sd (delta method on the variance).
    pub mcse_sd: f64,
}

/// All diagnostics of one quantity; NaN where undefined (fewer than 4 draws per
/// chain, or a constant quantity).
pub fn diagnose(chains: &[&[f64]]) -> Diagnostics {
    let all: Vec<f64> = chains.iter().flat_map(|c| c.iter().copied()).collect();
    let s = all.len() as f64;
    let mean = all.iter().sum::<f64>() / s;
    let var = all.iter().map(|x| (x - mean) * (x - mean)).sum::<f64>() / (s - 1.0);
    let sd = var.sqrt();
    let split = split_chains(chains);
    let ess_mean = ess(&split);
    // Var(s²) ≈ (E(x−m)⁴ − var²)/ESS of (x−m)², then Var(s) ≈ Var(s²)/(4 var).
    let sq: Vec<Vec<f64>> = split
        .iter()
        .map(|c| c.iter().map(|x| (x - mean) * (x - mean)).collect())
        .collect();
    let fourth = all.iter().map(|x| (x - mean).powi(4)).sum::<f64>() / s;
    let ess_sq = ess(&as_slices(&sq));
    let mcse_sd = ((fourth - var * var).max(0.0) / ess_sq / (4.0 * var)).sqrt();
    let conv = convergence(chains);
    Diagnostics {
        mean,
        sd,
        rhat: conv.rhat,
        ess_bulk: conv.ess_bulk,
        ess_tail: conv.ess_tail,
        mcse_mean: sd / ess_mean.sqrt(),
        mcse_sd,
    }
}

/// Rank-normalised split R-hat: the larger of the bulk R-hat (ranks) and the
/// tail R-hat (ranks of |x − median|), so chains that differ in location or in
/// scale are both caught.
pub fn rhat(chains: &[&[f64]]) -> f64 {
    convergence(chains).rhat
}

/// Rank-normalised R-hat (the larger of bulk and folded) of independent
/// samples, without splitting them: for SMC's independent runs, whose
/// particle clouds have no order to split along (a cloud's halves differ by
/// how resampling laid out its ancestors, not by time).
pub fn rhat_unsplit(samples: &[&[f64]]) -> f64 {
    let z = rank_normalise(samples);
    let median = median(samples);
    let folded: Vec<Vec<f64>> = samples
        .iter()
        .map(|c| c.iter().map(|x| (x - median).abs()).collect())
        .collect();
    let tail = rhat_basic(&as_slices(&rank_normalise(&as_slices(&folded))));
    rhat_basic(&as_slices(&z)).max(tail)
}

/// Bulk ESS: the ESS of the rank-normalised split chains.
pub fn ess_bulk(chains: &[&[f64]]) -> f64 {
    convergence(chains).ess_bulk
}

/// What a stopping rule reads: R-hat, bulk and tail ESS (no MCSEs).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Convergence {
    pub rhat: f64,
    pub ess_bulk: f64,
    pub ess_tail: f64,
}

/// R-hat, bulk and tail ESS sharing one rank normalisation (cheaper than
/// `diagnose` when only a stopping rule needs them).
pub fn convergence(chains: &[&[f64]]) -> Convergence {
    let split = split_chains(chains);
    let z = rank_normalise(&split);
    let z = as_slices(&z);
    let median = median(&split);
    let folded: Vec<Vec<f64>> = split
        .iter()
        .map(|c| c.iter().map(|x| (x - median).abs()).collect())
        .collect();
    let tail_rhat = rhat_basic(&as_slices(&rank_normalise(&as_slices(&folded))));
    Convergence {
        rhat: rhat_basic(&z).max(tail_rhat),
        ess_bulk: ess(&z),
        ess_tail: ess_tail(chains),
    }
}

/// Tail ESS: the smaller ESS of the indicators of the 5% and 95% quantiles.
pub fn ess_tail(chains: &[&[f64]]) -> f64 {
    let split = split_chains(chains);
    let mut pooled: Vec<f64> = split.iter().flat_map(|c| c.iter().copied()).collect();
    pooled.sort_unstable_by(f64::total_cmp);
    [0.05, 0.95]
        .iter()
        .map(|&p| {
            let q = quantile_sorted(&pooled, p);
            let ind: Vec<Vec<f64>> = split
                .iter()
                .map(|c| c.iter().map(|&x| f64::from(u8::from(x <= q))).collect())
                .collect();
            ess(&as_slices(&ind))
        })
        .fold(f64::INFINITY, f64::min)
}

fn as_slices(v: &[Vec<f64>]) -> Vec<&[f64]> {
    v.iter().map(Vec::as_slice).collect()
}

/// Each chain cut in two halves (the middle draw of an odd chain dropped).
fn split_chains<'a>(chains: &[&'a [f64]]) -> Vec<&'a [f64]> {
    chains
        .iter()
        .flat_map(|c| {
            let h = c.len() / 2;
            [&c[..h], &c[c.len() - h..]]
        })
        .collect()
}

fn median(chains: &[&[f64]]) -> f64 {
    let mut v: Vec<f64> = chains.iter().flat_map(|c| c.iter().copied()).collect();
    v.sort_unstable_by(f64::total_cmp);
    quantile_sorted(&v, 0.5)
}

/// Quantile with linear interpolation between order statistics.
pub fn quantile_sorted(v: &[f64], p: f64) -> f64 {
    if v.is_empty() {
        return f64::NAN;
    }
    let h = p * (v.len() - 1) as f64;
    let i = h.floor() as usize;
    if i + 1 < v.len() {
        v[i] + (h - i as f64) * (v[i + 1] - v[i])
    } else {
        v[i]
    }
}

/// Kolmogorov–Smirnov distance between draws and a continuous CDF (for
/// checking samplers against exact densities; the 1% critical value for S
/// independent draws is 1.63/√S).
pub fn ks_distance(mut draws: Vec<f64>, cdf: &dyn Fn(f64) -> f64) -> f64 {
    draws.sort_unstable_by(f64::total_cmp);
    let n = draws.len() as f64;
    draws
        .iter()
        .enumerate()
        .map(|(i, &v)| {
            let f = cdf(v);
            (f - i as f64 / n).abs().max((f - (i + 1) as f64 / n).abs())
        })
        .fold(0.0, f64::max)
}

/// Ranks 1..n of `v`, ties sharing their average rank (resampled or refused
/// moves repeat values).
pub fn average_ranks(v: &[f64]) -> Vec<f64> {
    let mut idx: Vec<usize> = (0..v.len()).collect();
    idx.sort_unstable_by(|&i, &j| v[i].total_cmp(&v[j]));
    let mut rank = vec![0.0; v.len()];
    let mut i = 0;
    while i < idx.len() {
        let mut j = i + 1;
        while j < idx.len() && v[idx[j]] == v[idx[i]] {
            j += 1;
        }
        let avg = (i + j + 1) as f64 / 2.0; // ranks i+1..=j
        idx[i..j].iter().for_each(|&t| rank[t] = avg);
        i = j;
    }
    rank
}

/// Pooled ranks (ties get their average rank) mapped to normal scores
/// `Φ⁻¹((r − 3/8)/(S + 1/4))` (Blom), chain by chain.
fn rank_normalise(chains: &[&[f64]]) -> Vec<Vec<f64>> {
    let pooled: Vec<f64> = chains.iter().flat_map(|c| c.iter().copied()).collect();
    let s = pooled.len();
    let rank = average_ranks(&pooled);
    let normal = Normal::standard();
    let mut at = 0;
    chains
        .iter()
        .map(|c| {
            let z = rank[at..at + c.len()]
                .iter()
                .map(|&r| normal.inverse_cdf((r - 0.375) / (s as f64 + 0.25)))
                .collect();
            at += c.len();
            z
        })
        .collect()
}

fn mean_var(c: &[f64]) -> (f64, f64) {
    let n = c.len() as f64;
    let m = c.iter().sum::<f64>() / n;
    (
        m,
        c.iter().map(|x| (x - m) * (x - m)).sum::<f64>() / (n - 1.0),
    )
}

/// Gelman–Rubin R-hat of chains as given.
fn rhat_basic(chains: &[&[f64]]) -> f64 {
    let n = chains.iter().map(|c| c.len()).min().unwrap_or(0);
    if chains.len() < 2 || n < 2 {
        return f64::NAN;
    }
    let stats: Vec<(f64, f64)> = chains.iter().map(|c| mean_var(&c[..n])).collect();
    let means: Vec<f64> = stats.iter().map(|s| s.0).collect();
    let within = stats.iter().map(|s| s.1).sum::<f64>() / stats.len() as f64;
    let between = n as f64 * mean_var(&means).1;
    let n = n as f64;
    ((between / within + n - 1.0) / n).sqrt()
}

/// Stan's effective sample size of chains as given: autocorrelations combined
/// across chains, Geyer's initial monotone sequence, the antithetic-safe
/// truncation, capped at S·log10(S).
pub fn ess(chains: &[&[f64]]) -> f64 {
    let m = chains.len();
    let n = chains.iter().map(|c| c.len()).min().unwrap_or(0);
    if m == 0 || n < 4 {
        return f64::NAN;
    }
    let acov: Vec<Vec<f64>> = chains.iter().map(|c| autocovariance(&c[..n])).collect();
    let nf = n as f64;
    let chain_mean: Vec<f64> = chains
        .iter()
        .map(|c| c[..n].iter().sum::<f64>() / nf)
        .collect();
    let mean_var = acov.iter().map(|a| a[0] * nf / (nf - 1.0)).sum::<f64>() / m as f64;
    let mut var_plus = mean_var * (nf - 1.0) / nf;
    if m > 1 {
        var_plus += mean_var_of(&chain_mean);
    }
    if var_plus.is_nan() || var_plus <= 0.0 || var_plus.is_infinite() {
        return f64::NAN;
    }
    let acov_at = |t: usize| acov.iter().map(|a| a[t]).sum::<f64>() / m as f64;
    let rho = |t: usize| 1.0 - (mean_var - acov_at(t)) / var_plus;
    let mut rho_hat = vec![0.0; n];
    rho_hat[0] = 1.0;
    let mut even = 1.0;
    let mut odd = rho(1);
    rho_hat[1] = odd;
    let mut t = 1;
    while t < n - 4 && even + odd > 0.0 {
        even = rho(t + 1);
        odd = rho(t + 2);
        if even + odd >= 0.0 {
            rho_hat[t + 1] = even;
            rho_hat[t + 2] = odd;
        }
        t += 2;
    }
    let max_t = t;
    if even > 0.0 {
        rho_hat[max_t + 1] = even;
    }
    // Initial monotone sequence: pair sums may not increase.
    let mut t = 1;
    while t + 3 <= max_t {
        if rho_hat[t + 1] + rho_hat[t + 2] > rho_hat[t - 1] + rho_hat[t] {
            rho_hat[t + 1] = (rho_hat[t - 1] + rho_hat[t]) / 2.0;
            rho_hat[t + 2] = rho_hat[t + 1];
        }
        t += 2;
    }
    let total = (m * n) as f64;
    let tau = -1.0 + 2.0 * rho_hat[..max_t].iter().sum::<f64>() + rho_hat[max_t + 1];
    (total / tau).min(total * total.log10())
}

/// Sample variance (n − 1) of a few values.
fn mean_var_of(v: &[f64]) -> f64 {
    mean_var(v).1
}

/// Biased autocovariances (divided by n) at lags 0..n, by FFT: O(n log n) even
/// for chains that mix slowly.
pub fn autocovariance(x: &[f64]) -> Vec<f64> {
    let n = x.len();
    let mean = x.iter().sum::<f64>() / n as f64;
    let size = (2 * n).next_power_of_two();
    let mut re = vec![0.0; size];
    let mut im = vec![0.0; size];
    for (r, &v) in re.iter_mut().zip(x) {
        *r = v - mean;
    }
    fft(&mut re, &mut im, false);
    for (r, i) in re.iter_mut().zip(im.iter_mut()) {
        *r = *r * *r + *i * *i;
        *i = 0.0;
    }
    fft(&mut re, &mut im, true);
    re.truncate(n);
    for r in re.iter_mut() {
        *r /= (size * n) as f64; // the inverse transform's 1/size, then 1/n
    }
    re
}

/// In-place iterative radix-2 FFT (length a power of two); `inverse` without
/// the 1/len factor.
fn fft(re: &mut [f64], im: &mut [f64], inverse: bool) {
    let n = re.len();
    let mut j = 0;
    for i in 1..n {
        let mut bit = n >> 1;
        while j & bit != 0 {
            j ^= bit;
            bit >>= 1;
        }
        j |= bit;
        if i < j {
            re.swap(i, j);
            im.swap(i, j);
        }
    }
    let sign = if inverse { 1.0 } else { -1.0 };
    let mut len = 2;
    while len <= n {
        let ang = sign * 2.0 * std::f64::consts::PI / len as f64;
        let (w_im, w_re) = ang.sin_cos();
        for start in (0..n).step_by(len) {
            let (mut cr, mut ci) = (1.0, 0.0);
            for k in 0..len / 2 {
                let (a, b) = (start + k, start + k + len / 2);
                let tr = re[b] * cr - im[b] * ci;
                let ti = re[b] * ci + im[b] * cr;
                re[b] = re[a] - tr;
                im[b] = im[a] - ti;
                re[a] += tr;
                im[a] += ti;
                let next = cr * w_re - ci * w_im;
                ci = cr * w_im + ci * w_re;
                cr = next;
            }
        }
        len <<= 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::numerics::rng::{normal, stream};

    fn ar1(rho: f64, n: usize, seed: u64, shift: f64, scale: f64) -> Vec<f64> {
        let mut r = stream(seed, &[]);
        let innov = (1.0 - rho * rho).sqrt();
        let mut x = normal(&mut r);
        (0..n)
            .map(|_| {
                x = rho * x + innov * normal(&mut r);
                shift + scale * x
            })
            .collect()
    }

    fn chains(rho: f64, n: usize) -> Vec<Vec<f64>> {
        (0..4).map(|c| ar1(rho, n, 10 + c, 0.0, 1.0)).collect()
    }

    #[test]
    fn fft_autocovariance_equals_the_direct_sums() {
        let x = ar1(0.6, 37, 3, 1.5, 2.0);
        let m = x.iter().sum::<f64>() / 37.0;
        let got = autocovariance(&x);
        for t in 0..37 {
            let want = (0..37 - t)
                .map(|i| (x[i] - m) * (x[i + t] - m))
                .sum::<f64>()
                / 37.0;
            assert!(
                (got[t] - want).abs() < 1e-12,
                "lag {t}: {} vs {want}",
                got[t]
            );
        }
    }

    /// Independent draws: ESS ≈ S (its sd is ~5% of S here, bound 15%), R-hat ≈ 1
    /// (sd ~0.003 for 4 × 2000 draws: bound 1.01), MCSE of the mean ≈ 1/√S.
    #[test]
    fn independent_draws() {
        let c = chains(0.0, 2000);
        let s: Vec<&[f64]> = c.iter().map(Vec::as_slice).collect();
        let d = diagnose(&s);
        assert!((d.ess_bulk / 8000.0 - 1.0).abs() < 0.15, "{d:?}");
        assert!((d.ess_tail / 8000.0 - 1.0).abs() < 0.25, "{d:?}");
        assert!(d.rhat < 1.01, "{d:?}");
        assert!((d.mcse_mean * 8000f64.sqrt() - 1.0).abs() < 0.1, "{d:?}");
        // sd of the sd of 8000 normal draws: 1/√(2S).
        assert!((d.mcse_sd * (16000f64).sqrt() - 1.0).abs() < 0.15, "{d:?}");
    }

    /// AR(1) with ρ = 0.9: τ = (1 + ρ)/(1 − ρ) = 19, ESS ≈ S/19; the estimator's
    /// relative sd is ~10% at 4 × 5000 draws: bound 25%.
    #[test]
    fn autocorrelated_draws() {
        let c = chains(0.9, 5000);
        let s: Vec<&[f64]> = c.iter().map(Vec::as_slice).collect();
        let want = 20000.0 / 19.0;
        let got = ess_bulk(&s);
        assert!((got / want - 1.0).abs() < 0.25, "{got} vs {want}");
        assert!(rhat(&s) < 1.02);
    }

    #[test]
    fn chains_that_disagree_are_flagged() {
        // One chain shifted by one sd: R-hat² ≈ 1 + the split means' variance
        // (0.21), so R-hat ≈ 1.1.
        let mut c = chains(0.0, 1000);
        c[0] = ar1(0.0, 1000, 99, 1.0, 1.0);
        let s: Vec<&[f64]> = c.iter().map(Vec::as_slice).collect();
        assert!(rhat(&s) > 1.05, "{}", rhat(&s));
        // Same location, one chain three times as wide: only the folded R-hat sees it.
        let mut c = chains(0.0, 1000);
        c[0] = ar1(0.0, 1000, 99, 0.0, 3.0);
        let s: Vec<&[f64]> = c.iter().map(Vec::as_slice).collect();
        let split = split_chains(&s);
        let bulk = rhat_basic(&as_slices(&rank_normalise(&split)));
        assert!(
            bulk < 1.02 && rhat(&s) > 1.05,
            "bulk {bulk}, rhat {}",
            rhat(&s)
        );
        // A trend inside each chain: split R-hat sees it.
        let c: Vec<Vec<f64>> = (0..4)
            .map(|k| {
                ar1(0.0, 1000, 50 + k, 0.0, 1.0)
                    .iter()
                    .enumerate()
                    .map(|(i, x)| x + i as f64 / 1000.0)
                    .collect()
            })
            .collect();
        let s: Vec<&[f64]> = c.iter().map(Vec::as_slice).collect();
        assert!(rhat(&s) > 1.03, "{}", rhat(&s));
    }

    #[test]
    fn constant_and_short_chains_give_nan() {
        let c = [vec![1.0; 50], vec![1.0; 50]];
        let s: Vec<&[f64]> = c.iter().map(Vec::as_slice).collect();
        assert!(ess(&s).is_nan());
        assert!(ess(&[&[1.0, 2.0, 3.0][..]]).is_nan());
    }
}
