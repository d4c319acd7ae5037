//! Releasing the negative-site fix at EP's fixed point.
//!
//! §5 replaces a prior-site update with `u_k* ≤ 0` by `u_k = 1/(100·v1)` (keeping
//! the tilted mean): without it EP diverges on DNA. But when the fix is still
//! active at convergence, the state is not an EP fixed point: q's marginal of
//! θ_k keeps the cavity's variance instead of the (larger) tilted one, and
//! since the AUC likelihood is scale-free the extra prior precision shrinks the
//! whole score. On the sparse demo (γ = 1.5n, p = 0.2, v0 = 1e-4) the fix is
//! active on x12 and x18 at convergence: q's sd of θ18 is 0.159 where the
//! tilted sd is 0.196, every mean is 7–10% smaller than at the unfixed fixed
//! point, and the worst distance to SMC's means is 0.20 SMC sd instead of 0.14.
//!
//! So once the fixed iteration has converged, EP continues from there with
//! the fix released (negative `u_k` allowed, as for the pair sites in §4) at
//! a small step. A negative prior site is valid as long as Q stays positive
//! definite and every cavity valid (a prior cavity `τ₋ = 1/V_kk − u_k` is then
//! positive automatically). If the released iteration fails a check or does
//! not converge, the caller keeps the fixed iteration's answer.
//! `SpikeSlabEp::set_release_fixes` (the model's default is §5's letter; the
//! `Ep` engine and `path` switch it on unless `--keep-fixes`). Primal form
//! only: the reduced form whitens by the prior sites' precisions (> 0).

use super::prior_sites::{MixturePrior, PriorSites, tilted};
use super::sweep::{LikelihoodSites, SsEvidence, SsOutcome, SsSettings, SsSweepInfo, ThetaMoments};
use crate::engine::run::{Control, EngineError};

/// What the release did in a run.
#[derive(Debug, Clone, PartialEq)]
pub enum ReleaseStatus {
    /// No prior site needed the fix at convergence (or releasing is switched off).
    NotNeeded,
    /// The fix was active but `worth_releasing` said no: the fixed answer.
    Skipped,
    /// The released iteration converged: an EP fixed point without the fix.
    Released(Released),
    /// The released iteration failed; the fixed iteration was rerun.
    Failed,
}

/// The outcome of a released continuation.
#[derive(Debug, Clone, PartialEq)]
pub struct Released {
    /// Sweeps of the released iteration.
    pub sweeps: usize,
    /// Prior sites with u_k < 0 at the released fixed point.
    pub negative_prior_sites: usize,
}

/// Parallel damped update of every prior site without the fix; returns the
/// number of sites whose new u_k* is negative, None when a cavity is invalid.
pub fn update_unfixed(
    sites: &mut PriorSites,
    q: &ThetaMoments,
    prior: &MixturePrior,
    eta: f64,
) -> Option<usize> {
    let d = sites.u.len();
    let cavs: Option<Vec<_>> = (0..d).map(|k| sites.cavity(q, k)).collect();
    let mut negative = 0;
    for (k, cav) in cavs?.into_iter().enumerate() {
        let t = tilted(cav, prior);
        let u = 1.0 / t.var - cav.tau;
        let h = t.mean / t.var - cav.nu;
        negative += (u < 0.0) as usize;
        sites.u[k] += eta * (u - sites.u[k]);
        sites.v[k] += eta * (h - sites.v[k]);
        sites.p[k] = t.w1;
    }
    Some(negative)
}

