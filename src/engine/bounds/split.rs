//! The split prior (PBB-style; Ambroladze et al. 2007, Pérez-Ortiz et al.
//! 2021; docs/certificate.md): the prior is learned on a stratified part S_p
//! of the training rows — the same method's Gaussian posterior there,
//! N(μ_p, κ·V_p) for κ on a small grid paid for by ε/|grid| — and the
//! certificate is computed on the rest S_b with m = min(n₊ᵇ, n₋ᵇ). ρ is the
//! fit on all rows (ρ may depend on anything; π must not depend on S_b).

use nalgebra::{DMatrix, DVector};

use super::row_space::RowSpace;
use super::{
    Bound, DRAWS_SHARE, PairPlan, Sizes, SplitPrior, from_parts, gaussian_risk_term,
    gaussian_risk_terms, kl, settle,
};
use crate::engine::fit::Fit;
use crate::engine::numerics::rng;
use crate::engine::problem::Problem;

/// Variance inflations of the learned prior tried (ε is divided among them);
/// below 1 because a posterior on all rows has about `share` times the
/// variance of the prior part's.
pub const INFLATIONS: [f64; 4] = [0.5, 1.0, 2.0, 4.0];

/// The prior part and the certified part: `share` of each class (at least
/// one row of each class on each side), chosen by a seeded shuffle.
pub fn stratified(y: &[bool], share: f64, seed: u64) -> (Vec<usize>, Vec<usize>) {
    use rand::seq::SliceRandom;
    let mut r = rng::stream(seed, &[35, 1]);
    let (mut prior, mut cert) = (Vec::new(), Vec::new());
    for class in [true, false] {
        let mut rows: Vec<usize> = (0..y.len()).filter(|&i| y[i] == class).collect();
        rows.shuffle(&mut r);
        let k =
            ((share * rows.len() as f64).round() as usize).clamp(1, rows.len().saturating_sub(1));
        prior.extend_from_slice(&rows[..k]);
        cert.extend_from_slice(&rows[k..]);
    }
    prior.sort_unstable();
    cert.sort_unstable();
    (prior, cert)
}

/// The problem restricted to `rows`.
pub fn sub_problem(pb: &Problem, rows: &[usize]) -> Result<Problem, String> {
    let x = DMatrix::from_fn(rows.len(), pb.d(), |i, k| pb.x[(rows[i], k)]);
    let y = rows.iter().map(|&i| pb.y[i]).collect();
    // γ scales with the rows (γ ∝ n, §2): the same temperature per row.
    let gamma = pb.gamma * rows.len() as f64 / pb.n() as f64;
    Problem::new(pb.names.clone(), x, y, gamma, pb.prior.clone()).map_err(|e| e.to_string())
}

/// A fit's Gaussian (mean, dense covariance), where it has one.
fn gaussian_of(fit: &Fit) -> Option<(Vec<f64>, DMatrix<f64>)> {
    let cov = match (&fit.covariance, &fit.low_rank_covariance) {
        (Some(c), _) => c.clone(),
        (None, Some(v)) => {
            DMatrix::from_diagonal(&DVector::from_vec(v.diag.clone()))
                + &v.factor * &v.core * v.factor.transpose()
        }
        (None, None) => return None,
    };
    (!fit.mean.is_empty()).then(|| (fit.mean.clone(), cov))
}

/// KL(N(c·μ, c²·s·V) ‖ N(μ_p, κ·V_p)) minimised over c > 0 and κ: the
/// O(d³) parts (Cholesky of V_p, log|V|, tr(V_p⁻¹V)) once, each (μ, s) in O(d²).
struct SplitKl {
    lp: nalgebra::Cholesky<f64, nalgebra::Dyn>,
    logdet_v: f64,
    logdet_p: f64,
    trace: f64,
}

impl SplitKl {
    fn new(v: &DMatrix<f64>, v_p: &DMatrix<f64>) -> Result<SplitKl, String> {
        let lp = nalgebra::Cholesky::new(v_p.clone())
            .ok_or("the learned prior's covariance is not positive definite")?;
        let logdet_v =
            kl::log_det(v).ok_or("the posterior's covariance is not positive definite")?;
        let logdet_p = 2.0 * lp.l().diagonal().iter().map(|x| x.ln()).sum::<f64>();
        let trace = lp.solve(v).trace();
        Ok(SplitKl {
            lp,
            logdet_v,
            logdet_p,
            trace,
        })
    }

