//! Tests of `spec::cost`: the estimates against the measured runs.

use super::cost::*;
use crate::spec::run_spec::{DataSpec, MethodSpec, RunSpec};

fn spec(method: &str) -> RunSpec {
    RunSpec::for_method(DataSpec::of("x.csv"), method).unwrap()
}

const MILLION: Sizes = Sizes {
    rows: 1_000_000,
    positives: 250_000,
    features: 20,
};
const LIMITS: Limits = Limits {
    seconds: 3600.0,
    bytes: 20e9,
};

#[test]
fn ep_on_all_pairs_of_a_million_rows_is_refused_with_pairs_that_fit() {
    let msg = refusal(&spec("ep"), MILLION, 2, LIMITS).expect("1.9e11 sites");
    assert!(msg.contains("--pairs "), "{msg}");
    assert!(msg.contains("--ignore-cost"), "{msg}");
    // The suggested B fits.
    let b: usize = msg
        .split("--pairs ")
        .nth(1)
        .unwrap()
        .split(|c: char| !c.is_ascii_digit())
        .next()
        .unwrap()
        .parse()
        .unwrap();
    let mut s = spec("ep");
    if let MethodSpec::Ep(e) = &mut s.method {
        e.pairs = Some(b);
        e.is_draws = Some(0);
    }
    assert!(estimate(&s, MILLION, 2).seconds <= LIMITS.seconds);
}

#[test]
fn small_problems_and_stochastic_vb_pass() {
    let small = Sizes {
        rows: 768,
        positives: 268,
        features: 8,
    };
    for m in ["logit", "rankboost", "smc", "ep", "vb", "gcs"] {
        assert_eq!(refusal(&spec(m), small, 2, LIMITS), None, "{m}");
    }
    let mut vb = spec("vb");
    if let MethodSpec::Vb(v) = &mut vb.method {
        v.is_draws = Some(0);
    }
    assert_eq!(refusal(&vb, MILLION, 2, LIMITS), None);
}

#[test]
fn smc_at_a_million_rows_names_the_gaussian_methods() {
    let msg = refusal(&spec("smc"), MILLION, 2, LIMITS).expect("hours");
    assert!(msg.contains("≈ "), "a central estimate: {msg}");
    assert!(msg.contains("--method vb"), "{msg}");
}

/// SMC's evaluations (stages × moves × particles) against the measured
/// prior-path runs (BENCHMARKS smc-dna-n, smc-survey-r60-seeds, smc-sonar,
/// smc-survey-wide; Pima 7 stages; above γ = n smc-eeg-stage: Sonar 8n,
/// EEG split 0 at 16n and split 1 at 8n, 10 000 particles): within the
/// stated factor 2 both ways.
#[test]
fn smc_stages_and_moves_follow_the_measured_runs() {
    // (training rows, features, γ/n, stages, evaluations or 0 when not kept)
    let runs = [
        ("dna", 2390, 180, 1.0, 23.0, 5.92e6),
        ("survey", 3300, 85, 1.0, 22.0, 3.75e6),
        ("sonar", 156, 60, 1.0, 8.0, 0.64e6),
        ("pima", 576, 8, 1.0, 7.0, 0.0),
        ("survey 300x500", 300, 500, 1.0, 12.0, 7.16e6),
        ("sonar 8n", 156, 60, 8.0, 20.0, 11.52e6),
        ("eeg 16n", 11235, 14, 16.0, 26.0, 4.75e6),
        ("eeg 8n", 11235, 14, 8.0, 23.0, 3.42e6),
    ];
    for (name, rows, features, per_n, stages, evals) in runs {
        let mut prior_path = spec("smc");
        prior_path.gamma = Some(crate::spec::values::Gamma::PerN(per_n));
        if let MethodSpec::Smc(smc) = &mut prior_path.method {
            smc.smc_reference = crate::spec::run_spec::SmcReference::Prior;
        }
        let s = Sizes {
            rows,
            positives: rows / 3,
            features,
        };
        let d = features.min(rows) as f64;
        let st = (plan::smc_stages(d, per_n * rows as f64) * plan::smc_stage_factor(per_n)).round();
        assert!(
            (0.5..=2.0).contains(&(stages / st)),
            "{name}: {stages} vs {st}"
        );
        if evals > 0.0 {
            let est = estimate(&prior_path, s, 1);
            let model = est.parts[0].cpu_seconds / risk_seconds(s);
            assert!(
                (0.5..=2.0).contains(&(evals / model)),
                "{name}: {evals} vs {model}"
            );
            assert!(!est.lower_bound);
        }
    }
}

/// The peak of `fit --method logit --lambda 1` (BENCHMARKS fit-peak-1e6,
/// fit-peak-1e7: 448 MB and 4.30 GB; 7.5·10⁵ and 7.5·10⁶ training rows ×
/// 20) within 25 %, and the load's (bench-load: 3.99 GB at 10⁷).
#[test]
fn memory_follows_the_measured_peaks() {
    let mut logit = spec("logit");
    if let MethodSpec::Logit(l) = &mut logit.method {
        l.lambda = Some(1.0);
    }
    for (rows, peak) in [(750_000, 448e6), (7_500_000, 4.30e9)] {
        let s = Sizes {
            rows,
            positives: rows / 4,
            features: 20,
        };
        let got = estimate(&logit, s, 2).bytes;
        assert!((got / peak - 1.0).abs() < 0.25, "{rows}: {got} vs {peak}");
        let (load, _) = data_bytes(&logit, s);
        if rows == 7_500_000 {
            assert!((load / 3.99e9 - 1.0).abs() < 0.1, "{load}");
        }
    }
}

