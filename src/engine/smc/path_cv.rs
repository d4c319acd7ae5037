//! γ by stratified k-fold cross-validation for SMC (ALGORITHMS.md §8): a
//! tempering run passes through every γ from 0 to its target, so one run per
//! fold, stopped exactly at each grid point (`sampler::Checkpoints`), gives the
//! held-out AUC of the particle-mean score along the whole grid
//! (`select::cross_validate_path`). `CvMode::Refit` runs SMC afresh at every
//! fold and grid point instead: the reference the path is measured against.
//! Then one SMC run on all training rows at the chosen γ.
//!
//! Linear scores only (Gaussian, ARD and spike-and-slab priors): the GP
//! prior's score-space particles score no held-out rows.

use std::sync::Mutex;
use std::time::Instant;

use nalgebra::{DMatrix, DVector};
use rand::RngExt;
use serde::{Deserialize, Serialize};
use serde_json::json;

use super::sampler::{self, AfterCheckpoint, Checkpoints};
use super::settings::SmcSettings;
use super::target::LinearAuc;
use crate::engine::error::NonConvergence;
use crate::engine::event::{Event, LogLevel};
use crate::engine::fit::Fit;
use crate::engine::interface::{Control, Engine, EngineError, NoObserver, Observer};
use crate::engine::numerics::rng;
use crate::engine::prior::Prior;
use crate::engine::problem::Problem;
use crate::engine::select::{
    CvNames, CvReport, CvSpec, EarlyStop, FoldData, PathMethod, PointFit, RefitPoint, StoppedEarly,
    cross_validate_path, cross_validate_refit,
};

/// RNG key of a fold's sampler seed (with the run's sampler seed).
const KEY_FOLD: u64 = 0x5EED_C0F0;

/// How the folds' γ curves are computed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CvMode {
    /// One run per fold to the largest γ, stopping at every grid point.
    #[default]
    Path,
    /// One run per fold and grid point (the slow reference).
    Refit,
}

/// γ by cross-validation over a grid of multiples of n.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GammaCv {
    /// γ/n (n: the fold's training rows inside the CV, all of them after).
    pub grid_over_n: Vec<f64>,
    pub folds: usize,
    /// Seed of the fold assignment.
    pub seed: u64,
    pub mode: CvMode,
    /// End the folds' paths once the mean held-out AUC has clearly fallen
    /// (path mode only; None: every fold runs to the top of the grid).
    pub early_stop: Option<EarlyStop>,
}

/// The default early stop: two grid points in a row, each more than one
/// paired standard error below the best (with the default grid, a factor 4
/// in γ past the best point). On 13 full paths of five shared data sets no
/// rule of this family changed the choice, and two points (not three) is
/// what ends DNA's flat tail before 16n (docs/BENCHMARKS.md).
pub const EARLY_STOP: EarlyStop = EarlyStop {
    points: 2,
    standard_errors: 1.0,
};

/// SMC with γ by cross-validation (the engine of `smc` with γ = auto).
#[derive(Debug, Clone, Serialize)]
pub struct SmcCv {
    pub settings: SmcSettings,
    pub cv: GammaCv,
}

/// What a fold's run was at one grid point (for the record and the costs).
#[derive(Debug, Clone, Serialize)]
pub struct PointRun {
    /// 1-based.
    pub fold: usize,
    pub gamma_over_n: f64,
    /// Stages run to reach it (path: since γ = 0, the same run throughout).
    pub stages: usize,
    pub evaluations: u64,
    /// Wall-clock since the fold's run started (folds share the cores, and in
    /// lockstep wait for each other: `evaluations` is the cleaner cost).
    pub seconds: f64,
    /// Every stage up to it met the decorrelation rule.
    pub converged: bool,
}

/// The sampler's settings in fold `fold`: its own seed, so that each particle's
/// streams are keyed by (seed, fold, stage, particle).
pub fn fold_settings(s: &SmcSettings, fold: usize) -> SmcSettings {
    SmcSettings {
        seed: rng::stream(s.seed, &[KEY_FOLD, fold as u64]).random::<u64>(),
        ..s.clone()
    }
}

/// Held-out scores of the particle-mean θ.
fn held_out_scores(theta: &[f64], d: usize, xte: &DMatrix<f64>) -> Vec<f64> {
    let (mean, _) = sampler::moments(theta, d);
    (xte * DVector::from_vec(mean)).iter().copied().collect()
}

/// The folds' shared setting, and the record of their runs.
struct Folds<'a> {
    settings: &'a SmcSettings,
    prior: &'a Prior,
    runs: Mutex<Vec<PointRun>>,
}

