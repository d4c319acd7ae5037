//! Which figures a set of records supports: run records (`fit`, the
//! explorer's export) and the `path` command's output.

use std::path::Path;

use serde::Deserialize;

use super::Figure;
use super::gcs_trace::gcs_trace;
use super::marginals::{GaussianSource, HistogramSource, marginals};
use super::roc::{RocSource, roc};
use super::runs::smc_runs;
use super::selection::{cv_curve, inclusion, spike_slab_path};
use super::traces::{SmcTargets, ep_convergence, smc_trace};
use super::vb_trace::vb_trace;
use crate::engine::event::{EpSweep, Event, GcsBatch, SmcStage, VbIter, last_run};
use crate::engine::record::RunRecord;

/// The `path` command's JSON (the fields the figures use).
#[derive(Debug, Clone, Deserialize)]
pub struct PathRecord {
    pub gamma: f64,
    pub slab_var: f64,
    pub inclusion_prior: f64,
    pub points: Vec<PathPoint>,
}

#[derive(Debug, Clone, Deserialize)]
pub struct PathPoint {
    pub spike_over_slab: f64,
    pub converged: bool,
    pub log_evidence: Option<f64>,
    pub coefficients: Vec<PathCoefficient>,
}

#[derive(Debug, Clone, Deserialize)]
pub struct PathCoefficient {
    pub name: String,
    #[serde(deserialize_with = "num_or_nan")]
    pub mean: f64,
    #[serde(deserialize_with = "num_or_nan")]
    pub inclusion: f64,
}

fn num_or_nan<'de, D: serde::Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
    Ok(Option::<f64>::deserialize(d)?.unwrap_or(f64::NAN))
}

/// A record read from a file, with the name its series carry.
pub enum Source {
    Run {
        label: String,
        record: Box<RunRecord>,
    },
    Path {
        label: String,
        path: PathRecord,
    },
}

/// Reads a run record or a `path` output; the error says what the file is not.
pub fn load(file: &Path) -> Result<Source, String> {
    let text = std::fs::read_to_string(file).map_err(|e| format!("cannot read it: {e}"))?;
    let v: serde_json::Value =
        serde_json::from_str(&text).map_err(|e| format!("not JSON ({e})"))?;
    let stem = file
        .file_stem()
        .map_or("run".into(), |s| s.to_string_lossy().into_owned());
    if v.get("record_version").is_some() {
        let record = RunRecord::from_json(&text)?;
        return Ok(Source::Run {
            label: stem,
            record: Box::new(record),
        });
    }
    if v.get("points").is_some() && v.get("slab_var").is_some() {
        let path = serde_json::from_value(v)
            .map_err(|e| format!("looks like a `pacauc path` output but is not one: {e}"))?;
        return Ok(Source::Path { label: stem, path });
    }
    Err(
        "neither a run record (pacauc fit --out) nor a regularisation path (pacauc path --out)"
            .into(),
    )
}

/// A short name for a run: its method and prior ("ep ard", "smc"), made unique
/// with the file name when two runs would share it.
fn run_names(sources: &[Source]) -> Vec<String> {
    let base: Vec<String> = sources
        .iter()
        .map(|s| match s {
            Source::Run { record, .. } => {
                let prior = record.prior.as_ref().map(|p| {
                    serde_json::to_value(p)
                        .ok()
                        .and_then(|v| v.get("kind").and_then(|k| k.as_str()).map(String::from))
                        .unwrap_or_default()
                });
                match prior.as_deref() {
                    None | Some("gaussian") | Some("") => record.method.clone(),
                    Some(k) => format!("{} {}", record.method, k.replace('_', "-")),
                }
            }
            Source::Path { .. } => "path".into(),
        })
        .collect();
    base.iter()
        .zip(sources)
        .map(|(b, s)| {
            let file = match s {
                Source::Run { label, .. } | Source::Path { label, .. } => label,
            };
            if base.iter().filter(|x| *x == b).count() > 1 {
                format!("{b} · {file}")
            } else {
                b.clone()
            }
        })
        .collect()
}

