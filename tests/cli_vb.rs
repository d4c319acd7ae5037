//! `pacauc fit --method vb` and the certificates in the record; `pacauc bound`.

mod common;

use common::{events, json, pacauc};

/// VB on the demo data: converged, its iterations in the trace, a certificate
/// and an importance-sampling check in `details`; `pacauc bound` reproduces
/// the certificate at the same ε and loosens it at a smaller one.
#[test]
fn vb_fit_bound_and_check() {
    let dir = std::env::temp_dir().join(format!("pacauc-vb-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let out = dir.join("run.json");
    let out_s = out.to_str().unwrap();
    let r = json(&pacauc(&[
        "fit",
        "demo-data/sparse_linear.csv",
        "--method",
        "vb",
        "--family",
        "full",
        "--is-draws",
        "2000",
        "--out",
        out_s,
    ]));
    assert_eq!(r["method"], "vb");
    assert_eq!(r["converged"], true);
    assert_eq!(r["details"]["family"], "full");
    assert!(!events(&r, "vb_iter").is_empty());
    let b = &r["details"]["bound"];
    let (risk, emp) = (
        b["risk"].as_f64().unwrap(),
        b["empirical_risk"].as_f64().unwrap(),
    );
    assert!(risk > emp && b["kl"].as_f64().unwrap() > 0.0 && b["epsilon"] == 0.05);
    assert!(r["details"]["is_check"]["khat"].is_number());
    let same = json(&pacauc(&["bound", out_s]));
    // (serde_json's default parser may round the last bit.)
    assert!((same["risk"].as_f64().unwrap() - risk).abs() < 1e-12);
    let strict = json(&pacauc(&["bound", out_s, "--epsilon", "0.001"]));
    assert!(strict["risk"].as_f64().unwrap() > risk);
    std::fs::remove_dir_all(&dir).ok();
}

/// A baseline has no posterior: no certificate, no failure.
#[test]
fn baselines_have_no_bound() {
    let r = json(&pacauc(&[
        "fit",
        "demo-data/sparse_linear.csv",
        "--method",
        "logit",
    ]));
    assert!(r["details"].get("bound").is_none());
    let e = pacauc(&[
        "fit",
        "demo-data/sparse_linear.csv",
        "--method",
        "vb",
        "--prior",
        "spike-slab",
    ]);
    assert_eq!(e.status.code(), Some(2));
}
