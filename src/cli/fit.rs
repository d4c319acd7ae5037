//! `pacauc fit`: the flags become a `RunSpec` (checked before any data is
//! read), then load, split, run one method headless, print the run record.

use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::time::Instant;

use clap::builder::{PossibleValue, PossibleValuesParser};
use clap::{Args, ValueEnum};

use super::progress::Progress;
use super::settings_args::{self, All, SettingArgs};
use super::table::print_table;
use crate::engine::data::{Dataset, Prepared};
use crate::engine::quality;
use crate::engine::record::{RunRecord, check_writable, write_atomic};
use crate::engine::{Control, Engine, EngineError, Event, Observer, Problem};
use crate::eventlog::{EndLine, Header, LogWriter};
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

/// The method of `fit` without `--method`: the quick baseline (announced,
/// with the advice of `spec::advice`).
pub const DEFAULT_METHOD: &str = "logit";

#[derive(Debug, Clone, Args)]
pub struct FitArgs {
    /// CSV file with a header row; the target is the last column unless --target.
    pub data: PathBuf,
    /// Inference method [default: logit]. Without it, fit lists every method
    /// with its estimated time on this data and suggests one.
    #[arg(long, value_parser = method_parser())]
    pub method: Option<String>,
    #[command(flatten)]
    pub settings: SettingArgs<All>,
    /// Output format on stdout.
    #[arg(long, value_enum, default_value = "json")]
    pub format: Format,
    /// Also write the JSON run record to this file (atomically; checked before the fit).
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,
    /// Append the run's events to this log as they come (JSON lines: a header,
    /// the events, the record); `pacauc watch FILE` follows it live.
    #[arg(long, value_name = "FILE")]
    pub events: Option<PathBuf>,
    /// Run even when the cost estimate is above an hour or the memory available.
    #[arg(long)]
    pub ignore_cost: bool,
}

