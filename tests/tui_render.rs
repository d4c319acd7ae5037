//! The explorer's screens drawn on ratatui's TestBackend: every pane at 80×24
//! (tabbed) and 120×40 (grid, and zoomed), overlays, load errors, replay;
//! snapshots under tests/snapshots/. Tiny sizes must not panic.

use pacauc::app::keys::Key;
use pacauc::app::{App, DataInfo, DataState, Msg, Pane, ViewOptions, update};
use pacauc::testkit;
use pacauc::tui::ui;
use pacauc::worker::{WorkerEvent, WorkerMsg};
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use ratatui::style::Color;

use pacauc::testkit::screen;

fn feed(app: &mut App, run: u64, event: WorkerEvent) {
    update(app, Msg::Worker(WorkerMsg { run, event }));
}

fn empty() -> App {
    let (ds, p, args) = testkit::demo();
    App::new(
        DataState::Loaded(Box::new(DataInfo::of(&ds, &p, args))),
        ViewOptions::default(),
    )
}

/// EP (spike-and-slab) finished, logit finished, SMC at stage 5 of 8.
fn live() -> App {
    let (ds, p, _) = testkit::demo();
    let mut app = empty();
    let names = p.names.clone();
    let ep = testkit::ep_with(&names, testkit::posterior_of(&p), 750.0, 12, true);
    let smc = testkit::smc_with(&names, testkit::posterior_of(&p), 750.0, 8, 1);
    let cfg = |m: &str| pacauc::spec::RunSpec::for_method(testkit::demo().2, m).unwrap();
    app.enqueue(cfg("ep"));
    app.enqueue(cfg("logit"));
    app.enqueue(cfg("smc"));
    for e in &ep.events {
        feed(&mut app, 1, WorkerEvent::Event(e.clone()));
    }
    feed(
        &mut app,
        1,
        WorkerEvent::Finished(Box::new(testkit::record(&ds, &p, &ep))),
    );
    let mut logit = testkit::ep_with(&names, testkit::posterior_of(&p), 750.0, 1, false);
    logit.fit.engine = pacauc::engine::EngineKind::Logit;
    logit.events.clear();
    feed(
        &mut app,
        2,
        WorkerEvent::Finished(Box::new(testkit::record(&ds, &p, &logit))),
    );
    feed(
        &mut app,
        3,
        WorkerEvent::Event(pacauc::engine::Event::Started {
            engine: "smc".into(),
            n: 750,
            d: names.len(),
            pairs: 210 * 540,
            gamma: 750.0,
        }),
    );
    for e in &smc.events[..5] {
        feed(&mut app, 3, WorkerEvent::Event(e.clone()));
    }
    app
}

fn finished() -> App {
    let (ds, p, _) = testkit::demo();
    let mut app = live();
    let smc = testkit::smc_with(&p.names, testkit::posterior_of(&p), 750.0, 8, 1);
    for e in &smc.events[5..] {
        feed(&mut app, 3, WorkerEvent::Event(e.clone()));
    }
    feed(
        &mut app,
        3,
        WorkerEvent::Finished(Box::new(testkit::record(&ds, &p, &smc))),
    );
    app
}

fn key(app: &mut App, k: Key) {
    update(app, Msg::Key(k));
}

#[test]
fn main_screen_120x40() {
    insta::assert_snapshot!("main_120x40_live", screen(&live(), 120, 40));
    insta::assert_snapshot!("main_120x40_finished", screen(&finished(), 120, 40));
    insta::assert_snapshot!("main_120x40_empty", screen(&empty(), 120, 40));
}

#[test]
fn every_pane_at_80x24_and_zoomed_at_120x40() {
    let mut app = finished();
    for (i, pane) in Pane::ALL.iter().enumerate() {
        key(&mut app, Key::Char(char::from(b'1' + i as u8)));
        assert_eq!(app.focus, *pane);
        let name = pane.title().to_lowercase();
        insta::assert_snapshot!(format!("pane_{name}_80x24"), screen(&app, 80, 24));
        key(&mut app, Key::Char('z'));
        insta::assert_snapshot!(format!("pane_{name}_120x40_zoom"), screen(&app, 120, 40));
        key(&mut app, Key::Char('z'));
    }
}

