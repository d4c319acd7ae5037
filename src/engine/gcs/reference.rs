//! Ellipses around a Gaussian reference (`Directions::Gaussian`): elliptical
//! slice sampling with respect to N(μ, S) instead of the prior (Nishihara,
//! Murray & Adams 2014; with an EP reference, Fagan, Bhandari & Cunningham
//! 2016). At d = 180 the posterior of the whitened w is a small cap of the
//! sphere times a χ_d radius: a uniform great circle crosses it along a short
//! chord, and shaped tangents pay a Metropolis–Hastings ratio with the power
//! (d − 2)/2. Here the whole w moves: with `e = w − μ` and `ν ~ N(0, S)`,
//! `w(φ) = μ + e cos φ + ν sin φ`, and a slice move on φ targets
//! `f(w) = N(w; 0, I) exp(−γR(w)) / N(w; μ, S)` (MAM10's move keeps
//! `N(μ, S)·f` invariant, i.e. the posterior, for any fixed μ, S). When the
//! reference is close to the posterior f is nearly flat and the ellipse's
//! first angle is usually taken: long moves in every direction. After each
//! move the radius is redrawn exactly (R depends on w's direction only, so
//! ‖w‖ given the direction is χ_d).
//!
//! μ and S are estimated from the warm-up's unit directions u (`adapt`),
//! exactly converted to w = r u with r ~ χ_d independent of u.

use nalgebra::{DMatrix, DVector};
use rand::RngExt;

use super::directions::ShapeSummary;
use crate::engine::numerics::fast_risk::RiskScratch;
use crate::engine::numerics::rng::Rng;

/// Least share of the diagonal mixed into the estimated covariance (more with
/// few draws per dimension).
const SHRINK_MIN: f64 = 0.05;

/// A Gaussian reference N(μ, S) in whitened coordinates.
#[derive(Debug, Clone)]
pub struct Reference {
    pub mean: DVector<f64>,
    /// Lower Cholesky factor L of S.
    chol: DMatrix<f64>,
    /// S⁻¹μ.
    pub prec_mean: DVector<f64>,
    pub summary: Option<ShapeSummary>,
}

/// E[χ_d].
pub fn chi_mean(d: usize) -> f64 {
    use statrs::function::gamma::ln_gamma;
    let h = 0.5 * d as f64;
    std::f64::consts::SQRT_2 * (ln_gamma(h + 0.5) - ln_gamma(h)).exp()
}

impl Reference {
    /// N(mean, cov) (None unless cov is positive definite).
    pub fn new(mean: DVector<f64>, cov: &DMatrix<f64>) -> Option<Reference> {
        let chol = cov.clone().cholesky()?;
        let prec_mean = chol.solve(&mean);
        Some(Reference {
            mean,
            chol: chol.l(),
            prec_mean,
            summary: None,
        })
    }

    pub fn d(&self) -> usize {
        self.mean.len()
    }

    /// The reference from unit directions (rows of d, the chains' window
    /// pooled): w = r u with r ~ χ_d independent of u gives E w = E[r]·E u and
    /// Cov w = d·E[uuᵀ] − E[r]²·E u E uᵀ exactly; then shrinkage towards the
    /// diagonal with λ = max(SHRINK_MIN, d/draws).
    pub fn estimate(directions: &[f64], d: usize, at_step: usize) -> Option<Reference> {
        let s = directions.len() / d;
        if s < 2 || d < 2 {
            return None;
        }
        let x = DMatrix::from_row_slice(s, d, &directions[..s * d]);
        let (mean, scatter) = crate::engine::numerics::linalg::row_scatter(&x);
        let mean = mean.transpose();
        let second = scatter / s as f64 + &mean * mean.transpose();
        let c = chi_mean(d);
        let cov = second * d as f64 - &mean * mean.transpose() * (c * c);
        let lambda = (d as f64 / s as f64).clamp(SHRINK_MIN, 1.0);
        let diag = DMatrix::from_diagonal(&cov.diagonal());
        let cov = cov * (1.0 - lambda) + diag * lambda;
        if !cov.iter().all(|v| v.is_finite()) {
            return None;
        }
        let eig = cov.clone().symmetric_eigenvalues();
        let span = eig.max() / eig.min();
        let mut r = Reference::new(mean * c, &cov)?;
        r.summary = Some(ShapeSummary {
            at_step,
            draws: s,
            shrinkage: lambda,
            tangent_span: None,
            span,
        });
        Some(r)
    }

    /// ν = Lz into `nu` and S⁻¹ν = L⁻ᵀz into `prec_nu`.
    pub fn draw(&self, z: &DVector<f64>, nu: &mut DVector<f64>, prec_nu: &mut DVector<f64>) {
        self.chol.mul_to(z, nu);
        prec_nu.copy_from(z);
        self.chol.tr_solve_lower_triangular_mut(prec_nu);
    }

