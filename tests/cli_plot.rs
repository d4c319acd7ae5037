//! `pacauc plot` end to end on the demo data: SMC and EP records (and a
//! spike-and-slab one, and a path) give ROC, marginals, SMC trace, EP
//! convergence, inclusion and path figures as decodable PNG and SVG; what is
//! skipped is said; bad input names the file and the fix.

mod common;
use common::pacauc;

use std::path::{Path, PathBuf};

fn tmp(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("pacauc-plot-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn fit(dir: &Path, name: &str, args: &[&str]) -> String {
    let out = dir.join(name).display().to_string();
    let mut all = vec!["fit", "demo-data/sparse_linear.csv", "--out", &out];
    all.extend_from_slice(args);
    let o = pacauc(&all);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    out
}

fn stdout_lines(o: &std::process::Output) -> Vec<String> {
    String::from_utf8_lossy(&o.stdout)
        .lines()
        .map(String::from)
        .collect()
}

#[test]
fn smc_and_ep_records_give_every_figure_as_png_and_svg() {
    let dir = tmp("both");
    // 200 test rows: a record keeps a ROC curve of at most 201 points whole.
    let split = ["--test-frac", "0.2"];
    let smc = fit(
        &dir,
        "smc.json",
        &[&["--method", "smc", "--particles", "400"][..], &split].concat(),
    );
    let ep = fit(&dir, "ep.json", &[&["--method", "ep"][..], &split].concat());
    let out = dir.join("figs");
    let o = pacauc(&["plot", &smc, &ep, "--out", out.to_str().unwrap()]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{err}");
    let lines = stdout_lines(&o);
    for stem in ["roc", "marginals", "smc-trace-smc", "ep-convergence-ep"] {
        for ext in ["png", "svg"] {
            let p = out.join(format!("{stem}.{ext}"));
            assert!(
                lines.contains(&p.display().to_string()),
                "{p:?} not printed: {lines:?}"
            );
            let bytes = std::fs::read(&p).unwrap();
            if ext == "png" {
                let img = resvg::tiny_skia::Pixmap::decode_png(&bytes).unwrap();
                assert!(img.width() >= 800 && img.height() >= 400);
            } else {
                let text = String::from_utf8(bytes).unwrap();
                assert!(text.contains("class=\"legend-entry\""));
            }
        }
    }
    // The area under each record's test ROC polyline is its test AUC (200
    // test rows: the curve is stored whole, ties as diagonal segments).
    for rec in [&smc, &ep] {
        let r =
            pacauc::engine::record::RunRecord::from_json(&std::fs::read_to_string(rec).unwrap())
                .unwrap();
        let area = pacauc::figures::auc_under(&r.roc.test);
        assert!(
            (area - r.auc.test.unwrap()).abs() < 1e-12,
            "{area} vs {:?}",
            r.auc.test
        );
    }
    let svg = std::fs::read_to_string(out.join("marginals.svg")).unwrap();
    assert!(svg.contains(">smc particles</text>") && svg.contains(">ep Gaussian</text>"));
    // Figures these records cannot give are named once, not each with its
    // requirement (--only KIND says it).
    let unsupported = err
        .lines()
        .find(|l| l.contains("no record for them"))
        .unwrap_or_else(|| panic!("{err}"));
    assert!(
        unsupported.contains("inclusion") && unsupported.contains("cv"),
        "{err}"
    );
    assert!(!err.contains("skipped inclusion:"), "{err}");
    // --only and --format.
    let only = |kind: &str, extra: &[&str]| {
        let mut args = vec!["plot", &ep, "--out", out.to_str().unwrap(), "--only", kind];
        args.extend_from_slice(extra);
        pacauc(&args)
    };
    let o = only("marginals", &["--format", "svg"]);
    assert!(o.status.success());
    assert_eq!(
        stdout_lines(&o),
        [out.join("marginals.svg").display().to_string()]
    );
    let err = String::from_utf8_lossy(&o.stderr);
    // The marginals were drawn: a note, not "skipped".
    assert!(
        err.contains(
            "note: marginals: needs a sampler's record (smc, gcs) for the histogram; drawing the Gaussian only"
        ),
        "{err}"
    );
    assert!(!err.contains("skipped"), "{err}");
    // Asked by --only, a figure these records cannot give says what it needs.
    let o = only("inclusion", &[]);
    assert!(!o.status.success());
    assert!(
        String::from_utf8_lossy(&o.stderr)
            .contains("skipped inclusion: needs a spike-and-slab record"),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn spike_slab_records_and_paths_give_inclusion_and_path_figures() {
    let dir = tmp("ss");
    let ss = fit(
        &dir,
        "ss.json",
        &["--method", "ep", "--prior", "spike-slab"],
    );
    let path = dir.join("path.json").display().to_string();
    let o = pacauc(&[
        "path",
        "demo-data/sparse_linear.csv",
        "--prior",
        "spike-slab",
        "--gamma",
        "n",
        "--grid-size",
        "4",
        "--out",
        &path,
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let logit = fit(&dir, "logit.json", &["--method", "logit"]);
    let out = dir.join("figs");
    let o = pacauc(&[
        "plot",
        &ss,
        &path,
        &logit,
        "--out",
        out.to_str().unwrap(),
        "--format",
        "svg",
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let lines = stdout_lines(&o);
    for stem in ["inclusion-ss", "path-path", "cv-logit", "roc"] {
        let p = out.join(format!("{stem}.svg")).display().to_string();
        assert!(lines.contains(&p), "{stem}: {lines:?}");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn bad_input_names_the_file_and_the_fix() {
    let dir = tmp("bad");
    let out = dir.join("figs");
    let o = pacauc(&[
        "plot",
        "demo-data/sparse_linear.csv",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("demo-data/sparse_linear.csv: not JSON"),
        "{err}"
    );
    assert!(err.contains("pacauc fit DATA.csv --out RUN.json"), "{err}");
    let o = pacauc(&["plot", "x.json", "--out", "figs", "--only", "pie"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("--only pie: no such figure"));
    std::fs::remove_dir_all(&dir).unwrap();
}
