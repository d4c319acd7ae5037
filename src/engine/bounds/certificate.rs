//! The certificate itself: its numbers, and the two bounds computed from
//! E_ρ R_n, KL(ρ‖π) and the sample sizes (the formulas are in the module docs
//! of `bounds`). A leaf: the core's `Fit` carries a `Bound` without importing
//! the methods that compute E_ρ R_n and KL.

use serde::{Deserialize, Serialize};

use crate::engine::problem::Problem;

pub const DEFAULT_EPSILON: f64 = 0.05;

/// A bound on 1 − AUC at or above this certifies nothing: a score drawn at
/// random has an expected AUC risk of ½ (ties ½), whatever the data.
pub const VACUOUS_RISK: f64 = 0.5;

/// The sample sizes a bound depends on.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Sizes {
    pub n_pos: usize,
    pub n_neg: usize,
    pub d: usize,
}

impl Sizes {
    pub fn of(pb: &Problem) -> Sizes {
        Sizes {
            n_pos: pb.n_pos(),
            n_neg: pb.n_neg(),
            d: pb.d(),
        }
    }
    pub fn n(&self) -> usize {
        self.n_pos + self.n_neg
    }
    /// ⌊n/2⌋: Hoeffding's independent blocks.
    pub fn blocks(&self) -> usize {
        self.n() / 2
    }
    /// `c = 2 n₊ n₋/(n(n−1))`: r^U = c·R_n.
    pub fn u_scale(&self) -> f64 {
        let n = self.n() as f64;
        2.0 * (self.n_pos * self.n_neg) as f64 / (n * (n - 1.0))
    }
}

/// The bound of ARC16's ranking corollary (the PACVB package's formula):
/// `E_ρ r^U + λ/(n−1) + (KL + log(1/ε))/λ` (their Hoeffding constant
/// f(λ, n) = λ²/(n−1)), at their theory λ = √(d(n−1))/2 and, for comparison
/// on equal terms, optimised over the same grid with the same union bound.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PacVb {
    pub lambda_theory: f64,
    pub risk_at_theory_lambda: f64,
    pub lambda: f64,
    pub risk: f64,
}

/// One of the two bounds, at ε/2.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Part {
    pub risk: f64,
    pub risk_u: f64,
    pub epsilon: f64,
    /// The Hoeffding form's best λ on the grid (U-statistic scale).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lambda: Option<f64>,
}

/// A certificate: every risk on the AUC-risk scale (1 − AUC) unless named `_u`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Bound {
    /// Upper bound on the expected AUC risk of a score drawn from ρ, with
    /// probability ≥ 1 − ε: the smaller of `hoeffding` and `kl_inverse`.
    pub risk: f64,
    /// E_ρ R_n on the training pairs.
    pub empirical_risk: f64,
    /// The Hoeffding form's best λ (U-statistic scale).
    pub lambda: f64,
    pub epsilon: f64,
    pub kl: f64,
    /// What ρ is: "gaussian", "gibbs" (SMC's log Z), "particles_gaussian", "gibbs_path_best".
    pub rho: String,
    /// The same bound on the U-statistic scale.
    pub risk_u: f64,
    pub empirical_risk_u: f64,
    /// c = 2n₊n₋/(n(n−1)): risk = risk_u / c.
    pub u_scale: f64,
    /// ⌊n/2⌋.
    pub blocks: usize,
    pub sizes: Sizes,
    pub grid_size: usize,
    /// Which bound gave `risk`: "hoeffding" or "kl_inverse".
    pub tighter: String,
    pub hoeffding: Part,
    pub kl_inverse: Part,
    /// γ = λ·c: the Gibbs posterior whose λ this is, in this program's convention.
    pub gamma_equivalent: f64,
    pub pacvb: PacVb,
    /// Why the value is only approximate (Monte Carlo inputs), if it is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approximate: Option<String>,
    /// For an SMC fit: the ρ at the path's best stage (γ_t in `gamma_equivalent` of
    /// the stage) and the particles' Gaussian fit.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub others: Vec<Bound>,
}

impl Bound {
    /// Whether the certificate says no more than a random score's ½.
    pub fn is_vacuous(&self) -> bool {
        self.risk >= VACUOUS_RISK
    }
}

