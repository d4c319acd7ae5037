//! What posterior draws are for (GH00 §4), for any sampler's draws of a linear
//! score: Bayesian transduction (each row's posterior vote and its agreement),
//! the rejection curve (error against the share of rows rejected by lowest
//! agreement), active learning (rows ranked by the entropy of their vote). The
//! Bayes point — the posterior mean, the score of a `Fit` — approximates the
//! transductive vote with one classifier.

use nalgebra::DMatrix;
use serde::{Deserialize, Serialize};

use crate::engine::linalg::a_bt;
use crate::engine::mcmc_diag::quantile_sorted;

/// Where a draw's score says "positive".
#[derive(Debug, Clone, PartialEq)]
pub enum Threshold {
    /// One score threshold for every draw (0 for a classifier whose intercept
    /// is a feature).
    Score(f64),
    /// One threshold per draw, e.g. minus each draw's intercept, or a quantile
    /// of its training scores ([`train_quantile_thresholds`]); an AUC score has
    /// no scale of its own, so a fixed threshold would mean different things
    /// for different draws.
    PerDraw(Vec<f64>),
}

/// The posterior vote on one row.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Vote {
    /// Share of draws that score the row above their threshold.
    pub positive_share: f64,
    /// The majority decision (ties: positive).
    pub positive: bool,
    /// Share of draws that agree with the majority, in [½, 1].
    pub agreement: f64,
    /// Binary entropy of the vote in bits, in [0, 1] (GH00's active-learning
    /// score: large = the posterior is split on this row).
    pub entropy: f64,
}

/// Rows per block of the score products (bounds the memory at rows × draws).
const BLOCK: usize = 2048;

/// The vote of `draws` (S × d) on every row of `rows` (n × d).
pub fn transduction(draws: &DMatrix<f64>, rows: &DMatrix<f64>, threshold: &Threshold) -> Vec<Vote> {
    let s = draws.nrows();
    assert_eq!(
        draws.ncols(),
        rows.ncols(),
        "draws and rows have different widths"
    );
    if let Threshold::PerDraw(t) = threshold {
        assert_eq!(t.len(), s, "one threshold per draw");
    }
    let cut = |j: usize| match threshold {
        Threshold::Score(t) => *t,
        Threshold::PerDraw(t) => t[j],
    };
    let mut votes = Vec::with_capacity(rows.nrows());
    for start in (0..rows.nrows()).step_by(BLOCK) {
        let len = BLOCK.min(rows.nrows() - start);
        let scores = a_bt(&rows.rows(start, len).into_owned(), draws); // len × S
        for i in 0..len {
            let above = (0..s).filter(|&j| scores[(i, j)] > cut(j)).count();
            votes.push(vote(above as f64 / s as f64));
        }
    }
    votes
}

fn vote(p: f64) -> Vote {
    let h = |x: f64| if x > 0.0 { -x * x.log2() } else { 0.0 };
    Vote {
        positive_share: p,
        positive: p >= 0.5,
        agreement: p.max(1.0 - p),
        entropy: h(p) + h(1.0 - p),
    }
}

/// Per draw, the `q`-quantile of its scores on `train` rows: with q = 1 − the
/// share of positives, each draw calls positive as many training rows as there
/// are positives (scale-free, so usable for AUC posteriors).
pub fn train_quantile_thresholds(draws: &DMatrix<f64>, train: &DMatrix<f64>, q: f64) -> Vec<f64> {
    let scores = a_bt(draws, train); // S × n
    scores
        .row_iter()
        .map(|r| {
            let mut v: Vec<f64> = r.iter().copied().collect();
            v.sort_unstable_by(f64::total_cmp);
            quantile_sorted(&v, q)
        })
        .collect()
}

/// One point of the rejection curve.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct RejectionPoint {
    /// Share of rows rejected (those of lowest agreement).
    pub rejected: f64,
    /// Rows kept and the error of the majority vote on them.
    pub kept: usize,
    pub error: f64,
}

