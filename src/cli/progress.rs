//! Progress lines on stderr (only when stderr is a terminal; engine warnings always).

use std::io::Write;

use super::settings_args::render_message;
use crate::engine::event::LogLevel;
use crate::engine::{Event, Observer};

pub struct Progress {
    enabled: bool,
    open_line: bool,
    /// The events as a record's trace keeps them (for engines without their own).
    pub trace: Vec<Event>,
}

impl Progress {
    pub fn new(enabled: bool) -> Progress {
        Progress {
            enabled,
            open_line: false,
            trace: Vec::new(),
        }
    }

    fn line(&mut self, text: &str, transient: bool) {
        let mut err = std::io::stderr().lock();
        let _ = if transient {
            write!(err, "\r\x1b[2K{text}")
        } else {
            writeln!(
                err,
                "{}{text}",
                if self.open_line { "\r\x1b[2K" } else { "" }
            )
        };
        let _ = err.flush();
        self.open_line = transient;
    }

    /// Ends a pending transient line.
    pub fn finish(&mut self) {
        if self.enabled && self.open_line {
            let _ = writeln!(std::io::stderr());
            self.open_line = false;
        }
    }
}

impl Observer for Progress {
    fn observe(&mut self, event: Event) {
        self.trace.extend(event.for_trace());
        if !self.enabled {
            // Warnings are not progress: a script's stderr log gets them too.
            if let Event::Log {
                level: LogLevel::Warn,
                message,
            } = event
            {
                eprintln!("warning: {}", render_message(&message));
            }
            return;
        }
        match event {
            Event::Started { engine, n, d, pairs, gamma } => {
                self.line(&format!("{engine}: n = {n}, d = {d}, {pairs} pairs, γ = {gamma}"), false)
            }
            Event::SmcStage(s) => self.line(
                &format!(
                    "smc stage {:>3}  γ = {:<10.4}  ESS {:>5.1}%  accept {:>5.1}%  log Z = {:<10.4}  {:.1}s",
                    s.stage,
                    s.gamma,
                    100.0 * s.ess_frac,
                    100.0 * s.acceptance,
                    s.log_z,
                    s.elapsed
                ),
                true,
            ),
            Event::SmcMove(m) => self.line(
                &format!(
                    "smc stage {:>3}  γ = {:<10.4}  moving: step {}  accept {:>5.1}%{}  {:.1}s",
                    m.stage,
                    m.gamma,
                    m.step,
                    100.0 * m.acceptance,
                    m.max_correlation
                        .map_or(String::new(), |c| format!("  max corr {c:.2}")),
                    m.elapsed
                ),
                true,
            ),
            Event::EpSweep(s) => self.line(
                &format!(
                    "ep sweep {:>4}  Δ = {:<10.3e}  η = {:<6.3}  log Z = {}  negative sites {:>5.1}%  {:.2}s",
                    s.sweep,
                    s.delta,
                    s.eta,
                    s.log_z.map_or("-".into(), |z| format!("{z:.4}")),
                    100.0 * s.negative_share,
                    s.elapsed
                ),
                true,
            ),
            Event::VbIter(v) => self.line(
                &format!(
                    "vb iteration {:>5}  F = {:<12.6}{}  ‖∇‖∞ = {:<9.2e}  step {:.3e}  {:.2}s",
                    v.iteration,
                    v.objective,
                    if v.estimate { " (held-out)" } else { "" },
                    v.grad_norm,
                    v.step,
                    v.elapsed
                ),
                true,
            ),
            Event::Log { level, message } => {
                let tag = if level == LogLevel::Warn { "warning: " } else { "" };
                self.line(&format!("{tag}{}", render_message(&message)), false)
            }
        }
    }
}
