//! γ by stratified k-fold cross-validation for GP-EP: GP-EP as a method of
//! `select::kfold`, with the same grid, walk and rules as linear EP's
//! (`ep::cv`): the held-out AUC of the predictive-mean score over γ = c·n
//! (c·n_fold inside a fold), each fold warm-starting GP-EP along the grid from
//! small to large γ, failures ending the fold's walk.
//!
//! The kernel is fixed during the CV (the given ℓ, or the median distance of
//! the whole training set when ℓ is chosen by evidence afterwards): choosing γ
//! and ℓ jointly by CV would multiply the cost by the ℓ grid.

use nalgebra::DMatrix;

use super::fitting::{Features, features, fit_features, predictive_mean, run_exact};
use super::sweep::GpEp;
use crate::engine::ep::cv::{gamma_label, gamma_names, gamma_spec, point_fit};
use crate::engine::ep::settings::EpSettings;
use crate::engine::ep::store::Precision as SitePrecision;
use crate::engine::gp::{GpApprox, Kernel};
use crate::engine::interface::{Control, EngineError};
use crate::engine::select::{
    CvMethod, CvNames, CvReport, FoldData, GridWalker, PointFit, cross_validate as select_cv,
};

/// GP-EP at a fixed kernel and approximation, as a cross-validated method.
struct GpCv<'a> {
    kernel: &'a Kernel,
    approx: GpApprox,
    ep: EpSettings,
    precision: SitePrecision,
}

/// One fold's GP-EP state (exact: the sites, warm-started along the grid;
/// features: computed once, the kernel is fixed during the CV).
struct GpWalker<'a> {
    cv: &'a GpCv<'a>,
    state: Option<GpEp>,
    features: Option<Features>,
}

impl<'a> CvMethod for &'a GpCv<'a> {
    type Walker = GpWalker<'a>;

    fn names(&self) -> CvNames {
        gamma_names("gp")
    }

    fn label(&self, c: f64) -> String {
        gamma_label(c)
    }

    fn start(&self, _fold: &FoldData) -> Result<GpWalker<'a>, EngineError> {
        Ok(GpWalker {
            cv: self,
            state: None,
            features: None,
        })
    }

    /// Exact: the site state (K, h, previous and next: 6 numbers a pair, and
    /// the pair block of q) and three n × n matrices (K_u⁻¹, its factor, the
    /// workspace); features: the linear EP on D features, bounded by that.
    fn fold_bytes(&self, positives: usize, negatives: usize, d: usize) -> usize {
        let n = positives + negatives;
        8 * (7 * positives * negatives + 3 * n * n + n * d)
    }
}

impl GridWalker for GpWalker<'_> {
    fn fit(&mut self, c: f64, fold: &FoldData, ctl: &Control) -> Result<PointFit, EngineError> {
        let gamma = c * fold.ytr.len() as f64;
        let cv = self.cv;
        let res = match cv.approx {
            GpApprox::Exact => run_exact(
                cv.kernel,
                &fold.xtr,
                &fold.ytr,
                gamma,
                &cv.ep,
                &mut self.state,
                ctl,
                &mut |_| {},
            )
            .map(|out| {
                let ep = self.state.as_ref().expect("run_exact leaves its state");
                (
                    predictive_mean(cv.kernel, ep, &fold.xtr, &fold.xte),
                    out.sweeps,
                )
            }),
            a => {
                if self.features.is_none() {
                    self.features = Some(features(cv.kernel, a, &fold.xtr)?);
                }
                let f = self.features.as_ref().expect("computed");
                fit_features(
                    cv.kernel,
                    f,
                    &fold.xtr,
                    &fold.ytr,
                    gamma,
                    &cv.ep,
                    cv.precision,
                    false,
                    ctl,
                    &mut |_| {},
                )
                .map(|(model, out)| (model.predict_mean(&fold.xte), out.sweeps))
            }
        };
        point_fit(res)
    }
}

/// γ/n by k-fold CV for GP-EP at `kernel` (`approx` resolved: exact or
/// features); `log` receives one line per grid point and fold.
#[allow(clippy::too_many_arguments)]
pub fn cross_validate(
    x: &DMatrix<f64>,
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
) -> Result<CvReport, EngineError> {
    let method = GpCv {
        kernel,
        approx,
        ep: *ep,
        precision,
    };
    let spec = gamma_spec(folds, seed, grid_over_n);
    select_cv(x, y, &spec, &&method, ctl, log)
}
