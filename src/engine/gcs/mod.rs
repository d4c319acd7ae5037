//! The great-circle sampler (GH00's kernel Gibbs sampler applied to the AUC
//! risk; ALGORITHMS.md §10): exact hit-and-run on directions under a Gaussian
//! prior, no tuning. `circle` (one exact draw on a great circle), `design`
//! (whitened rows of the AUC, label-noise and kernel versions), `pair_codes`
//! (the counting pass's inner loop, vectorised), `chain`, `sampler` (chains on
//! threads, diagnostics, stopping rule), `kernel` (Gram matrix → feature map),
//! `evidence` (log Z along a ladder of γ), `reference` (ellipses around a
//! Gaussian: elliptical slice moves of the whole θ, for many dimensions). GH00's uses
//! of the draws (transduction, rejection curve, active learning) are in
//! `engine::votes`, for any sampler's draws.

pub mod adapt;
pub mod chain;
pub mod circle;
pub mod design;
pub mod directions;
#[cfg(test)]
mod directions_tests;
pub mod evidence;
pub mod kernel;
pub mod pair_codes;
pub mod reference;
pub mod sampler;
pub mod settings;
pub mod slice;

use nalgebra::DMatrix;
use serde_json::json;

pub use design::Design;
pub use sampler::GcsRun;
pub use settings::{CircleMove, Directions, GaussianReference, GcsSettings, Loss, ReferenceOrigin};

use crate::engine::event::{Event, Histogram, LogLevel};
use crate::engine::fit::{EngineKind, Fit, MethodReport, Particles, ScoreModel};
use crate::engine::interface::{Control, Engine, EngineError, Observer};
use crate::engine::mcmc_diag::{Diagnostics, quantile_sorted};
use crate::engine::problem::Problem;
use crate::engine::reduction::{LiftedEvents, RowSpace};

/// Histogram bins of the marginals (as SMC's).
const HIST_BINS: usize = 40;

/// The great-circle sampler of the Gibbs posterior of a linear score.
#[derive(Debug, Clone, Default)]
pub struct Gcs {
    pub settings: GcsSettings,
}

impl Engine for Gcs {
    fn name(&self) -> &'static str {
        "gcs"
    }

    fn params(&self) -> serde_json::Value {
        serde_json::to_value(&self.settings).unwrap_or_default()
    }

    fn run(
        &self,
        problem: &Problem,
        ctl: &Control,
        obs: &mut dyn Observer,
    ) -> Result<Fit, EngineError> {
        self.settings.validate()?;
        if self.settings.row_space
            && self.settings.loss == Loss::Auc
            && let Some(rs) = RowSpace::of(problem)
        {
            obs.observe(Event::Log {
                level: LogLevel::Info,
                message: format!(
                    "the great-circle sampler walks the data's row space: {} of {} dimensions \
                     (exact: the risk sees θ only through Xθ, and the rest keep their Gaussian \
                     prior, drawn exactly)",
                    rs.rank(),
                    problem.d()
                ),
            });
            let reduced = rs.problem(problem)?;
            let reference = self.settings.reference.as_ref().map(|g| {
                let (mean, cov) = rs.reduce_gaussian(&g.mean, &g.cov);
                GaussianReference {
                    mean,
                    cov,
                    source: format!("{} (in the row space)", g.source),
                }
            });
            let inner = Gcs {
                settings: GcsSettings {
                    row_space: false,
                    reference,
                    ..self.settings.clone()
                },
            };
            let mut lifted = LiftedEvents {
                inner: obs,
                d: problem.d(),
            };
            let fit = inner.run(&reduced, ctl, &mut lifted)?;
            let mut fit = rs.lift_fit(problem, fit, self.settings.seed);
            fit.details["settings"]["row_space"] = json!(true);
            return Ok(fit);
        }
        let design = Design::of(problem, self.settings.loss)?;
        obs.observe(Event::Started {
            engine: "gcs".into(),
            n: problem.n(),
            d: problem.d(),
            pairs: design.pairs() as usize,
            gamma: design.gamma,
        });
        let (run, path) = if self.settings.evidence {
            let path = evidence::evidence_path(&design, &self.settings, ctl, obs)?;
            (path.top, Some(path.rungs))
        } else {
            (sampler::run(&design, &self.settings, ctl, obs)?, None)
        };
        let mut warn = |m: String| {
            obs.observe(Event::Log {
                level: LogLevel::Warn,
                message: m.clone(),
            });
            m
        };
        let mut warnings = Vec::new();
        if !run.converged {
            let (bulk, tail) = run.smallest_ess();
            warnings.push(warn(format!(
                "the great-circle sampler stopped at its step cap ({} steps per chain) before its \
                 targets: largest R-hat {:.4} (target ≤ {}), smallest bulk ESS {:.0} and tail ESS \
                 {:.0} (target ≥ {})",
                run.steps,
                run.largest_rhat(),
                self.settings.max_rhat,
                bulk,
                tail,
                self.settings.min_ess
            )));
        }
        if run.work.envelope_misses > 0 {
            warnings.push(warn(format!(
                "{} proposals found the envelope below the density (rounding at bucket edges); \
                 their acceptance was clamped to 1",
                run.work.envelope_misses
            )));
        }
        let mut fit = build_fit(problem, &self.settings, &design, run, warnings);
        if let Some(rungs) = path {
            let top = rungs.last().copied();
            fit.log_evidence = top.map(|r| r.log_z);
            fit.details["log_evidence_mcse"] = json!(top.map(|r| r.mcse));
            fit.details["evidence_path"] = json!(rungs);
            if let Loss::LabelNoise { .. } = self.settings.loss {
                let levels: Vec<_> = evidence::noise_levels(&rungs, problem.n())
                    .into_iter()
                    .map(
                        |(q, log_z, mcse)| json!({"noise": q, "log_evidence": log_z, "mcse": mcse}),
                    )
                    .collect();
                fit.details["noise_evidence"] = json!(levels);
            }
        }
        Ok(fit)
    }
}

