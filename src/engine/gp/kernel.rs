//! Covariance kernels of the Gaussian-process prior on scores (ALGORITHMS.md §6),
//! shared by every GP sampler (GP-EP, score-space SMC, the great-circle sampler's
//! kernel version). The amplitude is fixed at 1: the AUC risk is scale-free, so
//! it would leave the Gibbs posterior's ranking and its evidence unchanged (§2, §8).
//!
//! Gram matrices are GEMMs: `‖a − b‖² = ‖a‖² + ‖b‖² − 2aᵀb` (clamped at 0), never a
//! loop over pairs and features.

use nalgebra::DMatrix;
use serde::{Deserialize, Serialize};

use crate::engine::numerics::linalg::a_bt;

/// A covariance function with its hyper-parameters.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Kernel {
    /// Squared exponential `exp(−‖x − x'‖²/(2ℓ²))`.
    Se { lengthscale: f64 },
    /// `<x, x'>`: the linear score θᵀx with θ ~ N(0, I) (equals linear EP, §6).
    Linear,
    /// Squared exponential with one length-scale per feature (ARD).
    ArdSe { lengthscales: Vec<f64> },
}

impl Kernel {
    pub fn name(&self) -> &'static str {
        match self {
            Kernel::Se { .. } => "se",
            Kernel::Linear => "linear",
            Kernel::ArdSe { .. } => "ard-se",
        }
    }

    /// Checks the hyper-parameters for rows of `d` features.
    pub fn validate(&self, d: usize) -> Result<(), String> {
        let ok = |l: f64| l.is_finite() && l > 0.0;
        match self {
            Kernel::Se { lengthscale } if !ok(*lengthscale) => Err(format!(
                "the kernel length-scale must be a positive number; got {lengthscale}"
            )),
            Kernel::ArdSe { lengthscales } if lengthscales.len() != d => Err(format!(
                "the ARD kernel has {} length-scales for {d} features",
                lengthscales.len()
            )),
            Kernel::ArdSe { lengthscales } if !lengthscales.iter().all(|&l| ok(l)) => {
                Err("every ARD length-scale must be a positive number".into())
            }
            _ => Ok(()),
        }
    }

    /// The same kernel with every length-scale multiplied by `factor` (the
    /// length-scale search moves all of them together).
    pub fn scaled(&self, factor: f64) -> Kernel {
        match self {
            Kernel::Se { lengthscale } => Kernel::Se {
                lengthscale: lengthscale * factor,
            },
            Kernel::Linear => Kernel::Linear,
            Kernel::ArdSe { lengthscales } => Kernel::ArdSe {
                lengthscales: lengthscales.iter().map(|l| l * factor).collect(),
            },
        }
    }

    /// Whether the kernel has a length-scale to tune.
    pub fn has_lengthscale(&self) -> bool {
        !matches!(self, Kernel::Linear)
    }

    /// The rows divided by their length-scales (ARD), so that every SE kernel
    /// is `exp(−‖a − b‖²/2)` on them; the linear kernel keeps them.
    fn scaled_rows(&self, x: &DMatrix<f64>) -> DMatrix<f64> {
        match self {
            Kernel::Se { lengthscale } => x / *lengthscale,
            Kernel::Linear => x.clone(),
            Kernel::ArdSe { lengthscales } => {
                let mut z = x.clone();
                for (k, mut col) in z.column_iter_mut().enumerate() {
                    col /= lengthscales[k];
                }
                z
            }
        }
    }

    /// `k(a_i, b_j)` for every row i of `a` and j of `b` (|a| × |b|).
    pub fn cross(&self, a: &DMatrix<f64>, b: &DMatrix<f64>) -> DMatrix<f64> {
        assert_eq!(a.ncols(), b.ncols(), "rows of the same width");
        let (za, zb) = (self.scaled_rows(a), self.scaled_rows(b));
        let mut g = a_bt(&za, &zb);
        if matches!(self, Kernel::Linear) {
            return g;
        }
        let sq = |z: &DMatrix<f64>| -> Vec<f64> {
            (0..z.nrows()).map(|i| z.row(i).norm_squared()).collect()
        };
        let (na, nb) = (sq(&za), sq(&zb));
        for j in 0..g.ncols() {
            for i in 0..g.nrows() {
                let d2 = (na[i] + nb[j] - 2.0 * g[(i, j)]).max(0.0);
                g[(i, j)] = (-0.5 * d2).exp();
            }
        }
        g
    }

    /// The Gram matrix `K_ij = k(x_i, x_j)`, exactly symmetric.
    pub fn gram(&self, x: &DMatrix<f64>) -> DMatrix<f64> {
        let mut k = self.cross(x, x);
        let n = k.nrows();
        for j in 0..n {
            for i in 0..j {
                let v = 0.5 * (k[(i, j)] + k[(j, i)]);
                k[(i, j)] = v;
                k[(j, i)] = v;
            }
        }
        if self.has_lengthscale() {
            for i in 0..n {
                k[(i, i)] = 1.0;
            }
        }
        k
    }

    /// `k(x, x)` for every row.
    pub fn diag(&self, x: &DMatrix<f64>) -> Vec<f64> {
        match self {
            Kernel::Linear => (0..x.nrows()).map(|i| x.row(i).norm_squared()).collect(),
            _ => vec![1.0; x.nrows()],
        }
    }

    /// Column `j` of the Gram matrix: `k(x_i, x_j)` for every row i.
    pub fn column(&self, x: &DMatrix<f64>, j: usize) -> Vec<f64> {
        let xj = x.row(j);
        (0..x.nrows())
            .map(|i| {
                let row = x.row(i);
                match self {
                    Kernel::Linear => row.dot(&xj),
                    Kernel::Se { lengthscale } => {
                        let d2 = (row - xj).norm_squared();
                        (-0.5 * d2 / (lengthscale * lengthscale)).exp()
                    }
                    Kernel::ArdSe { lengthscales } => {
                        let d2: f64 = (0..x.ncols())
                            .map(|k| ((row[k] - xj[k]) / lengthscales[k]).powi(2))
                            .sum();
                        (-0.5 * d2).exp()
                    }
                }
            })
            .collect()
    }
}

