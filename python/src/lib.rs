//! `pacauc._native`: the Python package's bindings. No inference here: a fit
//! is `spec::from_given` (the registry's checks, the CLI's messages), the
//! data through the library's loader, and `spec::run::record` — the calls
//! `pacauc fit` makes — so a record from Python and one from the CLI with
//! the same spec and seed are the same record. A table from Python reaches
//! the loader as CSV text whose numbers are written in Rust's shortest
//! round-trip form, so the loader reads back the very same f64 bits.
//!
//! A run releases the GIL and runs on its own thread in its own rayon pool
//! (`n_jobs` threads; no global pool that a `fork` could leave without its
//! threads); the calling thread waits with the GIL released, waking every
//! 50 ms to hand events to the progress callback and to check for Ctrl-C,
//! which cancels the engine through its `Control`.

use crossbeam_channel::{Receiver, RecvTimeoutError, Sender as SyncSender};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use numpy::PyReadonlyArray1;
use pyo3::exceptions::{PyKeyboardInterrupt, PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};

use pacauc::engine::predict::predict_bytes;
use pacauc::engine::record::{RunRecord, write_atomic};
use pacauc::engine::{Control, EngineError, Event};
use pacauc::spec::registry::{self, Kind, Methods};
use pacauc::spec::{self, RunSpec, SpecError};

/// How often the waiting caller wakes (events, Ctrl-C).
const POLL: Duration = Duration::from_millis(50);
/// Events queued for the callback before the engine drops the oldest kind
/// (in-stage progress) rather than wait for Python.
const EVENT_QUEUE: usize = 4096;
/// How long an interrupted call waits for the run to stop before returning.
const CANCEL_GRACE: Duration = Duration::from_secs(1);

fn value_error(e: impl std::fmt::Display) -> PyErr {
    PyValueError::new_err(e.to_string())
}

/// A run's failure as Python sees it: bad settings or data are ValueError
/// (the library's message), a failed engine RuntimeError, a cancel
/// KeyboardInterrupt.
fn engine_error(e: EngineError) -> PyErr {
    match e {
        EngineError::InvalidParams(m) => PyValueError::new_err(m),
        EngineError::Cancelled => PyKeyboardInterrupt::new_err("the run was cancelled"),
        EngineError::NotConverged {
            message,
            diagnostics,
            ..
        } => PyRuntimeError::new_err(format!(
            "{message}\ndiagnostics: {}",
            serde_json::to_string_pretty(&diagnostics).unwrap_or_default()
        )),
        other => PyRuntimeError::new_err(other.to_string()),
    }
}

/// The registry's settings, as JSON: key, help, default, what it is, and the
/// methods it applies to (the Python estimator's keywords are these keys).
#[pyfunction]
fn registry_json() -> String {
    let settings: Vec<serde_json::Value> = registry::SETTINGS
        .iter()
        .map(|s| {
            let methods: Vec<&str> = registry::METHODS
                .iter()
                .map(|m| m.name)
                .filter(|&m| match s.methods {
                    Methods::All => true,
                    Methods::Bayesian => registry::method(m).is_some_and(|i| i.bayesian),
                    Methods::Only(ms) => ms.contains(&m),
                })
                .collect();
            let kind = match s.kind {
                Kind::Number(_) => "number",
                Kind::Count(_) => "count",
                Kind::Choice(_) => "choice",
                Kind::Switch => "switch",
                Kind::Numbers(_) => "numbers",
                Kind::Gamma => "gamma",
                Kind::Tunable(_) => "tunable",
                Kind::Text => "text",
                Kind::TextList => "text_list",
                Kind::Sized { .. } => "sized",
            };
            serde_json::json!({
                "key": s.key,
                "help": s.help,
                "default": s.default,
                "unset": s.unset,
                "kind": kind,
                "methods": methods,
                "priors": s.priors.iter().map(|p| p.name()).collect::<Vec<_>>(),
            })
        })
        .collect();
    let methods: Vec<serde_json::Value> = registry::METHODS
        .iter()
        .map(|m| serde_json::json!({"name": m.name, "help": m.help, "bayesian": m.bayesian}))
        .collect();
    serde_json::json!({"settings": settings, "methods": methods}).to_string()
}

