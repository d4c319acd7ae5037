//! The variational family ρ = N(m, Σ), in whitened coordinates θ̃ = θ/√ϑ where
//! the prior is N(0, I) (ALGORITHMS.md §7). Whitening makes the optimiser's
//! steps and tolerances scale-free: for the isotropic prior the AUC objective
//! is then identical for every ϑ (§2), and F1 means Σ ∝ the prior covariance.
//!
//! Parameters, in one vector: m (d), then
//! - F1 (`Iso`): s = log σ, Σ = σ² I;
//! - F2 (`Diag`): s_k = log σ_k, Σ = diag(σ_k²);
//! - F3 (`Full`): Σ = L Lᵀ, L lower triangular stored column by column, its
//!   diagonal as log L_kk (so Σ stays positive definite whatever the step).

use nalgebra::DMatrix;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum Family {
    /// F1: Σ = σ² I.
    Iso,
    /// F2: Σ diagonal.
    #[default]
    Diag,
    /// F3: Σ full, through its Cholesky factor.
    Full,
}

impl Family {
    pub fn name(self) -> &'static str {
        match self {
            Family::Iso => "iso",
            Family::Diag => "diag",
            Family::Full => "full",
        }
    }
    /// F1 < F2 < F3 (nested families).
    pub fn rank(self) -> u8 {
        match self {
            Family::Iso => 0,
            Family::Diag => 1,
            Family::Full => 2,
        }
    }
    /// Number of covariance parameters for dimension d.
    pub fn cov_params(self, d: usize) -> usize {
        match self {
            Family::Iso => 1,
            Family::Diag => d,
            Family::Full => d * (d + 1) / 2,
        }
    }
}

/// ∂E[R]/∂Σ as the family needs it: the trace (F1), the diagonal (F2) or the
/// whole symmetric matrix (F3).
#[derive(Debug, Clone)]
pub enum SigmaGrad {
    Trace(f64),
    Diag(Vec<f64>),
    Full(DMatrix<f64>),
}

impl SigmaGrad {
    pub fn zeros(family: Family, d: usize) -> SigmaGrad {
        match family {
            Family::Iso => SigmaGrad::Trace(0.0),
            Family::Diag => SigmaGrad::Diag(vec![0.0; d]),
            Family::Full => SigmaGrad::Full(DMatrix::zeros(d, d)),
        }
    }
}

/// A point of the family: its parameter vector.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Params {
    pub family: Family,
    pub d: usize,
    pub v: Vec<f64>,
}

impl Params {
    /// m = 0 and Σ = `var`·I (whitened).
    pub fn init(family: Family, d: usize, var: f64) -> Params {
        let s = 0.5 * var.ln();
        let mut v = vec![0.0; d];
        match family {
            Family::Iso => v.push(s),
            Family::Diag => v.extend(std::iter::repeat_n(s, d)),
            Family::Full => {
                for j in 0..d {
                    v.push(s);
                    v.extend(std::iter::repeat_n(0.0, d - j - 1));
                }
            }
        }
        Params { family, d, v }
    }

    pub fn mean(&self) -> &[f64] {
        &self.v[..self.d]
    }

    /// The Cholesky factor L (lower triangular) of Σ.
    pub fn chol(&self) -> DMatrix<f64> {
        let d = self.d;
        let c = &self.v[d..];
        match self.family {
            Family::Iso => DMatrix::from_diagonal_element(d, d, c[0].exp()),
            Family::Diag => DMatrix::from_fn(d, d, |i, j| if i == j { c[i].exp() } else { 0.0 }),
            Family::Full => {
                let mut l = DMatrix::zeros(d, d);
                let mut t = 0;
                for j in 0..d {
                    for i in j..d {
                        l[(i, j)] = if i == j { c[t].exp() } else { c[t] };
                        t += 1;
                    }
                }
                l
            }
        }
    }

    /// Σ (d × d).
    pub fn sigma(&self) -> DMatrix<f64> {
        let l = self.chol();
        &l * l.transpose()
    }

    /// The marginal variances Σ_kk.
    pub fn marginal_var(&self) -> Vec<f64> {
        let d = self.d;
        let c = &self.v[d..];
        match self.family {
            Family::Iso => vec![(2.0 * c[0]).exp(); d],
            Family::Diag => c.iter().map(|s| (2.0 * s).exp()).collect(),
            Family::Full => {
                let l = self.chol();
                (0..d).map(|k| l.row(k).norm_squared()).collect()
            }
        }
    }

