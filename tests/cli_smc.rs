//! `pacauc fit --method smc` and `pacauc bench --method smc` as scripts use them.

mod common;
use common::{json, pacauc_env};

const DATA: &str = "demo-data/sparse_linear.csv";

#[test]
fn smc_fit_prints_evidence_path_and_summaries() {
    let v = json(&pacauc_env(
        &[
            "fit",
            DATA,
            "--method",
            "smc",
            "--particles",
            "1000",
            "--seed",
            "3",
        ],
        &[],
    ));
    assert_eq!(v["method"], "smc");
    assert!(v["log_evidence"].as_f64().unwrap() < 0.0);
    assert_eq!(
        v["gamma"].as_f64(),
        v["split"]["train_rows"].as_f64(),
        "γ defaults to n_train"
    );
    let path = v["details"]["path"].as_array().unwrap();
    assert!(path.len() >= 2);
    for key in ["gamma", "log_z", "ess_frac", "acceptance", "moves", "scale"] {
        assert!(path[1][key].is_number(), "path.{key}");
    }
    assert_eq!(v["details"]["settings"]["particles"], 1000);
    let c = &v["coefficients"][0];
    assert_eq!(c["quantiles"].as_array().unwrap().len(), 5);
    assert!(v["auc"]["alternatives"]["marginal_mode"]["test"].is_number());
    assert_eq!(v["histograms"].as_array().unwrap().len(), 20);
    assert!(v["trace"].as_array().unwrap().len() == path.len());
    // The default reference is auto; with 1000 particles the prior path is
    // estimated cheaper than EP plus the path from its Gaussian (recorded).
    let r = &v["details"]["reference"];
    assert_eq!(r["asked"], "auto", "{r}");
    assert_eq!(r["source"], "prior", "{r}");
    assert!(
        r["why"].as_str().unwrap().contains("EP does not pay"),
        "{r}"
    );
    for k in ["ep", "smc_from_ep", "smc_from_prior"] {
        assert!(r["estimate_cpu_seconds"][k].as_f64().unwrap() > 0.0, "{k}");
    }
}

/// The same seed with 1 or 2 threads, and matrixmultiply's own pool at 1 or 4
/// threads: the same record apart from timings (and the thread count the spec
/// records as asked for).
#[test]
fn output_does_not_depend_on_threads() {
    // Every timing, wherever a phase records one (`*seconds`, `elapsed`).
    fn strip_timings(v: &mut serde_json::Value) {
        match v {
            serde_json::Value::Object(m) => {
                m.retain(|k, _| !(k.contains("seconds") || k == "elapsed"));
                m.values_mut().for_each(strip_timings);
            }
            serde_json::Value::Array(a) => a.iter_mut().for_each(strip_timings),
            _ => {}
        }
    }
    let strip = |mut v: serde_json::Value| {
        v["spec"]["threads"] = serde_json::Value::Null;
        strip_timings(&mut v);
        v
    };
    let args = [
        "fit",
        DATA,
        "--method",
        "smc",
        "--particles",
        "1000",
        "--seed",
        "4",
    ];
    let mut runs = Vec::new();
    for (threads, mm) in [("1", "1"), ("2", "4"), ("2", "1")] {
        let mut a = args.to_vec();
        a.extend(["--threads", threads]);
        runs.push(strip(json(&pacauc_env(&a, &[("MATMUL_NUM_THREADS", mm)]))));
    }
    assert_eq!(runs[0], runs[1]);
    assert_eq!(runs[0], runs[2]);
}

#[test]
fn smc_options_are_checked() {
    let out = pacauc_env(
        &[
            "fit",
            DATA,
            "--method",
            "smc",
            "--particles",
            "1000",
            "--waste-free",
            "7",
        ],
        &[],
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("multiple of P"));
    let out = pacauc_env(&["fit", DATA, "--method", "smc", "--ess", "1.5"], &[]);
    assert_eq!(out.status.code(), Some(2));
    let out = pacauc_env(
        &[
            "fit",
            DATA,
            "--method",
            "smc",
            "--prior",
            "spike-slab",
            "--kernel",
            "pcn",
        ],
        &[],
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("Gaussian prior"));
    // γ = auto: not with the GP prior (its score-space particles score no held-out rows).
    let out = pacauc_env(
        &[
            "fit", DATA, "--method", "smc", "--prior", "gp", "--gamma", "auto",
        ],
        &[],
    );
    assert_eq!(out.status.code(), Some(2));
    let out = pacauc_env(
        &[
            "fit",
            DATA,
            "--method",
            "smc",
            "--particles",
            "500",
            "--max-stages",
            "1",
        ],
        &[],
    );
    assert_eq!(out.status.code(), Some(3));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--max-stages"));
    let out = pacauc_env(&["--threads", "0", "fit", DATA], &[]);
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn bench_reports_the_floor() {
    let v = json(&pacauc_env(
        &[
            "bench",
            DATA,
            "--method",
            "smc",
            "--particles",
            "1000",
            "--waste-free",
            "10",
            "--kernel",
            "rw",
            "--fixed-scale",
            "--no-radial",
            "--repeat",
            "2",
        ],
        &[],
    ));
    assert_eq!(v["method"], "smc");
    let evals = v["risk_evaluations"].as_u64().unwrap();
    let stages = v["stages"].as_u64().unwrap();
    assert_eq!(evals, 1000 + stages * 900);
    assert!(v["floor_seconds"]["best"].as_f64().unwrap() > 0.0);
    assert!(v["ratio_to_floor"].as_f64().unwrap() > 0.0);
    assert_eq!(v["smc_seconds"]["all"].as_array().unwrap().len(), 2);
    let v = json(&pacauc_env(
        &[
            "bench", DATA, "--method", "logit", "--repeat", "1", "--lambda", "1",
        ],
        &[],
    ));
    assert!(v["fit_seconds"]["best"].as_f64().unwrap() > 0.0);
}

/// `bench --method smc --runs 2` times the whole fit (both runs pooled), says
/// on stderr and in the report that it has no floor, and is not the single
/// run a plain SMC bench times (which would ignore --runs).
#[test]
fn bench_with_several_runs_times_the_whole_fit() {
    let out = pacauc_env(
        &[
            "bench",
            DATA,
            "--method",
            "smc",
            "--particles",
            "500",
            "--runs",
            "2",
            "--repeat",
            "1",
        ],
        &[],
    );
    let v = json(&out);
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("without the floor"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(v["floor_note"].as_str().unwrap().contains("--runs 2"));
    assert!(v.get("floor_seconds").is_none() && v.get("stages").is_none());
    assert_eq!(v["parameters"]["runs"], 2, "{v:#}");
    assert!(v["fit_seconds"]["best"].as_f64().unwrap() > 0.0);
}
