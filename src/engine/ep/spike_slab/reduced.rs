//! The reduced form of spike-and-slab EP (d ≥ n, e.g. Colon 46 × 2000):
//! the pair sites see θ only through the row space of X, so EP runs on r ≤ n
//! coordinates instead of d.
//!
//! The prior sites give q a diagonal positive precision u (§5: u_k > 0 always)
//! and a linear term v. Whitened by D = diag(u), θ̃ = D^{½}θ has prior
//! `exp(−½|θ̃|² + ṽᵀθ̃)`, ṽ = D^{-½}v, and rows `Z̃ = X D^{-½}`. With the thin SVD
//! `Z̃ = U S Wᵀ` (singular values below 1e-10 of the largest dropped, as in
//! `design.rs`) EP runs on w = Wᵀθ̃: rows `U S`, prior precision I_r, linear
//! term Wᵀṽ. The complement of W is untouched by the data: mean (I − WWᵀ)ṽ,
//! covariance I − WWᵀ. Hence, q_w = N(m_w, V_w):
//! - `m_θ = D^{-½}(W m_w + (I − WWᵀ)ṽ)`,
//!   `Var θ_k = u_k⁻¹ (1 − |W_k|² + W_k V_w W_kᵀ)` (O(d r²));
//! - `log|Q_θ| = Σ_k log u_k + log|Q_w|` (Q_θ = D^{½}(I + W G Wᵀ)D^{½});
//! - `r_θᵀQ_θ⁻¹r_θ = r_wᵀQ_w⁻¹r_w + |(I − WWᵀ)ṽ|²` (r̃ = D^{-½}r_θ = ṽ + W Bᵀh,
//!   (I + WGWᵀ)⁻¹ = (I − WWᵀ) + W (I + G)⁻¹ Wᵀ, Wᵀr̃ = r_w).
//!
//! u changes with every prior-site update, so the whitening and the SVD are
//! redone then (O(n² d)); the pair sites (K, h per pair) are coordinate-free
//! and kept, only their aggregates are recomputed for the new rows.

use nalgebra::{DMatrix, DVector};

use super::sweep::ThetaMoments;
use crate::engine::ep::pair_ep::PairEp;
use crate::engine::ep::posterior::{Posterior, PriorTerms};
use crate::engine::fit::LowRankCov;
use crate::engine::numerics::linalg::a_b;

/// The map between θ (EP's coordinates, d) and the reduced coordinates w (r).
#[derive(Debug, Clone)]
pub struct Reduction {
    /// Rows of each class in θ's coordinates (n± × d).
    xp: DMatrix<f64>,
    xn: DMatrix<f64>,
    /// The prior precisions u of the current whitening (empty: none yet).
    u: Vec<f64>,
    /// u_k^{-½}.
    s: Vec<f64>,
    /// d × r right singular vectors of X D^{-½}.
    w: DMatrix<f64>,
}

impl Reduction {
    pub fn new(xp: DMatrix<f64>, xn: DMatrix<f64>) -> Reduction {
        Reduction {
            xp,
            xn,
            u: Vec::new(),
            s: Vec::new(),
            w: DMatrix::zeros(0, 0),
        }
    }

    /// The rank r (0 before the first whitening).
    pub fn rank(&self) -> usize {
        self.w.ncols()
    }

    /// Whitens by the prior precisions `u` and returns the reduced rows
    /// `(U S)` of each class; None when u is the current whitening's.
    pub fn whiten(&mut self, u: &[f64]) -> Option<(DMatrix<f64>, DMatrix<f64>)> {
        if self.u == u {
            return None;
        }
        let (np, nn, d) = (self.xp.nrows(), self.xn.nrows(), self.xp.ncols());
        self.u = u.to_vec();
        self.s = u.iter().map(|u| 1.0 / u.sqrt()).collect();
        let mut x = DMatrix::zeros(np + nn, d);
        x.rows_mut(0, np).copy_from(&self.xp);
        x.rows_mut(np, nn).copy_from(&self.xn);
        for (k, mut col) in x.column_iter_mut().enumerate() {
            col *= self.s[k];
        }
        // SVD through the transpose (d × n, tall).
        let svd = x.transpose().svd(true, false);
        let s_max = svd.singular_values.max();
        let keep: Vec<usize> = (0..svd.singular_values.len())
            .filter(|&k| svd.singular_values[k] > 1e-10 * s_max)
            .collect();
        self.w = svd.u.expect("computed").select_columns(&keep);
        let z = a_b(&x, &self.w);
        Some((z.rows(0, np).into_owned(), z.rows(np, nn).into_owned()))
    }

