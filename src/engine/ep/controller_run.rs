//! The Anderson controller's sweep loop (module docs: `controller`): the
//! order of a run's passes — a pass judges the last step (an invalid state
//! is shrunk towards the rollback point, a mixed or secant step undone when
//! the residual did not fall), reports it, and takes the next step (plain,
//! mixed or secant); then convergence, regrowth and the verdict. What
//! outlives a sweep and how it changes is `Loop` (`controller_loop.rs`).

use std::time::Instant;

use super::{Anderson, PLAIN_SWEEPS, SPAN};
use crate::engine::ep::kernel::PassStats;
use crate::engine::ep::settings::EpSettings;
use crate::engine::ep::sweep_state::{Converged, Marginal, Rules, SweepState, SweepStatus};
use crate::engine::error::NonConvergence;
use crate::engine::interface::{Control, EngineError};

#[path = "controller_loop.rs"]
mod state;
use state::{Loop, Pending, prior_not_pd};

/// Runs EP to convergence from the current state with Anderson mixing when
/// the flavour exposes its sites (`SweepState::mix_len`), else plain
/// damping; the non-progress verdict in both cases, on plain steps only (a
/// mixed or secant step, kept or undone, is not a step of the damped map).
pub fn run_once<S: SweepState>(
    st: &mut S,
    s: &EpSettings,
    rules: Rules,
    ctl: &Control,
    on_sweep: &mut dyn FnMut(&S, &SweepStatus),
) -> Result<Converged, EngineError> {
    let t0 = Instant::now();
    let (mut cold_restart, warmup) = open_run(st, s)?;
    st.forget_rollback();
    st.begin_sweep();
    // The history copies every site each sweep, so mixing begins only once
    // plain damping has had `PLAIN_SWEEPS` sweeps and, at its rate, needs
    // more than as many again: a run that converges fast pays nothing.
    let mut l = Loop::new(s);
    // q of the current state before the last accepted step, and before that.
    let mut q_prev: Option<Marginal> = None;
    let mut q_prev2: Option<Marginal>;
    let (mut sweep, mut delta, mut candidate) = (0usize, f64::INFINITY, false);
    // A mixed step not yet judged; no mixing next sweep.
    let (mut pending, mut no_mix): (Option<Pending>, bool) = (None, false);
    loop {
        ctl.checkpoint()?;
        let stats = st.pass((!candidate).then_some(l.eta), rules.evidence_every_sweep);
        // The state is now the plain step from the rollback point that an
        // undone mixed step replaced (no new sweep).
        let mut recovered = false;
        if stats.bad > 0 {
            match pending.take() {
                Some(Pending::Anderson(_)) => {
                    // The mixed point left a cavity invalid.
                    if !l.undo_mixed(st)? {
                        (no_mix, candidate) = (true, false);
                        continue;
                    }
                    recovered = true;
                }
                Some(Pending::Secant { omega, .. }) => {
                    l.secant_undo(st, s, omega, (sweep, delta))?;
                    recovered = true;
                }
                None => {
                    l.last_plain = false;
                    if !st.can_roll_back() {
                        if cold_restart || !st.can_reset() {
                            let why = "found invalid cavities at the prior";
                            let reason = NonConvergence::InvalidCavities;
                            return Err(l.fail(st, s, why, (sweep, delta), reason));
                        }
                        st.reset();
                        cold_restart = true;
                        if !st.ensure_q() {
                            return Err(prior_not_pd());
                        }
                        continue;
                    }
                    // Reject the current state: the same step with η halved
                    // (until clean sweeps regrow it).
                    loop {
                        l.halve();
                        if l.eta < s.min_eta {
                            let reason = NonConvergence::InvalidCavities;
                            return Err(l.below_min(st, s, (sweep, delta), reason));
                        }
                        st.shrink();
                        if st.complete_sweep(l.eta, sweep < warmup) {
                            break;
                        }
                    }
                    if let Some(a) = l.aa.as_mut() {
                        a.clear();
                    }
                    l.progress.reset();
                    delta = st
                        .marginal()
                        .delta(q_prev.as_ref().expect("a previous state"));
                    candidate = sweep > warmup && delta < s.tol * st.step_floor(l.eta);
                    continue;
                }
            }
        }
        if !recovered {
            if l.aa.is_none()
                && s.extrapolate
                && !l.n.mixing_off
                && sweep >= PLAIN_SWEEPS.max(warmup)
                && l.progress.sweeps_to(s.tol) > PLAIN_SWEEPS as f64
            {
                l.aa = st.mix_len().and_then(Anderson::within_budget);
            }
            // The current state is valid; a mixed one must also have cut the
            // residual. G(x) is staged, committed below.
            let res = l.aa.as_mut().map(|a| {
                let (slot, g, at, x) = a.staging();
                let r2 = st.stage_trial(slot, g, at, x);
                a.stage(r2)
            });
            match pending.take() {
                Some(Pending::Anderson(before))
                    if !candidate && res.is_some_and(|r| r >= before) =>
                {
                    if !l.undo_mixed(st)? {
                        no_mix = true;
                        continue;
                    }
                    recovered = true;
                }
                Some(Pending::Secant { before, omega }) => {
                    if st.residual2().is_none_or(|r| r >= before) {
                        l.secant_undo(st, s, omega, (sweep, delta))?;
                        recovered = true;
                    } else {
                        l.cap *= 2.0;
                    }
                }
                _ => {}
            }
            if !recovered {
                let pass = PassDone {
                    sweep,
                    eta: l.eta,
                    delta,
                    stats,
                    candidate,
                    cold_restart,
                    jumps: (l.n.mixed, l.n.undone),
                };
                if let Some(done) = report_pass(st, &pass, rules, t0, on_sweep) {
                    return Ok(done);
                }
                if sweep >= s.max_sweeps {
                    let why = format!("did not converge within {} sweeps", s.max_sweeps);
                    let reason = NonConvergence::MaxSweeps;
                    return Err(l.fail(st, s, &why, (sweep, delta), reason));
                }
                let mut mixed = None;
                if let (Some(a), Some(r)) = (l.aa.as_mut(), res) {
                    a.commit();
                    if !no_mix
                        && sweep >= warmup
                        && let Some(m) = a.mix()
                    {
                        if st.mix_trial(m) {
                            mixed = Some(r);
                        } else if let Some((i, _)) = a.newest() {
                            // Not finite: the trial back to G(x), exactly.
                            st.mix_trial((a.slots(), &[(i, 1.0)]));
                        }
                    }
                }
                no_mix = false;
                st.accept();
                q_prev2 = q_prev.replace(st.marginal()); // q is still the accepted state's
                st.begin_sweep();
                if let Some(r) = mixed {
                    // Kept only within the secant's trust: at most `SPAN` sds
                    // beyond the last plain step (a far jump whose residual
                    // fell can still set the plain steps back).
                    let within = |st: &S| {
                        let moved = st
                            .marginal()
                            .delta(q_prev.as_ref().expect("a previous state"));
                        moved <= delta + SPAN
                    };
                    if st.complete_sweep(l.eta, false) && within(st) {
                        // A plain step follows every mixed one: convergence is
                        // judged on plain steps only.
                        (pending, no_mix, l.last_plain) = (Some(Pending::Anderson(r)), true, false);
                        l.n.mixed += 1;
                    } else {
                        // Q is not positive definite at the mixed point, or it
                        // is too far.
                        if !l.undo_mixed(st)? {
                            no_mix = true;
                            continue;
                        }
                        l.last_plain = false;
                    }
                } else {
                    let Some(h) = l.complete(st, sweep < warmup, s.min_eta) else {
                        let reason = st.rebuild_reason();
                        return Err(l.below_min(st, s, (sweep, delta), reason));
                    };
                    // Two plain steps in a row: the secant may scale the second.
                    let plain_pair = l.last_plain && h == 0;
                    l.last_plain = h == 0;
                    if h > 0 {
                        if let Some(a) = l.aa.as_mut() {
                            a.clear();
                        }
                        l.progress.reset();
                    }
                    let mid = q_prev.as_ref().expect("a previous state");
                    if plain_pair
                        && l.aa.is_none()
                        && s.extrapolate
                        && sweep >= warmup
                        && let Some(old) = q_prev2.as_ref()
                    {
                        pending = l.secant(st, old, mid)?;
                    }
                }
                sweep += 1;
                st.end_sweep();
            }
        }
        delta = st
            .marginal()
            .delta(q_prev.as_ref().expect("a previous state"));
        if !delta.is_finite() {
            let why = "broke down: Δ is not finite";
            return Err(l.fail(st, s, why, (sweep, delta), NonConvergence::NonFinite));
        }
        let step = st.step_floor(l.eta);
        // A mixed step is judged by the residual at it first (next pass), and
        // is no step of the damped map: neither a convergence candidate nor
        // in the verdict's window.
        let plain = pending.is_none();
        candidate = plain && sweep > warmup && delta < s.tol * step;
        if candidate {
            continue;
        }
        st.after_sweep(l.eta);
        if plain && l.regrown(delta) {
            continue;
        }
        if sweep > warmup
            && let Some(v) = l.progress.step_at(
                sweep,
                plain.then_some(delta / step),
                Some(st.marginal()),
                s.tol,
                s.max_sweeps - sweep,
            )
            && let Some(e) = l.judge(st, s, v, (sweep, delta))
        {
            return Err(e);
        }
    }
}

