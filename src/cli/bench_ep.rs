//! `pacauc bench-ep DATA…`: per data set n, d, pairs, sweeps, wall and
//! CPU seconds of one EP run at fixed γ (best of --repeats) and of the whole
//! fit with γ by cross-validation, and peak memory. Each data set runs in its
//! own child process so that its peak memory (VmHWM) is its own.

use std::path::PathBuf;

use std::process::Command;
use std::time::Instant;

use clap::{Args, ValueEnum};
use serde::{Deserialize, Serialize};

use super::fit::CliError;
use super::settings_args::{EpOnly, SettingArgs};
use crate::engine::ep::kernel::site_throughput;
use crate::engine::fit::MethodReport;
use crate::engine::numerics::isa::{Isa, detected_isa};
use crate::engine::{Control, NoObserver};
use crate::spec::{self, DataSpec, Gamma, PriorKind, RunSpec, registry};

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum BenchPrior {
    Gaussian,
    Ard,
    /// The defaults of `fit --prior spike-slab`: v1 = 1, v0 = 1e-4, p = 1 − e^{−1/d}.
    SpikeSlab,
    /// `fit --prior gp` (se kernel, ℓ the median distance, exact up to 4000 rows;
    /// --gp-kernel, --lengthscale and --gp-approx change them).
    Gp,
}

#[derive(Debug, Clone, Args)]
pub struct BenchArgs {
    /// CSV files (last column the target unless --target).
    #[arg(required = true)]
    pub data: Vec<PathBuf>,
    /// γ of the fixed-γ runs.
    #[arg(long, default_value_t = 400.0)]
    pub gamma: f64,
    /// Prior of all runs.
    #[arg(long, value_enum, default_value = "gaussian")]
    pub prior: BenchPrior,
    /// Fixed-γ runs per data set (the best and the median are reported).
    #[arg(long, default_value_t = 5)]
    pub repeats: usize,
    /// Also time the fit with γ by cross-validation (--gamma auto).
    #[arg(long)]
    pub cv: bool,
    /// Folds of that cross-validation.
    #[arg(long, default_value_t = 5)]
    pub folds: usize,
    /// Held-out share; the timed fits use the training part (0 = all rows).
    #[arg(long, default_value_t = 0.25)]
    pub test_frac: f64,
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Print JSON lines instead of a Markdown table.
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub ep: SettingArgs<EpOnly>,
    /// Internal: run one data set in this process and print its JSON line.
    #[arg(long, hide = true)]
    pub child: bool,
}

/// One data set's measurements.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct BenchRow {
    pub data: String,
    pub n: usize,
    pub d: usize,
    pub form: String,
    pub rank: usize,
    pub pairs: usize,
    pub storage: String,
    pub gamma: f64,
    pub sweeps: usize,
    pub ep_best_s: f64,
    pub ep_median_s: f64,
    /// Process CPU seconds per fixed-γ run (all threads).
    pub ep_cpu_s: f64,
    /// CPU nanoseconds per site update (all threads, whole EP run).
    pub cpu_ns_per_site_sweep: f64,
    pub cv_s: Option<f64>,
    pub cv_gamma_over_n: Option<f64>,
    pub peak_mb: f64,
    pub threads: usize,
    pub isa: String,
}

/// CPU nanoseconds used so far by all threads of this process.
pub(super) fn cpu_ns() -> u64 {
    let Ok(dir) = std::fs::read_dir("/proc/self/task") else {
        return 0;
    };
    dir.filter_map(|e| {
        let p = e.ok()?.path().join("schedstat");
        std::fs::read_to_string(p)
            .ok()?
            .split_whitespace()
            .next()?
            .parse::<u64>()
            .ok()
    })
    .sum()
}

/// Peak resident memory of this process (VmHWM) in MB.
pub(super) fn peak_mb() -> f64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmHWM:"))
                .and_then(|l| l.split_whitespace().nth(1)?.parse::<f64>().ok())
        })
        .map_or(f64::NAN, |kb| kb / 1024.0)
}

