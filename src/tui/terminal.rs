//! Terminal set-up and restoration: raw mode and the alternate screen while the
//! guard lives, restored on drop, on error and on panic.

use std::io::{self, Stdout};
use std::sync::Once;

use crossterm::cursor::{Hide, Show};
use crossterm::terminal::{
    BeginSynchronizedUpdate, EndSynchronizedUpdate, EnterAlternateScreen, LeaveAlternateScreen,
    disable_raw_mode, enable_raw_mode,
};
use crossterm::{execute, queue};
use ratatui::backend::CrosstermBackend;
use ratatui::{Frame, Terminal};

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

/// Draws one frame as a synchronized update (DEC mode 2026): terminals that
/// know it show the frame whole, never half drawn over a slow link; others
/// ignore the two sequences.
pub fn draw(terminal: &mut Term, render: impl FnOnce(&mut Frame)) -> io::Result<()> {
    queue!(terminal.backend_mut(), BeginSynchronizedUpdate)?;
    let drawn = terminal.draw(render).map(|_| ());
    execute!(terminal.backend_mut(), EndSynchronizedUpdate)?;
    drawn
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
