//! The spike-and-slab EP sweep (ALGORITHMS.md §5) as a state of the shared
//! driver (`ep::driver`), generic over the likelihood's sites so that the
//! prior-site machinery can be driven by the AUC pair sites (`PairSites`) or,
//! in tests, by an exact Gaussian likelihood.
//!
//! One sweep from an accepted state t: parallel update of every likelihood site
//! → rebuild (Q positive definite, proper prior tilteds) → parallel update of
//! the d prior sites from that q → rebuild and check. The likelihood sites'
//! cavities of the resulting state are checked by the next sweep's pass, which
//! also yields its evidence: if that check (or any other) fails, the whole
//! sweep is redone from state t with η halved, and η stays halved (§4). A prior
//! site whose negative-site fix recurs (`fix_sweeps` sweeps) gets its own
//! step, capped at `fix_eta` and then adapted (`site_steps`): with the fix,
//! larger steps can cycle (§5). The pair sites keep their η (on DNA at γ = 400
//! capping them too took 155 sweeps instead of 69, same fixed point).
//! A cold start first runs `warmup_sweeps` sweeps of the likelihood sites alone
//! under the initial prior sites: the first pair updates from the prior are
//! huge (Δ ≈ 25 on DNA) and moving the prior sites on them fed ~25 sweeps of
//! oscillation. Converged when `Δ_t < tol·η_t`, η_t the smallest step of any
//! site (never during the warm-up); never on absolute changes.

use serde_json::json;

pub use super::moments::ThetaMoments;
use super::prior_sites::{MixturePrior, PriorSites};
use super::release::update_unfixed;
use super::site_steps::{SiteStepRule, SiteSteps};
use crate::engine::ep::controller::Mixed;
use crate::engine::ep::driver;
use crate::engine::ep::kernel::PassStats;
use crate::engine::ep::posterior::PriorTerms;
use crate::engine::ep::settings::EpSettings;
use crate::engine::ep::sweep_state::{Converged, Marginal, Rules, SweepState, SweepStatus};
use crate::engine::error::NonConvergence;
use crate::engine::interface::{Control, EngineError};
use crate::engine::numerics::normal::LN_2PI;

/// The likelihood part of q: sites with a rollback point, and the rebuild of
/// q = N(m, V) from them and the prior terms.
pub trait LikelihoodSites {
    /// Rebuilds q from the current sites and `prior`; false when Q is not PD.
    fn rebuild(&mut self, prior: &PriorTerms) -> bool;
    #[cfg(test)]
    /// The q of the last successful rebuild, in the likelihood's own
    /// coordinates (θ itself in the primal form).
    fn posterior(&self) -> &crate::engine::ep::posterior::Posterior;
    /// θ's marginals and θ-space evidence terms of that q (what the prior
    /// sites and the evidence need, whatever coordinates EP runs in).
    fn moments(&self) -> &ThetaMoments;
    /// Checks the current sites' cavities under q (`bad` > 0: invalid), sums
    /// their log C when `evidence` (or when `eta` is None) and, with `eta`, writes
    /// the damped update as the trial state.
    fn pass(&mut self, eta: Option<f64>, evidence: bool) -> PassStats;
    /// The trial state becomes current; the current one the rollback point.
    fn accept(&mut self);
    /// Current ← (rollback + current)/2: the last step again with η halved.
    fn shrink(&mut self);
    fn can_roll_back(&self) -> bool;
    fn forget_rollback(&mut self);
    /// Back to the rollback point exactly; q is stale until `rebuild`.
    fn restore(&mut self) {}
    /// All sites to zero.
    fn reset(&mut self);
    /// The controller's mixing of the likelihood sites (`SweepState`'s
    /// methods of the same names; None/false when not supported); the
    /// sweep adds the prior sites to the mixed vector (`mixing`).
    fn mix_len(&self) -> Option<usize> {
        None
    }
    fn stage_trial(&mut self, _slot: usize, _g: &mut [f64], _at: &[usize], _x: &mut [f64]) -> f64 {
        f64::NAN
    }
    fn mix_trial(&mut self, _mixed: Mixed<'_>) -> bool {
        false
    }
    /// Current ← `g`, staged under `slot`; q is stale until `rebuild`.
    fn load_current(&mut self, _g: &[f64], _slot: usize) {}
    fn residual2(&self) -> Option<f64> {
        None
    }
    /// Current ← rollback + f·(current − rollback), returning ‖current −
    /// rollback‖² before; q is stale until `rebuild`.
    fn scale_step(&mut self, _f: f64) -> Option<f64> {
        None
    }
    fn is_cold(&self) -> bool;
    /// Number of sites (for the share of negative ones).
    fn sites(&self) -> usize;
    /// Terms of log Z outside the sites' log C (identical pairs' −g/2 each).
    fn log_z_const(&self) -> f64;
}

