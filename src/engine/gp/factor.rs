//! The GP prior `s ~ N(0, K)` in a form engines can use (ALGORITHMS.md §6):
//!
//! - **Precision** on the distinct rows: `K_u = LLᵀ` by Cholesky and the prior
//!   precision `K_u⁻¹`, when K_u is well conditioned (high-dimensional data:
//!   DNA, Credit, SPECTF, Colon). An EP rebuild is then `K_u⁻¹ + B` in O(M) plus
//!   one n³ factorisation.
//! - **Whitened**: `s = Z w`, `w ~ N(0, I_r)`, Z from a pivoted Cholesky of K
//!   stopped when every residual prior variance is below `tol`·max k(x, x).
//!   Exact to that tolerance, and the right form when K is ill conditioned or
//!   of low rank (smooth kernels on low-dimensional data, the linear kernel:
//!   r = d). Stopped at r = D pivots it is the Nyström approximation with
//!   greedily chosen landmarks.
//! - **Fourier**: random Fourier features `√(2/D) cos(Wx + b)`, `W ~ N(0, ℓ⁻²I)`,
//!   `b ~ U[0, 2π)` (Rahimi & Recht 2007): `E[zᵀz'] = k(x, x')`.
//!
//! Identical rows have identical scores under any kernel: the precision form
//! works on the distinct rows, and the pivoted Cholesky never picks a duplicate.

use std::collections::HashMap;

use nalgebra::DMatrix;
use rayon::prelude::*;

use super::dense;
use super::kernel::Kernel;
use crate::engine::numerics::rng;

/// Distinct rows: `map[i]` is row i's index among the distinct rows, `reps[u]`
/// the first row equal to distinct row u.
#[derive(Debug, Clone)]
pub struct Distinct {
    pub map: Vec<usize>,
    pub reps: Vec<usize>,
}

impl Distinct {
    pub fn of(x: &DMatrix<f64>) -> Distinct {
        let mut seen: HashMap<Vec<u64>, usize> = HashMap::new();
        let (mut map, mut reps) = (Vec::with_capacity(x.nrows()), Vec::new());
        for i in 0..x.nrows() {
            // +0.0 and −0.0 are the same point.
            let key: Vec<u64> = x.row(i).iter().map(|v| (v + 0.0).to_bits()).collect();
            let u = *seen.entry(key).or_insert_with(|| {
                reps.push(i);
                reps.len() - 1
            });
            map.push(u);
        }
        Distinct { map, reps }
    }
    pub fn len(&self) -> usize {
        self.reps.len()
    }
    pub fn is_empty(&self) -> bool {
        self.reps.is_empty()
    }
}

/// A pivoted Cholesky factor: `K ≈ Z Zᵀ` with `Z = K[:, I] L_I⁻ᵀ`, exact on the
/// pivot rows I.
#[derive(Debug, Clone)]
pub struct Pivoted {
    /// n × r.
    pub z: DMatrix<f64>,
    /// The pivot rows in order.
    pub pivots: Vec<usize>,
    /// Largest residual prior variance left out, relative to max k(x, x).
    pub residual: f64,
    /// The prior variance left out, `tr(K − ZZᵀ)`, as a share of `tr K`.
    pub trace_residual: f64,
}

/// When the greedy pivoted Cholesky stops (whichever comes first).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Stop {
    /// Most pivots.
    pub max_rank: usize,
    /// Every residual prior variance is at most this share of max k(x, x).
    pub max_residual: f64,
    /// The residual trace `tr(K − ZZᵀ)` is at most this share of `tr K` (0: not used).
    pub trace_residual: f64,
}

/// Pivoted Cholesky of the Gram matrix of `x`: pivots are taken greedily by
/// largest residual variance until it falls to `tol`·max k(x, x) or `max_rank`
/// pivots are taken. O(n r (r + d)).
pub fn pivoted_cholesky(kernel: &Kernel, x: &DMatrix<f64>, tol: f64, max_rank: usize) -> Pivoted {
    pivoted_cholesky_until(
        kernel,
        x,
        Stop {
            max_rank,
            max_residual: tol,
            trace_residual: 0.0,
        },
    )
}

/// Rows of the update `col −= Z[:, :k] Z[p, :k]ᵀ` one task handles.
const UPDATE_ROWS: usize = 512;

