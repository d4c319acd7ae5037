//! Event logs: what `pacauc fit --events FILE` appends while it runs, and what
//! `pacauc watch` (and the explorer, for background runs) follows.
//!
//! A log is JSON lines, one run after another when a file is reused:
//! - a header `{"pacauc_events": 1, …}`: the format version, the spec, the
//!   dataset summary (what the Dataset pane shows), the writer's pid, host and
//!   process start, and the start time;
//! - the engine's events as the explorer receives them (`{"event": …}`;
//!   particle histograms at most once a second);
//! - `{"alive": t}` after 30 s without a line (a heartbeat for readers that
//!   cannot see the writer's process: another host);
//! - the end `{"end": "finished", "record": …}`, `"failed"` or `"cancelled"`.
//!
//! Lines are written whole by a writer thread as they come, so a killed run
//! leaves a readable prefix. A run without an end whose writer is gone (same
//! host: its pid has ended or belongs to another process; another host: no line
//! for three heartbeats) reads as interrupted.

mod follow;
mod liveness;
mod writer;

use serde::{Deserialize, Serialize};

use crate::engine::Event;
use crate::engine::data::{Dataset, Prepared, SplitInfo};
use crate::engine::record::{DatasetReport, RunRecord};

pub use follow::{Follower, LogEntry, LogMsg, SourceId, is_event_log};
pub use liveness::{HEARTBEAT, WriterState, proc_stat, this_host, writer_state};
pub use writer::LogWriter;

/// Version of the log format (the header's `pacauc_events`).
pub const FORMAT_VERSION: u32 = 1;

/// The first line of a run in a log.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Header {
    pub pacauc_events: u32,
    /// The writing pacauc's version.
    pub version: String,
    /// The run's spec (`RunSpec::to_value`).
    pub spec: serde_json::Value,
    pub dataset: DatasetReport,
    pub split: SplitInfo,
    /// Feature names after preparation (the coefficients' order).
    pub names: Vec<String>,
    pub pid: u32,
    pub host: String,
    /// The writer's start in clock ticks after boot (`/proc/self/stat`): tells
    /// a reused pid from the writer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub proc_start: Option<u64>,
    /// UTC, ISO 8601.
    pub started: String,
    /// Seconds since the Unix epoch.
    pub started_unix: f64,
}

impl Header {
    /// The header of a run of `spec` (`RunSpec::to_value`) on these data, by
    /// this process, now.
    pub fn for_run(spec: serde_json::Value, ds: &Dataset, prepared: &Prepared) -> Header {
        let (started, started_unix) = now_utc();
        let pid = std::process::id();
        Header {
            pacauc_events: FORMAT_VERSION,
            version: env!("CARGO_PKG_VERSION").into(),
            spec,
            dataset: DatasetReport::of(ds),
            split: prepared.info.clone(),
            names: prepared.names.clone(),
            pid,
            host: this_host(),
            proc_start: proc_stat(pid).map(|(_, start)| start),
            started,
            started_unix,
        }
    }
}

/// How a run ended (its log's last line).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "end", rename_all = "snake_case")]
pub enum EndLine {
    /// The run record as `RunRecord::to_json` writes it.
    Finished {
        record: serde_json::Value,
    },
    Failed {
        error: String,
    },
    Cancelled,
}

/// A run's ending, read back.
#[derive(Debug, Clone)]
pub enum Ending {
    Finished(Box<RunRecord>),
    Failed(String),
    Cancelled,
}

/// One parsed line.
#[derive(Debug, Clone)]
pub enum Line {
    Header(Box<Header>),
    Event(Event),
    End(Ending),
    Alive,
}

#[derive(Deserialize)]
struct AliveLine {
    #[allow(dead_code)]
    alive: f64,
}

/// Parses one line (without its newline). The kind is told by the first key,
/// which the writer always puts first; the message says what was wrong.
pub fn parse_line(bytes: &[u8]) -> Result<Line, String> {
    let starts = |p: &str| bytes.starts_with(p.as_bytes());
    let json = |e: serde_json::Error| e.to_string();
    if starts("{\"event\":") {
        return serde_json::from_slice::<Event>(bytes)
            .map(Line::Event)
            .map_err(|e| format!("not a pacauc event: {}", json(e)));
    }
    if starts("{\"end\":") {
        let end: EndLine =
            serde_json::from_slice(bytes).map_err(|e| format!("not a run's end: {}", json(e)))?;
        return Ok(Line::End(match end {
            EndLine::Finished { record } => Ending::Finished(Box::new(
                RunRecord::from_value(record).map_err(|e| format!("the final record: {e}"))?,
            )),
            EndLine::Failed { error } => Ending::Failed(error),
            EndLine::Cancelled => Ending::Cancelled,
        }));
    }
    if starts("{\"alive\":") {
        return serde_json::from_slice::<AliveLine>(bytes)
            .map(|_| Line::Alive)
            .map_err(|e| format!("not a heartbeat: {}", json(e)));
    }
    if starts("{\"pacauc_events\":") {
        let h: Header = serde_json::from_slice(bytes)
            .map_err(|e| format!("not a pacauc event log header: {}", json(e)))?;
        if h.pacauc_events != FORMAT_VERSION {
            return Err(format!(
                "event log format {}; this pacauc ({}) reads format {FORMAT_VERSION}",
                h.pacauc_events,
                env!("CARGO_PKG_VERSION")
            ));
        }
        return Ok(Line::Header(Box::new(h)));
    }
    let shown: String = String::from_utf8_lossy(&bytes[..bytes.len().min(40)]).into();
    Err(format!(
        "not a pacauc event log line (it starts {shown:?}; logs are written by pacauc fit --events)"
    ))
}

/// UTC now as ISO 8601 and as seconds since the epoch.
pub fn now_utc() -> (String, f64) {
    let t = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64());
    let secs = t as i64;
    let (y, m, d) = civil_from_days(secs.div_euclid(86_400));
    let s = secs.rem_euclid(86_400);
    let text = format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
        s / 3600,
        s / 60 % 60,
        s % 60
    );
    (text, t)
}

/// Days since 1970-01-01 → (year, month, day) in the proleptic Gregorian calendar.
pub fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
}

#[cfg(test)]
mod tests;
