//! One pass over all pair sites (ALGORITHMS.md §4), block by block of positive
//! rows: `C = Z_P V Z_Nᵀ` for the block by GEMM, then the element-wise site work
//! row by row on rayon's threads (vectorised: AVX-512 or AVX2 + FMA when the CPU
//! has them, detected once), then the block's share of `K Z_N` by GEMM and of
//! the row and column sums of K and h. Nothing is allocated per pass.
//!
//! Determinism: blocks, rows and the 8-lane partial sums are fixed by the data's
//! shape, never by the thread count; column sums add rows in order. The AVX-512,
//! AVX2 and FMA-less paths differ only in the last bits of the FMA-less one.

use std::sync::OnceLock;

use nalgebra::DMatrix;
use rayon::prelude::*;

use super::gemm::{View, ViewMut, gemm};
use super::simd::{F64x1, Simd, Two};
#[cfg(target_arch = "x86_64")]
use super::simd::{F64x4x2, F64x8};
use super::site::{LaneConsts, StepFactor, pair_lane};
use super::store::{SiteBuffers, SiteScalar};

/// Sites per block (the block's C, K and h scratch: 3 × 8 × this bytes = 24 MiB).
/// Large blocks pay: matrixmultiply packs Z_N again for every block's two
/// GEMMs; DNA (1.04 M pairs, p = 180) ran 27% faster in one block than in
/// eight of 2^17 (docs/BENCHMARKS.md), EEG (p = 14) was unchanged.
const BLOCK_SITES: usize = 1 << 20;
/// Up to this many coordinates the block products run inside the row tasks
/// (p FMAs per site, vectorised, no GEMM threads competing with rayon's);
/// above it, through matrixmultiply.
const SMALL_P: usize = 32;
/// Fewest sites per rayon task.
const TASK_SITES: usize = 4096;

/// Instruction set of the element-wise kernels.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Isa {
    Avx512,
    Avx2,
    Plain,
}

impl Isa {
    pub fn name(self) -> &'static str {
        match self {
            Isa::Avx512 => "avx512",
            Isa::Avx2 => "avx2+fma",
            Isa::Plain => "portable",
        }
    }
}

/// The best instruction set of this CPU (`PACAUC_ISA=plain|avx2|avx512` lowers it).
pub fn detected_isa() -> Isa {
    static ISA: OnceLock<Isa> = OnceLock::new();
    *ISA.get_or_init(|| {
        #[cfg(target_arch = "x86_64")]
        let best = if std::is_x86_feature_detected!("avx512f")
            && std::is_x86_feature_detected!("avx512dq")
            && std::is_x86_feature_detected!("avx512vl")
            && std::is_x86_feature_detected!("fma")
        {
            Isa::Avx512
        } else if std::is_x86_feature_detected!("avx2") && std::is_x86_feature_detected!("fma") {
            Isa::Avx2
        } else {
            Isa::Plain
        };
        #[cfg(not(target_arch = "x86_64"))]
        let best = Isa::Plain;
        match std::env::var("PACAUC_ISA").as_deref() {
            Ok("plain") => Isa::Plain,
            Ok("avx2") if best != Isa::Plain => Isa::Avx2,
            _ => best,
        }
    })
}

/// Positive/negative pairs that are not sites (identical rows, a = 0), as
/// sorted negative indices per positive row.
#[derive(Debug, Clone, Default)]
pub struct Excluded {
    offsets: Vec<usize>,
    cols: Vec<u32>,
}

impl Excluded {
    /// From (positive, negative) index pairs.
    pub fn new(n_pos: usize, mut pairs: Vec<(usize, usize)>) -> Excluded {
        pairs.sort_unstable();
        pairs.dedup();
        let mut offsets = vec![0; n_pos + 1];
        for &(i, _) in &pairs {
            offsets[i + 1] += 1;
        }
        for i in 0..n_pos {
            offsets[i + 1] += offsets[i];
        }
        Excluded {
            offsets,
            cols: pairs.iter().map(|&(_, j)| j as u32).collect(),
        }
    }
    pub fn none(n_pos: usize) -> Excluded {
        Excluded::new(n_pos, Vec::new())
    }
    pub fn row(&self, i: usize) -> &[u32] {
        &self.cols[self.offsets[i]..self.offsets[i + 1]]
    }
    pub fn count(&self) -> usize {
        self.cols.len()
    }
}

