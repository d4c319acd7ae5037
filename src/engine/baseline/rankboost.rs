//! RankBoost.B (Freund, Iyer, Schapire & Singer 2003), RACL14's "Rankboost":
//! bipartite weights, threshold weak rankers `1{x_k > t}`, O(n·d) per round after
//! one sort per feature. The number of rounds is chosen by stratified CV AUC
//! unless given (`select::kfold`, one resumed boosting run per fold).

use nalgebra::DMatrix;
use rayon::prelude::*;
use serde_json::json;

use crate::engine::event::{Event, LogLevel};
use crate::engine::fit::{EngineKind, Fit, ScoreModel, Stump};
use crate::engine::interface::{Control, Engine, EngineError, Observer};
use crate::engine::problem::Problem;
use crate::engine::select::{
    CvMethod, CvNames, CvSpec, FoldData, GridWalker, MEMORY_BUDGET, PointFit, Walk, cross_validate,
};

/// Round counts compared by cross-validation (one boosting run per fold gives all).
pub const ROUND_GRID: [usize; 6] = [25, 50, 100, 200, 400, 800];

#[derive(Debug, Clone)]
pub struct RankBoost {
    /// Fixed number of rounds; None = choose among `ROUND_GRID` by CV.
    pub rounds: Option<usize>,
    pub folds: usize,
    pub seed: u64,
}

impl Default for RankBoost {
    fn default() -> Self {
        RankBoost {
            rounds: None,
            folds: 5,
            seed: 0,
        }
    }
}

/// Per feature: row indices by decreasing value, and the thresholds between
/// consecutive distinct values (midpoints).
struct SortedFeatures {
    order: Vec<Vec<usize>>,
}

impl SortedFeatures {
    fn new(x: &DMatrix<f64>) -> Self {
        let order = (0..x.ncols())
            .map(|k| {
                let col = x.column(k);
                let mut o: Vec<usize> = (0..x.nrows()).collect();
                o.sort_by(|&a, &b| col[b].total_cmp(&col[a]));
                o
            })
            .collect();
        SortedFeatures { order }
    }
}

/// Best threshold ranker of feature k under weights `v` (positives +, negatives −):
/// returns (r, threshold) maximising |r|, r = Σ_P v 1{x > t} − Σ_N v 1{x > t}.
fn best_threshold(col: &[f64], order: &[usize], signed_v: &[f64]) -> (f64, f64) {
    let (mut best_r, mut best_t) = (0.0f64, f64::INFINITY);
    let mut r = 0.0;
    for w in 0..order.len() {
        let i = order[w];
        r += signed_v[i];
        // A threshold fits only between distinct values.
        if w + 1 < order.len() && col[order[w + 1]] < col[i] && r.abs() > best_r.abs() {
            best_r = r;
            best_t = 0.5 * (col[i] + col[order[w + 1]]);
        }
    }
    (best_r, best_t)
}

/// RankBoost's state between rounds: boosting can be resumed (the CV walks
/// its grid of round counts on one run per fold).
pub struct Booster {
    sorted: SortedFeatures,
    /// Signed weights: +v_i on positives, −v_j on negatives; each side sums to 1.
    sv: Vec<f64>,
    stumps: Vec<Stump>,
    /// No ranker separates anything any more.
    stopped: bool,
}

impl Booster {
    pub fn new(x: &DMatrix<f64>, y: &[bool]) -> Booster {
        let n_pos = y.iter().filter(|&&b| b).count() as f64;
        let n_neg = y.len() as f64 - n_pos;
        Booster {
            sorted: SortedFeatures::new(x),
            sv: y
                .iter()
                .map(|&b| if b { 1.0 / n_pos } else { -1.0 / n_neg })
                .collect(),
            stumps: Vec::new(),
            stopped: false,
        }
    }

    pub fn stumps(&self) -> &[Stump] {
        &self.stumps
    }

