//! One pass over all pair sites (ALGORITHMS.md §4), block by block of positive
//! rows: `C = Z_P V Z_Nᵀ` for the block by GEMM, then the element-wise site work
//! row by row on rayon's threads (vectorised: AVX-512 or AVX2 + FMA when the CPU
//! has them, detected once), then the block's share of `K Z_N` by GEMM and of
//! the row and column sums of K and h; up to `SMALL_P` coordinates both
//! products run inside the row tasks instead. Nothing is allocated per pass.
//!
//! Determinism: blocks, rows and the 8-lane partial sums are fixed by the data's
//! shape, never by the thread count; column sums add rows in order. The AVX-512,
//! AVX2 and FMA-less paths differ only in the last bits of the FMA-less one.

use nalgebra::DMatrix;
use rayon::iter::Either;
use rayon::prelude::*;

/// Calls `$imp::<V, S, EV>(args)` with V the widest vectors `isa` has (each
/// copy compiled with its target features, so the `inline(always)` kernel
/// is vectorised for it) and EV = `evidence`, a constant in the kernel.
macro_rules! simd_dispatch {
    ($isa:expr, $ev:expr, $imp:ident::<S>($($a:ident: $t:ty),* $(,)?) -> $r:ty) => {{
        use $crate::engine::{ep::store::SiteScalar as St, numerics::simd as v};
        #[cfg(target_arch = "x86_64")]
        #[target_feature(enable = "avx512f,avx512dq,avx512vl,avx2,fma")]
        #[allow(clippy::too_many_arguments)]
        unsafe fn avx512<S: St, const EV: bool>($($a: $t),*) -> $r {
            $imp::<v::Two<v::F64x8>, S, EV>($($a),*)
        }
        #[cfg(target_arch = "x86_64")]
        #[target_feature(enable = "avx2,fma")]
        #[allow(clippy::too_many_arguments)]
        unsafe fn avx2<S: St, const EV: bool>($($a: $t),*) -> $r {
            $imp::<v::Two<v::F64x4x2>, S, EV>($($a),*)
        }
        match ($isa, $ev) {
            #[cfg(target_arch = "x86_64")]
            // SAFETY: `detected_isa` returns Avx512 only when the CPU has these features.
            (Isa::Avx512, true) => unsafe { avx512::<S, true>($($a),*) },
            #[cfg(target_arch = "x86_64")]
            // SAFETY: as above.
            (Isa::Avx512, false) => unsafe { avx512::<S, false>($($a),*) },
            #[cfg(target_arch = "x86_64")]
            // SAFETY: as above, for AVX2 and FMA.
            (Isa::Avx2, true) => unsafe { avx2::<S, true>($($a),*) },
            #[cfg(target_arch = "x86_64")]
            // SAFETY: as above, for AVX2 and FMA.
            (Isa::Avx2, false) => unsafe { avx2::<S, false>($($a),*) },
            (_, true) => $imp::<v::F64x1<false>, S, true>($($a),*),
            (_, false) => $imp::<v::F64x1<false>, S, false>($($a),*),
        }
    }};
}

mod row;
pub mod sampled;

pub use row::site_throughput;
use row::{Cols, RowOut, RowQ, Small, update_row};

use super::site::StepFactor;
use super::store::{SiteBuffers, SiteScalar};
use crate::engine::numerics::gemm::{View, ViewMut, column_sums, gemm};
/// The kernels dispatch on it (re-exported for the flavours that pick one).
pub use crate::engine::numerics::isa::{Isa, detected_isa};

/// Sites per block (the block's C, K and h scratch: 3 × 8 × this bytes = 24 MiB).
/// Large blocks pay: matrixmultiply packs Z_N again for every block's two GEMMs.
const BLOCK_SITES: usize = 1 << 20;
/// Up to this many coordinates the block products run inside the row tasks
/// (p FMAs per site, vectorised, no GEMM threads competing with rayon's);
/// above it, by GEMM. A speed crossover, measured across p and n on AVX2 + FMA
/// (no AVX-512; row ep-small-p23): it rises with n (short rows favour GEMM)
/// and is flat within noise over p ≈ 16–24 at the larger n; above 20, GEMM
/// was at parity or faster at every n measured.
const SMALL_P: usize = 20;
/// Fewest sites per rayon task.
const TASK_SITES: usize = 4096;

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
}

impl Marginals {
    pub fn zeros(n_pos: usize, n_neg: usize, p: usize) -> Marginals {
        Marginals {
            mp: vec![0.0; n_pos],
            up: vec![0.0; n_pos],
            mn: vec![0.0; n_neg],
            un: vec![0.0; n_neg],
            zv_p: DMatrix::zeros(n_pos, p),
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
    /// Small p: each row group's column sums of K and h (2 n− per group).
    colpart: Vec<f64>,
    /// `SMALL_P`, or another limit set by the tests that compare the paths.
    small_p: usize,
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
            colpart: Vec::new(),
            small_p: SMALL_P,
        }
    }

