//! The d prior sites of spike-and-slab EP (ALGORITHMS.md §5):
//! `q_k(θ_k, z_k) = Bern(z_k; p_k) exp(−½ u_k θ_k² + v_k θ_k)`, each matched to
//! the tilted distribution `cavity(θ_k) · (p N(θ_k; 0, v1) + (1 − p) N(θ_k; 0, v0))`,
//! a mixture of two Gaussians.
//!
//! Everything here is in EP's coordinates (θ divided by one common scale), so
//! the variances of `MixturePrior` are the prior's divided by that scale².

use super::sweep::ThetaMoments;
use crate::engine::ep::posterior::PriorTerms;
use crate::engine::ep::site::{self, Natural, Site};
use crate::engine::numerics::normal::{LN_2PI, logaddexp};

/// `p N(0, slab) + (1 − p) N(0, spike)` per coordinate.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MixturePrior {
    pub spike: f64,
    pub slab: f64,
    pub incl: f64,
}

impl MixturePrior {
    /// The prior's variance (the initial site precision is its inverse).
    pub fn var(&self) -> f64 {
        self.incl * self.slab + (1.0 - self.incl) * self.spike
    }
}

/// Moments of one tilted mixture.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MixtureTilted {
    /// log ∫ exp(−½ τ₋ θ² + ν₋ θ) prior(θ) dθ: the tilted mass under the
    /// *unnormalised* cavity, defined whenever the tilted distribution is
    /// (the cavity itself may be improper, `cavity_ok`).
    pub log_mass: f64,
    pub mean: f64,
    pub var: f64,
    /// P(z_k = 1): the slab's posterior weight.
    pub w1: f64,
}

#[cfg(test)]
impl MixtureTilted {
    /// log Ẑ_k under the normalised cavity (proper cavities only: τ₋ > 0).
    pub fn log_z(&self, cav: Natural) -> f64 {
        self.log_mass - 0.5 * (LN_2PI - cav.tau.ln()) - 0.5 * cav.nu * cav.nu / cav.tau
    }
}

impl MixtureTilted {
    /// The site's log C_k (§4's formula) written without the cavity's
    /// normaliser, so that it holds for an improper cavity too:
    /// `log C = log ∫ cavity·prior − log ∫ exp(−½ τ θ² + ν θ)`, (τ, ν) = q's marginal.
    pub fn log_c(&self, cav: Natural, site: Site) -> f64 {
        let (tau, nu) = (cav.tau + site.k, cav.nu + site.h);
        self.log_mass - 0.5 * (LN_2PI - tau.ln()) - 0.5 * nu * nu / tau
    }
}

/// Whether the tilted distribution `cavity · prior` of a cavity is proper:
/// `τ₋ + 1/v1 > 0` (the slab is the wider component). EP's fixed-point
/// equations match q's marginal to the tilted moments; they need the tilted
/// distribution, not the cavity, to be proper. A negative cavity precision
/// (the rest of q gives θ_k negative information, e.g. on the feature that
/// carries the score's scale, whose pair sites are partly negative) is
/// therefore not a failure; requiring τ₋ > 0 stopped EP on large data at
/// every γ ≥ n.
pub fn cavity_ok(cav: Natural, prior: &MixturePrior) -> bool {
    cav.tau + 1.0 / prior.slab > 0.0 && cav.tau.is_finite() && cav.nu.is_finite()
}

