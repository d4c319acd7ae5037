//! `pacauc compare`: several methods on one CSV over repeated stratified
//! splits, compared on the same test rows by DeLong's paired test (or a paired
//! stratified bootstrap), split by split and pooled across splits.
//!
//! The runs are the protocol's (`run_split`: the same `RunSpec` `pacauc fit`
//! makes, records saved and reused), with the data settings of `fit`. Pooled
//! across K splits, the mean difference's standard error is the corrected
//! resampled one of Nadeau & Bengio (2003), √((1/K + n_test/n_train)·s²):
//! the splits share rows, so the plain s/√K would be too small; its p-value is
//! Student's t with K − 1 degrees of freedom. With one split, the pooled row is
//! that split's DeLong test.

use std::path::{Path, PathBuf};

use serde::Serialize;
use statrs::distribution::{ContinuousCDF, StudentsT};

use super::config::{DataPlan, MethodPlan, data_plan};
use super::runs::{RunId, RunResult, Status, run_split};
use super::{Mode, Options, method_plans};
use crate::engine::auc_interval::{
    AucInterval, PairedAuc, bootstrap, bootstrap_paired, delong, delong_paired,
};
use crate::engine::record::RunRecord;
use crate::spec::RunSpec;

/// A method's test scores and the test labels.
type Scored = (Vec<f64>, Vec<bool>);

/// What to compare.
#[derive(Debug, Clone)]
pub struct CompareOptions {
    pub file: PathBuf,
    /// Method columns (the protocol's keys); the first is the reference.
    pub methods: Vec<String>,
    pub splits: usize,
    /// `fit`'s data settings (registry keys).
    pub data_settings: Vec<(String, String)>,
    /// Records go to `out/records`.
    pub out: PathBuf,
    /// Paired stratified bootstrap with this many replicates instead of DeLong.
    pub bootstrap: Option<usize>,
}

/// One method on one split.
#[derive(Debug, Clone, Serialize)]
pub struct MethodSplit {
    pub method: String,
    pub seed: u64,
    /// The test AUC and its interval; None when the run failed or was skipped.
    pub auc: Option<AucInterval>,
    /// Against the reference on the same test rows (None for the reference).
    pub versus_reference: Option<PairedAuc>,
    /// "fresh", "reused", or why there is no result.
    pub status: String,
}

/// A method's difference to the reference pooled over the splits.
#[derive(Debug, Clone, Serialize)]
pub struct Pooled {
    pub method: String,
    pub splits: usize,
    pub mean_auc: f64,
    /// Mean of AUC(method) − AUC(reference) over the splits both ran.
    pub difference: f64,
    /// Nadeau–Bengio's corrected SE (one split: its DeLong SE).
    pub se: f64,
    pub lower: f64,
    pub upper: f64,
    pub p_value: f64,
    /// "corrected resampled t (Nadeau & Bengio 2003)" or the one split's test.
    pub rule: String,
}

#[derive(Debug, Clone, Serialize)]
pub struct Comparison {
    pub data: String,
    pub reference: String,
    pub rows: Vec<MethodSplit>,
    pub pooled: Vec<Pooled>,
}

/// The test rows of a record's split (standardised as its fit saw them).
fn test_rows(record: &RunRecord) -> Result<crate::engine::data::Labeled, String> {
    let spec = RunSpec::from_value(&record.spec).map_err(|e| e.to_string())?;
    let (_, prepared) = spec.data.load()?;
    prepared
        .test
        .ok_or_else(|| "the runs have no test rows (test_frac 0): nothing to compare on".into())
}

fn status_text(s: &Status) -> String {
    match s {
        Status::Fresh => "fresh".into(),
        Status::Reused => "reused".into(),
        Status::Failed(e) => format!("failed: {}", e.lines().next().unwrap_or("")),
        Status::Skipped(w) => format!("skipped: {w}"),
    }
}

