//! γ by cross-validation along the SMC path (ALGORITHMS.md §3, §8): the
//! sampler's checkpoints land on the grid exactly and give the tempered
//! posterior there (a quadratic risk, closed form); the CV is the same whatever
//! the thread count; the engine records `details.cv` as EP does.
//!
//! The comparison with refitting SMC at every grid point (the issue's
//! done-when) is long; each mode is its own ignored test so that it can be
//! timed alone, e.g.
//!     cargo test --release --test smc_path_cv -- --ignored --exact pima_path
//!     /usr/bin/time -f "%e %U" target/release/deps/smc_path_cv-* --ignored --exact pima_refit
//! (`pima_path`: the default, paths ended early once the mean held-out AUC has
//! clearly fallen; `pima_full_path`: to the top of the grid; `pima_refit`: one
//! run per fold and point; the same for `dna_…`); each prints the CV curve
//! and its costs.

use std::path::PathBuf;

use nalgebra::DMatrix;
use pacauc::engine::numerics::rng;
use pacauc::engine::select::EarlyStop;
use pacauc::engine::smc::path_cv::EARLY_STOP;
use pacauc::engine::smc::sampler::{self, AfterCheckpoint, Checkpoints};
use pacauc::engine::smc::{CvMode, GammaCv, Kernel, Quadratic, SmcCv, SmcSettings};
use pacauc::engine::{Control, Engine, NoObserver, Prior, Problem};

fn settings(n: usize, seed: u64) -> SmcSettings {
    SmcSettings {
        particles: n,
        kernel: Kernel::Gpcn,
        seed,
        ..SmcSettings::default()
    }
}

/// At every checkpoint the cloud is the tempered posterior of a quadratic
/// risk, N(γb/(1/v + γ), 1/(1/v + γ)) per coordinate, like an ordinary run's
/// at its target; the stage lands on γ_k exactly (bit for bit), log Z there is
/// the closed form, and stopping at a checkpoint ends the run there.
/// Tolerances as in smc_exact.rs: a mean has MC sd σ/√N, an sd a relative
/// error 1/√(2N), log Ẑ an sd √(T/N); the bounds are ≥ 4 of those (N = 4000:
/// 0.063σ for a mean, 0.045 for an sd; log Z: 4√(T/N)).
#[test]
fn checkpoints_land_on_the_grid_and_give_the_tempered_posterior() {
    let t = Quadratic {
        b: vec![1.0, -0.5, 2.0],
        var: 1.5,
    };
    let grid = [0.3, 1.0, 2.5, 7.0, 20.0];
    let n = 4000;
    let s = settings(n, 3);
    let mut seen = Vec::new();
    let mut at = |c: &sampler::Checkpoint<'_>| {
        let gamma = grid[c.index];
        assert_eq!(c.stage.gamma, gamma, "the stage lands on the checkpoint");
        let (m, sd) = sampler::moments(c.theta, c.d);
        let tol_z = 4.0 * (c.stage.stage as f64 / n as f64).sqrt();
        assert!(
            (c.stage.log_z - t.log_z(gamma)).abs() < tol_z,
            "γ {gamma}: log Z {} vs {} (tolerance {tol_z:.3})",
            c.stage.log_z,
            t.log_z(gamma)
        );
        for k in 0..3 {
            let (mu, sigma) = t.posterior(gamma, k);
            assert!(
                (m[k] - mu).abs() < 0.07 * sigma,
                "γ {gamma}: mean[{k}] {} vs {mu}",
                m[k]
            );
            assert!(
                (sd[k] / sigma - 1.0).abs() < 0.05,
                "γ {gamma}: sd[{k}] {} vs {sigma}",
                sd[k]
            );
        }
        seen.push((c.index, c.stage.stage));
        AfterCheckpoint::Continue
    };
    let run = sampler::run_checkpointed(
        &t,
        20.0,
        &s,
        &Control::new(),
        &mut NoObserver,
        Some(Checkpoints {
            gammas: &grid,
            at: &mut at,
        }),
    )
    .unwrap();
    assert_eq!(
        seen.iter().map(|s| s.0).collect::<Vec<_>>(),
        [0, 1, 2, 3, 4]
    );
    assert!(
        seen.windows(2).all(|w| w[0].1 < w[1].1),
        "one stage each at least"
    );
    // The capped path costs at most one extra stage per checkpoint.
    let plain = sampler::run(&t, 20.0, &s, &Control::new(), &mut NoObserver).unwrap();
    assert!(
        run.path.len() <= plain.path.len() + grid.len(),
        "{} vs {}",
        run.path.len(),
        plain.path.len()
    );
    // The ordinary run to 2.5 agrees with the checkpoint at 2.5 in distribution.
    let direct = sampler::run(&t, 2.5, &settings(n, 4), &Control::new(), &mut NoObserver).unwrap();
    let (m, _) = sampler::moments(&direct.theta, 3);
    for (k, mk) in m.iter().enumerate() {
        let (mu, sigma) = t.posterior(2.5, k);
        assert!((mk - mu).abs() < 0.07 * sigma);
    }

    // Stop at the second checkpoint: the run ends at γ = 1.
    let mut stop = |c: &sampler::Checkpoint<'_>| {
        if c.index == 1 {
            AfterCheckpoint::Stop
        } else {
            AfterCheckpoint::Continue
        }
    };
    let cut = sampler::run_checkpointed(
        &t,
        20.0,
        &s,
        &Control::new(),
        &mut NoObserver,
        Some(Checkpoints {
            gammas: &grid,
            at: &mut stop,
        }),
    )
    .unwrap();
    assert_eq!(cut.path.last().unwrap().gamma, 1.0);
}