/// Opens a run: settings checked, q for the current sites (a restart from
/// the prior when they do not fit the new prior or design), no rollback
/// point. Whether it restarted cold, and the sweeps during which
/// convergence is not judged.
fn open_run<S: SweepState>(st: &mut S, s: &EpSettings) -> Result<(bool, usize), EngineError> {
    s.validate().map_err(EngineError::InvalidParams)?;
    st.begin_run();
    let mut cold_restart = false;
    if !st.ensure_q() {
        if !st.can_reset() {
            return Err(prior_not_pd());
        }
        st.reset();
        cold_restart = true;
        if !st.ensure_q() {
            return Err(prior_not_pd());
        }
    }
    let warmup = if st.is_cold() { st.warmup_sweeps() } else { 0 };
    Ok((cold_restart, warmup))
}

/// A valid pass of the loop, as it reports it and, when it is a candidate,
/// ends with it.
struct PassDone {
    sweep: usize,
    eta: f64,
    delta: f64,
    stats: PassStats,
    /// Δ is below the tolerance: the run converges at this pass.
    candidate: bool,
    cold_restart: bool,
    /// Mixed steps taken, and those undone.
    jumps: (usize, usize),
}

/// Reports the pass (not the opening one) and, for a candidate, the
/// converged run.
fn report_pass<S: SweepState>(
    st: &S,
    p: &PassDone,
    rules: Rules,
    t0: Instant,
    on_sweep: &mut dyn FnMut(&S, &SweepStatus),
) -> Option<Converged> {
    if p.sweep > 0 {
        on_sweep(
            st,
            &SweepStatus {
                sweep: p.sweep,
                delta: p.delta,
                eta: st.step_floor(p.eta),
                stats: p.stats,
                evidence_known: p.candidate || rules.evidence_every_sweep,
                elapsed: t0.elapsed().as_secs_f64(),
            },
        );
    }
    p.candidate.then(|| Converged {
        sweeps: p.sweep,
        eta: p.eta,
        step: st.step_floor(p.eta),
        delta: p.delta,
        stats: p.stats,
        cold_restart: p.cold_restart,
        seconds: t0.elapsed().as_secs_f64(),
        jumps: p.jumps.0,
        jumps_undone: p.jumps.1,
    })
}
