//! The great-circle sampler (GH00's kernel Gibbs sampler applied to the AUC
//! risk; ALGORITHMS.md §10): exact hit-and-run on directions.

pub mod circle;
