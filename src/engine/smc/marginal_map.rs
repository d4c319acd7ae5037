//! Per-coordinate monotone maps that make the particles' marginals ≈ N(0, 1),
//! for the Copula kernel (a Gaussian fit of the mapped particles: a Gaussian
//! copula with fitted marginals).
//!
//! Why: on data with rare one-hot categories (adult, 3 016 training rows) the
//! coefficient of a category seen in a handful of rows of one class has a
//! half-normal-like posterior at large γ (the prior cut by a soft step: moving
//! those rows' scores past the rest changes γR by up to γ/n±), and a Gaussian
//! fit puts a fifth of its proposals on the wrong side of each such step:
//! with 14 such coordinates an independence proposal is almost never accepted
//! and the fitted pCN must take small steps. Mapping each coordinate through
//! its fitted quantiles first straightens those marginals.
//!
//! Each map is piecewise linear through (t_i, z_i), t_i the weighted
//! quantile of the coordinate at Φ(z_i), z_i evenly spaced on [−Z_MAX, Z_MAX],
//! and linear beyond the end knots. Any strictly increasing map gives an exact
//! kernel (its log slope enters the acceptance ratio); a good one gives a
//! high acceptance.
//!
//! The tails beyond the end knots take the gentler of the end segment's slope
//! and the map's mean slope: on the steep side of a soft step (a half-normal's
//! edge at 0) the end segment is ≈ 50× steeper than the spread, so the few
//! states past the edge landed at z ≈ −25, where no proposal from the bulk
//! can return to them nor they leave (the stage's risk kept a correlation of
//! 0.15 with its start after 200 moves). The spread's slope puts them at
//! z ≈ −3, as the Gaussian tail of the exact map would.

use rayon::prelude::*;
use statrs::function::erf::erfc;
use std::cmp::Ordering;
use std::sync::OnceLock;

use super::fold_quantiles::FoldBins;

/// A fold's mapped rows by coordinate (`cols[k][r]`).
pub type Columns = Vec<Vec<f64>>;

/// Knots of every map (z evenly spaced).
const KNOTS: usize = 21;
const Z_MAX: f64 = 2.5;

/// The maps of the mapped coordinates; the others pass unchanged (the
/// identity: a Gaussian fit handles them as they are).
#[derive(Debug, Clone)]
pub struct MarginalMaps {
    d: usize,
    /// The mapped coordinates, ascending.
    coords: Vec<usize>,
    /// Knots t (one row of KNOTS per mapped coordinate), strictly increasing.
    t: Vec<f64>,
    /// Slopes dz/dt per mapped coordinate: the lower tail's, the KNOTS − 1
    /// segments', the upper tail's.
    slope: Vec<f64>,
    /// Their logs (the Jacobians of every move: computed once, same bits).
    log_slope: Vec<f64>,
    /// The inner knots t_1 … t_{KNOTS−2} at 1 … KNOTS − 2 of a row of
    /// `SEARCH_ROW` (−∞ before, +∞ after) per mapped coordinate: the forward
    /// map's bisection then needs no clamp (a clamp made its selects
    /// branches).
    search: Vec<f64>,
}

/// The knots' z (a table: the maps run in every move, and a division
/// each cost as much as the rest of a segment's formula).
const Z_KNOTS: [f64; KNOTS] = {
    let mut z = [0.0; KNOTS];
    let mut i = 0;
    while i < KNOTS {
        z[i] = -Z_MAX + 2.0 * Z_MAX * i as f64 / (KNOTS - 1) as f64;
        i += 1;
    }
    z
};

/// 1/h, h the knots' spacing in z: a power of two, so multiplying by it is
/// dividing by h, bit for bit.
const INV_H: f64 = (KNOTS - 1) as f64 / (2.0 * Z_MAX);
const _: () = assert!(INV_H == 4.0);

fn z_knot(i: usize) -> f64 {
    Z_KNOTS[i]
}

