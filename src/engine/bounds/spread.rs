//! The fit's Gaussian widened or narrowed: ρ_s = N(μ, s·V) for s on a fixed
//! grid, each at its best scale c, the smallest certificate the headline.
//!
//! Why: the bound holds for every ρ at once, so any ρ may be certified, and
//! the fit's own covariance is rarely the best trade. At the best scale c the
//! KL to N(0, ϑI) is ½(d·ln(Σ_k (s·V_kk + μ_k²)/d) − d·ln s − ln|V|): where the
//! mean dominates the sum, widening by s saves about ½·d·ln s nats and costs
//! some E_ρ R_n (each pair's margin shrinks by √s); narrowing does the
//! opposite. It is the trade a Gibbs posterior makes along γ, without refitting.
//!
//! The grid is fixed in advance: E_ρ R_n from sampled pairs has a Monte Carlo
//! event per candidate, and those share their ε (`Draws::shared_by`) only if
//! the candidates do not depend on the sample of pairs.

use super::Bound;

/// The spreads s tried (s = 1: the fit's own covariance).
pub const SPREADS: [f64; 9] = [0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0];

/// The smallest certificate of `at(s, shared_by)` over `SPREADS` (each call
/// certifies N(μ, s·V) with its Monte Carlo share divided by `shared_by`), the
/// fit's own (s = 1) kept beside it when another spread wins.
pub fn best_spread(
    mut at: impl FnMut(f64, usize) -> Result<Bound, String>,
) -> Result<Bound, String> {
    let mut cands = Vec::with_capacity(SPREADS.len());
    for &s in &SPREADS {
        let mut b = at(s, SPREADS.len())?;
        b.rho_spread = (s != 1.0).then_some(s);
        cands.push(b);
    }
    let own = cands
        .iter()
        .position(|b| b.rho_spread.is_none())
        .expect("s = 1 is on the grid");
    let best = (0..cands.len())
        .min_by(|&a, &b| cands[a].risk.total_cmp(&cands[b].risk))
        .expect("a non-empty grid");
    let mut head = cands[best].clone();
    head.chosen = Some(format!(
        "the smallest over ρ = N(μ, s·V), s ∈ {SPREADS:?} (the fit's own, s = 1: {:.4}); the \
         bound holds for every ρ at once, so the choice costs nothing",
        cands[own].risk
    ));
    if best != own {
        head.others.push(cands.swap_remove(own));
    }
    Ok(head)
}

#[cfg(test)]
mod tests {
    use nalgebra::DMatrix;

    use super::*;
    use crate::engine::bounds::certify_gaussian;
    use crate::engine::numerics::rng::{normal, stream};
    use crate::engine::prior::Prior;
    use crate::engine::problem::Problem;

    /// A sharp posterior of a strong signal (three informative features of
    /// six): widening it is the better trade, and the headline is exactly the
    /// certificate of its own spread, its KL the closed form of the module doc.
    #[test]
    fn the_headline_is_the_certificate_of_its_spread() {
        let mut r = stream(7, &[35]);
        let (n, d) = (400, 6);
        let x = DMatrix::from_fn(n, d, |_, _| normal(&mut r));
        let y: Vec<bool> = (0..n)
            .map(|i| x[(i, 0)] - x[(i, 1)] + 0.5 * x[(i, 2)] + 0.7 * normal(&mut r) > 0.8)
            .collect();
        let names = (0..d).map(|k| format!("x{k}")).collect();
        let pb = Problem::new(names, x, y, 400.0, Prior::Gaussian { var: 1.0 }).unwrap();
        let mean = vec![2.0, -2.0, 1.0, 0.05, -0.03, 0.02];
        let cov = DMatrix::from_fn(d, d, |i, j| if i == j { 0.01 } else { 0.002 });
        let at = |s: f64| certify_gaussian(&pb, &pb.prior, &mean, &(&cov * s), 0.05, "gaussian");
        let head = best_spread(|s, _| at(s)).unwrap();
        let spread = head.rho_spread.expect("a wider ρ certifies lower here");
        assert!(spread > 1.0, "spread {spread}");
        assert_eq!(head.risk, at(spread).unwrap().risk);
        for &s in &SPREADS {
            assert!(head.risk <= at(s).unwrap().risk);
        }
        assert_eq!(head.others.len(), 1);
        assert_eq!(head.others[0].rho_spread, None);
        assert_eq!(head.others[0].risk, at(1.0).unwrap().risk);
        assert!(head.chosen.as_deref().unwrap().contains("costs nothing"));
        // KL at the best scale: ½(d·ln(Σ(s·V_kk + μ_k²)/d) − d·ln s − ln|V|).
        let logdet = super::super::kl::log_det(&cov).unwrap();
        let df = d as f64;
        let sum: f64 = (0..d)
            .map(|k| spread * cov[(k, k)] + mean[k] * mean[k])
            .sum();
        let closed = 0.5 * (df * (sum / df).ln() - df * spread.ln() - logdet);
        assert!((head.kl - closed).abs() < 1e-9, "{} vs {closed}", head.kl);
    }
}
