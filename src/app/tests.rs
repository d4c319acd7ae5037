//! `update` without a terminal: runs, queue, cancel, stale events, overlays.

use std::path::PathBuf;

use super::*;
use crate::engine::data::{Dataset, LoadProgress, Prepared};
use crate::engine::event::Event;
use crate::testkit;

fn app() -> (App, Dataset, Prepared) {
    let (ds, p, args) = testkit::demo();
    let info = DataInfo::of(&ds, &p, args);
    (
        App::new(DataState::Loaded(Box::new(info)), ViewOptions::default()),
        ds,
        p,
    )
}

fn record(ds: &Dataset, p: &Prepared, script: &testkit::Script) -> Box<RunRecord> {
    Box::new(testkit::record(ds, p, script))
}

/// The default run of `method` on the demo data.
fn spec(method: &str) -> crate::spec::RunSpec {
    crate::spec::RunSpec::for_method(testkit::demo().2, method).unwrap()
}

fn msg(run: RunId, event: WorkerEvent) -> Msg {
    Msg::Worker(WorkerMsg { run, event })
}

fn started(cmds: &[Command]) -> Vec<RunId> {
    cmds.iter()
        .filter_map(|c| match c {
            Command::Start { run, .. } => Some(*run),
            _ => None,
        })
        .collect()
}

#[test]
fn autorun_runs_one_method_at_a_time() {
    let (mut app, ds, p) = app();
    let cmds = app.autorun();
    let methods = crate::spec::registry::AUTORUN_ORDER;
    assert_eq!(app.runs.len(), methods.len());
    assert_eq!(started(&cmds), vec![1], "only the first starts");
    assert_eq!(app.active, Some(1));
    assert_eq!(app.queued(), methods.len() - 1);
    let script = testkit::ep(&p.names, 450.0, 5, false);
    let cmds = update(
        &mut app,
        msg(1, WorkerEvent::Finished(record(&ds, &p, &script))),
    );
    assert_eq!(app.run(1).unwrap().status, RunStatus::Finished);
    if methods.len() > 1 {
        assert_eq!(started(&cmds), vec![2], "the next queued run starts");
        assert_eq!(app.active, Some(2));
    }
    assert!(app.status.as_ref().unwrap().text.contains("finished"));
}

#[test]
fn events_fill_the_traces_and_stale_events_are_ignored() {
    let (mut app, ds, p) = app();
    update(&mut app, Msg::Key(Key::Char('n')));
    let cmds = update(&mut app, Msg::Key(Key::Enter));
    let id = started(&cmds)[0];
    let smc = testkit::smc(&p.names, 450.0, 6, 1);
    for e in &smc.events[..3] {
        update(&mut app, msg(id, WorkerEvent::Event(e.clone())));
    }
    assert_eq!(app.run(id).unwrap().smc.len(), 3);
    assert!(
        !app.run(id).unwrap().histograms.is_empty(),
        "live snapshot kept"
    );
    assert_eq!(
        app.run(id).unwrap().coefficients(&p.names).len(),
        p.names.len()
    );
    assert!(app.run(id).unwrap().inclusion(&p.names).is_none());
    // In-stage move progress is shown until the stage ends.
    let mv = crate::engine::event::SmcMove {
        stage: 4,
        gamma: 100.0,
        step: 7,
        acceptance: 0.3,
        max_correlation: Some(0.4),
        elapsed: 2.0,
    };
    update(
        &mut app,
        msg(id, WorkerEvent::Event(Event::SmcMove(mv.clone()))),
    );
    assert_eq!(app.run(id).unwrap().smc_move, Some(mv));
    assert_eq!(app.run(id).unwrap().smc.len(), 3);
    // A spike-and-slab stage's inclusion shows while the run goes on.
    let mut stage = smc.events[2].clone();
    if let Event::SmcStage(s) = &mut stage {
        s.inclusion = Some(vec![0.25; p.names.len()]);
    }
    update(&mut app, msg(id, WorkerEvent::Event(stage)));
    assert!(app.run(id).unwrap().smc_move.is_none());
    let live = app.run(id).unwrap().inclusion(&p.names).unwrap();
    assert_eq!(live.len(), p.names.len());
    assert_eq!(live[0], (p.names[0].clone(), 0.25));
    // Cancel: later events of that run are stale.
    let cmds = update(&mut app, Msg::Key(Key::Char('c')));
    assert_eq!(cmds, vec![Command::Cancel { run: id }]);
    update(&mut app, msg(id, WorkerEvent::Event(smc.events[3].clone())));
    assert_eq!(app.run(id).unwrap().smc.len(), 4, "stale event applied");
    update(&mut app, msg(id, WorkerEvent::Cancelled));
    assert_eq!(app.run(id).unwrap().status, RunStatus::Cancelled);
    assert_eq!(app.active, None);
    // Unknown runs are ignored.
    assert!(update(&mut app, msg(99, WorkerEvent::Cancelled)).is_empty());
    let _ = ds;
}

