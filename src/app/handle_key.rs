//! What keys do on the main screen, in the run form and in the help overlay
//! (the key table itself is `keys`).

use super::form::{Form, FormOutcome, render_error};
use super::keys::{self, Action, Key};
use super::run_view::RunStatus;
use super::{App, Command, Overlay, Pane};
use crate::spec::{Dims, RunSpec, validate};
use crate::worker::RunId;

impl App {
    fn select_step(&mut self, by: isize) {
        if self.runs.is_empty() {
            return;
        }
        let n = self.runs.len() as isize;
        let cur = self
            .selected
            .and_then(|id| self.runs.iter().position(|r| r.id == id))
            .map_or(n - 1, |i| i as isize);
        let i = (cur + by).clamp(0, n - 1) as usize;
        self.selected = Some(self.runs[i].id);
        self.follow = false;
    }

    fn move_selection(&mut self, by: isize) {
        let step = |v: usize| v.saturating_add_signed(by);
        match self.focus {
            Pane::Dataset => self.dataset_scroll = step(self.dataset_scroll),
            Pane::Marginals => self.coef_sel = step(self.coef_sel),
            Pane::Inclusion => self.inclusion_scroll = step(self.inclusion_scroll),
            Pane::Smc | Pane::Ep | Pane::Results => self.select_step(by.signum()),
        }
        // Upper bounds depend on the pane's size; the renderer clamps and the
        // state is clamped here to the data so it never runs away.
        let d = self.names().len().max(1);
        self.coef_sel = self.coef_sel.min(d - 1);
        self.dataset_scroll = self.dataset_scroll.min(d - 1);
        self.inclusion_scroll = self.inclusion_scroll.min(d - 1);
    }