/// Settings of a spike-and-slab EP run.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct SsSettings {
    pub ep: EpSettings,
    /// The cap on η once negative-site fixes recur…
    pub fix_eta: f64,
    /// …in this many sweeps (per site; `site_steps`).
    pub fix_sweeps: usize,
    /// log Z_EP at every sweep or only at the end.
    pub evidence_every_sweep: bool,
    /// Sweeps of the likelihood sites alone at a cold start.
    #[serde(default = "default_warmup")]
    pub warmup_sweeps: usize,
    /// Smallest step of a capped prior site whose updates oscillate.
    #[serde(default = "default_site_eta_floor")]
    pub site_eta_floor: f64,
    /// Whether a capped site may grow back above `fix_eta` (`site_steps`).
    #[serde(default)]
    pub site_steps: SiteStepRule,
}

fn default_warmup() -> usize {
    3
}

fn default_site_eta_floor() -> f64 {
    0.1
}

impl Default for SsSettings {
    fn default() -> Self {
        SsSettings {
            ep: EpSettings::default(),
            fix_eta: 0.2,
            fix_sweeps: 3,
            evidence_every_sweep: true,
            warmup_sweeps: default_warmup(),
            site_eta_floor: default_site_eta_floor(),
            site_steps: SiteStepRule::default(),
        }
    }
}

/// One accepted sweep.
pub struct SsSweepInfo<'a> {
    pub sweep: usize,
    pub delta: f64,
    pub log_z: Option<f64>,
    /// The smallest step of the sweep (of a capped prior site's, if smaller).
    pub eta: f64,
    pub negative_share: f64,
    pub skipped: usize,
    pub inclusion: &'a [f64],
    pub elapsed: f64,
    /// θ's marginals in EP's coordinates.
    pub moments: &'a ThetaMoments,
}

/// The pieces of log Z_EP (§5):
/// `Σ log C_ij + Σ_k log C_k + (d/2) log 2π − ½ log|Q| + ½ rᵀQ⁻¹r + const`.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct SsEvidence {
    pub sum_log_c_lik: f64,
    pub sum_log_c_prior: Option<f64>,
    pub log_det_q: f64,
    pub r_v_r: f64,
    pub constant: f64,
    pub dim: usize,
    /// Degenerate likelihood sites skipped (then the evidence is invalid).
    pub skipped: usize,
}

impl SsEvidence {
    /// The evidence of the current state: the likelihood sites' pass `stats`,
    /// the prior sites' Σ log C_k, and q.
    pub fn of<L: LikelihoodSites>(
        lik: &L,
        stats: &PassStats,
        sum_log_c_prior: Option<f64>,
    ) -> Self {
        let q = lik.moments();
        SsEvidence {
            sum_log_c_lik: stats.sum_log_c,
            sum_log_c_prior,
            log_det_q: q.log_det_q,
            r_v_r: q.r_v_r,
            constant: lik.log_z_const(),
            dim: q.mean.len(),
            skipped: stats.skipped,
        }
    }

