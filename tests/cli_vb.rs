//! `pacauc fit --method vb`, the certificate every Bayesian record carries
//! (top-level `bound`, `details.is_check`), and `pacauc bound`.

mod common;

use std::path::Path;

use common::{events, json, pacauc};

/// VB on the demo data: converged, its iterations in the trace, ARC16's theory
/// γ by default (announced), a certificate and an importance-sampling check;
/// `pacauc bound` reproduces the certificate at the same ε and loosens it at
/// a smaller one.
#[test]
fn vb_fit_bound_and_check() {
    let dir = std::env::temp_dir().join(format!("pacauc-vb-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let out = dir.join("run.json");
    let out_s = out.to_str().unwrap();
    let run = pacauc(&[
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
    ]);
    let r = json(&run);
    assert!(
        String::from_utf8_lossy(&run.stderr).contains("ARC16's theory value for vb"),
        "the theory γ is announced"
    );
    assert_eq!(r["method"], "vb");
    assert_eq!(r["converged"], true);
    assert_eq!(r["spec"]["gamma"], "theory");
    assert_eq!(r["details"]["family"], "full");
    assert_eq!(r["details"]["gamma"]["chosen_by"], "theory");
    let theory = r["details"]["gamma"]["theory"].as_f64().unwrap();
    assert_eq!(r["gamma"].as_f64(), Some(theory));
    assert!(!events(&r, "vb_iter").is_empty());
    let b = &r["bound"];
    let (risk, emp) = (
        b["risk"].as_f64().unwrap(),
        b["empirical_risk"].as_f64().unwrap(),
    );
    assert!(risk > emp && b["kl"].as_f64().unwrap() > 0.0 && b["epsilon"] == 0.05);
    assert_eq!(r["details"]["is_check"]["draws"], 2000);
    assert!(r["details"]["is_check"]["khat"].is_number());
    assert_eq!(r["parameters"]["certificate"]["is_draws"], 2000);
    let same = json(&pacauc(&["bound", out_s]));
    assert_eq!(same["risk"].as_f64(), Some(risk));
    let strict = json(&pacauc(&["bound", out_s, "--epsilon", "0.001"]));
    assert!(strict["risk"].as_f64().unwrap() > risk);
    let bad = pacauc(&["bound", out_s, "--epsilon", "1.5"]);
    assert_eq!(bad.status.code(), Some(2));
    std::fs::remove_dir_all(&dir).ok();
}

/// EP and SMC records carry the bound too (SMC through its log Z, without an
/// importance-sampling check); `--epsilon` applies to both, `--is-draws` only
/// to the Gaussian approximations. A baseline has neither and `pacauc bound`
/// says why.
#[test]
fn every_bayesian_record_is_certified() {
    let ep = json(&pacauc(&[
        "fit",
        "demo-data/sparse_linear.csv",
        "--method",
        "ep",
        "--epsilon",
        "0.01",
        "--is-draws",
        "500",
    ]));
    assert_eq!(ep["bound"]["epsilon"], 0.01);
    assert_eq!(ep["bound"]["rho"], "gaussian");
    assert_eq!(ep["details"]["is_check"]["draws"], 500);
    let smc = json(&pacauc(&[
        "fit",
        "demo-data/sparse_linear.csv",
        "--method",
        "smc",
        "--particles",
        "500",
        "--moves",
        "3",
    ]));
    // The headline is the Gibbs posterior at its best γ along the path.
    assert!(smc["bound"]["rho"].as_str().unwrap().starts_with("gibbs"));
    assert!(smc["details"].get("is_check").is_none());
    let e = pacauc(&[
        "fit",
        "demo-data/sparse_linear.csv",
        "--method",
        "smc",
        "--is-draws",
        "10",
    ]);
    assert_eq!(e.status.code(), Some(2));
    let dir = std::env::temp_dir().join(format!("pacauc-vb-logit-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let out = dir.join("logit.json");
    let r = json(&pacauc(&[
        "fit",
        "demo-data/sparse_linear.csv",
        "--method",
        "logit",
        "--out",
        out.to_str().unwrap(),
    ]));
    assert!(r.get("bound").is_none());
    let e = pacauc(&["bound", out.to_str().unwrap()]);
    assert_eq!(e.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&e.stderr).contains("no PAC-Bayes certificate"));
    std::fs::remove_dir_all(&dir).ok();
}

/// vb refuses a spike-and-slab prior and `gamma theory` belongs to vb.
#[test]
fn vb_refusals() {
    let e = pacauc(&[
        "fit",
        "demo-data/sparse_linear.csv",
        "--method",
        "vb",
        "--prior",
        "spike-slab",
    ]);
    assert_eq!(e.status.code(), Some(2));
    let e = pacauc(&[
        "fit",
        "demo-data/sparse_linear.csv",
        "--method",
        "ep",
        "--gamma",
        "theory",
    ]);
    assert_eq!(e.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&e.stderr).contains("--gamma cannot be theory"));
}

/// EP's reduced form (Colon, d = 2000 > n): certified and checked through its
/// factored covariance.
#[test]
fn reduced_form_ep_is_certified_and_checked() {
    let path = "../shared/datasets/colon.csv";
    if !Path::new(path).is_file() {
        eprintln!("skipped: {path} is absent");
        return;
    }
    let r = json(&pacauc(&[
        "fit",
        path,
        "--method",
        "ep",
        "--gamma",
        "n",
        "--is-draws",
        "4000",
    ]));
    assert_eq!(r["details"]["form"], "reduced");
    let b = &r["bound"];
    assert!(b["risk"].as_f64().unwrap() > b["empirical_risk"].as_f64().unwrap());
    let c = &r["details"]["is_check"];
    assert_eq!(c["mean"].as_array().unwrap().len(), 2000);
    assert!(c["khat"].is_number());
}

/// A ρ hardly moved from the prior (γ = 0.01n) has E_ρ R_n near ½: its
/// certificate is vacuous, coded in the record and on stderr, and `pacauc
/// bound` says so again; a tight certificate (well separated classes, two
/// features) is not flagged.
#[test]
fn vacuous_certificates_are_coded_warnings() {
    let dir = std::env::temp_dir().join(format!("pacauc-vb-vacuous-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let out = dir.join("run.json");
    let fit = |data: &str, gamma: &str| {
        pacauc(&[
            "fit",
            data,
            "--method",
            "vb",
            "--gamma",
            gamma,
            "--is-draws",
            "0",
            "--out",
            out.to_str().unwrap(),
        ])
    };
    let codes = |r: &serde_json::Value| -> Vec<String> {
        r["warnings"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|w| w["code"].as_str().map(String::from))
            .collect()
    };
    let run = fit("demo-data/sparse_linear.csv", "0.01n");
    let r = json(&run);
    assert!(r["bound"]["risk"].as_f64().unwrap() >= 0.5);
    assert!(codes(&r).contains(&"certificate_vacuous".into()));
    assert!(
        String::from_utf8_lossy(&run.stderr).contains("warning [certificate_vacuous]"),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let b = pacauc(&["bound", out.to_str().unwrap()]);
    assert!(b.status.success());
    assert!(String::from_utf8_lossy(&b.stderr).contains("[certificate_vacuous]"));
    // Separable classes: x1 shifted by 1.5 for the positives (a fixed sequence).
    let mut csv = String::from("x1,x2,y\n");
    for i in 0..400u64 {
        let (u, v) = (
            ((i * 7919) % 1000) as f64 / 1e3,
            ((i * 104_729) % 997) as f64 / 997.0,
        );
        let y = (i * 31 + 7) % 3 == 0;
        csv.push_str(&format!(
            "{:.4},{v:.4},{}\n",
            u + 1.5 * f64::from(u8::from(y)),
            u8::from(y)
        ));
    }
    let sep = dir.join("separable.csv");
    std::fs::write(&sep, csv).unwrap();
    let tight = json(&fit(sep.to_str().unwrap(), "1n"));
    assert!(tight["bound"]["risk"].as_f64().unwrap() < 0.5);
    assert!(!codes(&tight).contains(&"certificate_vacuous".into()));
    let b = pacauc(&["bound", out.to_str().unwrap()]);
    assert!(!String::from_utf8_lossy(&b.stderr).contains("certificate_vacuous"));
    std::fs::remove_dir_all(&dir).ok();
}

/// Above 10⁸ training pairs (here 15 000 × 15 000) the certificate's E_ρ R_n
/// comes from 10⁷ sampled pairs: said on stderr, in the record
/// (`bound.draws.source`), and the bound sits above the interval's top.
#[test]
fn the_certificate_of_a_large_table_uses_sampled_pairs_and_says_so() {
    let dir = std::env::temp_dir().join(format!("pacauc-cert-pairs-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let csv = dir.join("big.csv");
    let csv_s = csv.to_str().unwrap();
    let made = pacauc(&[
        "gen-demo",
        "--rows",
        "40000",
        "--positive-share",
        "0.5",
        "--out",
        csv_s,
    ]);
    assert!(made.status.success());
    let out = pacauc(&["fit", csv_s, "--method", "vb", "--is-draws", "0"]);
    let stderr = String::from_utf8_lossy(&out.stderr).to_string();
    let v = json(&out);
    std::fs::remove_dir_all(&dir).ok();
    assert!(
        stderr.contains("certificate: E_ρ R_n from 10000000 pairs drawn uniformly"),
        "{stderr}"
    );
    let b = &v["bound"];
    assert_eq!(b["draws"]["source"], "pairs");
    assert_eq!(b["draws"]["count"], 1e7);
    let (lo, hi) = (
        b["draws"]["lower"].as_f64().unwrap(),
        b["draws"]["upper"].as_f64().unwrap(),
    );
    let emp = b["empirical_risk"].as_f64().unwrap();
    assert!(lo <= emp && emp <= hi && hi - lo < 0.002, "[{lo}, {hi}]");
    assert!(b["risk"].as_f64().unwrap() > hi);
}
