//! The run record: the JSON document `fit` prints and the explorer exports and
//! replays. Its top-level keys are a stable interface for scripts. It is also
//! the model: `spec` says how to run it again, `model` how to score new rows.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::Path;

use serde::{Deserialize, Serialize};

use super::auc_interval::{AucInterval, Components, delong, delong_from_order};
use super::bounds::Bound;
use super::data::{Dataset, DroppedColumn, EncodedColumn, FeatureSummary, Prepared, SplitInfo};
use super::event::{Event, Histogram};
use super::fit::{Fit, ScoreModel};
use super::metrics::{RocPoint, ascending_order, auc, auc_sorted, roc_curve_sorted, thin_curve};
use super::model::Model;
use super::posterior_auc::{PosteriorAuc, posterior_auc};
use super::prior::Prior;
use super::quality::{self, Warning};

/// Version of the record format (bump on incompatible changes). 2: the run's
/// `spec` and the `model` section (schema, standardisation, score, spread).
pub const RECORD_VERSION: u32 = 2;

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct DatasetReport {
    pub path: String,
    pub fingerprint: String,
    /// Rows kept after cleaning (train + test when split from one file).
    pub rows: usize,
    /// Features after encoding and dropping.
    pub features: usize,
    pub positives: usize,
    pub negatives: usize,
    pub dropped_rows: usize,
    pub dropped_columns: Vec<DroppedColumn>,
    pub target: String,
    /// Which column is the target and why.
    #[serde(default)]
    pub target_rule: String,
    pub positive_label: String,
    pub positive_rule: String,
    pub encoded: Vec<EncodedColumn>,
    /// Columns that look like identifiers (kept as features, warned).
    #[serde(default)]
    pub id_like: Vec<String>,
    pub warnings: Vec<String>,
    pub summary: Vec<FeatureSummary>,
    /// Label value → kept rows (the classes a reader gives back, e.g.
    /// Python's `classes_`); empty in records written before it.
    #[serde(default)]
    pub label_counts: BTreeMap<String, usize>,
}

impl DatasetReport {
    pub fn of(ds: &Dataset) -> DatasetReport {
        DatasetReport {
            path: ds.path.display().to_string(),
            fingerprint: ds.fingerprint.clone(),
            rows: ds.rows(),
            features: ds.features(),
            positives: ds.positives(),
            negatives: ds.negatives(),
            dropped_rows: ds.report.dropped_rows,
            dropped_columns: ds.report.dropped_columns.clone(),
            target: ds.schema.target.clone(),
            target_rule: ds.report.target_rule.clone(),
            positive_label: ds.schema.positive_label.clone(),
            positive_rule: ds.report.positive_rule.clone(),
            encoded: ds.report.encoded.clone(),
            id_like: ds.report.id_like.clone(),
            warnings: ds.report.warnings.clone(),
            summary: ds.summary.clone(),
            label_counts: ds.report.label_counts.clone(),
        }
    }
}

#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
pub struct AucPair {
    #[serde(deserialize_with = "f64_or_nan")]
    pub train: f64,
    pub test: Option<f64>,
    /// DeLong's interval of `test` (absent in records written before it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub test_interval: Option<AucInterval>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct AucReport {
    #[serde(deserialize_with = "f64_or_nan")]
    pub train: f64,
    pub test: Option<f64>,
    /// DeLong's standard error and 95% interval of `train` (in-sample: the
    /// rows the fit saw, so optimistic as the AUC itself is). Records written
    /// before intervals have none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub train_interval: Option<AucInterval>,
    /// DeLong's standard error and 95% interval of `test`: the sampling
    /// uncertainty over test rows.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub test_interval: Option<AucInterval>,
    /// Bayesian fits: the test AUCs of posterior draws (the uncertainty about
    /// θ, not over test rows).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub test_posterior: Option<PosteriorAuc>,
    /// Why a Bayesian fit has no `test_posterior`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub test_posterior_missing: Option<String>,
    /// AUCs of other point scores of the same fit (e.g. the marginal mode).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub alternatives: BTreeMap<String, AucPair>,
}

#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize)]
pub struct Seconds {
    pub load: f64,
    pub fit: f64,
    pub total: f64,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Coefficient {
    pub name: String,
    #[serde(deserialize_with = "f64_or_nan")]
    pub mean: f64,
    #[serde(deserialize_with = "f64_or_nan")]
    pub sd: f64,
    /// 2.5, 25, 50, 75, 97.5% posterior quantiles where known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub quantiles: Option<[f64; 5]>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Inclusion {
    pub name: String,
    pub prob: f64,
}

/// A ROC curve as two parallel arrays (compact in JSON, easy to plot).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Curve {
    pub fpr: Vec<f64>,
    pub tpr: Vec<f64>,
}

