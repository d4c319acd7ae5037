//! The headless CLI as scripts use it: stable JSON keys, exit codes, clear errors.

mod common;
use common::{json, pacauc};

#[test]
fn fit_prints_the_stable_keys() {
    for method in ["logit", "rankboost"] {
        let v = json(&pacauc(&[
            "fit",
            "demo-data/sparse_linear.csv",
            "--method",
            method,
        ]));
        assert_eq!(v["method"], method);
        for key in ["rows", "features", "positives", "negatives", "dropped_rows"] {
            assert!(v["dataset"][key].is_u64(), "dataset.{key}");
        }
        assert!(v["dataset"]["dropped_columns"].is_array());
        assert_eq!(v["dataset"]["rows"], 1000);
        assert_eq!(v["dataset"]["positives"], 280);
        for key in ["train", "test"] {
            let a = v["auc"][key].as_f64().unwrap();
            assert!((0.5..=1.0).contains(&a), "auc.{key} = {a}");
        }
        assert!(v["seconds"]["fit"].as_f64().unwrap() >= 0.0);
        assert!(v["seconds"]["total"].as_f64().unwrap() >= v["seconds"]["fit"].as_f64().unwrap());
        assert!(v["coefficients"].is_array());
        assert!(v["trace"].is_array());
    }
    let v = json(&pacauc(&["fit", "demo-data/sparse_linear.csv"]));
    let coefs = v["coefficients"].as_array().unwrap();
    assert_eq!(coefs.len(), 20);
    assert!(
        coefs
            .iter()
            .all(|c| c["name"].is_string() && c["mean"].is_f64() && c["sd"].is_f64())
    );
    // The informative x03 (weight +2) dominates.
    let best = coefs
        .iter()
        .max_by(|a, b| {
            a["mean"]
                .as_f64()
                .unwrap()
                .abs()
                .total_cmp(&b["mean"].as_f64().unwrap().abs())
        })
        .unwrap();
    assert_eq!(best["name"], "x03");
}

#[test]
fn messy_file_with_drop_and_table_output() {
    let out = pacauc(&[
        "fit",
        "demo-data/messy_clinic.csv",
        "--drop",
        "patient_id",
        "--format",
        "table",
    ]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        text.contains("positive  'sick' (the rarer of the two values"),
        "{text}"
    );
    assert!(
        text.contains("dropped   column 'form_version=v2' (constant)"),
        "{text}"
    );
    assert!(text.contains("encoded   'smoker' → smoker=yes"), "{text}");
    // Each drop is said once, the rows with their counts by column.
    assert!(
        text.contains("dropped   19 of 240 row(s) with missing values (bmi: 12, site: 8)"),
        "{text}"
    );
    assert_eq!(
        text.matches("row(s) with missing values").count(),
        1,
        "{text}"
    );
    assert_eq!(text.matches("form_version=v2").count(), 1, "{text}");
}

#[test]
fn messy_file_without_drop_explains_the_id_column() {
    let out = pacauc(&["fit", "demo-data/messy_clinic.csv"]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("column 1 ('patient_id')") && err.contains("--drop 'patient_id'"),
        "{err}"
    );
}

#[test]
fn bad_options_are_input_errors() {
    let out = pacauc(&["fit", "demo-data/sparse_linear.csv", "--test-frac", "1.5"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--test-frac must be in [0, 1)"));
    let out = pacauc(&["fit", "nope.csv"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("nope.csv: cannot read the file"));
}

#[test]
fn out_file_is_written_and_test_file_is_used() {
    let dir = std::env::temp_dir().join(format!("pacauc-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let text = std::fs::read_to_string("demo-data/sparse_linear.csv").unwrap();
    let mut lines = text.lines();
    let header = lines.next().unwrap();
    let rows: Vec<&str> = lines.collect();
    let (train, test) = rows.split_at(750);
    std::fs::write(
        dir.join("train.csv"),
        format!("{header}\n{}\n", train.join("\n")),
    )
    .unwrap();
    std::fs::write(
        dir.join("test.csv"),
        format!("{header}\n{}\n", test.join("\n")),
    )
    .unwrap();
    let out_path = dir.join("run.json");
    let train_s = dir.join("train.csv").display().to_string();
    let test_s = dir.join("test.csv").display().to_string();
    let out_s = out_path.display().to_string();
    let v = json(&pacauc(&[
        "fit", &train_s, "--test", &test_s, "--out", &out_s,
    ]));
    assert_eq!(v["split"]["kind"], "file");
    assert_eq!(v["split"]["test_rows"], 250);
    let saved: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&out_path).unwrap()).unwrap();
    assert_eq!(saved, v);
    // The record reads back.
    pacauc::engine::record::RunRecord::from_json(&std::fs::read_to_string(&out_path).unwrap())
        .unwrap();
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn same_seed_same_output() {
    let a = json(&pacauc(&[
        "fit",
        "demo-data/sparse_linear.csv",
        "--seed",
        "3",
    ]));
    let b = json(&pacauc(&[
        "fit",
        "demo-data/sparse_linear.csv",
        "--seed",
        "3",
    ]));
    assert_eq!(a["coefficients"], b["coefficients"]);
    assert_eq!(a["auc"], b["auc"]);
}

/// Logit's λ, RankBoost's rounds and EP's γ come from one cross-validation:
/// the same `details.cv` keys, the chosen point is on the grid with the best
/// mean AUC, and the record says which parameter was tuned.
#[test]
fn every_cross_validated_method_records_the_same_cv() {
    for (method, parameter, extra) in [
        ("logit", "lambda", vec![]),
        ("rankboost", "rounds", vec![]),
        (
            "ep",
            "gamma_over_n",
            vec!["--gamma", "auto", "--gamma-grid", "0.5,2"],
        ),
    ] {
        let mut args = vec![
            "fit",
            "demo-data/sparse_linear.csv",
            "--method",
            method,
            "--folds",
            "3",
        ];
        args.extend(extra);
        let v = json(&pacauc(&args));
        let cv = &v["details"]["cv"];
        assert_eq!(cv["parameter"], parameter, "{method}");
        assert_eq!(cv["folds"], 3);
        let grid: Vec<f64> = cv["grid"]
            .as_array()
            .unwrap()
            .iter()
            .map(|g| g.as_f64().unwrap())
            .collect();
        assert!(
            grid.windows(2).all(|w| w[0] < w[1]),
            "{method}: grid ascending"
        );
        for key in ["fold_auc", "fold_iterations"] {
            let rows = cv[key].as_array().unwrap();
            assert_eq!(rows.len(), 3, "{method}: {key}");
            assert!(
                rows.iter()
                    .all(|r| r.as_array().unwrap().len() == grid.len())
            );
        }
        assert!(
            cv["failures"].is_array()
                && cv["dropped"].is_array()
                && cv["extended_below"].is_array()
        );
        let means: Vec<f64> = cv["mean_auc"]
            .as_array()
            .unwrap()
            .iter()
            .map(|a| a.as_f64().unwrap())
            .collect();
        let chosen = cv["chosen"].as_f64().unwrap();
        let i = grid
            .iter()
            .position(|&g| g == chosen)
            .expect("chosen on the grid");
        let best = means.iter().cloned().fold(f64::MIN, f64::max);
        assert!(
            means[i] >= best - 1e-9,
            "{method}: chosen mean {} < best {best}",
            means[i]
        );
    }
}
