//! EP continuation in γ (ALGORITHMS.md §16): one way to reach a γ for every
//! EP flavour, the EP analogue of the tempering SMC's ESS rule.
//!
//! EP runs first at a small γ₀ (the default grid's lowest point, 1/16·n; if
//! that fails from the prior, once more at `MIN_OVER_N`·n), then at
//! γ_{k+1} = γ_k·e^{λ_k}, each point warm-started from the last
//! converged sites. The step λ_k (in log γ) is chosen so that the predicted
//! move of the posterior — the last step's move per unit of log γ, measured
//! like Δ_t as the largest change of a mean (in sds) or of an sd — is at most
//! `kappa` sds. A point that fails goes back to the last converged sites;
//! later points stay below the smallest γ that failed, bisecting (in log γ)
//! the gap to it, so failures cost at most log2(`MAX_STEP`/`MIN_STEP`) + 2
//! points; when the gap is below `MIN_STEP` the continuation stops with a
//! typed verdict (`PathVerdict`): no fixed point in reach beyond the last
//! converged γ (`Bisect::FromPrior`: after one more try at the target from
//! the prior). The steps are at most the CV grid's factor 2 (`MAX_STEP`).
//! Where power EP follows from the prior (`Bisect::HandOver`) the walk ends
//! at its first failed point instead: the bisection only locates the end of
//! the prior's branch, which power EP does not use.
//! Intermediate points converge to the folds' tolerance (they are starts);
//! the target γ to the run's own. The fixed point at the target is the one a
//! converged cold start reaches where both converge (tests).
//!
//! Why log γ: the posterior's scale grows like √γ to γ in the AUC's Gibbs
//! posterior, so equal moves need roughly equal ratios of γ (the grid is
//! geometric for the same reason).

use serde::Serialize;

use super::settings::DEFAULT_GRID;
use super::stop::EpStop;
pub use super::stop::{GammaPath, PathPoint, RunFailure, Shortened};
use super::sweep_state::Marginal;
use crate::engine::error::NonConvergence;
use crate::engine::interface::EngineError;

/// The largest predicted move of q per step, in posterior sds (§16: κ ≈ 1).
pub const KAPPA: f64 = 1.0;
/// γ₀ as a multiple of n: the CV grid's lowest point, where the folds' walk
/// starts too.
pub const START_OVER_N: f64 = DEFAULT_GRID[0];
/// Largest step in log γ, the first one included: ln of the CV grid's factor
/// (checked below), so the walk is never coarser than the folds' grid.
pub const MAX_STEP: f64 = std::f64::consts::LN_2;
const _: () = assert!(DEFAULT_GRID[1] == 2.0 * DEFAULT_GRID[0]);
/// The lowest γ/n any EP walk tries (six halvings below γ₀): the CV grid's
/// extension floor, and the one retry of a walk whose γ₀ failed from the prior.
pub const MIN_OVER_N: f64 = DEFAULT_GRID[0] / 64.0;
/// Below this step in log γ (six halvings of `MAX_STEP`: γ grows by < 1.1%),
/// a failing point ends the continuation: no fixed point in reach.
pub const MIN_STEP: f64 = MAX_STEP / 64.0;

/// What a walk does after a failed point.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Bisect {
    /// Bisects below the failed γ until `MIN_STEP`: the verdict locates the
    /// end of the branch (nothing follows, or the caller reports it).
    ToMinStep,
    /// Ends at once: power EP from the prior follows, and a bisection there
    /// only crawls by small steps to the same power EP answer (BENCHMARKS
    /// ep-ss-power20).
    HandOver,
    /// As `ToMinStep`, then, before the verdict, the target from the prior
    /// (`from_prior`): the CV folds' walk (a fold point has no other start
    /// after a failed walk).
    FromPrior,
}

impl PathPoint {
    /// A point at γ, not run yet.
    fn at(gamma: f64, nf: f64) -> PathPoint {
        PathPoint {
            gamma,
            over_n: gamma / nf,
            sweeps: 0,
            tol: 0.0,
            converged: false,
            direct: false,
            from_prior: false,
            moved: None,
            shortened: None,
            error: None,
            failure: None,
        }
    }

    /// The run failed with `e`: its sweeps, reason and message.
    fn failed(&mut self, e: &EngineError) {
        self.sweeps = EpStop::sweeps_of(e);
        self.failure = RunFailure::of(e);
        self.error = Some(match e {
            EngineError::NotConverged { message, .. } => message.clone(),
            e => e.to_string(),
        });
    }
}

