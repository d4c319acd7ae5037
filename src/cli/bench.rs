//! `pacauc bench`: times a method on a data set (several runs: best and median)
//! and, for SMC, compares it with the floor of its hot path — the time this same
//! binary needs just for the score products and risks of the same number of
//! evaluations, in the same batches.

use std::time::Instant;

use clap::Args;
use serde::Serialize;
use serde_json::json;

use super::fit::{self, CliError, FitArgs, Format, Loaded};
use crate::engine::record::write_atomic;
use crate::engine::smc::{self, LinearAuc, SmcRun, SmcSettings, Target};
use crate::engine::{Control, NoObserver};
use crate::spec::{Gamma, MethodSpec, RunSpec};

#[derive(Debug, Clone, Args)]
pub struct BenchArgs {
    #[command(flatten)]
    pub fit: FitArgs,
    /// Timed runs (best and median reported).
    #[arg(long, default_value_t = 5, value_name = "R")]
    pub repeat: usize,
}

#[derive(Debug, Serialize)]
struct Timing {
    best: f64,
    median: f64,
    all: Vec<f64>,
}

impl Timing {
    fn of(mut all: Vec<f64>) -> Timing {
        let mut s = all.clone();
        s.sort_unstable_by(f64::total_cmp);
        let median = if s.is_empty() {
            f64::NAN
        } else if s.len() % 2 == 1 {
            s[s.len() / 2]
        } else {
            0.5 * (s[s.len() / 2 - 1] + s[s.len() / 2])
        };
        all.shrink_to_fit();
        Timing {
            best: s.first().copied().unwrap_or(f64::NAN),
            median,
            all,
        }
    }
}

pub fn run(args: &BenchArgs, threads: Option<usize>) -> Result<(), CliError> {
    if args.repeat == 0 {
        return Err(CliError::Input("--repeat must be ≥ 1".into()));
    }
    let spec = args.fit.spec(threads)?;
    let loaded = fit::load(&spec, false)?;
    let report = match &spec.method {
        MethodSpec::Smc(s) => match smc_without_floor(&spec, s.runs) {
            None => bench_smc(args, &spec, &loaded)?,
            Some(why) => {
                // Announced: the report has no floor, unlike a plain SMC bench.
                eprintln!("bench: timing the whole SMC fit, without the floor: {why}");
                let mut v = bench_engine(args, &spec, &loaded)?;
                v["floor_note"] = json!(format!("no floor: {why}"));
                v
            }
        },
        _ => bench_engine(args, &spec, &loaded)?,
    };
    let text = serde_json::to_string_pretty(&report).unwrap_or_default() + "\n";
    if let Some(path) = &args.fit.out {
        write_atomic(path, text.as_bytes()).map_err(|e| {
            CliError::Input(format!("{}: cannot write the report: {e}", path.display()))
        })?;
    }
    match args.fit.format {
        Format::Json => print!("{text}"),
        Format::Table => print_table(&report),
    }
    Ok(())
}

fn header(args: &BenchArgs, l: &Loaded) -> serde_json::Value {
    json!({
        "method": l.engine.name(),
        "data": args.fit.data.display().to_string(),
        "n": l.problem.n(),
        "d": l.problem.d(),
        "gamma": l.problem.gamma,
        "threads": rayon::current_num_threads(),
        "repeat": args.repeat,
        "parameters": l.engine.params(),
    })
}

/// Why an SMC spec is not one linear-score sampler run at a fixed γ, the
/// only kind the floor describes (None: it is). The others are timed whole,
/// like every other method: `--runs R` is R such runs pooled (the first is
/// `--runs 1`'s run, so its floor is that bench's), γ = auto adds the
/// cross-validation, and the GP prior samples scores, not coefficients.
fn smc_without_floor(spec: &RunSpec, runs: usize) -> Option<String> {
    let gp = spec
        .prior
        .as_ref()
        .is_some_and(|p| p.kind == crate::spec::PriorKind::Gp);
    if runs > 1 {
        Some(format!(
            "--runs {runs} pools {runs} independent runs; the floor is that of one run (bench it \
             with --runs 1)"
        ))
    } else if spec.gamma == Some(Gamma::Auto) {
        Some("--gamma auto runs the cross-validation before the final fit".into())
    } else if gp {
        Some("the GP prior samples the scores, not a linear score's coefficients".into())
    } else {
        None
    }
}

/// Any engine: wall time of `Engine::run` (the method alone, without the
/// certificate `fit` adds).
fn bench_engine(
    args: &BenchArgs,
    spec: &RunSpec,
    l: &Loaded,
) -> Result<serde_json::Value, CliError> {
    let engine = crate::spec::build::engine(spec);
    let mut times = Vec::new();
    for _ in 0..args.repeat {
        let t = Instant::now();
        engine.run(&l.problem, &Control::new(), &mut NoObserver)?;
        times.push(t.elapsed().as_secs_f64());
    }
    let mut v = header(args, l);
    v["fit_seconds"] = json!(Timing::of(times));
    Ok(v)
}