/// `pivoted_cholesky` with every stopping rule of `stop`.
pub fn pivoted_cholesky_until(kernel: &Kernel, x: &DMatrix<f64>, stop: Stop) -> Pivoted {
    let n = x.nrows();
    let mut resid = kernel.diag(x);
    let top = resid
        .iter()
        .copied()
        .fold(0.0, f64::max)
        .max(f64::MIN_POSITIVE);
    let trace: f64 = resid.iter().sum::<f64>().max(f64::MIN_POSITIVE);
    let max_rank = stop.max_rank.min(n);
    // Z column-major, grown a column per pivot (no n × max_rank up front).
    let mut z: Vec<f64> = Vec::new();
    let mut pivots = Vec::new();
    loop {
        let (p, &best) = resid
            .iter()
            .enumerate()
            .max_by(|a, b| a.1.total_cmp(b.1))
            .expect("rows");
        let left = || resid.iter().map(|v| v.max(0.0)).sum::<f64>() / trace;
        if pivots.len() == max_rank
            || best <= stop.max_residual * top
            || (stop.trace_residual > 0.0 && left() <= stop.trace_residual)
        {
            let r = pivots.len();
            return Pivoted {
                trace_residual: left(),
                z: DMatrix::from_vec(n, r, z),
                pivots,
                residual: best.max(0.0) / top,
            };
        }
        let k = pivots.len();
        let mut col = kernel.column(x, p);
        // col −= Z[:, :k] Z[p, :k]ᵀ, column by column within blocks of rows
        // (each entry sums in the same order whatever the threads).
        let zs = &z;
        col.par_chunks_mut(UPDATE_ROWS)
            .enumerate()
            .for_each(|(b, chunk)| {
                let i0 = b * UPDATE_ROWS;
                for c in 0..k {
                    let zpc = zs[c * n + p];
                    if zpc != 0.0 {
                        let zc = &zs[c * n + i0..c * n + i0 + chunk.len()];
                        for (v, zi) in chunk.iter_mut().zip(zc) {
                            *v -= zi * zpc;
                        }
                    }
                }
            });
        let piv = best.sqrt();
        z.reserve(n);
        for (i, v) in col.iter().enumerate() {
            let zi = v / piv;
            z.push(zi);
            resid[i] -= zi * zi;
        }
        z[k * n + p] = piv;
        resid[p] = 0.0;
        for &q in &pivots {
            resid[q] = 0.0;
        }
        pivots.push(p);
    }
}

/// The prior precision on the distinct rows, when well conditioned.
#[derive(Debug, Clone)]
pub struct Precision {
    /// Cholesky factor of K_u.
    pub chol: DMatrix<f64>,
    /// K_u⁻¹.
    pub prec: DMatrix<f64>,
    pub log_det_k: f64,
}

/// Smallest conditional prior variance of a distinct row given the others
/// before (the squared Cholesky pivot), relative to max k(x, x), for which the
/// precision form is used. Below it some score is nearly determined by the
/// others, K_u⁻¹ has huge entries, and the rebuild `K_u⁻¹ + B` would lose B's
/// digits to cancellation: the whitened form is used instead.
pub const MIN_RELATIVE_PIVOT: f64 = 1e-7;

/// K_u's Cholesky factor and inverse when every squared pivot is at least
/// `MIN_RELATIVE_PIVOT`·max k(x, x); None otherwise.
pub fn precision(kernel: &Kernel, xu: &DMatrix<f64>) -> Option<Precision> {
    let k = kernel.gram(xu);
    let top = kernel.diag(xu).iter().copied().fold(0.0, f64::max);
    let chol = dense::cholesky(k).ok()?;
    let min_pivot = chol
        .diagonal()
        .iter()
        .map(|d| d * d)
        .fold(f64::INFINITY, f64::min);
    if min_pivot.is_nan() || min_pivot < MIN_RELATIVE_PIVOT * top {
        return None;
    }
    let prec = dense::inverse_from_cholesky(&chol);
    let log_det_k = dense::log_det(&chol);
    Some(Precision {
        chol,
        prec,
        log_det_k,
    })
}

/// Random Fourier features of the SE kernel with length-scale `ell`: the
/// frequencies W (D × d, row-major) and phases b.
pub fn fourier_frequencies(d: usize, features: usize, ell: f64, seed: u64) -> (Vec<f64>, Vec<f64>) {
    let mut r = rng::stream(seed, &[0x6666_0001]);
    let w: Vec<f64> = (0..features * d)
        .map(|_| rng::normal(&mut r) / ell)
        .collect();
    let b: Vec<f64> = (0..features)
        .map(|_| rand::RngExt::random::<f64>(&mut r) * std::f64::consts::TAU)
        .collect();
    (w, b)
}

