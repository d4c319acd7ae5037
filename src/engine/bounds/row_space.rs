//! A Gaussian ρ = N(m, V) whose covariance is factored, V = diag(D) + F C Fᵀ
//! (`LowRankCov`: EP's reduced form when d ≥ n, where the d × d matrix would be
//! large), seen through the row space of the data — all the AUC risk sees.
//!
//! Whiten by D: X̃ = X D^{½}, m̃ = D^{-½} m, Ṽ = I + F̃ C F̃ᵀ with F̃ = D^{-½} F.
//! With the thin SVD X̃ = U S Wᵀ (r ≤ n columns, singular values below 1e-10 of
//! the largest dropped, as EP's reduced form does) the scores are
//! `X θ = (U S) w` with `w = Wᵀ θ̃ ~ N(Wᵀ m̃, I + (WᵀF̃) C (WᵀF̃)ᵀ)`: an r-dimensional
//! Gaussian on the n × r rows `U S`. E_ρ R_n is exact there whatever D, F, C.
//!
//! When moreover D is the prior's variances (Gaussian or ARD prior) and m̃ and
//! F̃ lie in span(W), ρ and the Gibbs posterior share their conditional given w
//! (the prior's: the risk does not see the rest), so KL(ρ‖π) and the
//! importance weights of ρ against the Gibbs posterior are those of the
//! r-dimensional problem with prior N(0, I_r): `exact_for_prior` checks it.

use nalgebra::DMatrix;

use crate::engine::fit::LowRankCov;
use crate::engine::numerics::linalg::{a_b, a_bt, at_b};
use crate::engine::prior::Prior;

/// Relative size of what must vanish for the reduction to be exact (X̃'s and
/// m̃'s parts outside span(W), D against the prior variances).
const TOL: f64 = 1e-8;

/// ρ in the coordinates `w = Wᵀ D^{-½} θ`.
#[derive(Debug, Clone)]
pub struct RowSpace {
    /// n × r rows `U S`: the scores are `rows · w`.
    pub rows: DMatrix<f64>,
    /// ρ's mean and covariance of w.
    pub mean: Vec<f64>,
    pub cov: DMatrix<f64>,
    /// d × r orthonormal basis of the whitened data's row space.
    pub basis: DMatrix<f64>,
    /// √D.
    pub scale: Vec<f64>,
    /// ‖m̃ − W Wᵀ m̃‖ / ‖m̃‖ and the largest column residual of F̃ likewise.
    mean_outside: f64,
    factor_outside: f64,
}

impl RowSpace {
    pub fn new(x: &DMatrix<f64>, mean: &[f64], v: &LowRankCov) -> Result<RowSpace, String> {
        let d = mean.len();
        if x.ncols() != d || v.diag.len() != d || v.factor.nrows() != d {
            return Err("the factored covariance does not match the data's dimension".into());
        }
        if !v.diag.iter().all(|x| *x > 0.0 && x.is_finite()) {
            return Err("the factored covariance's diagonal is not positive".into());
        }
        let scale: Vec<f64> = v.diag.iter().map(|x| x.sqrt()).collect();
        let mut xw = x.clone();
        for (k, mut col) in xw.column_iter_mut().enumerate() {
            col *= scale[k];
        }
        // SVD through the transpose (d × n, tall when d ≥ n).
        let svd = xw.transpose().svd(true, false);
        let s_max = svd.singular_values.max();
        let keep: Vec<usize> = (0..svd.singular_values.len())
            .filter(|&k| svd.singular_values[k] > 1e-10 * s_max)
            .collect();
        if keep.is_empty() {
            return Err("the data have no variation".into());
        }
        let basis = svd.u.ok_or("SVD failed")?.select_columns(&keep);
        let rows = a_b(&xw, &basis);
        let mut ft = v.factor.clone();
        for (k, mut row) in ft.row_iter_mut().enumerate() {
            row /= scale[k];
        }
        let mt: Vec<f64> = mean.iter().zip(&scale).map(|(m, s)| m / s).collect();
        let mt = DMatrix::from_column_slice(d, 1, &mt);
        let wm = at_b(&basis, &mt);
        let wf = at_b(&basis, &ft); // r × k
        let mut cov = a_bt(&a_b(&wf, &v.core), &wf);
        for a in 0..cov.nrows() {
            cov[(a, a)] += 1.0;
        }
        let outside = |a: &DMatrix<f64>, wa: &DMatrix<f64>| -> f64 {
            let resid = a - a_b(&basis, wa);
            (0..a.ncols())
                .map(|j| resid.column(j).norm() / a.column(j).norm().max(f64::MIN_POSITIVE))
                .fold(0.0, f64::max)
        };
        Ok(RowSpace {
            mean_outside: if mt.norm() > 0.0 {
                outside(&mt, &wm)
            } else {
                0.0
            },
            factor_outside: outside(&ft, &wf),
            rows,
            mean: wm.as_slice().to_vec(),
            cov,
            basis,
            scale,
        })
    }

