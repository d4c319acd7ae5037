//! SMC against answers known exactly: the prior (γ = 0), a quadratic risk with a
//! closed-form posterior and evidence, and d = 2 AUC posteriors integrated
//! exactly over the angle (Gaussian prior) or by quadrature (spike-and-slab).
//!
//! Tolerances are multiples of the Monte-Carlo error: with N particles that
//! decorrelated in every stage, a posterior mean has sd ≈ σ/√N, a posterior sd a
//! relative error ≈ 1/√(2N), and log Ẑ (T stages at ESS τ = ½) an sd ≈ √(T/N).
//! The runs are seeded, so a pass is reproducible; the bounds are ≥ 4 such sds.

use nalgebra::DMatrix;
use pacauc::engine::metrics::auc;
use pacauc::engine::numerics::rng;
use pacauc::engine::smc::{Kernel, LinearAuc, Moves, Quadratic, SmcSettings, Target, sampler};
use pacauc::engine::{Control, NoObserver, Prior};

fn settings(n: usize, kernel: Kernel, seed: u64) -> SmcSettings {
    SmcSettings {
        particles: n,
        kernel,
        seed,
        ..SmcSettings::default()
    }
}

fn moments(theta: &[f64], d: usize) -> (Vec<f64>, Vec<f64>) {
    sampler::moments(theta, d)
}

/// The standard error of coordinate k's mean over a waste-free cloud of
/// `chains` chains (particle i in chain i mod `chains`), by batch means.
fn chain_mean_se(theta: &[f64], d: usize, k: usize, chains: usize) -> f64 {
    let mut sums = vec![(0.0, 0usize); chains];
    for (i, row) in theta.chunks_exact(d).enumerate() {
        let c = &mut sums[i % chains];
        c.0 += row[k];
        c.1 += 1;
    }
    let means: Vec<f64> = sums.iter().map(|(s, n)| s / *n as f64).collect();
    let m = means.iter().sum::<f64>() / chains as f64;
    let var = means.iter().map(|x| (x - m).powi(2)).sum::<f64>() / (chains - 1) as f64;
    (var / chains as f64).sqrt()
}

#[test]
fn gamma_zero_gives_the_prior_and_log_z_zero() {
    let t = Quadratic {
        b: vec![1.0, -2.0, 0.5],
        var: 2.0,
    };
    let n = 20_000;
    let run = sampler::run(
        &t,
        0.0,
        &settings(n, Kernel::Gpcn, 1),
        &Control::new(),
        &mut NoObserver,
    )
    .unwrap();
    assert_eq!(run.log_z, 0.0);
    assert_eq!(run.path.len(), 1, "no tempering stage at γ = 0");
    let (m, sd) = moments(&run.theta, 3);
    for k in 0..3 {
        // Prior N(0, 2): the mean's MC sd is √(2/N) = 0.01; the sd's relative error 1/√(2N) = 0.005.
        assert!(m[k].abs() < 0.05, "{m:?}");
        assert!((sd[k] / 2f64.sqrt() - 1.0).abs() < 0.025, "{sd:?}");
    }
    // The AUC target too (different code path for the risks).
    let x = DMatrix::from_fn(30, 2, |i, j| ((i * 7 + j * 3) % 11) as f64 - 5.0);
    let y: Vec<bool> = (0..30).map(|i| i % 3 == 0).collect();
    let lin = LinearAuc::new(&x, &y, Prior::Gaussian { var: 1.0 });
    let run = sampler::run(
        &lin,
        0.0,
        &settings(4000, Kernel::Rw, 2),
        &Control::new(),
        &mut NoObserver,
    )
    .unwrap();
    assert_eq!(run.log_z, 0.0);
}