/// Error of the majority vote against the share of rows rejected, lowest
/// agreement first (rows of equal agreement are rejected together), from no row
/// rejected to all but the most agreed ones.
pub fn rejection_curve(votes: &[Vote], labels: &[bool]) -> Vec<RejectionPoint> {
    assert_eq!(votes.len(), labels.len());
    let n = votes.len();
    let mut order: Vec<usize> = (0..n).collect();
    order.sort_by(|&a, &b| votes[a].agreement.total_cmp(&votes[b].agreement));
    let wrong = |i: usize| usize::from(votes[i].positive != labels[i]);
    let mut errors: usize = (0..n).map(wrong).sum();
    let mut curve = vec![RejectionPoint {
        rejected: 0.0,
        kept: n,
        error: errors as f64 / n.max(1) as f64,
    }];
    let mut i = 0;
    while i < n {
        let level = votes[order[i]].agreement;
        while i < n && votes[order[i]].agreement == level {
            errors -= wrong(order[i]);
            i += 1;
        }
        if i < n {
            curve.push(RejectionPoint {
                rejected: i as f64 / n as f64,
                kept: n - i,
                error: errors as f64 / (n - i) as f64,
            });
        }
    }
    curve
}

/// Rows ranked for labelling: highest vote entropy first (ties by index).
pub fn rank_uncertain(votes: &[Vote]) -> Vec<usize> {
    let mut order: Vec<usize> = (0..votes.len()).collect();
    order.sort_by(|&a, &b| {
        votes[b]
            .entropy
            .total_cmp(&votes[a].entropy)
            .then(a.cmp(&b))
    });
    order
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn votes_agreement_entropy_and_ranking() {
        // Three draws in 2-D; rows chosen so the votes are 3/3, 2/3, 1/3 and 0/3.
        let draws = DMatrix::from_row_slice(3, 2, &[1.0, 0.0, 1.0, 1.0, 0.0, 1.0]);
        let rows = DMatrix::from_row_slice(4, 2, &[1.0, 1.0, 1.0, -0.5, -1.0, 0.5, -1.0, -1.0]);
        let v = transduction(&draws, &rows, &Threshold::Score(0.0));
        let shares: Vec<f64> = v.iter().map(|x| x.positive_share).collect();
        assert_eq!(shares, vec![1.0, 2.0 / 3.0, 1.0 / 3.0, 0.0]);
        assert!((v[1].agreement - 2.0 / 3.0).abs() < 1e-15 && v[1].positive && !v[2].positive);
        let h = -(2.0 / 3.0f64) * (2.0 / 3.0f64).log2() - (1.0 / 3.0) * (1.0 / 3.0f64).log2();
        assert!((v[1].entropy - h).abs() < 1e-12 && v[0].entropy == 0.0);
        assert_eq!(rank_uncertain(&v), vec![1, 2, 0, 3]);
        // Per-draw thresholds: the second draw's is raised above its scores.
        let v2 = transduction(&draws, &rows, &Threshold::PerDraw(vec![0.0, 5.0, 0.0]));
        assert_eq!(v2[0].positive_share, 2.0 / 3.0);
    }

    #[test]
    fn rejection_curve_drops_the_least_agreed_rows_first() {
        let v: Vec<Vote> = [0.9, 0.55, 0.2, 0.5, 1.0].into_iter().map(vote).collect();
        // Majority: +, +, −, + (tie), +; labels make the two doubtful rows wrong.
        let labels = [true, false, false, false, true];
        let c = rejection_curve(&v, &labels);
        assert_eq!(c[0].kept, 5);
        assert!((c[0].error - 0.4).abs() < 1e-15);
        // Rejecting the 0.5 row (agreement ½), then the 0.55 row: error 1/4, then 0.
        assert_eq!((c[1].kept, c[1].error), (4, 0.25));
        assert_eq!((c[2].kept, c[2].error), (3, 0.0));
        assert_eq!(c.last().unwrap().kept, 1);
    }

    #[test]
    fn quantile_thresholds_call_the_right_number_of_rows() {
        let draws = DMatrix::from_row_slice(2, 1, &[1.0, -2.0]);
        let train = DMatrix::from_column_slice(4, 1, &[1.0, 2.0, 3.0, 4.0]);
        let t = train_quantile_thresholds(&draws, &train, 0.75);
        let v = transduction(&draws, &train, &Threshold::PerDraw(t));
        // Each draw calls exactly its top row positive.
        let per_draw: f64 = v.iter().map(|x| x.positive_share).sum();
        assert!((per_draw - 1.0).abs() < 1e-15);
    }
}