/// Tilted moments for a cavity with `cavity_ok`, in natural parameters:
/// component c has precision `λ_c = τ₋ + 1/v_c`, mean `ν₋/λ_c`, variance
/// `1/λ_c` and mass `p_c (1 + v_c τ₋)^(−½) exp(ν₋²/(2 λ_c))`. The components'
/// log-odds use `1/λ0 − 1/λ1 = (1/v0 − 1/v1)/(λ0 λ1)` (no cancellation of the
/// large ν₋²/λ terms). For τ₋ > 0 these are the moments of §5's formulas.
pub fn tilted(cav: Natural, prior: &MixturePrior) -> MixtureTilted {
    let nu = cav.nu;
    let l1 = cav.tau + 1.0 / prior.slab;
    let mass1 = prior.incl.ln() - 0.5 * (prior.slab * cav.tau).ln_1p() + 0.5 * nu * nu / l1;
    let (mu1, s1) = (nu / l1, 1.0 / l1);
    if prior.incl >= 1.0 {
        return MixtureTilted {
            log_mass: mass1,
            mean: mu1,
            var: s1,
            w1: 1.0,
        };
    }
    let l0 = cav.tau + 1.0 / prior.spike;
    let (mu0, s0) = (nu / l0, 1.0 / l0);
    let gap = (1.0 / prior.spike - 1.0 / prior.slab) / (l0 * l1);
    // log(w1/w0)
    let odds = (prior.incl.ln() - (-prior.incl).ln_1p())
        - 0.5 * ((prior.slab * cav.tau).ln_1p() - (prior.spike * cav.tau).ln_1p())
        + 0.5 * nu * nu * gap;
    let log_mass = mass1 + logaddexp(0.0, -odds);
    let w1 = 1.0 / (1.0 + (-odds).exp());
    let w0 = 1.0 / (1.0 + odds.exp());
    let dm = nu * gap;
    MixtureTilted {
        log_mass,
        mean: w1 * mu1 + w0 * mu0,
        var: w1 * s1 + w0 * s0 + w1 * w0 * dm * dm,
        w1,
    }
}

/// The site that matches the tilted moments `t` exactly: tilted ÷ cavity,
/// whatever the sign of its precision (`site_update` fixes a non-positive one).
pub fn matched_site(cav: Natural, t: &MixtureTilted) -> Site {
    Site {
        k: 1.0 / t.var - cav.tau,
        h: t.mean / t.var - cav.nu,
    }
}

/// The new site `u* = 1/v̂ − τ₋`, `v* = μ̂/v̂ − ν₋`; when `u* ≤ 0` it is replaced
/// by `1/(100·slab)` (relative to the slab: scale-free) with v* chosen so that
/// q's marginal keeps the tilted mean. Returns the site and whether it was fixed.
pub fn site_update(cav: Natural, t: &MixtureTilted, prior: &MixturePrior) -> (Site, bool) {
    let matched = matched_site(cav, t);
    if matched.k > 0.0 {
        return (matched, false);
    }
    let u = 1.0 / (100.0 * prior.slab);
    let (s, m) = (1.0 / cav.tau, cav.nu / cav.tau);
    let site = Site {
        k: u,
        h: u * (m + (t.mean - m) * (1.0 + 1.0 / (u * s))),
    };
    (site, true)
}

/// The prior sites' state.
#[derive(Debug, Clone, PartialEq)]
pub struct PriorSites {
    pub u: Vec<f64>,
    pub v: Vec<f64>,
    /// P(z_k = 1) of the last update (damping p_k has no effect on q).
    pub p: Vec<f64>,
    /// Power EP's α (1: EP; `powered`).
    pub alpha: f64,
}

/// Power EP for a prior site in the joint (θ_k, z_k) (Minka 2004): the
/// factor `p_z N(θ; 0, v_z)` to the power α is again Gaussian in θ, with
/// variance `v_z/α` and mass `p_z^α (2π v_z)^((1−α)/2) α^(−½)`, and the
/// cavity keeps `Bern(z; p_k)^(1−α)` of the site's z part. So the tilted
/// distribution is `tilted`'s mixture for the prior `(v0/α, v1/α, p')` with
/// `logit p' = (1 − α) logit p_k + α logit p + ((1−α)/2) log(v1/v0)`, its
/// log mass raised by `log(A1 + A0)` (A_z: the components' masses). Returns
/// that prior and the raise. α = 1: the prior itself and 0.
pub fn powered(prior: &MixturePrior, p_k: f64, alpha: f64) -> (MixturePrior, f64) {
    if alpha == 1.0 {
        return (*prior, 0.0);
    }
    // (A p_k of exactly 0 or 1 would give log 0; the clamp is far below any
    // inclusion the record shows.)
    let pk = p_k.clamp(1e-250, 1.0 - 1e-16);
    let log_a1 = (1.0 - alpha) * pk.ln()
        + alpha * prior.incl.ln()
        + 0.5 * (1.0 - alpha) * (LN_2PI + prior.slab.ln())
        - 0.5 * alpha.ln();
    let (incl, raise) = if prior.incl >= 1.0 {
        (1.0, log_a1)
    } else {
        let odds = (1.0 - alpha) * (pk.ln() - (-pk).ln_1p())
            + alpha * (prior.incl.ln() - (-prior.incl).ln_1p())
            + 0.5 * (1.0 - alpha) * (prior.slab / prior.spike).ln();
        (1.0 / (1.0 + (-odds).exp()), log_a1 + logaddexp(0.0, -odds))
    };
    let p = MixturePrior {
        spike: prior.spike / alpha,
        slab: prior.slab / alpha,
        incl,
    };
    (p, raise)
}

