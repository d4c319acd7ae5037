//! `pacauc fit`: the flags become a `RunSpec` (checked before any data is
//! read), then load, split, run one method headless, print the run record.

use std::io::IsTerminal;
use std::path::PathBuf;
use std::time::Instant;

use clap::builder::{PossibleValue, PossibleValuesParser};
use clap::{Args, ValueEnum};

use super::progress::Progress;
use super::settings_args::{self, All, SettingArgs};
use super::table::print_table;
use crate::engine::data::{Dataset, Prepared};
use crate::engine::quality;
use crate::engine::record::{RunRecord, Seconds, check_writable, write_atomic};
use crate::engine::{Control, Engine, EngineError, Problem};
use crate::spec::{self, RunSpec, SpecError, registry};

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Format {
    Json,
    Table,
}

/// The methods as clap's possible values, with the registry's help.
pub fn method_parser() -> PossibleValuesParser {
    PossibleValuesParser::new(
        registry::METHODS
            .iter()
            .map(|m| PossibleValue::new(m.name).help(m.help)),
    )
}

#[derive(Debug, Clone, Args)]
pub struct FitArgs {
    /// CSV file with a header row; the target is the last column unless --target.
    pub data: PathBuf,
    /// Inference method.
    #[arg(long, default_value = "logit", value_parser = method_parser())]
    pub method: String,
    #[command(flatten)]
    pub settings: SettingArgs<All>,
    /// Output format on stdout.
    #[arg(long, value_enum, default_value = "json")]
    pub format: Format,
    /// Also write the JSON run record to this file (atomically; checked before the fit).
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,
}

impl FitArgs {
    /// The run specification of these flags (`threads`: the global option).
    pub fn spec(&self, threads: Option<usize>) -> Result<RunSpec, CliError> {
        let mut spec = spec::from_given(self.data.clone(), &self.method, &self.settings.pairs())?;
        spec.threads = threads;
        Ok(spec)
    }
}

/// Errors of a command, with the exit status they map to.
#[derive(Debug)]
pub enum CliError {
    /// Bad input or options (exit 2).
    Input(String),
    /// The engine ran but failed (exit 3).
    Engine(String),
}

impl From<SpecError> for CliError {
    fn from(e: SpecError) -> Self {
        CliError::Input(settings_args::render(&e))
    }
}

impl From<EngineError> for CliError {
    fn from(e: EngineError) -> Self {
        let m = settings_args::render_message;
        match e {
            EngineError::InvalidParams(msg) => CliError::Input(m(&msg)),
            EngineError::NotConverged {
                message,
                diagnostics,
                ..
            } => CliError::Engine(format!(
                "{}\ndiagnostics: {}",
                m(&message),
                serde_json::to_string_pretty(&diagnostics).unwrap_or_default()
            )),
            other => CliError::Engine(m(&other.to_string())),
        }
    }
}

/// A loaded data set and the problem and engine a spec asks for.
pub struct Loaded {
    pub ds: Dataset,
    pub prepared: Prepared,
    pub problem: Problem,
    pub engine: Box<dyn Engine>,
    /// Seconds spent loading and preparing the data.
    pub load_seconds: f64,
}

/// Loads the data of `spec` and builds its problem and engine. `announce`: say
/// on stderr which target and positive class were chosen and what the data
/// raised (every output format: JSON on stdout stays clean).
pub fn load(spec: &RunSpec, announce: bool) -> Result<Loaded, CliError> {
    let t0 = Instant::now();
    let (ds, prepared) = spec.data.load().map_err(CliError::Input)?;
    let load_seconds = t0.elapsed().as_secs_f64();
    if announce {
        eprintln!("target: {}", ds.report.target_rule);
        eprintln!("positive class: {}", ds.report.positive_rule);
        for w in ds.report.warnings.iter() {
            eprintln!("warning: {w}");
        }
    }
    let spec::Built { engine, problem } = spec::build(spec, &prepared)?;
    if announce && spec.gamma == Some(spec::Gamma::Theory) {
        eprintln!(
            "gamma: {} = {:.4}n, ARC16's theory value for {}",
            problem.gamma,
            problem.gamma / problem.n() as f64,
            spec.method_name()
        );
    }
    Ok(Loaded {
        ds,
        prepared,
        problem,
        engine,
        load_seconds,
    })
}

pub fn run(args: &FitArgs, threads: Option<usize>) -> Result<(), CliError> {
    let t0 = Instant::now();
    let spec = args.spec(threads)?;
    if let Some(path) = &args.out {
        check_writable(path).map_err(|e| {
            CliError::Input(format!("{}: cannot write the record: {e}", path.display()))
        })?;
    }
    let show_progress = std::io::stderr().is_terminal();
    let Loaded {
        ds,
        prepared,
        problem,
        engine,
        load_seconds: load_s,
    } = load(&spec, true)?;
    let ctl = Control::new();
    let t1 = Instant::now();
    let mut progress = Progress::new(show_progress);
    let mut fit = engine.run(&problem, &ctl, &mut progress)?;
    progress.finish();
    if fit.trace.is_empty() {
        // As the explorer's worker does: the observed events.
        fit.trace = std::mem::take(&mut progress.trace);
    }
    let fit_s = t1.elapsed().as_secs_f64();
    let seconds = Seconds {
        load: load_s,
        fit: fit_s,
        total: t0.elapsed().as_secs_f64(),
    };
    let record = RunRecord::new(
        &ds,
        &prepared,
        &fit,
        spec.to_value(),
        engine.params(),
        seconds,
    );
    // The doubtful results the record lists, in every format (the data's and
    // the engine's own warnings were printed as they came).
    for w in record
        .warnings
        .iter()
        .filter(|w| w.code != quality::code::DATA)
    {
        progress.warn_coded(Some(&w.code), &w.message);
    }
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