/// Quadratic risk: closed-form log Z and N(γb/(1/v + γ), 1/(1/v + γ)) posterior,
/// for every kernel and for waste-free SMC, over several seeds.
#[test]
fn quadratic_risk_recovers_the_closed_form() {
    let t = Quadratic {
        b: vec![1.0, -0.5, 2.0],
        var: 1.5,
    };
    let gamma = 20.0;
    let exact = t.log_z(gamma);
    let n = 4000;
    let mut cases: Vec<(String, SmcSettings)> = Vec::new();
    for seed in 0..4 {
        for kernel in [
            Kernel::Gpcn,
            Kernel::Rw,
            Kernel::Pcn,
            Kernel::Copula,
            Kernel::SkewCopula,
        ] {
            cases.push((format!("{kernel:?} seed {seed}"), settings(n, kernel, seed)));
        }
    }
    cases.push((
        "waste-free rw".into(),
        SmcSettings {
            waste_free: Some(20),
            particles: 8000,
            ..settings(n, Kernel::Rw, 7)
        },
    ));
    for (name, s) in cases {
        let run = sampler::run(&t, gamma, &s, &Control::new(), &mut NoObserver).unwrap();
        let stages = (run.path.len() - 1) as f64;
        // sd(log Ẑ) ≈ √(T/N); waste-free particles are correlated: allow 2× more.
        let tol = 4.0
            * (stages / s.particles as f64).sqrt()
            * if s.waste_free.is_some() { 2.0 } else { 1.0 };
        assert!(
            (run.log_z - exact).abs() < tol,
            "{name}: log Z {} vs exact {exact} (tolerance {tol:.3}, {stages} stages)",
            run.log_z
        );
        let (m, sd) = moments(&run.theta, 3);
        eprintln!(
            "{name}: log Z {:.4} exact {exact:.4} (tol {tol:.3}); mean {m:.3?} sd {sd:.3?}",
            run.log_z
        );
        for k in 0..3 {
            let (mu, sigma) = t.posterior(gamma, k);
            // 0.08 sd; a waste-free cloud's states are correlated within a
            // chain, so there the bound is at least 4 standard errors of the
            // mean from the chains' means (batch means over the M chains).
            let tol = match s.waste_free {
                Some(p) => {
                    (0.08 * sigma).max(4.0 * chain_mean_se(&run.theta, 3, k, s.particles / p))
                }
                None => 0.08 * sigma,
            };
            assert!(
                (m[k] - mu).abs() < tol,
                "{name}: mean[{k}] {} vs {mu} (sd {sigma}, tolerance {tol:.4})",
                m[k]
            );
            assert!(
                (sd[k] / sigma - 1.0).abs() < 0.06,
                "{name}: sd[{k}] {} vs {sigma}",
                sd[k]
            );
        }
    }
}

/// A small two-feature problem with overlapping classes.
fn toy(n: usize, seed: u64) -> (DMatrix<f64>, Vec<bool>) {
    let mut r = rng::stream(seed, &[]);
    let y: Vec<bool> = (0..n).map(|i| i % 5 < 2).collect();
    let x = DMatrix::from_fn(n, 2, |i, k| {
        let shift = if y[i] { [0.8, 0.3][k] } else { 0.0 };
        shift + rng::normal(&mut r)
    });
    (x, y)
}

/// The AUC risk of the direction (cos φ, sin φ) is piecewise constant between
/// the angles where two rows of different classes tie: exact arcs.
fn arcs(x: &DMatrix<f64>, y: &[bool]) -> Vec<(f64, f64, f64)> {
    let tau = std::f64::consts::TAU;
    let mut cuts = vec![0.0, tau];
    for i in (0..y.len()).filter(|&i| y[i]) {
        for j in (0..y.len()).filter(|&j| !y[j]) {
            let (a1, a2) = (x[(i, 0)] - x[(j, 0)], x[(i, 1)] - x[(j, 1)]);
            let phi = a1.atan2(-a2).rem_euclid(tau);
            cuts.push(phi);
            cuts.push((phi + std::f64::consts::PI).rem_euclid(tau));
        }
    }
    cuts.sort_by(f64::total_cmp);
    cuts.windows(2)
        .filter(|w| w[1] > w[0])
        .map(|w| {
            let mid = 0.5 * (w[0] + w[1]);
            let s: Vec<f64> = (0..y.len())
                .map(|i| x[(i, 0)] * mid.cos() + x[(i, 1)] * mid.sin())
                .collect();
            (w[0], w[1], 1.0 - auc(&s, y))
        })
        .collect()
}

/// Exact log Z, mean and sd under the isotropic prior N(0, v I): the direction's
/// density is ∝ exp(−γR(φ)) (uniform prior angle), the radius independent with
/// E r = √v·√(π/2), E r² = 2v.
fn exact_isotropic(arcs: &[(f64, f64, f64)], gamma: f64, v: f64) -> (f64, [f64; 2], [f64; 2]) {
    let (mut z, mut mc, mut ms, mut cc, mut ss) = (0.0, 0.0, 0.0, 0.0, 0.0);
    for &(a, b, r) in arcs {
        let w = (-gamma * r).exp();
        z += w * (b - a);
        mc += w * (b.sin() - a.sin());
        ms += w * (a.cos() - b.cos());
        // ∫cos² = (φ/2 + sin 2φ/4), ∫sin² = (φ/2 − sin 2φ/4).
        cc += w * ((b - a) / 2.0 + ((2.0 * b).sin() - (2.0 * a).sin()) / 4.0);
        ss += w * ((b - a) / 2.0 - ((2.0 * b).sin() - (2.0 * a).sin()) / 4.0);
    }
    let er = v.sqrt() * (std::f64::consts::PI / 2.0).sqrt();
    let mean = [er * mc / z, er * ms / z];
    let sd = [
        (2.0 * v * cc / z - mean[0] * mean[0]).sqrt(),
        (2.0 * v * ss / z - mean[1] * mean[1]).sqrt(),
    ];
    ((z / std::f64::consts::TAU).ln(), mean, sd)
}