fn phi(z: f64) -> f64 {
    0.5 * erfc(-z / std::f64::consts::SQRT_2)
}

impl MarginalMaps {
    /// Maps of every coordinate fitted to the weighted rows of `theta` (n × d,
    /// row-major; the weights need not be normalised).
    pub fn of(theta: &[f64], weights: &[f64], d: usize) -> MarginalMaps {
        MarginalMaps::of_coords(theta, weights, d, (0..d).collect())
    }

    /// Maps of the coordinates `coords` (ascending) alone.
    pub fn of_coords(theta: &[f64], weights: &[f64], d: usize, coords: Vec<usize>) -> MarginalMaps {
        let total: f64 = weights.iter().sum();
        let probs = knot_probs();
        let per: Vec<(Vec<f64>, Vec<f64>)> = coords
            .par_iter()
            .map(|&k| {
                let mut col = column(theta, weights, d, k, total);
                col.sort_by(|a, b| a.0.total_cmp(&b.0));
                knots_to_map(quantile_knots(&col, &probs))
            })
            .collect();
        MarginalMaps::assemble(d, coords, per)
    }

    /// Per fold g (row i in fold `fold[i]`), the maps `of_coords` fits to
    /// the rows outside g — of every coordinate where `map[g]`, else of none —
    /// bit for bit, but each column sorted once for all folds: the stable
    /// order of a fold's rows is that of all rows with the others skipped
    /// (the copula's fits sorted every column once per fold: 14% of an SMC
    /// run on Pima).
    pub fn of_folds(
        theta: &[f64],
        weights: &[f64],
        d: usize,
        fold: &[usize],
        map: &[bool],
    ) -> Vec<MarginalMaps> {
        MarginalMaps::of_folds_mapped(theta, weights, d, fold, map, None).0
    }

