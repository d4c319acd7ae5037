//! SMC against answers known exactly: the prior (γ = 0), a quadratic risk with a
//! closed-form posterior and evidence, and d = 2 AUC posteriors integrated
//! exactly over the angle (Gaussian prior) or by quadrature (spike-and-slab).
//!
//! Tolerances are multiples of the Monte-Carlo error: with N particles that
//! decorrelated in every stage, a posterior mean has sd ≈ σ/√N, a posterior sd a
//! relative error ≈ 1/√(2N), and log Ẑ (T stages at ESS τ = ½) an sd ≈ √(T/N).
//! The runs are seeded, so a pass is reproducible; the bounds are ≥ 4 such sds.

#[path = "support/exact_d2.rs"]
mod exact_d2;
use exact_d2::{arcs, exact_isotropic, toy};
use nalgebra::DMatrix;
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

/// E[cos φ sin φ] numerator over the arcs (the direction's cross moment).
fn exact_cross(arcs: &[(f64, f64, f64)], gamma: f64) -> f64 {
    let (mut z, mut cs) = (0.0, 0.0);
    for &(a, b, r) in arcs {
        let w = (-gamma * r).exp();
        z += w * (b - a);
        cs += w * (b.sin().powi(2) - a.sin().powi(2)) / 2.0;
    }
    cs / z
}

/// Row-space sampling (ALGORITHMS.md §15): the toy's 2-D rows embedded in
/// d = 7 through an orthonormal B (X = x Bᵀ, rank 2), so the posterior of θ is
/// known exactly: Bᵀθ has the 2-D posterior (angle integration), the other five
/// directions keep the prior N(0, v). SMC and the great-circle sampler sample 2
/// dimensions and lift; means and sds (exact formulas of the row-space cloud's),
/// the lifted draws' sds (the null part's exact prior draws) and SMC's log Z
/// must match within Monte Carlo error: SMC N = 8000 (means 0.06 sd, sds 5%,
/// log Z 4·√(T/N) as above); the great-circle sampler in 2 dimensions draws
/// independently, 4 × 2000 draws (means 4/√8000 ≈ 0.045 sd → 0.06, sds 5%).
#[test]
fn row_space_samplers_match_exact_integration_in_seven_dimensions() {
    use pacauc::engine::gcs::{Gcs, GcsSettings};
    use pacauc::engine::smc::Smc;
    use pacauc::engine::{Engine, Problem};
    let (x2, y) = toy(80, 11);
    let (gamma, v, d) = (80.0, 1.5, 7);
    let mut r = rng::stream(21, &[]);
    let b = DMatrix::from_fn(d, 2, |_, _| rng::normal(&mut r)).qr().q();
    let x = &x2 * b.transpose();
    let arcs = arcs(&x2, &y);
    let (lz, mean2, sd2) = exact_isotropic(&arcs, gamma, v);
    let c12 = 2.0 * v * exact_cross(&arcs, gamma) - mean2[0] * mean2[1];
    let cov2 = [[sd2[0] * sd2[0], c12], [c12, sd2[1] * sd2[1]]];
    let names = (0..d).map(|k| format!("x{k}")).collect();
    let problem = Problem::new(names, x, y, gamma, Prior::Gaussian { var: v }).unwrap();
    let smc = Smc {
        settings: settings(8000, Kernel::Auto, 7),
    };
    let gcs = Gcs {
        settings: GcsSettings {
            warmup: 10,
            max_steps: 2010,
            min_ess: 1e12,
            seed: 8,
            ..GcsSettings::default()
        },
    };
    let engines: [&dyn Engine; 2] = [&smc, &gcs];
    for engine in engines {
        let fit = engine
            .run(&problem, &Control::new(), &mut NoObserver)
            .unwrap();
        let tag = engine.name();
        assert_eq!(fit.details["row_space"]["rank"], 2, "{tag}");
        if tag == "smc" {
            let stages = fit.details["stages"].as_u64().unwrap() as f64;
            let got = fit.log_evidence.unwrap();
            eprintln!("{tag}: log Z {got:.4} exact {lz:.4}");
            assert!(
                (got - lz).abs() < 4.0 * (stages / 8000.0).sqrt(),
                "{tag}: log Z"
            );
        }
        let theta = &fit.particles.as_ref().unwrap().theta;
        assert_eq!(theta.ncols(), d);
        for k in 0..d {
            let mean = b[(k, 0)] * mean2[0] + b[(k, 1)] * mean2[1];
            let bk = [b[(k, 0)], b[(k, 1)]];
            let inside: f64 = (0..2)
                .flat_map(|a| (0..2).map(move |c| (a, c)))
                .map(|(a, c)| bk[a] * bk[c] * cov2[a][c])
                .sum();
            let sd = (v * (1.0 - bk[0] * bk[0] - bk[1] * bk[1]) + inside).sqrt();
            let col = theta.column(k);
            let m = col.mean();
            let emp_sd =
                (col.iter().map(|t| (t - m).powi(2)).sum::<f64>() / col.len() as f64).sqrt();
            eprintln!(
                "{tag} θ_{k}: mean {:.4} exact {mean:.4}; sd {:.4} draws {emp_sd:.4} exact {sd:.4}",
                fit.mean[k], fit.sd[k]
            );
            assert!((fit.mean[k] - mean).abs() < 0.06 * sd, "{tag} θ_{k} mean");
            assert!((fit.sd[k] / sd - 1.0).abs() < 0.05, "{tag} θ_{k} sd");
            assert!((emp_sd / sd - 1.0).abs() < 0.05, "{tag} θ_{k} lifted sd");
        }
    }
}

