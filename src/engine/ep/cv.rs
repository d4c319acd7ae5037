//! γ by stratified k-fold cross-validation for EP (ALGORITHMS.md §8): EP as a
//! method of `select::kfold` — the held-out AUC of the posterior-mean score
//! over a geometric grid of γ = c·n (c·n_fold inside a fold), each fold
//! warm-starting EP along the grid from small to large γ.
//!
//! EP has no usable fixed point at very large γ with overlapping classes (§4):
//! a point where EP does not converge fails (with the larger ones of its
//! fold), and only points that converged in every fold can be chosen. With
//! heavily overlapping classes and many rows (EEG: 15k rows, AUC ≈ 0.68) "very
//! large" starts below n/8, so the whole default grid can fail in some fold:
//! the grid is then extended downwards by halving, to n/1024 (`MIN_OVER_N`).
//! Inside the CV a point whose sweeps cycle (Δ/η stays flat while η halves),
//! or drift one way while rejected steps cut η far down, is declared failed
//! after `CYCLE_STALLS` such windows instead of running to its most sweeps.

use nalgebra::{DMatrix, DVector};

use super::ard::{self, ArdSettings};
use super::design::Form;
use super::linear::LinearEp;
use super::pair_ep::{EpSettings, PairEp};
use super::store::Precision;
use crate::engine::interface::{Control, EngineError};
use crate::engine::pairs::PairSampling;
use crate::engine::select::{
    CvMethod, CvNames, CvReport, CvSpec, FoldData, GridWalker, MEMORY_BUDGET, PointFit, Walk,
    cross_validate as select_cv,
};

/// The smallest multiple of n the grid is extended down to.
pub const MIN_OVER_N: f64 = 1.0 / 1024.0;

/// Stall halvings in a row with a flat Δ/η that mark a cycle inside the CV.
pub const CYCLE_STALLS: usize = 2;

/// EP inside the CV's folds converges to this multiple of the run's tolerance
/// (the final fit keeps the run's own). The held-out AUC only needs the
/// posterior mean's direction: at tol = 1e-3 the means are within ~0.002 sd of
/// their 1e-4 values (ALGORITHMS.md §4), while the slow geometric modes of
/// large folds (EEG: Δ falling 2–4% a sweep) need ~60 sweeps per decade of tol.
/// Announced in the log and the record (`details.cv_tol`).
pub const FOLD_TOL_FACTOR: f64 = 10.0;

/// Default grid of γ/n: 2^−4 … 2^4 (n = training rows; ≤ 25n, §4).
pub fn default_grid() -> Vec<f64> {
    (-4..=4).map(|k| 2f64.powi(k)).collect()
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
    /// Sites on a sample of pairs: each fold draws its own, of the size that
    /// keeps the share of its pairs (`pairs::PairSample`).
    pub pairs: Option<PairSampling>,
}

/// The settings of EP runs inside the CV: a cycling point fails fast (unless
/// the caller chose another number of stalls).
pub fn cv_settings(ep: &EpSettings) -> EpSettings {
    EpSettings {
        cycle_stalls: if ep.cycle_stalls == 0 {
            CYCLE_STALLS
        } else {
            ep.cycle_stalls
        },
        ..*ep
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

/// The settings of EP runs inside the folds: `cv_settings` with the tolerance
/// loosened by `FOLD_TOL_FACTOR`.
pub fn fold_settings(ep: &EpSettings) -> EpSettings {
    EpSettings {
        tol: ep.tol * FOLD_TOL_FACTOR,
        ..cv_settings(ep)
    }
}

/// EP as a cross-validated method.
struct EpCv<'a> {
    vars: &'a [f64],
    form: Form,
    precision: Precision,
    ep: EpSettings,
    ard: Option<&'a ArdSettings>,
    pairs: Option<PairSampling>,
    /// n+ · n− of all the rows (a fold's sample keeps its share of B).
    all_pairs: usize,
}

impl EpCv<'_> {
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
struct EpWalker {
    lep: LinearEp,
    ep: EpSettings,
    ard: Option<ArdSettings>,
}

impl CvMethod for EpCv<'_> {
    type Walker = EpWalker;

    fn names(&self) -> CvNames {
        CvNames {
            prefix: "ep",
            parameter: "gamma_over_n",
            unit: "sweeps",
        }
    }

    fn label(&self, c: f64) -> String {
        format!("γ = {c}n")
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
        Ok(EpWalker {
            lep,
            ep: self.ep,
            ard: self.ard.copied(),
        })
    }

    fn fold_bytes(&self, positives: usize, negatives: usize, d: usize) -> usize {
        let sampled = self.fold_sample(positives, negatives).map(|s| s.pairs);
        let precision = fold_precision(self.precision, positives * negatives);
        PairEp::memory_bytes(positives, negatives, d, precision, sampled)
    }
}

impl GridWalker for EpWalker {
    fn fit(&mut self, c: f64, fold: &FoldData, ctl: &Control) -> Result<PointFit, EngineError> {
        let gamma = c * fold.ytr.len() as f64;
        let (ep, lep) = (&self.ep, &mut self.lep);
        let res = match &self.ard {
            None => lep.run(gamma, ep, ctl, &mut |_, _| {}).map(|o| o.sweeps),
            Some(a) => ard::optimise(lep, gamma, ep, a, ctl, &mut |_, _| {}, &mut |_| {})
                .map(|r| r.trace.iter().map(|s| s.sweeps).sum()),
        };
        point_fit(res.map(|iterations| {
            let m = DVector::from_vec(lep.mean());
            ((&fold.xte * m).iter().copied().collect(), iterations)
        }))
    }
}