    /// `of_folds`, with per fold g the rows outside g (in row order) mapped
    /// through g's maps, by coordinate (`cols[k][r]`: coordinate k of the
    /// r-th such row), bit for bit what `map_row` gives them (None for a
    /// fold left unmapped): each column binned once for every fold's knots
    /// and its segments (`fold_quantiles`; a column with a non-finite value
    /// is sorted and mapped along its sorted order). `binned`: the columns'
    /// bins already made (`quantile_skewness_binned` on the same rows and
    /// folds, weights proportional to `weights`), else None.
    pub fn of_folds_mapped(
        theta: &[f64],
        weights: &[f64],
        d: usize,
        fold: &[usize],
        map: &[bool],
        binned: Option<Vec<Option<FoldBins<'_>>>>,
    ) -> (Vec<MarginalMaps>, Vec<Option<Columns>>) {
        let mapped: Vec<usize> = (0..map.len()).filter(|&g| map[g]).collect();
        let probs = knot_probs();
        let n = weights.len();
        // Row i's weight over each mapped fold's total (the knots' weights;
        // the totals summed in row order as `of_coords` sums them), divided
        // once for every coordinate, for the columns that are sorted.
        let m = mapped.len();
        let wn = OnceLock::new();
        let wn = || -> &Vec<f64> {
            wn.get_or_init(|| {
                let totals: Vec<f64> = mapped
                    .iter()
                    .map(|&g| {
                        weights
                            .iter()
                            .zip(fold)
                            .filter(|(_, f)| **f != g)
                            .map(|(w, _)| *w)
                            .sum()
                    })
                    .collect();
                (0..n)
                    .flat_map(|i| totals.iter().map(move |t| weights[i] / t))
                    .collect()
            })
        };
        // Per coordinate, per mapped fold: the knots, slopes and the mapped
        // column (rows outside the fold).
        type Column = (Vec<f64>, Vec<f64>, Vec<f64>);
        let mut pre = binned.unwrap_or_default();
        pre.resize_with(d, || None);
        let per_coord: Vec<Vec<Column>> = if mapped.is_empty() {
            Vec::new()
        } else {
            pre.into_par_iter()
                .enumerate()
                .map(|(k, pre)| {
                    let bins = pre.or_else(|| {
                        let values = theta.chunks_exact(d).map(|row| row[k]).collect();
                        FoldBins::of(values, weights, fold)
                    });
                    if let Some(bins) = bins {
                        return bins
                            .quantiles(&mapped, &probs)
                            .into_iter()
                            .zip(&mapped)
                            .map(|(t, &g)| {
                                let (t, slope) = knots_to_map(t.unwrap_or(vec![0.0; KNOTS]));
                                let z = map_binned(&bins, &t, &slope, fold, g);
                                (t, slope, z)
                            })
                            .collect();
                    }
                    // (total order key, row): sorted, the stable total_cmp order.
                    let mut order: Vec<(i64, usize)> = theta
                        .chunks_exact(d)
                        .enumerate()
                        .map(|(i, row)| (total_key(row[k]), i))
                        .collect();
                    sort_by_key(&mut order);
                    let wn = wn();
                    let at = |i: usize| (&wn[i * m..(i + 1) * m], fold[i]);
                    fold_knots(&order, at, &mapped, &probs)
                        .into_iter()
                        .zip(&mapped)
                        .map(|(t, &g)| {
                            let (t, slope) = knots_to_map(t);
                            let z = map_sorted(&order, &t, &slope, n);
                            let z = (0..n).filter(|&i| fold[i] != g).map(|i| z[i]).collect();
                            (t, slope, z)
                        })
                        .collect()
                })
                .collect()
        };
        let mut per_coord: Vec<_> = per_coord.into_iter().map(Vec::into_iter).collect();
        (0..map.len())
            .map(|g| {
                if !map[g] {
                    return (MarginalMaps::assemble(d, Vec::new(), Vec::new()), None);
                }
                let (per, cols): (Vec<_>, Vec<_>) = per_coord
                    .iter_mut()
                    .map(|c| {
                        let (t, slope, z) = c.next().expect("a column per mapped fold");
                        ((t, slope), z)
                    })
                    .unzip();
                (MarginalMaps::assemble(d, (0..d).collect(), per), Some(cols))
            })
            .unzip()
    }

    /// The maps of `coords` from their knots and slopes.
    fn assemble(d: usize, coords: Vec<usize>, per: Vec<(Vec<f64>, Vec<f64>)>) -> MarginalMaps {
        let mut out = MarginalMaps {
            d,
            t: Vec::with_capacity(coords.len() * KNOTS),
            slope: Vec::with_capacity(coords.len() * (KNOTS + 1)),
            log_slope: Vec::new(),
            search: Vec::with_capacity(coords.len() * SEARCH_ROW),
            coords,
        };
        for (t, s) in per {
            out.search.push(f64::NEG_INFINITY);
            out.search.extend_from_slice(&t[1..KNOTS - 1]);
            out.search
                .resize(out.search.len() + SEARCH_ROW - (KNOTS - 1), f64::INFINITY);
            out.t.extend(t);
            out.slope.extend(s);
        }
        out.log_slope = out.slope.iter().map(|s| s.ln()).collect();
        out
    }

    /// The mapped coordinates.
    pub fn mapped(&self) -> &[usize] {
        &self.coords
    }

    /// Knots, slopes and log slopes of the i-th mapped coordinate (arrays:
    /// a segment's index needs no bounds check).
    #[inline(always)]
    fn knots(&self, i: usize) -> (&Knots, &Slopes, &Slopes) {
        let s = i * (KNOTS + 1);
        let fixed = "a mapped coordinate's table";
        (
            self.t[i * KNOTS..][..KNOTS].try_into().expect(fixed),
            self.slope[s..][..KNOTS + 1].try_into().expect(fixed),
            self.log_slope[s..][..KNOTS + 1].try_into().expect(fixed),
        )
    }