/// What one parallel update of the prior sites did.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct PriorUpdate {
    /// Sites whose u* ≤ 0 was replaced (the negative-site fix).
    pub fixes: usize,
}

/// The prior sites evaluated at the current q (no update): evidence and inclusion.
#[derive(Debug, Clone, PartialEq)]
pub struct PriorCheck {
    /// Σ_k log C_k (None when a cavity is invalid).
    pub sum_log_c: Option<f64>,
    /// P(z_k = 1) under the current cavities.
    pub inclusion: Vec<f64>,
}

impl PriorSites {
    /// `u_k = 1/(p v1 + (1 − p) v0)`, `v_k = 0`, `p_k = p`.
    pub fn init(d: usize, prior: &MixturePrior) -> PriorSites {
        PriorSites {
            u: vec![1.0 / prior.var(); d],
            v: vec![0.0; d],
            p: vec![prior.incl; d],
            alpha: 1.0,
        }
    }

    /// Site k's share in its cavity: all of it (EP), α of it (power EP).
    fn share(&self, k: usize) -> Site {
        Site {
            k: self.alpha * self.u[k],
            h: self.alpha * self.v[k],
        }
    }

    /// The tilted distribution of site k from its cavity (`powered`), its
    /// log mass including power EP's raise.
    pub fn tilted_of(&self, k: usize, cav: Natural, prior: &MixturePrior) -> MixtureTilted {
        let (pp, raise) = powered(prior, self.p[k], self.alpha);
        let mut t = tilted(cav, &pp);
        t.log_mass += raise;
        t
    }

    /// u, v ← base + f·(self − base): a step from `base` scaled by f (the
    /// controller's secant step and its undo); p stays the last update's.
    pub fn scale_from(&mut self, base: &PriorSites, f: f64) {
        for (x, b) in self.u.iter_mut().zip(&base.u) {
            *x = b + f * (*x - b);
        }
        for (x, b) in self.v.iter_mut().zip(&base.v) {
            *x = b + f * (*x - b);
        }
    }

    pub fn terms(&self) -> PriorTerms {
        PriorTerms {
            prec: self.u.clone(),
            lin: self.v.clone(),
        }
    }

    /// Cavity of site k under q; None when its tilted distribution is
    /// improper or not finite (`cavity_ok`; the cavity itself may be improper).
    pub fn cavity(&self, q: &ThetaMoments, k: usize, prior: &MixturePrior) -> Option<Natural> {
        let vkk = q.var[k];
        let cav = site::cavity(q.mean[k], vkk, self.share(k));
        // Power EP: the tilted's slab is v1/α.
        let ok = if self.alpha == 1.0 {
            cavity_ok(cav, prior)
        } else {
            cavity_ok(cav, &powered(prior, self.p[k], self.alpha).0)
        };
        ok.then_some(cav)
    }

    /// Whether every site's cavity under q is valid.
    pub fn cavities_valid(&self, q: &ThetaMoments, prior: &MixturePrior) -> bool {
        (0..self.u.len()).all(|k| self.cavity(q, k, prior).is_some())
    }

