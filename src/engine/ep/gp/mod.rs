//! Expectation Propagation with a Gaussian-process prior on the scores
//! (RACL14 §4, ALGORITHMS.md §6): `--method ep` with `Prior::Gp`.
//!
//! - `basis`: q(s) from the sites — the Laplacian B in O(M), the checked
//!   factorisation, the pair marginals from q's blocks.
//! - `sweep`: GP-EP's sites and q as a state of the shared sweep driver
//!   (`ep::driver`), log Z_EP.
//! - `fitting`: one fit at a kernel, exact or through Nyström / random Fourier
//!   features (linear EP on D features), and the score model it yields.
//! - `nystrom`: how many landmarks (`auto`: by the prior variance they leave
//!   out).
//! - `lengthscale`: ℓ by maximising log Z_EP.

pub mod basis;
pub mod cv;
pub mod fitting;
pub mod lengthscale;
pub mod nystrom;
pub mod sweep;
#[cfg(test)]
mod tests;

use std::time::Instant;

use serde_json::json;

use super::engine::{Ep, GammaMode, Sink};
use crate::engine::Prior;
use crate::engine::error::NonConvergence;
use crate::engine::event::{EpSweep, Event, LogLevel};
use crate::engine::fit::{EngineKind, Fit, MethodReport, ScoreModel};
use crate::engine::gp::{
    AUTO_MAX_LANDMARKS, AUTO_TRACE_RESIDUAL, EXACT_MAX_ROWS, GpApprox, GpPrior, KernelKind,
    LengthScale, median_distance,
};
use crate::engine::interface::{Control, EngineError, Observer};
use crate::engine::problem::Problem;

pub use fitting::{fit_exact, full_model};
use sweep::GpEp;