    /// Boosts on the same `x`, `y` until `rounds` rounds in all (fewer when
    /// nothing is left to separate); `on_round(t, stumps)` after each.
    pub fn run_to(
        &mut self,
        x: &DMatrix<f64>,
        y: &[bool],
        rounds: usize,
        ctl: &Control,
        mut on_round: impl FnMut(usize, &[Stump]),
    ) -> Result<(), EngineError> {
        while self.stumps.len() < rounds && !self.stopped {
            let t = self.stumps.len();
            if t.is_multiple_of(16) {
                ctl.checkpoint()?;
            }
            let sv = &self.sv;
            let sorted = &self.sorted;
            let best = (0..x.ncols())
                .into_par_iter()
                .map(|k| {
                    let (r, thr) = best_threshold(x.column(k).as_slice(), &sorted.order[k], sv);
                    (k, r, thr)
                })
                .reduce(
                    || (usize::MAX, 0.0, f64::INFINITY),
                    |a, b| {
                        // Deterministic whatever the split: larger |r|, then smaller feature index.
                        if b.1.abs() > a.1.abs() || (b.1.abs() == a.1.abs() && b.0 < a.0) {
                            b
                        } else {
                            a
                        }
                    },
                );
            let (k, r, thr) = best;
            if k == usize::MAX || r == 0.0 {
                self.stopped = true; // no ranker separates anything any more
                break;
            }
            let r = r.clamp(-1.0 + 1e-12, 1.0 - 1e-12);
            let alpha = 0.5 * ((1.0 + r) / (1.0 - r)).ln();
            // v_i ← v_i e^{−α h} on positives, v_j ← v_j e^{α h} on negatives; renormalise each side.
            let col = x.column(k);
            let (mut sp, mut sn) = (0.0, 0.0);
            for (i, v) in self.sv.iter_mut().enumerate() {
                if col[i] > thr {
                    *v *= if y[i] { (-alpha).exp() } else { alpha.exp() };
                }
                if y[i] { sp += *v } else { sn -= *v }
            }
            for (i, v) in self.sv.iter_mut().enumerate() {
                *v /= if y[i] { sp } else { sn };
            }
            self.stumps.push(Stump {
                feature: k,
                threshold: thr,
                alpha,
            });
            on_round(t + 1, &self.stumps);
        }
        Ok(())
    }
}

/// Runs `rounds` rounds; `on_round(t, stumps)` is called after each.
pub fn boost(
    x: &DMatrix<f64>,
    y: &[bool],
    rounds: usize,
    ctl: &Control,
    on_round: impl FnMut(usize, &[Stump]),
) -> Result<Vec<Stump>, EngineError> {
    let mut b = Booster::new(x, y);
    b.run_to(x, y, rounds, ctl, on_round)?;
    Ok(b.stumps)
}

/// RankBoost as a cross-validated method: one boosting run per fold, its
/// held-out scores read at every round count of the grid.
struct RankBoostCv;

/// One fold's boosting run and its held-out scores.
struct RankBoostWalker {
    booster: Booster,
    scores: Vec<f64>,
}

impl CvMethod for RankBoostCv {
    type Walker = RankBoostWalker;

    fn names(&self) -> CvNames {
        CvNames {
            prefix: "rankboost",
            parameter: "rounds",
            unit: "rounds run",
        }
    }

    fn label(&self, rounds: f64) -> String {
        format!("{rounds} rounds")
    }

    fn start(&self, fold: &FoldData) -> Result<RankBoostWalker, EngineError> {
        Ok(RankBoostWalker {
            booster: Booster::new(&fold.xtr, &fold.ytr),
            scores: vec![0.0; fold.yte.len()],
        })
    }

    fn fold_bytes(&self, positives: usize, negatives: usize, d: usize) -> usize {
        // The rows and one sorted order per feature.
        16 * (positives + negatives) * d
    }
}

impl GridWalker for RankBoostWalker {
    fn fit(
        &mut self,
        rounds: f64,
        fold: &FoldData,
        ctl: &Control,
    ) -> Result<PointFit, EngineError> {
        let scores = &mut self.scores;
        self.booster
            .run_to(&fold.xtr, &fold.ytr, rounds as usize, ctl, |t, st| {
                let s = &st[t - 1];
                for (i, sc) in scores.iter_mut().enumerate() {
                    if fold.xte[(i, s.feature)] > s.threshold {
                        *sc += s.alpha;
                    }
                }
            })?;
        Ok(PointFit::Scored {
            scores: self.scores.clone(),
            iterations: self.booster.stumps().len(),
        })
    }
}

