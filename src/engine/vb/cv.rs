//! γ for VB by stratified k-fold cross-validation: VB as a method of
//! `select::kfold`, with the same folds, grid order, choice rule and
//! `details.cv` layout as EP's (`ep::cv`): the held-out AUC of the posterior
//! mean over γ = c·n (c·n_fold inside a fold), each fold warm-starting VB
//! along the grid from small to large γ.
//!
//! VB has an optimum at every γ, so the grid is never extended below; a fit
//! that stops without meeting its convergence rule still scores its point (as
//! a fixed-budget fit would) and is listed in `VbCvResult::unconverged` for a
//! warning.

use std::sync::Mutex;

use nalgebra::{DMatrix, DVector};
use serde::Serialize;

use super::{Params, VbSettings, fit};
use crate::engine::interface::{Control, EngineError};
use crate::engine::prior::Prior;
use crate::engine::select::{
    CvMethod, CvNames, CvReport, CvSpec, FoldData, GridWalker, PointFit,
    cross_validate as select_cv,
};

/// What to cross-validate (the engine's settings, kept in the record).
#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize)]
pub struct VbCv {
    /// Grid of γ/n (any order: walked ascending, each fit warm-starting the next).
    pub grid_over_n: Vec<f64>,
    pub folds: usize,
    /// Seed of the fold assignment.
    pub seed: u64,
}

/// The cross-validation and the (fold, γ/n) points whose fit missed its
/// convergence rule, in fold then grid order.
#[derive(Debug, Clone)]
pub struct VbCvResult {
    pub report: CvReport,
    pub unconverged: Vec<(usize, f64)>,
}

/// VB at fixed settings and prior, as a cross-validated method.
struct VbMethod<'a> {
    prior: &'a Prior,
    settings: &'a VbSettings,
    /// (1-based fold, γ/n) of fits that missed their rule (folds run concurrently).
    unconverged: Mutex<Vec<(usize, f64)>>,
}

/// One fold's VB optimum, warm-starting the next grid point.
struct VbWalker<'a> {
    method: &'a VbMethod<'a>,
    warm: Option<Params>,
}

impl<'a> CvMethod for &'a VbMethod<'a> {
    type Walker = VbWalker<'a>;

    fn names(&self) -> CvNames {
        CvNames {
            prefix: "vb",
            parameter: "gamma_over_n",
            unit: "iterations",
        }
    }

    fn label(&self, c: f64) -> String {
        format!("γ = {c}n")
    }

    fn start(&self, _fold: &FoldData) -> Result<VbWalker<'a>, EngineError> {
        Ok(VbWalker {
            method: self,
            warm: None,
        })
    }

    /// The whitened rows and the pair pass's three block buffers (or the
    /// signed rows of a classification loss), and Σ's d × d matrices.
    fn fold_bytes(&self, positives: usize, negatives: usize, d: usize) -> usize {
        let (n, pairs) = (positives + negatives, positives * negatives);
        8 * (3 * n * d + 3 * pairs.min(1 << 19) + 4 * d * d)
    }
}

impl GridWalker for VbWalker<'_> {
    fn fit(&mut self, c: f64, fold: &FoldData, ctl: &Control) -> Result<PointFit, EngineError> {
        let m = self.method;
        let gamma = c * fold.ytr.len() as f64;
        let out = fit(
            &fold.xtr,
            &fold.ytr,
            m.prior,
            gamma,
            m.settings,
            self.warm.as_ref(),
            ctl,
            &mut |_| {},
        )?;
        if !out.converged {
            let mut u = m.unconverged.lock().expect("unpoisoned");
            u.push((fold.fold + 1, c));
        }
        let scores = (&fold.xte * DVector::from_column_slice(&out.mean))
            .iter()
            .copied()
            .collect();
        self.warm = Some(out.params);
        Ok(PointFit::Scored {
            scores,
            iterations: out.iterations,
        })
    }
}

/// Runs the cross-validation of γ/n; `log` receives one line per grid point
/// and fold (in fold order whatever the thread count), and the curve.
pub fn cross_validate(
    x: &DMatrix<f64>,
    y: &[bool],
    prior: &Prior,
    settings: &VbSettings,
    cv: &VbCv,
    ctl: &Control,
    log: &mut dyn FnMut(String),
) -> Result<VbCvResult, EngineError> {
    let method = VbMethod {
        prior,
        settings,
        unconverged: Mutex::new(Vec::new()),
    };
    let spec = CvSpec::ascending(cv.folds, cv.seed, cv.grid_over_n.clone());
    let report = select_cv(x, y, &spec, &&method, ctl, log)?;
    let mut unconverged = method.unconverged.into_inner().expect("unpoisoned");
    unconverged.sort_by(|a, b| a.0.cmp(&b.0).then(a.1.total_cmp(&b.1)));
    Ok(VbCvResult {
        report,
        unconverged,
    })
}