    /// min over c and κ ∈ INFLATIONS of the KL for ρ's mean `mu` and spread
    /// `s`, with its (c, κ).
    fn at(&self, mu: &[f64], s: f64, mu_p: &[f64]) -> (f64, f64, f64) {
        let d = mu.len() as f64;
        let (m, mp) = (
            DVector::from_column_slice(mu),
            DVector::from_column_slice(mu_p),
        );
        let l = self.lp.l();
        let solve = |x: &DVector<f64>| l.solve_lower_triangular(x).map(|z| z.norm_squared());
        let (mm, mpmp) = (
            solve(&m).unwrap_or(f64::INFINITY),
            solve(&mp).unwrap_or(f64::INFINITY),
        );
        let cross = m.dot(&self.lp.solve(&mp));
        let (trace, logdet_v) = (s * self.trace, self.logdet_v + d * s.ln());
        let at = |c: f64, k: f64| {
            let quad = c * c * mm - 2.0 * c * cross + mpmp;
            0.5 * ((c * c * trace + quad) / k - d + d * k.ln() + self.logdet_p
                - logdet_v
                - 2.0 * d * c.ln())
        };
        let mut best = (f64::INFINITY, 1.0, 1.0);
        for &k in &INFLATIONS {
            let f = |t: f64| at(t.exp(), k);
            let t = kl::golden_min(f, -8.0, 8.0, 100);
            let kl = f(t).min(f(0.0));
            let c = if f(t) <= f(0.0) { t.exp() } else { 1.0 };
            if kl < best.0 {
                best = (kl, c, k);
            }
        }
        best
    }
}

/// The certificate of `fit` (ρ, fitted on all of `pb`) under the prior learned
/// by `prior_fit` on `prior_rows`, on `cert_rows`.
pub fn certify_split(
    fit: &Fit,
    prior_fit: &Fit,
    pb: &Problem,
    prior_rows: &[usize],
    cert_rows: &[usize],
    share: f64,
    epsilon: f64,
) -> Result<Bound, String> {
    let (mu, v) = gaussian_of(fit).ok_or(format!(
        "the {} fit has no Gaussian posterior (mean and covariance): the split prior needs one",
        fit.engine
    ))?;
    let (mu_p, v_p) = gaussian_of(prior_fit)
        .ok_or("the fit on the prior part has no Gaussian posterior to serve as the prior")?;
    let part = sub_problem(pb, cert_rows)?;
    let sizes = Sizes::of(&part);
    // ρ may be any distribution: besides the fit's N(μ, V), the means between
    // the prior part's and the fit's (t = 0 is nearly a held-out test of the
    // prior part's posterior mean; t = 1 the fit). The smallest certificate is
    // the headline, at no cost (one prior, every ρ at once).
    let split_kl = SplitKl::new(&v, &v_p)?;
    let means: Vec<Vec<f64>> = MEAN_MIX
        .iter()
        .map(|t| mu_p.iter().zip(&mu).map(|(p, f)| p + t * (f - p)).collect())
        .collect();
    let reduced = fit.low_rank_covariance.is_some() && pb.d() > pb.n();
    // E_ρ R_n of every mean at every spread from one pass (`gaussian_risk_terms`).
    let terms = if reduced {
        Vec::new()
    } else {
        let refs: Vec<&[f64]> = means.iter().map(|m| m.as_slice()).collect();
        let grid = &super::spread::SPREADS;
        gaussian_risk_terms(&part.x, &part.y, &refs, &v, grid, PairPlan::default())?
    };
    let mut cands = Vec::new();
    for (ti, &t) in MEAN_MIX.iter().enumerate() {
        let mu_t = &means[ti];
        let rho = if t == 1.0 {
            "gaussian (split prior)".to_string()
        } else {
            format!(
                "gaussian (split prior; mean {t}·fit + {}·prior part's)",
                1.0 - t
            )
        };
        // Each mean at the best of its spreads N(μ_t, s·V) (`spread`).
        cands.push(super::spread::best_spread(|s, spreads| {
            // Sampled pairs (above `EXACT_PAIRS_MAX`): each candidate's Monte
            // Carlo event at its share of DRAWS_SHARE·ε (a union bound).
            let shared_by = spreads * MEAN_MIX.len();
            let eps_draws = DRAWS_SHARE * epsilon / shared_by as f64;
            let plan = PairPlan::default();
            let (emp, draws) = match &fit.low_rank_covariance {
                Some(lr) if reduced => {
                    let rs = RowSpace::new(&part.x, mu_t, &super::fits::scaled_low_rank(lr, s))?;
                    gaussian_risk_term(&rs.rows, &part.y, &rs.mean, &rs.cov, plan, eps_draws)?
                }
                _ => {
                    let grid = &super::spread::SPREADS;
                    let k = grid
                        .iter()
                        .position(|&g| g == s)
                        .expect("a spread of the grid");
                    terms[ti * grid.len() + k].at(eps_draws)
                }
            };
            let (kl, c, k) = split_kl.at(mu_t, s, &mu_p);
            let mut b = from_parts(emp, kl, sizes, epsilon, &rho);
            b.rho_scale = Some(c);
            b.split = Some(SplitPrior {
                share,
                prior_rows: prior_rows.len(),
                certified_rows: cert_rows.len(),
                prior: format!(
                    "N(μ_p, {k}·V_p) from {}'s posterior on the prior part (the smallest KL of \
                     the inflations {INFLATIONS:?}, paid for by ε/{})",
                    prior_fit.engine,
                    INFLATIONS.len()
                ),
                grid: INFLATIONS.len(),
            });
            b.draws = draws.map(|d| super::Draws { shared_by, ..d });
            settle(&mut b);
            Ok(b)
        })?);
    }
    Ok(super::pick_best(cands).expect("five candidates"))
}

