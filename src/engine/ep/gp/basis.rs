//! GP-EP's Gaussian q(s) rebuilt from the pair sites (ALGORITHMS.md §6).
//!
//! The sites' precision is the weighted graph Laplacian
//! `B = Σ K_ij (e_i − e_j)(e_i − e_j)ᵀ = diag(K·1 on P, Kᵀ·1 on N) − [0 K; Kᵀ 0]`,
//! assembled in O(M) from the n+ × n− site matrix, and `r = (H·1 on P, −Hᵀ·1 on N)`.
//! q's precision in the prior's coordinates (`gp::factor`):
//! - precision form (distinct rows u): `A = K_u⁻¹ + B_u`, `V_s = A⁻¹`;
//! - whitened form (`s = Zw`): `A = I + ZᵀBZ`, `V_s = Z A⁻¹ Zᵀ`, i.e. §6's
//!   `K^{½}(I + K^{½}BK^{½})⁻¹K^{½}` in the factor's basis.
//!
//! Either way A is checked positive definite by its Cholesky factorisation (B
//! is indefinite when some site precisions are negative), and the site pass
//! reads `μ_ij = m_i − m_j`, `σ²_ij = V_ii + V_jj − 2V_ij` from q's blocks.

use nalgebra::{DMatrix, DVector};
use rayon::prelude::*;

use crate::engine::ep::kernel::Aggregates;
use crate::engine::ep::posterior::sites_part;
use crate::engine::gp::dense;
use crate::engine::gp::factor::{Distinct, Pivoted, Precision};

/// The prior's coordinates.
pub enum Form {
    /// `s_u ~ N(0, K_u)` on the distinct rows, by its precision.
    Precision(Precision),
    /// `s_u = Z w`, `w ~ N(0, I)` (Z: distinct rows × r).
    Whitened {
        factor: Pivoted,
        /// Z's rows of the positives and of the negatives.
        zp: DMatrix<f64>,
        zn: DMatrix<f64>,
    },
}

/// The coordinates of the score vector and the class structure of the pairs.
/// Distinct rows are ordered with the rows of negatives only first (`n_neg_only`
/// of them), so that the blocks of q the sites read are those
/// `dense::partial_inverse` computes.
pub struct Basis {
    pub form: Form,
    pub n_neg_only: usize,
    /// The precision form's n × n workspace (reused: no page faults per sweep).
    pub work: DMatrix<f64>,
    /// Distinct training rows.
    pub distinct: Distinct,
    /// Distinct-row index of each positive and of each negative.
    pub up: Vec<usize>,
    pub un: Vec<usize>,
}

/// q in the basis's coordinates and its marginals at the distinct rows.
pub struct Q {
    /// A⁻¹ (dimension: distinct rows or r); the precision form computes it
    /// only when asked (`Basis::rebuild(.., full = true)`): the sweeps need
    /// just its blocks.
    pub v: Option<DMatrix<f64>>,
    pub m: DVector<f64>,
    pub log_det_a: f64,
    /// bᵀA⁻¹b (b: the sites' linear term in these coordinates).
    pub b_m: f64,
    /// Mean and variance of every distinct row's score.
    pub mean: Vec<f64>,
    pub var: Vec<f64>,
    /// `V_s[i, j]` for positive i, negative j (n+ × n−, row-major).
    pub cross: Vec<f64>,
}

impl Q {
    /// Marginal `(μ, σ², u_i + u_j)` of the pair (positive i, negative j).
    #[inline]
    pub fn pair(&self, b: &Basis, i: usize, j: usize) -> (f64, f64, f64) {
        let (a, c) = (b.up[i], b.un[j]);
        let u = self.var[a] + self.var[c];
        (
            self.mean[a] - self.mean[c],
            u - 2.0 * self.cross[i * b.un.len() + j],
            u,
        )
    }
}

