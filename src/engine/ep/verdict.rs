//! The driver's early verdict: a run whose drift windows go nowhere.
//!
//! Why: the stall rule calls a stall whose mean kept its direction from sweep
//! to sweep a drift and does not halve η (a drift towards a distant fixed
//! point only slows down with smaller steps). A slow cycle looks the same
//! sweep to sweep: spike-and-slab EP on Colon (split 0, from the prior at
//! 2n, and on its warm path at n/2) circles with a period of ~50 sweeps,
//! ‖mean‖ going 0.05 → 0.6 → 0.05, Δ between 0.02 and 1 for 1000 sweeps at
//! η = 0.7 (and 0.2 or 0.35: a smaller step does not help). A true drift
//! moves the mean in a straight line across a window (Glass split 10 at n/2:
//! Δ/η rising for 13 windows while the mean slid straight towards a spike,
//! then converging at sweep 689). So a drift window counts as *wandering*
//! when the mean's net move across it is a small share of the way it
//! travelled (`STRAIGHTNESS`) and its smallest Δ/η is not below half of
//! every earlier window's (no progress); `WINDOWS` of them in a row end the
//! run. Used only where a fallback exists (`EpSettings::early_verdict`).

use serde_json::{Value, json};

use super::sweep_state::Marginal;

/// Wandering drift windows in a row before the verdict.
pub const WINDOWS: usize = 3;
/// A window is wandering when net move / way travelled is below this.
pub const STRAIGHTNESS: f64 = 0.3;

/// The rule's state over a run.
#[derive(Debug, Default)]
pub struct Wander {
    /// The mean and sds where the current window started.
    start: Option<Marginal>,
    /// The way travelled in the current window (per-sweep moves in sds).
    way: f64,
    /// Smallest Δ/η of every earlier window.
    best_ratio: Option<f64>,
    /// Wandering windows in a row.
    in_row: usize,
    /// (sweep, straightness, Δ/η) of every drift window, for the diagnostics.
    windows: Vec<(usize, f64, f64)>,
}

impl Wander {
    /// A window starts at `q` (the run's start, or after a stall or drift window).
    pub fn start_window(&mut self, q: Marginal) {
        (self.start, self.way) = (Some(q), 0.0);
    }

    /// An accepted sweep moved q from `prev` to `now`.
    pub fn step(&mut self, prev: &Marginal, now: &Marginal) {
        self.way += now.distance(prev);
    }

    /// A stall window (a cycle: the cycle rule's business) ended with the
    /// smallest Δ/η `ratio`.
    pub fn stall_window(&mut self, ratio: f64) {
        self.in_row = 0;
        self.best_ratio = Some(self.best_ratio.map_or(ratio, |b| b.min(ratio)));
    }

    /// A drift window ended at `now` with the smallest Δ/η `ratio`; true when
    /// it is the `WINDOWS`-th wandering one in a row.
    pub fn drift_window(&mut self, sweep: usize, now: &Marginal, ratio: f64) -> bool {
        let straight = match &self.start {
            Some(q0) if self.way > 0.0 => (now.distance(q0) / self.way).min(1.0),
            _ => 1.0,
        };
        let flat = self.best_ratio.is_some_and(|b| ratio > 0.5 * b);
        self.in_row = if flat && straight < STRAIGHTNESS {
            self.in_row + 1
        } else {
            0
        };
        self.best_ratio = Some(self.best_ratio.map_or(ratio, |b| b.min(ratio)));
        self.windows.push((sweep, straight, ratio));
        self.in_row >= WINDOWS
    }

    /// What the rule saw, for the failure's diagnostics.
    pub fn detail(&self, sweep: usize) -> Value {
        let last = &self.windows[self.windows.len().saturating_sub(2 * WINDOWS)..];
        json!({
            "rule": "wandering",
            "sweep": sweep,
            "windows_in_row": self.in_row,
            "straightness_below": STRAIGHTNESS,
            "window_sweeps": last.iter().map(|w| w.0).collect::<Vec<_>>(),
            "straightness": last.iter().map(|w| w.1).collect::<Vec<_>>(),
            "delta_over_eta": last.iter().map(|w| w.2).collect::<Vec<_>>(),
        })
    }

    /// The last wandering windows' straightness and Δ/η (the message).
    pub fn summary(&self) -> String {
        let last = &self.windows[self.windows.len().saturating_sub(self.in_row)..];
        let f = |v: Vec<String>| v.join(", ");
        format!(
            "{} drift windows in a row with net move / way travelled {} (< {STRAIGHTNESS}) \
             and Δ/η {}, none below half the earlier windows' smallest",
            self.in_row,
            f(last.iter().map(|w| format!("{:.3}", w.1)).collect()),
            f(last.iter().map(|w| format!("{:.2e}", w.2)).collect()),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn q(m: &[f64]) -> Marginal {
        Marginal {
            mean: m.to_vec(),
            var: vec![1.0; m.len()],
        }
    }

    /// A straight move is not wandering, a circle is; only flat windows count.
    #[test]
    fn straightness_and_progress() {
        let mut w = Wander::default();
        w.start_window(q(&[0.0, 0.0]));
        w.step(&q(&[0.0, 0.0]), &q(&[1.0, 0.0]));
        w.step(&q(&[1.0, 0.0]), &q(&[2.0, 0.0]));
        assert!(!w.drift_window(20, &q(&[2.0, 0.0]), 1.0));
        assert_eq!(w.windows[0].1, 1.0);
        for k in 0..WINDOWS {
            // Around a square and back: net move 0.
            w.start_window(q(&[0.0, 0.0]));
            for (a, b) in [([0.0, 0.0], [1.0, 0.0]), ([1.0, 0.0], [1.0, 1.0])] {
                w.step(&q(&a), &q(&b));
            }
            w.step(&q(&[1.0, 1.0]), &q(&[0.0, 0.0]));
            let fired = w.drift_window(40 + 20 * k, &q(&[0.0, 0.0]), 0.9);
            assert_eq!(fired, k + 1 == WINDOWS, "window {k}");
        }
        // Progress (Δ/η halved) resets the count.
        w.start_window(q(&[0.0, 0.0]));
        w.step(&q(&[0.0, 0.0]), &q(&[1.0, 0.0]));
        assert!(
            w.summary().starts_with("3 drift windows in a row"),
            "{}",
            w.summary()
        );
        assert!(!w.drift_window(200, &q(&[0.0, 0.0]), 0.1));
        let d = w.detail(200);
        assert_eq!(d["rule"], "wandering");
        assert_eq!(d["windows_in_row"], 0);
    }
}

#[cfg(test)]
#[path = "verdict_tests.rs"]
mod driver_tests;
