//! E_ρ R_n for a Gaussian ρ = N(m, Σ) of a linear score: the mean over the
//! positive/negative pairs of `Φ(−μ_ij/s_ij)` (μ_ij = (x_i − x_j)ᵀm,
//! s²_ij = (x_i − x_j)ᵀΣ(x_i − x_j); a tie ½), ALGORITHMS.md §7.
//!
//! - `PairPass`: all M = n₊n₋ pairs without a loop over pairs × d: per block of
//!   positive rows `C = (X_P Σ) X_Nᵀ` by GEMM, then the per-pair scalar work (one
//!   Φ and φ per pair, vectorised like EP's site kernel, rows spread over
//!   rayon's threads), and with gradients `K X_N` by GEMM, K the pairs'
//!   ∂ℓ/∂s² — the sums VB's gradients are built from (`vb::pairs`). Blocks,
//!   rows and lane sums are fixed by the data's shape; column sums add rows in
//!   order, so any thread count gives the same bits.
//! - `sampled_gaussian_pair_risk`: the same mean from B pairs drawn uniformly
//!   with replacement, O(B·d) after one O(n·d²) product: what the certificate
//!   uses when M is too large for the pass (`bounds::fits`), with the sample's
//!   sd for its Monte Carlo term.
//!
//! Value only, no method's types: the certificate (`bounds`) and VB both use it.

use nalgebra::DMatrix;
use rayon::prelude::*;

use super::gemm::{View, ViewMut, column_sums, gemm};
use super::isa::{Isa, detected_isa};
use super::normal::{cdf_pdf, rsqrt};
use super::simd::{F64x1, Simd, Two};
#[cfg(target_arch = "x86_64")]
use super::simd::{F64x4x2, F64x8};

/// `s² ≤ DEGENERATE·(scale)` is treated as a = 0: below it the variance is
/// cancellation noise (ALGORITHMS.md §4's rule for near-identical rows).
pub const DEGENERATE: f64 = 1e-10;

/// Pairs per block (C, g_μ and K scratch: 3 × 8 × this bytes).
const BLOCK_PAIRS: usize = 1 << 19;
/// Fewest pairs per rayon task.
const TASK_PAIRS: usize = 4096;

/// The rows of the pair pass split by class, and its scratch.
pub struct PairPass {
    pub xp: DMatrix<f64>,
    pub xn: DMatrix<f64>,
    block_rows: usize,
    c: Vec<f64>,
    gmu: Vec<f64>,
    gv: Vec<f64>,
    isa: Isa,
}

/// One positive row's sums over its pairs: loss, ∂/∂μ, ∂/∂s².
#[derive(Clone, Copy, Default)]
pub struct RowSums {
    pub loss: f64,
    pub gmu: f64,
    pub gv: f64,
}

/// What a pass returns: per positive row its sums; with gradients, per
/// negative row the sums of ∂/∂μ and ∂/∂s² and `K X_N` (n₊ × d).
pub struct PassSums {
    pub rows: Vec<RowSums>,
    pub gmu_col: Vec<f64>,
    pub gv_col: Vec<f64>,
    pub kxn: DMatrix<f64>,
}

impl PassSums {
    /// The mean of the pairs' Φ(−μ_ij/s_ij): E_ρ R_n.
    pub fn value(&self, pairs: usize) -> f64 {
        self.rows.iter().map(|r| r.loss).sum::<f64>() * (1.0 / pairs.max(1) as f64)
    }
}

impl PairPass {
    pub fn new(x: &DMatrix<f64>, y: &[bool]) -> PairPass {
        let pos: Vec<usize> = (0..y.len()).filter(|&i| y[i]).collect();
        let neg: Vec<usize> = (0..y.len()).filter(|&i| !y[i]).collect();
        let (xp, xn) = (x.select_rows(&pos), x.select_rows(&neg));
        let nn = xn.nrows().max(1);
        let block_rows = (BLOCK_PAIRS / nn).clamp(1, xp.nrows().max(1));
        let len = block_rows * nn;
        PairPass {
            xp,
            xn,
            block_rows,
            c: vec![0.0; len],
            gmu: vec![0.0; len],
            gv: vec![0.0; len],
            isa: detected_isa(),
        }
    }

    pub fn pairs(&self) -> usize {
        self.xp.nrows() * self.xn.nrows()
    }

