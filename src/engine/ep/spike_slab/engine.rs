//! `--method ep --prior spike-slab`: the `Ep` engine hands spike-and-slab
//! problems to this run (same settings, same per-sweep `EpSweep` events).

use std::cell::RefCell;
use std::time::Instant;

use serde_json::json;

use super::cv::{SsCv, fold_ss_settings};
use super::model::{SpikeSlab, SpikeSlabEp, SsPath};
use super::release::ReleaseStatus;
use super::sweep::{SsSettings, SsSweepInfo};
use super::tune::{self, Hooks, Tuning};
use crate::engine::ep::config::Ep;
use crate::engine::ep::continuation;
use crate::engine::ep::design::Design;
use crate::engine::ep::folds::FoldFlavour;
use crate::engine::ep::run::{self, Chosen, Final, Flavour, Work};
use crate::engine::ep::settings::EpSettings;
use crate::engine::ep::sink::Sink;
use crate::engine::event::{EpSweep, Event};
use crate::engine::fit::{Fit, MethodReport, ScoreModel};
use crate::engine::interface::{Control, EngineError, Observer};
use crate::engine::prior::Prior;
use crate::engine::problem::Problem;

/// A feature counts as selected when its inclusion probability exceeds this.
pub const SELECTED: f64 = 0.5;

/// The spike-and-slab settings of an `Ep` engine.
pub fn settings(ep: &Ep) -> SsSettings {
    SsSettings {
        ep: ep.settings,
        evidence_every_sweep: ep.evidence_every_sweep,
        site_steps: ep.site_steps,
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
    let what = Tuning {
        incl: ep.tune_inclusion,
        slab: ep.tune_slab,
    };
    // `--inclusion-prior auto` starts from p = ½ (with small p and moderate γ EP
    // can fail to converge or collapse to all-spike, see ALGORITHMS.md §5 notes).
    let start = SpikeSlab {
        spike_var,
        slab_var,
        incl: if what.incl { 0.5 } else { incl },
    };
    let mut flavour = Ss {
        ep,
        settings: settings(ep),
        start,
        what,
    };
    run::run(&mut flavour, ep, pb, ctl, obs)
}

/// Spike-and-slab EP as a flavour of the run.
struct Ss<'a> {
    ep: &'a Ep,
    settings: SsSettings,
    /// The prior at the start (held during the CV of γ).
    start: SpikeSlab,
    what: Tuning,
}

