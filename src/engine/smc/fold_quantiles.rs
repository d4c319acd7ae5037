//! Weighted quantiles of one column for every fold of a cross-fit at once,
//! by binning instead of sorting or selecting: the rows are counted into
//! bins that are monotone in value (v ≤ v' ⇒ bin(v) ≤ bin(v')), each fold's
//! cumulative weight is walked over the bins, and only the rows of the few
//! bins where a quantile falls are sorted. O(n) a column with a small
//! constant: the skew test's three weighted selections per fold cost as much
//! as an SMC stage's Gaussian fits on Pima (a radix sort per column as much
//! as the selections).
//!
//! The rule is `marginal_map`'s: the first value, in value order, whose
//! cumulative weight reaches p·W (W the total weight of the rows outside the
//! fold); the largest value when rounding leaves none. The sums run in
//! another order than a sorted walk's, so a quantile can differ from it only
//! where a cumulative weight ties p·W to the last bits.

/// Rows binned by value for every fold's quantiles.
pub struct FoldBins<'a> {
    values: Vec<f64>,
    weights: &'a [f64],
    fold: &'a [usize],
    bins: usize,
    lo: f64,
    scale: f64,
    bin: Vec<u32>,
    /// Weight and row count per fold and bin (fold-major).
    w: Vec<f64>,
    count: Vec<u32>,
    groups: usize,
}

