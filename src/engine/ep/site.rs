//! One EP pair site (ALGORITHMS.md §4): the factor `f(t) = exp(−g·1{t < 0})` on
//! `t = <θ, a>`, g = γ/M, approximated by `exp(−½ K t² + h t)`.
//!
//! Reused by every EP flavour: the linear engine here, spike-and-slab (§5, same
//! pair sites) and Gaussian-process scores (§6, `a = e_i − e_j`): give it the
//! marginal `N(μ, σ²)` of t under the current approximation and the site's (K, h)
//! and it returns the cavity, the tilted moments, the new site and the site's
//! evidence term. All formulas avoid cancellation: `log Ẑ` by logaddexp (never
//! 0/0), the new site from `w` without subtracting precisions, negative
//! precisions kept (they are exact, §4).

use crate::engine::numerics::normal::{
    Scalar, cdf_pdf, log, log_ndtr_ratio, logaddexp, recip, rsqrt,
};
use crate::engine::numerics::simd::Simd;

/// The step factor of one pair, and the power α of its site update.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct StepFactor {
    /// g = γ/M ≥ 0.
    pub g: f64,
    /// log(1 − e^{−g}) (−∞ for g = 0).
    pub log_c: f64,
    /// Power EP's α ∈ (0, 1] (Minka 2004; 1 = EP): the cavity removes α of
    /// the site, the tilted distribution is `cavity · f^α` (f^α is the same
    /// factor with αg), and the new site is the moment-matching fraction
    /// over α. Each factor in exactly 1.0 makes the kernels' α = 1 arithmetic
    /// bit-identical to EP's.
    pub power: f64,
}

impl StepFactor {
    pub fn new(g: f64) -> StepFactor {
        StepFactor::with_power(g, 1.0)
    }

    /// The factor g with power EP's α (`power`).
    pub fn with_power(g: f64, power: f64) -> StepFactor {
        StepFactor {
            g,
            log_c: (-(-g).exp_m1()).ln(),
            power,
        }
    }
}

/// Natural parameters of a 1-D Gaussian `∝ exp(−½ τ t² + ν t)`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Natural {
    pub tau: f64,
    pub nu: f64,
}

/// A site's natural parameters (precision K may be negative).
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Site {
    pub k: f64,
    pub h: f64,
}

/// Moments of the tilted distribution `cavity(t)·f(t)/Ẑ`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Tilted {
    pub log_z: f64,
    pub mean: f64,
    pub var: f64,
    /// ∂ log Ẑ/∂μ₋.
    pub alpha: f64,
    /// −∂² log Ẑ/∂μ₋² (so that var = v₋(1 − v₋ w)).
    pub w: f64,
}

/// Cavity of a site whose marginal under q is `N(mu, sigma2)`: q's natural
/// parameters minus the site's. Valid only when `tau > 0`.
pub fn cavity(mu: f64, sigma2: f64, site: Site) -> Natural {
    let tau = 1.0 / sigma2;
    Natural {
        tau: tau - site.k,
        nu: mu * tau - site.h,
    }
}

/// Tilted moments of a valid cavity (`cav.tau > 0`), in the log domain
/// (`log Ẑ = logaddexp(−g, log c + log Φ(z))`, valid for any g).
pub fn tilted(cav: Natural, f: StepFactor) -> Tilted {
    let v = 1.0 / cav.tau;
    let sq = cav.tau.sqrt(); // 1/√v₋
    let z = cav.nu / sq;
    let (log_phi, ratio) = log_ndtr_ratio(Scalar::splat(z));
    let (log_phi, ratio) = (log_phi.0, ratio.0);
    let x = f.log_c + log_phi + f.g;
    // s = cΦ/Ẑ = logistic(x); α = s·(φ/Φ)·√τ₋.
    let s = 1.0 / (1.0 + (-x).exp());
    let alpha = s * ratio * sq;
    let w = alpha * (alpha + cav.nu);
    Tilted {
        log_z: logaddexp(-f.g, f.log_c + log_phi),
        mean: cav.nu * v + v * alpha,
        var: v * (1.0 - v * w),
        alpha,
        w,
    }
}