    /// Parallel damped update of every site from q, with step `eta(k)` for
    /// site k; None when a cavity is invalid. When not empty, `fixed[k]`
    /// records whether site k's update needed the negative-site fix and `dir[k]`
    /// the sign of its proposed change of v_k (to spot oscillating sites).
    pub fn update_each(
        &mut self,
        q: &ThetaMoments,
        prior: &MixturePrior,
        eta: impl Fn(usize) -> f64,
        (fixed, dir): (&mut [bool], &mut [f64]),
    ) -> Option<PriorUpdate> {
        let mut out = PriorUpdate::default();
        let cavs: Option<Vec<Natural>> = (0..self.u.len())
            .map(|k| self.cavity(q, k, prior))
            .collect();
        let a = self.alpha;
        for (k, cav) in cavs?.into_iter().enumerate() {
            let t = self.tilted_of(k, cav, prior);
            let (mut new, was_fixed) = site_update(cav, &t, &powered(prior, self.p[k], a).0);
            let mut incl = t.w1;
            if a != 1.0 {
                // Power EP: the new site is the matched fraction over α, and
                // the z part's logit `(logit w1 − (1 − α) logit p_k)/α`.
                new = Site {
                    k: new.k / a,
                    h: new.h / a,
                };
                let logit = |p: f64| {
                    let p = p.clamp(1e-250, 1.0 - 1e-16);
                    p.ln() - (-p).ln_1p()
                };
                let l = (logit(t.w1) - (1.0 - a) * logit(self.p[k])) / a;
                incl = 1.0 / (1.0 + (-l).exp());
            }
            out.fixes += was_fixed as usize;
            if let Some(f) = fixed.get_mut(k) {
                *f = was_fixed;
            }
            if let Some(d) = dir.get_mut(k) {
                *d = (new.h - self.v[k]).signum();
            }
            let eta = eta(k);
            self.u[k] += eta * (new.k - self.u[k]);
            self.v[k] += eta * (new.h - self.v[k]);
            self.p[k] = incl;
        }
        Some(out)
    }

