//! What posterior draws are for (GH00 §4), for any sampler's draws of a linear
//! score: Bayesian transduction (each row's posterior vote and its agreement),
//! the rejection curve (error against the share of rows rejected by lowest
//! agreement), active learning (rows ranked by the entropy of their vote). The
//! Bayes point — the posterior mean, the score of a `Fit` — approximates the
//! transductive vote with one classifier.
//!
//! A run record keeps a thinned set of draws with one threshold per draw
//! ([`Votes`]) so that `predict` can give every new row its vote.

use nalgebra::DMatrix;
use serde::{Deserialize, Serialize};

use crate::engine::numerics::linalg::a_bt;

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
            votes.push(vote_of_counts(above, s));
        }
    }
    votes
}

/// The vote of `above` of `s` draws; the agreement from the counts, so that
/// 682 of 1000 reads 0.682 (not 1 − 0.318).
fn vote_of_counts(above: usize, s: usize) -> Vote {
    Vote {
        agreement: above.max(s - above) as f64 / s as f64,
        ..vote(above as f64 / s as f64)
    }
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

/// Per draw, the midpoint between its k-th and (k+1)-th largest scores on the
/// `train` rows (1 ≤ k < rows): each draw calls exactly k training rows
/// positive (barring ties there). With k = the training positives this is
/// scale-free, so usable for AUC posteriors, whose draws share no scale.
pub fn top_k_thresholds(draws: &DMatrix<f64>, train: &DMatrix<f64>, k: usize) -> Vec<f64> {
    let n = train.nrows();
    assert!(k >= 1 && k < n, "k = {k} must be in [1, {n})");
    // rows × draws, as `transduction` computes the scores of new rows.
    let scores = a_bt(train, draws);
    scores
        .column_iter()
        .map(|c| {
            let mut v: Vec<f64> = c.iter().copied().collect();
            v.sort_unstable_by(|a, b| b.total_cmp(a));
            0.5 * (v[k - 1] + v[k])
        })
        .collect()
}

/// Draws a record keeps for the vote: up to `VOTE_DRAWS`, fewer when d is
/// large (at most `VOTE_NUMBERS` coefficients in all, at least `MIN_VOTE_DRAWS`
/// draws). 1000 draws give a vote share within ±0.016 (one sd at ½) when the
/// draws are independent.
pub const VOTE_DRAWS: usize = 1000;
const VOTE_NUMBERS: usize = 200_000;
const MIN_VOTE_DRAWS: usize = 100;

/// How many draws a record keeps for dimension `d`.
pub fn kept_draws(d: usize) -> usize {
    (VOTE_NUMBERS / d.max(1)).clamp(MIN_VOTE_DRAWS, VOTE_DRAWS)
}

/// Indices of `k` of `s` draws: evenly spaced (so every chain of a pooled
/// sample gives alike), or by systematic resampling with offset ½ when the
/// draws are weighted; all of them when `s ≤ k` and unweighted.
pub fn thin(s: usize, weights: Option<&[f64]>, k: usize) -> Vec<usize> {
    match weights {
        None if s <= k => (0..s).collect(),
        None => (0..k).map(|i| (i * s + s / 2) / k).collect(),
        Some(w) => {
            let total: f64 = w.iter().sum();
            let mut out = Vec::with_capacity(k);
            let (mut i, mut cum) = (0, w[0] / total);
            for j in 0..k {
                let u = (j as f64 + 0.5) / k as f64;
                while cum < u && i + 1 < s {
                    i += 1;
                    cum += w[i] / total;
                }
                out.push(i);
            }
            out
        }
    }
}

/// How each kept draw's threshold was chosen.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum ThresholdRule {
    /// Each draw calls `positives` of the `rows` training rows positive (the
    /// training share of positives): AUC draws have no scale of their own, so
    /// one score threshold would mean different things for different draws.
    TrainingPositives { positives: usize, rows: usize },
    /// The model's own decision: minus each draw's intercept (label-noise loss).
    Intercept,
}

/// Thinned posterior draws and one threshold each: what a run record keeps so
/// that new rows get the posterior's vote.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Votes {
    pub rule: ThresholdRule,
    /// Rows of θ rounded to f32 (the thresholds are computed from the rounded
    /// draws): seven digits change no vote away from exact ties, and written
    /// with the f32's shortest decimal (a JSON number is an f64: as such
    /// 0.1f32 would print 0.10000000149011612, twice as long).
    #[serde(serialize_with = "shortest_f32_rows")]
    pub theta: Vec<Vec<f32>>,
    pub thresholds: Vec<f64>,
}

/// Each f32 as the f64 of its shortest decimal (read back as the same f32).
fn shortest_f32_rows<S: serde::Serializer>(rows: &[Vec<f32>], s: S) -> Result<S::Ok, S::Error> {
    let short = |x: f32| x.to_string().parse::<f64>().unwrap_or(f64::NAN);
    let rows: Vec<Vec<f64>> = rows
        .iter()
        .map(|r| r.iter().map(|&x| short(x)).collect())
        .collect();
    rows.serialize(s)
}

