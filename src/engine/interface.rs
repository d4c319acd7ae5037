//! The one interface of every engine: `run(problem, control, observer) → Fit`.
//! Engines stream `Event`s to an `Observer` and never know who listens; the
//! caller pauses or cancels them through a shared `Control`.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Condvar, Mutex};

pub use super::error::{EngineError, NonConvergence};
use super::event::Event;
use super::fit::Fit;
use super::problem::Problem;

/// Receives an engine's events.
pub trait Observer {
    fn observe(&mut self, event: Event);
}

impl<F: FnMut(Event)> Observer for F {
    fn observe(&mut self, event: Event) {
        self(event)
    }
}

/// Ignores every event.
pub struct NoObserver;

impl Observer for NoObserver {
    fn observe(&mut self, _: Event) {}
}

/// Pause/resume/cancel, shared between the caller and a running engine, which
/// calls `checkpoint` between stages, moves or sweeps.
#[derive(Debug, Default)]
pub struct Control {
    cancelled: AtomicBool,
    paused: Mutex<bool>,
    wake: Condvar,
}

impl Control {
    pub fn new() -> Control {
        Control::default()
    }

    pub fn cancel(&self) {
        self.cancelled.store(true, Ordering::SeqCst);
        let _guard = self.paused.lock().unwrap_or_else(|e| e.into_inner());
        self.wake.notify_all();
    }

    pub fn is_cancelled(&self) -> bool {
        self.cancelled.load(Ordering::SeqCst)
    }

    pub fn set_paused(&self, paused: bool) {
        *self.paused.lock().unwrap_or_else(|e| e.into_inner()) = paused;
        self.wake.notify_all();
    }

    /// Blocks while paused; `Err(Cancelled)` once cancelled.
    pub fn checkpoint(&self) -> Result<(), EngineError> {
        let mut paused = self.paused.lock().unwrap_or_else(|e| e.into_inner());
        while *paused && !self.is_cancelled() {
            paused = self.wake.wait(paused).unwrap_or_else(|e| e.into_inner());
        }
        if self.is_cancelled() {
            Err(EngineError::Cancelled)
        } else {
            Ok(())
        }
    }
}

/// An inference method with its settings.
pub trait Engine: Send + Sync {
    /// Short method name ("smc", "ep", "logit", …) as used on the command line.
    fn name(&self) -> &'static str;

    /// The settings as JSON, for run records.
    fn params(&self) -> serde_json::Value;

    fn run(
        &self,
        problem: &Problem,
        ctl: &Control,
        obs: &mut dyn Observer,
    ) -> Result<Fit, EngineError>;
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::time::Duration;

    #[test]
    fn cancel_wakes_a_paused_engine() {
        let ctl = Arc::new(Control::new());
        ctl.set_paused(true);
        let c2 = Arc::clone(&ctl);
        let h = std::thread::spawn(move || c2.checkpoint());
        std::thread::sleep(Duration::from_millis(20));
        assert!(!h.is_finished(), "checkpoint must block while paused");
        ctl.cancel();
        assert!(matches!(h.join().unwrap(), Err(EngineError::Cancelled)));
    }
}
