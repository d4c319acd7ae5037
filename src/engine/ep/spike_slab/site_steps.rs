//! Per-site steps of the prior sites. §5: once the negative-site fix recurs,
//! large steps can fall into a period-2 cycle (DNA at γ = n_train), so such
//! sites get step `fix_eta`. Here the cap is per site (only the sites whose
//! fix recurs), and a capped site's step then follows its own behaviour: halved
//! (down to `floor`) when its proposed change of v_k flips sign from one sweep
//! to the next (the cycle), ×1.25 (up to the sweep's η) while it keeps its
//! direction. On DNA at γ = 400 the two sites fixed at the fixed point move
//! monotonically in the tail: with the step held at 0.2 they made the last ~40
//! sweeps contract by only 0.83 per sweep. The fixed point does not depend on
//! the steps; convergence is judged on Δ_t/η_t with η_t the smallest step.
//! `SiteStepRule::Strict` never lets a capped site grow above `fix_eta`: §5 to
//! the letter (62 instead of 46 sweeps on DNA, same fixed point).

pub use super::super::settings::SiteStepRule;
use super::sweep::SsSettings;

#[derive(Debug, Clone)]
pub struct SiteSteps {
    fix_eta: f64,
    /// The largest step of a capped site: the sweep's η (adaptive) or `fix_eta`.
    grow_to: f64,
    floor: f64,
    fix_sweeps: usize,
    /// Written by each prior-site update: fixed or not, sign of the change of v_k.
    pub fixed: Vec<bool>,
    pub dir: Vec<f64>,
    dir_prev: Vec<f64>,
    fix_count: Vec<usize>,
    capped: Vec<bool>,
    eta: Vec<f64>,
    /// The controller mixes this sweep (`mixing`): every site at the sweep's
    /// step, none adapted.
    pub mixing: bool,
}

impl SiteSteps {
    pub fn new(d: usize, s: &SsSettings) -> SiteSteps {
        SiteSteps {
            fix_eta: s.fix_eta,
            grow_to: match s.site_steps {
                SiteStepRule::Adaptive => f64::INFINITY,
                SiteStepRule::Strict => s.fix_eta,
            },
            floor: s.site_eta_floor.min(s.fix_eta),
            fix_sweeps: s.fix_sweeps.max(1),
            fixed: vec![false; d],
            dir: vec![0.0; d],
            dir_prev: vec![0.0; d],
            fix_count: vec![0; d],
            capped: vec![false; d],
            eta: vec![s.fix_eta; d],
            mixing: false,
        }
    }

    /// Step of site k in a sweep of step `eta`.
    pub fn step(&self, k: usize, eta: f64) -> f64 {
        if self.capped[k] && !self.mixing {
            eta.min(self.eta[k])
        } else {
            eta
        }
    }

    /// The smallest step of a sweep of step `eta` (convergence is judged on it).
    pub fn min_step(&self, eta: f64) -> f64 {
        (0..self.eta.len()).fold(eta, |m, k| m.min(self.step(k, eta)))
    }

    /// After an accepted sweep of step `eta`: adapt the capped sites' steps to
    /// their last two proposed directions, then cap the sites whose fix has
    /// now recurred `fix_sweeps` times.
    pub fn after_sweep(&mut self, eta: f64) {
        for k in 0..self.eta.len() {
            if self.capped[k] {
                self.eta[k] = if self.dir[k] * self.dir_prev[k] < 0.0 {
                    (self.eta[k] * 0.5).max(self.floor)
                } else {
                    (self.eta[k] * 1.25).min(eta).min(self.grow_to)
                };
            }
            self.fix_count[k] += self.fixed[k] as usize;
            if !self.capped[k] && self.fix_count[k] >= self.fix_sweeps {
                self.capped[k] = true;
                self.eta[k] = self.fix_eta;
            }
        }
        self.dir_prev.clone_from(&self.dir);
    }
}
