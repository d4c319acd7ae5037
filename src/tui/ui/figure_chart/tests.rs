//! The adapter against hand-counted panels: series and points kept, NaN and
//! ±inf (and non-positive values on a log axis) left out, marks across the
//! bounds, bars as their outline, bands as two edges with one legend entry.

use super::*;
use crate::figures::{Axis as FAxis, Bar, Dash, Panel, Series, Style as FStyle};
use ratatui::Terminal;
use ratatui::backend::TestBackend;

fn theme() -> Theme {
    Theme {
        color: true,
        marker: Marker::Braille,
    }
}

fn series(name: &str, i: usize, data: Data) -> Series {
    Series {
        name: name.into(),
        style: FStyle::nth(i),
        data,
    }
}

fn panel() -> Panel {
    let mut p = Panel::new(None, FAxis::linear("stage"), FAxis::linear("share"));
    p.series.push(series(
        "line",
        0,
        Data::Line(vec![
            [0.0, 0.1],
            [1.0, f64::NAN],
            [f64::INFINITY, 0.2],
            [2.0, 0.3],
        ]),
    ));
    p.series
        .push(series("dots", 1, Data::Points(vec![[1.0, 0.5]])));
    p.series.push(series(
        "bars",
        2,
        Data::Bars(vec![
            Bar {
                x0: 0.0,
                x1: 1.0,
                y: 0.4,
            },
            Bar {
                x0: 1.0,
                x1: 2.0,
                y: 0.6,
            },
        ]),
    ));
    p.series.push(series(
        "band",
        3,
        Data::Band {
            x: vec![0.0, 1.0, 2.0],
            lo: vec![0.0, f64::NAN, 0.1],
            hi: vec![0.9, 0.8, 0.7],
        },
    ));
    p.series.push(Series {
        name: "chance".into(),
        style: FStyle::reference(Dash::Dotted),
        data: Data::Line(vec![[0.0, 0.0], [2.0, 1.0]]),
    });
    p.marks.push(Mark::HLine {
        y: 0.5,
        label: "target".into(),
    });
    p.marks.push(Mark::VLine {
        x: 1.5,
        label: "warm-up".into(),
    });
    p
}

#[test]
fn every_series_and_mark_becomes_a_dataset_of_finite_points() {
    let c = resolve(&panel());
    // line, dots, bars, band's two edges, the grey series, two marks.
    assert_eq!(c.series.len(), 8);
    assert_eq!(c.series[0].points, vec![(0.0, 0.1), (2.0, 0.3)]);
    assert!(c.series[1].scatter);
    // Two joined bars: up from the axis, across, the shared edge, down.
    assert_eq!(
        c.series[2].points,
        vec![
            (0.0, 0.0),
            (0.0, 0.4),
            (1.0, 0.4),
            (1.0, 0.6),
            (2.0, 0.6),
            (2.0, 0.0)
        ]
    );
    assert_eq!(
        c.series[3].points.len(),
        2,
        "the band's NaN edge point is out"
    );
    assert_eq!(c.series[4].points.len(), 3);
    assert!(c.series[5].guide && !c.series[0].guide);
    for s in &c.series {
        assert!(
            s.points.iter().all(|p| p.0.is_finite() && p.1.is_finite()),
            "{}",
            s.name
        );
    }
    assert_eq!(c.x, [0.0, 2.0]);
    assert_eq!(c.y, [0.0, 1.0]);
    // Marks span the bounds.
    assert_eq!(c.series[6].points, vec![(0.0, 0.5), (2.0, 0.5)]);
    assert_eq!(c.series[7].points, vec![(1.5, 0.0), (1.5, 1.0)]);
    assert!(c.series[7].vertical);
}

#[test]
fn log_axes_are_drawn_in_decades_without_non_positive_values() {
    let mut p = Panel::new(None, FAxis::linear("sweep"), FAxis::log("Δ"));
    p.series.push(series(
        "Δ",
        0,
        Data::Line(vec![[1.0, 10.0], [2.0, 0.0], [3.0, 0.05], [4.0, -1.0]]),
    ));
    p.marks.push(Mark::HLine {
        y: 1e-4,
        label: "tol".into(),
    });
    let c = resolve(&p);
    assert_eq!(c.series[0].points.len(), 2);
    assert!((c.series[0].points[1].1 - 0.05f64.log10()).abs() < 1e-12);
    assert_eq!(c.y, [-4.0, 1.0]);
    assert_eq!(y_labels(&c, 0), vec!["1e-4", "1e1"]);
    // A fixed range with a NaN end takes that end from the data.
    let mut q = Panel::new(
        None,
        FAxis::linear("x"),
        FAxis::linear("y").range(0.0, f64::NAN),
    );
    q.series
        .push(series("a", 0, Data::Line(vec![[0.0, 2.0], [1.0, 3.0]])));
    assert_eq!(resolve(&q).y, [0.0, 3.0]);
    // Nothing drawable: still a valid range.
    let mut e = Panel::new(None, FAxis::linear("x"), FAxis::log("y"));
    e.series
        .push(series("a", 0, Data::Line(vec![[f64::NAN, 1.0]])));
    let c = resolve(&e);
    assert!(c.series[0].points.is_empty());
    assert!(c.y[0] < c.y[1] && c.x[0] < c.x[1]);
}

#[test]
fn the_legend_names_each_series_once_and_the_guides_after() {
    let c = resolve(&panel());
    let text: Vec<String> = legend(&c, &theme())
        .iter()
        .map(|s| s.content.to_string())
        .collect();
    assert_eq!(text.len(), 7, "{text:?}");
    assert!(text[0].ends_with("line "));
    assert_eq!(text.iter().filter(|t| t.contains("band")).count(), 1);
    assert!(text[5].starts_with("─ ") && text[6].starts_with("│ warm-up"));
}

#[test]
fn a_chart_of_any_panel_renders() {
    let c = resolve(&panel());
    let mut term = Terminal::new(TestBackend::new(40, 12)).unwrap();
    term.draw(|f| {
        let labels = Labels::trace(3);
        f.render_widget(chart(&c, &theme(), labels), f.area());
    })
    .unwrap();
    let text: String = term
        .backend()
        .buffer()
        .content()
        .iter()
        .map(|c| c.symbol())
        .collect();
    assert!(text.contains("stage"), "{text}");
    assert!(text.contains("  ½"), "the share axis' middle label, padded");
}

#[test]
fn bars_read_back_the_categories_and_heights() {
    let probs = vec![
        crate::engine::record::Inclusion {
            name: "a".into(),
            prob: 0.2,
        },
        crate::engine::record::Inclusion {
            name: "b".into(),
            prob: 0.9,
        },
    ];
    let fig = figures::inclusion_top(&probs, "ep", "inclusion", usize::MAX).unwrap();
    assert_eq!(
        bars(&fig.panels[0]),
        vec![("b".to_string(), 0.9), ("a".to_string(), 0.2)]
    );
}
