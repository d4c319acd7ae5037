//! What an EP flavour shows the sweep loop (`controller`): the `SweepState`
//! contract, the marginals convergence is judged on, and what a run reports.
//!
//! # Implementing a flavour (`SweepState`)
//! A flavour keeps its sites in three roles — the accepted state before the
//! last step (the rollback point), the current state (whose q is current) and
//! the trial written by the next pass — and exposes:
//! - `pass(eta, evidence)`: checks every likelihood site's cavity under the
//!   current q (`PassStats::bad` > 0: the current state is invalid) and sums
//!   their log C when `evidence`; with `Some(eta)` also writes the damped
//!   update `(1 − η)·site + η·new` as the trial. Must not change q.
//! - `accept()`: the trial becomes current, the current one the rollback point.
//! - `complete_sweep(eta, warmup)`: after `accept`, rebuild q from the current
//!   sites (and do what else the sweep does at step η: spike-and-slab updates
//!   its prior sites here); false when the result is rejected (Q not positive
//!   definite, an invalid prior cavity). GP-EP: V = (K⁻¹ + B)⁻¹ with B the
//!   weighted Laplacian of the site precisions, checked positive definite.
//! - `shrink()`: current ← (rollback + current)/2 — the last step again with η
//!   halved — and anything else of the sweep back to its start (`begin_sweep`).
//! - `ensure_q()`: q for the current sites (rebuilt only if stale); false when
//!   Q is not positive definite. `reset()`: every site back to the start (q =
//!   prior); `can_reset()` false when a restart makes no sense (a continuation).
//! - `marginal()`: the means and variances Δ_t is judged on (θ's, or the
//!   scores' m_s and diag V_s for GP-EP).

use serde_json::{Value, json};

use super::controller::Mixed;
use super::kernel::PassStats;
use crate::engine::error::NonConvergence;

/// Means and variances of the coordinates convergence is judged on.
#[derive(Debug, Clone, PartialEq)]
pub struct Marginal {
    pub mean: Vec<f64>,
    pub var: Vec<f64>,
}

impl Marginal {
    /// |m − m'| over all coordinates, each in the sds of `other` (primes):
    /// how far a run's mean travelled, for the drift and cycle tests.
    pub fn distance(&self, other: &Marginal) -> f64 {
        self.mean
            .iter()
            .zip(&other.mean)
            .zip(&other.var)
            .map(|((x, y), v)| (x - y) * (x - y) / v)
            .sum::<f64>()
            .sqrt()
    }

    /// Δ = max_k max(|m_k − m'_k|/sd'_k, |sd_k/sd'_k − 1|), primes = `old`.
    pub fn delta(&self, old: &Marginal) -> f64 {
        let mut d: f64 = 0.0;
        for k in 0..self.mean.len() {
            let (sd, sd_old) = (self.var[k].sqrt(), old.var[k].sqrt());
            d = d
                .max((self.mean[k] - old.mean[k]).abs() / sd_old)
                .max((sd / sd_old - 1.0).abs());
        }
        d
    }
}