impl Curve {
    pub fn of(points: &[RocPoint]) -> Curve {
        Curve {
            fpr: points.iter().map(|p| p.fpr).collect(),
            tpr: points.iter().map(|p| p.tpr).collect(),
        }
    }
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Roc {
    pub train: Curve,
    pub test: Curve,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RunRecord {
    pub record_version: u32,
    pub pacauc_version: String,
    pub method: String,
    /// The engine's convergence check passed and no warning undermines it.
    pub converged: bool,
    /// Every reason to doubt the result (`quality`): data, engine, diagnostics.
    #[serde(default)]
    pub warnings: Vec<Warning>,
    pub gamma: Option<f64>,
    pub prior: Option<Prior>,
    pub auc: AucReport,
    pub log_evidence: Option<f64>,
    /// The PAC-Bayes certificate of a Bayesian fit (`engine::certify`): `risk`
    /// bounds the AUC risk 1 − AUC of a score drawn from the posterior with
    /// probability ≥ 1 − `epsilon` (see `bounds` for the scales).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bound: Option<Bound>,
    /// SMC with several independent runs (`runs` ≥ 2): every run (seed, log Z,
    /// stages, moves, means, sds, converged) and the diagnostics across them;
    /// the posterior of this record is their pooled cloud. Absent otherwise
    /// (and in records written before it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub runs: Option<super::fit::IndependentRuns>,
    /// One SMC run of several made apart (`--run r` of `--runs R`): its
    /// whole cloud, which `pacauc merge` pools with the other runs' into
    /// the record `--runs R` makes in one process. Absent otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub part: Option<super::fit::RunPart>,
    pub seconds: Seconds,
    pub coefficients: Vec<Coefficient>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub inclusion: Option<Vec<Inclusion>>,
    pub dataset: DatasetReport,
    pub split: SplitInfo,
    /// The method's settings as run.
    pub parameters: serde_json::Value,
    /// Engine-specific results (CV curves, chosen hyper-parameters, …).
    pub details: serde_json::Value,
    pub trace: Vec<Event>,
    pub roc: Roc,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub histograms: Vec<Histogram>,
    /// The run specification (the spec layer's `RunSpec`; opaque here).
    pub spec: serde_json::Value,
    /// DeLong's components of the test scores: the explorer's paired tests
    /// between runs on the same split, replayed runs included (none above
    /// `auc_interval::STORED_MAX_ROWS` test rows).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub test_components: Option<Components>,
    /// How to score new rows.
    pub model: Model,
}

/// Most points kept per ROC curve in a record.
const ROC_POINTS: usize = 201;

/// AUCs and ROC curves of a fit's point score on the prepared data.
pub fn evaluate(fit: &Fit, data: &Prepared) -> (AucReport, Roc) {
    let eval = |m: &ScoreModel, x: &nalgebra::DMatrix<f64>, y: &[bool]| {
        // One sort of the scores serves the AUC, the curve and DeLong's interval.
        let s = m.score(x);
        let order = ascending_order(&s);
        (
            auc_sorted(&s, y, &order),
            Curve::of(&thin_curve(&roc_curve_sorted(&s, y, &order), ROC_POINTS)),
            delong_from_order(&s, y, &order),
        )
    };
    let (train, roc_train, train_interval) = eval(&fit.model, &data.train.x, &data.train.y);
    let test = data.test.as_ref().map(|t| eval(&fit.model, &t.x, &t.y));
    let alternatives = fit
        .alt_models
        .iter()
        .map(|(name, m)| {
            let tr = auc(&m.score(&data.train.x), &data.train.y);
            let te = data.test.as_ref().map(|t| {
                let s = m.score(&t.x);
                (auc(&s, &t.y), delong(&s, &t.y))
            });
            (
                name.clone(),
                AucPair {
                    train: tr,
                    test: te.map(|t| t.0),
                    test_interval: te.and_then(|t| t.1),
                },
            )
        })
        .collect();
    let roc = Roc {
        train: roc_train,
        test: test.as_ref().map(|t| t.1.clone()).unwrap_or_default(),
    };
    let posterior = data.test.as_ref().map(|t| posterior_auc(fit, &t.x, &t.y));
    let (test_posterior, test_posterior_missing) = match posterior {
        Some(Ok(p)) => (p, None),
        Some(Err(why)) => (None, Some(why)),
        None => (None, None),
    };
    (
        AucReport {
            train,
            train_interval,
            test_interval: test.as_ref().and_then(|t| t.2),
            test: test.map(|t| t.0),
            test_posterior,
            test_posterior_missing,
            alternatives,
        },
        roc,
    )
}

impl RunRecord {
    /// The record of `fit` on `data`, run as `spec` says.
    pub fn new(
        ds: &Dataset,
        data: &Prepared,
        fit: &Fit,
        spec: serde_json::Value,
        parameters: serde_json::Value,
        seconds: Seconds,
    ) -> RunRecord {
        let (auc, roc) = evaluate(fit, data);
        let test_components = data
            .test
            .as_ref()
            .filter(|t| t.y.len() <= super::auc_interval::STORED_MAX_ROWS)
            .and_then(|t| Components::of(&fit.model.score(&t.x), &t.y));
        let coefficients = fit
            .mean
            .iter()
            .enumerate()
            .map(|(k, &mean)| Coefficient {
                name: fit.names[k].clone(),
                mean,
                sd: fit.sd.get(k).copied().unwrap_or(f64::NAN),
                quantiles: fit.quantiles.get(k).copied(),
            })
            .collect();
        let inclusion = fit.inclusion.as_ref().map(|p| {
            p.iter()
                .zip(&fit.names)
                .map(|(&prob, name)| Inclusion {
                    name: name.clone(),
                    prob,
                })
                .collect()
        });
        let warnings = quality::assess(fit, &ds.report.warnings);
        RunRecord {
            record_version: RECORD_VERSION,
            pacauc_version: env!("CARGO_PKG_VERSION").to_string(),
            method: fit.engine.to_string(),
            converged: fit.converged && !warnings.iter().any(Warning::undermines_convergence),
            warnings,
            dataset: DatasetReport::of(ds),
            split: data.info.clone(),
            parameters,
            gamma: fit.gamma,
            prior: fit.prior.clone(),
            auc,
            seconds,
            coefficients,
            log_evidence: fit.log_evidence,
            bound: fit.bound.clone(),
            runs: fit.runs.clone(),
            part: fit.part.clone(),
            inclusion,
            trace: fit.trace.clone(),
            roc,
            histograms: fit.histograms.clone(),
            spec,
            test_components,
            model: Model::of(ds, data, fit),
            details: fit.details.clone(),
        }
    }

    pub fn to_json(&self) -> String {
        // NaN and ±inf are written as null (and read back as NaN where a number is due).
        let v = serde_json::to_value(self).expect("records serialise");
        let mut s = String::new();
        pretty(&v, 0, &mut s);
        s.push('\n');
        s
    }

    /// Reads a record of this version; older (or newer) ones are refused with
    /// the version found.
    pub fn from_json(text: &str) -> Result<RunRecord, String> {
        let v: serde_json::Value =
            serde_json::from_str(text).map_err(|e| format!("not a pacauc run record: {e}"))?;
        RunRecord::from_value(v)
    }

    /// `from_json` of parsed JSON (an event log's last line carries a record).
    pub fn from_value(v: serde_json::Value) -> Result<RunRecord, String> {
        let Some(version) = v.get("record_version").and_then(|x| x.as_u64()) else {
            return Err("not a pacauc run record (no record_version)".into());
        };
        if version != u64::from(RECORD_VERSION) {
            let writer = v
                .get("pacauc_version")
                .and_then(|x| x.as_str())
                .map_or(String::new(), |w| format!("pacauc {w}, "));
            let fix = if version > u64::from(RECORD_VERSION) {
                "install a newer pacauc to read it"
            } else {
                "fit the model again with this pacauc to get a new record"
            };
            return Err(format!(
                "this run record was written by {writer}record format {version}; this pacauc ({}) \
                 reads format {RECORD_VERSION}: {fix}",
                env!("CARGO_PKG_VERSION")
            ));
        }
        let record: RunRecord =
            serde_json::from_value(v).map_err(|e| format!("not a pacauc run record: {e}"))?;
        super::model_check::check_model(&record.model)
            .map_err(|e| format!("a damaged run record: {e}"))?;
        if let Some(c) = &record.test_components {
            let s = &record.split;
            c.check(
                s.test_positives,
                s.test_rows.saturating_sub(s.test_positives),
            )
            .map_err(|e| format!("a damaged run record: {e}"))?;
        }
        Ok(record)
    }
}

/// Indented JSON with arrays of plain values on one line (histograms, curves and
/// per-coefficient vectors stay readable).
fn pretty(v: &serde_json::Value, depth: usize, out: &mut String) {
    use serde_json::Value;
    let pad = |d: usize| "  ".repeat(d);
    let scalar = |x: &Value| !(x.is_object() || x.is_array());
    match v {
        // Small flat objects (a coefficient, a ROC point) on one line.
        Value::Object(map) if map.values().all(scalar) && v.to_string().len() <= 100 => {
            let parts: Vec<String> = map
                .iter()
                .map(|(k, x)| format!("{}: {x}", Value::String(k.clone())))
                .collect();
            out.push('{');
            out.push_str(&parts.join(", "));
            out.push('}');
        }
        Value::Object(map) if !map.is_empty() => {
            out.push_str("{\n");
            for (i, (k, val)) in map.iter().enumerate() {
                out.push_str(&pad(depth + 1));
                out.push_str(&Value::String(k.clone()).to_string());
                out.push_str(": ");
                pretty(val, depth + 1, out);
                out.push_str(if i + 1 < map.len() { ",\n" } else { "\n" });
            }
            out.push_str(&pad(depth));
            out.push('}');
        }
        Value::Array(items) if items.iter().any(|x| x.is_object() || x.is_array()) => {
            out.push_str("[\n");
            for (i, val) in items.iter().enumerate() {
                out.push_str(&pad(depth + 1));
                pretty(val, depth + 1, out);
                out.push_str(if i + 1 < items.len() { ",\n" } else { "\n" });
            }
            out.push_str(&pad(depth));
            out.push(']');
        }
        Value::Array(items) => {
            let parts: Vec<String> = items.iter().map(|x| x.to_string()).collect();
            out.push('[');
            out.push_str(&parts.join(", "));
            out.push(']');
        }
        other => out.push_str(&other.to_string()),
    }
}

/// Reads `null` as NaN (serde_json writes non-finite numbers as null).
fn f64_or_nan<'de, D: serde::Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
    Ok(Option::<f64>::deserialize(d)?.unwrap_or(f64::NAN))
}

/// Checks that `path` can be written (a temporary file created in its folder,
/// then removed) — before a long computation whose result would be lost.
pub fn check_writable(path: &Path) -> std::io::Result<()> {
    if is_special(path) {
        // Not opened: opening a pipe for writing waits for its reader, and
        // closing it again would end the reader's input.
        return if std::fs::metadata(path)?.permissions().readonly() {
            Err(std::io::Error::new(
                std::io::ErrorKind::PermissionDenied,
                format!("'{}' is not writable", path.display()),
            ))
        } else {
            Ok(())
        };
    }
    let (dir, name) = temp_sibling(path)?;
    if !dir.is_dir() {
        return Err(std::io::Error::new(
            std::io::ErrorKind::NotFound,
            format!(
                "the folder '{}' does not exist: create it first (mkdir -p '{}') or write elsewhere",
                dir.display(),
                dir.display()
            ),
        ));
    }
    let tmp = dir.join(format!(".{name}.check-{}", std::process::id()));
    std::fs::File::create(&tmp)?;
    std::fs::remove_file(&tmp)
}

/// Whether `path` (its symlinks followed) is a device, a pipe or a socket:
/// `--out /dev/null` or a named pipe. Such a target is written straight, never
/// replaced: renaming a file over /dev/null makes it a plain file, for every
/// program on the machine (it happened here).
pub fn is_special(path: &Path) -> bool {
    std::fs::metadata(path).is_ok_and(|m| !m.is_file() && !m.is_dir())
}

/// The folder of `path` and its file name.
fn temp_sibling(path: &Path) -> std::io::Result<(&Path, String)> {
    let dir = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let name = path
        .file_name()
        .ok_or_else(|| std::io::Error::other("the output path has no file name"))?;
    Ok((dir, name.to_string_lossy().into_owned()))
}

/// A temporary file's name beside `name`, unique to this process and call:
/// two threads (or processes) writing the same target never share one.
fn temp_name(name: &str) -> String {
    static CALLS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let k = CALLS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    format!(".{name}.tmp-{}-{k}", std::process::id())
}

/// Writes `bytes` to a new temporary file in `dir`, flushed to disk.
fn write_temp(dir: &Path, name: &str, bytes: &[u8]) -> std::io::Result<std::path::PathBuf> {
    write_temp_with(dir, name, |w| w.write_all(bytes))
}

/// A new temporary file in `dir` filled by `fill` (through a buffer), flushed to disk.
fn write_temp_with(
    dir: &Path,
    name: &str,
    fill: impl FnOnce(&mut dyn Write) -> std::io::Result<()>,
) -> std::io::Result<std::path::PathBuf> {
    let tmp = dir.join(temp_name(name));
    let result = (|| {
        let mut f = std::io::BufWriter::with_capacity(1 << 20, std::fs::File::create(&tmp)?);
        fill(&mut f)?;
        f.into_inner().map_err(|e| e.into_error())?.sync_all()
    })();
    match result {
        Ok(()) => Ok(tmp),
        Err(e) => {
            let _ = std::fs::remove_file(&tmp);
            Err(e)
        }
    }
}

/// Writes `bytes` to `path` atomically: a temporary file in the same folder,
/// flushed, then renamed over the target. A reader sees the old file or the
/// new one, whole; a failure (or a kill) leaves the old file intact.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    write_atomic_with(path, |w| w.write_all(bytes))
}

