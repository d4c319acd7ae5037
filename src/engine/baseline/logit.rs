//! L2-penalised logistic regression by Newton/IRLS (RACL14's "Logit" column),
//! the penalty chosen by stratified k-fold cross-validated AUC (`select::kfold`:
//! λ walked from large to small, warm-started; ties go to the larger λ).
//! Above `cv_rows` training rows the CV runs on a stratified row subsample of
//! m rows and the chosen λ is rescaled by n/m: the objective Σ loss + ½λ‖β‖²
//! has the per-row form mean loss + ½(λ/rows)‖β‖², so λ·n/m on n rows is the
//! per-row penalty the CV chose on m rows (its folds' ratio to the final fit
//! kept: (k−1)/k of m rows there, as (k−1)/k of n in a full CV). One fit on all
//! rows follows.

use nalgebra::{DMatrix, DVector};
use serde_json::json;

use super::logit_newton::{Pass, newton, sigmoid};
use crate::engine::data::prepare::stratified_folds;
use crate::engine::event::{Event, LogLevel};
use crate::engine::fit::{EngineKind, Fit, ScoreModel};
use crate::engine::interface::{Control, Engine, EngineError, Observer};
use crate::engine::numerics::linalg::at_b;
use crate::engine::problem::Problem;
use crate::engine::select::{
    CvMethod, CvNames, CvReport, CvSpec, FoldData, GridWalker, MEMORY_BUDGET, PointFit, Walk,
    cross_validate,
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
    /// Above this many rows, λ is cross-validated on a stratified subsample of
    /// at most this many rows (then rescaled, see the module doc).
    pub cv_rows: usize,
    pub seed: u64,
}

/// Default `Logit::cv_rows`: 10⁶ rows keep the CV's AUC curve precise (its
/// standard error ~ 1/√rows) at a few CPU seconds (`logit-1e6`).
pub const CV_ROWS: usize = 1_000_000;

