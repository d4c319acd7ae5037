//! RankBoost.B (Freund, Iyer, Schapire & Singer 2003), RACL14's "Rankboost":
//! bipartite weights, threshold weak rankers `1{x_k > t}`, O(n·d) per round after
//! one sort per feature. The number of rounds is chosen by stratified CV AUC
//! unless given.

use nalgebra::DMatrix;
use rayon::prelude::*;
use serde_json::json;

use crate::engine::data::prepare::{fold_indices, stratified_folds};
use crate::engine::event::{Event, LogLevel};
use crate::engine::fit::{Fit, ScoreModel, Stump};
use crate::engine::metrics::auc;
use crate::engine::problem::Problem;
use crate::engine::run::{Control, Engine, EngineError, Observer};

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

/// Runs `rounds` rounds; `on_round(t, stumps)` is called after each.
pub fn boost(
    x: &DMatrix<f64>,
    y: &[bool],
    rounds: usize,
    ctl: &Control,
    mut on_round: impl FnMut(usize, &[Stump]),
) -> Result<Vec<Stump>, EngineError> {
    let sorted = SortedFeatures::new(x);
    let n_pos = y.iter().filter(|&&b| b).count() as f64;
    let n_neg = y.len() as f64 - n_pos;
    // Signed weights: +v_i on positives, −v_j on negatives; each side sums to 1.
    let mut sv: Vec<f64> = y
        .iter()
        .map(|&b| if b { 1.0 / n_pos } else { -1.0 / n_neg })
        .collect();
    let mut stumps = Vec::with_capacity(rounds);
    for t in 0..rounds {
        if t % 16 == 0 {
            ctl.checkpoint()?;
        }
        let best = (0..x.ncols())
            .into_par_iter()
            .map(|k| {
                let (r, thr) = best_threshold(x.column(k).as_slice(), &sorted.order[k], &sv);
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
            break; // no ranker separates anything any more
        }
        let r = r.clamp(-1.0 + 1e-12, 1.0 - 1e-12);
        let alpha = 0.5 * ((1.0 + r) / (1.0 - r)).ln();
        // v_i ← v_i e^{−α h} on positives, v_j ← v_j e^{α h} on negatives; renormalise each side.
        let col = x.column(k);
        let (mut sp, mut sn) = (0.0, 0.0);
        for (i, v) in sv.iter_mut().enumerate() {
            if col[i] > thr {
                *v *= if y[i] { (-alpha).exp() } else { alpha.exp() };
            }
            if y[i] { sp += *v } else { sn -= *v }
        }
        for (i, v) in sv.iter_mut().enumerate() {
            *v /= if y[i] { sp } else { sn };
        }
        stumps.push(Stump {
            feature: k,
            threshold: thr,
            alpha,
        });
        on_round(t + 1, &stumps);
    }
    Ok(stumps)
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
                if self.folds < 2 {
                    return Err(EngineError::InvalidParams(
                        "cross-validation needs `folds` ≥ 2".into(),
                    ));
                }
                let cv = cv_rounds(&pb.x, &pb.y, self.folds, self.seed, ctl)?;
                let best =
                    (0..ROUND_GRID.len()).fold(0, |b, g| if cv[g] > cv[b] + 1e-9 { g } else { b });
                obs.observe(Event::Log {
                    level: LogLevel::Info,
                    message: format!(
                        "rankboost: {} rounds by {}-fold CV AUC",
                        ROUND_GRID[best], self.folds
                    ),
                });
                (ROUND_GRID[best], Some(cv))
            }
        };
        let stumps = boost(&pb.x, &pb.y, rounds, ctl, |_, _| {})?;
        let mut fit = Fit::new(
            "rankboost",
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
        fit.details = json!({
            "rounds": rounds,
            "rounds_run": stumps.len(),
            "importance": pb.names.iter().zip(&importance).map(|(n, v)| json!({"name": n, "sum_abs_alpha": v})).collect::<Vec<_>>(),
            "cv": cv.map(|c| json!({ "folds": self.folds, "rounds": ROUND_GRID, "auc": c })),
        });
        Ok(fit)
    }
}

/// Mean CV AUC after each number of rounds in `ROUND_GRID`.
fn cv_rounds(
    x: &DMatrix<f64>,
    y: &[bool],
    folds: usize,
    seed: u64,
    ctl: &Control,
) -> Result<Vec<f64>, EngineError> {
    let assignment = stratified_folds(y, folds, seed);
    let max_rounds = *ROUND_GRID.last().expect("non-empty");
    let per_fold: Vec<Vec<f64>> = (0..folds)
        .map(|f| {
            let (tr, te) = fold_indices(&assignment, f);
            let xtr = x.select_rows(&tr);
            let ytr: Vec<bool> = tr.iter().map(|&i| y[i]).collect();
            let xte = x.select_rows(&te);
            let yte: Vec<bool> = te.iter().map(|&i| y[i]).collect();
            let mut aucs = vec![f64::NAN; ROUND_GRID.len()];
            let mut scores = vec![0.0; te.len()];
            let mut done = 0;
            let stumps = boost(&xtr, &ytr, max_rounds, ctl, |t, st| {
                let s = &st[t - 1];
                for (i, sc) in scores.iter_mut().enumerate() {
                    if xte[(i, s.feature)] > s.threshold {
                        *sc += s.alpha;
                    }
                }
                if let Some(g) = ROUND_GRID.iter().position(|&r| r == t) {
                    aucs[g] = auc(&scores, &yte);
                    done = g + 1;
                }
            })?;
            // Boosting stops early when nothing is left to separate: later grid points equal the last.
            let last = auc(&scores, &yte);
            for a in aucs.iter_mut().skip(done) {
                *a = last;
            }
            debug_assert!(stumps.len() <= max_rounds);
            Ok(aucs)
        })
        .collect::<Result<_, EngineError>>()?;
    Ok((0..ROUND_GRID.len())
        .map(|g| {
            let v: Vec<f64> = per_fold
                .iter()
                .map(|a| a[g])
                .filter(|a| a.is_finite())
                .collect();
            v.iter().sum::<f64>() / v.len().max(1) as f64
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::rng;

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
