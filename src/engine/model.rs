//! The fitted model as a run record keeps it: how the training file's columns
//! became features (the schema), the training standardisation, the point score
//! and the posterior spread of the score — everything needed to score new
//! rows exactly as the fit scored its own test rows.
//!
//! A non-linear score (the Gaussian-process prior: kernel, hyper-parameters,
//! standardised landmark rows, predictive weights and the predictive variance
//! in `gp::spread`'s reduced form) is `ScoreModel::Gp`, with its own arm in
//! `Model::predict`; `features` and `scaler` stay as they are.

use nalgebra::{DMatrix, DVector};
use serde::{Deserialize, Serialize};

use super::data::{Dataset, DroppedColumn, Prepared, Schema, Standardizer};
use super::fit::{Fit, LowRankCov, ScoreModel};
use super::numerics::linalg::{a_b, at_b};
use super::numerics::rng;
use super::votes::{Vote, Votes};

/// Largest dimension whose full covariance a record stores (d(d+1)/2 numbers:
/// 16 290 for DNA's 180 features, ~0.4 MB of JSON); above it a factored form.
pub const FULL_COVARIANCE_MAX_D: usize = 400;
/// Rank kept when a large full covariance is truncated.
pub const TRUNCATED_RANK: usize = 64;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Model {
    /// Source columns → encoded features; the target and the positive class.
    pub schema: Schema,
    /// Columns the training dropped (by request, constant) — for the reader.
    pub dropped_columns: Vec<DroppedColumn>,
    /// The encoded features the score uses, in order (the schema's features
    /// less those constant on the training rows).
    pub features: Vec<String>,
    /// Training means and sds of `features`.
    pub scaler: Standardizer,
    /// The point score of standardised rows (posterior mean for Bayesian engines).
    pub score: ScoreModel,
    /// The posterior spread of a linear score: `score_sd(x)² = xᵀ V x`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spread: Option<Spread>,
    /// Sample-based runs (gcs, smc): thinned posterior draws with one threshold
    /// each, for every new row's vote (`agreement`, `--rank-uncertain`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub votes: Option<Votes>,
}

/// The posterior covariance V of a linear score's θ, as stored.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Spread {
    /// The full matrix: its lower triangle, row by row.
    Covariance { lower: Vec<f64> },
    /// `diag(diag) + F C Fᵀ`, F (d × k) stored as k columns, C (k × k) symmetric.
    /// `exact`: the posterior's own form (EP for d ≥ n); otherwise the k leading
    /// eigenpairs of a large covariance, `diag` completing the exact marginal
    /// variances, `captured` the share of the trace the eigenpairs hold.
    LowRank {
        diag: Vec<f64>,
        factor: Vec<Vec<f64>>,
        core: Vec<Vec<f64>>,
        exact: bool,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        captured: Option<f64>,
    },
    /// Posterior draws of θ (rows): the score's spread is that of the draws.
    Samples { theta: Vec<Vec<f64>> },
}

impl Model {
    /// The model of a fit on prepared data.
    pub fn of(ds: &Dataset, prepared: &Prepared, fit: &Fit) -> Model {
        let mut dropped_columns = ds.report.dropped_columns.clone();
        dropped_columns.extend(prepared.info.dropped_constant_in_train.iter().map(|n| {
            DroppedColumn {
                name: n.clone(),
                reason: "constant on the training rows".into(),
            }
        }));
        Model {
            schema: ds.schema.clone(),
            dropped_columns,
            features: prepared.names.clone(),
            scaler: prepared.scaler.clone(),
            score: fit.model.clone(),
            spread: spread_of(fit),
            votes: votes_of(prepared, fit),
        }
    }

    /// The posterior's vote on rows of standardised features (None: the model
    /// keeps no draws).
    pub fn vote(&self, x: &DMatrix<f64>) -> Option<Vec<Vote>> {
        self.votes.as_ref().map(|v| v.vote(x))
    }

    /// Point scores and, where the model has a posterior, their sds, for rows of
    /// standardised features (the columns of `features`).
    pub fn predict(&self, x: &DMatrix<f64>) -> (Vec<f64>, Option<Vec<f64>>) {
        if let ScoreModel::Gp(gp) = &self.score {
            // The predictive mean and variance (the GP model keeps its own spread).
            let (mean, var) = gp.predict(x);
            return (
                mean,
                Some(var.into_iter().map(|v| v.max(0.0).sqrt()).collect()),
            );
        }
        let score = self.score.score(x);
        let sd = match (&self.score, &self.spread) {
            (ScoreModel::Linear { .. }, Some(s)) => Some(s.score_sd(x)),
            _ => None,
        };
        (score, sd)
    }
}

