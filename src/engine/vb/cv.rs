//! γ for VB by stratified k-fold cross-validation of the posterior mean's
//! held-out AUC over a grid of γ = c·n (n the training rows of the fold).
//! TODO(select): move onto engine/select (this local loop exists only until
//! the shared CV lands; `vb::fit` is the per-fold, per-grid-point call).

use nalgebra::DMatrix;
use serde::Serialize;

use super::{Params, VbSettings, fit};
use crate::engine::data::prepare::{fold_indices, stratified_folds};
use crate::engine::interface::{Control, EngineError};
use crate::engine::metrics::auc;
use crate::engine::prior::Prior;

#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize)]
pub struct VbCv {
    /// Grid of γ/n, visited in increasing order (each fit warm-starts the next).
    pub grid_over_n: Vec<f64>,
    pub folds: usize,
    pub seed: u64,
}

#[derive(Debug, Clone, Serialize)]
pub struct CvResult {
    pub grid_over_n: Vec<f64>,
    /// Mean held-out AUC per grid point.
    pub mean_auc: Vec<f64>,
    pub chosen_over_n: f64,
    /// Grid points where some fold's fit missed its convergence rule.
    pub unconverged: Vec<f64>,
}

pub fn cross_validate(
    x: &DMatrix<f64>,
    y: &[bool],
    prior: &Prior,
    s: &VbSettings,
    cv: &VbCv,
    ctl: &Control,
) -> Result<CvResult, EngineError> {
    let mut grid = cv.grid_over_n.clone();
    grid.sort_by(f64::total_cmp);
    if grid.is_empty() || cv.folds < 2 || grid.iter().any(|c| c.is_nan() || *c <= 0.0) {
        return Err(EngineError::InvalidParams(
            "γ by cross-validation needs ≥ 2 folds and a grid of positive multiples of n".into(),
        ));
    }
    let fold = stratified_folds(y, cv.folds, cv.seed);
    let mut sum = vec![0.0; grid.len()];
    let mut unconverged = vec![false; grid.len()];
    for f in 0..cv.folds {
        let (tr, te) = fold_indices(&fold, f);
        let (xt, xv) = (x.select_rows(&tr), x.select_rows(&te));
        let yt: Vec<bool> = tr.iter().map(|&i| y[i]).collect();
        let yv: Vec<bool> = te.iter().map(|&i| y[i]).collect();
        let mut warm: Option<Params> = None;
        for (g, c) in grid.iter().enumerate() {
            let out = fit(
                &xt,
                &yt,
                prior,
                c * tr.len() as f64,
                s,
                warm.as_ref(),
                ctl,
                &mut |_| {},
            )?;
            let w = nalgebra::DVector::from_column_slice(&out.mean);
            sum[g] += auc((&xv * w).as_slice(), &yv);
            unconverged[g] |= !out.converged;
            warm = Some(out.params);
        }
    }
    let mean_auc: Vec<f64> = sum.iter().map(|v| v / cv.folds as f64).collect();
    let best = (0..grid.len())
        .max_by(|&a, &b| mean_auc[a].total_cmp(&mean_auc[b]))
        .unwrap_or(0);
    Ok(CvResult {
        chosen_over_n: grid[best],
        unconverged: grid
            .iter()
            .zip(&unconverged)
            .filter(|(_, u)| **u)
            .map(|(c, _)| *c)
            .collect(),
        grid_over_n: grid,
        mean_auc,
    })
}
