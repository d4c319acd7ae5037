//! The EP engine (`--method ep`): γ fixed or by cross-validation, isotropic or
//! ARD Gaussian prior, the final EP run streamed as `EpSweep` events.

use std::time::Instant;

use serde_json::json;

use super::ard::{self, ArdSettings};
use super::cv::{self, CvSettings};
use super::design::{Design, Form};
use super::kernel::detected_isa;
use super::linear::LinearEp;
use super::pair_ep::{EpSettings, SweepInfo};
use super::store::Precision;
use crate::engine::event::{EpSweep, Event, LogLevel};
use crate::engine::fit::{Fit, ScoreModel};
use crate::engine::prior::Prior;
use crate::engine::problem::Problem;
use crate::engine::run::{Control, Engine, EngineError, Observer};

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
        }
    }
}

/// Most coefficients whose per-sweep means and sds are kept in the fit's trace
/// (the observer always gets them all).
const TRACE_MOMENTS_MAX_D: usize = 200;
/// Largest O(d r²) cost of per-sweep sds in the reduced form.
const SWEEP_SD_FLOPS: usize = 2_000_000;
/// Normal quantiles of 2.5, 25, 50, 75, 97.5%.
const Z_QUANTILES: [f64; 5] = [
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
            Prior::SpikeSlab { .. } => {
                return Err(EngineError::InvalidParams(
                    "this EP engine takes a Gaussian or ARD prior; spike-and-slab EP is a separate engine".into(),
                ));
            }
        };
        let mut trace: Vec<Event> = Vec::new();
        let mut emit = |obs: &mut dyn Observer, e: Event, keep: bool| {
            if keep {
                let mut kept = e.clone();
                if let Event::EpSweep(s) = &mut kept
                    && s.mean.len() > TRACE_MOMENTS_MAX_D
                {
                    s.mean.clear();
                    s.sd.clear();
                }
                trace.push(kept);
            }
            obs.observe(e);
        };
        let log = |m: String| Event::Log {
            level: LogLevel::Info,
            message: m,
        };
        emit(
            obs,
            Event::Started {
                engine: "ep".into(),
                n: pb.n(),
                d,
                pairs: pb.pairs(),
                gamma: pb.gamma,
            },
            true,
        );

        // γ.
        let t_cv = Instant::now();
        let (gamma, cv_result) = match &self.gamma {
            GammaMode::Fixed => (pb.gamma, None),
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
                };
                let mut lines = Vec::new();
                let r = cv::cross_validate(&pb.x, &pb.y, &vars, &cvs, ctl, &mut |m| lines.push(m))?;
                for l in lines {
                    emit(obs, log(l), true);
                }
                let g = r.chosen_over_n * pb.n() as f64;
                emit(
                    obs,
                    log(format!(
                        "ep: γ = {}n = {g} by {folds}-fold CV",
                        r.chosen_over_n
                    )),
                    true,
                );
                (g, Some(r))
            }
        };
        let cv_seconds = t_cv.elapsed().as_secs_f64();

        // The final fit, its sweeps streamed.
        let t_ep = Instant::now();
        let mut lep = LinearEp::new(&pb.x, &pb.y, &vars, self.form, self.precision)?;
        lep.state_mut()
            .set_evidence_every_sweep(self.evidence_every_sweep);
        let design_reduced = lep.design().is_reduced();
        let rank = lep.design().dim();
        let mut sweep_events: Vec<Event> = Vec::new();
        let (outcome, ard_result) = {
            let mut on_sweep = |s: &SweepInfo<'_>, design: &Design| {
                // Marginal sds of θ cost O(d r²) per sweep in the reduced form: only when cheap.
                let cheap =
                    !design.is_reduced() || d * design.dim() * design.dim() <= SWEEP_SD_FLOPS;
                sweep_events.push(Event::EpSweep(EpSweep {
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
                }));
            };
            if ard_on {
                let mut steps = Vec::new();
                let r = ard::optimise(
                    &mut lep,
                    gamma,
                    &self.settings,
                    &self.ard,
                    ctl,
                    &mut on_sweep,
                    &mut |s| steps.push(s.clone()),
                )?;
                (r.outcome.clone(), Some(r))
            } else {
                (lep.run(gamma, &self.settings, ctl, &mut on_sweep)?, None)
            }
        };
        let ep_seconds = t_ep.elapsed().as_secs_f64();
        let mean = lep.mean();
        let sd = lep.sd();
        for e in sweep_events {
            emit(obs, e, true);
        }
        if let Some(r) = &ard_result {
            emit(
                obs,
                log(format!(
                    "ep ard: {} evidence iterations, log Z_EP = {}",
                    r.trace.len(),
                    r.outcome
                        .evidence
                        .log_z()
                        .map_or("-".into(), |z| format!("{z:.4}"))
                )),
                true,
            );
            if !r.converged {
                emit(
                    obs,
                    Event::Log {
                        level: LogLevel::Warn,
                        message: format!(
                            "ep ard: variances still moving after {} iterations",
                            r.trace.len()
                        ),
                    },
                    true,
                );
            }
        }
        if outcome.stats.skipped > 0 {
            emit(
                obs,
                Event::Log {
                    level: LogLevel::Warn,
                    message: format!(
                        "ep: {} near-identical pairs were skipped; log Z_EP is not reported",
                        outcome.stats.skipped
                    ),
                },
                true,
            );
        }

        let final_vars = ard_result.as_ref().map_or(vars.clone(), |r| r.vars.clone());
        let prior = if ard_on {
            Prior::Ard {
                vars: final_vars.clone(),
            }
        } else {
            pb.prior.clone()
        };
        let mut fit = Fit::new(
            "ep",
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
        fit.converged = true;
        fit.details = json!({
            "sweeps": outcome.sweeps,
            "eta": outcome.eta,
            "delta": outcome.delta,
            "tol": self.settings.tol,
            "negative_share": outcome.negative_share,
            "sites": lep.state().sites(),
            "pairs": lep.pairs(),
            "identical_pairs": lep.state().identical_pairs(),
            "skipped_sites": outcome.stats.skipped,
            "cold_restart": outcome.cold_restart,
            "form": if design_reduced { "reduced" } else { "primal" },
            "rank": rank,
            "site_storage": lep.state().storage(),
            "isa": detected_isa().name(),
            "gamma": {
                "value": gamma,
                "over_n": gamma / pb.n() as f64,
                "per_pair": gamma / lep.pairs() as f64,
                "chosen_by": if cv_result.is_some() { "cv" } else { "fixed" },
                "convention": "π ∝ prior · exp(−γ R_n), R_n = share of discordant pairs; each pair's factor is exp(−(γ/M)·1{<θ, x_i − x_j> < 0})",
            },
            "evidence": outcome.evidence,
            "cv": cv_result,
            "ard": ard_result.as_ref().map(|r| json!({
                "iterations": r.trace.len(),
                "converged": r.converged,
                "trace": r.trace,
                "vars": pb.names.iter().zip(&r.vars).map(|(n, v)| json!({ "name": n, "var": v })).collect::<Vec<_>>(),
            })),
            "seconds": { "cv": cv_seconds, "ep": ep_seconds, "total": t0.elapsed().as_secs_f64() },
        });
        fit.trace = trace;
        Ok(fit)
    }
}
