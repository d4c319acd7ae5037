//! The input thread: blocks on the terminal's events and forwards key presses
//! and resizes to the UI loop.

use crossbeam_channel::Sender;
use crossterm::event::{self, Event, KeyCode, KeyEvent, KeyEventKind, KeyModifiers};

use crate::app::keys::Key;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Input {
    /// A key and when it was read (for the latency log).
    Key(Key, std::time::Instant),
    Resize,
    /// SIGTERM, SIGHUP, SIGINT or SIGQUIT (its number): leave cleanly, then
    /// exit with 128 + the signal as a shell expects.
    Signal(i32),
}

/// The app's key for a terminal key event (None for releases and unknown keys).
pub fn key(e: KeyEvent) -> Option<Key> {
    if e.kind == KeyEventKind::Release {
        return None;
    }
    Some(match e.code {
        KeyCode::Char('c') if e.modifiers.contains(KeyModifiers::CONTROL) => Key::CtrlC,
        KeyCode::Char('b') if e.modifiers.contains(KeyModifiers::CONTROL) => Key::CtrlB,
        KeyCode::Char(_)
            if e.modifiers
                .intersects(KeyModifiers::CONTROL | KeyModifiers::ALT) =>
        {
            return None;
        }
        KeyCode::Char(c) => Key::Char(c),
        KeyCode::Up => Key::Up,
        KeyCode::Down => Key::Down,
        KeyCode::Left => Key::Left,
        KeyCode::Right => Key::Right,
        KeyCode::Tab => Key::Tab,
        KeyCode::BackTab => Key::BackTab,
        KeyCode::Enter => Key::Enter,
        KeyCode::Esc => Key::Esc,
        KeyCode::Backspace => Key::Backspace,
        KeyCode::PageUp => Key::PageUp,
        KeyCode::PageDown => Key::PageDown,
        KeyCode::Home => Key::Home,
        KeyCode::End => Key::End,
        _ => return None,
    })
}

pub fn spawn(tx: Sender<Input>) -> std::io::Result<()> {
    std::thread::Builder::new()
        .name(super::INPUT_THREAD.into())
        .spawn(move || {
            loop {
                let msg = match event::read() {
                    Ok(Event::Key(k)) => key(k).map(|k| Input::Key(k, std::time::Instant::now())),
                    Ok(Event::Resize(..)) => Some(Input::Resize),
                    Ok(_) => None,
                    Err(_) => break,
                };
                if let Some(m) = msg
                    && tx.send(m).is_err()
                {
                    break;
                }
            }
        })?;
    Ok(())
}

/// Turns termination signals into `Input::Signal`, so the terminal is restored
/// and engines cancelled as on `q`.
#[cfg(unix)]
pub fn spawn_signals(tx: Sender<Input>) -> std::io::Result<()> {
    use signal_hook::consts::{SIGHUP, SIGINT, SIGQUIT, SIGTERM};
    let mut signals = signal_hook::iterator::Signals::new([SIGTERM, SIGHUP, SIGINT, SIGQUIT])?;
    std::thread::Builder::new()
        .name("pacauc-signals".into())
        .spawn(move || {
            if let Some(sig) = signals.forever().next() {
                let _ = tx.send(Input::Signal(sig));
            }
        })?;
    Ok(())
}

#[cfg(not(unix))]
pub fn spawn_signals(_: Sender<Input>) -> std::io::Result<()> {
    Ok(())
}