/// The spec of `method` with the settings `given` as (key, text), for the
/// data named `path`: every check `pacauc fit` makes before reading data
/// (ValueError with the library's message).
fn spec_of(path: &str, method: &str, given: &[(String, String)]) -> PyResult<RunSpec> {
    let pairs: Vec<(&str, &str)> = given
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    spec::from_given(PathBuf::from(path), method, &pairs).map_err(|e: SpecError| value_error(e))
}

/// Checks settings without data; returns the spec as JSON.
#[pyfunction]
fn check_spec(method: &str, given: Vec<(String, String)>) -> PyResult<String> {
    Ok(spec_of("<data>", method, &given)?.to_value().to_string())
}

/// The equivalent `pacauc fit` command of a spec.
#[pyfunction]
fn command_line(path: &str, method: &str, given: Vec<(String, String)>) -> PyResult<String> {
    Ok(spec::command_line(&spec_of(path, method, &given)?))
}

/// The method and the settings of a record's spec that differ from their
/// defaults, as (key, text) — what `pacauc.load` gives the estimator back.
#[pyfunction]
fn given_of(spec_json: &str) -> PyResult<(String, Vec<(String, String)>)> {
    let v: serde_json::Value = serde_json::from_str(spec_json).map_err(value_error)?;
    let spec = RunSpec::from_value(&v).map_err(value_error)?;
    let mut given = Vec::new();
    for s in registry::SETTINGS {
        if s.kind == Kind::TextList {
            if let serde_json::Value::Array(items) = spec::text::value_at(&spec, s) {
                for item in items {
                    given.push((s.key.to_string(), item.as_str().unwrap_or_default().into()));
                }
            }
        } else if let Some(text) = spec::text::explicit_text(&spec, s) {
            let text = if s.kind == Kind::Switch {
                "true".into()
            } else {
                text
            };
            given.push((s.key.to_string(), text));
        }
    }
    Ok((spec.method_name().to_string(), given))
}

/// A table from Python: column names and columns, each a float64 array or a
/// list of optional strings (None: a missing cell).
enum Column {
    Numbers(Vec<f64>),
    Text(Vec<Option<String>>),
}

fn columns_of(columns: &Bound<'_, PyList>) -> PyResult<Vec<Column>> {
    columns
        .iter()
        .map(|c| {
            if let Ok(a) = c.extract::<PyReadonlyArray1<'_, f64>>() {
                Ok(Column::Numbers(a.as_array().iter().copied().collect()))
            } else {
                c.extract::<Vec<Option<String>>>()
                    .map(Column::Text)
                    .map_err(|_| {
                        value_error("a column must be a float64 array or a list of strings")
                    })
            }
        })
        .collect()
}

/// The table as CSV text: numbers in their shortest round-trip form (NaN is
/// a missing cell), text quoted where needed.
fn csv_bytes(header: &[String], columns: &[Column]) -> PyResult<Vec<u8>> {
    let rows = columns.first().map_or(0, |c| match c {
        Column::Numbers(v) => v.len(),
        Column::Text(v) => v.len(),
    });
    if header.len() != columns.len() {
        return Err(value_error("the header and the columns differ in number"));
    }
    let mut w = csv::WriterBuilder::new()
        .quote_style(csv::QuoteStyle::Necessary)
        .from_writer(Vec::with_capacity(rows * columns.len() * 8));
    let err = |e: csv::Error| PyRuntimeError::new_err(format!("cannot write the table: {e}"));
    w.write_record(header).map_err(err)?;
    let mut cells: Vec<String> = vec![String::new(); columns.len()];
    for r in 0..rows {
        for (cell, c) in cells.iter_mut().zip(columns) {
            cell.clear();
            match c {
                Column::Numbers(v) => {
                    let x = *v
                        .get(r)
                        .ok_or_else(|| value_error("the columns differ in length"))?;
                    if x.is_nan() {
                        cell.push_str("NaN");
                    } else {
                        // Display: the shortest decimal that parses back to x.
                        use std::fmt::Write;
                        let _ = write!(cell, "{x}");
                    }
                }
                Column::Text(v) => match v.get(r) {
                    Some(Some(t)) => cell.push_str(t),
                    Some(None) => cell.push_str("NA"),
                    None => return Err(value_error("the columns differ in length")),
                },
            }
        }
        w.write_record(&cells).map_err(err)?;
    }
    w.into_inner()
        .map_err(|e| PyRuntimeError::new_err(format!("cannot write the table: {e}")))
}

