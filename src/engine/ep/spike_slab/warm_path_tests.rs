//! Spike-and-slab EP at a fixed γ where the start from the prior fails
//! (`warm_path`): EEG-like data, correlated channels with rare outliers.

use nalgebra::DMatrix;

use super::model::{SpikeSlab, SpikeSlabEp};
use super::sweep::SsSettings;
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

/// Not a test: which seeds fail from the prior (run with --ignored --nocapture).
#[test]
#[ignore]
fn search_failing_seeds() {
    for seed in 0..12 {
        let (x, y) = channels(300, 6, seed);
        let d = 6.0f64;
        let prior = SpikeSlab {
            spike_var: 1e-4,
            slab_var: 1.0,
            incl: 1.0 - (-1.0 / d).exp(),
        };
        for c in [2.0, 8.0] {
            let mut m = SpikeSlabEp::new(&x, &y, prior, Precision::F64).unwrap();
            let r = m.run(
                c * 300.0,
                &SsSettings::default(),
                &Control::new(),
                &mut |_, _| {},
            );
            let what = match r {
                Ok(o) => format!("ok {}", o.sweeps),
                Err(EngineError::NotConverged { message, .. }) => message[..60].to_string(),
                Err(e) => format!("{e}"),
            };
            println!("seed {seed} γ {c}n: {what}");
        }
    }
}

/// Seed 9 at γ = 2n fails from the prior the way EEG does ("η fell below its
/// minimum": the first pair updates overshoot, a prior site's tilted
/// distribution turns improper); along the grid it converges, to a state whose
/// prior sites match their tilted moments (an EP fixed point).
#[test]
fn prior_start_failure_is_recovered_along_the_grid() {
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
    let (out, path) = super::warm_path::run(
        &mut model,
        gamma,
        crate::engine::ep::cv::grid_below(gamma, 300),
        300,
        &s,
        &ctl,
        &mut |_, _| {},
        &mut || {},
        &mut |_| {},
    )
    .unwrap();
    let path = path.expect("the warm path was taken");
    let over_n: Vec<f64> = path.points.iter().map(|p| p.gamma_over_n).collect();
    assert_eq!(over_n, [0.0625, 0.125, 0.25, 0.5, 1.0]);
    assert!(path.first_error.contains("η fell below"));
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
