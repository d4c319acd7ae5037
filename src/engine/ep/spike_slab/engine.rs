//! `--method ep --prior spike-slab`: the `Ep` engine hands spike-and-slab
//! problems to this run (same settings, same per-sweep `EpSweep` events).

use std::cell::RefCell;
use std::time::Instant;

use serde_json::json;

use super::model::{SpikeSlab, SpikeSlabEp};
use super::sweep::{SsSettings, SsSweepInfo};
use crate::engine::ep::design::Design;
use crate::engine::ep::engine::{Ep, GammaMode, Sink, Z_QUANTILES};
use crate::engine::ep::kernel::detected_isa;
use crate::engine::event::{EpSweep, Event, LogLevel};
use crate::engine::fit::{Fit, ScoreModel};
use crate::engine::prior::Prior;
use crate::engine::problem::Problem;
use crate::engine::run::{Control, EngineError, Observer};

/// Most evidence iterations of `--inclusion-prior auto`, and their stopping
/// rule (relative change of p).
const INCLUSION_ITERS: usize = 50;
const INCLUSION_TOL: f64 = 1e-3;

/// A feature counts as selected when its inclusion probability exceeds this.
pub const SELECTED: f64 = 0.5;

/// The spike-and-slab settings of an `Ep` engine.
pub fn settings(ep: &Ep) -> SsSettings {
    SsSettings {
        ep: ep.settings,
        evidence_every_sweep: ep.evidence_every_sweep,
        ..SsSettings::default()
    }
}

/// The posterior mean restricted to the selected features (None if none is).
pub fn selected_score(mean: &[f64], inclusion: &[f64]) -> Option<Vec<f64>> {
    inclusion.iter().any(|&p| p > SELECTED).then(|| {
        mean.iter()
            .zip(inclusion)
            .map(|(&m, &p)| if p > SELECTED { m } else { 0.0 })
            .collect()
    })
}

/// An `EpSweep` event from a spike-and-slab sweep.
pub fn sweep_event(s: &SsSweepInfo<'_>, design: &Design) -> EpSweep {
    EpSweep {
        sweep: s.sweep,
        delta: s.delta,
        log_z: s.log_z,
        eta: s.eta,
        negative_share: s.negative_share,
        skipped: s.skipped,
        mean: design.theta_mean(s.q),
        sd: design.theta_sd(s.q),
        elapsed: s.elapsed,
        inclusion: Some(s.inclusion.to_vec()),
    }
}

