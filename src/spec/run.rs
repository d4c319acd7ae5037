//! One run from a spec to its record — build, run, evaluate, record — the
//! path every headless front end shares: `pacauc fit`, `pacauc merge`, the
//! protocol's runs and the Python package call this, so the same spec on the
//! same data gives the same record whichever of them ran it.

use std::time::Instant;

use crate::engine::data::{Dataset, Prepared};
use crate::engine::event::LogLevel;
use crate::engine::record::{RunRecord, Seconds};
use crate::engine::{Control, Engine, EngineError, Event, Fit, Observer, Problem};

use super::RunSpec;

/// Runs `engine` on `problem` and makes the record of `spec` on the loaded
/// data. `obs` sees every event; the record's trace keeps what
/// `Event::for_trace` keeps (for engines that do not return their own).
/// `load_seconds`: the time spent loading (the record's `seconds.load`).
pub fn record(
    spec: &RunSpec,
    data: (&Dataset, &Prepared),
    engine: &dyn Engine,
    problem: &Problem,
    ctl: &Control,
    obs: &mut dyn Observer,
    load_seconds: f64,
) -> Result<RunRecord, EngineError> {
    let (ds, prepared) = data;
    let mut trace: Vec<Event> = Vec::new();
    for message in super::ep_spec::retired_warnings(spec) {
        obs.observe(warn(message));
    }
    let t1 = Instant::now();
    let mut fit = {
        let mut recording = |e: Event| {
            trace.extend(e.for_trace());
            obs.observe(e);
        };
        engine.run(problem, ctl, &mut recording)?
    };
    if fit.trace.is_empty() {
        fit.trace = trace;
    }
    note_spec_warnings(spec, &mut fit);
    let fit_s = t1.elapsed().as_secs_f64();
    let seconds = Seconds {
        load: load_seconds,
        fit: fit_s,
        total: load_seconds + fit_s,
    };
    Ok(RunRecord::new(
        ds,
        prepared,
        &fit,
        spec.to_value(),
        engine.params(),
        seconds,
    ))
}

/// The spec's own warnings (`ep_spec::retired_warnings`) first in `fit`'s
/// trace, where the record reads its warnings from.
pub fn note_spec_warnings(spec: &RunSpec, fit: &mut Fit) {
    let notes = super::ep_spec::retired_warnings(spec).into_iter().map(warn);
    fit.trace.splice(0..0, notes);
}

fn warn(message: String) -> Event {
    Event::Log {
        level: LogLevel::Warn,
        message,
    }
}