/// The continuation ended without reaching the target.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PathVerdict {
    /// The largest γ where EP converged (None: not even γ₀).
    pub reached: Option<f64>,
    /// The step that failed last, in log γ.
    pub step: f64,
    pub last_error: String,
    /// Ended at the first failed point (`Bisect::HandOver`).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub handed_over: bool,
}

/// An EP flavour's state as the continuation drives it.
pub trait Continuable {
    /// What `restore` needs to go back to a converged point.
    type Snapshot;
    /// A converged run's result.
    type Outcome;
    fn snapshot(&self) -> Self::Snapshot;
    fn restore(&mut self, snap: &Self::Snapshot);
    /// Every site back to its start (q = the prior).
    fn reset(&mut self);
    /// EP to convergence at `gamma` from the current state, at the target's
    /// tolerance when `target`, else at the folds'; no retry from the prior
    /// (the continuation handles failures). Returns the outcome, the sweeps
    /// and the tolerance used.
    fn run_at(
        &mut self,
        gamma: f64,
        target: bool,
    ) -> Result<(Self::Outcome, usize, f64), EngineError>;
    /// The marginals of the current q (the move is measured on them).
    fn marginal(&self) -> Marginal;
}

/// A log line for a point of the path.
pub fn describe(p: &PathPoint) -> String {
    let how = match (&p.error, p.moved) {
        (Some(e), _) => format!("failed ({e})"),
        (None, Some(m)) => format!("{} sweeps, q moved {m:.3} sd", p.sweeps),
        (None, None) => format!("{} sweeps", p.sweeps),
    };
    let why = match p.shortened {
        Some(Shortened::Move) => ", step shortened by κ",
        Some(Shortened::Target) => ", step shortened to the target",
        Some(Shortened::Failure) => ", step halved after a failure",
        None => "",
    };
    let at = if p.direct {
        "directly at"
    } else {
        "continuation at"
    };
    format!("ep: {at} γ = {:.4}n: {how}{why}", p.over_n)
}

/// The next step in log γ: κ over the last step's move per unit log γ,
/// at most `MAX_STEP`, at most twice the last step.
pub fn next_step(kappa: f64, last_step: f64, moved: f64) -> (f64, bool) {
    let cap = MAX_STEP.min(2.0 * last_step);
    if moved.is_nan() || moved <= 0.0 || !moved.is_finite() {
        return (cap, false);
    }
    let want = kappa * last_step / moved;
    if want < cap {
        (want, true)
    } else {
        (cap, false)
    }
}

/// Reaches `target`: first directly from the current state (the prior, or a
/// start the caller set, e.g. the folds' average after a CV) under the
/// run's non-progress verdict, then, only if that fails, by `walk_with` from the
/// prior. Returns the target's outcome and the path (one point when the
/// direct run converged). A failed direct run is the path's first point in
/// the walk's record, whether the walk converges or not.
///
/// Why the direct run first: where it converges it costs one run, where the
/// walk costs several; and the walk follows the branch of fixed points that
/// starts at the prior at small γ, which can end before the target while
/// another fixed point exists there (BENCHMARKS ep-ss-sonar-direct).
pub fn reach<C: Continuable>(
    st: &mut C,
    target: f64,
    n: usize,
    kappa: f64,
    on_point: &mut dyn FnMut(&PathPoint),
) -> Result<(C::Outcome, GammaPath), EngineError> {
    reach_with(st, target, n, kappa, Bisect::ToMinStep, on_point)
}

/// `reach`, its walk ending after a failed point as `bisect` says.
pub fn reach_with<C: Continuable>(
    st: &mut C,
    target: f64,
    n: usize,
    kappa: f64,
    bisect: Bisect,
    on_point: &mut dyn FnMut(&PathPoint),
) -> Result<(C::Outcome, GammaPath), EngineError> {
    check_kappa(kappa)?;
    let nf = n as f64;
    let mut point = PathPoint {
        direct: true,
        ..PathPoint::at(target, nf)
    };
    let e = match st.run_at(target, true) {
        Ok((out, sweeps, tol)) => {
            (point.sweeps, point.tol, point.converged) = (sweeps, tol, true);
            on_point(&point);
            let path = GammaPath {
                kappa,
                target,
                points: vec![point],
                sweeps,
            };
            return Ok((out, path));
        }
        Err(e) => e,
    };
    if !matches!(e, EngineError::NotConverged { .. }) {
        return Err(e);
    }
    point.failed(&e);
    on_point(&point);
    match walk_inner(st, target, n, kappa, bisect, true, on_point) {
        Ok((out, mut path)) => {
            path.sweeps += point.sweeps;
            path.points.insert(0, point);
            Ok((out, path))
        }
        Err(e) => {
            // The walk's record starts with the direct run too.
            let Some(mut stop) = EpStop::of(&e).cloned() else {
                return Err(e);
            };
            if let Some(path) = stop.path.as_mut() {
                path.sweeps += point.sweeps;
                path.points.insert(0, point);
            }
            Err(e.with_account(stop))
        }
    }
}

