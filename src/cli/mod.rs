//! The command line: a thin client of the engine library.

mod bayes_args;
mod bench_ep;
mod data_args;
mod ep_args;
pub mod fit;
mod gen_demo;
mod progress;
mod table;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

pub use data_args::DataArgs;
use fit::{CliError, FitArgs, Format, Method};
use gen_demo::GenDemoArgs;

/// The bundled demo file opened when pacauc runs without arguments.
pub const DEMO_FILE: &str = "demo-data/sparse_linear.csv";

#[derive(Debug, Parser)]
#[command(name = "pacauc", version, about = "PAC-Bayesian AUC scoring: Gibbs posteriors of ranking scores", long_about = None)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Option<Command>,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Fit one method headless and print the run record (JSON) or a table.
    Fit(Box<FitArgs>),
    /// Regenerate the synthetic demo data.
    GenDemo(GenDemoArgs),
    /// Time an engine on data sets (wall and CPU seconds, sweeps, peak memory).
    Bench(Box<bench_ep::BenchArgs>),
}

/// With no command: fit the demo data and print a table.
fn default_demo() -> Command {
    let data = DataArgs {
        data: PathBuf::from(DEMO_FILE),
        target: None,
        positive: None,
        drop: Vec::new(),
        missing: data_args::MissingArg::Drop,
        test_frac: 0.25,
        seed: 0,
        test: None,
    };
    Command::Fit(Box::new(FitArgs {
        data,
        method: Method::Logit,
        bayes: bayes_args::BayesArgs {
            gamma: None,
            prior: bayes_args::PriorKind::Gaussian,
            prior_var: None,
            spike_var: None,
            slab_var: None,
            inclusion_prior: None,
        },
        ep: ep_args::EpArgs::default(),
        folds: 5,
        lambda: None,
        rounds: None,
        format: Format::Table,
        out: None,
    }))
}

pub fn main() -> ExitCode {
    let cli = Cli::parse();
    let command = cli.command.unwrap_or_else(default_demo);
    let result = match &command {
        Command::Fit(args) => fit::run(args),
        Command::GenDemo(args) => gen_demo::run(args).map_err(CliError::Input),
        Command::Bench(args) => bench_ep::run(args),
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
