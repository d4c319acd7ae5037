//! The predictive variance of a landmark GP model, stored compactly.
//!
//! With the prior written `s = Z w`, `w ~ N(0, I_r)` (Z: the training rows'
//! whitened features, `φ(x) = L_I⁻¹ k_I(x)` for the landmark rows I,
//! `K_II = L_I L_Iᵀ`), q's precision of w is `I + S`, `S = ZᵀBZ` (B the sites'
//! Laplacian), and the predictive variance of a row x is
//! `k(x, x) − φᵀ C φ`, `C = I − (I + S)⁻¹ = S(I + S)⁻¹`.
//! Stored whole, C (or q's covariance) takes r(r + 1)/2 numbers: 2.6 M for
//! DNA's 2 279 distinct training rows. But C has the eigenvectors of S with
//! eigenvalues `λ = s/(1 + s)`, and few of them matter: keeping the k of
//! largest |λ|, `var(x) ≈ k(x, x) − Σ_j λ_j (g_jᵀ k_I(x))²` with
//! `g_j = L_I⁻ᵀ u_j` — k columns of |I| numbers, and no factorisation when
//! scoring. Dropping eigenvalues of modulus ≤ ε changes any variance by at most
//! ε·k(x, x) (since ‖φ‖² ≤ k(x, x)); in practice far less, so k is chosen by the
//! error it makes where the exact answer is known: the smallest k for which the
//! sd of every training row is within `tol`·√k(x, x) of q's.
//!
//! The eigenpairs come from block Lanczos with full reorthogonalisation on S
//! (Rayleigh–Ritz on a Krylov space grown a block at a time until the
//! criterion holds): each block costs one product with Z, one with B (O(M))
//! and one with Zᵀ — no n³ inverse.

use nalgebra::DMatrix;
use serde::{Deserialize, Serialize};

use crate::engine::numerics::linalg::{a_b, at_b};
use crate::engine::numerics::rng;

/// Default accuracy of a reduced variance: every training row's score sd
/// within 0.01·√k(x, x) (1% of the prior sd) of the exact one.
pub const SD_TOL: f64 = 0.01;
/// Krylov block size.
const BLOCK: usize = 48;
const KEY_START: u64 = 0x6750_5350;

/// How a GP model stores the posterior spread of its score.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum GpSpread {
    /// The weights' posterior covariance, lower triangle packed by rows
    /// (r(r + 1)/2 numbers: row i holds V_i0 … V_ii).
    Covariance { packed: Vec<f64> },
    /// Landmark models: `var(x) = k(x, x) − Σ_j lambda_j (g_jᵀ k_I(x))²`,
    /// `g` the k columns g_j (each of the landmarks' length). Not in single
    /// precision: `g = L_I⁻ᵀu` has entries up to 1/(smallest pivot) ~ 3e3 and
    /// `gᵀk_I(x)` cancels them: f32 rounding moved training sds past the
    /// stated accuracy (tests/gp_ep.rs on the ring).
    Reduced {
        lambda: Vec<f64>,
        g: Vec<Vec<f64>>,
        /// The accuracy asked for, and the largest sd error at the training
        /// rows (both relative to the prior sd √k(x, x)).
        sd_tol: f64,
        max_sd_error: f64,
    },
}

impl GpSpread {
    /// Numbers stored.
    pub fn numbers(&self) -> usize {
        match self {
            GpSpread::Covariance { packed } => packed.len(),
            GpSpread::Reduced { lambda, g, .. } => {
                lambda.len() + g.iter().map(Vec::len).sum::<usize>()
            }
        }
    }
}

/// The kept eigenpairs of S.
#[derive(Debug, Clone)]
pub struct Reduction {
    /// λ_j = s_j/(1 + s_j), by decreasing |λ|.
    pub lambda: Vec<f64>,
    /// u_j as columns (r × k).
    pub u: DMatrix<f64>,
    /// Largest |sd − exact sd|/√k(x, x) at the training rows.
    pub max_sd_error: f64,
    /// Dimension of the Krylov space used.
    pub krylov: usize,
}