    /// The i-th mapped coordinate's `search` row.
    fn search(&self, i: usize) -> &Search {
        self.search[i * SEARCH_ROW..][..SEARCH_ROW]
            .try_into()
            .expect("a mapped coordinate's search row")
    }

    /// z = T_k(t) and log T_k'(t) (t and 0 for a coordinate left unmapped).
    pub fn forward(&self, k: usize, t: f64) -> (f64, f64) {
        match self.coords.binary_search(&k) {
            Ok(i) => self.forward_at(i, t),
            Err(_) => (t, 0.0),
        }
    }

    fn forward_at(&self, i: usize, t: f64) -> (f64, f64) {
        let (knots, slope, log_slope) = self.knots(i);
        forward_in((knots, self.search(i)), slope, log_slope, t)
    }

    /// t = T_k⁻¹(z) and log T_k'(t) (z and 0 for a coordinate left unmapped).
    pub fn inverse(&self, k: usize, z: f64) -> (f64, f64) {
        match self.coords.binary_search(&k) {
            Ok(i) => self.inverse_at(i, z),
            Err(_) => (z, 0.0),
        }
    }

    fn inverse_at(&self, i: usize, z: f64) -> (f64, f64) {
        let (knots, slope, log_slope) = self.knots(i);
        inverse_in(knots, slope, log_slope, z)
    }

    /// Every mapped coordinate's (k, knots, slopes, log slopes), as arrays:
    /// the maps of a row then check no bounds per coordinate (the moves map
    /// and unmap every chain at every step).
    #[inline(always)]
    fn tables(&self) -> impl Iterator<Item = (usize, (&Knots, &Search), &Slopes, &Slopes)> {
        let (t, _) = self.t.as_chunks::<KNOTS>();
        let (q, _) = self.search.as_chunks::<SEARCH_ROW>();
        let (s, _) = self.slope.as_chunks::<{ KNOTS + 1 }>();
        let (l, _) = self.log_slope.as_chunks::<{ KNOTS + 1 }>();
        self.coords
            .iter()
            .zip(t.iter().zip(q))
            .zip(s.iter().zip(l))
            .map(|((&k, t), (s, l))| (k, t, s, l))
    }

    /// Maps a row in place; returns Σ log T_k'.
    pub fn map_row(&self, row: &mut [f64]) -> f64 {
        let mut jac = 0.0;
        for (k, t, s, l) in self.tables() {
            let (z, lk) = forward_in(t, s, l, row[k]);
            row[k] = z;
            jac += lk;
        }
        jac
    }

    /// Maps a row back in place; returns Σ log T_k' at the result.
    pub fn unmap_row(&self, row: &mut [f64]) -> f64 {
        let mut jac = 0.0;
        for (k, t, s, l) in self.tables() {
            let (v, lk) = inverse_in(t.0, s, l, row[k]);
            row[k] = v;
            jac += lk;
        }
        jac
    }

    /// Every row of `theta` mapped in place.
    pub fn map_rows_in_place(&self, theta: &mut [f64]) {
        theta.par_chunks_mut(self.d).for_each(|r| {
            self.map_row(r);
        });
    }

    /// Every row of `theta` mapped (a new n × d matrix).
    pub fn map_rows(&self, theta: &[f64]) -> Vec<f64> {
        let mut out = theta.to_vec();
        out.par_chunks_mut(self.d).for_each(|r| {
            self.map_row(r);
        });
        out
    }
}

/// A map's knots and its slopes (or their logs).
type Knots = [f64; KNOTS];
type Slopes = [f64; KNOTS + 1];
/// A `search` row: a power of two above KNOTS − 1, so that the bisection's
/// indices (≤ 31) stay in it.
const SEARCH_ROW: usize = 32;
type Search = [f64; SEARCH_ROW];

