//! γ by stratified k-fold cross-validation for EP (ALGORITHMS.md §8): EP as a
//! method of `select::kfold` — the held-out AUC of the posterior-mean score
//! over a geometric grid of γ = c·n (c·n_fold inside a fold), each fold
//! warm-starting EP along the grid from small to large γ.
//!
//! EP has no usable fixed point at very large γ with overlapping classes (§4):
//! a point where EP does not converge fails (with the larger ones of its
//! fold), and only points that converged in every fold can be chosen. With
//! heavily overlapping classes and many rows "very large" can start below
//! the grid, so the grid is then extended downwards by halving, to
//! `MIN_OVER_N`.
//!
//! The folds' converged posteriors (EP's coordinates, primal form) are kept,
//! and their average at the chosen point is returned as a start for the
//! final fit (`EpCv::start_at`): a fold's posterior at c·n_fold is close to
//! the whole training set's at c·n, and a cold start at a large chosen γ can
//! cycle where the folds converged warm.

use std::sync::Mutex;

use nalgebra::DVector;

use super::ard::{self, ArdSettings};
use super::config::Ep;
use super::continuation::{self, Bisect};
use super::design::Form;
use super::folds::FoldFlavour;
use super::linear::{LinearEp, LinearPath};
use super::pair_ep::PairEp;
use super::posterior::Posterior;

use super::settings::EpSettings;
use super::stop::{EpStop, add_sweeps};
use super::store::Precision;
use crate::engine::interface::{Control, EngineError};
use crate::engine::pairs::PairSampling;
use crate::engine::select::{CvSpec, FoldData, MEMORY_BUDGET, Walk};

/// The grid is extended down to the continuation's floor.
pub use super::continuation::MIN_OVER_N;
pub use super::settings::{DEFAULT_GRID, FOLD_TOL_FACTOR, fold_settings};

/// The CV of γ/n every EP flavour runs: walked upwards (warm starts, and
/// failures only get likelier with γ), extended down to `MIN_OVER_N`.
pub fn gamma_spec(folds: usize, seed: u64, grid_over_n: &[f64]) -> CvSpec {
    CvSpec {
        folds,
        seed,
        grid: grid_over_n.to_vec(),
        walk: Walk::Ascending,
        extend_below_to: Some(MIN_OVER_N),
        memory_budget: MEMORY_BUDGET,
    }
}

/// Folds with at least this many pairs store their sites in f32 when the
/// storage is `Auto`: half the memory traffic of a sweep (the site arrays
/// dominate it at small p) and half the memory, so that folds run side by
/// side; f32 moves the fixed point by ~1e-7 relative, far inside `fold_settings`'
/// tolerance. Announced in `details.cv_site_storage`.
pub const FOLD_F32_PAIRS: usize = 4_000_000;

/// The site storage of a fold's EP with this many pairs.
pub fn fold_precision(precision: Precision, pairs: usize) -> Precision {
    if precision == Precision::Auto && pairs >= FOLD_F32_PAIRS {
        Precision::F32
    } else {
        precision
    }
}

/// Folds' posteriors are kept for the final fit's start up to this many
/// coordinates (45 d × d matrices at the default grid).
pub const START_MAX_DIM: usize = 256;

/// A fold's converged posterior at a grid point (fold, γ/n, q).
type FoldPosterior = (usize, f64, Posterior);

/// Gaussian or ARD EP as a flavour of the CV (`folds`).
pub(super) struct EpCv<'a> {
    vars: &'a [f64],
    form: Form,
    precision: Precision,
    ep: EpSettings,
    ard: Option<&'a ArdSettings>,
    pairs: Option<PairSampling>,
    /// n+ · n− of all the rows (a fold's sample keeps its share of B).
    all_pairs: usize,
    /// The folds' converged posteriors, for the final fit's start.
    kept: Mutex<Vec<FoldPosterior>>,
}

impl<'a> EpCv<'a> {
    /// The folds of `ep`'s run on labels `y` at the prior's `vars` (ARD:
    /// tuned in every fold).
    pub(super) fn new(ep: &'a Ep, vars: &'a [f64], ard_on: bool, y: &[bool]) -> EpCv<'a> {
        let pos = y.iter().filter(|&&b| b).count();
        EpCv {
            vars,
            form: ep.form,
            precision: ep.precision,
            ep: fold_settings(&ep.settings),
            ard: ard_on.then_some(&ep.ard),
            pairs: ep.pairs,
            all_pairs: pos * (y.len() - pos),
            kept: Mutex::new(Vec::new()),
        }
    }

    /// The size of a fold's pair sample.
    fn fold_sample(&self, positives: usize, negatives: usize) -> Option<PairSampling> {
        self.pairs.map(|s| PairSampling {
            pairs: ((s.pairs as f64 * (positives * negatives) as f64 / self.all_pairs as f64)
                .round() as usize)
                .max(1),
            seed: s.seed,
        })
    }
}