/// The site that makes q's marginal match the tilted moments:
/// `K* = w/(1 − v₋w)`, `h* = (α + μ₋w)/(1 − v₋w)`.
pub fn site_update(cav: Natural, f: StepFactor) -> (Site, Tilted) {
    let t = tilted(cav, f);
    let v = 1.0 / cav.tau;
    let inv = 1.0 / (1.0 - v * t.w);
    let site = Site {
        k: t.w * inv,
        h: (t.alpha + cav.nu * v * t.w) * inv,
    };
    (site, t)
}

/// The site's term of log Z_EP: `log Ẑ + ½ log(τ/τ₋) − ν²/(2τ) + ν₋²/(2τ₋)`
/// with (τ, ν) = cavity + site, i.e. q's marginal.
pub fn log_c(log_z_hat: f64, cav: Natural, site: Site) -> f64 {
    let tau = cav.tau + site.k;
    let nu = cav.nu + site.h;
    log_z_hat - 0.5 * (-site.k / tau).ln_1p() - 0.5 * nu * nu / tau
        + 0.5 * cav.nu * cav.nu / cav.tau
}

/// Constants of a pass, splatted once.
#[derive(Clone, Copy)]
pub(crate) struct LaneConsts<V> {
    /// e^{−g}.
    pub emg: V,
    /// c = 1 − e^{−g}.
    pub c: V,
    pub eta: V,
    /// Power EP's α and 1/α (`StepFactor::power`).
    pub alpha: V,
    pub inv_alpha: V,
}

impl<V: Simd> LaneConsts<V> {
    /// e^{−g} and c of the powered factor f^α (αg).
    pub fn new(f: StepFactor, eta: f64) -> Self {
        let g = f.power * f.g;
        LaneConsts {
            emg: V::splat((-g).exp()),
            c: V::splat(-(-g).exp_m1()),
            eta: V::splat(eta),
            alpha: V::splat(f.power),
            inv_alpha: V::splat(1.0 / f.power),
        }
    }
}

/// The fused pair-site step of the kernels for a vector of pairs.
#[derive(Clone, Copy)]
pub(crate) struct LaneOut<V: Simd> {
    pub k: V,
    pub h: V,
    /// The sites' evidence terms (0 for degenerate sites; 0 when not `EVIDENCE`).
    pub log_c: V,
    /// Degenerate sites (σ² ≤ 1e-10 (u_i + u_j)): left unchanged.
    pub degenerate: V::M,
    /// Invalid cavities (τ₋ ≤ 0 or NaN): the state must be rejected.
    pub bad: V::M,
}

/// Largest g = γ/M for the kernels' linear-domain Ẑ (e^{−g} must stay a
/// normal number so that Ẑ ≥ e^{−g} > 0 never divides 0 by 0).
pub const MAX_G: f64 = 700.0;

