//! Priors on the linear coefficients θ (ALGORITHMS.md §2): one interface
//! (validation, log density, sampling) for every engine.

use rand_distr::{Distribution, StandardNormal};
use serde::{Deserialize, Serialize};

use crate::engine::gp::GpPrior;
use crate::engine::numerics::rng::Rng;

const LN_2PI: f64 = 1.837_877_066_409_345_5;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Prior {
    /// θ ~ N(0, var·I). The AUC posterior's direction does not depend on `var`.
    Gaussian { var: f64 },
    /// θ_k ~ N(0, vars[k]): automatic relevance determination.
    Ard { vars: Vec<f64> },
    /// θ_k ~ incl·N(0, slab_var) + (1 − incl)·N(0, spike_var), spike_var ≥ 1e-6·slab_var.
    SpikeSlab {
        spike_var: f64,
        slab_var: f64,
        incl: f64,
    },
    /// A Gaussian process on the scores (ALGORITHMS.md §6): not a prior on θ.
    /// Only the GP engines (`ep`, `smc`) accept it; the θ-space methods below
    /// (`log_density`, `sample`) give NaN for it.
    Gp(GpPrior),
}

impl Prior {
    pub fn name(&self) -> &'static str {
        match self {
            Prior::Gaussian { .. } => "gaussian",
            Prior::Ard { .. } => "ard",
            Prior::SpikeSlab { .. } => "spike-slab",
            Prior::Gp(_) => "gp",
        }
    }

    /// RACL14 Thm 2.3's prior variance `(2/d)(1 + 1/(n²d))`.
    pub fn theory_gaussian_var(n: usize, d: usize) -> f64 {
        let (n, d) = (n as f64, d as f64);
        (2.0 / d) * (1.0 + 1.0 / (n * n * d))
    }

    /// RACL14 Thm 2.5's inclusion probability `1 − exp(−1/d)`.
    pub fn theory_inclusion(d: usize) -> f64 {
        -(-1.0 / d as f64).exp_m1()
    }

    /// Checks the parameters for a problem of dimension `d`.
    pub fn validate(&self, d: usize) -> Result<(), String> {
        let positive = |v: f64, what: &str| {
            if v.is_finite() && v > 0.0 {
                Ok(())
            } else {
                Err(format!("{what} must be a positive number; got {v}"))
            }
        };
        match self {
            Prior::Gaussian { var } => positive(*var, "the prior variance"),
            Prior::Ard { vars } => {
                if vars.len() != d {
                    return Err(format!(
                        "the ARD prior has {} variances for {d} features",
                        vars.len()
                    ));
                }
                vars.iter()
                    .try_for_each(|&v| positive(v, "every ARD variance"))
            }
            Prior::SpikeSlab {
                spike_var,
                slab_var,
                incl,
            } => {
                positive(*slab_var, "the slab variance")?;
                positive(*spike_var, "the spike variance")?;
                if *spike_var < 1e-6 * slab_var {
                    return Err(format!(
                        "the spike variance {spike_var:e} is below 1e-6 × the slab variance ({:e}): a near-Dirac \
                         spike breaks EP's natural parameters; use a `spike_var` ≥ {:e}",
                        1e-6 * slab_var,
                        1e-6 * slab_var
                    ));
                }
                if spike_var >= slab_var {
                    return Err(format!(
                        "the spike variance {spike_var} must be below the slab variance {slab_var}"
                    ));
                }
                if !(*incl > 0.0 && *incl <= 1.0) {
                    return Err(format!(
                        "the inclusion probability must be in (0, 1]; got {incl}"
                    ));
                }
                Ok(())
            }
            Prior::Gp(gp) => gp.validate(),
        }
    }

    /// log π(θ), normalised.
    pub fn log_density(&self, theta: &[f64]) -> f64 {
        let gauss = |t: f64, v: f64| -0.5 * (LN_2PI + v.ln() + t * t / v);
        match self {
            Prior::Gaussian { var } => theta.iter().map(|&t| gauss(t, *var)).sum(),
            Prior::Ard { vars } => theta.iter().zip(vars).map(|(&t, &v)| gauss(t, v)).sum(),
            Prior::SpikeSlab {
                spike_var,
                slab_var,
                incl,
            } => theta
                .iter()
                .map(|&t| {
                    let a = incl.ln() + gauss(t, *slab_var);
                    if *incl >= 1.0 {
                        return a;
                    }
                    let b = (-incl).ln_1p() + gauss(t, *spike_var);
                    let m = a.max(b);
                    m + ((a - m).exp() + (b - m).exp()).ln()
                })
                .sum(),
            Prior::Gp(_) => f64::NAN,
        }
    }

    /// Fills `out` with a draw from the prior.
    pub fn sample(&self, rng: &mut Rng, out: &mut [f64]) {
        for (k, o) in out.iter_mut().enumerate() {
            let z: f64 = StandardNormal.sample(rng);
            let v = match self {
                Prior::Gaussian { var } => *var,
                Prior::Ard { vars } => vars[k],
                Prior::SpikeSlab {
                    spike_var,
                    slab_var,
                    incl,
                } => {
                    let u: f64 = rand::RngExt::random(rng);
                    if u < *incl { *slab_var } else { *spike_var }
                }
                Prior::Gp(_) => f64::NAN,
            };
            *o = z * v.sqrt();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spike_slab_density_is_the_mixture() {
        let p = Prior::SpikeSlab {
            spike_var: 0.01,
            slab_var: 2.0,
            incl: 0.3,
        };
        let t = 0.4f64;
        let n = |v: f64| (-(t * t) / (2.0 * v)).exp() / (2.0 * std::f64::consts::PI * v).sqrt();
        let want = (0.3 * n(2.0) + 0.7 * n(0.01)).ln();
        assert!((p.log_density(&[t]) - want).abs() < 1e-12);
    }

    #[test]
    fn dirac_spike_is_refused() {
        let p = Prior::SpikeSlab {
            spike_var: 1e-9,
            slab_var: 1.0,
            incl: 0.1,
        };
        assert!(p.validate(3).unwrap_err().contains("1e-6"));
    }
}
