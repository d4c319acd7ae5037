//! `pacauc fit`: load, split, run one method headless, print the run record.

use std::io::IsTerminal;
use std::path::PathBuf;
use std::time::Instant;

use clap::{Args, ValueEnum};

use super::bayes_args::{BayesArgs, GammaChoice, PriorKind, Tunable};
use super::data_args::DataArgs;
use super::ep_args::EpArgs;
use super::gp_args::GpArgs;
use super::progress::Progress;
use super::smc_args::SmcArgs;
use super::table::print_table;
use crate::engine::baseline::{Logit, RankBoost};
use crate::engine::data::{Dataset, Prepared};
use crate::engine::record::{RunRecord, Seconds, write_atomic};
use crate::engine::smc::Smc;
use crate::engine::{Control, Engine, EngineError, Prior, Problem};

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Method {
    /// L2 logistic regression, penalty by CV (baseline).
    Logit,
    /// RankBoost.B with threshold rankers, rounds by CV (baseline).
    Rankboost,
    /// Adaptive tempering SMC: samples the Gibbs posterior (the gold standard).
    Smc,
    /// Expectation Propagation: Gaussian approximation of the Gibbs posterior and its evidence.
    Ep,
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
    #[command(flatten)]
    pub bayes: BayesArgs,
    #[command(flatten)]
    pub smc: SmcArgs,
    #[command(flatten)]
    pub ep: EpArgs,
    #[command(flatten)]
    pub gp: GpArgs,
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

impl Method {
    /// Whether the method samples or approximates a Gibbs posterior (uses γ and the prior).
    pub fn is_bayesian(self) -> bool {
        match self {
            Method::Logit | Method::Rankboost => false,
            Method::Smc | Method::Ep => true,
        }
    }
}

/// The engine for `args`; `gamma` is what the command line asked for (engines
/// that support `auto` tune it, the others get a fixed value in the `Problem`).
pub fn build_engine(args: &FitArgs, gamma: GammaChoice) -> Result<Box<dyn Engine>, CliError> {
    Ok(match args.method {
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
        Method::Smc => {
            if gamma == GammaChoice::Auto {
                return Err(CliError::Input(
                    "--gamma auto is not supported by smc (its γ path is in the record's details); \
                     give a number or a multiple of n"
                        .into(),
                ));
            }
            if args.bayes.prior == PriorKind::SpikeSlab
                && (args.bayes.slab_var() == Ok(Tunable::Auto)
                    || args.bayes.inclusion_prior(1) == Ok(Tunable::Auto))
            {
                return Err(CliError::Input(
                    "`auto` for --slab-var or --inclusion-prior (evidence maximisation) is done by \
                     --method ep; give numbers for smc (e.g. the values an EP run with `auto` \
                     chose: its record's details.slab_var and details.inclusion_prior)"
                        .into(),
                ));
            }
            Box::new(Smc {
                settings: args.smc.settings(args.data.seed),
            })
        }
        Method::Ep => {
            let spike_slab = args.bayes.prior == PriorKind::SpikeSlab;
            let mut ep = args.ep.engine(gamma, args.folds, args.data.seed);
            ep.tune_inclusion = spike_slab && args.bayes.inclusion_prior(1) == Ok(Tunable::Auto);
            ep.tune_slab = spike_slab && args.bayes.slab_var() == Ok(Tunable::Auto);
            Box::new(ep)
        }
    })
}

/// A loaded data set and the problem and engine a command line asks for.
pub struct Loaded {
    pub ds: Dataset,
    pub prepared: Prepared,
    pub problem: Problem,
    pub engine: Box<dyn Engine>,
    /// Seconds spent loading and preparing the data.
    pub load_seconds: f64,
}

/// Loads the data and builds the problem and the engine of `args`.
pub fn load(args: &FitArgs, show_progress: bool) -> Result<Loaded, CliError> {
    let t0 = Instant::now();
    let (ds, prepared) = args.data.load().map_err(CliError::Input)?;
    let load_seconds = t0.elapsed().as_secs_f64();
    if show_progress {
        for w in ds.report.warnings.iter() {
            eprintln!("warning: {w}");
        }
        eprintln!("positive class: {}", ds.report.positive_rule);
    }
    let (gamma, prior) = if args.method.is_bayesian() {
        let g = args
            .bayes
            .gamma(prepared.train.rows())
            .map_err(CliError::Input)?;
        let prior = if args.bayes.prior == PriorKind::Gp {
            args.gp.prior(args.data.seed)
        } else {
            args.bayes.prior(prepared.names.len())
        }
        .map_err(CliError::Input)?;
        (g, prior)
    } else {
        // Baselines ignore γ and the prior.
        (GammaChoice::Fixed(0.0), Prior::Gaussian { var: 1.0 })
    };
    let engine = build_engine(args, gamma)?;
    let fixed_gamma = match gamma {
        GammaChoice::Fixed(g) => g,
        GammaChoice::Auto => prepared.train.rows() as f64, // the starting point of the tuning
    };
    let problem = Problem::new(
        prepared.names.clone(),
        prepared.train.x.clone(),
        prepared.train.y.clone(),
        fixed_gamma,
        prior,
    )?;
    Ok(Loaded {
        ds,
        prepared,
        problem,
        engine,
        load_seconds,
    })
}

pub fn run(args: &FitArgs) -> Result<(), CliError> {
    let t0 = Instant::now();
    let show_progress = std::io::stderr().is_terminal();
    let Loaded {
        ds,
        prepared,
        problem,
        engine,
        load_seconds: load_s,
    } = load(args, show_progress)?;
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
    let record = RunRecord::new(&ds, &prepared, &fit, engine.params(), seconds);
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
