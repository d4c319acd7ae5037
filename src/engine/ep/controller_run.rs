//! The Anderson controller's sweep loop (module docs: `controller`): the
//! `SweepState` contract, acceptance (a rejected state is shrunk towards the
//! rollback point with η halved), the mixing and the one verdict.

use std::time::Instant;

use serde_json::{Value, json};

use super::{
    Anderson, Judged, MIN_FACTOR, NonProgress, PLAIN_SWEEPS, Progress, SPAN, marginal_dots,
    secant_factor,
};
use crate::engine::ep::kernel::PassStats;
use crate::engine::ep::regrow::Regrow;
use crate::engine::ep::settings::EpSettings;
use crate::engine::ep::stop::{EpStop, RunFailure, with_verdict};
use crate::engine::ep::sweep_state::{Converged, Marginal, Rules, SweepState, SweepStatus};
use crate::engine::error::NonConvergence;
use crate::engine::interface::{Control, EngineError};

/// Counters of a run, for the diagnostics.
#[derive(Default)]
struct Counts {
    halvings: usize,
    verdict_halvings: usize,
    /// η doubled back (`Regrow`).
    regrowths: usize,
    mixed: usize,
    undone: usize,
    /// The mixing was turned off by a verdict (plain damping judged anew).
    mixing_off: bool,
}

/// A mixed step not yet judged by the residual at it.
#[derive(Clone, Copy)]
enum Pending {
    /// Anderson's, with the residual before it.
    Anderson(f64),
    /// The secant's, with ‖f‖² before it and its factor.
    Secant { before: f64, omega: f64 },
}

/// The loop's state that outlives a sweep: η and what changes it (the
/// counts, `Regrow`, the verdict's window and halvings), the mixing and
/// the secant's trust.
struct Loop {
    eta: f64,
    n: Counts,
    aa: Option<Anderson>,
    progress: Progress,
    /// η cut by a failed step grows back (`Regrow`): Δ's best since the
    /// last cut of η, and the verdict's halvings since the last regrowth.
    regrow: Regrow,
    best_delta: f64,
    cycle_halved: bool,
    /// η before the verdict's cycle halving of a mixed run (`judge`).
    halved_from: Option<f64>,
    /// The current state is a plain step from the rollback point (a secant
    /// step may follow); the secant's largest factor (half an undone
    /// step's, doubled by a kept one and by each plain pair without one).
    last_plain: bool,
    cap: f64,
}

impl Loop {
    fn new(s: &EpSettings) -> Loop {
        Loop {
            eta: s.eta,
            n: Counts::default(),
            aa: None,
            progress: Progress::default(),
            regrow: Regrow::new(s),
            best_delta: f64::INFINITY,
            cycle_halved: false,
            halved_from: None,
            last_plain: false,
            cap: f64::INFINITY,
        }
    }

    /// The run's `NotConverged` error: the loop's reason and counters with
    /// the flavour's failure detail and context; the failure and the sweeps
    /// typed in its account (`EpStop`).
    fn fail<S: SweepState>(
        &self,
        st: &S,
        s: &EpSettings,
        why: &str,
        (sweep, delta): (usize, f64),
        reason: NonConvergence,
    ) -> EngineError {
        let (n, eta) = (&self.n, self.eta);
        let mut detail = json!({
            "reason": reason, "controller": "anderson", "halvings": n.halvings,
            "verdict_halvings": n.verdict_halvings, "regrowths": n.regrowths,
            "mixed_steps": n.mixed, "mixed_undone": n.undone, "mixing_off": n.mixing_off,
        });
        merge(&mut detail, st.failure_detail());
        let mut diagnostics = json!({
            "sweeps": sweep, "eta": eta, "delta": delta, "tol": s.tol, "detail": detail,
        });
        merge(&mut diagnostics, st.context());
        let failure = RunFailure {
            verdict_halvings: n.verdict_halvings,
            rejected_halvings: n.halvings,
            ..RunFailure::new(reason)
        };
        let message = format!(
            "{} {why} (after {sweep} sweeps, η = {eta:.3e}, Δ = {delta:.3e})",
            st.label()
        );
        EngineError::not_converged(reason, message, diagnostics)
            .with_account(EpStop::run(sweep, failure))
    }

    fn below_min<S: SweepState>(
        &self,
        st: &S,
        s: &EpSettings,
        at: (usize, f64),
        reason: NonConvergence,
    ) -> EngineError {
        let why = "did not converge: η fell below its minimum";
        self.fail(st, s, why, at, reason)
    }

    /// η halved by a failed step (it regrows after clean ones).
    fn halve(&mut self) {
        self.regrow.cut(self.eta);
        self.eta *= 0.5;
        self.n.halvings += 1;
    }