/// A fitted model: the run record, as `pacauc fit --out` writes it.
#[pyclass(module = "pacauc._native", frozen)]
struct Record {
    inner: RunRecord,
}

#[pymethods]
impl Record {
    /// Reads a record (as `pacauc predict` does; ValueError if it is not one).
    #[staticmethod]
    fn from_json(text: &str) -> PyResult<Record> {
        RunRecord::from_json(text)
            .map(|inner| Record { inner })
            .map_err(value_error)
    }

    /// The record as `pacauc fit` writes it.
    fn to_json(&self) -> String {
        self.inner.to_json()
    }

    /// Writes the record atomically (temporary file + rename).
    fn save(&self, path: PathBuf) -> PyResult<()> {
        write_atomic(&path, self.inner.to_json().as_bytes()).map_err(|e| {
            pyo3::exceptions::PyOSError::new_err(format!(
                "{}: cannot write the record: {e}",
                path.display()
            ))
        })
    }

    /// Scores a table (columns by name, as `pacauc predict` reads a file):
    /// a dict of `score`, `score_sd`, `vote`, `positive` (NaN / None where a
    /// row is not scored) and `status` per row.
    fn predict<'py>(
        &self,
        py: Python<'py>,
        header: Vec<String>,
        columns: &Bound<'py, PyList>,
    ) -> PyResult<Bound<'py, PyDict>> {
        let columns = columns_of(columns)?;
        let bytes = csv_bytes(&header, &columns)?;
        let model = &self.inner.model;
        let p = py
            .detach(|| predict_bytes(model, Path::new("<table>"), &bytes))
            .map_err(value_error)?;
        let out = PyDict::new(py);
        // Scores and sds are NaN where a row is not scored.
        out.set_item("score", numpy::PyArray1::from_vec(py, p.scores.clone()))?;
        if let Some(sd) = &p.score_sds {
            out.set_item("score_sd", numpy::PyArray1::from_vec(py, sd.clone()))?;
        }
        let rows: Vec<_> = (0..p.len()).map(|k| p.row(k)).collect();
        if p.votes.is_some() {
            let vote: Vec<f64> = rows.iter().map(|r| r.vote.unwrap_or(f64::NAN)).collect();
            out.set_item("vote", numpy::PyArray1::from_vec(py, vote))?;
        }
        let positive: Vec<Option<bool>> = rows.iter().map(|r| r.positive).collect();
        out.set_item("positive", positive)?;
        let status: Vec<&str> = rows.iter().map(|r| r.status.as_str()).collect();
        out.set_item("status", status)?;
        Ok(out)
    }

    fn __getnewargs__(&self) -> (String,) {
        (self.inner.to_json(),)
    }

    #[new]
    fn new(text: &str) -> PyResult<Record> {
        Record::from_json(text)
    }
}

/// What the run thread hands back.
type RunResult = Result<RunRecord, PyErrLike>;

/// An error made without the GIL, turned into a Python exception after.
enum PyErrLike {
    Value(String),
    Engine(EngineError),
}

impl From<PyErrLike> for PyErr {
    fn from(e: PyErrLike) -> PyErr {
        match e {
            PyErrLike::Value(m) => PyValueError::new_err(m),
            PyErrLike::Engine(e) => engine_error(e),
        }
    }
}

