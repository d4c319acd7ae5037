//! GP-EP's damped parallel sweep loop, to the letter of ALGORITHMS.md §4 in
//! score space (§6): every sweep updates all pair sites from the same q (the
//! scalar site maths of `ep::site`, O(1) per site), damps by η and rebuilds q;
//! the new state is accepted only if the rebuild is positive definite and every
//! site's new cavity is valid — otherwise η is halved, kept halved, and the
//! step retried; η < `min_eta` ends the run as a non-convergence. Converged
//! when `Δ_t < tol·η_t`, Δ on the means and sds of the scores.
//!
//! The loop mirrors `PairEp::run` (stall halving included) on its own state so
//! that it can move onto the shared EP sweep driver (engine/select's) as its
//! third user: `run_once` is that driver's body.
//! The sites persist between runs: a run warm-starts from the previous one
//! (another γ, another length-scale).

use std::time::Instant;

use nalgebra::DMatrix;
use rayon::prelude::*;
use serde_json::json;

use super::basis::{Basis, Q};
use crate::engine::ep::pair_ep::EpSettings;
use crate::engine::ep::site::{self, Site, StepFactor};
use crate::engine::interface::{Control, EngineError};

/// One accepted sweep.
pub struct GpSweep<'a> {
    pub sweep: usize,
    pub delta: f64,
    pub log_z: Option<f64>,
    pub eta: f64,
    pub negative_share: f64,
    pub skipped: usize,
    pub elapsed: f64,
    pub q: &'a Q,
}

/// Sums over a pass's sites.
#[derive(Debug, Clone, Copy, Default)]
pub struct GpPassStats {
    pub sum_log_c: f64,
    pub negative: usize,
    pub skipped: usize,
    pub bad: usize,
}

