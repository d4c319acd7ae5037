//! L2-penalised logistic regression by Newton/IRLS (RACL14's "Logit" column),
//! the penalty chosen by stratified k-fold cross-validated AUC (`select::kfold`:
//! λ walked from large to small, warm-started; ties go to the larger λ).

use nalgebra::{DMatrix, DVector};
use serde_json::json;

use crate::engine::event::{Event, LogLevel};
use crate::engine::fit::{EngineKind, Fit, ScoreModel};
use crate::engine::interface::{Control, Engine, EngineError, Observer};
use crate::engine::numerics::linalg::at_b;
use crate::engine::problem::Problem;
use crate::engine::select::{
    CvMethod, CvNames, CvSpec, FoldData, GridWalker, MEMORY_BUDGET, PointFit, Walk, cross_validate,
};

/// Penalty grid λ = 10^(−3 … 3) in half decades (λ multiplies ½‖β‖²; the
/// log-likelihood is a sum over rows, so large n needs small λ less often).
pub fn default_grid() -> Vec<f64> {
    (0..13).map(|k| 10f64.powf(-3.0 + 0.5 * k as f64)).collect()
}

#[derive(Debug, Clone)]
pub struct Logit {
    /// Fixed penalty; None = choose on `grid` by CV.
    pub lambda: Option<f64>,
    pub grid: Vec<f64>,
    pub folds: usize,
    pub seed: u64,
}

impl Default for Logit {
    fn default() -> Self {
        Logit {
            lambda: None,
            grid: default_grid(),
            folds: 5,
            seed: 0,
        }
    }
}

/// A fitted model: intercept, coefficients and the inverse Hessian's diagonal
/// (Laplace posterior variances under the N(0, 1/λ) prior).
#[derive(Debug, Clone)]
pub struct LogitFit {
    pub intercept: f64,
    pub beta: DVector<f64>,
    pub var: DVector<f64>,
    pub iterations: usize,
}

fn sigmoid(t: f64) -> f64 {
    if t >= 0.0 {
        1.0 / (1.0 + (-t).exp())
    } else {
        let e = t.exp();
        e / (1.0 + e)
    }
}

/// log(1 + e^t) without overflow.
fn softplus(t: f64) -> f64 {
    if t > 0.0 {
        t + (-t).exp().ln_1p()
    } else {
        t.exp().ln_1p()
    }
}

fn objective(z: &DMatrix<f64>, y: &[bool], w: &DVector<f64>, lambda: f64) -> f64 {
    let eta = z * w;
    let nll: f64 = eta
        .iter()
        .zip(y)
        .map(|(&e, &yi)| softplus(e) - if yi { e } else { 0.0 })
        .sum();
    nll + 0.5 * lambda * w.rows(1, w.len() - 1).norm_squared()
}

/// Newton's method on `z = [1 | X]` with a backtracking line search; `w0` warm start.
fn newton(
    z: &DMatrix<f64>,
    y: &[bool],
    lambda: f64,
    w0: Option<&DVector<f64>>,
) -> (DVector<f64>, DMatrix<f64>, usize) {
    let p = z.ncols();
    let mut w = w0.cloned().unwrap_or_else(|| DVector::zeros(p));
    let mut f = objective(z, y, &w, lambda);
    let mut it = 0;
    loop {
        it += 1;
        let eta = z * &w;
        let prob: Vec<f64> = eta.iter().map(|&e| sigmoid(e)).collect();
        let resid = DVector::from_iterator(
            y.len(),
            prob.iter()
                .zip(y)
                .map(|(&pi, &yi)| pi - f64::from(u8::from(yi))),
        );
        let mut grad = z.tr_mul(&resid);
        // Hessian Zᵀ W Z + λ diag(0, 1, …, 1), via (√W Z)ᵀ(√W Z).
        let mut sz = z.clone();
        for (i, mut row) in sz.row_iter_mut().enumerate() {
            row *= (prob[i] * (1.0 - prob[i])).sqrt().max(1e-12);
        }
        let mut hess = at_b(&sz, &sz);
        for k in 1..p {
            grad[k] += lambda * w[k];
            hess[(k, k)] += lambda;
        }
        hess[(0, 0)] += 1e-10 * (1.0 + hess[(0, 0)]); // an intercept alone can run off on one-class folds
        let chol = match hess.clone().cholesky() {
            Some(c) => c,
            None => return (w, hess, it),
        };
        let step = chol.solve(&grad);
        let mut t = 1.0;
        let mut accepted = false;
        while t > 1e-10 {
            let cand = &w - &step * t;
            let fc = objective(z, y, &cand, lambda);
            if fc <= f + 1e-4 * t * -grad.dot(&step) || (fc - f).abs() <= 1e-14 * f.abs() {
                w = cand;
                accepted = fc < f || (fc - f).abs() <= 1e-14 * f.abs();
                f = fc;
                break;
            }
            t *= 0.5;
        }
        let small = step.amax() * t < 1e-10 * (1.0 + w.amax());
        if !accepted || small || it >= 100 {
            return (w, hess, it);
        }
    }
}

