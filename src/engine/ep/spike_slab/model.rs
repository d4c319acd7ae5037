//! Spike-and-slab EP for the linear AUC score on one data set: the pair sites
//! of §4 (`PairEp`, unchanged) plus the d prior sites, persistent between runs
//! so that a new spike variance or inclusion prior warm-starts (the path).
//!
//! EP runs on `Z = X·√v1` (the primal form whitened by the slab's sd, one
//! common scale): the prior in those coordinates has slab variance 1 and spike
//! variance v0/v1, so every number EP sees is scale-free.

use nalgebra::DMatrix;

use super::prior_sites::{MixturePrior, PriorSites};
use super::reduced::Reduction;
use super::release::{self, ReleaseStatus};
use super::sweep::{self, LikelihoodSites, SsOutcome, SsSettings, SsSweepInfo, ThetaMoments};
use crate::engine::ep::continuation::Continuable;
use crate::engine::ep::controller::Mixed;
use crate::engine::ep::cv;
use crate::engine::ep::design::{Design, Form, identical_pairs};
use crate::engine::ep::kernel::PassStats;
use crate::engine::ep::pair_ep::PairEp;
use crate::engine::ep::posterior::{Posterior, PriorTerms};
use crate::engine::ep::site::MAX_G;
use crate::engine::ep::store::Precision;
use crate::engine::ep::sweep_state::Marginal;
use crate::engine::interface::{Control, EngineError};

/// The AUC pair sites as the likelihood part of spike-and-slab EP, on θ's
/// coordinates (primal form) or on the reduced ones (`reduced`).
pub struct PairSites {
    pub ep: PairEp,
    /// g = γ/M of the current run.
    pub g: f64,
    /// The reduced form's map (None: primal).
    reduction: Option<Reduction>,
    /// θ's moments of the last successful rebuild.
    moments: Option<ThetaMoments>,
}

impl LikelihoodSites for PairSites {
    fn rebuild(&mut self, prior: &PriorTerms) -> bool {
        let moments = match &mut self.reduction {
            None => self
                .ep
                .rebuild_with_prior(prior.clone(), self.g)
                .then(|| ThetaMoments::of(self.ep.posterior().expect("rebuilt"))),
            Some(red) => red.rebuild(&mut self.ep, prior, self.g),
        };
        let ok = moments.is_some();
        self.moments = moments;
        ok
    }
    #[cfg(test)]
    fn posterior(&self) -> &Posterior {
        self.ep.posterior().expect("rebuilt")
    }
    fn moments(&self) -> &ThetaMoments {
        self.moments.as_ref().expect("rebuilt")
    }
    fn pass(&mut self, eta: Option<f64>, evidence: bool) -> PassStats {
        self.ep.pass_from_q(self.g, eta, evidence)
    }
    fn accept(&mut self) {
        self.ep.accept_trial();
    }
    fn shrink(&mut self) {
        self.ep.shrink_current(self.g);
    }
    fn can_roll_back(&self) -> bool {
        self.ep.can_roll_back()
    }
    fn forget_rollback(&mut self) {
        self.ep.forget_rollback();
    }
    fn restore(&mut self) {
        self.ep.restore_rollback();
        self.moments = None;
    }
    fn mix_len(&self) -> Option<usize> {
        Some(2 * self.ep.site_count())
    }
    fn stage_trial(&mut self, slot: usize, g: &mut [f64], at: &[usize], x: &mut [f64]) -> f64 {
        self.ep.stage_trial(slot, g, at, x)
    }
    fn mix_trial(&mut self, mixed: Mixed<'_>) -> bool {
        self.ep.mix_trial(mixed)
    }
    fn load_current(&mut self, g: &[f64], slot: usize) {
        self.ep.load_current(g, slot);
        self.moments = None;
    }
    fn residual2(&self) -> Option<f64> {
        self.ep.residual2()
    }
    fn scale_step(&mut self, f: f64) -> Option<f64> {
        let before = self.ep.scale_step(self.g, f);
        self.moments = None;
        Some(before)
    }
    fn reset(&mut self) {
        self.ep.reset();
    }
    fn is_cold(&self) -> bool {
        self.ep.sites_are_zero()
    }
    fn sites(&self) -> usize {
        self.ep.sites()
    }
    fn log_z_const(&self) -> f64 {
        -0.5 * self.g * self.ep.identical_pairs() as f64
    }
}

