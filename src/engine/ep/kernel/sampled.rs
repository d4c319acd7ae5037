//! One pass over the sites of a sample of pairs (`pairs::PairSample`; ALGORITHMS.md §14):
//! the same element-wise site work as the dense pass (`update_row`), on each
//! positive row's sampled negatives gathered into a compact row. The block
//! products become per-pair dot products: `C_ij = (Z_P V)_i · z_j` before the
//! update, `(K Z_N)_i = Σ_j K_ij z_j` after it, column sums by scatter.
//!
//! Determinism: rows are split into a fixed number of chunks (by the data's
//! shape, never by the thread count); each chunk sums its rows in order into
//! its own column sums, which are then added chunk by chunk. A chunk's column
//! sums are kept only for the negatives its pairs touch (a dense n− buffer per
//! chunk was 32 copies of n−: 2.9 GB at 10⁷ rows); the sums are the same,
//! since adding an untouched chunk's 0.0 changes no value.

use rayon::prelude::*;

use super::row::{self, Cols, RowQ};
use super::{Aggregates, Excluded, Marginals, Op, PassStats, RowStats, io, total};
use crate::engine::ep::site::StepFactor;
use crate::engine::ep::store::{SiteBuffers, SiteScalar};
use crate::engine::numerics::linalg::column_blocks;
use crate::engine::pairs::PairSample;

use super::Isa;

/// Chunks of positive rows (at most; fewer when there are fewer rows).
const CHUNKS: usize = 32;

/// The chunks' copies of Z_N are kept while they hold at most this many
/// times n− rows; beyond, one shared copy. Per chunk its rows are contiguous
/// (fewer cache and TLB misses: the choice at 10⁷ rows × 4·10⁶ pairs, ≈ 1.3
/// times n−); when negatives recur across chunks the copies cost memory.
const SHARED_ABOVE: f64 = 2.0;

/// Pairs ahead whose rows are prefetched: the pass reads a negative's row,
/// its marginals and the positive's row at scattered addresses (at 10⁷ rows
/// each pair waited on memory, ≈ 400 ns a pair a sweep); the loads of the
/// pairs ahead are issued early. A hint only: no value changes.
const AHEAD: usize = 16;