#[test]
fn cancel_keeps_previous_results() {
    let (mut app, ds, p) = app();
    let a = started(&app.enqueue(spec("logit")))[0];
    let script = testkit::ep(&p.names, 450.0, 5, true);
    update(
        &mut app,
        msg(a, WorkerEvent::Finished(record(&ds, &p, &script))),
    );
    let b = started(&app.enqueue(spec("logit")))[0];
    update(&mut app, Msg::Key(Key::Char('c')));
    update(&mut app, msg(b, WorkerEvent::Cancelled));
    let first = app.run(a).unwrap();
    assert_eq!(first.status, RunStatus::Finished);
    assert!(first.record.is_some() && first.inclusion(&[]).is_some());
}

#[test]
fn queued_runs_wait_and_cancel_without_active_drops_the_queue() {
    let (mut app, _, _) = app();
    let a = started(&app.enqueue(spec("logit")))[0];
    assert!(started(&app.enqueue(spec("rankboost"))).is_empty());
    assert!(app.status.as_ref().unwrap().text.contains("queued"));
    update(&mut app, msg(a, WorkerEvent::Failed("boom".into())));
    assert!(matches!(app.run(a).unwrap().status, RunStatus::Failed(_)));
    assert!(app.status.as_ref().unwrap().error);
    assert_eq!(app.active, Some(a + 1), "a failure starts the next run");
    // A run that cannot start also lets the queue go on.
    let c = app.enqueue(spec("logit"));
    assert!(c.is_empty());
    let cmds = update(
        &mut app,
        Msg::StartFailed {
            run: a + 1,
            error: "bad".into(),
        },
    );
    assert_eq!(started(&cmds), vec![a + 2]);
}

#[test]
fn pause_resume_and_export() {
    let (mut app, ds, p) = app();
    assert!(
        update(&mut app, Msg::Key(Key::Char(' '))).is_empty(),
        "nothing to pause"
    );
    let a = started(&app.enqueue(spec("logit")))[0];
    assert_eq!(
        update(&mut app, Msg::Key(Key::Char(' '))),
        vec![Command::Pause {
            run: a,
            paused: true
        }]
    );
    assert_eq!(app.run(a).unwrap().status, RunStatus::Paused);
    assert_eq!(
        update(&mut app, Msg::Key(Key::Char(' '))),
        vec![Command::Pause {
            run: a,
            paused: false
        }]
    );
    assert!(
        update(&mut app, Msg::Key(Key::Char('e'))).is_empty(),
        "no record yet"
    );
    assert!(app.status.as_ref().unwrap().error);
    let script = testkit::smc(&p.names, 450.0, 4, 0);
    update(
        &mut app,
        msg(a, WorkerEvent::Finished(record(&ds, &p, &script))),
    );
    assert_eq!(
        update(&mut app, Msg::Key(Key::Char('e'))),
        vec![Command::Export { run: a }]
    );
    update(
        &mut app,
        Msg::Exported {
            run: a,
            result: Ok(PathBuf::from("x.json")),
        },
    );
    assert!(app.status.as_ref().unwrap().text.contains("x.json"));
    assert_eq!(
        app.run(a).unwrap().file.as_deref(),
        Some(std::path::Path::new("x.json"))
    );
    // Re-run: same settings, new id.
    let cmds = update(&mut app, Msg::Key(Key::Char('r')));
    assert_eq!(started(&cmds), vec![a + 1]);
    assert_eq!(app.run(a + 1).unwrap().spec, app.run(a).unwrap().spec);
}