/// `forward_at` of one map's tables.
#[inline(always)]
fn forward_in(
    (knots, search): (&Knots, &Search),
    slope: &Slopes,
    log_slope: &Slopes,
    t: f64,
) -> (f64, f64) {
    if t < knots[0] {
        (-Z_MAX + (t - knots[0]) * slope[0], log_slope[0])
    } else if t > knots[KNOTS - 1] {
        (
            Z_MAX + (t - knots[KNOTS - 1]) * slope[KNOTS],
            log_slope[KNOTS],
        )
    } else {
        // The segment: the count of inner knots ≤ t (0 for NaN), by a
        // branch-free bisection over `search` (nondecreasing: a monotone
        // test; five selects instead of a count's 19 compares; a table of
        // cells and a walk from them took more instructions). Inlined in a
        // row's loop, plain `if`s became branches, which a bisection
        // mispredicts half the time.
        let mut j = 0;
        for step in [16, 8, 4, 2, 1] {
            let k = j + step;
            j = std::hint::select_unpredictable(search[k] <= t, k, j);
        }
        (z_knot(j) + (t - knots[j]) * slope[j + 1], log_slope[j + 1])
    }
}

/// `inverse_at` of one map's tables.
#[inline(always)]
fn inverse_in(knots: &Knots, slope: &Slopes, log_slope: &Slopes, z: f64) -> (f64, f64) {
    if z < -Z_MAX {
        (knots[0] + (z + Z_MAX) / slope[0], log_slope[0])
    } else if z > Z_MAX {
        (
            knots[KNOTS - 1] + (z - Z_MAX) / slope[KNOTS],
            log_slope[KNOTS],
        )
    } else {
        // ⌊(z + Z_MAX)/h⌋ (z + Z_MAX ∈ [0, 2 Z_MAX] here, NaN gives 0
        // either way), by h's exact inverse: no call to `floor`, and a
        // conversion to i32 (one instruction; to usize takes several).
        let j = (((z + Z_MAX) * INV_H) as i32 as usize).min(KNOTS - 2);
        (knots[j] + (z - z_knot(j)) / slope[j + 1], log_slope[j + 1])
    }
}

/// The knots' probabilities Φ(z_i).
fn knot_probs() -> Vec<f64> {
    (0..KNOTS).map(|i| phi(z_knot(i))).collect()
}

/// The knots t_i of a sorted weighted column (weights summing to 1): the
/// first value whose cumulative weight reaches Φ(z_i).
fn quantile_knots(col: &[(f64, f64)], probs: &[f64]) -> Vec<f64> {
    let mut t = Vec::with_capacity(KNOTS);
    let (mut cum, mut j) = (0.0, 0);
    for &p in probs {
        while j + 1 < col.len() && cum + col[j].1 < p {
            cum += col[j].1;
            j += 1;
        }
        t.push(col.get(j).map_or(0.0, |c| c.0));
    }
    t
}

/// `quantile_knots` of every fold g of `mapped` at once, the column of fold
/// g being the rows of `order` (sorted) outside g: one pass over the column
/// instead of one copy per fold, the same sums in the same order (so the
/// same bits). `at(i)` = (row i's weight over each mapped fold's total, its
/// fold).
fn fold_knots<'a>(
    order: &[(i64, usize)],
    at: impl Fn(usize) -> (&'a [f64], usize),
    mapped: &[usize],
    probs: &[f64],
) -> Vec<Vec<f64>> {
    struct Walk {
        t: Vec<f64>,
        cum: f64,
        last: Option<f64>,
    }
    let mut walks: Vec<Walk> = mapped
        .iter()
        .map(|_| Walk {
            t: Vec::with_capacity(KNOTS),
            cum: 0.0,
            last: None,
        })
        .collect();
    for &(key, i) in order {
        let (wn, f) = at(i);
        let v = from_key(key);
        for ((walk, &g), &wn) in walks.iter_mut().zip(mapped).zip(wn) {
            if f == g || walk.t.len() == KNOTS {
                continue;
            }
            // `quantile_knots` steps past an element while the cumulative
            // weight with it stays below the next knot's probability; a
            // knot stops on it otherwise (the last element takes the rest).
            while walk.t.len() < KNOTS {
                if walk.cum + wn < probs[walk.t.len()] {
                    break;
                }
                walk.t.push(v);
            }
            walk.cum += wn;
            walk.last = Some(v);
        }
    }
    walks
        .into_iter()
        .map(|mut walk| {
            let rest = walk.last.unwrap_or(0.0);
            walk.t.resize(KNOTS, rest);
            walk.t
        })
        .collect()
}

