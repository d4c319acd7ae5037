//! Certificates of Gaussian approximations against the exact Gibbs posterior
//! (ALGORITHMS.md §7, §9, §13): the importance-sampling check flags EP's
//! all-spike fixed point; on Pima (ignored: minutes) IS-corrected EP and VB F3
//! agree with converged SMC and every bound is non-vacuous.
//! Data from ../shared/datasets are skipped, with a printed reason, when absent.

use std::path::Path;

mod common;

use pacauc::engine::bounds::certify;
use pacauc::engine::data::{Dataset, LoadOptions, TestSource, prepare};
use pacauc::engine::ep::Ep;
use pacauc::engine::is_check::{IsSettings, is_check_fit};
use pacauc::engine::smc::Smc;
use pacauc::engine::vb::{Family, Vb, VbSettings};
use pacauc::engine::{Control, Engine, Fit, NoObserver, Prior, Problem};

fn problem(path: &str, test: Option<f64>, gamma_over_n: f64, prior: Prior) -> Option<Problem> {
    let path = Path::new(path);
    if !path.is_file() {
        eprintln!("skipped: {} is absent", path.display());
        return None;
    }
    let ds = Dataset::load(path, &LoadOptions::default()).unwrap();
    let source = match test {
        Some(frac) => TestSource::Split { frac, seed: 0 },
        None => TestSource::None,
    };
    let p = prepare(&ds, source).unwrap();
    let n = p.train.y.len() as f64;
    Some(
        Problem::new(
            p.names.clone(),
            p.train.x,
            p.train.y,
            gamma_over_n * n,
            prior,
        )
        .unwrap(),
    )
}

fn run(engine: &dyn Engine, pb: &Problem) -> Fit {
    engine.run(pb, &Control::new(), &mut NoObserver).unwrap()
}

/// The sparse demo as it was before it grew (600 rows, 90 positives; the same
/// generator and seed) at γ = n with the theory inclusion prior: EP lands on
/// the all-spike fixed point (no inclusion above ½; SMC gives 0.99 to the true
/// features). (On the 1000-row demo EP finds the true features: no such
/// failure to flag.) The Gaussian misses the slab mass of the exact posterior,
/// and k̂ says so — with enough draws: at 4000 (k̂ 0.54, ESS 315) the
/// t-proposal rarely reaches the slab scale and the tail is not yet seen; at
/// 20 000 (the default) k̂ = 0.76 and the ESS has not grown (307).
#[test]
fn all_spike_ep_gets_a_large_khat() {
    let data = common::sparse_demo_600("khat");
    let Some(pb0) = problem(&data, Some(0.25), 1.0, Prior::Gaussian { var: 1.0 }) else {
        return;
    };
    let d = pb0.d();
    let prior = Prior::SpikeSlab {
        spike_var: 1e-4,
        slab_var: 1.0,
        incl: Prior::theory_inclusion(d),
    };
    let pb = Problem { prior, ..pb0 };
    let fit = run(&Ep::default(), &pb);
    let incl = fit.inclusion.clone().unwrap();
    let top = incl.iter().copied().fold(0.0, f64::max);
    assert!(
        top < 0.5,
        "expected the all-spike fixed point; largest inclusion {top}"
    );
    let c = is_check_fit(&fit, &pb, &IsSettings::default()).unwrap();
    eprintln!(
        "all-spike EP: k̂ = {:.2}, ESS {:.0}, {}",
        c.khat, c.ess, c.verdict
    );
    assert!(c.khat > 0.7 && !c.trusted, "k̂ = {}", c.khat);
    // The large-n default scores the draws on a row subsample: it must flag
    // the same failure (from the weights' tail, k̂, not from its noise τ).
    let sub = IsSettings {
        rows: Some(pb.n() * 2 / 3),
        ..IsSettings::default()
    };
    let c = is_check_fit(&fit, &pb, &sub).unwrap();
    eprintln!(
        "all-spike EP, subsample of {:?} rows: k̂ = {:.2}, τ = {:?}",
        c.rows, c.khat, c.subsample_log_w_sd
    );
    assert!(
        c.rows.is_some() && c.khat > 0.7 && !c.trusted,
        "k̂ = {}",
        c.khat
    );
}

/// Pima split, γ = n_train: SMC (default settings, converged on Pima per
/// docs/BENCHMARKS.md) as the reference. IS-corrected EP means within 0.05
/// reference sd with k̂ < 0.7; VB F3 means within 0.3 sd (F1, F2 printed).
/// `cargo test --release --test certificates -- --ignored --nocapture`
#[test]
#[ignore]
fn pima_corrected_ep_and_vb_match_smc() {
    let Some(pb) = problem(
        "../shared/datasets/splits/pima_train.csv",
        None,
        1.0,
        Prior::Gaussian { var: 1.0 },
    ) else {
        return;
    };
    let smc = run(&Smc::default(), &pb);
    assert!(smc.converged);
    let ep = run(&Ep::default(), &pb);
    let c = is_check_fit(
        &ep,
        &pb,
        &IsSettings {
            draws: 20_000,
            ..IsSettings::default()
        },
    )
    .unwrap();
    let dist = |m: &[f64]| {
        m.iter()
            .zip(&smc.mean)
            .zip(&smc.sd)
            .map(|((a, b), s)| (a - b).abs() / s)
            .fold(0.0, f64::max)
    };
    eprintln!(
        "EP: {:.3} sd from SMC; IS-corrected ({} draws, k̂ = {:.2}, ESS {:.0}): {:.3} sd",
        dist(&ep.mean),
        c.draws,
        c.khat,
        c.ess,
        dist(&c.mean)
    );
    assert!(c.khat < 0.7);
    assert!(dist(&c.mean) < 0.05);
    for family in [Family::Iso, Family::Diag, Family::Full] {
        let vb = run(
            &Vb {
                settings: VbSettings {
                    family,
                    ..VbSettings::default()
                },
                ..Vb::default()
            },
            &pb,
        );
        let sd_ratio: Vec<String> = vb
            .sd
            .iter()
            .zip(&smc.sd)
            .map(|(a, b)| format!("{:.2}", a / b))
            .collect();
        eprintln!(
            "VB {family:?}: means {:.3} sd from SMC, sd ratios {sd_ratio:?}",
            dist(&vb.mean)
        );
        if family == Family::Full {
            assert!(dist(&vb.mean) < 0.3);
        }
    }
    for (name, f) in [("smc", &smc), ("ep", &ep)] {
        let b = certify(f, &pb, 0.05).unwrap();
        eprintln!(
            "bound {name}: {:.3} (empirical {:.3}, KL {:.2})",
            b.risk, b.empirical_risk, b.kl
        );
        assert!(b.risk < 0.5 && b.risk > b.empirical_risk);
    }
}
