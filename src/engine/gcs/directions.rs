//! Tangent directions shaped by a covariance (ALGORITHMS.md §10, "adapted
//! directions"). A uniform great circle crosses a small, elongated posterior
//! cap along a short chord; drawing the circle's tangent at u as
//! `v = P_u z/‖P_u z‖`, `z ~ N(0, Σ)` (P_u the projection on the tangent space)
//! follows the cap's shape instead. v is angular central Gaussian (ACG) on the
//! tangent sphere with matrix `B_u = Eᵀ Σ E` (E an orthonormal basis of the
//! tangent space), whose density against the uniform measure is
//! `|B_u|^{-1/2} (vᵀ B_u⁻¹ v)^{-(d−1)/2}`; ±v give the same circle C.
//!
//! The point on C is drawn exactly from π restricted to C, as with uniform
//! circles, so `π(u) q(C|u) π_C(u')` is symmetric up to `q(C|u)`: accepting
//! with `min(1, q(C|u')/q(C|u))` gives detailed balance. With `Λ = Σ⁻¹`,
//! `|B_u| = |Σ| uᵀΛu` and `vᵀB_u⁻¹v = vᵀΛv − (vᵀΛu)²/uᵀΛu`, so
//! `log q(C|u) = ((d−2)/2) log uᵀΛu − ((d−1)/2) log det G + const`, where
//! `G = [u v]ᵀ Λ [u v]` depends on the plane only. The ratio is therefore
//! `(u'ᵀΛu' / uᵀΛu)^{(d−2)/2}`: one quadratic form at each end. Without the
//! correction the chain would sample `π(u)·(uᵀΛu)^{-(d−2)/2}` instead
//! (a test shows that bias).
//!
//! Σ comes from the chains' warm-up directions, pooled, and is fixed once the
//! warm-up ends, so the kept draws come from one time-homogeneous chain.

use nalgebra::{DMatrix, DVector};
use serde::Serialize;

/// Share of the isotropic matrix mixed into the covariance at the least
/// (more when there are few draws per dimension): every tangent direction keeps
/// a positive density and the condition number stays below ~1/SHRINK_MIN.
const SHRINK_MIN: f64 = 0.05;

/// How a shaped proposal was made (for the record).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct ShapeSummary {
    /// Step of each chain at which it was estimated and the pooled draws used.
    pub at_step: usize,
    pub draws: usize,
    /// λ in `(1 − λ) C + λ (tr C/(d − 1)) I`.
    pub shrinkage: f64,
    /// Largest over smallest eigenvalue of C on the tangent space of the mean
    /// direction, before shrinkage: how elongated the cap is (None with fewer
    /// draws than dimensions: C is singular there).
    pub tangent_span: Option<f64>,
    /// Largest over smallest eigenvalue of Σ (what the proposal uses).
    pub span: f64,
}

/// A fixed covariance of the tangent directions: `z = L ε` with `L Lᵀ = Σ`,
/// and `Λ = Σ⁻¹` for the acceptance ratio.
#[derive(Debug, Clone)]
pub struct Shape {
    chol: DMatrix<f64>,
    prec: DMatrix<f64>,
    /// The Metropolis–Hastings correction; off only in the test showing the
    /// uncorrected kernel is biased.
    pub(crate) correct: bool,
    pub summary: Option<ShapeSummary>,
}

impl Shape {
    /// A given positive-definite Σ (None if it is not).
    pub fn new(sigma: &DMatrix<f64>) -> Option<Shape> {
        let chol = sigma.clone().cholesky()?;
        let prec = chol.inverse();
        Some(Shape {
            chol: chol.l(),
            prec,
            correct: true,
            summary: None,
        })
    }

    pub fn d(&self) -> usize {
        self.chol.nrows()
    }