/// File-name-safe form of a run name.
fn slug(s: &str) -> String {
    let mut out = String::new();
    for c in s.chars() {
        if c.is_ascii_alphanumeric() {
            out.push(c.to_ascii_lowercase());
        } else if !out.ends_with('-') {
            out.push('-');
        }
    }
    out.trim_matches('-').to_string()
}

/// File-name suffixes: the file stems, made unique.
fn suffixes(sources: &[Source]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for s in sources {
        let file = match s {
            Source::Run { label, .. } | Source::Path { label, .. } => slug(label),
        };
        let mut name = if file.is_empty() {
            "run".to_string()
        } else {
            file
        };
        let mut i = 2;
        while out.contains(&name) {
            name = format!(
                "{}-{i}",
                name.trim_end_matches(char::is_numeric)
                    .trim_end_matches('-')
            );
            i += 1;
        }
        out.push(name);
    }
    out
}

fn of_kind<T: Clone>(trace: &[Event], pick: impl Fn(&Event) -> Option<&T>) -> Vec<T> {
    trace.iter().filter_map(|e| pick(e).cloned()).collect()
}

/// Every figure the sources support, and why the others were skipped (one
/// line per figure kind that no source supports, or per source that fails).
pub fn from_records(sources: &[Source]) -> (Vec<Figure>, Vec<String>) {
    let names = run_names(sources);
    let ids = suffixes(sources);
    let many = sources.len() > 1;
    let id = |kind: &str, i: usize| {
        if many {
            format!("{kind}-{}", ids[i])
        } else {
            kind.to_string()
        }
    };
    let runs: Vec<(usize, &str, &RunRecord)> = sources
        .iter()
        .zip(&names)
        .enumerate()
        .filter_map(|(i, (s, n))| match s {
            Source::Run { record, .. } => Some((i, n.as_str(), record.as_ref())),
            Source::Path { .. } => None,
        })
        .collect();
    let named: Vec<(&str, &RunRecord)> = runs.iter().map(|&(_, n, r)| (n, r)).collect();
    let mut figs = Vec::new();
    let mut skipped = Vec::new();
    if runs.is_empty() {
        skipped.push("roc: needs a run record (pacauc fit --out)".into());
    } else {
        // One ROC figure per data set: curves of different rows never share axes.
        let groups = by_data(&named);
        let several = groups.len() > 1;
        for (k, group) in groups.iter().enumerate() {
            let mut f = roc_of(group);
            if several {
                f.id = format!("roc-{}-{}", k + 1, slug(&stem_of(&group[0].1.dataset.path)));
            }
            figs.push(f);
        }
    }
    marginals_of(&named, &mut figs, &mut skipped);
    let (mut smc, mut ep, mut cv, mut incl, mut vb, mut gcs) = (0, 0, 0, 0, 0, 0);
    for &(i, name, r) in &runs {
        // Several SMC runs: the trace of the last (each starts at γ = 0), and
        // the runs figure.
        let stages: Vec<SmcStage> = of_kind(last_run(&r.trace), |e| match e {
            Event::SmcStage(s) => Some(s),
            _ => None,
        });
        let trace_name = r.runs.as_ref().map_or(name.to_string(), |x| {
            format!("{name}, run {} of {}", x.count, x.count)
        });
        if let Some(f) = r
            .runs
            .as_ref()
            .and_then(|x| smc_runs(x, &r.coefficients, name, &id("smc-runs", i)))
        {
            figs.push(f);
        }
        let sweeps: Vec<EpSweep> = of_kind(&r.trace, |e| match e {
            Event::EpSweep(s) => Some(s),
            _ => None,
        });
        let num = |v: &serde_json::Value, k: &str| v.get(k).and_then(|x| x.as_f64());
        let targets = SmcTargets::of_parameters(&r.parameters, r.gamma);
        if let Some(f) = smc_trace(&stages, &targets, &trace_name, &id("smc-trace", i)) {
            figs.push(f);
            smc += 1;
        }
        let iters: Vec<VbIter> = of_kind(&r.trace, |e| match e {
            Event::VbIter(s) => Some(s),
            _ => None,
        });
        let exact = r.final_objective();
        if let Some(f) = vb_trace(&iters, exact, name, &id("vb-trace", i)) {
            figs.push(f);
            vb += 1;
        }
        let batches: Vec<GcsBatch> = of_kind(&r.trace, |e| match e {
            Event::GcsBatch(s) => Some(s),
            _ => None,
        });
        let (min_ess, max_rhat) = (
            num(&r.parameters, "min_ess").unwrap_or(f64::NAN),
            num(&r.parameters, "max_rhat").unwrap_or(f64::NAN),
        );
        if let Some(f) = gcs_trace(&batches, min_ess, max_rhat, name, &id("gcs-trace", i)) {
            figs.push(f);
            gcs += 1;
        }
        let tol = r.ep_tolerance();
        if let Some(f) = ep_convergence(&sweeps, tol, name, &id("ep-convergence", i)) {
            figs.push(f);
            ep += 1;
        }
        match r.cv_curve() {
            Some(Ok(c)) => {
                let f = cv_curve(&c, name, &id("cv", i));
                cv += usize::from(f.is_some());
                figs.extend(f);
            }
            Some(Err(e)) => skipped.push(format!("cv ({name}): {e}")),
            None => {}
        }
        if let Some(p) = &r.inclusion {
            let f = inclusion(p, name, &id("inclusion", i));
            incl += usize::from(f.is_some());
            figs.extend(f);
        }
    }
    if smc == 0 {
        skipped.push("smc-trace: needs a record of an SMC run (pacauc fit --method smc)".into());
    }
    if ep == 0 {
        skipped.push("ep-convergence: needs a record of an EP run (pacauc fit --method ep)".into());
    }
    if vb == 0 {
        skipped.push("vb-trace: needs a record of a VB run (pacauc fit --method vb)".into());
    }
    if gcs == 0 {
        skipped.push(
            "gcs-trace: needs a record of a great-circle sampler run (pacauc fit --method gcs)"
                .into(),
        );
    }
    if cv == 0 {
        skipped.push(
            "cv: no record chose a parameter by cross-validation (logit, rankboost, or ep with \
             γ auto)"
                .into(),
        );
    }
    if incl == 0 {
        skipped.push(
            "inclusion: needs a spike-and-slab record (pacauc fit --method ep --prior spike-slab)"
                .into(),
        );
    }
    let mut paths = 0;
    for (i, (s, name)) in sources.iter().zip(&names).enumerate() {
        if let Source::Path { path, .. } = s {
            paths += 1;
            match spike_slab_path(path, &id("path", i)) {
                Some(f) => figs.push(f),
                None => skipped.push(format!("path ({name}): no grid point converged")),
            }
        }
    }
    if paths == 0 {
        skipped.push("path: needs the output of pacauc path".into());
    }
    (figs, skipped)
}