impl Default for Logit {
    fn default() -> Self {
        Logit {
            lambda: None,
            grid: default_grid(),
            folds: 5,
            cv_rows: CV_ROWS,
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

/// Fits the penalised model on standardised rows `x`. For d ≥ n the fit runs on the
/// thin-SVD scores `U S` (the optimum lies in the row space of X) and maps back.
pub fn fit_logit(x: &DMatrix<f64>, y: &[bool], lambda: f64, warm: Option<&LogitFit>) -> LogitFit {
    fit_logit_cached(x, y, lambda, warm, &mut None)
}

/// `fit_logit`, with the pass at the last fit's optimum on the same rows
/// (`pass`: read, then replaced by this fit's; the reduced form keeps none).
fn fit_logit_cached(
    x: &DMatrix<f64>,
    y: &[bool],
    lambda: f64,
    warm: Option<&LogitFit>,
    pass: &mut Option<Pass>,
) -> LogitFit {
    let (n, d) = x.shape();
    if d >= n {
        *pass = None;
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
        let small = fit_logit_full(&us, y, lambda, warm_r.as_ref(), &mut None);
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
    fit_logit_full(x, y, lambda, warm, pass)
}

fn with_intercept(x: &DMatrix<f64>) -> DMatrix<f64> {
    x.clone().insert_column(0, 1.0)
}

fn fit_logit_full(
    x: &DMatrix<f64>,
    y: &[bool],
    lambda: f64,
    warm: Option<&LogitFit>,
    pass: &mut Option<Pass>,
) -> LogitFit {
    let p = x.ncols() + 1;
    let w0 = warm.map(|f| {
        let mut w = DVector::zeros(p);
        w[0] = f.intercept;
        w.rows_mut(1, f.beta.len()).copy_from(&f.beta);
        w
    });
    let (w, hess, iterations, last) = newton(x, y, lambda, w0.as_ref(), pass.take());
    *pass = Some(last);
    let var = hess
        .try_inverse()
        .map(|h| DVector::from_iterator(x.ncols(), (1..p).map(|k| h[(k, k)].max(0.0))))
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

/// One fold's last fit (the warm start of the next λ) and its pass.
struct LogitWalker {
    warm: Option<LogitFit>,
    pass: Option<Pass>,
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
        Ok(LogitWalker {
            warm: None,
            pass: None,
        })
    }

    fn fold_bytes(&self, positives: usize, negatives: usize, d: usize) -> usize {
        // The fold's training and held-out rows (Newton's passes copy nothing).
        8 * (2 * (positives + negatives) * d + (d + 1) * (d + 1))
    }
}

impl GridWalker for LogitWalker {
    fn fit(
        &mut self,
        lambda: f64,
        fold: &FoldData,
        _ctl: &Control,
    ) -> Result<PointFit, EngineError> {
        let m = fit_logit_cached(
            &fold.xtr,
            &fold.ytr,
            lambda,
            self.warm.as_ref(),
            &mut self.pass,
        );
        let scores = (&fold.xte * &m.beta).iter().copied().collect();
        let iterations = m.iterations;
        self.warm = Some(m);
        Ok(PointFit::Scored { scores, iterations })
    }
}

/// The CV's row subsample: its size, the rows it was drawn from, and λ on it.
#[derive(Debug, Clone, serde::Serialize)]
pub struct CvSubsample {
    pub rows: usize,
    pub of_rows: usize,
    pub threshold: usize,
    pub lambda_on_subsample: f64,
    /// λ on all rows = λ on the subsample × this (n/m).
    pub scale: f64,
}

/// λ, its CV curve and, when the CV ran on a subsample, that subsample and its fit at its λ.
type Chosen = (f64, CvReport, Option<(CvSubsample, LogitFit)>);

impl Logit {
    /// λ by CV: on all rows, or above `cv_rows` on a stratified subsample
    /// with the penalty rescaled by n/m (module doc).
    fn choose_lambda(
        &self,
        pb: &Problem,
        ctl: &Control,
        log: &mut dyn FnMut(String),
    ) -> Result<Chosen, EngineError> {
        let spec = CvSpec {
            folds: self.folds,
            seed: self.seed,
            grid: self.grid.clone(),
            walk: Walk::Descending,
            extend_below_to: None,
            memory_budget: MEMORY_BUDGET,
        };
        let n = pb.n();
        if n <= self.cv_rows.max(1) {
            let cv = cross_validate(&pb.x, &pb.y, &spec, &LogitCv, ctl, log)?;
            log(format!(
                "logit: λ = {:.3e} by {}-fold CV AUC",
                cv.chosen, self.folds
            ));
            return Ok((cv.chosen, cv, None));
        }
        // Every k-th row of a stratified deal (its own seed stream): ≤ cv_rows rows.
        let k = n.div_ceil(self.cv_rows.max(1));
        let deal = stratified_folds(&pb.y, k, self.seed ^ 0x5AB5_A3F1_E0C5_17D1);
        let idx: Vec<usize> = (0..n).filter(|&i| deal[i] == 0).collect();
        let m = idx.len();
        let x = pb.x.select_rows(&idx);
        let y: Vec<bool> = idx.iter().map(|&i| pb.y[i]).collect();
        let scale = n as f64 / m as f64;
        log(format!(
            "logit: {n} rows > --cv-rows {}: λ by {}-fold CV on a stratified subsample of {m} rows \
             (grid {:.0e}…{:.0e}, {} points), then λ × n/m = λ × {scale:.3} on all rows (the same per-row penalty)",
            self.cv_rows,
            self.folds,
            self.grid.iter().cloned().fold(f64::INFINITY, f64::min),
            self.grid.iter().cloned().fold(0.0, f64::max),
            self.grid.len()
        ));
        let cv = cross_validate(&x, &y, &spec, &LogitCv, ctl, log)?;
        let lambda = cv.chosen * scale;
        // The subsample's fit at its λ has the same per-row objective: the
        // final fit's warm start (a few Newton steps on all rows, not ~8).
        let warm = fit_logit(&x, &y, cv.chosen, None);
        log(format!(
            "logit: λ = {:.3e} on the subsample by {}-fold CV AUC → λ = {lambda:.3e} on all {n} rows",
            cv.chosen, self.folds
        ));
        let sub = CvSubsample {
            rows: m,
            of_rows: n,
            threshold: self.cv_rows,
            lambda_on_subsample: cv.chosen,
            scale,
        };
        Ok((lambda, cv, Some((sub, warm))))
    }
}

impl Engine for Logit {
    fn name(&self) -> &'static str {
        "logit"
    }

    fn params(&self) -> serde_json::Value {
        json!({ "lambda": self.lambda, "grid": self.grid, "folds": self.folds, "cv_rows": self.cv_rows, "seed": self.seed })
    }

    fn run(&self, pb: &Problem, ctl: &Control, obs: &mut dyn Observer) -> Result<Fit, EngineError> {
        obs.observe(Event::Started {
            engine: "logit".into(),
            n: pb.n(),
            d: pb.d(),
            pairs: pb.pairs(),
            gamma: pb.gamma,
        });
        let (lambda, curve, subsample) = match self.lambda {
            Some(l) if l > 0.0 && l.is_finite() => (l, None, None),
            Some(l) => {
                return Err(EngineError::InvalidParams(format!(
                    "the logit penalty must be > 0; got {l}"
                )));
            }
            None => {
                let mut log = |m| {
                    obs.observe(Event::Log {
                        level: LogLevel::Info,
                        message: m,
                    })
                };
                let (chosen, cv, sub) = self.choose_lambda(pb, ctl, &mut log)?;
                (chosen, Some(cv), sub)
            }
        };
        ctl.checkpoint()?;
        let (subsample, warm) = subsample.unzip();
        let m = fit_logit(&pb.x, &pb.y, lambda, warm.as_ref());
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
            "cv_subsample": subsample,
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
        let primal = fit_logit_full(&x, &y, 2.0, None, &mut None);
        let reduced = fit_logit(&x, &y, 2.0, None);
        assert!((primal.beta - &reduced.beta).amax() < 1e-7);
        assert!((primal.var - &reduced.var).amax() < 1e-7);
        assert!((primal.intercept - reduced.intercept).abs() < 1e-7);
    }

    /// Several chunks and a partial block: still the stationary point, and the
    /// same bits on one thread as on two (chunks are summed in order).
    #[test]
    fn chunked_passes_are_stationary_and_thread_independent() {
        let (x, y) = toy(70_001, 3, 5);
        let on = |threads| {
            rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()
                .unwrap()
                .install(|| fit_logit(&x, &y, 0.3, None))
        };
        let (one, two) = (on(1), on(2));
        assert_eq!(one.beta, two.beta);
        assert_eq!(one.intercept.to_bits(), two.intercept.to_bits());
        let mut g = -&one.beta * -0.3;
        let mut g0 = 0.0;
        for i in 0..x.nrows() {
            let r = sigmoid(one.intercept + x.row(i).dot(&one.beta.transpose()))
                - f64::from(u8::from(y[i]));
            g0 += r;
            for k in 0..3 {
                g[k] += r * x[(i, k)];
            }
        }
        assert!(g0.abs() < 1e-6 && g.amax() < 1e-6, "gradient {g0} {g}");
    }

    /// A warm start that reuses the last fit's pass (the CV's walk) is the
    /// warm start that recomputes it, bit for bit; a pass at another w is
    /// not used.
    #[test]
    fn a_cached_pass_changes_no_bit() {
        let (x, y) = toy(5_000, 4, 9);
        let mut pass = None;
        let first = fit_logit_cached(&x, &y, 10.0, None, &mut pass);
        for lambda in [3.0, 1.0] {
            let plain = fit_logit(&x, &y, lambda, Some(&first));
            let mut stale = None;
            fit_logit_cached(&x, &y, 0.5, None, &mut stale);
            let ignored = fit_logit_cached(&x, &y, lambda, Some(&first), &mut stale);
            let mut cached = fit_logit_cached(&x, &y, 10.0, None, &mut pass);
            cached = fit_logit_cached(&x, &y, lambda, Some(&cached), &mut pass);
            for m in [&cached, &ignored] {
                assert_eq!(m.iterations, plain.iterations);
                assert_eq!(m.intercept.to_bits(), plain.intercept.to_bits());
                assert!(
                    m.beta
                        .iter()
                        .zip(plain.beta.iter())
                        .all(|(a, b)| a.to_bits() == b.to_bits())
                );
            }
        }
    }

    /// λ by CV on a stratified subsample (forced by a small `cv_rows`) is
    /// rescaled by n/m, and the model's direction (all a linear score's AUC
    /// depends on) matches the full CV's to 5e-3 per coefficient of the unit
    /// vector, though the flat AUC curve of 4·10⁴ rows × 20 lets the two choose
    /// different per-row penalties.
    #[test]
    fn subsample_cv_keeps_the_direction_of_the_full_cv() {
        let (n, d) = (40_000, 20);
        let mut r = rng::stream(11, &[]);
        let x = DMatrix::from_fn(n, d, |_, _| rng::normal(&mut r));
        let y: Vec<bool> = (0..n)
            .map(|i| {
                let s: f64 = (0..10).map(|k| x[(i, k)] / ((k + 1) as f64).sqrt()).sum();
                s + rng::normal(&mut r) > 1.0
            })
            .collect();
        let names: Vec<String> = (0..d).map(|k| format!("x{k}")).collect();
        let pb = Problem::new(
            names,
            x,
            y,
            1.0,
            crate::engine::prior::Prior::Gaussian { var: 1.0 },
        )
        .unwrap();
        let run = |cv_rows| {
            let e = Logit {
                cv_rows,
                ..Logit::default()
            };
            e.run(
                &pb,
                &Control::default(),
                &mut crate::engine::interface::NoObserver,
            )
            .unwrap()
        };
        let (full, sub) = (run(CV_ROWS), run(10_000));
        assert!(full.details["cv_subsample"].is_null());
        let s = &sub.details["cv_subsample"];
        let m = s["rows"].as_u64().unwrap() as f64;
        assert!((9_000.0..=10_000.0).contains(&m), "{m}");
        let want = s["lambda_on_subsample"].as_f64().unwrap() * n as f64 / m;
        assert!((sub.details["lambda"].as_f64().unwrap() / want - 1.0).abs() < 1e-12);
        let unit = |w: &[f64]| {
            let norm = w.iter().map(|v| v * v).sum::<f64>().sqrt();
            w.iter().map(|v| v / norm).collect::<Vec<_>>()
        };
        let (a, b) = (unit(&full.mean), unit(&sub.mean));
        let worst = a
            .iter()
            .zip(&b)
            .map(|(p, q)| (p - q).abs())
            .fold(0.0, f64::max);
        assert!(worst < 5e-3, "direction differs by {worst}");
    }
}