impl Flavour for Ss<'_> {
    const PREFIX: &'static str = "ep spike-slab";
    const SCORE: &'static str = "<θ, x_i − x_j>";

    fn announce(&self, cv: bool) -> Option<String> {
        let start = self.start;
        (cv && (self.what.incl || self.what.slab)).then(|| {
            format!(
                "ep spike-slab: the CV of γ holds the prior at its starting point (v0 = {:e}, \
                 v1 = {:e}, p = {}); the scales given as auto are tuned by evidence at the \
                 chosen γ",
                start.spike_var, start.slab_var, start.incl
            )
        })
    }

    /// At the starting prior (tuned afterwards at the chosen γ).
    fn folds(&self, _pb: &Problem) -> impl FoldFlavour {
        SsCv {
            prior: self.start,
            form: self.ep.form,
            precision: self.ep.precision,
            ss: fold_ss_settings(&self.settings),
            release_fixes: self.ep.release_fixes,
        }
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
        let (ep, settings, start, what) = (self.ep, self.settings, self.start, self.what);
        let mut model = SpikeSlabEp::with_form(&pb.x, &pb.y, start, ep.precision, ep.form)?;
        model.set_release_fixes(ep.release_fixes);
        let mut on_sweep = |s: &SsSweepInfo<'_>, design: &Design| {
            sink.borrow_mut()
                .emit(Event::EpSweep(sweep_event(s, design)));
        };
        // The continuation's path (None: tuned).
        let mut gamma_path = None;
        // Which power EP α the answer is (`power`; None: tuned, always EP's).
        let mut power_used = None;
        let (outcome, tuned) = if what.incl || what.slab {
            let mut hooks = Hooks {
                on_sweep: &mut on_sweep,
                new_run: &mut || sink.borrow_mut().drop_earlier_sweeps(),
                log: &mut |level, message| sink.borrow_mut().emit(Event::Log { level, message }),
            };
            let t = tune::run(&mut model, start, gamma, &settings, ctl, what, &mut hooks)?;
            if t.slab_at_edge {
                sink.borrow_mut().warn(format!(
                    "ep spike-slab: log Z_EP is largest at v0/v1 = {:.1e}, an end of the searched \
                     range [1e-6, 0.1]; it may rise beyond it",
                    t.prior.spike_var / t.prior.slab_var
                ));
            }
            let out = t.outcome.clone();
            (out, Some(t))
        } else {
            let attempt = |s: &EpSettings| {
                let settings = SsSettings { ep: *s, ..settings };
                model.reset();
                // One way to reach γ (`continuation`).
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
                    sink.borrow_mut().info(continuation::describe(p).replacen(
                        "ep:",
                        "ep spike-slab:",
                        1,
                    ))
                };
                let kappa = continuation::KAPPA;
                continuation::reach_with(&mut sp, gamma, pb.n(), kappa, bisect, &mut log)
            };
            let ((out, gpath), used) =
                run::with_fallback(&settings.ep, "ep spike-slab", sink, attempt)?;
            (gamma_path, power_used) = (Some(gpath), Some(used));
            (out, None)
        };
        let SpikeSlab {
            spike_var,
            slab_var,
            incl,
        } = model.prior();
        let mut sink = sink.borrow_mut();
        if let Some(t) = &tuned {
            if what.incl && !t.incl_converged {
                sink.warn(
                    "ep spike-slab: the inclusion prior was still moving when its search stopped"
                        .into(),
                );
            }
            if !t.rounds_converged {
                sink.warn(format!(
                    "ep spike-slab: p and v1 were still moving after {} rounds",
                    t.rounds
                ));
            }
        }
        sink.warn_skipped("ep", outcome.skipped);
        if matches!(model.release(), ReleaseStatus::Skipped) {
            // Not an EP fixed point: released, the slab features' precisions go
            // negative and the score's scale runs away; with the fix the scale rests
            // on its floor 1/(100·v1), and SMC can disagree on sds and inclusion.
            sink.warn(
                "ep spike-slab: every feature in the slab still needs the negative-site fix \
                 at convergence, so the answer is the fixed iteration's, not an EP fixed \
                 point: its sds and the score's scale rest on the fix (they can be far too \
                 small); check with SMC"
                    .into(),
            );
        }
        let all_spike = outcome.inclusion.iter().all(|&p| p <= SELECTED);
        let all_spike_words = "no feature has inclusion above ½: EP may sit at its all-spike fixed \
                               point (the AUC risk is scale-free, so with p < ½ every coefficient in \
                               the spike is self-consistent); try --inclusion-prior auto (p by \
                               evidence), a larger p or γ, or check with --method smc";
        if all_spike {
            // Scale-free risk: "every coefficient in the spike" is a self-consistent EP
            // fixed point that SMC does not confirm on data with clear signal.
            sink.warn(all_spike_words.into());
        }
        let (mean, sd) = (model.mean(), model.sd());
        let selected_model = selected_score(&mean, &outcome.inclusion);
        let mut fit = run::linear_fit(pb, mean, sd);
        if all_spike {
            fit.reports.push(MethodReport::AllSpike {
                words: all_spike_words.into(),
            });
        }
        if let Some(w) = selected_model {
            fit.alt_models
                .push(("selected".into(), ScoreModel::Linear { weights: w }));
        }
        let selected: Vec<&String> = pb
            .names
            .iter()
            .zip(&outcome.inclusion)
            .filter(|(_, p)| **p > SELECTED)
            .map(|(n, _)| n)
            .collect();
        fit.inclusion = Some(outcome.inclusion.clone());
        fit.log_evidence = outcome.evidence.log_z();
        fit.prior = Some(Prior::SpikeSlab {
            spike_var,
            slab_var,
            incl,
        });
        fit.covariance = model.cov();
        fit.low_rank_covariance = model.cov_low_rank();
        let cv_report = cv_result.map(|c| &c.report);
        let t = tuned.as_ref();
        fit.details = json!({
            "prior": "spike-slab",
            "eta_prior_sites": outcome.eta_prior,
            "site_steps": settings.site_steps,
            "fix_release": release_report(model.release(), ep.release_fixes, model.is_reduced()),
            "negative_site_fixes": { "total": outcome.fixes_total, "last_sweep": outcome.fixes_last },
            "selected": { "threshold": SELECTED, "names": selected },
            "gamma": {
                "start": if gamma_path.is_some() { "continuation" } else { "prior" },
            },
            "evidence": outcome.evidence,
            "cv": cv_report,
            "cv_tol": cv_report.map(|_| fold_ss_settings(&settings).ep.tol),
            "cv_prior": cv_report.map(|_| json!({
                "spike_var": start.spike_var, "slab_var": start.slab_var, "incl": start.incl,
                "note": "the prior is held at its starting point during the CV of γ",
            })),
            "inclusion_prior": {
                "value": incl,
                "chosen_by": if what.incl { "evidence" } else { "fixed" },
                "converged": t.map(|t| t.incl_converged),
                "trace": t.map(|t| &t.incl_trace),
            },
            "slab_var": {
                "value": slab_var,
                "spike_var": spike_var,
                "spike_over_slab": spike_var / slab_var,
                "chosen_by": if what.slab { "evidence" } else { "fixed" },
                "trace": t.filter(|_| what.slab).map(|t| &t.slab_trace),
            },
            "tuning_rounds": t.map(|t| json!({ "rounds": t.rounds, "settled": t.rounds_converged })),
            "seconds": {
                "cv": cv_result.map_or(0.0, |c| c.seconds),
                "ep": outcome.seconds,
                "total": t0.elapsed().as_secs_f64(),
            },
        });
        let form = if model.is_reduced() {
            "reduced"
        } else {
            "primal"
        };
        let state = model.state();
        let work = Work {
            sweeps: outcome.sweeps,
            eta: outcome.eta,
            delta: outcome.delta,
            negative_share: outcome.negative_share,
            sites: state.sites(),
            pairs: model.pairs(),
            identical_pairs: state.identical_pairs(),
            skipped: outcome.skipped,
            cold_restart: outcome.cold_restart,
            form,
            rank: model.dim(),
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
