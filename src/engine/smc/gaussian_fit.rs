//! Gaussian fits of the weighted particles, which shape the Rw and Gpcn moves.
//!
//! **Cross-fitting.** A Gpcn step is reversible for a fixed Gaussian; its
//! acceptance ratio evaluates the fit's density at the current state. When
//! that state helped to estimate the fit, it looks more typical than a fresh
//! draw (in-sample Mahalanobis distances are smaller by ≈ d²/ESS in total: 3
//! on DNA, d = 180), so the first steps accept fresh draws too often and push
//! the cloud towards the fit, away from the target; it takes many steps to
//! relax (DNA, γ = 11: the mean risk rose from 0.4345 to 0.4432 at the first
//! step, back after ~30). The chains therefore move with fits that leave out
//! their own fold of the particles: `CrossFit` holds one fit per fold, each
//! from the other folds.

use nalgebra::{DMatrix, DVector};

use crate::engine::numerics::linalg::a_bt;
use crate::engine::numerics::packed_gemm::PackedRows;

#[path = "column_sums.rs"]
mod column_sums;
use column_sums::column_sums;

/// Folds of the cross-fit (each fit uses the other 3/4 of the particles).
pub const FIT_FOLDS: usize = 4;

/// A Gaussian fit of the weighted particles: mean and lower Cholesky factor of
/// the (shrunk) covariance.
#[derive(Debug, Clone)]
pub struct GaussianFit {
    pub mean: Vec<f64>,
    pub chol: DMatrix<f64>,
    /// The factor's rows packed (row r: r + 1 entries from r(r+1)/2), for
    /// forward substitution.
    packed: Vec<f64>,
    /// The factor packed for blocks of products `L z` (proposals).
    product: PackedRows<f64>,
    /// `L⁻¹ m`: whitened coordinates of the origin are `−L⁻¹m`.
    pub(crate) white_mean: Vec<f64>,
    /// Weight λ of the diagonal in `(1−λ)Σ̂ + λ diag Σ̂`.
    pub shrinkage: f64,
}

/// Weighted sums of one fold around a common centre c: total weight, Σw²,
/// Σw(x − c), Σw(x − c)(x − c)ᵀ and, for the shrinkage, Σw(x − c)²(x − c)²ᵀ
/// (squares taken element-wise).
struct FoldSums {
    w: f64,
    w2: f64,
    s1: Vec<f64>,
    s2: DMatrix<f64>,
    s4: DMatrix<f64>,
}

impl FoldSums {
    fn of(rows: &[&[f64]], weights: &[f64], centre: &[f64]) -> FoldSums {
        FoldSums::of_with(|i, k| rows[i][k], weights, centre)
    }

    /// The sums of the rows whose coordinate k is `x(i, k)` (row i of weight
    /// `weights[i]`).
    #[inline(always)]
    fn of_with(x: impl Fn(usize, usize) -> f64, weights: &[f64], centre: &[f64]) -> FoldSums {
        let d = centre.len();
        let mut s1 = vec![0.0; d];
        // Centred rows scaled by √w: Σw(x − c)(x − c)ᵀ = C·Cᵀ (C is d × n);
        // likewise with squared deviations.
        let mut c = DMatrix::<f64>::zeros(d, weights.len());
        let mut c2 = DMatrix::<f64>::zeros(d, weights.len());
        for (i, &w) in weights.iter().enumerate() {
            let sw = w.sqrt();
            for k in 0..d {
                let v = x(i, k) - centre[k];
                s1[k] += w * v;
                c[(k, i)] = sw * v;
                c2[(k, i)] = sw * v * v;
            }
        }
        FoldSums {
            w: weights.iter().sum(),
            w2: weights.iter().map(|w| w * w).sum(),
            s1,
            s2: a_bt(&c, &c),
            s4: a_bt(&c2, &c2),
        }
    }

