//! `pacauc watch FILE… | DIR`: follow event logs (`fit --events`) in the
//! explorer, or `--once` print each run's state as plain text for scripts.

use std::path::PathBuf;

use clap::Args;

use super::explore::ViewArgs;
use super::fit::CliError;
use super::progress::{duration, smc_seconds_left};
use crate::app::run_view::{RunStatus, RunView};
use crate::app::{App, Msg, ViewOptions, update};
use crate::engine::event::LogLevel;
use crate::eventlog::{Follower, now_utc};
use crate::tui;

#[derive(Debug, Clone, Args)]
pub struct WatchArgs {
    /// Event logs written by `pacauc fit --events FILE`, or folders of them
    /// (`*.jsonl`, new ones picked up as they appear).
    #[arg(required = true, value_name = "FILE|DIR")]
    pub paths: Vec<PathBuf>,
    /// Print each run's state once as plain text and exit (for scripts).
    #[arg(long)]
    pub once: bool,
    #[command(flatten)]
    pub view: ViewArgs,
}

pub fn run(args: &WatchArgs) -> Result<(), CliError> {
    if args.once {
        let text = once(&args.paths)?;
        print!("{text}");
        return Ok(());
    }
    let options = args.view.options().map_err(CliError::Input)?;
    let ended = tui::watch(&args.paths, options).map_err(CliError::Input)?;
    match ended {
        Some(sig) => std::process::exit(super::signal_status(sig).into()),
        None => Ok(()),
    }
}

/// Reads the logs as they are now, through the explorer's own state, and
/// describes every run (problems in the logs go to stderr).
pub fn once(paths: &[PathBuf]) -> Result<String, CliError> {
    for p in paths {
        if !p.exists() {
            return Err(CliError::Input(format!("{}: no such file", p.display())));
        }
    }
    let mut follower = Follower::new(paths).map_err(CliError::Input)?;
    let mut app = App::watching(ViewOptions::default());
    // Until a poll reads nothing new: that one asks whether open runs' writers live.
    loop {
        let msgs = follower.poll();
        if msgs.is_empty() {
            break;
        }
        for m in msgs {
            if let crate::eventlog::LogEntry::Problem(p) = &m.entry {
                eprintln!("warning: {p}");
            }
            update(&mut app, Msg::Log(m));
        }
    }
    let mut out = String::new();
    for f in follower.waiting() {
        out.push_str(&format!("{}: no run yet\n", f.display()));
    }
    for r in &app.runs {
        out.push_str(&describe(r));
    }
    Ok(out)
}

/// One run: "#1 smc  r.jsonl  running  stage 12, γ 45.3 of 449 …", then its warnings.
pub fn describe(r: &RunView) -> String {
    let file = r
        .file
        .as_ref()
        .map_or(String::new(), |f| f.display().to_string());
    let mut parts = vec![format!("{}  {file}  {}", r.title(), r.status.word())];
    let gamma_t = r.start.as_ref().map(|s| s.gamma);
    let latest = r.latest();
    if let Some(s) = latest.smc {
        let of = gamma_t.map_or(String::new(), |g| format!(" of {g}"));
        parts.push(format!(
            "stage {}  γ {:.4}{of}  ESS {:.1}%  log Z {:.4}",
            s.stage,
            s.gamma,
            100.0 * s.ess_frac,
            s.log_z
        ));
    } else if let Some(e) = latest.ep {
        let z = e.log_z.map_or("-".into(), |z| format!("{z:.4}"));
        parts.push(format!("sweep {}  Δ {:.3e}  log Z {z}", e.sweep, e.delta));
    } else if let Some(g) = latest.gcs {
        let rhat = g.rhat.map_or("-".into(), |x| format!("{x:.4}"));
        parts.push(format!("step {}  draws {}  R-hat {rhat}", g.steps, g.draws));
    } else if let Some(v) = latest.vb {
        parts.push(format!("iteration {}  F {:.6}", v.iteration, v.objective));
    }
    if let Some(rec) = &r.record {
        if let Some(a) = rec.auc.test.filter(|a| a.is_finite()) {
            parts.push(format!("test AUC {a:.4}"));
        }
        if !rec.converged {
            parts.push("NOT CONVERGED".into());
        }
    }
    let elapsed = match (&r.record, &r.origin) {
        (Some(rec), _) => Some(rec.seconds.fit),
        (None, Some(o)) if r.status.is_live() => Some(now_utc().1 - o.started_unix),
        _ => r.elapsed(),
    };
    if let Some(e) = elapsed {
        parts.push(format!("elapsed {}", duration(e.max(0.0))));
    }
    if r.status.is_live()
        && let Some(left) = smc_left(r)
    {
        parts.push(format!("~{} left", duration(left)));
    }
    let mut text = parts.join("  ");
    text.push('\n');
    let mut warnings: Vec<String> = r
        .logs
        .iter()
        .filter(|(l, _)| *l == LogLevel::Warn)
        .map(|(_, m)| m.clone())
        .collect();
    for d in r.doubts() {
        if !warnings.contains(&d.message) {
            warnings.push(format!("[{}] {}", d.code, d.message));
        }
    }
    match &r.status {
        RunStatus::Interrupted(why) => {
            let at = r
                .progress_text()
                .map_or(String::new(), |p| format!(" at {p}"));
            text.push_str(&format!(
                "  interrupted{at}: {why}; the numbers above are a partial posterior\n"
            ));
        }
        RunStatus::Failed(e) => text.push_str(&format!("  failed: {e}\n")),
        _ => {}
    }
    for w in warnings {
        text.push_str(&format!("  warning: {w}\n"));
    }
    text
}

/// SMC's time left from its last two stages' γ.
fn smc_left(r: &RunView) -> Option<f64> {
    let mut it = r.smc.iter().rev();
    let (s, prev) = (it.next()?, it.next()?);
    smc_seconds_left(
        prev.gamma,
        s.gamma,
        r.start.as_ref()?.gamma,
        s.stage,
        s.elapsed,
    )
}
