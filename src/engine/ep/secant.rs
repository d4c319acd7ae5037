//! The pair sites' side of the controller's secant steps (`controller`):
//! the inner products of the last plain step and the scaled step, with the
//! aggregates of held buffers so that neither the step nor its undo needs a
//! pass over the sites with Z (the aggregates — row and column sums of K
//! and h, K Z_N — are linear in the sites).

use super::kernel::{Aggregates, Op};
use super::{PairEp, Store};
use crate::engine::ep::controller::Mixed;

/// Aggregates of site buffers other than the current one (tagged by buffer),
/// kept while `on` (the controller's runs).
#[derive(Default)]
pub(crate) struct Held {
    pub on: bool,
    slots: Vec<(Option<usize>, Aggregates)>,
    /// The aggregates of the trials in Anderson's history, by its slot.
    mix: Vec<Option<Aggregates>>,
}

impl Held {
    fn slot(&self, b: usize) -> Option<usize> {
        self.slots.iter().position(|(t, _)| *t == Some(b))
    }

    /// Buffer `b` is written: what is held of it is stale.
    pub fn drop_buffer(&mut self, b: usize) {
        for (t, _) in self.slots.iter_mut() {
            if *t == Some(b) {
                *t = None;
            }
        }
    }

    pub fn clear(&mut self) {
        self.slots.clear();
        self.mix.clear();
    }
}

/// a ← base + f·(a − base) on every aggregate.
fn lerp(a: &mut Aggregates, base: &Aggregates, f: f64) {
    let pairs = [
        (&mut a.k_row[..], &base.k_row[..]),
        (&mut a.k_col[..], &base.k_col[..]),
        (&mut a.h_row[..], &base.h_row[..]),
        (&mut a.h_col[..], &base.h_col[..]),
        (a.g.as_mut_slice(), base.g.as_slice()),
    ];
    for (x, b) in pairs {
        for (x, b) in x.iter_mut().zip(b) {
            *x = b + f * (*x - b);
        }
    }
}

/// out ← Σ w·a over `parts`.
fn combine(out: &mut Aggregates, parts: &[(&Aggregates, f64)]) {
    out.k_row.fill(0.0);
    out.k_col.fill(0.0);
    out.h_row.fill(0.0);
    out.h_col.fill(0.0);
    out.g.fill(0.0);
    for (a, w) in parts {
        for (x, v) in out.k_row.iter_mut().zip(&a.k_row) {
            *x += w * v;
        }
        for (x, v) in out.k_col.iter_mut().zip(&a.k_col) {
            *x += w * v;
        }
        for (x, v) in out.h_row.iter_mut().zip(&a.h_row) {
            *x += w * v;
        }
        for (x, v) in out.h_col.iter_mut().zip(&a.h_col) {
            *x += w * v;
        }
        for (x, v) in out.g.as_mut_slice().iter_mut().zip(a.g.as_slice()) {
            *x += w * v;
        }
    }
}

impl PairEp {
    /// Keeps the aggregates of the trial the last update pass wrote under
    /// Anderson's `slot`.
    pub(crate) fn hold_trial(&mut self, slot: usize) {
        let mix = &mut self.held.mix;
        if mix.len() <= slot {
            mix.resize(slot + 1, None);
        }
        // After an update pass `agg` is the trial's.
        match (&mut mix[slot], !self.agg_valid && !self.trial_loaded) {
            (Some(a), true) => a.clone_from(&self.agg),
            (m, true) => *m = Some(self.agg.clone()),
            (m, false) => *m = None,
        }
    }

    /// Anderson's staging of the trial (`SweepState::stage_trial`): its
    /// aggregates held under `slot`, its sites copied into `g` and the
    /// current ones at `at` into `x`; returns ‖trial − current‖².
    pub(crate) fn stage_trial(
        &mut self,
        slot: usize,
        g: &mut [f64],
        at: &[usize],
        x: &mut [f64],
    ) -> f64 {
        self.hold_trial(slot);
        with_store!(&self.store, s => s.trial_out(g, at, x))
    }

