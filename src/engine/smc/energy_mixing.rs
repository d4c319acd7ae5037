//! How far a stage's moves refresh the chains' energy (their risk), beside the
//! coordinates: log Ẑ's increments are weighted means of exp(−δR) and so hang
//! on the cloud's low-risk tail. A kernel whose coordinates decorrelate in a
//! few steps can still leave a chain's risk — above all in the low-risk tail,
//! where near-independence proposals are refused — tied to its stage-start
//! value, and then a cloud's luck in that tail would carry from stage to
//! stage. Measured on an 84-feature adult subsample (docs/BENCHMARKS.md, "the
//! energy mixes"): at every stage's stop the risk's rank correlation is
//! 0.02–0.07 and the tail's at noise, so there log Ẑ's excess spread is not
//! the energy's.

use serde::{Deserialize, Serialize};

use crate::engine::mcmc_diag::average_ranks;

/// Share of the chains, lowest risk at the stage's start, that make up the tail.
pub const TAIL_SHARE: f64 = 0.05;

/// Rank statistics of the chains' risk after the moves against its value at
/// the stage's start.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct EnergyMixing {
    /// Spearman correlation of the risk with its stage-start value.
    pub rank_correlation: f64,
    /// The same over the chains in the stage-start tail (lowest `TAIL_SHARE`).
    pub tail_rank_correlation: f64,
    /// Share of the stage-start tail still in the tail of the moved cloud
    /// (`TAIL_SHARE` when the moves forget the start, 1 when nothing moved).
    pub tail_kept: f64,
}

/// The rank statistics of `cur` (the chains' risk now) against `start`.
pub fn measure(start: &[f64], cur: &[f64]) -> EnergyMixing {
    assert_eq!(start.len(), cur.len(), "one risk per chain at both ends");
    let m = start.len();
    let k = ((TAIL_SHARE * m as f64).ceil() as usize).clamp(1, m.max(1));
    let tail_start = lowest(start, k);
    let tail_now = lowest(cur, k);
    let mut in_tail_now = vec![false; m];
    tail_now.iter().for_each(|&j| in_tail_now[j] = true);
    let kept = tail_start.iter().filter(|&&j| in_tail_now[j]).count();
    let a: Vec<f64> = tail_start.iter().map(|&j| start[j]).collect();
    let b: Vec<f64> = tail_start.iter().map(|&j| cur[j]).collect();
    EnergyMixing {
        rank_correlation: spearman(start, cur),
        tail_rank_correlation: spearman(&a, &b),
        tail_kept: kept as f64 / k.max(1) as f64,
    }
}

/// Indices of the `k` smallest values (ties by index: deterministic).
fn lowest(v: &[f64], k: usize) -> Vec<usize> {
    let mut idx: Vec<usize> = (0..v.len()).collect();
    idx.sort_by(|&i, &j| v[i].total_cmp(&v[j]).then(i.cmp(&j)));
    idx.truncate(k);
    idx
}

/// Spearman's rank correlation (average ranks for ties; 0 when either side
/// is constant).
pub fn spearman(a: &[f64], b: &[f64]) -> f64 {
    pearson(&average_ranks(a), &average_ranks(b))
}

/// Pearson's correlation (0 when either side is constant).
pub(super) fn pearson(a: &[f64], b: &[f64]) -> f64 {
    let n = a.len().max(1) as f64;
    let (ma, mb) = (a.iter().sum::<f64>() / n, b.iter().sum::<f64>() / n);
    let (mut ab, mut aa, mut bb) = (0.0, 0.0, 0.0);
    for (x, y) in a.iter().zip(b) {
        ab += (x - ma) * (y - mb);
        aa += (x - ma) * (x - ma);
        bb += (y - mb) * (y - mb);
    }
    if aa <= 0.0 || bb <= 0.0 {
        0.0
    } else {
        ab / (aa * bb).sqrt()
    }
}

