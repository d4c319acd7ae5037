//! One pass over the sites of a sample of pairs (`pairs::PairSample`; ALGORITHMS.md §14):
//! the same element-wise site work as the dense pass (`update_row`), on each
//! positive row's sampled negatives gathered into a compact row. The block
//! products become per-pair dot products: `C_ij = (Z_P V)_i · z_j` before the
//! update, `(K Z_N)_i = Σ_j K_ij z_j` after it, column sums by scatter.
//!
//! Determinism: rows are split into a fixed number of chunks (by the data's
//! shape, never by the thread count); each chunk sums its rows in order into
//! its own column sums, which are then added chunk by chunk.

use rayon::prelude::*;

use super::row::{Cols, RowOut, RowQ, load_row, shrink_row, update_row};
use super::{Aggregates, Excluded, Marginals, Op, PassStats, RowStats};
use crate::engine::ep::site::StepFactor;
use crate::engine::ep::store::{SiteBuffers, SiteScalar};
use crate::engine::pairs::PairSample;

use super::Isa;

/// Chunks of positive rows (at most; fewer when there are fewer rows).
const CHUNKS: usize = 32;

/// The sample, its non-sites and Z_N by rows.
#[derive(Debug, Clone)]
pub struct SampledLayout {
    pub sample: PairSample,
    /// Per positive row, the positions in its sample row whose pair has
    /// identical rows (a = 0: not a site).
    pub excluded: Excluded,
    /// Z_N row-major (n− × p).
    znt: Vec<f64>,
    p: usize,
    /// First row of each chunk, and one past the last.
    bounds: Vec<usize>,
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
        let bounds = (0..=chunks).map(|c| c * n_pos / chunks).collect();
        let mut me = SampledLayout {
            excluded: Excluded::new(n_pos, pairs),
            sample,
            znt: Vec::new(),
            p: 0,
            bounds,
        };
        me.set_rows(zn);
        me
    }

    /// New rows Z_N (same pairs).
    pub fn set_rows(&mut self, zn: &nalgebra::DMatrix<f64>) {
        let (nn, p) = zn.shape();
        self.p = p;
        self.znt = vec![0.0; nn * p];
        for k in 0..p {
            for (j, v) in zn.column(k).iter().enumerate() {
                self.znt[j * p + k] = *v;
            }
        }
    }

    fn z(&self, j: u32) -> &[f64] {
        let p = self.p;
        &self.znt[j as usize * p..(j as usize + 1) * p]
    }

    pub fn bytes(&self) -> usize {
        self.sample.len() * 4 + self.znt.len() * 8
    }
}

/// Per-chunk column sums and rows' (K Z_N) rows.
pub struct SampledWorkspace {
    k_col: Vec<Vec<f64>>,
    h_col: Vec<Vec<f64>>,
    rows: Vec<RowStats>,
    /// (K Z_N) by rows (n+ × p, row-major).
    g: Vec<f64>,
}

impl SampledWorkspace {
    pub fn new(layout: &SampledLayout) -> Self {
        let chunks = layout.bounds.len() - 1;
        let (np, nn) = (layout.sample.n_pos(), layout.sample.n_neg());
        SampledWorkspace {
            k_col: vec![vec![0.0; nn]; chunks],
            h_col: vec![vec![0.0; nn]; chunks],
            rows: vec![RowStats::default(); np],
            g: vec![0.0; np * layout.p],
        }
    }

