//! Issue 16, point 8: the explorer ends like `fit` on SIGTERM — terminal
//! restored, engines stopped, exit status 128 + 15 = 143 (it used to exit 0).
//! Run in a pseudo-terminal made by util-linux `script` (skipped, with the
//! reason, where it is missing).

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Pids of the processes whose parent is `parent` (Linux /proc).
fn children(parent: u32) -> Vec<u32> {
    let path = format!("/proc/{parent}/task/{parent}/children");
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .split_whitespace()
        .filter_map(|p| p.parse().ok())
        .collect()
}

fn cmdline(pid: u32) -> String {
    std::fs::read(format!("/proc/{pid}/cmdline"))
        .map(|b| String::from_utf8_lossy(&b).replace('\0', " "))
        .unwrap_or_default()
}

/// The explorer process under `root` (script → shell → pacauc).
fn find_explorer(root: u32) -> Option<u32> {
    let mut todo = vec![root];
    while let Some(p) = todo.pop() {
        for c in children(p) {
            if cmdline(c).contains("explore")
                && cmdline(c).contains("pacauc")
                && !cmdline(c).contains("-c")
            {
                return Some(c);
            }
            todo.push(c);
        }
    }
    None
}

#[test]
fn sigterm_ends_the_explorer_with_status_143() {
    if Command::new("script").arg("--version").output().is_err()
        || !std::path::Path::new("/proc/self/task").exists()
    {
        eprintln!("skipped: needs util-linux `script` and /proc for a pseudo-terminal");
        return;
    }
    let bin = env!("CARGO_BIN_EXE_pacauc");
    let mut script = Command::new("script")
        .args([
            "-qec",
            &format!("{bin} explore demo-data/sparse_linear.csv --no-autorun"),
            "/dev/null",
        ])
        .env("TERM", "xterm")
        .env("COLUMNS", "100")
        .env("LINES", "32")
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("script starts");
    let t0 = Instant::now();
    let pid = loop {
        if let Some(p) = find_explorer(script.id()) {
            break p;
        }
        assert!(
            t0.elapsed() < Duration::from_secs(20),
            "the explorer did not start"
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    // Let it draw its first frame before the signal.
    std::thread::sleep(Duration::from_millis(500));
    Command::new("kill")
        .args(["-TERM", &pid.to_string()])
        .status()
        .expect("kill runs");
    let deadline = Instant::now() + Duration::from_secs(20);
    let status = loop {
        if let Some(s) = script.try_wait().expect("waits") {
            break s;
        }
        if Instant::now() > deadline {
            let _ = script.kill();
            panic!("the explorer did not end after SIGTERM");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    assert_eq!(status.code(), Some(143));
}

/// Issue 16, point 6: on a terminal `fit` shows a progress line (elapsed, the
/// SMC stage and γ, an estimate of the time left); into a pipe only the
/// announcements and warnings.
#[test]
fn fit_shows_progress_on_a_terminal_only() {
    let args = "fit demo-data/sparse_linear.csv --method smc --particles 1000";
    let bin = env!("CARGO_BIN_EXE_pacauc");
    let piped = Command::new(bin)
        .args(args.split(' '))
        .output()
        .expect("runs");
    let e = String::from_utf8_lossy(&piped.stderr);
    assert!(!e.contains("smc stage"), "no progress into a pipe: {e}");
    if Command::new("script").arg("--version").output().is_err() {
        eprintln!("skipped the terminal half: needs util-linux `script`");
        return;
    }
    let out = Command::new("script")
        .args(["-qec", &format!("{bin} {args} > /dev/null"), "/dev/null"])
        .stdin(Stdio::piped())
        .output()
        .expect("script runs");
    let t = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{t}");
    assert!(t.contains("smc stage") && t.contains("γ"), "{t}");
    assert!(t.contains(" left"), "an estimate of the time left: {t}");
    assert!(t.contains("s] smc stage"), "elapsed time first: {t}");
}