/// One fold's EP state, warm-started along the grid.
pub(super) struct EpWalker {
    lep: LinearEp,
    ard: Option<ArdSettings>,
    /// The prior's variances (ARD's final fit starts there).
    prior_vars: Vec<f64>,
    /// Whether the converged posteriors are kept (`EpCv::start_at`).
    keep: bool,
}

impl FoldFlavour for EpCv<'_> {
    type State = EpWalker;
    const PREFIX: &'static str = "ep";

    fn fold_settings(&self) -> &EpSettings {
        &self.ep
    }

    /// The average of the folds' posteriors at the chosen point (mean of the
    /// means, mean of the covariances), in EP's coordinates; None when some
    /// fold kept none (reduced form, ARD, more than `START_MAX_DIM` coordinates).
    fn start_at(&self, chosen: f64, folds: usize) -> Option<Posterior> {
        average_at(&self.kept.lock().expect("a fold panicked"), chosen, folds)
    }

    /// ARD tunes its variances at every point: no power EP there.
    fn powered(&self) -> bool {
        self.ard.is_none()
    }

    fn start(&self, fold: &FoldData) -> Result<EpWalker, EngineError> {
        let pos = fold.ytr.iter().filter(|&&b| b).count();
        let sampling = self.fold_sample(pos, fold.ytr.len() - pos);
        let keys = [fold.fold as u64 + 1];
        let mut lep = LinearEp::with_pairs(
            &fold.xtr,
            &fold.ytr,
            self.vars,
            self.form,
            fold_precision(self.precision, pos * (fold.ytr.len() - pos)),
            sampling.as_ref().map(|s| (*s, &keys[..])),
        )?;
        // Held-out AUCs need no per-sweep log Z (the converged state's is still summed).
        lep.state_mut().set_evidence_every_sweep(false);
        // The fold's coordinates are the final fit's only in the primal form
        // without ARD (the same whitening D^{½} for every subset of rows).
        let keep =
            self.ard.is_none() && !lep.design().is_reduced() && lep.design().dim() <= START_MAX_DIM;
        Ok(EpWalker {
            lep,
            ard: self.ard.copied(),
            prior_vars: self.vars.to_vec(),
            keep,
        })
    }

    fn fold_bytes(&self, positives: usize, negatives: usize, d: usize) -> usize {
        let sampled = self.fold_sample(positives, negatives).map(|s| s.pairs);
        let precision = fold_precision(self.precision, positives * negatives);
        PairEp::memory_bytes(positives, negatives, d, precision, sampled)
    }

    /// Warm from the fold's last point; as the final fit reaches γ when
    /// that fails (`warm_or_walk`); power EP's tries from the prior by the
    /// continuation (`continuation::reach`), as the final fit answers.
    fn reach(
        &self,
        w: &mut EpWalker,
        c: f64,
        fold: &FoldData,
        s: &EpSettings,
        first: bool,
        ctl: &Control,
    ) -> Result<usize, EngineError> {
        let n = fold.ytr.len();
        let gamma = c * n as f64;
        if first {
            return w.warm_or_walk(gamma, n, s, ctl);
        }
        w.lep.state_mut().reset();
        let mut lp = LinearPath {
            lep: &mut w.lep,
            settings: *s,
            ctl,
            on_sweep: &mut |_, _| {},
        };
        continuation::reach(&mut lp, gamma, n, continuation::KAPPA, &mut |_| {})
            .map(|(_, path)| path.sweeps)
    }

    fn scores(&self, w: &EpWalker, c: f64, fold: &FoldData) -> Vec<f64> {
        if w.keep {
            let q = w.lep.state().posterior().expect("converged").clone();
            self.kept
                .lock()
                .expect("a fold panicked")
                .push((fold.fold, c, q));
        }
        let m = DVector::from_vec(w.lep.mean());
        (&fold.xte * m).iter().copied().collect()
    }
}

impl EpWalker {
    /// The point warm-started from the fold's last one (ARD: its variances
    /// tuned from there); its sweeps.
    fn run_point(
        &mut self,
        gamma: f64,
        ep: &EpSettings,
        ctl: &Control,
    ) -> Result<usize, EngineError> {
        let lep = &mut self.lep;
        match &self.ard {
            None => lep.run(gamma, ep, ctl, &mut |_, _| {}).map(|o| o.sweeps),
            Some(a) => ard::optimise(lep, gamma, ep, a, ctl, &mut |_, _| {}, &mut |_| {})
                .map(|r| r.trace.iter().map(|s| s.sweeps).sum()),
        }
    }

