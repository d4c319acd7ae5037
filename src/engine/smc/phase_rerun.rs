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
use serde_json::json;

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

/// The stages whose mixture move found a phase the incoming cloud held too
/// little of: (stage, share at its start, at its end).
pub fn flagged(path: &[StageInfo]) -> Vec<(usize, f64, f64)> {
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

/// After a single prior-path run `first` on `target`: the fit of a second
/// run from its cloud's Gaussian when a stage flagged a phase jump and
/// `settings.phase_jump_rerun` allows it (Err: the first run stands, with
/// why not where a rerun was wanted but cannot be made).
pub(super) fn rerun(
    problem: &Problem,
    target: &LinearAuc,
    settings: &SmcSettings,
    first: &SmcRun,
    ctl: &Control,
    obs: &mut dyn Observer,
) -> Result<Option<Fit>, EngineError> {
    let jumps = flagged(&first.path);
    if jumps.is_empty() || !settings.phase_jump_rerun {
        return Ok(None);
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
    let wrapped = match why_not.map_or_else(|| ReferenceTarget::new(target, &g, problem.gamma), Err)
    {
        Ok(w) => w,
        Err(why) => {
            obs.observe(Event::Log {
                level: LogLevel::Warn,
                message: format!(
                    "SMC: {names} found a phase the incoming cloud held too little of, \
                     but the run cannot be repeated from its cloud's Gaussian ({why}): the \
                     prior path's log Z stands"
                ),
            });
            return Ok(None);
        }
    };
    obs.observe(Event::Log {
        level: LogLevel::Info,
        message: format!(
            "SMC: {names} found a phase the incoming cloud held too little of, so the \
             prior path's log Z ({:.3}) is likely low: SMC runs again, tempered from a Gaussian \
             fitted to the final cloud (no transition to cross), and reports that run (both \
             kept in details.phase_jump; --phase-jump flag keeps the prior path)",
            first.log_z
        ),
    });
    let second = SmcSettings {
        seed: rerun_seed(settings.seed),
        ..settings.clone()
    };
    let mut fit = super::fit_from_reference(problem, &wrapped, &second, "cloud", 0.0, ctl, obs)?;
    let rerun_log_z = fit.log_evidence.unwrap_or(f64::NAN);
    let rerun_evals = fit.details["risk_evaluations"].as_u64().unwrap_or(0);
    let rerun_seconds = fit.details["sampler_seconds"].as_f64().unwrap_or(0.0);
    fit.details["settings"] = json!(settings);
    fit.details["risk_evaluations"] = json!(rerun_evals + first.evaluations);
    fit.details["sampler_seconds"] = json!(rerun_seconds + first.elapsed);
    fit.details["phase_jump"] = json!({
        "used": "rerun",
        "stages": jumps.iter().map(|(s, h, r)| json!({"stage": s, "held": h, "reached": r})).collect::<Vec<_>>(),
        "prior_path": {
            "log_z": first.log_z,
            "stages": first.path.len() - 1,
            "risk_evaluations": first.evaluations,
            "sampler_seconds": first.elapsed,
            "converged": first.decorrelated,
        },
        "rerun": {
            "log_z": rerun_log_z,
            "seed": second.seed,
            "stages": fit.details["stages"],
            "risk_evaluations": rerun_evals,
            "sampler_seconds": rerun_seconds,
            "converged": fit.converged,
        },
        "note": "the prior path flagged a phase jump (a stage's mixture found a phase its \
                 incoming cloud held too little of), so its log Z is likely low; the fit is a \
                 second run tempered from q = N(the first run's final cloud's mean, inflation × \
                 its covariance), exact given q; risk_evaluations and sampler_seconds count both",
    });
    fit.reports.push(MethodReport::PhaseJumpRerun {
        stages: jumps,
        prior_path_log_z: first.log_z,
        rerun_log_z,
    });
    Ok(Some(fit))
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
