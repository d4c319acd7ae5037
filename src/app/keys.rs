//! The one key table: dispatch (`action`), the footer and the `?` help overlay
//! all read it, so they can never disagree with what the keys do.

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
    /// Ctrl-B: in the run form, start the run in the background.
    CtrlB,
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
    Plot,
    Mark,
    Zoom,
    Messages,
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
    /// The keys and what each does (one row may pair opposites: ↑ and ↓).
    pub keys: &'static [(Key, Action)],
}

macro_rules! bind {
    ($label:expr, $short:expr, $help:expr, $group:ident, $footer:expr, [$(($k:expr, $a:expr)),*]) => {
        Binding { label: $label, short: $short, help: $help, group: Group::$group, footer: $footer, keys: &[$(($k, $a)),*] }
    };
}

use Key::*;

/// Every binding of the main screen.
pub const BINDINGS: &[Binding] = &[
    bind!(
        "q",
        "quit",
        "quit (Ctrl-C too); a run inside stops, watched runs go on",
        General,
        1,
        [(Char('q'), Action::Quit), (CtrlC, Action::Quit)]
    ),
    bind!(
        "?",
        "help",
        "show or hide this help",
        General,
        2,
        [(Char('?'), Action::Help)]
    ),
    bind!(
        "m",
        "messages",
        "the message log: every warning and error in full",
        General,
        3,
        [(Char('m'), Action::Messages)]
    ),
    bind!(
        "Esc",
        "close",
        "close the help or the run form",
        General,
        0,
        [(Esc, Action::CloseOverlay)]
    ),
    bind!(
        "n",
        "new run",
        "open the run form (method, prior, γ, particles, …)",
        Runs,
        3,
        [(Char('n'), Action::NewRun)]
    ),
    bind!(
        "space",
        "pause",
        "pause or resume the running engine",
        Runs,
        4,
        [(Char(' '), Action::PauseResume)]
    ),
    bind!(
        "c",
        "cancel",
        "cancel the running engine (finished runs stay)",
        Runs,
        5,
        [(Char('c'), Action::Cancel)]
    ),
    bind!(
        "r",
        "re-run",
        "run the selected run's settings again",
        Runs,
        6,
        [(Char('r'), Action::Rerun)]
    ),
    bind!(
        "e",
        "export",
        "write the selected run's record (JSON) into the export folder",
        Runs,
        7,
        [(Char('e'), Action::Export)]
    ),
    bind!(
        "p",
        "figures",
        "write the figures (PNG and SVG) of the selected run, or of the marked runs together, into the figures folder",
        Runs,
        7,
        [(Char('p'), Action::Plot)]
    ),
    bind!(
        "x",
        "mark",
        "mark or unmark the selected run: p draws the marked runs together (ROC curves overlaid)",
        Runs,
        0,
        [(Char('x'), Action::Mark)]
    ),
    bind!(
        "[ ]",
        "run",
        "select the previous / next run",
        Runs,
        8,
        [(Char('['), Action::PrevRun), (Char(']'), Action::NextRun)]
    ),
    bind!(
        "Tab",
        "focus",
        "focus the next pane (Shift-Tab: previous)",
        Navigation,
        9,
        [(Tab, Action::FocusNext), (BackTab, Action::FocusPrev)]
    ),
    bind!(
        "1-6",
        "pane",
        "focus pane 1–6 (Dataset … Results)",
        Navigation,
        0,
        [
            (Char('1'), Action::Pane(0)),
            (Char('2'), Action::Pane(1)),
            (Char('3'), Action::Pane(2)),
            (Char('4'), Action::Pane(3)),
            (Char('5'), Action::Pane(4)),
            (Char('6'), Action::Pane(5))
        ]
    ),
    bind!(
        "↑↓ jk",
        "select",
        "move the selection (coefficient, feature, run)",
        Navigation,
        10,
        [
            (Up, Action::Up),
            (Down, Action::Down),
            (Char('k'), Action::Up),
            (Char('j'), Action::Down)
        ]
    ),
    bind!(
        "←→ hl",
        "",
        "previous / next pane in tabbed layout",
        Navigation,
        0,
        [
            (Left, Action::Left),
            (Right, Action::Right),
            (Char('h'), Action::Left),
            (Char('l'), Action::Right)
        ]
    ),
    bind!(
        "PgUp PgDn",
        "",
        "scroll a page",
        Navigation,
        0,
        [(PageUp, Action::PageUp), (PageDown, Action::PageDown)]
    ),
    bind!(
        "Enter z",
        "zoom",
        "zoom the focused pane (again to restore)",
        Navigation,
        11,
        [(Enter, Action::Zoom), (Char('z'), Action::Zoom)]
    ),
];

/// Keys of the run form, for its own footer and the help overlay.
pub const FORM_KEYS: &[(&str, &str)] = &[
    ("↑↓ Tab", "field"),
    ("←→", "choose"),
    ("type", "edit"),
    ("Enter", "start"),
    ("Ctrl-B", "start in the background"),
    ("Esc", "close"),
];

/// The action of a key on the main screen: its row in the table.
pub fn action(key: Key) -> Option<Action> {
    BINDINGS
        .iter()
        .flat_map(|b| b.keys)
        .find(|(k, _)| *k == key)
        .map(|&(_, a)| a)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// No key is bound twice, and the pane keys reach every pane.
    #[test]
    fn every_key_has_one_action() {
        let keys: Vec<Key> = BINDINGS
            .iter()
            .flat_map(|b| b.keys)
            .map(|&(k, _)| k)
            .collect();
        for (i, k) in keys.iter().enumerate() {
            assert!(!keys[..i].contains(k), "{k:?} is bound twice");
        }
        for (i, c) in ('1'..='6').enumerate() {
            assert_eq!(action(Char(c)), Some(Action::Pane(i)));
        }
        assert_eq!(action(BackTab), Some(Action::FocusPrev));
        assert_eq!(action(Char('w')), None);
    }
}