impl Basis {
    pub fn n_pos(&self) -> usize {
        self.up.len()
    }
    pub fn n_neg(&self) -> usize {
        self.un.len()
    }
    /// ½ log |prior precision| (−½ log |K_u|, or 0 when whitened).
    pub fn half_log_det_prior_prec(&self) -> f64 {
        match &self.form {
            Form::Precision(p) => -0.5 * p.log_det_k,
            Form::Whitened { .. } => 0.0,
        }
    }
    pub fn form_name(&self) -> &'static str {
        match &self.form {
            Form::Precision(_) => "precision",
            Form::Whitened { .. } => "whitened",
        }
    }

    /// q from the sites `k`, `h` (n+ × n−, row-major); None when A is not
    /// positive definite (or not finite).
    pub fn rebuild(&mut self, k: &[f64], h: &[f64], full: bool) -> Option<Q> {
        let (np, nn) = (self.n_pos(), self.n_neg());
        let row_sums =
            |s: &[f64]| -> Vec<f64> { s.par_chunks(nn).map(|r| r.iter().sum()).collect() };
        let col_sums = |s: &[f64]| -> Vec<f64> {
            let mut c = vec![0.0; nn];
            for r in s.chunks(nn) {
                for (a, v) in c.iter_mut().zip(r) {
                    *a += v;
                }
            }
            c
        };
        let (kp, kn, hp, hn) = (row_sums(k), col_sums(k), row_sums(h), col_sums(h));
        match &self.form {
            Form::Precision(p) => {
                let nu = p.prec.nrows();
                let mut a = std::mem::take(&mut self.work);
                if a.shape() != (nu, nu) {
                    a = p.prec.clone();
                } else {
                    a.copy_from(&p.prec);
                }
                let mut b = DVector::zeros(nu);
                for i in 0..np {
                    a[(self.up[i], self.up[i])] += kp[i];
                    b[self.up[i]] += hp[i];
                }
                for j in 0..nn {
                    a[(self.un[j], self.un[j])] += kn[j];
                    b[self.un[j]] -= hn[j];
                }
                // −[0 K; Kᵀ 0] in the lower triangle (positives' rows come
                // after the negatives-only ones; shared rows may be either side).
                for i in 0..np {
                    let ui = self.up[i];
                    for (j, &kij) in k[i * nn..(i + 1) * nn].iter().enumerate() {
                        let uj = self.un[j];
                        a[(ui.max(uj), ui.min(uj))] -= kij;
                    }
                }
                let q = self.solve_precision(&mut a, &b, full);
                self.work = a;
                q
            }
            Form::Whitened { zp, zn, .. } => {
                let r = zp.ncols();
                // K Z_N (n+ × r) by GEMM on the row-major site matrix.
                let km = DMatrix::from_row_slice(np, nn, k);
                let agg = Aggregates {
                    k_row: kp,
                    k_col: kn,
                    h_row: hp,
                    h_col: hn,
                    g: crate::engine::numerics::linalg::a_b(&km, zn),
                };
                let (mut a, b) = sites_part(zp, zn, &agg);
                for d in 0..r {
                    a[(d, d)] += 1.0;
                }
                if !a.iter().all(|v| v.is_finite()) || !b.iter().all(|v| v.is_finite()) {
                    return None;
                }
                let l = dense::cholesky(a).ok()?;
                let log_det_a = dense::log_det(&l);
                let v = dense::inverse_from_cholesky(&l);
                let m = &v * &b;
                let b_m = b.dot(&m);
                if !log_det_a.is_finite() || !v.iter().all(|x| x.is_finite()) {
                    return None;
                }
                let (mean, var, cross) = self.whitened_marginals(&v, &m);
                Some(Q {
                    v: Some(v),
                    m,
                    log_det_a,
                    b_m,
                    mean,
                    var,
                    cross,
                })
            }
        }
    }

    /// `B Y` for the sites `k` (n+ × n−, row-major) and Y on the distinct rows
    /// (distinct rows × p): two GEMMs with the site matrix, O(M p). A pair of
    /// identical rows adds `k (y − y) = 0`.
    pub fn laplacian_times(&self, k: &[f64], y: &DMatrix<f64>) -> DMatrix<f64> {
        let km = DMatrix::from_row_slice(self.n_pos(), self.n_neg(), k);
        let yp = y.select_rows(&self.up);
        let yn = y.select_rows(&self.un);
        let to_pos = crate::engine::numerics::linalg::a_b(&km, &yn); // n+ × p
        let to_neg = crate::engine::numerics::linalg::at_b(&km, &yp); // n− × p
        let (kp, kn): (Vec<f64>, Vec<f64>) = (
            km.row_iter().map(|r| r.sum()).collect(),
            km.column_iter().map(|c| c.sum()).collect(),
        );
        let mut out = DMatrix::zeros(y.nrows(), y.ncols());
        for (i, (&u, &k)) in self.up.iter().zip(&kp).enumerate() {
            let mut row = out.row_mut(u);
            row += yp.row(i) * k - to_pos.row(i);
        }
        for (j, (&u, &k)) in self.un.iter().zip(&kn).enumerate() {
            let mut row = out.row_mut(u);
            row += yn.row(j) * k - to_neg.row(j);
        }
        out
    }

    /// The precision form's q from `A` (lower triangle; overwritten).
    fn solve_precision(&self, a: &mut DMatrix<f64>, b: &DVector<f64>, full: bool) -> Option<Q> {
        if !b.iter().all(|v| v.is_finite()) {
            return None;
        }
        let nu = a.nrows();
        for j in 0..nu {
            if !a.column(j).rows(j, nu - j).iter().all(|v| v.is_finite()) {
                return None;
            }
        }
        dense::cholesky_in_place(a).ok()?;
        let log_det_a = 2.0 * a.diagonal().iter().map(|d| d.ln()).sum::<f64>();
        let mut m = DMatrix::from_column_slice(nu, 1, b.as_slice());
        dense::solve_lower(a, &mut m);
        dense::solve_lower_t(a, &mut m);
        let m = DVector::from_column_slice(m.as_slice());
        let b_m = b.dot(&m);
        if !log_det_a.is_finite() {
            return None;
        }
        let (np, nn) = (self.n_pos(), self.n_neg());
        let mut cross = vec![0.0; np * nn];
        if full {
            let v = dense::inverse_from_cholesky(a);
            let var = v.diagonal().iter().copied().collect();
            cross.par_chunks_mut(nn).enumerate().for_each(|(i, row)| {
                let col = v.column(self.up[i]);
                for (c, &u) in row.iter_mut().zip(&self.un) {
                    *c = col[u];
                }
            });
            return Some(Q {
                mean: m.iter().copied().collect(),
                v: Some(v),
                m,
                log_det_a,
                b_m,
                var,
                cross,
            });
        }
        let n1 = self.n_neg_only;
        let mut var = dense::partial_inverse(a, n1);
        var.extend((n1..nu).map(|u| a[(u, u)]));
        let a = &*a;
        cross.par_chunks_mut(nn).enumerate().for_each(|(i, row)| {
            let ui = self.up[i];
            for (c, &uj) in row.iter_mut().zip(&self.un) {
                *c = a[(ui.max(uj), ui.min(uj))];
            }
        });
        if !var.iter().all(|v| v.is_finite() && *v > 0.0) {
            return None;
        }
        Some(Q {
            mean: m.iter().copied().collect(),
            v: None,
            m,
            log_det_a,
            b_m,
            var,
            cross,
        })
    }

    /// Means and variances of the distinct rows' scores and `V_s[P, N]`
    /// (whitened form).
    fn whitened_marginals(
        &self,
        v: &DMatrix<f64>,
        m: &DVector<f64>,
    ) -> (Vec<f64>, Vec<f64>, Vec<f64>) {
        let (np, nn) = (self.n_pos(), self.n_neg());
        let mut cross = vec![0.0; np * nn];
        let Form::Whitened { factor, zp, zn } = &self.form else {
            unreachable!("whitened form")
        };
        let z = &factor.z;
        let mean = (z * m).iter().copied().collect();
        let zv = z * v;
        let var = (0..z.nrows()).map(|a| z.row(a).dot(&zv.row(a))).collect();
        // (Z_P V) Z_Nᵀ into the row-major n+ × n− buffer: its transpose
        // is Z_N (Z_P V)ᵀ in column-major order.
        let zvp = zp * v;
        let ct = crate::engine::numerics::linalg::a_bt(zn, &zvp);
        cross.copy_from_slice(ct.as_slice());
        (mean, var, cross)
    }
}
