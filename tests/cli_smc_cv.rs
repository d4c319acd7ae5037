//! `pacauc fit --method smc --gamma auto` end to end: γ by cross-validation
//! along the SMC path, recorded as EP records it, and what is refused.

mod common;
use common::{events, json, pacauc};

const DATA: &str = "demo-data/sparse_linear.csv";

#[test]
fn smc_gamma_auto_records_the_cv_and_fits_at_the_choice() {
    let out = pacauc(&[
        "fit",
        DATA,
        "--method",
        "smc",
        "--gamma",
        "auto",
        "--gamma-grid",
        "0.25,1,4",
        "--folds",
        "3",
        "--particles",
        "200",
        "--seed",
        "2",
    ]);
    let v = json(&out);
    let cv = &v["details"]["cv"];
    assert_eq!(cv["parameter"], "gamma_over_n");
    assert_eq!(cv["grid"].as_array().unwrap().len(), 3);
    assert_eq!(cv["fold_auc"].as_array().unwrap().len(), 3);
    let chosen = cv["chosen"].as_f64().unwrap();
    let n = v["split"]["train_rows"].as_f64().unwrap();
    assert_eq!(v["gamma"].as_f64(), Some(chosen * n));
    assert_eq!(v["details"]["gamma"]["chosen_by"], "cv");
    // The final run's path ends at the chosen γ.
    let path = v["details"]["path"].as_array().unwrap();
    assert_eq!(path.last().unwrap()["gamma"].as_f64(), Some(chosen * n));
    // The choice is announced in the trace, before the stages.
    let logs = events(&v, "log");
    assert!(
        logs.iter().any(|e| e["message"]
            .as_str()
            .unwrap()
            .contains("along the SMC path")),
        "{logs:?}"
    );
}

#[test]
fn smc_gamma_auto_refuses_the_gp_prior_and_a_grid_without_auto() {
    let out = pacauc(&[
        "fit", DATA, "--method", "smc", "--prior", "gp", "--gamma", "auto",
    ]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("cannot be auto for smc with the gp prior"),
        "{err}"
    );
    let out = pacauc(&["fit", DATA, "--method", "smc", "--full-path"]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("only when"), "{err}");
}