/// What q says about every row: `mp = Z_P m`, `up_i = z_iᵀ V z_i` (positives),
/// the same for negatives, and `Z_P V` for the block GEMMs.
#[derive(Debug, Clone)]
pub struct Marginals {
    pub mp: Vec<f64>,
    pub up: Vec<f64>,
    pub mn: Vec<f64>,
    pub un: Vec<f64>,
    pub zv_p: DMatrix<f64>,
    /// `Z_N V` (scratch of the rebuild).
    pub zv_n: DMatrix<f64>,
}

impl Marginals {
    pub fn zeros(n_pos: usize, n_neg: usize, p: usize) -> Marginals {
        Marginals {
            mp: vec![0.0; n_pos],
            up: vec![0.0; n_pos],
            mn: vec![0.0; n_neg],
            un: vec![0.0; n_neg],
            zv_p: DMatrix::zeros(n_pos, p),
            zv_n: DMatrix::zeros(n_neg, p),
        }
    }
}

/// Sums over a pass's sites.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct PassStats {
    /// Σ log C_ij over the checked state's non-degenerate sites.
    pub sum_log_c: f64,
    /// Sites with K < 0 in the checked state.
    pub negative: usize,
    /// Degenerate sites (σ² ≤ 1e-10 (u_i + u_j)), left unchanged.
    pub skipped: usize,
    /// Sites whose cavity is invalid (τ₋ ≤ 0): the checked state is rejected.
    pub bad: usize,
}

/// What rebuilding Q and r needs of a state: `K Z_N`, row and column sums.
#[derive(Debug, Clone)]
pub struct Aggregates {
    pub k_row: Vec<f64>,
    pub k_col: Vec<f64>,
    pub h_row: Vec<f64>,
    pub h_col: Vec<f64>,
    /// K Z_N (n+ × p).
    pub g: DMatrix<f64>,
}

impl Aggregates {
    pub fn zeros(n_pos: usize, n_neg: usize, p: usize) -> Aggregates {
        Aggregates {
            k_row: vec![0.0; n_pos],
            k_col: vec![0.0; n_neg],
            h_row: vec![0.0; n_pos],
            h_col: vec![0.0; n_neg],
            g: DMatrix::zeros(n_pos, p),
        }
    }
}

#[derive(Debug, Clone, Copy, Default)]
struct RowStats {
    k: f64,
    h: f64,
    log_c: f64,
    negative: f64,
    skipped: f64,
    bad: f64,
}

/// Scratch of the passes, allocated once per problem shape.
pub struct Workspace {
    block_rows: usize,
    c: Vec<f64>,
    k: Vec<f64>,
    h: Vec<f64>,
    rows: Vec<RowStats>,
    /// Small p: Z_Nᵀ (p × n−, row-major), the block's rows of Z_P V and of K Z_N.
    znt: Vec<f64>,
    zvp: Vec<f64>,
    g: Vec<f64>,
}

impl Workspace {
    pub fn new(n_pos: usize, n_neg: usize) -> Workspace {
        Workspace::with_block_rows(n_pos, n_neg, BLOCK_SITES / n_neg.max(1))
    }

    /// Blocks of `block_rows` positive rows (at least one, at most all).
    pub fn with_block_rows(n_pos: usize, n_neg: usize, block_rows: usize) -> Workspace {
        let block_rows = block_rows.clamp(1, n_pos.max(1));
        let len = block_rows * n_neg;
        Workspace {
            block_rows,
            c: vec![0.0; len],
            k: vec![0.0; len],
            h: vec![0.0; len],
            rows: vec![RowStats::default(); n_pos],
            znt: Vec::new(),
            zvp: Vec::new(),
            g: Vec::new(),
        }
    }
}