    /// Σ estimated from unit directions (rows of d, every chain's window
    /// pooled). C is their covariance about the pooled mean m, projected on the
    /// tangent space of m: unit vectors in a cap hardly vary along m, and a tiny
    /// variance there would make uᵀΛu — hence the acceptance ratio, a power
    /// (d−2)/2 of its change — swing across the cap; m gets the mean tangent
    /// variance `level = tr C/(d − 1)` instead (an isotropic cap then gives
    /// exactly the uniform directions, every move accepted). Then shrinkage
    /// towards `level·I` with λ = max(SHRINK_MIN, d/draws): with fewer draws
    /// than dimensions C is mostly noise.
    pub fn estimate(directions: &[f64], d: usize, at_step: usize) -> Option<Shape> {
        let s = directions.len() / d;
        if s < 2 || d < 2 {
            return None;
        }
        let x = DMatrix::from_row_slice(s, d, &directions[..s * d]);
        let (mean, scatter) = crate::engine::numerics::linalg::row_scatter(&x);
        let cov = scatter / (s - 1) as f64;
        let m = mean.transpose().normalize();
        if !m.iter().all(|x| x.is_finite()) {
            return None;
        }
        let p = DMatrix::identity(d, d) - &m * m.transpose();
        let tangent = &p * &cov * &p;
        let level = tangent.trace() / (d - 1) as f64;
        if !(level.is_finite() && level > 0.0) {
            return None;
        }
        let lambda = (d as f64 / s as f64).clamp(SHRINK_MIN, 1.0);
        let sigma = (&tangent + &m * m.transpose() * level) * (1.0 - lambda)
            + DMatrix::identity(d, d) * (lambda * level);
        let tangent_span = (s > d).then(|| tangent_span(&tangent));
        let eig = sigma.clone().symmetric_eigenvalues();
        let span = eig.max() / eig.min();
        let mut shape = Shape::new(&sigma)?;
        shape.summary = Some(ShapeSummary {
            at_step,
            draws: s,
            shrinkage: lambda,
            tangent_span,
            span,
        });
        Some(shape)
    }

    /// Fill `v` with a tangent direction at unit `u` (`eps` holds d standard
    /// normals) and `prec_v` with Λv; false if the draw was (numerically) along
    /// u — draw again.
    pub fn direction(
        &self,
        u: &DVector<f64>,
        eps: &DVector<f64>,
        v: &mut DVector<f64>,
        prec_v: &mut DVector<f64>,
    ) -> bool {
        self.chol.mul_to(eps, v);
        let along = v.dot(u);
        v.axpy(-along, u, 1.0);
        let norm = v.norm();
        if norm.is_nan() || norm <= 1e-12 * eps.norm() {
            return false;
        }
        *v /= norm;
        self.prec.mul_to(v, prec_v);
        true
    }

    /// How far `other`'s Σ' is from this Σ: the root mean square of the
    /// log eigenvalues of Σ⁻¹Σ' as a factor (a typical direction's variance
    /// changed by this factor), and the largest such factor.
    pub fn discrepancy(&self, other: &Shape) -> (f64, f64) {
        let Some(m) = self.chol.solve_lower_triangular(&other.chol) else {
            return (f64::INFINITY, f64::INFINITY);
        };
        let logs: Vec<f64> = m.singular_values().iter().map(|s| 2.0 * s.ln()).collect();
        let rms = (logs.iter().map(|l| l * l).sum::<f64>() / logs.len() as f64).sqrt();
        let max = logs.iter().map(|l| l.abs()).fold(0.0, f64::max);
        (rms.exp(), max.exp())
    }

    /// Λx.
    pub fn precision_times(&self, x: &DVector<f64>, out: &mut DVector<f64>) {
        self.prec.mul_to(x, out);
    }

    /// log q(C|u') − log q(C|u) for the move to `u' = cos φ u + sin φ v`, from
    /// `a = uᵀΛu`, `b = vᵀΛu`, `c = vᵀΛv`.
    pub fn log_ratio(&self, phi: f64, a: f64, b: f64, c: f64) -> f64 {
        let (s, co) = phi.sin_cos();
        let a_new = co * co * a + 2.0 * s * co * b + s * s * c;
        0.5 * (self.d() as f64 - 2.0) * (a_new / a).ln()
    }
}