    pub fn log_z(&self) -> Option<f64> {
        let prior = self.sum_log_c_prior?;
        (self.skipped == 0).then_some(
            self.sum_log_c_lik + prior + 0.5 * self.dim as f64 * LN_2PI - 0.5 * self.log_det_q
                + 0.5 * self.r_v_r
                + self.constant,
        )
    }
}

/// A converged run.
#[derive(Debug, Clone)]
pub struct SsOutcome {
    pub sweeps: usize,
    /// Final steps of the pair sites and of the prior sites.
    pub eta: f64,
    pub eta_prior: f64,
    pub delta: f64,
    pub evidence: SsEvidence,
    pub negative_share: f64,
    pub skipped: usize,
    /// P(z_k = 1 | D) at the final state.
    pub inclusion: Vec<f64>,
    /// Negative-site fixes over the run, and in its last sweep.
    pub fixes_total: usize,
    pub fixes_last: usize,
    pub cold_restart: bool,
    pub seconds: f64,
}

/// Runs spike-and-slab EP to convergence from the current state (`driver::run`).
pub fn run<L: LikelihoodSites>(
    lik: &mut L,
    sites: &mut PriorSites,
    prior: &MixturePrior,
    s: &SsSettings,
    ctl: &Control,
    on_sweep: &mut dyn FnMut(SsSweepInfo<'_>),
) -> Result<SsOutcome, EngineError> {
    if !(s.fix_eta > 0.0 && s.fix_eta <= 1.0) {
        return Err(EngineError::InvalidParams(format!(
            "the η cap under recurring fixes must be in (0, 1]; got {}",
            s.fix_eta
        )));
    }
    let rules = Rules {
        evidence_every_sweep: s.evidence_every_sweep,
    };
    let mut st = SsSweep::new(lik, sites, prior, s, Mode::Fixed);
    let out = driver::run(&mut st, &s.ep, rules, ctl, &mut |st, status| {
        st.report(status, 0, 0.0, on_sweep)
    })?;
    Ok(st.outcome(&out))
}

/// Rebuilds q and checks the prior sites' cavities (`PriorSites::cavity`).
fn rebuild_checked<L: LikelihoodSites>(
    lik: &mut L,
    sites: &PriorSites,
    prior: &MixturePrior,
) -> bool {
    lik.rebuild(&sites.terms()) && sites.cavities_valid(lik.moments(), prior)
}

/// After the likelihood sites' trial was accepted: rebuild, update the prior
/// sites from that q with their steps for a sweep of step η, not during the
/// warm-up; rebuild again. Returns the number of negative-site fixes, or None when a
/// check failed.
fn prior_half<L: LikelihoodSites>(
    lik: &mut L,
    sites: &mut PriorSites,
    prior: &MixturePrior,
    eta: f64,
    steps: &mut SiteSteps,
    warmup: bool,
) -> Option<usize> {
    if !rebuild_checked(lik, sites, prior) {
        return None;
    }
    if warmup {
        return Some(0);
    }
    let mut fixed = std::mem::take(&mut steps.fixed);
    let mut dir = std::mem::take(&mut steps.dir);
    let st = &*steps;
    let up = sites.update_each(
        lik.moments(),
        prior,
        |k| st.step(k, eta),
        (&mut fixed, &mut dir),
    );
    steps.fixed = fixed;
    steps.dir = dir;
    rebuild_checked(lik, sites, prior).then_some(up?.fixes)
}

/// How the prior sites are updated.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) enum Mode {
    /// §5: with the negative-site fix, recurring fixes capping a site's step.
    Fixed,
    /// Without the fix, every site at one step (`release`).
    Released,
}

