//! GP-EP against score-space SMC (ALGORITHMS.md §6) on a small 2-D non-linear
//! set, with §4's tolerances: predictive means within 0.15 SMC sd, EP/SMC sd
//! ratio in [0.65, 1.05], |Δ log Z| ≤ 0.6; two SMC seeds must agree first (the
//! reference is converged only if they do).
//!
//! Monte-Carlo error of the reference: N = 2000 particles after moves that
//! decorrelate each stage, so a predictive mean's error is ≈ sd/√ESS ≈ 0.03 sd
//! and log Z's ≈ 0.1 — inside the tolerances; the seed agreement bounds
//! (0.1 sd, 0.3 in log Z) check that. The default test has 50 rows; the
//! larger one (70 rows, N = 4000) is ignored by default:
//! `cargo test --release --test gp_smc -- --ignored` (~6 min on 2 busy cores).

use nalgebra::DMatrix;
use pacauc::engine::ep::Ep;
use pacauc::engine::gp::{GpApprox, GpPrior, KernelKind, LengthScale};
use pacauc::engine::numerics::rng;
use pacauc::engine::smc::{Smc, SmcSettings};
use pacauc::engine::{Control, Engine, Fit, NoObserver, Prior, Problem, ScoreModel};

/// Rows in the plane: positive on a noisy ring of radius 1.
fn ring(n: usize, seed: u64) -> (DMatrix<f64>, Vec<bool>) {
    let mut r = rng::stream(seed, &[]);
    let mut x = DMatrix::zeros(n, 2);
    let mut y = Vec::new();
    for i in 0..n {
        let (a, b) = (rng::normal(&mut r), rng::normal(&mut r));
        x[(i, 0)] = a;
        x[(i, 1)] = b;
        let rad = (a * a + b * b).sqrt();
        y.push((rad - 1.0).abs() + 0.3 * rng::normal(&mut r) < 0.45);
    }
    (x, y)
}

fn predictive(fit: &Fit, x: &DMatrix<f64>) -> (Vec<f64>, Vec<f64>) {
    let ScoreModel::Gp(m) = &fit.model else {
        panic!("a GP model")
    };
    let (mean, var) = m.predict(x);
    (mean, var.iter().map(|v| v.sqrt()).collect())
}

#[test]
fn gp_ep_agrees_with_score_space_smc() {
    agreement(50, 2000);
}

#[test]
#[ignore = "~6 min: cargo test --release --test gp_smc -- --ignored"]
fn gp_ep_agrees_with_score_space_smc_larger() {
    agreement(70, 4000);
}

fn agreement(rows: usize, particles: usize) {
    let (x, y) = ring(rows, 11);
    let n = y.len();
    let prior = Prior::Gp(GpPrior {
        kernel: KernelKind::Se,
        lengthscale: LengthScale::Value(1.0),
        approx: GpApprox::Exact,
    });
    let pb = Problem::new(
        vec!["x1".into(), "x2".into()],
        x.clone(),
        y,
        n as f64,
        prior,
    )
    .unwrap();
    let ctl = Control::new();
    let ep = Ep::default().run(&pb, &ctl, &mut NoObserver).unwrap();
    // Evaluation points: the training rows and a grid around the ring.
    let grid = DMatrix::from_fn(49, 2, |i, j| {
        let (a, b) = ((i / 7) as f64 * 0.6 - 1.8, (i % 7) as f64 * 0.6 - 1.8);
        if j == 0 { a } else { b }
    });
    let pts = DMatrix::from_fn(
        n + 49,
        2,
        |i, j| if i < n { x[(i, j)] } else { grid[(i - n, j)] },
    );
    let smc = |seed| {
        Smc {
            settings: SmcSettings {
                particles,
                seed,
                ..SmcSettings::default()
            },
        }
        .run(&pb, &ctl, &mut NoObserver)
        .unwrap()
    };
    let (a, b) = (smc(1), smc(2));
    assert!(a.converged && b.converged);
    let (ma, sa) = predictive(&a, &pts);
    let (mb, sb) = predictive(&b, &pts);
    let (me, se) = predictive(&ep, &pts);
    let (za, zb, ze) = (
        a.log_evidence.unwrap(),
        b.log_evidence.unwrap(),
        ep.log_evidence.unwrap(),
    );
    let mut worst = (0.0f64, f64::INFINITY, 0.0f64, 0.0f64);
    for k in 0..pts.nrows() {
        let (m_ref, s_ref) = (0.5 * (ma[k] + mb[k]), 0.5 * (sa[k] + sb[k]));
        worst.0 = worst.0.max((me[k] - m_ref).abs() / s_ref);
        worst.1 = worst.1.min(se[k] / s_ref);
        worst.2 = worst.2.max(se[k] / s_ref);
        worst.3 = worst.3.max((ma[k] - mb[k]).abs() / s_ref);
    }
    eprintln!(
        "log Z: EP {ze:.4}, SMC {za:.4} / {zb:.4}; EP means ≤ {:.3} sd off; sd ratio [{:.3}, {:.3}]; seeds ≤ {:.3} sd apart",
        worst.0, worst.1, worst.2, worst.3
    );
    assert!(
        worst.3 <= 0.1 && (za - zb).abs() <= 0.3,
        "the SMC seeds disagree"
    );
    assert!(worst.0 <= 0.15, "EP means {} sd from SMC's", worst.0);
    assert!(
        worst.1 >= 0.65 && worst.2 <= 1.05,
        "sd ratio [{}, {}]",
        worst.1,
        worst.2
    );
    assert!(
        (ze - 0.5 * (za + zb)).abs() <= 0.6,
        "log Z {ze} vs {za}, {zb}"
    );
}