/// The runs grouped by data set (fingerprint and split: the same test rows),
/// in order of first appearance.
fn by_data<'a>(runs: &[(&'a str, &'a RunRecord)]) -> Vec<Vec<(&'a str, &'a RunRecord)>> {
    let key = |r: &RunRecord| {
        (
            r.dataset.fingerprint.clone(),
            r.split.seed,
            r.split.test_rows,
            r.split.test_file.clone(),
        )
    };
    let mut groups: Vec<Vec<(&str, &RunRecord)>> = Vec::new();
    for &(n, r) in runs {
        match groups.iter_mut().find(|g| key(g[0].1) == key(r)) {
            Some(g) => g.push((n, r)),
            None => groups.push(vec![(n, r)]),
        }
    }
    groups
}

/// A data file's stem ("pima" of "/data/pima.csv").
fn stem_of(path: &str) -> String {
    Path::new(path)
        .file_stem()
        .map_or(path.to_string(), |f| f.to_string_lossy().into_owned())
}

fn roc_of(runs: &[(&str, &RunRecord)]) -> Figure {
    // Test curves when every run has one (the same held-out rows), else training.
    let test = runs.iter().all(|(_, r)| !r.roc.test.fpr.is_empty());
    let srcs: Vec<RocSource> = runs
        .iter()
        .map(|&(name, r)| RocSource {
            label: name.to_string(),
            curve: if test { &r.roc.test } else { &r.roc.train },
            auc: if test {
                r.auc.test.unwrap_or(f64::NAN)
            } else {
                r.auc.train
            },
            interval: if test {
                r.auc.test_interval.as_ref()
            } else {
                r.auc.train_interval.as_ref()
            }
            .map(|i| (i.lower, i.upper)),
        })
        .collect();
    let r0 = runs[0].1;
    let rows = if test {
        format!(
            "test set: {} rows, {} positive",
            r0.split.test_rows, r0.split.test_positives
        )
    } else {
        format!(
            "training set: {} rows, {} positive (no test set in {})",
            r0.split.train_rows,
            r0.split.train_positives,
            if runs.len() > 1 {
                "every record"
            } else {
                "the record"
            }
        )
    };
    roc(&srcs, &format!("{} · {rows}", file_name(&r0.dataset.path)))
}