/// `Ep::run` for a GP prior.
pub(crate) fn run(
    ep: &Ep,
    pb: &Problem,
    gp: &GpPrior,
    ctl: &Control,
    obs: &mut dyn Observer,
) -> Result<Fit, EngineError> {
    if ep.pairs.is_some() {
        return Err(EngineError::InvalidParams(
            "a sample of pairs is supported with the Gaussian and ARD priors, not the GP prior"
                .into(),
        ));
    }
    let t0 = Instant::now();
    let n = pb.n();
    // `Auto` is exact up to `EXACT_MAX_ROWS` rows, above it Nyström with the
    // landmarks chosen at each kernel (`nystrom::landmarks`).
    let approx = match gp.approx {
        GpApprox::Auto if n <= EXACT_MAX_ROWS => GpApprox::Exact,
        a => a,
    };
    let mut sink = Sink::new(obs, &ep.settings);
    sink.emit(Event::Started {
        engine: "ep".into(),
        n,
        d: pb.d(),
        pairs: pb.pairs(),
        gamma: ep.gamma.announced(pb.gamma),
    });
    let info = |m: String| Event::Log {
        level: LogLevel::Info,
        message: m,
    };
    if gp.approx == GpApprox::Auto {
        sink.emit(info(format!(
            "gp: {n} training rows: {}",
            match approx {
                GpApprox::Exact => "exact GP-EP".to_string(),
                _ => format!(
                    "Nyström features, landmarks added until they leave out at most {}% of the prior variance (at most {AUTO_MAX_LANDMARKS}; exact GP-EP is O(n³) per sweep above {EXACT_MAX_ROWS} rows)",
                    100.0 * AUTO_TRACE_RESIDUAL
                ),
            }
        )));
    }
    let median = median_distance(&pb.x);
    let start = match gp.lengthscale {
        LengthScale::Value(l) => l,
        LengthScale::Median | LengthScale::Auto => median,
    };
    let tuned = gp.lengthscale == LengthScale::Auto && gp.kernel != KernelKind::Linear;

    // γ by CV at the starting ℓ (then ℓ by evidence at that γ, when asked).
    let t_cv = Instant::now();
    let (gamma, cv_report) = match &ep.gamma {
        GammaMode::Fixed => (pb.gamma, None),
        GammaMode::Cv {
            grid_over_n,
            folds,
            seed,
        } => {
            let r = cv::cross_validate(
                &pb.x,
                &pb.y,
                &gp.kernel_at(start),
                approx,
                grid_over_n,
                *folds,
                *seed,
                &ep.settings,
                ep.precision,
                ctl,
                &mut |m| sink.emit(info(m)),
            )?;
            let g = r.chosen * n as f64;
            sink.emit(info(format!(
                "gp: γ = {}n = {g} by {folds}-fold CV (ℓ = {start:.4})",
                r.chosen
            )));
            (g, Some(r))
        }
    };
    let cv_seconds = t_cv.elapsed().as_secs_f64();

    let mut state: Option<GpEp> = None;
    let fit_at = |ell: f64,
                  state: &mut Option<GpEp>,
                  on_sweep: &mut dyn FnMut(EpSweep)|
     -> Result<_, EngineError> {
        let kernel = gp.kernel_at(ell);
        match approx {
            GpApprox::Exact => fitting::fit_exact(
                &kernel,
                &pb.x,
                &pb.y,
                gamma,
                &ep.settings,
                state,
                ctl,
                on_sweep,
            ),
            a => fitting::fit_features(
                &kernel,
                &fitting::features(&kernel, a, &pb.x)?,
                &pb.x,
                &pb.y,
                gamma,
                &ep.settings,
                ep.precision,
                true,
                ctl,
                on_sweep,
            ),
        }
    };

    let t_search = Instant::now();
    let search = if tuned {
        let s = lengthscale::search(start, &mut |ell| {
            // The evidence only: no score model at the points of the curve.
            let out = match approx {
                GpApprox::Exact => fitting::run_exact(
                    &gp.kernel_at(ell),
                    &pb.x,
                    &pb.y,
                    gamma,
                    &ep.settings,
                    &mut state,
                    ctl,
                    &mut |_| {},
                )?,
                _ => fit_at(ell, &mut state, &mut |_| {})?.1,
            };
            let z = out.log_z.ok_or_else(|| EngineError::NotConverged {
                reason: NonConvergence::NoEvidence,
                account: None,
                message: format!(
                    "GP-EP at ℓ = {ell}: {} degenerate sites, no evidence",
                    out.skipped
                ),
                diagnostics: serde_json::Value::Null,
            })?;
            sink.emit(info(format!(
                "gp: ℓ = {ell:.4}, log Z_EP = {z:.4} ({} sweeps)",
                out.sweeps
            )));
            Ok((z, out.sweeps))
        })?;
        if s.at_edge {
            sink.emit(Event::Log {
                level: LogLevel::Warn,
                message: if s.best > s.start {
                    // As ℓ → ∞ the SE prior on score differences tends to the
                    // linear kernel's (ALGORITHMS.md §6): a curve rising to
                    // the longest ℓ is the evidence preferring a linear score.
                    format!(
                        "gp: the evidence is largest at the longest length-scale searched (ℓ = {:.4}, {:.0}× the median distance {median:.4}): it prefers a near-linear score (the linear kernel is the limit ℓ → ∞)",
                        s.best,
                        s.best / median
                    )
                } else {
                    format!(
                        "gp: the evidence is largest at the shortest length-scale searched (ℓ = {:.4}, median distance {median:.4}): the search range may be too narrow",
                        s.best
                    )
                },
            });
        }
        Some(s)
    } else {
        None
    };
    let search_seconds = t_search.elapsed().as_secs_f64();
    let ell = search.as_ref().map_or(start, |s| s.best);

    // The final fit, its sweeps streamed.
    let (model, out) = fit_at(ell, &mut state, &mut |s| sink.emit(Event::EpSweep(s)))?;
    if out.skipped > 0 {
        sink.emit(Event::Log {
            level: LogLevel::Warn,
            message: format!(
                "gp: {} near-identical pairs were skipped; log Z_EP is not reported",
                out.skipped
            ),
        });
    }
    if let Some(l) = &out.landmarks {
        sink.emit(info(format!(
            "gp: {} Nyström landmarks leave out {:.3}% of the prior variance (largest share of a row's: {:.3}%)",
            l.landmarks,
            100.0 * l.residual_trace_share,
            100.0 * l.residual_max,
        )));
    }
    let rank = model.rank();
    let model_numbers = model.numbers();
    // The record's approximation is the one used (auto's landmarks at the final ℓ).
    let approx = match (&out.landmarks, approx) {
        (Some(l), GpApprox::Auto) => GpApprox::Nystrom {
            landmarks: l.landmarks,
        },
        (_, a) => a,
    };
    let resolved = GpPrior {
        kernel: gp.kernel,
        lengthscale: if gp.kernel == KernelKind::Linear {
            gp.lengthscale
        } else {
            LengthScale::Value(ell)
        },
        approx,
    };
    let mut fit = Fit::new(
        EngineKind::Ep,
        pb.names.clone(),
        ScoreModel::Gp(Box::new(model)),
    );
    if let Some(l) = out.landmarks.as_ref().filter(|l| !l.met) {
        fit.reports.push(MethodReport::LandmarkBudget {
            landmarks: l.landmarks,
            residual_trace_share: l.residual_trace_share,
            criterion: l.criterion,
        });
    }
    fit.log_evidence = out.log_z;
    fit.gamma = Some(gamma);
    fit.prior = Some(Prior::Gp(resolved));
    fit.converged = true;
    fit.cv = cv_report.as_ref().map(|r| r.summary());
    fit.reports.push(MethodReport::EpWork {
        sweeps: out.sweeps,
        sites: pb.pairs() - out.identical_pairs,
        form: out.form,
        rank,
        site_storage: None,
    });
    fit.details = json!({
        "model": "gp",
        "kernel": gp.kernel,
        "approximation": approx,
        "form": out.form,
        "rank": rank,
        "landmarks": out.landmarks,
        "model_numbers": model_numbers,
        "spread": out.spread,
        "sweeps": out.sweeps,
        "eta": out.eta,
        "delta": out.delta,
        "tol": ep.settings.tol,
        "negative_share": out.negative_share,
        "pairs": pb.pairs(),
        "sites": pb.pairs() - out.identical_pairs,
        "identical_pairs": out.identical_pairs,
        "skipped_sites": out.skipped,
        "cold_restart": out.cold_restart,
        "lengthscale": {
            "value": (gp.kernel != KernelKind::Linear).then_some(ell),
            "median_distance": median,
            "chosen_by": if tuned { "evidence" } else if matches!(gp.lengthscale, LengthScale::Value(_)) { "fixed" } else { "median distance" },
            "search": search,
        },
        "training_scores": { "mean": out.mean, "sd": out.sd },
        "gamma": {
            "value": gamma,
            "over_n": gamma / n as f64,
            "per_pair": gamma / pb.pairs() as f64,
            "chosen_by": if cv_report.is_some() { "cv" } else { "fixed" },
            "cv": cv_report,
            "path": out.gamma_path,
            "convention": "π ∝ prior · exp(−γ R_n), R_n = share of discordant pairs; each pair's factor is exp(−(γ/M)·1{s_i − s_j < 0})",
        },
        "seconds": { "gamma_cv": cv_seconds, "lengthscale_search": search_seconds, "ep": out.seconds, "total": t0.elapsed().as_secs_f64() },
    });
    if let Some(note) = out
        .gamma_path
        .as_ref()
        .and(ep.settings.start.retired_note())
    {
        fit.details["gamma"]["classic_start"] = json!(note);
    }
    fit.trace = sink.trace;
    Ok(fit)
}