    /// The pass for ρ = N(m, Σ) given `wp = X_P Σ` and `wn = X_N Σ`; with
    /// `grad` also the column sums and `K X_N` (one more GEMM per block).
    pub fn run(&mut self, m: &[f64], wp: &DMatrix<f64>, wn: &DMatrix<f64>, grad: bool) -> PassSums {
        let (np, nn, d) = (self.xp.nrows(), self.xn.nrows(), self.xp.ncols());
        let m = nalgebra::DVector::from_column_slice(m);
        let mp: Vec<f64> = (&self.xp * &m).iter().copied().collect();
        let mn: Vec<f64> = (&self.xn * &m).iter().copied().collect();
        let quad = |w: &DMatrix<f64>, x: &DMatrix<f64>| -> Vec<f64> {
            (0..x.nrows())
                .map(|i| (0..d).map(|k| w[(i, k)] * x[(i, k)]).sum())
                .collect()
        };
        let (up, un) = (quad(wp, &self.xp), quad(wn, &self.xn));
        let mut rows = vec![RowSums::default(); np];
        let mut gmu_col = vec![0.0; nn];
        let mut gv_col = vec![0.0; nn];
        let mut kxn = DMatrix::<f64>::zeros(if grad { np } else { 0 }, d);
        let min_rows = TASK_PAIRS.div_ceil(nn.max(1));
        let isa = self.isa;
        let mut i0 = 0;
        while i0 < np {
            let i1 = (i0 + self.block_rows).min(np);
            let b = i1 - i0;
            let (c, gmu, gv) = (
                &mut self.c[..b * nn],
                &mut self.gmu[..b * nn],
                &mut self.gv[..b * nn],
            );
            gemm(
                1.0,
                View::of(wp).rows(i0, i1),
                View::of(&self.xn).t(),
                0.0,
                ViewMut {
                    data: c,
                    rows: b,
                    cols: nn,
                    rs: nn,
                    cs: 1,
                },
            );
            let (mn, un, mp, up) = (&mn[..], &un[..], &mp[..], &up[..]);
            c.par_chunks(nn)
                .zip(gmu.par_chunks_mut(nn))
                .zip(gv.par_chunks_mut(nn))
                .zip(rows[i0..i1].par_iter_mut())
                .enumerate()
                .with_min_len(min_rows)
                .for_each(|(r, (((c, gm), g2), st))| {
                    *st = row(isa, mp[i0 + r], up[i0 + r], mn, un, c, gm, g2);
                });
            if !grad {
                i0 = i1;
                continue;
            }
            gemm(
                1.0,
                View {
                    data: gv,
                    rows: b,
                    cols: nn,
                    rs: nn,
                    cs: 1,
                },
                View::of(&self.xn),
                0.0,
                ViewMut {
                    data: &mut kxn.as_mut_slice()[i0..],
                    rows: b,
                    cols: d,
                    rs: 1,
                    cs: np,
                },
            );
            column_sums(gmu, gv, b, nn, &mut gmu_col, &mut gv_col);
            i0 = i1;
        }
        PassSums {
            rows,
            gmu_col,
            gv_col,
            kxn,
        }
    }
}

/// E_ρ R_n over all pairs for ρ = N(mean, Σ): the pass without gradients.
pub fn gaussian_pair_risk(x: &DMatrix<f64>, y: &[bool], mean: &[f64], sigma: &DMatrix<f64>) -> f64 {
    let mut pass = PairPass::new(x, y);
    let wp = super::linalg::a_b(&pass.xp, sigma);
    let wn = super::linalg::a_b(&pass.xn, sigma);
    let pairs = pass.pairs();
    pass.run(mean, &wp, &wn, false).value(pairs)
}

/// The mean and sd of `count` i.i.d. values in [0, 1].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SampleMean {
    pub mean: f64,
    pub sd: f64,
    pub count: usize,
}

/// Chan's pooled (count, mean, sum of squared deviations) of chunks, in order.
pub fn pool_chunks(parts: &[(f64, f64, f64)]) -> (f64, f64, f64) {
    let (mut n, mut mean, mut m2) = (0.0, 0.0, 0.0);
    for &(nb, mb, m2b) in parts {
        let tot = n + nb;
        let delta = mb - mean;
        mean += delta * nb / tot;
        m2 += m2b + delta * delta * n * nb / tot;
        n = tot;
    }
    (n, mean, m2)
}

/// E_ρ R_n for ρ = N(mean, L Lᵀ) estimated from `count` pairs drawn uniformly
/// with replacement (a uniform positive, an independent uniform negative):
/// each pair's Φ(−μ_ij/s_ij) is exact, an i.i.d. value in [0, 1] whose mean is
/// E_ρ R_n, so the sample's mean and sd feed a rigorous concentration bound.
/// With Z = X L, s²_ij = ‖z_i − z_j‖² (no cancellation); a pair with
/// s² ≤ DEGENERATE·(‖z_i‖² + ‖z_j‖²) is a tie (½), as in the pass. One member
/// of `pair_sample`'s family (one mean, spread 1).
pub fn sampled_gaussian_pair_risk(
    x: &DMatrix<f64>,
    y: &[bool],
    mean: &[f64],
    l: &DMatrix<f64>,
    count: usize,
    seed: u64,
) -> SampleMean {
    super::pair_sample::sampled_gaussian_pair_risks(x, y, &[mean], l, &[1.0], count, seed)[0]
}

