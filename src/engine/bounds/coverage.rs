//! Coverage of the two-sample certificate in simulation: many training sets
//! from a known model whose every posterior's true AUC risk is computable.
//!
//! P₊ = N((δ, 0), I₂), P₋ = N(0, I₂): for a linear score θ, s⁺ − s⁻ ~
//! N(δθ₁, 2‖θ‖²), so R(θ) = Φ(−δθ₁/(√2‖θ‖)) exactly; E_ρ R for a Gaussian ρ is
//! a smooth 2-D integral (midpoint rule on ±7 sd, 140² points: error ≪ 10⁻⁶).
//! ρ = N(û, σ²I) with û the unit direction of the sample's class-mean
//! difference (a posterior that depends on the data), prior N(0, I).

use nalgebra::DMatrix;
use statrs::function::erf::erfc;

use super::{Sizes, from_parts, gaussian_empirical_risk, kl};
use crate::engine::numerics::rng::{normal, stream};
use crate::engine::prior::Prior;

const DELTA: f64 = 0.8;
const SIGMA: f64 = 0.5;

fn phi(z: f64) -> f64 {
    0.5 * erfc(-z / std::f64::consts::SQRT_2)
}

/// E_ρ R for ρ = N(u, σ²I) by the midpoint rule.
fn true_risk(u: [f64; 2], sigma: f64) -> f64 {
    let k = 140;
    let h = 14.0 / k as f64;
    let mut s = 0.0;
    let mut w = 0.0;
    for i in 0..k {
        let a = -7.0 + (i as f64 + 0.5) * h;
        for j in 0..k {
            let b = -7.0 + (j as f64 + 0.5) * h;
            let wt = (-0.5 * (a * a + b * b)).exp();
            let t = [u[0] + sigma * a, u[1] + sigma * b];
            let norm = (t[0] * t[0] + t[1] * t[1]).sqrt();
            s += wt * phi(-DELTA * t[0] / (std::f64::consts::SQRT_2 * norm));
            w += wt;
        }
    }
    s / w
}

/// One simulated training set: for each spread s (ρ = N(û, s·σ²I)) its
/// (E_ρ R_n, KL), and û to compute E_ρ R of the one chosen.
fn trial(seed: u64, n_pos: usize, n_neg: usize, spreads: &[f64]) -> (Vec<(f64, f64)>, [f64; 2]) {
    let mut r = stream(seed, &[35]);
    let n = n_pos + n_neg;
    let x = DMatrix::from_fn(n, 2, |i, k| {
        normal(&mut r) + if i < n_pos && k == 0 { DELTA } else { 0.0 }
    });
    let y: Vec<bool> = (0..n).map(|i| i < n_pos).collect();
    let mut diff = [0.0; 2];
    for i in 0..n {
        let s = if y[i] {
            1.0 / n_pos as f64
        } else {
            -1.0 / n_neg as f64
        };
        diff[0] += s * x[(i, 0)];
        diff[1] += s * x[(i, 1)];
    }
    let norm = (diff[0] * diff[0] + diff[1] * diff[1]).sqrt();
    let u = [diff[0] / norm, diff[1] / norm];
    let parts = spreads
        .iter()
        .map(|s| {
            let cov = DMatrix::from_diagonal_element(2, 2, s * SIGMA * SIGMA);
            let emp = gaussian_empirical_risk(&x, &y, &u, &cov).unwrap();
            let kl = kl::kl_to_prior(&u, &cov, &Prior::Gaussian { var: 1.0 }).unwrap();
            (emp, kl)
        })
        .collect();
    (parts, u)
}

/// 1000 training sets of 25 positives and 60 negatives (m = 25), ε = 0.05.
/// The certificate may fail on at most ε of them: the test allows εT + 3 sd
/// of a binomial(T, ε) (70 of 1000), so a valid bound passes with
/// probability > 0.998 even if its coverage were exactly 1 − ε. The same
/// trials with the pairs taken as independent (m = n₊n₋, the mistake the
/// two-sample form avoids) must fail far more often than ε: the test has power.
/// The smallest certificate over the spreads N(û, s·σ²I) (`spread`) holds as
/// often: choosing ρ after seeing the sample costs nothing.
#[test]
fn the_certificate_covers_in_simulation() {
    let (n_pos, n_neg, eps, t) = (25, 60, 0.05, 1000);
    let sizes = Sizes { n_pos, n_neg, d: 2 };
    let (mut fails, mut fails_pairs, mut fails_old, mut fails_best) = (0, 0, 0, 0);
    let spreads = super::spread::SPREADS;
    let own = spreads.iter().position(|&s| s == 1.0).unwrap();
    for s in 0..t {
        let (parts, u) = trial(s, n_pos, n_neg, &spreads);
        let (emp, kl) = parts[own];
        let truth = true_risk(u, SIGMA);
        // The smallest certificate over the spreads, free (every ρ at once).
        let (best, bound) = (0..spreads.len())
            .map(|k| (k, from_parts(parts[k].0, parts[k].1, sizes, eps, "s").risk))
            .min_by(|a, b| a.1.total_cmp(&b.1))
            .unwrap();
        fails_best += (true_risk(u, SIGMA * spreads[best].sqrt()) > bound) as usize;
        let b = from_parts(emp, kl, sizes, eps, "test");
        assert!(b.risk >= emp);
        fails += (truth > b.risk) as usize;
        fails_old += (truth > b.one_sample_risk.unwrap()) as usize;
        let wrong = super::two_sample::pac_bayes_kl(emp, kl, n_pos * n_neg, eps);
        fails_pairs += (truth > wrong) as usize;
    }
    let tol = eps * t as f64 + 3.0 * (t as f64 * eps * (1.0 - eps)).sqrt();
    assert!(fails as f64 <= tol, "{fails} of {t} above the bound");
    assert!(fails_old as f64 <= tol, "one-sample: {fails_old} of {t}");
    assert!(fails_best as f64 <= tol, "best spread: {fails_best} of {t}");
    assert!(
        fails_pairs as f64 > 4.0 * eps * t as f64,
        "pairs as independent failed only {fails_pairs} of {t}: the test lacks power"
    );
}