/// The spike-and-slab prior in θ's units.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct SpikeSlab {
    pub spike_var: f64,
    pub slab_var: f64,
    pub incl: f64,
}

impl SpikeSlab {
    /// Checks `1e-6·v1 ≤ v0 < v1`, `0 < p ≤ 1`.
    pub fn validate(&self, d: usize) -> Result<(), String> {
        crate::engine::Prior::SpikeSlab {
            spike_var: self.spike_var,
            slab_var: self.slab_var,
            incl: self.incl,
        }
        .validate(d)
    }
}

pub struct SpikeSlabEp {
    design: Design,
    lik: PairSites,
    sites: PriorSites,
    prior: SpikeSlab,
    /// The design is whitened by √scale_var (the slab variance at construction).
    scale_var: f64,
    pairs: usize,
    /// Continue without the negative-site fix when it is active at convergence
    /// (`set_release_fixes`).
    release_fixes: bool,
    release: ReleaseStatus,
}

impl SpikeSlabEp {
    /// Rows `x` (standardised) with labels `y`; the reduced form when d ≥ n.
    pub fn new(
        x: &DMatrix<f64>,
        y: &[bool],
        prior: SpikeSlab,
        precision: Precision,
    ) -> Result<SpikeSlabEp, EngineError> {
        Self::with_form(x, y, prior, precision, Form::Auto)
    }

    /// As `new`, in the given form (`Auto`: reduced when d ≥ n).
    pub fn with_form(
        x: &DMatrix<f64>,
        y: &[bool],
        prior: SpikeSlab,
        precision: Precision,
        form: Form,
    ) -> Result<SpikeSlabEp, EngineError> {
        prior
            .validate(x.ncols())
            .map_err(EngineError::InvalidParams)?;
        let pos: Vec<usize> = (0..y.len()).filter(|&i| y[i]).collect();
        let neg: Vec<usize> = (0..y.len()).filter(|&i| !y[i]).collect();
        if pos.is_empty() || neg.is_empty() {
            return Err(EngineError::InvalidParams("EP needs both classes".into()));
        }
        let (xp, xn) = (x.select_rows(&pos), x.select_rows(&neg));
        let excluded = identical_pairs(&xp, &xn);
        let d = x.ncols();
        let design = Design::new(&xp, &xn, &vec![prior.slab_var; d], Form::Primal);
        let mixture = Self::mixture_of(&prior, prior.slab_var);
        let sites = PriorSites::init(d, &mixture);
        let reduced = match form {
            Form::Auto => d >= x.nrows(),
            Form::Primal => false,
            Form::Reduced => true,
        };
        let (zp, zn, terms, reduction) = if reduced {
            let mut red = Reduction::new((*design.zp).clone(), (*design.zn).clone());
            let (zp, zn) = red.whiten(&sites.u).expect("first whitening");
            let terms = red.prior(&sites.v);
            (zp.into(), zn.into(), terms, Some(red))
        } else {
            (design.zp.clone(), design.zn.clone(), sites.terms(), None)
        };
        let ep = PairEp::new(zp, zn, excluded, terms, precision).map_err(EngineError::Numerical)?;
        Ok(SpikeSlabEp {
            design,
            lik: PairSites {
                ep,
                g: 0.0,
                reduction,
                moments: None,
            },
            sites,
            prior,
            scale_var: prior.slab_var,
            pairs: pos.len() * neg.len(),
            release_fixes: false,
            release: ReleaseStatus::NotNeeded,
        })
    }

    /// The prior in EP's coordinates (θ/√scale_var).
    fn mixture_of(prior: &SpikeSlab, scale_var: f64) -> MixturePrior {
        MixturePrior {
            spike: prior.spike_var / scale_var,
            slab: prior.slab_var / scale_var,
            incl: prior.incl,
        }
    }

