//! The anderson controller's non-progress verdict (`Progress`).
//!
//! A window of `WINDOW` sweeps whose later half's smallest residual is not
//! below its earlier half's shows no contraction. That alone proves
//! nothing (a damped run may oscillate, then slide with Δ/η rising for a
//! window before it turns and converges: claims' CV folds), so a window
//! without contraction only *classifies* the run:
//! - not straight (the mean's net move over the window is less than
//!   `STRAIGHT` of the way it travelled): a cycle, which a smaller step may
//!   remove (`Judged::Cycle`; the run halves η once per regrowth);
//! - straight: a drift, which a smaller step only slows (no halving).
//!
//! The verdict itself needs the evidence of a horizon that grows with the
//! sweeps spent: at least `2·WINDOW` sweeps at one η whose later half never
//! got below the earlier half's best residual (`NoContraction`), or a
//! contraction whose projected end lies beyond the budget and has not come
//! nearer over a window (`TooSlow`). A straight drift thus ends after
//! `2·WINDOW` sweeps; a cycle after one window, a halving and two windows
//! at the halved step.
//!
//! An orbit needs no window (`Progress::orbit`): the length of q's step
//! compared with itself a short period back barely changes (by a tenth of
//! the contraction the budget needs) and the mean does not move straight.
//! A damped run on a periodic or circling state shows that; a slide (its
//! steps shorten), a drift (straight) or a wander (steps change by tens of
//! percent a sweep) does not.

use std::collections::VecDeque;

use serde::{Deserialize, Serialize};

use super::super::sweep_state::Marginal;

/// Accepted steps of the verdict's window.
pub const WINDOW: usize = 24;
/// A window without contraction is a drift, not a cycle, when the mean's
/// net move across it is at least this share of the way it travelled
/// (period-2 oscillations: < 0.1; claims' early oscillation 0.39; a drift 1).
pub const STRAIGHT: f64 = 0.5;

/// Why a run makes no progress.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum NonProgress {
    /// The residual's best value did not improve over the later half of
    /// the sweeps at this η (at least `2·WINDOW`): a cycle or a drift.
    NoContraction { ratio: f64 },
    /// It falls, too slowly to reach the tolerance within the sweeps left.
    TooSlow { rate: f64, needed: f64, left: usize },
    /// The run sits on an orbit that survived the halving of η: over the
    /// last `WINDOW / 2` plain steps at this η, q's step one period back
    /// differs in length by at most `change` a sweep (in log), far less
    /// than the contraction the budget needs, and the mean did not move
    /// straight.
    Orbit { period: usize, change: f64 },
}

impl NonProgress {
    pub fn describe(&self) -> String {
        match self {
            NonProgress::NoContraction { ratio } => format!(
                "no progress: over the sweeps at this step (at least {}) the smallest Δ/η of the \
                 later half is {ratio:.3}× the earlier half's (a cycle or a drift: no fixed point \
                 in reach at this γ)",
                2 * WINDOW
            ),
            NonProgress::TooSlow { rate, needed, left } => format!(
                "no progress: Δ/η contracts by {rate:.4} a sweep, {needed:.0} more sweeps to the \
                 tolerance but {left} left"
            ),
            NonProgress::Orbit { period, change } => format!(
                "no progress: an orbit survived the halving of η (q's step one period of \
                 {period} back differs in length by at most {change:.1e} a sweep in log, the \
                 mean not moving straight: no fixed point in reach at this γ)"
            ),
        }
    }
}

/// What a judged sweep says (`Progress::step_at`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Judged {
    /// A window without contraction that is not straight: a smaller step
    /// may remove the cycle (the run halves η while it may; else the
    /// verdict, `ratio` as in `NoContraction`).
    Cycle { ratio: f64 },
    /// q's steps are stationary up to a short period and the mean does not
    /// move straight (`Progress::orbit`): an orbit of the damped map, which a
    /// smaller step may remove (the run halves η once; else the verdict).
    Orbit { period: usize, change: f64 },
    /// The run cannot converge at this η.
    Stop(NonProgress),
}

/// The verdict's state over a run (reset when η changes).
#[derive(Debug, Default)]
pub struct Progress {
    /// (sweep, r of its plain step; None for a mixed one) over the last
    /// `WINDOW` sweeps.
    window: VecDeque<(usize, Option<f64>)>,
    /// The projected sweeps to the goal at each of the last `WINDOW` + 1
    /// judged steps (from the first full window on).
    needed: VecDeque<f64>,
    /// q at the window's sweeps and the way travelled up to it (in sds).
    path: VecDeque<(usize, Marginal, f64)>,
    /// (sweep, r) of every plain step at this η (the horizon).
    plain: Vec<(usize, f64)>,
    /// (sweep, how far q moved from the sweep before, in sds) of the last
    /// plain steps at this η (`orbit`).
    steps: Vec<(usize, f64)>,
}