#[test]
fn live_panes_at_80x24() {
    let mut app = live();
    for c in ['2', '4'] {
        key(&mut app, Key::Char(c));
        insta::assert_snapshot!(format!("live_pane_{c}_80x24"), screen(&app, 80, 24));
    }
}

#[test]
fn selecting_a_coefficient_moves_the_histogram() {
    let mut app = finished();
    key(&mut app, Key::Char('4'));
    let before = screen(&app, 120, 40);
    key(&mut app, Key::Down);
    key(&mut app, Key::Down);
    let after = screen(&app, 120, 40);
    assert_ne!(before, after);
    insta::assert_snapshot!("marginals_third_coefficient", after);
}

#[test]
fn overlays() {
    let mut app = finished();
    key(&mut app, Key::Char('?'));
    insta::assert_snapshot!("help_120x40", screen(&app, 120, 40));
    insta::assert_snapshot!("help_80x24", screen(&app, 80, 24));
    key(&mut app, Key::Esc);
    // The logit run's form: the same in every build (SMC and EP add their own fields).
    key(&mut app, Key::Char('['));
    key(&mut app, Key::Char('n'));
    insta::assert_snapshot!("form_80x24", screen(&app, 80, 24));
}

#[test]
fn load_error_is_shown() {
    let app = App::new(
        DataState::Failed {
            path: "missing.csv".into(),
            error: "missing.csv: No such file or directory (os error 2)".into(),
        },
        ViewOptions::default(),
    );
    let s = screen(&app, 80, 24);
    assert!(s.contains("Could not load missing.csv"), "{s}");
    insta::assert_snapshot!("load_error_80x24", s);
}

#[test]
fn replay_shows_the_records() {
    let (ds, p, _) = testkit::demo();
    let smc = testkit::record(
        &ds,
        &p,
        &testkit::smc_with(&p.names, testkit::posterior_of(&p), 750.0, 8, 1),
    );
    let ep = testkit::record(
        &ds,
        &p,
        &testkit::ep_with(&p.names, testkit::posterior_of(&p), 750.0, 12, true),
    );
    // Through JSON, as `pacauc replay` reads them.
    let back = |r: &pacauc::engine::record::RunRecord| {
        pacauc::engine::record::RunRecord::from_json(&r.to_json()).unwrap()
    };
    let app = App::replay(
        vec![
            ("smc.json".into(), back(&smc)),
            ("ep.json".into(), back(&ep)),
        ],
        ViewOptions::default(),
    );
    insta::assert_snapshot!("replay_120x40", screen(&app, 120, 40));
}

#[test]
fn tiny_and_odd_sizes_never_panic() {
    let apps = [empty(), live(), finished()];
    for app in &apps {
        for w in 0..=20 {
            for h in 0..=5 {
                let s = screen(app, w, h);
                if w >= 10 && h >= 1 {
                    assert!(s.starts_with("terminal"), "{w}×{h}: {s}");
                }
            }
        }
        for (w, h) in [
            (59, 16),
            (60, 15),
            (60, 16),
            (99, 32),
            (100, 31),
            (100, 32),
            (300, 100),
            (61, 17),
        ] {
            screen(app, w, h);
        }
    }
    // Every pane drawn directly into small rectangles.
    let app = finished();
    for pane in Pane::ALL {
        for w in 0..=24 {
            for h in 0..=8 {
                let mut t = Terminal::new(TestBackend::new(w, h)).unwrap();
                t.draw(|f| ui::render_pane(&app, pane, f.area(), f))
                    .unwrap();
            }
        }
    }
}

#[test]
fn no_color_means_no_colour() {
    let mut app = finished();
    app.options.color = false;
    let mut t = Terminal::new(TestBackend::new(120, 40)).unwrap();
    t.draw(|f| ui::render(&app, f)).unwrap();
    for c in t.backend().buffer().content() {
        assert_eq!(c.fg, Color::Reset, "coloured cell {:?}", c.symbol());
        assert_eq!(c.bg, Color::Reset);
    }
    // With colours, still only the default background.
    let app = finished();
    t.draw(|f| ui::render(&app, f)).unwrap();
    assert!(
        t.backend()
            .buffer()
            .content()
            .iter()
            .all(|c| c.bg == Color::Reset)
    );
    assert!(
        t.backend()
            .buffer()
            .content()
            .iter()
            .any(|c| c.fg != Color::Reset)
    );
}