#[test]
fn d2_auc_posterior_matches_exact_integration() {
    let (x, y) = toy(80, 11);
    let gamma = 80.0;
    let arcs = arcs(&x, &y);
    for (v, kernel, seed) in [
        (1.0, Kernel::Gpcn, 1),
        (1.0, Kernel::Rw, 2),
        (4.0, Kernel::Pcn, 3),
        (0.5, Kernel::Sphere, 4),
        (1.0, Kernel::Copula, 5),
        (1.0, Kernel::SkewCopula, 6),
    ] {
        let (lz, mean, sd) = exact_isotropic(&arcs, gamma, v);
        let target = LinearAuc::new(&x, &y, Prior::Gaussian { var: v });
        let s = settings(8000, kernel, seed);
        let run = sampler::run(&target, gamma, &s, &Control::new(), &mut NoObserver).unwrap();
        let (m, sdh) = moments(&run.theta, 2);
        let tag = format!("{kernel:?} v = {v}");
        eprintln!(
            "{tag}: log Z {:.4} exact {lz:.4}; mean {m:.4?} exact {mean:.4?}; sd {sdh:.4?} exact {sd:.4?}",
            run.log_z
        );
        let stages = (run.path.len() - 1) as f64;
        assert!(
            (run.log_z - lz).abs() < 4.0 * (stages / 8000.0).sqrt(),
            "{tag}: log Z {} vs exact {lz}",
            run.log_z
        );
        for k in 0..2 {
            assert!(
                (m[k] - mean[k]).abs() < 0.06 * sd[k],
                "{tag}: mean {m:?} vs {mean:?} (sd {sd:?})"
            );
            assert!(
                (sdh[k] / sd[k] - 1.0).abs() < 0.05,
                "{tag}: sd {sdh:?} vs {sd:?}"
            );
        }
    }
}

#[test]
fn log_z_is_flat_in_the_isotropic_prior_scale() {
    let (x, y) = toy(120, 5);
    let gamma = 120.0;
    let mut zs = Vec::new();
    for v in [0.01, 1.0, 100.0] {
        let target = LinearAuc::new(&x, &y, Prior::Gaussian { var: v });
        let run = sampler::run(
            &target,
            gamma,
            &settings(4000, Kernel::Gpcn, 9),
            &Control::new(),
            &mut NoObserver,
        )
        .unwrap();
        zs.push(run.log_z);
    }
    eprintln!("log Z over v = 0.01, 1, 100: {zs:?}");
    // Same seed: the runs differ only by rounding, far below the MC error √(T/N) ≈ 0.04.
    for z in &zs {
        assert!((z - zs[0]).abs() < 0.02, "{zs:?}");
    }
}

