//! The posterior spread of a test AUC: the AUC of each posterior draw of θ on
//! the same test rows. This is the uncertainty about θ given the training data
//! (how much the fitted score could differ), not the sampling uncertainty of
//! the AUC over test rows (`auc_interval`); a record keeps the two apart.
//!
//! Draws: a sampler's particles (thinned as the votes are, weights respected
//! by systematic resampling) or, for a Gaussian approximation (EP, VB), draws
//! of N(mean, V). Linear scores only (a GP's posterior is over scores).

use nalgebra::{DMatrix, DVector};
use serde::{Deserialize, Serialize};

use super::fit::{Fit, ScoreModel};
use super::metrics::auc;
use super::numerics::linalg::a_bt;
use super::numerics::rng;
use super::votes::thin;

/// Most draws evaluated.
pub const DRAWS: usize = 400;
/// Fewest draws worth a spread (below this the quantiles mean little).
const MIN_DRAWS: usize = 50;
/// Budget of score evaluations (draws × test rows × (d + sort cost)): large
/// test sets get fewer draws rather than minutes of work.
const BUDGET: f64 = 2e8;
/// Largest d for which a factored covariance is made dense to draw from.
const DENSE_MAX_D: usize = 2000;

/// The AUCs of posterior draws on the test rows.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PosteriorAuc {
    pub draws: usize,
    pub mean: f64,
    pub sd: f64,
    /// 2.5% and 97.5% quantiles of the draws' AUCs.
    pub lower: f64,
    pub upper: f64,
    /// Where the draws came from: "particles" or "gaussian".
    pub source: String,
}

/// Draws of θ (rows) from `fit`'s posterior, at most `k`; Err says why none.
fn draws(fit: &Fit, k: usize) -> Result<(DMatrix<f64>, &'static str), String> {
    if !matches!(fit.model, ScoreModel::Linear { .. }) {
        return Err("the score is not linear in θ (a GP's posterior is over scores)".into());
    }
    if let Some(p) = &fit.particles {
        let idx = thin(p.theta.nrows(), p.weights.as_deref(), k);
        return Ok((p.theta.select_rows(&idx), "particles"));
    }
    let d = fit.mean.len();
    let cov = match (&fit.covariance, &fit.low_rank_covariance) {
        (Some(v), _) => v.clone(),
        (None, Some(c)) if d <= DENSE_MAX_D => {
            let mut v = &c.factor * &c.core * c.factor.transpose();
            for i in 0..d {
                v[(i, i)] += c.diag[i];
            }
            v
        }
        (None, Some(_)) => {
            return Err(format!(
                "the posterior covariance is kept in factored form and d = {d} > {DENSE_MAX_D}"
            ));
        }
        (None, None) => return Err("the fit keeps no posterior draws or covariance".into()),
    };
    let l = cholesky_jittered(cov).ok_or("the posterior covariance is not positive definite")?;
    let mean = DVector::from_column_slice(&fit.mean);
    let mut r = rng::stream(0xa0c5, &[d as u64]);
    let z = DMatrix::from_fn(d, k, |_, _| rng::normal(&mut r));
    let theta = (&l * z).transpose();
    Ok((
        DMatrix::from_fn(k, d, |i, j| mean[j] + theta[(i, j)]),
        "gaussian",
    ))
}

/// Cholesky factor of `v`, adding a growing ridge when rounding makes it fail.
fn cholesky_jittered(v: DMatrix<f64>) -> Option<DMatrix<f64>> {
    let d = v.nrows();
    let scale = (0..d)
        .map(|i| v[(i, i)].abs())
        .fold(0.0, f64::max)
        .max(1e-300);
    for jitter in [0.0, 1e-12, 1e-10, 1e-8] {
        let mut w = v.clone();
        for i in 0..d {
            w[(i, i)] += jitter * scale;
        }
        if let Some(c) = w.cholesky() {
            return Some(c.l());
        }
    }
    None
}

