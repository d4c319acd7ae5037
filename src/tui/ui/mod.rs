//! Drawing: one function per pane, `render(&App, area, &mut Frame)`, and the
//! layout that places them: a grid when the terminal is large enough, a tab
//! bar otherwise, a one-line message below the minimum size.

pub mod common;
pub mod dataset;
pub mod ep_convergence;
pub mod figure_chart;
pub mod footer;
pub mod form;
pub mod gcs_trace;
pub mod gp_scores;
pub mod help;
pub mod inclusion;
pub mod marginals;
pub mod messages;
pub mod results;
pub mod smc_trace;
pub mod theme;
pub mod vb_trace;

use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Paragraph, Tabs, Wrap};

use crate::app::{App, Overlay, Pane};
use theme::Theme;

/// Below this the explorer only says the terminal is too small.
pub const MIN_WIDTH: u16 = 60;
pub const MIN_HEIGHT: u16 = 16;
/// From this size on every pane is visible at once.
pub const GRID_WIDTH: u16 = 100;
pub const GRID_HEIGHT: u16 = 32;

pub fn render_pane(app: &App, pane: Pane, area: Rect, frame: &mut Frame) {
    if area.width < 3 || area.height < 3 {
        return;
    }
    match pane {
        Pane::Dataset => dataset::render(app, area, frame),
        Pane::Smc => smc_trace::render(app, area, frame),
        Pane::Ep => ep_convergence::render(app, area, frame),
        Pane::Marginals => marginals::render(app, area, frame),
        Pane::Inclusion => inclusion::render(app, area, frame),
        Pane::Results => results::render(app, area, frame),
    }
}

/// Whether every pane fits at once.
pub fn is_grid(area: Rect) -> bool {
    area.width >= GRID_WIDTH && area.height >= GRID_HEIGHT
}

fn grid(app: &App, area: Rect, frame: &mut Frame) {
    let [top, mid, bottom] = Layout::vertical([
        Constraint::Percentage(34),
        Constraint::Percentage(36),
        Constraint::Percentage(30),
    ])
    .areas(area);
    let [d, s, e] = Layout::horizontal([
        Constraint::Percentage(36),
        Constraint::Percentage(32),
        Constraint::Percentage(32),
    ])
    .areas(top);
    let [m, i] =
        Layout::horizontal([Constraint::Percentage(68), Constraint::Percentage(32)]).areas(mid);
    render_pane(app, Pane::Dataset, d, frame);
    render_pane(app, Pane::Smc, s, frame);
    render_pane(app, Pane::Ep, e, frame);
    render_pane(app, Pane::Marginals, m, frame);
    render_pane(app, Pane::Inclusion, i, frame);
    render_pane(app, Pane::Results, bottom, frame);
}

fn tabs(app: &App, area: Rect, frame: &mut Frame) {
    let theme = Theme::of(app);
    let [bar, body] = Layout::vertical([Constraint::Length(1), Constraint::Min(0)]).areas(area);
    let titles: Vec<Line> = Pane::ALL
        .iter()
        .map(|p| Line::from(format!("{} {}", p.index() + 1, p.title())))
        .collect();
    frame.render_widget(
        Tabs::new(titles)
            .select(app.focus.index())
            .style(theme.dim())
            .highlight_style(theme.selected())
            .divider("│"),
        bar,
    );
    render_pane(app, app.focus, body, frame);
}

/// Draws the whole screen.
pub fn render(app: &App, frame: &mut Frame) {
    let area = frame.area();
    if area.width < MIN_WIDTH || area.height < MIN_HEIGHT {
        let msg = format!(
            "terminal too small ({}×{}): pacauc needs {MIN_WIDTH}×{MIN_HEIGHT}; q quits",
            area.width, area.height
        );
        frame.render_widget(
            Paragraph::new(Line::from(Span::raw(msg))).wrap(Wrap { trim: true }),
            area,
        );
        return;
    }
    let [head, body, foot] = Layout::vertical([
        Constraint::Length(1),
        Constraint::Min(0),
        Constraint::Length(1),
    ])
    .areas(area);
    footer::header(app, head, frame);
    if app.zoom {
        render_pane(app, app.focus, body, frame);
    } else if is_grid(area) {
        grid(app, body, frame);
    } else {
        tabs(app, body, frame);
    }
    footer::footer(app, foot, frame);
    match &app.overlay {
        Overlay::None => {}
        Overlay::Help => help::render(app, body, frame),
        Overlay::Form(f) => form::render(app, f, body, frame),
        Overlay::Messages => messages::render(app, body, frame),
    }
}