/// `write_atomic` of what `fill` writes, streamed (never held whole in memory).
pub fn write_atomic_with(
    path: &Path,
    fill: impl FnOnce(&mut dyn Write) -> std::io::Result<()>,
) -> std::io::Result<()> {
    if is_special(path) {
        let f = std::fs::OpenOptions::new().write(true).open(path)?;
        let mut w = std::io::BufWriter::with_capacity(1 << 20, f);
        fill(&mut w)?;
        return w.flush();
    }
    let (dir, name) = temp_sibling(path)?;
    let tmp = write_temp_with(dir, &name, fill)?;
    let result = std::fs::rename(&tmp, path);
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}

/// Writes `bytes` atomically to the first of `candidate(0)`, `candidate(1)`, …
/// that does not exist, and returns it: never over another writer's file, even
/// when two processes pick the same name at the same moment (the file appears
/// by a hard link, which fails where the name is taken; where the file system
/// has no hard links, the name is reserved by an exclusive create first).
pub fn write_atomic_new(
    candidate: impl Fn(usize) -> std::path::PathBuf,
    bytes: &[u8],
) -> std::io::Result<std::path::PathBuf> {
    let first = candidate(0);
    let (dir, name) = temp_sibling(&first)?;
    let tmp = write_temp(dir, &name, bytes)?;
    let mut result = Err(std::io::Error::other("no free file name"));
    for k in 0..10_000 {
        let path = candidate(k);
        match std::fs::hard_link(&tmp, &path) {
            Ok(()) => {
                result = Ok(path);
                break;
            }
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(_) => {
                // No hard links here: reserve the name, then replace it whole.
                match std::fs::OpenOptions::new()
                    .write(true)
                    .create_new(true)
                    .open(&path)
                {
                    Ok(_) => {
                        result = std::fs::rename(&tmp, &path).map(|()| path);
                        break;
                    }
                    Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
                    Err(e) => {
                        result = Err(e);
                        break;
                    }
                }
            }
        }
    }
    let _ = std::fs::remove_file(&tmp);
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A named pipe stays a pipe and its reader gets the bytes (as
    /// `--out /dev/null` must leave /dev/null a device).
    #[cfg(unix)]
    #[test]
    fn a_pipe_is_written_through_not_replaced() {
        use std::io::Read;
        use std::os::unix::fs::FileTypeExt;
        let dir = std::env::temp_dir().join(format!("pacauc-fifo-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let fifo = dir.join("out.json");
        let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        // SAFETY: a valid NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        let reader = {
            let fifo = fifo.clone();
            std::thread::spawn(move || {
                let mut got = String::new();
                std::fs::File::open(&fifo)
                    .unwrap()
                    .read_to_string(&mut got)
                    .unwrap();
                got
            })
        };
        assert!(is_special(&fifo));
        // Checked without opening it (an open and a close would end the input).
        check_writable(&fifo).unwrap_or_else(|e| panic!("{e}"));
        write_atomic(&fifo, b"{\"ok\": 1}").unwrap();
        let got = reader.join().unwrap();
        assert!(got.ends_with("{\"ok\": 1}"), "{got:?}");
        assert!(std::fs::metadata(&fifo).unwrap().file_type().is_fifo());
        assert!(!is_special(&dir) && !is_special(&dir.join("missing")));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn writing_into_a_missing_folder_names_it() {
        let e = check_writable(Path::new("/nonexistent-pacauc-dir/sub/run.json")).unwrap_err();
        let m = e.to_string();
        assert!(
            m.contains("'/nonexistent-pacauc-dir/sub' does not exist") && m.contains("mkdir -p"),
            "{m}"
        );
    }
}