/// Sorts (key, row) pairs given in row order by key, ties in row order
/// (what `sort_unstable` makes of them): a stable radix sort of the keys,
/// 11 bits a pass, passes where every key has the same digit skipped.
fn sort_by_key(order: &mut Vec<(i64, usize)>) {
    const BITS: u32 = 11;
    let digit =
        |key: i64, shift: u32| ((((key as u64) ^ (1 << 63)) >> shift) & ((1 << BITS) - 1)) as usize;
    let mut other = vec![(0i64, 0usize); order.len()];
    let mut counts = vec![0usize; 1 << BITS];
    let mut shift = 0;
    while shift < 64 {
        counts.iter_mut().for_each(|c| *c = 0);
        for &(key, _) in order.iter() {
            counts[digit(key, shift)] += 1;
        }
        if !counts.contains(&order.len()) {
            let mut sum = 0;
            for c in counts.iter_mut() {
                (*c, sum) = (sum, sum + *c);
            }
            for &pair in order.iter() {
                let slot = &mut counts[digit(pair.0, shift)];
                other[*slot] = pair;
                *slot += 1;
            }
            std::mem::swap(order, &mut other);
        }
        shift += BITS;
    }
}

/// The column of `order` (sorted by `total_key`) through the map of knots
/// `t` and `slope`, by row (n rows): `forward_at`'s formulas, the segment
/// found by walking up with the values (a NaN, at either end of the order,
/// takes `forward_at`'s own count, 0).
fn map_sorted(order: &[(i64, usize)], t: &[f64], slope: &[f64], n: usize) -> Vec<f64> {
    let mut z = vec![0.0; n];
    let mut j = 0;
    for &(key, i) in order {
        let v = from_key(key);
        z[i] = if v < t[0] {
            -Z_MAX + (v - t[0]) * slope[0]
        } else if v > t[KNOTS - 1] {
            Z_MAX + (v - t[KNOTS - 1]) * slope[KNOTS]
        } else if v.is_nan() {
            z_knot(0) + (v - t[0]) * slope[1]
        } else {
            while j < KNOTS - 2 && t[j + 1] <= v {
                j += 1;
            }
            z_knot(j) + (v - t[j]) * slope[j + 1]
        };
    }
    z
}