impl<'a> FoldBins<'a> {
    /// The bins of `values` (row i of weight `weights[i]` in fold `fold[i]`);
    /// None when there is no row or a value is not finite (the caller sorts).
    pub fn of(values: Vec<f64>, weights: &'a [f64], fold: &'a [usize]) -> Option<FoldBins<'a>> {
        let n = values.len();
        let (lo, hi) = finite_range(&values)?;
        // ≈ 8 rows a bin on average: a quantile's bin holds a few dozen.
        let bins = n.div_ceil(8).clamp(8, 2048);
        let span = hi - lo;
        let scale = if span > 0.0 { bins as f64 / span } else { 0.0 };
        if !scale.is_finite() {
            return None;
        }
        let groups = fold.iter().copied().max().unwrap_or(0) + 1;
        let bin: Vec<u32> = if span.is_finite() {
            // `bin_of`'s bins: here v − lo ∈ [0, span], so t is finite and
            // ≥ 0 and the clamp before truncating gives `bin_of`'s bin (a
            // plain conversion, which vectorises).
            let last = (bins - 1) as f64;
            values
                .iter()
                .map(|&v| {
                    let t = (v - lo) * scale;
                    let t = if t < last { t } else { last };
                    // SAFETY: t is finite and in [0, 2047].
                    unsafe { t.to_int_unchecked::<i32>() as u32 }
                })
                .collect()
        } else {
            values
                .iter()
                .map(|&v| bin_of(v, lo, scale, bins) as u32)
                .collect()
        };
        let (mut w, mut count) = (vec![0.0; groups * bins], vec![0u32; groups * bins]);
        for ((&b, &wi), &f) in bin.iter().zip(weights).zip(fold) {
            let at = f * bins + b as usize;
            w[at] += wi;
            count[at] += 1;
        }
        Some(FoldBins {
            values,
            weights,
            fold,
            bins,
            lo,
            scale,
            bin,
            w,
            count,
            groups,
        })
    }

    /// The bin of a value: monotone (`as` saturates below 0).
    pub fn bin_of(&self, v: f64) -> usize {
        bin_of(v, self.lo, self.scale, self.bins)
    }

    /// The bin of every row.
    pub fn bin_rows(&self) -> &[u32] {
        &self.bin
    }

    pub fn bins(&self) -> usize {
        self.bins
    }

    /// The binned values (row order).
    pub fn values(&self) -> &[f64] {
        &self.values
    }

    /// The fold of every row.
    pub fn fold(&self) -> &[usize] {
        self.fold
    }

    /// Per fold g of `left_out`, the quantiles at `probs` (ascending) of the
    /// rows outside g, or None when every row is in g.
    pub fn quantiles(&self, left_out: &[usize], probs: &[f64]) -> Vec<Option<Vec<f64>>> {
        let nb = self.bins;
        // Per fold: (bin, weight before it, p·W) of every quantile.
        let picks: Vec<Option<Vec<(usize, f64, f64)>>> = left_out
            .iter()
            .map(|&g| {
                // The other folds' weights and counts per bin, added fold by fold.
                let (mut wg, mut cg) = (vec![0.0; nb], vec![0u32; nb]);
                for f in (0..self.groups).filter(|&f| f != g) {
                    let (w, c) = (
                        &self.w[f * nb..(f + 1) * nb],
                        &self.count[f * nb..(f + 1) * nb],
                    );
                    wg.iter_mut().zip(w).for_each(|(a, b)| *a += b);
                    cg.iter_mut().zip(c).for_each(|(a, b)| *a += b);
                }
                let filled = |b: usize| cg[b] > 0;
                let last = (0..nb).rposition(filled)?;
                let total: f64 = wg.iter().sum();
                let (mut b, mut cum) = (0, 0.0);
                Some(
                    probs
                        .iter()
                        .map(|&p| {
                            let target = p * total;
                            // A quantile's bin holds rows outside g.
                            while b < last && (!filled(b) || cum + wg[b] < target) {
                                cum += wg[b];
                                b += 1;
                            }
                            (b, cum, target)
                        })
                        .collect(),
                )
            })
            .collect();
        let mut wanted = vec![false; nb];
        for p in picks.iter().flatten().flatten() {
            wanted[p.0] = true;
        }
        // The rows of the wanted bins, by bin then value.
        let mut rows: Vec<(u32, f64, f64, usize)> = self
            .bin
            .iter()
            .zip(&self.values)
            .zip(self.weights)
            .zip(self.fold)
            .filter(|(((b, _), _), _)| wanted[**b as usize])
            .map(|(((&b, &v), &w), &f)| (b, v, w, f))
            .collect();
        rows.sort_unstable_by(|a, b| a.0.cmp(&b.0).then(a.1.total_cmp(&b.1)));
        left_out
            .iter()
            .zip(&picks)
            .map(|(&g, picks)| {
                let picks = picks.as_ref()?;
                Some(
                    picks
                        .iter()
                        .map(|&(b, cum, target)| {
                            let b = b as u32;
                            let start = rows.partition_point(|r| r.0 < b);
                            let end = rows.partition_point(|r| r.0 <= b);
                            let mut c = cum;
                            let mut last = f64::NAN;
                            for r in rows[start..end].iter().filter(|r| r.3 != g) {
                                if c + r.2 >= target {
                                    return r.1;
                                }
                                c += r.2;
                                last = r.1;
                            }
                            last
                        })
                        .collect(),
                )
            })
            .collect()
    }
}

/// The bin of v for bins of width 1/scale from lo (`as` saturates below 0
/// and maps NaN to 0).
fn bin_of(v: f64, lo: f64, scale: f64, bins: usize) -> usize {
    (((v - lo) * scale) as usize).min(bins - 1)
}

