//! Terminal set-up and restoration: raw mode and the alternate screen while the
//! guard lives, restored on drop, on error and on panic.

use std::io::{self, Stdout};
use std::sync::Once;

use crossterm::cursor::{Hide, Show};
use crossterm::execute;
use crossterm::terminal::{
    EnterAlternateScreen, LeaveAlternateScreen, disable_raw_mode, enable_raw_mode,
};
use ratatui::Terminal;
use ratatui::backend::CrosstermBackend;

pub type Term = Terminal<CrosstermBackend<Stdout>>;

/// Restores the terminal when dropped.
pub struct TerminalGuard {
    active: bool,
}

/// Leaves raw mode and the alternate screen (idempotent).
pub fn restore() {
    let _ = disable_raw_mode();
    let _ = execute!(io::stdout(), LeaveAlternateScreen, Show);
}

/// Threads whose panic ends the program (the UI and its input thread): the hook
/// restores the terminal before printing. Engine threads' panics are caught by
/// the worker and shown in the UI, so they must not touch the terminal or print
/// over the screen.
fn owns_terminal(name: Option<&str>) -> bool {
    matches!(name, Some("main") | Some(super::INPUT_THREAD))
}

fn install_panic_hook() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if owns_terminal(std::thread::current().name()) {
                restore();
                previous(info);
            }
        }));
    });
}

impl TerminalGuard {
    pub fn enter() -> io::Result<(TerminalGuard, Term)> {
        install_panic_hook();
        enable_raw_mode()?;
        let guard = TerminalGuard { active: true };
        execute!(io::stdout(), EnterAlternateScreen, Hide)?;
        let terminal = Terminal::new(CrosstermBackend::new(io::stdout()))?;
        Ok((guard, terminal))
    }

    /// Restores now (before waiting for engine threads at exit).
    pub fn leave(&mut self) {
        if self.active {
            restore();
            self.active = false;
        }
    }
}

impl Drop for TerminalGuard {
    fn drop(&mut self) {
        self.leave();
    }
}