/// The EP run of `args` on `path` with γ = `gamma` (auto: the CV fit).
fn ep_spec(args: &BenchArgs, path: &std::path::Path, gamma: Gamma) -> Result<RunSpec, CliError> {
    let prior = clap::ValueEnum::to_possible_value(&args.prior).expect("named");
    let folds = args.folds.to_string();
    let mut given = args.ep.pairs();
    given.push(("prior", prior.get_name()));
    if gamma == Gamma::Auto {
        given.extend([("gamma", "auto"), ("folds", folds.as_str())]);
    } else {
        given.retain(|(k, _)| *k != "gamma_grid"); // the CV runs' grid
    }
    let mut spec = spec::from_given(path.to_path_buf(), "ep", &given)?;
    spec.data = DataSpec {
        test_frac: args.test_frac,
        seed: args.seed,
        ..DataSpec::of(path)
    };
    spec.gamma = Some(gamma);
    Ok(spec)
}

fn child(args: &BenchArgs) -> Result<BenchRow, CliError> {
    let path = args.data.first().expect("one data set");
    let spec_fixed = ep_spec(args, path, Gamma::Value(args.gamma))?;
    let (_, prepared) = spec_fixed.data.load().map_err(CliError::Input)?;
    let d = prepared.names.len();
    // EP alone, without the certificate `fit` adds.
    let spec::Built { problem, .. } = spec::build(&spec_fixed, &prepared)?;
    let engine = spec::build::engine(&spec_fixed);
    let mut walls = Vec::new();
    let mut cpu = 0.0;
    let mut last = None;
    for _ in 0..args.repeats.max(1) {
        let (t, c) = (Instant::now(), cpu_ns());
        let fit = engine.run(&problem, &Control::new(), &mut NoObserver)?;
        walls.push(t.elapsed().as_secs_f64());
        cpu += (cpu_ns() - c) as f64 * 1e-9;
        last = Some(fit);
    }
    let fit = last.expect("one run");
    walls.sort_by(f64::total_cmp);
    let (sweeps, sites, form, rank, storage) = fit
        .reports
        .iter()
        .find_map(|r| match r {
            MethodReport::EpWork {
                sweeps,
                sites,
                form,
                rank,
                site_storage,
            } => Some((
                *sweeps,
                *sites as f64,
                *form,
                *rank,
                site_storage.unwrap_or(""),
            )),
            _ => None,
        })
        .unwrap_or((0, 0.0, "", 0, ""));
    let ep_cpu_s = cpu / walls.len() as f64;
    let (cv_s, cv_gamma_over_n) = if args.cv {
        let engine = spec::build::engine(&ep_spec(args, path, Gamma::Auto)?);
        let t = Instant::now();
        let fit = engine.run(&problem, &Control::new(), &mut NoObserver)?;
        (
            Some(t.elapsed().as_secs_f64()),
            fit.gamma.map(|g| g / problem.n() as f64),
        )
    } else {
        (None, None)
    };
    Ok(BenchRow {
        data: path.display().to_string(),
        n: problem.n(),
        d,
        form: form.into(),
        rank,
        pairs: problem.pairs(),
        storage: storage.into(),
        gamma: args.gamma,
        sweeps,
        ep_best_s: walls[0],
        ep_median_s: walls[walls.len() / 2],
        ep_cpu_s,
        cpu_ns_per_site_sweep: ep_cpu_s * 1e9 / (sites * sweeps.max(1) as f64),
        cv_s,
        cv_gamma_over_n,
        peak_mb: peak_mb(),
        threads: rayon::current_num_threads(),
        isa: detected_isa().name().into(),
    })
}

/// The options of `args` as command-line words, for the child processes.
fn child_argv(args: &BenchArgs, data: &std::path::Path) -> Vec<String> {
    let name = |v: &dyn Fn() -> Option<clap::builder::PossibleValue>| {
        v().map_or(String::new(), |p| p.get_name().to_string())
    };
    let mut a: Vec<String> = vec![
        "bench-ep".into(),
        "--gamma".into(),
        args.gamma.to_string(),
        "--prior".into(),
        name(&|| args.prior.to_possible_value()),
        "--repeats".into(),
        args.repeats.to_string(),
        "--folds".into(),
        args.folds.to_string(),
        "--test-frac".into(),
        args.test_frac.to_string(),
        "--seed".into(),
        args.seed.to_string(),
    ];
    if args.cv {
        a.push("--cv".into());
    }
    // The global --threads has sized this pool (and set MATMUL_NUM_THREADS, which the child inherits).
    a.extend(["--threads".into(), rayon::current_num_threads().to_string()]);
    a.extend(args.ep.to_argv());
    a.push("--child".into());
    a.push(data.display().to_string());
    a
}

