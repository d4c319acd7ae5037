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

/// EP on the rows a sample touches (`PairSample::compact`, what `LinearEp`
/// runs) is EP on all rows with the same pairs: untouched rows add nothing,
/// only the order of the sums changes (means and sds to 1e-9 relative, the
/// same sweeps). Many rows untouched: B = n/2.
#[test]
fn ep_on_the_touched_rows_is_ep_on_all_rows() {
    let (x, y) = toy(400, 5, 8, 1.0);
    let (xp, xn) = split(&x, &y);
    let sample = PairSample::draw(xp.nrows(), xn.nrows(), 200, 4, &[]);
    let (small, tp, tn) = sample.compact();
    assert!(tp.len() < xp.nrows() && tn.len() < xn.nrows());
    assert_eq!(small.len(), sample.len());
    let mut at = 0;
    for (r, &i) in tp.iter().enumerate() {
        let js: Vec<u32> = small
            .row(r)
            .iter()
            .map(|&t| tn[t as usize] as u32)
            .collect();
        assert_eq!(js, sample.row(i), "row {i}");
        at += js.len();
    }
    assert_eq!(at, sample.len());
    let run = |xp: &nalgebra::DMatrix<f64>, xn: &nalgebra::DMatrix<f64>, s: PairSample| {
        let d = Design::new(xp, xn, &[1.0; 5], Form::Primal);
        let mut ep = PairEp::sampled(
            d.zp.clone(),
            d.zn.clone(),
            s,
            d.prior.clone(),
            Precision::F64,
        )
        .unwrap();
        let out = ep
            .run(40.0 / 200.0, &settings(), &Control::new(), &mut |_| {})
            .unwrap();
        (out.sweeps, ep.posterior().unwrap().clone())
    };
    let (a, qa) = run(&xp, &xn, sample.clone());
    let (b, qb) = run(&xp.select_rows(&tp), &xn.select_rows(&tn), small);
    assert_eq!(a, b);
    for k in 0..5 {
        let sd = qa.v[(k, k)].sqrt();
        assert!(
            (qa.m[k] - qb.m[k]).abs() < 1e-9 * sd,
            "{} vs {}",
            qa.m,
            qb.m
        );
        assert!((qb.v[(k, k)].sqrt() / sd - 1.0).abs() < 1e-9);
    }
}

/// The per-row marginals by parallel blocks are the serial products' values
/// exactly (each a row's own sum in the same order; records stay
/// bit-identical whatever the threads): `Z m` as nalgebra's product, u as
/// the row sums of `Z ∘ (Z V)` from the whole GEMM. Rows span several blocks.
#[test]
fn marginals_by_blocks_are_the_serial_products() {
    use super::kernel::Marginals;
    use crate::engine::numerics::linalg::gemm_into;
    use nalgebra::DMatrix;
    let (x, y) = toy(10_000, 7, 9, 1.0);
    let (zp, zn) = split(&x, &y);
    let mut a = DMatrix::from_fn(7, 7, |i, j| ((i * 7 + j) as f64 * 0.37).sin() * 0.1);
    a = &a * a.transpose() + DMatrix::identity(7, 7);
    let q = Posterior {
        m: nalgebra::DVector::from_fn(7, |k, _| (k as f64 * 1.3).cos()),
        v: a,
        log_det_q: 0.0,
        r_v_r: 0.0,
    };
    let mut out = Marginals::zeros(zp.nrows(), zn.nrows(), 7);
    posterior::marginals(&zp, &zn, &q, &mut out);
    for (z, mean, u) in [(&zp, &out.mp, &out.up), (&zn, &out.mn, &out.un)] {
        let want: Vec<f64> = (z * &q.m).iter().copied().collect();
        assert_eq!(mean, &want);
        let mut zv = DMatrix::zeros(z.nrows(), 7);
        gemm_into(1.0, z, false, &q.v, false, 0.0, &mut zv);
        for i in 0..z.nrows() {
            let mut s = 0.0;
            for k in 0..7 {
                s += z[(i, k)] * zv[(i, k)];
            }
            assert_eq!(u[i], s, "row {i}");
        }
    }
}

