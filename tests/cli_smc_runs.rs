//! `pacauc fit --method smc --runs 3` end to end: the record's `runs` section
//! and trace, `predict`, `bound`, `plot` and the explorer's replay of that
//! record; `--runs 1` keeps the single-run record.

mod common;
use common::{events, json, pacauc};

use pacauc::app::run_view::RunView;
use pacauc::engine::record::RunRecord;

const DATA: &str = "demo-data/sparse_linear.csv";

fn tmp(name: &str) -> std::path::PathBuf {
    let d = std::env::temp_dir().join(format!("pacauc-runs-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

#[test]
fn three_runs_end_to_end() {
    let dir = tmp("e2e");
    let rec = dir.join("smc3.json");
    let rec_s = rec.to_str().unwrap();
    let v = json(&pacauc(&[
        "fit",
        DATA,
        "--method",
        "smc",
        "--particles",
        "500",
        "--runs",
        "3",
        "--seed",
        "2",
        "--out",
        rec_s,
    ]));
    let runs = &v["runs"];
    assert_eq!(runs["count"], 3);
    assert_eq!(runs["pooling"], "equal");
    let each = runs["runs"].as_array().unwrap();
    assert_eq!(each.len(), 3);
    assert_eq!(each[0]["seed"], 2, "run 1 is the seed's own single run");
    for r in each {
        for key in ["log_z", "stages", "moves", "seconds", "mean_risk"] {
            assert!(r[key].is_number(), "runs[].{key}");
        }
        assert_eq!(r["mean"].as_array().unwrap().len(), 20);
        assert!(r["converged"].is_boolean());
    }
    let rhat = runs["rhat"].as_array().unwrap();
    assert_eq!(rhat.len(), 20);
    let max = runs["rhat_max"].as_f64().unwrap();
    assert!((1.0 - 1e-3..1.01).contains(&max), "R-hat {max}");
    // The pooled log Z is the record's evidence; the mean ± sd over the runs' log Ẑ.
    let lz: Vec<f64> = each.iter().map(|r| r["log_z"].as_f64().unwrap()).collect();
    let mean = lz.iter().sum::<f64>() / 3.0;
    assert!((runs["log_z"]["mean"].as_f64().unwrap() - mean).abs() < 1e-9);
    assert_eq!(v["log_evidence"], runs["log_z"]["pooled"]);
    assert_eq!(v["details"]["runs"]["count"], 3);
    // The trace: each run behind its marker; the path, every run's stages.
    let markers = events(&v, "smc_run");
    assert_eq!(markers.len(), 3);
    assert_eq!(markers[2]["run"], 3);
    assert_eq!(markers[1]["seed"], each[1]["seed"]);
    let stages: u64 = each.iter().map(|r| r["stages"].as_u64().unwrap() + 1).sum();
    assert_eq!(events(&v, "smc_stage").len() as u64, stages);
    assert_eq!(
        v["details"]["path"].as_array().unwrap().len() as u64,
        stages
    );
    // The pooled cloud is 3 × 500 particles: its mean is the mean of the runs' means.
    for k in 0..20 {
        let m = each
            .iter()
            .map(|r| r["mean"][k].as_f64().unwrap())
            .sum::<f64>()
            / 3.0;
        let got = v["coefficients"][k]["mean"].as_f64().unwrap();
        assert!((got - m).abs() < 1e-9, "coefficient {k}: {got} vs {m}");
    }
    // The final γ's certificate says how the runs were pooled (the headline
    // may be an earlier stage of the path, kept beside it).
    assert!(
        v["bound"]
            .to_string()
            .contains("pooled over 3 independent runs")
    );
    assert!(
        v["warnings"]
            .as_array()
            .unwrap()
            .iter()
            .all(|w| w["code"] != "runs_disagree"),
        "{}",
        v["warnings"]
    );

    // predict scores with the pooled posterior mean.
    let out = pacauc(&["predict", rec_s, DATA]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let csv = String::from_utf8(out.stdout).unwrap();
    let first = csv.lines().nth(1).unwrap();
    assert!(first.ends_with(",ok"), "{first}");
    // A header and one line per row of the demo (1000).
    assert_eq!(csv.lines().count(), 1001);

    // bound reads it back.
    let b = json(&pacauc(&["bound", rec_s]));
    assert!((b["risk"].as_f64().unwrap() - v["bound"]["risk"].as_f64().unwrap()).abs() < 1e-9);

    // plot writes the runs figure; its SVG has both panels and 1 + 3 + 3 series.
    let figs = dir.join("figs");
    let out = pacauc(&[
        "plot",
        rec_s,
        "--out",
        figs.to_str().unwrap(),
        "--format",
        "svg",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let svg = std::fs::read_to_string(figs.join("smc-runs.svg")).unwrap();
    assert_eq!(svg.matches(r#"<g class="panel">"#).count(), 2);
    assert_eq!(svg.matches(r#"<g class="series""#).count(), 7);
    assert!(svg.contains("run 3"));

    // The explorer's replay: the trace pane holds the last run.
    let text = std::fs::read_to_string(&rec).unwrap();
    let record = RunRecord::from_json(&text).unwrap();
    assert_eq!(record.runs.as_ref().unwrap().count, 3);
    let view = RunView::from_record(1, record, None);
    assert_eq!(view.smc_run, Some((3, 3)));
    assert_eq!(
        view.smc.len() as u64,
        each[2]["stages"].as_u64().unwrap() + 1
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn one_run_keeps_the_single_run_record() {
    let v = json(&pacauc(&[
        "fit",
        DATA,
        "--method",
        "smc",
        "--particles",
        "300",
        "--seed",
        "2",
    ]));
    assert!(v.get("runs").is_none());
    assert_eq!(v["details"]["runs"]["count"], 1);
    assert!(
        v["details"]["runs"]["rhat_max"].is_null(),
        "no R-hat for one run"
    );
    assert!(events(&v, "smc_run").is_empty());
    // --runs is an SMC setting with the θ priors only.
    let out = pacauc(&["fit", DATA, "--method", "ep", "--runs", "2"]);
    assert!(!out.status.success());
}
