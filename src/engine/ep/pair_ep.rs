//! Parallel EP over the pair sites of a design `Z` (rows split by class) with a
//! Gaussian prior part (ALGORITHMS.md §4): the site state (three buffers for
//! the rollback of §4's acceptance rule), the rebuild of q, the evidence, and
//! the sweep run on the shared loop (`driver`, `controller`: acceptance, η
//! back-off, mixing, convergence when `Δ_t < tol·η_t`).
//!
//! The state persists between runs: a run warm-starts from the previous one
//! (another γ, new prior variances, new Z of the same pairs).

use std::sync::Arc;

use nalgebra::DMatrix;
use serde_json::json;

use super::controller::Mixed;
use super::design::identical_pairs;
use super::driver;
use super::kernel::sampled::{self, SampledLayout, SampledWorkspace};
use super::kernel::{
    self, Aggregates, Excluded, Isa, Marginals, Op, PassInput, PassStats, Workspace,
};
use super::outcome::{EpOutcome, EvidenceParts, SweepInfo};
use super::posterior::{self, Posterior, PriorTerms};
use super::settings::EpSettings;
use super::site::StepFactor;
use super::store::{Precision, SiteBuffers};
use super::sweep_state::{Marginal, Rules, SweepState};
use crate::engine::interface::{Control, EngineError};
use crate::engine::pairs::PairSample;

#[path = "start.rs"]
pub mod start;

enum Store {
    F64(SiteBuffers<f64>),
    F32(SiteBuffers<f32>),
}

macro_rules! with_store {
    ($store:expr, $s:ident => $body:expr) => {
        match $store {
            Store::F64($s) => $body,
            Store::F32($s) => $body,
        }
    };
}

#[path = "secant.rs"]
mod secant;

/// EP state for one set of pairs.
pub struct PairEp {
    /// Shared with the design (no copy of the rows).
    zp: Arc<DMatrix<f64>>,
    zn: Arc<DMatrix<f64>>,
    excluded: Excluded,
    store: Store,
    ws: Workspace,
    agg: Aggregates,
    /// `agg` holds the aggregates of the current sites under the current Z.
    agg_valid: bool,
    marg: Marginals,
    prior: PriorTerms,
    q: Option<Posterior>,
    isa: Isa,
    /// Sum log C in every update pass (for per-sweep log Z_EP) or only at the end.
    evidence_every_sweep: bool,
    /// The sites' part of Q and r for the current `agg` (rebuilds with new prior terms only).
    sites_part: Option<(DMatrix<f64>, nalgebra::DVector<f64>)>,
    /// `marg` is older than q (computed before the next pass).
    marg_stale: bool,
    /// Sites on a sample of the pairs instead of all n+ × n− (`pairs`).
    sampled: Option<(SampledLayout, SampledWorkspace)>,
    /// The trial was replaced after the pass that wrote it (`agg` is stale).
    trial_loaded: bool,
    /// Power EP's α for the pair sites (1 = EP; `set_power`).
    power: f64,
    /// Aggregates of other buffers, for the controller's secant steps.
    held: secant::Held,
}

impl PairEp {
    /// `zp` (n+ × p) and `zn` (n− × p): the rows of each class; `excluded`
    /// pairs (identical rows) are not sites. Sites start at zero (q = prior).
    pub fn new(
        zp: impl Into<Arc<DMatrix<f64>>>,
        zn: impl Into<Arc<DMatrix<f64>>>,
        excluded: Excluded,
        prior: PriorTerms,
        precision: Precision,
    ) -> Result<PairEp, String> {
        let (zp, zn): (Arc<DMatrix<f64>>, Arc<DMatrix<f64>>) = (zp.into(), zn.into());
        let (np, nn, p) = (zp.nrows(), zn.nrows(), zp.ncols());
        assert_eq!(zn.ncols(), p);
        assert_eq!(prior.prec.len(), p);
        let pairs = np * nn;
        let store = if precision.use_f64(pairs) {
            Store::F64(SiteBuffers::zeros(np, nn)?)
        } else {
            Store::F32(SiteBuffers::zeros(np, nn)?)
        };
        Ok(PairEp {
            excluded,
            store,
            ws: Workspace::new(np, nn),
            agg: Aggregates::zeros(np, nn, p),
            agg_valid: true, // zero sites
            marg: Marginals::zeros(np, nn, p),
            prior,
            q: None,
            isa: crate::engine::numerics::isa::detected_isa(),
            evidence_every_sweep: true,
            sites_part: None,
            marg_stale: false,
            sampled: None,
            trial_loaded: false,
            power: 1.0,
            held: secant::Held::default(),
            zp,
            zn,
        })
    }

