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
}

fn z_knot(i: usize) -> f64 {
    -Z_MAX + 2.0 * Z_MAX * i as f64 / (KNOTS - 1) as f64
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
        let mapped: Vec<usize> = (0..map.len()).filter(|&g| map[g]).collect();
        // The weights' totals, summed in row order as `of_coords` sums them.
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
        let probs = knot_probs();
        // Per coordinate, per mapped fold: the knots and slopes.
        let per_coord: Vec<Vec<(Vec<f64>, Vec<f64>)>> = if mapped.is_empty() {
            Vec::new()
        } else {
            (0..d)
                .into_par_iter()
                .map(|k| {
                    // (total order key, row): sorted, the stable total_cmp order.
                    let mut order: Vec<(i64, usize)> = theta
                        .chunks_exact(d)
                        .enumerate()
                        .map(|(i, row)| (total_key(row[k]), i))
                        .collect();
                    order.sort_unstable();
                    let mut col = Vec::with_capacity(order.len());
                    mapped
                        .iter()
                        .zip(&totals)
                        .map(|(&g, &total)| {
                            col.clear();
                            col.extend(
                                order
                                    .iter()
                                    .filter(|&&(_, i)| fold[i] != g)
                                    .map(|&(_, i)| (theta[i * d + k], weights[i] / total)),
                            );
                            knots_to_map(quantile_knots(&col, &probs))
                        })
                        .collect()
                })
                .collect()
        };
        let mut next = 0;
        (0..map.len())
            .map(|g| {
                if !map[g] {
                    return MarginalMaps::assemble(d, Vec::new(), Vec::new());
                }
                let per = per_coord.iter().map(|c| c[next].clone()).collect();
                next += 1;
                MarginalMaps::assemble(d, (0..d).collect(), per)
            })
            .collect()
    }

    /// The maps of `coords` from their knots and slopes.
    fn assemble(d: usize, coords: Vec<usize>, per: Vec<(Vec<f64>, Vec<f64>)>) -> MarginalMaps {
        let mut out = MarginalMaps {
            d,
            t: Vec::with_capacity(coords.len() * KNOTS),
            slope: Vec::with_capacity(coords.len() * (KNOTS + 1)),
            log_slope: Vec::new(),
            coords,
        };
        for (t, s) in per {
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

    /// Knots, slopes and log slopes of the i-th mapped coordinate.
    fn knots(&self, i: usize) -> (&[f64], &[f64], &[f64]) {
        let s = i * (KNOTS + 1)..(i + 1) * (KNOTS + 1);
        (
            &self.t[i * KNOTS..(i + 1) * KNOTS],
            &self.slope[s.clone()],
            &self.log_slope[s],
        )
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
        if t < knots[0] {
            (-Z_MAX + (t - knots[0]) * slope[0], log_slope[0])
        } else if t > knots[KNOTS - 1] {
            (
                Z_MAX + (t - knots[KNOTS - 1]) * slope[KNOTS],
                log_slope[KNOTS],
            )
        } else {
            // The segment by a branch-free count of the inner knots ≤ t (the
            // knots increase: the same j as a bisection, without its
            // mispredicted branches).
            let j = knots[1..KNOTS - 1]
                .iter()
                .map(|&x| usize::from(x <= t))
                .sum::<usize>();
            (z_knot(j) + (t - knots[j]) * slope[j + 1], log_slope[j + 1])
        }
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
        let h = 2.0 * Z_MAX / (KNOTS - 1) as f64;
        if z < -Z_MAX {
            (knots[0] + (z + Z_MAX) / slope[0], log_slope[0])
        } else if z > Z_MAX {
            (
                knots[KNOTS - 1] + (z - Z_MAX) / slope[KNOTS],
                log_slope[KNOTS],
            )
        } else {
            let j = (((z + Z_MAX) / h).floor() as usize).min(KNOTS - 2);
            (knots[j] + (z - z_knot(j)) / slope[j + 1], log_slope[j + 1])
        }
    }

    /// Maps a row in place; returns Σ log T_k'.
    pub fn map_row(&self, row: &mut [f64]) -> f64 {
        let mut jac = 0.0;
        for (i, &k) in self.coords.iter().enumerate() {
            let (z, l) = self.forward_at(i, row[k]);
            row[k] = z;
            jac += l;
        }
        jac
    }

    /// Maps a row back in place; returns Σ log T_k' at the result.
    pub fn unmap_row(&self, row: &mut [f64]) -> f64 {
        let mut jac = 0.0;
        for (i, &k) in self.coords.iter().enumerate() {
            let (t, l) = self.inverse_at(i, row[k]);
            row[k] = t;
            jac += l;
        }
        jac
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

/// An integer key whose order is `f64::total_cmp`'s (its own bit trick).
fn total_key(v: f64) -> i64 {
    let b = v.to_bits() as i64;
    b ^ ((((b >> 63) as u64) >> 1) as i64)
}

/// Coordinate k of the rows of `theta` with their weights divided by `total`.
fn column(theta: &[f64], weights: &[f64], d: usize, k: usize, total: f64) -> Vec<(f64, f64)> {
    theta
        .chunks_exact(d)
        .zip(weights)
        .map(|(row, &w)| (row[k], w / total))
        .collect()
}

/// Probabilities of the quantile skewness's outer quantiles.
const SKEW_TAIL: f64 = 0.025;

/// The quantile skewness `((q₉₇.₅ − q₅₀) − (q₅₀ − q₂.₅)) / (q₉₇.₅ − q₂.₅)` of
/// every coordinate of the weighted rows of `theta`: 0 for a symmetric
/// marginal, 0.42 for a half-normal, in [−1, 1]. Robust (no moments), and at
/// an effective sample size S its noise under a Gaussian is ≈ 1.16/√S (0.012
/// at 10 000): the quantiles' sds √(p(1−p)/S)/φ(z_p), the tails' dominating.
pub fn quantile_skewness(theta: &[f64], weights: &[f64], d: usize) -> Vec<f64> {
    quantile_skewness_left_out(theta, weights, d, 1, |_| 1).remove(0)
}

/// Per fold g < `folds` (row i in fold `fold_of(i)`), the quantile skewness
/// of every coordinate over the rows outside g (what a cross-fit sees).
/// Each column is read once (a strided pass), each quantile found by
/// weighted selection: O(n) per coordinate and fold, not a sort.
pub fn quantile_skewness_left_out(
    theta: &[f64],
    weights: &[f64],
    d: usize,
    folds: usize,
    fold_of: impl Fn(usize) -> usize + Sync,
) -> Vec<Vec<f64>> {
    let fold: Vec<usize> = (0..weights.len()).map(fold_of).collect();
    let per_coord: Vec<Vec<f64>> = (0..d)
        .into_par_iter()
        .map(|k| {
            let all = column(theta, weights, d, k, 1.0);
            let mut col = Vec::with_capacity(all.len());
            (0..folds)
                .map(|g| {
                    col.clear();
                    col.extend(
                        all.iter()
                            .zip(&fold)
                            .filter(|(_, f)| **f != g)
                            .map(|(c, _)| *c),
                    );
                    column_skewness(&mut col)
                })
                .collect()
        })
        .collect();
    (0..folds)
        .map(|g| per_coord.iter().map(|s| s[g]).collect())
        .collect()
}

/// The quantile skewness of one weighted column (reordered in place).
fn column_skewness(col: &mut [(f64, f64)]) -> f64 {
    if col.is_empty() {
        return 0.0;
    }
    let total: f64 = col.iter().map(|c| c.1).sum();
    let mid = weighted_select(col, 0.5 * total);
    // Selection leaves smaller values before `mid`, larger after it.
    let lo = weighted_select(&mut col[..=mid], SKEW_TAIL * total);
    let before: f64 = col[..mid].iter().map(|c| c.1).sum();
    let hi = mid + weighted_select(&mut col[mid..], (1.0 - SKEW_TAIL) * total - before);
    let (q0, q1, q2) = (col[lo].0, col[mid].0, col[hi].0);
    if q2 > q0 {
        ((q2 - q1) - (q1 - q0)) / (q2 - q0)
    } else {
        0.0
    }
}

/// The index, after partial reordering, of the smallest value whose
/// cumulative weight reaches `p` (in the weights' units; the knots' rule in
/// `of_coords`); values
/// before it are ≤ it, values after it ≥ (repeated halving selections).
fn weighted_select(col: &mut [(f64, f64)], p: f64) -> usize {
    let (mut lo, mut hi, mut before) = (0, col.len(), 0.0);
    while hi - lo > 1 {
        let mid = (hi - lo) / 2;
        let part = &mut col[lo..hi];
        part.select_nth_unstable_by(mid, |a, b| a.0.total_cmp(&b.0));
        let left: f64 = part[..mid].iter().map(|c| c.1).sum();
        if before + left >= p {
            hi = lo + mid;
        } else if before + left + part[mid].1 >= p || lo + mid + 1 == hi {
            return lo + mid;
        } else {
            before += left + part[mid].1;
            lo += mid + 1;
        }
    }
    lo
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
mod tests {
    use super::*;
    use crate::engine::numerics::rng;

    /// The sorted-column quantile (the knots' rule) against which selection
    /// is checked.
    fn sorted_quantile(col: &[(f64, f64)], p: f64) -> f64 {
        let mut c = col.to_vec();
        c.sort_by(|a, b| a.0.total_cmp(&b.0));
        let (mut cum, mut j) = (0.0, 0);
        while j + 1 < c.len() && cum + c[j].1 < p {
            cum += c[j].1;
            j += 1;
        }
        c[j].0
    }

    #[test]
    fn weighted_selection_matches_the_sorted_quantiles() {
        let mut r = rng::stream(8, &[]);
        for n in [1usize, 2, 3, 10, 257, 4000] {
            // Irregular weights: no cumulative sum lands on a probability
            // exactly (there float rounding would decide between two
            // equally valid quantiles).
            let col: Vec<(f64, f64)> = (0..n)
                .map(|_| (rng::normal(&mut r), 0.5 + rng::normal(&mut r).abs()))
                .collect();
            let total: f64 = col.iter().map(|c| c.1).sum();
            let col: Vec<(f64, f64)> = col.iter().map(|&(v, w)| (v, w / total)).collect();
            for p in [0.0, 0.025, 0.3, 0.5, 0.975, 1.0] {
                let mut c = col.clone();
                let i = weighted_select(&mut c, p);
                assert_eq!(c[i].0, sorted_quantile(&col, p), "n {n} p {p}");
                assert!(c[..i].iter().all(|x| x.0 <= c[i].0));
                assert!(c[i + 1..].iter().all(|x| x.0 >= c[i].0));
            }
        }
    }

    /// Symmetric marginals give ≈ 0, a half-normal 0.42 (its exact value:
    /// q = 0.0313, 0.6745, 2.2414), a mirrored one −0.42; the noise of the
    /// statistic under a Gaussian at n = 10 000 is ≈ 0.012 (so a bound of
    /// 0.05 is 4 sds).
    #[test]
    fn quantile_skewness_tells_skewed_from_symmetric_marginals() {
        let mut r = rng::stream(6, &[]);
        let (n, d) = (10_000, 4);
        let theta: Vec<f64> = (0..n)
            .flat_map(|_| {
                let (a, b, c) = (
                    rng::normal(&mut r),
                    rng::normal(&mut r),
                    rng::normal(&mut r),
                );
                [a, b.abs(), -3.0 * c.abs(), 2.0 * rng::normal(&mut r).tanh()]
            })
            .collect();
        let s = quantile_skewness(&theta, &vec![1.0; n], d);
        let half = ((2.2414 - 0.6745) - (0.6745 - 0.0313)) / (2.2414 - 0.0313);
        assert!(s[0].abs() < 0.05, "{s:?}");
        assert!((s[1] - half).abs() < 0.03, "{s:?}");
        assert!((s[2] + half).abs() < 0.03, "{s:?}");
        assert!(s[3].abs() < 0.05, "{s:?}");
        // The weights count: a Gaussian weighted by exp(θ) is N(1, 1).
        let w: Vec<f64> = theta.chunks_exact(d).map(|row| row[0].exp()).collect();
        assert!(quantile_skewness(&theta, &w, d)[0].abs() < 0.08);
    }

    #[test]
    fn fold_maps_match_each_folds_own_maps_bit_for_bit() {
        let mut r = rng::stream(9, &[]);
        let (n, d, folds) = (1500, 4, 5);
        // Ties (a coarse column, repeated values), a zero of both signs.
        let theta: Vec<f64> = (0..n * d)
            .map(|i| match i % d {
                0 => (rng::normal(&mut r) * 2.0).round(),
                1 if i % 7 == 0 => -0.0,
                1 if i % 5 == 0 => 0.0,
                _ => rng::normal(&mut r).abs() * (1 + i % 3) as f64,
            })
            .collect();
        let w: Vec<f64> = (0..n).map(|_| rng::normal(&mut r).exp()).collect();
        let fold: Vec<usize> = (0..n).map(|i| (i * 7) % folds).collect();
        let map = [true, false, true, true, false];
        let got = MarginalMaps::of_folds(&theta, &w, d, &fold, &map);
        for g in 0..folds {
            let keep = |i: &usize| fold[*i] != g;
            let rows: Vec<f64> = (0..n)
                .filter(keep)
                .flat_map(|i| theta[i * d..(i + 1) * d].iter().copied())
                .collect();
            let wg: Vec<f64> = (0..n).filter(keep).map(|i| w[i]).collect();
            let coords = if map[g] { (0..d).collect() } else { Vec::new() };
            let want = MarginalMaps::of_coords(&rows, &wg, d, coords);
            assert_eq!(got[g].coords, want.coords);
            let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
            assert_eq!(bits(&got[g].t), bits(&want.t), "fold {g}");
            assert_eq!(bits(&got[g].slope), bits(&want.slope), "fold {g}");
        }
    }

    #[test]
    fn unmapped_coordinates_pass_unchanged() {
        let mut r = rng::stream(5, &[]);
        let (n, d) = (2000, 3);
        let theta: Vec<f64> = (0..n * d).map(|_| rng::normal(&mut r).abs()).collect();
        let maps = MarginalMaps::of_coords(&theta, &vec![1.0; n], d, vec![1]);
        let all = MarginalMaps::of(&theta, &vec![1.0; n], d);
        let mut row = [0.7, 0.7, 0.7];
        let jac = maps.map_row(&mut row);
        assert_eq!((row[0], row[2]), (0.7, 0.7));
        assert_eq!((row[1], jac), all.forward(1, 0.7));
        assert_eq!(maps.unmap_row(&mut row), jac);
        assert!((row[1] - 0.7).abs() < 1e-12 && row[0] == 0.7);
        assert_eq!(maps.mapped(), &[1]);
    }

    #[test]
    fn maps_are_monotone_invertible_and_gaussianise_a_half_normal() {
        let mut r = rng::stream(4, &[]);
        let (n, d) = (20_000, 2);
        // Coordinate 0 half-normal, 1 Gaussian.
        let theta: Vec<f64> = (0..n)
            .flat_map(|_| [rng::normal(&mut r).abs(), 2.0 + 3.0 * rng::normal(&mut r)])
            .collect();
        let maps = MarginalMaps::of(&theta, &vec![1.0; n], d);
        let mapped = maps.map_rows(&theta);
        for k in 0..d {
            let col: Vec<f64> = mapped.chunks_exact(d).map(|r| r[k]).collect();
            let m = col.iter().sum::<f64>() / n as f64;
            let v = col.iter().map(|x| (x - m) * (x - m)).sum::<f64>() / n as f64;
            let skew = col.iter().map(|x| (x - m).powi(3)).sum::<f64>() / n as f64 / v.powf(1.5);
            assert!(
                m.abs() < 0.03 && (v - 1.0).abs() < 0.05 && skew.abs() < 0.1,
                "{k}: {m} {v} {skew}"
            );
        }
        // Past the half-normal's edge the tail takes the spread's slope
        // (≈ 5/2.73), not the end segment's (≈ 50): θ = −0.5 maps to ≈ −3.4.
        let (z, _) = maps.forward(0, -0.5);
        assert!((-4.0..-3.0).contains(&z), "{z}");
        for &t in &[-3.0, -0.1, 0.0, 0.3, 1.7, 9.0] {
            for k in 0..d {
                let (z, l) = maps.forward(k, t);
                let (back, l2) = maps.inverse(k, z);
                assert!((back - t).abs() < 1e-9 * t.abs().max(1.0), "{k} {t} {back}");
                assert!((l - l2).abs() < 1e-9);
                assert!(maps.forward(k, t + 1e-3).0 > z);
            }
        }
    }
}
