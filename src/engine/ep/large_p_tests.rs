//! The block products for p above `SMALL_P` (by GEMM) against the slow
//! obvious EP and against the row tasks' products of the small-p path.

use super::tests::{fit_pair_ep, naive_ep, split, toy};
use super::*;

/// At p = 40 the fast engine (GEMM products) follows the naive iterates:
/// explicit a_ij, Q as a sum of outer products.
#[test]
fn gemm_products_follow_the_naive_iterates() {
    let (x, y) = toy(44, 40, 23, 1.0);
    let s = EpSettings {
        tol: 1e-8,
        extrapolate: false,
        ..EpSettings::default()
    };
    let (xp, xn) = split(&x, &y);
    let none = Excluded::none(xp.nrows());
    let (q, z, sweeps_fast) = fit_pair_ep((&xp, &xn), &none, Precision::F64, &s, None, |_| {});
    let (m, v, log_z, sweeps) = naive_ep(&x, &y, 1.0, 44.0, &s);
    assert_eq!(sweeps_fast, sweeps);
    assert!((&q.m - &m).amax() < 1e-10, "means {} vs {}", q.m, m);
    assert!((&q.v - &v).amax() < 1e-10);
    let dz = z - log_z;
    assert!(dz.abs() < 1e-9, "log Z off by {dz}");
}

/// Rows per class that are not multiples of the row groups or of the
/// vectors' lanes, identical rows (non-sites), several blocks, f32 and f64
/// sites, p = 70: the GEMM products give the fixed point of the row tasks'
/// products (the sums only run in another order), any thread count the same
/// bits.
#[test]
fn gemm_products_agree_with_the_row_products() {
    let d = 70;
    let (mut x, mut y) = toy(700, d, 29, 1.5);
    // Two identical positive/negative rows.
    for (a, b) in [(3, 5), (10, 600)] {
        let row = x.row(a).into_owned();
        x.set_row(b, &row);
        y[b] = !y[a];
    }
    let (xp, xn) = split(&x, &y);
    assert!(xn.nrows() > 300 && xn.nrows() % 16 != 0 && xp.nrows() % 32 != 0);
    let excl = identical_pairs(&xp, &xn);
    assert_eq!(excl.count(), 2);
    let run = |rows_products: bool, prec: Precision, block: Option<usize>, threads: usize| {
        let s = EpSettings::default();
        fit_pair_ep((&xp, &xn), &excl, prec, &s, Some(threads), |ep| {
            if let Some(r) = block {
                ep.set_block_rows(r);
            }
            if rows_products {
                ep.set_small_p(d);
            }
        })
    };
    for prec in [Precision::F64, Precision::F32] {
        let (qr, zr, sr) = run(true, prec, None, 2);
        let (qg, zg, sg) = run(false, prec, Some(45), 2);
        assert_eq!(sr, sg, "{prec:?}: sweeps");
        for (k, sd) in qr.sd().into_iter().enumerate() {
            let dm = (qr.m[k] - qg.m[k]).abs() / sd;
            assert!(dm < 1e-9, "{prec:?}: mean {k} off by {dm} sd");
            assert!((qg.v[(k, k)].sqrt() / sd - 1.0).abs() < 1e-9);
        }
        assert!((zr - zg).abs() < 1e-8 * zr.abs(), "{prec:?}: {zr} vs {zg}");
        let (q1, z1, _) = run(false, prec, Some(45), 1);
        assert_eq!((q1.m, z1), (qg.m, zg), "the thread count changed the bits");
    }
}

/// The ISA variants of the site work beside the GEMM products: AVX2 and
/// AVX-512 the same bits, the portable one the same fixed point.
#[test]
fn large_p_instruction_sets_agree() {
    let d = 36;
    let (x, y) = toy(150, d, 31, 1.0);
    let (xp, xn) = split(&x, &y);
    let none = Excluded::none(xp.nrows());
    let run = |isa: Option<Isa>| {
        let s = EpSettings::default();
        let (q, z, _) = fit_pair_ep((&xp, &xn), &none, Precision::F64, &s, None, |ep| {
            if let Some(i) = isa {
                ep.set_isa(i);
            }
        });
        (q.m, z)
    };
    let (m1, z1) = run(None);
    let (mp, zp) = run(Some(Isa::Plain));
    assert!((&m1 - &mp).amax() < 1e-9 && (z1 - zp).abs() < 1e-9);
    if kernel::detected_isa() == Isa::Avx512 {
        assert_eq!(run(Some(Isa::Avx2)), (m1, z1));
    }
}