    /// ṽ = D^{-½}v split into its part in W's span (the reduced prior's
    /// linear term Wᵀṽ) and the rest (I − WWᵀ)ṽ.
    fn split(&self, v: &[f64]) -> (Vec<f64>, DVector<f64>) {
        let vt = DVector::from_iterator(v.len(), v.iter().zip(&self.s).map(|(v, s)| v * s));
        let lin = self.w.tr_mul(&vt);
        let resid = vt - &self.w * &lin;
        (lin.iter().copied().collect(), resid)
    }

    /// The reduced prior terms for the prior sites' linear term v.
    pub fn prior(&self, v: &[f64]) -> PriorTerms {
        PriorTerms {
            prec: vec![1.0; self.rank()],
            lin: self.split(v).0,
        }
    }

    /// θ's marginals and evidence terms from q_w under prior sites (u, v)
    /// (u the current whitening's).
    pub fn moments(&self, v: &[f64], q: &Posterior) -> ThetaMoments {
        let (_, resid) = self.split(v);
        let wm = &self.w * &q.m;
        let b = a_b(&self.w, &q.v); // d × r
        let var = (0..self.w.nrows())
            .map(|k| {
                let (wk, bk) = (self.w.row(k), b.row(k));
                let quad: f64 = bk.iter().zip(wk.iter()).map(|(x, y)| x * y).sum();
                let w2: f64 = wk.iter().map(|x| x * x).sum();
                self.s[k] * self.s[k] * (1.0 - w2 + quad)
            })
            .collect();
        ThetaMoments {
            mean: (0..wm.len())
                .map(|k| self.s[k] * (wm[k] + resid[k]))
                .collect(),
            var,
            log_det_q: self.u.iter().map(|u| u.ln()).sum::<f64>() + q.log_det_q,
            r_v_r: q.r_v_r + resid.norm_squared(),
        }
    }

    /// θ's covariance in EP's coordinates from q_w, factored:
    /// `S(I + W(V_w − I)Wᵀ)S` = diag(s²) + (SW)(V_w − I)(SW)ᵀ, S = D^{-½}.
    pub fn cov_low_rank(&self, q: &Posterior) -> LowRankCov {
        let mut core = q.v.clone();
        for a in 0..core.nrows() {
            core[(a, a)] -= 1.0;
        }
        let mut factor = self.w.clone();
        for (k, mut row) in factor.row_iter_mut().enumerate() {
            row *= self.s[k];
        }
        LowRankCov {
            diag: self.s.iter().map(|s| s * s).collect(),
            factor,
            core,
        }
    }

    /// Rebuilds q_w with the prior sites' terms (re-whitening the pair sites'
    /// rows when u changed) and returns θ's moments; None when Q is not PD.
    pub fn rebuild(&mut self, ep: &mut PairEp, prior: &PriorTerms, g: f64) -> Option<ThetaMoments> {
        if !prior.prec.iter().all(|u| *u > 0.0 && u.is_finite()) {
            return None;
        }
        let reduced = |me: &Reduction| me.prior(&prior.lin);
        if let Some((zp, zn)) = self.whiten(&prior.prec) {
            ep.set_design(zp, zn, reduced(self));
        }
        if !ep.rebuild_with_prior(reduced(self), g) {
            return None;
        }
        Some(self.moments(&prior.lin, ep.posterior().expect("rebuilt")))
    }
}
