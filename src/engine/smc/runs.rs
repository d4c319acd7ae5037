//! Several independent runs of the tempering sampler (`SmcSettings::runs`),
//! as careful users of SMC libraries do: one run can be badly wrong while
//! looking fine (ALGORITHMS.md §3, "Accuracy is not free"), and only runs that
//! agree show it is not. R runs of the same target, from seeds derived from
//! the SMC seed through `numerics::rng` streams, run one after another (each uses
//! every core through the particle loop, so the bits do not depend on the
//! thread count); their clouds are pooled into one posterior, and the record
//! gets the diagnostics across runs: R-hat per coefficient, log Z as mean ± sd
//! with its MCSE, and the MCSE of every posterior mean.
//!
//! **Equal weights.** Each run's cloud is an equally weighted sample of π_γ
//! (bias O(1/N)) and each Ẑ_r an unbiased estimate of Z. Weighting the runs
//! ∝ Ẑ_r (Chopin & Papaspiliopoulos, *An Introduction to Sequential Monte
//! Carlo*, 2020, discuss both) removes that bias as R grows at fixed N, but
//! Ẑ_r is log-normal-like: a run whose log Ẑ is 1 too high takes e ≈ 2.7 times
//! the weight of each other run, and a run gone wrong is exactly the one whose
//! log Ẑ is off (§3: on Pima a default-sized run had log Z 0.53 too high with
//! shrunk means). Equal weights cannot be captured by such an outlier, and
//! with N in the thousands the per-run bias is far below the Monte Carlo
//! error the runs measure. `z_weight_runs` = (ΣẐ)²/ΣẐ² says how many runs the
//! Ẑ-weights would have used (R when the runs agree on Z).
//!
//! **Evidence.** The pooled log Z is log of the mean of the Ẑ_r (unbiased for
//! Z, as each Ẑ_r); `log_z.mean ± sd` is over the log Ẑ_r, whose sd measures a
//! single run's error and whose MCSE (sd/√R) the error of their mean.

use rand::RngExt;
use rayon::prelude::*;
use serde_json::{Value, json};

use super::sampler::{self, SmcRun};
use super::settings::SmcSettings;
use super::target::Target;
use crate::engine::event::{Event, LogLevel};
use crate::engine::fit::{Fit, IndependentRuns, LogZRuns, MethodReport, RunPart, RunSummary};
use crate::engine::interface::{Control, EngineError, Observer};
use crate::engine::mcmc_diag::rhat_unsplit;
use crate::engine::numerics::rng;
use crate::engine::problem::Problem;

/// RNG stream key of the runs' seeds (with the SMC seed and the run index).
const KEY_RUN: u64 = 0x5EED_0010;

/// The runs of `parts` in run order, once each and all R of them (an error
/// naming what is missing, repeated or of another R).
pub fn pool_parts(parts: Vec<RunPart>) -> Result<Vec<(u64, SmcRun)>, String> {
    let runs = parts.first().map_or(0, |p| p.runs);
    if parts.len() < 2 {
        return Err("merging needs the records of at least 2 runs".into());
    }
    if let Some(p) = parts.iter().find(|p| p.runs != runs) {
        return Err(format!(
            "run {} is a run of {} and another of {runs}: merge the runs of one --runs R",
            p.run, p.runs
        ));
    }
    let mut slots: Vec<Option<RunPart>> = vec![None; runs];
    for p in parts {
        let r = p.run;
        match slots.get_mut(r.wrapping_sub(1)) {
            Some(slot @ None) => *slot = Some(p),
            Some(Some(_)) => return Err(format!("run {r} is given twice")),
            None => return Err(format!("run {r} is not a run of {runs}")),
        }
    }
    let missing: Vec<String> = (1..=runs)
        .filter(|r| slots[r - 1].is_none())
        .map(|r| r.to_string())
        .collect();
    if !missing.is_empty() {
        return Err(format!(
            "the runs of --runs {runs} are incomplete: run(s) {} missing",
            missing.join(", ")
        ));
    }
    slots
        .into_iter()
        .flatten()
        .map(|p| {
            let cloud = serde_json::from_value::<SmcRun>(p.cloud)
                .map_err(|e| format!("run {}: its cloud is damaged: {e}", p.run))?;
            Ok((p.seed, cloud))
        })
        .collect()
}

