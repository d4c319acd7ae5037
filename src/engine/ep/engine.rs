//! The EP engine (`--method ep`): γ fixed or by cross-validation, isotropic or
//! ARD Gaussian prior, the final EP run streamed as `EpSweep` events.

use std::cell::RefCell;
use std::time::Instant;

use serde_json::json;

use super::ard::{self, ArdSettings};
use super::continuation;
use super::cv::{self, CvSettings};
use super::design::{Design, Form};
use super::linear::{LinearEp, LinearPath};
use super::outcome::SweepInfo;
use super::power;
use super::settings::{EpSettings, EpStart};
use super::spike_slab::SiteStepRule;
use super::store::Precision;
use crate::engine::event::{EpSweep, Event, LogLevel};
use crate::engine::fit::{EngineKind, Fit, ScoreModel};
use crate::engine::interface::{Control, Engine, EngineError, Observer};
use crate::engine::numerics::isa::detected_isa;
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

impl GammaMode {
    /// The γ a run's `Started` event announces: the problem's, or NaN while
    /// cross-validation has yet to choose it (the run logs the choice).
    pub fn announced(&self, problem_gamma: f64) -> f64 {
        match self {
            GammaMode::Fixed => problem_gamma,
            GammaMode::Cv { .. } => f64::NAN,
        }
    }
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
    /// A sink for an EP run under `s`; a retired controller asked for says
    /// so first (a Warn log: stderr and the record's warnings).
    pub(crate) fn new(obs: &'a mut dyn Observer, s: &EpSettings) -> Sink<'a> {
        let mut sink = Sink {
            obs,
            trace: Vec::new(),
            kept_from: 0,
        };
        if let Some(note) = s.controller.retired_note() {
            sink.emit(Event::Log {
                level: LogLevel::Warn,
                message: note.into(),
            });
        }
        sink
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
        let t0 = Instant::now();
        let d = pb.d();
        let (vars, ard_on) = match &pb.prior {
            Prior::Gaussian { var } => (vec![*var; d], false),
            Prior::Ard { vars } => (vars.clone(), true),
            Prior::SpikeSlab { .. } => return super::spike_slab::engine::run(self, pb, ctl, obs),
            Prior::Gp(gp) => return super::gp::run(self, pb, gp, ctl, obs),
        };
        let sink = RefCell::new(Sink::new(obs, &self.settings));
        let log = |m: String| Event::Log {
            level: LogLevel::Info,
            message: m,
        };
        sink.borrow_mut().emit(Event::Started {
            engine: "ep".into(),
            n: pb.n(),
            d,
            pairs: pb.pairs(),
            gamma: self.gamma.announced(pb.gamma),
        });

        // γ.
        let t_cv = Instant::now();
        let (gamma, cv_result, cv_start) = match &self.gamma {
            GammaMode::Fixed => (pb.gamma, None, None),
            GammaMode::Cv {
                grid_over_n,
                folds,
                seed,
            } => {
                let cvs = CvSettings {
                    grid_over_n,
                    folds: *folds,
                    seed: *seed,
                    form: self.form,
                    precision: self.precision,
                    ep: &self.settings,
                    ard: ard_on.then_some(&self.ard),
                    pairs: self.pairs,
                };
                let cv::CvOutcome { report: r, start } =
                    cv::cross_validate(&pb.x, &pb.y, &vars, &cvs, ctl, &mut |m| {
                        sink.borrow_mut().emit(log(m))
                    })?;
                let g = r.chosen * pb.n() as f64;
                sink.borrow_mut().emit(log(format!(
                    "ep: γ = {}n = {g} by {folds}-fold CV (EP in the folds converged to \
                     tol = {:e}, {}× the final fit's)",
                    r.chosen,
                    cv::fold_settings(&self.settings).tol,
                    cv::FOLD_TOL_FACTOR
                )));
                (g, Some(r), start)
            }
        };
        let cv_seconds = t_cv.elapsed().as_secs_f64();

        // The final fit, its sweeps streamed.
        let t_ep = Instant::now();
        let sampling = self.pairs.map(|s| (s, &[][..]));
        let mut lep =
            LinearEp::with_pairs(&pb.x, &pb.y, &vars, self.form, self.precision, sampling)?;
        lep.state_mut()
            .set_evidence_every_sweep(self.evidence_every_sweep);
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
        let mut power_used: Option<power::PowerUsed> = None;
        let (outcome, ard_result) = if ard_on {
            let r = ard::optimise(
                &mut lep,
                gamma,
                &self.settings,
                &self.ard,
                ctl,
                &mut on_sweep,
                &mut |st| {
                    let mut sk = sink.borrow_mut();
                    // The record keeps the sweeps of the last EP run only.
                    sk.drop_earlier_sweeps();
                    sk.emit(log(format!(
                        "ep ard: iteration {}, log Z_EP = {}, largest change of log ϑ {:.3e}",
                        st.iteration,
                        st.log_z.map_or("-".into(), |z| format!("{z:.6}")),
                        st.max_change
                    )));
                },
            )?;
            (r.outcome.clone(), Some(r))
        } else {
            // EP, or power EP where EP has no fixed point in reach (`power`).
            let mut attempt = |s: &EpSettings| {
                let mut start = "prior";
                if !lep.state().sites_are_zero() {
                    lep.state_mut().reset();
                }
                // One way to reach γ, after a CV too (`continuation`; an
                // older spec's `--ep-start classic` runs it as well):
                // directly from the folds' average posterior when there is
                // one, else from the prior; the walk in γ if that fails.
                if cv_result.is_some()
                    && cv_start
                        .as_ref()
                        .is_some_and(|q0| lep.start_from(q0, gamma))
                {
                    start = "cv_folds";
                }
                // The retired classic start runs the continuation as it is:
                // no retry from the prior at a failed point (`driver::run`).
                let mut lp = LinearPath {
                    lep: &mut lep,
                    settings: EpSettings {
                        start: EpStart::Continuation,
                        ..*s
                    },
                    ctl,
                    on_sweep: &mut on_sweep,
                };
                let (out, path) =
                    continuation::reach(&mut lp, gamma, pb.n(), continuation::KAPPA, &mut |p| {
                        sink.borrow_mut().emit(log(continuation::describe(p)))
                    })?;
                let how = if path.points.len() > 1 {
                    "continuation"
                } else {
                    start
                };
                Ok((out, how, path))
            };
            let ((out, start, path), used) =
                power::run_with_fallback(&self.settings, &mut attempt, &mut |alpha, why| {
                    let mut sk = sink.borrow_mut();
                    sk.drop_earlier_sweeps();
                    sk.emit(log(power::fallback_note("ep", alpha, why)));
                })?;
            (final_start, gamma_path) = (start, Some(path));
            power_used = Some(used);
            (out, None)
        };
        let ep_seconds = t_ep.elapsed().as_secs_f64();
        if let Some(st) = lep.sampled_start() {
            sink.borrow_mut().emit(log(format!(
                "ep: started from EP on a sample of {} pairs ({} sweeps to tol {:e}, {:.1} s): {}",
                st.pairs, st.sweeps, st.tol, st.seconds, st.note
            )));
        }
        let mean = lep.mean();
        let sd = lep.sd();
        let mut sink = sink.into_inner();
        if let Some(r) = &ard_result
            && !r.converged
        {
            sink.emit(Event::Log {
                level: LogLevel::Warn,
                message: format!(
                    "ep ard: variances still moving after {} iterations",
                    r.trace.len()
                ),
            });
        }
        if outcome.stats.skipped > 0 {
            sink.emit(Event::Log {
                level: LogLevel::Warn,
                message: format!(
                    "ep: {} near-identical pairs were skipped; log Z_EP is not reported",
                    outcome.stats.skipped
                ),
            });
        }

        let pairs_report = self.pairs.map(|s| {
            let sample = lep.state().sample().expect("sampled");
            let (mp, mn) = lep.class_scores(&mean);
            let risk = sample.risk(&mp, &mn);
            let noise = sample.gamma_noise(gamma, risk);
            if noise > 0.5 {
                sink.emit(Event::Log {
                    level: LogLevel::Warn,
                    message: format!(
                        "ep: the pair sample is small for this γ: γ·sd(R_B) = {noise:.2} (B = {}, \
                         sampled risk {risk:.4}); the sampled posterior can differ from the \
                         all-pairs one — use more pairs (B ≫ γ²R(1 − R) = {:.3e}) or a smaller γ",
                        sample.len(),
                        gamma * gamma * risk * (1.0 - risk)
                    ),
                });
            }
            json!({
                "sampled": sample.len(), "all": lep.all_pairs(), "seed": s.seed,
                "sampled_risk": risk, "gamma_sd_risk": noise,
                "note": "sites on B pairs drawn uniformly with replacement, once for the run; γ·sd(R_B) ≪ 1 keeps the sampled Gibbs posterior close to the all-pairs one",
            })
        });
        let final_vars = ard_result.as_ref().map_or(vars.clone(), |r| r.vars.clone());
        let prior = if ard_on {
            Prior::Ard {
                vars: final_vars.clone(),
            }
        } else {
            pb.prior.clone()
        };
        let mut fit = Fit::new(
            EngineKind::Ep,
            pb.names.clone(),
            ScoreModel::Linear {
                weights: mean.clone(),
            },
        );
        fit.quantiles = mean
            .iter()
            .zip(&sd)
            .map(|(&m, &s)| Z_QUANTILES.map(|z| m + z * s))
            .collect();
        fit.mean = mean;
        fit.sd = sd;
        fit.log_evidence = outcome.evidence.log_z();
        fit.gamma = Some(gamma);
        fit.prior = Some(prior);
        fit.covariance = lep.cov();
        fit.low_rank_covariance = lep.cov_low_rank();
        fit.converged = true;
        fit.cv = cv_result.as_ref().map(|r| r.summary());
        fit.reports.push(crate::engine::fit::MethodReport::EpWork {
            sweeps: outcome.sweeps,
            sites: lep.state().sites(),
            form: if design_reduced { "reduced" } else { "primal" },
            rank,
            site_storage: Some(lep.state().storage()),
        });
        fit.details = json!({
            "sweeps": outcome.sweeps,
            "eta": outcome.eta,
            "delta": outcome.delta,
            "tol": self.settings.tol,
            "negative_share": outcome.negative_share,
            "sites": lep.state().sites(),
            "pairs": lep.pairs(),
            "pair_sample": pairs_report,
            "identical_pairs": lep.state().identical_pairs(),
            "skipped_sites": outcome.stats.skipped,
            "cold_restart": outcome.cold_restart,
            "extrapolations": outcome.extrapolations,
            "form": if design_reduced { "reduced" } else { "primal" },
            "rank": rank,
            "site_storage": lep.state().storage(),
            "isa": detected_isa().name(),
            "gamma": {
                "value": gamma,
                "over_n": gamma / pb.n() as f64,
                "per_pair": gamma / lep.pairs() as f64,
                "chosen_by": if cv_result.is_some() { "cv" } else { "fixed" },
                "final_start": (cv_result.is_some() || gamma_path.is_some()).then_some(final_start),
                "convention": "π ∝ prior · exp(−γ R_n), R_n = share of discordant pairs; each pair's factor is exp(−(γ/M)·1{<θ, x_i − x_j> < 0})",
            },
            "evidence": outcome.evidence,
            "cv": cv_result,
            "sampled_start": lep.sampled_start(),
            "cv_tol": cv_result.as_ref().map(|_| cv::fold_settings(&self.settings).tol),
            "cv_site_storage": cv_result.as_ref().map(|_| match self.precision {
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
            "seconds": { "cv": cv_seconds, "ep": ep_seconds, "total": t0.elapsed().as_secs_f64() },
        });
        if let Some(p) = gamma_path {
            fit.details["gamma"]["path"] = json!(p);
            if let Some(note) = self.settings.start.retired_note() {
                fit.details["gamma"]["classic_start"] = json!(note);
            }
        }
        if let Some(used) = power_used.filter(|u| !u.is_ep()) {
            fit.reports.push(crate::engine::fit::MethodReport::PowerEp {
                alpha: used.alpha,
                ep_failure: used.ep_failure.clone(),
            });
            fit.details["power"] = json!(used);
        }
        fit.trace = sink.trace;
        Ok(fit)
    }
}