/// The whole site step for a vector of pairs: cavity from q's marginal
/// `N(mu, sig2)` (`u_sum = u_i + u_j` for the degeneracy test), tilted
/// moments, new site, damping, evidence term (when `EVIDENCE`).
///
/// Linear domain, `Ẑ = e^{−g} + cΦ(z) ≥ e^{−g} > 0` (the same number as §4's
/// logaddexp for g ≤ `MAX_G`), `α = cφ(z)√τ₋/Ẑ`; in `D = 1 − Kσ² = τ₋σ²` and
/// `rs = 1/√(σ²D)` so that no division instruction is needed:
/// `√τ₋ = D·rs`, `v₋ = σ⁴rs²`, `z = (μ − hσ²)·rs`, `ν₋ = z√τ₋`, `μ₋ = zσ²rs`,
/// `log C = log Ẑ + ½ log(1/D) − ½ μ²/σ² + ½ z²` with `1/D = σ²rs²`, `1/σ² = D·rs²`.
/// Power EP (`LaneConsts::alpha` < 1): the same with the site's fraction αK,
/// αh in the cavity and f^α in Ẑ, the new site and log C divided by α
/// (`power_update`); α = 1 multiplies and divides by exactly 1.
#[inline(always)]
pub(crate) fn pair_lane<V: Simd, const EVIDENCE: bool>(
    mu: V,
    sig2: V,
    u_sum: V,
    k: V,
    h: V,
    cs: &LaneConsts<V>,
) -> LaneOut<V> {
    let one = V::splat(1.0);
    let degenerate = sig2.le(V::splat(1e-10) * u_sum);
    let (ka, ha) = (k * cs.alpha, h * cs.alpha);
    let d = (-ka).fma(sig2, one);
    let bad = V::mand(V::mnot(degenerate), V::mnot(d.gt(V::splat(0.0))));
    let rs = rsqrt(sig2 * d);
    let z = (-ha).fma(sig2, mu) * rs;
    let sqrt_tau_cav = d * rs;
    let (cdf, pdf) = cdf_pdf(z);
    let z_hat = cs.c.fma(cdf, cs.emg);
    let alpha = cs.c * pdf * sqrt_tau_cav * recip(z_hat);
    let nu_cav = z * sqrt_tau_cav;
    let s2rs = sig2 * rs;
    let mu_cav = z * s2rs;
    let w = alpha * (alpha + nu_cav);
    let inv = recip((-(s2rs * s2rs)).fma(w, one)) * cs.inv_alpha; // 1/(α(1 − v₋w))
    let k_star = w * inv;
    let h_star = mu_cav.fma(w, alpha) * inv;
    let log_c = if EVIDENCE {
        // (½ log(Ẑ²/D) − ½ μ²/σ² + ½ z²)/α.
        V::splat(0.5)
            * (log(z_hat * z_hat * sig2 * rs * rs) + (z * z - mu * mu * d * rs * rs))
            * cs.inv_alpha
    } else {
        V::splat(0.0)
    };
    LaneOut {
        k: V::select(degenerate, k, cs.eta.fma(k_star - k, k)),
        h: V::select(degenerate, h, cs.eta.fma(h_star - h, h)),
        log_c: V::select(degenerate, V::splat(0.0), log_c),
        degenerate,
        bad,
    }
}

#[cfg(test)]
mod scalar {
    //! The scalar forms the kernels and the spike-and-slab sites are tested against.
    use super::*;

    impl StepFactor {
        /// The factor the tilted distribution uses: f^α, i.e. αg.
        pub fn powered(&self) -> StepFactor {
            StepFactor::with_power(self.power * self.g, 1.0)
        }
    }

    impl Natural {
        pub fn mean(&self) -> f64 {
            self.nu / self.tau
        }
        pub fn var(&self) -> f64 {
            1.0 / self.tau
        }
    }

    /// Power EP's site update for a site whose marginal under q is `N(mu, sigma2)`
    /// (the slow, scalar form the kernels are tested against): the cavity
    /// `q / site^α`, the tilted `cavity · f^α`, the new site `(q̂ − cavity)/α`,
    /// and the site's term of log Z, `(1/α)·log C_α` (C_α as `log_c` for the
    /// fraction: `C^α ∫ cavity·siteᵅ = ∫ cavity·fᵅ`, Minka 2004). α = 1: EP's
    /// `site_update` and `log_c`.
    pub fn power_update(mu: f64, sigma2: f64, site: Site, f: StepFactor) -> (Site, f64) {
        let a = f.power;
        let frac = Site {
            k: a * site.k,
            h: a * site.h,
        };
        let cav = cavity(mu, sigma2, frac);
        let (new, t) = site_update(cav, f.powered());
        let full = Site {
            k: new.k / a,
            h: new.h / a,
        };
        (full, log_c(t.log_z, cav, frac) / a)
    }
}
#[cfg(test)]
pub use scalar::power_update;