#[test]
fn a_long_stage_shows_its_moves() {
    let mut app = live();
    let mv = pacauc::engine::event::SmcMove {
        stage: 6,
        gamma: 200.0,
        step: 17,
        acceptance: 0.31,
        max_correlation: Some(0.42),
        elapsed: 12.5,
    };
    feed(
        &mut app,
        3,
        WorkerEvent::Event(pacauc::engine::Event::SmcMove(mv)),
    );
    let s = screen(&app, 120, 40);
    assert!(s.contains("stage 6 move 17/200 |corr| 0.42→0.1"), "{s}");
}

/// A real great-circle run on the demo data, fed event by event: the sampler
/// pane shows its chains (R-hat and ESS against steps with their targets, the
/// per-chain risk), the marginals show its coefficients, and the finished run
/// keeps them (replayed from its trace).
#[test]
fn a_great_circle_run_in_the_sampler_pane() {
    use pacauc::engine::record::{RunRecord, Seconds};
    use pacauc::engine::{Control, Event};
    use pacauc::spec::{MethodSpec, RunSpec, build};

    let (ds, p, data) = testkit::demo();
    let mut spec = RunSpec::for_method(data, "gcs").unwrap();
    if let MethodSpec::Gcs(g) = &mut spec.method {
        (g.warmup, g.max_steps, g.min_ess) = (50, 400, 100.0);
    }
    let problem = build::problem(&spec, &p).unwrap();
    let mut events = Vec::new();
    let mut fit = build::engine(&spec)
        .run(&problem, &Control::new(), &mut |e: Event| events.push(e))
        .unwrap();
    let batches = events
        .iter()
        .filter(|e| matches!(e, Event::GcsBatch(_)))
        .count();
    assert!(batches >= 2, "{batches} batches");

    let mut app = empty();
    app.enqueue(spec.clone());
    for e in &events {
        feed(&mut app, 1, WorkerEvent::Event(e.clone()));
    }
    key(&mut app, Key::Char('2'));
    for (w, h) in [(120, 40), (80, 24)] {
        let s = screen(&app, w, h);
        for want in [
            "Sampler",
            "#1 gcs running",
            "R-hat",
            "bulk ESS",
            "risk/chain",
        ] {
            assert!(s.contains(want), "{w}×{h}: no '{want}' in\n{s}");
        }
    }
    key(&mut app, Key::Char('4'));
    assert!(screen(&app, 120, 40).contains("#1 gcs"));

    fit.trace = events.iter().filter_map(Event::for_trace).collect();
    let seconds = Seconds {
        load: 0.0,
        fit: 1.0,
        total: 1.0,
    };
    let rec = RunRecord::new(
        &ds,
        &p,
        &fit,
        spec.to_value(),
        serde_json::json!({}),
        seconds,
    );
    feed(&mut app, 1, WorkerEvent::Finished(Box::new(rec)));
    key(&mut app, Key::Char('2'));
    let s = screen(&app, 120, 40);
    // A run stopped at its step cap is marked as such (issue 16's marks).
    let status = if fit.converged {
        "#1 gcs done"
    } else {
        "#1 gcs not conv."
    };
    assert!(s.contains(status) && s.contains("R-hat"), "{s}");
    // Tiny terminals do not panic.
    for (w, h) in [(60, 16), (20, 5)] {
        screen(&app, w, h);
    }
}

