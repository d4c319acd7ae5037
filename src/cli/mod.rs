//! The command line: a thin client of the engine library.

mod bench;
mod bench_ep;
mod bench_load;
mod bench_risk;
mod bound;
mod compare;
mod explore;
pub mod fit;
mod gen_demo;
mod gen_large;
mod merge;
mod path;
mod plot;
mod predict;
mod progress;
mod reproduce;
mod settings_args;
mod shell_docs;
mod table;
pub mod watch;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

use explore::{ExploreArgs, ReplayArgs, ViewArgs};
use fit::{CliError, FitArgs};
use gen_demo::GenDemoArgs;
use predict::PredictArgs;
use settings_args::SettingArgs;

/// The committed demo file (tests; `pacauc` itself opens the demo built into
/// the binary, `spec::demo_source`).
pub const DEMO_FILE: &str = "demo-data/sparse_linear.csv";

#[derive(Debug, Parser)]
#[command(name = "pacauc", version = env!("PACAUC_VERSION"), about = "PAC-Bayesian AUC scoring: Gibbs posteriors of ranking scores", long_about = None)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Option<Command>,
    /// Worker threads (rayon and the matrix products; default: all cores).
    #[arg(long, global = true, value_name = "T")]
    pub threads: Option<usize>,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// The terminal explorer (the default): live SMC/EP diagnostics, marginals, results.
    Explore(Box<ExploreArgs>),
    /// Reopen saved run records (from the explorer's `e` or `fit --out`) in the explorer.
    Replay(ReplayArgs),
    /// Fit one method headless and print the run record (JSON) or a table.
    Fit(Box<FitArgs>),
    /// Pool SMC runs made apart (`fit --runs R --run r`) into the record `--runs R` makes.
    Merge(merge::MergeArgs),
    /// Score the rows of a CSV file with a run record's model.
    Predict(PredictArgs),
    /// The spike-and-slab regularisation path: EP over a grid of spike variances v0.
    Path(Box<path::PathArgs>),
    /// Write the figures of run records (ROC, marginals, traces, CV, inclusion, path) as PNG/SVG.
    Plot(Box<plot::PlotArgs>),
    /// RACL14 Tables 1 and 2 end to end: every method over repeated splits, tables and figures.
    Reproduce(Box<reproduce::ReproduceArgs>),
    /// Several methods on one CSV over repeated splits: test AUCs with DeLong intervals and paired differences.
    Compare(Box<compare::CompareArgs>),
    /// Recompute a run record's PAC-Bayes certificate at another confidence level.
    Bound(bound::BoundArgs),
    /// Follow event logs (`fit --events FILE`) live in the explorer, or print their state (--once).
    Watch(Box<watch::WatchArgs>),
    /// Regenerate the synthetic demo data.
    GenDemo(GenDemoArgs),
    /// Time a method (best of several runs) against the floor of its hot path.
    Bench(Box<bench::BenchArgs>),
    /// Time EP on several data sets (wall and CPU seconds, sweeps, peak memory).
    BenchEp(Box<bench_ep::BenchArgs>),
    /// Time the exact risk R_n(θ) of a block of draws (the IS check's hot path) against the cost model.
    BenchRisk(bench_risk::BenchRiskArgs),
    /// Time loading a data file alone (wall and CPU seconds, MB/s, peak memory).
    BenchLoad(bench_load::BenchLoadArgs),
    /// Print a shell completion script. Bash: `pacauc completions bash > ~/.local/share/bash-completion/completions/pacauc`;
    /// zsh: into a folder of your $fpath as `_pacauc`; fish: `~/.config/fish/completions/pacauc.fish`.
    Completions(shell_docs::CompletionsArgs),
    /// Print the man page (roff; `pacauc man | man -l -`), or write one page per command with --out DIR.
    Man(shell_docs::ManArgs),
}

/// With no command: the explorer on the demo built into the binary.
fn default_demo() -> Command {
    Command::Explore(Box::new(ExploreArgs {
        data: PathBuf::from(crate::spec::demo_source::DEFAULT),
        settings: SettingArgs::new(Vec::new()),
        no_autorun: false,
        view: ViewArgs::defaults(),
    }))
}

/// Sizes rayon's global pool and matrixmultiply's (which reads
/// MATMUL_NUM_THREADS once, at its first product).
fn set_threads(threads: usize) -> Result<(), CliError> {
    if threads == 0 {
        return Err(CliError::Input("--threads must be ≥ 1".into()));
    }
    // SAFETY: called first thing in `main`, before this process starts any thread.
    unsafe { std::env::set_var("MATMUL_NUM_THREADS", threads.to_string()) };
    rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build_global()
        .map_err(|e| CliError::Input(format!("--threads {threads}: {e}")))
}

pub fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.threads.map(set_threads) {
        Some(Err(e)) => Err(e),
        _ => {
            let command = cli.command.unwrap_or_else(default_demo);
            match &command {
                Command::Explore(args) => explore::explore(args, cli.threads),
                Command::Replay(args) => explore::replay(args),
                Command::Fit(args) => fit::run(args, cli.threads),
                Command::Merge(args) => merge::run(args),
                Command::Predict(args) => predict::run(args),
                Command::Path(args) => path::run(args),
                Command::Plot(args) => plot::run(args),
                Command::Reproduce(args) => reproduce::run(args),
                Command::Compare(args) => compare::run(args),
                Command::Bound(args) => bound::run(args),
                Command::Watch(args) => watch::run(args),
                Command::GenDemo(args) => gen_demo::run(args).map_err(CliError::Input),
                Command::Bench(args) => bench::run(args, cli.threads),
                Command::BenchEp(args) => bench_ep::run(args),
                Command::BenchRisk(args) => bench_risk::run(args),
                Command::BenchLoad(args) => bench_load::run(args),
                Command::Completions(args) => shell_docs::completions(args),
                Command::Man(args) => shell_docs::man(args),
            }
        }
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(CliError::Input(m)) => {
            eprintln!("error: {m}");
            ExitCode::from(2)
        }
        Err(CliError::Engine(m)) => {
            eprintln!("error: {m}");
            ExitCode::from(3)
        }
    }
}

/// The exit status of a process ended by signal `sig`, as shells report it.
pub fn signal_status(sig: i32) -> u8 {
    (128 + sig).clamp(0, 255) as u8
}

#[cfg(test)]
mod tests;
