//! Several independent SMC runs (`SmcSettings::runs`): the pooled posterior and
//! the pooled evidence against the closed form of a quadratic risk
//! (ALGORITHMS.md §3), R-hat near 1 for runs that agree and far above it for
//! runs made to disagree, and the same bits whatever the thread count.
//!
//! Tolerances come from the runs' own Monte Carlo errors: a mean over R runs
//! minus the truth, over its MCSE (the sd of the runs' means / √R), follows
//! Student's t with R − 1 degrees of freedom when the runs are unbiased; with
//! R = 8 its 99.9% two-sided quantile is 5.41. Seeded: a pass is reproducible.

use nalgebra::DMatrix;
use pacauc::engine::fit::IndependentRuns;
use pacauc::engine::numerics::rng;
use pacauc::engine::smc::runs;
use pacauc::engine::smc::{Kernel, LinearAuc, Moves, Quadratic, SmcSettings, sampler};
use pacauc::engine::{Control, Event, NoObserver, Prior};

/// t_{7}, 99.9% two-sided.
const T7: f64 = 5.41;

fn settings(particles: usize, runs: usize, seed: u64) -> SmcSettings {
    SmcSettings {
        particles,
        runs,
        seed,
        kernel: Kernel::Gpcn,
        ..SmcSettings::default()
    }
}

fn summary(all: &[(u64, sampler::SmcRun)], d: usize) -> IndependentRuns {
    let names: Vec<String> = (0..d).map(|k| format!("b{k}")).collect();
    runs::summarise(all, &names)
}

#[test]
fn pooled_runs_recover_the_quadratic_closed_form() {
    let t = Quadratic {
        b: vec![1.0, -0.5, 2.0],
        var: 1.5,
    };
    let gamma = 20.0;
    let s = settings(2000, 8, 11);
    let mut events = Vec::new();
    let all = runs::run_all(&t, gamma, &s, &Control::new(), &mut |e: Event| {
        if matches!(e, Event::SmcRun { .. }) {
            events.push(e)
        }
    })
    .unwrap();
    assert_eq!(events.len(), 8, "one SmcRun event per run");
    let seeds: Vec<u64> = all.iter().map(|r| r.0).collect();
    assert_eq!(seeds[0], 11, "run 1 is the seed's own single run");
    let mut distinct = seeds.clone();
    distinct.sort_unstable();
    distinct.dedup();
    assert_eq!(distinct.len(), 8, "{seeds:?}");
    let sum = summary(&all, 3);
    // The pooled cloud: every run's particles, equally weighted.
    let pooled: Vec<f64> = all.iter().flat_map(|r| r.1.theta.clone()).collect();
    let (mean, sd) = sampler::moments(&pooled, 3);
    for k in 0..3 {
        let (mu, sigma) = t.posterior(gamma, k);
        let tol = T7 * sum.mcse[k];
        eprintln!(
            "b{k}: pooled mean {:.4} vs {mu:.4} (MCSE {:.4}, MCSE/sd {:.4}), sd {:.4} vs {sigma:.4}, R-hat {:?}",
            mean[k],
            sum.mcse[k],
            sum.mcse_over_sd[k].unwrap(),
            sd[k],
            sum.rhat[k]
        );
        assert!(
            (mean[k] - mu).abs() < tol,
            "mean[{k}] {} vs {mu} (tolerance {tol:.4})",
            mean[k]
        );
        // The sd's relative error over 8 × 2000 particles is ≈ 1/√(2·16000·ESS/N)
        // ≈ 0.01 even at an ESS of a third of N: bound 4%.
        assert!(
            (sd[k] / sigma - 1.0).abs() < 0.04,
            "sd[{k}] {} vs {sigma}",
            sd[k]
        );
        assert!(sum.rhat[k].unwrap() < 1.01, "R-hat {:?}", sum.rhat[k]);
        // The MCSE/sd reported is the MCSE over the pooled sd.
        assert!((sum.mcse_over_sd[k].unwrap() * sd[k] - sum.mcse[k]).abs() < 1e-9);
    }
    assert!(sum.rhat_risk.unwrap() < 1.01);
    let exact = t.log_z(gamma);
    let lz = sum.log_z;
    eprintln!(
        "log Z mean {:.4} ± {:.4} (MCSE {:.4}), pooled {:.4}, exact {exact:.4}; Ẑ-weights use {:.2} runs",
        lz.mean, lz.sd, lz.mcse, lz.pooled, sum.z_weight_runs
    );
    assert!(
        (lz.mean - exact).abs() < T7 * lz.mcse,
        "log Z mean {} vs {exact} (MCSE {})",
        lz.mean,
        lz.mcse
    );
    // log of the mean Ẑ lies between the mean and the largest log Ẑ.
    let top = all.iter().map(|r| r.1.log_z).fold(f64::MIN, f64::max);
    assert!(lz.pooled >= lz.mean && lz.pooled <= top);
    assert!(sum.z_weight_runs > 1.0 && sum.z_weight_runs <= 8.0);
    assert_eq!(sum.count, 8);
    assert!(sum.runs.iter().all(|r| r.converged && r.stages >= 1));
}

/// Moves that cannot move (random walk of step 1e-6, one step per stage, no
/// radial moves) and 100 particles: each run's cloud collapses onto the few
/// prior draws that resampling kept, different in every run.
#[test]
fn runs_that_cannot_mix_disagree() {
    let t = Quadratic {
        b: vec![1.0, -0.5],
        var: 1.5,
    };
    let s = SmcSettings {
        particles: 100,
        runs: 4,
        seed: 3,
        kernel: Kernel::Rw,
        moves: Moves::Fixed(1),
        scale: Some(1e-6),
        adapt_scale: false,
        radial: false,
        ..SmcSettings::default()
    };
    let all = runs::run_all(&t, 200.0, &s, &Control::new(), &mut NoObserver).unwrap();
    let sum = summary(&all, 2);
    eprintln!(
        "R-hat {:?}, max {:?} ({:?}); log Z {:.3} ± {:.3}",
        sum.rhat, sum.rhat_max, sum.rhat_worst, sum.log_z.mean, sum.log_z.sd
    );
    assert!(sum.rhat_max.unwrap() > 1.1, "{:?}", sum.rhat_max);
    assert!(sum.runs.iter().any(|r| !r.converged));
}

/// A small AUC problem (the risks through the packed GEMM path).
fn auc_target() -> LinearAuc {
    let mut r = rng::stream(5, &[]);
    let n = 120;
    let y: Vec<bool> = (0..n).map(|i| i % 3 == 0).collect();
    let x = DMatrix::from_fn(n, 3, |i, k| {
        let shift = if y[i] { [0.9, 0.4, 0.0][k] } else { 0.0 };
        shift + rng::normal(&mut r)
    });
    LinearAuc::new(&x, &y, Prior::Gaussian { var: 1.0 })
}

#[test]
fn runs_give_the_same_bits_on_one_or_two_threads() {
    let s = settings(400, 3, 9);
    let go = |threads: usize| {
        rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .unwrap()
            .install(|| {
                let target = auc_target();
                let all =
                    runs::run_all(&target, 120.0, &s, &Control::new(), &mut NoObserver).unwrap();
                let sum = summary(&all, 3);
                let theta: Vec<u64> = all
                    .iter()
                    .flat_map(|r| r.1.theta.iter().map(|v| v.to_bits()))
                    .collect();
                (
                    theta,
                    sum.log_z.mean.to_bits(),
                    sum.rhat_max.map(f64::to_bits),
                )
            })
    };
    let one = go(1);
    assert_eq!(one, go(2));
}
