//! The EP sweep driver: one loop for every EP flavour (ALGORITHMS.md §4, §5, §6).
//!
//! # What the driver owns
//! Acceptance (a rejected state is shrunk towards the rollback point with η
//! halved, and η stays halved: restoring it makes η = 1 cycle for ever),
//! the stall rule (Δ_t without a new minimum for `stall_sweeps` sweeps: halve
//! η), the cycle rule (`cycle_stalls` stall halvings in a row that did not halve
//! the smallest Δ/η: fail fast), the drift rule (`Rules::drift`: a stall whose
//! mean kept its direction is a slow drift, not a cycle: no halving), Δ_t and
//! convergence (`Δ_t < tol·η_t`, η_t the smallest step of the sweep, never
//! during the warm-up), the early verdict where a failure has a fallback
//! (`verdict`: drift windows that go nowhere, reason `wandering`), the
//! `NotConverged` diagnostics, per-sweep reports, and one retry from the
//! prior when a warm start fails (`run`). The extrapolated steps are in
//! `extrapolation`; the flavours' side of the contract is `sweep_state`.

use std::time::Instant;

use serde_json::json;

use super::extrapolation::{JUMP_FAILS, JUMP_MAX, jump_factor};
use super::regrow::Regrow;
use super::settings::EpSettings;
use super::stop::RunFailure;
use super::sweep_state::{Converged, Failure, Marginal, Rules, SweepState, SweepStatus};
use super::sweep_state::{PassDone, StoppedAt, not_converged, open_run, prior_not_pd, report_pass};
use super::verdict::Wander;
use crate::engine::error::NonConvergence;
use crate::engine::interface::{Control, EngineError};

/// Runs EP to convergence from the current state; a warm start that does not
/// converge (it can sit in a slow mode of the iteration) is retried once from
/// the prior, unless it failed by a cycle or a drift (a cold start only does
/// worse there).
pub fn run<S: SweepState>(
    st: &mut S,
    s: &EpSettings,
    rules: Rules,
    ctl: &Control,
    on_sweep: &mut dyn FnMut(&S, &SweepStatus),
) -> Result<Converged, EngineError> {
    // Under the continuation a failed point takes a shorter step instead.
    let warm = !st.is_cold() && s.start.is_classic();
    match run_without_retry(st, s, rules, ctl, on_sweep) {
        Err(EngineError::NotConverged { reason, .. })
            if warm && st.can_reset() && !reason.no_fixed_point_in_reach() =>
        {
            st.reset();
            let mut out = run_without_retry(st, s, rules, ctl, on_sweep)?;
            out.cold_restart = true;
            Ok(out)
        }
        r => r,
    }
}

/// Runs EP to convergence from the current state under the settings'
/// controller (`EpSettings::controller`), without `run`'s retry.
pub fn run_without_retry<S: SweepState>(
    st: &mut S,
    s: &EpSettings,
    rules: Rules,
    ctl: &Control,
    on_sweep: &mut dyn FnMut(&S, &SweepStatus),
) -> Result<Converged, EngineError> {
    if s.controller.is_classic() {
        run_once(st, s, rules, ctl, on_sweep)
    } else {
        super::controller::run_once(st, s, rules, ctl, on_sweep)
    }
}

/// Counters of a run, for the diagnostics.
#[derive(Default)]
struct Counts {
    halvings: usize,
    stall_halvings: usize,
    drift_windows: usize,
    jumps: usize,
    failed_jumps: usize,
    /// η doubled back by `Regrow`.
    regrowths: usize,
    /// Smallest Δ/η of each stall window.
    stall_ratios: Vec<f64>,
}