    /// A point whose warm start failed is reached as a fixed-γ fit reaches γ
    /// after its direct try (`continuation::walk_with`), at the fold's last
    /// variances; ARD then tunes them from there. Why: a grid step doubles γ
    /// with no bound on the move, and ARD's variances from the last point can
    /// leave EP at twice the γ far from its fixed point. Where the walk (with
    /// its tries from the prior) fails too, ARD's `restart`; the error is the
    /// walk's.
    fn warm_or_walk(
        &mut self,
        gamma: f64,
        n: usize,
        ep: &EpSettings,
        ctl: &Control,
    ) -> Result<usize, EngineError> {
        let vars = self.lep.vars().to_vec();
        let spent = match self.run_point(gamma, ep, ctl) {
            Err(e @ EngineError::NotConverged { .. }) => EpStop::sweeps_of(&e),
            res => return res,
        };
        let e = match self.walk(gamma, n, &vars, ep, ctl) {
            Err(e @ EngineError::NotConverged { .. }) => add_sweeps(e, spent),
            res => return res.map(|s| s + spent),
        };
        let walked = EpStop::sweeps_of(&e);
        match self.restart(gamma, &vars, ep, ctl) {
            None => Err(e),
            Some(res) => res.map(|s| s + walked).map_err(|r| match r {
                EngineError::NotConverged { .. } => add_sweeps(e, EpStop::sweeps_of(&r)),
                r => r,
            }),
        }
    }

    /// `continuation::walk_with` to γ at `vars`, then (ARD) the variances tuned.
    fn walk(
        &mut self,
        gamma: f64,
        n: usize,
        vars: &[f64],
        ep: &EpSettings,
        ctl: &Control,
    ) -> Result<usize, EngineError> {
        if self.lep.vars() != vars {
            self.lep.set_vars(vars);
        }
        let mut lp = LinearPath {
            lep: &mut self.lep,
            settings: *ep,
            ctl,
            on_sweep: &mut |_, _| {},
        };
        let (kappa, bisect) = (continuation::KAPPA, Bisect::FromPrior);
        let walked = continuation::walk_with(&mut lp, gamma, n, kappa, bisect, &mut |_| {})
            .map(|(_, path)| path.sweeps)?;
        if self.ard.is_none() {
            return Ok(walked);
        }
        self.run_point(gamma, ep, ctl)
            .map(|sweeps| sweeps + walked)
            .map_err(|e| add_sweeps(e, walked))
    }

    /// ARD's last try at a point the walk (with its tries from the prior,
    /// `Bisect::FromPrior`) did not reach: from the prior at the prior's
    /// variances, as ARD's final fit starts. Why: variances an ARD loop cut
    /// short at `ard_iters` can leave EP without a fixed point in reach
    /// (BENCHMARKS ep-from-prior21); the continuation walks γ, not the
    /// variances.
    fn restart(
        &mut self,
        gamma: f64,
        vars: &[f64],
        ep: &EpSettings,
        ctl: &Control,
    ) -> Option<Result<usize, EngineError>> {
        let prior_vars = self.prior_vars.clone();
        let tried = self.ard.is_none() || vars == prior_vars.as_slice();
        (!tried).then(|| self.run_from_prior(gamma, &prior_vars, ep, ctl))
    }

    /// EP from the prior at γ at `vars` (ARD: tuned).
    fn run_from_prior(
        &mut self,
        gamma: f64,
        vars: &[f64],
        ep: &EpSettings,
        ctl: &Control,
    ) -> Result<usize, EngineError> {
        if self.lep.vars() != vars {
            self.lep.set_vars(vars);
        }
        self.lep.state_mut().reset();
        self.run_point(gamma, ep, ctl)
    }
}

/// The average of the folds' posteriors at γ/n = `c` (folds in order), when
/// every one of the `folds` kept one.
fn average_at(kept: &[FoldPosterior], c: f64, folds: usize) -> Option<Posterior> {
    let mut at: Vec<&FoldPosterior> = kept.iter().filter(|(_, g, _)| *g == c).collect();
    at.sort_by_key(|(f, _, _)| *f);
    at.dedup_by_key(|(f, _, _)| *f);
    if at.len() != folds {
        return None;
    }
    let w = 1.0 / folds as f64;
    let (mut m, mut v) = (at[0].2.m.clone() * 0.0, at[0].2.v.clone() * 0.0);
    for (_, _, q) in at {
        m += &q.m * w;
        v += &q.v * w;
    }
    Some(Posterior {
        v,
        m,
        // Only the moments serve as a start; the evidence terms are the final fit's.
        log_det_q: f64::NAN,
        r_v_r: f64::NAN,
    })
}

#[cfg(test)]
#[path = "cv_tests.rs"]
mod tests;