#[cfg(test)]
#[allow(clippy::excessive_precision)]
mod tests {
    use super::*;

    /// Moments of N(μ₋, v₋)·f by direct integration of the two half-Gaussians
    /// (closed forms via erfc, independent of the EP formulas).
    fn tilted_direct(mean: f64, var: f64, g: f64) -> (f64, f64, f64) {
        let sd = var.sqrt();
        let z = mean / sd;
        let p_pos = 0.5 * statrs::function::erf::erfc(-z / std::f64::consts::SQRT_2); // P(t ≥ 0)
        let p_neg = 1.0 - p_pos;
        let phi = (-0.5 * z * z).exp() / (2.0 * std::f64::consts::PI).sqrt();
        // Truncated-normal moments: E[t; t≥0] = μ P + σφ, E[t²; t≥0] = (μ²+σ²)P + μσφ.
        let m1_pos = mean * p_pos + sd * phi;
        let m1_neg = mean * p_neg - sd * phi;
        let m2_pos = (mean * mean + var) * p_pos + mean * sd * phi;
        let m2_neg = (mean * mean + var) * p_neg - mean * sd * phi;
        let w_neg = (-g).exp();
        let z_hat = p_pos + w_neg * p_neg;
        let m1 = (m1_pos + w_neg * m1_neg) / z_hat;
        let m2 = (m2_pos + w_neg * m2_neg) / z_hat;
        (z_hat.ln(), m1, m2 - m1 * m1)
    }

    /// Moments against the closed forms (statrs' erfc is good to ~1e-11 here),
    /// log Ẑ against mpmath at 50 digits.
    #[test]
    fn tilted_moments_match_direct_integration() {
        for &(mean, var, g, log_z) in &[
            (0.3, 1.2, 0.7, -0.21988224361332807388),
            (-1.0, 0.5, 2.0, -1.5928717895596434263),
            (2.0, 0.1, 5.0, -1.2612583533983641146e-10),
            (-0.2, 3.0, 1e-6, -5.4596359842834050739e-7),
            (0.0, 1.0, 0.05, -0.024687532546659016618),
        ] {
            let cav = Natural {
                tau: 1.0 / var,
                nu: mean / var,
            };
            let t = tilted(cav, StepFactor::new(g));
            let (lz, m, v) = tilted_direct(mean, var, g);
            assert!(
                (t.log_z - log_z).abs() <= 1e-15 * log_z.abs().max(1.0),
                "log Z {} vs {log_z}",
                t.log_z
            );
            assert!((t.log_z - lz).abs() < 1e-10, "log Z {} vs {lz}", t.log_z);
            assert!((t.mean - m).abs() < 1e-10, "mean {} vs {m}", t.mean);
            assert!(
                (t.var - v).abs() < 1e-10 * v.max(1.0),
                "var {} vs {v}",
                t.var
            );
        }
    }

    /// The new site reproduces the tilted moments, and q's marginal after the
    /// update equals them (natural parameters add).
    #[test]
    fn site_update_matches_moments_and_signs() {
        let f = StepFactor::new(0.8);
        for &(mu, s2, k, h) in &[
            (0.4, 0.9, 0.1, 0.05),
            (-0.7, 0.6, -0.2, 0.1),
            (1.5, 2.0, 0.0, 0.0),
        ] {
            let cav = cavity(mu, s2, Site { k, h });
            let (site, t) = site_update(cav, f);
            let q = Natural {
                tau: cav.tau + site.k,
                nu: cav.nu + site.h,
            };
            assert!((q.mean() - t.mean).abs() < 1e-14);
            assert!((q.var() - t.var).abs() < 1e-14);
            // K* < 0 ⇔ tilted mean < 0 (§4).
            assert_eq!(site.k < 0.0, t.mean < 0.0);
            // The kernels' linear-domain lane computes the same thing.
            let lane = lane1(mu, s2, k, h, f, 1.0);
            assert!((lane.k.0 - site.k).abs() < 1e-14 && (lane.h.0 - site.h).abs() < 1e-14);
            assert!((lane.log_c.0 - log_c(t.log_z, cav, Site { k, h })).abs() < 1e-14);
            assert!(!lane.bad && !lane.degenerate);
        }
    }

