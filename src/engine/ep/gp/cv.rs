//! γ by stratified k-fold cross-validation for GP-EP: GP-EP as a method of
//! `select::kfold`, with the same grid, walk and rules as linear EP's
//! (`ep::cv`): the held-out AUC of the predictive-mean score over γ = c·n
//! (c·n_fold inside a fold), each fold warm-starting GP-EP along the grid from
//! small to large γ, failures ending the fold's walk.
//!
//! The kernel is fixed during the CV (the given ℓ, or the median distance of
//! the whole training set when ℓ is chosen by evidence afterwards): choosing γ
//! and ℓ jointly by CV would multiply the cost by the ℓ grid.

use super::fitting::{Features, features, fit_features, predictive_mean, run_exact};
use super::sweep::GpEp;
use crate::engine::ep::folds::FoldFlavour;
use crate::engine::ep::settings::EpSettings;
use crate::engine::ep::store::Precision as SitePrecision;
use crate::engine::gp::{GpApprox, GpModel, Kernel};
use crate::engine::interface::{Control, EngineError};
use crate::engine::select::FoldData;

/// GP-EP at a fixed kernel and approximation, as a flavour of the CV.
pub(super) struct GpCv {
    pub(super) kernel: Kernel,
    pub(super) approx: GpApprox,
    pub(super) ep: EpSettings,
    pub(super) precision: SitePrecision,
}

/// One fold's GP-EP state (exact: the sites, warm-started along the grid;
/// features: computed once, the kernel is fixed during the CV, and the last
/// point's model).
#[derive(Default)]
pub(super) struct GpWalker {
    state: Option<GpEp>,
    features: Option<Features>,
    model: Option<GpModel>,
}

impl FoldFlavour for GpCv {
    type State = GpWalker;
    const PREFIX: &'static str = "gp";

    fn fold_settings(&self) -> &EpSettings {
        &self.ep
    }

    fn powered(&self) -> bool {
        false
    }

    fn start(&self, _fold: &FoldData) -> Result<GpWalker, EngineError> {
        Ok(GpWalker::default())
    }

    /// Exact: the site state (K, h, previous and next: 6 numbers a pair, and
    /// the pair block of q) and three n × n matrices (K_u⁻¹, its factor, the
    /// workspace); features: the linear EP on D features, bounded by that.
    fn fold_bytes(&self, positives: usize, negatives: usize, d: usize) -> usize {
        let n = positives + negatives;
        8 * (7 * positives * negatives + 3 * n * n + n * d)
    }

    fn reach(
        &self,
        w: &mut GpWalker,
        c: f64,
        fold: &FoldData,
        s: &EpSettings,
        _first: bool,
        ctl: &Control,
    ) -> Result<usize, EngineError> {
        let gamma = c * fold.ytr.len() as f64;
        let (x, y) = (&fold.xtr, &fold.ytr);
        match self.approx {
            GpApprox::Exact => {
                run_exact(&self.kernel, x, y, gamma, s, &mut w.state, ctl, &mut |_| {})
                    .map(|out| out.sweeps)
            }
            a => {
                if w.features.is_none() {
                    w.features = Some(features(&self.kernel, a, x)?);
                }
                let f = w.features.as_ref().expect("computed");
                let p = self.precision;
                fit_features(&self.kernel, f, x, y, gamma, s, p, false, ctl, &mut |_| {}).map(
                    |(model, out)| {
                        w.model = Some(model);
                        out.sweeps
                    },
                )
            }
        }
    }

    fn scores(&self, w: &GpWalker, _c: f64, fold: &FoldData) -> Vec<f64> {
        match &w.model {
            Some(model) => model.predict_mean(&fold.xte),
            None => {
                let ep = w.state.as_ref().expect("run_exact leaves its state");
                predictive_mean(&self.kernel, ep, &fold.xtr, &fold.xte)
            }
        }
    }
}

/// γ/n by k-fold CV for GP-EP at `kernel` (`approx` resolved: exact or
/// features); `log` receives one line per grid point and fold.
#[cfg(test)]
#[allow(clippy::too_many_arguments)]
pub fn cross_validate(
    x: &nalgebra::DMatrix<f64>,
    y: &[bool],
    kernel: &Kernel,
    approx: GpApprox,
    grid_over_n: &[f64],
    folds: usize,
    seed: u64,
    ep: &EpSettings,
    precision: SitePrecision,
    ctl: &Control,
    log: &mut dyn FnMut(String),
) -> Result<crate::engine::select::CvReport, EngineError> {
    let flavour = GpCv {
        kernel: kernel.clone(),
        approx,
        ep: *ep,
        precision,
    };
    let spec = crate::engine::ep::cv::gamma_spec(folds, seed, grid_over_n);
    crate::engine::ep::folds::cross_validate(x, y, &spec, &flavour, ctl, log)
}