/// The part a run of several made apart leaves in its record: its whole cloud.
pub fn part_of(run: usize, runs: usize, seed: u64, cloud: &SmcRun) -> Result<RunPart, EngineError> {
    let cloud = serde_json::to_value(cloud)
        .map_err(|e| EngineError::InvalidParams(format!("the run's cloud cannot be kept: {e}")))?;
    Ok(RunPart {
        run,
        runs,
        seed,
        cloud,
    })
}

/// The SMC seed of run `r` (from 0) of several: the first is the seed itself,
/// so run 1 of R is the single run of that seed; the others come from the
/// stream (seed, r).
pub fn run_seed(seed: u64, r: usize) -> u64 {
    if r == 0 {
        seed
    } else {
        rng::stream(seed, &[KEY_RUN, r as u64]).random::<u64>()
    }
}

/// `s.runs` runs of the sampler on `target` up to `gamma`, one after another,
/// each announced by an `SmcRun` event and followed by an info line.
pub fn run_all<T: Target + ?Sized>(
    target: &T,
    gamma: f64,
    s: &SmcSettings,
    ctl: &Control,
    obs: &mut dyn Observer,
) -> Result<Vec<(u64, SmcRun)>, EngineError> {
    run_all_then(target, gamma, s, ctl, obs, &mut |_, run, _, _| Ok(run))
}

/// What becomes of each run before its info line: given the run's settings
/// (its seed), the run, its name ("SMC run 2/3") and the observer.
pub type AfterRun<'a> =
    dyn FnMut(&SmcSettings, SmcRun, &str, &mut dyn Observer) -> Result<SmcRun, EngineError> + 'a;

/// `run_all`, each run passed through `then` (the linear score's phase-jump
/// rerun, `phase_rerun::rerun_run`, seeded from the run's seed: the same
/// run as `--run r` makes apart, whatever the thread count).
pub fn run_all_then<T: Target + ?Sized>(
    target: &T,
    gamma: f64,
    s: &SmcSettings,
    ctl: &Control,
    obs: &mut dyn Observer,
    then: &mut AfterRun<'_>,
) -> Result<Vec<(u64, SmcRun)>, EngineError> {
    let mut out = Vec::with_capacity(s.runs);
    for r in 0..s.runs {
        let seed = run_seed(s.seed, r);
        obs.observe(Event::SmcRun {
            run: r + 1,
            runs: s.runs,
            seed,
        });
        let one = SmcSettings {
            seed,
            runs: 1,
            ..s.clone()
        };
        let run = sampler::run(target, gamma, &one, ctl, obs)?;
        let who = format!("SMC run {}/{}", r + 1, s.runs);
        let run = then(&one, run, &who, obs)?;
        obs.observe(Event::Log {
            level: LogLevel::Info,
            message: format!(
                "{who} (seed {seed}): log Z {:.4}, {} stages, {:.1}s{}{}",
                run.log_z,
                run.path.len() - 1,
                run.elapsed,
                run.phase_jump.as_ref().map_or(String::new(), |j| format!(
                    " (rerun from its cloud's Gaussian; the prior path's log Z {:.4})",
                    j.prior_path_log_z
                )),
                if run.decorrelated {
                    ""
                } else {
                    ", not converged"
                }
            ),
        });
        out.push((seed, run));
    }
    Ok(out)
}

