//! The terminal front end: terminal guard, input thread, the frame loop (a
//! `select!` over input, the worker's channel and a tick, drawing only when
//! something changed and at most `fps` times a second, keys at once), and the
//! side effects `update` asks for (start, pause, cancel, export).

mod background;
mod follow;
mod input;
mod terminal;
pub mod ui;

pub use follow::watch;

use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crossbeam_channel::{Receiver, Sender, bounded, select};

use crate::app::{App, Command, DataInfo, DataState, Msg, ViewOptions, update};
use crate::engine::data::{Dataset, LoadProgress, Prepared};
use crate::engine::record::{RunRecord, write_atomic_new};
use crate::eventlog::civil_from_days;
use crate::spec::{self, DataSpec, RunSpec};
use crate::worker::{self, CHANNEL_CAPACITY, Job, RunHandle, SNAPSHOT_INTERVAL, WorkerMsg};
use input::Input;
use terminal::TerminalGuard;

pub const INPUT_THREAD: &str = "pacauc-input";
pub const PLOT_THREAD: &str = "pacauc-plot";
/// Log lines applied per wake-up before a frame may be drawn (a long log
/// replays in big gulps, not a frame per line).
const LOG_DRAIN: usize = 1 << 16;

/// Writes every figure as PNG and SVG into `dir` (created if missing), each
/// file atomically; the paths written, or what failed with its path.
fn write_figures(dir: &Path, figures: &[crate::figures::Figure]) -> Result<Vec<PathBuf>, String> {
    std::fs::create_dir_all(dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    let mut out = Vec::new();
    for f in figures {
        out.extend(crate::plot::write(
            f,
            dir,
            &[crate::plot::Format::Png, crate::plot::Format::Svg],
        )?);
    }
    Ok(out)
}

/// How the explorer draws.
#[derive(Debug, Clone)]
pub struct Options {
    pub view: ViewOptions,
    /// Most frames per second (low by default: SSH).
    pub fps: f64,
    /// Folder of exported run records.
    pub export_dir: PathBuf,
    /// Folder of the figures `p` writes (a folder per run inside).
    pub figures_dir: PathBuf,
    /// Appends, per key, the milliseconds from reading it to the end of the
    /// frame that shows its effect (`PACAUC_LATENCY_LOG`; for benchmarks).
    pub latency_log: Option<PathBuf>,
}

/// Refuses to draw a full-screen UI into a pipe or a file.
fn require_terminal() -> Result<(), String> {
    if std::io::stdout().is_terminal() {
        Ok(())
    } else {
        Err("the explorer needs a terminal (stdout is not one). For scripts and pipes use the headless \
             command: pacauc fit DATA.csv [--method …] [--out RUN.json]"
            .into())
    }
}

/// How the explorer ended: `q`, or a termination signal (its number; the
/// process should exit with 128 + it, as after SIGTERM without the explorer).
pub type Ended = Option<i32>;

/// `pacauc explore`: loads the data (a failure is shown in the UI) and, unless
/// `autorun` is false, starts the default runs (`threads`: as asked for, kept
/// in the runs' specs).
pub fn explore(
    data: DataSpec,
    threads: Option<usize>,
    autorun: bool,
    options: Options,
) -> Result<Ended, String> {
    require_terminal()?;
    // A big file takes seconds to minutes: it loads on its own thread while
    // the explorer draws and answers keys.
    let progress = std::sync::Arc::new(LoadProgress::new());
    let state = DataState::Loading {
        path: data.path.display().to_string(),
        bytes: std::fs::metadata(&data.path).ok().map(|m| m.len()),
        since: Instant::now(),
        progress: progress.clone(),
    };
    let (tx, rx) = bounded::<Loaded>(1);
    let spec = data.clone();
    std::thread::Builder::new()
        .name("pacauc-load".into())
        .spawn(move || {
            let t0 = Instant::now();
            let loaded = spec.load_observed(Some(&progress));
            let _ = tx.send(Loaded {
                result: loaded,
                seconds: t0.elapsed().as_secs_f64(),
            });
        })
        .map_err(|e| format!("cannot start the loading thread: {e}"))?;
    let loading = Loading {
        rx,
        spec: data,
        threads,
        autorun,
    };
    let mut app = App::new(state, options.view);
    app.machine = crate::spec::cost::Machine::this();
    run(app, Source::Loading(loading), None, &options)
}

/// What the loading thread sends back.
struct Loaded {
    result: Result<(Dataset, Prepared), String>,
    seconds: f64,
}

/// A file being loaded for the explorer.
struct Loading {
    rx: Receiver<Loaded>,
    spec: DataSpec,
    threads: Option<usize>,
    /// Start the default runs when the data arrives.
    autorun: bool,
}

/// Where the explorer's data comes from.
enum Source {
    Loading(Loading),
    /// Nothing to run engines on (`pacauc replay`, `pacauc watch`).
    None,
}

impl Loading {
    /// The app's state and the session's data once the file is read.
    fn arrived(&self, loaded: Loaded) -> (DataState, Option<SessionData>) {
        match loaded.result {
            Ok((ds, prepared)) => (
                DataState::Loaded(Box::new(DataInfo::of(&ds, &prepared, self.spec.clone()))),
                Some(SessionData {
                    spec: self.spec.clone(),
                    dataset: Arc::new(ds),
                    prepared: Arc::new(prepared),
                    load_s: loaded.seconds,
                    threads: self.threads,
                }),
            ),
            Err(error) => (
                DataState::Failed {
                    path: self.spec.path.display().to_string(),
                    error,
                },
                None,
            ),
        }
    }
}

/// `pacauc replay`: reads run records and shows them.
pub fn replay(files: &[PathBuf], options: Options) -> Result<Ended, String> {
    let mut records = Vec::new();
    for f in files {
        let text = std::fs::read_to_string(f).map_err(|e| format!("{}: {e}", f.display()))?;
        let r = RunRecord::from_json(&text).map_err(|e| format!("{}: {e}", f.display()))?;
        records.push((f.clone(), r));
    }
    require_terminal()?;
    let app = App::replay(records, options.view);
    run(app, Source::None, None, &options)
}

struct SessionData {
    /// How the data were loaded.
    spec: DataSpec,
    dataset: Arc<Dataset>,
    prepared: Arc<Prepared>,
    load_s: f64,
    threads: Option<usize>,
}

impl SessionData {
    /// The split a run's data options ask for: the session's, or another seed's.
    fn prepared_for(&self, data: &DataSpec) -> Result<Arc<Prepared>, String> {
        if *data == self.spec {
            return Ok(Arc::clone(&self.prepared));
        }
        let same_file = DataSpec {
            seed: self.spec.seed,
            test_frac: self.spec.test_frac,
            ..data.clone()
        } == self.spec;
        if !same_file {
            return Err("the run's data options differ from the explorer's".into());
        }
        data.prepare(&self.dataset).map(Arc::new)
    }
}

/// Carries out `Command`s: the engine threads and the files.
struct Session {
    data: Option<SessionData>,
    tx: Sender<WorkerMsg>,
    handles: Vec<RunHandle>,
    export_dir: PathBuf,
    /// Where figure-writing threads report back.
    plotted: Sender<Msg>,
    /// More logs for the follower thread to follow (background runs).
    follow: Sender<PathBuf>,
    /// Background runs started here (waited for, so none lingers as a zombie).
    children: Vec<std::process::Child>,
    threads: Option<usize>,
}

impl Session {
    fn execute(&mut self, app: &App, cmd: Command) -> Option<Msg> {
        self.handles.retain(|h| !h.is_finished());
        self.children
            .retain_mut(|c| matches!(c.try_wait(), Ok(None)));
        match cmd {
            Command::Background { spec } => {
                let result = background::start(&spec, self.threads).map(|(log, child)| {
                    let pid = child.id();
                    self.children.push(child);
                    let _ = self.follow.send(log.clone());
                    (log, pid)
                });
                Some(Msg::Backgrounded(result))
            }
            Command::Start { run, spec } => {
                let Some(data) = &self.data else {
                    return Some(Msg::StartFailed {
                        run,
                        error: "no data loaded".into(),
                    });
                };
                match start(run, *spec, data, self.tx.clone()) {
                    Ok(h) => {
                        self.handles.push(h);
                        None
                    }
                    Err(error) => Some(Msg::StartFailed { run, error }),
                }
            }
            Command::Pause { run, paused } => {
                self.handles
                    .iter()
                    .filter(|h| h.run == run)
                    .for_each(|h| h.set_paused(paused));
                None
            }
            Command::Cancel { run } => {
                self.handles
                    .iter()
                    .filter(|h| h.run == run)
                    .for_each(|h| h.cancel());
                None
            }
            Command::Export { run } => {
                let r = app.run(run)?;
                let record = r.record.as_ref()?;
                let stem = export_stem(&record.method, run);
                let dir = &self.export_dir;
                let result =
                    write_atomic_new(|k| export_path(dir, &stem, k), record.to_json().as_bytes())
                        .map(|path| std::fs::canonicalize(&path).unwrap_or(path))
                        .map_err(|e| format!("{}: {e}", export_path(dir, &stem, 0).display()));
                Some(Msg::Exported { run, result })
            }
            Command::Plot { dir, figures } => {
                let tx = self.plotted.clone();
                let d = dir.clone();
                // resvg rasterises for a while: never on the UI thread.
                let spawned =
                    std::thread::Builder::new()
                        .name(PLOT_THREAD.into())
                        .spawn(move || {
                            let result = write_figures(&d, &figures);
                            let _ = tx.send(Msg::Plotted { dir: d, result });
                        });
                match spawned {
                    Ok(_) => None,
                    Err(e) => Some(Msg::Plotted {
                        dir,
                        result: Err(format!("cannot start a thread: {e}")),
                    }),
                }
            }
        }
    }

    /// Cancels every engine and waits a little for them to stop.
    fn shutdown(self) {
        for h in &self.handles {
            h.cancel();
        }
        let deadline = Instant::now() + Duration::from_secs(2);
        for h in self.handles {
            while !h.is_finished() && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(10));
            }
            if h.is_finished() {
                h.cancel_and_join();
            }
        }
    }
}