/// What a pass does.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Op {
    /// Check `cur` and write the damped update into the free buffer; `evidence`:
    /// also sum the sites' log C.
    Update { eta: f64, evidence: bool },
    /// Check `cur` only (convergence candidate).
    Check,
    /// `cur ← (prev + cur)/2`: the rejected step again with η halved.
    Shrink,
    /// Recompute the aggregates of `cur` (after Z changed).
    Aggregate,
}

/// The data of a pass.
pub struct PassInput<'a> {
    pub zn: &'a DMatrix<f64>,
    pub marg: &'a Marginals,
    pub excluded: &'a Excluded,
    pub step: StepFactor,
    pub isa: Isa,
}

/// Runs one pass. Update, Shrink and Aggregate fill `agg` with the aggregates
/// of the state they leave in the written buffer (`next` for Update, `cur` else).
pub(crate) fn pass<S: SiteScalar>(
    sites: &mut SiteBuffers<S>,
    input: &PassInput<'_>,
    op: Op,
    ws: &mut Workspace,
    agg: &mut Aggregates,
) -> PassStats {
    let (n_pos, nn) = (sites.n_pos, sites.n_neg);
    let fills_agg = op != Op::Check;
    if fills_agg {
        agg.k_col.fill(0.0);
        agg.h_col.fill(0.0);
    }
    let min_rows = TASK_SITES.div_ceil(nn.max(1));
    let p = input.zn.ncols();
    let small = p <= SMALL_P && matches!(op, Op::Update { .. } | Op::Check);
    if small {
        ws.znt.clear();
        for k in 0..p {
            ws.znt.extend_from_slice(input.zn.column(k).as_slice());
        }
    }
    // (Zipped with the rows even when unused: a shorter slice would cut the rows.)
    ws.zvp.resize(ws.block_rows * p.max(1), 0.0);
    ws.g.resize(ws.block_rows * p.max(1), 0.0);
    let mut i0 = 0;
    while i0 < n_pos {
        let i1 = (i0 + ws.block_rows).min(n_pos);
        let b = i1 - i0;
        let (lo, hi) = (i0 * nn, i1 * nn);
        let Workspace {
            c,
            k,
            h,
            rows,
            znt,
            zvp,
            g,
            ..
        } = ws;
        let (c, kb, hb, rows) = (
            &mut c[..b * nn],
            &mut k[..b * nn],
            &mut h[..b * nn],
            &mut rows[i0..i1],
        );
        let (znt, zvp, gb) = (&znt[..], &mut zvp[..], &mut g[..]);
        if small {
            for r in 0..b {
                for kk in 0..p {
                    zvp[r * p + kk] = input.marg.zv_p[(i0 + r, kk)];
                }
            }
        } else if matches!(op, Op::Update { .. } | Op::Check) {
            gemm(
                1.0,
                View::of(&input.marg.zv_p).rows(i0, i1),
                View::of(input.zn).t(),
                0.0,
                ViewMut {
                    data: c,
                    rows: b,
                    cols: nn,
                    rs: nn,
                    cs: 1,
                },
            );
        }
        let row_in = |r: usize| RowQ {
            mp: input.marg.mp[i0 + r],
            up: input.marg.up[i0 + r],
            excl: input.excluded.row(i0 + r),
        };
        let cols = Cols {
            mn: &input.marg.mn,
            un: &input.marg.un,
        };
        match op {
            Op::Update { eta, evidence } => {
                let (cur, next) = (sites.cur, sites.next());
                let (kin, hin, kout, hout) = sites.read_write(cur, next);
                let pw = p.max(1);
                c.par_chunks_mut(nn)
                    .zip(kin[lo..hi].par_chunks(nn))
                    .zip(hin[lo..hi].par_chunks(nn))
                    .zip(kout[lo..hi].par_chunks_mut(nn))
                    .zip(hout[lo..hi].par_chunks_mut(nn))
                    .zip(kb.par_chunks_mut(nn))
                    .zip(hb.par_chunks_mut(nn))
                    .zip(rows.par_iter_mut())
                    .zip(zvp.par_chunks(pw))
                    .zip(gb.par_chunks_mut(pw))
                    .enumerate()
                    .with_min_len(min_rows)
                    .for_each(
                        |(r, (((((((((c, ki), hi), ko), ho), k64), h64), st), zv), g))| {
                            let out = RowOut {
                                k: ko,
                                h: ho,
                                k64,
                                h64,
                            };
                            let sm = small.then_some(Small {
                                zv,
                                znt,
                                g: Some(g),
                            });
                            *st = update_row(
                                input.isa,
                                evidence,
                                &row_in(r),
                                &cols,
                                c,
                                ki,
                                hi,
                                Some(out),
                                sm,
                                input.step,
                                eta,
                            );
                        },
                    );
            }
            Op::Check => {
                let (kin, hin) = sites.get(sites.cur);
                let pw = p.max(1);
                c.par_chunks_mut(nn)
                    .zip(kin[lo..hi].par_chunks(nn))
                    .zip(hin[lo..hi].par_chunks(nn))
                    .zip(rows.par_iter_mut())
                    .zip(zvp.par_chunks(pw))
                    .enumerate()
                    .with_min_len(min_rows)
                    .for_each(|(r, ((((c, ki), hi), st), zv))| {
                        let sm = small.then_some(Small { zv, znt, g: None });
                        *st = update_row::<S>(
                            input.isa,
                            true,
                            &row_in(r),
                            &cols,
                            c,
                            ki,
                            hi,
                            None,
                            sm,
                            input.step,
                            0.0,
                        );
                    });
            }
            Op::Shrink => {
                let prev = sites.prev.expect("shrink needs a previous state");
                let cur = sites.cur;
                let (kp, hp, kc, hc) = sites.read_write(prev, cur);
                kp[lo..hi]
                    .par_chunks(nn)
                    .zip(hp[lo..hi].par_chunks(nn))
                    .zip(kc[lo..hi].par_chunks_mut(nn))
                    .zip(hc[lo..hi].par_chunks_mut(nn))
                    .zip(kb.par_chunks_mut(nn))
                    .zip(hb.par_chunks_mut(nn))
                    .zip(rows.par_iter_mut())
                    .with_min_len(min_rows)
                    .for_each(|((((((kp, hp), kc), hc), k64), h64), st)| {
                        *st = shrink_row(kp, hp, kc, hc, k64, h64);
                    });
            }
            Op::Aggregate => {
                let (kc, hc) = sites.get(sites.cur);
                kc[lo..hi]
                    .par_chunks(nn)
                    .zip(hc[lo..hi].par_chunks(nn))
                    .zip(kb.par_chunks_mut(nn))
                    .zip(hb.par_chunks_mut(nn))
                    .zip(rows.par_iter_mut())
                    .with_min_len(min_rows)
                    .for_each(|((((kc, hc), k64), h64), st)| {
                        *st = load_row(kc, hc, k64, h64);
                    });
            }
        }
        if fills_agg && small {
            for r in 0..b {
                for kk in 0..p {
                    agg.g[(i0 + r, kk)] = gb[r * p + kk];
                }
            }
            column_sums(kb, hb, b, nn, &mut agg.k_col, &mut agg.h_col);
        } else if fills_agg {
            let p = agg.g.ncols();
            gemm(
                1.0,
                View {
                    data: kb,
                    rows: b,
                    cols: nn,
                    rs: nn,
                    cs: 1,
                },
                View::of(input.zn),
                0.0,
                ViewMut {
                    data: &mut agg.g.as_mut_slice()[i0..],
                    rows: b,
                    cols: p,
                    rs: 1,
                    cs: n_pos,
                },
            );
            column_sums(kb, hb, b, nn, &mut agg.k_col, &mut agg.h_col);
        }
        i0 = i1;
    }
    let mut stats = PassStats::default();
    let (mut negative, mut skipped, mut bad) = (0.0, 0.0, 0.0);
    for (i, st) in ws.rows.iter().enumerate() {
        stats.sum_log_c += st.log_c;
        negative += st.negative;
        skipped += st.skipped;
        bad += st.bad;
        if fills_agg {
            agg.k_row[i] = st.k;
            agg.h_row[i] = st.h;
        }
    }
    stats.negative = negative as usize;
    stats.skipped = skipped as usize;
    stats.bad = bad as usize;
    stats
}

