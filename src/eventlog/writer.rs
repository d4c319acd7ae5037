//! Appends a run's lines to its log. The engine's thread only serialises (a
//! few microseconds an event); a writer thread does the file writes, each
//! batch of whole lines in one `write`, as soon as they come, and a heartbeat
//! after `HEARTBEAT` of silence.

use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crossbeam_channel::{RecvTimeoutError, Sender, unbounded};

use super::{EndLine, HEARTBEAT, Header};
use crate::engine::Event;
use crate::engine::record::RunRecord;

/// At most one SMC particle-histogram snapshot per this interval in a log.
pub const SNAPSHOT_INTERVAL: Duration = Duration::from_secs(1);

/// Writes one run's lines (header first) to a log.
pub struct LogWriter {
    path: PathBuf,
    tx: Option<Sender<Vec<u8>>>,
    thread: Option<JoinHandle<io::Result<()>>>,
    last_snapshot: Option<Instant>,
}

fn line_of<T: serde::Serialize>(value: &T) -> Vec<u8> {
    let mut bytes = serde_json::to_vec(value).unwrap_or_default();
    bytes.push(b'\n');
    bytes
}

fn write_loop(mut file: File, rx: crossbeam_channel::Receiver<Vec<u8>>) -> io::Result<()> {
    let mut batch = Vec::new();
    loop {
        match rx.recv_timeout(HEARTBEAT) {
            Ok(line) => {
                batch.extend_from_slice(&line);
                for more in rx.try_iter().take(4096) {
                    batch.extend_from_slice(&more);
                }
            }
            Err(RecvTimeoutError::Timeout) => {
                batch.extend_from_slice(&line_of(&serde_json::json!({
                    "alive": super::now_utc().1
                })));
            }
            Err(RecvTimeoutError::Disconnected) => return file.flush(),
        }
        file.write_all(&batch)?;
        batch.clear();
    }
}

impl LogWriter {
    /// Opens `path` for appending (created if missing) and writes `header`.
    pub fn create(path: &Path, header: &Header) -> io::Result<LogWriter> {
        let mut file = OpenOptions::new().create(true).append(true).open(path)?;
        file.write_all(&line_of(header))?;
        let (tx, rx) = unbounded::<Vec<u8>>();
        let thread = std::thread::Builder::new()
            .name("pacauc-events".into())
            .spawn(move || write_loop(file, rx))?;
        Ok(LogWriter {
            path: path.to_path_buf(),
            tx: Some(tx),
            thread: Some(thread),
            last_snapshot: None,
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    fn send(&self, line: Vec<u8>) {
        if let Some(tx) = &self.tx {
            // A failed writer reports at `end`.
            let _ = tx.send(line);
        }
    }

    /// Appends an event (particle histograms at most once per `SNAPSHOT_INTERVAL`).
    pub fn event(&mut self, event: &mut Event) {
        if let Event::SmcStage(s) = event
            && !s.histograms.is_empty()
        {
            let now = Instant::now();
            let due = self
                .last_snapshot
                .is_none_or(|t| now.duration_since(t) >= SNAPSHOT_INTERVAL);
            if due {
                self.last_snapshot = Some(now);
            } else {
                let h = std::mem::take(&mut s.histograms);
                let line = line_of(&*event);
                if let Event::SmcStage(s) = event {
                    s.histograms = h;
                }
                return self.send(line);
            }
        }
        self.send(line_of(&*event));
    }

    /// Closes the log without an end, as a killed writer leaves it (tests).
    #[cfg(test)]
    pub fn abandon(mut self) {
        self.tx = None;
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }

    /// Appends the run's end and closes the log; an error if any write failed.
    pub fn end(mut self, end: Result<&RunRecord, EndLine>) -> io::Result<()> {
        let line = match end {
            Ok(record) => line_of(&EndLine::Finished {
                record: serde_json::to_value(record).map_err(io::Error::other)?,
            }),
            Err(other) => line_of(&other),
        };
        self.send(line);
        self.tx = None;
        match self.thread.take().map(|t| t.join()) {
            Some(Ok(result)) => result,
            Some(Err(_)) => Err(io::Error::other("the event log's writer panicked")),
            None => Ok(()),
        }
    }
}
