//! The Gaussian-process prior on scores (RACL14 §4, ALGORITHMS.md §6): the
//! score vector at the training rows is `s ~ N(0, K)` for a covariance kernel
//! k, and a fitted model predicts the score of new rows.
//!
//! - `kernel`: covariance functions (SE, linear, ARD-SE), the median heuristic.
//! - `dense`: Cholesky, triangular inverses and solves for the n × n matrices.
//! - `factor`: the prior as `s = Z w`, `w ~ N(0, I)` (pivoted Cholesky, exact to
//!   a relative tolerance) or by its precision on the distinct rows; random
//!   Fourier and Nyström feature maps for large n.
//! - `model`: the serialisable score model: predictive mean and variance.
//! - `spread`: the predictive variance of landmark models in reduced form.
//!
//! Engines that sample or approximate the GP posterior (GP-EP in `ep::gp`,
//! score-space SMC in `smc::gp_score`) build on these.

pub mod dense;
pub mod factor;
pub mod kernel;
pub mod model;
pub mod spread;

use serde::{Deserialize, Serialize};

pub use kernel::{Kernel, median_distance};
pub use model::{FeatureBasis, GpModel};
pub use spread::GpSpread;

/// Which covariance function.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum KernelKind {
    Se,
    Linear,
}

/// The length-scale of the SE kernel.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LengthScale {
    /// The median distance between distinct training rows.
    Median,
    Value(f64),
    /// Maximise the evidence log Z over log ℓ, starting from the median distance.
    Auto,
}

/// How the GP prior is represented.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum GpApprox {
    /// The exact n-dimensional prior (to a relative tolerance of 1e-10).
    Exact,
    /// Random Fourier features (Rahimi & Recht 2007): `D` features, SE kernel only.
    Rff { features: usize, seed: u64 },
    /// Nyström features from `landmarks` rows chosen by pivoted Cholesky.
    Nystrom { landmarks: usize },
    /// Exact up to `EXACT_MAX_ROWS` training rows; above, Nyström with as
    /// many landmarks as it takes to leave out at most `AUTO_TRACE_RESIDUAL`
    /// of the prior variance, within `AUTO_MAX_LANDMARKS`.
    Auto,
}

/// `GpApprox::Exact`'s whitened factor stops at this residual prior variance,
/// relative to max k(x, x) (directions of less are dropped), as do Nyström's
/// landmarks (one more would make K_II numerically singular).
pub const EXACT_TOL: f64 = 1e-10;
/// Largest training set that `GpApprox::Auto` fits exactly (O(n³) per EP sweep:
/// DNA's 2 389 rows take a few seconds).
pub const EXACT_MAX_ROWS: usize = 4000;
/// `GpApprox::Auto` above `EXACT_MAX_ROWS` adds landmarks (greedy pivoted
/// Cholesky) until the prior variance they leave out, `tr(K − K̃)`, is at most
/// this share of `tr K`. On a 3 000-row EEG training set the test AUC lost
/// against exact GP-EP was 0.032 at a residual of 3.9% (128 landmarks), 0.0034
/// at 1.2%, 0.0012 at 0.51% and 0.0005 at 0.25% (docs/BENCHMARKS.md).
pub const AUTO_TRACE_RESIDUAL: f64 = 0.0025;
/// The landmark budget of `GpApprox::Auto`: EP's cost per sweep grows as M·D
/// (the pair products) and its memory as n·D; stopping here before the
/// residual criterion is met is warned about.
pub const AUTO_MAX_LANDMARKS: usize = 1024;

/// The GP prior of a problem.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GpPrior {
    pub kernel: KernelKind,
    pub lengthscale: LengthScale,
    pub approx: GpApprox,
}

impl GpPrior {
    pub fn validate(&self) -> Result<(), String> {
        if let LengthScale::Value(l) = self.lengthscale
            && !(l.is_finite() && l > 0.0)
        {
            return Err(format!(
                "the kernel length-scale must be a positive number; got {l}"
            ));
        }
        match self.approx {
            GpApprox::Rff { features: 0, .. } | GpApprox::Nystrom { landmarks: 0 } => {
                Err("a GP feature approximation needs at least one feature".into())
            }
            GpApprox::Rff { .. } if self.kernel == KernelKind::Linear => Err(
                "random Fourier features approximate the SE kernel; the linear kernel needs none"
                    .into(),
            ),
            _ => Ok(()),
        }
    }

    /// The kernel at length-scale `ell` (ignored by the linear kernel).
    pub fn kernel_at(&self, ell: f64) -> Kernel {
        match self.kernel {
            KernelKind::Se => Kernel::Se { lengthscale: ell },
            KernelKind::Linear => Kernel::Linear,
        }
    }
}