    /// As `new`, with sites on the pairs of `sample` only (each a factor
    /// exp(−g·1{…}) with g = γ/B); pairs with identical rows are not sites.
    pub fn sampled(
        zp: impl Into<Arc<DMatrix<f64>>>,
        zn: impl Into<Arc<DMatrix<f64>>>,
        sample: PairSample,
        prior: PriorTerms,
        precision: Precision,
    ) -> Result<PairEp, String> {
        let (zp, zn): (Arc<DMatrix<f64>>, Arc<DMatrix<f64>>) = (zp.into(), zn.into());
        let (np, nn, p) = (zp.nrows(), zn.nrows(), zp.ncols());
        assert_eq!((sample.n_pos(), sample.n_neg()), (np, nn));
        assert_eq!(prior.prec.len(), p);
        let b = sample.len();
        let store = if precision.use_f64(b) {
            Store::F64(SiteBuffers::zeros(1, b)?)
        } else {
            Store::F32(SiteBuffers::zeros(1, b)?)
        };
        let layout = SampledLayout::new(sample, &identical_pairs(&zp, &zn), &zn);
        let ws = SampledWorkspace::new(&layout);
        Ok(PairEp {
            excluded: Excluded::none(np),
            store,
            ws: Workspace::with_block_rows(np, 1, 1),
            agg: Aggregates::zeros(np, nn, p),
            agg_valid: true,
            marg: Marginals::zeros(np, nn, p),
            prior,
            q: None,
            isa: crate::engine::numerics::isa::detected_isa(),
            evidence_every_sweep: true,
            sites_part: None,
            marg_stale: false,
            sampled: Some((layout, ws)),
            trial_loaded: false,
            power: 1.0,
            held: secant::Held::default(),
            zp,
            zn,
        })
    }

    /// The pair sample when the sites live on one.
    pub fn sample(&self) -> Option<&PairSample> {
        self.sampled.as_ref().map(|(l, _)| &l.sample)
    }

    /// The pairs the likelihood counts (M, or B when sampled): g = γ/pairs.
    pub fn pairs(&self) -> usize {
        match &self.sampled {
            Some((l, _)) => l.sample.len(),
            None => self.n_pos() * self.n_neg(),
        }
    }

    /// Bytes a state of these dimensions holds: the sites (three buffers),
    /// the pass's scratch, the rows once (Z_P, Z_N: shared with the design),
    /// per positive Z_P V and K Z_N (p numbers each), four numbers a row
    /// (marginals and sums), q; `sampled`: B sites on a pair sample instead
    /// of all n+ × n−, with the copies of Z_N by rows (`copied_rows`: the
    /// chunks' or one shared), a second K Z_N by rows and the chunk
    /// scratch of up to 4 threads. `PairEp::held_bytes`: what a state holds.
    pub fn memory_bytes(
        n_pos: usize,
        n_neg: usize,
        p: usize,
        precision: Precision,
        sampled: Option<usize>,
    ) -> usize {
        let n = n_pos + n_neg;
        let rows = 8 * p * n + 16 * p * n_pos + 32 * n + 8 * 4 * p * p;
        match sampled {
            None => {
                let pairs = n_pos * n_neg;
                pairs * Precision::bytes_per_pair(precision.use_f64(pairs))
                    + kernel::workspace_bytes(n_pos, n_neg)
                    + rows
            }
            // Per pair: its negative, place in the negatives' order, positive
            // row, a chunk's touched negative and its two column sums; per
            // positive: K Z_N by rows, its sums (48) and its sample offset.
            Some(b) => {
                b * (Precision::bytes_per_pair(precision.use_f64(b)) + 32)
                    + 8 * p * SampledLayout::copied_rows(b, n_pos, n_neg)
                    + (8 * p + 56) * n_pos
                    + (40 * b + 8 * p * n_pos) / 8
                    + rows
            }
        }
    }

