//! Pure UI state: `App`, the messages that change it (`Msg`) and `update`,
//! which returns the side effects for the terminal loop to carry out
//! (`Command`). No terminal, no threads: unit-tested directly.

mod data_state;
pub mod form;
mod handle_key;
pub use data_state::{DataInfo, DataState};
use data_state::{data_status, log_data, log_data_state};
pub use handle_key::FORM_ANYWAY;
pub mod keys;
pub mod messages;
mod plot_key;
pub mod ring;
pub mod run_figures;
pub mod run_view;
mod watch;

use std::collections::VecDeque;
use std::path::PathBuf;

use crate::engine::event::{Event, LogLevel};
use crate::engine::quality::code;
use crate::engine::record::RunRecord;
use crate::spec::cost::{self, CostEstimate, Limits, Machine};
use crate::spec::{DataSpec, RunSpec, registry};
use crate::worker::{RunId, WorkerEvent, WorkerMsg};
use form::Form;
use keys::Key;
use messages::{Level, Messages};
use run_view::{RunStatus, RunView};

/// The panes, in focus order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pane {
    Dataset,
    Smc,
    Ep,
    Marginals,
    Inclusion,
    Results,
}

impl Pane {
    pub const ALL: [Pane; 6] = [
        Pane::Dataset,
        Pane::Smc,
        Pane::Ep,
        Pane::Marginals,
        Pane::Inclusion,
        Pane::Results,
    ];

    pub fn title(self) -> &'static str {
        match self {
            Pane::Dataset => "Dataset",
            // SMC's stages or the great-circle sampler's chains: one name
            // for the tab and the pane whichever it shows.
            Pane::Smc => "Sampler",
            // EP's sweeps or VB's iterations.
            Pane::Ep => "Convergence",
            Pane::Marginals => "Marginals",
            Pane::Inclusion => "Inclusion",
            Pane::Results => "Results",
        }
    }

    pub fn index(self) -> usize {
        Pane::ALL.iter().position(|&p| p == self).unwrap_or(0)
    }

    fn step(self, by: isize) -> Pane {
        let n = Pane::ALL.len() as isize;
        Pane::ALL[(self.index() as isize + by).rem_euclid(n) as usize]
    }
}

