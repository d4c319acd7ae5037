//! The EP engine (`--method ep`): γ fixed or by cross-validation, isotropic or
//! ARD Gaussian prior, the final EP run streamed as `EpSweep` events.

use std::cell::RefCell;
use std::time::Instant;

use serde_json::json;

use super::ard;
use super::config::Ep;
use super::continuation;
use super::cv::{self, EpCv};
use super::design::Design;
use super::folds::FoldFlavour;
use super::linear::{LinearEp, LinearPath};
use super::outcome::SweepInfo;
use super::run::{self, Chosen, Final, Flavour, Work};
use super::settings::EpSettings;
use super::sink::Sink;
use super::store::Precision;
use crate::engine::event::{EpSweep, Event};
use crate::engine::fit::Fit;
use crate::engine::interface::{Control, Engine, EngineError, Observer};
use crate::engine::prior::Prior;
use crate::engine::problem::Problem;

/// Largest O(d r²) cost of per-sweep sds in the reduced form.
const SWEEP_SD_FLOPS: usize = 2_000_000;

impl Engine for Ep {
    fn name(&self) -> &'static str {
        "ep"
    }

    fn params(&self) -> serde_json::Value {
        serde_json::to_value(self).unwrap_or_default()
    }

    fn run(&self, pb: &Problem, ctl: &Control, obs: &mut dyn Observer) -> Result<Fit, EngineError> {
        self.settings
            .validate()
            .map_err(EngineError::InvalidParams)?;
        let (vars, ard_on) = match &pb.prior {
            Prior::Gaussian { var } => (vec![*var; pb.d()], false),
            Prior::Ard { vars } => (vars.clone(), true),
            Prior::SpikeSlab { .. } => return super::spike_slab::engine::run(self, pb, ctl, obs),
            Prior::Gp(gp) => return super::gp::run(self, pb, gp, ctl, obs),
        };
        let mut flavour = Linear {
            ep: self,
            vars,
            ard_on,
        };
        run::run(&mut flavour, self, pb, ctl, obs)
    }
}

/// Gaussian or ARD EP as a flavour of the run.
struct Linear<'a> {
    ep: &'a Ep,
    /// The prior's variances.
    vars: Vec<f64>,
    ard_on: bool,
}

