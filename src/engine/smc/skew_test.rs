//! The skew test of the SkewCopula kernel: the quantile skewness of every
//! coordinate of the weighted particles, per fold of a cross-fit (what
//! decides whether a stage maps its marginals, `marginal_map`).

use rayon::prelude::*;

use super::fold_quantiles::FoldBins;
use super::marginal_map::column;

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
pub fn quantile_skewness_left_out(
    theta: &[f64],
    weights: &[f64],
    d: usize,
    folds: usize,
    fold_of: impl Fn(usize) -> usize + Sync,
) -> Vec<Vec<f64>> {
    let fold: Vec<usize> = (0..weights.len()).map(fold_of).collect();
    quantile_skewness_binned(theta, weights, d, folds, &fold, false).0
}

/// `quantile_skewness_left_out` with row i in fold `fold[i]`, and when
/// `keep`, every column's bins (None for a column with a non-finite value)
/// for the copula's knots (`MarginalMaps::of_folds_mapped`). Each column is
/// read once and binned for every fold (`fold_quantiles`); a column with a
/// non-finite value by weighted selection per fold.
pub fn quantile_skewness_binned<'a>(
    theta: &[f64],
    weights: &'a [f64],
    d: usize,
    folds: usize,
    fold: &'a [usize],
    keep: bool,
) -> (Vec<Vec<f64>>, Vec<Option<FoldBins<'a>>>) {
    let left_out: Vec<usize> = (0..folds).collect();
    let probs = [SKEW_TAIL, 0.5, 1.0 - SKEW_TAIL];
    let per_coord: Vec<(Vec<f64>, Option<FoldBins<'a>>)> = columns(theta, d)
        .into_par_iter()
        .enumerate()
        .map(|(k, values)| {
            if let Some(bins) = FoldBins::of(values, weights, fold) {
                let skew = bins
                    .quantiles(&left_out, &probs)
                    .into_iter()
                    .map(|q| q.map_or(0.0, |q| skewness_of(q[0], q[1], q[2])))
                    .collect();
                return (skew, keep.then_some(bins));
            }
            let all = column(theta, weights, d, k, 1.0);
            let mut col = Vec::with_capacity(all.len());
            let skew = (0..folds)
                .map(|g| {
                    col.clear();
                    col.extend(
                        all.iter()
                            .zip(fold)
                            .filter(|(_, f)| **f != g)
                            .map(|(c, _)| *c),
                    );
                    column_skewness(&mut col)
                })
                .collect();
            (skew, None)
        })
        .collect();
    let skew = (0..folds)
        .map(|g| per_coord.iter().map(|s| s.0[g]).collect())
        .collect();
    (skew, per_coord.into_iter().map(|c| c.1).collect())
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
    skewness_of(col[lo].0, col[mid].0, col[hi].0)
}

/// The quantile skewness of the quantiles q0 ≤ q1 ≤ q2.
fn skewness_of(q0: f64, q1: f64, q2: f64) -> f64 {
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
pub(super) fn weighted_select(col: &mut [(f64, f64)], p: f64) -> usize {
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

/// The columns of `theta` (n × d, row-major), by strided reads of blocks
/// of rows that stay in L1 (a push per value into d columns cost twice as
/// many instructions; strided reads of the whole matrix, cache misses).
fn columns(theta: &[f64], d: usize) -> Vec<Vec<f64>> {
    const ROWS: usize = 256;
    let n = theta.len() / d.max(1);
    let mut cols: Vec<Vec<f64>> = (0..d).map(|_| Vec::with_capacity(n)).collect();
    for block in theta.chunks(ROWS * d.max(1)) {
        for (k, c) in cols.iter_mut().enumerate() {
            c.extend(block.iter().skip(k).step_by(d).copied());
        }
    }
    cols
}
