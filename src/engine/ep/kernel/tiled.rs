//! The pass's block products for many coordinates (p above `SMALL_P`), fused
//! with the site work: for a group of positive rows and a chunk of negative
//! columns that fits in L2, `C = (Z_P V) Z_Nᵀ` by a register-blocked kernel
//! (4 rows × 16 columns), the sites of that tile at once (C never leaves the
//! cache), then the tile's share of `K Z_N`.
//!
//! Why not matrixmultiply (the path for p > 32 before): it packs Z_N again for
//! every block's two GEMMs (adult, p = 87: packing cost as much as the
//! kernel), its threads took turns with rayon's (half the profile was
//! `sched_yield`), and the block's C, K went through memory between the steps.
//! Here Z_N is packed once per pass in two layouts: 16-column panels `[k][16]`
//! for C (each panel stays in L1 across a row group) and rows padded to
//! `PAD` coordinates for `K Z_N` (vectorised over the coordinates).
//!
//! Determinism: groups are fixed by the data's shape; within a row, C sums
//! over k in order, each row's statistics add chunks in order, each `K Z_N`
//! coordinate adds its columns in order.

use super::super::site::StepFactor;
use super::super::store::SiteScalar;
use super::row::{Cols, RowOut, RowQ, update_row_impl};
use super::{Isa, RowStats};
use crate::engine::numerics::simd::Simd;

/// Columns of a panel of the packed `Z_Nᵀ`.
const PANEL: usize = 16;
/// Coordinates of a packed row are padded to a multiple of this (two 16-lane
/// vectors per step of the `K Z_N` kernel).
const PAD: usize = 32;
/// Rows of the register-blocked C kernel.
const QUAD: usize = 4;
/// Bytes of both packed layouts of one chunk (kept in L2 while a group runs).
const CHUNK_BYTES: usize = 384 * 1024;
/// Positive rows per task: each chunk of Z_N is read once per group.
pub(super) const GROUP_ROWS: usize = 32;

/// Z_N packed for the tiled products.
#[derive(Debug, Default)]
pub(super) struct Packed {
    p: usize,
    /// `p` padded to a multiple of `PAD`.
    pp: usize,
    nn: usize,
    /// Columns per chunk (a multiple of `PANEL`).
    chunk: usize,
    /// Panels of `PANEL` negatives: `panels[(P·p + k)·PANEL + l] = Z_N[P·PANEL + l, k]`.
    panels: Vec<f64>,
    /// Rows: `rows[j·pp + k] = Z_N[j, k]` (0 for k ≥ p).
    rows: Vec<f64>,
}

impl Packed {
    /// Packs `zn` (reusing the allocations).
    pub(super) fn fill(&mut self, zn: &nalgebra::DMatrix<f64>) {
        let (nn, p) = (zn.nrows(), zn.ncols());
        let pp = p.div_ceil(PAD) * PAD;
        let n_panels = nn.div_ceil(PANEL);
        self.p = p;
        self.pp = pp;
        self.nn = nn;
        let per_col = 8 * (p + pp);
        self.chunk = ((CHUNK_BYTES / per_col) / PANEL * PANEL).max(PANEL);
        self.panels.clear();
        self.panels.resize(n_panels * p * PANEL, 0.0);
        self.rows.clear();
        self.rows.resize(nn * pp, 0.0);
        for k in 0..p {
            for (j, &z) in zn.column(k).iter().enumerate() {
                let (pan, l) = (j / PANEL, j % PANEL);
                self.panels[(pan * p + k) * PANEL + l] = z;
                self.rows[j * pp + k] = z;
            }
        }
    }
}

/// One group's rows.
pub(super) struct Group<'a, S> {
    /// `Z_P V` of the group's rows, row-major (rows × p).
    pub(super) zv: Vec<f64>,
    pub(super) mp: &'a [f64],
    pub(super) up: &'a [f64],
    /// Excluded columns (sorted) of each row.
    pub(super) excl: Vec<&'a [u32]>,
    /// Sites of the rows (rows × n−).
    pub(super) kin: &'a [S],
    pub(super) hin: &'a [S],
    /// Update: the new sites, their f64 copies, and the rows' `K Z_N` (rows × p).
    pub(super) out: Option<GroupOut<'a, S>>,
}

pub(super) struct GroupOut<'a, S> {
    pub(super) k: &'a mut [S],
    pub(super) h: &'a mut [S],
    pub(super) k64: &'a mut [f64],
    pub(super) h64: &'a mut [f64],
    pub(super) g: &'a mut [f64],
}

/// The group's sites (see the module docs); `stats` gets each row's sums.
#[allow(clippy::too_many_arguments)]
pub(super) fn group<S: SiteScalar>(
    isa: Isa,
    evidence: bool,
    pk: &Packed,
    cols: &Cols<'_>,
    gr: Group<'_, S>,
    stats: &mut [RowStats],
    step: StepFactor,
    eta: f64,
) {
    simd_dispatch!(isa, evidence, group_impl::<S>(
        pk: &Packed,
        cols: &Cols<'_>,
        gr: Group<'_, S>,
        stats: &mut [RowStats],
        step: StepFactor,
        eta: f64,
    ) -> ())
}

#[inline(always)]
fn add_stats(a: &mut RowStats, b: RowStats) {
    a.k += b.k;
    a.h += b.h;
    a.log_c += b.log_c;
    a.negative += b.negative;
    a.skipped += b.skipped;
    a.bad += b.bad;
}