macro_rules! row_variant {
    ($name:ident, $v:ty, $features:literal) => {
        #[cfg(target_arch = "x86_64")]
        #[target_feature(enable = $features)]
        #[allow(clippy::too_many_arguments)]
        unsafe fn $name(
            mp: f64,
            up: f64,
            mn: &[f64],
            un: &[f64],
            c: &[f64],
            gmu: &mut [f64],
            gv: &mut [f64],
        ) -> RowSums {
            row_impl::<$v>(mp, up, mn, un, c, gmu, gv)
        }
    };
}

row_variant!(row_avx512, Two<F64x8>, "avx512f,avx512dq,avx512vl,avx2,fma");
row_variant!(row_avx2, Two<F64x4x2>, "avx2,fma");

#[allow(clippy::too_many_arguments)]
fn row(
    isa: Isa,
    mp: f64,
    up: f64,
    mn: &[f64],
    un: &[f64],
    c: &[f64],
    gmu: &mut [f64],
    gv: &mut [f64],
) -> RowSums {
    match isa {
        #[cfg(target_arch = "x86_64")]
        // SAFETY: `detected_isa` returns Avx512 only when the CPU has these features.
        Isa::Avx512 => unsafe { row_avx512(mp, up, mn, un, c, gmu, gv) },
        #[cfg(target_arch = "x86_64")]
        // SAFETY: as above, for AVX2 and FMA.
        Isa::Avx2 => unsafe { row_avx2(mp, up, mn, un, c, gmu, gv) },
        _ => row_impl::<F64x1<false>>(mp, up, mn, un, c, gmu, gv),
    }
}

/// `(ℓ, ∂ℓ/∂μ, ∂ℓ/∂s²)` of `V::W` pairs: ℓ = Φ(−μ/s), a tie (s² at the
/// cancellation floor) ½ with no gradient.
#[inline(always)]
fn lanes<V: Simd>(mp: V, up: V, mn: V, un: V, c: V) -> (V, V, V) {
    let tot = up + un;
    let s2 = tot - (c + c);
    let floor = tot * V::splat(DEGENERATE);
    let deg = s2.le(floor);
    let r = rsqrt(s2.max(floor).max(V::splat(1e-300)));
    let mu = mp - mn;
    let (cdf, pdf) = cdf_pdf(-(mu * r));
    let zero = V::splat(0.0);
    (
        V::select(deg, V::splat(0.5), cdf),
        V::select(deg, zero, -(pdf * r)),
        V::select(deg, zero, V::splat(0.5) * pdf * mu * r * r * r),
    )
}

#[inline(always)]
fn row_impl<V: Simd>(
    mp: f64,
    up: f64,
    mn: &[f64],
    un: &[f64],
    c: &[f64],
    gmu: &mut [f64],
    gv: &mut [f64],
) -> RowSums {
    let n = c.len();
    let (vmp, vup) = (V::splat(mp), V::splat(up));
    let zero = V::splat(0.0);
    let (mut al, mut am, mut av) = (zero, zero, zero);
    let mut j = 0;
    while j + V::W <= n {
        let (l, g1, g2) = lanes::<V>(
            vmp,
            vup,
            V::load(&mn[j..]),
            V::load(&un[j..]),
            V::load(&c[j..]),
        );
        g1.store(&mut gmu[j..]);
        g2.store(&mut gv[j..]);
        al = al + l;
        am = am + g1;
        av = av + g2;
        j += V::W;
    }
    let lanes_sum = |v: V| {
        let mut a = [0.0; 16];
        v.to_array(&mut a);
        a[..V::W].iter().sum::<f64>()
    };
    let mut out = RowSums {
        loss: lanes_sum(al),
        gmu: lanes_sum(am),
        gv: lanes_sum(av),
    };
    if j < n {
        // The tail through the same vector code on a padded copy.
        let t = n - j;
        let pad = |s: &[f64]| {
            let mut a = [0.0; 16];
            a[..t].copy_from_slice(&s[j..]);
            a
        };
        let (pmn, pun, pc) = (pad(mn), pad(un), pad(c));
        let (l, g1, g2) = lanes::<V>(vmp, vup, V::load(&pmn), V::load(&pun), V::load(&pc));
        let (mut bl, mut b1, mut b2) = ([0.0; 16], [0.0; 16], [0.0; 16]);
        l.to_array(&mut bl);
        g1.to_array(&mut b1);
        g2.to_array(&mut b2);
        gmu[j..].copy_from_slice(&b1[..t]);
        gv[j..].copy_from_slice(&b2[..t]);
        out.loss += bl[..t].iter().sum::<f64>();
        out.gmu += b1[..t].iter().sum::<f64>();
        out.gv += b2[..t].iter().sum::<f64>();
    }
    out
}
