//! The spike-and-slab EP sweep loop (ALGORITHMS.md §5), generic over the
//! likelihood's sites so that the prior-site machinery can be driven by the AUC
//! pair sites (`PairSites`) or, in tests, by an exact Gaussian likelihood.
//!
//! One sweep from an accepted state t: parallel update of every likelihood site
//! → rebuild (Q positive definite, valid prior cavities) → parallel update of
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

use std::time::Instant;

use serde_json::json;

pub use super::moments::ThetaMoments;
use super::prior_sites::{MixturePrior, PriorSites};
use super::site_steps::{SiteStepRule, SiteSteps};
use crate::engine::ep::kernel::PassStats;
use crate::engine::ep::pair_ep::EpSettings;
use crate::engine::ep::posterior::{Posterior, PriorTerms};
use crate::engine::run::{Control, EngineError};

const LN_2PI: f64 = 1.837_877_066_409_345_5;

/// The likelihood part of q: sites with a rollback point, and the rebuild of
/// q = N(m, V) from them and the prior terms.
pub trait LikelihoodSites {
    /// Rebuilds q from the current sites and `prior`; false when Q is not PD.
    fn rebuild(&mut self, prior: &PriorTerms) -> bool;
    /// The q of the last successful rebuild, in the likelihood's own
    /// coordinates (θ itself in the primal form).
    fn posterior(&self) -> &Posterior;
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
    /// All sites to zero.
    fn reset(&mut self);
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
    /// Negative-site fixes of the prior sites in this sweep.
    pub fixes: usize,
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

/// Runs spike-and-slab EP to convergence from the current state; a warm start
/// that does not converge is retried once from the prior.
pub fn run<L: LikelihoodSites>(
    lik: &mut L,
    sites: &mut PriorSites,
    prior: &MixturePrior,
    s: &SsSettings,
    ctl: &Control,
    on_sweep: &mut dyn FnMut(SsSweepInfo<'_>),
) -> Result<SsOutcome, EngineError> {
    let warm = !lik.is_cold() || *sites != PriorSites::init(sites.u.len(), prior);
    match run_once(lik, sites, prior, s, ctl, on_sweep) {
        Err(EngineError::NotConverged { .. }) if warm => {
            lik.reset();
            *sites = PriorSites::init(sites.u.len(), prior);
            let mut out = run_once(lik, sites, prior, s, ctl, on_sweep)?;
            out.cold_restart = true;
            Ok(out)
        }
        r => r,
    }
}

/// Rebuilds q and checks the prior cavities.
fn rebuild_checked<L: LikelihoodSites>(lik: &mut L, sites: &PriorSites) -> bool {
    lik.rebuild(&sites.terms()) && sites.cavities_valid(lik.moments())
}

/// After the likelihood sites' trial was accepted: rebuild, update the prior
/// sites from that q with their steps for a sweep of step η (not during the
/// warm-up), rebuild again. Returns the number of negative-site fixes, or None
/// when a check failed.
fn prior_half<L: LikelihoodSites>(
    lik: &mut L,
    sites: &mut PriorSites,
    prior: &MixturePrior,
    eta: f64,
    steps: &mut SiteSteps,
    warmup: bool,
) -> Option<usize> {
    if !rebuild_checked(lik, sites) {
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
        &mut fixed,
        &mut dir,
    );
    steps.fixed = fixed;
    steps.dir = dir;
    rebuild_checked(lik, sites).then_some(up?.fixes)
}

fn run_once<L: LikelihoodSites>(
    lik: &mut L,
    sites: &mut PriorSites,
    prior: &MixturePrior,
    s: &SsSettings,
    ctl: &Control,
    on_sweep: &mut dyn FnMut(SsSweepInfo<'_>),
) -> Result<SsOutcome, EngineError> {
    s.ep.validate().map_err(EngineError::InvalidParams)?;
    if !(s.fix_eta > 0.0 && s.fix_eta <= 1.0) {
        return Err(EngineError::InvalidParams(format!(
            "the η cap under recurring fixes must be in (0, 1]; got {}",
            s.fix_eta
        )));
    }
    let t0 = Instant::now();
    let d = sites.u.len();
    let mut cold_restart = false;
    // At the prior the prior sites' cavities are flat (τ₋ = 0): only Q is
    // checked here; prior cavities are checked from the first pair update on.
    let cold = |lik: &mut L, sites: &mut PriorSites| {
        lik.reset();
        *sites = PriorSites::init(d, prior);
        if lik.rebuild(&sites.terms()) {
            Ok(())
        } else {
            Err(EngineError::Numerical(
                "the prior precision is not positive definite".into(),
            ))
        }
    };
    if !lik.rebuild(&sites.terms()) {
        // The kept sites do not fit the new prior: start afresh.
        cold(lik, sites)?;
        cold_restart = true;
    }
    let warmup = if lik.is_cold() && *sites == PriorSites::init(d, prior) {
        s.warmup_sweeps
    } else {
        0
    };
    lik.forget_rollback();
    let mut q_prev: Option<ThetaMoments> = None;
    let mut sites_prev = sites.clone();
    let (mut eta, mut cur_eta) = (s.ep.eta, s.ep.eta);
    // Prior sites whose fixes recur get their own (smaller, adapted) steps.
    let mut steps = SiteSteps::new(d, s);
    let (mut sweep, mut delta, mut candidate) = (0usize, f64::INFINITY, false);
    let (mut halvings, mut stall_halvings) = (0usize, 0usize);
    let (mut best_delta, mut since_best) = (f64::INFINITY, 0usize);
    // Sweeps since the best Δ whose mean moved against the previous sweep's.
    let (mut last_step_m, mut reversals, mut drift_windows) = (None, 0usize, 0usize);
    let (mut fixes_last, mut fixes_total) = (0usize, 0usize);
    let fail = |why: &str, sweep: usize, eta: f64, delta: f64, extra: serde_json::Value| {
        EngineError::NotConverged {
            message: format!(
                "spike-and-slab EP {why} (after {sweep} sweeps, η = {eta:.3e}, Δ = {delta:.3e})"
            ),
            diagnostics: json!({
                "sweeps": sweep, "eta": eta, "delta": delta, "tol": s.ep.tol, "detail": extra,
            }),
        }
    };
    loop {
        ctl.checkpoint()?;
        let stats = lik.pass((!candidate).then_some(eta), s.evidence_every_sweep);
        if stats.bad > 0 {
            if !lik.can_roll_back() {
                if cold_restart {
                    return Err(fail(
                        "found invalid cavities at the prior",
                        sweep,
                        eta,
                        delta,
                        json!({ "bad_sites": stats.bad }),
                    ));
                }
                cold(lik, sites)?;
                cold_restart = true;
                continue;
            }
            // Reject the sweep: again from the previous state with η halved, kept halved.
            loop {
                cur_eta *= 0.5;
                eta = eta.min(cur_eta);
                halvings += 1;
                if cur_eta < s.ep.min_eta {
                    return Err(fail(
                        "did not converge: η fell below its minimum",
                        sweep,
                        cur_eta,
                        delta,
                        json!({ "reason": "invalid cavities", "bad_sites": stats.bad, "halvings": halvings }),
                    ));
                }
                lik.shrink();
                sites.clone_from(&sites_prev);
                let warming = sweep < warmup;
                if let Some(f) = prior_half(lik, sites, prior, cur_eta, &mut steps, warming) {
                    fixes_last = f;
                    break;
                }
            }
            delta = lik.moments().delta(q_prev.as_ref().expect("previous"));
            candidate = sweep > warmup && delta < s.ep.tol * steps.min_step(cur_eta);
            continue;
        }
        // The current state is valid: its evidence and inclusion probabilities.
        let q = lik.moments();
        let check = sites.check(q, prior);
        let evidence = SsEvidence::of(lik, &stats, check.sum_log_c);
        let negative_share = stats.negative as f64 / lik.sites().max(1) as f64;
        if sweep > 0 {
            on_sweep(SsSweepInfo {
                sweep,
                delta,
                log_z: evidence
                    .log_z()
                    .filter(|_| candidate || s.evidence_every_sweep),
                eta: steps.min_step(cur_eta),
                negative_share,
                skipped: stats.skipped,
                fixes: fixes_last,
                inclusion: &check.inclusion,
                elapsed: t0.elapsed().as_secs_f64(),
                moments: q,
            });
        }
        if candidate {
            return Ok(SsOutcome {
                sweeps: sweep,
                eta: cur_eta,
                eta_prior: steps.min_step(cur_eta),
                delta,
                evidence,
                negative_share,
                skipped: stats.skipped,
                inclusion: check.inclusion,
                fixes_total,
                fixes_last,
                cold_restart,
                seconds: t0.elapsed().as_secs_f64(),
            });
        }
        if sweep >= s.ep.max_sweeps {
            // Many drift windows: the mean kept moving one way (ionosphere, p = 0.2,
            // γ = 1.5n: Δ falls, then grows again with log Z sliding down).
            let why = if drift_windows >= 3 {
                "did not converge within --max-sweeps: the mean kept drifting one way, so EP may \
                 have no fixed point here (the AUC risk is scale-free and the score's scale can \
                 run away); try --inclusion-prior auto, another p, or a smaller γ"
            } else {
                "did not converge within --max-sweeps"
            };
            return Err(fail(
                why,
                sweep,
                eta,
                delta,
                json!({ "reason": "max sweeps", "halvings": halvings,
                        "stall_halvings": stall_halvings, "drift_windows": drift_windows,
                        "fixes_last_sweep": fixes_last }),
            ));
        }
        // The next sweep: the pass's output is the likelihood sites' trial.
        lik.accept();
        q_prev = Some(lik.moments().clone());
        sites_prev.clone_from(sites);
        cur_eta = eta;
        loop {
            if let Some(f) = prior_half(lik, sites, prior, cur_eta, &mut steps, sweep < warmup) {
                fixes_last = f;
                break;
            }
            cur_eta *= 0.5;
            eta = cur_eta;
            halvings += 1;
            if cur_eta < s.ep.min_eta {
                // Seen on Colon (d = 2000 ≫ n = 46) with the default p: the pair
                // sites leave ~no (or negative) information on one feature, so its
                // prior cavity 1/V_kk − u_k sits at 0 and flips sign at any step.
                return Err(fail(
                    "did not converge: η fell below its minimum (Q not positive definite or a prior cavity stayed \
                     invalid — e.g. the likelihood leaves a feature almost no information, as when \
                     d ≫ n; try another --inclusion-prior, --inclusion-prior auto, or --prior \
                     gaussian)",
                    sweep,
                    cur_eta,
                    delta,
                    json!({ "reason": "Q not positive definite or invalid prior cavities", "halvings": halvings }),
                ));
            }
            lik.shrink();
            sites.clone_from(&sites_prev);
        }
        sweep += 1;
        fixes_total += fixes_last;
        delta = lik.moments().delta(q_prev.as_ref().expect("previous"));
        candidate = sweep > warmup && delta < s.ep.tol * steps.min_step(cur_eta);
        if candidate {
            continue;
        }
        // Fixes that keep recurring: smaller steps (period-2 cycles otherwise).
        steps.after_sweep(cur_eta);
        // Direction of this sweep's move of the mean against the last one's.
        let (now, prev) = (
            &lik.moments().mean,
            &q_prev.as_ref().expect("previous").mean,
        );
        let step_m =
            nalgebra::DVector::from_iterator(now.len(), now.iter().zip(prev).map(|(a, b)| a - b));
        if let Some(last) = &last_step_m {
            reversals += usize::from(step_m.dot(last) < 0.0);
        }
        last_step_m = Some(step_m);
        if delta < best_delta {
            (best_delta, since_best, reversals) = (delta, 0, 0);
        } else {
            since_best += 1;
            if s.ep.stall_sweeps > 0
                && since_best >= s.ep.stall_sweeps
                && 2 * reversals < since_best
            {
                // Δ stalls but the mean keeps its direction: a slow drift (towards the
                // all-spike fixed point, say), not a cycle; smaller steps would only
                // slow it down. Watch a fresh window.
                (best_delta, since_best, reversals) = (f64::INFINITY, 0, 0);
                drift_windows += 1;
            } else if s.ep.stall_sweeps > 0 && since_best >= s.ep.stall_sweeps {
                // A cycle: smaller steps from the current (valid) state.
                eta *= 0.5;
                stall_halvings += 1;
                (best_delta, since_best, reversals) = (f64::INFINITY, 0, 0);
                if eta < s.ep.min_eta {
                    return Err(fail(
                        "did not converge: η fell below its minimum",
                        sweep,
                        eta,
                        delta,
                        json!({ "reason": "Δ stalled", "halvings": halvings, "stall_halvings": stall_halvings }),
                    ));
                }
            }
        }
    }
}
