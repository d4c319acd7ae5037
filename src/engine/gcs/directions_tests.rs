//! Exactness of the shaped-direction kernel on the sphere S² (d = 3), where
//! the posterior of the direction is integrated by quadrature: along every
//! meridian through e3 the risk is piecewise constant (`circle::Profile`), so
//! each arc is integrated by Gauss–Legendre against the surface measure
//! |sin φ| dφ dψ, and the meridians' angle ψ by the midpoint rule. With a
//! fixed, deliberately anisotropic Σ the chain's moments of u must match the
//! quadrature within 4 Monte Carlo standard errors (MCSE = sd/√ESS, the ESS
//! of the chains' autocorrelations); without the Metropolis–Hastings
//! correction they must not — and must match instead the density the
//! uncorrected kernel keeps, π(u)·(uᵀΣ⁻¹u)^{-(d−2)/2}.

use std::f64::consts::PI;
use std::sync::Arc;

use nalgebra::{DMatrix, DVector};

use super::chain::Chain;
use super::circle::{Circle, Profile};
use super::design::Design;
use super::directions::Shape;
use super::reference::Reference;
use super::settings::Loss;
use crate::engine::data::label_noise;
use crate::engine::mcmc_diag::diagnose;
use crate::engine::{Prior, Problem};

/// Steps of each of the 4 chains per kernel.
const STEPS: usize = 20_000;

/// The moments compared: u1, u2, u3 and the second moments (u3² = 1 − u1² − u2²).
const MOMENTS: usize = 8;

fn moments(u: &[f64]) -> [f64; MOMENTS] {
    let [a, b, c] = [u[0], u[1], u[2]];
    [a, b, c, a * a, b * b, a * b, a * c, b * c]
}

/// Five-point Gauss–Legendre on [−1, 1].
const GL: [(f64, f64); 5] = [
    (0.0, 0.568_888_888_888_888_9),
    (-0.538_469_310_105_683_1, 0.478_628_670_499_366_5),
    (0.538_469_310_105_683_1, 0.478_628_670_499_366_5),
    (-0.906_179_845_938_664, 0.236_926_885_056_189_1),
    (0.906_179_845_938_664, 0.236_926_885_056_189_1),
];

/// E[moments(u)] under `exp(−γ R(u))·h(u)` on S², `meridians` values of ψ.
fn quadrature(design: &Design, h: &dyn Fn(&[f64]) -> f64, meridians: usize) -> [f64; MOMENTS] {
    let col = |m: &DMatrix<f64>, v: [f64; 3]| -> Vec<f64> {
        (m * DVector::from_row_slice(&v)).iter().copied().collect()
    };
    let g = design.gamma / (2 * design.pairs()) as f64;
    let (mut total, mut sums) = (0.0, [0.0; MOMENTS]);
    for j in 0..meridians {
        let psi = PI * (j as f64 + 0.5) / meridians as f64;
        let (sp, cp) = psi.sin_cos();
        let (pa, pb) = (
            col(&design.pos, [0.0, 0.0, 1.0]),
            col(&design.pos, [cp, sp, 0.0]),
        );
        let (na, nb) = (
            col(&design.neg, [0.0, 0.0, 1.0]),
            col(&design.neg, [cp, sp, 0.0]),
        );
        let profile = Profile::of(&Circle {
            pos_a: &pa,
            pos_b: &pb,
            neg_a: &na,
            neg_b: &nb,
        });
        for (i, &start) in profile.starts.iter().enumerate() {
            let end = profile.starts.get(i + 1).copied().unwrap_or(2.0 * PI);
            let weight = (-g * profile.twice[i] as f64).exp();
            let (mid, half) = (0.5 * (start + end), 0.5 * (end - start));
            for (x, w) in GL {
                let phi = mid + half * x;
                let (s, c) = phi.sin_cos();
                let u = [s * cp, s * sp, c];
                let f = weight * w * half * s.abs() * h(&u);
                total += f;
                for (acc, m) in sums.iter_mut().zip(moments(&u)) {
                    *acc += f * m;
                }
            }
        }
    }
    sums.map(|s| s / total)
}

