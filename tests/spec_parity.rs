//! One run specification for every front end: a run started from the
//! explorer's form (typed keys → `RunSpec` → worker) and the same run from
//! `pacauc fit` (its command line shown by the form) give the same record, apart
//! from timings.

mod common;
use common::{json, pacauc};

use std::time::Duration;

use crossbeam_channel::bounded;
use pacauc::app::keys::Key;
use pacauc::app::{App, Command, DataInfo, DataState, Msg, ViewOptions, update};
use pacauc::spec::{self, RunSpec};
use pacauc::testkit;
use pacauc::worker::{self, Job, WorkerEvent};

/// Removes what differs between two runs of the same spec: wall-clock times.
fn without_timings(v: &mut serde_json::Value) {
    match v {
        serde_json::Value::Object(m) => {
            m.retain(|k, _| !(k == "seconds" || k == "elapsed" || k.ends_with("_seconds")));
            m.values_mut().for_each(without_timings);
        }
        serde_json::Value::Array(a) => a.iter_mut().for_each(without_timings),
        _ => {}
    }
}

/// The path of the first place where `a` and `b` differ.
fn first_difference(a: &serde_json::Value, b: &serde_json::Value, at: &str) -> Option<String> {
    use serde_json::Value::{Array, Object};
    match (a, b) {
        (Object(x), Object(y)) => {
            x.keys()
                .chain(y.keys())
                .find_map(|k| match (x.get(k), y.get(k)) {
                    (Some(p), Some(q)) => first_difference(p, q, &format!("{at}.{k}")),
                    _ => Some(format!("{at}.{k} (only on one side)")),
                })
        }
        (Array(x), Array(y)) if x.len() == y.len() => x
            .iter()
            .zip(y)
            .enumerate()
            .find_map(|(i, (p, q))| first_difference(p, q, &format!("{at}[{i}]"))),
        _ => (a != b).then(|| format!("{at}: {a} vs {b}")),
    }
}

/// The spec the form submits after `keys` (from a fresh form: method first).
fn from_form(method: &str, fields: &[(&str, &str)]) -> RunSpec {
    let (ds, p, data) = testkit::demo();
    let mut app = App::new(
        DataState::Loaded(Box::new(DataInfo::of(&ds, &p, data))),
        ViewOptions::default(),
    );
    let key = |app: &mut App, k: Key| update(app, Msg::Key(k));
    key(&mut app, Key::Char('n'));
    let form = |app: &App| match &app.overlay {
        pacauc::app::Overlay::Form(f) => f.clone(),
        _ => panic!("the form is open"),
    };
    while form(&app).method() != method {
        key(&mut app, Key::Right);
    }
    for (field, text) in fields {
        let f = form(&app);
        let row = 1 + f.visible().iter().position(|s| s.key == *field).unwrap();
        while form(&app).cursor != row {
            key(&mut app, Key::Down);
        }
        if f.choices(f.visible()[row - 1]).is_empty() {
            for c in text.chars() {
                key(&mut app, Key::Char(c));
            }
        } else {
            while form(&app).value(field) != *text {
                key(&mut app, Key::Right);
            }
        }
    }
    let cmds = key(&mut app, Key::Enter);
    match cmds.as_slice() {
        [Command::Start { spec, .. }] => (**spec).clone(),
        other => panic!("no run started: {other:?} ({:?})", form(&app).error),
    }
}

/// The record the explorer's worker makes of `spec` (its split prepared as the
/// explorer prepares a run's: from the loaded data, with the run's seed).
fn worker_record(spec: &RunSpec) -> serde_json::Value {
    let (ds, _, _) = testkit::demo();
    let p = spec.data.prepare(&ds).unwrap();
    let spec::Built { engine, problem } = spec::build(spec, &p).unwrap();
    let job = Job {
        run: 1,
        spec: spec.clone(),
        engine,
        problem,
        dataset: std::sync::Arc::new(ds),
        prepared: std::sync::Arc::new(p),
        load_seconds: 0.0,
        snapshot_interval: Duration::from_millis(100),
    };
    let (tx, rx) = bounded(1 << 16);
    let _h = worker::spawn(job, tx).unwrap();
    loop {
        let m = rx
            .recv_timeout(Duration::from_secs(120))
            .expect("the worker answers");
        match m.event {
            WorkerEvent::Event(_) => {}
            WorkerEvent::Finished(r) => return serde_json::from_str(&r.to_json()).unwrap(),
            other => panic!("{other:?}"),
        }
    }
}

#[test]
fn the_form_and_fit_make_the_same_record() {
    let cases: &[(&str, &[(&str, &str)])] = &[
        ("logit", &[("seed", "2")]),
        ("rankboost", &[("rounds", "30")]),
        ("ep", &[("gamma", "2n"), ("tol", "1e-6")]),
        (
            "ep",
            &[
                ("prior", "spike-slab"),
                ("gamma", "1.5n"),
                ("inclusion_prior", "0.2"),
            ],
        ),
        ("smc", &[("particles", "600"), ("kernel", "rw")]),
        ("gcs", &[("max_steps", "600"), ("min_ess", "50")]),
    ];
    for (method, fields) in cases {
        let spec = from_form(method, fields);
        let mut from_worker = worker_record(&spec);
        let args = spec::to_args(&spec);
        let mut argv = vec!["fit"];
        argv.extend(args.iter().map(String::as_str));
        let mut from_cli = json(&pacauc(&argv));
        assert_eq!(
            from_cli["spec"], from_worker["spec"],
            "{method}: the same spec (the command line {argv:?})"
        );
        without_timings(&mut from_worker);
        without_timings(&mut from_cli);
        assert_eq!(
            first_difference(&from_cli, &from_worker, ""),
            None,
            "{method} {fields:?}"
        );
    }
}