/// Builds the run of `spec` on the session's data and starts it on its thread.
fn start(
    run: u64,
    mut spec: RunSpec,
    data: &SessionData,
    tx: Sender<WorkerMsg>,
) -> Result<RunHandle, String> {
    spec.threads = data.threads;
    let prepared = data.prepared_for(&spec.data)?;
    let spec::Built { engine, problem } =
        spec::build(&spec, &prepared).map_err(|e| crate::app::form::render_error(&e))?;
    let job = Job {
        run,
        spec,
        engine,
        problem,
        dataset: Arc::clone(&data.dataset),
        prepared,
        load_seconds: data.load_s,
        snapshot_interval: SNAPSHOT_INTERVAL,
    };
    worker::spawn(job, tx).map_err(|e| format!("cannot start a thread: {e}"))
}

/// The name of an exported record: method, run and the UTC time of export.
fn export_stem(method: &str, run: u64) -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let (y, m, d) = civil_from_days((secs / 86_400) as i64);
    let t = secs % 86_400;
    format!(
        "pacauc-{method}-{run}-{y:04}{m:02}{d:02}-{:02}{:02}{:02}",
        t / 3600,
        t / 60 % 60,
        t % 60
    )
}

/// The `k`-th candidate file for an export (`-2`, `-3`, … when the name is taken).
fn export_path(dir: &Path, stem: &str, k: usize) -> PathBuf {
    match k {
        0 => dir.join(format!("{stem}.json")),
        k => dir.join(format!("{stem}-{}.json", k + 1)),
    }
}

