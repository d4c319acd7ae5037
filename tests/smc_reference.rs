//! SMC tempered from a Gaussian reference (`smc::reference`): exact against
//! closed forms (a quadratic risk; a d = 2 AUC posterior integrated over the
//! angle, which exercises the radial moves along θ-rays), against the prior
//! path on a small problem through the spec layer (EP's Gaussian), the same
//! bits on 1 and 2 threads, and the announced fallback to the prior path.
//!
//! Tolerances as in `smc_exact.rs`: a mean within 0.08 posterior sd (N ≥
//! 4000 decorrelated particles: its MC sd ≤ 0.016 sd), log Ẑ within 4 × its
//! sd (≈ √(T/N) for T stages; at least 0.05 for the reference's weights,
//! whose tails the ESS rule does not bound).

#[path = "support/exact_d2.rs"]
mod exact_d2;
use exact_d2::{arcs, exact_isotropic, toy};
use nalgebra::{DMatrix, DVector};
use pacauc::engine::event::Event;
use pacauc::engine::interface::{Engine, Observer};
use pacauc::engine::smc::reference::{GaussianReference, ReferenceMode, ReferenceTarget};
use pacauc::engine::smc::{Kernel, LinearAuc, Quadratic, Smc, SmcSettings, sampler};
use pacauc::engine::{Control, NoObserver, Prior, Problem};

fn settings(n: usize, kernel: Kernel, seed: u64) -> SmcSettings {
    SmcSettings {
        particles: n,
        kernel,
        seed,
        ..SmcSettings::default()
    }
}

fn log_z_tol(stages: usize, n: usize) -> f64 {
    (4.0 * (stages as f64 / n as f64).sqrt()).max(0.05)
}

/// Quadratic risk, references that are off (shifted, too narrow, too wide):
/// the closed-form log Z and posterior whatever the reference.
#[test]
fn quadratic_risk_from_a_poor_reference_recovers_the_closed_form() {
    let t = Quadratic {
        b: vec![1.0, -0.5, 2.0],
        var: 1.5,
    };
    let gamma = 20.0;
    let exact = t.log_z(gamma);
    for (i, (shift, var)) in [(0.3, 0.05), (-0.2, 0.01), (0.0, 0.2)].iter().enumerate() {
        let reference = GaussianReference {
            mean: DVector::from_fn(3, |k, _| t.posterior(gamma, k).0 + shift),
            cov: DMatrix::from_diagonal_element(3, 3, *var),
        };
        let wrapped = ReferenceTarget::new(&t, &reference, gamma).unwrap();
        for kernel in [Kernel::Gpcn, Kernel::SkewCopula] {
            let s = settings(4000, kernel, 10 + i as u64);
            let run = sampler::run(&wrapped, gamma, &s, &Control::new(), &mut NoObserver).unwrap();
            let stages = run.path.len() - 1;
            let tag = format!("{kernel:?} shift {shift} var {var}");
            assert!(
                (run.log_z - exact).abs() < log_z_tol(stages, 4000),
                "{tag}: log Z {} vs exact {exact} ({stages} stages)",
                run.log_z
            );
            let (m, sd) = sampler::moments(&run.theta, 3);
            for k in 0..3 {
                let (mu, sigma) = t.posterior(gamma, k);
                assert!((m[k] - mu).abs() < 0.08 * sigma, "{tag}: mean {m:?}");
                assert!((sd[k] / sigma - 1.0).abs() < 0.06, "{tag}: sd {sd:?}");
            }
            // The AUC-free risks are recovered from R' exactly.
            let r = wrapped.auc_risks(&run.state, &run.risk);
            let mut direct = vec![0.0; r.len()];
            use pacauc::engine::smc::Target;
            t.risks(&run.theta, &mut direct);
            for (a, b) in r.iter().zip(&direct) {
                assert!((a - b).abs() < 1e-9, "{a} vs {b}");
            }
        }
    }
}