    pub fn bytes(layout: &SampledLayout) -> usize {
        let chunks = layout.bounds.len() - 1;
        16 * chunks * layout.sample.n_neg() + 48 * layout.sample.n_pos()
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
    /// Written by Update (the trial) and Shrink (current); empty otherwise.
    k_out: &'a mut [S],
    h_out: &'a mut [S],
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
    // Which buffer is read and which written.
    let (read, write) = match op {
        Op::Update { .. } => (sites.cur, Some(sites.next())),
        Op::Check | Op::Aggregate => (sites.cur, None),
        Op::Shrink | Op::Relax(_) => (
            sites.prev.expect("shrink needs a previous state"),
            Some(sites.cur),
        ),
    };
    let chunks = layout.bounds.len() - 1;
    let pair_bound = |c: usize| sample.row_start(layout.bounds[c]);
    let mut parts: Vec<ChunkSites<'_, S>> = Vec::with_capacity(chunks);
    {
        let (k_in, h_in, mut k_out, mut h_out): (&[S], &[S], &mut [S], &mut [S]) = match write {
            Some(w) => sites.read_write(read, w),
            None => {
                let (k, h) = sites.get(read);
                (k, h, &mut [], &mut [])
            }
        };
        for c in 0..chunks {
            let (a, b) = (pair_bound(c), pair_bound(c + 1));
            let (ko, kr) =
                std::mem::take(&mut k_out).split_at_mut(if write.is_some() { b - a } else { 0 });
            let (ho, hr) =
                std::mem::take(&mut h_out).split_at_mut(if write.is_some() { b - a } else { 0 });
            (k_out, h_out) = (kr, hr);
            parts.push(ChunkSites {
                k_in: &k_in[a..b],
                h_in: &h_in[a..b],
                k_out: ko,
                h_out: ho,
            });
        }
    }
    let SampledWorkspace {
        k_col,
        h_col,
        rows,
        g,
    } = ws;
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
        .for_each(|(c, (((part, rows), g), (kc, hc)))| {
            let mut s = Scratch::default();
            if fills_agg {
                kc.fill(0.0);
                hc.fill(0.0);
            }
            let base = pair_bound(c);
            for (r, i) in (layout.bounds[c]..layout.bounds[c + 1]).enumerate() {
                let js = sample.row(i);
                let (a, b) = (
                    sample.row_start(i) - base,
                    sample.row_start(i) - base + js.len(),
                );
                let len = js.len();
                s.k64.resize(len, 0.0);
                s.h64.resize(len, 0.0);
                if matches!(op, Op::Update { .. } | Op::Check) {
                    s.zv.clear();
                    s.zv.extend((0..p).map(|k| marg.zv_p[(i, k)]));
                    s.mn.clear();
                    s.un.clear();
                    s.c.clear();
                    for &j in js {
                        s.mn.push(marg.mn[j as usize]);
                        s.un.push(marg.un[j as usize]);
                        s.c.push(layout.z(j).iter().zip(&s.zv).map(|(x, y)| x * y).sum());
                    }
                }
                let q = RowQ {
                    mp: marg.mp[i],
                    up: marg.up[i],
                    excl: layout.excluded.row(i),
                };
                let cols = Cols {
                    mn: &s.mn,
                    un: &s.un,
                };
                rows[r] = match op {
                    Op::Update { eta, evidence } => update_row(
                        isa,
                        evidence,
                        &q,
                        &cols,
                        &mut s.c,
                        &part.k_in[a..b],
                        &part.h_in[a..b],
                        Some(RowOut {
                            k: &mut part.k_out[a..b],
                            h: &mut part.h_out[a..b],
                            k64: &mut s.k64,
                            h64: &mut s.h64,
                        }),
                        None,
                        step,
                        eta,
                    ),
                    Op::Check => update_row(
                        isa,
                        true,
                        &q,
                        &cols,
                        &mut s.c,
                        &part.k_in[a..b],
                        &part.h_in[a..b],
                        None,
                        None,
                        step,
                        0.0,
                    ),
                    Op::Shrink | Op::Relax(_) => shrink_row(
                        &part.k_in[a..b],
                        &part.h_in[a..b],
                        &mut part.k_out[a..b],
                        &mut part.h_out[a..b],
                        &mut s.k64,
                        &mut s.h64,
                        if let Op::Relax(f) = op { f } else { 0.5 },
                    ),
                    Op::Aggregate => {
                        load_row(&part.k_in[a..b], &part.h_in[a..b], &mut s.k64, &mut s.h64)
                    }
                };
                if fills_agg {
                    let gi = &mut g[r * p..(r + 1) * p];
                    gi.fill(0.0);
                    for (k, &j) in js.iter().enumerate() {
                        let (kv, hv) = (s.k64[k], s.h64[k]);
                        kc[j as usize] += kv;
                        hc[j as usize] += hv;
                        for (gv, zv) in gi.iter_mut().zip(layout.z(j)) {
                            *gv += kv * zv;
                        }
                    }
                }
            }
        });
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
    if fills_agg {
        agg.k_col.fill(0.0);
        agg.h_col.fill(0.0);
        for c in 0..chunks {
            for (a, v) in agg.k_col.iter_mut().zip(&ws.k_col[c]) {
                *a += v;
            }
            for (a, v) in agg.h_col.iter_mut().zip(&ws.h_col[c]) {
                *a += v;
            }
        }
        for i in 0..sample.n_pos() {
            for k in 0..p {
                agg.g[(i, k)] = ws.g[i * p + k];
            }
        }
    }
    stats.negative = negative as usize;
    stats.skipped = skipped as usize;
    stats.bad = bad as usize;
    stats
}
