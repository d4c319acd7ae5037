//! The fitted GP score model (ALGORITHMS.md §6): everything `predict` needs,
//! serialisable into the run record.
//!
//! Every GP fit is stored in one shape: features `φ(x) ∈ R^r` with the
//! posterior `w ~ N(m, V)` of their weights, so that the score of a new row is
//! `s(x) = φ(x)ᵀw`:
//! - landmarks, whitened (exact GP-EP's whitened form, Nyström):
//!   `φ(x) = L⁻¹ k_I(x)` with `K_II = LLᵀ` on the landmark rows I, stable for
//!   any K_II; the GP's conditional variance `k(x, x) − ‖φ(x)‖²` (0 at the
//!   landmarks, and for the linear kernel) is added to the predictive variance.
//! - landmark scores (exact GP-EP's precision form, K_II well conditioned):
//!   the weights are the scores at the landmarks and `φ(x) = K_II⁻¹ k_I(x)`;
//!   with every distinct training row as a landmark this is §6's
//!   `k*ᵀ(I + BK)⁻¹r` and `k** − k*ᵀ(I + BK)⁻¹Bk*` (no conversion at the end).
//! - Fourier: `φ(x) = √(2/D) cos(Wx + b)` (the model is the feature model).
//!
//! The predictive mean of landmark models is `k_I(x)ᵀα` with α stored: scoring
//! a file costs a kernel evaluation per landmark, no factorisation. The
//! variance is either the weights' covariance (feature models, small r) or,
//! for exact GP-EP, the reduced form of `spread` (k eigenpairs to a stated
//! accuracy instead of r(r + 1)/2 numbers).

use nalgebra::{DMatrix, DVector};
use serde::{Deserialize, Serialize};

use super::dense;
use super::factor::fourier_features;
use super::kernel::Kernel;
use super::spread::GpSpread;
use crate::engine::numerics::linalg::{a_b, at_b};

/// How the features of a row are computed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum FeatureBasis {
    /// Landmark rows (r × d, row-major, standardised); whitened weights.
    Landmarks { d: usize, rows: Vec<f64> },
    /// Landmark rows; the weights are the scores at them.
    LandmarkScores { d: usize, rows: Vec<f64> },
    /// Random Fourier features: frequencies W (D × d, row-major) and phases b.
    Fourier { d: usize, w: Vec<f64>, b: Vec<f64> },
}

/// A GP score model: kernel, feature basis and the posterior of the weights.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GpModel {
    pub kernel: Kernel,
    pub basis: FeatureBasis,
    /// Posterior mean of the weights (r).
    pub mean: Vec<f64>,
    /// The posterior spread of the score.
    pub spread: GpSpread,
    /// Landmark models: the predictive mean is `k_I(x)ᵀ alpha`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub alpha: Vec<f64>,
}

/// Lower triangle of a symmetric matrix, packed by rows.
pub fn pack_lower(v: &DMatrix<f64>) -> Vec<f64> {
    let r = v.nrows();
    let mut out = Vec::with_capacity(r * (r + 1) / 2);
    for i in 0..r {
        for j in 0..=i {
            out.push(v[(i, j)]);
        }
    }
    out
}

/// The symmetric matrix of a packed lower triangle.
pub fn unpack_lower(p: &[f64], r: usize) -> DMatrix<f64> {
    assert_eq!(p.len(), r * (r + 1) / 2, "packed size");
    let mut v = DMatrix::zeros(r, r);
    let mut k = 0;
    for i in 0..r {
        for j in 0..=i {
            v[(i, j)] = p[k];
            v[(j, i)] = p[k];
            k += 1;
        }
    }
    v
}

impl GpModel {
    /// Number of features r.
    pub fn rank(&self) -> usize {
        self.mean.len()
    }

