//! Spike-and-slab's side of the anderson controller's mixing (`controller`).
//! The mixed vector is the pair sites and the prior sites (u, v), taken in
//! the phase a pass sees them: a slot's x is (P_k, S_{k−1}), the pair sites
//! and the prior sites the update to S_k started from, and its G(x) is
//! (trial P_{k+1}, S_k). x ↦ G(x) is a sweep with its prior half first, so
//! its fixed points are the sweep's, and every part of G is known when the
//! pass has written the trial. A mixed point (P, S) replaces the trial and
//! the current prior sites; `complete_sweep` then updates the prior sites
//! from it, as after a plain step. (Mixing P alone, the prior sites following
//! the mixed q, left their slow mode to damping.) While the controller mixes,
//! every prior site steps at the sweep's η (`SiteSteps::mixing`): per-site
//! steps that change every sweep change the map whose secant the history
//! fits, and the period-2 cycles they damp are what the mixing removes.

use super::prior_sites::PriorSites;
use super::sweep::{LikelihoodSites, SsSweep};
use crate::engine::ep::controller::{Mixed, mixed_value};

impl<L: LikelihoodSites> SsSweep<'_, L> {
    fn lik_len(&self, len: usize) -> usize {
        len - 2 * self.sites.u.len()
    }

    pub(super) fn mixed_len(&self) -> Option<usize> {
        Some(self.lik.mix_len()? + 2 * self.sites.u.len())
    }

    /// `SweepState::stage_trial` on the whole vector (the module docs).
    pub(super) fn stage(&mut self, slot: usize, g: &mut [f64], at: &[usize], x: &mut [f64]) -> f64 {
        let (lp, d) = (self.lik_len(g.len()), self.sites.u.len());
        let i = at.partition_point(|&j| j < lp);
        let (gp, gs) = g.split_at_mut(lp);
        let (xp, xs) = x.split_at_mut(i);
        self.steps.mixing = true;
        let mut r2 = self.lik.stage_trial(slot, gp, &at[..i], xp);
        let (cur, prev) = (&*self.sites, &self.sites_prev);
        gs[..d].copy_from_slice(&cur.u);
        gs[d..].copy_from_slice(&cur.v);
        for (a, b) in cur.u.iter().chain(&cur.v).zip(prev.u.iter().chain(&prev.v)) {
            r2 += (a - b) * (a - b);
        }
        for (xj, &j) in xs.iter_mut().zip(&at[i..]) {
            let k = j - lp;
            *xj = if k < d { prev.u[k] } else { prev.v[k - d] };
        }
        r2
    }

    /// `SweepState::mix_trial`: the pair sites' trial and the current prior
    /// sites ← the mixed point (the prior sites before it kept for `restore`).
    pub(super) fn mix(&mut self, mixed: Mixed<'_>) -> bool {
        let d = self.sites.u.len();
        let lp = self.lik_len(mixed.0[mixed.1[0].0].len());
        let s: Vec<f64> = (lp..lp + 2 * d).map(|e| mixed_value(mixed, e)).collect();
        if !(self.lik.mix_trial(mixed) && s.iter().all(|v| v.is_finite())) {
            return false;
        }
        self.unmixed = Some((self.sites.clone(), self.sites_prev.clone()));
        self.sites.u.copy_from_slice(&s[..d]);
        self.sites.v.copy_from_slice(&s[d..]);
        true
    }

    /// `SweepState::load_current`: current ← G staged under `slot`, the
    /// prior sites its S_k (the start of the update `complete_sweep` does).
    pub(super) fn load(&mut self, g: &[f64], slot: usize) {
        let (lp, d) = (self.lik_len(g.len()), self.sites.u.len());
        self.lik.load_current(&g[..lp], slot);
        self.sites.u.copy_from_slice(&g[lp..lp + d]);
        self.sites.v.copy_from_slice(&g[lp + d..]);
        self.sites_prev.clone_from(self.sites);
        (self.scaled, self.unmixed) = (false, None);
    }

    /// `SweepState::restore`: back to the rollback point, whose prior sites
    /// a mixed step replaced (else the sweep's start).
    pub(super) fn back(&mut self) {
        self.lik.restore();
        match self.unmixed.take() {
            Some((s, p)) => {
                *self.sites = s;
                self.sites_prev = p;
            }
            None => self.sites.clone_from(&self.sites_prev),
        }
        self.scaled = false;
    }

    /// `SweepState::scale_step`: the prior sites' step of the sweep is
    /// scaled with the pair sites' (the secant extrapolates the whole
    /// sweep; 1/f undoes it); the next `complete_sweep` only rebuilds.
    pub(super) fn scale(&mut self, f: f64) -> Option<f64> {
        let before = self.lik.scale_step(f)?;
        let base: &PriorSites = &self.sites_prev;
        self.sites.scale_from(base, f);
        self.scaled = true;
        Some(before)
    }
}
