//! `pacauc reproduce` end to end: `--quick` on the demo data (every method,
//! one split) writes the tables, records and the ROC figure; a second run
//! reuses every record; a record made by `pacauc fit` with the same seed has
//! the same spec and test AUC as reproduce's; a missing data folder is
//! refused with the fix. On the shared data sets (when present) `--quick`
//! runs on Glass's first split.

mod common;
use common::pacauc;

use std::path::{Path, PathBuf};

fn tmp(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("pacauc-reproduce-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn stderr(o: &std::process::Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn record(path: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

#[test]
fn quick_on_demo_data_writes_tables_records_and_figures_then_resumes() {
    let out = tmp("quick");
    let o = out.to_str().unwrap();
    let args = [
        "reproduce",
        "--quick",
        "--data",
        "demo-data",
        "--only",
        "sparse_linear",
        "--splits",
        "1",
        "--out",
        o,
    ];
    let first = pacauc(&args);
    assert!(first.status.success(), "{}", stderr(&first));
    let err = stderr(&first);
    assert!(err.contains("9 fitted, 0 reused"), "{err}");
    for key in [
        "logit",
        "rankboost",
        "ep",
        "ep-ard",
        "ep-ss",
        "smc",
        "gp-ep",
        "vb",
        "gcs",
    ] {
        let r = out.join(format!("records/sparse_linear_{key}_0.json"));
        assert!(r.is_file(), "{}", r.display());
        assert!(err.contains(&format!("sparse_linear_{key}_0")), "{err}");
    }
    // The FromEp runs use the γ EP's CV chose on the same split.
    let ep = record(&out.join("records/sparse_linear_ep_0.json"));
    let smc = record(&out.join("records/sparse_linear_smc_0.json"));
    assert_eq!(ep["gamma"], smc["gamma"]);
    let t1 = std::fs::read_to_string(out.join("table1.md")).unwrap();
    assert!(t1.contains("| sparse_linear | 1 |"), "{t1}");
    assert!(t1.contains("## Paired differences against logit"), "{t1}");
    let csv = std::fs::read_to_string(out.join("table1.csv")).unwrap();
    assert_eq!(csv.lines().count(), 1 + 9, "{csv}");
    assert!(out.join("table2.md").is_file() && out.join("table2.csv").is_file());
    let png = std::fs::read(out.join("figures/roc-sparse_linear.png")).unwrap();
    assert_eq!(&png[1..4], b"PNG");
    let svg = std::fs::read_to_string(out.join("figures/roc-sparse_linear.svg")).unwrap();
    assert!(svg.contains("<svg") && svg.contains("ROC curves"));
    // Resume: every record reused, the tables the same.
    let second = pacauc(&args);
    assert!(second.status.success(), "{}", stderr(&second));
    assert!(
        stderr(&second).contains("0 fitted, 9 reused"),
        "{}",
        stderr(&second)
    );
    let again = std::fs::read_to_string(out.join("table1.csv")).unwrap();
    assert_eq!(again, csv);
    // The tables from the records alone: the same.
    let mut only = args.to_vec();
    only.push("--tables-only");
    let third = pacauc(&only);
    assert!(third.status.success(), "{}", stderr(&third));
    assert!(
        stderr(&third).contains("0 fitted, 9 reused"),
        "{}",
        stderr(&third)
    );
    assert_eq!(
        std::fs::read_to_string(out.join("table1.csv")).unwrap(),
        csv
    );
    let _ = std::fs::remove_dir_all(&out);
}

#[test]
fn fit_with_the_same_seed_gives_reproduces_record() {
    let out = tmp("parity");
    let o = out.to_str().unwrap();
    let r = pacauc(&[
        "reproduce",
        "--data",
        "demo-data",
        "--only",
        "sparse_linear",
        "--splits",
        "2",
        "--methods",
        "logit,ep",
        "--out",
        o,
    ]);
    assert!(r.status.success(), "{}", stderr(&r));
    for (method, extra) in [("logit", vec![]), ("ep", vec!["--gamma", "auto"])] {
        let fitted = out.join(format!("fit-{method}.json"));
        let mut args = vec![
            "fit",
            "demo-data/sparse_linear.csv",
            "--method",
            method,
            "--seed",
            "1",
            "--out",
            fitted.to_str().unwrap(),
        ];
        args.extend(extra);
        let f = pacauc(&args);
        assert!(f.status.success(), "{}", stderr(&f));
        let a = record(&fitted);
        let b = record(&out.join(format!("records/sparse_linear_{method}_1.json")));
        assert_eq!(a["spec"], b["spec"], "{method}");
        assert_eq!(a["auc"]["test"], b["auc"]["test"], "{method}");
        assert_eq!(a["split"], b["split"], "{method}");
    }
    let _ = std::fs::remove_dir_all(&out);
}

#[test]
fn a_missing_data_folder_is_refused_with_the_fix() {
    let out = tmp("missing");
    let o = pacauc(&[
        "reproduce",
        "--quick",
        "--data",
        "no/such/folder",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("no/such/folder"), "{}", stderr(&o));
    let _ = std::fs::remove_dir_all(&out);
}

#[test]
fn quick_on_the_shared_glass_split() {
    let data = Path::new("../shared/datasets");
    if !data.join("glass.csv").is_file() {
        eprintln!(
            "skipped: ../shared/datasets/glass.csv is absent (the demo-data test covers --quick)"
        );
        return;
    }
    let out = tmp("glass");
    let o = pacauc(&[
        "reproduce",
        "--quick",
        "--only",
        "glass",
        "--splits",
        "1",
        "--methods",
        "logit,ep,smc,vb",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let t1 = std::fs::read_to_string(out.join("table1.md")).unwrap();
    // RACL14's Glass row beside ours.
    assert!(
        t1.contains("| glass | 1 |") && t1.contains("0.9843"),
        "{t1}"
    );
    let _ = std::fs::remove_dir_all(&out);
}