    /// S⁻¹x.
    pub fn precision_times(&self, x: &DVector<f64>) -> DVector<f64> {
        let mut y = x.clone();
        self.chol.solve_lower_triangular_mut(&mut y);
        self.chol.tr_solve_lower_triangular_mut(&mut y);
        y
    }

    /// How far `other`'s covariance is from this one: the typical and the
    /// largest factor of a direction's variance (as `Shape::discrepancy`).
    pub fn discrepancy(&self, other: &Reference) -> (f64, f64) {
        let Some(m) = self.chol.solve_lower_triangular(&other.chol) else {
            return (f64::INFINITY, f64::INFINITY);
        };
        let logs: Vec<f64> = m.singular_values().iter().map(|s| 2.0 * s.ln()).collect();
        let rms = (logs.iter().map(|l| l * l).sum::<f64>() / logs.len() as f64).sqrt();
        let max = logs.iter().map(|l| l.abs()).fold(0.0, f64::max);
        (rms.exp(), max.exp())
    }
}

/// The smooth part of log f on the ellipse, `−½‖w(φ)‖² + ½(w(φ) − μ)ᵀS⁻¹(w(φ) − μ)`,
/// from dot products of μ, e and ν.
#[derive(Debug, Clone, Copy)]
pub struct Quadratic {
    pub mu_mu: f64,
    pub mu_e: f64,
    pub mu_nu: f64,
    pub e_e: f64,
    pub e_nu: f64,
    pub nu_nu: f64,
    /// eᵀS⁻¹e, νᵀS⁻¹e, νᵀS⁻¹ν.
    pub pe_e: f64,
    pub pe_nu: f64,
    pub pnu_nu: f64,
}

impl Quadratic {
    pub fn at(&self, phi: f64) -> f64 {
        let (s, c) = phi.sin_cos();
        let norm = self.mu_mu
            + 2.0 * (c * self.mu_e + s * self.mu_nu)
            + c * c * self.e_e
            + 2.0 * c * s * self.e_nu
            + s * s * self.nu_nu;
        let quad = c * c * self.pe_e + 2.0 * c * s * self.pe_nu + s * s * self.pnu_nu;
        0.5 * (quad - norm)
    }
}

/// Scores on the ellipse: `m + a cos φ + b sin φ` for each side.
#[derive(Debug, Clone, Copy)]
pub struct Ellipse<'a> {
    pub pos: [&'a [f64]; 3],
    pub neg: [&'a [f64]; 3],
}

/// The twice-risk (`2·discordant + ties`) of scores on an ellipse.
#[derive(Debug, Clone)]
pub struct EllipseRisk {
    risk: RiskScratch,
    pos_s: Vec<f64>,
    neg_s: Vec<f64>,
}

impl EllipseRisk {
    pub fn new(n_pos: usize, n_neg: usize) -> EllipseRisk {
        EllipseRisk {
            risk: RiskScratch::new(n_pos, n_neg),
            pos_s: vec![0.0; n_pos],
            neg_s: vec![0.0; n_neg],
        }
    }

    pub fn twice_at(&mut self, el: &Ellipse, phi: f64) -> u64 {
        let (sn, cs) = phi.sin_cos();
        let fill = |out: &mut [f64], [m, a, b]: [&[f64]; 3]| {
            for (((o, &m), &a), &b) in out.iter_mut().zip(m).zip(a).zip(b) {
                *o = m + a * cs + b * sn;
            }
        };
        fill(&mut self.pos_s, el.pos);
        fill(&mut self.neg_s, el.neg);
        let pairs = (self.pos_s.len() * self.neg_s.len()) as u64;
        2 * pairs - self.risk.twice_concordant(&self.pos_s, &self.neg_s)
    }
}

/// One slice move on the ellipse from φ = 0 (twice-risk `twice0`): the
/// shrinking bracket of MAM10 on `log f = −g·twice + q(φ)`. Returns φ, its
/// twice-risk and the risk evaluations.
pub fn slice_move(
    risk: &mut EllipseRisk,
    el: &Ellipse,
    q: &Quadratic,
    g: f64,
    twice0: u64,
    rng: &mut Rng,
) -> (f64, u64, u32) {
    let log_f = |twice: u64, phi: f64| -g * twice as f64 + q.at(phi);
    let u: f64 = rng.random();
    let level = log_f(twice0, 0.0) + (1.0 - u).ln();
    let mut phi = rng.random::<f64>() * 2.0 * std::f64::consts::PI;
    let (mut lo, mut hi) = (phi - 2.0 * std::f64::consts::PI, phi);
    let mut evals = 0;
    loop {
        evals += 1;
        let twice = risk.twice_at(el, phi);
        if log_f(twice, phi) >= level {
            return (phi, twice, evals);
        }
        if phi < 0.0 {
            lo = phi;
        } else {
            hi = phi;
        }
        if hi - lo < 1e-12 {
            return (0.0, twice0, evals);
        }
        phi = lo + rng.random::<f64>() * (hi - lo);
    }
}