    pub fn n_pos(&self) -> usize {
        self.zp.nrows()
    }
    pub fn n_neg(&self) -> usize {
        self.zn.nrows()
    }
    /// Number of sites (pairs minus identical rows).
    pub fn sites(&self) -> usize {
        self.pairs() - self.identical_pairs()
    }
    /// Pairs with identical rows (not sites; each multiplies Z by e^{−g/2}).
    pub fn identical_pairs(&self) -> usize {
        match &self.sampled {
            Some((l, _)) => l.excluded.count(),
            None => self.excluded.count(),
        }
    }
    pub fn storage(&self) -> &'static str {
        match self.store {
            Store::F64(_) => "f64",
            Store::F32(_) => "f32",
        }
    }
    /// Power EP's α ∈ (0, 1] for the pair sites from now on (1 = EP;
    /// `StepFactor::power`). The sites keep their values: a warm start.
    pub fn set_power(&mut self, alpha: f64) {
        assert!(alpha > 0.0 && alpha <= 1.0, "power EP needs 0 < α ≤ 1");
        self.power = alpha;
    }

    /// The pair factor of g = γ/M with this state's power.
    fn step(&self, g: f64) -> StepFactor {
        StepFactor::with_power(g, self.power)
    }

    /// Whether every sweep reports log Z_EP (costs ~15% of a sweep) or only the last.
    pub fn set_evidence_every_sweep(&mut self, on: bool) {
        self.evidence_every_sweep = on;
    }
    pub fn posterior(&self) -> Option<&Posterior> {
        self.q.as_ref()
    }
    pub fn prior(&self) -> &PriorTerms {
        &self.prior
    }

    /// New rows for the same pairs (e.g. rescaled features); the sites are kept.
    pub fn set_design(
        &mut self,
        zp: impl Into<Arc<DMatrix<f64>>>,
        zn: impl Into<Arc<DMatrix<f64>>>,
        prior: PriorTerms,
    ) {
        let (zp, zn): (Arc<DMatrix<f64>>, Arc<DMatrix<f64>>) = (zp.into(), zn.into());
        assert_eq!((zp.nrows(), zn.nrows()), (self.n_pos(), self.n_neg()));
        let p = zp.ncols();
        if p != self.zp.ncols() {
            self.agg.g = DMatrix::zeros(self.n_pos(), p);
            self.marg = Marginals::zeros(self.n_pos(), self.n_neg(), p);
        }
        if let Some((layout, _)) = &mut self.sampled {
            layout.set_rows(&zn);
        }
        self.zp = zp;
        self.zn = zn;
        self.prior = prior;
        self.agg_valid = false;
        self.sites_part = None;
        self.q = None;
        self.held.clear();
    }

    /// All sites back to zero (q = prior).
    pub fn reset(&mut self) {
        with_store!(&mut self.store, s => s.clear());
        self.held.clear();
        self.agg.k_row.fill(0.0);
        self.agg.k_col.fill(0.0);
        self.agg.h_row.fill(0.0);
        self.agg.h_col.fill(0.0);
        self.agg.g.fill(0.0);
        self.agg_valid = true;
        self.sites_part = None;
        self.q = None;
    }

    fn run_pass(&mut self, op: Op, step: StepFactor) -> PassStats {
        if op != Op::Check {
            self.sites_part = None; // agg changes
        }
        if self.held.on {
            self.hold_before(op);
        }
        if self.marg_stale
            && matches!(op, Op::Update { .. } | Op::Check)
            && let Some(q) = &self.q
        {
            posterior::marginals(&self.zp, &self.zn, q, &mut self.marg);
            self.marg_stale = false;
        }
        if let Some((layout, sws)) = &mut self.sampled {
            let (marg, agg, isa) = (&self.marg, &mut self.agg, self.isa);
            return with_store!(&mut self.store, s => sampled::pass(s, (layout, sws), marg, op, step, isa, agg));
        }
        let input = PassInput {
            zn: &self.zn,
            marg: &self.marg,
            excluded: &self.excluded,
            step,
            isa: self.isa,
        };
        with_store!(&mut self.store, s => kernel::pass(s, &input, op, &mut self.ws, &mut self.agg))
    }

    /// Rebuilds q from `agg` (computing it first if stale); false if Q is not PD.
    fn rebuild(&mut self, step: StepFactor) -> bool {
        if !self.agg_valid {
            self.run_pass(Op::Aggregate, step);
            self.agg_valid = true;
        }
        match posterior::rebuild(&self.zp, &self.zn, &self.agg, &self.prior) {
            Some(q) => {
                // The per-row marginals wait for the next pass (`run_pass`):
                // a state replaced before its pass (a secant or mixed step,
                // an undone one) never needs them.
                self.marg_stale = true;
                self.q = Some(q);
                true
            }
            None => false,
        }
    }

    fn evidence(&self, stats: &PassStats, step: StepFactor) -> EvidenceParts {
        let q = self.q.as_ref().expect("posterior");
        EvidenceParts {
            sum_log_c: stats.sum_log_c,
            half_log_det_prior_prec: 0.5 * self.prior.prec.iter().map(|p| p.ln()).sum::<f64>(),
            log_det_q: q.log_det_q,
            r_v_r: q.r_v_r,
            identical_pairs: self.identical_pairs(),
            g: step.g,
            skipped: stats.skipped,
        }
    }

    /// Rebuilds q with new prior terms, keeping the sites (spike-and-slab EP's
    /// prior sites live in the prior terms); false when Q is not PD.
    /// The sites' part of Q and r is kept between calls while the sites do not
    /// change, and the per-row marginals wait for the next pass.
    pub(crate) fn rebuild_with_prior(&mut self, prior: PriorTerms, g: f64) -> bool {
        assert_eq!(prior.prec.len(), self.zp.ncols());
        self.prior = prior;
        self.q = None;
        if !self.agg_valid {
            self.run_pass(Op::Aggregate, self.step(g));
            self.agg_valid = true;
        }
        let part = self
            .sites_part
            .get_or_insert_with(|| posterior::sites_part(&self.zp, &self.zn, &self.agg));
        self.q = posterior::solve(part, &self.prior);
        self.marg_stale = true;
        self.q.is_some()
    }

    /// Checks the current sites under q (and sums their log C when `evidence` or
    /// without `eta`); with `eta`, writes the damped update as the trial state.
    pub(crate) fn pass_from_q(&mut self, g: f64, eta: Option<f64>, evidence: bool) -> PassStats {
        let op = match eta {
            Some(eta) => Op::Update { eta, evidence },
            None => Op::Check,
        };
        let stats = self.run_pass(op, self.step(g));
        if eta.is_some() {
            self.agg_valid = false; // agg describes the trial until it is accepted
            self.trial_loaded = false;
        }
        stats
    }

    /// The trial written by the last update pass becomes current.
    pub(crate) fn accept_trial(&mut self) {
        with_store!(&mut self.store, st => st.rotate());
        self.agg_valid = !std::mem::take(&mut self.trial_loaded);
    }

    /// Current ← (previous + current)/2: the last step again with η halved.
    pub(crate) fn shrink_current(&mut self, g: f64) {
        self.run_pass(Op::Shrink, self.step(g));
        self.agg_valid = true;
    }

    /// Current ← rollback + f·(current − rollback): the last step scaled by f.
    pub(crate) fn relax_current(&mut self, g: f64, f: f64) {
        self.run_pass(Op::Relax(f), self.step(g));
        self.agg_valid = true;
        self.q = None;
    }

    /// Back to the rollback point exactly; q must be rebuilt.
    pub(crate) fn restore_rollback(&mut self) {
        with_store!(&mut self.store, st => st.restore_prev());
        self.agg_valid = false;
        self.sites_part = None;
        self.q = None;
        if self.held.on {
            self.take_held(); // the rollback point's aggregates, when kept
        }
    }

    pub(crate) fn can_roll_back(&self) -> bool {
        with_store!(&self.store, s => s.prev.is_some())
    }

    pub(crate) fn forget_rollback(&mut self) {
        with_store!(&mut self.store, st => st.forget_prev());
    }

    /// The current sites (K then h of every pair), e.g. a continuation's
    /// last converged point.
    pub(crate) fn sites_vec(&self) -> Vec<f64> {
        let (mut k, h) = with_store!(&self.store, st => st.copy_out(false));
        k.extend(h);
        k
    }

    /// Number of sites (pairs) of the store.
    pub(crate) fn site_count(&self) -> usize {
        with_store!(&self.store, st => st.len())
    }

    /// Sets the current sites (`sites_vec`'s layout); no rollback point; q
    /// must be rebuilt.
    pub(crate) fn load_sites(&mut self, v: &[f64]) {
        let m = v.len() / 2;
        with_store!(&mut self.store, st => st.copy_in(&v[..m], &v[m..], false));
        self.held.clear();
        self.agg_valid = false;
        self.sites_part = None;
        self.q = None;
    }

    /// Whether every site is zero (q = prior).
    pub(crate) fn sites_are_zero(&self) -> bool {
        with_store!(&self.store, st => st.is_zero())
    }

    /// Runs EP to convergence from the current state with step factor g = γ/M
    /// (`driver::run`, no retry from the prior). `on_sweep` sees every
    /// accepted sweep. Errors:
    /// `Cancelled`, or `NotConverged` with diagnostics.
    pub fn run(
        &mut self,
        g: f64,
        s: &EpSettings,
        ctl: &Control,
        on_sweep: &mut dyn FnMut(SweepInfo<'_>),
    ) -> Result<EpOutcome, EngineError> {
        self.set_power(s.power.alpha());
        // The controller's secant steps and mixing use the held aggregates.
        self.held.on = true;
        let step = self.step(g);
        let rules = Rules {
            evidence_every_sweep: self.evidence_every_sweep,
        };
        let mut st = GaussianSweep { ep: self, step };
        let out = driver::run(&mut st, s, rules, ctl, &mut |st, status| {
            let ep = &*st.ep;
            on_sweep(SweepInfo {
                sweep: status.sweep,
                delta: status.delta,
                log_z: ep
                    .evidence(&status.stats, step)
                    .log_z()
                    .filter(|_| status.evidence_known),
                eta: status.eta,
                negative_share: status.stats.negative as f64 / ep.sites().max(1) as f64,
                skipped: status.stats.skipped,
                elapsed: status.elapsed,
                q: ep.q.as_ref().expect("rebuilt"),
            })
        })?;
        Ok(EpOutcome {
            sweeps: out.sweeps,
            eta: out.eta,
            delta: out.delta,
            stats: out.stats,
            evidence: self.evidence(&out.stats, step),
            negative_share: out.stats.negative as f64 / self.sites().max(1) as f64,
            cold_restart: out.cold_restart,
            seconds: out.seconds,
            extrapolations: out.jumps,
        })
    }
}

