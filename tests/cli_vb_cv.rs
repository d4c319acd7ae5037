//! `pacauc fit --method vb --gamma auto`: γ by the cross-validation every
//! tuned method shares (engine/select) — the same folds as EP's for the same
//! seed, `details.cv` in the shared layout (the CV-curve figure reads it), one
//! log line per fold and point, and the same record whatever the thread count.

mod common;
use common::{events, json, pacauc};

/// One feature: every positive multiple of it ranks the rows alike, so a
/// fold's held-out AUC depends only on which rows the fold holds out. Two
/// methods whose fold AUCs agree at every point used the same folds.
fn one_feature_csv(dir: &std::path::Path) -> String {
    let mut s = String::from("x,y\n");
    // A fixed, reproducible sequence (no RNG needed): overlapping classes.
    for i in 0..120u64 {
        let u = ((i * 7919) % 1000) as f64 / 1000.0;
        let y = (i * 31 + 7) % 3 != 0;
        let x = if y { u + 0.3 } else { u };
        s.push_str(&format!("{x:.4},{}\n", u8::from(y)));
    }
    let path = dir.join("one_feature.csv");
    std::fs::write(&path, s).unwrap();
    path.to_str().unwrap().to_string()
}

fn cv_fit(data: &str, method: &str, threads: &str) -> serde_json::Value {
    json(&pacauc(&[
        "fit",
        data,
        "--method",
        method,
        "--gamma",
        "auto",
        "--gamma-grid",
        "0.25,1,4",
        "--folds",
        "4",
        "--seed",
        "5",
        "--is-draws",
        "0",
        "--threads",
        threads,
    ]))
}

#[test]
fn vb_cv_uses_eps_folds() {
    let dir = std::env::temp_dir().join(format!("pacauc-vb-cv-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let data = one_feature_csv(&dir);
    let (vb, ep) = (cv_fit(&data, "vb", "2"), cv_fit(&data, "ep", "2"));
    let (a, b) = (&vb["details"]["cv"], &ep["details"]["cv"]);
    assert_eq!(a["parameter"], "gamma_over_n");
    assert_eq!(a["grid"], b["grid"]);
    assert_eq!(
        (a["folds"].as_u64(), a["seed"].as_u64()),
        (Some(4), Some(5))
    );
    assert_eq!(
        (a["folds"].clone(), a["seed"].clone()),
        (b["folds"].clone(), b["seed"].clone())
    );
    let folds = |cv: &serde_json::Value| -> Vec<Vec<Option<f64>>> {
        serde_json::from_value(cv["fold_auc"].clone()).unwrap()
    };
    let (fa, fb) = (folds(a), folds(b));
    assert_eq!(fa.len(), 4);
    // The fold AUCs differ between folds (so equal fold AUCs mean equal folds)…
    assert!(fa.iter().any(|f| f[0] != fa[0][0]), "{fa:?}");
    // …and agree between the methods wherever both scored the point.
    let mut compared = 0;
    for (f, (ra, rb)) in fa.iter().zip(&fb).enumerate() {
        for (g, (x, y)) in ra.iter().zip(rb).enumerate() {
            if let (Some(x), Some(y)) = (x, y) {
                assert_eq!(x, y, "fold {f}, point {g}");
                compared += 1;
            }
        }
    }
    assert!(compared >= 4, "{fa:?} against {fb:?}");
    assert_eq!(vb["details"]["gamma"]["chosen_by"], "cv");
    let n = vb["split"]["train_rows"].as_f64().unwrap();
    assert_eq!(
        vb["gamma"].as_f64(),
        Some(a["chosen"].as_f64().unwrap() * n)
    );
    // One line per fold and point, in fold order, then the curve.
    let lines: Vec<String> = events(&vb, "log")
        .iter()
        .filter_map(|e| e["message"].as_str())
        .filter(|m| m.starts_with("vb cv: fold"))
        .map(String::from)
        .collect();
    assert_eq!(lines.len(), 4 * 3, "{lines:?}");
    for (k, l) in lines.iter().enumerate() {
        assert!(
            l.starts_with(&format!("vb cv: fold {}/4", k / 3 + 1)),
            "{l}"
        );
    }
    std::fs::remove_dir_all(&dir).ok();
}

/// The record of a VB CV is the same with one thread as with two (folds run
/// side by side with two), and `pacauc plot` draws its CV curve.
#[test]
fn vb_cv_is_the_same_whatever_the_thread_count() {
    let data = "demo-data/sparse_linear.csv";
    let (one, two) = (cv_fit(data, "vb", "1"), cv_fit(data, "vb", "2"));
    assert_eq!(one["details"]["cv"], two["details"]["cv"]);
    assert_eq!(one["coefficients"], two["coefficients"]);
    assert_eq!(one["gamma"], two["gamma"]);
    let dir = std::env::temp_dir().join(format!("pacauc-vb-cv-plot-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let rec = dir.join("vb.json");
    std::fs::write(&rec, serde_json::to_string(&one).unwrap()).unwrap();
    let out = pacauc(&[
        "plot",
        rec.to_str().unwrap(),
        "--out",
        dir.to_str().unwrap(),
        "--only",
        "cv",
        "--format",
        "svg",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let svg = std::fs::read_to_string(dir.join("cv.svg")).unwrap();
    assert!(svg.contains("γ/n") && svg.contains("held-out AUC"));
    std::fs::remove_dir_all(&dir).ok();
}