    pub fn rank(&self) -> usize {
        self.basis.ncols()
    }

    /// Whether ρ differs from `prior` only inside span(W) (see the module doc);
    /// the reason when not.
    pub fn exact_for_prior(&self, prior: &Prior) -> Result<(), String> {
        let d = self.scale.len();
        let vars: Vec<f64> = match prior {
            Prior::Gaussian { var } => vec![*var; d],
            Prior::Ard { vars } => vars.clone(),
            Prior::SpikeSlab { .. } | Prior::Gp(_) => {
                return Err(
                    "a factored covariance is reduced to the data's row space only under a Gaussian prior"
                        .into(),
                );
            }
        };
        let off = vars
            .iter()
            .zip(&self.scale)
            .map(|(v, s)| (s * s / v - 1.0).abs())
            .fold(0.0, f64::max);
        if off > TOL || self.mean_outside > TOL || self.factor_outside > TOL {
            return Err(format!(
                "the factored covariance is not the prior's outside the data's row space \
                 (diagonal off by {off:.1e}, mean {:.1e}, factor {:.1e})",
                self.mean_outside, self.factor_outside
            ));
        }
        Ok(())
    }

    /// θ's means and sds from w's mean and covariance (prior's conditional
    /// outside span(W)): `m_θ = D^{½} W m_w`, `Var θ_k = D_k (1 + (W (V_w − I) Wᵀ)_kk)`.
    pub fn theta_moments(&self, mean_w: &[f64], cov_w: &DMatrix<f64>) -> (Vec<f64>, Vec<f64>) {
        let r = self.rank();
        let mw = DMatrix::from_column_slice(r, 1, mean_w);
        let m = a_b(&self.basis, &mw);
        let mut vm = cov_w.clone();
        for a in 0..r {
            vm[(a, a)] -= 1.0;
        }
        let b = a_b(&self.basis, &vm);
        let mean = (0..self.scale.len())
            .map(|k| self.scale[k] * m[(k, 0)])
            .collect();
        let sd = (0..self.scale.len())
            .map(|k| {
                let quad = b.row(k).dot(&self.basis.row(k));
                self.scale[k] * (1.0 + quad).max(0.0).sqrt()
            })
            .collect();
        (mean, sd)
    }
}