/// A 3-feature AUC problem with overlapping classes (a broad posterior, so the
/// shape of Σ matters over the whole sphere).
fn design() -> Design {
    let (x, y) = label_noise::generate(40, 3, 0.2, 5);
    let names = (0..3).map(|k| format!("x{k}")).collect();
    let p = Problem::new(names, x, y, 12.0, Prior::Gaussian { var: 1.0 }).unwrap();
    Design::of(&p, Loss::Auc).unwrap()
}

/// Σ = R diag(4, 0.05, 1) Rᵀ for a fixed rotation R: eigenvalues 80× apart,
/// axes not aligned with the features.
fn anisotropic() -> DMatrix<f64> {
    let (a, b) = (0.7_f64, 0.4_f64);
    let rz = DMatrix::from_row_slice(
        3,
        3,
        &[a.cos(), -a.sin(), 0.0, a.sin(), a.cos(), 0.0, 0.0, 0.0, 1.0],
    );
    let rx = DMatrix::from_row_slice(
        3,
        3,
        &[1.0, 0.0, 0.0, 0.0, b.cos(), -b.sin(), 0.0, b.sin(), b.cos()],
    );
    let r = rz * rx;
    &r * DMatrix::from_diagonal(&DVector::from_row_slice(&[4.0, 0.05, 1.0])) * r.transpose()
}

/// Chains of `steps` steps (the first `burn` dropped) with `shape` (None:
/// uniform); per moment the pooled mean and its MCSE.
fn chain_moments(design: &Design, shape: Option<Shape>, steps: usize) -> Vec<(f64, f64)> {
    moments_of(design, shape, steps, false)
}

/// As `chain_moments`, with slice moves on the circles when `slice`.
fn moments_of(design: &Design, shape: Option<Shape>, steps: usize, slice: bool) -> Vec<(f64, f64)> {
    let burn = 200;
    let shape = shape.map(Arc::new);
    let series: Vec<Vec<Vec<f64>>> = (0..4)
        .map(|c| {
            let mut chain = Chain::new(design, 11, c);
            chain.set_shape(shape.clone());
            chain.slice = slice;
            let mut out: Vec<Vec<f64>> = (0..MOMENTS).map(|_| Vec::with_capacity(steps)).collect();
            for t in 0..burn + steps {
                chain.step(design, usize::MAX, 1);
                if t >= burn {
                    let m = moments(chain.direction().as_slice());
                    for (o, x) in out.iter_mut().zip(m) {
                        o.push(x);
                    }
                }
            }
            out
        })
        .collect();
    (0..MOMENTS)
        .map(|k| {
            let cols: Vec<&[f64]> = series.iter().map(|s| s[k].as_slice()).collect();
            let d = diagnose(&cols);
            (d.mean, d.mcse_mean)
        })
        .collect()
}

/// The largest |chain − quadrature| / MCSE over the moments.
fn worst_z(chain: &[(f64, f64)], exact: &[f64; MOMENTS], what: &str) -> f64 {
    let mut worst: f64 = 0.0;
    for (k, (&(m, se), &e)) in chain.iter().zip(exact).enumerate() {
        let z = (m - e).abs() / se;
        eprintln!("{what}: moment {k}: chain {m:.5} ± {se:.5}, quadrature {e:.5}, z {z:.2}");
        worst = worst.max(z);
    }
    worst
}

/// The quadrature converges: 1500 and 3000 meridians agree to 1e-5 (far
/// under the chains' MCSEs of ~3e-3).
#[test]
fn quadrature_on_the_sphere_has_converged() {
    let d = design();
    let (a, b) = (
        quadrature(&d, &|_| 1.0, 1500),
        quadrature(&d, &|_| 1.0, 3000),
    );
    for k in 0..MOMENTS {
        assert!(
            (a[k] - b[k]).abs() < 1e-5,
            "moment {k}: {} vs {}",
            a[k],
            b[k]
        );
    }
    // The posterior is far from uniform (E u = 0) and from a point mass.
    assert!(a[..3].iter().map(|m| m * m).sum::<f64>().sqrt() > 0.3);
    assert!(1.0 - (a[0] * a[0] + a[1] * a[1] + a[2] * a[2]) > 0.2);
}

