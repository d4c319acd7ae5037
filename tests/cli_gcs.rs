//! `pacauc fit --method gcs` as scripts use it: the record's diagnostics, the
//! label-noise loss with its intercept, and the errors of unusable options.

mod common;
use common::{events, json, pacauc};

const DATA: &str = "demo-data/sparse_linear.csv";

#[test]
fn gcs_fit_prints_diagnostics_and_draw_summaries() {
    let v = json(&pacauc(&[
        "fit",
        DATA,
        "--method",
        "gcs",
        "--min-ess",
        "100",
        "--max-steps",
        "3000",
        "--seed",
        "3",
    ]));
    assert_eq!(v["method"], "gcs");
    let d = &v["details"];
    assert!(d["rhat"].as_f64().unwrap() <= 1.01 || v["converged"] == false);
    assert!(d["steps_per_chain"].as_u64().unwrap() <= 3000);
    assert!(d["ess_bulk_min"].as_f64().unwrap() > 0.0);
    let diags = d["diagnostics"].as_array().unwrap();
    assert_eq!(diags.len(), 20);
    for key in ["rhat", "ess_bulk", "ess_tail", "mcse_mean", "mcse_sd"] {
        assert!(diags[0][key].is_number(), "diagnostics.{key}");
    }
    assert_eq!(
        v["coefficients"][0]["quantiles"].as_array().unwrap().len(),
        5
    );
    assert!(!events(&v, "gcs_batch").is_empty());
    assert!(v["auc"]["test"].as_f64().unwrap() > 0.7);
    // The default directions are ellipses around EP's Gaussian, and the record says so.
    assert_eq!(d["directions"]["kind"], "gaussian", "{}", d["directions"]);
    assert_eq!(
        d["directions"]["reference"]["source"], "ep",
        "{}",
        d["directions"]
    );
    let acc = d["acceptance"].as_f64().unwrap();
    assert!(acc > 0.0 && acc <= 1.0 && d["mean_jump"].as_f64().unwrap() > 0.0);
}

/// `--directions uniform`: GH00's circles, every move accepted; a warm-up too
/// short to adapt says why the directions stayed uniform.
#[test]
fn uniform_directions_and_a_short_warm_up() {
    let fit = |extra: &[&str]| {
        let mut args = vec!["fit", DATA, "--method", "gcs", "--max-steps", "300"];
        args.extend_from_slice(extra);
        json(&pacauc(&args))
    };
    let v = fit(&["--directions", "uniform"]);
    assert_eq!(v["details"]["directions"]["kind"], "uniform");
    assert_eq!(v["details"]["acceptance"], 1.0);
    let v = fit(&["--directions", "adapted", "--warmup", "20"]);
    let dir = &v["details"]["directions"];
    assert_eq!(
        (&dir["kind"], &dir["asked"]),
        (&"uniform".into(), &"adapted".into())
    );
    assert!(
        dir["uniform_because"]
            .as_str()
            .unwrap()
            .contains("too short"),
        "{dir}"
    );
}

#[test]
fn label_noise_loss_reports_its_intercept() {
    let v = json(&pacauc(&[
        "fit",
        DATA,
        "--method",
        "gcs",
        "--loss",
        "label-noise",
        "--noise",
        "0.2",
        "--max-steps",
        "600",
    ]));
    assert_eq!(v["details"]["loss"]["kind"], "label_noise");
    assert!(v["details"]["intercept"]["mean"].is_number());
    assert_eq!(v["coefficients"].as_array().unwrap().len(), 20);
    // The default gaussian directions: no EP for this loss, the reference is
    // fitted over the warm-up and the record says why.
    let dir = &v["details"]["directions"];
    assert_eq!(dir["kind"], "gaussian", "{dir}");
    assert_eq!(dir["reference"]["source"], "warm-up", "{dir}");
}

/// Under an ARD prior the default ellipses do not run EP (its ARD evidence
/// loop would re-estimate the variances): the warm-up's reference, said so.
#[test]
fn ard_prior_fits_the_reference_over_the_warm_up() {
    let v = json(&pacauc(&[
        "fit",
        DATA,
        "--method",
        "gcs",
        "--prior",
        "ard",
        "--max-steps",
        "600",
    ]));
    let dir = &v["details"]["directions"];
    assert_eq!(dir["kind"], "gaussian", "{dir}");
    assert_eq!(dir["reference"]["source"], "warm-up", "{dir}");
    assert!(
        dir["reference"]["why_not_ep"]
            .as_str()
            .unwrap()
            .contains("fixed variances"),
        "{dir}"
    );
}