/// The fit of several runs: the pooled cloud through `smc::build_fit`, then
/// the runs' section, the evidence as pooled, and the details of every run.
pub fn build_fit(problem: &Problem, settings: &SmcSettings, runs: Vec<(u64, SmcRun)>) -> Fit {
    let summary = summarise(&runs, &problem.names);
    let paths: Vec<Value> = runs
        .iter()
        .enumerate()
        .flat_map(|(r, (_, run))| {
            run.path.iter().map(move |p| {
                let mut v = serde_json::to_value(p).unwrap_or_default();
                v["run"] = json!(r + 1);
                v
            })
        })
        .collect();
    let stages: Vec<usize> = summary.runs.iter().map(|r| r.stages).collect();
    let stage_report = super::stage_report(
        settings,
        runs.iter()
            .enumerate()
            .flat_map(|(r, (_, run))| run.path.iter().map(move |s| (Some(r + 1), s))),
    );
    let jumps: Vec<(Value, MethodReport)> = runs
        .iter()
        .enumerate()
        .filter_map(|(r, (_, run))| {
            let j = run.phase_jump.as_ref()?;
            let mut v = j.details(run.log_z, run.decorrelated);
            v["run"] = json!(r + 1);
            Some((v, j.report(Some(r + 1), run.log_z)))
        })
        .collect();
    let pooled = pool(runs);
    let mut fit = super::build_fit(problem, settings, pooled);
    if !jumps.is_empty() {
        let (details, reports): (Vec<Value>, Vec<MethodReport>) = jumps.into_iter().unzip();
        fit.details["phase_jump"] = Value::Array(details);
        fit.reports.extend(reports);
    }
    fit.log_evidence = Some(summary.log_z.pooled);
    let d = &mut fit.details;
    d["log_evidence"] = json!(summary.log_z.pooled);
    d["stages"] = json!(stages);
    d["path"] = Value::Array(paths);
    d["converged_means"] = json!(format!(
        "every run's check: γ_T reached and, in every stage, each coordinate and the risk \
         decorrelated from their stage-start values (|correlation| ≤ {}); across the {} runs, \
         R-hat and the spread of log Z (details.runs)",
        settings.decorrelation, summary.count
    ));
    d["runs"] = compact(&summary);
    fit.reports
        .retain(|r| !matches!(r, MethodReport::TemperingStages { .. }));
    fit.reports.push(stage_report);
    fit.runs = Some(summary);
    fit
}

/// The runs' diagnostics in a few numbers (`details.runs`, which the
/// warnings read).
fn compact(s: &IndependentRuns) -> Value {
    json!({
        "count": s.count,
        "pooling": s.pooling,
        "rhat_max": s.rhat_max,
        "rhat_worst": s.rhat_worst,
        "log_z_mean": s.log_z.mean,
        "log_z_sd": s.log_z.sd,
        "log_z_mcse": s.log_z.mcse,
        "mcse_over_sd_max": s.mcse_over_sd_max(),
        "z_weight_runs": s.z_weight_runs,
        "mean_risk": s.mean_risk,
        "not_converged": s.not_converged().iter().map(|r| json!({"run": r.run, "seed": r.seed})).collect::<Vec<_>>(),
    })
}

/// What a single run's details say about runs (no R-hat: it needs two).
pub fn single_run_note() -> Value {
    json!({
        "count": 1,
        "rhat_max": null,
        "note": "one run: R-hat and the spread of log Z across runs need at least 2 runs",
    })
}

/// The clouds concatenated (equal weights), the evidence pooled, the traces
/// one after another behind their `SmcRun` markers.
fn pool(runs: Vec<(u64, SmcRun)>) -> SmcRun {
    let count = runs.len();
    let log_z = log_mean_exp(&runs.iter().map(|(_, r)| r.log_z).collect::<Vec<_>>());
    let mut it = runs.into_iter().enumerate();
    let (_, (seed0, mut out)) = it.next().expect("at least one run");
    let marker = |r: usize, seed: u64| Event::SmcRun {
        run: r + 1,
        runs: count,
        seed,
    };
    let mut trace = vec![marker(0, seed0)];
    trace.append(&mut out.trace);
    for (r, (seed, run)) in it {
        out.theta.extend(run.theta);
        out.state.extend(run.state);
        out.risk.extend(run.risk);
        out.evaluations += run.evaluations;
        out.decorrelated &= run.decorrelated;
        out.elapsed += run.elapsed;
        out.path = run.path;
        trace.push(marker(r, seed));
        trace.extend(run.trace);
    }
    out.trace = trace;
    out.log_z = log_z;
    // Each run's own, in `build_fit`.
    out.phase_jump = None;
    out
}

fn log_mean_exp(v: &[f64]) -> f64 {
    let m = v.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    if !m.is_finite() {
        return m;
    }
    m + (v.iter().map(|x| (x - m).exp()).sum::<f64>() / v.len() as f64).ln()
}

fn mean_sd(v: &[f64]) -> (f64, f64) {
    let n = v.len() as f64;
    let m = v.iter().sum::<f64>() / n;
    let var = v.iter().map(|x| (x - m) * (x - m)).sum::<f64>() / (n - 1.0).max(1.0);
    (m, var.sqrt())
}

