//! The fuzz targets' committed corpora and crash reproducers (`fuzz/corpus/T/`,
//! `fuzz/regressions/T/`) replayed on stable Rust: every input that once made a
//! reader panic, hang or over-allocate stays a test, and the corpus keeps the
//! coverage the fuzzer found. `cargo +nightly fuzz run T` grows them.

use std::path::Path;

fn replay(target: &str, run: fn(&[u8])) {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz");
    let mut count = 0;
    for dir in ["corpus", "regressions"] {
        let Ok(entries) = std::fs::read_dir(root.join(dir).join(target)) else {
            continue;
        };
        let mut files: Vec<_> = entries.filter_map(|e| e.ok()).map(|e| e.path()).collect();
        files.sort();
        for f in files {
            let bytes = std::fs::read(&f).unwrap();
            // A panic names the input that caused it.
            let name = f.display().to_string();
            let outcome = std::panic::catch_unwind(|| run(&bytes));
            assert!(outcome.is_ok(), "{target} panicked on {name}");
            count += 1;
        }
    }
    assert!(count > 0, "no committed inputs for {target}");
}

#[test]
fn csv_dataset_corpus() {
    replay("csv_dataset", pacauc::fuzzing::csv_dataset);
}

#[test]
fn run_record_corpus() {
    replay("run_record", pacauc::fuzzing::run_record);
}

#[test]
fn argv_spec_corpus() {
    replay("argv_spec", pacauc::fuzzing::argv_spec);
}

#[test]
fn event_log_corpus() {
    replay("event_log", pacauc::fuzzing::event_log);
}