/// Rows with a signal in two of four columns.
fn toy(n: usize, seed: u64) -> Problem {
    let mut r = rng::stream(seed, &[]);
    let x = DMatrix::from_fn(n, 4, |_, _| rng::normal(&mut r));
    let y = (0..n)
        .map(|i| x[(i, 0)] - 0.5 * x[(i, 1)] + rng::normal(&mut r) > 0.3)
        .collect();
    let names = (0..4).map(|k| format!("x{k}")).collect();
    Problem::new(names, x, y, 0.0, Prior::Gaussian { var: 1.0 }).unwrap()
}

fn engine(mode: CvMode, grid: &[f64]) -> SmcCv {
    SmcCv {
        settings: settings(400, 5),
        cv: GammaCv {
            grid_over_n: grid.to_vec(),
            folds: 3,
            seed: 2,
            mode,
            early_stop: None,
        },
    }
}

/// 1 or 2 threads: the same CV report and final particles; the record has the
/// EP layout of `details.cv` and the runs of every fold at every point.
#[test]
fn the_cv_does_not_depend_on_the_thread_count() {
    let p = toy(150, 9);
    let mut e = engine(CvMode::Path, &[0.25, 1.0, 4.0]);
    // The folds in lockstep (the rule reads every fold at every point).
    e.cv.early_stop = Some(EARLY_STOP);
    let run = |threads: usize| {
        rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .unwrap()
            .install(|| e.run(&p, &Control::new(), &mut NoObserver).unwrap())
    };
    let (a, b) = (run(1), run(2));
    assert_eq!(a.details["cv"], b.details["cv"]);
    assert_eq!(a.mean, b.mean);
    assert_eq!(a.log_evidence, b.log_evidence);
    let cv = &a.details["cv"];
    assert_eq!(cv["parameter"], "gamma_over_n");
    assert_eq!(cv["grid"].as_array().unwrap().len(), 3);
    assert_eq!(cv["fold_auc"].as_array().unwrap().len(), 3);
    let chosen = cv["chosen"].as_f64().unwrap();
    assert_eq!(a.gamma, Some(chosen * 150.0));
    assert_eq!(a.details["gamma"]["chosen_by"], "cv");
    assert_eq!(a.details["cv_runs"].as_array().unwrap().len(), 9);
    // The fold's runs reach the grid exactly, in stages counted from γ = 0.
    let it = &cv["fold_iterations"][0];
    assert!(it[0].as_u64().unwrap() >= 1 && it[0].as_u64() < it[2].as_u64());
}