/// A converged run.
#[derive(Debug, Clone)]
pub struct GpOutcome {
    pub sweeps: usize,
    pub eta: f64,
    pub delta: f64,
    pub log_z: Option<f64>,
    pub negative_share: f64,
    pub skipped: usize,
    pub cold_restart: bool,
    pub seconds: f64,
}

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
        }
    }

    /// All positive/negative pairs M.
    pub fn pairs(&self) -> usize {
        self.basis.n_pos() * self.basis.n_neg()
    }
    pub fn identical_pairs(&self) -> usize {
        self.identical
    }
    pub fn posterior(&self) -> Option<&Q> {
        self.q.as_ref()
    }
    /// Site (K, h) of positive i and negative j.
    pub fn site(&self, i: usize, j: usize) -> (f64, f64) {
        let idx = i * self.basis.n_neg() + j;
        (self.k[idx], self.h[idx])
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
    fn pass(&mut self, step: StepFactor, eta: Option<f64>) -> GpPassStats {
        let q = self.q.as_ref().expect("q");
        let b = &self.basis;
        let nn = b.n_neg();
        let (k, h) = (&self.k, &self.h);
        let (kn, hn) = (&mut self.next.0, &mut self.next.1);
        let rows: Vec<GpPassStats> = kn
            .par_chunks_mut(nn)
            .zip(hn.par_chunks_mut(nn))
            .enumerate()
            .map(|(i, (ko, ho))| {
                let mut st = GpPassStats::default();
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
        rows.iter()
            .fold(GpPassStats::default(), |a, r| GpPassStats {
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

    fn log_z(&self, stats: &GpPassStats, step: StepFactor) -> Option<f64> {
        let q = self.q.as_ref()?;
        (stats.skipped == 0).then(|| {
            stats.sum_log_c + self.basis.half_log_det_prior_prec() - 0.5 * q.log_det_a + 0.5 * q.b_m
                - 0.5 * step.g * self.identical as f64
        })
    }

    /// EP to convergence at γ from the current state. A warm start that does
    /// not converge is retried once from the prior (as `PairEp::run`).
    pub fn run(
        &mut self,
        gamma: f64,
        s: &EpSettings,
        ctl: &Control,
        on_sweep: &mut dyn FnMut(GpSweep<'_>),
    ) -> Result<GpOutcome, EngineError> {
        let g = gamma / self.pairs() as f64;
        if g.is_nan() || g > site::MAX_G {
            return Err(EngineError::InvalidParams(format!(
                "γ = {gamma} is {g:.3e} per pair; EP supports at most {} per pair",
                site::MAX_G
            )));
        }
        let warm = !self.is_cold();
        match self.run_once(g, s, ctl, on_sweep) {
            Err(EngineError::NotConverged { .. }) if warm => {
                self.reset();
                let mut out = self.run_once(g, s, ctl, on_sweep)?;
                out.cold_restart = true;
                Ok(out)
            }
            r => r,
        }
    }

    fn run_once(
        &mut self,
        g: f64,
        s: &EpSettings,
        ctl: &Control,
        on_sweep: &mut dyn FnMut(GpSweep<'_>),
    ) -> Result<GpOutcome, EngineError> {
        s.validate().map_err(EngineError::InvalidParams)?;
        let t0 = Instant::now();
        let step = StepFactor::new(g);
        let mut cold_restart = false;
        self.prev = None;
        if self.q.is_none() && !self.rebuild() {
            self.reset();
            cold_restart = true;
            if !self.rebuild() {
                return Err(EngineError::Numerical(
                    "the GP prior's covariance is not positive definite".into(),
                ));
            }
        }
        let mut q_prev: Option<Q> = None;
        let (mut eta, mut cur_eta) = (s.eta, s.eta);
        let (mut sweep, mut delta, mut candidate) = (0usize, f64::INFINITY, false);
        let mut halvings = 0usize;
        let (mut best_delta, mut since_best, mut stall_halvings) = (f64::INFINITY, 0usize, 0usize);
        let fail = |why: &str, sweep: usize, eta: f64, delta: f64, extra: serde_json::Value| {
            EngineError::NotConverged {
                message: format!(
                    "GP-EP {why} (after {sweep} sweeps, η = {eta:.3e}, Δ = {delta:.3e})"
                ),
                diagnostics: json!({
                    "sweeps": sweep, "eta": eta, "delta": delta, "tol": s.tol,
                    "gamma_over_pairs": g, "detail": extra,
                }),
            }
        };
        loop {
            ctl.checkpoint()?;
            let stats = self.pass(step, (!candidate).then_some(eta));
            if stats.bad > 0 {
                if self.prev.is_none() {
                    if cold_restart {
                        return Err(fail(
                            "found invalid cavities at the prior",
                            sweep,
                            eta,
                            delta,
                            json!({ "bad_sites": stats.bad }),
                        ));
                    }
                    self.reset();
                    cold_restart = true;
                    self.rebuild();
                    continue;
                }
                // Reject the current state: the same step with η halved, kept halved.
                loop {
                    cur_eta *= 0.5;
                    eta = eta.min(cur_eta);
                    halvings += 1;
                    if cur_eta < s.min_eta {
                        return Err(fail(
                            "did not converge: η fell below its minimum",
                            sweep,
                            cur_eta,
                            delta,
                            json!({ "reason": "invalid cavities", "bad_sites": stats.bad, "halvings": halvings }),
                        ));
                    }
                    self.shrink();
                    if self.rebuild() {
                        break;
                    }
                }
                delta = score_delta(self.q.as_ref().unwrap(), q_prev.as_ref().unwrap());
                candidate = delta < s.tol * cur_eta;
                continue;
            }
            let sites = (self.pairs() - self.identical).max(1) as f64;
            let negative_share = stats.negative as f64 / sites;
            let log_z = self.log_z(&stats, step);
            if sweep > 0 {
                on_sweep(GpSweep {
                    sweep,
                    delta,
                    log_z,
                    eta: cur_eta,
                    negative_share,
                    skipped: stats.skipped,
                    elapsed: t0.elapsed().as_secs_f64(),
                    q: self.q.as_ref().unwrap(),
                });
            }
            if candidate {
                return Ok(GpOutcome {
                    sweeps: sweep,
                    eta: cur_eta,
                    delta,
                    log_z,
                    negative_share,
                    skipped: stats.skipped,
                    cold_restart,
                    seconds: t0.elapsed().as_secs_f64(),
                });
            }
            if sweep >= s.max_sweeps {
                return Err(fail(
                    "did not converge within the most sweeps allowed",
                    sweep,
                    eta,
                    delta,
                    json!({ "reason": "max sweeps", "halvings": halvings, "stall_halvings": stall_halvings }),
                ));
            }
            self.accept_next();
            q_prev = self.q.take();
            cur_eta = eta;
            while !self.rebuild() {
                cur_eta *= 0.5;
                eta = cur_eta;
                halvings += 1;
                if cur_eta < s.min_eta {
                    return Err(fail(
                        "did not converge: η fell below its minimum",
                        sweep,
                        cur_eta,
                        delta,
                        json!({ "reason": "q not positive definite", "halvings": halvings }),
                    ));
                }
                self.shrink();
            }
            sweep += 1;
            delta = score_delta(self.q.as_ref().unwrap(), q_prev.as_ref().unwrap());
            candidate = delta < s.tol * cur_eta;
            if delta < best_delta {
                (best_delta, since_best) = (delta, 0);
            } else {
                since_best += 1;
                if s.stall_sweeps > 0 && since_best >= s.stall_sweeps && !candidate {
                    // A cycle: smaller steps from the current (valid) state.
                    eta *= 0.5;
                    stall_halvings += 1;
                    (best_delta, since_best) = (f64::INFINITY, 0);
                    if eta < s.min_eta {
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
}

/// Δ = max over distinct rows of |m − m'|/sd' and |sd/sd' − 1| (primes: previous).
pub fn score_delta(new: &Q, old: &Q) -> f64 {
    let mut d: f64 = 0.0;
    for a in 0..new.mean.len() {
        let (sd, sd_old) = (new.var[a].sqrt(), old.var[a].sqrt());
        d = d
            .max((new.mean[a] - old.mean[a]).abs() / sd_old)
            .max((sd / sd_old - 1.0).abs());
    }
    d
}
