//! GP-EP's state for the shared EP sweep driver (`ep::driver`, ALGORITHMS.md
//! §4 in score space, §6): every pass updates all pair sites from the same q
//! (the scalar site maths of `ep::site`, O(1) per site) and writes the damped
//! update; a sweep rebuilds q from them (`basis`), accepted only when that is
//! positive definite. The sites as one vector (K then h, pair by pair) are what
//! the controller's Anderson and secant steps mix, as linear EP's: plain
//! damping alone stalls at large γ (Δ/η contracting by ~0.99 a sweep).
//! Δ is on the means and sds of the distinct rows' scores.
//! The sites persist between runs: a run warm-starts from the previous one
//! (another γ, another length-scale).

use nalgebra::DMatrix;
use rayon::prelude::*;
use serde_json::json;

use super::basis::{Basis, Q};
use super::fitting::FitOutcome;
use crate::engine::ep::controller::Mixed;
use crate::engine::ep::driver;
use crate::engine::ep::kernel::PassStats;
use crate::engine::ep::settings::EpSettings;
use crate::engine::ep::sink::TRACE_MOMENTS_MAX_D;
use crate::engine::ep::site::{self, Site, StepFactor};
use crate::engine::ep::sweep_state::{Marginal, Rules, SweepState};
use crate::engine::event::EpSweep;
use crate::engine::interface::{Control, EngineError};

/// GP-EP state: the basis, the sites (current, previous, next) and q.
pub struct GpEp {
    pub basis: Basis,
    k: Vec<f64>,
    h: Vec<f64>,
    prev: Option<(Vec<f64>, Vec<f64>)>,
    next: (Vec<f64>, Vec<f64>),
    q: Option<Q>,
    /// Identical positive/negative rows (not sites).
    identical: usize,
    /// The trial is a mixed point (no pass residual).
    mixed: bool,
}

impl GpEp {
    pub fn new(basis: Basis) -> GpEp {
        let len = basis.n_pos() * basis.n_neg();
        let identical = (0..basis.n_pos())
            .map(|i| basis.un.iter().filter(|&&u| u == basis.up[i]).count())
            .sum();
        GpEp {
            basis,
            k: vec![0.0; len],
            h: vec![0.0; len],
            prev: None,
            next: (vec![0.0; len], vec![0.0; len]),
            q: None,
            identical,
            mixed: false,
        }
    }

    /// All positive/negative pairs M.
    pub fn pairs(&self) -> usize {
        self.basis.n_pos() * self.basis.n_neg()
    }
    #[cfg(test)]
    pub fn identical_pairs(&self) -> usize {
        self.identical
    }
    pub fn posterior(&self) -> Option<&Q> {
        self.q.as_ref()
    }

    /// A new basis for the same pairs (another kernel); the sites are kept.
    pub fn set_basis(&mut self, basis: Basis) {
        assert_eq!(
            (basis.up.len(), basis.un.len()),
            (self.basis.up.len(), self.basis.un.len())
        );
        self.basis = basis;
        self.q = None;
    }

    /// All sites back to zero (q = prior).
    pub fn reset(&mut self) {
        self.k.fill(0.0);
        self.h.fill(0.0);
        self.prev = None;
        self.q = None;
    }

    fn is_cold(&self) -> bool {
        self.k.iter().all(|&v| v == 0.0) && self.h.iter().all(|&v| v == 0.0)
    }

    fn rebuild(&mut self) -> bool {
        self.q = self.basis.rebuild(&self.k, &self.h, false);
        self.q.is_some()
    }

    /// The sites' Laplacian times Y (distinct rows × p).
    pub fn laplacian_times(&self, y: &DMatrix<f64>) -> DMatrix<f64> {
        self.basis.laplacian_times(&self.k, y)
    }

    /// q of the current sites with the whole A⁻¹ (for the score model).
    pub fn full_posterior(&mut self) -> Option<Q> {
        self.basis.rebuild(&self.k, &self.h, true)
    }