/// The posterior spread of the AUC of `fit` on `x`, `y`: Ok(None) for a fit
/// without a posterior (a baseline), Err with the reason when it has one but
/// no spread can be given.
pub fn posterior_auc(
    fit: &Fit,
    x: &DMatrix<f64>,
    y: &[bool],
) -> Result<Option<PosteriorAuc>, String> {
    if fit.gamma.is_none() {
        return Ok(None);
    }
    let (n, d) = x.shape();
    let k = ((BUDGET / (n as f64 * (d as f64 + 20.0))).floor() as usize).min(DRAWS);
    if k < MIN_DRAWS {
        return Err(format!(
            "{n} test rows × {d} features: fewer than {MIN_DRAWS} draws fit the budget"
        ));
    }
    let (theta, source) = draws(fit, k)?;
    if theta.ncols() != d {
        return Err("the posterior's dimension differs from the test rows'".into());
    }
    let scores = a_bt(x, &theta); // n × draws
    let mut aucs: Vec<f64> = scores
        .column_iter()
        .map(|c| auc(c.as_slice(), y))
        .filter(|a| a.is_finite())
        .collect();
    if aucs.len() < MIN_DRAWS {
        return Err("too few draws give an AUC".into());
    }
    aucs.sort_unstable_by(f64::total_cmp);
    let m = aucs.len();
    let mean = aucs.iter().sum::<f64>() / m as f64;
    let sd = (aucs.iter().map(|a| (a - mean) * (a - mean)).sum::<f64>() / (m - 1) as f64).sqrt();
    let q = |p: f64| aucs[((p * (m - 1) as f64).round() as usize).min(m - 1)];
    Ok(Some(PosteriorAuc {
        draws: m,
        mean,
        sd,
        lower: q(0.025),
        upper: q(0.975),
        source: source.into(),
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::fit::Particles;

    fn data(n: usize) -> (DMatrix<f64>, Vec<bool>) {
        let mut r = rng::stream(3, &[]);
        let x = DMatrix::from_fn(n, 2, |_, _| rng::normal(&mut r));
        let y = (0..n)
            .map(|i| x[(i, 0)] + rng::normal(&mut r) > 0.0)
            .collect();
        (x, y)
    }

    fn linear_fit(mean: Vec<f64>) -> Fit {
        let mut f = Fit::new(
            crate::engine::fit::EngineKind::Ep,
            vec!["a".into(), "b".into()],
            ScoreModel::Linear {
                weights: mean.clone(),
            },
        );
        f.mean = mean;
        f.gamma = Some(1.0);
        f
    }

    #[test]
    fn a_point_posterior_has_no_spread_and_a_wide_one_has() {
        let (x, y) = data(300);
        // Every particle the same θ: every draw's AUC is the point's.
        let mut f = linear_fit(vec![1.0, 0.0]);
        f.particles = Some(Particles {
            theta: DMatrix::from_fn(500, 2, |_, j| if j == 0 { 1.0 } else { 0.0 }),
            weights: None,
            thresholds: None,
        });
        let p = posterior_auc(&f, &x, &y).unwrap().unwrap();
        let point = auc((&x * DVector::from_vec(vec![1.0, 0.0])).as_slice(), &y);
        // (The sd is that of equal numbers: zero up to the rounding of their mean.)
        assert!(
            p.sd < 1e-12 && p.lower == point && p.upper == point,
            "{p:?}"
        );
        assert_eq!(p.source, "particles");
        // A Gaussian posterior wide in the useless direction: spread, and the
        // draws' AUCs lie below the point's (noise only hurts the ranking).
        let mut g = linear_fit(vec![1.0, 0.0]);
        g.covariance = Some(DMatrix::from_diagonal(&DVector::from_vec(vec![0.01, 1.0])));
        let p = posterior_auc(&g, &x, &y).unwrap().unwrap();
        // (On a finite sample a few draws may rank a little better than the
        // point by chance, so only the mean is held below it.)
        assert!(p.sd > 0.01 && p.mean < point, "{p:?}");
        assert_eq!(p, posterior_auc(&g, &x, &y).unwrap().unwrap(), "seeded");
        // A baseline: nothing to say.
        let mut b = linear_fit(vec![1.0, 0.0]);
        b.gamma = None;
        assert_eq!(posterior_auc(&b, &x, &y), Ok(None));
    }
}
