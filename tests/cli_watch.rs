//! Watching runs from anywhere, as a user does it from a shell: the demo
//! inside the binary from an empty folder; `fit --events` followed by
//! `watch --once` while it runs, then after `kill -9`.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

fn pacauc_in(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_pacauc"))
        .args(args)
        .current_dir(dir)
        .stdin(Stdio::null())
        .output()
        .expect("runs")
}

fn empty_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("pacauc-watch-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[test]
fn the_demo_is_inside_the_binary() {
    let dir = empty_dir("demo");
    let out = pacauc_in(&dir, &["fit", "demo", "--method", "ep"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(
        err.contains("the demo built into pacauc"),
        "announced: {err}"
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["dataset"]["rows"], 1000);
    assert_eq!(v["method"], "ep");
    // `pacauc` alone opens it too (here it stops at the missing terminal,
    // not at a missing file).
    let out = pacauc_in(&dir, &[]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("needs a terminal"), "{err}");
    let out = pacauc_in(&dir, &["fit", "demo:nope"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("demo:sparse_linear"), "{err}");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// The stage `watch --once` reports for the run, if any.
fn stage_of(snapshot: &str) -> Option<usize> {
    let rest = snapshot.split("  stage ").nth(1)?;
    rest.split_whitespace().next()?.parse().ok()
}

#[test]
fn watch_once_follows_a_fit_and_reads_interrupted_after_kill_9() {
    let dir = empty_dir("kill");
    let mut fit = Command::new(env!("CARGO_BIN_EXE_pacauc"))
        .args([
            "fit",
            "demo",
            "--method",
            "smc",
            "--particles",
            "40000",
            "--events",
            "r.jsonl",
        ])
        .current_dir(&dir)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let t0 = Instant::now();
    let mut seen = Vec::new();
    let mut snapshot = String::new();
    // Two different stages seen, the run still going.
    while seen.len() < 2 {
        assert!(t0.elapsed() < Duration::from_secs(300), "{snapshot}");
        std::thread::sleep(Duration::from_millis(200));
        let out = pacauc_in(&dir, &["watch", "--once", "r.jsonl"]);
        snapshot = String::from_utf8_lossy(&out.stdout).into();
        assert!(
            !snapshot.contains("done"),
            "the fit ended before it could be killed: {snapshot}"
        );
        if let Some(s) = stage_of(&snapshot)
            && seen.last() != Some(&s)
        {
            assert!(snapshot.contains("running"), "{snapshot}");
            seen.push(s);
        }
    }
    assert!(seen[1] > seen[0], "{seen:?}");
    let pid = fit.id();
    fit.kill().unwrap(); // SIGKILL: no chance to write an end
    fit.wait().unwrap();
    let out = pacauc_in(&dir, &["watch", "--once", "r.jsonl"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let last = stage_of(&text).unwrap();
    assert!(last >= seen[1], "{text}");
    assert!(
        text.contains(&format!("interrupted at stage {last}")),
        "{text}"
    );
    assert!(
        text.contains(&format!("its process {pid} has ended")),
        "{text}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn watch_once_names_a_broken_log() {
    let dir = empty_dir("broken");
    std::fs::write(dir.join("bad.jsonl"), "hello\n").unwrap();
    let out = pacauc_in(&dir, &["watch", "--once", "bad.jsonl"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("bad.jsonl:1: not a pacauc event log line"),
        "{err}"
    );
    let out = pacauc_in(&dir, &["watch", "--once", "missing.jsonl"]);
    assert_eq!(out.status.code(), Some(2));
    std::fs::remove_dir_all(&dir).unwrap();
}