#[cfg(test)]
impl PairEp {
    // What the tests force and inspect.
    /// Whether a sampled pass reads one shared copy of Z_N (`SampledLayout`).
    pub fn shares_rows(&self) -> bool {
        self.sampled.as_ref().is_some_and(|(l, _)| l.shares_rows())
    }

    /// Bytes this state holds now, counted from its buffers (the rows of the
    /// design included once): what `memory_bytes` estimates.
    pub fn held_bytes(&self) -> usize {
        let p = self.zp.ncols();
        let f = |v: &Vec<f64>| 8 * v.capacity();
        let sites =
            self.site_count() * Precision::bytes_per_pair(matches!(self.store, Store::F64(_)));
        let rows = 8 * (self.zp.len() + self.zn.len());
        let agg = f(&self.agg.k_row)
            + f(&self.agg.k_col)
            + f(&self.agg.h_row)
            + f(&self.agg.h_col)
            + 8 * self.agg.g.len();
        let marg = f(&self.marg.mp)
            + f(&self.marg.up)
            + f(&self.marg.mn)
            + f(&self.marg.un)
            + 8 * self.marg.zv_p.len();
        let sampled = self.sampled.as_ref().map_or(0, |(l, ws)| {
            l.bytes() + 8 * (l.sample.n_pos() + 1) + ws.held_bytes()
        });
        sites + rows + agg + marg + sampled + 8 * 2 * p * p
    }