#[derive(Debug, Clone, PartialEq)]
pub enum Overlay {
    None,
    Help,
    Form(Box<Form>),
    /// The message log (its scroll position is `App::messages`).
    Messages,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum MarkerKind {
    #[default]
    Braille,
    Dot,
    Block,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ViewOptions {
    pub color: bool,
    pub marker: MarkerKind,
}

impl Default for ViewOptions {
    fn default() -> Self {
        ViewOptions {
            color: true,
            marker: MarkerKind::Braille,
        }
    }
}

/// The figures folder unless `--figures-dir` says otherwise.
pub const DEFAULT_FIGURES_DIR: &str = "pacauc-figures";

#[derive(Debug, Clone, PartialEq)]
pub struct StatusLine {
    pub text: String,
    pub error: bool,
}

#[derive(Debug)]
pub enum Msg {
    Key(Key),
    Worker(WorkerMsg),
    /// A clock tick (spinner, elapsed time of runs without events).
    Tick,
    Resize,
    Exported {
        run: RunId,
        result: Result<PathBuf, String>,
    },
    /// The figures of a `Command::Plot` were written (the files), or not.
    Plotted {
        dir: PathBuf,
        result: Result<Vec<PathBuf>, String>,
    },
    /// A background run was started (its log and pid), or not.
    Backgrounded(Result<(PathBuf, u32), String>),
    /// What a followed event log said (`pacauc watch`, background runs).
    Log(crate::eventlog::LogMsg),
    /// The run could not be built (bad settings) or its thread not started.
    StartFailed {
        run: RunId,
        error: String,
    },
}

/// Side effects for the terminal loop.
#[derive(Debug, Clone, PartialEq)]
pub enum Command {
    Start {
        run: RunId,
        spec: Box<RunSpec>,
    },
    Pause {
        run: RunId,
        paused: bool,
    },
    Cancel {
        run: RunId,
    },
    Export {
        run: RunId,
    },
    /// Start `spec` as a detached `pacauc fit --events` process and follow its log.
    Background {
        spec: Box<RunSpec>,
    },
    /// Write these figures as PNG and SVG into `dir` (off the UI thread).
    Plot {
        dir: PathBuf,
        figures: Vec<crate::figures::Figure>,
    },
}

#[derive(Debug)]
pub struct App {
    pub data: DataState,
    pub runs: Vec<RunView>,
    queue: VecDeque<RunId>,
    pub active: Option<RunId>,
    /// A cancel was requested for the active run; its late events are stale.
    cancelling: Option<RunId>,
    pub selected: Option<RunId>,
    /// Selection follows the newest run until the user picks one.
    follow: bool,
    pub focus: Pane,
    pub overlay: Overlay,
    pub zoom: bool,
    /// Selected row of the forest plot (in its sorted order).
    pub coef_sel: usize,
    pub dataset_scroll: usize,
    pub inclusion_scroll: usize,
    pub status: Option<StatusLine>,
    next_id: RunId,
    pub quit: bool,
    pub ticks: u64,
    pub options: ViewOptions,
    /// The spec of the last run started from the form (its next preset).
    last_form: Option<RunSpec>,
    /// Every message of the session in full (the `m` overlay).
    pub messages: Messages,
    /// Where `e` writes run records (absolute when known).
    pub export_dir: Option<PathBuf>,
    /// Where `p` writes figures: a folder per run (or set of marked runs) in it.
    pub figures_dir: PathBuf,
    /// Runs marked (`x`) to be drawn together by `p`.
    pub marked: Vec<RunId>,
    /// Figure writes under way (`p` waits for the last to end).
    plotting: usize,
    /// Runs followed in event logs, by their place in the logs.
    watched: Vec<(crate::eventlog::SourceId, RunId)>,
    /// The cores and limits runs are estimated and checked against
    /// (`spec::cost`; the explorer sets this machine's).
    pub machine: Machine,
}

impl App {
    pub fn new(data: DataState, options: ViewOptions) -> App {
        let mut messages = Messages::default();
        let status = data_status(&data);
        log_data_state(&mut messages, &data);
        App {
            data,
            runs: Vec::new(),
            queue: VecDeque::new(),
            active: None,
            cancelling: None,
            selected: None,
            follow: true,
            focus: Pane::Dataset,
            overlay: Overlay::None,
            zoom: false,
            coef_sel: 0,
            dataset_scroll: 0,
            inclusion_scroll: 0,
            status,
            next_id: 1,
            quit: false,
            ticks: 0,
            options,
            last_form: None,
            messages,
            export_dir: None,
            figures_dir: PathBuf::from(DEFAULT_FIGURES_DIR),
            marked: Vec::new(),
            plotting: 0,
            watched: Vec::new(),
            machine: Machine {
                threads: 1,
                limits: Limits {
                    seconds: cost::DEFAULT_SECONDS_LIMIT,
                    bytes: f64::INFINITY,
                },
            },
        }
    }

    /// An explorer over saved runs (`pacauc replay`); the first record's
    /// dataset fills the Dataset pane.
    pub fn replay(records: Vec<(PathBuf, RunRecord)>, options: ViewOptions) -> App {
        let data = match records.first() {
            Some((_, r)) => DataState::Loaded(Box::new(DataInfo {
                report: r.dataset.clone(),
                split: r.split.clone(),
                names: r.coefficients.iter().map(|c| c.name.clone()).collect(),
                spec: None,
            })),
            None => DataState::Failed {
                path: String::new(),
                error: "no run record given".into(),
            },
        };
        let mut app = App::new(data, options);
        let first = records.first().map(|(_, r)| r.dataset.fingerprint.clone());
        let mut mixed = false;
        for (path, record) in records {
            mixed |= Some(&record.dataset.fingerprint) != first.as_ref();
            let id = app.next_id;
            app.next_id += 1;
            app.messages
                .push(Level::Info, format!("#{id}: replaying {}", path.display()));
            // The record's doubts, as the live run logged them (the data's
            // warnings are the dataset's, logged once above).
            for w in record.warnings.iter().filter(|w| w.code != code::DATA) {
                app.messages
                    .push(Level::Warn, format!("#{id} [{}]: {}", w.code, w.message));
            }
            app.runs.push(RunView::from_record(id, record, Some(path)));
            app.selected = Some(id);
        }
        app.focus = Pane::Results;
        app.status = Some(if mixed {
            StatusLine {
                text: "these records come from different datasets: their AUCs are not comparable"
                    .into(),
                error: true,
            }
        } else {
            // Doubtful records are named first: the line is cut on the right.
            let doubtful: Vec<String> = app
                .runs
                .iter()
                .filter(|r| r.is_doubtful())
                .map(|r| format!("#{} {}", r.id, r.status_text()))
                .collect();
            let n = app.runs.len();
            StatusLine {
                text: if doubtful.is_empty() {
                    format!("replaying {n} run record(s)")
                } else {
                    format!(
                        "replaying {n} run record(s): {} (m: messages)",
                        doubtful.join(", ")
                    )
                },
                error: !doubtful.is_empty(),
            }
        });
        app
    }

    /// Names the export folder in the status line (unless it says something
    /// else already) and the message log.
    pub fn announce_exports(&mut self, dir: PathBuf) {
        let text = format!("e exports a run's record to {}", dir.display());
        if self.status.is_none() {
            self.say(text, false);
        } else {
            self.messages.push(Level::Info, text);
        }
        self.export_dir = Some(dir);
    }

    pub fn data_info(&self) -> Option<&DataInfo> {
        match &self.data {
            DataState::Loaded(d) => Some(d),
            DataState::Failed { .. } | DataState::Loading { .. } => None,
        }
    }

    /// What `spec` would cost on the loaded data, and why it is refused when
    /// it is above the machine's limits (`anyway`: how to run it regardless).
    pub fn cost_of(&self, spec: &RunSpec, anyway: &str) -> Option<(CostEstimate, Option<String>)> {
        let sizes = self.data_info()?.sizes();
        let (threads, limits) = (self.machine.threads, self.machine.limits);
        Some((
            cost::estimate(spec, sizes, threads),
            cost::refusal_in(spec, sizes, threads, limits, anyway),
        ))
    }

    pub fn is_loading(&self) -> bool {
        matches!(self.data, DataState::Loading { .. })
    }

    /// The data arrived from the loading thread (or could not be read): it
    /// replaces the loading state, and with `autorun` the default runs start.
    pub fn on_data_loaded(&mut self, data: DataState, autorun: bool) -> Vec<Command> {
        log_data_state(&mut self.messages, &data);
        self.status = data_status(&data);
        self.data = data;
        if autorun { self.autorun() } else { Vec::new() }
    }

    pub fn names(&self) -> &[String] {
        self.data_info().map_or(&[], |d| d.names.as_slice())
    }

    /// Data to run engines on (None when replaying or after a load error).
    pub fn data_spec(&self) -> Option<&DataSpec> {
        self.data_info()?.spec.as_ref()
    }

    pub fn run(&self, id: RunId) -> Option<&RunView> {
        self.runs.iter().find(|r| r.id == id)
    }

    pub(crate) fn run_mut(&mut self, id: RunId) -> Option<&mut RunView> {
        self.runs.iter_mut().find(|r| r.id == id)
    }

    pub fn selected_run(&self) -> Option<&RunView> {
        self.run(self.selected?)
    }

    /// The run a pane shows: the selected run if it qualifies, else the newest
    /// one that does (queued runs never qualify).
    pub fn run_for(&self, qualifies: impl Fn(&RunView) -> bool) -> Option<&RunView> {
        let ok = |r: &&RunView| r.status != RunStatus::Queued && qualifies(r);
        self.selected_run()
            .filter(ok)
            .or_else(|| self.runs.iter().rev().find(ok))
    }

    pub fn is_busy(&self) -> bool {
        self.active.is_some()
    }

    pub fn queued(&self) -> usize {
        self.queue.len()
    }

    pub(crate) fn say(&mut self, text: impl Into<String>, error: bool) {
        let level = if error { Level::Error } else { Level::Info };
        self.say_level(text, level);
    }

    /// Sets the status line and logs it (a warning shows like an error).
    pub(crate) fn say_level(&mut self, text: impl Into<String>, level: Level) {
        let text = text.into();
        self.messages.push(level, text.clone());
        self.status = Some(StatusLine {
            text,
            error: level != Level::Info,
        });
    }

    /// Queues the default runs (the registry's autorun methods, EP then SMC).
    pub fn autorun(&mut self) -> Vec<Command> {
        let mut cmds = Vec::new();
        let Some(data) = self.data_spec().cloned() else {
            return cmds;
        };
        let mut refused = Vec::new();
        for m in registry::AUTORUN_ORDER {
            let Some(spec) = RunSpec::for_method(data.clone(), m) else {
                continue;
            };
            // Never a silent crawl: a default run above the limits is not
            // started, and the log says why and what fits.
            let anyway = "n opens the run form to change the settings or to run it anyway";
            if let Some((_, Some(why))) = self.cost_of(&spec, anyway) {
                self.messages
                    .push(Level::Warn, format!("{m} not started: {why}"));
                refused.push(*m);
                continue;
            }
            cmds.extend(self.enqueue(spec));
        }
        if !refused.is_empty() {
            self.say_level(
                format!(
                    "default run{} not started, above the cost limit: {} (m: why and what fits; n: the run form)",
                    if refused.len() > 1 { "s" } else { "" },
                    refused.join(", ")
                ),
                Level::Warn,
            );
        }
        cmds
    }

    /// Adds a run; starts it now if nothing is running.
    pub fn enqueue(&mut self, spec: RunSpec) -> Vec<Command> {
        let id = self.next_id;
        self.next_id += 1;
        self.runs.push(RunView::new(id, spec));
        self.queue.push_back(id);
        if self.follow {
            self.selected = Some(id);
        }
        match self.active {
            Some(a) => {
                self.say(format!("queued #{id}: it starts when #{a} ends"), false);
                Vec::new()
            }
            None => self.start_next(),
        }
    }

    fn start_next(&mut self) -> Vec<Command> {
        while let Some(id) = self.queue.pop_front() {
            if let Some(r) = self.run_mut(id)
                && r.status == RunStatus::Queued
            {
                r.status = RunStatus::Running;
                let spec = Box::new(r.spec.clone());
                self.active = Some(id);
                return vec![Command::Start { run: id, spec }];
            }
        }
        Vec::new()
    }

    /// The active run ended (finished, failed or cancelled): start the next.
    fn ended(&mut self, id: RunId) -> Vec<Command> {
        if self.active == Some(id) {
            self.active = None;
            self.cancelling = None;
            self.start_next()
        } else {
            Vec::new()
        }
    }

    pub(crate) fn on_worker(&mut self, msg: WorkerMsg) -> Vec<Command> {
        let stale = self.cancelling == Some(msg.run);
        let Some(run) = self.runs.iter_mut().find(|r| r.id == msg.run) else {
            return Vec::new();
        };
        match msg.event {
            WorkerEvent::Event(e) => {
                if run.status.is_live() && !stale {
                    if let Event::Log { level, message } = &e {
                        let l = match level {
                            LogLevel::Warn => Level::Warn,
                            LogLevel::Info => Level::Info,
                        };
                        self.messages.push(l, format!("{}: {message}", run.title()));
                    }
                    run.apply(e);
                }
                Vec::new()
            }
            WorkerEvent::Finished(record) => {
                // A result that arrives after a cancel request is kept.
                let se = record
                    .auc
                    .test_interval
                    .as_ref()
                    .map_or(String::new(), |i| format!(" ± {:.4}", i.se));
                let auc = record
                    .auc
                    .test
                    .filter(|a| a.is_finite())
                    .map_or(String::new(), |a| format!(": test AUC {a:.4}{se}"));
                let title = run.title();
                let heard: Vec<String> = run.logs.iter().map(|(_, m)| m.clone()).collect();
                // The record's doubts the live events did not already log.
                let doubts: Vec<String> = record
                    .warnings
                    .iter()
                    .filter(|w| w.code != code::DATA && !heard.contains(&w.message))
                    .map(|w| format!("{title} [{}]: {}", w.code, w.message))
                    .collect();
                let n_doubts = record.warnings.iter().filter(|w| w.casts_doubt()).count();
                // The doubt first: a narrow header cuts the end of the line.
                let mark = if !record.converged {
                    " NOT CONVERGED (m: messages):".to_string()
                } else if n_doubts > 0 {
                    format!(" with {n_doubts} warning(s) (m: messages):")
                } else {
                    String::new()
                };
                let t = format!("{title} finished{mark} in {:.2} s{auc}", record.seconds.fit);
                if !record.histograms.is_empty() {
                    run.histograms = record.histograms.clone();
                }
                run.record = Some(record);
                run.status = RunStatus::Finished;
                for d in doubts {
                    self.messages.push(Level::Warn, d);
                }
                self.say_level(
                    t,
                    if mark.is_empty() {
                        Level::Info
                    } else {
                        Level::Warn
                    },
                );
                self.ended(msg.run)
            }
            WorkerEvent::Failed(e) => {
                let t = format!("{} failed: {e}", run.title());
                run.status = RunStatus::Failed(e);
                self.say(t, true);
                self.ended(msg.run)
            }
            WorkerEvent::Cancelled => {
                let at = run
                    .progress_text()
                    .map_or(String::new(), |p| format!(" at {p}"));
                let t = format!(
                    "{} cancelled{at}: its panes show a partial posterior, not an answer",
                    run.title()
                );
                run.status = RunStatus::Cancelled;
                self.say(t, false);
                self.ended(msg.run)
            }
        }
    }
}

/// Applies a message; returns the side effects to carry out.
pub fn update(app: &mut App, msg: Msg) -> Vec<Command> {
    match msg {
        Msg::Key(k) => app.on_key(k),
        Msg::Worker(w) => app.on_worker(w),
        Msg::Log(m) => app.on_log(m),
        Msg::Backgrounded(result) => {
            match result {
                Ok((log, pid)) => app.say(
                    format!(
                        "started in the background as process {pid}, logging to {} \
                         (it outlives this explorer; pacauc watch {} shows it)",
                        log.display(),
                        log.parent().map_or(".".into(), |d| d.display().to_string())
                    ),
                    false,
                ),
                Err(e) => app.say(format!("could not start in the background: {e}"), true),
            }
            Vec::new()
        }
        Msg::Tick => {
            app.ticks = app.ticks.wrapping_add(1);
            Vec::new()
        }
        Msg::Resize => Vec::new(),
        Msg::Exported { run, result } => {
            match result {
                Ok(path) => {
                    let title = app.run(run).map(|r| r.title()).unwrap_or_default();
                    app.say(format!("exported {title} → {}", path.display()), false);
                    if let Some(r) = app.run_mut(run) {
                        r.file = Some(path);
                    }
                }
                Err(e) => app.say(format!("export failed: {e}"), true),
            }
            Vec::new()
        }
        Msg::Plotted { dir, result } => {
            app.plotted(dir, result);
            Vec::new()
        }
        Msg::StartFailed { run, error } => {
            if let Some(r) = app.run_mut(run) {
                r.status = RunStatus::Failed(error.clone());
            }
            app.say(format!("#{run} could not start: {error}"), true);
            app.ended(run)
        }
    }
}

#[cfg(test)]
mod tests;

#[cfg(test)]
mod plot_tests;