    /// Evidence terms and inclusion probabilities of the current state under q.
    pub fn check(&self, q: &ThetaMoments, prior: &MixturePrior) -> PriorCheck {
        let mut sum = Some(0.0);
        let mut inclusion = self.p.clone();
        for (k, incl) in inclusion.iter_mut().enumerate() {
            match self.cavity(q, k, prior) {
                Some(cav) => {
                    // Power EP: log C_k = (1/α) log C of the site's share.
                    let t = self.tilted_of(k, cav, prior);
                    *incl = t.w1;
                    sum = sum.map(|s| s + t.log_c(cav, self.share(k)) / self.alpha);
                }
                None => sum = None,
            }
        }
        PriorCheck {
            sum_log_c: sum,
            inclusion,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn n(x: f64, v: f64) -> f64 {
        (-(x * x) / (2.0 * v)).exp() / (2.0 * std::f64::consts::PI * v).sqrt()
    }

    /// log Z, mean, variance and the slab's share of `N(θ; m, s)·(slab(θ) +
    /// spike(θ))` by the trapezoid rule on a fine grid.
    fn quadrature_of(
        m: f64,
        s: f64,
        slab: impl Fn(f64) -> f64,
        spike: impl Fn(f64) -> f64,
    ) -> (f64, f64, f64, f64) {
        let (lo, hi, steps) = (m - 12.0 * s.sqrt(), m + 12.0 * s.sqrt(), 400_000);
        let h = (hi - lo) / steps as f64;
        let (mut z, mut m1, mut m2, mut z1) = (0.0, 0.0, 0.0, 0.0);
        for i in 0..=steps {
            let x = lo + i as f64 * h;
            let w = if i == 0 || i == steps { 0.5 * h } else { h };
            let sl = slab(x);
            let f = n(x - m, s) * (sl + spike(x));
            z += w * f;
            m1 += w * f * x;
            m2 += w * f * x * x;
            z1 += w * n(x - m, s) * sl;
        }
        let mean = m1 / z;
        (z.ln(), mean, m2 / z - mean * mean, z1 / z)
    }

    /// Moments of N(m, s)·prior by the trapezoid rule on a fine grid.
    fn quadrature(m: f64, s: f64, prior: &MixturePrior) -> (f64, f64, f64, f64) {
        quadrature_of(
            m,
            s,
            |x| prior.incl * n(x, prior.slab),
            |x| (1.0 - prior.incl) * n(x, prior.spike),
        )
    }

    /// Power EP's tilted distribution in the joint (θ, z) against the
    /// trapezoid rule on `N(θ; m, s) Σ_z Bern(z; p_k)^(1−α) (p_z N(θ; 0, v_z))^α`
    /// (f^α evaluated directly, independent of `powered`'s algebra).
    #[test]
    fn powered_tilted_matches_quadrature() {
        for &(m, s, spike, slab, incl) in &[
            (0.3, 0.5, 0.01, 1.0, 0.2),
            (-1.5, 0.2, 1e-3, 2.0, 0.05),
            (0.05, 0.01, 1e-4, 1.0, 0.5),
        ] {
            for (alpha, pk) in [(0.5, 0.3), (0.25, 0.01), (0.8, 0.9)] {
                let prior = MixturePrior { spike, slab, incl };
                let mut sites = PriorSites::init(1, &prior);
                (sites.alpha, sites.p[0]) = (alpha, pk);
                let cav = Natural {
                    tau: 1.0 / s,
                    nu: m / s,
                };
                let t = sites.tilted_of(0, cav, &prior);
                let (lz, mean, var, w1) = quadrature_of(
                    m,
                    s,
                    |x| pk.powf(1.0 - alpha) * (incl * n(x, slab)).powf(alpha),
                    |x| (1.0 - pk).powf(1.0 - alpha) * ((1.0 - incl) * n(x, spike)).powf(alpha),
                );
                let what = format!("m {m}, s {s}, α {alpha}, p_k {pk}");
                assert!(
                    (t.log_z(cav) - lz).abs() < 1e-9,
                    "log Z {} vs {lz}: {what}",
                    t.log_z(cav)
                );
                assert!(
                    (t.mean - mean).abs() < 1e-9,
                    "mean {} vs {mean}: {what}",
                    t.mean
                );
                assert!(
                    (t.var - var).abs() < 1e-9 * var.max(1e-3),
                    "var {} vs {var}: {what}",
                    t.var
                );
                assert!((t.w1 - w1).abs() < 1e-9, "w1 {} vs {w1}: {what}", t.w1);
            }
        }
    }

    #[test]
    fn tilted_mixture_matches_quadrature() {
        for &(m, s, spike, slab, incl) in &[
            (0.3, 0.5, 0.01, 1.0, 0.2),
            (-1.5, 0.2, 1e-3, 2.0, 0.05),
            (0.05, 0.01, 1e-4, 1.0, 0.5),
            (2.0, 1.5, 0.1, 1.0, 0.9),
        ] {
            let prior = MixturePrior { spike, slab, incl };
            let cav = Natural {
                tau: 1.0 / s,
                nu: m / s,
            };
            let t = tilted(cav, &prior);
            let (lz, mean, var, w1) = quadrature(m, s, &prior);
            assert!(
                (t.log_z(cav) - lz).abs() < 1e-9,
                "log Z {} vs {lz}",
                t.log_z(cav)
            );
            assert!((t.mean - mean).abs() < 1e-9, "mean {} vs {mean}", t.mean);
            assert!(
                (t.var - var).abs() < 1e-9 * var.max(1e-3),
                "var {} vs {var}",
                t.var
            );
            assert!((t.w1 - w1).abs() < 1e-9, "w1 {} vs {w1}", t.w1);
        }
    }

    /// An improper cavity (τ₋ < 0, the rest of q pushing θ_k outwards) whose
    /// tilted distribution is proper (τ₋ + 1/v1 > 0): the natural-parameter
    /// moments and log mass against the trapezoid rule on the unnormalised
    /// integrand exp(−½ τ₋ θ² + ν₋ θ)·prior(θ).
    #[test]
    fn improper_cavity_with_proper_tilted_matches_quadrature() {
        // cavity × N(x; 0, v) in one exponent (each factor alone overflows).
        let part = |x: f64, tau: f64, nu: f64, v: f64| {
            (-0.5 * tau * x * x + nu * x - x * x / (2.0 * v) - 0.5 * (LN_2PI + v.ln())).exp()
        };
        for &(tau, nu, spike, slab, incl) in &[
            (-0.6, -4.0, 1e-4, 1.0, 0.07),
            (-0.3, 0.5, 1e-2, 2.0, 0.3),
            (-3e-4, -1.0, 1e-3, 1.0, 0.5),
            (-0.9, 2.0, 1e-4, 1.0, 1.0),
        ] {
            let prior = MixturePrior { spike, slab, incl };
            let cav = Natural { tau, nu };
            assert!(cavity_ok(cav, &prior));
            let t = tilted(cav, &prior);
            // ±20 sds of the slab component; the step (≤ 2e-4) resolves the
            // narrowest spike (sd 0.01) finely.
            let sd = (1.0 / (tau + 1.0 / slab)).sqrt();
            let centre = nu / (tau + 1.0 / slab);
            let (lo, hi, steps) = (centre - 20.0 * sd, centre + 20.0 * sd, 800_000);
            let h = (hi - lo) / steps as f64;
            let (mut z, mut m1, mut m2, mut z1) = (0.0, 0.0, 0.0, 0.0);
            for i in 0..=steps {
                let x = lo + i as f64 * h;
                let w = if i == 0 || i == steps { 0.5 * h } else { h };
                let slab_part = incl * part(x, tau, nu, slab);
                let f = slab_part
                    + if incl < 1.0 {
                        (1.0 - incl) * part(x, tau, nu, spike)
                    } else {
                        0.0
                    };
                z += w * f;
                m1 += w * f * x;
                m2 += w * f * x * x;
                z1 += w * slab_part;
            }
            let mean = m1 / z;
            let var = m2 / z - mean * mean;
            assert!(
                (t.log_mass - z.ln()).abs() < 1e-8,
                "log mass {} vs {}",
                t.log_mass,
                z.ln()
            );
            assert!(
                (t.mean - mean).abs() < 1e-8 * sd,
                "mean {} vs {mean}",
                t.mean
            );
            assert!((t.var - var).abs() < 1e-7 * var, "var {} vs {var}", t.var);
            assert!((t.w1 - z1 / z).abs() < 1e-8, "w1 {} vs {}", t.w1, z1 / z);
            // The new site makes q's marginal proper with the tilted moments.
            let (site, fixed) = site_update(cav, &t, &prior);
            assert!(!fixed && site.k > 0.0);
            assert!(((cav.nu + site.h) / (cav.tau + site.k) - t.mean).abs() < 1e-10 * sd);
        }
        // τ₋ + 1/v1 ≤ 0: the tilted distribution is improper.
        let prior = MixturePrior {
            spike: 1e-4,
            slab: 1.0,
            incl: 0.1,
        };
        assert!(!cavity_ok(Natural { tau: -1.0, nu: 0.0 }, &prior));
    }

    #[test]
    fn new_site_matches_the_tilted_moments_or_keeps_the_mean_when_fixed() {
        let prior = MixturePrior {
            spike: 1e-4,
            slab: 1.0,
            incl: 0.1,
        };
        let mut fixed_seen = false;
        for &(m, s) in &[
            (0.3, 0.05),
            (0.02, 0.01),
            (1.0, 0.5),
            (0.15, 0.02),
            (0.2, 0.004),
        ] {
            let cav = Natural {
                tau: 1.0 / s,
                nu: m / s,
            };
            let t = tilted(cav, &prior);
            let (site, fixed) = site_update(cav, &t, &prior);
            let q = Natural {
                tau: cav.tau + site.k,
                nu: cav.nu + site.h,
            };
            assert!((q.mean() - t.mean).abs() < 1e-12 * t.mean.abs().max(1e-3));
            if fixed {
                fixed_seen = true;
                assert_eq!(site.k, 0.01);
                assert!(1.0 / t.var - cav.tau <= 0.0);
            } else {
                assert!((q.var() - t.var).abs() < 1e-12 * t.var);
            }
        }
        assert!(fixed_seen, "no case exercised the negative-site fix");
    }

    #[test]
    fn full_inclusion_is_the_gaussian_site() {
        let prior = MixturePrior {
            spike: 0.01,
            slab: 2.0,
            incl: 1.0,
        };
        let cav = Natural { tau: 3.0, nu: 0.7 };
        let t = tilted(cav, &prior);
        let (site, fixed) = site_update(cav, &t, &prior);
        assert!(!fixed && t.w1 == 1.0);
        assert!((site.k - 0.5).abs() < 1e-14 && site.h.abs() < 1e-14);
    }
}