impl FitArgs {
    /// The run specification of these flags (`threads`: the global option).
    pub fn spec(&self, threads: Option<usize>) -> Result<RunSpec, CliError> {
        let method = self.method.as_deref().unwrap_or(DEFAULT_METHOD);
        let mut spec = spec::from_given(self.data.clone(), method, &self.settings.pairs())?;
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
        // The diagnostics as shown: the numbers with the method's account.
        let diagnostics = e.diagnostics();
        match e {
            EngineError::InvalidParams(msg) => CliError::Input(m(&msg)),
            EngineError::NotConverged { message, .. } => CliError::Engine(format!(
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
    let (mut ds, prepared) = spec.data.load().map_err(CliError::Input)?;
    ds.release_rows(); // the prepared split holds every row the run needs
    let load_seconds = t0.elapsed().as_secs_f64();
    if announce {
        if let Some(name) = spec::demo_source::bundled_demo(&spec.data.path) {
            eprintln!("{}", spec::demo_source::announce(name));
        }
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
    if args.method.is_none() {
        announce_advice(&problem);
    }
    announce_cost(&spec, &problem, args.ignore_cost)?;
    let ctl = Control::new();
    let mut log = match &args.events {
        Some(path) => Some(open_log(path, &spec, &ds, &prepared)?),
        None => None,
    };
    let mut progress = Progress::new(show_progress);
    let result = spec::run::record(
        &spec,
        (&ds, &prepared),
        engine.as_ref(),
        &problem,
        &ctl,
        &mut Tee {
            progress: &mut progress,
            log: log.as_mut(),
        },
        load_s,
    );
    progress.finish();
    let record = match result {
        Ok(record) => record,
        Err(e) => {
            if let Some(log) = log {
                let end = match &e {
                    EngineError::Cancelled => EndLine::Cancelled,
                    other => EndLine::Failed {
                        error: other.to_string(),
                    },
                };
                close_log(log, Err(end));
            }
            return Err(e.into());
        }
    };
    // The doubtful results the record lists, in every format (the data's and
    // the engine's own warnings were printed as they came).
    for w in record
        .warnings
        .iter()
        .filter(|w| w.code != quality::code::DATA)
    {
        progress.warn_coded(Some(&w.code), &w.message);
    }
    if let Some(note) = record.bound.as_ref().and_then(|b| b.sampled_pairs_note()) {
        eprintln!("{note}");
    }
    if let (Some((_, None, _)), Some(draws)) = (spec.method.certificate(), record.is_check_draws())
        && let Some(note) = crate::engine::is_check::risks::auto_draws_note(draws)
    {
        eprintln!("{note}");
    }
    if let Some(log) = log {
        close_log(log, Ok(&record));
    }
    emit(&record, args.out.as_deref(), args.format)
}

/// The progress line and, with `--events`, the event log.
struct Tee<'a> {
    progress: &'a mut Progress,
    log: Option<&'a mut LogWriter>,
}

impl Observer for Tee<'_> {
    fn observe(&mut self, mut event: Event) {
        if let Some(log) = self.log.as_mut() {
            log.event(&mut event);
        }
        self.progress.observe(event);
    }
}

/// Opens the event log and writes the run's header (an error names the file).
fn open_log(
    path: &Path,
    spec: &RunSpec,
    ds: &Dataset,
    prepared: &Prepared,
) -> Result<LogWriter, CliError> {
    let header = Header::for_run(spec.to_value(), ds, prepared);
    LogWriter::create(path, &header).map_err(|e| {
        CliError::Input(format!(
            "{}: cannot write the event log: {e}",
            path.display()
        ))
    })
}

/// Ends the log; a write that failed on the way is a warning (the fit's result stands).
fn close_log(log: LogWriter, end: Result<&RunRecord, EndLine>) {
    let path = log.path().to_path_buf();
    if let Err(e) = log.end(end) {
        eprintln!(
            "warning: {}: the event log could not be written in full: {e}",
            path.display()
        );
    }
}

/// Without `--method`: every method's estimated time on this data, the
/// suggestion, and that the default runs (never a silent choice).
fn announce_advice(pb: &Problem) {
    let sizes = spec::cost::Sizes {
        rows: pb.n(),
        positives: pb.n_pos(),
        features: pb.d(),
    };
    let advice = spec::advice::advise(sizes, rayon::current_num_threads());
    for line in advice.describe(sizes) {
        eprintln!("{line}");
    }
    eprintln!("method: {DEFAULT_METHOD} (the default: no --method given)");
}

/// States the run's estimated cost on stderr (`spec::cost`) and refuses a run
/// above an hour or the memory available, unless `ignore`.
fn announce_cost(spec: &RunSpec, pb: &Problem, ignore: bool) -> Result<(), CliError> {
    let sizes = spec::cost::Sizes {
        rows: pb.n(),
        positives: pb.n_pos(),
        features: pb.d(),
    };
    let machine = spec::cost::Machine::this();
    let est = spec::cost::estimate(spec, sizes, machine.threads);
    eprintln!("cost estimate: {}", est.describe());
    if let Some(line) = spec::smc_reference::announce(spec, sizes) {
        eprintln!("{line}");
    }
    if let Some(line) = spec::ep_spec::announce(spec) {
        eprintln!("{line}");
    }
    match spec::cost::refusal(spec, sizes, machine.threads, machine.limits) {
        Some(msg) if !ignore => Err(CliError::Input(msg)),
        Some(_) => {
            eprintln!("warning: above the cost limit; running anyway (--ignore-cost)");
            Ok(())
        }
        None => Ok(()),
    }
}

/// Writes the record to `out` (atomically) and prints it in `format`: what
/// `fit` and `merge` end with.
pub(super) fn emit(record: &RunRecord, out: Option<&Path>, format: Format) -> Result<(), CliError> {
    let json = record.to_json();
    if let Some(path) = out {
        write_atomic(path, json.as_bytes()).map_err(|e| {
            CliError::Input(format!("{}: cannot write the record: {e}", path.display()))
        })?;
    }
    match format {
        Format::Json => print!("{json}"),
        Format::Table => print_table(record),
    }
    Ok(())
}
