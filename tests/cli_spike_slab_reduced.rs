//! `pacauc fit --method ep --prior spike-slab` on wide data (d ≥ n, the
//! microarray case): the reduced form is chosen automatically and gives the
//! primal form's answer.

mod common;
use common::{inclusion, json, pacauc};
use pacauc::engine::numerics::rng::{normal, stream};

/// A wide CSV (60 rows, 120 features g000…g119; y follows g000, g001, g002)
/// in a fresh temporary directory.
fn wide_csv(tag: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("pacauc-ss-reduced-{tag}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (n, d) = (60, 120);
    let mut rng = stream(3, &[7]);
    let mut csv: String = (0..d).map(|k| format!("g{k:03},")).collect();
    csv.push_str("y\n");
    for _ in 0..n {
        let x: Vec<f64> = (0..d).map(|_| normal(&mut rng)).collect();
        let s = 1.5 * x[0] - 1.2 * x[1] + x[2] + 0.5 * normal(&mut rng);
        for v in &x {
            csv.push_str(&format!("{v:.6},"));
        }
        csv.push_str(if s > 0.0 { "1\n" } else { "0\n" });
    }
    let path = dir.join("wide.csv");
    std::fs::write(&path, csv).unwrap();
    path
}

fn fit(path: &str, extra: &[&str]) -> serde_json::Value {
    let mut args = vec!["fit", path, "--method", "ep", "--prior", "spike-slab"];
    args.extend_from_slice(extra);
    json(&pacauc(&args))
}

#[test]
fn wide_data_runs_in_the_reduced_form() {
    let path = wide_csv("defaults");
    let path = path.to_str().unwrap();
    let v = fit(path, &["--gamma", "1n"]);
    assert_eq!(v["details"]["form"], "reduced");
    assert!(v["details"]["rank"].as_u64().unwrap() < 60);
    let p = inclusion(&v);
    assert_eq!(p.len(), 120);
    assert!(p.iter().all(|p| (0.0..=1.0).contains(p)));
    assert!(v["log_evidence"].as_f64().is_some());
}

/// With p = 0.1 and γ = 4n the three informative features are selected, and
/// `--ep-form primal --keep-fixes` gives the same record (log Z, inclusion)
/// up to the convergence tolerance (the reduced form cannot release the negative-site
/// fix: it whitens by the prior sites' precisions, which must stay positive).
#[test]
fn reduced_form_selects_the_signal_and_matches_the_primal_form() {
    let path = wide_csv("primal");
    let path = path.to_str().unwrap();
    let args = ["--gamma", "4n", "--inclusion-prior", "0.1"];
    let red = fit(path, &args);
    let pri = fit(
        path,
        &[&args[..], &["--ep-form", "primal", "--keep-fixes"]].concat(),
    );
    assert_eq!(
        (
            red["details"]["form"].as_str(),
            pri["details"]["form"].as_str()
        ),
        (Some("reduced"), Some("primal"))
    );
    // The two forms reach the same fixed point by other steps (the reduced
    // one whitens by the prior sites' precisions), so they agree to the
    // convergence tolerance (Δ < 1e-4·η), not to rounding.
    let (a, b) = (
        red["log_evidence"].as_f64().unwrap(),
        pri["log_evidence"].as_f64().unwrap(),
    );
    assert!((a - b).abs() < 1e-4, "log Z {a} vs {b}");
    let (pr, pp) = (inclusion(&red), inclusion(&pri));
    for (k, (a, b)) in pr.iter().zip(&pp).enumerate() {
        assert!((a - b).abs() < 1e-3, "inclusion {k}: {a} vs {b}");
    }
    for (k, p) in pr.iter().take(3).enumerate() {
        assert!(*p > 0.5, "g00{k}: {p}");
    }
    let selected = red["details"]["selected"]["names"].as_array().unwrap();
    assert!(selected.len() <= 6, "{selected:?}");
    assert_eq!(
        red["details"]["fix_release"]["status"],
        "not available in the reduced form"
    );
}
