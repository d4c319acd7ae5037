//! Is a log's writer still running? On the writer's host its process says so
//! (`/proc/PID/stat`, with its start time against pid reuse); elsewhere the
//! log's own growth does (the writer adds a heartbeat line after `HEARTBEAT`
//! of silence, so three missed heartbeats mean it is gone).

use std::path::Path;
use std::time::{Duration, SystemTime};

use super::Header;

/// Longest silence of a live writer: it writes `{"alive": t}` after this long
/// without a line.
pub const HEARTBEAT: Duration = Duration::from_secs(30);

#[derive(Debug, Clone, PartialEq)]
pub enum WriterState {
    Alive,
    /// Gone, and why we know.
    Gone(String),
}

/// This machine's name (`/proc/sys/kernel/hostname`, else `$HOSTNAME`).
pub fn this_host() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
        .or_else(|| std::env::var("HOSTNAME").ok())
        .unwrap_or_else(|| "unknown".into())
}

/// The state letter and start time (clock ticks after boot) of process `pid`
/// from `/proc/PID/stat`; None when the process does not exist.
pub fn proc_stat(pid: u32) -> Option<(char, u64)> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // "pid (comm) S ppid …": comm may hold spaces and parentheses.
    let rest = &text[text.rfind(')')? + 1..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let state = fields.first()?.chars().next()?;
    // Field 22 of the line is the 20th after the state's.
    let start = fields.get(19)?.parse().ok()?;
    Some((state, start))
}

/// Whether the writer of `header` is alive; `log` (the file) gives its last
/// growth for writers this host cannot see.
pub fn writer_state(header: &Header, log: &Path) -> WriterState {
    let here = header.host == this_host() && Path::new("/proc/self/stat").exists();
    if here {
        return match proc_stat(header.pid) {
            None => WriterState::Gone(format!("its process {} has ended", header.pid)),
            Some(('Z', _)) => WriterState::Gone(format!("its process {} has ended", header.pid)),
            Some((_, start)) if header.proc_start.is_some_and(|s| s != start) => {
                WriterState::Gone(format!(
                    "its process {} has ended (the pid is another process now)",
                    header.pid
                ))
            }
            Some(_) => WriterState::Alive,
        };
    }
    let silent = std::fs::metadata(log)
        .and_then(|m| m.modified())
        .ok()
        .and_then(|t| SystemTime::now().duration_since(t).ok())
        .unwrap_or_default();
    if silent > 3 * HEARTBEAT {
        WriterState::Gone(format!(
            "no line for {:.0} s from its writer on {} (it writes one at least every {} s)",
            silent.as_secs_f64(),
            header.host,
            HEARTBEAT.as_secs()
        ))
    } else {
        WriterState::Alive
    }
}
