//! The explorer's command line without a terminal: it refuses politely and
//! points to the headless command; replay checks its files first.

use std::process::{Command, Stdio};

fn pacauc(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_pacauc"))
        .args(args)
        .stdin(Stdio::null())
        .output()
        .expect("runs")
}

#[test]
fn no_terminal_no_tui() {
    for args in [&[][..], &["explore", "demo-data/sparse_linear.csv"][..]] {
        let out = pacauc(args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains("needs a terminal") && err.contains("pacauc fit"),
            "{err}"
        );
        assert!(out.stdout.is_empty(), "nothing drawn into a pipe");
    }
}

#[test]
fn replay_reads_fit_records_and_rejects_garbage() {
    let dir = std::env::temp_dir().join(format!("pacauc-replay-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let bad = dir.join("bad.json");
    std::fs::write(&bad, "{}").unwrap();
    let out = pacauc(&["replay", bad.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("not a pacauc run record"));
    // A `fit --out` record is accepted (then the missing terminal stops it).
    let rec = dir.join("run.json");
    let fit = pacauc(&[
        "fit",
        "demo-data/sparse_linear.csv",
        "--out",
        rec.to_str().unwrap(),
    ]);
    assert!(fit.status.success());
    let out = pacauc(&["replay", rec.to_str().unwrap()]);
    assert!(String::from_utf8_lossy(&out.stderr).contains("needs a terminal"));
    std::fs::remove_dir_all(&dir).unwrap();
}
