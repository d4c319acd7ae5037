//! Options of the Gaussian-process prior (`--prior gp`, ALGORITHMS.md §6).
//! (Minimal wiring for measuring GP-EP and score-space SMC through the real
//! program; the run specification will own these.)

use clap::{Args, ValueEnum};

use crate::engine::Prior;
use crate::engine::gp::{GpApprox, GpPrior, KernelKind, LengthScale};

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum GpKernelArg {
    /// Squared exponential exp(−‖x − x'‖²/(2ℓ²)).
    Se,
    /// <x, x'>: the linear score (equals --prior gaussian).
    Linear,
}

#[derive(Debug, Clone, Args)]
pub struct GpArgs {
    /// GP prior: covariance kernel (`--kernel` is SMC's move kernel).
    #[arg(long, value_enum, default_value = "se")]
    pub gp_kernel: GpKernelArg,
    /// GP prior: kernel length-scale ℓ (default: the median distance between training rows), or
    /// `auto` (EP: the ℓ of largest log Z_EP, searched from the median distance).
    #[arg(long, value_name = "L|auto")]
    pub lengthscale: Option<String>,
    /// GP prior: `exact` (O(n³) per EP sweep), `nystrom:D` (D landmark rows), `rff:D` (D random
    /// Fourier features), or `auto` (exact up to 4000 training rows, else nystrom:128).
    #[arg(
        long,
        default_value = "auto",
        value_name = "exact|rff:D|nystrom:D|auto"
    )]
    pub gp_approx: String,
}

impl GpArgs {
    /// The GP prior; `seed` draws the random Fourier features.
    pub fn prior(&self, seed: u64) -> Result<Prior, String> {
        let lengthscale = match self.lengthscale.as_deref() {
            None => LengthScale::Median,
            Some(s) if s.eq_ignore_ascii_case("auto") => LengthScale::Auto,
            Some(s) => s
                .parse::<f64>()
                .ok()
                .filter(|v| v.is_finite() && *v > 0.0)
                .map(LengthScale::Value)
                .ok_or_else(|| {
                    format!("--lengthscale must be a positive number or `auto`; got '{s}'")
                })?,
        };
        let bad = || {
            format!(
                "--gp-approx must be exact, auto, rff:D or nystrom:D with D ≥ 1; got '{}'",
                self.gp_approx
            )
        };
        let count = |d: &str| d.parse::<usize>().ok().filter(|&d| d > 0).ok_or_else(bad);
        let a = self.gp_approx.to_ascii_lowercase();
        let approx = match a.split_once(':') {
            None if a == "exact" => GpApprox::Exact,
            None if a == "auto" => GpApprox::Auto,
            Some(("rff", d)) => GpApprox::Rff {
                features: count(d)?,
                seed,
            },
            Some(("nystrom", d)) => GpApprox::Nystrom {
                landmarks: count(d)?,
            },
            _ => return Err(bad()),
        };
        let gp = GpPrior {
            kernel: match self.gp_kernel {
                GpKernelArg::Se => KernelKind::Se,
                GpKernelArg::Linear => KernelKind::Linear,
            },
            lengthscale,
            approx,
        };
        gp.validate()
            .map_err(|m| m.replace("random Fourier features", "--gp-approx rff"))?;
        Ok(Prior::Gp(gp))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(ls: Option<&str>, approx: &str) -> GpArgs {
        GpArgs {
            gp_kernel: GpKernelArg::Se,
            lengthscale: ls.map(String::from),
            gp_approx: approx.into(),
        }
    }

    #[test]
    fn parses_lengthscales_and_approximations() {
        let Prior::Gp(g) = args(Some("auto"), "rff:300").prior(7).unwrap() else {
            panic!()
        };
        assert_eq!(g.lengthscale, LengthScale::Auto);
        assert_eq!(
            g.approx,
            GpApprox::Rff {
                features: 300,
                seed: 7
            }
        );
        let Prior::Gp(g) = args(Some("2.5"), "nystrom:64").prior(0).unwrap() else {
            panic!()
        };
        assert_eq!(g.lengthscale, LengthScale::Value(2.5));
        assert_eq!(g.approx, GpApprox::Nystrom { landmarks: 64 });
        assert!(
            args(None, "rff:0")
                .prior(0)
                .unwrap_err()
                .contains("--gp-approx")
        );
        assert!(
            args(Some("-1"), "exact")
                .prior(0)
                .unwrap_err()
                .contains("--lengthscale")
        );
    }
}