impl Spread {
    /// `√(xᵀVx)` for every row x of `x`.
    pub fn score_sd(&self, x: &DMatrix<f64>) -> Vec<f64> {
        let d = x.ncols();
        let quad: Vec<f64> = match self {
            Spread::Covariance { lower } => {
                let mut v = DMatrix::zeros(d, d);
                let mut it = lower.iter();
                for i in 0..d {
                    for j in 0..=i {
                        let c = *it.next().unwrap_or(&f64::NAN);
                        v[(i, j)] = c;
                        v[(j, i)] = c;
                    }
                }
                let xv = a_b(x, &v);
                row_dots(&xv, x)
            }
            Spread::LowRank {
                diag, factor, core, ..
            } => {
                let f = columns(factor, d);
                let k = f.ncols();
                let c = DMatrix::from_fn(k, k, |i, j| core[i][j]);
                let xf = a_b(x, &f); // n × k
                let xfc = a_b(&xf, &c);
                let low = row_dots(&xfc, &xf);
                x.row_iter()
                    .zip(low)
                    .map(|(row, l)| row.iter().zip(diag).map(|(v, s)| s * v * v).sum::<f64>() + l)
                    .collect()
            }
            Spread::Samples { theta } => {
                let t = DMatrix::from_fn(theta.len(), d, |i, k| theta[i][k]);
                let s = crate::engine::numerics::linalg::a_bt(x, &t); // n × draws
                return s
                    .row_iter()
                    .map(|r| {
                        let m = r.mean();
                        (r.iter().map(|v| (v - m) * (v - m)).sum::<f64>() / r.len() as f64).sqrt()
                    })
                    .collect();
            }
        };
        quad.into_iter().map(|q| q.max(0.0).sqrt()).collect()
    }
}

/// Σ_k a_ik b_ik per row i.
fn row_dots(a: &DMatrix<f64>, b: &DMatrix<f64>) -> Vec<f64> {
    (0..a.nrows())
        .map(|i| {
            a.row(i)
                .iter()
                .zip(b.row(i).iter())
                .map(|(p, q)| p * q)
                .sum()
        })
        .collect()
}

/// A d × k matrix from k stored columns.
fn columns(cols: &[Vec<f64>], d: usize) -> DMatrix<f64> {
    DMatrix::from_fn(d, cols.len(), |i, j| cols[j][i])
}

fn to_rows(m: &DMatrix<f64>) -> Vec<Vec<f64>> {
    m.row_iter().map(|r| r.iter().copied().collect()).collect()
}

fn to_columns(m: &DMatrix<f64>) -> Vec<Vec<f64>> {
    m.column_iter()
        .map(|c| c.iter().copied().collect())
        .collect()
}

/// What a record keeps of a sampler's draws: a linear score's draws, thinned,
/// each with its threshold.
fn votes_of(prepared: &Prepared, fit: &Fit) -> Option<Votes> {
    let p = fit.particles.as_ref()?;
    if !matches!(fit.model, ScoreModel::Linear { .. }) {
        return None;
    }
    Votes::of(
        &p.theta,
        p.weights.as_deref(),
        p.thresholds.as_deref(),
        &prepared.train.x,
        &prepared.train.y,
    )
}

/// What a record keeps of a fit's posterior covariance.
fn spread_of(fit: &Fit) -> Option<Spread> {
    if let Some(v) = &fit.covariance {
        let d = v.nrows();
        if d <= FULL_COVARIANCE_MAX_D {
            let lower = (0..d)
                .flat_map(|i| (0..=i).map(move |j| v[(i, j)]))
                .collect();
            return Some(Spread::Covariance { lower });
        }
        let (low, captured) = truncate(v, TRUNCATED_RANK);
        return Some(Spread::LowRank {
            diag: low.diag,
            factor: to_columns(&low.factor),
            core: to_rows(&low.core),
            exact: false,
            captured: Some(captured),
        });
    }
    fit.low_rank_covariance.as_ref().map(|c| Spread::LowRank {
        diag: c.diag.clone(),
        factor: to_columns(&c.factor),
        core: to_rows(&c.core),
        exact: true,
        captured: None,
    })
}