#[test]
fn focus_overlays_and_quit() {
    let (mut app, _, _) = app();
    assert_eq!(app.focus, Pane::Dataset);
    update(&mut app, Msg::Key(Key::Tab));
    assert_eq!(app.focus, Pane::Smc);
    update(&mut app, Msg::Key(Key::BackTab));
    update(&mut app, Msg::Key(Key::BackTab));
    assert_eq!(app.focus, Pane::Results);
    update(&mut app, Msg::Key(Key::Char('4')));
    assert_eq!(app.focus, Pane::Marginals);
    update(&mut app, Msg::Key(Key::Char('?')));
    assert_eq!(app.overlay, Overlay::Help);
    update(&mut app, Msg::Key(Key::Char('j')));
    assert_eq!(app.overlay, Overlay::Help, "help swallows other keys");
    update(&mut app, Msg::Key(Key::Esc));
    assert_eq!(app.overlay, Overlay::None);
    // In the form, q types; Esc closes; Ctrl-C always quits.
    update(&mut app, Msg::Key(Key::Char('n')));
    update(&mut app, Msg::Key(Key::Char('q')));
    assert!(!app.quit);
    update(&mut app, Msg::Key(Key::Esc));
    assert_eq!(app.overlay, Overlay::None);
    update(&mut app, Msg::Key(Key::Char('z')));
    assert!(app.zoom);
    update(&mut app, Msg::Key(Key::Esc));
    assert!(!app.zoom);
    update(&mut app, Msg::Key(Key::Char('q')));
    assert!(app.quit);
    let (mut app, _, _) = self::app();
    update(&mut app, Msg::Key(Key::Char('n')));
    update(&mut app, Msg::Key(Key::CtrlC));
    assert!(app.quit);
}

#[test]
fn selection_is_clamped_to_the_data() {
    let (mut app, _, p) = app();
    update(&mut app, Msg::Key(Key::Char('4')));
    for _ in 0..100 {
        update(&mut app, Msg::Key(Key::PageDown));
    }
    assert_eq!(app.coef_sel, p.names.len() - 1);
    for _ in 0..100 {
        update(&mut app, Msg::Key(Key::Up));
    }
    assert_eq!(app.coef_sel, 0);
}

#[test]
fn replay_fills_every_run_from_its_record() {
    let (_, ds, p) = app();
    let smc = record(&ds, &p, &testkit::smc(&p.names, 450.0, 6, 2));
    let ep = record(&ds, &p, &testkit::ep(&p.names, 450.0, 9, true));
    let ep_spec = ep.spec.clone();
    let app = App::replay(
        vec![
            (PathBuf::from("a.json"), *smc),
            (PathBuf::from("b.json"), *ep),
        ],
        ViewOptions::default(),
    );
    assert_eq!(app.runs.len(), 2);
    assert_eq!(app.run(1).unwrap().smc.len(), 6);
    assert!(!app.run(1).unwrap().histograms.is_empty());
    assert_eq!(app.run(2).unwrap().ep.len(), 9);
    assert!(app.run_for(|r| r.inclusion(&[]).is_some()).is_some());
    assert_eq!(app.names(), p.names.as_slice());
    assert!(app.data_spec().is_none(), "nothing to re-run on");
    // A replayed run's spec is its record's (the form's preset, its EP tolerance).
    assert_eq!(app.run(2).unwrap().spec.to_value(), ep_spec);
    assert_eq!(app.run(2).unwrap().spec.method_name(), "ep");
    let mut app = app;
    assert!(update(&mut app, Msg::Key(Key::Char('r'))).is_empty());
    assert!(app.status.as_ref().unwrap().error);
}

#[test]
fn load_failure_is_a_state_not_a_crash() {
    let mut app = App::new(
        DataState::Failed {
            path: "x.csv".into(),
            error: "no such file".into(),
        },
        ViewOptions::default(),
    );
    assert!(app.autorun().is_empty());
    update(&mut app, Msg::Key(Key::Char('n')));
    assert_eq!(app.overlay, Overlay::None);
    assert!(app.status.as_ref().unwrap().error);
}

#[test]
fn sweeps_without_sds_still_give_means() {
    let (mut app, _, p) = app();
    let id = started(&app.enqueue(spec("logit")))[0];
    let mut script = testkit::ep(&p.names, 450.0, 3, false);
    for e in &mut script.events {
        if let crate::engine::Event::EpSweep(s) = e {
            s.sd.clear();
        }
        update(&mut app, msg(id, WorkerEvent::Event(e.clone())));
    }
    let coefs = app.run(id).unwrap().coefficients(&p.names);
    assert_eq!(coefs.len(), p.names.len());
    assert!(coefs.iter().all(|c| c.mean.is_finite() && c.sd.is_nan()));
    // The panes draw it (NaN never reaches a chart).
    let mut t = ratatui::Terminal::new(ratatui::backend::TestBackend::new(120, 40)).unwrap();
    t.draw(|f| crate::tui::ui::render(&app, f)).unwrap();
}

/// The text the frame drew.
fn screen(app: &App) -> String {
    let mut t = ratatui::Terminal::new(ratatui::backend::TestBackend::new(120, 40)).unwrap();
    t.draw(|f| crate::tui::ui::render(app, f)).unwrap();
    let buf = t.backend().buffer();
    buf.content().iter().map(|c| c.symbol()).collect()
}