/// Most rows used by the median heuristic (an evenly spaced subset above it:
/// the median of 500k distances is stable to well under 1%).
const MEDIAN_ROWS: usize = 1000;

/// The median distance between distinct rows: the usual starting length-scale
/// (identical rows are left out, or a data set with many duplicates would get
/// a length-scale of 0).
pub fn median_distance(x: &DMatrix<f64>) -> f64 {
    let n = x.nrows();
    let rows: Vec<usize> = if n <= MEDIAN_ROWS {
        (0..n).collect()
    } else {
        (0..MEDIAN_ROWS).map(|i| i * n / MEDIAN_ROWS).collect()
    };
    let sub = x.select_rows(&rows);
    let g = a_bt(&sub, &sub);
    let m = rows.len();
    let mut d: Vec<f64> = Vec::with_capacity(m * (m - 1) / 2);
    for j in 0..m {
        for i in 0..j {
            let d2 = g[(i, i)] + g[(j, j)] - 2.0 * g[(i, j)];
            if d2 > 1e-12 * (g[(i, i)] + g[(j, j)]).max(1e-300) {
                d.push(d2.sqrt());
            }
        }
    }
    if d.is_empty() {
        return 1.0;
    }
    let mid = d.len() / 2;
    *d.select_nth_unstable_by(mid, f64::total_cmp).1
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rows() -> DMatrix<f64> {
        DMatrix::from_fn(7, 3, |i, j| {
            ((i * 3 + j) as f64 * 0.7).sin() * (1.0 + j as f64)
        })
    }

    #[test]
    fn gram_matches_the_definition() {
        let x = rows();
        for k in [
            Kernel::Se { lengthscale: 1.3 },
            Kernel::Linear,
            Kernel::ArdSe {
                lengthscales: vec![0.5, 2.0, 1.0],
            },
        ] {
            let g = k.gram(&x);
            for i in 0..7 {
                let col = k.column(&x, i);
                for j in 0..7 {
                    assert!((g[(j, i)] - col[j]).abs() < 1e-12, "{k:?} {i} {j}");
                    assert_eq!(g[(i, j)], g[(j, i)]);
                }
                assert!((g[(i, i)] - k.diag(&x)[i]).abs() < 1e-12);
            }
        }
        // ARD with equal length-scales is the isotropic kernel.
        let a = Kernel::ArdSe {
            lengthscales: vec![1.3; 3],
        };
        assert!((a.gram(&x) - Kernel::Se { lengthscale: 1.3 }.gram(&x)).amax() < 1e-14);
    }

    #[test]
    fn median_distance_ignores_duplicates() {
        let x = DMatrix::from_row_slice(4, 1, &[0.0, 0.0, 1.0, 3.0]);
        // Distinct-row distances: 1, 3, 1, 3, 2 → median 2.
        assert_eq!(median_distance(&x), 2.0);
    }
}