#[test]
fn unusable_options_are_refused() {
    for (args, needle) in [
        (
            vec!["--prior", "spike-slab", "--gamma", "100"],
            "spike-slab is not available for gcs",
        ),
        (vec!["--chains", "1"], "--chains must be ≥ 2; got 1"),
        (vec!["--gamma", "auto"], "--gamma cannot be auto for gcs"),
        (
            vec!["--loss", "label-noise", "--noise", "0.7"],
            "--noise must be in (0, 0.5)",
        ),
        (
            vec!["--noise", "0.2"],
            "--noise applies only with --loss label-noise",
        ),
        (
            vec!["--loss", "label-noise", "--gamma", "2n"],
            "--gamma does not apply with --loss label-noise",
        ),
        (
            vec!["--warmup", "500", "--max-steps", "505"],
            "--max-steps (505) must leave at least 8 kept draws",
        ),
        (
            vec!["--particles", "100"],
            "--particles does not apply to gcs",
        ),
    ] {
        let mut all = vec!["fit", DATA, "--method", "gcs"];
        all.extend(args);
        let out = pacauc(&all);
        assert_eq!(out.status.code(), Some(2), "{all:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(needle), "{all:?}: {err}");
    }
}

/// With `--evidence` a gcs record carries the Gibbs posterior's certificate,
/// as SMC's does (`--epsilon` applies); without it the record has no `bound`,
/// a warning in its trace and on stderr says why, and `pacauc bound` repeats it.
#[test]
fn gcs_is_certified_with_its_evidence() {
    let dir = std::env::temp_dir().join(format!("pacauc-gcs-bound-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let fit = |extra: &[&str], out: &str| {
        let mut args = vec![
            "fit",
            DATA,
            "--method",
            "gcs",
            "--min-ess",
            "50",
            "--max-steps",
            "400",
            "--out",
            out,
        ];
        args.extend(extra);
        pacauc(&args)
    };
    let with = dir.join("with.json");
    // The tighter of the Gibbs and the draws' Gaussian certificates is the
    // primary one; on this 400-step run which wins depends on the chains
    // (ellipses: the draws' Gaussian, 0.380 vs 0.386), so adapted tangents.
    let v = json(&fit(
        &["--evidence", "--epsilon", "0.01", "--directions", "adapted"],
        with.to_str().unwrap(),
    ));
    let b = &v["bound"];
    assert_eq!(b["rho"], "gibbs");
    assert_eq!(b["epsilon"], 0.01);
    assert_eq!(b["others"][0]["rho"], "draws_gaussian");
    assert!(b["risk"].as_f64().unwrap() > b["empirical_risk"].as_f64().unwrap());
    assert!(b["kl"].as_f64().unwrap() > 0.0);
    let same = json(&pacauc(&[
        "bound",
        with.to_str().unwrap(),
        "--epsilon",
        "0.01",
    ]));
    assert_eq!(same["risk"], b["risk"]);
    let without = dir.join("without.json");
    let out = fit(&[], without.to_str().unwrap());
    let v = json(&out);
    // Without --evidence, the default: certified through the draws' Gaussian
    // fit, said as information (no warning), the Gibbs posterior's own
    // needing --evidence.
    assert_eq!(v["bound"]["rho"], "draws_gaussian");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!err.contains("no PAC-Bayes certificate"), "{err}");
    assert!(
        !v["warnings"]
            .as_array()
            .is_some_and(|w| w.iter().any(|w| w.to_string().contains("no PAC-Bayes"))),
        "{}",
        v["warnings"]
    );
    assert!(events(&v, "log").iter().any(|e| {
        e["message"]
            .as_str()
            .is_some_and(|m| m.contains("fitted to the draws") && m.contains("`evidence`"))
    }));
    let again = json(&pacauc(&["bound", without.to_str().unwrap()]));
    assert_eq!(again["risk"], v["bound"]["risk"]);
    std::fs::remove_dir_all(&dir).ok();
}
