//! Nyström features for GP-EP on many rows (ALGORITHMS.md §6): which
//! landmarks and how many, and where EP starts.
//!
//! - **How many.** The greedy pivoted Cholesky (`gp::factor`) knows the prior
//!   variance its landmarks leave out, `tr(K − K̃)`. `GpApprox::Auto` adds
//!   landmarks until that is at most `AUTO_TRACE_RESIDUAL` of `tr K`, within
//!   `AUTO_MAX_LANDMARKS`; stopping at the budget first is a coded warning.
//! - **Where EP starts.** Parallel EP from the prior overshoots on many pairs
//!   (the first sweeps move the means by several sds), rejected sweeps halve η
//!   and keep it halved, and the run then crawls at η = 0.175: EEG's 11 235
//!   rows with 512 landmarks took 119 sweeps. The greedy pivots are nested, so
//!   the first `COARSE_LANDMARKS` columns of the features are the coarser
//!   Nyström approximation: EP on them (cheap: to a loose tolerance, on a
//!   sample of the pairs when there are very many), its
//!   posterior embedded with the prior on the other weights, and every site of
//!   the full problem computed from it (`LinearEp::start_from`). EEG: 16 sweeps
//!   at η = 0.7, the same log Z to 1e-7. Only the start changes: the fixed
//!   point and the convergence test are a cold run's. Classic start only:
//!   under `--ep-start continuation` it lost three of four measured fits
//!   (its own run failed; BENCHMARKS ep-starts16).

use std::time::Instant;

use nalgebra::{DMatrix, DVector};
use serde::Serialize;

use super::fitting::EXACT_TOL;
use crate::engine::ep::design::Form as LinearForm;
use crate::engine::ep::linear::LinearEp;
use crate::engine::ep::pair_ep::start::SampledStart;
use crate::engine::ep::posterior::Posterior;
use crate::engine::ep::settings::EpSettings;
use crate::engine::ep::store::Precision as SitePrecision;
use crate::engine::gp::factor::{self, Distinct, Stop};
use crate::engine::gp::{AUTO_MAX_LANDMARKS, AUTO_TRACE_RESIDUAL, GpApprox, Kernel};
use crate::engine::interface::{Control, EngineError};
use crate::engine::pairs::PairSampling;

/// Landmarks of the coarse fit EP starts from.
pub const COARSE_LANDMARKS: usize = 64;
/// The coarse fit's tolerance (its fixed point is only a start).
const COARSE_TOL: f64 = 1e-2;
/// The coarse fit runs on a uniform sample of this many pairs (g = γ/B) when
/// there are at least `COARSE_SAMPLE_FROM` pairs: its sweeps are then ~M/B
/// times cheaper (EEG: 30×), while a start from all 31 M pairs cost as much as
/// it saved at 128 landmarks (14 coarse sweeps against 20 fewer).
const COARSE_PAIRS: usize = 1 << 20;
const COARSE_SAMPLE_FROM: usize = 8 * COARSE_PAIRS;
/// Seed of that sample (fixed: the start does not depend on the run's seed).
const COARSE_SEED: u64 = 0x6e79_7374;

/// How the landmarks were chosen, for the record (`details.landmarks`).
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct LandmarkChoice {
    pub landmarks: usize,
    /// "residual" (`GpApprox::Auto`) or "fixed".
    pub chosen_by: &'static str,
    /// `tr(K − K̃)/tr K` over the distinct training rows.
    pub residual_trace_share: f64,
    /// The largest residual prior variance, relative to max k(x, x).
    pub residual_max: f64,
    /// The residual share aimed at, and the landmark budget (auto).
    pub criterion: Option<f64>,
    pub budget: Option<usize>,
    /// The criterion was met (false: the budget stopped the landmarks first).
    pub met: bool,
    /// The pivoted Cholesky's time.
    pub seconds: f64,
    /// The coarse fit EP started from.
    pub start: Option<CoarseStart>,
}

/// The coarse fit EP started from: its landmarks, and the fit as linear
/// EP's sampled start reports one (`pairs`: all, or the sample's B).
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct CoarseStart {
    pub landmarks: usize,
    #[serde(flatten)]
    pub fit: SampledStart,
}