/// An EP flavour's sites and q, as the driver sees them (see the module docs).
pub trait SweepState {
    /// "EP", "spike-and-slab EP", … (messages).
    fn label(&self) -> &'static str;
    fn ensure_q(&mut self) -> bool;
    fn reset(&mut self);
    fn can_reset(&self) -> bool {
        true
    }
    /// Every site at its start (a cold state).
    fn is_cold(&self) -> bool;
    /// Sweeps of a cold start during which convergence is not judged.
    fn warmup_sweeps(&self) -> usize {
        0
    }
    fn pass(&mut self, eta: Option<f64>, evidence: bool) -> PassStats;
    fn accept(&mut self);
    fn shrink(&mut self);
    fn can_roll_back(&self) -> bool;
    fn forget_rollback(&mut self);
    /// A run starts (per-run counters and steps back to their start).
    fn begin_run(&mut self) {}
    /// A sweep starts from the current state (remember what `shrink` restores).
    fn begin_sweep(&mut self) {}
    fn complete_sweep(&mut self, eta: f64, warmup: bool) -> bool;
    /// A sweep was accepted.
    fn end_sweep(&mut self) {}
    fn marginal(&self) -> Marginal;
    /// The smallest step of a sweep of step η (some sites may step less).
    fn step_floor(&self, eta: f64) -> f64 {
        eta
    }
    /// After an accepted sweep that is not a convergence candidate.
    fn after_sweep(&mut self, _eta: f64) {}
    /// Back to the rollback point exactly (an undone mixed step); there is
    /// no rollback point afterwards; q is rebuilt by `ensure_q`.
    fn restore(&mut self) {}
    /// Length of the sites as one vector, for Anderson mixing
    /// (`controller`); None when the flavour does not support it.
    fn mix_len(&self) -> Option<usize> {
        None
    }
    /// When the verdict turns the mixing off, plain damping starts at the
    /// η the verdict's cycle halving cut (that halving judged the mixed
    /// iteration, not the damped map). Spike-and-slab only so far: Gaussian
    /// and GP keep their measured records (`controller_run::Loop::judge`).
    fn replain_at_full_step(&self) -> bool {
        false
    }
    /// Right after an update pass: writes the trial G(x) into `g` (one
    /// layout, `mix_len` values) and the current sites x at the sorted
    /// coordinates `at` into `x`, and returns ‖G(x) − x‖² over all of it;
    /// keeps what mixing this trial needs under Anderson's `slot` (the pair
    /// sites: its aggregates).
    fn stage_trial(&mut self, _slot: usize, _g: &mut [f64], _at: &[usize], _x: &mut [f64]) -> f64 {
        f64::NAN
    }
    /// Replaces the trial by the mixed point Σ w·G of staged trials (newest
    /// first); `accept` then makes it current. False when it is not finite.
    fn mix_trial(&mut self, _mixed: Mixed<'_>) -> bool {
        false
    }
    /// Current ← `g`, the trial staged under `slot` (the plain step from the
    /// rollback point, which stays); q is then rebuilt by `complete_sweep`.
    fn load_current(&mut self, _g: &[f64], _slot: usize) {}
    /// Right after an update pass: ‖trial − current‖² over the sites as one
    /// vector (the residual the controller judges a secant step by); None
    /// when the flavour does not support secant steps.
    fn residual2(&self) -> Option<f64> {
        None
    }
    /// Scales the step just accepted (current ← rollback + f·(current − rollback); q then
    /// rebuilt by `complete_sweep` or `ensure_q`), cheap enough for every
    /// few sweeps: f = 1/f' undoes a step scaled by f'. Returns ‖current −
    /// rollback‖² before (as `residual2`), None when not supported.
    fn scale_step(&mut self, _f: f64) -> Option<f64> {
        None
    }
    /// Why a rebuild after a step fails (the diagnostics' reason).
    fn rebuild_reason(&self) -> NonConvergence {
        NonConvergence::NotPositiveDefinite
    }
    /// Extra diagnostics (merged into the top level).
    fn context(&self) -> Value {
        json!({})
    }
    /// Extra details of a failure (merged into `detail`).
    fn failure_detail(&self) -> Value {
        json!({})
    }
}

/// The flavour's choices of the sweep loop's rules.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Rules {
    /// Sum log C at every sweep (else only at the convergence check).
    pub evidence_every_sweep: bool,
}

/// One accepted sweep's state, as reported.
#[derive(Debug, Clone, Copy)]
pub struct SweepStatus {
    pub sweep: usize,
    pub delta: f64,
    /// The smallest step of the sweep.
    pub eta: f64,
    pub stats: PassStats,
    /// `stats.sum_log_c` was summed in this pass.
    pub evidence_known: bool,
    pub elapsed: f64,
}

/// A converged run.
#[derive(Debug, Clone, Copy)]
pub struct Converged {
    pub sweeps: usize,
    /// The sweeps' step η.
    pub eta: f64,
    /// The smallest step of the last sweep.
    pub step: f64,
    pub delta: f64,
    /// The final check pass (evidence summed).
    pub stats: PassStats,
    pub cold_restart: bool,
    pub seconds: f64,
    /// Extrapolated steps taken, and those undone (the next sweep grew).
    pub jumps: usize,
    pub jumps_undone: usize,
}