/// Spike-and-slab EP as the driver's state: the likelihood sites, the prior
/// sites and their per-site steps.
pub(super) struct SsSweep<'a, L: LikelihoodSites> {
    pub(super) lik: &'a mut L,
    pub(super) sites: &'a mut PriorSites,
    prior: &'a MixturePrior,
    s: &'a SsSettings,
    mode: Mode,
    init: PriorSites,
    /// The prior sites at the start of the sweep (what a rejection restores).
    pub(super) sites_prev: PriorSites,
    pub(super) steps: SiteSteps,
    fixes_last: usize,
    fixes_total: usize,
    /// Prior sites with u_k < 0 after the last released update.
    pub(super) negative: usize,
    /// The prior sites were scaled with the pair sites' step (`scale_step`):
    /// the next `complete_sweep` only rebuilds and checks.
    pub(super) scaled: bool,
    /// The prior sites and the sweep's start before a mixed step replaced
    /// them (`mixing`).
    pub(super) unmixed: Option<(PriorSites, PriorSites)>,
}

impl<'a, L: LikelihoodSites> SsSweep<'a, L> {
    pub(super) fn new(
        lik: &'a mut L,
        sites: &'a mut PriorSites,
        prior: &'a MixturePrior,
        s: &'a SsSettings,
        mode: Mode,
    ) -> Self {
        let d = sites.u.len();
        SsSweep {
            init: PriorSites::init(d, prior),
            sites_prev: sites.clone(),
            scaled: false,
            unmixed: None,
            steps: SiteSteps::new(d, s),
            lik,
            sites,
            prior,
            s,
            mode,
            fixes_last: 0,
            fixes_total: 0,
            negative: 0,
        }
    }

    /// The current state's evidence and inclusion probabilities.
    fn check(&self, stats: &PassStats) -> (SsEvidence, Vec<f64>) {
        let check = self.sites.check(self.lik.moments(), self.prior);
        let evidence = SsEvidence::of(&*self.lik, stats, check.sum_log_c);
        (evidence, check.inclusion)
    }

