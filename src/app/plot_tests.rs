//! The `p` key's state machine: key → figures computed → `Command::Plot`
//! (folder, figures) → `Msg::Plotted` → status line; a live run's figures
//! are its traces so far; marked runs are drawn together.

use std::path::PathBuf;

use super::*;
use crate::testkit;
use crate::worker::WorkerMsg;

fn app() -> (
    App,
    crate::engine::data::Dataset,
    crate::engine::data::Prepared,
) {
    let (ds, p, args) = testkit::demo();
    let info = DataInfo::of(&ds, &p, args);
    let mut app = App::new(DataState::Loaded(Box::new(info)), ViewOptions::default());
    app.figures_dir = PathBuf::from("/figs");
    (app, ds, p)
}

fn start(app: &mut App, method: &str) -> RunId {
    let spec = RunSpec::for_method(testkit::demo().2, method).unwrap();
    let cmds = app.enqueue(spec);
    match cmds.as_slice() {
        [Command::Start { run, .. }] => *run,
        other => panic!("{other:?}"),
    }
}

fn event(app: &mut App, run: RunId, e: Event) {
    update(
        app,
        Msg::Worker(WorkerMsg {
            run,
            event: WorkerEvent::Event(e),
        }),
    );
}

fn plot(app: &mut App) -> Option<(PathBuf, Vec<crate::figures::Figure>)> {
    match update(app, Msg::Key(keys::Key::Char('p'))).as_slice() {
        [Command::Plot { dir, figures }] => Some((dir.clone(), figures.clone())),
        [] => None,
        other => panic!("{other:?}"),
    }
}

fn ids(figs: &[crate::figures::Figure]) -> Vec<&str> {
    figs.iter().map(|f| f.id.as_str()).collect()
}

#[test]
fn p_on_a_live_run_writes_its_traces_so_far_and_reports_the_folder() {
    let (mut app, _, p) = app();
    assert!(plot(&mut app).is_none(), "no run");
    assert!(app.status.as_ref().unwrap().error);
    let id = start(&mut app, "smc");
    // Nothing yet: said, no command.
    assert!(plot(&mut app).is_none());
    assert!(
        app.status
            .as_ref()
            .unwrap()
            .text
            .contains("nothing to draw")
    );
    let script = testkit::smc(&p.names, 450.0, 5, 1);
    for e in &script.events[..3] {
        event(&mut app, id, e.clone());
    }
    let (dir, figs) = plot(&mut app).expect("a command");
    // <data>-<method>-<run> in the figures folder.
    let data = app.data_info().unwrap().report.path.clone();
    let stem = crate::figures::file_name(&data)
        .replace(".csv", "")
        .replace('_', "-");
    assert_eq!(dir, PathBuf::from(format!("/figs/{stem}-smc-{id}")));
    assert_eq!(ids(&figs), vec!["smc-trace", "marginals"]);
    let status = &app.status.as_ref().unwrap().text;
    assert!(
        status.contains("so far") && status.contains(&format!("/figs/{stem}-smc-")),
        "{status}"
    );
    // The live figure is the pane's: the same stages.
    assert_eq!(figs[0], app.run(id).unwrap().smc_figure().unwrap());
    // A second p waits for the first write.
    assert!(plot(&mut app).is_none());
    assert!(app.status.as_ref().unwrap().text.contains("still writing"));
    let files = vec![dir.join("smc-trace.png"), dir.join("smc-trace.svg")];
    update(
        &mut app,
        Msg::Plotted {
            dir: dir.clone(),
            result: Ok(files),
        },
    );
    let s = app.status.as_ref().unwrap();
    assert!(
        !s.error
            && s.text
                .contains(&format!("wrote 2 figure file(s) to /figs/{stem}-smc-"))
    );
    // An error names the path and the fix.
    assert!(plot(&mut app).is_some());
    update(
        &mut app,
        Msg::Plotted {
            dir: dir.clone(),
            result: Err("cannot create /figs/x: permission denied".into()),
        },
    );
    let s = app.status.as_ref().unwrap();
    assert!(s.error && s.text.contains("/figs/x") && s.text.contains("--figures-dir"));
}

#[test]
fn p_on_marked_finished_runs_draws_them_together() {
    let (mut app, ds, p) = app();
    let a = start(&mut app, "ep");
    let ep = testkit::ep(&p.names, 450.0, 6, false);
    update(
        &mut app,
        Msg::Worker(WorkerMsg {
            run: a,
            event: WorkerEvent::Finished(Box::new(testkit::record(&ds, &p, &ep))),
        }),
    );
    let b = start(&mut app, "smc");
    let smc = testkit::smc(&p.names, 450.0, 4, 0);
    update(
        &mut app,
        Msg::Worker(WorkerMsg {
            run: b,
            event: WorkerEvent::Finished(Box::new(testkit::record(&ds, &p, &smc))),
        }),
    );
    // One run: its record's figures (as pacauc plot draws them).
    let (_, one) = plot(&mut app).unwrap();
    assert!(
        ids(&one).contains(&"roc") && ids(&one).contains(&"smc-trace"),
        "{:?}",
        ids(&one)
    );
    update(
        &mut app,
        Msg::Plotted {
            dir: PathBuf::new(),
            result: Ok(vec![]),
        },
    );
    // Mark both: one ROC figure with both curves (and the chance line).
    update(&mut app, Msg::Key(keys::Key::Char('x')));
    update(&mut app, Msg::Key(keys::Key::Char('[')));
    update(&mut app, Msg::Key(keys::Key::Char('x')));
    assert_eq!(app.marked.len(), 2);
    let (dir, figs) = plot(&mut app).unwrap();
    assert!(
        dir.to_string_lossy().ends_with(&format!("-runs-{a}-{b}")),
        "{dir:?}"
    );
    let roc = figs.iter().find(|f| f.id == "roc").unwrap();
    assert_eq!(roc.panels[0].series.len(), 3);
    assert!(ids(&figs).iter().any(|i| i.starts_with("ep-convergence")));
    // Unmark one: back to a single run's folder.
    update(
        &mut app,
        Msg::Plotted {
            dir,
            result: Ok(vec![]),
        },
    );
    update(&mut app, Msg::Key(keys::Key::Char('x')));
    assert_eq!(app.marked, vec![b]);
}
