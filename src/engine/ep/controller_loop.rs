//! The controller loop's state (`Loop`, `controller_run.rs`): η and what
//! changes it, the mixed and secant steps' trust and undo, and the run's
//! error (`fail`). A rejected step halves η; a window without contraction
//! that is not straight (a cycle) or an orbit halves it once per regrowth
//! (an orbit also turns the mixing off), a drift never; an orbit that
//! survives its halving is the verdict. Where the mixing was on, a verdict
//! other than a drift first turns it off (once) and judges plain damping
//! anew. An η cut by a rejection or a halving grows back after clean plain
//! steps (`regrow`); the verdict's window restarts at every change of η.

use serde_json::{Value, json};

use super::super::{
    Anderson, Judged, MIN_FACTOR, NonProgress, Progress, SPAN, marginal_dots, secant_factor,
};
use crate::engine::ep::regrow::Regrow;
use crate::engine::ep::settings::EpSettings;
use crate::engine::ep::stop::{EpStop, RunFailure, with_verdict};
use crate::engine::ep::sweep_state::{Marginal, SweepState};
use crate::engine::error::NonConvergence;
use crate::engine::interface::EngineError;

/// Counters of a run, for the diagnostics.
#[derive(Default)]
pub(super) struct Counts {
    halvings: usize,
    verdict_halvings: usize,
    /// η doubled back (`Regrow`).
    regrowths: usize,
    pub(super) mixed: usize,
    pub(super) undone: usize,
    /// The mixing was turned off by a verdict (plain damping judged anew).
    pub(super) mixing_off: bool,
}

/// A mixed step not yet judged by the residual at it.
#[derive(Clone, Copy)]
pub(super) enum Pending {
    /// Anderson's, with the residual before it.
    Anderson(f64),
    /// The secant's, with ‖f‖² before it and its factor.
    Secant { before: f64, omega: f64 },
}

/// The loop's state that outlives a sweep: η and what changes it (the
/// counts, `Regrow`, the verdict's window and halvings), the mixing and
/// the secant's trust.
pub(super) struct Loop {
    pub(super) eta: f64,
    pub(super) n: Counts,
    pub(super) aa: Option<Anderson>,
    pub(super) progress: Progress,
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
    pub(super) last_plain: bool,
    pub(super) cap: f64,
}

impl Loop {
    pub(super) fn new(s: &EpSettings) -> Loop {
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
    pub(super) fn fail<S: SweepState>(
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

    pub(super) fn below_min<S: SweepState>(
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
    pub(super) fn halve(&mut self) {
        self.regrow.cut(self.eta);
        self.eta *= 0.5;
        self.n.halvings += 1;
    }

    /// Undoes a mixed step from x_k: the plain step G(x_k), the history's
    /// newest pair, becomes the state (its rollback point x_k kept), so no
    /// pass is repeated (true); where there is no such pair or q cannot be
    /// rebuilt at it, back to x_k, plain steps until the history refills.
    pub(super) fn undo_mixed<S: SweepState>(&mut self, st: &mut S) -> Result<bool, EngineError> {
        self.n.undone += 1;
        if let Some(a) = self.aa.as_mut()
            && let Some((slot, g)) = a.newest()
        {
            st.load_current(g, slot);
            if st.complete_sweep(self.eta, false) {
                a.keep_newest();
                return Ok(true);
            }
        }
        st.restore();
        if let Some(a) = self.aa.as_mut() {
            a.clear();
        }
        if !st.ensure_q() {
            return Err(prior_not_pd());
        }
        Ok(false)
    }

    /// Rebuilds q after an accepted step, halving η (the step shrunk
    /// towards the rollback point) while it is rejected: the halvings, None
    /// when η fell below its minimum.
    pub(super) fn complete<S: SweepState>(
        &mut self,
        st: &mut S,
        warmup: bool,
        min_eta: f64,
    ) -> Option<usize> {
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
    pub(super) fn secant_undo<S: SweepState>(
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

    /// The secant step on the plain pair q_{k−1} (`old`) → q_k (`mid`) →
    /// the current state: it scales the second step by ω (`secant_factor`,
    /// capped by the trust and by `SPAN`); where Q is not positive definite
    /// at it, back to the plain step. The step pending its judgement, if
    /// taken.
    pub(super) fn secant<S: SweepState>(
        &mut self,
        st: &mut S,
        old: &Marginal,
        mid: &Marginal,
    ) -> Result<Option<Pending>, EngineError> {
        let now = st.marginal();
        let d = now.delta(mid);
        let omega = ((MIN_FACTOR - 1.0) * d <= SPAN)
            .then(|| secant_factor(marginal_dots(old, mid, &now)))
            .flatten()
            .map(|w| w.min(self.cap).min(1.0 + SPAN / d))
            .filter(|&w| w >= MIN_FACTOR);
        let Some(w) = omega else {
            // The trust regrows while no step is taken.
            self.cap *= 2.0;
            return Ok(None);
        };
        let Some(before) = st.scale_step(w) else {
            return Ok(None);
        };
        if st.complete_sweep(self.eta, false) {
            self.last_plain = false;
            self.n.mixed += 1;
            return Ok(Some(Pending::Secant { before, omega: w }));
        }
        st.scale_step(1.0 / w);
        (self.n.undone, self.cap) = (self.n.undone + 1, w / 2.0);
        if !st.ensure_q() {
            return Err(prior_not_pd());
        }
        Ok(None)
    }

    /// Clean plain steps regrow an η cut by a failed step (true when it
    /// did); the verdict never judges a window across the change.
    pub(super) fn regrown(&mut self, delta: f64) -> bool {
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
    pub(super) fn judge<S: SweepState>(
        &mut self,
        st: &S,
        s: &EpSettings,
        v: Judged,
        at: (usize, f64),
    ) -> Option<EngineError> {
        // A window without contraction that is not straight may be a cycle
        // of the damped map that a smaller step removes: the step is halved,
        // once per regrowth; a drift is not (a smaller step only slows it).
        // The halving is a failed step for `Regrow`: an early transient of
        // the large step gets the step back once the halved one contracts
        // cleanly; a cycle that comes back at the regrown step is halved
        // again and capped there.
        if let Judged::Orbit { period, change } = v {
            return self.orbit(st, s, NonProgress::Orbit { period, change }, at);
        }
        let no_contraction = matches!(v, Judged::Stop(NonProgress::NoContraction { .. }));
        let straight = self.progress.straightness() >= super::super::STRAIGHT;
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
        // damping (with the secant) first gets a horizon of its own, once —
        // Anderson's safeguard judges by the site residual, so its kept steps
        // may set the plain steps back, its undone ones keep the secant off.
        // Not for a straight window without contraction: a drift.
        let drift = no_contraction && straight;
        if self.aa.is_some() && !self.n.mixing_off && !drift {
            self.aa = None;
            self.n.mixing_off = true;
            self.last_plain = false;
            self.progress.reset();
            // Plain damping is judged at the step it had before the mixed
            // iteration's cycle halving: that halving judged the mixed
            // iteration, not the damped map, which may diverge at the halved
            // step where it converges at the full one (spike-and-slab Colon).
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

/// The error for a prior precision that is not positive definite.
pub(super) fn prior_not_pd() -> EngineError {
    EngineError::Numerical("the prior precision is not positive definite".into())
}

/// Adds `extra`'s fields to the object `v`.
fn merge(v: &mut Value, extra: Value) {
    if let (Some(o), Value::Object(e)) = (v.as_object_mut(), extra) {
        o.extend(e);
    }
}