/// The rows outside fold g (row i in fold `fold[i]`) of the binned column
/// through the map of knots `t` and `slope`: `forward_at`'s formulas. Bins
/// are monotone, so a bin strictly between the bins of knots j and j + 1
/// holds values strictly between them (segment j, or a tail beyond an end
/// knot): its rows take that formula without a search. The rows of a bin
/// that shares a knot's bin count the inner knots ≤ v, started at those
/// whose bin is below v's (those are < v).
fn map_binned(bins: &FoldBins, t: &[f64], slope: &[f64], fold: &[usize], g: usize) -> Vec<f64> {
    let t: &Knots = t.try_into().expect("a map's knots");
    let slope: &Slopes = slope.try_into().expect("a map's slopes");
    let nb = bins.bins();
    let knot_bin: Vec<usize> = t.iter().map(|&v| bins.bin_of(v)).collect();
    // Per bin: the segment (< KNOTS − 1), a tail, or SEARCH_BIN with the count
    // of inner knots whose bin is below it (p: the knots whose bin is).
    let mut code = Vec::with_capacity(nb);
    let mut p = 0;
    for b in 0..nb {
        while p < KNOTS && knot_bin[p] < b {
            p += 1;
        }
        code.push(match p {
            0 if b < knot_bin[0] => (LOW, 0),
            KNOTS => (HIGH, 0),
            _ if p > 0 && b < knot_bin[p] => ((p - 1) as u8, 0),
            _ => (SEARCH_BIN, (p.max(1) - 1).min(KNOTS - 2) as u8),
        });
    }
    let values = bins.values();
    let mut z = Vec::with_capacity(values.len());
    for ((&v, &b), &f) in values.iter().zip(bins.bin_rows()).zip(fold) {
        if f == g {
            continue;
        }
        let (c, start) = code[b as usize];
        let j = (c as usize).min(KNOTS - 2);
        z.push(if c == j as u8 {
            z_knot(j) + (v - t[j]) * slope[j + 1]
        } else if v < t[0] {
            -Z_MAX + (v - t[0]) * slope[0]
        } else if v > t[KNOTS - 1] {
            Z_MAX + (v - t[KNOTS - 1]) * slope[KNOTS]
        } else {
            let mut j = (start as usize).min(KNOTS - 2);
            while j < KNOTS - 2 && t[j + 1] <= v {
                j += 1;
            }
            z_knot(j) + (v - t[j]) * slope[j + 1]
        });
    }
    z
}

/// `map_binned`'s codes of a bin below the first knot's bin, above the
/// last's, or sharing a knot's bin.
const LOW: u8 = 100;
const HIGH: u8 = 101;
const SEARCH_BIN: u8 = 102;

/// The value of a `total_key` (the key's bit trick undoes itself).
fn from_key(key: i64) -> f64 {
    f64::from_bits((key ^ ((((key >> 63) as u64) >> 1) as i64)) as u64)
}

/// An integer key whose order is `f64::total_cmp`'s (its own bit trick).
fn total_key(v: f64) -> i64 {
    let b = v.to_bits() as i64;
    b ^ ((((b >> 63) as u64) >> 1) as i64)
}

/// Coordinate k of the rows of `theta` with their weights divided by `total`.
pub(super) fn column(
    theta: &[f64],
    weights: &[f64],
    d: usize,
    k: usize,
    total: f64,
) -> Vec<(f64, f64)> {
    theta
        .chunks_exact(d)
        .zip(weights)
        .map(|(row, &w)| (row[k], w / total))
        .collect()
}

/// Strictly increasing knots (ties spread by a relative gap) and their
/// slopes: the lower tail's, the segments', the upper tail's.
fn knots_to_map(mut t: Vec<f64>) -> (Vec<f64>, Vec<f64>) {
    let span = t[KNOTS - 1] - t[0];
    let scale = t.iter().fold(0.0f64, |a, v| a.max(v.abs())).max(1e-300);
    let gap = if span > 0.0 && span.is_finite() {
        1e-6 * span
    } else {
        1e-6 * scale
    };
    for i in 1..KNOTS {
        // NaN counts as out of order.
        if !matches!(
            t[i].partial_cmp(&(t[i - 1] + gap)),
            Some(Ordering::Greater | Ordering::Equal)
        ) {
            t[i] = t[i - 1] + gap;
        }
    }
    let h = 2.0 * Z_MAX / (KNOTS - 1) as f64;
    let segments: Vec<f64> = t.windows(2).map(|w| h / (w[1] - w[0])).collect();
    let spread = 2.0 * Z_MAX / (t[KNOTS - 1] - t[0]);
    let mut slope = Vec::with_capacity(KNOTS + 1);
    slope.push(segments[0].min(spread));
    slope.extend_from_slice(&segments);
    slope.push(segments[KNOTS - 2].min(spread));
    (t, slope)
}

#[cfg(test)]
#[path = "marginal_map_tests.rs"]
mod tests;