    /// The trial ← the mixed point Σ w·G(x_slot), written in place, its
    /// aggregates the same combination of the held ones when all are held
    /// and the sites f64 (else rebuilt by a pass after `accept`).
    pub(crate) fn mix_trial(&mut self, (g, weights): Mixed<'_>) -> bool {
        let next = with_store!(&self.store, st => st.next());
        self.held.drop_buffer(next);
        let parts: Vec<(&[f64], f64)> = weights.iter().map(|&(i, w)| (&g[i][..], w)).collect();
        let finite = with_store!(&mut self.store, st => st.mix_trial(&parts));
        self.trial_loaded = true;
        self.sites_part = None;
        let f64_sites = matches!(self.store, Store::F64(_));
        let mix = &self.held.mix;
        let held: Option<Vec<(&Aggregates, f64)>> = weights
            .iter()
            .map(|&(i, w)| mix.get(i).and_then(|a| a.as_ref()).map(|a| (a, w)))
            .collect();
        if let (Some(held), true) = (held, f64_sites) {
            combine(&mut self.agg, &held);
            // `accept` keeps them as the current state's.
            self.trial_loaded = false;
        }
        finite
    }

    /// Current ← `g`, the trial staged under `slot` (the rollback point
    /// kept), with its held aggregates (f64 sites); q must be rebuilt.
    pub(crate) fn load_current(&mut self, g: &[f64], slot: usize) {
        let (_, cur, _) = self.roles();
        self.held.drop_buffer(cur);
        with_store!(&mut self.store, st => st.set_current(g));
        let held = self.held.mix.get(slot).and_then(|a| a.as_ref());
        match (held, matches!(self.store, Store::F64(_))) {
            (Some(a), true) => {
                self.agg.clone_from(a);
                self.agg_valid = true;
            }
            _ => self.agg_valid = false,
        }
        self.sites_part = None;
        self.q = None;
    }

    fn roles(&self) -> (Option<usize>, usize, usize) {
        with_store!(&self.store, s => (s.prev, s.cur, s.next()))
    }

    /// Before a pass of `op` (while `held.on`): drops what the pass
    /// overwrites; an update keeps the current state's aggregates (it
    /// becomes the rollback point), in the slot not holding the rollback
    /// point's.
    pub(super) fn hold_before(&mut self, op: Op) {
        let (prev, cur, next) = self.roles();
        match op {
            Op::Update { .. } => {
                self.held.drop_buffer(next);
                if !self.agg_valid {
                    return;
                }
                while self.held.slots.len() < 2 {
                    self.held.slots.push((None, self.agg.clone()));
                }
                let i = (0..2)
                    .find(|&i| prev.is_none() || self.held.slots[i].0 != prev)
                    .expect("two slots, one rollback point");
                std::mem::swap(&mut self.agg, &mut self.held.slots[i].1);
                self.held.slots[i].0 = Some(cur);
            }
            Op::Shrink | Op::Relax(_) => self.held.drop_buffer(cur),
            Op::Check | Op::Aggregate => {}
        }
    }

    /// The current state's aggregates from the held ones, if there; true
    /// when `agg` then holds them.
    pub(super) fn take_held(&mut self) -> bool {
        if self.agg_valid {
            return true;
        }
        let (_, cur, _) = self.roles();
        let Some(i) = self.held.slot(cur) else {
            return false;
        };
        std::mem::swap(&mut self.agg, &mut self.held.slots[i].1);
        self.held.slots[i].0 = None;
        self.agg_valid = true;
        true
    }

    /// ‖trial − current‖² over the sites, the trial the last update pass
    /// wrote (`SiteBuffers::residual2`).
    pub(crate) fn residual2(&self) -> Option<f64> {
        (!self.trial_loaded).then(|| with_store!(&self.store, s => s.residual2()))
    }

    /// Current ← rollback + f·(current − rollback) with the aggregates
    /// combined the same way when both ends' are known and the sites are
    /// f64 (f32 sites: the combination would not be the stored values'),
    /// else by the kernel's pass; q must be rebuilt. Returns ‖current −
    /// rollback‖² before.
    pub(crate) fn scale_step(&mut self, g: f64, f: f64) -> f64 {
        let (prev, cur, _) = self.roles();
        let prev = prev.expect("a rollback point");
        let f64_sites = matches!(self.store, Store::F64(_));
        let base = self.held.slot(prev);
        match base {
            Some(i) if f64_sites && self.take_held() => {
                let step = with_store!(&mut self.store, s => s.scale_cur(f));
                lerp(&mut self.agg, &self.held.slots[i].1, f);
                self.held.drop_buffer(cur);
                self.sites_part = None;
                self.q = None;
                step
            }
            _ => {
                let step = with_store!(&self.store, s => s.step2());
                self.relax_current(g, f);
                step
            }
        }
    }
}

#[cfg(test)]
#[path = "secant_tests.rs"]
mod tests;
