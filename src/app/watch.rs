//! Runs followed in event logs (`pacauc watch`, background runs): a log's
//! lines become the same `WorkerMsg`s a run started inside sends, so every
//! pane shows them alike; only their start (the log's header) and an
//! interrupted end are theirs.

use super::messages::{Level, Messages};
use super::run_view::{Origin, RunStatus, RunView};
use super::{App, Command, DataInfo, DataState, StatusLine, ViewOptions, log_data};
use crate::eventlog::{Ending, Header, LogEntry, LogMsg};
use crate::spec::{DataSpec, RunSpec};
use crate::worker::{RunId, WorkerEvent, WorkerMsg};

impl App {
    /// An explorer over event logs (`pacauc watch`): the first run's header
    /// fills the Dataset pane.
    pub fn watching(options: ViewOptions) -> App {
        let mut app = App::new(
            DataState::Failed {
                path: String::new(),
                error: "waiting for a run's header in the event log(s)".into(),
            },
            options,
        );
        app.messages = Messages::default();
        app.status = Some(StatusLine {
            text: "waiting for a run in the event log(s)…".into(),
            error: false,
        });
        app
    }

    /// What `q` does, in a word for the footer: with only followed runs live
    /// (watch, background runs), leaving the explorer detaches from them and
    /// they go on; a run inside this process is cancelled.
    pub fn quit_word(&self) -> &'static str {
        let local_live = self
            .runs
            .iter()
            .any(|r| r.origin.is_none() && r.status.is_live());
        if !local_live && self.watched_live() > 0 {
            "detach"
        } else {
            "quit"
        }
    }

    /// Runs followed in logs that are still running.
    pub fn watched_live(&self) -> usize {
        self.watched
            .iter()
            .filter(|(_, id)| self.run(*id).is_some_and(|r| r.status.is_live()))
            .count()
    }

    fn attach(&mut self, file: std::path::PathBuf, header: Header) -> RunId {
        let spec = RunSpec::from_value(&header.spec)
            .ok()
            .or_else(|| {
                let method = header.spec.get("method")?.get("name")?.as_str()?;
                RunSpec::for_method(DataSpec::of(&header.dataset.path), method)
            })
            .unwrap_or_default();
        let id = self.next_id;
        self.next_id += 1;
        let mut run = RunView::new(id, spec);
        run.status = RunStatus::Running;
        run.file = Some(file.clone());
        run.origin = Some(Origin {
            pid: header.pid,
            host: header.host.clone(),
            started_unix: header.started_unix,
        });
        let info = DataInfo {
            report: header.dataset,
            split: header.split,
            names: header.names,
            spec: None,
        };
        match &self.data {
            DataState::Failed { .. } => {
                log_data(&mut self.messages, &info);
                self.data = DataState::Loaded(Box::new(info));
                self.status = None;
            }
            DataState::Loaded(d) if d.report.fingerprint != info.report.fingerprint => {
                self.messages.push(
                    Level::Warn,
                    format!(
                        "#{id}: its data ({}) is not the Dataset pane's ({}): AUCs are not comparable",
                        info.report.path, d.report.path
                    ),
                );
            }
            // The explorer's own file is on its way: it fills the pane.
            DataState::Loaded(_) | DataState::Loading { .. } => {}
        }
        self.say(
            format!(
                "#{id}: following {} (pid {} on {}, started {})",
                file.display(),
                header.pid,
                header.host,
                header.started
            ),
            false,
        );
        self.runs.push(run);
        if self.follow {
            self.selected = Some(id);
        }
        id
    }

    pub(super) fn on_log(&mut self, msg: LogMsg) -> Vec<Command> {
        let id = self
            .watched
            .iter()
            .find(|(s, _)| *s == msg.source)
            .map(|(_, id)| *id);
        let event = match (msg.entry, id) {
            (LogEntry::Header { file, header }, _) => {
                let id = self.attach(file, *header);
                self.watched.push((msg.source, id));
                return Vec::new();
            }
            (LogEntry::Problem(text), _) => {
                self.say_level(text, Level::Warn);
                return Vec::new();
            }
            (_, None) => return Vec::new(),
            (LogEntry::Event(e), Some(id)) => {
                // A log that grows again after being declared interrupted.
                if let Some(r) = self.run_mut(id)
                    && matches!(r.status, RunStatus::Interrupted(_))
                {
                    r.status = RunStatus::Running;
                }
                WorkerEvent::Event(e)
            }
            (LogEntry::End(Ending::Finished(r)), Some(_)) => WorkerEvent::Finished(r),
            (LogEntry::End(Ending::Failed(e)), Some(_)) => WorkerEvent::Failed(e),
            (LogEntry::End(Ending::Cancelled), Some(_)) => WorkerEvent::Cancelled,
            (LogEntry::Interrupted(why), Some(id)) => {
                self.interrupted(id, why);
                return Vec::new();
            }
        };
        let run = id.unwrap_or_default();
        self.on_worker(WorkerMsg { run, event })
    }

    fn interrupted(&mut self, id: RunId, why: String) {
        let Some(run) = self.run_mut(id).filter(|r| r.status.is_live()) else {
            return;
        };
        let at = run
            .progress_text()
            .map_or(String::new(), |p| format!(" at {p}"));
        let partial = if run.smc.is_empty() && run.ep.is_empty() {
            ""
        } else {
            ": its panes show a partial posterior, not an answer"
        };
        let t = format!("{} interrupted{at} ({why}){partial}", run.title());
        run.status = RunStatus::Interrupted(why);
        self.say_level(t, Level::Warn);
    }
}