    /// The row tasks' products up to `p` coordinates (tests compare them with the GEMM's).
    #[cfg(test)]
    pub fn set_small_p(&mut self, p: usize) {
        self.small_p = p;
    }
}

/// Bytes of a `Workspace::new(n_pos, n_neg)`: the block's C, K and h.
pub fn workspace_bytes(n_pos: usize, n_neg: usize) -> usize {
    let rows = (BLOCK_SITES / n_neg.max(1)).clamp(1, n_pos.max(1));
    let groups = rows.div_ceil(group_rows(rows, n_neg));
    3 * 8 * rows * n_neg + 48 * n_pos + 16 * groups * n_neg
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
    /// `cur ← prev + f·(cur − prev)`: the last step scaled by f (f > 1:
    /// over-relaxed, to extrapolate a geometric convergence).
    Relax(f64),
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

impl Op {
    /// Shrink's and Relax's f in `cur ← prev + f·(cur − prev)`.
    fn factor(self) -> f64 {
        if let Op::Relax(f) = self { f } else { 0.5 }
    }

    /// The site work's evidence flag and η (Check: evidence, no step).
    fn site_work(self) -> (bool, f64) {
        match self {
            Op::Update { eta, evidence } => (evidence, eta),
            _ => (true, 0.0),
        }
    }
}

/// The sites an op reads, and those it writes: Update reads `cur` and writes
/// the free buffer, Shrink and Relax read `prev` and rewrite `cur`, Check and
/// Aggregate only read `cur`.
#[allow(clippy::type_complexity)]
fn io<S: SiteScalar>(
    sites: &mut SiteBuffers<S>,
    op: Op,
) -> (&[S], &[S], Option<(&mut [S], &mut [S])>) {
    let (read, write) = match op {
        Op::Update { .. } => (sites.cur, Some(sites.next())),
        Op::Check | Op::Aggregate => (sites.cur, None),
        Op::Shrink | Op::Relax(_) => (
            sites.prev.expect("shrink needs a previous state"),
            Some(sites.cur),
        ),
    };
    match write {
        Some(w) => {
            let (k, h, ko, ho) = sites.read_write(read, w);
            (k, h, Some((ko, ho)))
        }
        None => {
            let (k, h) = sites.get(read);
            (k, h, None)
        }
    }
}

/// The pass's sums over its rows (in row order); with `agg`, each row's sums
/// of K and h into it.
fn total(rows: &[RowStats], agg: Option<&mut Aggregates>) -> PassStats {
    let mut stats = PassStats::default();
    let (mut negative, mut skipped, mut bad) = (0.0, 0.0, 0.0);
    for st in rows {
        stats.sum_log_c += st.log_c;
        negative += st.negative;
        skipped += st.skipped;
        bad += st.bad;
    }
    if let Some(agg) = agg {
        for (i, st) in rows.iter().enumerate() {
            agg.k_row[i] = st.k;
            agg.h_row[i] = st.h;
        }
    }
    stats.negative = negative as usize;
    stats.skipped = skipped as usize;
    stats.bad = bad as usize;
    stats
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
    let products = matches!(op, Op::Update { .. } | Op::Check);
    let small = p <= ws.small_p && products;
    if small {
        ws.znt.clear();
        for k in 0..p {
            ws.znt.extend_from_slice(input.zn.column(k).as_slice());
        }
    }
    // (Zipped with the rows even when unused: a shorter slice would cut the rows.)
    ws.zvp.resize(ws.block_rows * p.max(1), 0.0);
    ws.g.resize(ws.block_rows * p.max(1), 0.0);
    if small && matches!(op, Op::Update { .. }) {
        let groups = ws.block_rows.div_ceil(group_rows(ws.block_rows, nn));
        ws.colpart.resize(groups * 2 * nn, 0.0);
    }
    let (step, isa) = (input.step, input.isa);
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
            colpart,
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
        } else if products {
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
        let (kin, hin, out) = io(sites, op);
        let (kin, hin) = (&kin[lo..hi], &hin[lo..hi]);
        let out = out.map(|(k, h)| (&mut k[lo..hi], &mut h[lo..hi]));
        match op {
            Op::Update { eta, evidence } if small => {
                // Groups of `gr` rows per task; each row's K and h in f64 only
                // in a scratch row (the group's first row of the block buffers,
                // hot in cache), added to the group's column sums in the task:
                // no block-wide f64 copy of the sites written and read again.
                let (kout, hout) = out.expect("Update writes sites");
                let (gr, pw) = (group_rows(ws.block_rows, nn), p);
                let gs = gr * nn;
                let parts = &mut colpart[..b.div_ceil(gr) * 2 * nn];
                c.par_chunks_mut(gs)
                    .zip(kin.par_chunks(gs))
                    .zip(hin.par_chunks(gs))
                    .zip(kout.par_chunks_mut(gs))
                    .zip(hout.par_chunks_mut(gs))
                    .zip(kb.par_chunks_mut(gs))
                    .zip(hb.par_chunks_mut(gs))
                    .zip(rows.par_chunks_mut(gr))
                    .zip(gb[..b * pw].par_chunks_mut(gr * pw))
                    .zip(parts.par_chunks_mut(2 * nn))
                    .enumerate()
                    .for_each(
                        |(t, (((((((((c, ki), hi), ko), ho), k64), h64), st), g), part))| {
                            let (pk, ph) = part.split_at_mut(nn);
                            pk.fill(0.0);
                            ph.fill(0.0);
                            let (k64, h64) = (&mut k64[..nn], &mut h64[..nn]);
                            for (r, st) in st.iter_mut().enumerate() {
                                let row = r * nn..(r + 1) * nn;
                                let i = t * gr + r;
                                *st = update_row(
                                    isa,
                                    evidence,
                                    &row_in(i),
                                    &cols,
                                    &mut c[row.clone()],
                                    &ki[row.clone()],
                                    &hi[row.clone()],
                                    Some(RowOut {
                                        k: &mut ko[row.clone()],
                                        h: &mut ho[row],
                                        k64: &mut *k64,
                                        h64: &mut *h64,
                                    }),
                                    Some(Small {
                                        zv: &zvp[i * pw..(i + 1) * pw],
                                        znt,
                                        g: Some(&mut g[r * pw..(r + 1) * pw]),
                                        sums: Some((&mut *pk, &mut *ph)),
                                    }),
                                    step,
                                    eta,
                                );
                            }
                        },
                    );
            }
            _ => {
                // Row by row: Check (small p: its products in the row task),
                // Shrink, Relax, Aggregate, and large p's Update (its products
                // from the GEMM in `c`).
                let outs = match out {
                    Some((ko, ho)) => {
                        Either::Left(ko.par_chunks_mut(nn).zip(ho.par_chunks_mut(nn)).map(Some))
                    }
                    None => Either::Right((0..b).into_par_iter().map(|_| None)),
                };
                c.par_chunks_mut(nn)
                    .zip(kin.par_chunks(nn))
                    .zip(hin.par_chunks(nn))
                    .zip(outs)
                    .zip(kb.par_chunks_mut(nn))
                    .zip(hb.par_chunks_mut(nn))
                    .zip(rows.par_iter_mut())
                    .zip(zvp.par_chunks(p.max(1)))
                    .enumerate()
                    .with_min_len(min_rows)
                    .for_each(|(r, (((((((c, ki), hi), out), k64), h64), st), zv))| {
                        let sm = small.then_some(Small {
                            zv,
                            znt,
                            g: None,
                            sums: None,
                        });
                        let q = row_in(r);
                        *st = row::run(op, isa, step, &q, &cols, c, ki, hi, out, k64, h64, sm);
                    });
            }
        }
        if fills_agg && small {
            for r in 0..b {
                for kk in 0..p {
                    agg.g[(i0 + r, kk)] = gb[r * p + kk];
                }
            }
            let groups = b.div_ceil(group_rows(ws.block_rows, nn));
            add_group_sums(&ws.colpart, groups, nn, &mut agg.k_col, &mut agg.h_col);
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
    total(&ws.rows, fills_agg.then_some(agg))
}

/// Rows per task (and per column-sum group) of the small-p update: at least
/// `TASK_SITES` sites, and at most ~`GROUPS` groups per block, so that the
/// groups' column sums are a small fraction of the block. Fixed by the shape,
/// never by the thread count (determinism).
fn group_rows(block_rows: usize, nn: usize) -> usize {
    const GROUPS: usize = 32;
    block_rows
        .div_ceil(GROUPS)
        .max(TASK_SITES.div_ceil(nn.max(1)))
        .clamp(1, block_rows.max(1))
}

/// Adds the groups' column sums (`parts`: per group K's then h's n− sums) to
/// `k_col` and `h_col`, groups in order, columns split over threads.
fn add_group_sums(parts: &[f64], groups: usize, nn: usize, k_col: &mut [f64], h_col: &mut [f64]) {
    const SLAB: usize = 512;
    k_col
        .par_chunks_mut(SLAB)
        .zip(h_col.par_chunks_mut(SLAB))
        .enumerate()
        .for_each(|(s, (kc, hc))| {
            let j0 = s * SLAB;
            for part in parts.chunks(2 * nn).take(groups) {
                let (pk, ph) = part.split_at(nn);
                for (a, v) in kc.iter_mut().zip(&pk[j0..]) {
                    *a += v;
                }
                for (a, v) in hc.iter_mut().zip(&ph[j0..]) {
                    *a += v;
                }
            }
        });
}