pub fn run(
    ep: &Ep,
    pb: &Problem,
    ctl: &Control,
    obs: &mut dyn Observer,
) -> Result<Fit, EngineError> {
    let Prior::SpikeSlab {
        spike_var,
        slab_var,
        incl,
    } = pb.prior
    else {
        return Err(EngineError::InvalidParams(
            "spike-and-slab EP needs the spike-and-slab prior".into(),
        ));
    };
    if !matches!(ep.gamma, GammaMode::Fixed) {
        return Err(EngineError::InvalidParams(
            "--gamma auto (cross-validation) is not supported with --prior spike-slab; give γ \
             (a number or a multiple of n)"
                .into(),
        ));
    }
    let settings = settings(ep);
    let t0 = Instant::now();
    let d = pb.d();
    let gamma = pb.gamma;
    let sink = RefCell::new(Sink {
        obs,
        trace: Vec::new(),
        kept_from: 0,
    });
    sink.borrow_mut().emit(Event::Started {
        engine: "ep".into(),
        n: pb.n(),
        d,
        pairs: pb.pairs(),
        gamma,
    });
    let prior = SpikeSlab {
        spike_var,
        slab_var,
        incl,
    };
    // `--inclusion-prior auto` starts from p = ½ (with small p and moderate γ EP
    // can fail to converge or collapse to all-spike, see ALGORITHMS.md §5 notes).
    let prior = if ep.tune_inclusion {
        SpikeSlab { incl: 0.5, ..prior }
    } else {
        prior
    };
    let mut model = SpikeSlabEp::new(&pb.x, &pb.y, prior, ep.precision)?;
    let mut on_sweep = |s: &SsSweepInfo<'_>, design: &Design| {
        sink.borrow_mut()
            .emit(Event::EpSweep(sweep_event(s, design)));
    };
    let mut outcome = model.run(gamma, &settings, ctl, &mut on_sweep)?;
    let mut tuning = Vec::new();
    let mut tuned_converged = true;
    if ep.tune_inclusion {
        // At an EP fixed point ∂ log Z_EP/∂p = Σ_k (w1_k/p − w0_k/(1 − p)), zero at
        // p = mean_k w1_k: iterate that, each step a warm-started EP run.
        tuned_converged = false;
        let mut p = prior.incl;
        for iteration in 1..=INCLUSION_ITERS {
            let new_p = outcome.inclusion.iter().sum::<f64>() / d as f64;
            tuning.push(json!({
                "iteration": iteration, "incl": p, "log_z": outcome.evidence.log_z(),
                "sweeps": outcome.sweeps, "next": new_p,
            }));
            sink.borrow_mut().emit(Event::Log {
                level: LogLevel::Info,
                message: format!(
                    "ep spike-slab: p = {p:.5}, log Z_EP = {}, next p = {new_p:.5}",
                    outcome
                        .evidence
                        .log_z()
                        .map_or("-".into(), |z| format!("{z:.6}"))
                ),
            });
            if (new_p / p).ln().abs() < INCLUSION_TOL {
                tuned_converged = true;
                break;
            }
            if iteration == INCLUSION_ITERS {
                break;
            }
            model.set_prior(SpikeSlab {
                incl: new_p,
                ..prior
            })?;
            // The record keeps the sweeps of the last EP run only.
            sink.borrow_mut().drop_earlier_sweeps();
            match model.run(gamma, &settings, ctl, &mut on_sweep) {
                Ok(o) => {
                    outcome = o;
                    p = new_p;
                }
                Err(EngineError::NotConverged { .. }) => {
                    // Keep the last p at which EP converged.
                    model.set_prior(SpikeSlab { incl: p, ..prior })?;
                    sink.borrow_mut().drop_earlier_sweeps();
                    outcome = model.run(gamma, &settings, ctl, &mut on_sweep)?;
                    break;
                }
                Err(e) => return Err(e),
            }
        }
    }
    let incl = model.prior().incl;
    let mut sink = sink.into_inner();
    if !tuned_converged {
        sink.emit(Event::Log {
            level: LogLevel::Warn,
            message: format!(
                "ep spike-slab: the inclusion prior was still moving after {INCLUSION_ITERS} iterations"
            ),
        });
    }
    if outcome.skipped > 0 {
        sink.emit(Event::Log {
            level: LogLevel::Warn,
            message: format!(
                "ep: {} near-identical pairs were skipped; log Z_EP is not reported",
                outcome.skipped
            ),
        });
    }
    if outcome.inclusion.iter().all(|&p| p <= SELECTED) {
        // Scale-free risk: "every coefficient in the spike" is a self-consistent EP
        // fixed point that SMC does not confirm on data with clear signal.
        sink.emit(Event::Log {
            level: LogLevel::Warn,
            message: "no feature has inclusion above ½: EP may sit at its all-spike fixed point; \
                      check with --method smc, or raise --inclusion-prior or γ"
                .into(),
        });
    }
    let (mean, sd) = (model.mean(), model.sd());
    let mut fit = Fit::new(
        "ep",
        pb.names.clone(),
        ScoreModel::Linear {
            weights: mean.clone(),
        },
    );
    if let Some(w) = selected_score(&mean, &outcome.inclusion) {
        fit.alt_models
            .push(("selected".into(), ScoreModel::Linear { weights: w }));
    }
    fit.quantiles = mean
        .iter()
        .zip(&sd)
        .map(|(&m, &s)| Z_QUANTILES.map(|z| m + z * s))
        .collect();
    let selected: Vec<&String> = pb
        .names
        .iter()
        .zip(&outcome.inclusion)
        .filter(|(_, p)| **p > SELECTED)
        .map(|(n, _)| n)
        .collect();
    fit.mean = mean;
    fit.sd = sd;
    fit.inclusion = Some(outcome.inclusion.clone());
    fit.log_evidence = outcome.evidence.log_z();
    fit.gamma = Some(gamma);
    fit.prior = Some(Prior::SpikeSlab {
        spike_var,
        slab_var,
        incl,
    });
    fit.covariance = model.cov();
    fit.converged = true;
    fit.details = json!({
        "prior": "spike-slab",
        "sweeps": outcome.sweeps,
        "eta": outcome.eta,
        "eta_prior_sites": outcome.eta_prior,
        "delta": outcome.delta,
        "tol": settings.ep.tol,
        "negative_share": outcome.negative_share,
        "negative_site_fixes": { "total": outcome.fixes_total, "last_sweep": outcome.fixes_last },
        "selected": { "threshold": SELECTED, "names": selected },
        "sites": model.state().sites(),
        "pairs": model.pairs(),
        "identical_pairs": model.state().identical_pairs(),
        "skipped_sites": outcome.skipped,
        "cold_restart": outcome.cold_restart,
        "form": "primal",
        "site_storage": model.state().storage(),
        "isa": detected_isa().name(),
        "gamma": {
            "value": gamma,
            "over_n": gamma / pb.n() as f64,
            "per_pair": gamma / model.pairs() as f64,
            "chosen_by": "fixed",
            "convention": "π ∝ prior · exp(−γ R_n), R_n = share of discordant pairs; each pair's factor is exp(−(γ/M)·1{<θ, x_i − x_j> < 0})",
        },
        "evidence": outcome.evidence,
        "inclusion_prior": {
            "value": incl,
            "chosen_by": if ep.tune_inclusion { "evidence" } else { "fixed" },
            "converged": tuned_converged,
            "trace": tuning,
        },
        "seconds": { "ep": outcome.seconds, "total": t0.elapsed().as_secs_f64() },
    });
    fit.trace = sink.trace;
    Ok(fit)
}
