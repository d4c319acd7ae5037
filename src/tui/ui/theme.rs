//! Styles: ANSI-16 colours on the terminal's default background, or none at
//! all (`NO_COLOR`, `--no-color`), where focus and emphasis use modifiers.

use ratatui::style::{Color, Modifier, Style};
use ratatui::symbols::Marker;

use crate::app::{App, MarkerKind};

/// Colours of runs and chart series, all from the 16 ANSI colours.
const SERIES: [Color; 6] = [
    Color::Cyan,
    Color::Yellow,
    Color::Magenta,
    Color::Green,
    Color::Blue,
    Color::Red,
];

/// A legend glyph that looks like a chart drawn with `m`.
pub fn glyph(m: Marker) -> &'static str {
    match m {
        Marker::Dot => "•",
        Marker::Bar => "▄",
        Marker::Block => "█",
        Marker::HalfBlock => "▀",
        _ => "⠒",
    }
}

#[derive(Debug, Clone, Copy)]
pub struct Theme {
    pub color: bool,
    pub marker: Marker,
}

impl Theme {
    pub fn of(app: &App) -> Theme {
        Theme {
            color: app.options.color,
            marker: match app.options.marker {
                MarkerKind::Braille => Marker::Braille,
                MarkerKind::Dot => Marker::Dot,
                MarkerKind::Block => Marker::Block,
            },
        }
    }

    pub fn fg(&self, c: Color) -> Style {
        if self.color {
            Style::new().fg(c)
        } else {
            Style::new()
        }
    }

    pub fn title(&self) -> Style {
        Style::new().add_modifier(Modifier::BOLD)
    }

    pub fn border(&self, focused: bool) -> Style {
        match (focused, self.color) {
            (true, true) => Style::new().fg(Color::Cyan).add_modifier(Modifier::BOLD),
            (true, false) => Style::new().add_modifier(Modifier::BOLD),
            (false, true) => Style::new().fg(Color::DarkGray),
            (false, false) => Style::new(),
        }
    }

    pub fn dim(&self) -> Style {
        if self.color {
            Style::new().fg(Color::DarkGray)
        } else {
            Style::new().add_modifier(Modifier::DIM)
        }
    }

    pub fn good(&self) -> Style {
        self.fg(Color::Green)
    }

    pub fn warn(&self) -> Style {
        self.fg(Color::Yellow)
    }

    pub fn bad(&self) -> Style {
        if self.color {
            Style::new().fg(Color::Red).add_modifier(Modifier::BOLD)
        } else {
            Style::new().add_modifier(Modifier::BOLD)
        }
    }

    pub fn selected(&self) -> Style {
        Style::new().add_modifier(Modifier::REVERSED)
    }

    /// Markers for the series of one chart, all different, the chosen marker
    /// first: series stay apart without colour (`--no-color`, `NO_COLOR`).
    pub fn series_markers(&self) -> [Marker; 3] {
        let mut out = [self.marker; 3];
        let mut k = 1;
        for m in [Marker::Dot, Marker::Bar, Marker::Block, Marker::Braille] {
            if k < 3 && m != self.marker {
                out[k] = m;
                k += 1;
            }
        }
        out
    }

    /// The colour of run or series `i`.
    pub fn series(&self, i: usize) -> Style {
        self.fg(SERIES[i % SERIES.len()])
    }
}