/// `PairEp::memory_bytes` against what a sampled state holds after passes
/// (its buffers' capacities, the pooled chunk scratch included): within
/// 0.8–1.25 (the estimate assumes up to 4 threads' scratch). Measured peak of
/// the whole run: see BENCHMARKS `ep-1e6-pairs`.
#[test]
fn the_memory_estimate_is_what_a_sampled_state_holds() {
    let (x, y) = toy(8_000, 12, 4, 1.0);
    let (xp, xn) = split(&x, &y);
    let design = Design::new(&xp, &xn, &[1.0; 12], Form::Primal);
    let b = 300_000;
    let sample = PairSample::draw(xp.nrows(), xn.nrows(), b, 7, &[]);
    let mut ep = PairEp::sampled(
        design.zp.clone(),
        design.zn.clone(),
        sample,
        design.prior.clone(),
        Precision::F64,
    )
    .unwrap();
    let g = 50.0 / b as f64;
    for _ in 0..2 {
        ep.time_pass(g, 1.0).unwrap();
    }
    let held = ep.held_bytes() as f64;
    let est = PairEp::memory_bytes(xp.nrows(), xn.nrows(), 12, Precision::F64, Some(b)) as f64;
    assert!(
        (0.8..=1.25).contains(&(est / held)),
        "estimate {est:.3e} vs held {held:.3e}"
    );
}

/// Identical rows found by hashes are the pairs a direct comparison finds
/// (−0 as +0; repeated rows on both sides; a positive with no twin).
#[test]
fn identical_pairs_are_the_equal_rows() {
    use nalgebra::DMatrix;
    let rows = [[1.0, 2.0], [0.0, 3.0], [-0.0, 3.0], [1.0, 2.5], [1.0, 2.0]];
    let xp = DMatrix::from_fn(4, 2, |i, k| rows[[0, 1, 3, 4][i]][k]);
    let xn = DMatrix::from_fn(5, 2, |i, k| rows[[2, 0, 4, 3, 1][i]][k]);
    let got = identical_pairs(&xp, &xn);
    let mut want = Vec::new();
    for i in 0..4 {
        let js: Vec<u32> = (0..5)
            .filter(|&j| (0..2).all(|k| xp[(i, k)] == xn[(j, k)]))
            .map(|j| j as u32)
            .collect();
        assert_eq!(got.row(i), &js[..], "row {i}");
        want.extend(js);
    }
    assert_eq!(got.count(), want.len());
    assert_eq!(got.count(), 2 + 2 + 1 + 2);
}

/// The pass's two layouts of Z_N by rows (the chunks' copies, one shared
/// copy) give the same EP bit for bit; the rule picks the shared copy when
/// negatives recur across chunks (B = 10n) and the chunks' when few pairs
/// share a negative (B = n/5).
#[test]
fn shared_and_per_chunk_rows_give_the_same_ep() {
    let (x, y) = toy(2000, 5, 8, 1.0);
    let (xp, xn) = split(&x, &y);
    let d = Design::new(&xp, &xn, &[1.0; 5], Form::Primal);
    let run = |b: usize, force: Option<bool>| {
        let s = PairSample::draw(xp.nrows(), xn.nrows(), b, 4, &[]);
        let (zp, zn, prior) = (d.zp.clone(), d.zn.clone(), d.prior.clone());
        let mut ep = PairEp::sampled(zp, zn, s, prior, Precision::F64).unwrap();
        let natural = ep.shares_rows();
        if let Some(shared) = force {
            ep.set_shared_rows(shared);
            assert_eq!(ep.shares_rows(), shared);
        }
        let out = ep
            .run(40.0 / b as f64, &settings(), &Control::new(), &mut |_| {})
            .unwrap();
        let q = ep.posterior().unwrap().clone();
        (natural, out.sweeps, ep.sites_vec(), q.m, q.v)
    };
    for (b, natural) in [(20_000, true), (400, false)] {
        let (shared, sweeps, sites, m, v) = run(b, None);
        assert_eq!(shared, natural, "B = {b}");
        let (_, sweeps2, sites2, m2, v2) = run(b, Some(!natural));
        assert_eq!(sweeps, sweeps2);
        assert!(
            sites
                .iter()
                .zip(&sites2)
                .all(|(a, b)| a.to_bits() == b.to_bits())
        );
        assert_eq!((m, v), (m2, v2));
    }
}
