//! The EP sweep driver: one loop for every EP flavour (ALGORITHMS.md §4, §5, §6).
//!
//! # Implementing a flavour (`SweepState`)
//! A flavour keeps its sites in three roles — the accepted state before the
//! last step (the rollback point), the current state (whose q is current) and
//! the trial written by the next pass — and exposes:
//! - `pass(eta, evidence)`: checks every likelihood site's cavity under the
//!   current q (`PassStats::bad` > 0: the current state is invalid) and sums
//!   their log C when `evidence`; with `Some(eta)` also writes the damped
//!   update `(1 − η)·site + η·new` as the trial. Must not change q.
//! - `accept()`: the trial becomes current, the current one the rollback point.
//! - `complete_sweep(eta, warmup)`: after `accept`, rebuild q from the current
//!   sites (and do what else the sweep does at step η: spike-and-slab updates
//!   its prior sites here); false when the result is rejected (Q not positive
//!   definite, an invalid prior cavity). GP-EP: V = (K⁻¹ + B)⁻¹ with B the
//!   weighted Laplacian of the site precisions, checked positive definite.
//! - `shrink()`: current ← (rollback + current)/2 — the last step again with η
//!   halved — and anything else of the sweep back to its start (`begin_sweep`).
//! - `ensure_q()`: q for the current sites (rebuilt only if stale); false when
//!   Q is not positive definite. `reset()`: every site back to the start (q =
//!   prior); `can_reset()` false when a restart makes no sense (a continuation).
//! - `marginal()`: the means and variances Δ_t is judged on (θ's, or the
//!   scores' m_s and diag V_s for GP-EP).
//!
//! # What the driver owns
//! Acceptance (a rejected state is shrunk towards the rollback point with η
//! halved, and η stays halved: restoring it makes η = 1 cycle for ever),
//! the stall rule (Δ_t without a new minimum for `stall_sweeps` sweeps: halve
//! η), the cycle rule (`cycle_stalls` stall halvings in a row that did not halve
//! the smallest Δ/η: fail fast), the drift rule (`Rules::drift`: a stall whose
//! mean kept its direction is a slow drift, not a cycle: no halving), Δ_t and
//! convergence (`Δ_t < tol·η_t`, η_t the smallest step of the sweep, never
//! during the warm-up), the `NotConverged` diagnostics, per-sweep reports, and
//! one retry from the prior when a warm start fails (`run`).

use std::time::Instant;

use serde_json::{Value, json};

use super::kernel::PassStats;
use super::pair_ep::EpSettings;
use crate::engine::run::{Control, EngineError};

/// Means and variances of the coordinates convergence is judged on.
#[derive(Debug, Clone, PartialEq)]
pub struct Marginal {
    pub mean: Vec<f64>,
    pub var: Vec<f64>,
}

impl Marginal {
    /// Δ = max_k max(|m_k − m'_k|/sd'_k, |sd_k/sd'_k − 1|), primes = `old`.
    pub fn delta(&self, old: &Marginal) -> f64 {
        let mut d: f64 = 0.0;
        for k in 0..self.mean.len() {
            let (sd, sd_old) = (self.var[k].sqrt(), old.var[k].sqrt());
            d = d
                .max((self.mean[k] - old.mean[k]).abs() / sd_old)
                .max((sd / sd_old - 1.0).abs());
        }
        d
    }
}

/// Where a run failed, for a flavour's hint (`SweepState::hint`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Failure {
    /// η fell below its minimum while the rebuild after a step kept failing.
    Rebuild,
    /// Too many sweeps while the mean drifted one way.
    Drift,
}

