//! `--method ep --prior spike-slab`: the `Ep` engine hands spike-and-slab
//! problems to this run (same settings, same per-sweep `EpSweep` events).

use std::cell::RefCell;
use std::time::Instant;

use serde_json::json;

use super::cv::{self, SsCvSettings, fold_ss_settings};
use super::model::{SpikeSlab, SpikeSlabEp, SsPath};
use super::release::ReleaseStatus;
use super::sweep::{SsRules, SsSettings, SsSweepInfo};
use super::tune::{self, Hooks, Tuning};
use crate::engine::ep::continuation;
use crate::engine::ep::design::Design;
use crate::engine::ep::engine::{Ep, GammaMode, Sink, Z_QUANTILES};
use crate::engine::ep::power;
use crate::engine::ep::settings::EpSettings;
use crate::engine::event::{EpSweep, Event, LogLevel};
use crate::engine::fit::{EngineKind, Fit, MethodReport, ScoreModel};
use crate::engine::interface::{Control, EngineError, Observer};
use crate::engine::numerics::isa::detected_isa;
use crate::engine::prior::Prior;
use crate::engine::problem::Problem;

/// A feature counts as selected when its inclusion probability exceeds this.
pub const SELECTED: f64 = 0.5;

/// The spike-and-slab settings of an `Ep` engine.
pub fn settings(ep: &Ep) -> SsSettings {
    let off = std::env::var("PACAUC_SS_RULES_OFF").ok();
    let rules = SsRules::of(off.as_deref());
    SsSettings {
        ep: ep.settings,
        evidence_every_sweep: ep.evidence_every_sweep,
        site_steps: ep.site_steps,
        rules,
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

/// What releasing the negative-site fix did (`details.fix_release`).
fn release_report(status: &ReleaseStatus, on: bool, reduced: bool) -> serde_json::Value {
    let what = match status {
        _ if !on => "off (keep_fixes)",
        _ if reduced => "not available in the reduced form",
        ReleaseStatus::NotNeeded => "not needed (no fix active at convergence)",
        ReleaseStatus::Skipped => {
            "skipped (every slab feature's site is fixed: no fixed point without the fix)"
        }
        ReleaseStatus::Released(_) => "released",
        ReleaseStatus::Failed => "failed (the fixed answer is reported)",
    };
    let (sweeps, negative) = match status {
        ReleaseStatus::Released(r) => (Some(r.sweeps), Some(r.negative_prior_sites)),
        _ => (None, None),
    };
    json!({ "status": what, "sweeps": sweeps, "negative_prior_sites": negative })
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
        mean: design.theta_mean_of(&s.moments.mean),
        sd: design.theta_sd_of(&s.moments.var),
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
    if ep.pairs.is_some() {
        return Err(EngineError::InvalidParams(
            "a sample of pairs is supported with the Gaussian and ARD priors, not spike-and-slab"
                .into(),
        ));
    }
    let settings = settings(ep);
    let t0 = Instant::now();
    let d = pb.d();
    let sink = RefCell::new(Sink::new(obs, &settings.ep));
    sink.borrow_mut().emit(Event::Started {
        engine: "ep".into(),
        n: pb.n(),
        d,
        pairs: pb.pairs(),
        gamma: ep.gamma.announced(pb.gamma),
    });
    let start = SpikeSlab {
        spike_var,
        slab_var,
        incl,
    };
    let what = Tuning {
        incl: ep.tune_inclusion,
        slab: ep.tune_slab,
    };
    // `--inclusion-prior auto` starts from p = ½ (with small p and moderate γ EP
    // can fail to converge or collapse to all-spike, see ALGORITHMS.md §5 notes).
    let start = if what.incl {
        SpikeSlab { incl: 0.5, ..start }
    } else {
        start
    };
    let info = |message: String| Event::Log {
        level: LogLevel::Info,
        message,
    };
    // γ: the problem's, or by cross-validation at the starting prior.
    let t_cv = Instant::now();
    let cv_report = match &ep.gamma {
        GammaMode::Fixed => None,
        GammaMode::Cv {
            grid_over_n,
            folds,
            seed,
        } => {
            let cvs = SsCvSettings {
                grid_over_n,
                folds: *folds,
                seed: *seed,
                prior: start,
                form: ep.form,
                precision: ep.precision,
                ss: &settings,
                release_fixes: ep.release_fixes,
            };
            if what.incl || what.slab {
                sink.borrow_mut().emit(info(format!(
                    "ep spike-slab: the CV of γ holds the prior at its starting point (v0 = {:e}, \
                     v1 = {:e}, p = {}); the scales given as auto are tuned by evidence at the \
                     chosen γ",
                    start.spike_var, start.slab_var, start.incl
                )));
            }
            let r = cv::cross_validate(&pb.x, &pb.y, &cvs, ctl, &mut |m| {
                sink.borrow_mut().emit(info(m))
            })?;
            sink.borrow_mut().emit(info(format!(
                "ep spike-slab: γ = {}n = {} by {folds}-fold CV (EP in the folds converged to \
                 tol = {:e}, {}× the final fit's)",
                r.chosen,
                r.chosen * pb.n() as f64,
                fold_ss_settings(&settings).ep.tol,
                crate::engine::ep::cv::FOLD_TOL_FACTOR
            )));
            Some(r)
        }
    };
    let cv_seconds = t_cv.elapsed().as_secs_f64();
    let gamma = cv_report
        .as_ref()
        .map_or(pb.gamma, |r| r.chosen * pb.n() as f64);
    let mut model = SpikeSlabEp::with_form(&pb.x, &pb.y, start, ep.precision, ep.form)?;
    model.set_release_fixes(ep.release_fixes);
    let mut on_sweep = |s: &SsSweepInfo<'_>, design: &Design| {
        sink.borrow_mut()
            .emit(Event::EpSweep(sweep_event(s, design)));
    };
    // The continuation's path (None: tuned).
    let mut gamma_path = None;
    // Which power EP α the answer is (`power`; None: tuned, always EP's).
    let mut power_used: Option<power::PowerUsed> = None;
    let (outcome, tuned) = if what.incl || what.slab {
        let mut hooks = Hooks {
            on_sweep: &mut on_sweep,
            new_run: &mut || sink.borrow_mut().drop_earlier_sweeps(),
            log: &mut |level, message| sink.borrow_mut().emit(Event::Log { level, message }),
        };
        let t = tune::run(&mut model, start, gamma, &settings, ctl, what, &mut hooks)?;
        if t.slab_at_edge {
            sink.borrow_mut().emit(Event::Log {
                level: LogLevel::Warn,
                message: format!(
                    "ep spike-slab: log Z_EP is largest at v0/v1 = {:.1e}, an end of the searched \
                     range [1e-6, 0.1]; it may rise beyond it",
                    t.prior.spike_var / t.prior.slab_var
                ),
            });
        }
        (
            t.outcome,
            Some((
                t.prior,
                t.incl_trace,
                t.incl_converged,
                t.slab_trace,
                t.rounds,
                t.rounds_converged,
            )),
        )
    } else {
        // EP, or power EP where EP has no fixed point in reach (`power`).
        let mut attempt = |s: &EpSettings| {
            let settings = SsSettings { ep: *s, ..settings };
            model.reset();
            // One way to reach γ (`continuation`; an older spec's
            // `--ep-start classic` runs it as well).
            let mut sp = SsPath {
                model: &mut model,
                settings,
                ctl,
                on_sweep: &mut on_sweep,
                new_run: &mut || sink.borrow_mut().drop_earlier_sweeps(),
            };
            // Where power EP follows, the walk hands over at its first
            // failed point.
            let bisect = match s.power.is_auto() {
                true => continuation::Bisect::HandOver,
                false => continuation::Bisect::ToMinStep,
            };
            let mut log = |p: &continuation::PathPoint| {
                sink.borrow_mut().emit(Event::Log {
                    level: LogLevel::Info,
                    message: continuation::describe(p).replacen("ep:", "ep spike-slab:", 1),
                })
            };
            let kappa = continuation::KAPPA;
            continuation::reach_with(&mut sp, gamma, pb.n(), kappa, bisect, &mut log)
        };
        let ((out, gpath), used) =
            power::run_with_fallback(&settings.ep, &mut attempt, &mut |alpha, why| {
                let mut sk = sink.borrow_mut();
                sk.drop_earlier_sweeps();
                sk.emit(Event::Log {
                    level: LogLevel::Info,
                    message: power::fallback_note("ep spike-slab", alpha, why),
                });
            })?;
        (gamma_path, power_used) = (Some(gpath), Some(used));
        (out, None)
    };
    let SpikeSlab {
        spike_var,
        slab_var,
        incl,
    } = model.prior();
    let mut sink = sink.into_inner();
    if let Some((_, _, incl_settled, _, rounds, rounds_settled)) = &tuned {
        if what.incl && !incl_settled {
            sink.emit(Event::Log {
                level: LogLevel::Warn,
                message:
                    "ep spike-slab: the inclusion prior was still moving when its search stopped"
                        .into(),
            });
        }
        if !rounds_settled {
            sink.emit(Event::Log {
                level: LogLevel::Warn,
                message: format!("ep spike-slab: p and v1 were still moving after {rounds} rounds"),
            });
        }
    }
    if settings.rules != SsRules::default() {
        // A measurement hook, not a user setting: a fit it changed says so.
        sink.emit(Event::Log {
            level: LogLevel::Warn,
            message: format!(
                "ep spike-slab: PACAUC_SS_RULES_OFF turned off §5's rules (negative-site fix {}, \
                 per-site steps {}): a measurement, not the default fit",
                if settings.rules.fix { "on" } else { "off" },
                if settings.rules.site_steps {
                    "on"
                } else {
                    "off"
                },
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
    if matches!(model.release(), ReleaseStatus::Skipped) {
        // Not an EP fixed point: released, the slab features' precisions go
        // negative and the score's scale runs away; with the fix the scale rests
        // on its floor 1/(100·v1). Glass (γ = n, split 15): EP's sd of K is 0.27
        // where SMC's is 0.65, and Ba (SMC: inclusion 0.57) is left out.
        sink.emit(Event::Log {
            level: LogLevel::Warn,
            message: "ep spike-slab: every feature in the slab still needs the negative-site fix \
                      at convergence, so the answer is the fixed iteration's, not an EP fixed \
                      point: its sds and the score's scale rest on the fix (they can be far too \
                      small); check with SMC"
                .into(),
        });
    }
    let all_spike = outcome.inclusion.iter().all(|&p| p <= SELECTED);
    let all_spike_words = "no feature has inclusion above ½: EP may sit at its all-spike fixed \
                           point (the AUC risk is scale-free, so with p < ½ every coefficient in \
                           the spike is self-consistent); try --inclusion-prior auto (p by \
                           evidence), a larger p or γ, or check with --method smc";
    if all_spike {
        // Scale-free risk: "every coefficient in the spike" is a self-consistent EP
        // fixed point that SMC does not confirm on data with clear signal.
        sink.emit(Event::Log {
            level: LogLevel::Warn,
            message: all_spike_words.into(),
        });
    }
    let (mean, sd) = (model.mean(), model.sd());
    let mut fit = Fit::new(
        EngineKind::Ep,
        pb.names.clone(),
        ScoreModel::Linear {
            weights: mean.clone(),
        },
    );
    if all_spike {
        fit.reports.push(MethodReport::AllSpike {
            words: all_spike_words.into(),
        });
    }
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
    fit.low_rank_covariance = model.cov_low_rank();
    fit.converged = true;
    fit.cv = cv_report.as_ref().map(|r| r.summary());
    fit.reports.push(MethodReport::EpWork {
        sweeps: outcome.sweeps,
        sites: model.state().sites(),
        form: if model.is_reduced() {
            "reduced"
        } else {
            "primal"
        },
        rank: model.dim(),
        site_storage: Some(model.state().storage()),
    });
    fit.details = json!({
        "prior": "spike-slab",
        "sweeps": outcome.sweeps,
        "eta": outcome.eta,
        "eta_prior_sites": outcome.eta_prior,
        "site_steps": settings.site_steps,
        "fix_release": release_report(model.release(), ep.release_fixes, model.is_reduced()),
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
        "form": if model.is_reduced() { "reduced" } else { "primal" },
        "rank": model.dim(),
        "site_storage": model.state().storage(),
        "isa": detected_isa().name(),
        "gamma": {
            "value": gamma,
            "over_n": gamma / pb.n() as f64,
            "per_pair": gamma / model.pairs() as f64,
            "chosen_by": if cv_report.is_some() { "cv" } else { "fixed" },
            "start": "prior",
            "convention": "π ∝ prior · exp(−γ R_n), R_n = share of discordant pairs; each pair's factor is exp(−(γ/M)·1{<θ, x_i − x_j> < 0})",
        },
        "evidence": outcome.evidence,
        "cv": cv_report,
        "cv_tol": cv_report.as_ref().map(|_| fold_ss_settings(&settings).ep.tol),
        "cv_prior": cv_report.as_ref().map(|_| json!({
            "spike_var": start.spike_var, "slab_var": start.slab_var, "incl": start.incl,
            "note": "the prior is held at its starting point during the CV of γ",
        })),
        "inclusion_prior": {
            "value": incl,
            "chosen_by": if what.incl { "evidence" } else { "fixed" },
            "converged": tuned.as_ref().map(|t| t.2),
            "trace": tuned.as_ref().map(|t| &t.1),
        },
        "slab_var": {
            "value": slab_var,
            "spike_var": spike_var,
            "spike_over_slab": spike_var / slab_var,
            "chosen_by": if what.slab { "evidence" } else { "fixed" },
            "trace": tuned.as_ref().filter(|_| what.slab).map(|t| &t.3),
        },
        "tuning_rounds": tuned.as_ref().map(|t| json!({ "rounds": t.4, "settled": t.5 })),
        "seconds": { "cv": cv_seconds, "ep": outcome.seconds, "total": t0.elapsed().as_secs_f64() },
    });
    if let Some(p) = gamma_path {
        fit.details["gamma"]["start"] = json!("continuation");
        fit.details["gamma"]["path"] = json!(p);
        if let Some(note) = ep.settings.start.retired_note() {
            fit.details["gamma"]["classic_start"] = json!(note);
        }
    }
    if let Some(used) = power_used.filter(|u| !u.is_ep()) {
        fit.reports.push(MethodReport::PowerEp {
            alpha: used.alpha,
            ep_failure: used.ep_failure.clone(),
        });
        fit.details["power"] = json!(used);
    }
    fit.trace = sink.trace;
    Ok(fit)
}