/// Adds the block's rows to the column sums, columns split over threads
/// (each column sums its rows in order).
fn column_sums(kb: &[f64], hb: &[f64], b: usize, nn: usize, k_col: &mut [f64], h_col: &mut [f64]) {
    const SLAB: usize = 512;
    k_col
        .par_chunks_mut(SLAB)
        .zip(h_col.par_chunks_mut(SLAB))
        .enumerate()
        .for_each(|(s, (kc, hc))| {
            let j0 = s * SLAB;
            for r in 0..b {
                let (kr, hr) = (
                    &kb[r * nn + j0..][..kc.len()],
                    &hb[r * nn + j0..][..hc.len()],
                );
                for (a, v) in kc.iter_mut().zip(kr) {
                    *a += v;
                }
                for (a, v) in hc.iter_mut().zip(hr) {
                    *a += v;
                }
            }
        });
}

struct RowQ<'a> {
    mp: f64,
    up: f64,
    excl: &'a [u32],
}

struct Cols<'a> {
    mn: &'a [f64],
    un: &'a [f64],
}

/// The small-p block products done in the row task: `c = Z_N (V z_i)` before
/// the update, `g = (new K row) Z_N` after it.
struct Small<'a> {
    zv: &'a [f64],
    znt: &'a [f64],
    g: Option<&'a mut [f64]>,
}