    /// Checks the current sites under q and sums their log C; with `eta`,
    /// writes the damped update into `next`.
    fn pass(&mut self, step: StepFactor, eta: Option<f64>) -> PassStats {
        self.mixed &= eta.is_none();
        let q = self.q.as_ref().expect("q");
        let b = &self.basis;
        let nn = b.n_neg();
        let (k, h) = (&self.k, &self.h);
        let (kn, hn) = (&mut self.next.0, &mut self.next.1);
        let rows: Vec<PassStats> = kn
            .par_chunks_mut(nn)
            .zip(hn.par_chunks_mut(nn))
            .enumerate()
            .map(|(i, (ko, ho))| {
                let mut st = PassStats::default();
                let mut log_c = 0.0;
                for j in 0..nn {
                    let idx = i * nn + j;
                    let cur = Site {
                        k: k[idx],
                        h: h[idx],
                    };
                    let (mut nk, mut nh) = (cur.k, cur.h);
                    if b.up[i] != b.un[j] {
                        let (mu, s2, u) = q.pair(b, i, j);
                        if s2 <= 1e-10 * u {
                            st.skipped += 1;
                        } else {
                            let cav = site::cavity(mu, s2, cur);
                            if cav.tau.partial_cmp(&0.0) != Some(std::cmp::Ordering::Greater) {
                                st.bad += 1;
                            } else {
                                let (new, t) = site::site_update(cav, step);
                                log_c += site::log_c(t.log_z, cav, cur);
                                if let Some(eta) = eta {
                                    nk = cur.k + eta * (new.k - cur.k);
                                    nh = cur.h + eta * (new.h - cur.h);
                                }
                            }
                        }
                        if cur.k < 0.0 {
                            st.negative += 1;
                        }
                    }
                    ko[j] = nk;
                    ho[j] = nh;
                }
                st.sum_log_c = log_c;
                st
            })
            .collect();
        rows.iter().fold(PassStats::default(), |a, r| PassStats {
            sum_log_c: a.sum_log_c + r.sum_log_c,
            negative: a.negative + r.negative,
            skipped: a.skipped + r.skipped,
            bad: a.bad + r.bad,
        })
    }

    /// `cur ← (prev + cur)/2`: the last step again with η halved.
    fn shrink(&mut self) {
        let (pk, ph) = self.prev.as_ref().expect("a previous state");
        for (c, p) in self.k.iter_mut().zip(pk) {
            *c = 0.5 * (*c + p);
        }
        for (c, p) in self.h.iter_mut().zip(ph) {
            *c = 0.5 * (*c + p);
        }
    }

    /// `next` becomes current; the current state becomes `prev`.
    fn accept_next(&mut self) {
        let prev = self.prev.get_or_insert_with(|| (Vec::new(), Vec::new()));
        std::mem::swap(&mut prev.0, &mut self.k);
        std::mem::swap(&mut prev.1, &mut self.h);
        std::mem::swap(&mut self.k, &mut self.next.0);
        std::mem::swap(&mut self.h, &mut self.next.1);
        if self.next.0.len() != self.k.len() {
            self.next = (vec![0.0; self.k.len()], vec![0.0; self.k.len()]);
        }
    }

    fn log_z(&self, stats: &PassStats, step: StepFactor) -> Option<f64> {
        let q = self.q.as_ref()?;
        (stats.skipped == 0).then(|| {
            stats.sum_log_c + self.basis.half_log_det_prior_prec() - 0.5 * q.log_det_a + 0.5 * q.b_m
                - 0.5 * step.g * self.identical as f64
        })
    }

    /// EP to convergence at γ from the current state, by the shared sweep
    /// driver (`ep::driver::run`).
    pub fn run(
        &mut self,
        gamma: f64,
        s: &EpSettings,
        ctl: &Control,
        on_sweep: &mut dyn FnMut(EpSweep),
    ) -> Result<FitOutcome, EngineError> {
        let g = gamma / self.pairs() as f64;
        if g.is_nan() || g > site::MAX_G {
            return Err(EngineError::InvalidParams(format!(
                "γ = {gamma} is {g:.3e} per pair; EP supports at most {} per pair",
                site::MAX_G
            )));
        }
        let step = StepFactor::new(g);
        // GP-EP sums log C in every pass.
        let rules = Rules {
            evidence_every_sweep: true,
        };
        let mut st = GpSweepState { ep: self, step };
        let out = driver::run(&mut st, s, rules, ctl, &mut |st, status| {
            let ep = &*st.ep;
            // The distinct rows' score moments, up to the trace's limit.
            let q = ep.q.as_ref().expect("rebuilt");
            let small = q.mean.len() <= TRACE_MOMENTS_MAX_D;
            on_sweep(EpSweep {
                sweep: status.sweep,
                delta: status.delta,
                log_z: ep.log_z(&status.stats, step),
                eta: status.eta,
                negative_share: ep.negative_share(&status.stats),
                skipped: status.stats.skipped,
                mean: if small { q.mean.clone() } else { Vec::new() },
                sd: if small {
                    q.var.iter().map(|v| v.sqrt()).collect()
                } else {
                    Vec::new()
                },
                elapsed: status.elapsed,
                inclusion: None,
            })
        })?;
        let q = self.q.as_ref().expect("converged");
        let map = &self.basis.distinct.map;
        Ok(FitOutcome {
            log_z: self.log_z(&out.stats, step),
            sweeps: out.sweeps,
            eta: out.eta,
            delta: out.delta,
            negative_share: self.negative_share(&out.stats),
            skipped: out.stats.skipped,
            identical_pairs: self.identical,
            cold_restart: out.cold_restart,
            form: self.basis.form_name(),
            mean: map.iter().map(|&u| q.mean[u]).collect(),
            sd: map.iter().map(|&u| q.var[u].sqrt()).collect(),
            seconds: out.seconds,
            spread: serde_json::Value::Null,
            landmarks: None,
            gamma_path: None,
        })
    }

