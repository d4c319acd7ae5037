//! Tests of `reference`.

use super::*;
use crate::engine::prior::Prior;
use crate::engine::smc::target::LinearAuc;

/// A random problem and a random (correlated, off-centre) reference.
fn setup(d: usize, prior: Prior, seed: u64) -> (LinearAuc, GaussianReference) {
    let mut r = rng::stream(seed, &[]);
    let n = 30;
    let x = DMatrix::from_fn(n, d, |_, _| rng::normal(&mut r));
    let y: Vec<bool> = (0..n).map(|i| i % 3 == 0).collect();
    let a = DMatrix::from_fn(d, d, |_, _| 0.3 * rng::normal(&mut r));
    let cov = &a * a.transpose() + DMatrix::identity(d, d) * 0.05;
    let mean = DVector::from_fn(d, |_, _| rng::normal(&mut r));
    (
        LinearAuc::new(&x, &y, prior),
        GaussianReference { mean, cov },
    )
}

/// The ray step z' = f·z + (f − 1)·L⁻¹m with one product gives the particle
/// and risk of the step through θ (natural → f·θ → to_particle, four
/// triangular products) to rounding, on random inputs.
#[test]
fn ray_step_equals_the_step_through_theta() {
    for (d, seed) in [(1, 1), (3, 2), (17, 3), (60, 4)] {
        let (inner, reference) = setup(d, Prior::Gaussian { var: 2.0 }, seed);
        let t = ReferenceTarget::new(&inner, &reference, 37.0).unwrap();
        let mut r = rng::stream(seed, &[9]);
        let mut scratch = Vec::new();
        let mut z: Vec<f64> = (0..d).map(|_| 1.5 * rng::normal(&mut r)).collect();
        for i in 0..60 {
            // Fresh points, and steps from the last proposal or the last
            // start (the cache's two entries), as on one ray.
            match i % 3 {
                0 => z = (0..d).map(|_| 1.5 * rng::normal(&mut r)).collect(),
                1 => {}
                _ => {
                    let mut next = vec![0.0; d];
                    t.ray_step(&z, 0.0, 0.9, &mut next, &mut scratch).unwrap();
                    z = next;
                }
            }
            let f = (0.4 * rng::normal(&mut r)).exp();
            let risk = rng::normal(&mut r);
            let (mut fast, mut slow) = (vec![0.0; d], vec![0.0; d]);
            let rf = t.ray_step(&z, risk, f, &mut fast, &mut scratch).unwrap();
            let rs = t.ray_step_through_theta(&z, risk, f, &mut slow);
            for (a, b) in fast.iter().zip(&slow) {
                assert!(
                    (a - b).abs() <= 1e-12 * (1.0 + b.abs()),
                    "d {d}: {a} vs {b}"
                );
            }
            assert!(
                (rf - rs).abs() <= 1e-12 * (1.0 + rs.abs()),
                "d {d}: {rf} vs {rs}"
            );
        }
    }
}

/// With reparametrised particles (spike-and-slab) the step goes through θ.
#[test]
fn ray_step_goes_through_theta_for_reparametrised_particles() {
    let prior = Prior::SpikeSlab {
        spike_var: 0.01,
        slab_var: 1.0,
        incl: 0.3,
    };
    let (inner, reference) = setup(4, prior, 7);
    assert!(!inner.particle_is_natural());
    let t = ReferenceTarget::new(&inner, &reference, 20.0).unwrap();
    let z = [0.3, -1.0, 0.2, 0.7];
    let (mut a, mut b) = (vec![0.0; 4], vec![0.0; 4]);
    let ra = t.ray_step(&z, 0.1, 1.3, &mut a, &mut Vec::new()).unwrap();
    let rb = t.ray_step_through_theta(&z, 0.1, 1.3, &mut b);
    assert_eq!((a, ra), (b, rb));
}