/// The calibration points of the risk's cost (`pacauc bench-risk`, d = 20;
/// 28.3 ns at 7.5·10⁶ rows since the cache-blocked count), within 10%.
#[test]
fn the_risk_cost_follows_the_measured_cache_cliff() {
    for (rows, ns) in [
        (7500, 5.2),
        (75_000, 10.6),
        (750_000, 21.7),
        (7_500_000, 28.3),
    ] {
        let s = Sizes {
            rows,
            positives: rows / 4,
            features: 20,
        };
        let model = risk_seconds(s) / rows as f64 * 1e9;
        assert!(
            (0.9..1.1).contains(&(model / ns)),
            "{rows}: {model} vs {ns}"
        );
    }
}

#[test]
fn memory_alone_can_refuse() {
    let tight = Limits {
        seconds: f64::INFINITY,
        bytes: 1e8,
    };
    let msg = refusal(&spec("logit"), MILLION, 2, tight).unwrap();
    assert!(msg.contains("memory"), "{msg}");
}

/// Logit's λ by CV against BENCHMARKS logit-1e6 and logit-1e7 (CPU s of the
/// whole run less the Arrow load, ≈ 0.5 and 4.4 s): within a factor 2 both
/// ways, the CV counted on its `--cv-rows` subsample above 10⁶ rows.
#[test]
fn logit_cv_follows_the_measured_runs() {
    for (rows, measured) in [(750_000, 14.3), (7_500_000, 35.1)] {
        let s = Sizes {
            rows,
            positives: rows / 4,
            features: 20,
        };
        let est = estimate(&spec("logit"), s, 1).seconds;
        assert!(
            (0.5..2.0).contains(&(est / measured)),
            "{rows} rows: estimated {est:.1} CPU s, measured {measured}"
        );
    }
}

/// The certificate from sampled pairs against its measured CPU (VB runs,
/// `details.certificate_cpu_seconds`): 1.4 s at 7.5·10⁴ rows, 4.0 s at
/// 7.5·10⁶, within a factor 2 both ways.
#[test]
fn the_sampled_certificate_follows_the_measured_runs() {
    for (rows, measured) in [(75_000, 1.37), (7_500_000, 4.03)] {
        let s = Sizes {
            rows,
            positives: rows / 4,
            features: 20,
        };
        let mut vb = spec("vb");
        if let MethodSpec::Vb(v) = &mut vb.method {
            v.is_draws = Some(0);
        }
        let est = estimate(&vb, s, 1);
        let cert = est
            .parts
            .iter()
            .find(|p| p.what.starts_with("certificate"))
            .unwrap();
        assert!(
            (0.5..2.0).contains(&(cert.cpu_seconds / measured)),
            "{rows} rows: estimated {:.2} CPU s, measured {measured}",
            cert.cpu_seconds
        );
    }
}

/// The default gcs (ellipses around EP's Gaussian) costs EP plus a few risk
/// evaluations a step, not a pass over the pairs a step: on EEG's shape
/// (11 235 training rows, 31 M pairs) EP's part and the ellipses are named,
/// and the whole is well below adapted tangents' O(pairs) steps.
#[test]
fn gcs_ellipses_cost_ep_and_risks_not_pairs_per_step() {
    let eeg = Sizes {
        rows: 11_235,
        positives: 5_042,
        features: 14,
    };
    let gaussian = estimate(&spec("gcs"), eeg, 1);
    let whats: Vec<&str> = gaussian.parts.iter().map(|p| p.what.as_str()).collect();
    assert!(whats.iter().any(|w| w.starts_with("EP:")), "{whats:?}");
    assert!(whats.iter().any(|w| w.contains("ellipse")), "{whats:?}");
    let mut adapted = spec("gcs");
    if let MethodSpec::Gcs(g) = &mut adapted.method {
        g.directions = crate::engine::gcs::Directions::Adapted;
    }
    let adapted = estimate(&adapted, eeg, 1);
    assert!(
        gaussian.seconds < adapted.seconds / 3.0,
        "{} vs {}",
        gaussian.seconds,
        adapted.seconds
    );
}

/// EP's walk in γ (`ep::continuation`: from n/16, up to ×2 a point) is
/// stated beside a fixed-γ EP run and not counted: 5 runs at n, 8 at 8n
/// (EEG at n under ×4 steps: 5 points after the direct run), none at or below n/16
/// or with γ by CV (the folds walk the grid).
#[test]
fn eps_walk_in_gamma_is_stated_not_counted() {
    use crate::spec::values::Gamma;
    assert_eq!(plan::ep_walk_runs(1.0 / 16.0), 0.0);
    assert_eq!(plan::ep_walk_runs(0.125), 2.0);
    assert_eq!(plan::ep_walk_runs(1.0), 5.0);
    assert_eq!(plan::ep_walk_runs(8.0), 8.0);
    let eeg = Sizes {
        rows: 11_235,
        positives: 5_000,
        features: 14,
    };
    for (over_n, runs) in [(1.0, 5.0), (8.0, 8.0)] {
        let mut s = spec("ep");
        s.gamma = Some(Gamma::Value(over_n * eeg.rows as f64));
        let est = estimate(&s, eeg, 1);
        let counted: f64 = est.parts.iter().map(|p| p.cpu_seconds).sum();
        assert_eq!(est.seconds, counted);
        let walk = est.if_needed.iter().find(|p| p.what.contains("walk in γ"));
        let walk = walk.unwrap_or_else(|| panic!("{est:?}"));
        assert!((walk.cpu_seconds - runs * est.parts[0].cpu_seconds).abs() < 1e-9);
    }
    let mut s = spec("ep");
    s.gamma = Some(Gamma::Auto);
    assert!(estimate(&s, eeg, 1).if_needed.is_empty());
}