/// Eigenvalue span of a covariance projected on a tangent space (its smallest
/// eigenvalue, ≈ 0, is the projected-out direction).
fn tangent_span(t: &DMatrix<f64>) -> f64 {
    let d = t.nrows();
    let mut eig: Vec<f64> = t.symmetric_eigenvalues().iter().copied().collect();
    eig.sort_unstable_by(f64::total_cmp);
    eig[d - 1] / eig[1]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::numerics::rng::{normal, stream};

    fn random_spd(d: usize, seed: u64) -> DMatrix<f64> {
        let mut r = stream(seed, &[]);
        let a = DMatrix::from_fn(d, d, |_, _| normal(&mut r));
        &a * a.transpose() + DMatrix::identity(d, d) * 0.1
    }

    /// The ACG log density of the circle's tangent v at u, from an explicit
    /// orthonormal basis E of the tangent space: `−½ log|EᵀΣE| − ((d−1)/2)
    /// log(eᵀ(EᵀΣE)⁻¹e)`, e = Eᵀv.
    fn log_q_explicit(sigma: &DMatrix<f64>, u: &DVector<f64>, v: &DVector<f64>) -> f64 {
        let d = u.len();
        // Gram–Schmidt from u and the canonical basis; keep d − 1 vectors ⟂ u.
        let mut basis: Vec<DVector<f64>> = vec![u.clone()];
        for k in 0..d {
            let mut e = DVector::from_fn(d, |i, _| f64::from(u8::from(i == k)));
            for b in &basis {
                let p = e.dot(b);
                e.axpy(-p, b, 1.0);
            }
            if e.norm() > 1e-6 {
                basis.push(e.normalize());
            }
        }
        let e = DMatrix::from_columns(&basis[1..d]);
        let b = e.transpose() * sigma * &e;
        let coords = e.transpose() * v;
        let quad = coords.dot(&(b.clone().cholesky().unwrap().solve(&coords)));
        -0.5 * b.determinant().ln() - 0.5 * (d as f64 - 1.0) * quad.ln()
    }

    /// The closed-form ratio `((d−2)/2) log(a'/a)` equals the ratio of the ACG
    /// densities computed with explicit tangent bases at both ends, for ±v
    /// alike, in several dimensions.
    #[test]
    fn closed_form_ratio_equals_the_explicit_acg_densities() {
        for (d, seed) in [(3, 1), (4, 2), (7, 3), (12, 4)] {
            let sigma = random_spd(d, seed);
            let shape = Shape::new(&sigma).unwrap();
            let mut r = stream(seed, &[1]);
            for _ in 0..20 {
                let u = DVector::from_fn(d, |_, _| normal(&mut r)).normalize();
                let eps = DVector::from_fn(d, |_, _| normal(&mut r));
                let (mut v, mut pv) = (DVector::zeros(d), DVector::zeros(d));
                assert!(shape.direction(&u, &eps, &mut v, &mut pv));
                assert!(v.dot(&u).abs() < 1e-12 && (v.norm() - 1.0).abs() < 1e-12);
                let mut pu = DVector::zeros(d);
                shape.precision_times(&u, &mut pu);
                let (a, b, c) = (u.dot(&pu), v.dot(&pu), v.dot(&pv));
                let phi: f64 = 6.0 * normal(&mut r);
                let (s, co) = phi.sin_cos();
                let u2 = &u * co + &v * s;
                let v2 = &v * co - &u * s;
                let want = log_q_explicit(&sigma, &u2, &v2) - log_q_explicit(&sigma, &u, &v);
                let got = shape.log_ratio(phi, a, b, c);
                assert!((got - want).abs() < 1e-9, "d = {d}: {got} vs {want}");
                let flipped = log_q_explicit(&sigma, &u2, &-v2) - log_q_explicit(&sigma, &u, &-v);
                assert!((flipped - want).abs() < 1e-9);
            }
        }
    }

    /// Unit directions in a cap elongated along e2: the estimate's tangent
    /// span sees the elongation, the shrinkage keeps Σ well conditioned.
    #[test]
    fn estimate_sees_an_elongated_cap() {
        let d = 5;
        let mut r = stream(7, &[]);
        let mut rows = Vec::new();
        for _ in 0..2000 {
            let mut u = DVector::from_fn(d, |k, _| match k {
                0 => 1.0,
                1 => 0.2 * normal(&mut r),
                _ => 0.02 * normal(&mut r),
            });
            u.normalize_mut();
            rows.extend(u.iter());
        }
        let shape = Shape::estimate(&rows, d, 100).unwrap();
        let s = shape.summary.unwrap();
        assert_eq!((s.draws, s.shrinkage), (2000, SHRINK_MIN));
        let t = s.tangent_span.unwrap();
        assert!(t > 50.0 && t < 150.0, "{s:?}");
        // λ_max(C) ≤ tr C = (d − 1)·level bounds the span after shrinkage.
        let bound = 1.0 + (d - 1) as f64 * (1.0 - SHRINK_MIN) / SHRINK_MIN;
        assert!(s.span > 20.0 && s.span <= bound, "{s:?}");
    }
}
