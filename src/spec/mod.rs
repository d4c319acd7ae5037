//! What to run: a typed, serde-able `RunSpec` (data options, method and its
//! settings, γ as one type, the prior, threads), the method `registry` that
//! every front end reads, `check`/`validate` (every refusal in one place), and
//! `build` (spec + prepared data → engine + problem). No clap and no terminal
//! here: `pacauc fit`, the explorer's run form and replay all go through it.

pub mod advice;
pub mod build;
pub mod cost;
#[cfg(test)]
mod cost_tests;
pub mod demo_source;
pub mod ep_gaussian;
pub mod ep_spec;
pub mod error;
pub mod gcs_reference;
pub mod merge;
mod method_settings;
mod methods;
pub mod registry;
pub mod run;
pub mod run_spec;
pub mod setting;
pub mod smc_reference;
pub mod text;
pub mod validate;
pub mod values;

pub use build::{Built, build};
pub use error::{SpecError, name_settings};
pub use run_spec::{
    DataSpec, EpSpec, GcsLoss, GcsSpec, GpKernel, LogitSpec, MethodSpec, Missing, PriorKind,
    PriorSpec, RankBoostSpec, RunSpec, SmcKernel, SmcSpec, VbFamily, VbLoss, VbOptimizer, VbSpec,
};
pub use text::{command_line, from_given, to_args};
pub use validate::{Dims, check, validate};
pub use values::{Gamma, GpApproxSpec, Tunable};

#[cfg(test)]
mod tests;