/// Forwards events to the waiting caller without ever blocking the engine.
struct Forward(SyncSender<String>);

impl pacauc::engine::Observer for Forward {
    fn observe(&mut self, e: Event) {
        if let Ok(text) = serde_json::to_string(&e) {
            let _ = self.0.try_send(text);
        }
    }
}

/// Loads the data (a file, or CSV text from Python), builds and runs the spec,
/// and returns its record — on this thread, in a pool of `threads`.
fn run_blocking(
    spec: &RunSpec,
    table: Option<&[u8]>,
    threads: usize,
    ctl: &Control,
    events: Option<SyncSender<String>>,
) -> RunResult {
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .thread_name(|i| format!("pacauc-py-{i}"))
        .build()
        .map_err(|e| PyErrLike::Value(format!("n_jobs {threads}: {e}")))?;
    pool.install(|| {
        let t0 = std::time::Instant::now();
        let (ds, prepared) = match table {
            Some(bytes) => spec.data.load_bytes(bytes),
            None => spec.data.load(),
        }
        .map_err(PyErrLike::Value)?;
        let load_seconds = t0.elapsed().as_secs_f64();
        let spec::Built { engine, problem } =
            spec::build(spec, &prepared).map_err(|e| PyErrLike::Value(e.to_string()))?;
        let mut forward = events.map(Forward);
        let mut none = pacauc::engine::NoObserver;
        let obs: &mut dyn pacauc::engine::Observer = match forward.as_mut() {
            Some(f) => f,
            None => &mut none,
        };
        spec::run::record(
            spec,
            (&ds, &prepared),
            engine.as_ref(),
            &problem,
            ctl,
            obs,
            load_seconds,
        )
        .map_err(PyErrLike::Engine)
    })
}

/// Runs on a thread of its own while the caller waits without the GIL,
/// handing events to `progress` and turning Ctrl-C into a cancel.
///
/// The run thread owns what it reads, so that an interrupt returns to Python
/// within `CANCEL_GRACE` even when the engine's next checkpoint is further
/// away (one pass over a large particle cloud can take many seconds): the
/// thread is then left to stop at that checkpoint on its own.
fn run_waiting(
    py: Python<'_>,
    spec: RunSpec,
    table: Option<Vec<u8>>,
    n_jobs: Option<usize>,
    progress: Option<&Bound<'_, PyAny>>,
) -> PyResult<RunRecord> {
    let threads = match n_jobs {
        Some(0) => return Err(value_error("n_jobs must be ≥ 1 (or None: all cores)")),
        Some(n) => n,
        None => std::thread::available_parallelism().map_or(1, |n| n.get()),
    };
    let ctl = Arc::new(Control::new());
    let (tx, rx): (SyncSender<String>, Receiver<String>) = crossbeam_channel::bounded(EVENT_QUEUE);
    let events = progress.map(|_| tx);
    let (done_tx, done_rx) = crossbeam_channel::bounded::<RunResult>(1);
    let run_ctl = Arc::clone(&ctl);
    std::thread::Builder::new()
        .name("pacauc-py-run".into())
        .spawn(move || {
            let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                run_blocking(&spec, table.as_deref(), threads, &run_ctl, events)
            }))
            .unwrap_or_else(|_| Err(PyErrLike::Value("the run panicked (a bug)".into())));
            let _ = done_tx.send(r);
        })
        .map_err(|e| PyRuntimeError::new_err(format!("cannot start the run: {e}")))?;
    let mut interrupted: Option<(PyErr, Instant)> = None;
    let mut events_open = progress.is_some();
    let result = loop {
        let (batch, done) = py.detach(|| {
            let mut batch = Vec::new();
            if events_open {
                match rx.recv_timeout(POLL) {
                    Ok(e) => {
                        batch.push(e);
                        batch.extend(rx.try_iter().take(EVENT_QUEUE));
                    }
                    Err(RecvTimeoutError::Timeout) => {}
                    Err(RecvTimeoutError::Disconnected) => events_open = false,
                }
            }
            let done = if events_open {
                done_rx.try_recv().ok()
            } else {
                done_rx.recv_timeout(POLL).ok()
            };
            (batch, done)
        });
        if let (Some(cb), None) = (progress, &interrupted) {
            for e in batch {
                if let Err(err) = cb.call1((e,)) {
                    ctl.cancel();
                    interrupted = Some((err, Instant::now()));
                    break;
                }
            }
        }
        if interrupted.is_none() {
            if let Err(e) = py.check_signals() {
                ctl.cancel();
                interrupted = Some((e, Instant::now()));
            }
        }
        if let Some(r) = done {
            break r;
        }
        if let Some((_, since)) = &interrupted {
            if since.elapsed() >= CANCEL_GRACE {
                break Err(PyErrLike::Value("cancelled".into()));
            }
        }
    };
    if let Some((e, _)) = interrupted {
        return Err(e);
    }
    result.map_err(PyErr::from)
}

