//! Helpers shared by the command-line tests: run the built binary, read its JSON.
#![allow(dead_code)] // each test file uses its own subset

use std::process::{Command, Output};

/// `pacauc ARGS…` with the environment of the test.
pub fn pacauc(args: &[&str]) -> Output {
    pacauc_env(args, &[])
}

/// `pacauc ARGS…` with extra environment variables.
pub fn pacauc_env(args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut c = Command::new(env!("CARGO_BIN_EXE_pacauc"));
    c.args(args);
    for (k, v) in env {
        c.env(k, v);
    }
    c.output().expect("runs")
}

/// The JSON document on stdout of a successful run (stderr shown otherwise).
pub fn json(out: &Output) -> serde_json::Value {
    assert!(
        out.status.success(),
        "stderr: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("stdout is one JSON document")
}

/// The events of kind `event` ("ep_sweep", "log", …) in a record's trace.
pub fn events<'a>(record: &'a serde_json::Value, event: &str) -> Vec<&'a serde_json::Value> {
    record["trace"]
        .as_array()
        .expect("a trace")
        .iter()
        .filter(|e| e["event"] == event)
        .collect()
}

/// The inclusion probabilities of a spike-and-slab record, in feature order.
pub fn inclusion(record: &serde_json::Value) -> Vec<f64> {
    record["inclusion"]
        .as_array()
        .expect("inclusion")
        .iter()
        .map(|i| i["prob"].as_f64().unwrap())
        .collect()
}

/// The sparse demo as it was before it grew (600 rows, 90 positives, 12 + 12
/// labels swapped; the same generator and seed) written to a temporary file:
/// tests whose behaviour was found on it (EP's all-spike fixed point) keep it.
pub fn sparse_demo_600(tag: &str) -> String {
    use pacauc::engine::data::demo::{SEED, sparse_linear_sized};
    let path =
        std::env::temp_dir().join(format!("pacauc-sparse600-{tag}-{}.csv", std::process::id()));
    std::fs::write(&path, sparse_linear_sized(SEED, 600, 90, 12).to_csv()).unwrap();
    path.display().to_string()
}