struct RowOut<'a, S> {
    k: &'a mut [S],
    h: &'a mut [S],
    k64: &'a mut [f64],
    h64: &'a mut [f64],
}

macro_rules! row_variant {
    ($name:ident, $v:ty, $features:literal) => {
        #[cfg(target_arch = "x86_64")]
        #[target_feature(enable = $features)]
        #[allow(clippy::too_many_arguments)]
        unsafe fn $name<S: SiteScalar, const EV: bool>(
            q: &RowQ<'_>,
            cols: &Cols<'_>,
            c: &mut [f64],
            kin: &[S],
            hin: &[S],
            out: Option<RowOut<'_, S>>,
            small: Option<Small<'_>>,
            step: StepFactor,
            eta: f64,
        ) -> RowStats {
            update_row_small::<$v, S, EV>(q, cols, c, kin, hin, out, small, step, eta)
        }
    };
}

row_variant!(
    update_row_avx512,
    Two<F64x8>,
    "avx512f,avx512dq,avx512vl,avx2,fma"
);
row_variant!(update_row_avx2, Two<F64x4x2>, "avx2,fma");

#[allow(clippy::too_many_arguments)]
fn update_row<S: SiteScalar>(
    isa: Isa,
    evidence: bool,
    q: &RowQ<'_>,
    cols: &Cols<'_>,
    c: &mut [f64],
    kin: &[S],
    hin: &[S],
    out: Option<RowOut<'_, S>>,
    small: Option<Small<'_>>,
    step: StepFactor,
    eta: f64,
) -> RowStats {
    macro_rules! go {
        ($f:ident) => {
            if evidence {
                $f::<S, true>(q, cols, c, kin, hin, out, small, step, eta)
            } else {
                $f::<S, false>(q, cols, c, kin, hin, out, small, step, eta)
            }
        };
    }
    type P = F64x1<false>;
    match isa {
        #[cfg(target_arch = "x86_64")]
        // SAFETY: `detected_isa` returns Avx512 only when the CPU has these features.
        Isa::Avx512 => unsafe { go!(update_row_avx512) },
        #[cfg(target_arch = "x86_64")]
        // SAFETY: as above, for AVX2 and FMA.
        Isa::Avx2 => unsafe { go!(update_row_avx2) },
        _ => {
            if evidence {
                update_row_small::<P, S, true>(q, cols, c, kin, hin, out, small, step, eta)
            } else {
                update_row_small::<P, S, false>(q, cols, c, kin, hin, out, small, step, eta)
            }
        }
    }
}

