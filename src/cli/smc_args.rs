//! Options of the SMC engine (`--method smc`).

use clap::{Args, ValueEnum};

use crate::engine::smc::{Kernel, Moves, SmcSettings};

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum KernelArg {
    /// gpcn, or pcn for a Gaussian prior in more than 400 dimensions.
    Auto,
    /// Random-walk Metropolis with the particles' covariance, c = 2.38/√d (adapted).
    Rw,
    /// Preconditioned Crank–Nicolson: prior-preserving (Gaussian priors only).
    Pcn,
    /// pCN around the particles' Gaussian fit (any prior; mixes in high dimension).
    Gpcn,
}

#[derive(Debug, Clone, Default, Args)]
pub struct SmcArgs {
    /// SMC: size N of the particle cloud.
    #[arg(long, value_name = "N", help_heading = "SMC")]
    pub particles: Option<usize>,
    /// SMC: move steps per stage (default: adaptive, until the particles have
    /// decorrelated from their stage-start values).
    #[arg(long, value_name = "K", help_heading = "SMC")]
    pub moves: Option<usize>,
    /// SMC: waste-free (Dau & Chopin): N/P ancestors, each a chain of P states, all kept.
    #[arg(long, value_name = "P", help_heading = "SMC")]
    pub waste_free: Option<usize>,
    /// SMC: ESS target τ of each tempering step, as a share of N (default 0.5).
    #[arg(long, value_name = "TAU", help_heading = "SMC")]
    pub ess: Option<f64>,
    /// SMC: Metropolis kernel of the moves (default auto).
    #[arg(long, value_enum, help_heading = "SMC")]
    pub kernel: Option<KernelArg>,
    /// SMC: initial step size (random walk: c, default 2.38/√d; pcn/gpcn: √(1−ρ²)).
    #[arg(long, value_name = "C", help_heading = "SMC")]
    pub scale: Option<f64>,
    /// SMC: keep the step size fixed instead of adapting it to the acceptance rate.
    #[arg(long, help_heading = "SMC")]
    pub fixed_scale: bool,
    /// SMC: no free radial moves (they rescale θ, which leaves the AUC risk unchanged).
    #[arg(long, help_heading = "SMC")]
    pub no_radial: bool,
    /// SMC: cap on the number of tempering stages.
    #[arg(long, value_name = "S", help_heading = "SMC")]
    pub max_stages: Option<usize>,
    /// SMC: seed of the sampler alone (default: --seed), to compare seeds on one split.
    #[arg(long, value_name = "SEED", help_heading = "SMC")]
    pub smc_seed: Option<u64>,
}

impl SmcArgs {
    /// The engine settings (validated later against the problem's dimension).
    pub fn settings(&self, seed: u64) -> SmcSettings {
        let mut s = SmcSettings {
            seed: self.smc_seed.unwrap_or(seed),
            ..SmcSettings::default()
        };
        if let Some(n) = self.particles {
            s.particles = n;
        }
        if let Some(k) = self.moves {
            s.moves = Moves::Fixed(k);
        }
        s.waste_free = self.waste_free;
        if let Some(t) = self.ess {
            s.ess = t;
        }
        if let Some(k) = self.kernel {
            s.kernel = match k {
                KernelArg::Auto => Kernel::Auto,
                KernelArg::Rw => Kernel::Rw,
                KernelArg::Pcn => Kernel::Pcn,
                KernelArg::Gpcn => Kernel::Gpcn,
            };
        }
        s.scale = self.scale;
        s.adapt_scale = !self.fixed_scale;
        s.radial = !self.no_radial;
        if let Some(m) = self.max_stages {
            s.max_stages = m;
        }
        s
    }
}