/// An EP flavour's sites and q, as the driver sees them (see the module docs).
pub trait SweepState {
    /// "EP", "spike-and-slab EP", … (messages).
    fn label(&self) -> &'static str;
    fn ensure_q(&mut self) -> bool;
    fn reset(&mut self);
    fn can_reset(&self) -> bool {
        true
    }
    /// Every site at its start (a cold state).
    fn is_cold(&self) -> bool;
    /// Sweeps of a cold start during which convergence is not judged.
    fn warmup_sweeps(&self) -> usize {
        0
    }
    fn pass(&mut self, eta: Option<f64>, evidence: bool) -> PassStats;
    fn accept(&mut self);
    fn shrink(&mut self);
    fn can_roll_back(&self) -> bool;
    fn forget_rollback(&mut self);
    /// A run starts (per-run counters and steps back to their start).
    fn begin_run(&mut self) {}
    /// A sweep starts from the current state (remember what `shrink` restores).
    fn begin_sweep(&mut self) {}
    fn complete_sweep(&mut self, eta: f64, warmup: bool) -> bool;
    /// A sweep was accepted.
    fn end_sweep(&mut self) {}
    fn marginal(&self) -> Marginal;
    /// The smallest step of a sweep of step η (some sites may step less).
    fn step_floor(&self, eta: f64) -> f64 {
        eta
    }
    /// After an accepted sweep that is not a convergence candidate.
    fn after_sweep(&mut self, _eta: f64) {}
    /// What to try when the run fails this way (appended to the message).
    fn hint(&self, _f: Failure) -> Option<&'static str> {
        None
    }
    /// Why a rebuild after a step fails (the diagnostics' reason).
    fn rebuild_reason(&self) -> &'static str {
        "Q not positive definite"
    }
    /// Extra diagnostics (merged into the top level).
    fn context(&self) -> Value {
        json!({})
    }
    /// Extra details of a failure (merged into `detail`).
    fn failure_detail(&self) -> Value {
        json!({})
    }
}

/// The flavour's choices of the driver's rules.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Rules {
    /// Sum log C at every sweep (else only at the convergence check).
    pub evidence_every_sweep: bool,
    /// A stall whose mean kept its direction is a drift, not a cycle.
    pub drift: bool,
}

/// One accepted sweep's state, as reported.
#[derive(Debug, Clone, Copy)]
pub struct SweepStatus {
    pub sweep: usize,
    pub delta: f64,
    /// The smallest step of the sweep.
    pub eta: f64,
    pub stats: PassStats,
    /// `stats.sum_log_c` was summed in this pass.
    pub evidence_known: bool,
    pub elapsed: f64,
}

/// A converged run.
#[derive(Debug, Clone, Copy)]
pub struct Converged {
    pub sweeps: usize,
    /// The sweeps' step η.
    pub eta: f64,
    /// The smallest step of the last sweep.
    pub step: f64,
    pub delta: f64,
    /// The final check pass (evidence summed).
    pub stats: PassStats,
    pub cold_restart: bool,
    pub seconds: f64,
}

/// Runs EP to convergence from the current state; a warm start that does not
/// converge (it can sit in a slow mode of the iteration) is retried once from
/// the prior, unless it failed by a cycle.
pub fn run<S: SweepState>(
    st: &mut S,
    s: &EpSettings,
    rules: Rules,
    ctl: &Control,
    on_sweep: &mut dyn FnMut(&S, &SweepStatus),
) -> Result<Converged, EngineError> {
    let warm = !st.is_cold();
    match run_once(st, s, rules, ctl, on_sweep) {
        Err(EngineError::NotConverged { diagnostics, .. })
            if warm && st.can_reset() && diagnostics["detail"]["reason"] != "cycle" =>
        {
            st.reset();
            let mut out = run_once(st, s, rules, ctl, on_sweep)?;
            out.cold_restart = true;
            Ok(out)
        }
        r => r,
    }
}

