//! The expected losses of ALGORITHMS.md §7 for one item whose margin is
//! `t = aᵀθ`, θ ~ N(m, Σ): `t ~ N(μ, s²)` with `μ = aᵀm`, `s² = aᵀΣa`.
//! For the AUC risk the items are the pairs (a = x_i − x_j, i positive, j
//! negative); for classification the rows (a = y_i x_i, y ∈ {±1}). The
//! expected risk is the mean over items; its gradients are aggregated by matrix
//! products (`eval_items`, and `pairs` for all M pairs).

use nalgebra::DMatrix;
use serde::{Deserialize, Serialize};

use super::family::{Family, Params, SigmaGrad};
use crate::engine::numerics::normal::{Scalar, cdf_pdf};
use crate::engine::numerics::simd::Simd;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum Loss {
    /// The AUC risk: the share of discordant positive/negative pairs.
    #[default]
    Auc,
    /// Classification error 1{y⟨θ, x⟩ < 0}.
    ZeroOne,
    /// Hinge max(0, 1 − y⟨θ, x⟩).
    Hinge,
    /// Exponential exp(−y⟨θ, x⟩).
    Exp,
}

impl Loss {
    pub fn name(self) -> &'static str {
        match self {
            Loss::Auc => "auc",
            Loss::ZeroOne => "zero-one",
            Loss::Hinge => "hinge",
            Loss::Exp => "exp",
        }
    }
    pub fn is_ranking(self) -> bool {
        self == Loss::Auc
    }
    /// The loss of an item with a = 0 (identical rows: a tie counts ½).
    fn degenerate(self) -> f64 {
        match self {
            Loss::Auc | Loss::ZeroOne => 0.5,
            Loss::Hinge | Loss::Exp => 1.0,
        }
    }
}

pub use crate::engine::numerics::pair_risk::DEGENERATE;

/// `(ℓ, ∂ℓ/∂μ, ∂ℓ/∂s²)` of one item.
#[inline]
pub fn item(loss: Loss, mu: f64, s2: f64, scale: f64) -> (f64, f64, f64) {
    // (NaN counts as degenerate.)
    if s2.is_nan() || s2 <= DEGENERATE * scale || s2 <= 0.0 {
        return (loss.degenerate(), 0.0, 0.0);
    }
    let s = s2.sqrt();
    match loss {
        Loss::Auc | Loss::ZeroOne => {
            // ℓ = Φ(−μ/s); ∂μ = −φ/s; ∂s = φμ/s² → ∂s² = φμ/(2s³).
            let (cdf, pdf) = cdf_pdf(Scalar::splat(-mu / s));
            let (cdf, pdf) = (cdf.0, pdf.0);
            (cdf, -pdf / s, 0.5 * pdf * mu / (s2 * s))
        }
        Loss::Hinge => {
            // u = (1 − μ)/s: ℓ = (1 − μ)Φ(u) + sφ(u); ∂μ = −Φ(u); ∂s = φ(u).
            let u = (1.0 - mu) / s;
            let (cdf, pdf) = cdf_pdf(Scalar::splat(u));
            let (cdf, pdf) = (cdf.0, pdf.0);
            ((1.0 - mu) * cdf + s * pdf, -cdf, 0.5 * pdf / s)
        }
        Loss::Exp => {
            let l = (-mu + 0.5 * s2).exp();
            (l, -l, 0.5 * l)
        }
    }
}

/// The mean expected loss over a set of items and its gradients in m and Σ.
#[derive(Debug, Clone)]
pub struct RiskEval {
    pub value: f64,
    pub grad_m: Vec<f64>,
    pub grad_sigma: SigmaGrad,
}

/// `(μ_i, s²_i, scale_i)` of the rows of `a` (items × d): the margin's mean and
/// variance under ρ and the sum of |terms| of s² (the cancellation scale).
fn margins(a: &DMatrix<f64>, p: &Params) -> (Vec<f64>, Vec<f64>, Vec<f64>) {
    let (n, d) = a.shape();
    let m = nalgebra::DVector::from_column_slice(p.mean());
    let mu: Vec<f64> = (a * &m).iter().copied().collect();
    // s²_i = Σ_k W_ik A_ik with W = AΣ, column by column (contiguous in
    // column-major storage); diagonal Σ without forming W (no n × d copy: the
    // stochastic steps call this thousands of times).
    let (mut s2, mut scale) = (vec![0.0; n], vec![0.0; n]);
    let mut add = |k: usize, w: &mut dyn Iterator<Item = f64>| {
        for ((s, c), (w, x)) in s2
            .iter_mut()
            .zip(scale.iter_mut())
            .zip(w.zip(a.column(k).iter()))
        {
            *s += w * x;
            *c += (w * x).abs();
        }
    };
    if p.family == Family::Full {
        let w = p.apply_rows(a);
        for k in 0..d {
            add(k, &mut w.column(k).iter().copied());
        }
    } else {
        for (k, v) in p.marginal_var().into_iter().enumerate() {
            add(k, &mut a.column(k).iter().map(|x| x * v));
        }
    }
    (mu, s2, scale)
}

/// The expected loss of every row of `a` (no gradients).
pub fn item_losses(a: &DMatrix<f64>, loss: Loss, p: &Params) -> Vec<f64> {
    let (mu, s2, scale) = margins(a, p);
    (0..a.nrows())
        .map(|i| item(loss, mu[i], s2[i], scale[i]).0)
        .collect()
}

/// The mean of `item` over the rows of `a` (items × d), whitened coordinates.
/// Costs two products with A (and one d × d product for F3).
pub fn eval_items(a: &DMatrix<f64>, loss: Loss, p: &Params) -> RiskEval {
    let (n, d) = a.shape();
    let (mu, s2, scale) = margins(a, p);
    let mut gmu = vec![0.0; n];
    let mut gv = vec![0.0; n];
    let mut value = 0.0;
    for i in 0..n {
        let (l, g1, g2) = item(loss, mu[i], s2[i], scale[i]);
        value += l;
        gmu[i] = g1;
        gv[i] = g2;
    }
    let inv = 1.0 / n.max(1) as f64;
    let grad_m = a.tr_mul(&nalgebra::DVector::from_vec(gmu)) * inv;
    let grad_sigma = match p.family {
        Family::Iso => {
            SigmaGrad::Trace((0..n).map(|i| gv[i] * a.row(i).norm_squared()).sum::<f64>() * inv)
        }
        Family::Diag => SigmaGrad::Diag(
            (0..d)
                .map(|k| (0..n).map(|i| gv[i] * a[(i, k)] * a[(i, k)]).sum::<f64>() * inv)
                .collect(),
        ),
        Family::Full => {
            let mut ag = a.clone();
            for (i, mut row) in ag.row_iter_mut().enumerate() {
                row *= gv[i] * inv;
            }
            SigmaGrad::Full(crate::engine::numerics::linalg::at_b(a, &ag))
        }
    };
    RiskEval {
        value: value * inv,
        grad_m: grad_m.iter().copied().collect(),
        grad_sigma,
    }
}

/// The whitened classification items `a_i = y_i x_i` (y ∈ {±1}).
pub fn signed_rows(x: &DMatrix<f64>, y: &[bool]) -> DMatrix<f64> {
    let mut a = x.clone();
    for (i, mut row) in a.row_iter_mut().enumerate() {
        if !y[i] {
            row.neg_mut();
        }
    }
    a
}
