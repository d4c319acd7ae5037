//! Options of the Bayesian engines: γ and the prior (ALGORITHMS.md §2).

use clap::{Args, ValueEnum};

use crate::engine::Prior;

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum PriorKind {
    /// θ ~ N(0, ϑ I); the AUC posterior does not depend on ϑ.
    Gaussian,
    /// θ_k ~ N(0, ϑ_k), the ϑ_k chosen by evidence (automatic relevance determination).
    Ard,
    /// θ_k ~ p N(0, v1) + (1 − p) N(0, v0): feature selection.
    SpikeSlab,
    /// A Gaussian process on the scores (non-linear; see --gp-kernel, --lengthscale, --gp-approx).
    Gp,
}

#[derive(Debug, Clone, Args)]
pub struct BayesArgs {
    /// Inverse temperature γ of the Gibbs posterior: a number, a multiple of the
    /// training size like `2n`, or `auto` (cross-validation, where the method supports it).
    /// Default: n (the number of training rows; RACL14 Thm 2.3 gives γ ∝ n).
    #[arg(long, value_name = "G|Kn|auto")]
    pub gamma: Option<String>,
    /// Prior on the coefficients.
    #[arg(long, value_enum, default_value = "gaussian")]
    pub prior: PriorKind,
    /// Gaussian prior variance ϑ (default 1; it does not change the posterior's direction).
    #[arg(long, value_name = "V")]
    pub prior_var: Option<f64>,
    /// Spike-and-slab: spike variance v0 (≥ 1e-6·v1; default 1e-4·v1, or 1e-4 with --slab-var auto).
    #[arg(long, value_name = "V0")]
    pub spike_var: Option<f64>,
    /// Spike-and-slab: slab variance v1 (default 1), or `auto` (EP: the v1 of largest log Z_EP
    /// with v0 fixed; the AUC risk is scale-free, so only v0/v1 ∈ [1e-6, 0.1] matters).
    #[arg(long, value_name = "V1|auto")]
    pub slab_var: Option<String>,
    /// Spike-and-slab: prior inclusion probability p (default 1 − exp(−1/d), RACL14 Thm 2.5), or
    /// `auto` (EP: the p of largest log Z_EP).
    #[arg(long, value_name = "P|auto")]
    pub inclusion_prior: Option<String>,
}

/// γ as requested on the command line.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum GammaChoice {
    Fixed(f64),
    Auto,
}

/// A number or `auto`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Tunable {
    Fixed(f64),
    Auto,
}

fn parse_tunable(what: &str, s: &str) -> Result<Tunable, String> {
    if s.eq_ignore_ascii_case("auto") {
        return Ok(Tunable::Auto);
    }
    s.parse::<f64>()
        .ok()
        .filter(|v| v.is_finite() && *v > 0.0)
        .map(Tunable::Fixed)
        .ok_or_else(|| format!("{what} must be a positive number or `auto`; got '{s}'"))
}

impl BayesArgs {
    /// γ for a training set of `n_train` rows.
    pub fn gamma(&self, n_train: usize) -> Result<GammaChoice, String> {
        let Some(s) = self.gamma.as_deref() else {
            return Ok(GammaChoice::Fixed(n_train as f64));
        };
        let bad = || {
            format!("--gamma must be a number ≥ 0, a multiple of n like `2n`, or `auto`; got '{s}'")
        };
        if s.eq_ignore_ascii_case("auto") {
            return Ok(GammaChoice::Auto);
        }
        let value = match s.strip_suffix('n') {
            Some("") => n_train as f64,
            Some(k) => k.parse::<f64>().map_err(|_| bad())? * n_train as f64,
            None => s.parse::<f64>().map_err(|_| bad())?,
        };
        if value.is_finite() && value >= 0.0 {
            Ok(GammaChoice::Fixed(value))
        } else {
            Err(bad())
        }
    }

    pub fn slab_var(&self) -> Result<Tunable, String> {
        self.slab_var
            .as_deref()
            .map_or(Ok(Tunable::Fixed(1.0)), |s| parse_tunable("--slab-var", s))
    }

    pub fn inclusion_prior(&self, d: usize) -> Result<Tunable, String> {
        match self.inclusion_prior.as_deref() {
            None => Ok(Tunable::Fixed(Prior::theory_inclusion(d))),
            Some(s) => match parse_tunable("--inclusion-prior", s)? {
                Tunable::Fixed(p) if p > 1.0 => {
                    Err(format!("--inclusion-prior must be in (0, 1]; got {p}"))
                }
                t => Ok(t),
            },
        }
    }

    /// The prior for `d` features, with `auto` parts at their starting values
    /// (engines that tune them start there).
    pub fn prior(&self, d: usize) -> Result<Prior, String> {
        let var = self.prior_var.unwrap_or(1.0);
        let prior = match self.prior {
            PriorKind::Gaussian => Prior::Gaussian { var },
            PriorKind::Ard => Prior::Ard { vars: vec![var; d] },
            PriorKind::SpikeSlab => {
                let slab_var = match self.slab_var()? {
                    Tunable::Fixed(v) => v,
                    Tunable::Auto => 1.0,
                };
                let incl = match self.inclusion_prior(d)? {
                    Tunable::Fixed(p) => p,
                    Tunable::Auto => Prior::theory_inclusion(d),
                };
                Prior::SpikeSlab {
                    spike_var: self.spike_var.unwrap_or(1e-4 * slab_var),
                    slab_var,
                    incl,
                }
            }
            // Built from the GP options (`GpArgs::prior`); the defaults here.
            PriorKind::Gp => Prior::Gp(crate::engine::gp::GpPrior {
                kernel: crate::engine::gp::KernelKind::Se,
                lengthscale: crate::engine::gp::LengthScale::Median,
                approx: crate::engine::gp::GpApprox::Auto,
            }),
        };
        prior.validate(d)?;
        Ok(prior)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(gamma: Option<&str>) -> BayesArgs {
        BayesArgs {
            gamma: gamma.map(String::from),
            prior: PriorKind::Gaussian,
            prior_var: None,
            spike_var: None,
            slab_var: None,
            inclusion_prior: None,
        }
    }

    #[test]
    fn gamma_forms() {
        assert_eq!(args(None).gamma(399), Ok(GammaChoice::Fixed(399.0)));
        assert_eq!(args(Some("2n")).gamma(100), Ok(GammaChoice::Fixed(200.0)));
        assert_eq!(args(Some("n")).gamma(100), Ok(GammaChoice::Fixed(100.0)));
        assert_eq!(args(Some("400")).gamma(100), Ok(GammaChoice::Fixed(400.0)));
        assert_eq!(args(Some("AUTO")).gamma(100), Ok(GammaChoice::Auto));
        assert!(
            args(Some("-1"))
                .gamma(100)
                .unwrap_err()
                .contains("--gamma must be")
        );
        assert!(args(Some("xn")).gamma(100).is_err());
    }

    #[test]
    fn spike_slab_defaults_follow_theory() {
        let a = BayesArgs {
            prior: PriorKind::SpikeSlab,
            ..args(None)
        };
        let Prior::SpikeSlab {
            spike_var,
            slab_var,
            incl,
        } = a.prior(180).unwrap()
        else {
            panic!()
        };
        assert_eq!((spike_var, slab_var), (1e-4, 1.0));
        assert!((incl - (1.0 - (-1.0f64 / 180.0).exp())).abs() < 1e-15);
        let bad = BayesArgs {
            spike_var: Some(1e-9),
            ..a
        };
        assert!(bad.prior(5).unwrap_err().contains("1e-6"));
    }
}
