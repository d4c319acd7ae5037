//! The EP engine (`--method ep`): γ fixed or by cross-validation, isotropic or
//! ARD Gaussian prior, the final EP run streamed as `EpSweep` events.

use std::cell::RefCell;
use std::time::Instant;

use serde_json::json;

use super::ard::{self, ArdSettings};
use super::continuation;
use super::cv::{self, EpCv};
use super::design::{Design, Form};
use super::folds::FoldFlavour;
use super::linear::{LinearEp, LinearPath};
use super::outcome::SweepInfo;
use super::run::{self, Chosen, Final, Flavour, Work};
use super::settings::EpSettings;
use super::spike_slab::SiteStepRule;
use super::store::Precision;
use crate::engine::event::{EpSweep, Event, LogLevel};
use crate::engine::fit::Fit;
use crate::engine::interface::{Control, Engine, EngineError, Observer};
use crate::engine::pairs::PairSampling;
use crate::engine::prior::Prior;
use crate::engine::problem::Problem;

/// How γ is chosen.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
#[serde(tag = "mode", rename_all = "snake_case")]
pub enum GammaMode {
    /// The problem's γ.
    Fixed,
    /// Stratified k-fold CV over γ = c·n, c in `grid_over_n`.
    Cv {
        grid_over_n: Vec<f64>,
        folds: usize,
        seed: u64,
    },
}

/// Expectation Propagation for the AUC Gibbs posterior with a Gaussian (or ARD) prior.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Ep {
    pub settings: EpSettings,
    pub gamma: GammaMode,
    pub form: Form,
    pub precision: Precision,
    pub ard: ArdSettings,
    /// Report log Z_EP at every sweep (costs ~15% of a sweep) or only at the end.
    pub evidence_every_sweep: bool,
    /// Spike-and-slab: choose the inclusion prior p by maximising log Z_EP.
    #[serde(default)]
    pub tune_inclusion: bool,
    /// Spike-and-slab: choose the slab variance v1 (v0 fixed) by maximising log Z_EP.
    #[serde(default)]
    pub tune_slab: bool,
    /// Spike-and-slab: steps of prior sites whose negative-site fix recurs.
    #[serde(default)]
    pub site_steps: SiteStepRule,
    /// Spike-and-slab, primal form: continue without the negative-site fix when
    /// it is still active at convergence (`spike_slab::release`).
    pub release_fixes: bool,
    /// Sites on a uniform sample of B pairs instead of all n+ · n− (one sample
    /// for the whole run; Gaussian and ARD priors). None: all pairs.
    #[serde(default)]
    pub pairs: Option<PairSampling>,
}

impl Default for Ep {
    fn default() -> Self {
        Ep {
            settings: EpSettings::default(),
            gamma: GammaMode::Fixed,
            form: Form::Auto,
            precision: Precision::Auto,
            ard: ArdSettings::default(),
            evidence_every_sweep: true,
            tune_inclusion: false,
            tune_slab: false,
            site_steps: SiteStepRule::default(),
            release_fixes: true,
            pairs: None,
        }
    }
}

/// Most coefficients whose per-sweep means and sds are kept in the fit's trace
/// (the observer always gets them all; GP-EP's score moments go to neither
/// above it: up to `EXACT_MAX_ROWS` of them a sweep).
pub(crate) const TRACE_MOMENTS_MAX_D: usize = 200;
/// Streams events to the observer and keeps them for the fit's trace.
pub(crate) struct Sink<'a> {
    pub(crate) obs: &'a mut dyn Observer,
    pub(crate) trace: Vec<Event>,
    /// Sweeps before this index belong to earlier EP runs (ARD iterations).
    pub(crate) kept_from: usize,
}

impl<'a> Sink<'a> {
    pub(crate) fn new(obs: &'a mut dyn Observer) -> Sink<'a> {
        Sink {
            obs,
            trace: Vec::new(),
            kept_from: 0,
        }
    }

    pub(crate) fn info(&mut self, message: String) {
        self.emit(Event::Log {
            level: LogLevel::Info,
            message,
        });
    }

    pub(crate) fn warn(&mut self, message: String) {
        self.emit(Event::Log {
            level: LogLevel::Warn,
            message,
        });
    }

    /// The warning of a run that skipped near-identical pairs.
    pub(crate) fn warn_skipped(&mut self, prefix: &str, skipped: usize) {
        if skipped > 0 {
            self.warn(format!(
                "{prefix}: {skipped} near-identical pairs were skipped; log Z_EP is not reported"
            ));
        }
    }

    pub(crate) fn emit(&mut self, e: Event) {
        let mut kept = e.clone();
        if let Event::EpSweep(s) = &mut kept
            && s.mean.len() > TRACE_MOMENTS_MAX_D
        {
            s.mean.clear();
            s.sd.clear();
        }
        self.trace.push(kept);
        self.obs.observe(e);
    }

    /// Strips the moments (means, sds, inclusion) of the sweep events of EP runs
    /// before the current one (ARD iterations, spike-and-slab tuning): the
    /// record keeps every sweep's Δ, log Z and η — a replay shows the sweeps the
    /// live view showed — and the moments of the final run only.
    pub(crate) fn drop_earlier_sweeps(&mut self) {
        for e in &mut self.trace[..self.kept_from] {
            if let Event::EpSweep(s) = e {
                s.mean = Vec::new();
                s.sd = Vec::new();
                s.inclusion = None;
            }
        }
        self.kept_from = self.trace.len();
    }
}

/// Largest O(d r²) cost of per-sweep sds in the reduced form.
const SWEEP_SD_FLOPS: usize = 2_000_000;
/// Normal quantiles of 2.5, 25, 50, 75, 97.5%.
pub(crate) const Z_QUANTILES: [f64; 5] = [
    -1.959_963_984_540_054,
    -0.674_489_750_196_081_7,
    0.0,
    0.674_489_750_196_081_7,
    1.959_963_984_540_054,
];

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
