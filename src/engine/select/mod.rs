//! Model choice shared by every method (ALGORITHMS.md §8): a sibling of the
//! methods, which plug in through small traits and closures — select/ knows
//! nothing of EP, SMC or the baselines.
//!
//! - `kfold`: one stratified k-fold cross-validation of held-out AUC over an
//!   ordered grid (logit's λ, RankBoost's rounds, EP's γ), folds in parallel,
//!   failures reported uniformly.
//! - `path`: the same cross-validation for a method one run of which visits
//!   every grid point (SMC's tempering path to the largest γ).
//! - `search`: the evidence searches — a fixed-point iteration (ARD's
//!   variances, spike-and-slab's p), a 1-D grid/walk/golden-section search
//!   (spike-and-slab's v0/v1; GP-EP's length-scale uses its golden section),
//!   coordinate ascent.

pub mod kfold;
pub mod path;
pub mod search;

pub use kfold::{
    CvMethod, CvNames, CvReport, CvSpec, FoldData, FoldFailure, GridWalker, MEMORY_BUDGET,
    PointFit, Walk, cross_validate,
};
pub use path::{
    EarlyStop, PathMethod, RefitPoint, StoppedEarly, cross_validate_path, cross_validate_refit,
};
pub use search::{
    FixedPoint, FixedPointRule, Phase, Range1d, coordinate_ascent, fixed_point, golden, maximise,
};