/// Runs EP to convergence from the current state, without the retry.
pub fn run_once<S: SweepState>(
    st: &mut S,
    s: &EpSettings,
    rules: Rules,
    ctl: &Control,
    on_sweep: &mut dyn FnMut(&S, &SweepStatus),
) -> Result<Converged, EngineError> {
    let t0 = Instant::now();
    let opened = open_run(st, s)?;
    let (mut cold_restart, warmup) = (opened.cold_restart, opened.warmup);
    // The early verdict (`verdict`): drift windows that go nowhere.
    let mut wander = Wander::default();
    wander.start_window(st.marginal());
    st.forget_rollback();
    st.begin_sweep();
    let mut q_prev: Option<Marginal> = None;
    // `eta`: the step of the next update; `cur_eta`: the step that made the
    // current state (a stall lowers the first only, a rejection both).
    let (mut eta, mut cur_eta) = (s.eta, s.eta);
    let (mut sweep, mut delta, mut candidate) = (0usize, f64::INFINITY, false);
    let mut n = Counts::default();
    let mut regrow = Regrow::new(s);
    let (mut best_delta, mut since_best) = (f64::INFINITY, 0usize);
    // Stall halvings in a row that did not halve the smallest Δ/η; drift
    // windows in a row at a step cut far down.
    let (mut flat_stalls, mut small_drifts) = (0usize, 0usize);
    // Drift: this sweep's move of the mean, and reversals since the best Δ.
    let (mut last_step_m, mut reversals): (Option<Vec<f64>>, usize) = (None, 0);
    // Extrapolation: Δ's of sweeps at one η moving the mean one way; whether
    // the current state is an unchecked jump (and the Δ before it).
    let (mut hist, mut hist_eta): (Vec<f64>, f64) = (Vec::new(), s.eta);
    let (mut jumped, mut delta_before_jump, mut may_jump) = (false, delta, s.extrapolate);
    // The largest Δ the sweep after the last jump may have; the largest ω.
    let (mut pending_jump, mut jump_cap): (Option<f64>, f64) = (None, JUMP_MAX);
    // The η at which a jump was undone and the sweep from which jumps at that
    // η are allowed again (never, unless `jump_retry_after`).
    let mut blocked_eta: Option<(f64, usize)> = None;
    let fail = |st: &S,
                why: &str,
                sweep: usize,
                eta: f64,
                delta: f64,
                reason: NonConvergence,
                n: &Counts| {
        let mut detail = json!({
            "reason": reason, "halvings": n.halvings, "stall_halvings": n.stall_halvings,
            "drift_windows": n.drift_windows, "extrapolations": n.jumps,
            "extrapolations_undone": n.failed_jumps,
            "delta_over_eta": n.stall_ratios,
        });
        if s.regrow {
            detail["regrowths"] = json!(n.regrowths);
        }
        let failure = RunFailure {
            rejected_halvings: n.halvings,
            ..RunFailure::new(reason)
        };
        not_converged(st, s, why, StoppedAt { sweep, eta, delta }, failure, detail)
    };
    let below_min = "did not converge: η fell below its minimum";
    loop {
        ctl.checkpoint()?;
        let stats = st.pass((!candidate).then_some(eta), rules.evidence_every_sweep);
        if jumped && stats.bad > 0 {
            // The extrapolation left a cavity invalid: back to where it jumped from.
            st.restore();
            if !st.ensure_q() {
                return Err(prior_not_pd());
            }
            (jumped, may_jump, delta, candidate) = (false, false, delta_before_jump, false);
            pending_jump = None;
            continue;
        }
        jumped = false;
        if stats.bad > 0 {
            if !st.can_roll_back() {
                if cold_restart || !st.can_reset() {
                    let mut e = fail(
                        st,
                        "found invalid cavities at the prior",
                        sweep,
                        eta,
                        delta,
                        NonConvergence::InvalidCavities,
                        &n,
                    );
                    if let EngineError::NotConverged { diagnostics, .. } = &mut e {
                        diagnostics["detail"]["bad_sites"] = json!(stats.bad);
                    }
                    return Err(e);
                }
                st.reset();
                cold_restart = true;
                if !st.ensure_q() {
                    return Err(prior_not_pd());
                }
                continue;
            }
            // Reject the current state: the same step with η halved, kept halved.
            regrow.cut(cur_eta);
            loop {
                cur_eta *= 0.5;
                eta = eta.min(cur_eta);
                n.halvings += 1;
                if cur_eta < s.min_eta {
                    let mut e = fail(
                        st,
                        below_min,
                        sweep,
                        cur_eta,
                        delta,
                        NonConvergence::InvalidCavities,
                        &n,
                    );
                    if let EngineError::NotConverged { diagnostics, .. } = &mut e {
                        diagnostics["detail"]["bad_sites"] = json!(stats.bad);
                    }
                    return Err(e);
                }
                st.shrink();
                if st.complete_sweep(cur_eta, sweep < warmup) {
                    break;
                }
            }
            delta = st
                .marginal()
                .delta(q_prev.as_ref().expect("a previous state"));
            candidate = sweep > warmup && delta < s.tol * st.step_floor(cur_eta);
            continue;
        }
        // The current state is valid: report it.
        let pass = PassDone {
            sweep,
            eta: cur_eta,
            delta,
            stats,
            candidate,
            cold_restart,
            jumps: (n.jumps, n.failed_jumps),
        };
        if let Some(done) = report_pass(st, &pass, rules, t0, on_sweep) {
            return Ok(done);
        }
        if sweep >= s.max_sweeps {
            let (why, hint) = if rules.drift && n.drift_windows >= 3 {
                // The mean kept moving one way (ionosphere, spike-and-slab p = 0.2,
                // γ = 1.5n: Δ falls, then grows again with log Z sliding down).
                (
                    format!(
                        "did not converge within {} sweeps: the mean kept drifting one way, so \
                         EP may have no fixed point here (the AUC risk is scale-free and the \
                         score's scale can run away)",
                        s.max_sweeps
                    ),
                    st.hint(Failure::Drift),
                )
            } else {
                (
                    format!("did not converge within {} sweeps", s.max_sweeps),
                    None,
                )
            };
            let why = match hint {
                Some(h) => format!("{why}; {h}"),
                None => why,
            };
            return Err(fail(
                st,
                &why,
                sweep,
                eta,
                delta,
                NonConvergence::MaxSweeps,
                &n,
            ));
        }
        // The pass's output becomes the current state.
        st.accept();
        q_prev = Some(st.marginal()); // q is still the accepted state's
        st.begin_sweep();
        cur_eta = eta;
        let threshold = s.tol * st.step_floor(cur_eta);
        let blocked = blocked_eta.is_some_and(|(e, until)| e == cur_eta && sweep < until);
        let jump_ok = may_jump && sweep >= warmup && !blocked;
        if let Some((f, r)) = jump_factor(&hist, threshold, jump_cap).filter(|_| jump_ok)
            && st.overrelax(f)
        {
            if !st.complete_sweep(cur_eta, false) {
                // Q is not positive definite there: back, and no more jumps.
                st.restore();
                if !st.ensure_q() {
                    return Err(prior_not_pd());
                }
                may_jump = false;
                continue;
            }
            sweep += 1;
            st.end_sweep();
            n.jumps += 1;
            (jumped, delta_before_jump) = (true, delta);
            // A drift goes on at its pace after a jump: allow Δ to grow as it did.
            pending_jump = Some(if r < 1.0 { delta } else { 1.2 * r * delta });
            delta = st
                .marginal()
                .delta(q_prev.as_ref().expect("a previous state"));
            // The stall, drift and cycle windows go on (a jump must not hide a
            // drift that has no fixed point); only the direction test restarts.
            hist.clear();
            last_step_m = None;
            candidate = false;
            continue;
        }
        while !st.complete_sweep(cur_eta, sweep < warmup) {
            regrow.cut(cur_eta);
            cur_eta *= 0.5;
            eta = cur_eta;
            n.halvings += 1;
            if cur_eta < s.min_eta {
                let why = match st.hint(Failure::Rebuild) {
                    Some(h) => format!("{below_min} ({h})"),
                    None => below_min.to_string(),
                };
                return Err(fail(
                    st,
                    &why,
                    sweep,
                    cur_eta,
                    delta,
                    st.rebuild_reason(),
                    &n,
                ));
            }
            st.shrink();
        }
        sweep += 1;
        st.end_sweep();
        let now = st.marginal();
        delta = now.delta(q_prev.as_ref().expect("a previous state"));
        if !delta.is_finite() {
            return Err(fail(
                st,
                "broke down: Δ is not finite",
                sweep,
                cur_eta,
                delta,
                NonConvergence::NonFinite,
                &n,
            ));
        }
        wander.step(q_prev.as_ref().expect("a previous state"), &now);
        if let Some(before) = pending_jump.take()
            && delta >= before
        {
            // The sweep after the jump moved q more than the one before it: undo
            // the jump and that sweep; none at this η, smaller ones later.
            st.restore_before_rollback();
            if !st.ensure_q() {
                return Err(prior_not_pd());
            }
            n.failed_jumps += 1;
            jump_cap /= 4.0;
            may_jump &= n.failed_jumps < JUMP_FAILS;
            let until = st.jump_retry_after().map_or(usize::MAX, |b| sweep + b);
            (blocked_eta, delta, candidate) = (Some((cur_eta, until)), before, false);
            hist.clear();
            last_step_m = None;
            continue;
        }
        candidate = sweep > warmup && delta < s.tol * st.step_floor(cur_eta);
        if candidate {
            continue;
        }
        st.after_sweep(cur_eta);
        // Direction of this sweep's move of the mean against the last one's.
        let (now, prev) = (st.marginal().mean, &q_prev.as_ref().expect("previous").mean);
        let step_m: Vec<f64> = now.iter().zip(prev).map(|(a, b)| a - b).collect();
        let reversed = last_step_m
            .as_ref()
            .is_some_and(|last| step_m.iter().zip(last).map(|(a, b)| a * b).sum::<f64>() < 0.0);
        reversals += usize::from(reversed);
        last_step_m = Some(step_m);
        if reversed || hist_eta != cur_eta {
            hist.clear();
        }
        hist_eta = cur_eta;
        hist.push(delta);

        let next = regrow.next(eta, delta < best_delta);
        if delta < best_delta {
            (best_delta, since_best, reversals) = (delta, 0, 0);
            if next > eta {
                // Δ grows with the step: the stall rule compares like with like.
                best_delta *= next / eta;
                eta = next;
                n.regrowths += 1;
            }
            continue;
        }
        since_best += 1;
        if s.stall_sweeps == 0 || since_best < s.stall_sweeps {
            continue;
        }
        if rules.drift && 2 * reversals < since_best {
            // Δ stalls but the mean keeps its direction from sweep to sweep: a
            // slow drift (towards the all-spike fixed point, say) or a slow
            // cycle. Where a fallback exists, the early verdict ends the run
            // when the drift windows go nowhere (`verdict`).
            let wandering =
                wander.drift_window(sweep, &st.marginal(), best_delta / st.step_floor(cur_eta));
            wander.start_window(st.marginal());
            if wandering && s.early_verdict {
                let mut why = format!(
                    "did not converge: the mean wanders without a direction and Δ/η does not \
                     fall (a slow cycle, no fixed point in reach; early verdict: {})",
                    wander.summary()
                );
                if let Some(h) = st.hint(Failure::Drift) {
                    why = format!("{why}; {h}");
                }
                let mut e = fail(
                    st,
                    &why,
                    sweep,
                    cur_eta,
                    delta,
                    NonConvergence::Wandering,
                    &n,
                );
                if let EngineError::NotConverged { diagnostics, .. } = &mut e {
                    diagnostics["detail"]["verdict"] = wander.detail(sweep);
                }
                return Err(e);
            }
            // A drift, not a cycle: smaller steps would only slow it down.
            // Watch a fresh window.
            (best_delta, since_best, reversals) = (f64::INFINITY, 0, 0);
            n.drift_windows += 1;
            // Rejected steps cut η far down and the mean still drifts: the
            // iteration is being pushed out of the valid region (no fixed point
            // there: heavily overlapping classes at a very large γ). Inside a
            // CV (`cycle_stalls` > 0) fail fast, as for a cycle.
            small_drifts = if cur_eta < s.eta / 16.0 {
                small_drifts + 1
            } else {
                0
            };
            if s.cycle_stalls > 0 && small_drifts >= s.cycle_stalls {
                return Err(fail(
                    st,
                    "did not converge: the mean keeps drifting one way while rejected steps \
                     cut η down",
                    sweep,
                    cur_eta,
                    delta,
                    NonConvergence::Drift,
                    &n,
                ));
            }
            continue;
        }
        // A cycle: smaller steps from the current (valid) state.
        let ratio = best_delta / cur_eta;
        wander.stall_window(best_delta / st.step_floor(cur_eta));
        wander.start_window(st.marginal());
        match n.stall_ratios.last() {
            Some(&r0) if ratio > 0.5 * r0 => flat_stalls += 1,
            _ => flat_stalls = 0,
        }
        n.stall_ratios.push(ratio);
        if s.cycle_stalls > 0 && flat_stalls >= s.cycle_stalls {
            return Err(fail(
                st,
                "did not converge: a cycle (Δ/η does not fall as η halves)",
                sweep,
                cur_eta,
                delta,
                NonConvergence::Cycle,
                &n,
            ));
        }
        eta *= 0.5;
        regrow.stall(eta);
        n.stall_halvings += 1;
        (best_delta, since_best, reversals) = (f64::INFINITY, 0, 0);
        if eta < s.min_eta {
            return Err(fail(
                st,
                below_min,
                sweep,
                eta,
                delta,
                NonConvergence::Stalled,
                &n,
            ));
        }
    }
}

#[cfg(test)]
#[path = "driver_tests.rs"]
mod tests;
