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
    let mut model = SpikeSlabEp::new(&pb.x, &pb.y, prior, ep.precision)?;
    let outcome = model.run(gamma, &settings, ctl, &mut |s, design| {
        sink.borrow_mut()
            .emit(Event::EpSweep(sweep_event(s, design)));
    })?;
    let mut sink = sink.into_inner();
    if outcome.skipped > 0 {
        sink.emit(Event::Log {
            level: LogLevel::Warn,
            message: format!(
                "ep: {} near-identical pairs were skipped; log Z_EP is not reported",
                outcome.skipped
            ),
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
    fit.prior = Some(pb.prior.clone());
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
        "seconds": { "ep": outcome.seconds, "total": t0.elapsed().as_secs_f64() },
    });
    fit.trace = sink.trace;
    Ok(fit)
}
