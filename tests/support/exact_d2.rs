//! The exact d = 2 AUC posterior under an isotropic Gaussian prior, by
//! integration over the direction's angle: the reference the SMC tests
//! (`smc_exact`, `smc_reference`) compare their draws and log Z with.

use nalgebra::DMatrix;
use pacauc::engine::metrics::auc;
use pacauc::engine::numerics::rng;

/// A small two-feature problem with overlapping classes.
pub fn toy(n: usize, seed: u64) -> (DMatrix<f64>, Vec<bool>) {
    let mut r = rng::stream(seed, &[]);
    let y: Vec<bool> = (0..n).map(|i| i % 5 < 2).collect();
    let x = DMatrix::from_fn(n, 2, |i, k| {
        let shift = if y[i] { [0.8, 0.3][k] } else { 0.0 };
        shift + rng::normal(&mut r)
    });
    (x, y)
}

/// The AUC risk of the direction (cos φ, sin φ) is piecewise constant between
/// the angles where two rows of different classes tie: exact arcs.
pub fn arcs(x: &DMatrix<f64>, y: &[bool]) -> Vec<(f64, f64, f64)> {
    let tau = std::f64::consts::TAU;
    let mut cuts = vec![0.0, tau];
    for i in (0..y.len()).filter(|&i| y[i]) {
        for j in (0..y.len()).filter(|&j| !y[j]) {
            let (a1, a2) = (x[(i, 0)] - x[(j, 0)], x[(i, 1)] - x[(j, 1)]);
            let phi = a1.atan2(-a2).rem_euclid(tau);
            cuts.push(phi);
            cuts.push((phi + std::f64::consts::PI).rem_euclid(tau));
        }
    }
    cuts.sort_by(f64::total_cmp);
    cuts.windows(2)
        .filter(|w| w[1] > w[0])
        .map(|w| {
            let mid = 0.5 * (w[0] + w[1]);
            let s: Vec<f64> = (0..y.len())
                .map(|i| x[(i, 0)] * mid.cos() + x[(i, 1)] * mid.sin())
                .collect();
            (w[0], w[1], 1.0 - auc(&s, y))
        })
        .collect()
}

/// Exact log Z, mean and sd under the isotropic prior N(0, v I): the direction's
/// density is ∝ exp(−γR(φ)) (uniform prior angle), the radius independent with
/// E r = √v·√(π/2), E r² = 2v.
pub fn exact_isotropic(arcs: &[(f64, f64, f64)], gamma: f64, v: f64) -> (f64, [f64; 2], [f64; 2]) {
    let (mut z, mut mc, mut ms, mut cc, mut ss) = (0.0, 0.0, 0.0, 0.0, 0.0);
    for &(a, b, r) in arcs {
        let w = (-gamma * r).exp();
        z += w * (b - a);
        mc += w * (b.sin() - a.sin());
        ms += w * (a.cos() - b.cos());
        // ∫cos² = (φ/2 + sin 2φ/4), ∫sin² = (φ/2 − sin 2φ/4).
        cc += w * ((b - a) / 2.0 + ((2.0 * b).sin() - (2.0 * a).sin()) / 4.0);
        ss += w * ((b - a) / 2.0 - ((2.0 * b).sin() - (2.0 * a).sin()) / 4.0);
    }
    let er = v.sqrt() * (std::f64::consts::PI / 2.0).sqrt();
    let mean = [er * mc / z, er * ms / z];
    let sd = [
        (2.0 * v * cc / z - mean[0] * mean[0]).sqrt(),
        (2.0 * v * ss / z - mean[1] * mean[1]).sqrt(),
    ];
    ((z / std::f64::consts::TAU).ln(), mean, sd)
}
