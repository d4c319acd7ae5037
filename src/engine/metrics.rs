//! AUC, the empirical AUC risk and ROC curves, in O(n log n) with ties counted ½.
//! (`R_n(θ) = 1 − AUC`, ALGORITHMS.md §1.) The brute-force O(n+·n−) versions are
//! kept for tests.

use serde::{Deserialize, Serialize};

/// AUC of `scores` with mid-ranks for ties: the share of (positive, negative) pairs
/// ranked correctly, a tie counting ½. NaN when a class is empty.
pub fn auc(scores: &[f64], y: &[bool]) -> f64 {
    assert_eq!(scores.len(), y.len(), "one score per label");
    auc_sorted(scores, y, &ascending_order(scores))
}

/// The indices of `v` in ascending order (`f64::total_cmp`; ties by index,
/// callers group equal values), sorted in parallel when long. Sorts (key,
/// index) pairs: sorting indices by `v[a]` read each value at random (at 10⁷
/// predicted rows, four such sorts were ≈ 20% of `predict`).
pub fn ascending_order(v: &[f64]) -> Vec<usize> {
    use rayon::slice::ParallelSliceMut;
    let mut kv: Vec<(u64, usize)> = v
        .iter()
        .enumerate()
        .map(|(i, &x)| (total_order_key(x), i))
        .collect();
    if v.len() > 1 << 16 {
        kv.par_sort_unstable();
    } else {
        kv.sort_unstable();
    }
    kv.into_iter().map(|(_, i)| i).collect()
}

/// An unsigned key ordered as `f64::total_cmp` orders the values (its bit
/// trick, with the sign bit flipped for an unsigned comparison).
fn total_order_key(x: f64) -> u64 {
    let b = x.to_bits() as i64;
    ((b ^ (((b >> 63) as u64) >> 1) as i64) as u64) ^ (1 << 63)
}

/// AUC given the ascending order of the scores.
pub fn auc_sorted(scores: &[f64], y: &[bool], order: &[usize]) -> f64 {
    // Walk groups of equal scores from the lowest: every positive in a group beats
    // the negatives below it and ties with the negatives in it.
    let (mut neg_below, mut twice_u) = (0u64, 0u64);
    let mut g = 0;
    while g < order.len() {
        let s = scores[order[g]];
        let (mut p, mut q) = (0u64, 0u64);
        let mut e = g;
        while e < order.len() && scores[order[e]] == s {
            if y[order[e]] {
                p += 1
            } else {
                q += 1
            }
            e += 1;
        }
        twice_u += 2 * p * neg_below + p * q;
        neg_below += q;
        g = e;
    }
    let n_pos = y.iter().filter(|&&b| b).count() as u64;
    let pairs = n_pos * neg_below;
    if pairs == 0 {
        f64::NAN
    } else {
        twice_u as f64 / (2 * pairs) as f64
    }
}

/// Empirical AUC risk `R_n = 1 − AUC` (share of discordant pairs, ties ½).
pub fn auc_risk(scores: &[f64], y: &[bool]) -> f64 {
    1.0 - auc(scores, y)
}

/// The O(n+·n−) definition, for tests.
pub fn auc_brute_force(scores: &[f64], y: &[bool]) -> f64 {
    let (mut good, mut pairs) = (0.0, 0.0);
    for i in (0..y.len()).filter(|&i| y[i]) {
        for j in (0..y.len()).filter(|&j| !y[j]) {
            pairs += 1.0;
            if scores[i] > scores[j] {
                good += 1.0;
            } else if scores[i] == scores[j] {
                good += 0.5;
            }
        }
    }
    good / pairs
}

/// One point of a ROC curve: false- and true-positive rates at a threshold.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct RocPoint {
    pub fpr: f64,
    pub tpr: f64,
}

/// ROC curve from (0,0) to (1,1): one point per distinct score (highest first),
/// so tied scores give a diagonal segment and the trapezoid area equals `auc`.
pub fn roc_curve(scores: &[f64], y: &[bool]) -> Vec<RocPoint> {
    roc_curve_sorted(scores, y, &ascending_order(scores))
}