/// Largest |Pearson correlation| between start and current values over the
/// coordinates and the risk (0 where either side is constant). One pass for
/// the means, one for the moments, over all columns at once.
pub(super) fn max_correlation(
    start: &[f64],
    start_risk: &[f64],
    cur: &[f64],
    cur_risk: &[f64],
    d: usize,
) -> f64 {
    let n = start_risk.len().max(1) as f64;
    let w = d + 1;
    let (mut ma, mut mb) = (vec![0.0; w], vec![0.0; w]);
    for i in 0..start_risk.len() {
        let (a, b) = (&start[i * d..(i + 1) * d], &cur[i * d..(i + 1) * d]);
        for k in 0..d {
            ma[k] += a[k];
            mb[k] += b[k];
        }
        ma[d] += start_risk[i];
        mb[d] += cur_risk[i];
    }
    ma.iter_mut().chain(mb.iter_mut()).for_each(|m| *m /= n);
    let (mut cab, mut caa, mut cbb) = (vec![0.0; w], vec![0.0; w], vec![0.0; w]);
    for i in 0..start_risk.len() {
        let (a, b) = (&start[i * d..(i + 1) * d], &cur[i * d..(i + 1) * d]);
        for k in 0..w {
            let (x, y) = if k < d {
                (a[k] - ma[k], b[k] - mb[k])
            } else {
                (start_risk[i] - ma[d], cur_risk[i] - mb[d])
            };
            cab[k] += x * y;
            caa[k] += x * x;
            cbb[k] += y * y;
        }
    }
    (0..w)
        .map(|k| {
            if caa[k] <= 0.0 || cbb[k] <= 0.0 {
                0.0
            } else {
                (cab[k] / (caa[k] * cbb[k]).sqrt()).abs()
            }
        })
        .fold(0.0, f64::max)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranks_average_ties() {
        assert_eq!(
            average_ranks(&[3.0, 1.0, 3.0, 2.0]),
            vec![3.5, 1.0, 3.5, 2.0]
        );
    }

    /// Nothing moved: every statistic says so; a monotone change of the risk
    /// keeps the ranks; reversed ranks give −1.
    #[test]
    fn unmoved_monotone_and_reversed() {
        let start: Vec<f64> = (0..200).map(|i| ((i * 37) % 200) as f64).collect();
        let e = measure(&start, &start);
        assert_eq!(
            (e.rank_correlation, e.tail_rank_correlation, e.tail_kept),
            (1.0, 1.0, 1.0)
        );
        let squashed: Vec<f64> = start.iter().map(|r| (r / 50.0).exp()).collect();
        assert!((measure(&start, &squashed).rank_correlation - 1.0).abs() < 1e-12);
        let reversed: Vec<f64> = start.iter().map(|r| -r).collect();
        let e = measure(&start, &reversed);
        assert!((e.rank_correlation + 1.0).abs() < 1e-12);
        assert_eq!(e.tail_kept, 0.0);
    }

    /// Independent risks: the tail keeps about `TAIL_SHARE` of its chains
    /// (binomial: 2 000 chains, tail 100, sd of the share ≈ 0.022; the bound
    /// 0.05 ± 0.07 is > 3 sd) and the rank correlation is ≈ 0 (sd 1/√2000).
    #[test]
    fn independent_risks_forget_the_tail() {
        let mut r = crate::engine::numerics::rng::stream(7, &[]);
        let start: Vec<f64> = (0..2000)
            .map(|_| crate::engine::numerics::rng::normal(&mut r))
            .collect();
        let cur: Vec<f64> = (0..2000)
            .map(|_| crate::engine::numerics::rng::normal(&mut r))
            .collect();
        let e = measure(&start, &cur);
        assert!(e.rank_correlation.abs() < 0.1, "{e:?}");
        assert!((e.tail_kept - TAIL_SHARE).abs() < 0.07, "{e:?}");
    }
}
