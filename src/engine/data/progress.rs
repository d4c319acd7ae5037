//! How far a load has come, for a front end that draws while another thread
//! loads (the explorer on a 10⁷-row file spends 10–60 s here). The loader
//! only stores into atomics; whoever shows it reads a `LoadSnapshot`.

use std::sync::atomic::{AtomicU8, AtomicU64, Ordering::Relaxed};

/// The parts of a load, in order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LoadStage {
    /// Mapping the file and cutting its text into cells (the fraction is of
    /// the file's bytes).
    Reading,
    /// Typing the columns, parsing the numbers, labels and summaries.
    Typing,
    /// The stratified split and the standardisation.
    Preparing,
}

impl LoadStage {
    /// One word, for a status line.
    pub fn name(self) -> &'static str {
        match self {
            LoadStage::Reading => "reading",
            LoadStage::Typing => "typing",
            LoadStage::Preparing => "preparing",
        }
    }

    pub fn describe(self) -> &'static str {
        match self {
            LoadStage::Reading => "reading the cells",
            LoadStage::Typing => "typing the columns and summarising them",
            LoadStage::Preparing => "splitting and standardising the rows",
        }
    }
}

/// Shared between the loading thread (writes) and the explorer (reads).
#[derive(Debug, Default)]
pub struct LoadProgress {
    stage: AtomicU8,
    /// Bytes of the file, and units of the reading work done: each byte is
    /// surveyed once and cut once, so `done` runs to twice `bytes`.
    bytes: AtomicU64,
    done: AtomicU64,
    /// The data rows, once counted (0 before).
    rows: AtomicU64,
}

/// One reading of a `LoadProgress`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LoadSnapshot {
    pub stage: LoadStage,
    /// Of the reading stage, 0–1 (1 after it); None while the size is unknown.
    pub read_fraction: Option<f64>,
    /// The data rows, once counted.
    pub rows: Option<u64>,
}

impl LoadProgress {
    pub fn new() -> LoadProgress {
        LoadProgress::default()
    }

    pub(super) fn start_reading(&self, bytes: u64) {
        self.bytes.store(bytes, Relaxed);
    }

    /// `bytes` more of one of the two passes over the file.
    pub(super) fn read(&self, bytes: usize) {
        self.done.fetch_add(bytes as u64, Relaxed);
    }

    pub(super) fn counted_rows(&self, rows: usize) {
        self.rows.store(rows as u64, Relaxed);
    }

    pub fn set_stage(&self, stage: LoadStage) {
        self.stage.store(stage as u8, Relaxed);
    }

    pub fn snapshot(&self) -> LoadSnapshot {
        let stage = match self.stage.load(Relaxed) {
            0 => LoadStage::Reading,
            1 => LoadStage::Typing,
            _ => LoadStage::Preparing,
        };
        let bytes = self.bytes.load(Relaxed);
        let read_fraction = match stage {
            LoadStage::Reading if bytes == 0 => None,
            LoadStage::Reading => {
                Some((self.done.load(Relaxed) as f64 / (2 * bytes) as f64).min(1.0))
            }
            _ => Some(1.0),
        };
        let rows = Some(self.rows.load(Relaxed)).filter(|&r| r > 0);
        LoadSnapshot {
            stage,
            read_fraction,
            rows,
        }
    }
}

/// `progress.read(bytes)` when there is a progress to tell.
pub(super) fn tell(progress: Option<&LoadProgress>, bytes: usize) {
    if let Some(p) = progress {
        p.read(bytes);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two passes over the file make the reading stage's whole; more (a
    /// quoted file read again by the csv crate) stays at 100%.
    #[test]
    fn the_read_share_runs_over_both_passes() {
        let p = LoadProgress::new();
        assert_eq!(p.snapshot().read_fraction, None, "size not known yet");
        p.start_reading(1000);
        p.read(500);
        assert_eq!(p.snapshot().read_fraction, Some(0.25));
        p.read(1000);
        p.counted_rows(40);
        assert_eq!(p.snapshot().read_fraction, Some(0.75));
        assert_eq!(p.snapshot().rows, Some(40));
        p.read(5000);
        assert_eq!(p.snapshot().read_fraction, Some(1.0));
        p.set_stage(LoadStage::Preparing);
        assert_eq!(p.snapshot().stage, LoadStage::Preparing);
    }
}