/// Nyström features of the rows `x`: the features of every row (n × D, the
/// pivots' order), the landmark rows (D × d) and how they were chosen.
pub fn landmarks(
    kernel: &Kernel,
    x: &DMatrix<f64>,
    approx: GpApprox,
) -> (DMatrix<f64>, DMatrix<f64>, LandmarkChoice) {
    // A landmark whose residual prior variance is below the exact form's
    // tolerance adds nothing but makes K_II numerically singular (the model's
    // Cholesky of it fails): stop there, as exact GP-EP's whitened form does.
    let (stop, auto) = match approx {
        GpApprox::Nystrom { landmarks } => (
            Stop {
                max_rank: landmarks,
                max_residual: EXACT_TOL,
                trace_residual: 0.0,
            },
            false,
        ),
        GpApprox::Auto => (
            Stop {
                max_rank: AUTO_MAX_LANDMARKS,
                max_residual: EXACT_TOL,
                trace_residual: AUTO_TRACE_RESIDUAL,
            },
            true,
        ),
        a => unreachable!("not a Nyström approximation: {a:?}"),
    };
    let t0 = Instant::now();
    let distinct = Distinct::of(x);
    let xu = x.select_rows(&distinct.reps);
    let f = factor::pivoted_cholesky_until(kernel, &xu, stop);
    let d = f.z.ncols();
    let choice = LandmarkChoice {
        landmarks: d,
        chosen_by: if auto { "residual" } else { "fixed" },
        residual_trace_share: f.trace_residual,
        residual_max: f.residual,
        criterion: auto.then_some(AUTO_TRACE_RESIDUAL),
        budget: auto.then_some(AUTO_MAX_LANDMARKS),
        met: !auto || f.trace_residual <= AUTO_TRACE_RESIDUAL,
        seconds: t0.elapsed().as_secs_f64(),
        start: None,
    };
    (
        f.z.select_rows(&distinct.map),
        xu.select_rows(&f.pivots),
        choice,
    )
}

/// A coarse fit's posterior embedded in the features' space, to start from.
pub struct Coarse {
    q: Option<Posterior>,
    report: CoarseStart,
}

impl Coarse {
    /// Starts `lep` (cold, on the features) from the coarse posterior; what
    /// was done, for the record.
    pub fn start(self, lep: &mut LinearEp, gamma: f64) -> CoarseStart {
        let mut report = self.report;
        if let Some(q) = self.q {
            report.fit.used = lep.start_from(&q, gamma);
            if !report.fit.used {
                report.fit.note =
                    "the sites from the coarse fit were invalid: EP started from the prior".into();
            }
        }
        report
    }
}

/// EP on the first `COARSE_LANDMARKS` columns of the features `phi` (None
/// when there are too few features for it to pay). Run before the full
/// problem's sites exist: only one site store is alive at a time.
pub fn coarse_fit(
    phi: &DMatrix<f64>,
    y: &[bool],
    gamma: f64,
    settings: &EpSettings,
    precision: SitePrecision,
    ctl: &Control,
) -> Result<Option<Coarse>, EngineError> {
    let (r, r0) = (phi.ncols(), COARSE_LANDMARKS);
    if r < 2 * r0 {
        return Ok(None);
    }
    let t0 = Instant::now();
    let phi0 = phi.columns(0, r0).into_owned();
    let npos = y.iter().filter(|&&p| p).count();
    let sample = (npos * (y.len() - npos) >= COARSE_SAMPLE_FROM).then_some((
        PairSampling {
            pairs: COARSE_PAIRS,
            seed: COARSE_SEED,
        },
        &[][..],
    ));
    let ones = vec![1.0; r0];
    let mut coarse = LinearEp::with_pairs(&phi0, y, &ones, LinearForm::Primal, precision, sample)?;
    let s0 = EpSettings {
        tol: COARSE_TOL.max(settings.tol),
        ..*settings
    };
    let pairs = coarse.pairs();
    let report = |sweeps: usize, note: String| CoarseStart {
        landmarks: r0,
        fit: SampledStart {
            pairs,
            sweeps,
            tol: s0.tol,
            seconds: t0.elapsed().as_secs_f64(),
            used: false,
            note,
        },
    };
    let out = match coarse.run(gamma, &s0, ctl, &mut |_, _| {}) {
        Ok(out) => out,
        Err(EngineError::NotConverged { message, .. }) => {
            return Ok(Some(Coarse {
                q: None,
                report: report(
                    0,
                    format!("the coarse fit failed ({message}): EP started from the prior"),
                ),
            }));
        }
        Err(e) => return Err(e),
    };
    let q0 = coarse.state().posterior().expect("a converged run");
    // q0 on the first r0 weights, the prior N(0, I) on the others.
    let mut v = DMatrix::identity(r, r);
    v.view_mut((0, 0), (r0, r0)).copy_from(&q0.v);
    let mut m = DVector::zeros(r);
    m.rows_mut(0, r0).copy_from(&q0.m);
    Ok(Some(Coarse {
        q: Some(Posterior {
            v,
            m,
            log_det_q: q0.log_det_q,
            r_v_r: q0.r_v_r,
        }),
        report: report(out.sweeps, String::new()),
    }))
}

#[cfg(test)]
#[path = "nystrom_tests.rs"]
mod tests;
