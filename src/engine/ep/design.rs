//! From θ to EP's coordinates and back (ALGORITHMS.md §4).
//!
//! - Primal form: EP runs on the whitened rows `Z = X D^{½}`, D = diag(ϑ), with
//!   prior N(0, I) (well scaled however extreme the ARD variances); then
//!   `m_θ = D^{½} m`, `V_θ = D^{½} V D^{½}`.
//! - Reduced form (d ≥ n, e.g. Colon 62 × 2000): the likelihood sees θ only
//!   through the row space of X. With D = diag(ϑ) take the thin SVD
//!   `X D^{½} = U S Wᵀ` (rank r ≤ n − 1 after centring, singular values below
//!   1e-10 of the largest dropped) and run the same EP on the n × r rows `U S`
//!   with prior N(0, I_r); then `m_θ = D^{½} W m_w` and
//!   `Var θ_k = ϑ_k (1 + Σ_ab W_ka (V_w − I)_ab W_kb)`. No jitter, nothing
//!   absolute: scale-equivariant like the primal form.

use std::sync::Arc;

use nalgebra::DMatrix;

use super::kernel::Excluded;
use super::posterior::{Posterior, PriorTerms};
use crate::engine::fit::LowRankCov;
use crate::engine::numerics::linalg::a_b;

/// Rows shared between the class split, the design and the sites' state.
type Rows = Arc<DMatrix<f64>>;

/// Which form EP runs in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Form {
    /// Reduced when d ≥ n, primal otherwise.
    Auto,
    Primal,
    Reduced,
}

/// EP's rows and prior for given prior variances, and the map back to θ.
#[derive(Debug, Clone)]
pub struct Design {
    /// Shared with the class rows when whitening is the identity (ϑ = 1).
    pub zp: Arc<DMatrix<f64>>,
    pub zn: Arc<DMatrix<f64>>,
    pub prior: PriorTerms,
    /// √ϑ_k (reduced form).
    scale: Vec<f64>,
    /// d × r right singular vectors (reduced form).
    w: Option<DMatrix<f64>>,
}

impl Design {
    /// `xp`, `xn`: positive and negative rows of X; `vars`: prior variances ϑ_k.
    /// The reduced form's SVD is of `X D^{½}`.
    pub fn new(xp: &DMatrix<f64>, xn: &DMatrix<f64>, vars: &[f64], form: Form) -> Design {
        Self::build(xp, xn, None, vars, form)
    }

    /// As `new`; in the primal form with every ϑ_k = 1 the design shares the
    /// rows instead of copying them (Z = X · 1 is X, bit for bit).
    pub fn shared(
        xp: &Arc<DMatrix<f64>>,
        xn: &Arc<DMatrix<f64>>,
        vars: &[f64],
        form: Form,
    ) -> Design {
        Self::build(xp, xn, Some((xp, xn)), vars, form)
    }

