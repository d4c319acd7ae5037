//! The one key table: it maps keys to actions and feeds both the footer and the
//! `?` help overlay, so they can never disagree with what the keys do.

/// A key press, independent of the terminal library.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Key {
    Char(char),
    Up,
    Down,
    Left,
    Right,
    Tab,
    BackTab,
    Enter,
    Esc,
    Backspace,
    PageUp,
    PageDown,
    Home,
    End,
    /// Ctrl-C (raw mode delivers it as a key).
    CtrlC,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    Quit,
    Help,
    CloseOverlay,
    FocusNext,
    FocusPrev,
    Up,
    Down,
    Left,
    Right,
    PageUp,
    PageDown,
    NewRun,
    PauseResume,
    Cancel,
    Rerun,
    Export,
    Zoom,
    PrevRun,
    NextRun,
    /// Jump to pane i (0-based).
    Pane(usize),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Group {
    General,
    Navigation,
    Runs,
}

impl Group {
    pub fn title(self) -> &'static str {
        match self {
            Group::General => "General",
            Group::Navigation => "Navigation",
            Group::Runs => "Runs",
        }
    }
}

pub struct Binding {
    /// The keys as shown to the user.
    pub label: &'static str,
    /// Short word for the footer.
    pub short: &'static str,
    /// Sentence for the help overlay.
    pub help: &'static str,
    pub group: Group,
    /// Footer priority: 0 = not in the footer, lower shows first.
    pub footer: u8,
    pub keys: &'static [Key],
    pub action: Action,
}

macro_rules! bind {
    ($label:expr, $short:expr, $help:expr, $group:ident, $footer:expr, [$($k:expr),*], $action:expr) => {
        Binding { label: $label, short: $short, help: $help, group: Group::$group, footer: $footer, keys: &[$($k),*], action: $action }
    };
}

use Key::*;

/// Every binding of the main screen.
pub const BINDINGS: &[Binding] = &[
    bind!(
        "q",
        "quit",
        "quit (Ctrl-C too); a running engine is cancelled",
        General,
        1,
        [Char('q'), CtrlC],
        Action::Quit
    ),
    bind!(
        "?",
        "help",
        "show or hide this help",
        General,
        2,
        [Char('?')],
        Action::Help
    ),
    bind!(
        "Esc",
        "close",
        "close the help or the run form",
        General,
        0,
        [Esc],
        Action::CloseOverlay
    ),
    bind!(
        "n",
        "new run",
        "open the run form (method, prior, γ, particles, …)",
        Runs,
        3,
        [Char('n')],
        Action::NewRun
    ),
    bind!(
        "space",
        "pause",
        "pause or resume the running engine",
        Runs,
        4,
        [Char(' ')],
        Action::PauseResume
    ),
    bind!(
        "c",
        "cancel",
        "cancel the running engine (finished runs stay)",
        Runs,
        5,
        [Char('c')],
        Action::Cancel
    ),
    bind!(
        "r",
        "re-run",
        "run the selected run's settings again",
        Runs,
        6,
        [Char('r')],
        Action::Rerun
    ),
    bind!(
        "e",
        "export",
        "write the selected run's record (JSON) to the current folder",
        Runs,
        7,
        [Char('e')],
        Action::Export
    ),
    bind!(
        "[ ]",
        "run",
        "select the previous / next run",
        Runs,
        8,
        [Char('['), Char(']')],
        Action::PrevRun
    ),
    bind!(
        "Tab",
        "focus",
        "focus the next pane (Shift-Tab: previous)",
        Navigation,
        9,
        [Tab, BackTab],
        Action::FocusNext
    ),
    bind!(
        "1-6",
        "pane",
        "focus pane 1–6 (Dataset … Results)",
        Navigation,
        0,
        [],
        Action::Pane(0)
    ),
    bind!(
        "↑↓ jk",
        "select",
        "move the selection (coefficient, feature, run)",
        Navigation,
        10,
        [Up, Down, Char('k'), Char('j')],
        Action::Up
    ),
    bind!(
        "←→ hl",
        "",
        "previous / next pane in tabbed layout",
        Navigation,
        0,
        [Left, Right, Char('h'), Char('l')],
        Action::Left
    ),
    bind!(
        "PgUp PgDn",
        "",
        "scroll a page",
        Navigation,
        0,
        [PageUp, PageDown],
        Action::PageUp
    ),
    bind!(
        "Enter z",
        "zoom",
        "zoom the focused pane (again to restore)",
        Navigation,
        11,
        [Enter, Char('z')],
        Action::Zoom
    ),
];

/// Keys of the run form, for its own footer and the help overlay.
pub const FORM_KEYS: &[(&str, &str)] = &[
    ("↑↓ Tab", "field"),
    ("←→", "choose"),
    ("type", "edit"),
    ("Enter", "start"),
    ("Esc", "close"),
];

/// The action of a key on the main screen.
pub fn action(key: Key) -> Option<Action> {
    Some(match key {
        Char('q') | CtrlC => Action::Quit,
        Char('?') => Action::Help,
        Esc => Action::CloseOverlay,
        Char('n') => Action::NewRun,
        Char(' ') => Action::PauseResume,
        Char('c') => Action::Cancel,
        Char('r') => Action::Rerun,
        Char('e') => Action::Export,
        Char('[') => Action::PrevRun,
        Char(']') => Action::NextRun,
        Tab => Action::FocusNext,
        BackTab => Action::FocusPrev,
        Up | Char('k') => Action::Up,
        Down | Char('j') => Action::Down,
        Left | Char('h') => Action::Left,
        Right | Char('l') => Action::Right,
        PageUp => Action::PageUp,
        PageDown => Action::PageDown,
        Enter | Char('z') => Action::Zoom,
        Char(c @ '1'..='6') => Action::Pane(c as usize - '1' as usize),
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The table and the dispatcher agree: every listed key does what its row says.
    #[test]
    fn table_matches_dispatch() {
        for b in BINDINGS {
            for (i, &k) in b.keys.iter().enumerate() {
                let got = action(k).unwrap_or_else(|| panic!("{k:?} unbound"));
                let same_family = match (b.action, got) {
                    (Action::FocusNext, Action::FocusPrev) => i == 1,
                    (Action::Up, Action::Down) => i % 2 == 1,
                    (Action::Left, Action::Right) => i % 2 == 1,
                    (Action::PageUp, Action::PageDown) => i == 1,
                    (Action::PrevRun, Action::NextRun) => i == 1,
                    (a, g) => a == g,
                };
                assert!(same_family, "{} lists {k:?} but it does {got:?}", b.label);
            }
        }
        for c in '1'..='6' {
            assert!(matches!(action(Char(c)), Some(Action::Pane(_))));
        }
    }
}
