//! The early verdict through the driver, on two-coordinate toys: a slow
//! cycle (no fixed point; the stall rule sees a drift) gets the verdict
//! within a few windows, a slow straight drift that converges does not.

use super::super::driver::run;
use super::super::kernel::PassStats;
use super::super::settings::EpSettings;
use super::super::sweep_state::{Marginal, Rules, SweepState};
use super::WINDOWS;
use crate::engine::interface::{Control, EngineError};

type Map = fn([f64; 2]) -> [f64; 2];

/// x ← (1 − η)x + η f(x), with the driver's three states.
struct Plane {
    f: Map,
    cur: [f64; 2],
    prev: Option<[f64; 2]>,
    older: Option<[f64; 2]>,
    trial: [f64; 2],
    q: [f64; 2],
}

impl Plane {
    fn new(f: Map, start: [f64; 2]) -> Plane {
        Plane {
            f,
            cur: start,
            prev: None,
            older: None,
            trial: start,
            q: start,
        }
    }
}

impl SweepState for Plane {
    fn label(&self) -> &'static str {
        "plane EP"
    }
    fn ensure_q(&mut self) -> bool {
        self.q = self.cur;
        true
    }
    fn reset(&mut self) {}
    fn is_cold(&self) -> bool {
        true
    }
    fn pass(&mut self, eta: Option<f64>, _evidence: bool) -> PassStats {
        if let Some(eta) = eta {
            let fx = (self.f)(self.cur);
            self.trial = [0, 1].map(|k| (1.0 - eta) * self.cur[k] + eta * fx[k]);
        }
        PassStats::default()
    }
    fn accept(&mut self) {
        (self.older, self.prev, self.cur) = (self.prev, Some(self.cur), self.trial);
    }
    fn shrink(&mut self) {
        let p = self.prev.expect("rollback");
        self.cur = [0, 1].map(|k| 0.5 * (p[k] + self.cur[k]));
    }
    fn can_roll_back(&self) -> bool {
        self.prev.is_some()
    }
    fn forget_rollback(&mut self) {
        self.prev = None;
    }
    fn complete_sweep(&mut self, _eta: f64, _warmup: bool) -> bool {
        self.q = self.cur;
        true
    }
    fn overrelax(&mut self, factor: f64) -> bool {
        let p = self.prev.expect("rollback");
        self.cur = [0, 1].map(|k| p[k] + factor * (self.cur[k] - p[k]));
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
            mean: self.q.to_vec(),
            var: vec![1.0, 1.0],
        }
    }
}

const RULES: Rules = Rules {
    evidence_every_sweep: true,
    drift: true,
};

/// A rotation by 0.45 rad, stretched 3.5%: the damped map turns by 0.32
/// rad a sweep (one turn per stall window) and grows by 0.3% a sweep, so Δ
/// never makes a new minimum and consecutive moves keep their direction.
fn slow_cycle(x: [f64; 2]) -> [f64; 2] {
    let (c, s) = (0.45f64.cos() * 1.035, 0.45f64.sin() * 1.035);
    [c * x[0] - s * x[1], s * x[0] + c * x[1]]
}

/// A steady straight move along the first coordinate, then a contraction to 3.
fn straight_drift(x: [f64; 2]) -> [f64; 2] {
    let x0 = if x[0] < 3.0 {
        x[0] + 0.02
    } else {
        3.0 + 0.5 * (x[0] - 3.0)
    };
    [x0, x[1]]
}

fn settings(early_verdict: bool) -> EpSettings {
    EpSettings {
        early_verdict,
        ..EpSettings::default()
    }
}

fn failure(e: EngineError) -> serde_json::Value {
    match e {
        EngineError::NotConverged { diagnostics, .. } => diagnostics,
        e => panic!("{e:?}"),
    }
}

/// The slow cycle: without the verdict it runs to the sweep budget (the
/// stall rule calls every window a drift); with it, it ends after the first
/// window and `WINDOWS` wandering ones, saying why.
#[test]
fn a_slow_cycle_gets_the_verdict_within_a_few_windows() {
    let ctl = Control::new();
    let mut t = Plane::new(slow_cycle, [1.0, 0.0]);
    let d = failure(run(&mut t, &settings(false), RULES, &ctl, &mut |_, _| {}).unwrap_err());
    assert_eq!(d["detail"]["reason"], "max sweeps", "{d}");
    let mut t = Plane::new(slow_cycle, [1.0, 0.0]);
    let d = failure(run(&mut t, &settings(true), RULES, &ctl, &mut |_, _| {}).unwrap_err());
    assert_eq!(d["detail"]["reason"], "wandering", "{d}");
    let v = &d["detail"]["verdict"];
    assert_eq!(v["rule"], "wandering");
    let sweep = v["sweep"].as_u64().unwrap() as usize;
    // A window is the 20 stall sweeps after its smallest Δ, and extrapolated
    // steps add a few sweeps (102 here, against 1000 without the verdict).
    assert!(sweep <= 30 * (WINDOWS + 1), "verdict at sweep {sweep}");
    assert_eq!(d["sweeps"].as_u64().unwrap() as usize, sweep);
    let straight = v["straightness"].as_array().unwrap();
    assert!(
        straight
            .iter()
            .rev()
            .take(WINDOWS)
            .all(|s| s.as_f64().unwrap() < 0.3),
        "{v}"
    );
}

/// The straight drift converges with the verdict on, exactly as without it.
#[test]
fn a_slow_straight_drift_is_not_cut() {
    let ctl = Control::new();
    let mut ends = Vec::new();
    for early in [false, true] {
        let mut t = Plane::new(straight_drift, [0.0, 1.0]);
        let out = run(&mut t, &settings(early), RULES, &ctl, &mut |_, _| {}).unwrap();
        assert!((t.cur[0] - 3.0).abs() < 1e-3, "{:?}", t.cur);
        ends.push((out.sweeps, t.cur));
    }
    assert_eq!(ends[0], ends[1]);
}