    /// Forces an instruction set (tests compare them).
    pub fn set_isa(&mut self, isa: Isa) {
        self.isa = isa;
    }

    /// Forces blocks of `rows` positive rows (tests of the multi-block path).
    pub fn set_block_rows(&mut self, rows: usize) {
        self.ws = Workspace::with_block_rows(self.n_pos(), self.n_neg(), rows);
    }

    /// The pass's copies of Z_N forced shared or per chunk (tests).
    pub fn set_shared_rows(&mut self, shared: bool) {
        if let Some((l, _)) = &mut self.sampled {
            l.set_rows_as(&self.zn, shared);
        }
    }

    /// The row tasks' products up to `p` coordinates (tests compare them with the GEMM's).
    pub fn set_small_p(&mut self, p: usize) {
        self.ws.set_small_p(p);
    }

    /// Site (K, h) of positive i and negative j in the current state.
    pub fn site(&self, i: usize, j: usize) -> (f64, f64) {
        with_store!(&self.store, s => s.value(i, j))
    }

    /// One update pass from the current state (its output is not adopted):
    /// the unit the benchmarks time.
    pub fn time_pass(&mut self, g: f64, eta: f64) -> Result<PassStats, String> {
        let step = self.step(g);
        if self.q.is_none() && !self.rebuild(step) {
            return Err("the posterior is not positive definite".into());
        }
        let stats = self.run_pass(
            Op::Update {
                eta,
                evidence: self.evidence_every_sweep,
            },
            step,
        );
        self.agg_valid = false; // agg now describes the discarded output
        Ok(stats)
    }
}