/// The means tried between the prior part's (0) and the fit's (1).
const MEAN_MIX: [f64; 5] = [0.0, 0.25, 0.5, 0.75, 1.0];

#[cfg(test)]
mod tests {
    use super::*;

    /// The closed form equals a direct Gaussian KL minimised by a scan over c
    /// and κ, at the fit's own spread and a wider one; stratification keeps
    /// each class's share.
    #[test]
    fn split_kl_and_strata() {
        let v = DMatrix::from_row_slice(2, 2, &[0.5, 0.1, 0.1, 0.3]);
        let vp = DMatrix::from_row_slice(2, 2, &[0.8, -0.1, -0.1, 0.6]);
        let (mu, mp) = ([0.4, -0.2], [0.1, 0.3]);
        let split_kl = SplitKl::new(&v, &vp).unwrap();
        for spread in [1.0, 2.0] {
            let (best, _, _) = split_kl.at(&mu, spread, &mp);
            let direct = |c: f64, k: f64| {
                let s = &vp * k;
                let si = s.clone().try_inverse().unwrap();
                let vc = &v * (c * c * spread);
                let dm = DVector::from_column_slice(&mu) * c - DVector::from_column_slice(&mp);
                0.5 * ((&si * &vc).trace() + (dm.transpose() * &si * &dm)[(0, 0)] - 2.0
                    + (s.determinant() / vc.determinant()).ln())
            };
            let mut scan = f64::INFINITY;
            for &k in &INFLATIONS {
                for i in -300..=300 {
                    scan = scan.min(direct((i as f64 * 0.01).exp(), k));
                }
            }
            assert!(
                best <= scan + 1e-12 && scan - best < 1e-4,
                "spread {spread}: {best} vs {scan}"
            );
        }
        let y: Vec<bool> = (0..100).map(|i| i % 4 == 0).collect();
        let (p, c) = stratified(&y, 0.5, 3);
        assert_eq!(p.len() + c.len(), 100);
        assert_eq!(p.iter().filter(|&&i| y[i]).count(), 13);
        assert_eq!(c.iter().filter(|&&i| y[i]).count(), 12);
    }
}
