//! γ by stratified k-fold cross-validation for spike-and-slab EP: a method of
//! `select::kfold` with Gaussian EP's grid and rules (`ep::cv`): the held-out
//! AUC of the posterior-mean score (the record's score; the "selected" score
//! is an alternative) over γ = c·n, c·n_fold inside a fold, at the folds'
//! tolerance (`cv::fold_settings`); a point where EP does not converge fails
//! with the larger ones of its fold, only points converged in every fold can
//! be chosen, and the grid is extended downwards when fewer than two are.
//!
//! Every point of a fold is the fold's fixed-γ fit, reached as the final fit
//! reaches γ (`continuation::reach`: from the prior, and where that does not
//! converge along γ, every point at the folds' tolerance) — not warm from the
//! previous point alone, as Gaussian EP walks. Spike-and-slab EP has several
//! fixed points: besides the one that selects features, the all-spike state
//! (every coefficient at the spike's scale: self-consistent because the AUC
//! risk is scale-free) absorbs a warm walk that once enters it. On the sparse demo (p = 0.2, 3 folds) a warm walk
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
//! Where EP ends in a verdict, a fold point is answered by power EP along
//! `FALLBACK_POWERS` (`cv::with_power`), each fold point so answered said in
//! the log. Why: between ~n/8 and ~n/2 on the sparse demo the branch of fixed
//! points that starts at the prior ends (a fold where it turns back): from the prior EP passes that branch's ghost
//! slowly and lands, after 200–950 sweeps, on a sparser fixed point (one
//! feature in the slab; classic's answer). The anderson controller's verdict
//! ends that slow passage after ~100–200 sweeps as no progress, and so does
//! the continuation, whose walk along γ stops at the same end of the branch
//! (0.12n–0.2n). Small γ is not the easy end for spike-and-slab: there the
//! likelihood is too weak to hold features in the slab while the scale-free
//! AUC risk keeps the sparse state self-consistent. The final fit answers
//! such a γ with power EP; without the same fallback the folds dropped it.
//!
//! No average of the folds' posteriors starts the final fit (Gaussian EP's
//! `CvOutcome::start`): a spike-and-slab state is its pair sites and prior
//! sites, not a Gaussian q; the final fit reaches the chosen γ by the
//! continuation.

use nalgebra::{DMatrix, DVector};

use std::sync::{Arc, Mutex};

use super::model::{SpikeSlab, SpikeSlabEp, SsPath};
use super::prior_sites::PriorSites;
use super::sweep::{SsOutcome, SsSettings};
use crate::engine::ep::continuation::{self, Continuable};
use crate::engine::ep::cv::{
    Powered, fold_precision, fold_settings, gamma_label, gamma_names, gamma_spec, point_fit,
    power_notes, with_power,
};
use crate::engine::ep::design::Form;
use crate::engine::ep::pair_ep::PairEp;
use crate::engine::ep::store::Precision;
use crate::engine::ep::sweep_state::Marginal;
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
    /// The folds' points answered by power EP.
    powered: Arc<Mutex<Vec<Powered>>>,
}

impl<'a> SsCv<'a> {
    pub(super) fn new(cv: &'a SsCvSettings<'a>) -> SsCv<'a> {
        SsCv {
            cv,
            ss: fold_ss_settings(cv.ss),
            powered: Arc::new(Mutex::new(Vec::new())),
        }
    }
}

/// One fold's spike-and-slab EP: every point a fixed-γ fit of the fold.
pub struct SsWalker<'a> {
    model: SpikeSlabEp,
    ss: &'a SsSettings,
    powered: Arc<Mutex<Vec<Powered>>>,
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
            powered: Arc::clone(&self.powered),
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
    /// As the final fit reaches γ: from the prior by the continuation (not
    /// warm from the previous point alone, which can stay in the all-spike
    /// fixed point), and power EP where EP ends in a verdict (module docs).
    fn fit(&mut self, c: f64, fold: &FoldData, ctl: &Control) -> Result<PointFit, EngineError> {
        let n = fold.ytr.len();
        let (gamma, base) = (c * n as f64, *self.ss);
        let model = &mut self.model;
        let res = with_power(&base.ep, (fold.fold, c), &self.powered, |ep| {
            model.reset();
            let mut fp = FoldPath(SsPath {
                model: &mut *model,
                settings: SsSettings { ep: *ep, ..base },
                ctl,
                on_sweep: &mut |_, _| {},
                new_run: &mut || {},
            });
            continuation::reach(&mut fp, gamma, n, continuation::KAPPA, &mut |_| {})
                .map(|(_, path)| path.sweeps)
        });
        let model = &self.model;
        point_fit(res.map(|sweeps| {
            let m = DVector::from_vec(model.mean());
            ((&fold.xte * m).iter().copied().collect(), sweeps)
        }))
    }
}

/// A fold's continuation: every point, the target's too, at the folds'
/// tolerance (`SsPath` runs the target at the run's own).
struct FoldPath<'a>(SsPath<'a>);

impl Continuable for FoldPath<'_> {
    type Snapshot = (Vec<f64>, PriorSites);
    type Outcome = SsOutcome;
    fn snapshot(&self) -> Self::Snapshot {
        self.0.snapshot()
    }
    fn restore(&mut self, snap: &Self::Snapshot) {
        self.0.restore(snap);
    }
    fn reset(&mut self) {
        self.0.reset();
    }
    fn run_at(
        &mut self,
        gamma: f64,
        _target: bool,
    ) -> Result<(SsOutcome, usize, f64), EngineError> {
        // The fold's settings are already `fold_settings` (idempotent under `cv_settings`).
        self.0.run_at(gamma, true)
    }
    fn marginal(&self) -> Marginal {
        self.0.marginal()
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
    let report = select_cv(
        x,
        y,
        &gamma_spec(cv.folds, cv.seed, cv.grid_over_n),
        &&method,
        ctl,
        log,
    )?;
    power_notes("ep spike-slab", &method.powered)
        .into_iter()
        .for_each(log);
    Ok(report)
}
