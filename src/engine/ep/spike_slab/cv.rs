//! γ by stratified k-fold cross-validation for spike-and-slab EP: a method of
//! `select::kfold` with Gaussian EP's grid and rules (`ep::cv`): the held-out
//! AUC of the posterior-mean score (the record's score; the "selected" score
//! is an alternative) over γ = c·n, c·n_fold inside a fold, at the folds'
//! tolerance (`cv::fold_settings`); a point where EP does not converge fails
//! with the larger ones of its fold, only points converged in every fold can
//! be chosen, and the grid is extended downwards when fewer than two are.
//!
//! Every point of a fold is the fold's fixed-γ fit: from the prior, and when
//! that does not converge, along the fold's earlier points (`warm_path`, the
//! fixed-γ fallback) — not warm from the previous point alone, as Gaussian EP
//! walks. Spike-and-slab EP has several fixed points: besides the one that
//! selects features, the all-spike state (every coefficient at the spike's
//! scale: self-consistent because the AUC risk is scale-free) absorbs a warm
//! walk that once enters it. On the sparse demo (p = 0.2, 3 folds) a warm walk
//! entered it at 0.25n in fold 1 and stayed there up to 16n, its held-out AUC
//! 0.817–0.822 where the fits from the prior selected features and reached
//! 0.861–0.865 (means 3–6 posterior sds apart at tol 1e-8): the CV would have
//! scored another posterior than the one the final fit reports.
//!
//! The prior (v0, v1, p) is fixed during the CV: with `slab_var` or
//! `inclusion_prior` auto they start where their evidence search does and are
//! tuned afterwards at the chosen γ (as GP-EP fixes ℓ during its CV): tuning
//! them inside every fold at every γ would multiply the cost by the search.
//!
//! No average of the folds' posteriors starts the final fit (Gaussian EP's
//! `CvOutcome::start`): a spike-and-slab state is its pair sites and prior
//! sites, not a Gaussian q; the final fit starts from the prior and, when that
//! does not converge, climbs the grid points below the chosen one that
//! converged in every fold (`warm_path`).

use nalgebra::{DMatrix, DVector};

use super::model::{SpikeSlab, SpikeSlabEp};
use super::sweep::SsSettings;
use super::warm_path;
use crate::engine::ep::cv::{
    fold_precision, fold_settings, gamma_label, gamma_names, gamma_spec, point_fit,
};
use crate::engine::ep::design::Form;
use crate::engine::ep::pair_ep::PairEp;
use crate::engine::ep::store::Precision;
use crate::engine::interface::{Control, EngineError};
use crate::engine::select::{
    CvMethod, CvNames, CvReport, FoldData, GridWalker, PointFit, cross_validate as select_cv,
};

/// What the CV of spike-and-slab EP's γ runs.
pub struct SsCvSettings<'a> {
    pub grid_over_n: &'a [f64],
    pub folds: usize,
    pub seed: u64,
    pub prior: SpikeSlab,
    pub form: Form,
    pub precision: Precision,
    /// The run's settings (the folds loosen the tolerance: `fold_settings`).
    pub ss: &'a SsSettings,
    /// Continue without the negative-site fix at convergence, as the final fit.
    pub release_fixes: bool,
}

/// The settings of spike-and-slab EP inside the folds: Gaussian EP's fold
/// settings (tolerance × `FOLD_TOL_FACTOR`, cycles fail fast), no per-sweep log Z.
pub fn fold_ss_settings(ss: &SsSettings) -> SsSettings {
    SsSettings {
        ep: fold_settings(&ss.ep),
        evidence_every_sweep: false,
        ..*ss
    }
}

/// Spike-and-slab EP at a fixed prior, as a cross-validated method.
pub(super) struct SsCv<'a> {
    cv: &'a SsCvSettings<'a>,
    /// The folds' settings.
    ss: SsSettings,
}

impl<'a> SsCv<'a> {
    pub(super) fn new(cv: &'a SsCvSettings<'a>) -> SsCv<'a> {
        SsCv {
            cv,
            ss: fold_ss_settings(cv.ss),
        }
    }
}

/// One fold's spike-and-slab EP: every point a fixed-γ fit of the fold.
pub struct SsWalker<'a> {
    model: SpikeSlabEp,
    ss: &'a SsSettings,
    /// The points this fold converged at so far (ascending): the warm path of
    /// a later point whose start from the prior fails.
    done: Vec<f64>,
}

impl SsWalker<'_> {
    /// The fold's model (tests compare it with a cold fit).
    #[cfg(test)]
    pub fn model(&self) -> &SpikeSlabEp {
        &self.model
    }
}

impl<'a> CvMethod for &'a SsCv<'a> {
    type Walker = SsWalker<'a>;

    fn names(&self) -> CvNames {
        gamma_names("ep spike-slab")
    }

    fn label(&self, c: f64) -> String {
        gamma_label(c)
    }

    fn start(&self, fold: &FoldData) -> Result<SsWalker<'a>, EngineError> {
        let pos = fold.ytr.iter().filter(|&&b| b).count();
        let precision = fold_precision(self.cv.precision, pos * (fold.ytr.len() - pos));
        let mut model =
            SpikeSlabEp::with_form(&fold.xtr, &fold.ytr, self.cv.prior, precision, self.cv.form)?;
        model.set_release_fixes(self.cv.release_fixes);
        Ok(SsWalker {
            model,
            ss: &self.ss,
            done: Vec::new(),
        })
    }

    fn fold_bytes(&self, positives: usize, negatives: usize, d: usize) -> usize {
        // The reduced form's rank is at most the fold's rows.
        let dim = d.min(positives + negatives);
        let precision = fold_precision(self.cv.precision, positives * negatives);
        PairEp::memory_bytes(positives, negatives, dim, precision, None)
    }
}

impl GridWalker for SsWalker<'_> {
    /// From the prior, and along the fold's earlier points when that fails
    /// (`warm_path::run`, as a fixed-γ fit): not warm from the previous point
    /// alone, which can stay in the all-spike fixed point (module docs).
    fn fit(&mut self, c: f64, fold: &FoldData, ctl: &Control) -> Result<PointFit, EngineError> {
        let n = fold.ytr.len();
        let model = &mut self.model;
        model.reset();
        let path = self.done.clone();
        let res = warm_path::run(
            model,
            c * n as f64,
            path,
            n,
            self.ss,
            ctl,
            &mut |_, _| {},
            &mut || {},
            &mut |_| {},
        );
        let fit = point_fit(res.map(|(out, warm)| {
            let path_sweeps: usize = warm.map_or(0, |w| w.points.iter().map(|p| p.sweeps).sum());
            let m = DVector::from_vec(model.mean());
            (
                (&fold.xte * m).iter().copied().collect(),
                out.sweeps + path_sweeps,
            )
        }))?;
        if matches!(fit, PointFit::Scored { .. }) {
            self.done.push(c);
        }
        Ok(fit)
    }
}

/// γ/n by k-fold CV for spike-and-slab EP at a fixed prior; `log` receives
/// one line per grid point and fold, and the curve.
pub fn cross_validate(
    x: &DMatrix<f64>,
    y: &[bool],
    cv: &SsCvSettings<'_>,
    ctl: &Control,
    log: &mut dyn FnMut(String),
) -> Result<CvReport, EngineError> {
    let method = SsCv::new(cv);
    select_cv(
        x,
        y,
        &gamma_spec(cv.folds, cv.seed, cv.grid_over_n),
        &&method,
        ctl,
        log,
    )
}
