//! One cross-validation adapter for every EP flavour (Gaussian/ARD,
//! spike-and-slab, GP): the flavour builds a fold's model, reaches a grid
//! point and scores the held-out rows; this adapter makes it a method of
//! `select::kfold` (names, the walk along the grid, power EP where EP ends in
//! a verdict, the folds' power-EP notes).

use std::sync::Mutex;

use nalgebra::DMatrix;

use super::posterior::Posterior;
use super::power;
use super::settings::EpSettings;
use super::stop::{EpStop, add_sweeps};
use crate::engine::interface::{Control, EngineError};
use crate::engine::select::{
    CvMethod, CvNames, CvReport, CvSpec, FoldData, GridWalker, PointFit,
    cross_validate as select_cv,
};

/// What differs between EP flavours inside the CV's folds.
pub trait FoldFlavour: Sync {
    /// A fold's EP state, kept along the grid.
    type State;
    /// The log prefix ("ep", "gp", "ep spike-slab").
    const PREFIX: &'static str;
    /// The folds' settings.
    fn fold_settings(&self) -> &EpSettings;
    /// A start for the final fit at the chosen γ/n, where the folds keep one.
    fn start_at(&self, _chosen: f64, _folds: usize) -> Option<Posterior> {
        None
    }
    /// Whether power EP answers a point where EP ends in a verdict.
    fn powered(&self) -> bool {
        true
    }
    fn start(&self, fold: &FoldData) -> Result<Self::State, EngineError>;
    fn fold_bytes(&self, positives: usize, negatives: usize, d: usize) -> usize;
    /// Reaches γ = c·n_fold at `s`, its sweeps; `first`: the try at the folds' own settings.
    fn reach(
        &self,
        st: &mut Self::State,
        c: f64,
        fold: &FoldData,
        s: &EpSettings,
        first: bool,
        ctl: &Control,
    ) -> Result<usize, EngineError>;
    /// The held-out rows' scores at the point just reached.
    fn scores(&self, st: &Self::State, c: f64, fold: &FoldData) -> Vec<f64>;
}

/// A flavour as a cross-validated method.
pub struct FlavourCv<'a, F> {
    pub flavour: &'a F,
    /// The folds' points answered by power EP: (fold, γ/n, α, EP's failure).
    powered: Mutex<Vec<(usize, f64, f64, String)>>,
}

impl<'a, F: FoldFlavour> FlavourCv<'a, F> {
    pub fn new(flavour: &'a F) -> Self {
        FlavourCv {
            flavour,
            powered: Mutex::new(Vec::new()),
        }
    }
}

/// One fold's state, walked along the grid.
pub struct FlavourWalker<'a, F: FoldFlavour> {
    cv: &'a FlavourCv<'a, F>,
    pub state: F::State,
}

impl<'a, F: FoldFlavour> CvMethod for &'a FlavourCv<'a, F> {
    type Walker = FlavourWalker<'a, F>;

    fn names(&self) -> CvNames {
        CvNames {
            prefix: F::PREFIX,
            parameter: "gamma_over_n",
            unit: "sweeps",
        }
    }

    fn label(&self, c: f64) -> String {
        gamma_label(c)
    }

    fn start(&self, fold: &FoldData) -> Result<FlavourWalker<'a, F>, EngineError> {
        Ok(FlavourWalker {
            cv: self,
            state: self.flavour.start(fold)?,
        })
    }

    fn fold_bytes(&self, positives: usize, negatives: usize, d: usize) -> usize {
        self.flavour.fold_bytes(positives, negatives, d)
    }
}

impl<F: FoldFlavour> GridWalker for FlavourWalker<'_, F> {
    /// Where EP ends in a verdict (`powered`), the point is answered as the
    /// final fit answers γ: power EP along `FALLBACK_POWERS`; the sweeps
    /// count the failed attempts' too.
    fn fit(&mut self, c: f64, fold: &FoldData, ctl: &Control) -> Result<PointFit, EngineError> {
        let f = self.cv.flavour;
        let (base, st) = (*f.fold_settings(), &mut self.state);
        let res = if f.powered() {
            let (mut first, mut spent) = (true, 0);
            let counted = |s: &EpSettings| {
                let res = f.reach(st, c, fold, s, std::mem::take(&mut first), ctl);
                if let Err(e) = &res {
                    spent += EpStop::sweeps_of(e);
                }
                res
            };
            power::run_with_fallback(&base, counted, &mut |_, _| {})
                .map(|(sweeps, used)| {
                    // EP's own failure is kept only where the fallback answered.
                    if let Some(why) = used.ep_failure {
                        let mut p = self.cv.powered.lock().expect("a fold panicked");
                        p.push((fold.fold, c, used.alpha, why));
                    }
                    sweeps + spent
                })
                .map_err(|e| {
                    // The last failure's own sweeps are in `spent` already.
                    let own = EpStop::sweeps_of(&e);
                    add_sweeps(e, spent.saturating_sub(own))
                })
        } else {
            f.reach(st, c, fold, &base, true, ctl)
        };
        // Non-convergence fails the point (its reason, and its sweeps from
        // EP's account); any other error ends the CV.
        match res {
            Ok(iterations) => Ok(PointFit::Scored {
                scores: f.scores(&self.state, c, fold),
                iterations,
            }),
            Err(e) => {
                let iterations = EpStop::sweeps_of(&e);
                match e {
                    EngineError::NotConverged {
                        reason, message, ..
                    } => Ok(PointFit::Failed {
                        reason,
                        message,
                        iterations,
                    }),
                    e => Err(e),
                }
            }
        }
    }
}

/// A grid point of γ/n as text ("γ = 0.5n").
pub fn gamma_label(c: f64) -> String {
    format!("γ = {c}n")
}

/// Runs the CV of γ/n for `flavour`; `log` receives one line per grid point
/// and fold, the curve, and (in fold and γ order, whatever the thread count)
/// the fold points power EP answered.
pub fn cross_validate<F: FoldFlavour>(
    x: &DMatrix<f64>,
    y: &[bool],
    spec: &CvSpec,
    flavour: &F,
    ctl: &Control,
    log: &mut dyn FnMut(String),
) -> Result<CvReport, EngineError> {
    let method = FlavourCv::new(flavour);
    let report = select_cv(x, y, spec, &&method, ctl, log)?;
    let mut p = method.powered.into_inner().expect("a fold panicked");
    p.sort_by(|a, b| a.0.cmp(&b.0).then(a.1.total_cmp(&b.1)));
    for (f, c, alpha, why) in p {
        log(format!(
            "{} cv: fold {}, {}: no EP fixed point in reach ({why}); scored by power EP at α = \
             {alpha}, as the final fit would answer there",
            F::PREFIX,
            f + 1,
            gamma_label(c)
        ));
    }
    Ok(report)
}
