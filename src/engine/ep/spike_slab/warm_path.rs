//! Spike-and-slab EP at γ when the start from the prior fails: climb a path of
//! smaller γ from its smallest point, each point warm-started from the last,
//! then γ itself. Used by the CV folds (`cv`): the path is the fold's grid
//! points below γ that converged; the final fit reaches γ by the continuation
//! (`SsPath` below).
//!
//! Why: from the prior at γ ≥ n on EEG the first pair updates overshoot (Δ ≈
//! 300 after one sweep, the means of three features at 11–36 prior sds) and the
//! prior sites, updated from that q, see a negative information on those
//! features beyond the slab's own precision (τ₋ ≈ −3 < −1/v1): the tilted
//! distribution is improper, η halves to its floor within 8–172 sweeps. From
//! n/16 the same iteration converges, and each doubling of γ moves the fixed
//! point little. The failure from the prior is fast, so the retry costs little
//! beyond the path itself. Every point of the path is a fixed point of the
//! same EP iteration; the path's points only run at the loosened tolerance of
//! the CV folds (`cv::fold_settings`), γ itself at the asked one.

use serde::Serialize;

use super::model::SpikeSlabEp;
use super::prior_sites::PriorSites;
use super::sweep::{SsOutcome, SsSettings, SsSweepInfo};
use crate::engine::ep::continuation::Continuable;
use crate::engine::ep::cv;
use crate::engine::ep::design::Design;
use crate::engine::ep::sweep_state::Marginal;
use crate::engine::interface::{Control, EngineError};

/// One point of the warm path.
#[derive(Debug, Clone, Serialize)]
pub struct PathStep {
    pub gamma_over_n: f64,
    pub sweeps: usize,
}

/// What the fallback did (`details.gamma.warm_path`).
#[derive(Debug, Clone, Serialize)]
pub struct WarmPath {
    /// Why the start from the prior failed.
    pub first_error: String,
    /// The grid points below γ, in the order run.
    pub points: Vec<PathStep>,
}

/// `model.run` at γ from the model's current state; if it does not converge
/// and `path` (γ/n, ascending, below γ) is not empty, from the prior again
/// along it. `log` says why the path is taken; `new_run` is called before each
/// run of the path.
#[allow(clippy::too_many_arguments)]
pub fn run(
    model: &mut SpikeSlabEp,
    gamma: f64,
    path: Vec<f64>,
    n: usize,
    s: &SsSettings,
    ctl: &Control,
    on_sweep: &mut dyn FnMut(&SsSweepInfo<'_>, &Design),
    new_run: &mut dyn FnMut(),
    log: &mut dyn FnMut(String),
) -> Result<(SsOutcome, Option<WarmPath>), EngineError> {
    let first_error = match model.run(gamma, s, ctl, on_sweep) {
        Err(EngineError::NotConverged { message, .. }) if !path.is_empty() => message,
        res => return Ok((res?, None)),
    };
    log(format!(
        "ep spike-slab: the fit from the prior did not converge ({first_error}); \
         warm-starting it along γ/n = {path:?}"
    ));
    model.reset();
    let loose = SsSettings {
        ep: cv::fold_settings(&s.ep),
        ..*s
    };
    let mut points = Vec::with_capacity(path.len());
    for &c in &path {
        new_run();
        let out = model
            .run(c * n as f64, &loose, ctl, on_sweep)
            .map_err(|e| cv::on_warm_path(e, c, &first_error))?;
        points.push(PathStep {
            gamma_over_n: c,
            sweeps: out.sweeps,
        });
    }
    new_run();
    let out = model.run(gamma, s, ctl, on_sweep)?;
    Ok((
        out,
        Some(WarmPath {
            first_error,
            points,
        }),
    ))
}

/// Spike-and-slab EP driven by the continuation in γ (`continuation`): every
/// point's sweeps are streamed, `new_run` before each.
pub struct SsPath<'a> {
    pub model: &'a mut SpikeSlabEp,
    pub settings: SsSettings,
    pub ctl: &'a Control,
    pub on_sweep: &'a mut dyn FnMut(&SsSweepInfo<'_>, &Design),
    pub new_run: &'a mut dyn FnMut(),
}

impl Continuable for SsPath<'_> {
    type Snapshot = (Vec<f64>, PriorSites);
    type Outcome = SsOutcome;
    fn snapshot(&self) -> Self::Snapshot {
        self.model.snapshot()
    }
    fn restore(&mut self, snap: &Self::Snapshot) {
        self.model.restore(snap);
    }
    fn reset(&mut self) {
        self.model.reset();
    }
    fn run_at(&mut self, gamma: f64, target: bool) -> Result<(SsOutcome, usize, f64), EngineError> {
        let s = SsSettings {
            ep: if target {
                self.settings.ep
            } else {
                cv::fold_settings(&self.settings.ep)
            },
            ..self.settings
        };
        (self.new_run)();
        let out = self.model.run(gamma, &s, self.ctl, self.on_sweep)?;
        let sweeps = out.sweeps;
        Ok((out, sweeps, s.ep.tol))
    }
    fn marginal(&self) -> Marginal {
        let q = self.model.moments();
        Marginal {
            mean: q.mean.clone(),
            var: q.var.clone(),
        }
    }
}