#[inline(always)]
fn group_impl<V: Simd, S: SiteScalar, const EV: bool>(
    pk: &Packed,
    cols: &Cols<'_>,
    mut gr: Group<'_, S>,
    stats: &mut [RowStats],
    step: StepFactor,
    eta: f64,
) {
    let (p, pp, nn) = (pk.p, pk.pp, pk.nn);
    let rows = stats.len();
    stats.fill(RowStats::default());
    let mut ctile = vec![0.0; QUAD * pk.chunk];
    let mut gacc = vec![0.0; if gr.out.is_some() { rows * pp } else { 0 }];
    let mut excl: Vec<u32> = Vec::new();
    let mut j0 = 0;
    while j0 < nn {
        let j1 = (j0 + pk.chunk).min(nn);
        let jl = j1 - j0;
        let chunk_cols = Cols {
            mn: &cols.mn[j0..j1],
            un: &cols.un[j0..j1],
        };
        let mut r0 = 0;
        while r0 < rows {
            let rr = (rows - r0).min(QUAD);
            let zv = &gr.zv[r0 * p..(r0 + rr) * p];
            match rr {
                4 => c_tile::<V, 4>(pk, zv, j0, jl, &mut ctile),
                3 => c_tile::<V, 3>(pk, zv, j0, jl, &mut ctile),
                2 => c_tile::<V, 2>(pk, zv, j0, jl, &mut ctile),
                _ => c_tile::<V, 1>(pk, zv, j0, jl, &mut ctile),
            }
            for r in 0..rr {
                let row = r0 + r;
                let all = gr.excl[row];
                let (a, b) = (
                    all.partition_point(|&e| (e as usize) < j0),
                    all.partition_point(|&e| (e as usize) < j1),
                );
                excl.clear();
                excl.extend(all[a..b].iter().map(|&e| e - j0 as u32));
                let q = RowQ {
                    mp: gr.mp[row],
                    up: gr.up[row],
                    excl: &excl,
                };
                let s = row * nn + j0;
                let out = gr.out.as_mut().map(|o| RowOut {
                    k: &mut o.k[s..s + jl],
                    h: &mut o.h[s..s + jl],
                    k64: &mut o.k64[s..s + jl],
                    h64: &mut o.h64[s..s + jl],
                });
                let st = update_row_impl::<V, S, EV>(
                    &q,
                    &chunk_cols,
                    &mut ctile[r * pk.chunk..r * pk.chunk + jl],
                    &gr.kin[s..s + jl],
                    &gr.hin[s..s + jl],
                    out,
                    step,
                    eta,
                );
                add_stats(&mut stats[row], st);
            }
            if let Some(o) = &gr.out {
                let k64 = &o.k64[r0 * nn..(r0 + rr) * nn];
                let acc = &mut gacc[r0 * pp..(r0 + rr) * pp];
                match rr {
                    4 => g_tile::<V, 4>(pk, k64, j0, jl, acc),
                    3 => g_tile::<V, 3>(pk, k64, j0, jl, acc),
                    2 => g_tile::<V, 2>(pk, k64, j0, jl, acc),
                    _ => g_tile::<V, 1>(pk, k64, j0, jl, acc),
                }
            }
            r0 += rr;
        }
        j0 = j1;
    }
    if let Some(o) = gr.out {
        for r in 0..rows {
            o.g[r * p..(r + 1) * p].copy_from_slice(&gacc[r * pp..r * pp + p]);
        }
    }
}

/// `ctile[r·chunk + j] = Σ_k zv[r·p + k] Z_N[j0 + j, k]` for the R rows and
/// the chunk's `jl` columns (whole panels: the padding columns are 0).
#[inline(always)]
fn c_tile<V: Simd, const R: usize>(
    pk: &Packed,
    zv: &[f64],
    j0: usize,
    jl: usize,
    ctile: &mut [f64],
) {
    let p = pk.p;
    let first = j0 / PANEL;
    for pan in 0..jl.div_ceil(PANEL) {
        let panel = &pk.panels[(first + pan) * p * PANEL..(first + pan + 1) * p * PANEL];
        let mut v = 0;
        while v < PANEL {
            let mut acc = [V::splat(0.0); R];
            for k in 0..p {
                let z = V::load(&panel[k * PANEL + v..]);
                for (r, a) in acc.iter_mut().enumerate() {
                    *a = V::splat(zv[r * p + k]).fma(z, *a);
                }
            }
            for (r, a) in acc.iter().enumerate() {
                a.store(&mut ctile[r * pk.chunk + pan * PANEL + v..]);
            }
            v += V::W;
        }
    }
}

/// `acc[r·pp + k] += Σ_j k64[r·nn + j0 + j] Z_N[j0 + j, k]` over the chunk's
/// `jl` columns, for the R rows (two coordinate vectors at a time).
#[inline(always)]
fn g_tile<V: Simd, const R: usize>(
    pk: &Packed,
    k64: &[f64],
    j0: usize,
    jl: usize,
    acc: &mut [f64],
) {
    let (pp, nn) = (pk.pp, pk.nn);
    let mut kv = 0;
    while kv < pp {
        let mut a = [[V::splat(0.0); 2]; R];
        for (r, ar) in a.iter_mut().enumerate() {
            ar[0] = V::load(&acc[r * pp + kv..]);
            ar[1] = V::load(&acc[r * pp + kv + V::W..]);
        }
        for j in 0..jl {
            let zr = &pk.rows[(j0 + j) * pp + kv..];
            let (z0, z1) = (V::load(zr), V::load(&zr[V::W..]));
            for (r, ar) in a.iter_mut().enumerate() {
                let kr = V::splat(k64[r * nn + j0 + j]);
                ar[0] = kr.fma(z0, ar[0]);
                ar[1] = kr.fma(z1, ar[1]);
            }
        }
        for (r, ar) in a.iter().enumerate() {
            ar[0].store(&mut acc[r * pp + kv..]);
            ar[1].store(&mut acc[r * pp + kv + V::W..]);
        }
        kv += 2 * V::W;
    }
}