/// d > n: the row-space SMC (n = 14 rows, d = 30: 13 dimensions after
/// standardising) and SMC on all 30 coefficients sample the same posterior:
/// log Z within 4 combined sds (each ≈ √(T/N)), every mean within 0.15
/// posterior sd and every sd within 10% (N = 6000 each, so a mean's error is
/// ≈ 0.02–0.04 sd once the 30-dimensional cloud's correlation is counted).
#[test]
fn row_space_smc_equals_full_space_smc_when_d_exceeds_n() {
    use pacauc::engine::smc::Smc;
    use pacauc::engine::{Engine, Problem};
    let (n, d) = (14, 30);
    let mut r = rng::stream(33, &[]);
    let y: Vec<bool> = (0..n).map(|i| i % 2 == 0).collect();
    let mut x = DMatrix::from_fn(n, d, |i, k| {
        rng::normal(&mut r) + if y[i] && k < 3 { 0.7 } else { 0.0 }
    });
    for mut col in x.column_iter_mut() {
        let m = col.mean();
        col.add_scalar_mut(-m);
        let sd = (col.norm_squared() / n as f64).sqrt();
        col /= sd;
    }
    let names = (0..d).map(|k| format!("x{k}")).collect();
    let problem = Problem::new(names, x, y, 14.0, Prior::Gaussian { var: 2.0 }).unwrap();
    let fit = |row_space: bool, seed: u64| {
        Smc {
            settings: SmcSettings {
                row_space,
                ..settings(6000, Kernel::Auto, seed)
            },
        }
        .run(&problem, &Control::new(), &mut NoObserver)
        .unwrap()
    };
    let (red, full) = (fit(true, 3), fit(false, 4));
    assert_eq!(red.details["row_space"]["rank"], 13);
    assert!(full.details.get("row_space").is_none());
    let (lr, lf) = (red.log_evidence.unwrap(), full.log_evidence.unwrap());
    let t = |f: &pacauc::engine::Fit| f.details["stages"].as_u64().unwrap() as f64;
    let tol = 4.0 * ((t(&red) + t(&full)) / 6000.0).sqrt();
    eprintln!("log Z reduced {lr:.4} full {lf:.4} (tolerance {tol:.3})");
    assert!((lr - lf).abs() < tol);
    for k in 0..d {
        let (mr, mf, sr, sf) = (red.mean[k], full.mean[k], red.sd[k], full.sd[k]);
        assert!(
            (mr - mf).abs() < 0.15 * sf,
            "θ_{k}: mean {mr} vs {mf} (sd {sf})"
        );
        assert!((sr / sf - 1.0).abs() < 0.1, "θ_{k}: sd {sr} vs {sf}");
    }
}
