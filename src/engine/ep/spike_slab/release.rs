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

use super::prior_sites::{MixturePrior, PriorSites, matched_site, tilted};
use super::sweep::{
    LikelihoodSites, Mode, SsOutcome, SsSettings, SsSweep, SsSweepInfo, ThetaMoments,
};
use crate::engine::ep::driver;
use crate::engine::ep::settings::EpSettings;
use crate::engine::ep::site::Site;
use crate::engine::ep::sweep_state::Rules;
use crate::engine::interface::{Control, EngineError};

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
    let cavs: Option<Vec<_>> = (0..d).map(|k| sites.cavity(q, k, prior)).collect();
    let mut negative = 0;
    for (k, cav) in cavs?.into_iter().enumerate() {
        let t = tilted(cav, prior);
        let Site { k: u, h } = matched_site(cav, &t);
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
        let Some(cav) = sites.cavity(q, k, prior) else {
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
/// `s.fix_eta`, converged when `Δ_t < tol·η`, with no back-off (η may not
/// fall below `fix_eta`: the verdict's cycle halving is then unavailable,
/// and its verdict, after the mixing's one reprieve, fails the release).
/// Returns the new outcome, or None when the
/// released iteration failed a check (Q not positive definite, an invalid
/// cavity) or did not converge within `s.ep.max_sweeps`: then the sites are
/// left in an arbitrary state and the caller must rerun the fixed iteration
/// (`sweep::run`, which restarts from the prior if need be).
pub fn release_fixes<L: LikelihoodSites>(
    lik: &mut L,
    sites: &mut PriorSites,
    prior: &MixturePrior,
    s: &SsSettings,
    out: &SsOutcome,
    ctl: &Control,
    on_sweep: &mut dyn FnMut(SsSweepInfo<'_>),
) -> Result<Option<(SsOutcome, Released)>, EngineError> {
    let eta = s.fix_eta;
    let ep = EpSettings {
        eta,
        min_eta: eta,
        ..s.ep
    };
    let rules = Rules {
        evidence_every_sweep: s.evidence_every_sweep,
    };
    let mut st = SsSweep::new(lik, sites, prior, s, Mode::Released);
    let res = driver::run(&mut st, &ep, rules, ctl, &mut |st, status| {
        st.report(status, out.sweeps, out.seconds, on_sweep)
    });
    let done = match res {
        Ok(done) => done,
        Err(EngineError::NotConverged { .. } | EngineError::Numerical(_)) => return Ok(None),
        Err(e) => return Err(e),
    };
    let mut outcome = st.outcome(&done);
    outcome.sweeps += out.sweeps;
    outcome.eta = out.eta.min(eta);
    outcome.fixes_total = out.fixes_total;
    outcome.fixes_last = 0;
    outcome.cold_restart = out.cold_restart;
    outcome.seconds += out.seconds;
    let released = Released {
        sweeps: done.sweeps,
        negative_prior_sites: st.negative,
    };
    Ok(Some((outcome, released)))
}