    fn negative_share(&self, stats: &PassStats) -> f64 {
        stats.negative as f64 / (self.pairs() - self.identical).max(1) as f64
    }
}

/// GP-EP as the driver's state.
struct GpSweepState<'a> {
    ep: &'a mut GpEp,
    step: StepFactor,
}

impl SweepState for GpSweepState<'_> {
    fn label(&self) -> &'static str {
        "GP-EP"
    }
    fn ensure_q(&mut self) -> bool {
        self.ep.q.is_some() || self.ep.rebuild()
    }
    fn reset(&mut self) {
        self.ep.reset();
    }
    fn is_cold(&self) -> bool {
        self.ep.is_cold()
    }
    fn pass(&mut self, eta: Option<f64>, _evidence: bool) -> PassStats {
        self.ep.pass(self.step, eta)
    }
    fn accept(&mut self) {
        self.ep.accept_next();
    }
    fn shrink(&mut self) {
        self.ep.shrink();
    }
    fn can_roll_back(&self) -> bool {
        self.ep.prev.is_some()
    }
    fn forget_rollback(&mut self) {
        self.ep.prev = None;
    }
    fn complete_sweep(&mut self, _eta: f64, _warmup: bool) -> bool {
        self.ep.rebuild()
    }
    fn marginal(&self) -> Marginal {
        let q = self.ep.q.as_ref().expect("rebuilt");
        Marginal {
            mean: q.mean.clone(),
            var: q.var.clone(),
        }
    }
    fn context(&self) -> serde_json::Value {
        json!({ "gamma_over_pairs": self.step.g })
    }
    fn restore(&mut self) {
        let ep = &mut *self.ep;
        (ep.k, ep.h) = ep.prev.take().expect("a rollback point");
        ep.q = None;
    }
    fn mix_len(&self) -> Option<usize> {
        Some(2 * self.ep.k.len())
    }
    fn stage_trial(&mut self, _slot: usize, g: &mut [f64], at: &[usize], x: &mut [f64]) -> f64 {
        let ep = &*self.ep;
        let m = ep.k.len();
        g[..m].copy_from_slice(&ep.next.0);
        g[m..].copy_from_slice(&ep.next.1);
        for (o, &i) in x.iter_mut().zip(at) {
            *o = if i < m { ep.k[i] } else { ep.h[i - m] };
        }
        dist2(&ep.k, &ep.next.0) + dist2(&ep.h, &ep.next.1)
    }
    fn mix_trial(&mut self, (g, weights): Mixed<'_>) -> bool {
        let ep = &mut *self.ep;
        let m = ep.k.len();
        let mut finite = true;
        for (dst, off) in [(&mut ep.next.0, 0), (&mut ep.next.1, m)] {
            for (e, d) in dst.iter_mut().enumerate() {
                *d = weights.iter().map(|&(i, w)| w * g[i][off + e]).sum();
                finite &= d.is_finite();
            }
        }
        ep.mixed = true;
        finite
    }
    fn load_current(&mut self, g: &[f64], _slot: usize) {
        let ep = &mut *self.ep;
        let m = ep.k.len();
        ep.k.copy_from_slice(&g[..m]);
        ep.h.copy_from_slice(&g[m..]);
        ep.q = None;
    }
    fn residual2(&self) -> Option<f64> {
        let ep = &*self.ep;
        (!ep.mixed).then(|| dist2(&ep.k, &ep.next.0) + dist2(&ep.h, &ep.next.1))
    }
    fn scale_step(&mut self, f: f64) -> Option<f64> {
        let ep = &mut *self.ep;
        let (pk, ph) = ep.prev.as_ref()?;
        let step = dist2(pk, &ep.k) + dist2(ph, &ep.h);
        for (c, p) in ep.k.iter_mut().zip(pk).chain(ep.h.iter_mut().zip(ph)) {
            *c = p + f * (*c - p);
        }
        ep.q = None;
        Some(step)
    }
}

/// ‖b − a‖².
fn dist2(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(a, b)| (b - a) * (b - a)).sum()
}