impl Flavour for Linear<'_> {
    const PREFIX: &'static str = "ep";
    const SCORE: &'static str = "<θ, x_i − x_j>";

    fn folds(&self, pb: &Problem) -> impl FoldFlavour {
        EpCv::new(self.ep, &self.vars, self.ard_on, &pb.y)
    }

    fn fit(
        &mut self,
        pb: &Problem,
        gamma: f64,
        cv_result: Option<&Chosen>,
        sink: &RefCell<Sink<'_>>,
        ctl: &Control,
        t0: Instant,
    ) -> Result<Final, EngineError> {
        let (ep, d) = (self.ep, pb.d());
        let t_ep = Instant::now();
        let sampling = ep.pairs.map(|s| (s, &[][..]));
        let mut lep =
            LinearEp::with_pairs(&pb.x, &pb.y, &self.vars, ep.form, ep.precision, sampling)?;
        lep.state_mut()
            .set_evidence_every_sweep(ep.evidence_every_sweep);
        let design_reduced = lep.design().is_reduced();
        let rank = lep.design().dim();
        let mut on_sweep = |s: &SweepInfo<'_>, design: &Design| {
            // Marginal sds of θ cost O(d r²) per sweep in the reduced form: only when cheap.
            let cheap = !design.is_reduced() || d * design.dim() * design.dim() <= SWEEP_SD_FLOPS;
            sink.borrow_mut().emit(Event::EpSweep(EpSweep {
                sweep: s.sweep,
                delta: s.delta,
                log_z: s.log_z,
                eta: s.eta,
                negative_share: s.negative_share,
                skipped: s.skipped,
                mean: design.theta_mean(s.q),
                sd: if cheap {
                    design.theta_sd(s.q)
                } else {
                    Vec::new()
                },
                elapsed: s.elapsed,
                inclusion: None,
            }));
        };
        // Where the final fit started: the folds' posterior (CV), the prior or the continuation.
        let mut final_start = "prior";
        // The continuation's path (None: ARD).
        let mut gamma_path = None;
        // Which power EP α the answer is (`power`; None: ARD, EP's own).
        let mut power_used = None;
        let (outcome, ard_result) = if self.ard_on {
            let r = ard::optimise(
                &mut lep,
                gamma,
                &ep.settings,
                &ep.ard,
                ctl,
                &mut on_sweep,
                &mut |st| {
                    let mut sk = sink.borrow_mut();
                    // The record keeps the sweeps of the last EP run only.
                    sk.drop_earlier_sweeps();
                    sk.info(format!(
                        "ep ard: iteration {}, log Z_EP = {}, largest change of log ϑ {:.3e}",
                        st.iteration,
                        st.log_z.map_or("-".into(), |z| format!("{z:.6}")),
                        st.max_change
                    ));
                },
            )?;
            (r.outcome.clone(), Some(r))
        } else {
            let cv_start = cv_result.and_then(|c| c.start.as_ref());
            let attempt = |s: &EpSettings| {
                let mut start = "prior";
                if !lep.state().sites_are_zero() {
                    lep.state_mut().reset();
                }
                // One way to reach γ, after a CV too (`continuation`):
                // directly from the folds' average posterior when there is
                // one, else from the prior; the walk in γ if that fails.
                if cv_start.is_some_and(|q0| lep.start_from(q0, gamma)) {
                    start = "cv_folds";
                }
                let mut lp = LinearPath {
                    lep: &mut lep,
                    settings: *s,
                    ctl,
                    on_sweep: &mut on_sweep,
                };
                let (out, path) =
                    continuation::reach(&mut lp, gamma, pb.n(), continuation::KAPPA, &mut |p| {
                        sink.borrow_mut().info(continuation::describe(p))
                    })?;
                let how = if path.points.len() > 1 {
                    "continuation"
                } else {
                    start
                };
                Ok((out, how, path))
            };
            let ((out, start, path), used) = run::with_fallback(&ep.settings, "ep", sink, attempt)?;
            (final_start, gamma_path, power_used) = (start, Some(path), Some(used));
            (out, None)
        };
        let ep_seconds = t_ep.elapsed().as_secs_f64();
        let mut sink = sink.borrow_mut();
        if let Some(st) = lep.sampled_start() {
            sink.info(format!(
                "ep: started from EP on a sample of {} pairs ({} sweeps to tol {:e}, {:.1} s): {}",
                st.pairs, st.sweeps, st.tol, st.seconds, st.note
            ));
        }
        let mean = lep.mean();
        let sd = lep.sd();
        if let Some(r) = &ard_result
            && !r.converged
        {
            sink.warn(format!(
                "ep ard: variances still moving after {} iterations",
                r.trace.len()
            ));
        }
        sink.warn_skipped("ep", outcome.stats.skipped);
        let pairs_report = ep.pairs.map(|s| {
            let sample = lep.state().sample().expect("sampled");
            let (mp, mn) = lep.class_scores(&mean);
            let risk = sample.risk(&mp, &mn);
            let noise = sample.gamma_noise(gamma, risk);
            if noise > 0.5 {
                sink.warn(format!(
                    "ep: the pair sample is small for this γ: γ·sd(R_B) = {noise:.2} (B = {}, \
                     sampled risk {risk:.4}); the sampled posterior can differ from the \
                     all-pairs one — use more pairs (B ≫ γ²R(1 − R) = {:.3e}) or a smaller γ",
                    sample.len(),
                    gamma * gamma * risk * (1.0 - risk)
                ));
            }
            json!({
                "sampled": sample.len(), "all": lep.all_pairs(), "seed": s.seed,
                "sampled_risk": risk, "gamma_sd_risk": noise,
                "note": "sites on B pairs drawn uniformly with replacement, once for the run; γ·sd(R_B) ≪ 1 keeps the sampled Gibbs posterior close to the all-pairs one",
            })
        });
        let mut fit = run::linear_fit(pb, mean, sd);
        fit.log_evidence = outcome.evidence.log_z();
        fit.prior = Some(match &ard_result {
            Some(r) => Prior::Ard {
                vars: r.vars.clone(),
            },
            None => pb.prior.clone(),
        });
        fit.covariance = lep.cov();
        fit.low_rank_covariance = lep.cov_low_rank();
        let cv_report = cv_result.map(|c| &c.report);
        fit.details = json!({
            "pair_sample": pairs_report,
            "extrapolations": outcome.extrapolations,
            "gamma": {
                "final_start": (cv_result.is_some() || gamma_path.is_some()).then_some(final_start),
            },
            "evidence": outcome.evidence,
            "cv": cv_report,
            "sampled_start": lep.sampled_start(),
            "cv_tol": cv_report.map(|_| cv::fold_settings(&ep.settings).tol),
            "cv_site_storage": cv_report.map(|_| match ep.precision {
                Precision::Auto => format!(
                    "f32 in folds of at least {} pairs, else f64",
                    cv::FOLD_F32_PAIRS
                ),
                p => format!("{p:?}").to_lowercase(),
            }),
            "ard": ard_result.as_ref().map(|r| json!({
                "iterations": r.trace.len(),
                "converged": r.converged,
                "trace": r.trace,
                "vars": pb.names.iter().zip(&r.vars).map(|(n, v)| json!({ "name": n, "var": v })).collect::<Vec<_>>(),
            })),
            "seconds": {
                "cv": cv_result.map_or(0.0, |c| c.seconds),
                "ep": ep_seconds,
                "total": t0.elapsed().as_secs_f64(),
            },
        });
        let form = if design_reduced { "reduced" } else { "primal" };
        let state = lep.state();
        let work = Work {
            sweeps: outcome.sweeps,
            eta: outcome.eta,
            delta: outcome.delta,
            negative_share: outcome.negative_share,
            sites: state.sites(),
            pairs: lep.pairs(),
            identical_pairs: state.identical_pairs(),
            skipped: outcome.stats.skipped,
            cold_restart: outcome.cold_restart,
            form,
            rank,
            site_storage: Some(state.storage()),
        };
        Ok(Final {
            fit,
            work,
            path: gamma_path,
            power: power_used,
        })
    }
}
