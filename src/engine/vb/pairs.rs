//! The expected AUC risk over all M positive/negative pairs and its gradients,
//! without a loop over pairs × d (ALGORITHMS.md §7, aggregated as §4 does):
//! per block of positive rows, `C = (X_P Σ) X_Nᵀ` by GEMM, then the per-pair
//! scalar work (one Φ and φ per pair, vectorised like EP's site kernel, rows
//! spread over rayon's threads), then `K X_N` by GEMM, K the pairs' ∂ℓ/∂s².
//! With `g_μ` the pairs' ∂ℓ/∂μ:
//! `∂E/∂m = (X_Pᵀ g_μ1 − X_Nᵀ g_μᵀ1)/M`,
//! `∂E/∂Σ = (X_Pᵀ diag(K1) X_P + X_Nᵀ diag(Kᵀ1) X_N − X_Pᵀ(K X_N) − (·)ᵀ)/M`.
//! Determinism: blocks, rows and lane sums are fixed by the data's shape;
//! column sums add rows in order, so any thread count gives the same bits.

use nalgebra::DMatrix;
use rayon::prelude::*;

use super::family::{Family, Params, SigmaGrad};
use super::loss::{DEGENERATE, RiskEval};
use crate::engine::numerics::gemm::column_sums;
use crate::engine::numerics::gemm::{View, ViewMut, gemm};
use crate::engine::numerics::isa::{Isa, detected_isa};
use crate::engine::numerics::normal::{cdf_pdf, rsqrt};
use crate::engine::numerics::simd::{F64x1, Simd, Two};
#[cfg(target_arch = "x86_64")]
use crate::engine::numerics::simd::{F64x4x2, F64x8};

/// Pairs per block (C, g_μ and K scratch: 3 × 8 × this bytes).
const BLOCK_PAIRS: usize = 1 << 19;
/// Fewest pairs per rayon task.
const TASK_PAIRS: usize = 4096;

/// The data of the pair pass (whitened rows split by class) and its scratch.
pub struct PairRisk {
    pub xp: DMatrix<f64>,
    pub xn: DMatrix<f64>,
    block_rows: usize,
    c: Vec<f64>,
    gmu: Vec<f64>,
    gv: Vec<f64>,
    isa: Isa,
}

#[derive(Clone, Copy, Default)]
struct RowSums {
    loss: f64,
    gmu: f64,
    gv: f64,
}

impl PairRisk {
    pub fn new(x: &DMatrix<f64>, y: &[bool]) -> PairRisk {
        let pos: Vec<usize> = (0..y.len()).filter(|&i| y[i]).collect();
        let neg: Vec<usize> = (0..y.len()).filter(|&i| !y[i]).collect();
        let (xp, xn) = (x.select_rows(&pos), x.select_rows(&neg));
        let nn = xn.nrows().max(1);
        let block_rows = (BLOCK_PAIRS / nn).clamp(1, xp.nrows().max(1));
        let len = block_rows * nn;
        PairRisk {
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

    /// E_ρ[R_n] (ties ½) and its gradients in m and Σ.
    pub fn eval(&mut self, p: &Params) -> RiskEval {
        self.pass(p, true)
    }

    /// E_ρ[R_n] alone (one GEMM per block instead of two).
    pub fn value(&mut self, p: &Params) -> f64 {
        self.pass(p, false).value
    }

    fn pass(&mut self, p: &Params, grad: bool) -> RiskEval {
        let (np, nn, d) = (self.xp.nrows(), self.xn.nrows(), self.xp.ncols());
        let m = nalgebra::DVector::from_column_slice(p.mean());
        let mp: Vec<f64> = (&self.xp * &m).iter().copied().collect();
        let mn: Vec<f64> = (&self.xn * &m).iter().copied().collect();
        let wp = p.apply_rows(&self.xp);
        let wn = p.apply_rows(&self.xn);
        let quad = |w: &DMatrix<f64>, x: &DMatrix<f64>| -> Vec<f64> {
            (0..x.nrows())
                .map(|i| (0..d).map(|k| w[(i, k)] * x[(i, k)]).sum())
                .collect()
        };
        let (up, un) = (quad(&wp, &self.xp), quad(&wn, &self.xn));
        let mut rows = vec![RowSums::default(); np];
        let mut gmu_col = vec![0.0; nn];
        let mut gv_col = vec![0.0; nn];
        let mut kxn = DMatrix::<f64>::zeros(np, d);
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
                View::of(&wp).rows(i0, i1),
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
        let inv = 1.0 / (np * nn).max(1) as f64;
        let value = rows.iter().map(|r| r.loss).sum::<f64>() * inv;
        if !grad {
            return RiskEval {
                value,
                grad_m: Vec::new(),
                grad_sigma: SigmaGrad::zeros(p.family, 0),
            };
        }
        let gmu_row: Vec<f64> = rows.iter().map(|r| r.gmu).collect();
        let gv_row: Vec<f64> = rows.iter().map(|r| r.gv).collect();
        let tv =
            |x: &DMatrix<f64>, v: &[f64]| x.transpose() * nalgebra::DVector::from_column_slice(v);
        let grad_m = (tv(&self.xp, &gmu_row) - tv(&self.xn, &gmu_col)) * inv;
        // Σ_i w_i x_ik x_il (or its diagonal), and the cross term X_Pᵀ (K X_N).
        let grad_sigma = match p.family {
            Family::Iso | Family::Diag => {
                let diag: Vec<f64> = (0..d)
                    .map(|k| {
                        let a: f64 = (0..np).map(|i| gv_row[i] * self.xp[(i, k)].powi(2)).sum();
                        let b: f64 = (0..nn).map(|j| gv_col[j] * self.xn[(j, k)].powi(2)).sum();
                        let x: f64 = (0..np).map(|i| self.xp[(i, k)] * kxn[(i, k)]).sum();
                        (a + b - 2.0 * x) * inv
                    })
                    .collect();
                if p.family == Family::Iso {
                    SigmaGrad::Trace(diag.iter().sum())
                } else {
                    SigmaGrad::Diag(diag)
                }
            }
            Family::Full => {
                let weighted = |x: &DMatrix<f64>, w: &[f64]| {
                    let mut xw = x.clone();
                    for (i, mut r) in xw.row_iter_mut().enumerate() {
                        r *= w[i];
                    }
                    crate::engine::numerics::linalg::at_b(x, &xw)
                };
                let cross = crate::engine::numerics::linalg::at_b(&self.xp, &kxn);
                let g = weighted(&self.xp, &gv_row) + weighted(&self.xn, &gv_col)
                    - &cross
                    - cross.transpose();
                SigmaGrad::Full(g * inv)
            }
        };
        RiskEval {
            value,
            grad_m: grad_m.iter().copied().collect(),
            grad_sigma,
        }
    }
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