/// The `k` leading eigenpairs of a covariance by a seeded randomised range
/// finder (Halko, Martinsson & Tropp 2011: k + 16 probes, two power steps,
/// O(d²k)), with the diagonal completed so that marginal variances stay exact.
/// Returns the factored form and the share of the trace the eigenpairs hold.
pub fn truncate(v: &DMatrix<f64>, k: usize) -> (LowRankCov, f64) {
    let d = v.nrows();
    let l = (k + 16).min(d);
    let mut r = rng::stream(0x5eed, &[d as u64]);
    let omega = DMatrix::from_fn(d, l, |_, _| rng::normal(&mut r));
    let mut q = a_b(v, &omega).qr().q();
    for _ in 0..2 {
        q = a_b(v, &q).qr().q();
    }
    let b = at_b(&q, &a_b(v, &q));
    let b = (&b + b.transpose()) * 0.5;
    let eig = b.symmetric_eigen();
    let mut order: Vec<usize> = (0..l).collect();
    order.sort_by(|&a, &c| eig.eigenvalues[c].total_cmp(&eig.eigenvalues[a]));
    order.truncate(k.min(l));
    let lambda: Vec<f64> = order.iter().map(|&i| eig.eigenvalues[i].max(0.0)).collect();
    let u = a_b(&q, &eig.eigenvectors.select_columns(&order)); // d × k
    let diag = (0..d)
        .map(|i| {
            let low: f64 = (0..lambda.len())
                .map(|j| lambda[j] * u[(i, j)] * u[(i, j)])
                .sum();
            (v[(i, i)] - low).max(0.0)
        })
        .collect();
    let trace: f64 = (0..d).map(|i| v[(i, i)]).sum();
    let captured = lambda.iter().sum::<f64>() / trace;
    let core = DMatrix::from_diagonal(&DVector::from_vec(lambda));
    (
        LowRankCov {
            diag,
            factor: u,
            core,
        },
        captured,
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::fit::EngineKind;

    fn quad(v: &DMatrix<f64>, x: &DMatrix<f64>) -> Vec<f64> {
        (0..x.nrows())
            .map(|i| {
                let r = x.row(i).transpose();
                (r.transpose() * v * &r)[(0, 0)].sqrt()
            })
            .collect()
    }

    fn spd(d: usize, seed: u64) -> DMatrix<f64> {
        let mut r = rng::stream(seed, &[]);
        let a = DMatrix::from_fn(d, d + 3, |_, _| rng::normal(&mut r));
        &a * a.transpose() / d as f64
    }

    #[test]
    fn every_stored_form_gives_the_score_sd() {
        let (d, n) = (6, 9);
        let v = spd(d, 1);
        let mut r = rng::stream(2, &[]);
        let x = DMatrix::from_fn(n, d, |_, _| rng::normal(&mut r));
        let want = quad(&v, &x);
        let close = |got: Vec<f64>, tol: f64| {
            for (g, w) in got.iter().zip(&want) {
                assert!((g - w).abs() <= tol * w, "{g} vs {w}");
            }
        };
        let mut fit = Fit::new(
            EngineKind::Ep,
            vec!["a".into(); d],
            ScoreModel::Linear {
                weights: vec![0.0; d],
            },
        );
        fit.covariance = Some(v.clone());
        close(spread_of(&fit).unwrap().score_sd(&x), 1e-12);
        // Factored exactly (an indefinite core, as EP's reduced form has).
        let f = DMatrix::from_fn(d, 2, |i, j| (i + 2 * j) as f64 / 7.0);
        let c = DMatrix::from_row_slice(2, 2, &[0.3, -0.1, -0.1, -0.05]);
        let full = DMatrix::from_diagonal(&v.diagonal()) + &f * &c * f.transpose();
        let want_low = quad(&full, &x);
        fit.covariance = None;
        fit.low_rank_covariance = Some(LowRankCov {
            diag: v.diagonal().iter().copied().collect(),
            factor: f,
            core: c,
        });
        let got = spread_of(&fit).unwrap().score_sd(&x);
        for (g, w) in got.iter().zip(&want_low) {
            assert!((g - w).abs() <= 1e-12 * w);
        }
        // Truncation at full rank is exact; marginal variances are exact at any rank.
        let (t, captured) = truncate(&v, d);
        assert!((captured - 1.0).abs() < 1e-10);
        let back = DMatrix::from_diagonal(&DVector::from_vec(t.diag.clone()))
            + &t.factor * &t.core * t.factor.transpose();
        assert!((&back - &v).amax() < 1e-10);
        let (t2, c2) = truncate(&v, 2);
        assert!(c2 < 1.0);
        let back2 = DMatrix::from_diagonal(&DVector::from_vec(t2.diag.clone()))
            + &t2.factor * &t2.core * t2.factor.transpose();
        assert!((back2.diagonal() - v.diagonal()).amax() < 1e-10);
        // Draws: the sd of the draws' scores.
        let theta = vec![vec![1.0; d], vec![-1.0; d]];
        let s = Spread::Samples { theta }.score_sd(&x);
        for (i, si) in s.iter().enumerate() {
            assert!((si - x.row(i).sum().abs()).abs() < 1e-12);
        }
    }

    #[test]
    fn large_covariances_are_stored_factored() {
        let d = FULL_COVARIANCE_MAX_D + 1;
        let mut fit = Fit::new(
            EngineKind::Smc,
            vec!["a".into(); d],
            ScoreModel::Linear {
                weights: vec![0.0; d],
            },
        );
        fit.covariance = Some(DMatrix::identity(d, d));
        match spread_of(&fit).unwrap() {
            Spread::LowRank { factor, exact, .. } => {
                assert_eq!(factor.len(), TRUNCATED_RANK);
                assert!(!exact);
            }
            other => panic!("{other:?}"),
        }
    }
}
