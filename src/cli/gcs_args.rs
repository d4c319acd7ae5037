//! Options of the great-circle sampler (`--method gcs`).

use clap::{Args, ValueEnum};

use crate::engine::gcs::{GcsSettings, Loss};

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum LossArg {
    /// The AUC risk with γ (the Gibbs posterior of RACL14).
    Auc,
    /// GH00's label-noise likelihood on the training errors (with an intercept).
    LabelNoise,
}

#[derive(Debug, Clone, Default, Args)]
pub struct GcsArgs {
    /// GCS: independent chains (default 4).
    #[arg(long, value_name = "C", help_heading = "Great-circle sampler")]
    pub chains: Option<usize>,
    /// GCS: stop once every coefficient's bulk and tail ESS reach this (default 400)
    /// and R-hat ≤ 1.01.
    #[arg(long, value_name = "E", help_heading = "Great-circle sampler")]
    pub min_ess: Option<f64>,
    /// GCS: cap on the steps of each chain (default 200000); reaching it is reported as not converged.
    #[arg(long, value_name = "S", help_heading = "Great-circle sampler")]
    pub max_steps: Option<usize>,
    /// GCS: warm-up steps of each chain, discarded (default 200).
    #[arg(long, value_name = "W", help_heading = "Great-circle sampler")]
    pub warmup: Option<usize>,
    /// GCS: what the posterior penalises (default auc).
    #[arg(long, value_enum, help_heading = "Great-circle sampler")]
    pub loss: Option<LossArg>,
    /// GCS: label-noise level q of `--loss label-noise` (default 0.1).
    #[arg(long, value_name = "Q", help_heading = "Great-circle sampler")]
    pub noise: Option<f64>,
    /// GCS: also estimate the evidence log Z by stepping stones from γ = 0 (with
    /// --loss label-noise: the evidence of every noise level on the way).
    #[arg(long, help_heading = "Great-circle sampler")]
    pub evidence: bool,
}

impl GcsArgs {
    pub fn settings(&self, seed: u64) -> GcsSettings {
        let mut s = GcsSettings {
            seed,
            ..GcsSettings::default()
        };
        if let Some(c) = self.chains {
            s.chains = c;
        }
        if let Some(e) = self.min_ess {
            s.min_ess = e;
        }
        if let Some(m) = self.max_steps {
            s.max_steps = m;
        }
        if let Some(w) = self.warmup {
            s.warmup = w;
        }
        s.evidence = self.evidence;
        if self.loss == Some(LossArg::LabelNoise) {
            s.loss = Loss::LabelNoise {
                noise: self.noise.unwrap_or(0.1),
                intercept: true,
            };
        }
        s
    }
}