/// The features `√(2/D) cos(W x + b)` of every row (n × D).
pub fn fourier_features(x: &DMatrix<f64>, w: &[f64], b: &[f64]) -> DMatrix<f64> {
    let (n, d, dd) = (x.nrows(), x.ncols(), b.len());
    let wm = DMatrix::from_row_slice(dd, d, w);
    let mut z = crate::engine::numerics::linalg::a_bt(x, &wm);
    let scale = (2.0 / dd as f64).sqrt();
    for k in 0..dd {
        for i in 0..n {
            z[(i, k)] = scale * (z[(i, k)] + b[k]).cos();
        }
    }
    z
}

#[cfg(test)]
mod tests {
    use super::*;

    fn data(n: usize, d: usize) -> DMatrix<f64> {
        DMatrix::from_fn(n, d, |i, j| {
            ((i * 7 + j * 3) as f64 * 0.91 + (i * j) as f64 * 0.13).sin() * 1.5
        })
    }

    #[test]
    fn pivoted_cholesky_reproduces_the_gram_matrix() {
        let x = data(60, 3);
        let k = Kernel::Se { lengthscale: 1.1 };
        let f = pivoted_cholesky(&k, &x, 1e-12, 60);
        let err = (&f.z * f.z.transpose() - k.gram(&x)).amax();
        assert!(err < 1e-10, "{err}");
        // The linear kernel has rank d.
        let f = pivoted_cholesky(&Kernel::Linear, &x, 1e-10, 60);
        assert_eq!(f.z.ncols(), 3);
        assert!((&f.z * f.z.transpose() - Kernel::Linear.gram(&x)).amax() < 1e-10);
        // Truncated: exact on the pivot rows.
        let f = pivoted_cholesky(&k, &x, 0.0, 10);
        let g = k.gram(&x);
        let zz = &f.z * f.z.transpose();
        for &a in &f.pivots {
            for b in 0..60 {
                assert!((zz[(a, b)] - g[(a, b)]).abs() < 1e-10);
            }
        }
    }

    /// The residual-trace rule stops at the first rank whose left-out prior
    /// variance `tr(K − ZZᵀ)/tr K` is within the target (one pivot fewer is
    /// not), the share reported is that trace computed directly, and the
    /// factor is bit-identical whatever the thread count.
    #[test]
    fn the_trace_rule_stops_at_the_first_rank_within_it() {
        let x = data(700, 3);
        let k = Kernel::Se { lengthscale: 0.7 };
        let stop = Stop {
            max_rank: 700,
            max_residual: 0.0,
            trace_residual: 0.01,
        };
        let f = pivoted_cholesky_until(&k, &x, stop);
        let r = f.z.ncols();
        let share = |z: &DMatrix<f64>| 1.0 - z.norm_squared() / 700.0;
        assert!(r > 1 && r < 700, "{r}");
        assert!((f.trace_residual - share(&f.z)).abs() < 1e-12);
        assert!(f.trace_residual <= 0.01, "{}", f.trace_residual);
        let fewer = pivoted_cholesky(&k, &x, 0.0, r - 1);
        assert!(share(&fewer.z) > 0.01);
        // Nested: the first r − 1 columns are the smaller factor.
        assert_eq!(fewer.z, f.z.columns(0, r - 1).into_owned());
        let one = rayon::ThreadPoolBuilder::new()
            .num_threads(1)
            .build()
            .unwrap()
            .install(|| pivoted_cholesky_until(&k, &x, stop));
        assert_eq!(one.z, f.z);
        assert_eq!(one.pivots, f.pivots);
    }

    #[test]
    fn duplicates_are_merged() {
        let mut x = data(10, 2);
        x.set_row(7, &x.row(2).clone_owned());
        let u = Distinct::of(&x);
        assert_eq!(u.len(), 9);
        assert_eq!(u.map[7], u.map[2]);
        let f = pivoted_cholesky(&Kernel::Se { lengthscale: 1.0 }, &x, 1e-12, 10);
        assert!(f.z.ncols() <= 9 && !f.pivots.contains(&7) || !f.pivots.contains(&2));
    }

    #[test]
    fn fourier_features_approximate_the_kernel() {
        let x = data(20, 3);
        let (w, b) = fourier_frequencies(3, 20_000, 1.3, 5);
        let z = fourier_features(&x, &w, &b);
        let err = (&z * z.transpose() - Kernel::Se { lengthscale: 1.3 }.gram(&x)).amax();
        // Monte Carlo error of D = 20 000 features: sd ≈ 1/√D ≈ 0.007 per entry.
        assert!(err < 0.05, "{err}");
    }
}