/// Applies a message and carries out the commands it produces (and theirs).
fn dispatch(app: &mut App, session: &mut Session, msg: Msg) {
    let mut pending = vec![msg];
    while let Some(m) = pending.pop() {
        for cmd in update(app, m) {
            if let Some(feedback) = session.execute(app, cmd) {
                pending.push(feedback);
            }
        }
    }
}

fn run(
    mut app: App,
    source: Source,
    follower: Option<crate::eventlog::Follower>,
    options: &Options,
) -> Result<Ended, String> {
    // Exports land here: said up front (status line, help, message log).
    let dir = std::fs::canonicalize(&options.export_dir).unwrap_or(options.export_dir.clone());
    app.announce_exports(dir);
    // Figures land here: absolute, so the status line names the real folder.
    app.figures_dir =
        std::path::absolute(&options.figures_dir).unwrap_or_else(|_| options.figures_dir.clone());
    let (wtx, wrx) = bounded::<WorkerMsg>(CHANNEL_CAPACITY);
    let (ptx, prx) = bounded::<Msg>(16);
    let (ftx, frx) = crossbeam_channel::unbounded::<PathBuf>();
    let (threads, loading) = match source {
        Source::Loading(l) => (l.threads, Some(l)),
        Source::None => (None, None),
    };
    // The explorer reattaches the background runs of its folder still going.
    let follower = match (follower, &loading) {
        (Some(f), _) => Some(f),
        (None, Some(_)) => {
            let live = background::live_runs();
            if !live.is_empty() {
                app.messages.push(
                    crate::app::messages::Level::Info,
                    format!(
                        "{} background run(s) still going in {}/: following them",
                        live.len(),
                        background::RUNS_DIR
                    ),
                );
            }
            Some(crate::eventlog::Follower::new(&live)?)
        }
        (None, None) => None,
    };
    let mut session = Session {
        data: None,
        tx: wtx,
        handles: Vec::new(),
        export_dir: options.export_dir.clone(),
        plotted: ptx,
        follow: ftx,
        children: Vec::new(),
        threads,
    };
    let (mut guard, mut terminal) =
        TerminalGuard::enter().map_err(|e| format!("cannot set up the terminal: {e}"))?;
    let (itx, irx) = bounded::<Input>(64);
    input::spawn_signals(itx.clone()).map_err(|e| format!("cannot watch signals: {e}"))?;
    input::spawn(itx).map_err(|e| format!("cannot start the input thread: {e}"))?;
    let (ltx, lrx) = bounded::<Msg>(CHANNEL_CAPACITY);
    if let Some(f) = follower {
        follow::spawn(f, ltx, frx).map_err(|e| format!("cannot start the log follower: {e}"))?;
    }
    let channels = Channels {
        input: irx,
        worker: wrx,
        plotted: prx,
        logs: lrx,
        loading,
    };
    let result = frame_loop(&mut app, &mut session, &mut terminal, &channels, options);
    guard.leave();
    session.shutdown();
    result
}