/// Asks for the cache lines of `x` (a hint: never faults, changes no value).
#[inline(always)]
fn prefetch(x: &[f64]) {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::{_MM_HINT_T0, _mm_prefetch};
        let (a, n) = (x.as_ptr() as *const i8, std::mem::size_of_val(x));
        let mut off = 0;
        while off < n {
            // SAFETY: a prefetch is a hint that does not access memory
            // architecturally (no fault, whatever the address); the address
            // is inside `x` anyway.
            #[allow(unused_unsafe)]
            unsafe {
                _mm_prefetch::<_MM_HINT_T0>(a.add(off))
            };
            off += 64;
        }
        // The last line when `x` starts mid-line.
        if n > 0 {
            #[allow(unused_unsafe)]
            // SAFETY: as above; `a + n − 1` is the last byte of `x`.
            unsafe {
                _mm_prefetch::<_MM_HINT_T0>(a.add(n - 1))
            };
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = x;
}

/// The sample, its non-sites and Z_N by rows.
#[derive(Debug, Clone)]
pub struct SampledLayout {
    pub sample: PairSample,
    /// Per positive row, the positions in its sample row whose pair has
    /// identical rows (a = 0: not a site).
    pub excluded: Excluded,
    /// Z_N by rows (row-major) for the pass: per chunk (concatenated), the
    /// rows its pairs touch in the order of `touched`, read forward, never
    /// at random in an n− × p table (at 10⁷ rows each pair waited on a
    /// cache and TLB miss there); or one shared copy of all n− rows when the
    /// chunks' copies would hold many more rows (`SHARED_ABOVE`).
    zc: Vec<f64>,
    /// First row in `zc` of each chunk's touched negatives; `None`: `zc` is
    /// the shared copy, row j is negative j.
    zc_first: Option<Vec<usize>>,
    p: usize,
    /// First row of each chunk, and one past the last.
    bounds: Vec<usize>,
    /// Per chunk, the negatives its pairs touch (sorted, distinct).
    touched: Vec<Vec<u32>>,
    /// Per chunk (concatenated), its pairs (indices from the chunk's first)
    /// sorted by negative: the pass reads Z_N and the negatives' marginals
    /// forward instead of at random (the sampled pass was bound by those
    /// cache misses), while every sum keeps its order.
    order: Vec<u32>,
    /// Per sampled pair, its positive row.
    pair_row: Vec<u32>,
}

impl SampledLayout {
    /// `identical`: the (positive, negative) pairs with identical rows.
    pub fn new(sample: PairSample, identical: &Excluded, zn: &nalgebra::DMatrix<f64>) -> Self {
        let n_pos = sample.n_pos();
        let mut pairs = Vec::new();
        for i in 0..n_pos {
            let same = identical.row(i);
            if same.is_empty() {
                continue;
            }
            for (k, j) in sample.row(i).iter().enumerate() {
                if same.binary_search(j).is_ok() {
                    pairs.push((i, k));
                }
            }
        }
        let chunks = CHUNKS.min(n_pos).max(1);
        let bounds: Vec<usize> = (0..=chunks).map(|c| c * n_pos / chunks).collect();
        let mut touched = Vec::with_capacity(chunks);
        let mut order = Vec::with_capacity(sample.len());
        let mut pair_row = vec![0u32; sample.len()];
        for i in 0..n_pos {
            let a = sample.row_start(i);
            pair_row[a..a + sample.row(i).len()].fill(i as u32);
        }
        // Each chunk's order on the thread pool (the keys are distinct: the
        // same order whatever the threads).
        let per_chunk: Vec<(Vec<u32>, Vec<u32>)> = (0..chunks)
            .into_par_iter()
            .map(|c| {
                let (a, b) = (sample.row_start(bounds[c]), sample.row_start(bounds[c + 1]));
                let js = sample.row_range(a, b);
                let mut o: Vec<u32> = (0..js.len() as u32).collect();
                o.sort_unstable_by_key(|&t| ((js[t as usize] as u64) << 32) | t as u64);
                let mut t: Vec<u32> = o.iter().map(|&k| js[k as usize]).collect();
                t.dedup();
                (o, t)
            })
            .collect();
        for (o, t) in per_chunk {
            touched.push(t);
            order.extend(o);
        }
        let mut me = SampledLayout {
            excluded: Excluded::new(n_pos, pairs),
            sample,
            zc: Vec::new(),
            zc_first: None,
            p: 0,
            bounds,
            touched,
            order,
            pair_row,
        };
        me.set_rows(zn);
        me
    }

    /// New rows Z_N (same pairs): each chunk's copy of its touched rows, or
    /// one shared copy when the chunks' copies would exceed `SHARED_ABOVE`
    /// times n− rows (10⁶ rows × 4·10⁶ pairs: every negative in ≈ 5 chunks,
    /// 3.7·10⁶ copied rows against 7.5·10⁵). The same values either way.
    pub fn set_rows(&mut self, zn: &nalgebra::DMatrix<f64>) {
        let total: usize = self.touched.iter().map(Vec::len).sum();
        let shared = total as f64 > SHARED_ABOVE * zn.nrows() as f64;
        self.set_rows_as(zn, shared);
    }

    /// `set_rows` with the layout forced (`shared`: one copy of Z_N).
    pub(crate) fn set_rows_as(&mut self, zn: &nalgebra::DMatrix<f64>, shared: bool) {
        let p = zn.ncols();
        self.p = p;
        self.zc = Vec::new(); // the old copy freed before the new one
        if shared {
            // Read at scattered rows by every chunk: huge pages spare a TLB
            // miss per pair.
            self.zc = crate::engine::numerics::huge_pages::vec_with_capacity(zn.nrows() * p);
            self.zc.resize(zn.nrows() * p, 0.0);
            for k in 0..p {
                for (j, &v) in zn.column(k).iter().enumerate() {
                    self.zc[j * p + k] = v;
                }
            }
            self.zc_first = None;
            return;
        }
        let total: usize = self.touched.iter().map(Vec::len).sum();
        self.zc = vec![0.0; total * p];
        let mut first = Vec::with_capacity(self.touched.len());
        let mut parts = Vec::with_capacity(self.touched.len());
        let (mut row, mut rest) = (0, &mut self.zc[..]);
        for t in &self.touched {
            first.push(row);
            let (part, r) = std::mem::take(&mut rest).split_at_mut(t.len() * p);
            parts.push(part);
            rest = r;
            row += t.len();
        }
        // The chunks' copies on the thread pool, row by row (contiguous writes;
        // the touched rows ascend, so each column is read forward).
        let (zs, n) = (zn.as_slice(), zn.nrows());
        parts
            .into_par_iter()
            .zip(self.touched.par_iter())
            .for_each(|(part, t)| {
                for (dst, &j) in part.chunks_exact_mut(p).zip(t) {
                    for (k, v) in dst.iter_mut().enumerate() {
                        *v = zs[k * n + j as usize];
                    }
                }
            });
        self.zc_first = Some(first);
    }

    /// The row of negative `j` in the shared copy (None: the chunks' copies).
    #[inline(always)]
    fn z_shared(&self, j: usize) -> Option<&[f64]> {
        self.zc_first
            .is_none()
            .then(|| &self.zc[j * self.p..(j + 1) * self.p])
    }

    /// The row of negative `j`, chunk `c`'s `slot`-th touched negative.
    #[inline(always)]
    fn z(&self, c: usize, slot: usize, j: u32) -> &[f64] {
        let r = match &self.zc_first {
            Some(first) => first[c] + slot,
            None => j as usize,
        };
        &self.zc[r * self.p..(r + 1) * self.p]
    }

    /// Rows the copies of Z_N hold for `b` pairs over `n_neg` negatives:
    /// the chunks' expected distinct negatives (each chunk draws b/chunks
    /// of n_neg), or n_neg when that is above `SHARED_ABOVE`·n_neg.
    pub fn copied_rows(b: usize, n_pos: usize, n_neg: usize) -> usize {
        let chunks = CHUNKS.min(n_pos).max(1) as f64;
        let n = n_neg as f64;
        let per_chunk = chunks * n * -(-(b as f64) / (chunks * n)).exp_m1();
        if per_chunk > SHARED_ABOVE * n {
            n_neg
        } else {
            per_chunk.ceil() as usize
        }
    }
}

/// Per-chunk column sums and rows' (K Z_N) rows.
pub struct SampledWorkspace {
    k_col: Vec<Vec<f64>>,
    h_col: Vec<Vec<f64>>,
    rows: Vec<RowStats>,
    /// (K Z_N) by rows (n+ × p, row-major).
    g: Vec<f64>,
    /// Chunk scratch kept between passes (as many as chunks ran at once):
    /// allocated afresh, a chunk's ≈ 5 MB at 10⁷ rows (160 MB a pass) were
    /// zeroed pages from the kernel every pass. Every value a chunk reads
    /// from it is written first in the same pass.
    pool: std::sync::Mutex<Vec<Scratch>>,
}

impl SampledWorkspace {
    pub fn new(layout: &SampledLayout) -> Self {
        let np = layout.sample.n_pos();
        SampledWorkspace {
            k_col: layout.touched.iter().map(|t| vec![0.0; t.len()]).collect(),
            h_col: layout.touched.iter().map(|t| vec![0.0; t.len()]).collect(),
            rows: vec![RowStats::default(); np],
            g: vec![0.0; np * layout.p],
            pool: std::sync::Mutex::new(Vec::new()),
        }
    }
}

#[cfg(test)]
impl SampledLayout {
    /// Whether the pass reads one shared copy of Z_N (not the chunks').
    pub fn shares_rows(&self) -> bool {
        self.zc_first.is_none()
    }

    pub fn bytes(&self) -> usize {
        self.sample.len() * 12
            + self.touched.iter().map(Vec::len).sum::<usize>() * 4
            + self.zc.len() * 8
    }
}

#[cfg(test)]
impl SampledWorkspace {
    /// Bytes held now (the column sums, rows' sums, K Z_N and the pooled
    /// chunk scratch), counted from the buffers' capacities.
    pub fn held_bytes(&self) -> usize {
        let f = |v: &Vec<f64>| 8 * v.capacity();
        let pool = self.pool.lock().map_or(0, |p| {
            p.iter()
                .map(|s| f(&s.mn) + f(&s.un) + f(&s.c) + f(&s.k64) + f(&s.h64) + f(&s.zv))
                .sum()
        });
        self.k_col.iter().chain(&self.h_col).map(f).sum::<usize>()
            + self.rows.capacity() * std::mem::size_of::<RowStats>()
            + f(&self.g)
            + pool
    }
}

/// Scratch of one chunk's rows.
#[derive(Default)]
struct Scratch {
    mn: Vec<f64>,
    un: Vec<f64>,
    c: Vec<f64>,
    k64: Vec<f64>,
    h64: Vec<f64>,
    zv: Vec<f64>,
}

/// A chunk's share of the site buffers: the pair range of its rows.
struct ChunkSites<'a, S> {
    k_in: &'a [S],
    h_in: &'a [S],
    /// Written by Update (the trial), Shrink and Relax (current).
    out: Option<(&'a mut [S], &'a mut [S])>,
}

