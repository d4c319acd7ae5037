//! EP on a sample of pairs (`pairs::PairSample`, `kernel::sampled`) against
//! EP on all pairs.

use super::tests::{split, toy};
use super::*;
use crate::engine::interface::Control;
use crate::engine::pairs::{PairSample, PairSampling};

fn settings() -> EpSettings {
    EpSettings {
        tol: 1e-9,
        ..EpSettings::default()
    }
}

/// A "sample" holding every pair exactly once is the dense problem: the same
/// iterates up to the order of the sums (means, sds, log Z to 1e-8), with the
/// identical rows left out of the sites in both.
#[test]
fn a_sample_of_every_pair_is_the_dense_problem() {
    let (mut x, y) = toy(90, 4, 21, 1.0);
    let (p, n) = (
        (0..90).find(|&i| y[i]).unwrap(),
        (0..90).find(|&i| !y[i]).unwrap(),
    );
    let row = x.row(p).into_owned();
    x.set_row(n, &row); // one identical positive/negative pair
    let (xp, xn) = split(&x, &y);
    let design = Design::new(&xp, &xn, &[1.0; 4], Form::Primal);
    let gamma = 120.0;
    let g = gamma / (xp.nrows() * xn.nrows()) as f64;
    let mut dense = PairEp::new(
        design.zp.clone(),
        design.zn.clone(),
        identical_pairs(&xp, &xn),
        design.prior.clone(),
        Precision::F64,
    )
    .unwrap();
    let all: Vec<Vec<u32>> = (0..xp.nrows())
        .map(|_| (0..xn.nrows() as u32).rev().collect())
        .collect();
    let sample = PairSample::from_rows(xn.nrows(), all);
    let mut sampled = PairEp::sampled(
        design.zp.clone(),
        design.zn.clone(),
        sample,
        design.prior.clone(),
        Precision::F64,
    )
    .unwrap();
    assert_eq!(sampled.identical_pairs(), 1);
    assert_eq!(sampled.sites(), dense.sites());
    let a = dense
        .run(g, &settings(), &Control::new(), &mut |_| {})
        .unwrap();
    let b = sampled
        .run(g, &settings(), &Control::new(), &mut |_| {})
        .unwrap();
    assert_eq!(a.sweeps, b.sweeps);
    let (qa, qb) = (dense.posterior().unwrap(), sampled.posterior().unwrap());
    assert!((&qa.m - &qb.m).amax() < 1e-8, "{} vs {}", qa.m, qb.m);
    assert!((&qa.v - &qb.v).amax() < 1e-8);
    let (za, zb) = (a.evidence.log_z().unwrap(), b.evidence.log_z().unwrap());
    assert!((za - zb).abs() < 1e-8, "{za} vs {zb}");
}

/// A random sample of B pairs at a γ where γ·sd(R_B) is small gives a
/// posterior close to all pairs': means within 0.2 sd and sds within 15%
/// (B = 4M; a sampling error of the exponent of 0.1 moves the posterior
/// by about that much). The sample is the same for the same seed.
#[test]
fn a_large_random_sample_approximates_all_pairs() {
    let (x, y) = toy(120, 3, 5, 1.0);
    let gamma = 60.0;
    let mut full = LinearEp::new(&x, &y, &[1.0; 3], Form::Primal, Precision::F64).unwrap();
    full.run(
        gamma,
        &EpSettings::default(),
        &Control::new(),
        &mut |_, _| {},
    )
    .unwrap();
    let m = full.all_pairs();
    let s = PairSampling {
        pairs: 4 * m,
        seed: 3,
    };
    let mut lep = LinearEp::with_pairs(
        &x,
        &y,
        &[1.0; 3],
        Form::Primal,
        Precision::F64,
        Some((s, &[])),
    )
    .unwrap();
    assert_eq!(lep.pairs(), 4 * m);
    lep.run(
        gamma,
        &EpSettings::default(),
        &Control::new(),
        &mut |_, _| {},
    )
    .unwrap();
    let (mf, sf, ms, ss) = (full.mean(), full.sd(), lep.mean(), lep.sd());
    for k in 0..3 {
        assert!(
            (mf[k] - ms[k]).abs() < 0.2 * sf[k],
            "mean {k}: {} vs {}",
            mf[k],
            ms[k]
        );
        assert!(
            (ss[k] / sf[k] - 1.0).abs() < 0.15,
            "sd {k}: {} vs {}",
            sf[k],
            ss[k]
        );
    }
    let again = LinearEp::with_pairs(
        &x,
        &y,
        &[1.0; 3],
        Form::Primal,
        Precision::F64,
        Some((s, &[])),
    )
    .unwrap();
    assert_eq!(again.state().sample(), lep.state().sample());
}