/// The diagnostics of R ≥ 2 runs of equal size (their clouds equally weighted).
pub fn summarise(runs: &[(u64, SmcRun)], names: &[String]) -> IndependentRuns {
    let count = runs.len();
    let d = runs.first().map_or(0, |r| r.1.d);
    let per_run: Vec<RunSummary> = runs
        .iter()
        .enumerate()
        .map(|(r, (seed, run))| {
            let (mean, sd) = sampler::moments(&run.theta, d);
            RunSummary {
                run: r + 1,
                seed: *seed,
                log_z: run.log_z,
                stages: run.path.len() - 1,
                moves: run.path.iter().map(|p| p.moves).sum(),
                risk_evaluations: run.evaluations,
                seconds: run.elapsed,
                mean_risk: run.risk.iter().sum::<f64>() / run.risk.len().max(1) as f64,
                converged: run.decorrelated,
                mean,
                sd,
            }
        })
        .collect();
    let log_zs: Vec<f64> = per_run.iter().map(|r| r.log_z).collect();
    let (lz_mean, lz_sd) = mean_sd(&log_zs);
    let root_r = (count as f64).sqrt();
    let finite = |x: f64| x.is_finite().then_some(x);
    // R-hat per coefficient (columns of the row-major clouds), and of the risk.
    let rhat: Vec<Option<f64>> = (0..d)
        .into_par_iter()
        .map(|k| {
            let cols: Vec<Vec<f64>> = runs
                .iter()
                .map(|(_, run)| run.theta.chunks_exact(d).map(|row| row[k]).collect())
                .collect();
            finite(rhat_unsplit(
                &cols.iter().map(Vec::as_slice).collect::<Vec<_>>(),
            ))
        })
        .collect();
    let rhat_risk = finite(rhat_unsplit(
        &runs
            .iter()
            .map(|(_, r)| r.risk.as_slice())
            .collect::<Vec<_>>(),
    ));
    let (rhat_max, rhat_worst) = rhat
        .iter()
        .enumerate()
        .map(|(k, r)| (*r, names.get(k).cloned().unwrap_or(format!("θ{}", k + 1))))
        .chain([(rhat_risk, "risk".to_string())])
        .filter_map(|(r, name)| Some((r?, name)))
        .max_by(|a, b| a.0.total_cmp(&b.0))
        .map_or((None, None), |(r, name)| (Some(r), Some(name)));
    // Per coefficient: the runs' means → MCSE; the pooled sd from the runs'
    // moments (equal cloud sizes: E[θ²] is the mean of the runs' E[θ²]).
    let mut mcse = Vec::with_capacity(d);
    let mut mcse_over_sd = Vec::with_capacity(d);
    for k in 0..d {
        let means: Vec<f64> = per_run.iter().map(|r| r.mean[k]).collect();
        let (m, sd_of_means) = mean_sd(&means);
        let second = per_run
            .iter()
            .map(|r| r.sd[k] * r.sd[k] + r.mean[k] * r.mean[k])
            .sum::<f64>()
            / count as f64;
        let pooled_sd = (second - m * m).max(0.0).sqrt();
        let e = sd_of_means / root_r;
        mcse.push(e);
        mcse_over_sd.push((pooled_sd > 0.0).then(|| e / pooled_sd).and_then(finite));
    }
    let top = log_zs.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let w: Vec<f64> = log_zs.iter().map(|z| (z - top).exp()).collect();
    let z_weight_runs = w.iter().sum::<f64>().powi(2) / w.iter().map(|x| x * x).sum::<f64>();
    IndependentRuns {
        count,
        pooling: "equal".into(),
        log_z: LogZRuns {
            mean: lz_mean,
            sd: lz_sd,
            mcse: lz_sd / root_r,
            pooled: log_mean_exp(&log_zs),
        },
        rhat,
        rhat_risk,
        rhat_max,
        rhat_worst,
        mcse,
        mcse_over_sd,
        z_weight_runs,
        mean_risk: per_run.iter().map(|r| r.mean_risk).sum::<f64>() / count as f64,
        runs: per_run,
    }
}