/// The fixed λ grid for n rows: 2^{g/2} from 1 to 8⌊n/2⌋ (where the
/// λ/(8⌊n/2⌋) term reaches 1, beyond which every bound is vacuous).
pub fn lambda_grid(sizes: &Sizes) -> Vec<f64> {
    let top = (8 * sizes.blocks().max(1)) as f64;
    let g = (2.0 * top.log2()).ceil() as usize + 1;
    (0..g).map(|i| 2f64.powf(0.5 * i as f64)).collect()
}

/// kl(p‖q) of two Bernoulli means.
pub(super) fn kl_bernoulli(p: f64, q: f64) -> f64 {
    let t = |a: f64, b: f64| if a <= 0.0 { 0.0 } else { a * (a / b).ln() };
    t(p, q) + t(1.0 - p, 1.0 - q)
}

/// sup{q ∈ [p, 1] : kl(p‖q) ≤ b} by bisection.
pub fn kl_inverse_upper(p: f64, b: f64) -> f64 {
    let (mut lo, mut hi) = (p.clamp(0.0, 1.0), 1.0);
    if kl_bernoulli(lo, hi - 1e-15) <= b {
        return 1.0;
    }
    for _ in 0..100 {
        let mid = 0.5 * (lo + hi);
        if kl_bernoulli(p, mid) > b {
            hi = mid;
        } else {
            lo = mid;
        }
    }
    hi
}

/// The bound from E_ρ R_n and KL(ρ‖π).
pub fn from_parts(empirical_risk: f64, kl: f64, sizes: Sizes, epsilon: f64, rho: &str) -> Bound {
    let c = sizes.u_scale();
    let k = sizes.blocks().max(1) as f64;
    let emp_u = c * empirical_risk;
    let grid = lambda_grid(&sizes);
    let half = 0.5 * epsilon;
    let best = |term: &dyn Fn(f64) -> f64, pen: f64| {
        grid.iter()
            .map(|&l| (emp_u + term(l) + (kl + pen) / l, l))
            .fold((f64::INFINITY, 0.0), |a, b| if b.0 < a.0 { b } else { a })
    };
    let (h_u, lambda) = best(&|l| l / (8.0 * k), (grid.len() as f64 / half).ln());
    let kl_u = kl_inverse_upper(emp_u, (kl + (2.0 * k.sqrt() / half).ln()) / k);
    let n1 = (sizes.n() - 1) as f64;
    let (pv_u, pv_l) = best(&|l| l / n1, (grid.len() as f64 / epsilon).ln());
    let lt = (sizes.d as f64 * n1).sqrt() / 2.0;
    let pv_theory = emp_u + lt / n1 + (kl + (1.0 / epsilon).ln()) / lt;
    let risk_u = h_u.min(kl_u);
    Bound {
        risk: risk_u / c,
        empirical_risk,
        lambda,
        epsilon,
        kl,
        rho: rho.to_string(),
        risk_u,
        empirical_risk_u: emp_u,
        u_scale: c,
        blocks: sizes.blocks(),
        sizes,
        grid_size: grid.len(),
        tighter: if kl_u < h_u {
            "kl_inverse"
        } else {
            "hoeffding"
        }
        .into(),
        hoeffding: Part {
            risk: h_u / c,
            risk_u: h_u,
            epsilon: half,
            lambda: Some(lambda),
        },
        kl_inverse: Part {
            risk: kl_u / c,
            risk_u: kl_u,
            epsilon: half,
            lambda: None,
        },
        gamma_equivalent: lambda * c,
        pacvb: PacVb {
            lambda_theory: lt,
            risk_at_theory_lambda: pv_theory / c,
            lambda: pv_l,
            risk: pv_u / c,
        },
        approximate: None,
        others: Vec::new(),
    }
}

/// The same certificate at another ε (`pacauc bound RUN.json --epsilon E`):
/// a bound depends on ρ only through E_ρ R_n and KL.
pub fn recompute(b: &Bound, epsilon: f64) -> Bound {
    let mut out = from_parts(b.empirical_risk, b.kl, b.sizes, epsilon, &b.rho);
    out.approximate = b.approximate.clone();
    out.others = b.others.iter().map(|o| recompute(o, epsilon)).collect();
    out
}