const NAMES: CvNames = CvNames {
    prefix: "smc",
    parameter: "gamma_over_n",
    unit: "stages",
};

impl Folds<'_> {
    fn record(&self, run: PointRun) {
        self.runs.lock().expect("not poisoned").push(run);
    }
    /// The failure of a point whose run hit `max_stages`; other errors end the CV.
    fn failure(e: EngineError) -> Result<PointFit, EngineError> {
        match e {
            EngineError::NotConverged { message, .. } => Ok(PointFit::Failed {
                reason: NonConvergence::StageCap,
                message,
                iterations: 0,
            }),
            e => Err(e),
        }
    }
}

impl PathMethod for Folds<'_> {
    fn names(&self) -> CvNames {
        NAMES
    }
    fn label(&self, c: f64) -> String {
        format!("γ = {c}n")
    }
    /// What a fold's run holds: about eight N × d arrays (the cloud, its
    /// natural coordinates, the chains, proposals and snapshots), the fold's
    /// rows twice (as given and packed) and a few d × d fits. Scores are
    /// computed in blocks of particles and do not add up.
    fn fold_bytes(&self, positives: usize, negatives: usize, d: usize) -> usize {
        (8 * self.settings.particles * d + 2 * (positives + negatives) * d + 4 * d * d) * 8
    }
    fn run_path(
        &self,
        fold: &FoldData,
        grid: &[f64],
        ctl: &Control,
        at: &mut dyn FnMut(usize, PointFit) -> bool,
    ) -> Result<(), EngineError> {
        let n = fold.ytr.len() as f64;
        let gammas: Vec<f64> = grid.iter().map(|c| c * n).collect();
        let target = LinearAuc::new(&fold.xtr, &fold.ytr, self.prior.clone());
        let s = fold_settings(self.settings, fold.fold);
        let mut next = 0;
        let mut on_point = |c: &sampler::Checkpoint<'_>| {
            let scores = held_out_scores(c.theta, c.d, &fold.xte);
            self.record(PointRun {
                fold: fold.fold + 1,
                gamma_over_n: grid[c.index],
                stages: c.stage.stage,
                evaluations: c.evaluations,
                seconds: c.stage.elapsed,
                converged: c.decorrelated,
            });
            next = c.index + 1;
            let go_on = at(
                c.index,
                PointFit::Scored {
                    scores,
                    iterations: c.stage.stage,
                },
            );
            if go_on {
                AfterCheckpoint::Continue
            } else {
                AfterCheckpoint::Stop
            }
        };
        let top = *gammas.last().expect("a grid");
        let res = sampler::run_checkpointed(
            &target,
            top,
            &s,
            ctl,
            &mut NoObserver,
            Some(Checkpoints {
                gammas: &gammas,
                at: &mut on_point,
            }),
        );
        match res {
            Ok(_) => Ok(()),
            Err(e) => {
                let failed = Folds::failure(e)?;
                if next < grid.len() {
                    at(next, failed);
                }
                Ok(())
            }
        }
    }
}

/// One SMC run per fold and grid point (`CvMode::Refit`).
impl RefitPoint for Folds<'_> {
    fn fit_point(&self, c: f64, fold: &FoldData, ctl: &Control) -> Result<PointFit, EngineError> {
        let target = LinearAuc::new(&fold.xtr, &fold.ytr, self.prior.clone());
        let s = fold_settings(self.settings, fold.fold);
        let gamma = c * fold.ytr.len() as f64;
        let run = match sampler::run(&target, gamma, &s, ctl, &mut NoObserver) {
            Ok(r) => r,
            Err(e) => return Folds::failure(e),
        };
        let stages = run.path.len() - 1;
        self.record(PointRun {
            fold: fold.fold + 1,
            gamma_over_n: c,
            stages,
            evaluations: run.evaluations,
            seconds: run.elapsed,
            converged: run.decorrelated,
        });
        Ok(PointFit::Scored {
            scores: held_out_scores(&run.theta, run.d, &fold.xte),
            iterations: stages,
        })
    }
}