/// Gaussian EP as the driver's state: pair sites and the Gaussian prior.
struct GaussianSweep<'a> {
    ep: &'a mut PairEp,
    step: StepFactor,
}

impl SweepState for GaussianSweep<'_> {
    fn label(&self) -> &'static str {
        "EP"
    }
    fn ensure_q(&mut self) -> bool {
        self.ep.q.is_some() || self.ep.rebuild(self.step)
    }
    fn reset(&mut self) {
        self.ep.reset();
    }
    fn is_cold(&self) -> bool {
        self.ep.sites_are_zero()
    }
    fn pass(&mut self, eta: Option<f64>, evidence: bool) -> PassStats {
        self.ep.pass_from_q(self.step.g, eta, evidence)
    }
    fn accept(&mut self) {
        self.ep.accept_trial();
    }
    fn shrink(&mut self) {
        self.ep.shrink_current(self.step.g);
    }
    fn can_roll_back(&self) -> bool {
        self.ep.can_roll_back()
    }
    fn forget_rollback(&mut self) {
        self.ep.forget_rollback();
    }
    fn complete_sweep(&mut self, _eta: f64, _warmup: bool) -> bool {
        self.ep.rebuild(self.step)
    }
    fn restore(&mut self) {
        self.ep.restore_rollback();
    }
    fn marginal(&self) -> Marginal {
        let q = self.ep.q.as_ref().expect("rebuilt");
        Marginal {
            mean: q.m.iter().copied().collect(),
            var: (0..q.m.len()).map(|k| q.v[(k, k)]).collect(),
        }
    }
    fn context(&self) -> serde_json::Value {
        json!({ "gamma_over_pairs": self.step.g })
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
    }
    fn residual2(&self) -> Option<f64> {
        self.ep.residual2()
    }
    fn scale_step(&mut self, f: f64) -> Option<f64> {
        Some(self.ep.scale_step(self.step.g, f))
    }
}
