//! The entry points of the fuzz targets (`fuzz/`, cargo-fuzz) over the readers
//! of files someone else wrote: CSV bytes, run records, command lines, event
//! logs. They
//! live in the library so that the committed corpora also run as plain
//! regression tests (`tests/fuzz_corpora.rs`) on stable Rust. Each must return
//! normally on any input: an error is a fine answer, a panic, a hang or an
//! allocation out of proportion to the input is a bug.

use std::path::{Path, PathBuf};

use clap::Parser;
use nalgebra::DMatrix;
use ratatui::Terminal;
use ratatui::backend::TestBackend;

use crate::app::{App, ViewOptions};
use crate::cli::{Cli, Command};
use crate::engine::bounds::recompute;
use crate::engine::data::{Dataset, LoadOptions, TestSource, prepare};
use crate::engine::record::{DatasetReport, RunRecord};
use crate::figures::{Source, from_records};

/// Largest model dimension the record target scores rows with (a record may
/// declare any size; scoring a few rows costs O(d²) for a full covariance).
const MAX_SCORED_DIM: usize = 2_000;

/// CSV bytes → a dataset, its report and a standardised split.
pub fn csv_dataset(bytes: &[u8]) {
    // The parallel no-quote path cuts the same cells (and finds the same
    // first error) as the csv crate's reader.
    crate::engine::data::fast_equals_csv(bytes, &[usize::MAX, 7], &[]);
    let Ok(ds) = Dataset::from_csv_bytes(Path::new("fuzz.csv"), bytes, &LoadOptions::default())
    else {
        return;
    };
    let _ = DatasetReport::of(&ds);
    let _ = prepare(
        &ds,
        TestSource::Split {
            frac: 0.25,
            seed: 1,
        },
    );
}

/// Record JSON → what `predict`, `bound`, `plot` and `replay` do with it (the
/// scoring of a few rows, the certificate at another ε, the figures' data, the
/// explorer's replay drawn on a test terminal).
pub fn run_record(bytes: &[u8]) {
    let Ok(text) = std::str::from_utf8(bytes) else {
        return;
    };
    let Ok(record) = RunRecord::from_json(text) else {
        return;
    };
    let d = record.model.features.len();
    if d <= MAX_SCORED_DIM {
        let x = DMatrix::from_fn(3, d, |i, k| (i as f64 - 1.0) * (k as f64 + 1.0).recip());
        let _ = record.model.predict(&x);
        let _ = record.model.vote(&x);
    }
    if let Some(b) = &record.bound {
        let _ = recompute(b, 0.01);
    }
    let sources = [Source::Run {
        label: "fuzz".into(),
        record: Box::new(record.clone()),
    }];
    let _ = from_records(&sources);
    let app = App::replay(
        vec![(PathBuf::from("fuzz.json"), record)],
        ViewOptions::default(),
    );
    let Ok(mut t) = Terminal::new(TestBackend::new(100, 30));
    let _ = t.draw(|f| crate::tui::ui::render(&app, f));
}

/// A command line (arguments separated by NUL bytes or newlines) → the parsed
/// command and, for `fit`, its checked run specification. Nothing is run.
pub fn argv_spec(bytes: &[u8]) {
    let Ok(text) = std::str::from_utf8(bytes) else {
        return;
    };
    let args = std::iter::once("pacauc").chain(text.split(['\0', '\n']));
    let Ok(cli) = Cli::try_parse_from(args) else {
        return;
    };
    if let Some(Command::Fit(fit)) = cli.command {
        let _ = fit.spec(cli.threads);
    }
}

/// Event-log bytes → what `pacauc watch` does with them: the follower reads
/// the file as it would a live log (in slices, line by line), the explorer's
/// state applies every entry, `watch --once` describes every run, and the
/// watch view is drawn on a test terminal.
pub fn event_log(bytes: &[u8]) {
    use crate::app::{Msg, update};
    use crate::eventlog::Follower;
    // One file per process (libFuzzer runs inputs one after another).
    let path = std::env::temp_dir().join(format!("pacauc-fuzz-{}.jsonl", std::process::id()));
    if std::fs::write(&path, bytes).is_err() {
        return;
    }
    let Ok(mut follower) = Follower::new(std::slice::from_ref(&path)) else {
        return;
    };
    let mut app = App::watching(ViewOptions::default());
    // Until a poll reads nothing new; a bounded number of polls, so a reader
    // that never says "nothing new" shows up as a finding, not a hang.
    for _ in 0..1_000 {
        let msgs = follower.poll();
        if msgs.is_empty() {
            break;
        }
        for m in msgs {
            update(&mut app, Msg::Log(m));
        }
    }
    for r in &app.runs {
        let _ = crate::cli::watch::describe(r);
    }
    let Ok(mut t) = Terminal::new(TestBackend::new(100, 30));
    let _ = t.draw(|f| crate::tui::ui::render(&app, f));
    let _ = std::fs::remove_file(&path);
}