    pub(super) fn on_key(&mut self, key: Key) -> Vec<Command> {
        if key == Key::CtrlC {
            self.quit = true;
            return Vec::new();
        }
        let dims = self.data_info().map(|info| Dims {
            n: info.split.train_rows,
            d: info.names.len(),
        });
        // The form's run above the cost limits is shown why first; the same
        // spec submitted again runs.
        let over_cost = |spec: &RunSpec| self.cost_of(spec, FORM_ANYWAY).and_then(|(_, why)| why);
        let refused = match &self.overlay {
            Overlay::Form(form) if matches!(key, Key::Enter | Key::CtrlB) => form
                .spec()
                .ok()
                .filter(|s| form.over_cost_shown.as_ref() != Some(s))
                .and_then(|s| over_cost(&s).map(|why| (s, why))),
            _ => None,
        };
        match &mut self.overlay {
            Overlay::Form(form) => {
                let check = |s: &RunSpec| match dims {
                    Some(dims) => validate(s, dims).map_err(|e| render_error(&e)),
                    None => Err("no data to run on".into()),
                };
                let outcome = form.key(key, check);
                if let (FormOutcome::Submit(_) | FormOutcome::Background(_), Some((spec, why))) =
                    (&outcome, refused)
                {
                    form.error = Some(why);
                    form.over_cost_shown = Some(spec);
                    return Vec::new();
                }
                return match outcome {
                    FormOutcome::Stay => Vec::new(),
                    FormOutcome::Close => {
                        self.overlay = Overlay::None;
                        Vec::new()
                    }
                    FormOutcome::Submit(spec) => {
                        self.overlay = Overlay::None;
                        self.last_form = Some((*spec).clone());
                        self.follow = true;
                        self.enqueue(*spec)
                    }
                    FormOutcome::Background(spec) => {
                        self.overlay = Overlay::None;
                        self.last_form = Some((*spec).clone());
                        self.follow = true;
                        vec![Command::Background { spec }]
                    }
                };
            }
            Overlay::Messages => {
                match key {
                    Key::Char('q') => self.quit = true,
                    Key::Esc | Key::Char('m') | Key::Enter => self.overlay = Overlay::None,
                    Key::Up | Key::Char('k') => self.messages.scroll(1),
                    Key::Down | Key::Char('j') => self.messages.scroll(-1),
                    Key::PageUp => self.messages.scroll(10),
                    Key::PageDown => self.messages.scroll(-10),
                    Key::Home => self.messages.scroll(isize::MAX),
                    Key::End => self.messages.from_end = 0,
                    _ => {}
                }
                return Vec::new();
            }
            Overlay::Help => {
                match key {
                    Key::Char('q') => self.quit = true,
                    Key::Esc | Key::Char('?') | Key::Enter => self.overlay = Overlay::None,
                    _ => {}
                }
                return Vec::new();
            }
            Overlay::None => {}
        }
        let Some(action) = keys::action(key) else {
            return Vec::new();
        };
        match action {
            Action::Quit => self.quit = true,
            Action::Help => self.overlay = Overlay::Help,
            Action::Messages => {
                self.messages.from_end = 0;
                self.messages.unseen = 0;
                self.overlay = Overlay::Messages;
            }
            Action::CloseOverlay => {
                self.zoom = false;
                self.status = None;
            }
            Action::FocusNext | Action::Right => self.focus = self.focus.step(1),
            Action::FocusPrev | Action::Left => self.focus = self.focus.step(-1),
            Action::Pane(i) => self.focus = Pane::ALL[i.min(Pane::ALL.len() - 1)],
            Action::Up => self.move_selection(-1),
            Action::Down => self.move_selection(1),
            Action::PageUp => self.move_selection(-10),
            Action::PageDown => self.move_selection(10),
            Action::Zoom => self.zoom = !self.zoom,
            Action::PrevRun => self.select_step(-1),
            Action::NextRun => self.select_step(1),
            Action::NewRun => {
                if let Some(data) = self.data_spec() {
                    let preset = self
                        .last_form
                        .as_ref()
                        .or_else(|| self.selected_run().map(|r| &r.spec));
                    self.overlay = Overlay::Form(Box::new(Form::new(preset, data)));
                } else {
                    self.say(
                        "no data to run on (replay, or the data failed to load)",
                        true,
                    );
                }
            }
            Action::PauseResume => return self.toggle_pause(),
            Action::Cancel => return self.cancel(),
            Action::Rerun => {
                // The run's own spec (a finished run's is its record's).
                let Some(spec) = self.selected_run().map(|r| r.spec.clone()) else {
                    self.say("no run selected", true);
                    return Vec::new();
                };
                if self.data_spec().is_none() {
                    self.say(
                        "replay: re-running needs the data (pacauc explore FILE)",
                        true,
                    );
                    return Vec::new();
                }
                self.follow = true;
                return self.enqueue(spec);
            }
            Action::Plot => return self.plot(),
            Action::Mark => self.toggle_mark(),
            Action::Export => {
                return match self.selected_run() {
                    Some(r) if r.record.is_some() => vec![Command::Export { run: r.id }],
                    Some(r) => {
                        let t = format!("{} has no result to export yet", r.title());
                        self.say(t, true);
                        Vec::new()
                    }
                    None => {
                        self.say("no run selected", true);
                        Vec::new()
                    }
                };
            }
        }
        Vec::new()
    }

    fn toggle_pause(&mut self) -> Vec<Command> {
        let Some(id) = self.active else {
            self.say("nothing is running", false);
            return Vec::new();
        };
        let Some(r) = self.run_mut(id) else {
            return Vec::new();
        };
        let paused = r.status == RunStatus::Running;
        r.status = if paused {
            RunStatus::Paused
        } else {
            RunStatus::Running
        };
        let t = if paused {
            "paused: space resumes, c cancels".to_string()
        } else {
            format!("{} resumed", r.title())
        };
        self.say(t, false);
        vec![Command::Pause { run: id, paused }]
    }

    fn cancel(&mut self) -> Vec<Command> {
        if let Some(id) = self.active {
            if self.cancelling == Some(id) {
                return Vec::new();
            }
            self.cancelling = Some(id);
            self.say(format!("cancelling #{id}…"), false);
            return vec![Command::Cancel { run: id }];
        }
        // Nothing running: drop the queue.
        let queued: Vec<RunId> = self.queue.drain(..).collect();
        for id in &queued {
            if let Some(r) = self.run_mut(*id) {
                r.status = RunStatus::Cancelled;
            }
        }
        self.say(
            if queued.is_empty() {
                "nothing is running".to_string()
            } else {
                format!("{} queued run(s) cancelled", queued.len())
            },
            false,
        );
        Vec::new()
    }
}

/// How the run form runs a spec above the cost limits regardless.
pub const FORM_ANYWAY: &str = "Enter again runs it anyway";
