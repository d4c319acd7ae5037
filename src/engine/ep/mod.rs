//! Expectation Propagation for the AUC Gibbs posterior with a Gaussian prior
//! (RACL14 §3.3, ALGORITHMS.md §4).
//!
//! - `site`: the scalar pair-site maths (cavity, tilted moments, new site, log C,
//!   on `numerics::normal`'s vectorisable log Φ, φ/Φ, erfcx); shared with spike-and-slab EP (§5) and GP-EP (§6).
//! - `kernel`: one pass over all n+ × n− sites (GEMM blocks + SIMD + rayon).
//! - `posterior`: Q, r, V, m from the sites by matrix products; Δ_t.
//! - `continuation`: one way to reach γ, adaptive steps in log γ (§16).
//! - `controller`: the sweep loop of every EP flavour (acceptance, η
//!   back-off, convergence, diagnostics), safeguarded Anderson mixing and the
//!   non-progress verdict; `driver` its entry.
//! - `sweep_state`: what a flavour shows the sweep loop (the `SweepState`
//!   contract, marginals, a run's report).
//! - `regrow`: η cut by a failed step grows back.
//! - `settings`, `outcome`: an EP run's settings and what it reports.
//! - `config`, `sink`: the engine's configuration (`Ep`) and where a run's
//!   events go; below every flavour, which reads them without importing `engine`.
//! - `power`: power EP (α < 1) as the answer where EP has no fixed point.
//! - `stop`: EP's typed account of a run that did not converge (the error's).
//! - `pair_ep`: the pair sites' state with a Gaussian prior, run on the driver.
//! - `design`: primal and reduced (SVD) forms, the map back to θ.
//! - `linear`, `ard`, `cv`, `engine`: warm-started runs, ARD evidence
//!   maximisation, γ by cross-validation, the `Engine` (`--method ep`).
//! - `spike_slab`: EP with the spike-and-slab prior (§5): inclusion probabilities, the path.

pub mod ard;
mod config;
pub mod continuation;
pub mod controller;
pub mod cv;
pub mod design;
pub mod driver;
mod engine;
pub mod folds;
pub mod gp;
pub mod kernel;
pub mod linear;
pub mod outcome;
pub mod pair_ep;
pub mod posterior;
pub mod power;
mod regrow;
mod run;
pub mod settings;
mod sink;
pub mod site;
pub mod spike_slab;
pub mod stop;
mod store;
pub mod sweep_state;

pub use ard::ArdSettings;
pub use config::{Ep, GammaMode};
pub use design::{Design, Form, identical_pairs};
pub use kernel::{Excluded, Isa, PassStats};
pub use linear::LinearEp;
pub use outcome::{EpOutcome, EvidenceParts, SweepInfo};
pub use pair_ep::PairEp;
pub use posterior::{Posterior, PriorTerms};
pub use settings::{EpPower, EpSettings};
pub use site::{Natural, Site, StepFactor, Tilted};
pub use store::Precision;

#[cfg(test)]
mod large_p_tests;
#[cfg(test)]
mod power_tests;
#[cfg(test)]
mod sampled_tests;
#[cfg(test)]
mod tests;
