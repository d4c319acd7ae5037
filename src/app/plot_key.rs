//! `p`: the figures of the selected run (or of the marked runs, together)
//! computed here from what the explorer holds, written by the terminal loop
//! on a background thread (`Command::Plot`), the files or the error reported
//! back (`Msg::Plotted`) on the status line.

use std::path::PathBuf;

use super::messages::Level;
use super::run_figures::figures_of;
use super::run_view::{RunStatus, RunView};
use super::{App, Command};

/// A file-name-safe word: lower-case letters and digits, dashes between.
fn slug(s: &str) -> String {
    let mut out = String::new();
    for c in s.chars() {
        if c.is_ascii_alphanumeric() {
            out.push(c.to_ascii_lowercase());
        } else if !out.is_empty() && !out.ends_with('-') {
            out.push('-');
        }
    }
    out.trim_end_matches('-').to_string()
}

impl App {
    /// `x`: marks or unmarks the selected run.
    pub(super) fn toggle_mark(&mut self) {
        let Some(r) = self.selected_run() else {
            self.say("no run selected", true);
            return;
        };
        let (id, title) = (r.id, r.title());
        if let Some(i) = self.marked.iter().position(|&m| m == id) {
            self.marked.remove(i);
            self.say(
                format!("{title} unmarked ({} marked)", self.marked.len()),
                false,
            );
        } else {
            self.marked.push(id);
            self.say(
                format!(
                    "{title} marked: p draws the {} marked run(s) together",
                    self.marked.len()
                ),
                false,
            );
        }
    }

    /// The runs `p` draws: the marked ones (in table order), else the selected one.
    fn plot_runs(&self) -> Vec<&RunView> {
        if self.marked.is_empty() {
            return self.selected_run().into_iter().collect();
        }
        self.runs
            .iter()
            .filter(|r| self.marked.contains(&r.id))
            .collect()
    }

    /// The folder of one `p`: `<data>-<method>-<run>` (several runs:
    /// `<data>-runs-<a>-<b>…`), in the figures folder. Pressing `p` again
    /// rewrites the same files (a live run's figures grow up to the result).
    fn plot_folder(&self, runs: &[&RunView]) -> PathBuf {
        let data = self
            .data_info()
            .map(|d| crate::figures::file_name(&d.report.path))
            .map(|f| slug(f.strip_suffix(".csv").unwrap_or(&f)))
            .filter(|s| !s.is_empty())
            .unwrap_or_else(|| "data".into());
        let name = match runs {
            [r] => format!("{data}-{}-{}", slug(r.method()), r.id),
            _ => {
                let ids: Vec<String> = runs.iter().map(|r| r.id.to_string()).collect();
                format!("{data}-runs-{}", ids.join("-"))
            }
        };
        self.figures_dir.join(name)
    }

    /// `p`: computes the figures and asks for them to be written.
    pub(super) fn plot(&mut self) -> Vec<Command> {
        if self.plotting > 0 {
            self.say(
                "still writing the previous figures; p again when they are done",
                true,
            );
            return Vec::new();
        }
        let runs = self.plot_runs();
        if runs.is_empty() {
            self.say("no run selected: [ ] selects one, x marks several", true);
            return Vec::new();
        }
        let titles: Vec<String> = runs.iter().map(|r| r.title()).collect();
        let live: Vec<String> = runs
            .iter()
            .filter(|r| r.status.is_live() || r.status == RunStatus::Cancelled)
            .map(|r| format!("{} {}", r.title(), r.status.word()))
            .collect();
        let (figures, skipped) = figures_of(&runs, self.names());
        let dir = self.plot_folder(&runs);
        for s in &skipped {
            self.messages
                .push(Level::Info, format!("figures: skipped {s}"));
        }
        if figures.is_empty() {
            let why = skipped.first().cloned().unwrap_or_default();
            self.say(
                format!("no figure to write for {}: {why}", titles.join(", ")),
                true,
            );
            return Vec::new();
        }
        self.plotting += 1;
        let partial = if live.is_empty() {
            String::new()
        } else {
            format!(" ({}: so far, not a result)", live.join(", "))
        };
        self.say(
            format!(
                "writing {} figure(s) of {}{partial} to {}…",
                figures.len(),
                titles.join(", "),
                dir.display()
            ),
            false,
        );
        vec![Command::Plot { dir, figures }]
    }

    /// The end of a `Command::Plot`.
    pub(super) fn plotted(&mut self, dir: PathBuf, result: Result<Vec<PathBuf>, String>) {
        self.plotting = self.plotting.saturating_sub(1);
        match result {
            Ok(files) => {
                for f in &files {
                    self.messages
                        .push(Level::Info, format!("figure: {}", f.display()));
                }
                self.say(
                    format!("wrote {} figure file(s) to {}", files.len(), dir.display()),
                    false,
                );
            }
            Err(e) => self.say(
                format!(
                    "figures not written: {e}; choose a writable folder with pacauc explore \
                     --figures-dir DIR"
                ),
                true,
            ),
        }
    }
}