/// The plan of the file: a data plan named by its stem with the given settings.
fn plan_of(opts: &CompareOptions) -> Result<DataPlan, String> {
    if !opts.file.is_file() {
        return Err(format!("{}: no such data file", opts.file.display()));
    }
    if opts.data_settings.iter().any(|(k, _)| k == "test") && opts.splits > 1 {
        return Err(
            "--test fixes the test rows: every split would be the same; give --splits 1 \
                    or leave --test out"
                .into(),
        );
    }
    let stem = opts
        .file
        .file_stem()
        .map_or("data".into(), |s| s.to_string_lossy().into_owned());
    // A generic plan (not the paper's per-set choices): the user's file.
    let mut plan = data_plan(&format!("{stem}-compare"));
    plan.name = stem;
    plan.splits = opts.splits;
    plan.data_settings = opts.data_settings.clone();
    Ok(plan)
}

/// Runs every method on every split and compares them with the first.
pub fn compare(
    opts: &CompareOptions,
    report: &(dyn Fn(&RunResult) + Sync),
) -> Result<Comparison, String> {
    let plan = plan_of(opts)?;
    let popts = Options {
        mode: Mode::Full,
        data_dir: opts
            .file
            .parent()
            .map_or(PathBuf::from("."), Path::to_path_buf),
        out: opts.out.clone(),
        only: Vec::new(),
        methods: opts.methods.clone(),
        splits: Some(opts.splits),
        tables_only: false,
        command: String::new(),
        data_settings: opts.data_settings.clone(),
    };
    let methods: Vec<&'static MethodPlan> = method_plans(&popts)?;
    let reference = opts.methods.first().ok_or("no method to compare")?.clone();
    let records = opts.out.join("records");
    std::fs::create_dir_all(&records)
        .map_err(|e| format!("{}: cannot create the folder: {e}", records.display()))?;
    let mut rows = Vec::new();
    for seed in 0..opts.splits as u64 {
        let results = run_split(
            &plan,
            &opts.file,
            seed,
            &methods,
            Mode::Full,
            &records,
            true,
            report,
        );
        // Every run of a split has the same test rows: loaded once.
        let mut test: Option<crate::engine::data::Labeled> = None;
        let mut scored: Vec<(String, Option<Scored>, String)> = Vec::new();
        for r in &results {
            let scores = match &r.status {
                Status::Fresh | Status::Reused => {
                    let rec = record_of(&r.id, &records)?;
                    if test.is_none() {
                        test = Some(test_rows(&rec)?);
                    }
                    let t = test.as_ref().expect("loaded above");
                    Some((rec.model.score.score(&t.x), t.y.clone()))
                }
                _ => None,
            };
            scored.push((r.id.key.to_string(), scores, status_text(&r.status)));
        }
        let refs = scored
            .iter()
            .find(|(k, ..)| *k == reference)
            .and_then(|x| x.1.clone());
        for (key, scores, status) in scored {
            let auc = scores.as_ref().and_then(|(s, y)| match opts.bootstrap {
                Some(b) => bootstrap(s, y, b, seed),
                None => delong(s, y),
            });
            let versus_reference = match (&scores, &refs) {
                (Some((s, y)), Some((r, _))) if key != reference => match opts.bootstrap {
                    Some(b) => bootstrap_paired(s, r, y, b, seed),
                    None => delong_paired(s, r, y),
                },
                _ => None,
            };
            rows.push(MethodSplit {
                method: key,
                seed,
                auc,
                versus_reference,
                status,
            });
        }
    }
    let test_share = test_share(&opts.data_settings);
    let mut keys: Vec<String> = Vec::new();
    for r in &rows {
        if !keys.contains(&r.method) {
            keys.push(r.method.clone());
        }
    }
    let pooled = keys
        .iter()
        .filter(|k| **k != reference)
        .filter_map(|k| pool(k, &rows, test_share))
        .collect();
    Ok(Comparison {
        data: opts.file.display().to_string(),
        reference,
        rows,
        pooled,
    })
}

/// The record `run_split` just saved (or reused) for `id`.
fn record_of(id: &RunId, records: &Path) -> Result<RunRecord, String> {
    let path = id.record_path(records);
    let text = std::fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))?;
    RunRecord::from_json(&text).map_err(|e| format!("{}: {e}", path.display()))
}

