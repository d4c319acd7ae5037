//! The Gaussian approximation q = N(m, V) rebuilt from the pair sites with
//! matrix products (ALGORITHMS.md §4):
//! `Q = P + X_Pᵀ diag(K1) X_P + X_Nᵀ diag(Kᵀ1) X_N − X_Pᵀ K X_N − (X_Pᵀ K X_N)ᵀ`,
//! `r = b + X_Pᵀ (H1) − X_Nᵀ (Hᵀ1)`, where P = diag(prior precisions) and b a
//! prior linear term (0 for a centred Gaussian prior; spike-and-slab's prior
//! sites put their (u, v) here).

use nalgebra::{DMatrix, DVector};

use super::kernel::{Aggregates, Marginals};
use crate::engine::numerics::linalg::{at_b, at_diag_a_into, gemm_into, rows_b_into};

/// Rows of `Z_N V` computed at a time for u_j (`marginals`).
const ZV_BLOCK: usize = 4096;

/// The Gaussian prior part of q: precisions `prec` (diagonal) and linear term `lin`.
#[derive(Debug, Clone, PartialEq)]
pub struct PriorTerms {
    pub prec: Vec<f64>,
    pub lin: Vec<f64>,
}

impl PriorTerms {
    /// N(0, diag(vars)).
    pub fn centred(vars: &[f64]) -> PriorTerms {
        PriorTerms {
            prec: vars.iter().map(|v| 1.0 / v).collect(),
            lin: vec![0.0; vars.len()],
        }
    }
}

/// q's moments and what the evidence needs.
#[derive(Debug, Clone)]
pub struct Posterior {
    pub v: DMatrix<f64>,
    pub m: DVector<f64>,
    /// log |Q|.
    pub log_det_q: f64,
    /// rᵀ Q⁻¹ r.
    pub r_v_r: f64,
}

impl Posterior {
    pub fn sd(&self) -> Vec<f64> {
        (0..self.m.len()).map(|k| self.v[(k, k)].sqrt()).collect()
    }
}

/// Q and r from the aggregates; None when Q is not positive definite.
pub fn rebuild(
    zp: &DMatrix<f64>,
    zn: &DMatrix<f64>,
    agg: &Aggregates,
    prior: &PriorTerms,
) -> Option<Posterior> {
    solve(&sites_part(zp, zn, agg), prior)
}

/// The pair sites' part of Q and r: `(Σ K a aᵀ, Σ h a)`.
pub fn sites_part(
    zp: &DMatrix<f64>,
    zn: &DMatrix<f64>,
    agg: &Aggregates,
) -> (DMatrix<f64>, DVector<f64>) {
    let p = zp.ncols();
    let mut q = DMatrix::zeros(p, p);
    at_diag_a_into(zp, &agg.k_row, 0.0, &mut q);
    at_diag_a_into(zn, &agg.k_col, 1.0, &mut q);
    let cross = at_b(zp, &agg.g); // X_Pᵀ K X_N
    for a in 0..p {
        for b in 0..p {
            q[(a, b)] -= cross[(a, b)] + cross[(b, a)];
        }
    }
    // Exact symmetry (the two diagonal-weighted products are symmetric only up to rounding).
    for a in 0..p {
        for b in 0..a {
            let s = 0.5 * (q[(a, b)] + q[(b, a)]);
            q[(a, b)] = s;
            q[(b, a)] = s;
        }
    }
    let mut r = zp.tr_mul(&DVector::from_column_slice(&agg.h_row));
    r -= zn.tr_mul(&DVector::from_column_slice(&agg.h_col));
    (q, r)
}

/// q from the sites' part of Q and r plus the prior terms; None when Q is not PD.
pub fn solve(sites: &(DMatrix<f64>, DVector<f64>), prior: &PriorTerms) -> Option<Posterior> {
    let mut q = sites.0.clone();
    for (a, p) in prior.prec.iter().enumerate() {
        q[(a, a)] += p;
    }
    let r = &sites.1 + DVector::from_column_slice(&prior.lin);
    if !q.iter().all(|v| v.is_finite()) || !r.iter().all(|v| v.is_finite()) {
        return None;
    }
    let chol = q.cholesky()?;
    let log_det_q = 2.0
        * chol
            .l_dirty()
            .diagonal()
            .iter()
            .map(|d| d.ln())
            .sum::<f64>();
    let m = chol.solve(&r);
    let v = chol.inverse();
    let r_v_r = r.dot(&m);
    if !log_det_q.is_finite() || !v.iter().all(|x| x.is_finite()) {
        return None;
    }
    Some(Posterior {
        v,
        m,
        log_det_q,
        r_v_r,
    })
}

/// Per-row marginal quantities of q for the next pass.
pub fn marginals(zp: &DMatrix<f64>, zn: &DMatrix<f64>, q: &Posterior, out: &mut Marginals) {
    let row_quad = |z: &DMatrix<f64>, zv: &DMatrix<f64>, u: &mut Vec<f64>| {
        u.clear();
        u.resize(z.nrows(), 0.0);
        for k in 0..z.ncols() {
            for ((ui, a), b) in u
                .iter_mut()
                .zip(z.column(k).iter())
                .zip(zv.column(k).iter())
            {
                *ui += a * b;
            }
        }
    };
    gemm_into(1.0, zp, false, &q.v, false, 0.0, &mut out.zv_p);
    row_quad(zp, &out.zv_p, &mut out.up);
    // u_j = z_j V z_jᵀ by blocks of rows (the same sums as the whole product's).
    let (nn, p) = zn.shape();
    out.un.clear();
    out.un.resize(nn, 0.0);
    let mut r0 = 0;
    while r0 < nn {
        let m = ZV_BLOCK.min(nn - r0);
        out.zv_n.resize(m * p, 0.0);
        rows_b_into(zn, r0, m, &q.v, &mut out.zv_n);
        let u = &mut out.un[r0..r0 + m];
        for k in 0..p {
            let zk = &zn.as_slice()[k * nn + r0..k * nn + r0 + m];
            for ((ui, a), b) in u.iter_mut().zip(zk).zip(&out.zv_n[k * m..(k + 1) * m]) {
                *ui += a * b;
            }
        }
        r0 += m;
    }
    out.mp = (zp * &q.m).iter().copied().collect();
    out.mn = (zn * &q.m).iter().copied().collect();
}

/// Δ = max_k max(|m_k − m'_k|/sd'_k, |sd_k/sd'_k − 1|), primes = previous.
pub fn delta(new: &Posterior, old: &Posterior) -> f64 {
    let mut d: f64 = 0.0;
    for k in 0..new.m.len() {
        let (sd, sd_old) = (new.v[(k, k)].sqrt(), old.v[(k, k)].sqrt());
        d = d
            .max((new.m[k] - old.m[k]).abs() / sd_old)
            .max((sd / sd_old - 1.0).abs());
    }
    d
}