/// Runs one pass over the sampled sites (see `kernel::pass`).
/// `sampled`: the sample's layout and its workspace.
pub(crate) fn pass<S: SiteScalar>(
    sites: &mut SiteBuffers<S>,
    sampled: (&SampledLayout, &mut SampledWorkspace),
    marg: &Marginals,
    op: Op,
    step: StepFactor,
    isa: Isa,
    agg: &mut Aggregates,
) -> PassStats {
    let (layout, ws) = sampled;
    let sample = &layout.sample;
    let p = layout.p;
    let fills_agg = op != Op::Check;
    let chunks = layout.bounds.len() - 1;
    let pair_bound = |c: usize| sample.row_start(layout.bounds[c]);
    let mut parts: Vec<ChunkSites<'_, S>> = Vec::with_capacity(chunks);
    {
        let (k_in, h_in, mut out) = io(sites, op);
        for c in 0..chunks {
            let (a, b) = (pair_bound(c), pair_bound(c + 1));
            let mine = out.take().map(|(k, h)| {
                let ((k, kr), (h, hr)) = (k.split_at_mut(b - a), h.split_at_mut(b - a));
                out = Some((kr, hr));
                (k, h)
            });
            parts.push(ChunkSites {
                k_in: &k_in[a..b],
                h_in: &h_in[a..b],
                out: mine,
            });
        }
    }
    let SampledWorkspace {
        k_col,
        h_col,
        rows,
        g,
        pool,
    } = ws;
    let pool = &*pool;
    // Split the per-row outputs by chunk.
    let mut row_parts = Vec::with_capacity(chunks);
    let mut g_parts = Vec::with_capacity(chunks);
    {
        let (mut rest_rows, mut rest_g) = (&mut rows[..], &mut g[..]);
        for c in 0..chunks {
            let n = layout.bounds[c + 1] - layout.bounds[c];
            let (r, rr) = std::mem::take(&mut rest_rows).split_at_mut(n);
            let (gg, gr) = std::mem::take(&mut rest_g).split_at_mut(n * p);
            (rest_rows, rest_g) = (rr, gr);
            row_parts.push(r);
            g_parts.push(gg);
        }
    }
    parts
        .into_par_iter()
        .zip(row_parts.into_par_iter())
        .zip(g_parts.into_par_iter())
        .zip(k_col.par_iter_mut().zip(h_col.par_iter_mut()))
        .enumerate()
        .for_each(|(c, (((mut part, rows), g), (kc, hc)))| {
            let mut s = pool
                .lock()
                .map(|mut v| v.pop())
                .ok()
                .flatten()
                .unwrap_or_default();
            if fills_agg {
                kc.fill(0.0);
                hc.fill(0.0);
            }
            let (base, end) = (pair_bound(c), pair_bound(c + 1));
            let (r0, r1) = (layout.bounds[c], layout.bounds[c + 1]);
            let negs = sample.row_range(base, end);
            let order = &layout.order[base..end];
            let pair_row = &layout.pair_row[base..end];
            // (Shrink, Relax and Aggregate read none of mn, un, c.)
            for v in [&mut s.mn, &mut s.un, &mut s.c, &mut s.k64, &mut s.h64] {
                v.resize(end - base, 0.0);
            }
            if matches!(op, Op::Update { .. } | Op::Check) {
                // The chunk's rows of Z_P V (row-major), then each pair's
                // cavity inputs in the negatives' order (Z_N read forward).
                s.zv.resize((r1 - r0) * p, 0.0);
                for k in 0..p {
                    let col = marg.zv_p.column(k);
                    for (r, i) in (r0..r1).enumerate() {
                        s.zv[r * p + k] = col[i];
                    }
                }
                let mut slot = usize::MAX;
                let mut last = u32::MAX;
                for (u, &t) in order.iter().enumerate() {
                    if let Some(&ta) = order.get(u + AHEAD) {
                        let ja = negs[ta as usize] as usize;
                        let ra = pair_row[ta as usize] as usize - r0;
                        prefetch(&marg.mn[ja..ja + 1]);
                        prefetch(&marg.un[ja..ja + 1]);
                        prefetch(&s.zv[ra * p..(ra + 1) * p]);
                        if let Some(z) = layout.z_shared(ja) {
                            prefetch(z);
                        }
                    }
                    let (t, j) = (t as usize, negs[t as usize]);
                    if j != last {
                        (slot, last) = (slot.wrapping_add(1), j);
                    }
                    let r = pair_row[t] as usize - r0;
                    s.mn[t] = marg.mn[j as usize];
                    s.un[t] = marg.un[j as usize];
                    let zv = &s.zv[r * p..(r + 1) * p];
                    s.c[t] = layout
                        .z(c, slot, j)
                        .iter()
                        .zip(zv)
                        .map(|(x, y)| x * y)
                        .sum();
                }
            }
            for (r, i) in (r0..r1).enumerate() {
                let a = sample.row_start(i) - base;
                let b = a + sample.row(i).len();
                let q = RowQ {
                    mp: marg.mp[i],
                    up: marg.up[i],
                    excl: layout.excluded.row(i),
                };
                let cols = Cols {
                    mn: &s.mn[a..b],
                    un: &s.un[a..b],
                };
                let (kin, hin) = (&part.k_in[a..b], &part.h_in[a..b]);
                let out = part.out.as_mut().map(|(k, h)| (&mut k[a..b], &mut h[a..b]));
                let (c, k64, h64) = (&mut s.c[a..b], &mut s.k64[a..b], &mut s.h64[a..b]);
                rows[r] = row::run(op, isa, step, &q, &cols, c, kin, hin, out, k64, h64, None);
            }
            if fills_agg {
                // In the negatives' order: each row's (K Z_N) row still sums
                // its pairs in their order (rows are sorted by negative), and
                // each column sum its rows in order: the row-by-row sums.
                g.fill(0.0);
                let mut slot = usize::MAX;
                let mut last = u32::MAX;
                for (u, &t) in order.iter().enumerate() {
                    if let Some(&ta) = order.get(u + AHEAD) {
                        let ra = pair_row[ta as usize] as usize - r0;
                        prefetch(&g[ra * p..(ra + 1) * p]);
                        prefetch(&s.k64[ta as usize..ta as usize + 1]);
                        if let Some(z) = layout.z_shared(negs[ta as usize] as usize) {
                            prefetch(z);
                        }
                    }
                    let (t, j) = (t as usize, negs[t as usize]);
                    if j != last {
                        (slot, last) = (slot.wrapping_add(1), j);
                    }
                    let r = pair_row[t] as usize - r0;
                    let (kv, hv) = (s.k64[t], s.h64[t]);
                    kc[slot] += kv;
                    hc[slot] += hv;
                    for (gv, zv) in g[r * p..(r + 1) * p].iter_mut().zip(layout.z(c, slot, j)) {
                        *gv += kv * zv;
                    }
                }
            }
            if let Ok(mut v) = pool.lock() {
                v.push(s);
            }
        });
    if fills_agg {
        agg.k_col.fill(0.0);
        agg.h_col.fill(0.0);
        for c in 0..chunks {
            for (t, &j) in layout.touched[c].iter().enumerate() {
                agg.k_col[j as usize] += ws.k_col[c][t];
                agg.h_col[j as usize] += ws.h_col[c][t];
            }
        }
        transpose_rows(&ws.g, &mut agg.g);
    }
    total(&ws.rows, fills_agg.then_some(agg))
}