/// The data file's name without its folders (records hold the path as
/// given, often absolute: a figure's subtitle names the data, not the disk).
pub fn file_name(path: &str) -> String {
    Path::new(path)
        .file_name()
        .map_or(path.to_string(), |f| f.to_string_lossy().into_owned())
}

/// Whether two records sample the same Gibbs posterior: same data, prior and
/// γ. The AUC risk is scale-free, so the prior alone sets the posterior's
/// scale (ALGORITHMS.md §2): marginals under different priors are not comparable.
fn same_posterior(a: &RunRecord, b: &RunRecord) -> bool {
    let prior = |r: &RunRecord| serde_json::to_value(&r.prior).ok();
    let gamma = match (a.gamma, b.gamma) {
        (Some(x), Some(y)) => (x - y).abs() <= 1e-9 * x.abs().max(y.abs()),
        _ => false,
    };
    a.dataset.fingerprint == b.dataset.fingerprint && prior(a) == prior(b) && gamma
}

fn marginals_of(runs: &[(&str, &RunRecord)], figs: &mut Vec<Figure>, skipped: &mut Vec<String>) {
    // Gibbs posteriors only: a baseline's Laplace sds live on another scale.
    let gibbs = |r: &RunRecord| {
        r.prior.is_some()
            && r.coefficients
                .iter()
                .any(|c| c.sd.is_finite() && c.sd > 0.0)
    };
    let smc = runs.iter().find(|(_, r)| !r.histograms.is_empty());
    let Some(&(_, reference)) = smc.or_else(|| runs.iter().find(|(_, r)| gibbs(r))) else {
        let gp = runs
            .iter()
            .any(|(_, r)| r.coefficients.is_empty() && r.prior.is_some());
        skipped.push(if gp {
            "marginals: a Gaussian-process record has no coefficients (its posterior is over the \
             training scores); baselines have no posterior"
                .into()
        } else {
            "marginals: needs a Gibbs-posterior record (smc, gcs, ep, vb); baselines have no \
             posterior"
                .into()
        });
        return;
    };
    let sample = smc.map(|&(name, r)| HistogramSource {
        // SMC holds weighted particles; the great-circle sampler, chain draws.
        label: format!(
            "{name} {}",
            if r.method == "gcs" {
                "draws"
            } else {
                "particles"
            }
        ),
        coefficients: &r.coefficients,
        histograms: &r.histograms,
    });
    let mut gaussians = Vec::new();
    for &(name, r) in runs {
        if !r.histograms.is_empty() || !gibbs(r) {
            continue;
        }
        if same_posterior(r, reference) {
            gaussians.push(GaussianSource {
                label: name.to_string(),
                coefficients: &r.coefficients,
            });
        } else {
            skipped.push(format!(
                "marginals ({name}): another data set, prior or γ than the reference run's \
                 (the prior sets the posterior's scale); not overlaid"
            ));
        }
    }
    match (&sample, gaussians.is_empty()) {
        (None, _) => skipped.push(
            "marginals: needs a sampler's record (smc, gcs) for the histogram; drawing the \
             Gaussian only"
                .into(),
        ),
        (Some(_), true) => skipped.push(
            "marginals: no Gaussian approximation (ep, vb) of the same posterior to overlay; \
             drawing the sampler's histogram only"
                .into(),
        ),
        _ => {}
    }
    let data = format!(
        "{} · γ = {}",
        file_name(&reference.dataset.path),
        reference.gamma.map_or("-".into(), |g| format!("{g}"))
    );
    figs.extend(marginals(sample.as_ref(), &gaussians, &data));
}