/// n_test / n_train of the split (from `test_frac`, default ¼).
fn test_share(settings: &[(String, String)]) -> f64 {
    let f = settings
        .iter()
        .find(|(k, _)| k == "test_frac")
        .and_then(|(_, v)| v.parse::<f64>().ok())
        .unwrap_or(0.25);
    f / (1.0 - f).max(1e-9)
}

/// Pools `key`'s paired differences over the splits (Nadeau & Bengio).
fn pool(key: &str, rows: &[MethodSplit], test_share: f64) -> Option<Pooled> {
    let mine: Vec<&MethodSplit> = rows.iter().filter(|r| r.method == key).collect();
    let pairs: Vec<&PairedAuc> = mine
        .iter()
        .filter_map(|r| r.versus_reference.as_ref())
        .collect();
    let k = pairs.len();
    if k == 0 {
        return None;
    }
    let d: Vec<f64> = pairs.iter().map(|p| p.difference).collect();
    let mean = d.iter().sum::<f64>() / k as f64;
    let aucs: Vec<f64> = mine.iter().filter_map(|r| r.auc.map(|a| a.auc)).collect();
    let mean_auc = aucs.iter().sum::<f64>() / aucs.len().max(1) as f64;
    if k == 1 {
        let p = pairs[0];
        return Some(Pooled {
            method: key.into(),
            splits: 1,
            mean_auc,
            difference: p.difference,
            se: p.se,
            lower: p.lower,
            upper: p.upper,
            p_value: p.p_value,
            rule: format!("one split: {} paired test", p.method.name()),
        });
    }
    let s2 = d.iter().map(|x| (x - mean) * (x - mean)).sum::<f64>() / (k - 1) as f64;
    let se = ((1.0 / k as f64 + test_share) * s2).sqrt();
    let t = StudentsT::new(0.0, 1.0, (k - 1) as f64).ok()?;
    let q = t.inverse_cdf(0.975);
    let p_value = if se > 0.0 {
        (2.0 * (1.0 - t.cdf((mean / se).abs()))).min(1.0)
    } else if mean == 0.0 {
        1.0
    } else {
        0.0
    };
    Some(Pooled {
        method: key.into(),
        splits: k,
        mean_auc,
        difference: mean,
        se,
        lower: mean - q * se,
        upper: mean + q * se,
        p_value,
        rule: "corrected resampled t (Nadeau & Bengio 2003)".into(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::auc_interval::IntervalMethod;

    fn pair(d: f64) -> PairedAuc {
        PairedAuc {
            auc_a: 0.8 + d,
            auc_b: 0.8,
            difference: d,
            se: 0.01,
            lower: d - 0.02,
            upper: d + 0.02,
            level: 0.95,
            p_value: 0.5,
            correlation: 0.5,
            method: IntervalMethod::Delong,
        }
    }

    fn row(d: f64, seed: u64) -> MethodSplit {
        MethodSplit {
            method: "b".into(),
            seed,
            auc: None,
            versus_reference: Some(pair(d)),
            status: "fresh".into(),
        }
    }

    #[test]
    fn pooling_corrects_for_shared_rows() {
        // Differences 0.01, 0.02, 0.03: mean 0.02, s² = 1e-4; with a quarter
        // held out, se = √((1/3 + 1/3)·1e-4) (plain s/√K would be √(1e-4/3)).
        let rows = vec![row(0.01, 0), row(0.02, 1), row(0.03, 2)];
        let p = pool("b", &rows, test_share(&[])).unwrap();
        assert!((p.difference - 0.02).abs() < 1e-15);
        assert!((p.se - (2.0f64 / 3.0 * 1e-4).sqrt()).abs() < 1e-12);
        // t with 2 df: q = 4.303.
        assert!((p.upper - p.difference - 4.3027 * p.se).abs() < 1e-4);
        // One split: the split's own test.
        let one = pool("b", &rows[..1], 1.0 / 3.0).unwrap();
        assert_eq!((one.se, one.p_value), (0.01, 0.5));
    }
}
