//! Settings of the great-circle sampler, their defaults and their validation.

use nalgebra::{DMatrix, DVector};
use serde::{Deserialize, Serialize};

use crate::engine::interface::EngineError;

/// What the Gibbs posterior penalises.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Loss {
    /// The AUC risk with the problem's γ (RACL14).
    Auc,
    /// GH00's label-noise likelihood: each training error costs a factor
    /// `q/(1 − q)`, i.e. γ = n·ln((1 − q)/q) on the error rate. `intercept` adds
    /// a constant feature with the features' mean prior variance (a classifier
    /// through the training mean is poor when the classes are unbalanced).
    LabelNoise { noise: f64, intercept: bool },
}

impl Loss {
    pub fn name(&self) -> &'static str {
        match self {
            Loss::Auc => "auc",
            Loss::LabelNoise { .. } => "label-noise",
        }
    }
}

/// How a chain draws the great circle's tangent direction at u.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Directions {
    /// Uniform on the tangent sphere (GH00): every move is accepted.
    Uniform,
    /// `P_u z` with `z ~ N(0, Σ)`, Σ the chains' pooled covariance of the
    /// direction over the warm-up (shrunk, then fixed), each move accepted by
    /// the Metropolis–Hastings ratio of the circle's two tangent densities
    /// (`directions`). Uniform when the warm-up is too short to estimate Σ or
    /// d = 2 (one circle only).
    #[default]
    Adapted,
    /// Ellipses around a Gaussian N(μ, S) fitted to the warm-up's draws
    /// (`reference`): elliptical slice moves of the whole whitened θ with
    /// respect to it, the rest of the posterior as the likelihood; exact for
    /// any fixed μ, S. For many dimensions (d = 180), where the tangent
    /// ratio's power (d − 2)/2 stalls `Adapted`.
    Gaussian,
}

impl Directions {
    pub fn name(self) -> &'static str {
        match self {
            Directions::Uniform => "uniform",
            Directions::Adapted => "adapted",
            Directions::Gaussian => "gaussian",
        }
    }
}

/// How a chain moves on its great circle.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum CircleMove {
    /// The exact draw of φ from the circle's density (`circle`): one pass over
    /// the M pairs per step. The default until `Auto` is validated on the
    /// shared sets (slice moves are exact too: tests on the circle and on S²).
    #[default]
    Exact,
    /// A slice move (`slice`): a few risk evaluations of O(n) each.
    Slice,
    /// Slice when the pairs outnumber the rows by more than `SLICE_PAIRS_PER_ROW`
    /// (the pass over the pairs then costs more than the slice's evaluations).
    Auto,
}

/// Pairs per row above which `Auto` takes slice moves. On DNA (2390 training
/// rows, 1.04 M pairs: 436 a row) a slice move took 7 risk evaluations and
/// 0.29 ms of CPU against 5.7 ms for the exact draw, at the same mean jump
/// (0.035–0.05 rad). On Pima (576 rows, 35 k pairs: 61 a row) slice moves
/// converged in 0.22 CPU s against 1.23 (6 evaluations a step, means within
/// 0.1 sd). Where the pass over the pairs is short the exact draw (an
/// independent point on the circle) is the better move.
pub const SLICE_PAIRS_PER_ROW: u64 = 64;

impl CircleMove {
    pub fn name(self) -> &'static str {
        match self {
            CircleMove::Exact => "exact",
            CircleMove::Slice => "slice",
            CircleMove::Auto => "auto",
        }
    }

    /// Slice moves for a design of `rows` rows and `pairs` pairs?
    pub fn slice(self, rows: usize, pairs: u64) -> bool {
        match self {
            CircleMove::Exact => false,
            CircleMove::Slice => true,
            CircleMove::Auto => pairs > SLICE_PAIRS_PER_ROW * rows as u64,
        }
    }
}

/// A Gaussian N(μ, S) of θ in the problem's coordinates, given to
/// `Directions::Gaussian` as the ellipses' reference (e.g. EP's, run first by
/// the spec layer) instead of one fitted over the warm-up.
#[derive(Debug, Clone, PartialEq)]
pub struct GaussianReference {
    pub mean: DVector<f64>,
    pub cov: DMatrix<f64>,
    /// Where it comes from (for the record).
    pub source: String,
}