fn check_kappa(kappa: f64) -> Result<(), EngineError> {
    if kappa > 0.0 && kappa.is_finite() {
        Ok(())
    } else {
        Err(EngineError::InvalidParams(format!(
            "the continuation's κ must be > 0; got {kappa}"
        )))
    }
}

/// Reaches `target` by continuation from γ₀ = `START_OVER_N`·n (or the
/// target itself when it is not above γ₀), starting from the prior. Returns
/// the target's outcome and the path; a failure to reach it is
/// `NotConverged` with the verdict in its diagnostics and the path in its
/// account (`EpStop`). After a failed point the walk goes on as `bisect` says.
pub fn walk_with<C: Continuable>(
    st: &mut C,
    target: f64,
    n: usize,
    kappa: f64,
    bisect: Bisect,
    on_point: &mut dyn FnMut(&PathPoint),
) -> Result<(C::Outcome, GammaPath), EngineError> {
    walk_inner(st, target, n, kappa, bisect, false, on_point)
}

/// `walk_with`; `direct_tried`: the target was run directly before (`reach`).
fn walk_inner<C: Continuable>(
    st: &mut C,
    target: f64,
    n: usize,
    kappa: f64,
    bisect: Bisect,
    direct_tried: bool,
    on_point: &mut dyn FnMut(&PathPoint),
) -> Result<(C::Outcome, GammaPath), EngineError> {
    check_kappa(kappa)?;
    let nf = n as f64;
    let mut path = GammaPath {
        kappa,
        target,
        points: Vec::new(),
        sweeps: 0,
    };
    st.reset();
    let floor = MIN_OVER_N * nf;
    let mut gamma = (START_OVER_N * nf).min(target);
    let mut shortened = (gamma < START_OVER_N * nf).then_some(Shortened::Target);
    // The last converged point: γ, its sites and marginals.
    let mut last: Option<(f64, C::Snapshot, Marginal)> = None;
    let mut step = MAX_STEP;
    // The smallest γ that failed: later points stay below it, bisecting
    // (in log γ) the gap from the last converged point.
    let mut ceiling = f64::INFINITY;
    loop {
        let is_target = gamma >= target;
        let res = st.run_at(gamma, is_target);
        let mut point = PathPoint {
            shortened,
            ..PathPoint::at(gamma, nf)
        };
        match res {
            Ok((out, sweeps, tol)) => {
                let now = st.marginal();
                (point.sweeps, point.tol, point.converged) = (sweeps, tol, true);
                point.moved = last.as_ref().map(|(_, _, q)| now.delta(q));
                path.sweeps += sweeps;
                on_point(&point);
                path.points.push(point.clone());
                if is_target {
                    return Ok((out, path));
                }
                if gamma >= ceiling {
                    // The γ that failed converged from a nearer start: the
                    // bisection's bound is gone (kept, the next γ would be
                    // this one again, for ever).
                    ceiling = f64::INFINITY;
                }
                let (next, by_move) = match (&last, point.moved) {
                    (Some((g0, _, _)), Some(moved)) => next_step(kappa, (gamma / g0).ln(), moved),
                    _ => (MAX_STEP, false),
                };
                last = Some((gamma, st.snapshot(), now));
                step = next;
                shortened = by_move.then_some(Shortened::Move);
            }
            Err(e) => {
                let EngineError::NotConverged { message, .. } = &e else {
                    return Err(e);
                };
                let message = message.clone();
                point.failed(&e);
                path.sweeps += point.sweeps;
                on_point(&point);
                path.points.push(point);
                ceiling = ceiling.min(gamma);
                let reached = last.as_ref().map(|l| l.0);
                step = reached.map_or(step, |g0| (gamma / g0).ln()) * 0.5;
                let handed_over = bisect == Bisect::HandOver && reached.is_some();
                let ends = handed_over || step < MIN_STEP || reached.is_none() && gamma <= floor;
                if ends
                    && bisect == Bisect::FromPrior
                    && let Some(out) =
                        from_prior(st, target, direct_tried, nf, &mut path, on_point)?
                {
                    return Ok((out, path));
                }
                if ends {
                    let verdict = PathVerdict {
                        reached,
                        step: step * 2.0,
                        last_error: message.clone(),
                        handed_over,
                    };
                    let where_ = reached.map_or("not even at its first point".to_string(), |g| {
                        format!("beyond γ = {:.4}n", g / nf)
                    });
                    let what = if handed_over {
                        "power EP follows, so the walk ends at its first failed point"
                    } else {
                        "the last step"
                    };
                    let reason = NonConvergence::NoFixedPointInReach;
                    let sweeps = path.sweeps;
                    return Err(EngineError::not_converged(
                        reason,
                        format!(
                            "the continuation in γ found no fixed point in reach {where_} \
                             ({what}, ×{:.3} in γ, failed: {message})",
                            (step * 2.0).exp()
                        ),
                        serde_json::json!({
                            "sweeps": sweeps,
                            "detail": { "reason": reason, "verdict": verdict,
                                        "last": e.diagnostics() },
                        }),
                    )
                    .with_account(EpStop {
                        sweeps,
                        failure: RunFailure::new(reason),
                        path: Some(path),
                    }));
                }
                shortened = Some(Shortened::Failure);
                match &last {
                    Some((g0, snap, _)) => {
                        st.restore(snap);
                        gamma = *g0;
                    }
                    None => {
                        st.reset();
                        gamma = floor;
                        continue;
                    }
                }
            }
        }
        let mut next = gamma * step.exp();
        if next >= ceiling {
            // Halfway (in log γ) to the γ that failed.
            next = (gamma * ceiling).sqrt();
            step = (next / gamma).ln();
            if step < MIN_STEP {
                next = ceiling; // fails again and ends in the verdict
            }
            shortened = Some(Shortened::Failure);
        }
        if next >= target {
            if next > target * (1.0 + 1e-12) {
                shortened = Some(Shortened::Target);
            }
            gamma = target;
        } else {
            gamma = next;
        }
    }
}

