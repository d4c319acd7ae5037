//! Runs an engine on a named thread and forwards its events over a bounded
//! crossbeam channel with `try_send`: the sampler never blocks on the UI. Every
//! message carries the run's id so the UI can ignore stale runs; particle
//! histograms are throttled; `Finished`/`Failed`/`Cancelled` are always
//! delivered (with a blocking send: the run is over, blocking cannot slow it).

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crossbeam_channel::{Sender, TrySendError};

use crate::engine::data::{Dataset, Prepared};
use crate::engine::event::Histogram;
use crate::engine::record::{RunRecord, Seconds};
use crate::engine::{Control, Engine, EngineError, Event, Observer, Problem};
use crate::spec::RunSpec;

pub type RunId = u64;

/// Capacity of the worker → UI channel (events beyond it are dropped, not waited for).
pub const CHANNEL_CAPACITY: usize = 1024;
/// At most one histogram snapshot per this interval (~7 per second).
pub const SNAPSHOT_INTERVAL: Duration = Duration::from_millis(150);
/// Prefix of the names of engine threads (the panic hook recognises them).
pub const THREAD_PREFIX: &str = "pacauc-run-";

#[derive(Debug)]
pub enum WorkerEvent {
    Event(Event),
    /// The run's record (AUCs and ROC curves computed on the worker thread).
    Finished(Box<RunRecord>),
    Failed(String),
    Cancelled,
}

#[derive(Debug)]
pub struct WorkerMsg {
    pub run: RunId,
    pub event: WorkerEvent,
}

/// Forwards events to the UI and keeps the full trace (without histograms) for
/// the run record, whatever the channel dropped.
pub struct ChannelObserver {
    run: RunId,
    tx: Sender<WorkerMsg>,
    interval: Duration,
    last_snapshot: Option<Instant>,
    trace: Vec<Event>,
    /// Events the channel had no room for.
    pub dropped: usize,
}

impl ChannelObserver {
    pub fn new(run: RunId, tx: Sender<WorkerMsg>, interval: Duration) -> ChannelObserver {
        ChannelObserver {
            run,
            tx,
            interval,
            last_snapshot: None,
            trace: Vec::new(),
            dropped: 0,
        }
    }

    pub fn into_trace(self) -> Vec<Event> {
        self.trace
    }
}

impl Observer for ChannelObserver {
    fn observe(&mut self, mut event: Event) {
        let mut snapshot: Vec<Histogram> = Vec::new();
        if let Event::SmcStage(s) = &mut event {
            snapshot = std::mem::take(&mut s.histograms);
        }
        self.trace.extend(event.for_trace());
        if !snapshot.is_empty() {
            let now = Instant::now();
            let due = self
                .last_snapshot
                .is_none_or(|t| now.duration_since(t) >= self.interval);
            if due {
                self.last_snapshot = Some(now);
                if let Event::SmcStage(s) = &mut event {
                    s.histograms = snapshot;
                }
            }
        }
        let msg = WorkerMsg {
            run: self.run,
            event: WorkerEvent::Event(event),
        };
        match self.tx.try_send(msg) {
            Ok(()) => {}
            Err(TrySendError::Full(_)) => self.dropped += 1,
            // The UI has gone: nothing to tell.
            Err(TrySendError::Disconnected(_)) => {}
        }
    }
}

/// One run for the worker.
pub struct Job {
    pub run: RunId,
    /// What runs (stored in the record).
    pub spec: RunSpec,
    pub engine: Box<dyn Engine>,
    pub problem: Problem,
    pub dataset: Arc<Dataset>,
    pub prepared: Arc<Prepared>,
    pub load_seconds: f64,
    pub snapshot_interval: Duration,
}

/// A running engine: pause, resume, cancel.
pub struct RunHandle {
    pub run: RunId,
    control: Arc<Control>,
    thread: Option<JoinHandle<()>>,
}

impl RunHandle {
    pub fn set_paused(&self, paused: bool) {
        self.control.set_paused(paused);
    }

    pub fn cancel(&self) {
        self.control.cancel();
    }

    pub fn is_finished(&self) -> bool {
        self.thread.as_ref().is_none_or(|t| t.is_finished())
    }