    type P = crate::engine::numerics::simd::F64x1<false>;

    fn lane1(mu: f64, s2: f64, k: f64, h: f64, f: StepFactor, eta: f64) -> LaneOut<P> {
        let cs = LaneConsts::<P>::new(f, eta);
        let v = P::splat;
        pair_lane::<P, true>(v(mu), v(s2), v(1.0), v(k), v(h), &cs)
    }

    /// Power EP: the lane equals the scalar `power_update` (cavity of the
    /// fraction αK, αh; f^α; the new site and log C over α), and α = 1 is
    /// `site_update` and `log_c` to the bit.
    #[test]
    fn power_lane_matches_the_scalar_power_update() {
        for &(mu, s2, k, h, g) in &[
            (0.4, 0.9, 0.1, 0.05, 0.8),
            (-0.7, 0.6, -0.2, 0.1, 3.0),
            (1.5, 2.0, 0.0, 0.0, 0.01),
            (0.2, 0.5, 1.5, 0.3, 1.0), // τ₋ < 0 at α = 1, valid at α ≤ 0.5
        ] {
            for alpha in [0.25, 0.5, 0.9, 1.0] {
                let f = StepFactor::with_power(g, alpha);
                let cav = cavity(
                    mu,
                    s2,
                    Site {
                        k: alpha * k,
                        h: alpha * h,
                    },
                );
                let lane = lane1(mu, s2, k, h, f, 1.0);
                assert_eq!(lane.bad, cav.tau <= 0.0, "α = {alpha}");
                if cav.tau <= 0.0 {
                    continue;
                }
                let (site, lc) = power_update(mu, s2, Site { k, h }, f);
                let tol = 1e-13 * (1.0 + site.k.abs() + site.h.abs());
                assert!((lane.k.0 - site.k).abs() < tol, "α = {alpha}");
                assert!((lane.h.0 - site.h).abs() < tol, "α = {alpha}");
                assert!((lane.log_c.0 - lc).abs() < 1e-13 * (1.0 + lc.abs()));
                if alpha == 1.0 {
                    let cav = cavity(mu, s2, Site { k, h });
                    let (s1, t) = site_update(cav, StepFactor::new(g));
                    assert_eq!(
                        (site.k.to_bits(), site.h.to_bits()),
                        (s1.k.to_bits(), s1.h.to_bits())
                    );
                    assert_eq!(lc.to_bits(), log_c(t.log_z, cav, Site { k, h }).to_bits());
                }
            }
        }
    }

    #[test]
    fn zero_gamma_is_a_flat_site() {
        let lane = lane1(0.3, 0.5, 0.0, 0.0, StepFactor::new(0.0), 0.7);
        assert_eq!((lane.k.0, lane.h.0), (0.0, 0.0));
        assert!(lane.log_c.0.abs() < 1e-15);
    }

    #[test]
    fn degenerate_and_invalid_sites_are_flagged() {
        let f = StepFactor::new(0.5);
        let d = lane1(0.0, 1e-12, 0.2, 0.1, f, 0.7);
        assert!(d.degenerate && !d.bad && d.k.0 == 0.2 && d.h.0 == 0.1);
        let b = lane1(0.1, 2.0, 0.6, 0.0, f, 0.7); // τ₋ = 0.5 − 0.6 < 0
        assert!(b.bad);
    }
}
