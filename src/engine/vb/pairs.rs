//! The expected AUC risk over all M positive/negative pairs and its gradients
//! (ALGORITHMS.md §7, aggregated as §4 does): the pass itself is
//! `numerics::pair_risk::PairPass` (C = (X_P Σ) X_Nᵀ and K X_N by GEMM, the
//! per-pair Φ and φ vectorised); here its sums become the gradients in m and
//! Σ of VB's family. With `g_μ` the pairs' ∂ℓ/∂μ and K their ∂ℓ/∂s²:
//! `∂E/∂m = (X_Pᵀ g_μ1 − X_Nᵀ g_μᵀ1)/M`,
//! `∂E/∂Σ = (X_Pᵀ diag(K1) X_P + X_Nᵀ diag(Kᵀ1) X_N − X_Pᵀ(K X_N) − (·)ᵀ)/M`.

use nalgebra::DMatrix;

use super::family::{Family, Params, SigmaGrad};
use super::loss::RiskEval;
use crate::engine::numerics::pair_risk::{PairPass, PassSums};

/// The pair pass of VB's objective (`PairPass`) in VB's parameters.
pub struct PairRisk {
    pub pass: PairPass,
}

impl PairRisk {
    pub fn new(x: &DMatrix<f64>, y: &[bool]) -> PairRisk {
        PairRisk {
            pass: PairPass::new(x, y),
        }
    }

    pub fn pairs(&self) -> usize {
        self.pass.pairs()
    }

    /// E_ρ[R_n] (ties ½) and its gradients in m and Σ.
    pub fn eval(&mut self, p: &Params) -> RiskEval {
        self.pass(p, true)
    }

    /// E_ρ[R_n] alone (one GEMM per block instead of two).
    pub fn value(&mut self, p: &Params) -> f64 {
        self.pass(p, false).value
    }

    fn pass(&mut self, p: &Params, grad: bool) -> RiskEval {
        let wp = p.apply_rows(&self.pass.xp);
        let wn = p.apply_rows(&self.pass.xn);
        let sums = self.pass.run(p.mean(), &wp, &wn, grad);
        let (np, nn, d) = (self.pass.xp.nrows(), self.pass.xn.nrows(), p.d);
        let PassSums {
            rows,
            gmu_col,
            gv_col,
            kxn,
        } = sums;
        let (xp, xn) = (&self.pass.xp, &self.pass.xn);
        let inv = 1.0 / (np * nn).max(1) as f64;
        let value = rows.iter().map(|r| r.loss).sum::<f64>() * inv;
        if !grad {
            return RiskEval {
                value,
                grad_m: Vec::new(),
                grad_sigma: SigmaGrad::zeros(p.family, 0),
            };
        }
        let gmu_row: Vec<f64> = rows.iter().map(|r| r.gmu).collect();
        let gv_row: Vec<f64> = rows.iter().map(|r| r.gv).collect();
        let tv =
            |x: &DMatrix<f64>, v: &[f64]| x.transpose() * nalgebra::DVector::from_column_slice(v);
        let grad_m = (tv(xp, &gmu_row) - tv(xn, &gmu_col)) * inv;
        // Σ_i w_i x_ik x_il (or its diagonal), and the cross term X_Pᵀ (K X_N).
        let grad_sigma = match p.family {
            Family::Iso | Family::Diag => {
                let diag: Vec<f64> = (0..d)
                    .map(|k| {
                        let a: f64 = (0..np).map(|i| gv_row[i] * xp[(i, k)].powi(2)).sum();
                        let b: f64 = (0..nn).map(|j| gv_col[j] * xn[(j, k)].powi(2)).sum();
                        let x: f64 = (0..np).map(|i| xp[(i, k)] * kxn[(i, k)]).sum();
                        (a + b - 2.0 * x) * inv
                    })
                    .collect();
                if p.family == Family::Iso {
                    SigmaGrad::Trace(diag.iter().sum())
                } else {
                    SigmaGrad::Diag(diag)
                }
            }
            Family::Full => {
                let weighted = |x: &DMatrix<f64>, w: &[f64]| {
                    let mut xw = x.clone();
                    for (i, mut r) in xw.row_iter_mut().enumerate() {
                        r *= w[i];
                    }
                    crate::engine::numerics::linalg::at_b(x, &xw)
                };
                let cross = crate::engine::numerics::linalg::at_b(xp, &kxn);
                let g = weighted(xp, &gv_row) + weighted(xn, &gv_col) - &cross - cross.transpose();
                SigmaGrad::Full(g * inv)
            }
        };
        RiskEval {
            value,
            grad_m: grad_m.iter().copied().collect(),
            grad_sigma,
        }
    }
}
