//! The tiled block products (p above 32, `kernel::tiled`) against the slow
//! obvious EP and against the matrixmultiply path they replaced.

use super::tests::{fit_pair_ep, naive_ep, split, toy};
use super::*;

/// At p = 40 the fast engine (tiled products) follows the naive iterates:
/// explicit a_ij, Q as a sum of outer products.
#[test]
fn tiled_products_follow_the_naive_iterates() {
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

/// Rows per class that are not multiples of the kernel's 4-row quads, 32-row
/// groups or 16-column panels, several chunks of columns (p = 70: 288
/// columns a chunk), identical rows (non-sites), several blocks, f32 and f64
/// sites: the tiled products give the matrixmultiply path's fixed point (the
/// sums only run in another order), any thread count the same bits.
#[test]
fn tiled_products_agree_with_the_gemm_path() {
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
    let run = |gemm: bool, prec: Precision, block: Option<usize>, threads: usize| {
        let s = EpSettings::default();
        fit_pair_ep((&xp, &xn), &excl, prec, &s, Some(threads), |ep| {
            if let Some(r) = block {
                ep.set_block_rows(r);
            }
            ep.set_gemm_products(gemm);
        })
    };
    for prec in [Precision::F64, Precision::F32] {
        let (qg, zg, sg) = run(true, prec, None, 2);
        let (qt, zt, st) = run(false, prec, Some(45), 2);
        assert_eq!(sg, st, "{prec:?}: sweeps");
        for (k, sd) in qg.sd().into_iter().enumerate() {
            let dm = (qg.m[k] - qt.m[k]).abs() / sd;
            assert!(dm < 1e-9, "{prec:?}: mean {k} off by {dm} sd");
            assert!((qt.v[(k, k)].sqrt() / sd - 1.0).abs() < 1e-9);
        }
        assert!((zg - zt).abs() < 1e-8 * zg.abs(), "{prec:?}: {zg} vs {zt}");
        let (q1, z1, _) = run(false, prec, Some(45), 1);
        assert_eq!((q1.m, z1), (qt.m, zt), "the thread count changed the bits");
    }
}

/// The ISA variants of the tiled kernel: AVX2 and AVX-512 the same bits, the
/// portable one the same fixed point.
#[test]
fn tiled_instruction_sets_agree() {
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
