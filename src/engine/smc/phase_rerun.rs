//! log Z across a phase jump (issue 29). Tempering from the prior across a
//! first-order transition leaves log Z low: the ESS rule weighs the cloud
//! it has and cannot see a phase the cloud has not found, so the step into
//! the new phase rests on the few particles there (`MixtureStats::jump`
//! names such stages). When a prior-path run flags one, SMC runs again,
//! tempered from a Gaussian fitted to the first run's final cloud
//! (`reference`): that path starts near the posterior and crosses no
//! transition. Given q its log Z is exact (q is normalised; the second run's
//! randomness comes from its own stream, independent of the first run), so
//! the cloud serves where EP is costly (EEG at 16n: 535 CPU s of EP against
//! a few seconds of SMC from the cloud). Both runs' log Z are recorded; the
//! second run's draws and log Z are the fit's.

use rand::RngExt;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::reference::{GaussianReference, ReferenceTarget};
use super::sampler::{SmcRun, StageInfo};
use super::settings::SmcSettings;
use super::{LinearAuc, Target, mixture};
use crate::engine::event::{Event, LogLevel};
use crate::engine::fit::{Fit, MethodReport};
use crate::engine::interface::{Control, EngineError, Observer};
use crate::engine::numerics::rng;
use crate::engine::problem::Problem;
use nalgebra::{DMatrix, DVector};

/// RNG stream key of the second run's seed (with the SMC seed).
const KEY_RERUN: u64 = 0x5EED_0029;

/// A flagged stage: (stage, share at its start, at its end).
pub type Flagged = (usize, f64, f64);

/// The stages whose mixture move found a phase the incoming cloud held too
/// little of.
pub fn flagged(path: &[StageInfo]) -> Vec<Flagged> {
    path.iter()
        .filter_map(|s| {
            let (held, reached) = s.mixture.as_ref().and_then(mixture::MixtureStats::jump)?;
            Some((s.stage, held, reached))
        })
        .collect()
}

/// Mean and covariance (1/N) of an equally weighted cloud of `d`-vectors.
pub fn cloud_gaussian(state: &[f64], d: usize) -> GaussianReference {
    let n = (state.len() / d).max(1);
    let x = DMatrix::from_row_slice(n, d, &state[..n * d]);
    let mean = DVector::from_fn(d, |k, _| x.column(k).sum() / n as f64);
    let mut c = x;
    for k in 0..d {
        let m = mean[k];
        c.column_mut(k).iter_mut().for_each(|v| *v -= m);
    }
    let cov = c.transpose() * &c / n as f64;
    GaussianReference { mean, cov }
}

/// The seed of the second run.
pub fn rerun_seed(seed: u64) -> u64 {
    rng::stream(seed, &[KEY_RERUN]).random::<u64>()
}

/// What a rerun replaced: the prior path's account and the rerun's own
/// (kept in the run's cloud, so runs made apart and merged tell it too).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PhaseJump {
    /// (stage, share at its start, at its end) of the flagged stages.
    pub stages: Vec<Flagged>,
    pub prior_path_log_z: f64,
    pub prior_path_stages: usize,
    pub prior_path_evaluations: u64,
    pub prior_path_seconds: f64,
    pub prior_path_converged: bool,
    pub rerun_seed: u64,
    pub rerun_stages: usize,
    pub rerun_evaluations: u64,
    pub rerun_seconds: f64,
}

impl PhaseJump {
    fn of(stages: Vec<Flagged>, first: &SmcRun, seed: u64, second: &SmcRun) -> Self {
        PhaseJump {
            stages,
            prior_path_log_z: first.log_z,
            prior_path_stages: first.path.len() - 1,
            prior_path_evaluations: first.evaluations,
            prior_path_seconds: first.elapsed,
            prior_path_converged: first.decorrelated,
            rerun_seed: seed,
            rerun_stages: second.path.len() - 1,
            rerun_evaluations: second.evaluations,
            rerun_seconds: second.elapsed,
        }
    }

    /// `details.phase_jump` of the run whose rerun gave `log_z`.
    pub fn details(&self, log_z: f64, converged: bool) -> Value {
        json!({
            "used": "rerun",
            "stages": self.stages.iter().map(|(s, h, r)| json!({"stage": s, "held": h, "reached": r})).collect::<Vec<_>>(),
            "prior_path": {
                "log_z": self.prior_path_log_z,
                "stages": self.prior_path_stages,
                "risk_evaluations": self.prior_path_evaluations,
                "sampler_seconds": self.prior_path_seconds,
                "converged": self.prior_path_converged,
            },
            "rerun": {
                "log_z": log_z,
                "seed": self.rerun_seed,
                "stages": self.rerun_stages,
                "risk_evaluations": self.rerun_evaluations,
                "sampler_seconds": self.rerun_seconds,
                "converged": converged,
            },
            "note": "the prior path flagged a phase jump (a stage's mixture found a phase its \
                     incoming cloud held too little of), so its log Z is likely low; the fit is a \
                     second run tempered from q = N(the first run's final cloud's mean, inflation × \
                     its covariance), exact given q; risk_evaluations and sampler_seconds count both",
        })
    }

    /// The typed report of run `run` (None: the only run).
    pub fn report(&self, run: Option<usize>, log_z: f64) -> MethodReport {
        MethodReport::PhaseJumpRerun {
            run,
            stages: self.stages.clone(),
            prior_path_log_z: self.prior_path_log_z,
            rerun_log_z: log_z,
        }
    }
}