/// SMC: the sampler alone, the whole fit (with summaries), and the floor.
fn bench_smc(args: &BenchArgs, spec: &RunSpec, l: &Loaded) -> Result<serde_json::Value, CliError> {
    let MethodSpec::Smc(smc_spec) = &spec.method else {
        unreachable!("called for SMC runs")
    };
    let settings: SmcSettings = crate::spec::build::smc_settings(smc_spec, spec.data.seed);
    let p = &l.problem;
    let (mut smc_t, mut fit_t, mut log_z) = (Vec::new(), Vec::new(), Vec::new());
    let mut smc_cpu = Vec::new();
    let mut last: Option<SmcRun> = None;
    for _ in 0..args.repeat {
        let t = Instant::now();
        let c = process_cpu();
        let target = LinearAuc::new(&p.x, &p.y, p.prior.clone());
        let run = smc::sampler::run(
            &target,
            p.gamma,
            &settings,
            &Control::new(),
            &mut NoObserver,
        )?;
        smc_t.push(t.elapsed().as_secs_f64());
        smc_cpu.push(process_cpu() - c);
        log_z.push(run.log_z);
        let fit = smc::build_fit(p, &settings, run.clone());
        fit_t.push(t.elapsed().as_secs_f64());
        drop(fit);
        last = Some(run);
    }
    let run = last.expect("repeat ≥ 1");
    let batches = batch_sizes(&run, &settings);
    let target = LinearAuc::new(&p.x, &p.y, p.prior.clone());
    let (floor, floor_cpu): (Vec<f64>, Vec<f64>) = (0..args.repeat)
        .map(|_| floor_seconds(&target, &run.state, &batches))
        .unzip();
    let smc_t = Timing::of(smc_t);
    let floor = Timing::of(floor);
    let (smc_cpu, floor_cpu) = (Timing::of(smc_cpu), Timing::of(floor_cpu));
    let mut v = header(args, l);
    v["stages"] = json!(run.path.len() - 1);
    v["risk_evaluations"] = json!(run.evaluations);
    v["log_z"] = json!(log_z);
    v["evaluations_per_second"] = json!(run.evaluations as f64 / smc_t.best);
    v["ratio_to_floor"] = json!(smc_t.best / floor.best);
    // CPU seconds of the process: on a loaded machine the wall times measure
    // the queue; with one thread the CPU ratio is the program's own.
    v["cpu_ratio_to_floor"] = json!(smc_cpu.best / floor_cpu.best);
    v["ratio_unit"] = json!(
        "ratio_to_floor: wall seconds (best over best); cpu_ratio_to_floor: process CPU \
         seconds, user + system of every thread (best over best)"
    );
    v["smc_cpu_seconds"] = json!(smc_cpu);
    v["floor_cpu_seconds"] = json!(floor_cpu);
    v["smc_seconds"] = json!(smc_t);
    v["fit_seconds"] = json!(Timing::of(fit_t));
    v["floor_seconds"] = json!(floor);
    v["floor_note"] = json!(
        "score products and AUC risks only (wall and process CPU seconds), for the run's batches (the prior draw, then one \
         batch per move step), on the final particles"
    );
    Ok(v)
}

use crate::engine::numerics::cpu_time::process_cpu_seconds as process_cpu;

/// The batch sizes of a run's risk evaluations, in order.
fn batch_sizes(run: &SmcRun, s: &SmcSettings) -> Vec<usize> {
    let chains = s.particles / s.waste_free.unwrap_or(1);
    let mut b = vec![s.particles];
    for st in run.path.iter().skip(1) {
        b.extend(std::iter::repeat_n(chains, st.moves));
    }
    b
}

/// Wall and process CPU seconds to evaluate batches of those sizes, cycling
/// through `theta`'s rows (both timed around the kernel call only).
fn floor_seconds(target: &LinearAuc, theta: &[f64], batches: &[usize]) -> (f64, f64) {
    let d = target.dim();
    let rows = theta.len() / d;
    let max = batches.iter().copied().max().unwrap_or(0);
    let mut buf = Vec::with_capacity(max * d);
    let mut out = vec![0.0; max];
    let mut next = 0usize;
    let (mut total, mut cpu) = (0.0, 0.0);
    for &m in batches {
        buf.clear();
        for _ in 0..m {
            buf.extend_from_slice(&theta[next * d..(next + 1) * d]);
            next = (next + 1) % rows;
        }
        let (t, c) = (Instant::now(), process_cpu());
        target.risks(&buf, &mut out[..m]);
        cpu += process_cpu() - c;
        total += t.elapsed().as_secs_f64();
    }
    (total, cpu)
}

fn print_table(v: &serde_json::Value) {
    let num = |k: &str| v[k].as_f64().unwrap_or(f64::NAN);
    println!(
        "method     {}  ({} threads)",
        v["method"].as_str().unwrap_or("?"),
        v["threads"]
    );
    println!(
        "data       {}: n = {}, d = {}, γ = {}",
        v["data"].as_str().unwrap_or("?"),
        v["n"],
        v["d"],
        v["gamma"]
    );
    let timing = |label: &str, key: &str| {
        if let Some(t) = v.get(key) {
            println!(
                "{label:<10} best {:.4} s, median {:.4} s over {} runs",
                t["best"].as_f64().unwrap_or(f64::NAN),
                t["median"].as_f64().unwrap_or(f64::NAN),
                v["repeat"]
            );
        }
    };
    timing("smc", "smc_seconds");
    timing("fit", "fit_seconds");
    if v.get("stages").is_some() {
        println!(
            "stages     {}, {} risk evaluations ({:.0}/s)",
            v["stages"],
            v["risk_evaluations"],
            num("evaluations_per_second")
        );
        timing("floor", "floor_seconds");
        timing("smc CPU", "smc_cpu_seconds");
        timing("floor CPU", "floor_cpu_seconds");
        println!(
            "run/floor  {:.2} (wall), {:.2} (CPU)",
            num("ratio_to_floor"),
            num("cpu_ratio_to_floor")
        );
        println!("log Z      {}", v["log_z"]);
    }
}