impl Progress {
    pub fn reset(&mut self) {
        self.window.clear();
        self.needed.clear();
        self.path.clear();
        self.plain.clear();
        self.steps.clear();
    }

    /// A plain step with residual `r` = Δ/η, one sweep after the last
    /// (`step_at`, no marginals: a window without contraction is a drift).
    #[cfg(test)]
    pub fn step(&mut self, r: f64, goal: f64, left: usize) -> Option<Judged> {
        let sweep = self.window.back().map_or(0, |w| w.0 + 1);
        self.step_at(sweep, Some(r), None, goal, left)
    }

    /// The mean's net move over the window's path / the way travelled (1
    /// without a path).
    pub fn straightness(&self) -> f64 {
        self.straightness_since(0)
    }

    /// `straightness` over the path from sweep `from` on.
    fn straightness_since(&self, from: usize) -> f64 {
        match (self.path.iter().find(|p| p.0 >= from), self.path.back()) {
            (Some(a), Some(b)) if b.2 > a.2 => b.1.distance(&a.1) / (b.2 - a.2),
            _ => 1.0,
        }
    }

    /// The best plain r of the window's sweeps from `from + half` on over
    /// the best of `from..from + half`: None when the earlier has none.
    fn late_over_early(&self, from: usize, half: usize) -> Option<f64> {
        let min = |early: bool| {
            self.window
                .iter()
                .filter(|w| w.0 >= from && (w.0 < from + half) == early)
                .filter_map(|w| w.1)
                .fold(f64::INFINITY, f64::min)
        };
        let (early, late) = (min(true), min(false));
        (!early.is_infinite()).then_some(late / early)
    }

    /// The best plain r over the later half of the sweeps at this η over
    /// the earlier half's, when it is not below 1 with at least `2·WINDOW`
    /// of them: the horizon grows with the sweeps spent, so a transient
    /// that turns within as many sweeps as it took is not condemned.
    ///
    /// Not while r falls: a last plain step below the `RATE_SPAN` − 1
    /// before it is a slide that has turned just before the horizon ended
    /// (EEG's folds at n/4).
    fn stalled(&self) -> Option<f64> {
        let (first, last) = (self.plain.first()?, self.plain.last()?);
        if last.0 + 1 < first.0 + 2 * WINDOW {
            return None;
        }
        let recent = &self.plain[self.plain.len().saturating_sub(RATE_SPAN)..];
        if recent.len() == RATE_SPAN && recent[..RATE_SPAN - 1].iter().all(|p| p.1 > last.1) {
            return None;
        }
        let mid = first.0 + (last.0 + 1 - first.0) / 2;
        let best = |early: bool| {
            self.plain
                .iter()
                .filter(|p| (p.0 < mid) == early)
                .map(|p| p.1)
                .fold(f64::INFINITY, f64::min)
        };
        let ratio = best(false) / best(true);
        (ratio.is_nan() || ratio >= 1.0).then_some(ratio)
    }

    /// Sweep `sweep` was accepted at q (None: not tracked): a plain step
    /// with residual `r` = Δ/η, or a mixed step (None: no step of the
    /// damped map, left out of the trend, as is an undone one, whose plain
    /// step replaces it at the same sweep); `goal` the convergence threshold
    /// of r (tol), `left` the sweeps left. The window spans `WINDOW` sweeps,
    /// so the verdict's timing does not depend on how many of them mixed.
    ///
    /// Too slow is said only of a projection that has stopped improving:
    /// a window earlier it ended no later (the projected end came less than
    /// a window nearer): a damped run's rate often improves after a slow
    /// transient (spike-and-slab Glass at 2n).
    pub fn step_at(
        &mut self,
        sweep: usize,
        r: Option<f64>,
        q: Option<Marginal>,
        goal: f64,
        left: usize,
    ) -> Option<Judged> {
        match self.window.back_mut() {
            Some(b) if b.0 == sweep => b.1 = r,
            _ => self.window.push_back((sweep, r)),
        }
        while self.window.front().is_some_and(|f| f.0 + WINDOW <= sweep) {
            self.window.pop_front();
        }
        if let Some(r) = r {
            match self.plain.last_mut() {
                Some(p) if p.0 == sweep => p.1 = r,
                _ => self.plain.push((sweep, r)),
            }
        }
        if let Some(q) = q {
            if self.path.back().is_some_and(|p| p.0 == sweep) {
                self.path.pop_back();
            }
            let back = self.path.back().map(|p| (p.0, p.2, q.distance(&p.1)));
            if let (Some(_), Some((at, _, d))) = (r, back)
                && at + 1 == sweep
            {
                if self.steps.last().is_some_and(|s| s.0 == sweep) {
                    self.steps.pop();
                }
                self.steps.push((sweep, d));
                if self.steps.len() > WINDOW {
                    self.steps.remove(0);
                }
            }
            let way = back.map_or(0.0, |(_, way, d)| way + d);
            self.path.push_back((sweep, q, way));
            while self.path.front().is_some_and(|f| f.0 + WINDOW < sweep) {
                self.path.pop_front();
            }
        }
        if let Some(v) = self.orbit(goal, left) {
            return Some(v);
        }
        let first = self.window.front().expect("just pushed").0;
        if first + WINDOW != sweep + 1 {
            return None;
        }
        // The last plain step's r (the window is judged at every sweep).
        let now = self.window.iter().rev().find_map(|w| w.1)?;
        let half = WINDOW / 2;
        let ratio = self.late_over_early(first, half)?;
        if let Some(ratio) = self.stalled() {
            return Some(Judged::Stop(NonProgress::NoContraction { ratio }));
        }
        if ratio.is_nan() || ratio >= 1.0 {
            return (self.straightness() < STRAIGHT).then_some(Judged::Cycle { ratio });
        }
        let rate = ratio.powf(1.0 / half as f64);
        let needed = ((goal / now).ln() / rate.ln()).max(0.0);
        self.needed.push_back(needed);
        let then = (self.needed.len() > WINDOW).then(|| self.needed.pop_front().expect("full"));
        // The projected end (sweep + needed) came a window nearer or more
        // over the last window: improving, wait.
        let too_slow =
            needed > left as f64 && then.is_some_and(|then| needed > then - 2.0 * WINDOW as f64);
        too_slow.then_some(Judged::Stop(NonProgress::TooSlow { rate, needed, left }))
    }