/// The row with its small-p products, if any (see [`Small`]).
#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn update_row_small<V: Simd, S: SiteScalar, const EV: bool>(
    q: &RowQ<'_>,
    cols: &Cols<'_>,
    c: &mut [f64],
    kin: &[S],
    hin: &[S],
    mut out: Option<RowOut<'_, S>>,
    small: Option<Small<'_>>,
    step: StepFactor,
    eta: f64,
) -> RowStats {
    let nn = c.len();
    if let Some(sm) = &small {
        // c_j = Σ_k (Z_P V)_ik (Z_N)_jk, k in order (each lane and the tail alike).
        let mut j = 0;
        while j + V::W <= nn {
            let mut acc = V::splat(0.0);
            for (k, &a) in sm.zv.iter().enumerate() {
                acc = V::splat(a).fma(V::load(&sm.znt[k * nn + j..]), acc);
            }
            acc.store(&mut c[j..]);
            j += V::W;
        }
        for (jj, cj) in c.iter_mut().enumerate().skip(j) {
            let mut acc = V::splat(0.0);
            for (k, &a) in sm.zv.iter().enumerate() {
                acc = V::splat(a).fma(V::splat(sm.znt[k * nn + jj]), acc);
            }
            let mut t = [0.0; 16];
            acc.to_array(&mut t);
            *cj = t[0];
        }
    }
    let stats = update_row_impl::<V, S, EV>(
        q,
        cols,
        c,
        kin,
        hin,
        out.as_mut().map(|o| RowOut {
            k: &mut *o.k,
            h: &mut *o.h,
            k64: &mut *o.k64,
            h64: &mut *o.h64,
        }),
        step,
        eta,
    );
    if let (Some(sm), Some(o)) = (small, out.as_ref())
        && let Some(g) = sm.g
    {
        // g_k = Σ_j K_ij (Z_N)_jk: lane partial sums, then lanes and tail in order.
        for (k, gk) in g.iter_mut().enumerate() {
            let row = &sm.znt[k * nn..(k + 1) * nn];
            let mut acc = V::splat(0.0);
            let mut j = 0;
            while j + V::W <= nn {
                acc = V::load(&o.k64[j..]).fma(V::load(&row[j..]), acc);
                j += V::W;
            }
            let mut t = [0.0; 16];
            acc.to_array(&mut t);
            let mut sum: f64 = t[..V::W].iter().sum();
            for (kv, zv) in o.k64[j..].iter().zip(&row[j..]) {
                sum += kv * zv;
            }
            *gk = sum;
        }
    }
    stats
}

/// Lane-wise partial sums (fixed lane order: vectorised and deterministic).
#[derive(Clone, Copy)]
struct Acc<V> {
    k: V,
    h: V,
    log_c: V,
    negative: V,
    skipped: V,
    bad: V,
}

impl<V: Simd> Acc<V> {
    #[inline(always)]
    fn zero() -> Self {
        let z = V::splat(0.0);
        Acc {
            k: z,
            h: z,
            log_c: z,
            negative: z,
            skipped: z,
            bad: z,
        }
    }

    #[inline(always)]
    fn total(&self) -> RowStats {
        let s = |v: V| {
            let mut a = [0.0; 16];
            v.to_array(&mut a);
            a[..V::W].iter().sum::<f64>()
        };
        RowStats {
            k: s(self.k),
            h: s(self.h),
            log_c: s(self.log_c),
            negative: s(self.negative),
            skipped: s(self.skipped),
            bad: s(self.bad),
        }
    }
}

/// One row: vectors of `V::W` sites; a short tail goes through the same vector
/// code on a padded copy (a scalar tail cost as much as the rest of a short row).
#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn update_row_impl<V: Simd, S: SiteScalar, const EV: bool>(
    q: &RowQ<'_>,
    cols: &Cols<'_>,
    c: &mut [f64],
    kin: &[S],
    hin: &[S],
    mut out: Option<RowOut<'_, S>>,
    step: StepFactor,
    eta: f64,
) -> RowStats {
    let n = c.len();
    let cv = LaneConsts::<V>::new(step, eta);
    let mut acc = Acc::<V>::zero();
    let mut start = 0;
    for e in q.excl.iter().map(|&e| e as usize).chain(std::iter::once(n)) {
        // Sites start..e, then the non-site e (a = 0: its K, h stay 0).
        let mut j = start;
        while j + V::W <= e {
            lanes::<V, S, EV, false>(q, cols, &*c, kin, hin, out.as_mut(), &cv, j, V::W, &mut acc);
            j += V::W;
        }
        if j < e {
            tail::<V, S, EV>(
                q,
                cols,
                &*c,
                kin,
                hin,
                out.as_mut(),
                &cv,
                j,
                e - j,
                &mut acc,
            );
        }
        if e < n
            && let Some(o) = out.as_mut()
        {
            o.k[e] = S::default();
            o.h[e] = S::default();
            o.k64[e] = 0.0;
            o.h64[e] = 0.0;
        }
        start = e + 1;
    }
    acc.total()
}

