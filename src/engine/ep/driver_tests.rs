//! Tests of the sweep driver on one-coordinate toys.

use super::*;
use crate::engine::ep::kernel::PassStats;

/// One coordinate x with the EP-like update x ← (1 − η)x + η f(x); the
/// current state is invalid above `bad_above` (an invalid cavity).
struct Toy {
    f: fn(f64) -> f64,
    bad_above: f64,
    cur: f64,
    prev: Option<f64>,
    /// The state before `prev` (an undone extrapolation goes back to it).
    older: Option<f64>,
    trial: f64,
    q: f64,
    rebuilds: usize,
    /// Passes after the first step that find invalid cavities (a transient).
    bad_passes: usize,
}

impl Toy {
    fn new(f: fn(f64) -> f64, start: f64) -> Toy {
        Toy {
            f,
            bad_above: f64::INFINITY,
            cur: start,
            prev: None,
            older: None,
            trial: start,
            q: f64::NAN,
            rebuilds: 0,
            bad_passes: 0,
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
        let transient = self.prev.is_some() && self.bad_passes > 0;
        self.bad_passes -= usize::from(transient);
        PassStats {
            bad: usize::from(self.cur > self.bad_above || transient),
            ..PassStats::default()
        }
    }
    fn accept(&mut self) {
        self.older = self.prev;
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
    fn overrelax(&mut self, factor: f64) -> bool {
        let p = self.prev.expect("rollback");
        self.cur = p + factor * (self.cur - p);
        true
    }
    fn restore(&mut self) {
        self.cur = self.prev.take().expect("rollback");
    }
    fn restore_before_rollback(&mut self) {
        self.cur = self
            .older
            .take()
            .expect("the state before the rollback point");
        self.prev = None;
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
    // The stall rule alone (a steady Δ would otherwise take capped drift jumps,
    // which add sweeps between the stall windows).
    let s = EpSettings {
        extrapolate: false,
        ..settings(0.7)
    };
    let e = run(&mut t, &s, RULES, &Control::new(), &mut |_, _| {}).unwrap_err();
    let EngineError::NotConverged {
        reason,
        message,
        diagnostics,
        ..
    } = e
    else {
        panic!("{e:?}")
    };
    assert_eq!(reason, NonConvergence::Cycle, "{message}");
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

/// A slow linear contraction (Δ falls 7% a sweep): extrapolation reaches the
/// same fixed point in far fewer sweeps, and the plain iteration is unchanged.
#[test]
fn extrapolation_speeds_up_a_slow_geometric_convergence() {
    let f = |x: f64| 1.0 + 0.9 * (x - 1.0);
    let mut sweeps = Vec::new();
    for extrapolate in [false, true] {
        let mut t = Toy::new(f, 0.0);
        let s = EpSettings {
            extrapolate,
            ..settings(0.7)
        };
        let out = run(&mut t, &s, RULES, &Control::new(), &mut |_, _| {}).unwrap();
        assert!((t.cur - 1.0).abs() < 1e-3, "{}", t.cur);
        assert_eq!(out.jumps > 0, extrapolate);
        sweeps.push(out.sweeps);
    }
    assert!(3 * sweeps[1] < sweeps[0], "{sweeps:?}");
}

/// A jump after which the next sweep moves more than the one before it is
/// undone, and the run still ends at the fixed point.
#[test]
fn a_jump_that_does_not_pay_is_undone() {
    // A slow climb towards 1 below 0.5 (Aitken extrapolates towards 1), a fast
    // pull back to the fixed point 0.52 above: the jump lands near 0.68, where
    // the next sweep moves twice as far as the last one before the jump.
    let f = |x: f64| {
        if x < 0.5 {
            x + 0.05 * (1.0 - x)
        } else {
            x + 0.5 * (0.52 - x)
        }
    };
    let mut t = Toy::new(f, 0.0);
    let out = run(
        &mut t,
        &settings(1.0),
        RULES,
        &Control::new(),
        &mut |_, _| {},
    )
    .unwrap();
    assert!((t.cur - 0.52).abs() < 1e-3, "{}", t.cur);
    assert!(out.jumps >= 1 && out.jumps_undone == 1, "{out:?}");
}

/// Invalid cavities in the first sweeps only (GP-EP on EEG at 16n from the
/// prior) cut η for good, and the contraction crawls; with `regrow` η doubles
/// back once the sweeps are clean: the same fixed point in far fewer sweeps.
#[test]
fn regrow_restores_an_eta_cut_by_transient_rejections() {
    let mut outs = Vec::new();
    for regrow in [false, true] {
        let mut t = Toy::new(|x| 1.0 + 0.5 * (x - 1.0), 0.0);
        t.bad_passes = 5;
        let s = EpSettings {
            regrow,
            extrapolate: false,
            ..settings(0.7)
        };
        let out = run(&mut t, &s, RULES, &Control::new(), &mut |_, _| {}).unwrap();
        assert!((t.cur - 1.0).abs() < 1e-3, "{}", t.cur);
        outs.push(out);
    }
    assert!(outs[0].eta < 0.05, "{:?}", outs[0]);
    assert_eq!(outs[1].eta, 0.7, "{:?}", outs[1]);
    assert!(
        10 * outs[1].sweeps < outs[0].sweeps,
        "{} vs {}",
        outs[1].sweeps,
        outs[0].sweeps
    );
}