/// Smallest and largest value, or None when there is none or one is not
/// finite. Plain comparisons in independent lanes, and finiteness as a sum
/// of v − v (0 for a finite v, NaN else, and NaN stays): all of it
/// vectorises (a flag per lane did not). With every value finite the bounds
/// are `f64::min`'s and `max`'s up to the sign of a zero bound, which
/// changes no bin (v − lo and hi − lo are the same).
// (v − v on purpose: NaN exactly where v is not finite.)
#[allow(clippy::eq_op)]
fn finite_range(values: &[f64]) -> Option<(f64, f64)> {
    const L: usize = 8;
    let (mut lo, mut hi, mut nan) = ([f64::INFINITY; L], [f64::NEG_INFINITY; L], [0.0f64; L]);
    let mut it = values.chunks_exact(L);
    for c in &mut it {
        for j in 0..L {
            let v = c[j];
            nan[j] += v - v;
            lo[j] = if v < lo[j] { v } else { lo[j] };
            hi[j] = if v > hi[j] { v } else { hi[j] };
        }
    }
    for (j, &v) in it.remainder().iter().enumerate() {
        nan[j] += v - v;
        lo[j] = if v < lo[j] { v } else { lo[j] };
        hi[j] = if v > hi[j] { v } else { hi[j] };
    }
    if values.is_empty() || nan.iter().any(|s| s.is_nan()) {
        return None;
    }
    let lo = lo
        .iter()
        .fold(f64::INFINITY, |m, &v| if v < m { v } else { m });
    let hi = hi
        .iter()
        .fold(f64::NEG_INFINITY, |m, &v| if v > m { v } else { m });
    Some((lo, hi))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::numerics::rng;

    /// The rule by a sorted walk (the slow, obvious way).
    fn sorted_quantile(v: &[f64], w: &[f64], keep: impl Fn(usize) -> bool, p: f64) -> Option<f64> {
        let mut c: Vec<(f64, f64)> = (0..v.len())
            .filter(|&i| keep(i))
            .map(|i| (v[i], w[i]))
            .collect();
        c.sort_by(|a, b| a.0.total_cmp(&b.0));
        let total: f64 = c.iter().map(|x| x.1).sum();
        let (mut cum, mut j) = (0.0, 0);
        while j + 1 < c.len() && cum + c[j].1 < p * total {
            cum += c[j].1;
            j += 1;
        }
        c.get(j).map(|x| x.0)
    }

    #[test]
    fn binned_fold_quantiles_match_the_sorted_walk() {
        let mut r = rng::stream(11, &[]);
        let probs = [0.0, 0.0062, 0.025, 0.3, 0.5, 0.7, 0.975, 0.9938, 1.0];
        for (n, kind) in [
            (1usize, 0),
            (2, 0),
            (7, 1),
            (300, 2),
            (5000, 0),
            (5000, 1),
            (5000, 2),
            (4000, 3),
        ] {
            // Irregular weights (no cumulative sum ties a p·W), ties (rounded
            // values), a far outlier, and a constant column.
            let v: Vec<f64> = (0..n)
                .map(|i| match kind {
                    0 => rng::normal(&mut r),
                    1 => (rng::normal(&mut r) * 3.0).round(),
                    2 if i == 0 => 1e12,
                    2 => rng::normal(&mut r).powi(3),
                    _ => 2.5,
                })
                .collect();
            let w: Vec<f64> = (0..n).map(|_| 0.5 + rng::normal(&mut r).abs()).collect();
            let fold: Vec<usize> = (0..n).map(|i| (i * 7) % 5).collect();
            let bins = FoldBins::of(v.clone(), &w, &fold).expect("finite");
            let got = bins.quantiles(&[0, 1, 2, 3, 4], &probs);
            for (g, got) in got.iter().enumerate() {
                let want: Option<Vec<f64>> = probs
                    .iter()
                    .map(|&p| sorted_quantile(&v, &w, |i| fold[i] != g, p))
                    .collect();
                assert_eq!(*got, want, "n {n} kind {kind} fold {g}");
            }
        }
        assert!(FoldBins::of(vec![1.0, f64::NAN], &[1.0, 1.0], &[0, 1]).is_none());
        assert!(FoldBins::of(Vec::new(), &[], &[]).is_none());
    }

    #[test]
    fn bins_are_monotone_in_value() {
        let v = [-3.0, -0.0, 0.0, 1e-300, 2.0, 7.0];
        let w = [1.0; 6];
        let bins = FoldBins::of(v.to_vec(), &w, &[0; 6]).unwrap();
        let probe = [-1e300, -3.0, -1.0, -0.0, 0.0, 1.0, 6.999, 7.0, 1e300];
        for p in probe.windows(2) {
            assert!(bins.bin_of(p[0]) <= bins.bin_of(p[1]), "{p:?}");
        }
    }
}