#[test]
fn vb_iterations_fill_the_convergence_pane() {
    use crate::engine::event::VbIter;
    for stochastic in [false, true] {
        let (mut app, _, p) = app();
        let id = started(&app.enqueue(spec("vb")))[0];
        let d = p.names.len();
        for i in 1..=5 {
            let it = VbIter {
                iteration: i * if stochastic { 100 } else { 1 },
                objective: 10.0 / i as f64,
                grad_norm: 10f64.powi(-(i as i32)),
                step: 1.0,
                estimate: stochastic,
                mean: vec![i as f64; d],
                sd: vec![0.5; d],
                elapsed: 0.01 * i as f64,
            };
            update(&mut app, msg(id, WorkerEvent::Event(Event::VbIter(it))));
        }
        let run = app.run(id).unwrap();
        assert_eq!(run.vb.len(), 5);
        assert!(run.is_vb() && run.is_gaussian() && !run.is_ep());
        // The marginals pane's coefficients are the latest iteration's.
        let coefs = run.coefficients(&p.names);
        assert!(coefs.iter().all(|c| c.mean == 5.0 && c.sd == 0.5));
        let text = screen(&app);
        assert!(text.contains("Convergence"), "{text}");
        let (optimizer, marker) = if stochastic {
            ("Adam", "held-out")
        } else {
            ("L-BFGS", "F = γ·E[R] + KL")
        };
        assert!(text.contains(optimizer) && text.contains(marker), "{text}");
    }
}

#[test]
fn results_table_shows_the_certificate_and_khat() {
    use crate::engine::bounds::{Sizes, from_parts};
    let (mut app, ds, p) = app();
    let id = started(&app.enqueue(spec("ep")))[0];
    let mut rec = record(&ds, &p, &testkit::ep(&p.names, 450.0, 5, false));
    let sizes = Sizes {
        n_pos: 150,
        n_neg: 300,
        d: p.names.len(),
    };
    rec.bound = Some(from_parts(0.125, 3.0, sizes, 0.05, "gaussian"));
    let risk = rec.bound.as_ref().unwrap().risk;
    assert!(risk > 0.125 && risk < 0.5, "{risk}");
    rec.details["is_check"] = serde_json::json!({"khat": 0.8125, "trusted": false});
    update(&mut app, msg(id, WorkerEvent::Finished(rec)));
    let text = screen(&app);
    assert!(
        text.contains("bound") && text.contains(&format!("{risk:.4}")),
        "{text}"
    );
    assert!(text.contains("0.81"), "{text}");
}

/// A vacuous certificate is said (record, messages, the bound's cell) but
/// does not mark the run's status: the fit is sound, the bound uninformative.
/// Any other warning still does.
#[test]
fn a_vacuous_certificate_does_not_mark_the_status() {
    use crate::engine::quality::{Warning, code};
    let (mut app, ds, p) = app();
    let id = started(&app.enqueue(spec("ep")))[0];
    let mut rec = record(&ds, &p, &testkit::ep(&p.names, 450.0, 5, false));
    let warn = |c: &str| Warning {
        code: c.into(),
        message: format!("a {c} warning"),
    };
    rec.warnings = vec![warn(code::DATA), warn(code::CERTIFICATE_VACUOUS)];
    update(&mut app, msg(id, WorkerEvent::Finished(rec.clone())));
    let run = app.run(id).unwrap();
    assert_eq!(run.status_text(), "done");
    assert!(!run.is_doubtful());
    assert!(
        app.messages
            .warnings()
            .any(|e| e.text.contains("certificate_vacuous"))
    );
    let id = started(&app.enqueue(spec("ep")))[0];
    rec.warnings.push(warn(code::CV_CHOICE_AT_EDGE));
    update(&mut app, msg(id, WorkerEvent::Finished(rec)));
    assert_eq!(app.run(id).unwrap().status_text(), "done ⚠");
}