/// Runs one data set in a child process (its own peak memory).
fn spawn(args: &BenchArgs, data: &std::path::Path) -> Result<BenchRow, CliError> {
    let exe = std::env::current_exe()
        .map_err(|e| CliError::Input(format!("cannot find the executable: {e}")))?;
    let mut cmd = Command::new(exe);
    cmd.args(child_argv(args, data));
    let out = cmd
        .output()
        .map_err(|e| CliError::Engine(format!("cannot run the benchmark child: {e}")))?;
    if !out.status.success() {
        return Err(CliError::Engine(format!(
            "{}: {}",
            data.display(),
            String::from_utf8_lossy(&out.stderr).trim()
        )));
    }
    serde_json::from_slice(&out.stdout).map_err(|e| {
        CliError::Engine(format!(
            "{}: unreadable benchmark result: {e}",
            data.display()
        ))
    })
}

fn print_table(rows: &[BenchRow]) {
    println!(
        "| data | n | d (rank) | pairs | sites | sweeps | EP s (best / median) | EP CPU s | CPU ns/site·sweep | EP + CV s (γ/n) | peak MB |"
    );
    println!("|---|---:|---:|---:|---|---:|---:|---:|---:|---:|---:|");
    for r in rows {
        let name = std::path::Path::new(&r.data)
            .file_name()
            .map_or(r.data.clone(), |f| f.to_string_lossy().into_owned());
        // Reduced linear EP and GP-EP (precision, whitened, features): the rank.
        let dim = if !r.form.is_empty() && r.form != "primal" {
            format!("{} ({}, reduced)", r.d, r.rank)
        } else {
            r.d.to_string()
        };
        let cv = match (r.cv_s, r.cv_gamma_over_n) {
            (Some(s), Some(g)) => format!("{s:.3} ({g}n)"),
            (Some(s), None) => format!("{s:.3}"),
            _ => "-".into(),
        };
        println!(
            "| {name} | {} | {dim} | {} | {} | {} | {:.4} / {:.4} | {:.4} | {:.1} | {cv} | {:.0} |",
            r.n,
            r.pairs,
            r.storage,
            r.sweeps,
            r.ep_best_s,
            r.ep_median_s,
            r.ep_cpu_s,
            r.cpu_ns_per_site_sweep,
            r.peak_mb
        );
    }
}

pub fn run(args: &BenchArgs) -> Result<(), CliError> {
    if args.child {
        let row = child(args)?;
        println!("{}", serde_json::to_string(&row).unwrap_or_default());
        return Ok(());
    }
    if !args.cv && args.ep.get("gamma_grid").is_some() {
        return Err(CliError::Input(
            "--gamma-grid is the grid of the --cv runs: give --cv too".into(),
        ));
    }
    let prior = clap::ValueEnum::to_possible_value(&args.prior).expect("named");
    let kind: PriorKind = serde_json::from_value(serde_json::json!(prior.get_name()))
        .expect("bench-ep's priors are the registry's");
    let gamma = registry::setting_of("gamma").expect("a setting");
    if args.cv && !gamma.auto_allowed("ep", Some(kind)) {
        return Err(CliError::Input(format!(
            "--cv times --gamma auto, which EP with the {} prior does not support; drop --cv",
            kind.name()
        )));
    }
    let kernel: Vec<String> = [Isa::Avx512, Isa::Avx2, Isa::Plain]
        .into_iter()
        .filter(|&i| {
            i == Isa::Plain
                || i == detected_isa()
                || (i == Isa::Avx2 && detected_isa() == Isa::Avx512)
        })
        .map(|i| format!("{} {:.2} ns", i.name(), site_throughput(i, true, 50)))
        .collect();
    eprintln!(
        "site kernel alone (1 thread, per site update with evidence): {}",
        kernel.join(", ")
    );
    let (mut rows, mut failed) = (Vec::new(), Vec::new());
    for data in &args.data {
        // One data set that fails (e.g. EP does not converge) does not stop the others.
        match spawn(args, data) {
            Ok(row) => {
                if args.json {
                    println!("{}", serde_json::to_string(&row).unwrap_or_default());
                }
                rows.push(row);
            }
            Err(e) => {
                let msg = match e {
                    CliError::Input(m) | CliError::Engine(m) => m,
                };
                eprintln!(
                    "{}: failed: {}",
                    data.display(),
                    msg.lines().next().unwrap_or("")
                );
                failed.push(data.display().to_string());
            }
        }
    }
    if !args.json {
        print_table(&rows);
    }
    if failed.is_empty() {
        Ok(())
    } else {
        Err(CliError::Engine(format!("failed: {}", failed.join(", "))))
    }
}
