//! Nyström features for GP-EP on many rows (ALGORITHMS.md §6): which
//! landmarks and how many.
//!
//! - **How many.** The greedy pivoted Cholesky (`gp::factor`) knows the prior
//!   variance its landmarks leave out, `tr(K − K̃)`. `GpApprox::Auto` adds
//!   landmarks until that is at most `AUTO_TRACE_RESIDUAL` of `tr K`, within
//!   `AUTO_MAX_LANDMARKS`; stopping at the budget first is a coded warning.

use std::time::Instant;

use nalgebra::DMatrix;
use serde::Serialize;

use crate::engine::gp::factor::{self, Distinct, Stop};
use crate::engine::gp::{AUTO_MAX_LANDMARKS, AUTO_TRACE_RESIDUAL, EXACT_TOL, GpApprox, Kernel};

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
    };
    (
        f.z.select_rows(&distinct.map),
        xu.select_rows(&f.pivots),
        choice,
    )
}

#[cfg(test)]
#[path = "nystrom_tests.rs"]
mod tests;