/// While the file loads, keys answer and start nothing; the default runs
/// start when it arrives, and a failed load says why.
#[test]
fn keys_answer_while_loading_and_runs_start_when_the_data_arrives() {
    let loading = || DataState::Loading {
        path: "big.csv".into(),
        bytes: Some(152_000_000),
        since: std::time::Instant::now(),
        progress: Default::default(),
    };
    let mut app = App::new(loading(), ViewOptions::default());
    assert!(app.is_loading());
    assert!(
        app.status
            .as_ref()
            .is_some_and(|s| s.text.contains("loading big.csv"))
    );
    for k in ['n', 'r', '?', 'm', 'e', ' ', 'c', 'x', 'p'] {
        let cmds = update(&mut app, Msg::Key(Key::Char(k)));
        assert!(started(&cmds).is_empty(), "{k} started a run while loading");
        update(&mut app, Msg::Key(Key::Esc));
    }
    let cmds = update(&mut app, Msg::Key(Key::Enter));
    assert!(started(&cmds).is_empty());
    let (ds, p, args) = testkit::demo();
    let cmds = app.on_data_loaded(
        DataState::Loaded(Box::new(DataInfo::of(&ds, &p, args))),
        true,
    );
    assert_eq!(started(&cmds), vec![1], "the first default run starts");
    assert!(!app.is_loading());
    assert!(
        !app.status
            .as_ref()
            .is_some_and(|s| s.text.contains("loading"))
    );

    let mut app = App::new(loading(), ViewOptions::default());
    let cmds = app.on_data_loaded(
        DataState::Failed {
            path: "big.csv".into(),
            error: "line 7, column 3: not a number".into(),
        },
        false,
    );
    assert!(cmds.is_empty());
    assert!(app.status.as_ref().is_some_and(|s| s.error));
}

/// The loading pane tells the stage, the share of the file read (a bar) and
/// the rows once counted, from what the loader writes into `LoadProgress`.
#[test]
fn the_loading_pane_follows_the_load() {
    use crate::engine::data::{LoadOptions, LoadStage};
    let progress = std::sync::Arc::new(LoadProgress::new());
    let app = App::new(
        DataState::Loading {
            path: "big.csv".into(),
            bytes: Some(152_000_000),
            since: std::time::Instant::now(),
            progress: progress.clone(),
        },
        ViewOptions::default(),
    );
    let before = testkit::screen(&app, 120, 40);
    assert!(before.contains("› reading the cells"), "{before}");
    assert!(!before.contains("cells —"), "no rows counted yet: {before}");

    let csv =
        crate::spec::demo_source::csv(crate::engine::data::demo::NAMES[0]).expect("the demo table");
    let path = std::env::temp_dir().join(format!("pacauc-loading-{}.csv", std::process::id()));
    std::fs::write(&path, &csv).unwrap();
    let ds = Dataset::load_observed(&path, &LoadOptions::default(), Some(&progress));
    std::fs::remove_file(&path).ok();
    let ds = ds.expect("the demo loads");
    let now = progress.snapshot();
    assert_eq!(now.stage, LoadStage::Typing);
    assert_eq!(now.read_fraction, Some(1.0));
    assert_eq!(
        now.rows,
        Some(ds.rows() as u64),
        "no row of the demo is dropped"
    );
    let after = testkit::screen(&app, 120, 40);
    assert_eq!(ds.rows(), 1000, "the demo's size, as the pane groups it");
    assert!(
        after.contains("✓ reading the cells — 1,000 rows"),
        "{after}"
    );
    assert!(after.contains("› typing the columns"), "{after}");
}

/// A default run above the machine's limits is not started (the log says
/// why and what fits); in the run form the first Enter shows the refusal and
/// the second runs the same spec anyway.
#[test]
fn runs_above_the_cost_limit_are_refused_until_confirmed() {
    let (mut app, _, _) = app();
    app.machine.limits.seconds = 1e-9;
    let cmds = app.autorun();
    assert!(started(&cmds).is_empty());
    assert!(app.runs.is_empty());
    let status = app.status.clone().expect("a status");
    assert!(
        status.error && status.text.contains("not started"),
        "{status:?}"
    );
    let why = app
        .messages
        .warnings()
        .filter(|e| e.text.contains("what fits") || e.text.contains("Settings that fit"))
        .count();
    assert_eq!(
        why,
        crate::spec::registry::AUTORUN_ORDER.len() + 1,
        "one per method and the status"
    );

    update(&mut app, Msg::Key(Key::Char('n')));
    let cmds = update(&mut app, Msg::Key(Key::Enter));
    assert!(
        started(&cmds).is_empty(),
        "the first Enter shows the refusal"
    );
    let Overlay::Form(form) = &app.overlay else {
        panic!("the form stays open")
    };
    let error = form.error.clone().unwrap_or_default();
    assert!(
        error.contains(FORM_ANYWAY) && error.contains("estimated"),
        "{error}"
    );
    let cmds = update(&mut app, Msg::Key(Key::Enter));
    assert_eq!(started(&cmds), vec![1], "the second Enter runs it anyway");

    let (mut app, _, _) = self::app();
    assert!(!started(&app.autorun()).is_empty(), "within the limits");
}