/// The training rows' side of the criterion.
pub struct TrainingRows<'a> {
    /// k(x_i, x_i).
    pub prior_var: &'a [f64],
    /// The exact predictive variance `k(x_i, x_i) − z_iᵀ C z_i`.
    pub exact_var: &'a [f64],
}

/// `X ↦ (Z X, S X)` for a block X (r × p).
pub type ApplyBlock<'a> = &'a dyn Fn(&DMatrix<f64>) -> (DMatrix<f64>, DMatrix<f64>);

/// The fewest eigenpairs of `S` (dimension r, symmetric, I + S positive
/// definite) that give every training row's sd to `tol`. `apply(X)` returns
/// `(Z X, S X)` for a block X (r × p).
pub fn reduce(r: usize, apply: ApplyBlock<'_>, rows: &TrainingRows<'_>, tol: f64) -> Reduction {
    let mut q = DMatrix::<f64>::zeros(r, 0);
    let mut zq = DMatrix::<f64>::zeros(rows.prior_var.len(), 0);
    let mut sq = DMatrix::<f64>::zeros(r, 0);
    let mut next = random_block(r, BLOCK.min(r), 0);
    let mut round = 0u64;
    loop {
        let room = r - q.ncols();
        let mut x = orthonormal_against(&q, next.columns(0, next.ncols().min(room)).into_owned());
        if x.ncols() == 0 {
            // The Krylov space is invariant: continue from fresh directions.
            round += 1;
            x = orthonormal_against(&q, random_block(r, BLOCK.min(room), round));
        }
        let (zx, sx) = apply(&x);
        q = hcat(&q, &x);
        zq = hcat(&zq, &zx);
        sq = hcat(&sq, &sx);
        next = sx;
        let complete = q.ncols() >= r;
        let t = at_b(&q, &sq);
        let t = (&t + t.transpose()) * 0.5;
        let eig = t.symmetric_eigen();
        let lambda_all: Vec<f64> = eig.eigenvalues.iter().map(|s| s / (1.0 + s)).collect();
        let mut order: Vec<usize> = (0..lambda_all.len()).collect();
        order.sort_by(|&a, &b| lambda_all[b].abs().total_cmp(&lambda_all[a].abs()));
        let ritz = eig.eigenvectors.select_columns(&order);
        let lambda: Vec<f64> = order.iter().map(|&i| lambda_all[i]).collect();
        // Training rows' features on the Ritz vectors: (Z Q) Ṽ.
        let f = a_b(&zq, &ritz);
        if let Some((k, err)) = fewest(&f, &lambda, rows, tol)
            .or_else(|| complete.then(|| (lambda.len(), sd_error(&f, &lambda, rows))))
        {
            return Reduction {
                lambda: lambda[..k].to_vec(),
                u: a_b(&q, &ritz.columns(0, k).into_owned()),
                max_sd_error: err,
                krylov: q.ncols(),
            };
        }
    }
}

/// The smallest k whose largest training-row sd error is ≤ tol, and that error.
fn fewest(
    f: &DMatrix<f64>,
    lambda: &[f64],
    rows: &TrainingRows<'_>,
    tol: f64,
) -> Option<(usize, f64)> {
    let n = f.nrows();
    let mut var: Vec<f64> = rows.prior_var.to_vec();
    for (j, &l) in lambda.iter().enumerate() {
        let col = f.column(j);
        let mut worst: f64 = 0.0;
        for i in 0..n {
            var[i] -= l * col[i] * col[i];
            worst = worst.max(row_error(var[i], i, rows));
        }
        if worst <= tol {
            return Some((j + 1, worst));
        }
    }
    None
}

fn sd_error(f: &DMatrix<f64>, lambda: &[f64], rows: &TrainingRows<'_>) -> f64 {
    (0..f.nrows())
        .map(|i| {
            let v = rows.prior_var[i]
                - lambda
                    .iter()
                    .enumerate()
                    .map(|(j, l)| l * f[(i, j)] * f[(i, j)])
                    .sum::<f64>();
            row_error(v, i, rows)
        })
        .fold(0.0, f64::max)
}