    fn mixture(&self) -> MixturePrior {
        Self::mixture_of(&self.prior, self.scale_var)
    }

    /// All positive/negative pairs M (identical rows included: g = γ/M).
    pub fn pairs(&self) -> usize {
        self.pairs
    }
    pub fn prior(&self) -> SpikeSlab {
        self.prior
    }
    pub fn state(&self) -> &PairEp {
        &self.lik.ep
    }

    /// A new prior (spike variance, inclusion prior, slab variance); the sites
    /// are kept (warm start).
    pub fn set_prior(&mut self, prior: SpikeSlab) -> Result<(), EngineError> {
        prior
            .validate(self.design.dim())
            .map_err(EngineError::InvalidParams)?;
        self.prior = prior;
        Ok(())
    }

    /// EP to convergence at γ from the current state.
    pub fn run(
        &mut self,
        gamma: f64,
        s: &SsSettings,
        ctl: &Control,
        on_sweep: &mut dyn FnMut(&SsSweepInfo<'_>, &Design),
    ) -> Result<SsOutcome, EngineError> {
        let g = gamma / self.pairs as f64;
        if g > MAX_G {
            return Err(EngineError::InvalidParams(format!(
                "γ = {gamma} is {g:.3e} per pair; EP supports at most {MAX_G} per pair (γ ≤ {:.3e})",
                MAX_G * self.pairs as f64
            )));
        }
        self.lik.g = g;
        self.lik.ep.set_evidence_every_sweep(s.evidence_every_sweep);
        // Power EP (α < 1): the pair sites' and the prior sites' updates.
        self.lik.ep.set_power(s.ep.power.alpha());
        self.sites.alpha = s.ep.power.alpha();
        let mixture = self.mixture();
        let design = &self.design;
        let mut on_info = |info: SsSweepInfo<'_>| on_sweep(&info, design);
        let (lik, sites) = (&mut self.lik, &mut self.sites);
        let out = sweep::run(lik, sites, &mixture, s, ctl, &mut on_info)?;
        self.release = ReleaseStatus::NotNeeded;
        // The reduced form whitens by the prior sites' precisions: they must
        // stay positive there, so no release.
        // (Nor under power EP: the release continues plain EP.)
        if out.fixes_last == 0
            || !self.release_fixes
            || lik.reduction.is_some()
            || sites.alpha != 1.0
        {
            return Ok(out);
        }
        // The fix is still active at convergence: not an EP fixed point (`release`).
        if !release::worth_releasing(sites, lik.moments(), &mixture) {
            self.release = ReleaseStatus::Skipped;
            return Ok(out);
        }
        let fixed_sites = sites.clone();
        match release::release_fixes(lik, sites, &mixture, s, &out, ctl, &mut on_info)? {
            Some((released_out, released)) => {
                self.release = ReleaseStatus::Released(released);
                Ok(released_out)
            }
            // Back to the fixed iteration's answer (its fixed point does not
            // depend on where it starts).
            None => {
                self.release = ReleaseStatus::Failed;
                *sites = fixed_sites;
                let mut again = sweep::run(lik, sites, &mixture, s, ctl, &mut on_info)?;
                again.sweeps += out.sweeps;
                again.fixes_total += out.fixes_total;
                Ok(again)
            }
        }
    }

    /// The current pair and prior sites (a continuation's converged point).
    pub(crate) fn snapshot(&self) -> (Vec<f64>, PriorSites) {
        (self.lik.ep.sites_vec(), self.sites.clone())
    }

    /// Back to a `snapshot`; q is rebuilt by the next run.
    pub(crate) fn restore(&mut self, snap: &(Vec<f64>, PriorSites)) {
        self.lik.ep.load_sites(&snap.0);
        self.sites.clone_from(&snap.1);
        self.lik.moments = None;
        self.release = ReleaseStatus::NotNeeded;
    }

    /// Every site back to its start (q = the prior).
    pub fn reset(&mut self) {
        self.lik.reset();
        self.sites = PriorSites::init(self.sites.u.len(), &self.mixture());
        self.release = ReleaseStatus::NotNeeded;
    }

    /// Whether `run` continues without the negative-site fix when the fix is
    /// still active at convergence (`release`; primal form only). Off by
    /// default (§5's letter; the reduced form cannot release, so with it the
    /// primal form no longer equals the reduced one); the CLI switches it on
    /// unless `--keep-fixes`.
    pub fn set_release_fixes(&mut self, on: bool) {
        self.release_fixes = on;
    }

    /// The likelihood and prior sites, and the prior in EP's coordinates (tests).
    #[cfg(test)]
    pub(super) fn parts_mut(&mut self) -> (&mut PairSites, &mut PriorSites, MixturePrior) {
        let mixture = self.mixture();
        (&mut self.lik, &mut self.sites, mixture)
    }

    /// What releasing the negative-site fix did in the last run.
    pub fn release(&self) -> &ReleaseStatus {
        &self.release
    }

    fn q(&self) -> &Posterior {
        self.lik.ep.posterior().expect("run first")
    }
    /// Whether EP runs in the reduced form (d ≥ n).
    pub fn is_reduced(&self) -> bool {
        self.lik.reduction.is_some()
    }
    /// The rank r of the reduced form (d in the primal one).
    pub fn dim(&self) -> usize {
        self.lik.ep.prior().prec.len()
    }
    /// θ's marginals in EP's coordinates (after a run).
    pub fn moments(&self) -> &ThetaMoments {
        self.lik.moments()
    }
    /// Posterior mean of θ.
    pub fn mean(&self) -> Vec<f64> {
        match self.lik.reduction {
            None => self.design.theta_mean(self.q()),
            Some(_) => self.design.theta_mean_of(&self.moments().mean),
        }
    }
    /// Posterior sds of θ.
    pub fn sd(&self) -> Vec<f64> {
        match self.lik.reduction {
            None => self.design.theta_sd(self.q()),
            Some(_) => self.design.theta_sd_of(&self.moments().var),
        }
    }
    /// Posterior covariance of θ, factored (reduced form only).
    pub fn cov_low_rank(&self) -> Option<crate::engine::fit::LowRankCov> {
        let r = self.lik.reduction.as_ref()?;
        Some(self.design.theta_low_rank_of(r.cov_low_rank(self.q())))
    }
    /// Posterior covariance of θ (primal form only: d × d would be large).
    pub fn cov(&self) -> Option<DMatrix<f64>> {
        self.lik
            .reduction
            .is_none()
            .then(|| self.design.theta_cov(self.q()))
            .flatten()
    }
}

/// Spike-and-slab EP driven by the continuation in γ (`continuation`): every
/// point's sweeps are streamed, `new_run` before each.
pub struct SsPath<'a> {
    pub model: &'a mut SpikeSlabEp,
    pub settings: SsSettings,
    pub ctl: &'a Control,
    pub on_sweep: &'a mut dyn FnMut(&SsSweepInfo<'_>, &Design),
    pub new_run: &'a mut dyn FnMut(),
}

impl Continuable for SsPath<'_> {
    type Snapshot = (Vec<f64>, PriorSites);
    type Outcome = SsOutcome;
    fn snapshot(&self) -> Self::Snapshot {
        self.model.snapshot()
    }
    fn restore(&mut self, snap: &Self::Snapshot) {
        self.model.restore(snap);
    }
    fn reset(&mut self) {
        self.model.reset();
    }
    fn run_at(&mut self, gamma: f64, target: bool) -> Result<(SsOutcome, usize, f64), EngineError> {
        let s = SsSettings {
            ep: if target {
                self.settings.ep
            } else {
                cv::fold_settings(&self.settings.ep)
            },
            ..self.settings
        };
        (self.new_run)();
        let out = self.model.run(gamma, &s, self.ctl, self.on_sweep)?;
        let sweeps = out.sweeps;
        Ok((out, sweeps, s.ep.tol))
    }
    fn marginal(&self) -> Marginal {
        let q = self.model.moments();
        Marginal {
            mean: q.mean.clone(),
            var: q.var.clone(),
        }
    }
}
