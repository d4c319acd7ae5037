//! Tests of the sweep loop's acceptance rule (`driver::run`) on
//! one-coordinate toys.

use super::*;
use crate::engine::ep::kernel::PassStats;
use crate::engine::ep::settings::EpSettings;
use crate::engine::ep::sweep_state::{Marginal, Rules, SweepState};
use crate::engine::interface::Control;

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
    fn restore(&mut self) {
        self.cur = self.prev.take().expect("rollback");
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
};

fn settings(eta: f64) -> EpSettings {
    EpSettings {
        eta,
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

/// A state whose cavities are invalid is shrunk towards the last accepted
/// one with η halved. After clean sweeps η regrows to the damping, where this
/// map does not contract, so it is halved again and stays there: the run
/// converges at the halved step.
#[test]
fn an_invalid_state_is_rejected_and_eta_regrows_only_where_it_contracts() {
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
    let grown = etas.iter().position(|&e| e > 0.5).expect("regrown");
    assert!(etas[grown..].iter().all(|&e| e <= 1.0), "{etas:?}");
    let cut = grown + etas[grown..].iter().position(|&e| e <= 0.5).expect("cut");
    assert!(etas[cut..].iter().all(|&e| e == 0.5), "{etas:?}");
    assert!((t.cur - 1.0).abs() < 1e-3 && out.eta == 0.5);
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