fn row_error(var: f64, i: usize, rows: &TrainingRows<'_>) -> f64 {
    (var.max(0.0).sqrt() - rows.exact_var[i].max(0.0).sqrt()).abs() / rows.prior_var[i].sqrt()
}

fn random_block(r: usize, p: usize, round: u64) -> DMatrix<f64> {
    let mut g = rng::stream(KEY_START, &[r as u64, round]);
    DMatrix::from_fn(r, p, |_, _| rng::normal(&mut g))
}

/// Orthonormal columns spanning X's part outside span(Q) (Q orthonormal);
/// columns that add nothing new are dropped.
fn orthonormal_against(q: &DMatrix<f64>, mut x: DMatrix<f64>) -> DMatrix<f64> {
    let scale = x.column_iter().map(|c| c.norm()).fold(0.0, f64::max);
    // Block Gram–Schmidt twice ("twice is enough", Giraud et al. 2005).
    for _ in 0..2 {
        if q.ncols() > 0 {
            x -= a_b(q, &at_b(q, &x));
        }
    }
    let mut out: Vec<nalgebra::DVector<f64>> = Vec::new();
    for j in 0..x.ncols() {
        let mut c = x.column(j).into_owned();
        for _ in 0..2 {
            for o in &out {
                c -= o * o.dot(&c);
            }
        }
        let norm = c.norm();
        if norm > 1e-10 * scale.max(f64::MIN_POSITIVE) {
            out.push(c / norm);
        }
    }
    if out.is_empty() {
        return DMatrix::zeros(x.nrows(), 0);
    }
    DMatrix::from_columns(&out)
}

fn hcat(a: &DMatrix<f64>, b: &DMatrix<f64>) -> DMatrix<f64> {
    let (n, ka, kb) = (a.nrows(), a.ncols(), b.ncols());
    let mut out = DMatrix::zeros(n, ka + kb);
    out.columns_mut(0, ka).copy_from(a);
    out.columns_mut(ka, kb).copy_from(b);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A random S with I + S positive definite and Z = I: the reduced variance
    /// meets the tolerance at every row, and with tol = 0 it is exact.
    #[test]
    fn reduction_meets_its_tolerance_and_is_exact_at_full_rank() {
        let r = 120;
        let mut g = rng::stream(3, &[]);
        let a = DMatrix::from_fn(r, 30, |_, _| rng::normal(&mut g) / (r as f64).sqrt());
        // S = A Aᵀ − 0.05 I·(small): mostly positive, a few negative directions.
        let s = a_b(&a, &a.transpose()) - DMatrix::identity(r, r) * 0.02;
        let z = DMatrix::from_fn(r, r, |i, j| if i == j { 0.9 } else { 0.0 });
        let w = (DMatrix::identity(r, r) + &s).try_inverse().unwrap();
        let c = DMatrix::identity(r, r) - w;
        let prior = vec![1.0; r];
        let exact: Vec<f64> = (0..r)
            .map(|i| 1.0 - (z.row(i) * &c * z.row(i).transpose())[(0, 0)])
            .collect();
        let rows = TrainingRows {
            prior_var: &prior,
            exact_var: &exact,
        };
        let apply = |x: &DMatrix<f64>| (a_b(&z, x), a_b(&s, x));
        let red = reduce(r, &apply, &rows, 0.01);
        assert!(red.max_sd_error <= 0.01);
        assert!(red.lambda.len() < r / 2, "kept {}", red.lambda.len());
        let f = a_b(&z, &red.u);
        assert!((sd_error(&f, &red.lambda, &rows) - red.max_sd_error).abs() < 1e-12);
        let full = reduce(r, &apply, &rows, 0.0);
        assert!(full.max_sd_error < 1e-10, "{}", full.max_sd_error);
    }
}
