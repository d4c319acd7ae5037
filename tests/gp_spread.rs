//! The reduced predictive variance of exact GP-EP models (`gp::spread`)
//! against the whole covariance: same means, sds within the stated accuracy
//! at the training rows, and measured at held-out rows. Skipped, with a
//! printed reason, where the shared data are absent.
//!
//! The size table of docs/BENCHMARKS.md:
//! `SETS=pima,credit,dna,colon cargo test --release --test gp_spread -- --ignored --nocapture`

use std::path::Path;
use std::time::Instant;

use pacauc::engine::ScoreModel;
use pacauc::engine::data::{Dataset, LoadOptions, Prepared, TestSource, prepare};
use pacauc::engine::ep::EpSettings;
use pacauc::engine::ep::gp::{fit_exact, full_model};
use pacauc::engine::gp::{GpSpread, Kernel, median_distance};
use pacauc::engine::interface::Control;

fn load(name: &str) -> Option<Prepared> {
    let p = format!("../shared/datasets/{name}.csv");
    if !Path::new(&p).is_file() {
        eprintln!("skipped: {p} is absent");
        return None;
    }
    let ds = Dataset::load(Path::new(&p), &LoadOptions::default()).unwrap();
    Some(
        prepare(
            &ds,
            TestSource::Split {
                frac: 0.25,
                seed: 0,
            },
        )
        .unwrap(),
    )
}

struct Compared {
    /// Largest |sd − exact sd| (relative to the prior sd, 1 for SE) at the
    /// training and the test rows; largest |mean − exact mean|.
    train_sd: f64,
    test_sd: f64,
    mean: f64,
    eigenpairs: usize,
    rank: usize,
    reduced_bytes: usize,
    full_bytes: usize,
}

fn compare(name: &str, gamma: f64) -> Option<Compared> {
    let p = load(name)?;
    let x = &p.train.x;
    let kernel = Kernel::Se {
        lengthscale: median_distance(x),
    };
    let mut state = None;
    let t = Instant::now();
    let (model, out) = fit_exact(
        &kernel,
        x,
        &p.train.y,
        gamma,
        &EpSettings::default(),
        &mut state,
        &Control::new(),
        &mut |_| {},
    )
    .unwrap();
    let fit_s = t.elapsed().as_secs_f64();
    let full = full_model(&kernel, state.as_mut().unwrap(), x).unwrap();
    let GpSpread::Reduced { lambda, .. } = &model.spread else {
        panic!("exact GP-EP stores a reduced spread")
    };
    let test_x = &p.test.as_ref().unwrap().x;
    let worst = |a: &[f64], b: &[f64]| {
        a.iter()
            .zip(b)
            .map(|(u, v)| (u - v).abs())
            .fold(0.0, f64::max)
    };
    let sds = |v: Vec<f64>| v.into_iter().map(f64::sqrt).collect::<Vec<_>>();
    let (m_tr, v_tr) = model.predict(x);
    let (f_m_tr, f_v_tr) = full.predict(x);
    let (m_te, v_te) = model.predict(test_x);
    let (f_m_te, f_v_te) = full.predict(test_x);
    let bytes = |m: &pacauc::engine::gp::GpModel| {
        serde_json::to_string(&ScoreModel::Gp(Box::new(m.clone())))
            .unwrap()
            .len()
    };
    let c = Compared {
        train_sd: worst(&sds(v_tr), &sds(f_v_tr)),
        test_sd: worst(&sds(v_te), &sds(f_v_te)),
        mean: worst(&m_tr, &f_m_tr).max(worst(&m_te, &f_m_te)),
        eigenpairs: lambda.len(),
        rank: model.rank(),
        reduced_bytes: bytes(&model),
        full_bytes: bytes(&full),
    };
    println!(
        "{name}: {} distinct rows ({} form), γ {gamma}: {} eigenpairs (spread {:.2} s), max sd error train {:.2e} test {:.2e}, max mean diff {:.1e}; record model {:.2} MB (whole covariance {:.2} MB); fit {fit_s:.1} s",
        c.rank,
        out.form,
        c.eigenpairs,
        out.spread["seconds"].as_f64().unwrap_or(f64::NAN),
        c.train_sd,
        c.test_sd,
        c.mean,
        c.reduced_bytes as f64 / 1e6,
        c.full_bytes as f64 / 1e6,
    );
    Some(c)
}

/// Pima (576 training rows): the training-row criterion holds, held-out sds
/// are within 2× the stated accuracy (the criterion is checked on training
/// rows only; held-out rows lie in the span of the same kernel columns), the
/// means are the same α, and the model is several times smaller.
#[test]
fn reduced_spread_matches_the_whole_covariance_on_pima() {
    let Some(c) = compare("pima", 400.0) else {
        return;
    };
    assert!(c.train_sd <= 0.01, "train sd error {}", c.train_sd);
    assert!(c.test_sd <= 0.02, "test sd error {}", c.test_sd);
    assert!(c.mean < 1e-8, "mean diff {}", c.mean);
    assert!(c.eigenpairs < c.rank);
    assert!(c.reduced_bytes * 3 < c.full_bytes);
}

/// Sizes and errors on the paper's sets (see the module note for the command).
#[test]
#[ignore]
fn reduced_spread_sizes() {
    let sets = std::env::var("SETS").unwrap_or_else(|_| "pima,credit,dna,colon".into());
    for name in sets.split(',') {
        compare(name, 400.0);
    }
}
