//! γ by stratified k-fold cross-validation (ALGORITHMS.md §8): the held-out
//! AUC of the posterior-mean score over a geometric grid of γ = c·n, each fold
//! warm-starting EP along the grid from small to large γ. EP has no usable
//! fixed point at very large γ with overlapping classes (§4): a grid point where
//! EP does not converge is recorded as failed (with the larger ones of that
//! fold), and only points that converged in every fold can be chosen.

use nalgebra::DMatrix;
use serde::Serialize;

use super::ard::{self, ArdSettings};
use super::design::Form;
use super::linear::LinearEp;
use super::pair_ep::EpSettings;
use super::store::Precision;
use crate::engine::data::prepare::{fold_indices, stratified_folds};
use crate::engine::metrics::auc;
use crate::engine::run::{Control, EngineError};

/// Default grid of γ/n: 2^−4 … 2^4 (n = training rows; ≤ 25n, §4).
pub fn default_grid() -> Vec<f64> {
    (-4..=4).map(|k| 2f64.powi(k)).collect()
}

#[derive(Debug, Clone, Serialize)]
pub struct CvResult {
    pub folds: usize,
    /// The grid as multiples of n (γ = c·n; c·n_fold inside a fold).
    pub grid_over_n: Vec<f64>,
    /// Mean held-out AUC per grid point (None where EP failed in some fold).
    pub mean_auc: Vec<Option<f64>>,
    /// AUC per fold and grid point.
    pub fold_auc: Vec<Vec<Option<f64>>>,
    /// EP sweeps per fold and grid point (0 = not run).
    pub fold_sweeps: Vec<Vec<usize>>,
    /// Why grid points failed.
    pub failures: Vec<String>,
    /// The chosen multiple of n.
    pub chosen_over_n: f64,
}

pub struct CvSettings<'a> {
    pub grid_over_n: &'a [f64],
    pub folds: usize,
    pub seed: u64,
    pub form: Form,
    pub precision: Precision,
    pub ep: &'a EpSettings,
    /// Tune ARD variances inside every fold (None: fixed `vars`).
    pub ard: Option<&'a ArdSettings>,
}

/// Runs the cross-validation; `log` receives one line per grid point.
pub fn cross_validate(
    x: &DMatrix<f64>,
    y: &[bool],
    vars: &[f64],
    cv: &CvSettings<'_>,
    ctl: &Control,
    log: &mut dyn FnMut(String),
) -> Result<CvResult, EngineError> {
    let grid = cv.grid_over_n;
    if cv.folds < 2 {
        return Err(EngineError::InvalidParams(
            "--gamma auto needs --folds ≥ 2".into(),
        ));
    }
    if grid.is_empty() || grid.iter().any(|g| !(g.is_finite() && *g > 0.0)) {
        return Err(EngineError::InvalidParams(
            "the γ grid needs positive multiples of n".into(),
        ));
    }
    let n_pos = y.iter().filter(|&&b| b).count();
    if n_pos < cv.folds || y.len() - n_pos < cv.folds {
        return Err(EngineError::InvalidParams(format!(
            "{}-fold cross-validation needs at least {} rows of each class",
            cv.folds, cv.folds
        )));
    }
    let mut order: Vec<usize> = (0..grid.len()).collect();
    order.sort_by(|&a, &b| grid[a].total_cmp(&grid[b]));
    let assignment = stratified_folds(y, cv.folds, cv.seed);
    let mut fold_auc = vec![vec![None; grid.len()]; cv.folds];
    let mut fold_sweeps = vec![vec![0; grid.len()]; cv.folds];
    let mut failures = Vec::new();
    for f in 0..cv.folds {
        let (tr, te) = fold_indices(&assignment, f);
        let xtr = x.select_rows(&tr);
        let ytr: Vec<bool> = tr.iter().map(|&i| y[i]).collect();
        let xte = x.select_rows(&te);
        let yte: Vec<bool> = te.iter().map(|&i| y[i]).collect();
        let mut lep = LinearEp::new(&xtr, &ytr, vars, cv.form, cv.precision)?;
        for &gi in &order {
            ctl.checkpoint()?;
            let gamma = grid[gi] * tr.len() as f64;
            let res = match cv.ard {
                None => lep.run(gamma, cv.ep, ctl, &mut |_, _| {}).map(|o| o.sweeps),
                Some(a) => {
                    ard::optimise(&mut lep, gamma, cv.ep, a, ctl, &mut |_, _| {}, &mut |_| {})
                        .map(|r| r.trace.iter().map(|s| s.sweeps).sum())
                }
            };
            match res {
                Ok(sweeps) => {
                    let m = nalgebra::DVector::from_vec(lep.mean());
                    let s: Vec<f64> = (&xte * m).iter().copied().collect();
                    let a = auc(&s, &yte);
                    log(format!(
                        "ep cv: fold {}/{}, γ = {}n: held-out AUC {a:.4} ({sweeps} sweeps)",
                        f + 1,
                        cv.folds,
                        grid[gi]
                    ));
                    fold_auc[f][gi] = Some(a);
                    fold_sweeps[f][gi] = sweeps;
                }
                Err(EngineError::NotConverged { message, .. }) => {
                    let m = format!("fold {}, γ = {}n: {message}", f + 1, grid[gi]);
                    log(format!("ep cv: {m}"));
                    failures.push(m);
                    break; // larger γ only get harder
                }
                Err(e) => return Err(e),
            }
        }
    }
    let mean_auc: Vec<Option<f64>> = (0..grid.len())
        .map(|g| {
            let v: Option<Vec<f64>> = fold_auc.iter().map(|a| a[g]).collect();
            v.map(|v| v.iter().sum::<f64>() / v.len() as f64)
        })
        .collect();
    for &gi in &order {
        log(match mean_auc[gi] {
            Some(a) => format!("ep cv: γ = {}n  mean held-out AUC {a:.4}", grid[gi]),
            None => format!("ep cv: γ = {}n  failed in some fold", grid[gi]),
        });
    }
    // Best mean AUC; ties (within 1e-12) go to the smaller γ.
    let mut best: Option<usize> = None;
    for &gi in &order {
        if let Some(a) = mean_auc[gi]
            && best.is_none_or(|b| a > mean_auc[b].unwrap() + 1e-12)
        {
            best = Some(gi);
        }
    }
    let Some(best) = best else {
        return Err(EngineError::NotConverged {
            message: "EP converged at no γ of the grid in every fold".into(),
            diagnostics: serde_json::json!({ "grid_over_n": grid, "failures": failures }),
        });
    };
    Ok(CvResult {
        folds: cv.folds,
        grid_over_n: grid.to_vec(),
        mean_auc,
        fold_auc,
        fold_sweeps,
        failures,
        chosen_over_n: grid[best],
    })
}