    /// The fit of these sums (relative to `centre`); `redundancy` ≥ 1 states
    /// carry the information of one independent draw (correlated snapshots).
    fn fit(&self, centre: &[f64], redundancy: f64) -> GaussianFit {
        let d = centre.len();
        let shift: Vec<f64> = self.s1.iter().map(|v| v / self.w).collect();
        let mut cov = &self.s2 / self.w;
        for a in 0..d {
            for b in 0..d {
                cov[(a, b)] -= shift[a] * shift[b];
            }
        }
        let mean = centre.iter().zip(&shift).map(|(c, s)| c + s).collect();
        let lambda = self.shrinkage(&cov, redundancy);
        GaussianFit::from_moments(mean, cov, lambda)
    }

    /// Ledoit–Wolf weight of the diagonal target (Schäfer & Strimmer 2005,
    /// target D): the estimated sampling variance of the off-diagonal
    /// covariances over their squared size, `Σ Var̂(s_ij) / Σ s_ij²`, with
    /// `Var̂(s_ij) ≈ (E_w[x_i²x_j²] − s_ij²)/ESS`. On DNA (d = 180, 7 500
    /// particles) it is ≈ 0.77 — most sample correlations are noise there —
    /// and lifts the independence acceptance from 0.29 to 0.57.
    fn shrinkage(&self, cov: &DMatrix<f64>, redundancy: f64) -> f64 {
        let d = cov.nrows();
        let inv_ess = redundancy * self.w2 / (self.w * self.w);
        let (mut noise, mut size) = (0.0, 0.0);
        for j in 0..d {
            for i in 0..d {
                if i != j {
                    let s = cov[(i, j)];
                    noise += (self.s4[(i, j)] / self.w - s * s) * inv_ess;
                    size += s * s;
                }
            }
        }
        if size > 0.0 && noise.is_finite() {
            (noise / size).clamp(0.0, 1.0)
        } else {
            1.0
        }
    }
}

impl GaussianFit {
    /// Weighted mean and covariance of the rows of `theta` (n × d, row-major).
    pub fn of(theta: &[f64], d: usize, weights: &[f64]) -> GaussianFit {
        GaussianFit::of_redundant(theta, d, weights, 1.0)
    }

    /// The same when `redundancy` ≥ 1 rows carry the information of one
    /// independent draw (correlated snapshots: more shrinkage).
    pub fn of_redundant(theta: &[f64], d: usize, weights: &[f64], redundancy: f64) -> GaussianFit {
        let rows: Vec<&[f64]> = theta.chunks_exact(d).collect();
        let centre = weighted_mean(&rows, weights, d);
        FoldSums::of(&rows, weights, &centre).fit(&centre, redundancy)
    }

    /// `of_redundant` of the rows whose coordinate k is `cols[k]`: the
    /// copula's mapped folds come by coordinate, and a row-major copy of
    /// them cost as much as the fit. Bit for bit above `DOT_MAX_D`
    /// dimensions (the same sums in the same order); up to it the second
    /// and fourth moments are summed by `column_sums`, which differ from the
    /// block products in rounding alone.
    pub fn of_columns(cols: &[Vec<f64>], weights: &[f64], redundancy: f64) -> GaussianFit {
        let total: f64 = weights.iter().sum();
        let centre: Vec<f64> = cols
            .iter()
            .map(|col| {
                let mut m = 0.0;
                for (&t, &w) in col.iter().zip(weights) {
                    m += w * t;
                }
                m / total
            })
            .collect();
        if cols.len() <= DOT_MAX_D {
            return column_sums(cols, weights, &centre).fit(&centre, redundancy);
        }
        FoldSums::of_with(|i, k| cols[k][i], weights, &centre).fit(&centre, redundancy)
    }

    /// The covariance shrunk towards its diagonal by λ (more if it is not
    /// positive definite), with a relative jitter, and its Cholesky factor.
    pub fn from_moments(mean: Vec<f64>, cov: DMatrix<f64>, lambda: f64) -> GaussianFit {
        let d = mean.len();
        let mut shrinkage = lambda;
        let mean_diag = (0..d).map(|k| cov[(k, k)]).sum::<f64>() / d as f64;
        let jitter = if mean_diag > 0.0 && mean_diag.is_finite() {
            1e-10 * mean_diag
        } else {
            1e-10
        };
        loop {
            let mut s = cov.clone() * (1.0 - shrinkage);
            for k in 0..d {
                s[(k, k)] = cov[(k, k)] + jitter;
            }
            if let Some(ch) = s.cholesky() {
                return GaussianFit::new(mean, ch.l(), shrinkage);
            }
            if shrinkage >= 1.0 {
                // Diagonal with positive jitter: only NaN gets here.
                let mut l = DMatrix::zeros(d, d);
                for k in 0..d {
                    l[(k, k)] = (cov[(k, k)].max(0.0) + jitter).sqrt();
                    if !l[(k, k)].is_finite() {
                        l[(k, k)] = 1.0;
                    }
                }
                return GaussianFit::new(mean, l, 1.0);
            }
            shrinkage = (2.0 * shrinkage).clamp(0.05, 1.0);
        }
    }

