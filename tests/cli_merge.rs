//! `pacauc merge`: three SMC runs made apart (`--run r` of `--runs 3`, each
//! in its own process) pool into the record `--runs 3` makes in one process,
//! timings aside; refusals name what is wrong.

mod common;
use common::{json, pacauc};

use std::process::Command;

const DATA: &str = "demo-data/sparse_linear.csv";

fn tmp(name: &str) -> std::path::PathBuf {
    let d = std::env::temp_dir().join(format!("pacauc-merge-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// The record without what two runs of one spec may differ in: timings.
fn untimed(v: &serde_json::Value) -> serde_json::Value {
    match v {
        serde_json::Value::Object(m) => serde_json::Value::Object(
            m.iter()
                .filter(|(k, _)| !(k.contains("seconds") || k.as_str() == "elapsed"))
                .map(|(k, x)| (k.clone(), untimed(x)))
                .collect(),
        ),
        serde_json::Value::Array(a) => serde_json::Value::Array(a.iter().map(untimed).collect()),
        x => x.clone(),
    }
}

const SPEC: [&str; 8] = [
    "--method",
    "smc",
    "--particles",
    "400",
    "--runs",
    "3",
    "--seed",
    "5",
];

#[test]
fn runs_made_apart_merge_into_the_runs_record() {
    let dir = tmp("three");
    let whole = json(&pacauc(&[&["fit", DATA][..], &SPEC[..]].concat()));
    let mut parts = Vec::new();
    for r in ["3", "1", "2"] {
        let out = dir.join(format!("part{r}.json"));
        let out_s = out.to_str().unwrap().to_string();
        let part = json(&pacauc(
            &[
                &["fit", DATA][..],
                &SPEC[..],
                &["--run", r, "--out", &out_s][..],
            ]
            .concat(),
        ));
        assert_eq!(part["part"]["run"].as_u64().unwrap().to_string(), r);
        assert!(part["runs"].is_null(), "a part is a single run's record");
        parts.push(out_s);
    }
    let merged_path = dir.join("merged.json");
    let mut args = vec!["merge".to_string()];
    args.extend(parts.iter().cloned());
    args.extend(["--out".into(), merged_path.to_str().unwrap().into()]);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let merged = json(&pacauc(&args));
    assert_eq!(untimed(&merged), untimed(&whole));
    assert_eq!(merged["runs"]["count"], 3);
    // Refusals: a missing run, a part given twice, a record that is not a part.
    let bin = env!("CARGO_BIN_EXE_pacauc");
    let fail = |args: &[&str]| {
        let o = Command::new(bin).args(args).output().unwrap();
        assert_eq!(o.status.code(), Some(2), "{args:?}");
        String::from_utf8_lossy(&o.stderr).to_string()
    };
    let e = fail(&["merge", &parts[0], &parts[1]]);
    assert!(e.contains("run(s) 2 missing"), "{e}");
    let e = fail(&["merge", &parts[0], &parts[0], &parts[1]]);
    assert!(e.contains("given twice"), "{e}");
    let e = fail(&["merge", merged_path.to_str().unwrap(), &parts[0]]);
    assert!(e.contains("not the record of one run made apart"), "{e}");
    let o = Command::new(bin)
        .args(["fit", DATA, "--method", "smc", "--run", "2"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("run"));
    let _ = std::fs::remove_dir_all(&dir);
}