/// How the reference was obtained: its source ("ep" or "warm-up"), the
/// seconds the source took, and why the preferred source was not used.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ReferenceOrigin {
    pub source: &'static str,
    pub ep_seconds: f64,
    pub why_not_ep: Option<String>,
}

fn exact() -> CircleMove {
    CircleMove::Exact
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GcsSettings {
    /// Independent chains (run on threads), each from its own prior draw.
    pub chains: usize,
    /// Steps of each chain discarded as warm-up.
    pub warmup: usize,
    /// Stop once the smallest bulk and tail ESS over the coefficients (and the
    /// risk) reach this and the largest R-hat is at most `max_rhat`.
    pub min_ess: f64,
    pub max_rhat: f64,
    /// Cap on the steps of each chain (warm-up included); reaching it without
    /// the ESS and R-hat targets is reported as not converged.
    pub max_steps: usize,
    /// Keep every `thin`-th draw.
    pub thin: usize,
    pub loss: Loss,
    /// The tangent directions of the circles (records before this setting
    /// existed used uniform ones).
    #[serde(default = "uniform")]
    pub directions: Directions,
    /// Also estimate log Z_γ by stepping stones from γ = 0 (each stone a run of
    /// these chains; the last one is the posterior reported).
    #[serde(default)]
    pub evidence: bool,
    /// The AUC loss: sample the data's row space only when its rank is below
    /// d (exact; `engine::reduction`). Records from before ran without.
    #[serde(default)]
    pub row_space: bool,
    /// The move on each circle (records before this setting drew exactly).
    #[serde(default = "exact")]
    pub circle: CircleMove,
    /// `Directions::Gaussian`: the reference, fixed from the first step (None:
    /// fitted over the warm-up). Not part of the record's settings.
    #[serde(skip)]
    pub reference: Option<GaussianReference>,
    /// Where the reference was to come from, for the record's
    /// `details.directions.reference` (set by whoever chose it).
    #[serde(skip)]
    pub reference_origin: Option<ReferenceOrigin>,
    pub seed: u64,
}

fn uniform() -> Directions {
    Directions::Uniform
}

impl Default for GcsSettings {
    fn default() -> Self {
        GcsSettings {
            chains: 4,
            warmup: 200,
            min_ess: 400.0,
            max_rhat: 1.01,
            max_steps: 200_000,
            thin: 1,
            loss: Loss::Auc,
            directions: Directions::default(),
            evidence: false,
            row_space: true,
            circle: CircleMove::default(),
            reference: None,
            reference_origin: None,
            seed: 0,
        }
    }
}

impl GcsSettings {
    pub fn validate(&self) -> Result<(), EngineError> {
        let bad = |m: String| Err(EngineError::InvalidParams(m));
        if self.chains < 2 {
            return bad(format!(
                "the great-circle sampler needs ≥ 2 chains for R-hat; got {}",
                self.chains
            ));
        }
        if !(self.min_ess.is_finite() && self.min_ess > 0.0) {
            return bad(format!("the ESS target must be > 0; got {}", self.min_ess));
        }
        if !(self.max_rhat.is_finite() && self.max_rhat > 1.0) {
            return bad(format!(
                "the R-hat target must be > 1; got {}",
                self.max_rhat
            ));
        }
        if self.thin == 0 {
            return bad("thinning must keep every k-th draw with k ≥ 1".into());
        }
        if self.max_steps < self.warmup + 8 * self.thin {
            return bad(format!(
                "the step cap ({}) leaves fewer than 8 kept draws per chain after {} warm-up steps",
                self.max_steps, self.warmup
            ));
        }
        if let Loss::LabelNoise { noise, .. } = self.loss
            && !(noise > 0.0 && noise < 0.5)
        {
            return bad(format!(
                "the label-noise level must be in (0, 0.5); got {noise}"
            ));
        }
        Ok(())
    }
}
