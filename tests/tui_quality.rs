//! Issue 16 in the explorer (points 1–3, 5 and 8): doubtful and cancelled runs
//! are marked, every message is readable in full in the message log (m), the
//! results table keeps status, log Z, γ and the prior at 80×24, traces differ
//! without colour, the dataset pane says the target and positive class and
//! why, the inclusion pane compares EP with SMC, exports say where they land.

use pacauc::app::keys::Key;
use pacauc::app::{App, DataInfo, DataState, Msg, ViewOptions, update};
use pacauc::engine::Event;
use pacauc::engine::event::LogLevel;
use pacauc::testkit;
use pacauc::worker::{WorkerEvent, WorkerMsg};

use pacauc::testkit::screen;

fn feed(app: &mut App, run: u64, event: WorkerEvent) {
    update(app, Msg::Worker(WorkerMsg { run, event }));
}

fn key(app: &mut App, k: Key) {
    update(app, Msg::Key(k));
}

fn app(color: bool) -> App {
    let (ds, p, args) = testkit::demo();
    App::new(
        DataState::Loaded(Box::new(DataInfo::of(&ds, &p, args))),
        ViewOptions {
            color,
            ..ViewOptions::default()
        },
    )
}

fn spec(m: &str) -> pacauc::spec::RunSpec {
    pacauc::spec::RunSpec::for_method(testkit::demo().2, m).unwrap()
}

/// EP (spike-and-slab) finished, then SMC with `stages` of 8 stages fed; SMC
/// finishes with `converged` when all 8 are, or is cancelled when `cancel`.
fn runs(converged: bool, stages: usize, cancel: bool) -> App {
    let (ds, p, _) = testkit::demo();
    let mut app = app(false);
    let names = p.names.clone();
    let ep = testkit::ep_with(&names, testkit::posterior_of(&p), 750.0, 12, true);
    let mut smc = testkit::smc_with(&names, testkit::posterior_of(&p), 750.0, 8, 1);
    smc.fit.converged = converged;
    smc.fit.inclusion = Some((0..names.len()).map(|k| 1.0 / (1.0 + k as f64)).collect());
    app.enqueue(spec("ep"));
    app.enqueue(spec("smc"));
    for e in &ep.events {
        feed(&mut app, 1, WorkerEvent::Event(e.clone()));
    }
    feed(
        &mut app,
        1,
        WorkerEvent::Finished(Box::new(testkit::record(&ds, &p, &ep))),
    );
    for e in &smc.events[..stages] {
        feed(&mut app, 2, WorkerEvent::Event(e.clone()));
    }
    if cancel {
        feed(&mut app, 2, WorkerEvent::Cancelled);
    } else if stages == smc.events.len() {
        feed(
            &mut app,
            2,
            WorkerEvent::Finished(Box::new(testkit::record(&ds, &p, &smc))),
        );
    }
    app
}

#[test]
fn a_run_that_did_not_converge_is_marked_everywhere() {
    let n = testkit::smc(&testkit::demo().1.names, 750.0, 8, 1)
        .events
        .len();
    let mut app = runs(false, n, false);
    let s = screen(&app, 80, 24);
    assert!(s.contains("NOT CONVERGED"), "status line:\n{s}");
    assert!(
        s.contains("⚠"),
        "unread warnings are counted in the header:\n{s}"
    );
    key(&mut app, Key::Char('6'));
    let s = screen(&app, 80, 24);
    assert!(s.contains("not conv."), "results table:\n{s}");
    key(&mut app, Key::Char('m'));
    let s = screen(&app, 80, 24);
    assert!(
        s.contains("[not_converged]") && s.contains("did not converge"),
        "log:\n{s}"
    );
}

#[test]
fn a_cancelled_run_says_its_posterior_is_partial() {
    let mut app = runs(true, 5, true);
    assert!(
        app.status
            .as_ref()
            .unwrap()
            .text
            .contains("partial posterior")
    );
    key(&mut app, Key::Char('6'));
    let s = screen(&app, 80, 24);
    assert!(s.contains("cancelled ⚠"), "{s}");
    // The forest plot of the cancelled run says it is not an answer.
    key(&mut app, Key::Char('4'));
    key(&mut app, Key::Char(']'));
    let s = screen(&app, 120, 40);
    assert!(s.contains("#2 smc (cancelled: partial posterior)"), "{s}");
}

#[test]
fn the_results_table_keeps_status_gamma_prior_and_the_paired_difference_at_80x24() {
    let n = testkit::smc(&testkit::demo().1.names, 750.0, 8, 1)
        .events
        .len();
    let mut app = runs(true, n, false);
    key(&mut app, Key::Char('6'));
    let s = screen(&app, 80, 24);
    let head = s
        .lines()
        .find(|l| l.contains("method"))
        .expect("a header row");
    for col in ["status", "vs ▶", "γ", "prior", "test"] {
        assert!(head.contains(col), "{col} missing: {head}");
    }
    assert!(s.contains("gauss"), "{s}");
}

