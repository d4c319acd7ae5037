//! Where an EP run's events go: streamed to the observer and kept for the
//! fit's trace (every flavour's, below them all).

use crate::engine::event::{Event, LogLevel};
use crate::engine::interface::Observer;

/// Most coefficients whose per-sweep means and sds are kept in the fit's trace
/// (the observer always gets them all; GP-EP's score moments go to neither
/// above it: up to `EXACT_MAX_ROWS` of them a sweep).
pub(crate) const TRACE_MOMENTS_MAX_D: usize = 200;
/// Streams events to the observer and keeps them for the fit's trace.
pub(crate) struct Sink<'a> {
    pub(crate) obs: &'a mut dyn Observer,
    pub(crate) trace: Vec<Event>,
    /// Sweeps before this index belong to earlier EP runs (ARD iterations).
    pub(crate) kept_from: usize,
}

impl<'a> Sink<'a> {
    pub(crate) fn new(obs: &'a mut dyn Observer) -> Sink<'a> {
        Sink {
            obs,
            trace: Vec::new(),
            kept_from: 0,
        }
    }

    pub(crate) fn info(&mut self, message: String) {
        self.emit(Event::Log {
            level: LogLevel::Info,
            message,
        });
    }

    pub(crate) fn warn(&mut self, message: String) {
        self.emit(Event::Log {
            level: LogLevel::Warn,
            message,
        });
    }

    /// The warning of a run that skipped near-identical pairs.
    pub(crate) fn warn_skipped(&mut self, prefix: &str, skipped: usize) {
        if skipped > 0 {
            self.warn(format!(
                "{prefix}: {skipped} near-identical pairs were skipped; log Z_EP is not reported"
            ));
        }
    }

    pub(crate) fn emit(&mut self, e: Event) {
        let mut kept = e.clone();
        if let Event::EpSweep(s) = &mut kept
            && s.mean.len() > TRACE_MOMENTS_MAX_D
        {
            s.mean.clear();
            s.sd.clear();
        }
        self.trace.push(kept);
        self.obs.observe(e);
    }

    /// Strips the moments (means, sds, inclusion) of the sweep events of EP runs
    /// before the current one (ARD iterations, spike-and-slab tuning): the
    /// record keeps every sweep's Δ, log Z and η — a replay shows the sweeps the
    /// live view showed — and the moments of the final run only.
    pub(crate) fn drop_earlier_sweeps(&mut self) {
        for e in &mut self.trace[..self.kept_from] {
            if let Event::EpSweep(s) = e {
                s.mean = Vec::new();
                s.sd = Vec::new();
                s.inclusion = None;
            }
        }
        self.kept_from = self.trace.len();
    }
}