    fn new(mean: Vec<f64>, chol: DMatrix<f64>, shrinkage: f64) -> GaussianFit {
        let d = mean.len();
        let packed = (0..d)
            .flat_map(|r| (0..=r).map(move |c| (r, c)))
            .map(|rc| chol[rc])
            .collect();
        let product = PackedRows::new(d, d, |i, k| chol[(i, k)]);
        let mut fit = GaussianFit {
            mean,
            chol,
            packed,
            product,
            white_mean: vec![0.0; d],
            shrinkage,
        };
        let (zero, mut wm) = (vec![0.0; d], vec![0.0; d]);
        fit.whiten(&zero, &mut wm);
        // whiten(0) = −L⁻¹m.
        fit.white_mean = wm.iter().map(|v| -v).collect();
        fit
    }

    fn row(&self, r: usize) -> &[f64] {
        let start = r * (r + 1) / 2;
        &self.packed[start..start + r + 1]
    }

    /// `out_j = L z_j` for the c rows of `z` (row-major c × d).
    pub(crate) fn l_times_rows(
        &self,
        z: &[f64],
        c: usize,
        out: &mut [f64],
        scratch: &mut Vec<f64>,
    ) {
        self.product.mul_bt(z, c, out, self.mean.len(), scratch);
    }

    /// `w = L⁻¹ (θ − m)` (forward substitution).
    pub fn whiten(&self, theta: &[f64], w: &mut [f64]) {
        for r in 0..theta.len() {
            let row = self.row(r);
            let dot: f64 = row[..r].iter().zip(&w[..r]).map(|(l, v)| l * v).sum();
            w[r] = (theta[r] - self.mean[r] - dot) / row[r];
        }
    }

    /// `whiten` of the c rows of `theta` (row-major c × d) into `w`, eight
    /// rows in lockstep: each row's sums are the same sequence of products
    /// and adds as `whiten`'s (same bits), but eight independent sums hide the
    /// adds' latency that a single substitution waits on (the radial moves
    /// re-whiten every chain each step: ≈ 20% of an SMC run on DNA).
    pub fn whiten_rows(&self, theta: &[f64], w: &mut [f64], t: &mut Vec<f64>) {
        #[cfg(target_arch = "x86_64")]
        {
            if std::arch::is_x86_feature_detected!("avx512f") {
                // SAFETY: the CPU has the features the function is compiled for.
                return unsafe { self.whiten_rows_avx512(theta, w, t) };
            }
            if std::arch::is_x86_feature_detected!("avx2") {
                // SAFETY: as above.
                return unsafe { self.whiten_rows_avx2(theta, w, t) };
            }
        }
        self.whiten_rows_generic(theta, w, t)
    }

    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx512f")]
    unsafe fn whiten_rows_avx512(&self, theta: &[f64], w: &mut [f64], t: &mut Vec<f64>) {
        self.whiten_rows_generic(theta, w, t)
    }

    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2")]
    unsafe fn whiten_rows_avx2(&self, theta: &[f64], w: &mut [f64], t: &mut Vec<f64>) {
        self.whiten_rows_generic(theta, w, t)
    }