    /// Cancels and waits for the thread (used at exit).
    pub fn cancel_and_join(mut self) {
        self.control.cancel();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn panic_text(payload: &(dyn std::any::Any + Send)) -> String {
    payload
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "unknown panic".into())
}

/// Starts `job` on a thread named `pacauc-run-<id>`.
pub fn spawn(job: Job, tx: Sender<WorkerMsg>) -> std::io::Result<RunHandle> {
    let control = Arc::new(Control::new());
    let ctl = Arc::clone(&control);
    let run = job.run;
    let thread = std::thread::Builder::new()
        .name(format!("{THREAD_PREFIX}{run}"))
        .spawn(move || {
            let event = execute(job, &ctl, tx.clone());
            // Blocking send: the UI drains continuously; an error means it has quit.
            let _ = tx.send(WorkerMsg { run, event });
        })?;
    Ok(RunHandle {
        run,
        control,
        thread: Some(thread),
    })
}

/// Runs the engine and turns its outcome into the final message.
fn execute(job: Job, ctl: &Control, tx: Sender<WorkerMsg>) -> WorkerEvent {
    let mut obs = ChannelObserver::new(job.run, tx, job.snapshot_interval);
    let t0 = Instant::now();
    let result = catch_unwind(AssertUnwindSafe(|| {
        job.engine.run(&job.problem, ctl, &mut obs)
    }));
    let fit_s = t0.elapsed().as_secs_f64();
    match result {
        Ok(Ok(mut fit)) => {
            if fit.trace.is_empty() {
                fit.trace = obs.into_trace();
            }
            crate::spec::run::note_spec_warnings(&job.spec, &mut fit);
            let seconds = Seconds {
                load: job.load_seconds,
                fit: fit_s,
                total: job.load_seconds + fit_s,
            };
            let record = catch_unwind(AssertUnwindSafe(|| {
                RunRecord::new(
                    &job.dataset,
                    &job.prepared,
                    &fit,
                    job.spec.to_value(),
                    job.engine.params(),
                    seconds,
                )
            }));
            match record {
                Ok(r) => WorkerEvent::Finished(Box::new(r)),
                Err(p) => {
                    WorkerEvent::Failed(format!("evaluating the fit panicked: {}", panic_text(&*p)))
                }
            }
        }
        Ok(Err(EngineError::Cancelled)) => WorkerEvent::Cancelled,
        Ok(Err(e)) => WorkerEvent::Failed(e.to_string()),
        Err(p) => WorkerEvent::Failed(format!("the engine panicked: {}", panic_text(&*p))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::event::SmcStage;
    use crossbeam_channel::bounded;

    fn stage(i: usize, with_hist: bool) -> Event {
        Event::SmcStage(SmcStage {
            stage: i,
            gamma: i as f64,
            ess_frac: 0.5,
            acceptance: 0.3,
            scale: 1.0,
            moves: 5,
            max_correlation: Some(0.05),
            log_z: -1.0,
            mean: vec![0.0],
            sd: vec![1.0],
            mean_risk: 0.2,
            risk_sd: None,
            evaluations: 10,
            elapsed: 0.1,
            histograms: if with_hist {
                vec![Histogram::of(&[0.0, 1.0], None, 4)]
            } else {
                Vec::new()
            },
            inclusion: None,
        })
    }

    #[test]
    fn full_channel_drops_instead_of_blocking_and_keeps_the_trace() {
        let (tx, rx) = bounded(2);
        let mut obs = ChannelObserver::new(7, tx, Duration::ZERO);
        for i in 0..5 {
            obs.observe(stage(i, false));
        }
        assert_eq!(obs.dropped, 3);
        assert_eq!(rx.len(), 2);
        assert!(rx.try_iter().all(|m| m.run == 7));
        assert_eq!(obs.into_trace().len(), 5);
    }

    #[test]
    fn snapshots_are_throttled_and_never_in_the_trace() {
        let (tx, rx) = bounded(100);
        let mut obs = ChannelObserver::new(1, tx, Duration::from_secs(3600));
        for i in 0..4 {
            obs.observe(stage(i, true));
        }
        let with: Vec<bool> = rx
            .try_iter()
            .map(|m| match m.event {
                WorkerEvent::Event(Event::SmcStage(s)) => !s.histograms.is_empty(),
                _ => panic!(),
            })
            .collect();
        assert_eq!(with, vec![true, false, false, false]);
        assert!(obs.into_trace().iter().all(|e| match e {
            Event::SmcStage(s) => s.histograms.is_empty(),
            _ => true,
        }));
    }
}
