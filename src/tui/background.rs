//! Background runs: the run form's Ctrl-B starts `pacauc fit … --events` as
//! a process of its own (its own process group, stdin from /dev/null, its
//! stderr to a file) in `pacauc-runs/`, so it outlives the explorer, its
//! terminal and the SSH session; the explorer follows its log like any other.
//! At start the explorer reattaches the runs of that folder still going.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use crate::eventlog::{Line, WriterState, parse_line, writer_state};
use crate::spec::{RunSpec, to_args};

/// Where background runs write their logs, records and stderr.
pub const RUNS_DIR: &str = "pacauc-runs";

/// `pacauc-runs/<UTC yyyymmdd-hhmmss>-<method>` (with `-2`, `-3`… when taken).
fn stem(dir: &Path, method: &str) -> PathBuf {
    let (now, _) = crate::eventlog::now_utc();
    let stamp: String = now.chars().filter(|c| c.is_ascii_digit()).collect();
    let base = format!(
        "{}-{}-{method}",
        &stamp[..8],
        &stamp[8..14.min(stamp.len())]
    );
    let mut path = dir.join(&base);
    let mut k = 2;
    while path.with_extension("jsonl").exists() {
        path = dir.join(format!("{base}-{k}"));
        k += 1;
    }
    path
}

/// Starts `spec` detached; its log's path and the process.
pub fn start(spec: &RunSpec, threads: Option<usize>) -> Result<(PathBuf, Child), String> {
    let dir = Path::new(RUNS_DIR);
    std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let stem = stem(dir, spec.method_name());
    let log = stem.with_extension("jsonl");
    let record = stem.with_extension("json");
    let err_path = stem.with_extension("stderr.txt");
    let stderr = File::create(&err_path).map_err(|e| format!("{}: {e}", err_path.display()))?;
    let exe = std::env::current_exe().map_err(|e| format!("cannot find pacauc itself: {e}"))?;
    let mut cmd = Command::new(exe);
    if let Some(t) = threads {
        cmd.args(["--threads", &t.to_string()]);
    }
    cmd.arg("fit")
        .args(to_args(spec))
        .arg("--events")
        .arg(&log)
        .arg("--out")
        .arg(&record)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(stderr);
    #[cfg(unix)]
    {
        // Out of the terminal's foreground group: the hang-up that ends the
        // explorer's session does not reach it.
        use std::os::unix::process::CommandExt;
        cmd.process_group(0);
    }
    let child = cmd
        .spawn()
        .map_err(|e| format!("cannot start pacauc fit: {e}"))?;
    Ok((log, child))
}

/// The logs in `pacauc-runs/` whose last run is still going (no end, writer alive).
pub fn live_runs() -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(RUNS_DIR) else {
        return Vec::new();
    };
    let mut live: Vec<PathBuf> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| crate::eventlog::is_event_log(p) && is_live(p))
        .collect();
    live.sort();
    live
}

fn is_live(path: &Path) -> bool {
    let Ok(text) = std::fs::read(path) else {
        return false;
    };
    let mut header = None;
    let mut ended = false;
    for line in text.split(|&b| b == b'\n') {
        match parse_line(line) {
            Ok(Line::Header(h)) => {
                header = Some(h);
                ended = false;
            }
            Ok(Line::End(_)) => ended = true,
            _ => {}
        }
    }
    header.is_some_and(|h| !ended && writer_state(&h, path) == WriterState::Alive)
}