/// Rows per block of `transpose_rows` (a block of the row-major source, 160 kB
/// at p = 20, stays in cache while its columns are written).
const TRANSPOSE_ROWS: usize = 1024;

/// `out` (n × p, column-major) from the same matrix row-major, by blocks of
/// rows on the thread pool (the serial element-by-element copy wrote with a
/// stride of n and was ≈ 5% of EP's CPU at 10⁷ rows).
fn transpose_rows(src: &[f64], out: &mut nalgebra::DMatrix<f64>) {
    let (n, p) = out.shape();
    assert_eq!(src.len(), n * p, "n × p values");
    if n == 0 || p == 0 {
        return;
    }
    // blocks[b][k]: rows of block b in column k (disjoint slices of `out`).
    column_blocks(out, TRANSPOSE_ROWS)
        .into_par_iter()
        .enumerate()
        .for_each(|(b, mut cols)| {
            let i0 = b * TRANSPOSE_ROWS;
            for (k, col) in cols.iter_mut().enumerate() {
                for (r, v) in col.iter_mut().enumerate() {
                    *v = src[(i0 + r) * p + k];
                }
            }
        });
}

#[cfg(test)]
mod tests {
    #[test]
    fn blocked_transpose_is_the_transpose() {
        let (n, p) = (2 * super::TRANSPOSE_ROWS + 37, 3);
        let src: Vec<f64> = (0..n * p).map(|v| v as f64).collect();
        let mut out = nalgebra::DMatrix::zeros(n, p);
        super::transpose_rows(&src, &mut out);
        assert_eq!(out, nalgebra::DMatrix::from_row_slice(n, p, &src));
    }
}