/// Spike-and-slab in d = 2 against quadrature over the angle, with the radial
/// integrals in closed form for each of the four (spike|slab)² Gaussian parts.
#[test]
fn d2_spike_and_slab_matches_quadrature() {
    let (x, y) = toy(80, 13);
    let gamma = 80.0;
    let (v0, v1, p) = (0.01, 1.0, 0.4);
    let arcs = arcs(&x, &y);
    let tau = std::f64::consts::TAU;
    // Accumulators: Z, E θ, E θ², P(z_k = 1).
    let (mut z, mut m1, mut m2, mut inc) = (0.0, [0.0; 2], [0.0; 2], [0.0; 2]);
    let parts: Vec<([f64; 2], f64, [bool; 2])> =
        [[false, false], [false, true], [true, false], [true, true]]
            .iter()
            .map(|&zz| {
                let var = [if zz[0] { v1 } else { v0 }, if zz[1] { v1 } else { v0 }];
                let w = zz
                    .iter()
                    .map(|&s| if s { p } else { 1.0 - p })
                    .product::<f64>();
                (var, w, zz)
            })
            .collect();
    for &(a, b, r) in &arcs {
        let like = (-gamma * r).exp();
        let steps = 16;
        let h = (b - a) / steps as f64;
        for i in 0..=steps {
            // Composite Simpson weights.
            let sw = if i == 0 || i == steps {
                1.0
            } else if i % 2 == 1 {
                4.0
            } else {
                2.0
            };
            let phi = a + i as f64 * h;
            let u = [phi.cos(), phi.sin()];
            for (var, w, zz) in &parts {
                let q = u[0] * u[0] / var[0] + u[1] * u[1] / var[1];
                let c = w / (tau * (var[0] * var[1]).sqrt());
                let f0 = c / q; // ∫ r N(ru) dr
                let f1 = c * (std::f64::consts::PI / 2.0).sqrt() * q.powf(-1.5); // ∫ r² N(ru) dr
                let f2 = c * 2.0 / (q * q); // ∫ r³ N(ru) dr
                let wt = like * sw * h / 3.0;
                z += wt * f0;
                for k in 0..2 {
                    m1[k] += wt * f1 * u[k];
                    m2[k] += wt * f2 * u[k] * u[k];
                    if zz[k] {
                        inc[k] += wt * f0;
                    }
                }
            }
        }
    }
    let mean = [m1[0] / z, m1[1] / z];
    let sd = [
        (m2[0] / z - mean[0].powi(2)).sqrt(),
        (m2[1] / z - mean[1].powi(2)).sqrt(),
    ];
    let incl = [inc[0] / z, inc[1] / z];
    let prior = Prior::SpikeSlab {
        spike_var: v0,
        slab_var: v1,
        incl: p,
    };
    let target = LinearAuc::new(&x, &y, prior.clone());
    for (kernel, seed) in [(Kernel::Gpcn, 4), (Kernel::Rw, 5), (Kernel::Copula, 6)] {
        let s = settings(8000, kernel, seed);
        let run = sampler::run(&target, gamma, &s, &Control::new(), &mut NoObserver).unwrap();
        let (m, sdh) = moments(&run.theta, 2);
        let got = pacauc::engine::smc::summary::inclusion(&run.theta, 2, &prior).unwrap();
        let stages = (run.path.len() - 1) as f64;
        let tag = format!("{kernel:?}");
        eprintln!(
            "{tag}: log Z {:.4} quad {:.4}; mean {m:.4?} quad {mean:.4?}; sd {sdh:.4?} quad {sd:.4?}; incl {got:.4?} quad {incl:.4?}",
            run.log_z,
            z.ln()
        );
        assert!(
            (run.log_z - z.ln()).abs() < 4.0 * (stages / 8000.0).sqrt(),
            "{tag}: log Z {} vs quadrature {}",
            run.log_z,
            z.ln()
        );
        for k in 0..2 {
            assert!(
                (m[k] - mean[k]).abs() < 0.06 * sd[k],
                "{tag}: mean {m:?} vs {mean:?} (sd {sd:?})"
            );
            assert!(
                (sdh[k] / sd[k] - 1.0).abs() < 0.05,
                "{tag}: sd {sdh:?} vs {sd:?}"
            );
            // Inclusion: an average of bounded responsibilities, MC sd ≤ 0.5/√N.
            assert!(
                (got[k] - incl[k]).abs() < 0.03,
                "{tag}: inclusion {got:?} vs {incl:?}"
            );
        }
    }
}

#[test]
fn waste_free_and_fixed_moves_run_on_auc() {
    let (x, y) = toy(100, 3);
    let target = LinearAuc::new(&x, &y, Prior::Gaussian { var: 1.0 });
    let s = SmcSettings {
        particles: 2000,
        waste_free: Some(10),
        moves: Moves::Fixed(9),
        ..SmcSettings::default()
    };
    let run = sampler::run(&target, 100.0, &s, &Control::new(), &mut NoObserver).unwrap();
    assert_eq!(run.theta.len(), 2000 * target.dim());
    // Every moving stage evaluates 200 chains × 9 moves.
    let stages = (run.path.len() - 1) as u64;
    assert_eq!(run.evaluations, 2000 + stages * 1800);
}

/// An ARD prior with equal variances is the isotropic prior: same draws, same
/// moves, bit for bit.
#[test]
fn ard_with_equal_variances_is_the_gaussian_prior() {
    let (x, y) = toy(60, 8);
    let s = settings(1000, Kernel::Gpcn, 2);
    let run = |prior: Prior| {
        let t = LinearAuc::new(&x, &y, prior);
        sampler::run(&t, 60.0, &s, &Control::new(), &mut NoObserver).unwrap()
    };
    let a = run(Prior::Gaussian { var: 2.0 });
    let b = run(Prior::Ard {
        vars: vec![2.0, 2.0],
    });
    assert_eq!(a.log_z.to_bits(), b.log_z.to_bits());
    assert_eq!(a.theta, b.theta);
}