/// `roc_curve` given the ascending order of the scores: walked from the
/// highest score down, a point after each group of equal scores.
pub fn roc_curve_sorted(scores: &[f64], y: &[bool], order: &[usize]) -> Vec<RocPoint> {
    let n_pos = y.iter().filter(|&&b| b).count() as f64;
    let n_neg = y.len() as f64 - n_pos;
    let mut pts = vec![RocPoint { fpr: 0.0, tpr: 0.0 }];
    let (mut tp, mut fp) = (0.0, 0.0);
    let mut it = order.iter().rev().peekable();
    while let Some(&first) = it.next() {
        let s = scores[first];
        let mut i = first;
        loop {
            if y[i] {
                tp += 1.0
            } else {
                fp += 1.0
            }
            match it.peek() {
                Some(&&next) if scores[next] == s => {
                    i = next;
                    it.next();
                }
                _ => break,
            }
        }
        pts.push(RocPoint {
            fpr: fp / n_neg,
            tpr: tp / n_pos,
        });
    }
    pts
}

/// Area under a polyline of ROC points (trapezoids).
pub fn roc_area(points: &[RocPoint]) -> f64 {
    points
        .windows(2)
        .map(|w| (w[1].fpr - w[0].fpr) * (w[1].tpr + w[0].tpr) / 2.0)
        .sum()
}

/// At most `max` points of a curve, keeping both ends (for charts and records).
pub fn thin_curve(points: &[RocPoint], max: usize) -> Vec<RocPoint> {
    if points.len() <= max || max < 2 {
        return points.to_vec();
    }
    let step = (points.len() - 1) as f64 / (max - 1) as f64;
    (0..max)
        .map(|k| points[((k as f64 * step).round() as usize).min(points.len() - 1)])
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The keyed sort orders as `total_cmp` (signed zeros, NaNs, infinities,
    /// subnormals, ties), ties by index; long inputs (parallel) too.
    #[test]
    fn ascending_order_is_total_cmp_order() {
        let special = [
            0.0,
            -0.0,
            f64::NAN,
            -f64::NAN,
            f64::INFINITY,
            f64::NEG_INFINITY,
            5e-324,
            -5e-324,
            1.0,
            -1.0,
            1.0,
            f64::MAX,
            f64::MIN,
        ];
        let long: Vec<f64> = (0..100_000)
            .map(|k| ((k * 7919) % 1000) as f64 * 0.37 - 150.0)
            .collect();
        for v in [special.to_vec(), long] {
            let got = ascending_order(&v);
            let mut want: Vec<usize> = (0..v.len()).collect();
            want.sort_by(|&a, &b| v[a].total_cmp(&v[b]).then(a.cmp(&b)));
            assert_eq!(got, want);
        }
    }

    #[test]
    fn hand_computed_auc_with_ties() {
        // positives 3, 2; negatives 2, 1: pairs (3>2)(3>1)(2=2 → ½)(2>1) = 3.5 / 4
        let s = [3.0, 2.0, 2.0, 1.0];
        let y = [true, true, false, false];
        assert_eq!(auc(&s, &y), 0.875);
        assert_eq!(auc_brute_force(&s, &y), 0.875);
        assert!((roc_area(&roc_curve(&s, &y)) - 0.875).abs() < 1e-15);
    }

    /// The curve from the shared ascending order against the descending walk
    /// it replaced, with many ties.
    #[test]
    fn roc_from_the_order_is_the_descending_walk() {
        let s: Vec<f64> = (0..5000)
            .map(|k| ((k * 7919) % 97) as f64 * 0.5 - 3.0)
            .collect();
        let y: Vec<bool> = (0..5000).map(|k| (k * 31) % 7 < 3).collect();
        let mut order: Vec<usize> = (0..s.len()).collect();
        order.sort_by(|&a, &b| s[b].total_cmp(&s[a]));
        let (np, nn) = (
            y.iter().filter(|&&b| b).count() as f64,
            y.iter().filter(|&&b| !b).count() as f64,
        );
        let mut want = vec![RocPoint { fpr: 0.0, tpr: 0.0 }];
        let (mut tp, mut fp, mut g) = (0.0, 0.0, 0);
        while g < order.len() {
            let v = s[order[g]];
            while g < order.len() && s[order[g]] == v {
                if y[order[g]] {
                    tp += 1.0
                } else {
                    fp += 1.0
                }
                g += 1;
            }
            want.push(RocPoint {
                fpr: fp / nn,
                tpr: tp / np,
            });
        }
        let got = roc_curve(&s, &y);
        assert_eq!(got.len(), want.len());
        for (a, b) in got.iter().zip(&want) {
            assert_eq!((a.fpr, a.tpr), (b.fpr, b.tpr));
        }
        assert!((roc_area(&got) - auc(&s, &y)).abs() < 1e-12);
    }

    #[test]
    fn one_class_is_nan() {
        assert!(auc(&[1.0, 2.0], &[true, true]).is_nan());
    }
}
