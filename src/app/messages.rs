//! The session's message log: every status line, data warning, engine warning,
//! failure and export path in full (the header and the panes cut long text to
//! fit; the `m` overlay shows it whole, scrollable).

/// How serious a message is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Level {
    Info,
    Warn,
    Error,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Entry {
    pub level: Level,
    pub text: String,
}

/// Most messages kept (the oldest go first).
pub const CAPACITY: usize = 2000;

#[derive(Debug, Clone, Default)]
pub struct Messages {
    pub entries: Vec<Entry>,
    /// Lines scrolled up from the end of the log (0: the newest at the bottom).
    pub from_end: usize,
    /// Warnings and errors since the log was last opened.
    pub unseen: usize,
}

impl Messages {
    pub fn push(&mut self, level: Level, text: impl Into<String>) {
        let text = text.into();
        // A repeated status line (the same key pressed twice) is one entry.
        if self.entries.last().is_some_and(|e| e.text == text) {
            return;
        }
        if self.entries.len() == CAPACITY {
            self.entries.remove(0);
        }
        if level != Level::Info {
            self.unseen += 1;
        }
        self.entries.push(Entry { level, text });
    }

    /// Scrolls by `by` lines (positive: towards older messages).
    pub fn scroll(&mut self, by: isize) {
        // Bounded by a generous count of wrapped lines; the renderer clamps exactly.
        let max: usize = self
            .entries
            .iter()
            .map(|e| e.text.chars().count() / 40 + 1)
            .sum();
        self.from_end = self.from_end.saturating_add_signed(by).min(max);
    }

    /// The warnings and errors, for counts and tests.
    pub fn warnings(&self) -> impl Iterator<Item = &Entry> {
        self.entries.iter().filter(|e| e.level != Level::Info)
    }
}

/// `text` wrapped at `width` characters (words kept whole where they fit), for
/// the overlay: every character of a message stays visible.
pub fn wrap(text: &str, width: usize) -> Vec<String> {
    let width = width.max(8);
    let mut lines = Vec::new();
    for para in text.split('\n') {
        let mut line = String::new();
        let mut len = 0;
        for word in para.split(' ') {
            let w = word.chars().count();
            if len > 0 && len + 1 + w > width {
                lines.push(std::mem::take(&mut line));
                len = 0;
            }
            if len > 0 {
                line.push(' ');
                len += 1;
            }
            // A word longer than the line is split.
            for c in word.chars() {
                if len == width {
                    lines.push(std::mem::take(&mut line));
                    len = 0;
                }
                line.push(c);
                len += 1;
            }
        }
        lines.push(line);
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wrapping_keeps_every_character() {
        let t = "a long warning about a column called patient_identifier_number_x";
        let lines = wrap(t, 12);
        assert!(lines.iter().all(|l| l.chars().count() <= 12), "{lines:?}");
        assert_eq!(lines.join(" ").replace(' ', ""), t.replace(' ', ""));
        assert_eq!(wrap("one\ntwo", 20), vec!["one", "two"]);
    }

    #[test]
    fn the_log_counts_unseen_warnings_and_skips_repeats() {
        let mut m = Messages::default();
        m.push(Level::Info, "started");
        m.push(Level::Warn, "w");
        m.push(Level::Warn, "w");
        m.push(Level::Error, "e");
        assert_eq!(m.entries.len(), 3);
        assert_eq!(m.unseen, 2);
        m.scroll(5);
        assert!(m.from_end <= 3);
        m.scroll(-10);
        assert_eq!(m.from_end, 0);
    }
}