/// Every pane at the sizes people use (tabbed at 80×24 and 100×30, the grid
/// and each pane zoomed at 120×40) wraps what does not fit rather than
/// cutting it: no ellipsis, and each pane's legend and status lines whole.
#[test]
fn nothing_is_cut_at_80x24_100x30_and_120x40() {
    // Pieces that are never split (a legend entry, a label with its value).
    let whole: [(Pane, &[&str]); 4] = [
        (
            Pane::Dataset,
            &["--target", "--positive", "stratified split"],
        ),
        (Pane::Smc, &["▄ accepted", "moves 13/1", "evals/s", "log Z"]),
        (Pane::Ep, &["skipped ", "log Z"]),
        (Pane::Results, &["─ chance", "test ±SE", "vs ▶"]),
    ];
    let mut app = finished();
    for (w, h) in [(80, 24), (100, 30), (120, 40)] {
        for zoom in [false, true] {
            for (i, pane) in Pane::ALL.iter().enumerate() {
                key(&mut app, Key::Char(char::from(b'1' + i as u8)));
                if zoom {
                    key(&mut app, Key::Char('z'));
                }
                let s = screen(&app, w, h);
                if zoom {
                    key(&mut app, Key::Char('z'));
                }
                assert!(
                    !s.contains('…'),
                    "{w}×{h} {pane:?} zoom {zoom}: cut text\n{s}"
                );
                for (p, pieces) in &whole {
                    if *p != *pane {
                        continue;
                    }
                    for piece in *pieces {
                        assert!(s.contains(piece), "{w}×{h} {pane:?}: '{piece}' cut\n{s}");
                    }
                }
            }
        }
    }
}

/// The marginals overlay only runs of one posterior: a Gaussian fit at
/// another γ is named in the title, not drawn beside the sampler's.
#[test]
fn marginals_overlay_only_one_posterior() {
    let (ds, p, _) = testkit::demo();
    let mut app = finished();
    let cfg = pacauc::spec::RunSpec::for_method(testkit::demo().2, "ep").unwrap();
    app.enqueue(cfg);
    let ep = testkit::ep_with(&p.names, testkit::posterior_of(&p), 16.0, 12, false);
    feed(
        &mut app,
        4,
        WorkerEvent::Finished(Box::new(testkit::record(&ds, &p, &ep))),
    );
    key(&mut app, Key::Char('4'));
    let s = screen(&app, 120, 40);
    let title = s.lines().find(|l| l.contains("4 Marginals")).unwrap();
    assert!(
        title.contains("not overlaid") && title.contains("#3 smc"),
        "{s}"
    );
    assert!(!s.contains("◆ #3"), "the other posterior is drawn:\n{s}");
}

/// Replayed records keep DeLong's components, so the results table compares
/// them as it compares live runs; a record whose components do not match its
/// test rows is refused as damaged.
#[test]
fn replayed_runs_get_their_paired_difference() {
    let (ds, p, _) = testkit::demo();
    let names = &p.names;
    let a = testkit::record(
        &ds,
        &p,
        &testkit::ep_with(names, testkit::posterior_of(&p), 750.0, 12, false),
    );
    let mut other = testkit::posterior_of(&p);
    other.0.iter_mut().step_by(2).for_each(|m| *m = -*m);
    let b = testkit::record(&ds, &p, &testkit::ep_with(names, other, 750.0, 12, false));
    let back = |r: &pacauc::engine::record::RunRecord| {
        pacauc::engine::record::RunRecord::from_json(&r.to_json()).unwrap()
    };
    let (a, b) = (back(&a), back(&b));
    let paired = a
        .test_components
        .as_ref()
        .unwrap()
        .paired(b.test_components.as_ref().unwrap())
        .unwrap();
    let mut app = App::replay(
        vec![("a.json".into(), a.clone()), ("b.json".into(), b)],
        ViewOptions::default(),
    );
    key(&mut app, Key::Char('6'));
    let s = screen(&app, 100, 30);
    let cell = format!("{:+.3} p", paired.difference);
    assert!(
        paired.difference.abs() > 1e-3 && s.contains(&cell),
        "{cell}\n{s}"
    );
    // Damaged: one value too many, or a value outside [0, 1].
    let mut v: serde_json::Value = serde_json::from_str(&a.to_json()).unwrap();
    v["test_components"]["v10"]
        .as_array_mut()
        .unwrap()
        .push(0.5.into());
    let e = pacauc::engine::record::RunRecord::from_value(v).unwrap_err();
    assert!(
        e.contains("damaged") && e.contains("test_components"),
        "{e}"
    );
    let mut v: serde_json::Value = serde_json::from_str(&a.to_json()).unwrap();
    v["test_components"]["v01"][0] = 7.0.into();
    let e = pacauc::engine::record::RunRecord::from_value(v).unwrap_err();
    assert!(e.contains("not a share"), "{e}");
}