/// The last `r < V::W` sites from column `j`, padded with a harmless site.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn tail<V: Simd, S: SiteScalar, const EV: bool>(
    q: &RowQ<'_>,
    cols: &Cols<'_>,
    c: &[f64],
    kin: &[S],
    hin: &[S],
    out: Option<&mut RowOut<'_, S>>,
    cs: &LaneConsts<V>,
    j: usize,
    r: usize,
    acc: &mut Acc<V>,
) {
    const P: usize = 16;
    let (mut c_p, mut mn_p, mut un_p) = ([0.0; P], [0.0; P], [1.0; P]);
    let (mut k_p, mut h_p) = ([S::default(); P], [S::default(); P]);
    c_p[..r].copy_from_slice(&c[j..j + r]);
    mn_p[..r].copy_from_slice(&cols.mn[j..j + r]);
    un_p[..r].copy_from_slice(&cols.un[j..j + r]);
    k_p[..r].copy_from_slice(&kin[j..j + r]);
    h_p[..r].copy_from_slice(&hin[j..j + r]);
    let padded = Cols {
        mn: &mn_p,
        un: &un_p,
    };
    match out {
        Some(o) => {
            let (mut ko, mut ho, mut k64, mut h64) =
                ([S::default(); P], [S::default(); P], [0.0; P], [0.0; P]);
            let mut po = RowOut {
                k: &mut ko,
                h: &mut ho,
                k64: &mut k64,
                h64: &mut h64,
            };
            lanes::<V, S, EV, true>(q, &padded, &c_p, &k_p, &h_p, Some(&mut po), cs, 0, r, acc);
            o.k[j..j + r].copy_from_slice(&ko[..r]);
            o.h[j..j + r].copy_from_slice(&ho[..r]);
            o.k64[j..j + r].copy_from_slice(&k64[..r]);
            o.h64[j..j + r].copy_from_slice(&h64[..r]);
        }
        None => lanes::<V, S, EV, true>(q, &padded, &c_p, &k_p, &h_p, None, cs, 0, r, acc),
    }
}

const IOTA: [f64; 16] = [
    0., 1., 2., 3., 4., 5., 6., 7., 8., 9., 10., 11., 12., 13., 14., 15.,
];

/// `V::W` consecutive sites from column `j`.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn lanes<V: Simd, S: SiteScalar, const EV: bool, const PARTIAL: bool>(
    q: &RowQ<'_>,
    cols: &Cols<'_>,
    c: &[f64],
    kin: &[S],
    hin: &[S],
    out: Option<&mut RowOut<'_, S>>,
    cs: &LaneConsts<V>,
    j: usize,
    valid: usize,
    acc: &mut Acc<V>,
) {
    let cij = V::load(&c[j..]);
    let u_sum = V::splat(q.up) + V::load(&cols.un[j..]);
    let mu = V::splat(q.mp) - V::load(&cols.mn[j..]);
    let k = S::vload::<V>(&kin[j..]);
    let h = S::vload::<V>(&hin[j..]);
    let o = pair_lane::<V, EV>(mu, u_sum - (cij + cij), u_sum, k, h, cs);
    // The sums describe the stored (possibly rounded) sites.
    let (kq, hq) = (S::vround(o.k), S::vround(o.h));
    let (one, zero) = (V::splat(1.0), V::splat(0.0));
    let neg = V::mand(k.lt(zero), V::mnot(o.degenerate));
    if PARTIAL {
        // Only the first `valid` lanes count (a padded tail).
        let live = V::load(&IOTA).lt(V::splat(valid as f64));
        let keep = |v: V| V::select(live, v, zero);
        acc.k = acc.k + keep(kq);
        acc.h = acc.h + keep(hq);
        acc.log_c = acc.log_c + keep(o.log_c);
        acc.negative = acc.negative + V::select(V::mand(live, neg), one, zero);
        acc.skipped = acc.skipped + V::select(V::mand(live, o.degenerate), one, zero);
        acc.bad = acc.bad + V::select(V::mand(live, o.bad), one, zero);
    } else {
        acc.k = acc.k + kq;
        acc.h = acc.h + hq;
        acc.log_c = acc.log_c + o.log_c;
        acc.negative = acc.negative + V::select(neg, one, zero);
        acc.skipped = acc.skipped + V::select(o.degenerate, one, zero);
        acc.bad = acc.bad + V::select(o.bad, one, zero);
    }
    if let Some(o) = out {
        S::vstore(kq, &mut o.k[j..]);
        S::vstore(hq, &mut o.h[j..]);
        kq.store(&mut o.k64[j..]);
        hq.store(&mut o.h64[j..]);
    }
}

