//! Options of the VB engine (`--method vb`) and of the certificates every
//! Bayesian fit gets (`--epsilon`, `--is-draws`), flattened into `fit`.

use clap::{Args, ValueEnum};

use crate::engine::bounds::{self, DEFAULT_EPSILON};
use crate::engine::event::{Event, LogLevel};
use crate::engine::fit::Fit;
use crate::engine::is_check::{IsSettings, is_check_fit};
use crate::engine::problem::Problem;
use crate::engine::vb::cv::VbCv;
use crate::engine::vb::{AdamSettings, Family, Loss, Optimizer, Vb, VbSettings};

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum FamilyArg {
    /// F1: Σ = σ² × the prior covariance.
    Iso,
    /// F2: diagonal Σ.
    Diag,
    /// F3: full Σ (Cholesky factor).
    Full,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum LossArg {
    /// The AUC risk (share of discordant pairs).
    Auc,
    /// Classification error.
    ZeroOne,
    /// Hinge loss.
    Hinge,
    /// Exponential loss.
    Exp,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum OptimizerArg {
    /// Full batch up to 4 million items (pairs or rows), stochastic above.
    Auto,
    FullBatch,
    Stochastic,
}

#[derive(Debug, Clone, Args)]
pub struct VbArgs {
    /// VB: the Gaussian family of ρ.
    #[arg(long, value_enum, default_value = "diag", help_heading = "VB")]
    pub family: FamilyArg,
    /// VB: the risk of the Gibbs posterior (the classification losses score with the same θ).
    #[arg(long, value_enum, default_value = "auc", help_heading = "VB")]
    pub loss: LossArg,
    /// VB: L-BFGS over all items, or Adam on random mini-batches.
    #[arg(long, value_enum, default_value = "auto", help_heading = "VB")]
    pub vb_optimizer: OptimizerArg,
    /// VB, stochastic: items (pairs or rows) per step.
    #[arg(long, default_value_t = 4000, value_name = "B", help_heading = "VB")]
    pub batch_pairs: usize,
    /// Confidence 1 − ε of the PAC-Bayes certificate of Bayesian fits.
    #[arg(long, default_value_t = DEFAULT_EPSILON, value_name = "E", help_heading = "Certificates")]
    pub epsilon: f64,
    /// EP/VB: importance draws checking the Gaussian against the Gibbs posterior (0: skip).
    #[arg(
        long,
        default_value_t = 4000,
        value_name = "N",
        help_heading = "Certificates"
    )]
    pub is_draws: usize,
}

impl VbArgs {
    pub fn loss(&self) -> Loss {
        match self.loss {
            LossArg::Auc => Loss::Auc,
            LossArg::ZeroOne => Loss::ZeroOne,
            LossArg::Hinge => Loss::Hinge,
            LossArg::Exp => Loss::Exp,
        }
    }

    /// `cv`: γ by cross-validation over these multiples of n, with `folds` folds.
    pub fn engine(&self, seed: u64, cv: Option<(Vec<f64>, usize)>) -> Vb {
        Vb {
            cv: cv.map(|(grid_over_n, folds)| VbCv {
                grid_over_n,
                folds,
                seed,
            }),
            settings: VbSettings {
                family: match self.family {
                    FamilyArg::Iso => Family::Iso,
                    FamilyArg::Diag => Family::Diag,
                    FamilyArg::Full => Family::Full,
                },
                loss: self.loss(),
                optimizer: match self.vb_optimizer {
                    OptimizerArg::Auto => Optimizer::Auto,
                    OptimizerArg::FullBatch => Optimizer::FullBatch,
                    OptimizerArg::Stochastic => Optimizer::Stochastic,
                },
                adam: AdamSettings {
                    batch: self.batch_pairs.max(1),
                    ..AdamSettings::default()
                },
                seed,
                ..VbSettings::default()
            },
        }
    }

    /// Adds `details.bound` (any Bayesian fit) and `details.is_check` (Gaussian
    /// approximations) to a fit; a certificate that cannot be computed is a
    /// warning in the trace, not a failure of the run.
    pub fn certify(&self, fit: &mut Fit, pb: &Problem, seed: u64) {
        if fit.gamma.is_none() {
            return;
        }
        fn put(fit: &mut Fit, key: &str, v: serde_json::Value) {
            if !fit.details.is_object() {
                fit.details = serde_json::json!({});
            }
            fit.details[key] = v;
        }
        let mut warn = Vec::new();
        match bounds::certify(fit, pb, self.epsilon) {
            Ok(b) => put(fit, "bound", serde_json::to_value(b).unwrap_or_default()),
            Err(e) => warn.push(format!("no PAC-Bayes certificate: {e}")),
        }
        let gaussian = fit.particles.is_none() && fit.covariance.is_some();
        if self.is_draws > 0 && gaussian {
            let s = IsSettings {
                draws: self.is_draws,
                seed,
                ..IsSettings::default()
            };
            match is_check_fit(fit, pb, &s) {
                Ok(c) => {
                    if !c.trusted {
                        warn.push(format!("importance-sampling check: {}", c.verdict));
                    }
                    put(fit, "is_check", serde_json::to_value(c).unwrap_or_default());
                }
                Err(e) => warn.push(format!("no importance-sampling check: {e}")),
            }
        }
        for w in warn {
            eprintln!("warning: {w}");
            fit.trace.push(Event::Log {
                level: LogLevel::Warn,
                message: w,
            });
        }
    }
}
