//! Tests of `moves`.

use super::*;
use crate::engine::smc::gaussian_fit::CrossFit;
use nalgebra::DMatrix;

#[test]
fn stored_whitened_states_follow_steps_and_radial_moves() {
    use crate::engine::prior::Prior;
    use crate::engine::smc::target::LinearAuc;
    let mut r = rng::stream(5, &[]);
    let (n, d, m) = (40, 3, 50);
    let x = DMatrix::from_fn(n, d, |_, _| rng::normal(&mut r));
    let y: Vec<bool> = (0..n).map(|i| i % 3 == 0).collect();
    for prior in [
        Prior::Gaussian { var: 1.0 },
        Prior::SpikeSlab {
            spike_var: 0.01,
            slab_var: 1.0,
            incl: 0.3,
        },
    ] {
        let t = LinearAuc::new(&x, &y, prior);
        let mut theta = vec![0.0; m * d];
        for row in theta.chunks_exact_mut(d) {
            t.sample_prior(&mut r, row);
        }
        // Two folds: the chains of each move with the other's fit.
        let cf = CrossFit::of(&theta, d, &vec![1.0 / m as f64; m], m, 2, 1.0);
        let mut chains = Chains {
            d,
            risk: vec![0.0; m],
            log_prior: theta.chunks_exact(d).map(|p| t.log_prior(p)).collect(),
            theta,
            white: Vec::new(),
            rng: (0..m).map(|j| rng::stream(6, &[j as u64])).collect(),
            fold: (0..m).map(|j| cf.fold_of(j)).collect(),
            surrogate: Vec::new(),
            jac: Vec::new(),
        };
        t.risks(&chains.theta, &mut chains.risk);
        chains.whiten(&cf.fits);
        let mut buf = Proposals::default();
        for _ in 0..5 {
            let spec = StepSpec {
                kernel: Kernel::Gpcn,
                gamma: 10.0,
                scale: 0.7,
                fits: &cf.fits,
                radial: true,
                chart: None,
                maps: None,
                df: None,
                local_share: 0.0,
                direction: false,
            };
            step(&t, &mut chains, &mut buf, spec);
        }
        let mut w = vec![0.0; d];
        for j in 0..m {
            let p = &chains.theta[j * d..(j + 1) * d];
            cf.fits[chains.fold[j]].whiten(p, &mut w);
            for (a, b) in w.iter().zip(&chains.white[j * d..(j + 1) * d]) {
                assert!((a - b).abs() < 1e-9);
            }
            assert!((t.log_prior(p) - chains.log_prior[j]).abs() < 1e-9);
        }
        // Rescaling θ leaves the risk unchanged (up to the rounding of
        // near-tied scores, which does not occur here).
        let mut fresh = vec![0.0; m];
        t.risks(&chains.theta, &mut fresh);
        assert_eq!(fresh, chains.risk);
    }
}