fn shrink_row<S: SiteScalar>(
    kp: &[S],
    hp: &[S],
    kc: &mut [S],
    hc: &mut [S],
    k64: &mut [f64],
    h64: &mut [f64],
) -> RowStats {
    let mut st = RowStats::default();
    for j in 0..kc.len() {
        let k = S::from_f64(0.5 * (kp[j].to_f64() + kc[j].to_f64()));
        let h = S::from_f64(0.5 * (hp[j].to_f64() + hc[j].to_f64()));
        kc[j] = k;
        hc[j] = h;
        k64[j] = k.to_f64();
        h64[j] = h.to_f64();
        st.k += k64[j];
        st.h += h64[j];
    }
    st
}

fn load_row<S: SiteScalar>(kc: &[S], hc: &[S], k64: &mut [f64], h64: &mut [f64]) -> RowStats {
    let mut st = RowStats::default();
    for j in 0..kc.len() {
        k64[j] = kc[j].to_f64();
        h64[j] = hc[j].to_f64();
        st.k += k64[j];
        st.h += h64[j];
    }
    st
}

/// Nanoseconds per site update of the element-wise kernel alone (one thread,
/// rows of 1024 synthetic sites in cache, best of `reps`): the benchmark's
/// measure of the site work without GEMMs or threading.
pub fn site_throughput(isa: Isa, evidence: bool, reps: usize) -> f64 {
    const N: usize = 1024;
    let mut r = crate::engine::rng::stream(7, &[]);
    let mut nrm = || crate::engine::rng::normal(&mut r);
    let mut c: Vec<f64> = (0..N).map(|_| 0.3 * nrm()).collect();
    let mn: Vec<f64> = (0..N).map(|_| nrm()).collect();
    let un: Vec<f64> = (0..N).map(|_| 1.0 + 0.1 * nrm().abs()).collect();
    let kin: Vec<f64> = (0..N).map(|_| 0.01 * nrm()).collect();
    let hin: Vec<f64> = (0..N).map(|_| 0.01 * nrm()).collect();
    let (mut ko, mut ho, mut k64, mut h64) =
        (vec![0.0; N], vec![0.0; N], vec![0.0; N], vec![0.0; N]);
    let q = RowQ {
        mp: 0.5,
        up: 1.2,
        excl: &[],
    };
    let cols = Cols { mn: &mn, un: &un };
    let step = StepFactor::new(1e-3);
    let mut best = f64::INFINITY;
    let mut sink = 0.0;
    for _ in 0..reps {
        let t = std::time::Instant::now();
        for _ in 0..64 {
            let out = RowOut {
                k: &mut ko,
                h: &mut ho,
                k64: &mut k64,
                h64: &mut h64,
            };
            sink += update_row(
                isa,
                evidence,
                &q,
                &cols,
                &mut c,
                &kin,
                &hin,
                Some(out),
                None,
                step,
                0.7,
            )
            .k;
        }
        best = best.min(t.elapsed().as_secs_f64());
    }
    std::hint::black_box(sink);
    best * 1e9 / (64 * N) as f64
}
