//! Spike-and-slab EP at a fixed γ where the start from the prior fails,
//! reached by the continuation (`SsPath`): EEG-like data, correlated channels
//! with rare outliers.

use nalgebra::DMatrix;

use super::model::{SpikeSlab, SpikeSlabEp, SsPath};
use super::sweep::SsSettings;
use crate::engine::ep::continuation::{self, KAPPA};
use crate::engine::ep::store::Precision;
use crate::engine::interface::{Control, EngineError};
use rand::RngExt;

use crate::engine::numerics::rng::{normal, stream};

/// n rows of d channels sharing one factor (correlation ≈ 0.9), 1% of the
/// rows with one channel off by ±40 (EEG's artefacts), labels from the
/// difference of the first two channels; columns standardised.
pub(super) fn channels(n: usize, d: usize, seed: u64) -> (DMatrix<f64>, Vec<bool>) {
    let mut rng = stream(seed, &[3]);
    let mut x = DMatrix::zeros(n, d);
    let mut lin = Vec::with_capacity(n);
    for i in 0..n {
        let f = normal(&mut rng);
        for k in 0..d {
            x[(i, k)] = f + 0.3 * normal(&mut rng);
        }
        if rng.random::<f64>() < 0.01 {
            let k = ((rng.random::<f64>() * d as f64) as usize).min(d - 1);
            x[(i, k)] += if rng.random::<f64>() < 0.5 {
                -40.0
            } else {
                40.0
            };
        }
        lin.push(x[(i, 0)] - x[(i, 1)] + 0.5 * normal(&mut rng));
    }
    let mut sorted = lin.clone();
    sorted.sort_by(f64::total_cmp);
    let med = sorted[n / 2];
    for k in 0..d {
        let col = x.column(k);
        let mean = col.mean();
        let sd = (col.map(|v| (v - mean).powi(2)).sum() / (n - 1) as f64).sqrt();
        x.column_mut(k).apply(|v| *v = (*v - mean) / sd);
    }
    (x, lin.iter().map(|&l| l > med).collect())
}

/// Seed 9 at γ = 2n fails from the prior the way EEG does ("η fell below its
/// minimum": the first pair updates overshoot, a prior site's tilted
/// distribution turns improper); the continuation's walk along γ converges,
/// to a state whose prior sites match their tilted moments (an EP fixed point).
#[test]
fn prior_start_failure_is_recovered_along_gamma() {
    let (x, y) = channels(300, 6, 9);
    let prior = SpikeSlab {
        spike_var: 1e-4,
        slab_var: 1.0,
        incl: 1.0 - (-1.0f64 / 6.0).exp(),
    };
    let (gamma, s, ctl) = (600.0, SsSettings::default(), Control::new());
    let mut cold = SpikeSlabEp::new(&x, &y, prior, Precision::F64).unwrap();
    match cold.run(gamma, &s, &ctl, &mut |_, _| {}) {
        Err(EngineError::NotConverged { message, .. }) => {
            assert!(message.contains("η fell below its minimum"), "{message}")
        }
        r => panic!(
            "the start from the prior should fail here: {:?}",
            r.map(|o| o.sweeps)
        ),
    }
    let mut model = SpikeSlabEp::new(&x, &y, prior, Precision::F64).unwrap();
    let mut sp = SsPath {
        model: &mut model,
        settings: s,
        ctl: &ctl,
        on_sweep: &mut |_, _| {},
        new_run: &mut || {},
    };
    let (out, path) = continuation::reach(&mut sp, gamma, 300, KAPPA, &mut |_| {}).unwrap();
    assert!(path.points.len() >= 2, "the walk was taken: {path:?}");
    assert!(out.evidence.log_z().is_some());
    let (lik, sites, mixture) = model.parts_mut();
    let q = super::sweep::LikelihoodSites::moments(&*lik).clone();
    // Every prior site's cavity gives a proper tilted distribution whose
    // moments q's marginal matches (no negative-site fix active at the end).
    assert_eq!(out.fixes_last, 0);
    for k in 0..6 {
        let cav = sites.cavity(&q, k, &mixture).expect("proper tilted");
        let t = super::prior_sites::tilted(cav, &mixture);
        let sd = q.var[k].sqrt();
        assert!(
            (q.mean[k] - t.mean).abs() < 1e-3 * sd,
            "θ_{k}: {} vs {}",
            q.mean[k],
            t.mean
        );
        assert!(
            (sd / t.var.sqrt() - 1.0).abs() < 1e-3,
            "θ_{k}: sd {sd} vs {}",
            t.var.sqrt()
        );
    }
}
