//! `Prior::log_density` with its constants precomputed: it runs once per
//! proposal, so logs of variances per coordinate per call would add up.

use crate::engine::prior::Prior;

const LN_2PI: f64 = 1.837_877_066_409_345_5;

#[derive(Debug, Clone)]
pub enum FastPrior {
    /// `const − ½ Σ θ_k² / v_k`.
    Gaussian { constant: f64, inv_var: Vec<f64> },
    /// Per coordinate `logaddexp(a − ½θ²/v1, b − ½θ²/v0)`.
    SpikeSlab {
        log_slab: f64,
        log_spike: f64,
        inv_slab: f64,
        inv_spike: f64,
    },
}

impl FastPrior {
    pub fn new(prior: &Prior, d: usize) -> FastPrior {
        let gaussian = |vars: Vec<f64>| FastPrior::Gaussian {
            constant: -0.5 * vars.iter().map(|v| LN_2PI + v.ln()).sum::<f64>(),
            inv_var: vars.iter().map(|v| 1.0 / v).collect(),
        };
        match prior {
            Prior::Gaussian { var } => gaussian(vec![*var; d]),
            Prior::Ard { vars } => gaussian(vars.clone()),
            // Not a prior on θ: `Smc::run` samples GP priors in score space.
            Prior::Gp(_) => gaussian(vec![f64::NAN; d]),
            Prior::SpikeSlab {
                spike_var,
                slab_var,
                incl,
            } => FastPrior::SpikeSlab {
                log_slab: incl.ln() - 0.5 * (LN_2PI + slab_var.ln()),
                log_spike: if *incl >= 1.0 {
                    f64::NEG_INFINITY
                } else {
                    (-incl).ln_1p() - 0.5 * (LN_2PI + spike_var.ln())
                },
                inv_slab: 1.0 / slab_var,
                inv_spike: 1.0 / spike_var,
            },
        }
    }

    /// The log density of coordinate k alone (priors here are products).
    pub fn log_density_coord(&self, k: usize, t: f64) -> f64 {
        match self {
            FastPrior::Gaussian { constant, inv_var } => {
                constant / inv_var.len() as f64 - 0.5 * t * t * inv_var[k]
            }
            FastPrior::SpikeSlab {
                log_slab,
                log_spike,
                inv_slab,
                inv_spike,
            } => {
                let a = log_slab - 0.5 * t * t * inv_slab;
                let b = log_spike - 0.5 * t * t * inv_spike;
                let (hi, lo) = if a >= b { (a, b) } else { (b, a) };
                hi + (lo - hi).exp().ln_1p()
            }
        }
    }

    pub fn log_density(&self, theta: &[f64]) -> f64 {
        match self {
            FastPrior::Gaussian { constant, inv_var } => {
                constant
                    - 0.5
                        * theta
                            .iter()
                            .zip(inv_var)
                            .map(|(t, iv)| t * t * iv)
                            .sum::<f64>()
            }
            FastPrior::SpikeSlab {
                log_slab,
                log_spike,
                inv_slab,
                inv_spike,
            } => theta
                .iter()
                .map(|&t| {
                    let a = log_slab - 0.5 * t * t * inv_slab;
                    let b = log_spike - 0.5 * t * t * inv_spike;
                    let (hi, lo) = if a >= b { (a, b) } else { (b, a) };
                    hi + (lo - hi).exp().ln_1p()
                })
                .sum(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn agrees_with_the_prior() {
        let theta = [0.3, -1.2, 0.0, 2.5];
        for p in [
            Prior::Gaussian { var: 0.7 },
            Prior::Ard {
                vars: vec![0.5, 1.0, 2.0, 3.0],
            },
            Prior::SpikeSlab {
                spike_var: 1e-3,
                slab_var: 2.0,
                incl: 0.2,
            },
            Prior::SpikeSlab {
                spike_var: 1e-3,
                slab_var: 2.0,
                incl: 1.0,
            },
        ] {
            let want = p.log_density(&theta);
            let got = FastPrior::new(&p, 4).log_density(&theta);
            assert!(
                (got - want).abs() < 1e-12 * want.abs().max(1.0),
                "{p:?}: {got} vs {want}"
            );
        }
    }
}