/// `--no-color`: the SMC traces are drawn with different markers, and the
/// legend shows which is which; the moves-per-stage chart explains K.
#[test]
fn traces_differ_without_colour() {
    let mut app = runs(true, 6, false);
    key(&mut app, Key::Char('2'));
    key(&mut app, Key::Char('z'));
    let s = screen(&app, 120, 40);
    assert!(
        s.contains("⠒ ESS/N") && s.contains("• γ/γ_T") && s.contains("▄ accepted"),
        "{s}"
    );
    assert!(
        s.contains("moves/K") && s.contains("|corr|") && s.contains("K ≤ 200"),
        "{s}"
    );
    let body: String = s.lines().skip(2).take(20).collect();
    assert!(
        body.contains('•') && body.contains('▄'),
        "both markers drawn:\n{s}"
    );
}

#[test]
fn long_messages_are_readable_in_full_in_the_log() {
    let mut app = runs(true, 3, false);
    let long = format!(
        "a long engine warning {} END-OF-WARNING",
        "word ".repeat(60)
    );
    feed(
        &mut app,
        2,
        WorkerEvent::Event(Event::Log {
            level: LogLevel::Warn,
            message: long.clone(),
        }),
    );
    key(&mut app, Key::Char('m'));
    let s = screen(&app, 80, 24);
    assert!(s.contains("END-OF-WARNING"), "{s}");
    assert_eq!(s.matches("word").count(), 60, "{s}");
    assert_eq!(app.messages.unseen, 0, "opening the log marks it read");
    key(&mut app, Key::Esc);
    assert!(!screen(&app, 80, 24).contains("Messages:"));
}

#[test]
fn the_dataset_pane_says_target_and_positive_class_and_why() {
    let mut app = app(false);
    key(&mut app, Key::Char('z'));
    let s = screen(&app, 120, 40);
    assert!(
        s.contains("target 'y' (the last column; name another with --target)"),
        "{s}"
    );
    assert!(s.contains("positive '1'"), "{s}");
}

#[test]
fn the_inclusion_pane_compares_ep_with_smc() {
    let n = testkit::smc(&testkit::demo().1.names, 750.0, 8, 1)
        .events
        .len();
    let mut app = runs(true, n, false);
    key(&mut app, Key::Char('5'));
    key(&mut app, Key::Char('z'));
    let s = screen(&app, 120, 40);
    assert!(
        s.contains("#2 smc vs #1 ep") || s.contains("#1 ep vs #2 smc"),
        "{s}"
    );
    assert!(s.contains("#1 ") && s.contains("#2 "), "{s}");
}

#[test]
fn exports_say_where_they_land() {
    let mut app = app(true);
    app.announce_exports(std::path::PathBuf::from("/some/export/dir"));
    assert!(
        app.status
            .as_ref()
            .unwrap()
            .text
            .contains("/some/export/dir")
    );
    key(&mut app, Key::Char('?'));
    assert!(screen(&app, 120, 40).contains("e writes to /some/export/dir"));
}

#[test]
fn the_ep_axis_never_reads_1e_minus_0() {
    let mut app = runs(true, 1, false);
    key(&mut app, Key::Char('3'));
    key(&mut app, Key::Char('z'));
    assert!(!screen(&app, 120, 40).contains("1e-0 "));
}

#[test]
fn a_replayed_doubtful_record_is_marked_and_its_warnings_logged() {
    let (ds, p, _) = testkit::demo();
    let mut smc = testkit::smc_with(&p.names, testkit::posterior_of(&p), 750.0, 8, 1);
    smc.fit.converged = false;
    let record = testkit::record(&ds, &p, &smc);
    assert!(!record.converged);
    let app = App::replay(
        vec![(std::path::PathBuf::from("smc.json"), record)],
        ViewOptions {
            color: false,
            ..ViewOptions::default()
        },
    );
    let status = &app.status.as_ref().unwrap();
    assert!(
        status.error && status.text.contains("#1 not conv."),
        "{}",
        status.text
    );
    assert!(
        app.messages
            .warnings()
            .any(|w| w.text.contains("[not_converged]")),
        "{:?}",
        app.messages.entries
    );
    let s = screen(&app, 80, 24);
    assert!(s.contains("⚠ 1 m") && s.contains("not conv."), "{s}");
}

/// A long run's time still fits the results table's column.
#[test]
fn minutes_fit_the_time_column() {
    assert_eq!(pacauc::tui::ui::common::seconds(144.4), "2m 24s");
    assert_eq!(pacauc::tui::ui::common::seconds(725.0), "12m 05s");
}
