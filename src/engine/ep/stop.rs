//! EP's typed account of a run that did not converge (`EpStop`, the
//! `StopAccount` its `NotConverged` errors carry): the sweeps, the loop's
//! verdict and halvings, and a continuation's path (its types live here, below
//! the continuation that fills them). The continuation, power EP and the
//! cross-validation decide on these values and record them; the diagnostics
//! JSON shows them and is never read back.

use std::any::Any;

use serde::Serialize;
use serde_json::{Value, json};

use super::controller::NonProgress;
use crate::engine::error::{NonConvergence, StopAccount};
use crate::engine::interface::EngineError;

/// A failed run's typed facts: what `reach` decides on after a failed direct
/// run, and what a failed point of a path records.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct RunFailure {
    pub reason: NonConvergence,
    /// The anderson controller's non-progress verdict.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub verdict: Option<NonProgress>,
    /// η halved by the verdict: a window without contraction that was not
    /// straight (a cycle), before the verdict itself.
    pub verdict_halvings: usize,
    /// η halved by rejected steps (invalid cavities, q not positive definite).
    pub rejected_halvings: usize,
}

impl RunFailure {
    /// A failure for `reason` without a verdict or halvings.
    pub fn new(reason: NonConvergence) -> RunFailure {
        RunFailure {
            reason,
            verdict: None,
            verdict_halvings: 0,
            rejected_halvings: 0,
        }
    }

    /// The facts of a `NotConverged` error (None for any other): its reason,
    /// and the rest from its `EpStop` (none when it has no such account).
    pub fn of(e: &EngineError) -> Option<RunFailure> {
        let reason = e.non_convergence()?;
        Some(match EpStop::of(e) {
            Some(stop) => RunFailure {
                reason,
                ..stop.failure
            },
            None => RunFailure::new(reason),
        })
    }
}

/// Why a step was shorter than the largest one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Shortened {
    /// The predicted move was above κ sds.
    Move,
    /// The target γ was nearer.
    Target,
    /// The point at the longer step failed: halved.
    Failure,
}

/// One point of the path.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PathPoint {
    pub gamma: f64,
    pub over_n: f64,
    pub sweeps: usize,
    pub tol: f64,
    pub converged: bool,
    /// The run at the target straight from the start (`reach`), before any walk.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub direct: bool,
    /// A run from the prior after the walk from below ended (`from_prior`).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub from_prior: bool,
    /// Move of q from the last converged point (Δ's measure, in sds).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub moved: Option<f64>,
    /// Why this step was shorter than `MAX_STEP`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub shortened: Option<Shortened>,
    /// Why the point failed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// The same, typed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub failure: Option<RunFailure>,
}

/// The record of a continuation (`details.gamma.path`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GammaPath {
    pub kappa: f64,
    pub target: f64,
    pub points: Vec<PathPoint>,
    /// Sweeps of every point, the failed ones included.
    pub sweeps: usize,
}

/// EP's account of a `NotConverged` error.
#[derive(Debug, Clone, PartialEq)]
pub struct EpStop {
    /// Sweeps spent (the diagnostics' `sweeps`): the run's, or a failed
    /// walk's over its own points.
    pub sweeps: usize,
    pub failure: RunFailure,
    /// A continuation's path, a failed direct run first (shown as
    /// `gamma_path`).
    pub path: Option<GammaPath>,
}

impl EpStop {
    /// The account of a run that failed after `sweeps` sweeps.
    pub fn run(sweeps: usize, failure: RunFailure) -> EpStop {
        EpStop {
            sweeps,
            failure,
            path: None,
        }
    }

    /// EP's account of `e`, if `e` carries one.
    pub fn of(e: &EngineError) -> Option<&EpStop> {
        e.account()?.as_any().downcast_ref()
    }

    /// The sweeps `e` spent (0 when it carries no EP account).
    pub fn sweeps_of(e: &EngineError) -> usize {
        EpStop::of(e).map_or(0, |s| s.sweeps)
    }
}

impl StopAccount for EpStop {
    fn render(&self, diagnostics: &mut Value) {
        if let Some(p) = &self.path {
            diagnostics["gamma_path"] = json!(p);
        }
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}

/// A failure after earlier attempts carries their sweeps too (the CV's work).
pub fn add_sweeps(e: EngineError, earlier: usize) -> EngineError {
    match EpStop::of(&e).cloned() {
        Some(stop) => e.with_account(EpStop {
            sweeps: stop.sweeps + earlier,
            ..stop
        }),
        None => e,
    }
}

/// `e`, a run's `NotConverged` error, with the anderson verdict that ended
/// it: typed in its account, shown as `detail.verdict`.
pub fn with_verdict(e: EngineError, v: NonProgress) -> EngineError {
    let Some(reason) = e.non_convergence() else {
        return e;
    };
    let mut stop = EpStop::of(&e)
        .cloned()
        .unwrap_or_else(|| EpStop::run(0, RunFailure::new(reason)));
    stop.failure.verdict = Some(v);
    let EngineError::NotConverged {
        message,
        mut diagnostics,
        ..
    } = e
    else {
        return e;
    };
    diagnostics["detail"]["verdict"] = json!(v);
    EngineError::not_converged(reason, message, diagnostics).with_account(stop)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn failed(account: Option<EpStop>) -> EngineError {
        let e = EngineError::not_converged(
            NonConvergence::NoProgress,
            "stopped",
            json!({ "sweeps": 7, "detail": { "reason": "no progress", "halvings": 2 } }),
        );
        match account {
            Some(a) => e.with_account(a),
            None => e,
        }
    }

    /// The verdict is typed in the account and shown last in `detail`; the
    /// counters stay as the loop gave them.
    #[test]
    fn the_verdict_is_typed_and_shown() {
        let f = RunFailure {
            verdict_halvings: 1,
            rejected_halvings: 2,
            ..RunFailure::new(NonConvergence::NoProgress)
        };
        let v = NonProgress::TooSlow {
            rate: 0.99,
            needed: 500.0,
            left: 40,
        };
        let e = with_verdict(failed(Some(EpStop::run(7, f))), v);
        let got = RunFailure::of(&e).unwrap();
        assert_eq!(got.verdict, Some(v));
        assert_eq!((got.verdict_halvings, got.rejected_halvings), (1, 2));
        assert_eq!(EpStop::sweeps_of(&e), 7);
        let d = e.diagnostics().unwrap();
        let keys: Vec<&String> = d["detail"].as_object().unwrap().keys().collect();
        assert_eq!(keys, ["reason", "halvings", "verdict"]);
        assert_eq!(d["detail"]["verdict"]["kind"], "too_slow");
        assert!(d.get("gamma_path").is_none());
    }

    /// An error without EP's account: its reason, no verdict, no halvings,
    /// no sweeps, whatever its JSON says (nothing is read back from it).
    #[test]
    fn without_an_account_only_the_reason_counts() {
        let e = failed(None);
        assert_eq!(
            RunFailure::of(&e),
            Some(RunFailure::new(NonConvergence::NoProgress))
        );
        assert_eq!(EpStop::sweeps_of(&e), 0);
        let EngineError::NotConverged { diagnostics, .. } = &e else {
            unreachable!()
        };
        assert_eq!(e.diagnostics().as_ref(), Some(diagnostics));
        assert_eq!(RunFailure::of(&EngineError::Cancelled), None);
    }
}