/// d = 2 AUC posterior (scale-invariant risk: the radial moves along θ-rays
/// with the risk's known change) from a Gaussian reference near and far.
#[test]
fn d2_auc_posterior_from_a_reference_matches_exact_integration() {
    let (x, y) = toy(80, 11);
    let gamma = 80.0;
    let arcs = arcs(&x, &y);
    for (v, scale, seed) in [(1.0, 1.0, 1), (1.0, 0.3, 2), (4.0, 2.0, 3)] {
        let (lz, mean, sd) = exact_isotropic(&arcs, gamma, v);
        let reference = GaussianReference {
            mean: DVector::from_vec(vec![mean[0], mean[1]]),
            cov: DMatrix::from_diagonal(&DVector::from_vec(vec![
                (scale * sd[0]).powi(2),
                (scale * sd[1]).powi(2),
            ])),
        };
        let target = LinearAuc::new(&x, &y, Prior::Gaussian { var: v });
        let wrapped = ReferenceTarget::new(&target, &reference, gamma).unwrap();
        let s = settings(8000, Kernel::Auto, seed);
        let run = sampler::run(&wrapped, gamma, &s, &Control::new(), &mut NoObserver).unwrap();
        let (m, sdh) = sampler::moments(&run.theta, 2);
        let tag = format!("v = {v}, reference sd × {scale}");
        let stages = run.path.len() - 1;
        assert!(
            (run.log_z - lz).abs() < log_z_tol(stages, 8000),
            "{tag}: log Z {} vs exact {lz} ({stages} stages)",
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

fn problem(seed: u64) -> Problem {
    let (x, y) = pacauc::engine::data::label_noise::generate(300, 8, 0.2, seed);
    let names = (0..8).map(|k| format!("x{k}")).collect();
    Problem::new(names, x, y, 300.0, Prior::Gaussian { var: 1.0 }).unwrap()
}

fn smc_after_ep(s: SmcSettings) -> pacauc::spec::smc_reference::SmcAfterEp {
    use pacauc::spec::build::ep_engine;
    use pacauc::spec::run_spec::EpSpec;
    pacauc::spec::smc_reference::SmcAfterEp {
        ep: ep_engine(&EpSpec::reference(), None, None, s.seed),
        smc: Smc { settings: s },
        spec: None,
    }
}

/// Through the spec layer: EP's Gaussian reaches SMC (the record says so),
/// fewer stages than the prior path, the same posterior means (within 4
/// combined MC sds of 0.016 sd each) and log Z (within the stated tolerance).
#[test]
fn ep_reference_agrees_with_the_prior_path() {
    let p = problem(3);
    let base = SmcSettings {
        particles: 4000,
        seed: 4,
        ..SmcSettings::default()
    };
    let prior = Smc {
        settings: base.clone(),
    }
    .run(&p, &Control::new(), &mut NoObserver)
    .unwrap();
    let ep = smc_after_ep(SmcSettings {
        reference: ReferenceMode::Ep,
        ..base
    })
    .run(&p, &Control::new(), &mut NoObserver)
    .unwrap();
    assert!(ep.converged && prior.converged);
    assert_eq!(ep.details["reference"]["source"], "ep");
    let stages = |f: &pacauc::engine::Fit| f.details["stages"].as_u64().unwrap() as usize;
    assert!(
        stages(&ep) < stages(&prior),
        "{} vs {}",
        stages(&ep),
        stages(&prior)
    );
    let tol = log_z_tol(stages(&ep), 4000) + log_z_tol(stages(&prior), 4000);
    let (a, b) = (ep.log_evidence.unwrap(), prior.log_evidence.unwrap());
    assert!((a - b).abs() < tol, "log Z {a} vs {b} (tolerance {tol:.3})");
    for k in 0..8 {
        let z = (ep.mean[k] - prior.mean[k]).abs() / prior.sd[k];
        assert!(
            z < 0.1,
            "coefficient {k}: {} vs {} ({z:.3} sd)",
            ep.mean[k],
            prior.mean[k]
        );
    }
    // Only the last stage is a Gibbs posterior: the trace keeps it alone,
    // with the AUC risk (a number in [0, 1]).
    let stages_in_trace: Vec<_> = ep
        .trace
        .iter()
        .filter_map(|e| match e {
            Event::SmcStage(s) => Some(s),
            _ => None,
        })
        .collect();
    assert_eq!(stages_in_trace.len(), 1);
    assert_eq!(stages_in_trace[0].gamma, 300.0);
    assert!((0.0..=1.0).contains(&stages_in_trace[0].mean_risk));
}

/// Same seed, 1 or 2 threads: the same bits.
#[test]
fn reference_path_is_the_same_on_one_or_two_threads() {
    let p = problem(5);
    let s = SmcSettings {
        particles: 2000,
        seed: 9,
        reference: ReferenceMode::Ep,
        ..SmcSettings::default()
    };
    let run = |threads: usize| {
        rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .unwrap()
            .install(|| {
                smc_after_ep(s.clone())
                    .run(&p, &Control::new(), &mut NoObserver)
                    .unwrap()
            })
    };
    let (one, two) = (run(1), run(2));
    assert_eq!(one.details["reference"]["source"], "ep");
    assert_eq!(
        one.log_evidence.unwrap().to_bits(),
        two.log_evidence.unwrap().to_bits()
    );
    let bits = |f: &pacauc::engine::Fit| {
        f.particles
            .as_ref()
            .unwrap()
            .theta
            .iter()
            .map(|v| v.to_bits())
            .collect::<Vec<_>>()
    };
    assert_eq!(bits(&one), bits(&two));
}

struct Warnings(Vec<String>);

impl Observer for Warnings {
    fn observe(&mut self, e: Event) {
        if let Event::Log { message, .. } = e {
            self.0.push(message);
        }
    }
}

/// `reference = ep` without a Gaussian handed over: the prior path, announced
/// and recorded (the same bits as asking for the prior path).
#[test]
fn without_a_reference_the_prior_path_is_announced() {
    let p = problem(6);
    let s = SmcSettings {
        particles: 1000,
        seed: 2,
        ..SmcSettings::default()
    };
    let plain = Smc {
        settings: s.clone(),
    }
    .run(&p, &Control::new(), &mut NoObserver)
    .unwrap();
    let mut obs = Warnings(Vec::new());
    let fit = Smc {
        settings: SmcSettings {
            reference: ReferenceMode::Ep,
            ..s
        },
    }
    .run(&p, &Control::new(), &mut obs)
    .unwrap();
    assert!(
        obs.0.iter().any(|m| m.contains("tempers from the prior")),
        "{:?}",
        obs.0
    );
    assert_eq!(fit.details["reference"]["source"], "prior");
    assert!(fit.details["reference"]["why_not"].is_string());
    assert_eq!(
        fit.log_evidence.unwrap().to_bits(),
        plain.log_evidence.unwrap().to_bits()
    );
}