impl Engine for RankBoost {
    fn name(&self) -> &'static str {
        "rankboost"
    }

    fn params(&self) -> serde_json::Value {
        json!({ "rounds": self.rounds, "round_grid": ROUND_GRID, "folds": self.folds, "seed": self.seed })
    }

    fn run(&self, pb: &Problem, ctl: &Control, obs: &mut dyn Observer) -> Result<Fit, EngineError> {
        obs.observe(Event::Started {
            engine: "rankboost".into(),
            n: pb.n(),
            d: pb.d(),
            pairs: pb.pairs(),
            gamma: pb.gamma,
        });
        let (rounds, cv) = match self.rounds {
            Some(0) => return Err(EngineError::InvalidParams("`rounds` must be ≥ 1".into())),
            Some(r) => (r, None),
            None => {
                let spec = CvSpec {
                    folds: self.folds,
                    seed: self.seed,
                    grid: ROUND_GRID.iter().map(|&r| r as f64).collect(),
                    walk: Walk::Ascending,
                    extend_below_to: None,
                    memory_budget: MEMORY_BUDGET,
                };
                let cv = cross_validate(&pb.x, &pb.y, &spec, &RankBoostCv, ctl, &mut |m| {
                    obs.observe(Event::Log {
                        level: LogLevel::Info,
                        message: m,
                    })
                })?;
                let rounds = cv.chosen as usize;
                obs.observe(Event::Log {
                    level: LogLevel::Info,
                    message: format!("rankboost: {rounds} rounds by {}-fold CV AUC", self.folds),
                });
                (rounds, Some(cv))
            }
        };
        let stumps = boost(&pb.x, &pb.y, rounds, ctl, |_, _| {})?;
        let mut fit = Fit::new(
            EngineKind::Rankboost,
            pb.names.clone(),
            ScoreModel::Stumps {
                stumps: stumps.clone(),
            },
        );
        // Importance of a feature: Σ|α| of its rankers (there are no coefficients).
        let mut importance = vec![0.0; pb.d()];
        for s in &stumps {
            importance[s.feature] += s.alpha.abs();
        }
        fit.cv = cv.as_ref().map(|r| r.summary());
        fit.details = json!({
            "rounds": rounds,
            "rounds_run": stumps.len(),
            "importance": pb.names.iter().zip(&importance).map(|(n, v)| json!({"name": n, "sum_abs_alpha": v})).collect::<Vec<_>>(),
            "cv": cv,
        });
        Ok(fit)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::numerics::rng;

    /// Naive RankBoost over the explicit pair distribution D(i, j).
    fn naive(x: &DMatrix<f64>, y: &[bool], rounds: usize) -> Vec<(usize, f64, f64)> {
        let pos: Vec<usize> = (0..y.len()).filter(|&i| y[i]).collect();
        let neg: Vec<usize> = (0..y.len()).filter(|&i| !y[i]).collect();
        let mut dist = vec![vec![1.0 / (pos.len() * neg.len()) as f64; neg.len()]; pos.len()];
        let mut out = Vec::new();
        for _ in 0..rounds {
            let mut best = (0, 0.0f64, 0.0);
            for k in 0..x.ncols() {
                let mut vals: Vec<f64> = x.column(k).iter().copied().collect();
                vals.sort_by(|a, b| b.total_cmp(a));
                vals.dedup();
                for w in vals.windows(2) {
                    let t = 0.5 * (w[0] + w[1]);
                    let h = |i: usize| f64::from(u8::from(x[(i, k)] > t));
                    let mut r = 0.0;
                    for (a, &i) in pos.iter().enumerate() {
                        for (b, &j) in neg.iter().enumerate() {
                            r += dist[a][b] * (h(i) - h(j));
                        }
                    }
                    if r.abs() > best.1.abs() + 1e-12 {
                        best = (k, r, t);
                    }
                }
            }
            let (k, r, t) = best;
            let alpha = 0.5 * ((1.0 + r) / (1.0 - r)).ln();
            let h = |i: usize| f64::from(u8::from(x[(i, k)] > t));
            let mut z = 0.0;
            for (a, &i) in pos.iter().enumerate() {
                for (b, &j) in neg.iter().enumerate() {
                    dist[a][b] *= (alpha * (h(j) - h(i))).exp();
                    z += dist[a][b];
                }
            }
            dist.iter_mut().flatten().for_each(|v| *v /= z);
            out.push((k, alpha, t));
        }
        out
    }

    #[test]
    fn equals_naive_pairwise_rankboost() {
        let mut r = rng::stream(5, &[]);
        let x = DMatrix::from_fn(30, 3, |_, _| (rng::normal(&mut r) * 4.0).round() / 4.0);
        let y: Vec<bool> = (0..30)
            .map(|i| x[(i, 0)] + 0.5 * x[(i, 2)] + rng::normal(&mut r) > 0.0)
            .collect();
        let fast = boost(&x, &y, 8, &Control::new(), |_, _| {}).unwrap();
        let slow = naive(&x, &y, 8);
        for (f, s) in fast.iter().zip(&slow) {
            assert_eq!(f.feature, s.0);
            assert!((f.alpha - s.1).abs() < 1e-10, "{} vs {}", f.alpha, s.1);
            assert!((f.threshold - s.2).abs() < 1e-12);
        }
    }
}
