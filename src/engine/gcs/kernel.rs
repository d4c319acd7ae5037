//! The kernel version (GH00 §3): scores `s = K α` with a GP prior `s ~ N(0, K)`.
//! With `K = U Λ Uᵀ` (rank r), the empirical feature map `F = U Λ^{1/2}`
//! (n × r, `F Fᵀ = K`) makes the problem linear with prior N(0, I_r): the same
//! chains walk on directions in the span of the training points, and norms go
//! through the Gram matrix only. A new row x* with kernel values k* (to the
//! training rows) has features `k*ᵀ U Λ^{-1/2}`. Needs only K: any kernel
//! (the GP prior's) plugs in here.

use nalgebra::{DMatrix, SymmetricEigen};

use crate::engine::interface::EngineError;

/// Eigenvalues below this share of the largest are dropped (rank truncation):
/// relative, so the map does not depend on the kernel's amplitude.
pub const RANK_TOL: f64 = 1e-10;

#[derive(Debug, Clone)]
pub struct KernelFeatures {
    /// F = U Λ^{1/2}, n × r.
    pub features: DMatrix<f64>,
    /// U Λ^{-1/2}, n × r: maps kernel values to features.
    pub basis: DMatrix<f64>,
    /// Eigenvalues dropped by the rank truncation.
    pub dropped: usize,
}

impl KernelFeatures {
    /// The feature map of a symmetric positive semi-definite Gram matrix.
    pub fn from_gram(k: &DMatrix<f64>) -> Result<KernelFeatures, EngineError> {
        let n = k.nrows();
        if n == 0 || k.ncols() != n {
            return Err(EngineError::InvalidParams(format!(
                "the Gram matrix must be square and non-empty; got {} × {}",
                k.nrows(),
                k.ncols()
            )));
        }
        let asym = (0..n)
            .flat_map(|i| (0..i).map(move |j| (i, j)))
            .map(|(i, j)| (k[(i, j)] - k[(j, i)]).abs())
            .fold(0.0, f64::max);
        let scale = k.iter().map(|v| v.abs()).fold(0.0, f64::max);
        if !(scale.is_finite() && scale > 0.0) || asym > 1e-8 * scale {
            return Err(EngineError::InvalidParams(
                "the Gram matrix must be finite, non-zero and symmetric".into(),
            ));
        }
        let eig = SymmetricEigen::new(k.clone());
        let top = eig.eigenvalues.max();
        let keep: Vec<usize> = (0..n)
            .filter(|&i| eig.eigenvalues[i] > RANK_TOL * top)
            .collect();
        let features = DMatrix::from_fn(n, keep.len(), |i, c| {
            eig.eigenvectors[(i, keep[c])] * eig.eigenvalues[keep[c]].sqrt()
        });
        let basis = DMatrix::from_fn(n, keep.len(), |i, c| {
            eig.eigenvectors[(i, keep[c])] / eig.eigenvalues[keep[c]].sqrt()
        });
        Ok(KernelFeatures {
            features,
            basis,
            dropped: n - keep.len(),
        })
    }

    /// Features of new rows from their kernel values to the training rows
    /// (m × n): `K* U Λ^{-1/2}`; on the training rows themselves this gives F.
    pub fn features_of(&self, k_star: &DMatrix<f64>) -> DMatrix<f64> {
        crate::engine::numerics::linalg::a_b(k_star, &self.basis)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::numerics::linalg::a_bt;
    use crate::engine::numerics::rng::{normal, stream};

    #[test]
    fn feature_map_reproduces_the_gram_matrix() {
        let mut r = stream(1, &[]);
        let x = DMatrix::from_fn(12, 3, |_, _| normal(&mut r));
        let k = a_bt(&x, &x); // linear kernel, rank 3
        let f = KernelFeatures::from_gram(&k).unwrap();
        assert_eq!((f.features.ncols(), f.dropped), (3, 9));
        assert!((a_bt(&f.features, &f.features) - &k).abs().max() < 1e-10);
        assert!((f.features_of(&k) - &f.features).abs().max() < 1e-10);
        let asym = DMatrix::from_row_slice(2, 2, &[1.0, 0.5, 0.0, 1.0]);
        assert!(KernelFeatures::from_gram(&asym).is_err());
    }
}