    fn build(
        xp: &DMatrix<f64>,
        xn: &DMatrix<f64>,
        shared: Option<(&Rows, &Rows)>,
        vars: &[f64],
        form: Form,
    ) -> Design {
        let (n, d) = (xp.nrows() + xn.nrows(), xp.ncols());
        let reduced = match form {
            Form::Auto => d >= n,
            Form::Primal => false,
            Form::Reduced => true,
        };
        let scale: Vec<f64> = vars.iter().map(|v| v.sqrt()).collect();
        let whiten = |x: &DMatrix<f64>| {
            let mut z = x.clone();
            for (k, mut col) in z.column_iter_mut().enumerate() {
                col *= scale[k];
            }
            z
        };
        if !reduced {
            let (zp, zn) = match shared {
                Some((sp, sn)) if scale.iter().all(|&s| s == 1.0) => (sp.clone(), sn.clone()),
                _ => (Arc::new(whiten(xp)), Arc::new(whiten(xn))),
            };
            return Design {
                zp,
                zn,
                prior: PriorTerms::centred(&vec![1.0; d]),
                scale,
                w: None,
            };
        }
        let mut x = DMatrix::zeros(n, d);
        x.rows_mut(0, xp.nrows()).copy_from(xp);
        x.rows_mut(xp.nrows(), xn.nrows()).copy_from(xn);
        for (k, mut col) in x.column_iter_mut().enumerate() {
            col *= scale[k];
        }
        // SVD of the n × d matrix through its transpose (d × n, tall).
        let svd = x.transpose().svd(true, false);
        let s_max = svd.singular_values.max();
        let keep: Vec<usize> = (0..svd.singular_values.len())
            .filter(|&k| svd.singular_values[k] > 1e-10 * s_max)
            .collect();
        let w = svd.u.expect("computed").select_columns(&keep); // d × r
        let z = a_b(&x, &w); // n × r = U S
        let r = keep.len();
        Design {
            zp: Arc::new(z.rows(0, xp.nrows()).into_owned()),
            zn: Arc::new(z.rows(xp.nrows(), xn.nrows()).into_owned()),
            prior: PriorTerms::centred(&vec![1.0; r]),
            scale,
            w: Some(w),
        }
    }

    pub fn is_reduced(&self) -> bool {
        self.w.is_some()
    }

    /// Dimension of EP's coordinates (d, or the rank r).
    pub fn dim(&self) -> usize {
        self.zp.ncols()
    }

    /// Posterior mean of θ.
    pub fn theta_mean(&self, q: &Posterior) -> Vec<f64> {
        match &self.w {
            None => q.m.iter().zip(&self.scale).map(|(m, s)| m * s).collect(),
            Some(w) => (w * &q.m)
                .iter()
                .zip(&self.scale)
                .map(|(m, s)| m * s)
                .collect(),
        }
    }

    /// θ's means from EP-coordinate means (primal form).
    pub fn theta_mean_of(&self, mean: &[f64]) -> Vec<f64> {
        debug_assert!(self.w.is_none());
        mean.iter().zip(&self.scale).map(|(m, s)| m * s).collect()
    }

    /// θ's factored covariance from one in EP's coordinates (primal form).
    pub fn theta_low_rank_of(&self, mut c: LowRankCov) -> LowRankCov {
        debug_assert!(self.w.is_none());
        for (k, mut row) in c.factor.row_iter_mut().enumerate() {
            row *= self.scale[k];
            c.diag[k] *= self.scale[k] * self.scale[k];
        }
        c
    }

    /// θ's sds from EP-coordinate variances (primal form).
    pub fn theta_sd_of(&self, var: &[f64]) -> Vec<f64> {
        debug_assert!(self.w.is_none());
        var.iter()
            .zip(&self.scale)
            .map(|(v, s)| v.sqrt() * s)
            .collect()
    }

    /// Posterior sds of θ.
    pub fn theta_sd(&self, q: &Posterior) -> Vec<f64> {
        match &self.w {
            None => q.sd().iter().zip(&self.scale).map(|(v, s)| v * s).collect(),
            Some(w) => {
                let mut vm = q.v.clone();
                for a in 0..vm.nrows() {
                    vm[(a, a)] -= 1.0;
                }
                let b = a_b(w, &vm); // d × r
                (0..w.nrows())
                    .map(|k| {
                        let quad: f64 = b
                            .row(k)
                            .iter()
                            .zip(w.row(k).iter())
                            .map(|(x, y)| x * y)
                            .sum();
                        self.scale[k] * (1.0 + quad).max(0.0).sqrt()
                    })
                    .collect()
            }
        }
    }

    /// Full covariance of θ (primal form only; d × d would be large in the reduced one).
    pub fn theta_cov(&self, q: &Posterior) -> Option<DMatrix<f64>> {
        self.w.is_none().then(|| {
            let mut c = q.v.clone();
            for i in 0..c.nrows() {
                for j in 0..c.ncols() {
                    c[(i, j)] *= self.scale[i] * self.scale[j];
                }
            }
            c
        })
    }