    /// After a mixed step from x_k is undone: the plain step G(x_k), the
    /// history's newest pair, becomes the state (its rollback point x_k
    /// kept), so no pass is repeated; false when there is no such pair or q
    /// cannot be rebuilt at it (then back to x_k by `undo`).
    fn recover<S: SweepState>(&mut self, st: &mut S) -> bool {
        let Some(a) = self.aa.as_mut() else {
            return false;
        };
        let Some((slot, g)) = a.newest() else {
            return false;
        };
        st.load_current(g, slot);
        if !st.complete_sweep(self.eta, false) {
            return false;
        }
        a.keep_newest();
        true
    }

    /// Back to the state a mixed step started from (when `recover` cannot
    /// give its plain step); plain steps until the history refills.
    fn undo<S: SweepState>(&mut self, st: &mut S) -> bool {
        st.restore();
        if let Some(a) = self.aa.as_mut() {
            a.clear();
        }
        st.ensure_q()
    }

    /// Rebuilds q after an accepted step, halving η (the step shrunk
    /// towards the rollback point) while it is rejected: the halvings, None
    /// when η fell below its minimum.
    fn complete<S: SweepState>(&mut self, st: &mut S, warmup: bool, min_eta: f64) -> Option<usize> {
        let mut halved = 0;
        while !st.complete_sweep(self.eta, warmup) {
            self.halve();
            halved += 1;
            if self.eta < min_eta {
                return None;
            }
            st.shrink();
        }
        Some(halved)
    }

    /// Back to the plain step the secant scaled (its rollback point kept):
    /// the mixed sweep is the plain one, late, and the next secant step at
    /// most half as long.
    fn secant_undo<S: SweepState>(
        &mut self,
        st: &mut S,
        s: &EpSettings,
        omega: f64,
        at: (usize, f64),
    ) -> Result<(), EngineError> {
        self.cap = omega / 2.0;
        st.scale_step(1.0 / omega);
        self.n.undone += 1;
        let Some(h) = self.complete(st, false, s.min_eta) else {
            return Err(self.below_min(st, s, at, st.rebuild_reason()));
        };
        if h > 0 {
            self.progress.reset();
        }
        self.last_plain = h == 0;
        Ok(())
    }

    /// Clean plain steps regrow an η cut by a failed step (true when it
    /// did); the verdict never judges a window across the change.
    fn regrown(&mut self, delta: f64) -> bool {
        let next = self.regrow.next(self.eta, delta < self.best_delta);
        self.best_delta = self.best_delta.min(delta);
        if next <= self.eta {
            return false;
        }
        // Δ grows with the step: compare like with like.
        self.best_delta *= next / self.eta;
        self.eta = next;
        (self.n.regrowths, self.cycle_halved, self.last_plain) =
            (self.n.regrowths + 1, false, false);
        self.progress.reset();
        if let Some(a) = self.aa.as_mut() {
            a.clear();
        }
        true
    }

    /// Acts on what the verdict's window says: halves η for a cycle, turns
    /// the mixing off, or ends the run (the error).
    fn judge<S: SweepState>(
        &mut self,
        st: &S,
        s: &EpSettings,
        v: Judged,
        at: (usize, f64),
    ) -> Option<EngineError> {
        // A window without contraction that is not straight may be a cycle
        // of the damped map that a smaller step removes (spike-and-slab
        // Pima and GP-EP Glass cycle at η = 0.7): the step is halved, once
        // per regrowth; a drift is not (a smaller step only slows it). The halving is a failed step
        // for `Regrow`: an early transient of the large step (claims at γ =
        // n: a period-2 oscillation at η = 0.7 for ~20 sweeps, then a slow
        // mode) gets the step back once the halved one contracts cleanly; a
        // cycle that comes back at the regrown step is halved again and
        // capped there.
        if let Judged::Orbit { period, change } = v {
            return self.orbit(st, s, NonProgress::Orbit { period, change }, at);
        }
        let no_contraction = matches!(v, Judged::Stop(NonProgress::NoContraction { .. }));
        let straight = self.progress.straightness() >= super::STRAIGHT;
        let cycle = matches!(v, Judged::Cycle { .. }) || (no_contraction && !straight);
        if cycle && !self.cycle_halved && self.eta * 0.5 >= s.min_eta {
            self.halved_from = self.aa.is_some().then_some(self.eta);
            self.halve_for_verdict();
            return None;
        }
        // A cycle after its halving: the window at the halved step judges.
        let v = match v {
            Judged::Cycle { .. } => return None,
            Judged::Stop(v) => v,
            Judged::Orbit { .. } => unreachable!("judged above"),
        };
        // The verdict is on the damped map: where the mixing was on, plain
        // damping (with the secant) first gets a horizon of its own, once.
        // Anderson's safeguard judges by the site residual and kept steps
        // that set the plain steps back (claims' folds at 2n), or its undone
        // steps kept the secant off (spect at 16n). Not for a straight
        // window without contraction: a drift.
        let drift = no_contraction && straight;
        if self.aa.is_some() && !self.n.mixing_off && !drift {
            self.aa = None;
            self.n.mixing_off = true;
            self.last_plain = false;
            self.progress.reset();
            // Plain damping is judged at the step it had before the mixed
            // iteration's cycle halving (Colon ss split 17 at 2n: kept at
            // 0.35, the damped map left the fixed point ×1.2 a sweep and
            // never regrew; at 0.7 it converges there, as classic does).
            if st.replain_at_full_step()
                && self.cycle_halved
                && let Some(e) = self.halved_from
            {
                self.eta = e;
                self.cycle_halved = false;
                self.best_delta = f64::INFINITY;
            }
            return None;
        }
        let e = self.fail(st, s, &v.describe(), at, NonConvergence::NoProgress);
        Some(with_verdict(e, v))
    }
}

