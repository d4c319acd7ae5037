//! Expectation Propagation with the spike-and-slab prior
//! `θ_k ~ p N(0, v1) + (1 − p) N(0, v0)` (RACL14 §3.4, ALGORITHMS.md §5):
//! the pair sites of Gaussian EP plus d prior sites with latent inclusion
//! variables, giving P(z_k = 1 | D) per feature.
//!
//! - `prior_sites`: the mixture-moment site update, the negative-site fix, log C_k
//!   (the anderson controller still needs the fix and the per-site steps:
//!   docs/BENCHMARKS.md ep-ss-rules16).
//! - `sweep`: the sweep loop (pair sites → prior sites), generic over the
//!   likelihood's sites (`LikelihoodSites`).
//! - `release`: continuing from a converged state whose fix is still active
//!   without the fix (the fix moves the fixed point).
//! - `model`: the AUC pair sites as that likelihood; warm-startable state;
//!   `SsPath`, its continuation in γ.
//! - `reduced`: the reduced form (d ≥ n): EP on the row space of the whitened X.
//! - `gaussian_lik`: an exact Gaussian (linear-regression) likelihood, for tests.
//! - `cv`: γ by cross-validation (`--gamma auto`), each fold point reached as the final fit's γ.
//! - `engine`: `--method ep --prior spike-slab`; `path`: the regularisation path over v0;
//!   `tune`: `--inclusion-prior auto` and `--slab-var auto` by evidence.

pub mod cv;
pub mod engine;
mod mixing;
pub mod model;
pub mod moments;
pub mod path;
pub mod prior_sites;
pub mod reduced;
pub mod release;
pub mod site_steps;
pub mod sweep;
pub mod tune;

pub use model::{PairSites, SpikeSlab, SpikeSlabEp};
pub use path::{PathPoint, PathResult, spike_var_grid};
pub use prior_sites::{MixturePrior, PriorSites};
pub use site_steps::SiteStepRule;
pub use sweep::{LikelihoodSites, SsEvidence, SsOutcome, SsSettings, SsSweepInfo, ThetaMoments};

#[cfg(test)]
mod cv_tests;
#[cfg(test)]
mod gaussian_lik;
#[cfg(test)]
mod mixing_tests;
#[cfg(test)]
mod reach_tests;
#[cfg(test)]
mod reduced_tests;
#[cfg(test)]
mod release_tests;
#[cfg(test)]
mod smc_agreement;
#[cfg(test)]
mod tests;