    /// The covariance in the reduced form, factored: `D^{½}(I + W (V_w − I) Wᵀ) D^{½}`
    /// = diag(D) + (D^{½}W)(V_w − I)(D^{½}W)ᵀ, O(d r) numbers instead of d².
    pub fn theta_cov_low_rank(&self, q: &Posterior) -> Option<LowRankCov> {
        let w = self.w.as_ref()?;
        let mut core = q.v.clone();
        for a in 0..core.nrows() {
            core[(a, a)] -= 1.0;
        }
        let mut factor = w.clone();
        for (k, mut row) in factor.row_iter_mut().enumerate() {
            row *= self.scale[k];
        }
        Some(LowRankCov {
            diag: self.scale.iter().map(|s| s * s).collect(),
            factor,
            core,
        })
    }

    /// Full covariance in the reduced form, `D^{½}(I + W (V_w − I) Wᵀ) D^{½}` (tests).
    #[cfg(test)]
    pub fn theta_cov_reduced(&self, q: &Posterior) -> Option<DMatrix<f64>> {
        let w = self.w.as_ref()?;
        let mut vm = q.v.clone();
        for a in 0..vm.nrows() {
            vm[(a, a)] -= 1.0;
        }
        let mut c = crate::engine::numerics::linalg::a_bt(&a_b(w, &vm), w);
        for k in 0..c.nrows() {
            c[(k, k)] += 1.0;
        }
        for i in 0..c.nrows() {
            for j in 0..c.ncols() {
                c[(i, j)] *= self.scale[i] * self.scale[j];
            }
        }
        Some(c)
    }
}

/// Positive/negative row pairs with identical features (a = 0: not sites),
/// −0 as +0. Rows are compared by a 64-bit hash of their bits (column by
/// column: the columns are contiguous), then exactly where hashes agree: a
/// map keyed by each row's bits held ≈ 200 bytes a row (1.1 GB at 10⁷ rows).
pub fn identical_pairs(xp: &DMatrix<f64>, xn: &DMatrix<f64>) -> Excluded {
    use rayon::prelude::*;
    let bits = |v: f64| (v + 0.0).to_bits();
    // Blocks of rows on the thread pool (each row's hash is its own).
    let hashes = |x: &DMatrix<f64>| -> Vec<u64> {
        let n = x.nrows();
        let mut h = vec![0x9e37_79b9_7f4a_7c15_u64; n];
        h.par_chunks_mut(HASH_ROWS).enumerate().for_each(|(b, hb)| {
            let r0 = b * HASH_ROWS;
            for k in 0..x.ncols() {
                let col = &x.as_slice()[k * n + r0..][..hb.len()];
                for (hi, &v) in hb.iter_mut().zip(col) {
                    *hi = (hi.rotate_left(5) ^ bits(v)).wrapping_mul(0x517c_c1b7_2722_0a95);
                }
            }
        });
        h
    };
    let mut neg: Vec<(u64, usize)> = hashes(xn).into_iter().zip(0..).collect();
    neg.par_sort_unstable();
    let same = |i: usize, j: usize| (0..xp.ncols()).all(|k| bits(xp[(i, k)]) == bits(xn[(j, k)]));
    let neg = &neg;
    // In order of i (collect keeps it), each i's matches in order of j.
    let pairs: Vec<(usize, usize)> = hashes(xp)
        .into_par_iter()
        .enumerate()
        .flat_map_iter(|(i, h)| {
            let a = neg.partition_point(|&(g, _)| g < h);
            neg[a..]
                .iter()
                .take_while(move |&&(g, _)| g == h)
                .filter(move |&&(_, j)| same(i, j))
                .map(move |&(_, j)| (i, j))
        })
        .collect();
    Excluded::new(xp.nrows(), pairs)
}

/// Rows per block of `identical_pairs`' hashes.
const HASH_ROWS: usize = 1 << 14;
