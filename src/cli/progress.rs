//! Progress on stderr: when it is a terminal, one line rewritten in place (the
//! SMC stage and γ with an estimate of the time left, the EP sweep and Δ, the
//! cross-validation's fold) with the elapsed time; warnings always, each once,
//! on lines of their own (a script's stderr log gets them too).

use std::collections::HashSet;
use std::io::Write;
use std::time::Instant;

use super::settings_args::render_message;
use super::table::sig;
use crate::engine::event::LogLevel;
use crate::engine::{Event, Observer};

pub struct Progress {
    enabled: bool,
    open_line: bool,
    start: Instant,
    /// Warnings already printed (the record's are printed at the end, once).
    printed: HashSet<String>,
    /// γ of the previous SMC stage (for the estimate of the stages left).
    last_gamma: Option<f64>,
    /// γ_T of the run.
    target_gamma: Option<f64>,
}

/// Seconds left of an SMC run at stage `stage` (γ_prev → γ after `elapsed`
/// seconds): tempering raises γ by a roughly constant factor per stage, so the
/// stages left are log(γ_T/γ)/log(γ/γ_prev), each taking the stages' mean time.
pub fn smc_seconds_left(
    gamma_prev: f64,
    gamma: f64,
    gamma_t: f64,
    stage: usize,
    elapsed: f64,
) -> Option<f64> {
    if !(gamma_prev > 0.0 && gamma > gamma_prev && gamma_t >= gamma && stage > 0) {
        return None;
    }
    let left = (gamma_t / gamma).ln() / (gamma / gamma_prev).ln();
    let per_stage = elapsed / stage as f64;
    Some(left.ceil() * per_stage).filter(|s| s.is_finite())
}

/// "12s", "3m05s".
pub fn duration(s: f64) -> String {
    if s < 60.0 {
        format!("{s:.0}s")
    } else {
        format!("{}m{:02.0}s", (s / 60.0).floor(), s % 60.0)
    }
}

/// Whether an information line is the cross-validation's per-point progress
/// (shown in place, not kept on screen).
fn is_cv_step(message: &str) -> bool {
    message.contains("fold ") && message.contains("held-out AUC")
}

impl Progress {
    pub fn new(enabled: bool) -> Progress {
        Progress {
            enabled,
            open_line: false,
            start: Instant::now(),
            printed: HashSet::new(),
            last_gamma: None,
            target_gamma: None,
        }
    }

    fn line(&mut self, text: &str, transient: bool) {
        let mut err = std::io::stderr().lock();
        let clear = if self.open_line { "\r\x1b[2K" } else { "" };
        let _ = if transient {
            let t = duration(self.start.elapsed().as_secs_f64());
            write!(err, "{clear}[{t:>6}] {text}")
        } else {
            writeln!(err, "{clear}{text}")
        };
        let _ = err.flush();
        self.open_line = transient;
    }

    /// Prints a warning unless it was printed already.
    pub fn warn(&mut self, message: &str) {
        self.warn_coded(None, message)
    }

    /// Prints a warning with its record code (`warning [code]: …`) unless it
    /// was printed already.
    pub fn warn_coded(&mut self, code: Option<&str>, message: &str) {
        if self.printed.insert(message.to_string()) {
            let tag = code.map_or(String::new(), |c| format!(" [{c}]"));
            let text = format!("warning{tag}: {}", render_message(message));
            if self.enabled {
                self.line(&text, false);
            } else {
                eprintln!("{text}");
            }
        }
    }

    /// Ends a pending transient line.
    pub fn finish(&mut self) {
        if self.enabled && self.open_line {
            let _ = write!(std::io::stderr(), "\r\x1b[2K");
            self.open_line = false;
        }
    }
}

