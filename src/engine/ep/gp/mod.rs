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

use std::cell::RefCell;
use std::time::Instant;

use serde_json::json;

use super::config::Ep;
use super::folds::FoldFlavour;
use super::run::{self, Chosen, Final, Flavour, Work};
use super::sink::Sink;
use crate::engine::Prior;
use crate::engine::error::NonConvergence;
use crate::engine::event::{EpSweep, Event};
use crate::engine::fit::{EngineKind, Fit, MethodReport, ScoreModel};
use crate::engine::gp::{
    AUTO_MAX_LANDMARKS, AUTO_TRACE_RESIDUAL, EXACT_MAX_ROWS, GpApprox, GpPrior, KernelKind,
    LengthScale, median_distance,
};
use crate::engine::interface::{Control, EngineError, Observer};
use crate::engine::problem::Problem;
use crate::engine::select::CvReport;

use cv::GpCv;
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
    // `Auto` is exact up to `EXACT_MAX_ROWS` rows, above it Nyström with the
    // landmarks chosen at each kernel (`nystrom::landmarks`).
    let approx = match gp.approx {
        GpApprox::Auto if pb.n() <= EXACT_MAX_ROWS => GpApprox::Exact,
        a => a,
    };
    let median = median_distance(&pb.x);
    let start = match gp.lengthscale {
        LengthScale::Value(l) => l,
        LengthScale::Median | LengthScale::Auto => median,
    };
    let mut flavour = Gp {
        ep,
        gp,
        rows: pb.n(),
        approx,
        median,
        start,
    };
    run::run(&mut flavour, ep, pb, ctl, obs)
}

/// GP-EP as a flavour of the run.
struct Gp<'a> {
    ep: &'a Ep,
    gp: &'a GpPrior,
    /// Training rows.
    rows: usize,
    /// The approximation (`Auto` resolved by the rows).
    approx: GpApprox,
    median: f64,
    /// The length-scale during the CV of γ (and the search's start).
    start: f64,
}

impl Flavour for Gp<'_> {
    const PREFIX: &'static str = "gp";
    const SCORE: &'static str = "s_i − s_j";

    fn announce(&self, _cv: bool) -> Option<String> {
        (self.gp.approx == GpApprox::Auto).then(|| {
            format!(
                "gp: {} training rows: {}",
                self.rows,
                match self.approx {
                    GpApprox::Exact => "exact GP-EP".to_string(),
                    _ => format!(
                        "Nyström features, landmarks added until they leave out at most {}% of the prior variance (at most {AUTO_MAX_LANDMARKS}; exact GP-EP is O(n³) per sweep above {EXACT_MAX_ROWS} rows)",
                        100.0 * AUTO_TRACE_RESIDUAL
                    ),
                }
            )
        })
    }

    /// At the starting ℓ (then ℓ by evidence at that γ, when asked).
    fn folds(&self, _pb: &Problem) -> impl FoldFlavour {
        GpCv {
            kernel: self.gp.kernel_at(self.start),
            approx: self.approx,
            ep: self.ep.settings,
            precision: self.ep.precision,
        }
    }

    fn chosen_note(&self, r: &CvReport, g: f64, folds: usize, _tol: f64) -> String {
        let start = self.start;
        format!(
            "gp: γ = {}n = {g} by {folds}-fold CV (ℓ = {start:.4})",
            r.chosen
        )
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
        let (ep, gp, approx, median, start) =
            (self.ep, self.gp, self.approx, self.median, self.start);
        let tuned = gp.lengthscale == LengthScale::Auto && gp.kernel != KernelKind::Linear;
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
                sink.borrow_mut().info(format!(
                    "gp: ℓ = {ell:.4}, log Z_EP = {z:.4} ({} sweeps)",
                    out.sweeps
                ));
                Ok((z, out.sweeps))
            })?;
            if s.at_edge {
                sink.borrow_mut().warn(if s.best > s.start {
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
                });
            }
            Some(s)
        } else {
            None
        };
        let search_seconds = t_search.elapsed().as_secs_f64();
        let ell = search.as_ref().map_or(start, |s| s.best);

        // The final fit, its sweeps streamed.
        let (model, out) = fit_at(ell, &mut state, &mut |s| {
            sink.borrow_mut().emit(Event::EpSweep(s))
        })?;
        let mut sink = sink.borrow_mut();
        sink.warn_skipped("gp", out.skipped);
        if let Some(l) = &out.landmarks {
            sink.info(format!(
                "gp: {} Nyström landmarks leave out {:.3}% of the prior variance (largest share of a row's: {:.3}%)",
                l.landmarks,
                100.0 * l.residual_trace_share,
                100.0 * l.residual_max,
            ));
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
        fit.prior = Some(Prior::Gp(resolved));
        fit.details = json!({
            "model": "gp",
            "kernel": gp.kernel,
            "approximation": approx,
            "landmarks": out.landmarks,
            "model_numbers": model_numbers,
            "spread": out.spread,
            "lengthscale": {
                "value": (gp.kernel != KernelKind::Linear).then_some(ell),
                "median_distance": median,
                "chosen_by": if tuned { "evidence" } else if matches!(gp.lengthscale, LengthScale::Value(_)) { "fixed" } else { "median distance" },
                "search": search,
            },
            "training_scores": { "mean": out.mean, "sd": out.sd },
            "gamma": {
                "cv": cv_result.map(|c| &c.report),
                "path": null,
            },
            "seconds": {
                "gamma_cv": cv_result.map_or(0.0, |c| c.seconds),
                "lengthscale_search": search_seconds,
                "ep": out.seconds,
                "total": t0.elapsed().as_secs_f64(),
            },
        });
        let work = Work {
            sweeps: out.sweeps,
            eta: out.eta,
            delta: out.delta,
            negative_share: out.negative_share,
            sites: pb.pairs() - out.identical_pairs,
            pairs: pb.pairs(),
            identical_pairs: out.identical_pairs,
            skipped: out.skipped,
            cold_restart: out.cold_restart,
            form: out.form,
            rank,
            site_storage: None,
        };
        Ok(Final {
            fit,
            work,
            path: out.gamma_path,
            power: None,
        })
    }
}