/// An EP fit at a grid point (held-out scores and sweeps) as the CV's
/// `PointFit`: non-convergence fails the point (reason and sweeps from the
/// diagnostics); any other error ends the CV.
pub fn point_fit(res: Result<(Vec<f64>, usize), EngineError>) -> Result<PointFit, EngineError> {
    match res {
        Ok((scores, iterations)) => Ok(PointFit::Scored { scores, iterations }),
        Err(EngineError::NotConverged {
            message,
            diagnostics,
        }) => Ok(PointFit::Failed {
            reason: diagnostics["detail"]["reason"]
                .as_str()
                .unwrap_or("failed")
                .to_string(),
            message,
            iterations: diagnostics["sweeps"].as_u64().unwrap_or(0) as usize,
        }),
        Err(e) => Err(e),
    }
}

/// Runs the cross-validation of γ/n; `log` receives one line per grid point and fold.
pub fn cross_validate(
    x: &DMatrix<f64>,
    y: &[bool],
    vars: &[f64],
    cv: &CvSettings<'_>,
    ctl: &Control,
    log: &mut dyn FnMut(String),
) -> Result<CvReport, EngineError> {
    let method = EpCv {
        vars,
        form: cv.form,
        precision: cv.precision,
        ep: fold_settings(cv.ep),
        ard: cv.ard,
        pairs: cv.pairs,
        all_pairs: {
            let pos = y.iter().filter(|&&b| b).count();
            pos * (y.len() - pos)
        },
    };
    let spec = CvSpec {
        folds: cv.folds,
        seed: cv.seed,
        grid: cv.grid_over_n.to_vec(),
        walk: Walk::Ascending,
        extend_below_to: Some(MIN_OVER_N),
        memory_budget: MEMORY_BUDGET,
    };
    select_cv(x, y, &spec, &method, ctl, log)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::ep::tests::toy;

    fn settings<'a>(grid: &'a [f64], ep: &'a EpSettings) -> CvSettings<'a> {
        CvSettings {
            grid_over_n: grid,
            folds: 3,
            seed: 1,
            form: Form::Primal,
            precision: Precision::F64,
            ep,
            ard: None,
            pairs: None,
        }
    }

    /// Heavily overlapping classes (train AUC ≈ 0.63): EP has no usable fixed
    /// point at γ ≥ 32n here, so a grid starting there fails in every fold and
    /// the CV must extend it downwards and still choose a converged γ.
    #[test]
    fn a_grid_without_fixed_points_is_extended_downwards() {
        let (x, y) = toy(450, 3, 41, 4.0);
        let ep = EpSettings::default();
        let grid = [64.0, 128.0, 256.0];
        let mut lines = Vec::new();
        let r = cross_validate(
            &x,
            &y,
            &[1.0; 3],
            &settings(&grid, &ep),
            &Control::new(),
            &mut |l| lines.push(l),
        )
        .unwrap();
        // Every point of the requested grid failed or was not run, and says why.
        for c in grid {
            let i = r.grid.iter().position(|&g| g == c).unwrap();
            assert!(r.mean_auc[i].is_none());
            assert!(
                r.dropped
                    .iter()
                    .any(|d| d.starts_with(&format!("γ = {c}n:")))
            );
        }
        assert!(!r.extended_below.is_empty(), "{}", lines.join("\n"));
        assert!(r.extended_below.contains(&r.chosen));
        assert!(r.chosen >= MIN_OVER_N);
        // At least two points converged in every fold; the chosen one is the best.
        let ok: Vec<f64> = r.mean_auc.iter().flatten().copied().collect();
        assert!(ok.len() >= 2, "{:?}", r.mean_auc);
        let i = r.grid.iter().position(|&g| g == r.chosen).unwrap();
        assert_eq!(
            r.mean_auc[i],
            Some(ok.iter().cloned().fold(f64::MIN, f64::max))
        );
        // Extension points are halvings of the grid's smallest point, in the order added.
        for (k, c) in r.extended_below.iter().enumerate() {
            assert_eq!(*c, 64.0 / 2f64.powi(k as i32 + 1));
        }
        // Failures inside the CV end early (invalid cavities, a cycle or a drift at a
        // step cut down), not at the most sweeps.
        assert!(!r.failures.is_empty());
        assert!(
            r.failures.iter().all(|f| f.iterations < ep.max_sweeps),
            "{:#?}",
            r.failures
        );
        // The chosen γ converges on the whole training set.
        let mut lep = LinearEp::new(&x, &y, &[1.0; 3], Form::Primal, Precision::F64).unwrap();
        let gamma = r.chosen * y.len() as f64;
        lep.run(gamma, &ep, &Control::new(), &mut |_, _| {})
            .unwrap();
    }

    /// A grid where EP converges everywhere is not extended.
    #[test]
    fn a_working_grid_is_not_extended() {
        let (x, y) = toy(120, 3, 43, 1.0);
        let ep = EpSettings::default();
        let grid = default_grid();
        let r = cross_validate(
            &x,
            &y,
            &[1.0; 3],
            &settings(&grid, &ep),
            &Control::new(),
            &mut |_| {},
        )
        .unwrap();
        assert!(r.extended_below.is_empty());
        assert!(r.dropped.is_empty());
        assert_eq!(r.grid, grid);
        assert!(r.mean_auc.iter().all(|a| a.is_some()));
    }
}