/// The walk from below ended (or crawls) short of the target γ while a
/// fixed point can exist there on another approach: EP from the prior
/// directly at γ (unless `reach` just did), else at 2γ (one grid factor
/// above) and warm down to γ. Why: a walk from below can orbit or drift
/// where the prior's start converges (BENCHMARKS ep-from-prior21). The
/// outcome at γ, or None (the points recorded either way).
fn from_prior<C: Continuable>(
    st: &mut C,
    gamma: f64,
    skip_direct: bool,
    nf: f64,
    path: &mut GammaPath,
    on_point: &mut dyn FnMut(&PathPoint),
) -> Result<Option<C::Outcome>, EngineError> {
    // Factors of γ run in turn from the prior; the last of each is γ.
    let tries: &[&[f64]] = if skip_direct {
        &[&[2.0, 1.0]]
    } else {
        &[&[1.0], &[2.0, 1.0]]
    };
    for runs in tries {
        st.reset();
        for &factor in *runs {
            let g = factor * gamma;
            let mut point = PathPoint {
                from_prior: true,
                ..PathPoint::at(g, nf)
            };
            let ok = match st.run_at(g, factor == 1.0) {
                Ok((out, sweeps, tol)) => {
                    (point.sweeps, point.tol, point.converged) = (sweeps, tol, true);
                    Some(out)
                }
                Err(EngineError::Cancelled) => return Err(EngineError::Cancelled),
                Err(e) => {
                    point.failed(&e);
                    None
                }
            };
            path.sweeps += point.sweeps;
            on_point(&point);
            path.points.push(point);
            match ok {
                None => break,
                Some(out) if factor == 1.0 => return Ok(Some(out)),
                Some(_) => {}
            }
        }
    }
    Ok(None)
}

/// `walk_with` bisecting to `MIN_STEP` (the tests' walk; the library's
/// callers say how a walk ends).
#[cfg(test)]
fn walk<C: Continuable>(
    st: &mut C,
    target: f64,
    n: usize,
    kappa: f64,
    on_point: &mut dyn FnMut(&PathPoint),
) -> Result<(C::Outcome, GammaPath), EngineError> {
    walk_with(st, target, n, kappa, Bisect::ToMinStep, on_point)
}

#[cfg(test)]
#[path = "continuation_tests.rs"]
mod tests;
