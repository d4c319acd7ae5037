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
//! `FALLBACK_POWERS` (`folds`), each fold point so answered said in
//! the log. Why: at small γ the branch of fixed points that starts at the
//! prior can end (a fold where it turns back): from the prior EP passes that
//! branch's ghost slowly towards a sparser fixed point, which the anderson
//! controller's verdict ends as no progress, and the continuation's walk
//! along γ stops at the same end of the branch. Small γ is not the easy end for spike-and-slab: there the
//! likelihood is too weak to hold features in the slab while the scale-free
//! AUC risk keeps the sparse state self-consistent. The final fit answers
//! such a γ with power EP; without the same fallback the folds dropped it.
//!
//! No average of the folds' posteriors starts the final fit (Gaussian EP's
//! `FoldFlavour::start_at`): a spike-and-slab state is its pair sites and prior
//! sites, not a Gaussian q; the final fit reaches the chosen γ by the
//! continuation.

use nalgebra::DVector;

use super::model::{SpikeSlab, SpikeSlabEp, SsPath};
use super::prior_sites::PriorSites;
use super::sweep::{SsOutcome, SsSettings};
use crate::engine::ep::continuation::{self, Continuable};
use crate::engine::ep::cv::{fold_precision, fold_settings};
use crate::engine::ep::design::Form;
use crate::engine::ep::folds::FoldFlavour;
use crate::engine::ep::pair_ep::PairEp;
use crate::engine::ep::settings::EpSettings;
use crate::engine::ep::store::Precision;
use crate::engine::ep::sweep_state::Marginal;
use crate::engine::interface::{Control, EngineError};
use crate::engine::select::FoldData;

/// The settings of spike-and-slab EP inside the folds: Gaussian EP's fold
/// settings (tolerance × `FOLD_TOL_FACTOR`, cycles fail fast), no per-sweep log Z.
pub fn fold_ss_settings(ss: &SsSettings) -> SsSettings {
    SsSettings {
        ep: fold_settings(&ss.ep),
        evidence_every_sweep: false,
        ..*ss
    }
}

/// Spike-and-slab EP at a fixed prior, as a flavour of the CV.
pub(super) struct SsCv {
    pub(super) prior: SpikeSlab,
    pub(super) form: Form,
    pub(super) precision: Precision,
    /// The folds' settings (`fold_ss_settings`).
    pub(super) ss: SsSettings,
    /// Continue without the negative-site fix at convergence, as the final fit.
    pub(super) release_fixes: bool,
}

impl FoldFlavour for SsCv {
    /// Every point a fixed-γ fit of the fold's model.
    type State = SpikeSlabEp;
    const PREFIX: &'static str = "ep spike-slab";

    fn fold_settings(&self) -> &EpSettings {
        &self.ss.ep
    }

    fn start(&self, fold: &FoldData) -> Result<SpikeSlabEp, EngineError> {
        let pos = fold.ytr.iter().filter(|&&b| b).count();
        let precision = fold_precision(self.precision, pos * (fold.ytr.len() - pos));
        let mut model =
            SpikeSlabEp::with_form(&fold.xtr, &fold.ytr, self.prior, precision, self.form)?;
        model.set_release_fixes(self.release_fixes);
        Ok(model)
    }

    fn fold_bytes(&self, positives: usize, negatives: usize, d: usize) -> usize {
        // The reduced form's rank is at most the fold's rows.
        let dim = d.min(positives + negatives);
        let precision = fold_precision(self.precision, positives * negatives);
        PairEp::memory_bytes(positives, negatives, dim, precision, None)
    }

    /// As the final fit reaches γ: from the prior by the continuation (not
    /// warm from the previous point alone, which can stay in the all-spike
    /// fixed point), and power EP where EP ends in a verdict (module docs).
    fn reach(
        &self,
        model: &mut SpikeSlabEp,
        c: f64,
        fold: &FoldData,
        ep: &EpSettings,
        _first: bool,
        ctl: &Control,
    ) -> Result<usize, EngineError> {
        let n = fold.ytr.len();
        model.reset();
        let mut fp = FoldPath(SsPath {
            model,
            settings: SsSettings { ep: *ep, ..self.ss },
            ctl,
            on_sweep: &mut |_, _| {},
            new_run: &mut || {},
        });
        continuation::reach(&mut fp, c * n as f64, n, continuation::KAPPA, &mut |_| {})
            .map(|(_, path)| path.sweeps)
    }

    fn scores(&self, model: &SpikeSlabEp, _c: f64, fold: &FoldData) -> Vec<f64> {
        let m = DVector::from_vec(model.mean());
        (&fold.xte * m).iter().copied().collect()
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