    #[inline(always)]
    fn whiten_rows_generic(&self, theta: &[f64], w: &mut [f64], t: &mut Vec<f64>) {
        const L: usize = 8;
        let d = self.mean.len();
        assert_eq!(theta.len(), w.len(), "one whitened row per row");
        // t: the group's whitened states, coordinate-major (d × L).
        t.clear();
        t.resize(d * L, 0.0);
        for (th, wg) in theta.chunks(L * d).zip(w.chunks_mut(L * d)) {
            let rows = th.len() / d;
            for r in 0..d {
                let row = self.row(r);
                let (done, rest) = t.split_at_mut(r * L);
                // `Sum for f64` starts at −0.0: so do these sums.
                let mut acc = [-0.0f64; L];
                for (&l, v) in row[..r].iter().zip(done.chunks_exact(L)) {
                    for (a, &vj) in acc.iter_mut().zip(v) {
                        *a += l * vj;
                    }
                }
                for (j, (o, &a)) in rest[..L].iter_mut().zip(&acc).enumerate() {
                    let x = if j < rows { th[j * d + r] } else { 0.0 };
                    *o = (x - self.mean[r] - a) / row[r];
                }
            }
            for (j, out) in wg.chunks_exact_mut(d).enumerate() {
                for (r, o) in out.iter_mut().enumerate() {
                    *o = t[r * L + j];
                }
            }
        }
    }

    /// Proposal standard deviations (√ of the diagonal of LLᵀ).
    pub fn sds(&self) -> Vec<f64> {
        (0..self.mean.len())
            .map(|r| self.chol.row(r).iter().map(|v| v * v).sum::<f64>().sqrt())
            .collect()
    }

    pub fn covariance(&self) -> DMatrix<f64> {
        &self.chol * self.chol.transpose()
    }

    pub fn mean_vector(&self) -> DVector<f64> {
        DVector::from_column_slice(&self.mean)
    }
}

/// Dimension up to which `of_columns` sums the moments by column dot
/// products. At small d the block products' packing and their d × n
/// copies cost several times the d(d + 1) sums themselves (Pima, d = 7,
/// 7 500 rows a copula fit: 51 → 13 M instructions over a run's 15 fits);
/// at large d the blocked products reuse each row from cache and win.
const DOT_MAX_D: usize = 16;

fn weighted_mean(rows: &[&[f64]], weights: &[f64], d: usize) -> Vec<f64> {
    let total: f64 = weights.iter().sum();
    let mut mean = vec![0.0; d];
    for (row, &w) in rows.iter().zip(weights) {
        for (m, &t) in mean.iter_mut().zip(*row) {
            *m += w * t;
        }
    }
    mean.iter_mut().for_each(|m| *m /= total);
    mean
}

/// One Gaussian fit per fold of the particles, each from the other folds.
/// Particle i belongs to family `i mod families` (its chain: copies of one
/// state stay in one family), and families are split into `folds` contiguous
/// ranges (copies of one ancestor are adjacent after systematic resampling).
#[derive(Debug, Clone)]
pub struct CrossFit {
    pub fits: Vec<GaussianFit>,
    families: usize,
}

impl CrossFit {
    /// Fits of the weighted rows of `theta` (n × d, row-major), `folds` ≥ 2;
    /// `redundancy` ≥ 1 rows carry the information of one independent draw.
    pub fn of(
        theta: &[f64],
        d: usize,
        weights: &[f64],
        families: usize,
        folds: usize,
        redundancy: f64,
    ) -> CrossFit {
        assert!(
            folds >= 2 && families >= folds,
            "a cross-fit needs ≥ 2 folds of families"
        );
        let rows: Vec<&[f64]> = theta.chunks_exact(d).collect();
        let centre = weighted_mean(&rows, weights, d);
        let fold_of = |i: usize| (i % families) * folds / families;
        let sums: Vec<FoldSums> = (0..folds)
            .map(|g| {
                let (r, w): (Vec<&[f64]>, Vec<f64>) = rows
                    .iter()
                    .zip(weights)
                    .enumerate()
                    .filter(|(i, _)| fold_of(*i) == g)
                    .map(|(_, (r, &w))| (*r, w))
                    .unzip();
                FoldSums::of(&r, &w, &centre)
            })
            .collect();
        let all = FoldSums {
            w: sums.iter().map(|s| s.w).sum(),
            w2: sums.iter().map(|s| s.w2).sum(),
            s1: (0..d).map(|k| sums.iter().map(|s| s.s1[k]).sum()).collect(),
            s2: sums.iter().fold(DMatrix::zeros(d, d), |acc, s| acc + &s.s2),
            s4: sums.iter().fold(DMatrix::zeros(d, d), |acc, s| acc + &s.s4),
        };
        let fits = sums
            .iter()
            .map(|own| {
                let rest = FoldSums {
                    w: all.w - own.w,
                    w2: all.w2 - own.w2,
                    s1: all.s1.iter().zip(&own.s1).map(|(a, b)| a - b).collect(),
                    s2: &all.s2 - &own.s2,
                    s4: &all.s4 - &own.s4,
                };
                // A fold holding nearly all the weight leaves too little for
                // the others: fit them on everything (in-sample, but defined).
                if rest.w > 1e-3 * all.w && rest.w * rest.w / rest.w2 >= 2.0 {
                    rest.fit(&centre, redundancy)
                } else {
                    all.fit(&centre, redundancy)
                }
            })
            .collect();
        CrossFit { fits, families }
    }

