//! `pacauc explore` (the default command) and `pacauc replay`: the terminal explorer.

use std::path::PathBuf;

use clap::{Args, ValueEnum};

use super::fit::CliError;
use super::settings_args::{DataOnly, SettingArgs};
use crate::app::{MarkerKind, ViewOptions};
use crate::spec;
use crate::tui::{self, Options};

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum MarkerArg {
    /// Braille dots: the finest curves.
    Braille,
    /// One dot per cell: for fonts without braille.
    Dot,
    /// Full blocks.
    Block,
}

#[derive(Debug, Clone, Args)]
pub struct ViewArgs {
    /// No colours (also when the NO_COLOR environment variable is set).
    #[arg(long)]
    pub no_color: bool,
    /// Chart marker.
    #[arg(long, value_enum, default_value = "braille")]
    pub marker: MarkerArg,
    /// Most frames per second (keys are answered at once whatever this is).
    #[arg(long, default_value_t = 10.0, value_name = "N")]
    pub fps: f64,
    /// Folder where `e` writes run records.
    #[arg(long, default_value = ".", value_name = "DIR")]
    pub export_dir: PathBuf,
    /// Folder where `p` writes figures (PNG and SVG), one folder per run in it
    /// (created when `p` is first pressed).
    #[arg(long, default_value = crate::app::DEFAULT_FIGURES_DIR, value_name = "DIR")]
    pub figures_dir: PathBuf,
}

impl ViewArgs {
    pub fn defaults() -> ViewArgs {
        ViewArgs {
            no_color: false,
            marker: MarkerArg::Braille,
            fps: 10.0,
            export_dir: PathBuf::from("."),
            figures_dir: PathBuf::from(crate::app::DEFAULT_FIGURES_DIR),
        }
    }

    pub fn options(&self) -> Result<Options, String> {
        if !(self.fps.is_finite() && self.fps > 0.0) {
            return Err(format!("--fps must be a positive number; got {}", self.fps));
        }
        // Where `e` writes: checked now, not when the first export fails.
        let probe = self.export_dir.join("pacauc-export");
        crate::engine::record::check_writable(&probe).map_err(|e| {
            format!(
                "--export-dir {}: cannot write run records there: {e}",
                self.export_dir.display()
            )
        })?;
        let no_color_env = std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty());
        Ok(Options {
            view: ViewOptions {
                color: !(self.no_color || no_color_env),
                marker: match self.marker {
                    MarkerArg::Braille => MarkerKind::Braille,
                    MarkerArg::Dot => MarkerKind::Dot,
                    MarkerArg::Block => MarkerKind::Block,
                },
            },
            fps: self.fps,
            export_dir: self.export_dir.clone(),
            figures_dir: self.figures_dir.clone(),
            latency_log: std::env::var_os("PACAUC_LATENCY_LOG").map(PathBuf::from),
        })
    }
}

#[derive(Debug, Clone, Args)]
pub struct ExploreArgs {
    /// CSV file with a header row; the target is the last column unless --target.
    pub data: PathBuf,
    #[command(flatten)]
    pub settings: SettingArgs<DataOnly>,
    /// Do not start the default runs (EP then SMC) on start.
    #[arg(long)]
    pub no_autorun: bool,
    #[command(flatten)]
    pub view: ViewArgs,
}

#[derive(Debug, Clone, Args)]
pub struct ReplayArgs {
    /// Run records written by the explorer (`e`) or by `pacauc fit --out`.
    #[arg(required = true, value_name = "RUN.json")]
    pub files: Vec<PathBuf>,
    #[command(flatten)]
    pub view: ViewArgs,
}

pub fn explore(args: &ExploreArgs, threads: Option<usize>) -> Result<(), CliError> {
    // The data options checked as a run's (its method is the form's to choose).
    let spec = spec::from_given(args.data.clone(), "logit", &args.settings.pairs())?;
    let options = args.view.options().map_err(CliError::Input)?;
    ended(tui::explore(spec.data, threads, !args.no_autorun, options))
}

pub fn replay(args: &ReplayArgs) -> Result<(), CliError> {
    let options = args.view.options().map_err(CliError::Input)?;
    ended(tui::replay(&args.files, options))
}

/// A signal that ended the explorer becomes the exit status 128 + signal, as
/// for `fit` (the terminal is restored and the engines stopped by now).
fn ended(r: Result<tui::Ended, String>) -> Result<(), CliError> {
    match r.map_err(CliError::Input)? {
        Some(sig) => std::process::exit(super::signal_status(sig).into()),
        None => Ok(()),
    }
}