/// Fits `method` with `given` settings on a table from Python (`name` names
/// it in the record and messages); returns the record.
#[pyfunction]
#[pyo3(signature = (name, method, given, header, columns, n_jobs=None, progress=None))]
#[allow(clippy::too_many_arguments)]
fn fit_table(
    py: Python<'_>,
    name: &str,
    method: &str,
    given: Vec<(String, String)>,
    header: Vec<String>,
    columns: &Bound<'_, PyList>,
    n_jobs: Option<usize>,
    progress: Option<&Bound<'_, PyAny>>,
) -> PyResult<Record> {
    let mut spec = spec_of(name, method, &given)?;
    spec.threads = n_jobs;
    let columns = columns_of(columns)?;
    let bytes = csv_bytes(&header, &columns)?;
    drop(columns);
    let inner = run_waiting(py, spec, Some(bytes), n_jobs, progress)?;
    Ok(Record { inner })
}

/// Fits `method` with `given` settings on a CSV file, exactly as `pacauc fit`.
#[pyfunction]
#[pyo3(signature = (path, method, given, n_jobs=None, progress=None))]
fn fit_file(
    py: Python<'_>,
    path: &str,
    method: &str,
    given: Vec<(String, String)>,
    n_jobs: Option<usize>,
    progress: Option<&Bound<'_, PyAny>>,
) -> PyResult<Record> {
    let mut spec = spec_of(path, method, &given)?;
    spec.threads = n_jobs;
    let inner = run_waiting(py, spec, None, n_jobs, progress)?;
    Ok(Record { inner })
}

/// Pools SMC runs made apart (records of `run` r of `runs` R, as JSON
/// texts; `names` for messages) into the record `runs` R makes in one
/// process — `pacauc merge`.
#[pyfunction]
fn merge(py: Python<'_>, texts: Vec<String>, names: Vec<String>) -> PyResult<Record> {
    let records = texts
        .iter()
        .zip(&names)
        .map(|(t, n)| RunRecord::from_json(t).map_err(|e| value_error(format!("{n}: {e}"))))
        .collect::<PyResult<Vec<_>>>()?;
    let inner = py
        .detach(|| spec::merge::merge(records, &names))
        .map_err(|e| match e {
            spec::merge::MergeError::Input(m) => value_error(m),
            spec::merge::MergeError::Engine(e) => engine_error(e),
        })?;
    Ok(Record { inner })
}

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(registry_json, m)?)?;
    m.add_function(wrap_pyfunction!(check_spec, m)?)?;
    m.add_function(wrap_pyfunction!(given_of, m)?)?;
    m.add_function(wrap_pyfunction!(command_line, m)?)?;
    m.add_function(wrap_pyfunction!(fit_table, m)?)?;
    m.add_function(wrap_pyfunction!(fit_file, m)?)?;
    m.add_function(wrap_pyfunction!(merge, m)?)?;
    m.add_class::<Record>()?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