/// Fits the penalised model on standardised rows `x`. For d ≥ n the fit runs on the
/// thin-SVD scores `U S` (the optimum lies in the row space of X) and maps back.
pub fn fit_logit(x: &DMatrix<f64>, y: &[bool], lambda: f64, warm: Option<&LogitFit>) -> LogitFit {
    let (n, d) = x.shape();
    if d >= n {
        let svd = x.clone().svd(true, true);
        let s_max = svd.singular_values.max();
        let keep: Vec<usize> = (0..svd.singular_values.len())
            .filter(|&k| svd.singular_values[k] > 1e-10 * s_max)
            .collect();
        let u = svd.u.as_ref().expect("computed").select_columns(&keep);
        let vt = svd.v_t.as_ref().expect("computed").select_rows(&keep); // r × d
        let s = DMatrix::from_diagonal(&DVector::from_iterator(
            keep.len(),
            keep.iter().map(|&k| svd.singular_values[k]),
        ));
        let us = u * s;
        let warm_r = warm.map(|f| LogitFit {
            intercept: f.intercept,
            beta: &vt * &f.beta,
            var: DVector::zeros(0),
            iterations: 0,
        });
        let small = fit_logit_full(&us, y, lambda, warm_r.as_ref());
        let beta = vt.tr_mul(&small.beta);
        // Var β = Wᵀ(H⁻¹ − I/λ)W + I/λ with the reduced block of H⁻¹ (intercept dropped).
        let hinv = small_inverse_block(&us, lambda, &small);
        let mut var = DVector::from_element(d, 1.0 / lambda);
        let delta = &hinv - DMatrix::identity(keep.len(), keep.len()) / lambda;
        let dv = &delta * &vt; // r × d
        for k in 0..d {
            var[k] += vt.column(k).dot(&dv.column(k));
        }
        return LogitFit {
            intercept: small.intercept,
            beta,
            var,
            iterations: small.iterations,
        };
    }
    fit_logit_full(x, y, lambda, warm)
}

fn with_intercept(x: &DMatrix<f64>) -> DMatrix<f64> {
    x.clone().insert_column(0, 1.0)
}

fn fit_logit_full(x: &DMatrix<f64>, y: &[bool], lambda: f64, warm: Option<&LogitFit>) -> LogitFit {
    let z = with_intercept(x);
    let w0 = warm.map(|f| {
        let mut w = DVector::zeros(z.ncols());
        w[0] = f.intercept;
        w.rows_mut(1, f.beta.len()).copy_from(&f.beta);
        w
    });
    let (w, hess, iterations) = newton(&z, y, lambda, w0.as_ref());
    let var = hess
        .try_inverse()
        .map(|h| DVector::from_iterator(x.ncols(), (1..z.ncols()).map(|k| h[(k, k)].max(0.0))))
        .unwrap_or_else(|| DVector::from_element(x.ncols(), f64::NAN));
    LogitFit {
        intercept: w[0],
        beta: w.rows(1, x.ncols()).into_owned(),
        var,
        iterations,
    }
}

/// The β-block of the inverse Hessian at a reduced-form fit.
fn small_inverse_block(us: &DMatrix<f64>, lambda: f64, f: &LogitFit) -> DMatrix<f64> {
    let z = with_intercept(us);
    let mut w = DVector::zeros(z.ncols());
    w[0] = f.intercept;
    w.rows_mut(1, f.beta.len()).copy_from(&f.beta);
    let eta = &z * &w;
    let mut sz = z.clone();
    for (i, mut row) in sz.row_iter_mut().enumerate() {
        let p = sigmoid(eta[i]);
        row *= (p * (1.0 - p)).sqrt();
    }
    let mut h = at_b(&sz, &sz);
    for k in 1..h.ncols() {
        h[(k, k)] += lambda;
    }
    h[(0, 0)] += 1e-10 * (1.0 + h[(0, 0)]);
    let r = f.beta.len();
    h.try_inverse()
        .map(|hi| hi.view((1, 1), (r, r)).into_owned())
        .unwrap_or_else(|| DMatrix::identity(r, r) / lambda)
}

/// Logistic regression as a cross-validated method: λ walked from large to
/// small, each fit warm-started from the last.
struct LogitCv;

/// One fold's last fit (the warm start of the next λ).
struct LogitWalker {
    warm: Option<LogitFit>,
}

impl CvMethod for LogitCv {
    type Walker = LogitWalker;

    fn names(&self) -> CvNames {
        CvNames {
            prefix: "logit",
            parameter: "lambda",
            unit: "Newton iterations",
        }
    }

    fn label(&self, lambda: f64) -> String {
        format!("λ = {lambda:.3e}")
    }

    fn start(&self, _fold: &FoldData) -> Result<LogitWalker, EngineError> {
        Ok(LogitWalker { warm: None })
    }

