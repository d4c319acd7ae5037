//! `pacauc fit`: load, split, run one method headless, print the run record.

use std::io::IsTerminal;
use std::path::PathBuf;
use std::time::Instant;

use clap::{Args, ValueEnum};

use super::data_args::DataArgs;
use super::progress::Progress;
use super::table::print_table;
use crate::engine::baseline::{Logit, RankBoost};
use crate::engine::record::{RunRecord, Seconds, write_atomic};
use crate::engine::{Control, Engine, EngineError, Prior, Problem};

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Method {
    /// L2 logistic regression, penalty by CV (baseline).
    Logit,
    /// RankBoost.B with threshold rankers, rounds by CV (baseline).
    Rankboost,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Format {
    Json,
    Table,
}

#[derive(Debug, Clone, Args)]
pub struct FitArgs {
    #[command(flatten)]
    pub data: DataArgs,
    /// Inference method.
    #[arg(long, value_enum, default_value = "logit")]
    pub method: Method,
    /// Folds of the cross-validations that choose hyper-parameters.
    #[arg(long, default_value_t = 5)]
    pub folds: usize,
    /// Logit: fixed L2 penalty λ instead of CV.
    #[arg(long)]
    pub lambda: Option<f64>,
    /// RankBoost: fixed number of rounds instead of CV.
    #[arg(long)]
    pub rounds: Option<usize>,
    /// Output format on stdout.
    #[arg(long, value_enum, default_value = "json")]
    pub format: Format,
    /// Also write the JSON run record to this file (atomically).
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,
}

/// Errors of a command, with the exit status they map to.
#[derive(Debug)]
pub enum CliError {
    /// Bad input or options (exit 2).
    Input(String),
    /// The engine ran but failed (exit 3).
    Engine(String),
}

impl From<EngineError> for CliError {
    fn from(e: EngineError) -> Self {
        match e {
            EngineError::InvalidParams(m) => CliError::Input(m),
            EngineError::NotConverged {
                message,
                diagnostics,
            } => CliError::Engine(format!(
                "{message}\ndiagnostics: {}",
                serde_json::to_string_pretty(&diagnostics).unwrap_or_default()
            )),
            other => CliError::Engine(other.to_string()),
        }
    }
}

pub fn build_engine(args: &FitArgs) -> Box<dyn Engine> {
    match args.method {
        Method::Logit => Box::new(Logit {
            lambda: args.lambda,
            folds: args.folds,
            seed: args.data.seed,
            ..Logit::default()
        }),
        Method::Rankboost => Box::new(RankBoost {
            rounds: args.rounds,
            folds: args.folds,
            seed: args.data.seed,
        }),
    }
}

pub fn run(args: &FitArgs) -> Result<(), CliError> {
    let t0 = Instant::now();
    let (ds, prepared) = args.data.load().map_err(CliError::Input)?;
    let load_s = t0.elapsed().as_secs_f64();
    let show_progress = std::io::stderr().is_terminal();
    if show_progress {
        for w in ds.report.warnings.iter() {
            eprintln!("warning: {w}");
        }
        eprintln!("positive class: {}", ds.report.positive_rule);
    }
    let engine = build_engine(args);
    // Baselines ignore γ and the prior; Bayesian engines set their own.
    let problem = Problem::new(
        prepared.names.clone(),
        prepared.train.x.clone(),
        prepared.train.y.clone(),
        0.0,
        Prior::Gaussian { var: 1.0 },
    )?;
    let ctl = Control::new();
    let t1 = Instant::now();
    let mut progress = Progress::new(show_progress);
    let fit = engine.run(&problem, &ctl, &mut progress)?;
    progress.finish();
    let fit_s = t1.elapsed().as_secs_f64();
    let seconds = Seconds {
        load: load_s,
        fit: fit_s,
        total: t0.elapsed().as_secs_f64(),
    };
    let record = RunRecord::new(&ds, &prepared, &fit, engine.params(), None, None, seconds);
    let json = record.to_json();
    if let Some(path) = &args.out {
        write_atomic(path, json.as_bytes()).map_err(|e| {
            CliError::Input(format!("{}: cannot write the record: {e}", path.display()))
        })?;
    }
    match args.format {
        Format::Json => print!("{json}"),
        Format::Table => print_table(&record),
    }
    Ok(())
}
