//! The methods the program can run (the first table of the registry, which
//! re-exports it): name, help, and the priors each accepts.

use super::run_spec::PriorKind;

/// A method the program can run.
#[derive(Debug)]
pub struct MethodInfo {
    pub name: &'static str,
    /// One line for the help and the run form.
    pub help: &'static str,
    /// Samples or approximates a Gibbs posterior (takes γ and a prior).
    pub bayesian: bool,
    /// Priors it accepts (the first is the default); empty for the baselines.
    pub priors: &'static [PriorKind],
}

use PriorKind::{Ard, Gaussian, Gp, SpikeSlab};

pub const METHODS: &[MethodInfo] = &[
    MethodInfo {
        name: "logit",
        help: "L2 logistic regression, penalty by cross-validation (baseline)",
        bayesian: false,
        priors: &[],
    },
    MethodInfo {
        name: "rankboost",
        help: "RankBoost.B with threshold rankers, rounds by cross-validation (baseline)",
        bayesian: false,
        priors: &[],
    },
    MethodInfo {
        name: "smc",
        help: "adaptive tempering SMC: samples the Gibbs posterior (the gold standard)",
        bayesian: true,
        priors: &[Gaussian, Ard, SpikeSlab, Gp],
    },
    MethodInfo {
        name: "ep",
        help: "Expectation Propagation: a Gaussian approximation of the Gibbs posterior and its evidence",
        bayesian: true,
        priors: &[Gaussian, Ard, SpikeSlab, Gp],
    },
    MethodInfo {
        name: "vb",
        help: "variational Bayes (ARC16): the closest Gaussian of a family, for the AUC risk or a classification loss",
        bayesian: true,
        // The KL to a spike-and-slab prior has no closed form.
        priors: &[Gaussian, Ard],
    },
    MethodInfo {
        name: "gcs",
        help: "great-circle sampler: exact hit-and-run chains on directions, with R-hat and ESS (Gaussian priors)",
        bayesian: true,
        priors: &[Gaussian, Ard],
    },
];

/// The methods that accept `gamma = theory` (vb: ARC16's λ, as this program's γ).
pub const THEORY_GAMMA: &[&str] = &["vb"];

/// The methods the explorer starts when it opens, in order (EP first: it is quick).
pub const AUTORUN_ORDER: &[&str] = &["ep", "smc"];

pub fn method(name: &str) -> Option<&'static MethodInfo> {
    METHODS.iter().find(|m| m.name == name)
}

pub fn method_names() -> Vec<&'static str> {
    METHODS.iter().map(|m| m.name).collect()
}