/// Whether a release is worth trying from the converged q: some prior site
/// needs the fix, and some feature in the slab (P(z_k = 1) > ½) does not. The
/// AUC likelihood is scale-free, so the prior sites of the slab features are
/// what sets the score's scale; when every one of them wants a negative
/// precision, releasing them leaves that scale unbounded and the iteration
/// diverges (DNA at γ = 400: V85 and V90, the only features in the slab, both
/// fixed; released, their u_k fall past −170 in 7 sweeps and a cavity breaks).
/// Only saves the cost of a doomed attempt: a failed release falls back anyway.
pub fn worth_releasing(sites: &PriorSites, q: &ThetaMoments, prior: &MixturePrior) -> bool {
    let (mut needs_fix, mut anchored) = (false, false);
    for k in 0..sites.u.len() {
        let Some(cav) = sites.cavity(q, k) else {
            return false;
        };
        let t = tilted(cav, prior);
        let positive = 1.0 / t.var - cav.tau > 0.0;
        needs_fix |= !positive;
        anchored |= positive && t.w1 > 0.5;
    }
    needs_fix && anchored
}

/// From a converged state `out` of `sweep::run` whose last sweep still needed
/// the fix: EP without the fix, every site (pair and prior) at step
/// `s.fix_eta`, converged when `Δ_t < tol·η`. Returns the new outcome, or
/// None when the released iteration failed a check (Q not positive definite,
/// an invalid cavity) or did not converge within `s.ep.max_sweeps`: then the
/// sites are left in an arbitrary state and the caller must rerun the fixed
/// iteration (`sweep::run`, which restarts from the prior if need be).
pub fn release_fixes<L: LikelihoodSites>(
    lik: &mut L,
    sites: &mut PriorSites,
    prior: &MixturePrior,
    s: &SsSettings,
    out: &SsOutcome,
    ctl: &Control,
    on_sweep: &mut dyn FnMut(SsSweepInfo<'_>),
) -> Result<Option<(SsOutcome, Released)>, EngineError> {
    let t0 = std::time::Instant::now();
    let eta = s.fix_eta;
    let mut prev = lik.moments().clone();
    let (mut sweep, mut delta, mut converged, mut negative) = (0, f64::INFINITY, false, 0);
    loop {
        ctl.checkpoint()?;
        // Checks the current state (its pair cavities, its evidence) and,
        // unless converged, writes the damped pair update as the trial.
        let stats = lik.pass(
            (!converged).then_some(eta),
            converged || s.evidence_every_sweep,
        );
        if stats.bad > 0 {
            return Ok(None);
        }
        let q = lik.moments();
        let check = sites.check(q, prior);
        let evidence = SsEvidence::of(lik, &stats, check.sum_log_c);
        let negative_share = stats.negative as f64 / lik.sites().max(1) as f64;
        let seconds = out.seconds + t0.elapsed().as_secs_f64();
        if sweep > 0 {
            on_sweep(SsSweepInfo {
                sweep: out.sweeps + sweep,
                delta,
                log_z: evidence
                    .log_z()
                    .filter(|_| converged || s.evidence_every_sweep),
                eta,
                negative_share,
                skipped: stats.skipped,
                fixes: 0,
                inclusion: &check.inclusion,
                elapsed: seconds,
                moments: q,
            });
        }
        if converged {
            let outcome = SsOutcome {
                sweeps: out.sweeps + sweep,
                eta: out.eta.min(eta),
                eta_prior: eta,
                delta,
                evidence,
                negative_share,
                skipped: stats.skipped,
                inclusion: check.inclusion,
                fixes_total: out.fixes_total,
                fixes_last: 0,
                cold_restart: out.cold_restart,
                seconds,
            };
            let released = Released {
                sweeps: sweep,
                negative_prior_sites: negative,
            };
            return Ok(Some((outcome, released)));
        }
        if sweep >= s.ep.max_sweeps {
            return Ok(None);
        }
        lik.accept();
        if !lik.rebuild(&sites.terms()) {
            return Ok(None);
        }
        let Some(neg) = update_unfixed(sites, lik.moments(), prior, eta) else {
            return Ok(None);
        };
        negative = neg;
        if !lik.rebuild(&sites.terms()) || !sites.cavities_valid(lik.moments()) {
            return Ok(None);
        }
        sweep += 1;
        delta = lik.moments().delta(&prev);
        if !delta.is_finite() {
            return Ok(None);
        }
        prev.clone_from(lik.moments());
        converged = delta < s.ep.tol * eta;
    }
}