fn diag_json(name: &str, d: &Diagnostics) -> serde_json::Value {
    json!({
        "name": name, "mean": d.mean, "sd": d.sd, "rhat": d.rhat, "ess_bulk": d.ess_bulk,
        "ess_tail": d.ess_tail, "mcse_mean": d.mcse_mean, "mcse_sd": d.mcse_sd,
    })
}

/// The `Fit`: the Bayes point (posterior mean) as the score, summaries of the
/// features (the intercept of the label-noise loss goes to `details`), the
/// pooled draws as particles and every diagnostic.
pub fn build_fit(
    problem: &Problem,
    settings: &GcsSettings,
    design: &Design,
    run: GcsRun,
    warnings: Vec<String>,
) -> Fit {
    let d = problem.d();
    let dd = run.d;
    let pooled = run.pooled();
    let s = pooled.len() / dd;
    let theta = DMatrix::from_fn(s, d, |i, k| pooled[i * dd + k]);
    let mean: Vec<f64> = run.diagnostics[..d].iter().map(|x| x.mean).collect();
    let mut fit = Fit::new(
        EngineKind::Gcs,
        problem.names.clone(),
        ScoreModel::Linear {
            weights: mean.clone(),
        },
    );
    fit.sd = run.diagnostics[..d].iter().map(|x| x.sd).collect();
    fit.mean = mean;
    fit.quantiles = (0..d)
        .map(|k| {
            let mut col: Vec<f64> = theta.column(k).iter().copied().collect();
            col.sort_unstable_by(f64::total_cmp);
            [0.025, 0.25, 0.5, 0.75, 0.975].map(|p| quantile_sorted(&col, p))
        })
        .collect();
    fit.histograms = (0..d)
        .map(|k| {
            let col: Vec<f64> = theta.column(k).iter().copied().collect();
            Histogram::of(&col, None, HIST_BINS)
        })
        .collect();
    fit.gamma = Some(design.gamma); // label noise: n·ln((1 − q)/q) on the error rate
    fit.prior = Some(problem.prior.clone());
    fit.converged = run.converged;
    let mut table: Vec<serde_json::Value> = (0..d)
        .map(|k| diag_json(&problem.names[k], &run.diagnostics[k]))
        .collect();
    let risk = diag_json("risk", &run.diagnostics[dd]);
    let intercept = design.intercept.then(|| {
        let x = diag_json("(intercept)", &run.diagnostics[d]);
        table.push(x.clone());
        x
    });
    let w = run.work;
    let kept = run.sampling;
    // After the warm-up (the fixed kernel); a refused move jumps 0.
    let per_kept = |x: f64| x / kept.steps.max(1) as f64;
    let note = match run.directions {
        Directions::Adapted => {
            "tangent directions P_u z, z ~ N(0, Σ): Σ the chains' pooled covariance of the \
             direction over the last warm-up window, shrunk towards the isotropic matrix \
             (estimates), the warm-up doubled while consecutive estimates differed by more than \
             1.5× in a typical direction's variance; fixed after the warm-up, each move accepted \
             with the Metropolis–Hastings ratio (u'ᵀΣ⁻¹u' / uᵀΣ⁻¹u)^((d−2)/2), which keeps the \
             posterior exact"
        }
        Directions::Gaussian => {
            "ellipses around a Gaussian N(μ, S) of the whitened θ (elliptical slice moves with \
             respect to it, the rest of the posterior as the likelihood), then the radius redrawn \
             exactly: μ, S from the chains' pooled directions over the last warm-up window \
             (w = χ_d·u exactly), shrunk towards the diagonal, the warm-up doubled while \
             consecutive covariances differed by more than 1.5× in a typical direction's \
             variance; fixed after the warm-up, so the kept draws come from one exact chain"
        }
        Directions::Uniform => "tangent directions uniform: every move accepted",
    };
    let mut directions = json!({
        "kind": run.directions.name(),
        "asked": settings.directions.name(),
        "uniform_because": run.uniform_because,
        "estimates": run.estimates,
        "note": note,
    });
    if let Some(origin) = &settings.reference_origin {
        directions["reference"] = json!(origin);
    }
    fit.details = json!({
        "rhat": run.largest_rhat(),
        "ess_bulk_min": run.smallest_ess().0,
        "ess_tail_min": run.smallest_ess().1,
        "chains": settings.chains,
        "steps_per_chain": run.steps,
        "warmup": run.warmup,
        "draws": s,
        "loss": settings.loss,
        "gamma_risk": design.gamma,
        "diagnostics": table,
        "risk": risk,
        "intercept": intercept,
        "arcs_per_step": 2 * design.pairs(),
        "circle_move": if run.slice { "slice" } else { "exact" },
        "circle_move_note": if run.slice {
            "a slice move on each circle (shrinking bracket, exact: reversible on the circle); \
             proposals_per_step counts its risk evaluations"
        } else {
            "the exact draw on each circle (a pass over the pairs, then rejection from a \
             bucketed envelope); proposals_per_step counts its trials"
        },
        "proposals_per_step": w.proposals as f64 / w.steps.max(1) as f64,
        "directions": directions,
        "acceptance": per_kept(kept.accepted as f64),
        "mean_jump": per_kept(kept.jump),
        "envelope_misses": w.envelope_misses,
        "sampler_seconds": run.elapsed,
        "converged_means": format!(
            "every coefficient and the risk reached bulk and tail ESS ≥ {} with rank-normalised \
             split R-hat ≤ {} over {} chains",
            settings.min_ess, settings.max_rhat, settings.chains
        ),
        "warnings": warnings,
        "settings": settings,
    });
    fit.reports.push(MethodReport::SampledRisk {
        loss: settings.loss.name(),
        mean_risk: run.diagnostics[dd].mean,
    });
    fit.trace = run.trace;
    let n = theta.nrows() as f64;
    let mut c = theta.clone();
    for (k, mut col) in c.column_iter_mut().enumerate() {
        col.add_scalar_mut(-fit.mean[k]);
    }
    fit.covariance = Some(crate::engine::numerics::linalg::at_b(&c, &c) / n);
    // The label-noise loss's classifier decides at minus its intercept.
    let thresholds = design
        .intercept
        .then(|| pooled.chunks_exact(dd).map(|th| -th[d]).collect());
    fit.particles = Some(Particles {
        theta,
        weights: None,
        thresholds,
    });
    fit
}