/// Counters of a run, for the diagnostics.
#[derive(Default)]
struct Counts {
    halvings: usize,
    stall_halvings: usize,
    drift_windows: usize,
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
    s.validate().map_err(EngineError::InvalidParams)?;
    let t0 = Instant::now();
    st.begin_run();
    let prior_not_pd =
        || EngineError::Numerical("the prior precision is not positive definite".into());
    let mut cold_restart = false;
    if !st.ensure_q() {
        // The kept sites do not fit the new prior or design: start afresh.
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
    st.forget_rollback();
    st.begin_sweep();
    let mut q_prev: Option<Marginal> = None;
    // `eta`: the step of the next update; `cur_eta`: the step that made the
    // current state (a stall lowers the first only, a rejection both).
    let (mut eta, mut cur_eta) = (s.eta, s.eta);
    let (mut sweep, mut delta, mut candidate) = (0usize, f64::INFINITY, false);
    let mut n = Counts::default();
    let (mut best_delta, mut since_best) = (f64::INFINITY, 0usize);
    // Stall halvings in a row that did not halve the smallest Δ/η.
    let mut flat_stalls = 0usize;
    // Drift: this sweep's move of the mean, and reversals since the best Δ.
    let (mut last_step_m, mut reversals): (Option<Vec<f64>>, usize) = (None, 0);
    let fail = |st: &S, why: &str, sweep: usize, eta: f64, delta: f64, reason: &str, n: &Counts| {
        let mut detail = json!({
            "reason": reason, "halvings": n.halvings, "stall_halvings": n.stall_halvings,
            "drift_windows": n.drift_windows, "delta_over_eta": n.stall_ratios,
        });
        merge(&mut detail, st.failure_detail());
        let mut diagnostics = json!({
            "sweeps": sweep, "eta": eta, "delta": delta, "tol": s.tol, "detail": detail,
        });
        merge(&mut diagnostics, st.context());
        EngineError::NotConverged {
            message: format!(
                "{} {why} (after {sweep} sweeps, η = {eta:.3e}, Δ = {delta:.3e})",
                st.label()
            ),
            diagnostics,
        }
    };
    let below_min = "did not converge: η fell below its minimum";
    loop {
        ctl.checkpoint()?;
        let stats = st.pass((!candidate).then_some(eta), rules.evidence_every_sweep);
        if stats.bad > 0 {
            if !st.can_roll_back() {
                if cold_restart || !st.can_reset() {
                    let mut e = fail(
                        st,
                        "found invalid cavities at the prior",
                        sweep,
                        eta,
                        delta,
                        "invalid cavities",
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
            loop {
                cur_eta *= 0.5;
                eta = eta.min(cur_eta);
                n.halvings += 1;
                if cur_eta < s.min_eta {
                    let mut e = fail(st, below_min, sweep, cur_eta, delta, "invalid cavities", &n);
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
        if sweep > 0 {
            on_sweep(
                st,
                &SweepStatus {
                    sweep,
                    delta,
                    eta: st.step_floor(cur_eta),
                    stats,
                    evidence_known: candidate || rules.evidence_every_sweep,
                    elapsed: t0.elapsed().as_secs_f64(),
                },
            );
        }
        if candidate {
            return Ok(Converged {
                sweeps: sweep,
                eta: cur_eta,
                step: st.step_floor(cur_eta),
                delta,
                stats,
                cold_restart,
                seconds: t0.elapsed().as_secs_f64(),
            });
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
            return Err(fail(st, &why, sweep, eta, delta, "max sweeps", &n));
        }
        // The pass's output becomes the current state.
        st.accept();
        q_prev = Some(st.marginal()); // q is still the accepted state's
        st.begin_sweep();
        cur_eta = eta;
        while !st.complete_sweep(cur_eta, sweep < warmup) {
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
        delta = st
            .marginal()
            .delta(q_prev.as_ref().expect("a previous state"));
        if !delta.is_finite() {
            return Err(fail(
                st,
                "broke down: Δ is not finite",
                sweep,
                cur_eta,
                delta,
                "non-finite",
                &n,
            ));
        }
        candidate = sweep > warmup && delta < s.tol * st.step_floor(cur_eta);
        if candidate {
            continue;
        }
        st.after_sweep(cur_eta);
        if rules.drift {
            // Direction of this sweep's move of the mean against the last one's.
            let (now, prev) = (st.marginal().mean, &q_prev.as_ref().expect("previous").mean);
            let step_m: Vec<f64> = now.iter().zip(prev).map(|(a, b)| a - b).collect();
            if let Some(last) = &last_step_m {
                let dot: f64 = step_m.iter().zip(last).map(|(a, b)| a * b).sum();
                reversals += usize::from(dot < 0.0);
            }
            last_step_m = Some(step_m);
        }
        if delta < best_delta {
            (best_delta, since_best, reversals) = (delta, 0, 0);
            continue;
        }
        since_best += 1;
        if s.stall_sweeps == 0 || since_best < s.stall_sweeps {
            continue;
        }
        if rules.drift && 2 * reversals < since_best {
            // Δ stalls but the mean keeps its direction: a slow drift (towards the
            // all-spike fixed point, say), not a cycle; smaller steps would only
            // slow it down. Watch a fresh window.
            (best_delta, since_best, reversals) = (f64::INFINITY, 0, 0);
            n.drift_windows += 1;
            continue;
        }
        // A cycle: smaller steps from the current (valid) state.
        let ratio = best_delta / cur_eta;
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
                "cycle",
                &n,
            ));
        }
        eta *= 0.5;
        n.stall_halvings += 1;
        (best_delta, since_best, reversals) = (f64::INFINITY, 0, 0);
        if eta < s.min_eta {
            return Err(fail(st, below_min, sweep, eta, delta, "Δ stalled", &n));
        }
    }
}

/// Adds `extra`'s fields to the object `v`.
fn merge(v: &mut Value, extra: Value) {
    if let (Some(o), Value::Object(e)) = (v.as_object_mut(), extra) {
        o.extend(e);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One coordinate x with the EP-like update x ← (1 − η)x + η f(x); the
    /// current state is invalid above `bad_above` (an invalid cavity).
    struct Toy {
        f: fn(f64) -> f64,
        bad_above: f64,
        cur: f64,
        prev: Option<f64>,
        trial: f64,
        q: f64,
        rebuilds: usize,
    }

    impl Toy {
        fn new(f: fn(f64) -> f64, start: f64) -> Toy {
            Toy {
                f,
                bad_above: f64::INFINITY,
                cur: start,
                prev: None,
                trial: start,
                q: f64::NAN,
                rebuilds: 0,
            }
        }
    }

    impl SweepState for Toy {
        fn label(&self) -> &'static str {
            "toy EP"
        }
        fn ensure_q(&mut self) -> bool {
            self.q = self.cur;
            true
        }
        fn reset(&mut self) {
            (self.cur, self.prev) = (0.0, None);
        }
        fn is_cold(&self) -> bool {
            self.cur == 0.0
        }
        fn pass(&mut self, eta: Option<f64>, _evidence: bool) -> PassStats {
            if let Some(eta) = eta {
                self.trial = (1.0 - eta) * self.cur + eta * (self.f)(self.cur);
            }
            PassStats {
                bad: usize::from(self.cur > self.bad_above),
                ..PassStats::default()
            }
        }
        fn accept(&mut self) {
            self.prev = Some(self.cur);
            self.cur = self.trial;
        }
        fn shrink(&mut self) {
            self.cur = 0.5 * (self.prev.expect("rollback") + self.cur);
        }
        fn can_roll_back(&self) -> bool {
            self.prev.is_some()
        }
        fn forget_rollback(&mut self) {
            self.prev = None;
        }
        fn complete_sweep(&mut self, _eta: f64, _warmup: bool) -> bool {
            self.rebuilds += 1;
            self.q = self.cur;
            true
        }
        fn marginal(&self) -> Marginal {
            Marginal {
                mean: vec![self.q],
                var: vec![1.0],
            }
        }
    }

    const RULES: Rules = Rules {
        evidence_every_sweep: true,
        drift: false,
    };

    fn settings(eta: f64) -> EpSettings {
        EpSettings {
            eta,
            cycle_stalls: 2,
            ..EpSettings::default()
        }
    }

    /// A contraction converges to its fixed point with Δ < tol·η.
    #[test]
    fn converges_with_the_step_rule() {
        let mut t = Toy::new(|x| 1.0 + 0.5 * (x - 1.0), 0.0);
        let out = run(
            &mut t,
            &settings(0.7),
            RULES,
            &Control::new(),
            &mut |_, _| {},
        )
        .unwrap();
        assert!((t.cur - 1.0).abs() < 1e-3, "{}", t.cur);
        assert!(out.delta < 1e-4 * out.eta && out.eta == 0.7 && !out.cold_restart);
    }

    /// f with slope −1.5: η = 1 oscillates with a growing amplitude, so Δ
    /// stalls and η is halved (kept halved) until the damped map contracts.
    #[test]
    fn a_stall_halves_eta() {
        let mut t = Toy::new(|x| 1.0 - 1.5 * (x - 1.0), 0.0);
        let out = run(
            &mut t,
            &settings(1.0),
            RULES,
            &Control::new(),
            &mut |_, _| {},
        )
        .unwrap();
        assert!(out.eta < 0.8, "η = {}", out.eta);
        assert!((t.cur - 1.0).abs() < 1e-3);
    }

    /// A state whose cavities are invalid is shrunk towards the last accepted
    /// one with η halved, and η stays halved.
    #[test]
    fn an_invalid_state_is_rejected_and_eta_stays_halved() {
        let mut t = Toy::new(|x| 1.0 - 1.5 * (x - 1.0), 0.0);
        t.bad_above = 1.6;
        let mut etas = Vec::new();
        let out = run(
            &mut t,
            &settings(1.0),
            RULES,
            &Control::new(),
            &mut |_, s| etas.push(s.eta),
        )
        .unwrap();
        // Sweep 1 went to 2.5 (invalid), was shrunk to 1.25 at η = 0.5.
        assert_eq!(etas[0], 0.5);
        assert!(etas.iter().all(|&e| e <= 0.5));
        assert!((t.cur - 1.0).abs() < 1e-3 && out.eta <= 0.5);
    }

    /// No fixed point (the state moves by η every sweep): Δ/η stays flat while
    /// η halves, a cycle, reported as such within a few stall windows.
    #[test]
    fn a_cycle_fails_fast() {
        let mut t = Toy::new(|x| x + 1.0, 0.0);
        let e = run(
            &mut t,
            &settings(0.7),
            RULES,
            &Control::new(),
            &mut |_, _| {},
        )
        .unwrap_err();
        let EngineError::NotConverged {
            message,
            diagnostics,
        } = e
        else {
            panic!("{e:?}")
        };
        assert_eq!(diagnostics["detail"]["reason"], "cycle", "{message}");
        assert!(message.starts_with("toy EP did not converge: a cycle"));
        assert!(diagnostics["sweeps"].as_u64().unwrap() < 100);
    }

    /// A warm state whose cavities are invalid (no rollback point): EP
    /// restarts from the start and says so.
    #[test]
    fn an_invalid_warm_start_restarts_cold() {
        let mut t = Toy::new(|x| 1.0 + 0.5 * (x - 1.0), 5.0);
        t.bad_above = 4.0; // the warm state is invalid and cannot be rolled back
        let out = run(
            &mut t,
            &settings(0.7),
            RULES,
            &Control::new(),
            &mut |_, _| {},
        )
        .unwrap();
        assert!(out.cold_restart && (t.cur - 1.0).abs() < 1e-3);
    }
}