    /// How many numbers the model stores (its size in a record is ~20 bytes each).
    pub fn numbers(&self) -> usize {
        self.mean.len()
            + self.spread.numbers()
            + self.alpha.len()
            + match &self.basis {
                FeatureBasis::Landmarks { rows, .. }
                | FeatureBasis::LandmarkScores { rows, .. } => rows.len(),
                FeatureBasis::Fourier { w, b, .. } => w.len() + b.len(),
            }
    }

    /// The landmark rows (r × d), if any.
    fn landmarks(&self) -> Option<DMatrix<f64>> {
        match &self.basis {
            FeatureBasis::Landmarks { d, rows } | FeatureBasis::LandmarkScores { d, rows } => {
                Some(DMatrix::from_row_slice(self.rank(), *d, rows))
            }
            FeatureBasis::Fourier { .. } => None,
        }
    }

    /// `alpha` of a landmark model from its weights' mean.
    pub fn with_alpha(self) -> GpModel {
        let Some(land) = self.landmarks() else {
            return self;
        };
        let l = dense::cholesky(self.kernel.gram(&land))
            .expect("the landmarks' Gram matrix is positive definite");
        self.with_alpha_from(&l)
    }

    /// `with_alpha` given the Cholesky factor of the landmarks' Gram matrix
    /// (the fit has it: no second factorisation).
    pub fn with_alpha_from(mut self, l: &DMatrix<f64>) -> GpModel {
        if self.landmarks().is_none() {
            return self;
        }
        let mut a = DMatrix::from_column_slice(self.rank(), 1, &self.mean);
        if matches!(self.basis, FeatureBasis::LandmarkScores { .. }) {
            dense::solve_lower(l, &mut a);
        }
        dense::solve_lower_t(l, &mut a);
        self.alpha = a.as_slice().to_vec();
        self
    }

    /// Features of every row of `x` as columns (r × n), and the residual prior
    /// variance of each row (0 for Fourier features).
    pub fn features(&self, x: &DMatrix<f64>) -> (DMatrix<f64>, Vec<f64>) {
        match &self.basis {
            FeatureBasis::Landmarks { .. } | FeatureBasis::LandmarkScores { .. } => {
                let land = self.landmarks().expect("landmarks");
                let l = dense::cholesky(self.kernel.gram(&land))
                    .expect("the landmarks' Gram matrix was positive definite when fitted");
                let mut phi = self.kernel.cross(&land, x);
                let kxx = self.kernel.diag(x);
                dense::solve_lower(&l, &mut phi);
                // ‖L⁻¹k‖² = kᵀK_II⁻¹k: the prior variance the landmarks explain.
                let resid = (0..x.nrows())
                    .map(|j| (kxx[j] - phi.column(j).norm_squared()).max(0.0))
                    .collect();
                if matches!(self.basis, FeatureBasis::LandmarkScores { .. }) {
                    dense::solve_lower_t(&l, &mut phi);
                }
                (phi, resid)
            }
            FeatureBasis::Fourier { w, b, .. } => {
                (fourier_features(x, w, b).transpose(), vec![0.0; x.nrows()])
            }
        }
    }

    /// Predictive mean and variance of the score at every row of `x`
    /// (standardised like the training rows).
    pub fn predict(&self, x: &DMatrix<f64>) -> (Vec<f64>, Vec<f64>) {
        let packed = match &self.spread {
            GpSpread::Covariance { packed } => packed,
            GpSpread::Reduced { lambda, g, .. } => {
                let land = self
                    .landmarks()
                    .expect("a reduced spread belongs to a landmark model");
                let k = self.kernel.cross(&land, x);
                let a = DMatrix::from_column_slice(self.rank(), 1, &self.alpha);
                let mean = at_b(&k, &a).iter().copied().collect();
                let gm = DMatrix::from_fn(self.rank(), g.len(), |i, j| g[j][i]);
                let t = at_b(&gm, &k); // k × rows
                let kxx = self.kernel.diag(x);
                let var = (0..x.nrows())
                    .map(|c| {
                        let reduction: f64 = lambda
                            .iter()
                            .zip(t.column(c).iter())
                            .map(|(l, v)| l * v * v)
                            .sum();
                        (kxx[c] - reduction).max(0.0)
                    })
                    .collect();
                return (mean, var);
            }
        };
        let (phi, resid) = self.features(x);
        let m = DVector::from_column_slice(&self.mean);
        let mean = phi.tr_mul(&m).iter().copied().collect();
        let v = unpack_lower(packed, self.rank());
        let vphi = a_b(&v, &phi);
        let var = (0..x.nrows())
            .map(|j| resid[j] + phi.column(j).dot(&vphi.column(j)).max(0.0))
            .collect();
        (mean, var)
    }

