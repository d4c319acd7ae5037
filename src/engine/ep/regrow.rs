//! Regrowth of an η cut by a failed step in the controller's loop.
//!
//! Sweeps from the prior overshoot at a large γ (invalid cavities at η =
//! 0.7) and halve η, yet nearer the fixed point the same sites take far
//! larger steps: kept cut, a run crawls at η ≈ 0.02 (row `ep-regrow-eeg`).
//! η doubles back after `after` clean sweeps in a row, each at a new
//! smallest Δ, up to `cap` (the damping); a failure after a regrowth
//! doubles `after`, backing off where the larger step keeps failing, and
//! caps later regrowths below the failed η.

use super::settings::EpSettings;

pub struct Regrow {
    cap: f64,
    clean: usize,
    after: usize,
    grown: bool,
}

/// Clean sweeps before the first regrowth.
const REGROW_AFTER: usize = 5;

impl Regrow {
    pub fn new(s: &EpSettings) -> Regrow {
        Regrow {
            cap: s.eta,
            clean: 0,
            after: REGROW_AFTER,
            grown: false,
        }
    }

    /// A failed step at `failed` cut η.
    pub fn cut(&mut self, failed: f64) {
        self.clean = 0;
        if std::mem::take(&mut self.grown) {
            self.after *= 2;
            self.cap = self.cap.min(0.5 * failed);
        }
    }

    /// An accepted sweep at `eta` (a new smallest Δ or not): the next η.
    pub fn next(&mut self, eta: f64, new_best: bool) -> f64 {
        self.clean = if new_best { self.clean + 1 } else { 0 };
        if self.clean < self.after || eta >= self.cap {
            return eta;
        }
        (self.clean, self.grown) = (0, true);
        (2.0 * eta).min(self.cap)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A regrown η rejected again caps later regrowths below it; a rejection
    /// before any regrowth (the first sweeps' overshoot) does not.
    #[test]
    fn a_failed_regrowth_caps_later_ones() {
        let mut r = Regrow::new(&EpSettings::default());
        r.cut(0.7);
        let grow = |r: &mut Regrow, eta: f64| {
            let mut next = eta;
            for _ in 0..100 {
                next = r.next(next, true);
            }
            next
        };
        assert_eq!(grow(&mut r, 0.175), 0.7);
        r.cut(0.7);
        assert_eq!(grow(&mut r, 0.175), 0.35);
    }
}