/// Certificates for GP records (engine/certify.rs): score-space SMC is
/// certified through its Gibbs posterior (log Z and the mean risk), while
/// GP-EP's Gaussian is over the training scores, not θ: no bound and no IS
/// check, said in `details.uncertified` and as information in the trace (not
/// warnings: nothing is wrong with the fit, so it is not marked doubtful), and
/// the run still succeeds.
#[test]
fn gp_records_are_certified_or_say_why_not() {
    use pacauc::engine::certify::{Certified, CertifySettings, GP_NO_THETA};
    use pacauc::engine::event::{Event, LogLevel};
    let (x, y) = ring(40, 5);
    let n = y.len();
    let prior = Prior::Gp(GpPrior {
        kernel: KernelKind::Se,
        lengthscale: LengthScale::Value(1.0),
        approx: GpApprox::Exact,
    });
    let pb = Problem::new(vec!["x1".into(), "x2".into()], x, y, n as f64, prior).unwrap();
    let ctl = Control::new();
    let settings = CertifySettings::default();
    assert_ne!(settings.is_draws, Some(0));
    let ep = Certified {
        engine: Box::new(Ep::default()),
        settings,
    }
    .run(&pb, &ctl, &mut NoObserver)
    .unwrap();
    assert!(ep.bound.is_none());
    assert!(ep.details.get("is_check").is_none());
    for key in ["bound", "is_check"] {
        assert_eq!(ep.details["uncertified"][key], GP_NO_THETA, "{key}");
    }
    let notes: Vec<&LogLevel> = ep
        .trace
        .iter()
        .filter_map(|e| match e {
            Event::Log { level, message } if message.contains(GP_NO_THETA) => Some(level),
            _ => None,
        })
        .collect();
    assert_eq!(
        notes,
        [&LogLevel::Info, &LogLevel::Info],
        "one note for the bound, one for the check"
    );
    let fit = pacauc::engine::quality::assess(&ep, &[]);
    assert!(
        fit.iter().all(|w| !w.message.contains(GP_NO_THETA)),
        "{fit:?}"
    );

    let smc = Certified {
        engine: Box::new(Smc {
            settings: SmcSettings {
                particles: 500,
                seed: 3,
                ..SmcSettings::default()
            },
        }),
        settings,
    }
    .run(&pb, &ctl, &mut NoObserver)
    .unwrap();
    let b = smc
        .bound
        .as_ref()
        .expect("SMC with the GP prior is certified");
    assert_eq!(b.rho, "gibbs");
    assert!(b.risk > 0.0 && b.risk.is_finite(), "{}", b.risk);
    assert!(smc.details.get("uncertified").is_none());
}
