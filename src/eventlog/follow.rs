//! Follows event logs like `tail -f`: each `poll` reads what was appended to
//! every file (and every new log in a watched folder), parses the complete
//! lines (in parallel when there are many: a long log replays fast) and says
//! which runs ended without an end line because their writer is gone. A
//! line that does not parse is reported with its file and line number and
//! skipped; an incomplete last line waits for the rest.

use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

use rayon::prelude::*;

use super::{Ending, Header, Line, WriterState, parse_line, writer_state};
use crate::engine::Event;

/// A run in the followed logs: (file index, run index in that file).
pub type SourceId = (usize, usize);

#[derive(Debug, Clone)]
pub enum LogEntry {
    /// A run starts (`file`: its log).
    Header {
        file: PathBuf,
        header: Box<Header>,
    },
    Event(Event),
    End(Ending),
    /// The run has no end and its writer is gone: why.
    Interrupted(String),
    /// A line that could not be read ("FILE:LINE: what").
    Problem(String),
}

#[derive(Debug, Clone)]
pub struct LogMsg {
    pub source: SourceId,
    pub entry: LogEntry,
}

/// Problems reported per file before the rest are only counted.
const MAX_PROBLEMS: usize = 5;
/// Most bytes read from a file per poll: a huge log is read in slices, so
/// memory holds one slice's lines, not the file.
const MAX_READ: u64 = 16 << 20;
/// Lines parsed one by one below this; in parallel above.
const PARALLEL_LINES: usize = 2048;

/// Whether `path` is named like an event log (`*.jsonl`).
pub fn is_event_log(path: &Path) -> bool {
    path.extension().is_some_and(|e| e == "jsonl")
}

#[derive(Debug)]
struct Tail {
    path: PathBuf,
    offset: u64,
    partial: Vec<u8>,
    /// Complete lines read so far.
    lines: usize,
    /// Runs started in this file (headers seen).
    runs: usize,
    header: Option<Header>,
    /// The current run has neither ended nor been declared interrupted.
    open: bool,
    problems: usize,
}

impl Tail {
    fn new(path: PathBuf) -> Tail {
        Tail {
            path,
            offset: 0,
            partial: Vec::new(),
            lines: 0,
            runs: 0,
            header: None,
            open: false,
            problems: 0,
        }
    }

    /// The bytes appended since the last read (a file that shrank is read again).
    fn read_new(&mut self, out: &mut Vec<LogMsg>, index: usize) -> Vec<u8> {
        let Ok(mut f) = std::fs::File::open(&self.path) else {
            return Vec::new();
        };
        let len = f.metadata().map_or(0, |m| m.len());
        if len < self.offset {
            let problem = format!(
                "{}: the file shrank (rewritten?); reading it again from its start",
                self.path.display()
            );
            self.problem(out, index, problem);
            self.offset = 0;
            self.partial.clear();
            self.lines = 0;
        }
        let mut bytes = Vec::new();
        if len > self.offset
            && f.seek(SeekFrom::Start(self.offset)).is_ok()
            && f.take((len - self.offset).min(MAX_READ))
                .read_to_end(&mut bytes)
                .is_ok()
        {
            self.offset += bytes.len() as u64;
        }
        bytes
    }

    fn problem(&mut self, out: &mut Vec<LogMsg>, index: usize, text: String) {
        self.problems += 1;
        let entry = match self.problems {
            k if k <= MAX_PROBLEMS => LogEntry::Problem(text),
            k if k == MAX_PROBLEMS + 1 => LogEntry::Problem(format!(
                "{}: more lines cannot be read; they are skipped without a word",
                self.path.display()
            )),
            _ => return,
        };
        out.push(LogMsg {
            source: (index, self.runs.saturating_sub(1)),
            entry,
        });
    }

    /// Parses and emits the complete lines of `bytes` (after the kept partial line).
    fn consume(&mut self, bytes: Vec<u8>, out: &mut Vec<LogMsg>, index: usize) {
        let mut data = std::mem::take(&mut self.partial);
        data.extend_from_slice(&bytes);
        let Some(last_nl) = data.iter().rposition(|&b| b == b'\n') else {
            self.partial = data;
            return;
        };
        self.partial = data[last_nl + 1..].to_vec();
        let lines: Vec<&[u8]> = data[..last_nl].split(|&b| b == b'\n').collect();
        let parse = |l: &&[u8]| {
            let l = l.strip_suffix(b"\r").unwrap_or(l);
            (!l.iter().all(u8::is_ascii_whitespace)).then(|| parse_line(l))
        };
        let parsed: Vec<Option<Result<Line, String>>> = if lines.len() >= PARALLEL_LINES {
            lines.par_iter().map(parse).collect()
        } else {
            lines.iter().map(parse).collect()
        };
        for p in parsed {
            self.lines += 1;
            match p {
                None => {}
                Some(Ok(line)) => self.emit(line, out, index),
                Some(Err(e)) => {
                    let text = format!("{}:{}: {e}", self.path.display(), self.lines);
                    self.problem(out, index, text)
                }
            }
        }
    }