    /// Predictive means only (landmark models: one kernel row per landmark).
    pub fn predict_mean(&self, x: &DMatrix<f64>) -> Vec<f64> {
        if let Some(land) = self.landmarks().filter(|_| self.alpha.len() == self.rank()) {
            let k = self.kernel.cross(&land, x);
            let a = DMatrix::from_column_slice(self.rank(), 1, &self.alpha);
            return at_b(&k, &a).iter().copied().collect();
        }
        let (phi, _) = self.features(x);
        let m = DMatrix::from_column_slice(self.rank(), 1, &self.mean);
        at_b(&phi, &m).iter().copied().collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn packing_round_trips() {
        let v = DMatrix::from_fn(4, 4, |i, j| (i + j) as f64 + 0.5 * (i * j) as f64);
        assert_eq!(unpack_lower(&pack_lower(&v), 4), v);
    }

    /// The model survives the run record's JSON (as `ScoreModel::Gp`, tag "gp").
    #[test]
    fn record_round_trip() {
        let model = GpModel {
            kernel: Kernel::Se { lengthscale: 0.9 },
            basis: FeatureBasis::LandmarkScores {
                d: 1,
                rows: vec![0.0, 1.0],
            },
            mean: vec![0.3, -0.2],
            spread: GpSpread::Covariance {
                packed: vec![1.0, 0.1, 0.8],
            },
            alpha: Vec::new(),
        }
        .with_alpha();
        let sm = crate::engine::ScoreModel::Gp(Box::new(model));
        let json = serde_json::to_string(&sm).unwrap();
        assert!(
            json.starts_with(r#"{"kind":"gp","kernel":{"kind":"se""#),
            "{json}"
        );
        let back: crate::engine::ScoreModel = serde_json::from_str(&json).unwrap();
        assert_eq!(back, sm);
        let x = DMatrix::from_row_slice(3, 1, &[0.0, 0.5, 1.0]);
        assert_eq!(back.score(&x), sm.score(&x));
        // At the landmarks the mean is the landmark scores.
        let s = sm.score(&x);
        assert!((s[0] - 0.3).abs() < 1e-12 && (s[2] + 0.2).abs() < 1e-12);
    }

    /// GP regression identities: with the prior as posterior (m = 0, V = I) the
    /// predictive variance is k(x, x), whatever the landmarks.
    #[test]
    fn prior_model_predicts_the_prior() {
        let land = DMatrix::from_fn(5, 2, |i, j| (i as f64 - 2.0) * (1.0 + j as f64) * 0.4);
        let model = GpModel {
            kernel: Kernel::Se { lengthscale: 0.9 },
            basis: FeatureBasis::Landmarks {
                d: 2,
                rows: land.transpose().as_slice().to_vec(),
            },
            mean: vec![0.0; 5],
            spread: GpSpread::Covariance {
                packed: pack_lower(&DMatrix::identity(5, 5)),
            },
            alpha: Vec::new(),
        }
        .with_alpha();
        let x = DMatrix::from_fn(7, 2, |i, j| (i as f64 * 0.3 - 1.0) * (1.0 - j as f64 * 0.5));
        let (m, v) = model.predict(&x);
        assert!(m.iter().all(|&a| a == 0.0));
        assert!(v.iter().all(|&a| (a - 1.0).abs() < 1e-10), "{v:?}");
    }
}