impl Observer for Progress {
    fn observe(&mut self, event: Event) {
        if let Event::Log {
            level: LogLevel::Warn,
            message,
        } = &event
        {
            self.warn(message);
            return;
        }
        if !self.enabled {
            return;
        }
        match event {
            Event::Started {
                engine,
                n,
                d,
                pairs,
                gamma,
            } => {
                self.target_gamma = gamma.is_finite().then_some(gamma);
                self.line(&started_line(&engine, n, d, pairs, gamma), false)
            }
            Event::SmcStage(s) => {
                let left = self.last_gamma.and_then(|g| {
                    smc_seconds_left(g, s.gamma, self.target_gamma?, s.stage, s.elapsed)
                });
                self.last_gamma = Some(s.gamma);
                let of = self
                    .target_gamma
                    .map_or(String::new(), |g| format!(" of {}", sig(g, 4)));
                self.line(
                    &format!(
                        "smc stage {:>3}  γ {:.4}{of}  ESS {:>5.1}%  accept {:>5.1}%  {} moves  log Z {:.4}{}",
                        s.stage,
                        s.gamma,
                        100.0 * s.ess_frac,
                        100.0 * s.acceptance,
                        s.moves,
                        s.log_z,
                        left.map_or(String::new(), |l| format!("  ~{} left", duration(l)))
                    ),
                    true,
                )
            }
            Event::SmcRun { run, runs, seed } => {
                // Each run tempers from γ = 0 again.
                self.last_gamma = None;
                self.line(&format!("smc run {run} of {runs} (seed {seed})"), false)
            }
            Event::SmcMove(m) => self.line(
                &format!(
                    "smc stage {:>3}  γ {:.4}  moving: step {}  accept {:>5.1}%{}",
                    m.stage,
                    m.gamma,
                    m.step,
                    100.0 * m.acceptance,
                    m.max_correlation.map_or(String::new(), |c| format!(
                        "  max |corr| {c:.2} (stops ≤ 0.1)"
                    )),
                ),
                true,
            ),
            Event::EpSweep(s) => self.line(
                &format!(
                    "ep sweep {:>4}  Δ {:<10.3e} η {:<6.3} log Z {}  negative sites {:>5.1}%",
                    s.sweep,
                    s.delta,
                    s.eta,
                    s.log_z.map_or("-".into(), |z| format!("{z:.4}")),
                    100.0 * s.negative_share,
                ),
                true,
            ),
            Event::GcsBatch(b) => self.line(
                &format!(
                    "gcs step {:>7}{}  draws {:>7}  R-hat {}  ESS bulk {}  tail {}  proposals/step {:.2}  {:.1}s",
                    b.steps,
                    if b.steps <= b.warmup { " (warm-up)" } else { "" },
                    b.draws,
                    b.rhat.map_or("-".into(), |r| format!("{r:.4}")),
                    b.ess_bulk.map_or("-".into(), |e| format!("{e:.0}")),
                    b.ess_tail.map_or("-".into(), |e| format!("{e:.0}")),
                    b.proposals.iter().sum::<f64>() / b.proposals.len().max(1) as f64,
                    b.elapsed
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
            Event::Log { message, .. } => {
                let text = render_message(&message);
                self.line(&text, is_cv_step(&message))
            }
        }
    }
}

/// A run's first line; γ NaN is one cross-validation has yet to choose.
fn started_line(engine: &str, n: usize, d: usize, pairs: usize, gamma: f64) -> String {
    let gamma = if gamma.is_finite() {
        format!("γ = {}", sig(gamma, 4))
    } else {
        "γ: choosing by CV…".into()
    };
    format!("{engine}: n = {n}, d = {d}, {pairs} pairs, {gamma}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gamma_is_announced_once_known() {
        assert_eq!(
            started_line("ep", 750, 20, 113400, 750.0),
            "ep: n = 750, d = 20, 113400 pairs, γ = 750"
        );
        assert_eq!(
            started_line("smc", 750, 20, 113400, f64::NAN),
            "smc: n = 750, d = 20, 113400 pairs, γ: choosing by CV…"
        );
    }

    /// γ doubling per stage from 1 to γ_T = 64 after stage 1 (γ 1 → 2, 1 s a
    /// stage): five stages left.
    #[test]
    fn smc_estimates_the_stages_left_from_the_growth_of_gamma() {
        assert_eq!(smc_seconds_left(1.0, 2.0, 64.0, 1, 1.0), Some(5.0));
        assert_eq!(smc_seconds_left(32.0, 64.0, 64.0, 6, 6.0), Some(0.0));
        assert_eq!(smc_seconds_left(0.0, 2.0, 64.0, 1, 1.0), None);
        assert_eq!(duration(185.0), "3m05s");
        assert!(is_cv_step(
            "ep cv: fold 2/5, γ = 1n: held-out AUC 0.8 (30 sweeps)"
        ));
        assert!(!is_cv_step("ep: γ = 0.5n = 199.5 by 5-fold CV"));
    }
}