/// What the frame loop waits on.
struct Channels {
    input: Receiver<Input>,
    worker: Receiver<WorkerMsg>,
    plotted: Receiver<Msg>,
    /// What followed event logs say.
    logs: Receiver<Msg>,
    /// The explorer's file on its way (`pacauc explore`).
    loading: Option<Loading>,
}

fn frame_loop(
    app: &mut App,
    session: &mut Session,
    terminal: &mut terminal::Term,
    channels: &Channels,
    options: &Options,
) -> Result<Ended, String> {
    let (input, worker) = (&channels.input, &channels.worker);
    let never = crossbeam_channel::never();
    let loaded = channels.loading.as_ref().map_or(&never, |l| &l.rx);
    let frame = Duration::from_secs_f64(1.0 / options.fps.clamp(0.5, 60.0));
    let tick = Duration::from_millis(500);
    let mut dirty = true;
    let mut urgent = true;
    let mut last_draw = Instant::now();
    let mut next_tick = Instant::now() + tick;
    let draw_err = |e: std::io::Error| format!("cannot draw: {e}");
    let mut key_read: Option<Instant> = None;
    let mut latency_log = options.latency_log.as_ref().and_then(|p| {
        std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(p)
            .ok()
    });
    loop {
        if app.quit {
            return Ok(None);
        }
        let now = Instant::now();
        let busy = app.is_busy() || app.watched_live() > 0 || app.is_loading();
        if busy && now >= next_tick {
            update(app, Msg::Tick);
            next_tick = now + tick;
            dirty = true;
        }
        if dirty && (urgent || now >= last_draw + frame) {
            terminal::draw(terminal, |f| ui::render(app, f)).map_err(draw_err)?;
            last_draw = Instant::now();
            dirty = false;
            urgent = false;
            if let (Some(t), Some(log)) = (key_read.take(), latency_log.as_mut()) {
                use std::io::Write;
                let _ = writeln!(
                    log,
                    "{:.3}",
                    last_draw.duration_since(t).as_secs_f64() * 1e3
                );
            }
        }
        let now = Instant::now();
        let mut timeout = Duration::from_secs(3600);
        if dirty {
            timeout = timeout.min((last_draw + frame).saturating_duration_since(now));
        }
        if busy {
            timeout = timeout.min(next_tick.saturating_duration_since(now));
        }
        select! {
            recv(input) -> m => {
                let Ok(m) = m else { return Err("the terminal's input closed".into()) };
                let msg = match m {
                    Input::Key(k, t) => {
                        key_read.get_or_insert(t);
                        Msg::Key(k)
                    }
                    Input::Signal(sig) => return Ok(Some(sig)),
                    Input::Resize => {
                        terminal.autoresize().map_err(draw_err)?;
                        Msg::Resize
                    }
                };
                dispatch(app, session, msg);
                dirty = true;
                urgent = true;
            }
            recv(worker) -> m => {
                if let Ok(m) = m {
                    dispatch(app, session, Msg::Worker(m));
                    // Drain what else is there before drawing once.
                    for m in worker.try_iter().take(CHANNEL_CAPACITY) {
                        dispatch(app, session, Msg::Worker(m));
                    }
                    dirty = true;
                }
            }
            recv(channels.logs) -> m => {
                if let Ok(m) = m {
                    dispatch(app, session, m);
                    for m in channels.logs.try_iter().take(LOG_DRAIN) {
                        dispatch(app, session, m);
                    }
                    dirty = true;
                }
            }
            recv(channels.plotted) -> m => {
                if let Ok(m) = m {
                    dispatch(app, session, m);
                    dirty = true;
                    urgent = true;
                }
            }
            recv(loaded) -> m => {
                if let (Ok(m), Some(l)) = (m, &channels.loading) {
                    let (state, data) = l.arrived(m);
                    session.data = data;
                    let autorun = l.autorun && session.data.is_some();
                    for cmd in app.on_data_loaded(state, autorun) {
                        if let Some(m) = session.execute(app, cmd) {
                            dispatch(app, session, m);
                        }
                    }
                    dirty = true;
                    urgent = true;
                }
            }
            default(timeout) => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn civil_dates() {
        assert_eq!(civil_from_days(0), (1970, 1, 1));
        assert_eq!(civil_from_days(19_723), (2024, 1, 1));
        assert_eq!(civil_from_days(11_016), (2000, 2, 29));
    }

    #[test]
    fn export_paths_never_overwrite() {
        let dir = std::env::temp_dir().join(format!("pacauc-export-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let stem = export_stem("smc", 1);
        assert!(stem.starts_with("pacauc-smc-1-"));
        // Eight writers pick the same name at once: eight whole files.
        let paths: Vec<PathBuf> = std::thread::scope(|s| {
            let handles: Vec<_> = (0..8)
                .map(|i| {
                    let (dir, stem) = (&dir, &stem);
                    s.spawn(move || {
                        let body = format!("{{\"writer\": {i}}}").repeat(1000);
                        write_atomic_new(|k| export_path(dir, stem, k), body.as_bytes()).unwrap()
                    })
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        let mut names: Vec<_> = paths
            .iter()
            .map(|p| p.file_name().unwrap().to_owned())
            .collect();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), 8, "{names:?}");
        for p in &paths {
            let text = std::fs::read_to_string(p).unwrap();
            assert_eq!(text.len() % 1000, 0);
            let unit = &text[..text.len() / 1000];
            assert_eq!(
                text,
                unit.repeat(1000),
                "{}: not one writer's file",
                p.display()
            );
        }
        let left: Vec<_> = std::fs::read_dir(&dir)
            .unwrap()
            .filter_map(|e| e.ok())
            .filter(|e| e.file_name().to_string_lossy().contains(".tmp-"))
            .collect();
        assert!(left.is_empty(), "temporary files left");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