/// The exactness test of the shaped kernel (and of the uniform one), and the
/// test that fails without the correction: 4 chains × STEPS steps each (the
/// uncorrected kernel is off by 25–125 MCSEs at 40 000 steps).
/// 8 moments at 4 MCSEs: a false alarm has probability ~5e-4 per kernel.
#[test]
fn shaped_directions_sample_the_exact_posterior_on_the_sphere() {
    let d = design();
    let sigma = anisotropic();
    let exact = quadrature(&d, &|_| 1.0, 1500);
    let uniform = chain_moments(&d, None, STEPS);
    assert!(worst_z(&uniform, &exact, "uniform") < 4.0);
    let shaped = chain_moments(&d, Shape::new(&sigma), STEPS);
    assert!(worst_z(&shaped, &exact, "shaped") < 4.0);
    // Without the correction the kernel keeps π(u)·(uᵀΛu)^{-1/2} (d = 3).
    let mut wrong = Shape::new(&sigma).unwrap();
    wrong.correct = false;
    let uncorrected = chain_moments(&d, Some(wrong), STEPS);
    let bias = worst_z(&uncorrected, &exact, "uncorrected vs π");
    assert!(
        bias > 12.0,
        "the uncorrected kernel passed (largest z {bias:.1})"
    );
    let lambda = sigma.clone().try_inverse().unwrap();
    let tilted = quadrature(
        &d,
        &|u| {
            let u = DVector::from_row_slice(u);
            u.dot(&(&lambda * &u)).powf(-0.5)
        },
        1500,
    );
    assert!(worst_z(&uncorrected, &tilted, "uncorrected vs tilted") < 4.0);
}

/// The slice move on the circles (`slice`) keeps the same exact posterior,
/// with uniform and with shaped (Metropolis–Hastings-corrected) directions:
/// 8 moments at 4 MCSEs against the quadrature, as above.
#[test]
fn slice_moves_sample_the_exact_posterior_on_the_sphere() {
    let d = design();
    let exact = quadrature(&d, &|_| 1.0, 1500);
    let uniform = moments_of(&d, None, STEPS, true);
    assert!(worst_z(&uniform, &exact, "slice, uniform") < 4.0);
    let shaped = moments_of(&d, Shape::new(&anisotropic()), STEPS, true);
    assert!(worst_z(&shaped, &exact, "slice, shaped") < 4.0);
}

/// Ellipses around a Gaussian reference (`reference`) keep the same exact
/// posterior: a reference deliberately off (its mean away from the
/// posterior's, its covariance `anisotropic()`), 8 moments at 4 MCSEs against
/// the quadrature; the radius ‖w‖² has mean d = 3 (χ², redrawn exactly).
#[test]
fn gaussian_reference_ellipses_sample_the_exact_posterior_on_the_sphere() {
    let d = design();
    let exact = quadrature(&d, &|_| 1.0, 1500);
    let mean = DVector::from_row_slice(&[1.0, -0.5, 0.3]);
    let reference = Arc::new(Reference::new(mean, &anisotropic()).unwrap());
    let (burn, steps) = (200, STEPS);
    let mut radius2 = Vec::new();
    let series: Vec<Vec<Vec<f64>>> = (0..4)
        .map(|c| {
            let mut chain = Chain::new(&d, 13, c);
            chain.set_reference(&d, reference.clone());
            let mut out: Vec<Vec<f64>> = (0..MOMENTS).map(|_| Vec::with_capacity(steps)).collect();
            for t in 0..burn + steps {
                chain.step(&d, burn, 1);
                if t >= burn {
                    for (o, x) in out.iter_mut().zip(moments(chain.direction().as_slice())) {
                        o.push(x);
                    }
                }
            }
            // Kept θ = scale ⊙ w; the prior's scale is 1 here.
            radius2.extend(
                chain
                    .draws
                    .chunks_exact(3)
                    .map(|w| w.iter().map(|x| x * x).sum::<f64>()),
            );
            out
        })
        .collect();
    let chain: Vec<(f64, f64)> = (0..MOMENTS)
        .map(|k| {
            let cols: Vec<&[f64]> = series.iter().map(|s| s[k].as_slice()).collect();
            let dg = diagnose(&cols);
            (dg.mean, dg.mcse_mean)
        })
        .collect();
    assert!(worst_z(&chain, &exact, "gaussian reference") < 4.0);
    let mean_r2 = radius2.iter().sum::<f64>() / radius2.len() as f64;
    // sd of χ²_3 is √6; ~80 000 draws, mostly independent: 4 SE ≈ 0.035.
    assert!((mean_r2 - 3.0).abs() < 0.06, "E‖w‖² = {mean_r2}");
}