    fn fold_bytes(&self, positives: usize, negatives: usize, d: usize) -> usize {
        // The rows with an intercept, their weighted copy, the Hessian.
        8 * (2 * (positives + negatives) * (d + 1) + (d + 1) * (d + 1))
    }
}

impl GridWalker for LogitWalker {
    fn fit(
        &mut self,
        lambda: f64,
        fold: &FoldData,
        _ctl: &Control,
    ) -> Result<PointFit, EngineError> {
        let m = fit_logit(&fold.xtr, &fold.ytr, lambda, self.warm.as_ref());
        let scores = (&fold.xte * &m.beta).iter().copied().collect();
        let iterations = m.iterations;
        self.warm = Some(m);
        Ok(PointFit::Scored { scores, iterations })
    }
}

impl Engine for Logit {
    fn name(&self) -> &'static str {
        "logit"
    }

    fn params(&self) -> serde_json::Value {
        json!({ "lambda": self.lambda, "grid": self.grid, "folds": self.folds, "seed": self.seed })
    }

    fn run(&self, pb: &Problem, ctl: &Control, obs: &mut dyn Observer) -> Result<Fit, EngineError> {
        obs.observe(Event::Started {
            engine: "logit".into(),
            n: pb.n(),
            d: pb.d(),
            pairs: pb.pairs(),
            gamma: pb.gamma,
        });
        let (lambda, curve) = match self.lambda {
            Some(l) if l > 0.0 && l.is_finite() => (l, None),
            Some(l) => {
                return Err(EngineError::InvalidParams(format!(
                    "the logit penalty must be > 0; got {l}"
                )));
            }
            None => {
                let spec = CvSpec {
                    folds: self.folds,
                    seed: self.seed,
                    grid: self.grid.clone(),
                    walk: Walk::Descending,
                    extend_below_to: None,
                    memory_budget: MEMORY_BUDGET,
                };
                let cv = cross_validate(&pb.x, &pb.y, &spec, &LogitCv, ctl, &mut |m| {
                    obs.observe(Event::Log {
                        level: LogLevel::Info,
                        message: m,
                    })
                })?;
                obs.observe(Event::Log {
                    level: LogLevel::Info,
                    message: format!("logit: λ = {:.3e} by {}-fold CV AUC", cv.chosen, self.folds),
                });
                (cv.chosen, Some(cv))
            }
        };
        ctl.checkpoint()?;
        let m = fit_logit(&pb.x, &pb.y, lambda, None);
        let weights: Vec<f64> = m.beta.iter().copied().collect();
        let mut fit = Fit::new(
            EngineKind::Logit,
            pb.names.clone(),
            ScoreModel::Linear {
                weights: weights.clone(),
            },
        );
        fit.mean = weights;
        fit.sd = m.var.iter().map(|v| v.sqrt()).collect();
        fit.cv = curve.as_ref().map(|r| r.summary());
        fit.details = json!({
            "lambda": lambda,
            "intercept": m.intercept,
            "newton_iterations": m.iterations,
            "sd_kind": "Laplace (inverse Hessian of the penalised log-likelihood)",
            "cv": curve,
        });
        Ok(fit)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::numerics::rng;

    fn toy(n: usize, d: usize, seed: u64) -> (DMatrix<f64>, Vec<bool>) {
        let mut r = rng::stream(seed, &[]);
        let x = DMatrix::from_fn(n, d, |_, _| rng::normal(&mut r));
        let y = (0..n)
            .map(|i| x[(i, 0)] - 0.5 * x[(i, 1)] + rng::normal(&mut r) > 0.3)
            .collect();
        (x, y)
    }

    /// Gradient of the penalised objective at the fit is zero.
    #[test]
    fn newton_reaches_the_stationary_point() {
        let (x, y) = toy(80, 4, 1);
        let m = fit_logit(&x, &y, 0.7, None);
        let mut g0 = 0.0;
        let mut g = -&m.beta * -0.7;
        for i in 0..80 {
            let r = sigmoid(m.intercept + x.row(i).dot(&m.beta.transpose()))
                - f64::from(u8::from(y[i]));
            g0 += r;
            for k in 0..4 {
                g[k] += r * x[(i, k)];
            }
        }
        assert!(g0.abs() < 1e-8 && g.amax() < 1e-8, "gradient {g0} {g}");
    }

    /// The reduced (SVD) form gives the primal answer, including Laplace variances.
    #[test]
    fn reduced_form_matches_primal() {
        let (x, y) = toy(12, 12, 3);
        let primal = fit_logit_full(&x, &y, 2.0, None);
        let reduced = fit_logit(&x, &y, 2.0, None);
        assert!((primal.beta - &reduced.beta).amax() < 1e-7);
        assert!((primal.var - &reduced.var).amax() < 1e-7);
        assert!((primal.intercept - reduced.intercept).abs() < 1e-7);
    }
}