    fn emit(&mut self, line: Line, out: &mut Vec<LogMsg>, index: usize) {
        let source = (index, self.runs.saturating_sub(1));
        let entry = match line {
            Line::Header(h) => {
                if self.open {
                    out.push(LogMsg {
                        source,
                        entry: LogEntry::Interrupted(
                            "another run starts after it in the log without its end".into(),
                        ),
                    });
                }
                self.runs += 1;
                self.open = true;
                self.header = Some((*h).clone());
                out.push(LogMsg {
                    source: (index, self.runs - 1),
                    entry: LogEntry::Header {
                        file: self.path.clone(),
                        header: h,
                    },
                });
                return;
            }
            Line::Alive => return,
            _ if self.runs == 0 => {
                let text = format!(
                    "{}:{}: a line before the run's header (is the start of the log missing?)",
                    self.path.display(),
                    self.lines
                );
                return self.problem(out, index, text);
            }
            Line::Event(e) => LogEntry::Event(e),
            Line::End(end) => {
                self.open = false;
                LogEntry::End(end)
            }
        };
        out.push(LogMsg { source, entry });
    }

    /// An open run whose writer is gone becomes interrupted.
    fn check_writer(&mut self, out: &mut Vec<LogMsg>, index: usize) {
        let Some(h) = self.header.as_ref().filter(|_| self.open) else {
            return;
        };
        if let WriterState::Gone(why) = writer_state(h, &self.path) {
            self.open = false;
            let cut = if self.partial.is_empty() {
                String::new()
            } else {
                "; its last line is incomplete (cut when the writer stopped) and skipped".into()
            };
            out.push(LogMsg {
                source: (index, self.runs - 1),
                entry: LogEntry::Interrupted(format!("{why}{cut}")),
            });
        }
    }
}

/// The logs followed: files given by name, and the logs in given folders.
#[derive(Debug)]
pub struct Follower {
    tails: Vec<Tail>,
    dirs: Vec<PathBuf>,
}

impl Follower {
    /// Files may not exist yet (a run about to start); folders must.
    pub fn new(paths: &[PathBuf]) -> Result<Follower, String> {
        let mut f = Follower {
            tails: Vec::new(),
            dirs: Vec::new(),
        };
        for p in paths {
            if p.is_dir() {
                f.dirs.push(p.clone());
            } else {
                f.add(p.clone());
            }
        }
        f.scan_dirs();
        Ok(f)
    }

    fn add(&mut self, path: PathBuf) {
        if !self.tails.iter().any(|t| t.path == path) {
            self.tails.push(Tail::new(path));
        }
    }

    /// Adopts the folders' new `*.jsonl` files that begin as event logs do.
    fn scan_dirs(&mut self) {
        for dir in self.dirs.clone() {
            let Ok(entries) = std::fs::read_dir(&dir) else {
                continue;
            };
            let mut found: Vec<PathBuf> = entries
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| is_event_log(p) && starts_as_log(p))
                .collect();
            found.sort();
            for p in found {
                self.add(p);
            }
        }
    }

    /// Follows one more file or folder (a background run the explorer started).
    pub fn watch(&mut self, path: PathBuf) {
        if path.is_dir() {
            if !self.dirs.contains(&path) {
                self.dirs.push(path);
            }
            self.scan_dirs();
        } else {
            self.add(path);
        }
    }

    /// The files followed so far.
    pub fn files(&self) -> Vec<&Path> {
        self.tails.iter().map(|t| t.path.as_path()).collect()
    }

    /// Files without a run yet (missing, empty or still without a header).
    pub fn waiting(&self) -> Vec<&Path> {
        self.tails
            .iter()
            .filter(|t| t.runs == 0)
            .map(|t| t.path.as_path())
            .collect()
    }

    /// Whether any run is still open (neither ended nor interrupted).
    pub fn any_open(&self) -> bool {
        self.tails.iter().any(|t| t.open)
    }

    /// What was appended to every log since the last poll (up to `MAX_READ`
    /// bytes a file: poll again while this returns something), in order, and
    /// the runs found interrupted.
    pub fn poll(&mut self) -> Vec<LogMsg> {
        self.scan_dirs();
        let mut out = Vec::new();
        for (i, t) in self.tails.iter_mut().enumerate() {
            let bytes = t.read_new(&mut out, i);
            let grew = !bytes.is_empty();
            t.consume(bytes, &mut out, i);
            if !grew {
                t.check_writer(&mut out, i);
            }
        }
        out
    }
}

/// Whether a file begins as an event log (or is still empty).
fn starts_as_log(path: &Path) -> bool {
    let mut head = [0u8; 17];
    match std::fs::File::open(path).and_then(|mut f| f.read(&mut head)) {
        Ok(0) => true,
        Ok(n) => b"{\"pacauc_events\":".starts_with(&head[..n]),
        Err(_) => false,
    }
}