    /// `W = A Σ` for the rows of A (n × d): `u_i = a_iᵀ Σ a_i = Σ_k W_ik A_ik`.
    pub fn apply_rows(&self, a: &DMatrix<f64>) -> DMatrix<f64> {
        let d = self.d;
        let c = &self.v[d..];
        match self.family {
            Family::Iso => a * (2.0 * c[0]).exp(),
            Family::Diag => {
                let mut w = a.clone();
                for (k, mut col) in w.column_iter_mut().enumerate() {
                    col *= (2.0 * c[k]).exp();
                }
                w
            }
            Family::Full => {
                let s = self.sigma();
                crate::engine::numerics::linalg::a_b(a, &s)
            }
        }
    }

    /// KL(N(m, Σ) ‖ N(0, I)) = ½(tr Σ + ‖m‖² − d − log|Σ|).
    pub fn kl(&self) -> f64 {
        let d = self.d;
        let m2: f64 = self.mean().iter().map(|x| x * x).sum();
        let c = &self.v[d..];
        let (trace, logdet) = match self.family {
            Family::Iso => (d as f64 * (2.0 * c[0]).exp(), 2.0 * d as f64 * c[0]),
            Family::Diag => (
                c.iter().map(|s| (2.0 * s).exp()).sum(),
                2.0 * c.iter().sum::<f64>(),
            ),
            Family::Full => {
                let l = self.chol();
                let logdet = 2.0 * (0..d).map(|k| l[(k, k)].ln()).sum::<f64>();
                (l.norm_squared(), logdet)
            }
        };
        0.5 * (trace + m2 - d as f64 - logdet)
    }

    /// The gradient of `γ·E[R] + KL` with respect to the parameters, from the
    /// risk's gradients in m and Σ.
    pub fn objective_grad(&self, gamma: f64, risk_m: &[f64], risk_sigma: &SigmaGrad) -> Vec<f64> {
        let d = self.d;
        let mut g: Vec<f64> = self
            .mean()
            .iter()
            .zip(risk_m)
            .map(|(m, r)| gamma * r + m)
            .collect();
        let c = &self.v[d..];
        match (self.family, risk_sigma) {
            (Family::Iso, SigmaGrad::Trace(tr)) => {
                // F = γ tr(G) σ² + ½ d σ² − d s (+ const): ∂/∂s = 2σ²(γ tr G + d/2) − d.
                let s2 = (2.0 * c[0]).exp();
                g.push(2.0 * s2 * (gamma * tr + 0.5 * d as f64) - d as f64);
            }
            (Family::Diag, SigmaGrad::Diag(gd)) => {
                g.extend(
                    c.iter()
                        .zip(gd)
                        .map(|(s, gk)| 2.0 * (2.0 * s).exp() * (gamma * gk + 0.5) - 1.0),
                );
            }
            (Family::Full, SigmaGrad::Full(gm)) => {
                // ∂F/∂L = 2γ G L + L − diag(1/L_kk); log-diagonal: × L_kk.
                let l = self.chol();
                let mut dl = (gm * &l) * (2.0 * gamma) + &l;
                for k in 0..d {
                    dl[(k, k)] = (dl[(k, k)] - 1.0 / l[(k, k)]) * l[(k, k)];
                }
                for j in 0..d {
                    for i in j..d {
                        g.push(dl[(i, j)]);
                    }
                }
            }
            _ => panic!("the risk gradient does not match the family"),
        }
        g
    }

    /// The same distribution in a richer family (F1 ⊂ F2 ⊂ F3): warm starts.
    pub fn promote(&self, to: Family) -> Params {
        let d = self.d;
        assert!(to.rank() >= self.family.rank(), "cannot narrow a family");
        if to == self.family {
            return self.clone();
        }
        let logsd: Vec<f64> = match self.family {
            Family::Iso => vec![self.v[d]; d],
            Family::Diag => self.v[d..].to_vec(),
            Family::Full => unreachable!(),
        };
        let mut v = self.mean().to_vec();
        match to {
            Family::Diag => v.extend(logsd),
            Family::Full => {
                for (j, &ls) in logsd.iter().enumerate() {
                    v.push(ls);
                    v.extend(std::iter::repeat_n(0.0, d - j - 1));
                }
            }
            Family::Iso => unreachable!(),
        }
        Params { family: to, d, v }
    }
}
