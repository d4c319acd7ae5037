//! Intervals and comparisons as a user meets them: `fit` stores and prints
//! DeLong intervals, `compare` runs two methods on a CSV with `fit`'s data
//! options and reports paired differences, the wrong default target is
//! warned, `predict` says which rows its AUC covers, `plot` keeps data sets
//! apart, and the small print (γ = 0, typos, binary files, missing folders).

mod common;
use common::{json, pacauc};

use std::path::PathBuf;

fn tmp(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("pacauc-intervals-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// Built like the file: the target `deny` first (12% yes), a yes/no
/// feature last (about 1.6% yes), a signal in `ratio`.
fn deny_first(dir: &std::path::Path) -> PathBuf {
    let mut s = String::from("deny,ratio,score,single,selfemp\n");
    for i in 0..600u32 {
        let deny = i % 25 < 3;
        let noise = ((i * 7919) % 101) as f64 / 101.0;
        let ratio = 0.3 + if deny { 0.15 } else { 0.0 } + 0.3 * noise;
        let se = if i % 62 == 5 { "yes" } else { "no" };
        s.push_str(&format!(
            "{},{ratio:.3},{},{},{se}\n",
            if deny { "yes" } else { "no" },
            (i * 31) % 17,
            if i % 5 < 2 { "yes" } else { "no" }
        ));
    }
    let p = dir.join("deny.csv");
    std::fs::write(&p, s).unwrap();
    p
}

#[test]
fn the_wrong_default_target_is_warned_with_the_fix() {
    let d = tmp("target");
    let f = deny_first(&d);
    let o = pacauc(&["fit", f.to_str().unwrap(), "--method", "logit"]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let err = text(&o.stderr);
    assert!(err.contains("--target 'deny'"), "{err}");
    let r = json(&o);
    let warned = r["warnings"].as_array().unwrap().iter().any(|w| {
        w["message"]
            .as_str()
            .unwrap_or("")
            .contains("--target 'deny'")
    });
    assert!(warned, "{}", r["warnings"]);
    // Named: no warning.
    let o = pacauc(&[
        "fit",
        f.to_str().unwrap(),
        "--method",
        "logit",
        "--target",
        "deny",
    ]);
    assert!(!text(&o.stderr).contains("looks at least as much like"));
}

#[test]
fn fit_stores_and_prints_delong_intervals_and_compare_pairs_methods() {
    let d = tmp("compare");
    let f = deny_first(&d);
    let fs = f.to_str().unwrap();
    let o = pacauc(&["fit", fs, "--method", "logit", "--target", "deny"]);
    let r = json(&o);
    let i = &r["auc"]["test_interval"];
    let (a, lo, hi) = (
        i["auc"].as_f64().unwrap(),
        i["lower"].as_f64().unwrap(),
        i["upper"].as_f64().unwrap(),
    );
    // The same AUC up to rounding (mid-ranks against the record's sort).
    assert!((a - r["auc"]["test"].as_f64().unwrap()).abs() < 1e-12);
    assert!(lo < a && a < hi && i["se"].as_f64().unwrap() > 0.0, "{i}");
    assert_eq!(i["method"], "delong");
    let o = pacauc(&[
        "fit", fs, "--method", "logit", "--target", "deny", "--format", "table",
    ]);
    let out = text(&o.stdout);
    assert!(out.contains("95% DeLong"), "{out}");

    let rec = d.join("out");
    let o = pacauc(&[
        "compare",
        fs,
        "--methods",
        "logit,rankboost",
        "--splits",
        "2",
        "--target",
        "deny",
        "--out",
        rec.to_str().unwrap(),
        "--format",
        "json",
    ]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let c = json(&o);
    assert_eq!(c["reference"], "logit");
    let rows = c["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 4, "{c}");
    for r in rows {
        assert!(r["auc"]["se"].as_f64().unwrap() > 0.0, "{r}");
        if r["method"] == "rankboost" {
            let p = &r["versus_reference"];
            let diff = p["difference"].as_f64().unwrap();
            let want = r["auc"]["auc"].as_f64().unwrap()
                - rows
                    .iter()
                    .find(|x| x["method"] == "logit" && x["seed"] == r["seed"])
                    .unwrap()["auc"]["auc"]
                    .as_f64()
                    .unwrap();
            assert!((diff - want).abs() < 1e-12, "{p}");
            assert!((0.0..=1.0).contains(&p["p_value"].as_f64().unwrap()));
        }
    }
    let pooled = &c["pooled"][0];
    assert_eq!(pooled["splits"], 2);
    assert!(pooled["rule"].as_str().unwrap().contains("Nadeau"));
    // A method the protocol does not know: named, with the list.
    let o = pacauc(&[
        "compare",
        fs,
        "--methods",
        "logit,logitt",
        "--target",
        "deny",
    ]);
    assert!(!o.status.success());
    assert!(text(&o.stderr).contains("no method 'logitt'"));
}

#[test]
fn predict_on_the_training_file_says_which_rows_its_auc_covers() {
    let d = tmp("predict");
    let f = deny_first(&d);
    let fs = f.to_str().unwrap();
    let run = d.join("run.json");
    let o = pacauc(&[
        "fit",
        fs,
        "--method",
        "logit",
        "--target",
        "deny",
        "--out",
        run.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let o = pacauc(&["predict", run.to_str().unwrap(), fs, "--format", "json"]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let err = text(&o.stderr);
    assert!(
        err.contains("includes its") && err.contains("held-out test row"),
        "{err}"
    );
    let p = json(&o);
    assert!(p["auc"]["interval"]["se"].as_f64().unwrap() > 0.0);
    let r: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&run).unwrap()).unwrap();
    assert_eq!(p["auc_not_trained_on"]["auc"], r["auc"]["test"]);
}

#[test]
fn small_print() {
    let d = tmp("small");
    let f = deny_first(&d);
    let fs = f.to_str().unwrap();
    // γ = 0 is refused.
    let o = pacauc(&[
        "fit", fs, "--method", "ep", "--gamma", "0", "--target", "deny",
    ]);
    assert!(!o.status.success());
    assert!(
        text(&o.stderr).contains("ignores the data"),
        "{}",
        text(&o.stderr)
    );
    // Did you mean, for --drop and --positive.
    let o = pacauc(&[
        "fit", fs, "--method", "logit", "--target", "deny", "--drop", "scor",
    ]);
    assert!(
        text(&o.stderr).contains("did you mean 'score'"),
        "{}",
        text(&o.stderr)
    );
    let o = pacauc(&[
        "fit",
        fs,
        "--method",
        "logit",
        "--target",
        "deny",
        "--positive",
        "yse",
    ]);
    // A misspelt class is refused with the nearest value and every value listed.
    let err = text(&o.stderr);
    assert!(
        err.contains("did you mean 'yes'") && err.contains("'yes' (72 rows)"),
        "{err}"
    );
    // bound --format table: one headline line.
    let run = d.join("ep.json");
    let o = pacauc(&[
        "fit",
        fs,
        "--method",
        "ep",
        "--gamma",
        "0.25n",
        "--target",
        "deny",
        "--out",
        run.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let o = pacauc(&["bound", run.to_str().unwrap(), "--format", "table"]);
    let out = text(&o.stdout);
    assert_eq!(out.lines().count(), 1, "{out}");
    assert!(out.starts_with("bound     1 − AUC ≤ "), "{out}");
    // The Bayesian fit's record has the posterior draws' AUC spread.
    let r: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&run).unwrap()).unwrap();
    let p = &r["auc"]["test_posterior"];
    assert!(
        p["lower"].as_f64().unwrap() <= p["upper"].as_f64().unwrap(),
        "{p}"
    );
    assert_eq!(p["source"], "gaussian");
    // A binary file.
    let bin = d.join("book.csv");
    std::fs::write(&bin, b"PK\x03\x04\x14\x00\x06\x00binary").unwrap();
    let o = pacauc(&["fit", bin.to_str().unwrap(), "--method", "logit"]);
    assert!(
        text(&o.stderr).contains("binary file"),
        "{}",
        text(&o.stderr)
    );
    // --out into a missing folder names it.
    let missing = d.join("no-such-folder").join("run.json");
    let o = pacauc(&[
        "fit",
        fs,
        "--method",
        "logit",
        "--out",
        missing.to_str().unwrap(),
    ]);
    assert!(!o.status.success());
    assert!(
        text(&o.stderr).contains("no-such-folder' does not exist"),
        "{}",
        text(&o.stderr)
    );
}

#[test]
fn plot_never_mixes_data_sets_in_one_figure() {
    let d = tmp("plot");
    let f = deny_first(&d);
    let a = d.join("a.json");
    let b = d.join("b.json");
    let o = pacauc(&[
        "fit",
        f.to_str().unwrap(),
        "--method",
        "logit",
        "--target",
        "deny",
        "--out",
        a.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let o = pacauc(&[
        "fit",
        "demo-data/sparse_linear.csv",
        "--method",
        "logit",
        "--out",
        b.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let figs = d.join("figs");
    let o = pacauc(&[
        "plot",
        a.to_str().unwrap(),
        b.to_str().unwrap(),
        "--out",
        figs.to_str().unwrap(),
        "--only",
        "roc",
        "--format",
        "svg",
    ]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let files: Vec<String> = text(&o.stdout).lines().map(String::from).collect();
    assert_eq!(files.len(), 2, "{files:?}");
    assert!(files.iter().any(|f| f.contains("deny")) && files.iter().any(|f| f.contains("sparse")));
    for f in &files {
        let svg = std::fs::read_to_string(f).unwrap();
        assert!(svg.contains("95% CI"), "{f}: the legend's interval");
        let (mine, other) = if f.contains("deny") {
            ("deny.csv", "sparse_linear.csv")
        } else {
            ("sparse_linear.csv", "deny.csv")
        };
        assert!(
            svg.contains(mine) && !svg.contains(other),
            "{f}: one data set per figure"
        );
    }
}
