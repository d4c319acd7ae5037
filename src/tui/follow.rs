//! `pacauc watch`: the explorer over event logs. A follower thread polls the
//! logs (like `tail -f`) and sends what they say to the frame loop, which
//! applies it through `update` as it does a local run's messages; `q` leaves
//! the fits running.

use std::path::PathBuf;
use std::time::Duration;

use crossbeam_channel::{Receiver, Sender};

use super::{Ended, Options, Source, require_terminal, run};
use crate::app::{App, Msg};
use crate::eventlog::Follower;

/// How often the logs are read while nothing new came.
pub const POLL: Duration = Duration::from_millis(250);
pub const FOLLOW_THREAD: &str = "pacauc-follow";

/// Polls the logs until the explorer ends (its channel closes); `more`
/// brings logs to follow too.
pub fn spawn(
    mut follower: Follower,
    tx: Sender<Msg>,
    more: Receiver<PathBuf>,
) -> std::io::Result<()> {
    std::thread::Builder::new()
        .name(FOLLOW_THREAD.into())
        .spawn(move || {
            loop {
                for p in more.try_iter() {
                    follower.watch(p);
                }
                let msgs = follower.poll();
                let quiet = msgs.is_empty();
                for m in msgs {
                    if tx.send(Msg::Log(m)).is_err() {
                        return;
                    }
                }
                if quiet {
                    std::thread::sleep(POLL);
                }
            }
        })?;
    Ok(())
}

/// `pacauc watch FILE… | DIR`: files may not exist yet (a run about to
/// start), but their folder must.
pub fn watch(paths: &[PathBuf], options: Options) -> Result<Ended, String> {
    for p in paths {
        let parent = p.parent().filter(|d| !d.as_os_str().is_empty());
        if !p.exists() && parent.is_some_and(|d| !d.is_dir()) {
            return Err(format!(
                "{}: no such file, and its folder does not exist",
                p.display()
            ));
        }
    }
    let follower = Follower::new(paths)?;
    require_terminal()?;
    let mut app = App::watching(options.view);
    let waiting: Vec<String> = follower
        .waiting()
        .iter()
        .map(|p| p.display().to_string())
        .collect();
    if !waiting.is_empty() {
        app.messages.push(
            crate::app::messages::Level::Info,
            format!("waiting for a run in {}", waiting.join(", ")),
        );
    }
    run(app, Source::None, Some(follower), &options)
}