    /// The fold of particle i of the fitted cloud (its chains use the fit
    /// that left it out).
    pub fn fold_of(&self, i: usize) -> usize {
        (i % self.families) * self.fits.len() / self.families
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::numerics::rng;

    #[test]
    fn gaussian_fit_recovers_moments_and_whitens() {
        let mut r = rng::stream(9, &[]);
        let (n, d) = (20000, 3);
        let mut theta = vec![0.0; n * d];
        for row in theta.chunks_exact_mut(d) {
            let (a, b, c) = (
                rng::normal(&mut r),
                rng::normal(&mut r),
                rng::normal(&mut r),
            );
            row.copy_from_slice(&[1.0 + a, 2.0 * a + 0.5 * b, -1.0 + 0.1 * c]);
        }
        let w = vec![1.0 / n as f64; n];
        let fit = GaussianFit::of(&theta, d, &w);
        assert!((fit.mean[0] - 1.0).abs() < 0.03 && (fit.mean[2] + 1.0).abs() < 0.01);
        let cov = fit.covariance();
        assert!((cov[(1, 0)] - 2.0).abs() < 0.08, "{cov}");
        assert!((cov[(1, 1)] - 4.25).abs() < 0.15, "{cov}");
        let mut z = vec![0.0; d];
        let mut back = vec![0.0; d];
        fit.whiten(&theta[..d], &mut z);
        fit.l_times_rows(&z, 1, &mut back, &mut Vec::new());
        for k in 0..d {
            assert!((back[k] + fit.mean[k] - theta[k]).abs() < 1e-12);
        }
    }

    /// The lockstep whitening gives `whiten`'s bits for any number of rows
    /// (zero rows, a partial group, states equal to the mean: signed zeros).
    #[test]
    fn whiten_rows_matches_whiten_bit_for_bit() {
        let mut r = rng::stream(5, &[]);
        let (n, d) = (300, 13);
        let theta: Vec<f64> = (0..n * d)
            .map(|i| rng::normal(&mut r) + (i % d) as f64 * 0.3 * rng::normal(&mut r))
            .collect();
        let fit = GaussianFit::of(&theta, d, &vec![1.0; n]);
        for c in [0, 1, 7, 8, 9, 21] {
            let mut rows: Vec<f64> = theta[..c * d].to_vec();
            if c > 2 {
                rows[d..2 * d].copy_from_slice(&fit.mean);
            }
            let mut fast = vec![f64::NAN; c * d];
            fit.whiten_rows(&rows, &mut fast, &mut Vec::new());
            let mut one = vec![0.0; d];
            for j in 0..c {
                fit.whiten(&rows[j * d..(j + 1) * d], &mut one);
                for k in 0..d {
                    assert_eq!(fast[j * d + k].to_bits(), one[k].to_bits(), "c {c} row {j}");
                }
            }
        }
    }

    #[test]
    fn fits_of_columns_match_fits_of_rows() {
        let mut r = rng::stream(6, &[]);
        // Bit for bit above DOT_MAX_D; below it (column dot products) the
        // same up to rounding, with lane tails (n mod 8 ≠ 0) and without.
        for (n, d) in [(500, 4), (503, 7), (8, 16), (300, DOT_MAX_D + 1)] {
            let theta: Vec<f64> = (0..n * d)
                .map(|i| rng::normal(&mut r) * (1 + i % d) as f64 + (i % 3) as f64)
                .collect();
            let w: Vec<f64> = (0..n).map(|_| rng::normal(&mut r).exp()).collect();
            let cols: Vec<Vec<f64>> = (0..d)
                .map(|k| theta.chunks_exact(d).map(|row| row[k]).collect())
                .collect();
            let (a, b) = (
                GaussianFit::of_redundant(&theta, d, &w, 1.3),
                GaussianFit::of_columns(&cols, &w, 1.3),
            );
            let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
            assert_eq!(bits(&a.mean), bits(&b.mean), "n {n} d {d}");
            if d > DOT_MAX_D {
                assert_eq!(bits(a.chol.as_slice()), bits(b.chol.as_slice()));
                assert_eq!(a.shrinkage.to_bits(), b.shrinkage.to_bits());
                continue;
            }
            let scale = a.chol.iter().fold(0.0f64, |m, v| m.max(v.abs()));
            for (x, y) in a.chol.iter().zip(b.chol.iter()) {
                assert!((x - y).abs() <= 1e-12 * scale, "n {n} d {d}: {x} vs {y}");
            }
            assert!((a.shrinkage - b.shrinkage).abs() <= 1e-12, "n {n} d {d}");
        }
    }

    #[test]
    fn rank_deficient_particles_still_give_a_factor() {
        // Two distinct particles in five dimensions.
        let theta: Vec<f64> = (0..10)
            .map(|i| if i < 5 { i as f64 } else { -(i as f64) })
            .collect();
        let fit = GaussianFit::of(&theta, 5, &[0.5, 0.5]);
        assert!(fit.chol.iter().all(|v| v.is_finite()));
        assert!((0..5).all(|k| fit.chol[(k, k)] > 0.0));
    }
    #[test]
    fn cross_fits_leave_their_fold_out() {
        let mut r = rng::stream(2, &[]);
        let (n, d) = (400, 3);
        // Correlated coordinates (little shrinkage).
        let theta: Vec<f64> = (0..n)
            .flat_map(|_| {
                let (a, b, c) = (
                    rng::normal(&mut r),
                    rng::normal(&mut r),
                    rng::normal(&mut r),
                );
                [a, a + 0.5 * b, 0.3 * a - b + 0.2 * c]
            })
            .collect();
        let weights: Vec<f64> = (0..n).map(|i| 1.0 + (i % 7) as f64).collect();
        let cf = CrossFit::of(&theta, d, &weights, n, 4, 1.0);
        for g in 0..4 {
            let kept: Vec<usize> = (0..n).filter(|&i| cf.fold_of(i) != g).collect();
            let rows: Vec<f64> = kept
                .iter()
                .flat_map(|&i| theta[i * d..(i + 1) * d].iter().copied())
                .collect();
            let w: Vec<f64> = kept.iter().map(|&i| weights[i]).collect();
            let direct = GaussianFit::of(&rows, d, &w);
            let f = &cf.fits[g];
            for k in 0..d {
                assert!((f.mean[k] - direct.mean[k]).abs() < 1e-12);
            }
            // The raw covariances agree; the shrinkage weights nearly (the
            // fourth moments are taken around the common centre).
            let raw = |g: &GaussianFit| {
                let c = g.covariance();
                DMatrix::from_fn(d, d, |i, j| {
                    if i == j {
                        c[(i, j)]
                    } else {
                        c[(i, j)] / (1.0 - g.shrinkage)
                    }
                })
            };
            assert!(
                (raw(f) - raw(&direct)).amax() < 1e-9,
                "{} {}",
                raw(f),
                raw(&direct)
            );
            assert!((f.shrinkage - direct.shrinkage).abs() < 0.01 && f.shrinkage < 0.1);
        }
        assert_eq!(
            (
                cf.fold_of(0),
                cf.fold_of(99),
                cf.fold_of(100),
                cf.fold_of(399)
            ),
            (0, 0, 1, 3)
        );
    }
}
