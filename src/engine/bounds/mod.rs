//! PAC-Bayes certificates for the AUC risk (ALGORITHMS.md §9; RACL14 App. A.2).
//!
//! `r^U` is the U-statistic risk over ordered pairs, `r^U = 2M/(n(n−1))·R_n`;
//! its kernel lies in [0, 1], and Hoeffding's decomposition writes it as an
//! average over permutations of means of k = ⌊n/2⌋ independent blocks — never
//! M independent pairs, which share rows. Two bounds, each at ε/2 (union
//! bound), `risk` the smaller:
//! - §9's Hoeffding form: for every ρ and every λ of a fixed grid G,
//!   `E_ρ R^U ≤ E_ρ r^U + λ/(8k) + (KL(ρ‖π) + log(2|G|/ε))/λ`, λ over
//!   2^{g/2}, g = 0…⌈2 log₂(8k)⌉;
//! - the Seeger–Maurer kl form, `kl(E_ρ r^U ‖ E_ρ R^U) ≤ (KL + log(4√k/ε))/k`:
//!   kl(·‖R) is convex, so Jensen over the permutations carries Maurer's
//!   `E exp(k·kl(W‖R)) ≤ 2√k` for a mean W of k independent [0, 1] terms to the
//!   U-statistic. Much tighter when the risk is small (all of Pima, VB at
//!   γ = 100: Hoeffding 0.50, kl 0.40 on the AUC-risk scale).
//!
//! AUC-risk scale: `risk = (bound on R^U)/c` with `c = 2 n₊ n₋/(n(n−1))`, the
//! factor that maps R_n to r^U on this sample; for the population
//! (`R^U = 2p(1−p)(1 − AUC)`) it is approximate, as p is estimated by the
//! sample share. `empirical_risk` is E_ρ R_n, on the same scale.
//!
//! For a Gaussian ρ (EP, VB, a Gaussian fit of SMC's particles) E_ρ R_n is
//! the mean of Φ(−μ_ij/s_ij) over the pairs (`numerics::pair_risk`): exact up
//! to `EXACT_PAIRS_MAX` pairs, above from `SAMPLED_PAIRS` sampled pairs with
//! their Monte Carlo term in the bound; KL closed-form (or 1-D quadrature for
//! spike-and-slab). For the Gibbs posterior π_γ itself,
//! `KL(π_γ‖π) = −log Z_γ − γ E_{π_γ} R_n`, from SMC's log Z and mean risk —
//! Monte Carlo estimates, so that bound is marked approximate.

pub mod certificate;
mod fits;
pub mod kl;
pub mod row_space;
pub mod split;
pub mod spread;
pub mod two_sample;

pub(crate) use certificate::settle;
pub use certificate::{
    Bound, DEFAULT_EPSILON, DRAWS_SHARE, Draws, PacVb, Part, Sizes, SplitPrior, VACUOUS_RISK,
    draws_term, from_parts, kl_inverse_upper, lambda_grid, pick_best, recompute,
};
pub use fits::{
    EXACT_PAIRS_MAX, GCS_NEEDS_EVIDENCE, PAIRS_SOURCE, PairPlan, SAMPLED_PAIRS, certify,
    certify_gaussian, certify_gaussian_spreads, certify_gaussian_with, certify_gibbs,
    certify_low_rank, gaussian_empirical_risk,
};
pub(crate) use fits::{gaussian_risk_term, gaussian_risk_terms};
#[cfg(test)]
use two_sample::kl_bernoulli;

#[cfg(test)]
mod coverage;
#[cfg(test)]
mod sampled_tests;
#[cfg(test)]
mod tests;