impl Votes {
    /// The votes of a sampler's draws (rows of `theta`, optionally weighted)
    /// on standardised training rows `train` with labels `y`: thinned to
    /// [`kept_draws`], thresholds by the training share of positives unless the
    /// draws bring their own (`own_thresholds`, one per draw). None when there
    /// are no draws or the training rows are all of one class.
    pub fn of(
        theta: &DMatrix<f64>,
        weights: Option<&[f64]>,
        own_thresholds: Option<&[f64]>,
        train: &DMatrix<f64>,
        y: &[bool],
    ) -> Option<Votes> {
        let (s, d) = theta.shape();
        let positives = y.iter().filter(|&&b| b).count();
        if s == 0 || train.ncols() != d || positives == 0 || positives == y.len() {
            return None;
        }
        let keep = thin(s, weights, kept_draws(d));
        let rounded: Vec<Vec<f32>> = keep
            .iter()
            .map(|&i| theta.row(i).iter().map(|&v| v as f32).collect())
            .collect();
        let mut votes = Votes {
            rule: ThresholdRule::Intercept,
            theta: rounded,
            thresholds: Vec::new(),
        };
        votes.thresholds = match own_thresholds {
            Some(t) => keep.iter().map(|&i| t[i]).collect(),
            None => {
                votes.rule = ThresholdRule::TrainingPositives {
                    positives,
                    rows: y.len(),
                };
                top_k_thresholds(&votes.draws(), train, positives)
            }
        };
        Some(votes)
    }

    /// The kept draws as a matrix (draws × d).
    pub fn draws(&self) -> DMatrix<f64> {
        let d = self.theta.first().map_or(0, Vec::len);
        DMatrix::from_fn(self.theta.len(), d, |i, k| f64::from(self.theta[i][k]))
    }

    /// The vote on every row of `rows` (standardised features).
    pub fn vote(&self, rows: &DMatrix<f64>) -> Vec<Vote> {
        transduction(
            &self.draws(),
            rows,
            &Threshold::PerDraw(self.thresholds.clone()),
        )
    }

    /// One line on how the votes were made.
    pub fn describe(&self) -> String {
        let n = self.theta.len();
        match self.rule {
            ThresholdRule::TrainingPositives { positives, rows } => format!(
                "{n} posterior draws, each calling positive its top {positives} of the {rows} \
                 training rows (the training share of positives)"
            ),
            ThresholdRule::Intercept => {
                format!("{n} posterior draws, each with its own intercept as threshold")
            }
        }
    }
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
    fn thinning_keeps_every_chain_alike_and_follows_the_weights() {
        assert_eq!(thin(3, None, 5), vec![0, 1, 2]);
        // 4 chains of 6 draws, pooled: 2 from each.
        assert_eq!(thin(24, None, 8), vec![1, 4, 7, 10, 13, 16, 19, 22]);
        // Weighted: systematic resampling, 0 weight never picked.
        let w = [0.0, 3.0, 0.0, 1.0];
        assert_eq!(thin(4, Some(&w), 4), vec![1, 1, 1, 3]);
        assert_eq!(kept_draws(7), VOTE_DRAWS);
        assert_eq!(kept_draws(400), 500);
        assert_eq!(kept_draws(100_000), 100);
    }

    #[test]
    fn a_records_votes_reproduce_the_training_count() {
        use crate::engine::numerics::rng::{normal, stream};
        let mut r = stream(3, &[]);
        let train = DMatrix::from_fn(50, 3, |_, _| normal(&mut r));
        let y: Vec<bool> = (0..50).map(|i| i % 3 == 0).collect();
        let theta = DMatrix::from_fn(40, 3, |_, _| normal(&mut r));
        let v = Votes::of(&theta, None, None, &train, &y).unwrap();
        assert_eq!(v.theta.len(), 40);
        // Every draw calls exactly 17 of the 50 rows positive.
        let total: f64 = v.vote(&train).iter().map(|x| x.positive_share).sum();
        assert!((total - 17.0).abs() < 1e-9, "{total}");
        let json = serde_json::to_string(&v).unwrap();
        let back: Votes = serde_json::from_str(&json).unwrap();
        assert_eq!(back, v, "the f32s read back bit for bit");
        let first = serde_json::to_string(&v.theta[0][0]).unwrap();
        assert!(
            json.contains(&format!("[{}", v.theta[0][0])),
            "{first} written long"
        );
        // Own thresholds are kept as given; one class only: no votes.
        let own: Vec<f64> = (0..40).map(f64::from).collect();
        let v = Votes::of(&theta, None, Some(&own), &train, &y).unwrap();
        assert_eq!(
            (v.rule.clone(), v.thresholds[3]),
            (ThresholdRule::Intercept, 3.0)
        );
        assert!(Votes::of(&theta, None, None, &train, &[true; 50]).is_none());
    }

    #[test]
    fn top_k_thresholds_call_the_right_number_of_rows() {
        let draws = DMatrix::from_row_slice(2, 1, &[1.0, -2.0]);
        let train = DMatrix::from_column_slice(4, 1, &[1.0, 2.0, 3.0, 4.0]);
        let t = top_k_thresholds(&draws, &train, 1);
        assert_eq!(t, vec![3.5, -3.0]);
        let v = transduction(&draws, &train, &Threshold::PerDraw(t));
        // Each draw calls exactly its top row positive: row 4 for the first, row 1 for the second.
        let shares: Vec<f64> = v.iter().map(|x| x.positive_share).collect();
        assert_eq!(shares, vec![0.5, 0.0, 0.0, 0.5]);
    }
}