impl Loop {
    /// The verdict's halving of η (a cycle or an orbit): once per regrowth,
    /// a failed step for `Regrow`, the window judged afresh.
    fn halve_for_verdict(&mut self) {
        self.regrow.cut(self.eta);
        self.eta *= 0.5;
        self.n.verdict_halvings += 1;
        self.cycle_halved = true;
        self.best_delta = f64::INFINITY;
        self.last_plain = false;
        self.progress.reset();
    }

    /// An orbit (`Progress::orbit`) halves η once, with the mixing off from
    /// there (the halved step is judged on the damped map itself); one that
    /// survives the halving is the verdict. No regrowth undoes that halving
    /// (an orbit's r does not fall).
    fn orbit<S: SweepState>(
        &mut self,
        st: &S,
        s: &EpSettings,
        v: NonProgress,
        at: (usize, f64),
    ) -> Option<EngineError> {
        if !self.cycle_halved && self.eta * 0.5 >= s.min_eta {
            self.halve_for_verdict();
            if self.aa.take().is_some() {
                self.n.mixing_off = true;
            }
            return None;
        }
        if self.aa.take().is_some() {
            // Judged with the mixing on: plain damping first, once.
            self.n.mixing_off = true;
            self.last_plain = false;
            self.progress.reset();
            return None;
        }
        let e = self.fail(st, s, &v.describe(), at, NonConvergence::NoProgress);
        Some(with_verdict(e, v))
    }
}

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
                    l.n.undone += 1;
                    if !l.recover(st) {
                        if !l.undo(st) {
                            return Err(prior_not_pd());
                        }
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
                && accel().1
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
                    l.n.undone += 1;
                    if !l.recover(st) {
                        if !l.undo(st) {
                            return Err(prior_not_pd());
                        }
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
                    // fell can still set the plain steps back: claims, 1n).
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
                        l.n.undone += 1;
                        if !l.recover(st) {
                            if !l.undo(st) {
                                return Err(prior_not_pd());
                            }
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
                    let (old, mid) = (q_prev2.as_ref(), q_prev.as_ref().expect("a previous state"));
                    if plain_pair
                        && l.aa.is_none()
                        && s.extrapolate
                        && accel().0
                        && sweep >= warmup
                        && let Some(old) = old
                    {
                        let now = st.marginal();
                        let d = now.delta(mid);
                        let omega = ((MIN_FACTOR - 1.0) * d <= SPAN)
                            .then(|| secant_factor(marginal_dots(old, mid, &now)))
                            .flatten()
                            .map(|w| w.min(l.cap).min(1.0 + SPAN / d))
                            .filter(|&w| w >= MIN_FACTOR);
                        // The secant step scales the plain one; where Q is not
                        // positive definite at it, back to the plain step.
                        if omega.is_none() {
                            // The trust regrows while no step is taken.
                            l.cap *= 2.0;
                        }
                        if let Some(w) = omega
                            && let Some(before) = st.scale_step(w)
                        {
                            if st.complete_sweep(l.eta, false) {
                                (pending, l.last_plain) =
                                    (Some(Pending::Secant { before, omega: w }), false);
                                l.n.mixed += 1;
                            } else {
                                st.scale_step(1.0 / w);
                                (l.n.undone, l.cap) = (l.n.undone + 1, w / 2.0);
                                if !st.ensure_q() {
                                    return Err(prior_not_pd());
                                }
                            }
                        }
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

/// TEMPORARY measurement switch (issue 28, ep21b): `PACAUC_EP_ACCEL=secant`
/// or `anderson` keeps only that accelerator; (secant, anderson).
fn accel() -> (bool, bool) {
    static A: std::sync::OnceLock<(bool, bool)> = std::sync::OnceLock::new();
    *A.get_or_init(|| match std::env::var("PACAUC_EP_ACCEL").as_deref() {
        Ok("secant") => (true, false),
        Ok("anderson") => (false, true),
        _ => (true, true),
    })
}

/// The error for a prior precision that is not positive definite.
fn prior_not_pd() -> EngineError {
    EngineError::Numerical("the prior precision is not positive definite".into())
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

/// Adds `extra`'s fields to the object `v`.
fn merge(v: &mut Value, extra: Value) {
    if let (Some(o), Value::Object(e)) = (v.as_object_mut(), extra) {
        o.extend(e);
    }
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