    /// Reports an accepted sweep, numbered from `sweeps_before`.
    pub(super) fn report(
        &self,
        status: &SweepStatus,
        sweeps_before: usize,
        seconds_before: f64,
        on_sweep: &mut dyn FnMut(SsSweepInfo<'_>),
    ) {
        let (evidence, inclusion) = self.check(&status.stats);
        on_sweep(SsSweepInfo {
            sweep: sweeps_before + status.sweep,
            delta: status.delta,
            log_z: evidence.log_z().filter(|_| status.evidence_known),
            eta: status.eta,
            negative_share: status.stats.negative as f64 / self.lik.sites().max(1) as f64,
            skipped: status.stats.skipped,
            inclusion: &inclusion,
            elapsed: seconds_before + status.elapsed,
            moments: self.lik.moments(),
        });
    }

    /// The outcome of a converged run.
    pub(super) fn outcome(&self, out: &Converged) -> SsOutcome {
        let (evidence, inclusion) = self.check(&out.stats);
        SsOutcome {
            sweeps: out.sweeps,
            eta: out.eta,
            eta_prior: out.step,
            delta: out.delta,
            evidence,
            negative_share: out.stats.negative as f64 / self.lik.sites().max(1) as f64,
            skipped: out.stats.skipped,
            inclusion,
            fixes_total: self.fixes_total,
            fixes_last: self.fixes_last,
            cold_restart: out.cold_restart,
            seconds: out.seconds,
        }
    }
}

impl<L: LikelihoodSites> SweepState for SsSweep<'_, L> {
    fn label(&self) -> &'static str {
        "spike-and-slab EP"
    }
    fn begin_run(&mut self) {
        self.steps = SiteSteps::new(self.sites.u.len(), self.s);
        (self.fixes_last, self.fixes_total) = (0, 0);
    }
    /// At the prior the prior sites' cavities are flat (τ₋ = 0): only Q is
    /// checked here; prior cavities are checked from the first pair update on.
    fn ensure_q(&mut self) -> bool {
        self.lik.rebuild(&self.sites.terms())
    }
    fn reset(&mut self) {
        self.lik.reset();
        self.sites.clone_from(&self.init);
    }
    fn can_reset(&self) -> bool {
        self.mode == Mode::Fixed
    }
    fn is_cold(&self) -> bool {
        self.lik.is_cold() && *self.sites == self.init
    }
    fn warmup_sweeps(&self) -> usize {
        match self.mode {
            Mode::Fixed => self.s.warmup_sweeps,
            Mode::Released => 0,
        }
    }
    fn pass(&mut self, eta: Option<f64>, evidence: bool) -> PassStats {
        self.lik.pass(eta, evidence)
    }
    fn accept(&mut self) {
        self.lik.accept();
    }
    fn shrink(&mut self) {
        self.lik.shrink();
        self.sites.clone_from(&self.sites_prev);
        self.scaled = false;
    }
    fn can_roll_back(&self) -> bool {
        self.lik.can_roll_back()
    }
    fn forget_rollback(&mut self) {
        self.lik.forget_rollback();
    }
    fn begin_sweep(&mut self) {
        self.sites_prev.clone_from(self.sites);
        self.scaled = false;
    }
    fn complete_sweep(&mut self, eta: f64, warmup: bool) -> bool {
        if std::mem::take(&mut self.scaled) {
            return rebuild_checked(self.lik, self.sites, self.prior);
        }
        match self.mode {
            Mode::Fixed => {
                let (lik, sites) = (&mut *self.lik, &mut *self.sites);
                match prior_half(lik, sites, self.prior, eta, &mut self.steps, warmup) {
                    Some(f) => {
                        self.fixes_last = f;
                        true
                    }
                    None => false,
                }
            }
            Mode::Released => {
                if !self.lik.rebuild(&self.sites.terms()) {
                    return false;
                }
                let q = self.lik.moments();
                let Some(neg) = update_unfixed(self.sites, q, self.prior, eta) else {
                    return false;
                };
                self.negative = neg;
                self.lik.rebuild(&self.sites.terms())
                    && self.sites.cavities_valid(self.lik.moments(), self.prior)
            }
        }
    }
    fn end_sweep(&mut self) {
        self.fixes_total += self.fixes_last;
    }
    fn restore(&mut self) {
        self.back();
    }
    /// The mixed run's halving can leave the damped map at a step where it
    /// diverges, where plain damping at the full step converges (`SweepState`).
    fn replain_at_full_step(&self) -> bool {
        true
    }
    /// The pair and the prior sites (`mixing`).
    fn mix_len(&self) -> Option<usize> {
        self.mixed_len()
    }
    fn stage_trial(&mut self, slot: usize, g: &mut [f64], at: &[usize], x: &mut [f64]) -> f64 {
        self.stage(slot, g, at, x)
    }
    fn mix_trial(&mut self, mixed: Mixed<'_>) -> bool {
        self.mix(mixed)
    }
    fn load_current(&mut self, g: &[f64], slot: usize) {
        self.load(g, slot);
    }
    fn residual2(&self) -> Option<f64> {
        self.lik.residual2()
    }
    fn scale_step(&mut self, f: f64) -> Option<f64> {
        self.scale(f)
    }
    fn marginal(&self) -> Marginal {
        let q = self.lik.moments();
        Marginal {
            mean: q.mean.clone(),
            var: q.var.clone(),
        }
    }
    fn step_floor(&self, eta: f64) -> f64 {
        match self.mode {
            Mode::Fixed => self.steps.min_step(eta),
            Mode::Released => eta,
        }
    }
    fn after_sweep(&mut self, eta: f64) {
        // Fixes that keep recurring: smaller steps (period-2 cycles otherwise);
        // not while the controller mixes (`mixing`).
        if self.mode == Mode::Fixed && !std::mem::take(&mut self.steps.mixing) {
            self.steps.after_sweep(eta);
        }
    }
    fn rebuild_reason(&self) -> NonConvergence {
        NonConvergence::ImproperPriorSites
    }
    fn failure_detail(&self) -> serde_json::Value {
        json!({ "fixes_last_sweep": self.fixes_last })
    }
}