    /// An orbit: over the last `WINDOW / 2` plain steps at this η, each one
    /// sweep after the last, the length of q's step (in sds) compared with
    /// itself one period p ≤ `RATE_SPAN` back changes by at most `change` a
    /// sweep (in log), less than the contraction the budget needs
    /// (ln(r/goal) over the sweeps left) by the margin `ORBIT_MARGIN`, and
    /// the mean does not move straight. That is a periodic or circling
    /// state (the steps of a rotation have one length; Δ, a largest
    /// coordinate, need not repeat), not progress: a slide that converges
    /// shortens its steps, a straight drift is judged by the horizon (a
    /// saturated slide keeps its step too), and a wander's steps change by
    /// tens of percent a sweep. So a limit cycle gets its verdict within
    /// about `WINDOW` sweeps of each η, not after the horizon.
    fn orbit(&self, goal: f64, left: usize) -> Option<Judged> {
        let span = WINDOW / 2 + RATE_SPAN;
        let tail = self.steps.get(self.steps.len().checked_sub(span)?..)?;
        let (first, last) = (tail[0].0, tail[span - 1].0);
        let now = self.plain.last()?;
        if last + 1 != first + span || now.0 != last || now.1 <= goal || left == 0 {
            return None;
        }
        let need = (now.1 / goal).ln() / left as f64;
        let straight = self.straightness_since(tail[RATE_SPAN].0.saturating_sub(1));
        if !(need.is_finite() && straight < STRAIGHT) {
            return None;
        }
        (1..=RATE_SPAN).find_map(|period| {
            let change = tail[RATE_SPAN..]
                .iter()
                .zip(&tail[RATE_SPAN - period..])
                .map(|(a, b)| (a.1 / b.1).ln().abs() / period as f64)
                .fold(0.0, |m, c| if c > m || c.is_nan() { c } else { m });
            (change * ORBIT_MARGIN < need).then_some(Judged::Orbit { period, change })
        })
    }

    /// Sweeps plain damping still needs to bring r to `goal` at the rate of
    /// its plain steps over the last `RATE_SPAN` or more sweeps (infinite
    /// when r does not fall).
    pub fn sweeps_to(&self, goal: f64) -> f64 {
        let mut plain = self
            .window
            .iter()
            .rev()
            .filter_map(|w| w.1.map(|r| (w.0, r)));
        let Some((s1, now)) = plain.next() else {
            return f64::INFINITY;
        };
        let Some((s0, then)) = plain.find(|w| w.0 + RATE_SPAN <= s1) else {
            return f64::INFINITY;
        };
        let rate = (now / then).powf(1.0 / (s1 - s0) as f64);
        if rate.is_nan() || rate >= 1.0 {
            return f64::INFINITY;
        }
        ((goal / now).ln() / rate.ln()).max(0.0)
    }
}

/// Steps over which `Progress::sweeps_to` measures plain damping's rate;
/// also the longest period `Progress::orbit` looks for.
const RATE_SPAN: usize = 4;
/// An orbit's steps change by less than this share of the contraction the
/// budget needs (`Progress::orbit`).
const ORBIT_MARGIN: f64 = 10.0;