/// The path and one run per point choose from the same folds and curves of the
/// same shape: on a small problem the choices are within one grid step, and
/// the path runs once per fold (its stage counts grow along the grid) while
/// each refit starts from γ = 0.
#[test]
fn the_path_agrees_with_refitting_on_a_small_problem() {
    let p = toy(150, 11);
    let grid = [0.25, 1.0, 4.0];
    let a = engine(CvMode::Path, &grid)
        .run(&p, &Control::new(), &mut NoObserver)
        .unwrap();
    let b = engine(CvMode::Refit, &grid)
        .run(&p, &Control::new(), &mut NoObserver)
        .unwrap();
    let pos = |f: &pacauc::engine::Fit| {
        let c = f.details["cv"]["chosen"].as_f64().unwrap();
        grid.iter().position(|&g| g == c).unwrap() as i64
    };
    assert!((pos(&a) - pos(&b)).abs() <= 1);
    let (ma, mb) = (&a.details["cv"]["mean_auc"], &b.details["cv"]["mean_auc"]);
    for k in 0..3 {
        // Held-out AUCs of posterior means from two independent clouds of 400:
        // both near the same curve (50 held-out rows per fold: AUC steps of ~1/600).
        assert!((ma[k].as_f64().unwrap() - mb[k].as_f64().unwrap()).abs() < 0.02);
    }
    assert_eq!(b.details["gamma"]["cv_mode"], "refit");
}

/// A GP prior has no held-out scores along the path: refused in the library's words.
#[test]
fn the_gp_prior_is_refused() {
    let mut p = toy(60, 3);
    p.prior = Prior::Gp(pacauc::engine::gp::GpPrior {
        kernel: pacauc::engine::gp::KernelKind::Se,
        lengthscale: pacauc::engine::gp::LengthScale::Median,
        approx: pacauc::engine::gp::GpApprox::Exact,
    });
    let e = engine(CvMode::Path, &[1.0, 2.0])
        .run(&p, &Control::new(), &mut NoObserver)
        .unwrap_err();
    assert!(e.to_string().contains("needs a linear score"), "{e}");
}

// ---- The comparison on real data (ignored: long; see the module's doc). ----

/// The problem and engine of `pacauc fit FILE --method smc --gamma auto --seed 1`.
fn real(file: &str, mode: CvMode, early_stop: Option<EarlyStop>) -> Option<(Problem, SmcCv)> {
    let path = PathBuf::from("../shared/datasets").join(file);
    if !path.is_file() {
        eprintln!("skipped: {} is absent", path.display());
        return None;
    }
    let spec = pacauc::spec::from_given(path, "smc", &[("gamma", "auto"), ("seed", "1")]).unwrap();
    let (_, prepared) = spec.data.load().unwrap();
    let problem = pacauc::spec::build::problem(&spec, &prepared).unwrap();
    let pacauc::spec::MethodSpec::Smc(s) = &spec.method else {
        unreachable!()
    };
    let e = SmcCv {
        settings: pacauc::spec::build::smc_settings(s, 1),
        cv: GammaCv {
            grid_over_n: s.gamma_grid.clone(),
            folds: s.folds,
            seed: 1,
            mode,
            early_stop,
        },
    };
    Some((problem, e))
}

fn compare(file: &str, mode: CvMode, early_stop: Option<EarlyStop>) {
    let Some((p, e)) = real(file, mode, early_stop) else {
        return;
    };
    let mut log = |ev: pacauc::engine::Event| {
        if let pacauc::engine::Event::Log { message, .. } = ev {
            eprintln!("{message}");
        }
    };
    let fit = e.run(&p, &Control::new(), &mut log).unwrap();
    let d = &fit.details;
    println!(
        "{}",
        serde_json::json!({
            "file": file, "mode": d["gamma"]["cv_mode"], "chosen": d["cv"]["chosen"],
            "grid": d["cv"]["grid"], "mean_auc": d["cv"]["mean_auc"],
            "fold_auc": d["cv"]["fold_auc"], "seconds": d["seconds"], "runs": d["cv_runs"],
            "stopped_early": d["cv_stopped_early"],
        })
    );
}

#[test]
#[ignore = "long: the path on Pima (see the module's doc)"]
fn pima_path() {
    compare("pima.csv", CvMode::Path, Some(EARLY_STOP));
}

#[test]
#[ignore = "long: the path on Pima to the top of the grid"]
fn pima_full_path() {
    compare("pima.csv", CvMode::Path, None);
}

#[test]
#[ignore = "long: refitting at every grid point on Pima"]
fn pima_refit() {
    compare("pima.csv", CvMode::Refit, None);
}

#[test]
#[ignore = "long: the path on DNA"]
fn dna_path() {
    compare("dna.csv", CvMode::Path, Some(EARLY_STOP));
}

#[test]
#[ignore = "long: the path on DNA to the top of the grid"]
fn dna_full_path() {
    compare("dna.csv", CvMode::Path, None);
}

#[test]
#[ignore = "long: refitting at every grid point on DNA"]
fn dna_refit() {
    compare("dna.csv", CvMode::Refit, None);
}