/// log|V| and the marginal variances of V = diag(D) + F C Fᵀ (the matrix
/// determinant lemma: log|V| = Σ log D_k + log|I + C Fᵀ D⁻¹ F|).
pub fn log_det_and_marginals(v: &LowRankCov) -> Result<(f64, Vec<f64>), String> {
    let k = v.core.nrows();
    let mut fd = v.factor.clone();
    for (i, mut row) in fd.row_iter_mut().enumerate() {
        row /= v.diag[i];
    }
    let mut inner = a_b(&v.core, &at_b(&v.factor, &fd));
    for a in 0..k {
        inner[(a, a)] += 1.0;
    }
    let det = inner.determinant();
    if !(det > 0.0 && det.is_finite() && v.diag.iter().all(|x| *x > 0.0)) {
        return Err("the factored covariance is not positive definite".into());
    }
    let log_det = v.diag.iter().map(|x| x.ln()).sum::<f64>() + det.ln();
    let fc = a_b(&v.factor, &v.core);
    let marginal = (0..v.diag.len())
        .map(|i| v.diag[i] + fc.row(i).dot(&v.factor.row(i)))
        .collect();
    Ok((log_det, marginal))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A reduced-form-like ρ: d = 12 > n = 6, V = ϑ(I + W(V_w − I)Wᵀ) with W the
    /// data's row space; the dense V and its pieces agree.
    fn case(var: f64) -> (DMatrix<f64>, Vec<f64>, LowRankCov, DMatrix<f64>) {
        let (n, d) = (6, 12);
        let x = DMatrix::from_fn(n, d, |i, j| ((i * 7 + j * 3) % 11) as f64 / 5.0 - 1.0);
        let svd = x.transpose().svd(true, false);
        let w = svd.u.unwrap().columns(0, n).into_owned();
        let r = w.ncols();
        let core = DMatrix::from_fn(
            r,
            r,
            |a, b| {
                if a == b { -0.5 + 0.05 * a as f64 } else { 0.02 }
            },
        );
        let mut factor = w.clone();
        factor *= var.sqrt();
        let lr = LowRankCov {
            diag: vec![var; d],
            factor,
            core,
        };
        let mw = DMatrix::from_fn(r, 1, |a, _| 0.3 - 0.1 * a as f64);
        let mean = (&w * mw * var.sqrt()).as_slice().to_vec();
        let dense = DMatrix::from_diagonal(&nalgebra::DVector::from_vec(lr.diag.clone()))
            + &lr.factor * &lr.core * lr.factor.transpose();
        (x, mean, lr, dense)
    }

    #[test]
    fn scores_and_moments_match_the_dense_gaussian() {
        let (x, mean, lr, dense) = case(2.0);
        let rs = RowSpace::new(&x, &mean, &lr).unwrap();
        // Scores: mean X m and covariance X V Xᵀ.
        let m = DMatrix::from_column_slice(mean.len(), 1, &mean);
        let want_mean = &x * &m;
        let got_mean = &rs.rows * DMatrix::from_column_slice(rs.rank(), 1, &rs.mean);
        assert!((want_mean - got_mean).abs().max() < 1e-12);
        let want_cov = &x * &dense * x.transpose();
        let got_cov = &rs.rows * &rs.cov * rs.rows.transpose();
        assert!((want_cov - got_cov).abs().max() < 1e-11);
        assert!(rs.exact_for_prior(&Prior::Gaussian { var: 2.0 }).is_ok());
        assert!(rs.exact_for_prior(&Prior::Gaussian { var: 1.0 }).is_err());
        // Back to θ: ρ's own moments.
        let (m_back, sd_back) = rs.theta_moments(&rs.mean, &rs.cov);
        for k in 0..mean.len() {
            assert!((m_back[k] - mean[k]).abs() < 1e-12);
            assert!((sd_back[k] - dense[(k, k)].sqrt()).abs() < 1e-12);
        }
        let (log_det, marg) = log_det_and_marginals(&lr).unwrap();
        let want = 2.0
            * nalgebra::Cholesky::new(dense.clone())
                .unwrap()
                .l()
                .diagonal()
                .iter()
                .map(|v| v.ln())
                .sum::<f64>();
        assert!((log_det - want).abs() < 1e-10, "{log_det} vs {want}");
        for k in 0..marg.len() {
            assert!((marg[k] - dense[(k, k)]).abs() < 1e-12);
        }
    }
}