/// The flagged stages of the prior-path run `first` and the target of its
/// rerun, where `settings` wants one and it can be made (a warning where it
/// cannot). `who` begins the messages ("SMC", "SMC run 2/3").
fn prepare<'a>(
    target: &'a LinearAuc,
    gamma: f64,
    settings: &SmcSettings,
    first: &SmcRun,
    who: &str,
    obs: &mut dyn Observer,
) -> Option<(Vec<Flagged>, ReferenceTarget<'a, LinearAuc>)> {
    let jumps = flagged(&first.path);
    if jumps.is_empty() || !settings.phase_jump_rerun {
        return None;
    }
    let names = jumps
        .iter()
        .map(|(s, h, r)| format!("{s} ({:.0}% → {:.0}%)", 100.0 * h, 100.0 * r))
        .collect::<Vec<_>>()
        .join(", ");
    let names = match jumps.len() {
        1 => format!("stage {names}"),
        _ => format!("stages {names}"),
    };
    let why_not = if target.surrogate_rows().is_some() {
        Some("delayed acceptance does not combine with a reference".to_string())
    } else if !target.prior_is_gaussian() {
        Some("the reference path needs a Gaussian or ARD prior".to_string())
    } else {
        None
    };
    let g = cloud_gaussian(&first.state, first.d);
    let wrapped = match why_not.map_or_else(|| ReferenceTarget::new(target, &g, gamma), Err) {
        Ok(w) => w,
        Err(why) => {
            obs.observe(Event::Log {
                level: LogLevel::Warn,
                message: format!(
                    "{who}: {names} found a phase the incoming cloud held too little of, \
                     but the run cannot be repeated from its cloud's Gaussian ({why}): the \
                     prior path's log Z stands"
                ),
            });
            return None;
        }
    };
    obs.observe(Event::Log {
        level: LogLevel::Info,
        message: format!(
            "{who}: {names} found a phase the incoming cloud held too little of, so the \
             prior path's log Z ({:.3}) is likely low: SMC runs again, tempered from a Gaussian \
             fitted to the final cloud (no transition to cross), and reports that run (both \
             kept in details.phase_jump; --phase-jump flag keeps the prior path)",
            first.log_z
        ),
    });
    Some((jumps, wrapped))
}

/// After a single prior-path run `first` on `target`: the fit of a second
/// run from its cloud's Gaussian when a stage flagged a phase jump and
/// `settings.phase_jump_rerun` allows it (None: the first run stands); its
/// record has the first run's settings and both runs' evaluations and seconds.
pub(super) fn rerun(
    problem: &Problem,
    target: &LinearAuc,
    settings: &SmcSettings,
    first: &SmcRun,
    ctl: &Control,
    obs: &mut dyn Observer,
) -> Result<Option<Fit>, EngineError> {
    let Some((jumps, wrapped)) = prepare(target, problem.gamma, settings, first, "SMC", obs) else {
        return Ok(None);
    };
    super::announce_reference("cloud", obs);
    let (run, sd_log_ratio) =
        second_run(problem.gamma, &wrapped, settings, jumps, first, ctl, obs)?;
    Ok(Some(super::reference_fit(
        problem,
        settings,
        run,
        "cloud",
        0.0,
        sd_log_ratio,
    )))
}

/// One of several runs (`runs`, or a `part` made apart; `settings` with its
/// seed): `first` itself, or where it flagged a phase jump the rerun from
/// its cloud's Gaussian as `rerun` makes for a single run.
pub(super) fn rerun_run(
    gamma: f64,
    target: &LinearAuc,
    settings: &SmcSettings,
    first: SmcRun,
    who: &str,
    ctl: &Control,
    obs: &mut dyn Observer,
) -> Result<SmcRun, EngineError> {
    let Some((jumps, wrapped)) = prepare(target, gamma, settings, &first, who, obs) else {
        return Ok(first);
    };
    let (mut run, _) = second_run(gamma, &wrapped, settings, jumps, &first, ctl, obs)?;
    // The cloud in the target's coordinates, as the other runs' (not the
    // reference's whitened ones).
    run.state = run.theta.clone();
    Ok(run)
}

/// The second run from the first's cloud's Gaussian `wrapped`, seeded from
/// the first's seed, with the prior path's account in `phase_jump` and both
/// runs' evaluations and seconds; with the sd of log(π/q) under q.
fn second_run(
    gamma: f64,
    wrapped: &ReferenceTarget<'_, LinearAuc>,
    settings: &SmcSettings,
    jumps: Vec<Flagged>,
    first: &SmcRun,
    ctl: &Control,
    obs: &mut dyn Observer,
) -> Result<(SmcRun, f64), EngineError> {
    let seed = rerun_seed(settings.seed);
    let second = SmcSettings {
        seed,
        ..settings.clone()
    };
    let (mut run, sd_log_ratio) = super::run_from_reference(gamma, wrapped, &second, ctl, obs)?;
    run.phase_jump = Some(PhaseJump::of(jumps, first, seed, &run));
    run.evaluations += first.evaluations;
    run.elapsed += first.elapsed;
    Ok((run, sd_log_ratio))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The cloud's mean and 1/N covariance, by hand on four points; a
    /// derived seed differs from the run's.
    #[test]
    fn the_cloud_gaussian_is_its_moments() {
        let g = cloud_gaussian(&[0.0, 1.0, 2.0, 1.0, 0.0, 3.0, 2.0, 3.0], 2);
        assert_eq!(g.mean.as_slice(), &[1.0, 2.0]);
        assert_eq!(g.cov.as_slice(), &[1.0, 0.0, 0.0, 1.0]);
        let g = cloud_gaussian(&[1.0, 2.0, 3.0, 6.0], 2);
        assert_eq!(g.cov.as_slice(), &[1.0, 2.0, 2.0, 4.0]);
        assert_ne!(rerun_seed(7), 7);
        assert_eq!(rerun_seed(7), rerun_seed(7));
    }
}