/// The cross-validation of γ/n for SMC on rows `x`, `y`; `log` receives one
/// line per grid point and fold, and the curve. Also returns every fold's
/// runs at the grid points (fold order, then γ) and where the paths ended
/// early.
pub fn cross_validate_gamma(
    x: &DMatrix<f64>,
    y: &[bool],
    prior: &Prior,
    settings: &SmcSettings,
    cv: &GammaCv,
    ctl: &Control,
    log: &mut dyn FnMut(String),
) -> Result<(CvReport, Vec<PointRun>, Option<StoppedEarly>), EngineError> {
    if matches!(prior, Prior::Gp(_)) {
        return Err(EngineError::InvalidParams(
            "γ by cross-validation with SMC needs a linear score (a Gaussian, ARD or \
             spike-and-slab prior): the GP prior's score-space particles score no held-out \
             rows; choose γ by EP's cross-validation and sample at that γ"
                .into(),
        ));
    }
    settings.validate(x.ncols())?;
    let folds = Folds {
        settings,
        prior,
        runs: Mutex::new(Vec::new()),
    };
    let spec = CvSpec::ascending(cv.folds, cv.seed, cv.grid_over_n.clone());
    let (report, stopped) = match cv.mode {
        CvMode::Path => cross_validate_path(x, y, &spec, &folds, cv.early_stop, ctl, log)?,
        CvMode::Refit => (cross_validate_refit(x, y, &spec, &folds, ctl, log)?, None),
    };
    let mut runs = folds.runs.into_inner().expect("not poisoned");
    runs.sort_by(|a, b| {
        (a.fold, a.gamma_over_n)
            .partial_cmp(&(b.fold, b.gamma_over_n))
            .expect("finite")
    });
    Ok((report, runs, stopped))
}

/// Streams a log line and keeps it for the record's trace.
fn say(obs: &mut dyn Observer, logs: &mut Vec<Event>, level: LogLevel, message: String) {
    let e = Event::Log { level, message };
    obs.observe(e.clone());
    logs.push(e);
}

impl Engine for SmcCv {
    fn name(&self) -> &'static str {
        "smc"
    }

    fn params(&self) -> serde_json::Value {
        serde_json::to_value(self).unwrap_or_default()
    }

    fn run(&self, pb: &Problem, ctl: &Control, obs: &mut dyn Observer) -> Result<Fit, EngineError> {
        let t0 = Instant::now();
        obs.observe(Event::Started {
            engine: "smc".into(),
            n: pb.n(),
            d: pb.d(),
            pairs: pb.pairs(),
            // γ is chosen by the cross-validation below.
            gamma: f64::NAN,
        });
        let mut logs = Vec::new();
        let (report, runs, stopped) = cross_validate_gamma(
            &pb.x,
            &pb.y,
            &pb.prior,
            &self.settings,
            &self.cv,
            ctl,
            &mut |l| say(obs, &mut logs, LogLevel::Info, l),
        )?;
        let cv_seconds = t0.elapsed().as_secs_f64();
        let gamma = report.chosen * pb.n() as f64;
        let how = match self.cv.mode {
            CvMode::Path => "along the SMC path (one run per fold)",
            CvMode::Refit => "refitting SMC at every grid point",
        };
        say(
            obs,
            &mut logs,
            LogLevel::Info,
            format!(
                "smc: γ = {}n = {gamma} by {}-fold CV {how}",
                report.chosen, self.cv.folds
            ),
        );
        let doubtful: Vec<String> = runs
            .iter()
            .filter(|r| !r.converged)
            .map(|r| format!("fold {} at γ = {}n", r.fold, r.gamma_over_n))
            .collect();
        if !doubtful.is_empty() {
            say(
                obs,
                &mut logs,
                LogLevel::Warn,
                format!(
                    "smc cv: the fold runs did not decorrelate in every stage before {} of {} \
                     (fold, γ) points ({}): their held-out AUCs may be off; use more `particles`",
                    doubtful.len(),
                    runs.len(),
                    doubtful.join(", ")
                ),
            );
        }

        let t_final = Instant::now();
        let problem = Problem {
            gamma,
            ..pb.clone()
        };
        let mut fit = super::fit_linear(&problem, &self.settings, ctl, obs)?;
        logs.append(&mut fit.trace);
        fit.trace = logs;
        if let Some(d) = fit.details.as_object_mut() {
            d.insert(
                "gamma".into(),
                json!({
                    "value": gamma,
                    "over_n": report.chosen,
                    "chosen_by": "cv",
                    "cv_mode": self.cv.mode,
                }),
            );
            d.insert("cv".into(), json!(report));
            fit.cv = Some(report.summary());
            d.insert("cv_runs".into(), json!(runs));
            d.insert("cv_stopped_early".into(), json!(stopped));
            d.insert(
                "seconds".into(),
                json!({
                    "cv": cv_seconds,
                    "smc": t_final.elapsed().as_secs_f64(),
                    "total": t0.elapsed().as_secs_f64(),
                }),
            );
        }
        Ok(fit)
    }
}
