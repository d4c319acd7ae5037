use std::io::Write;
use std::path::{Path, PathBuf};

use super::*;
use crate::app::run_view::RunStatus;
use crate::app::{App, Msg, ViewOptions, update};
use crate::testkit;
use crate::worker::{WorkerEvent, WorkerMsg};

fn temp(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("pacauc-eventlog-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// A scripted SMC run written as `fit --events` writes it; the end optional.
fn write_log(path: &Path, stages: usize, end: bool) -> testkit::Script {
    let (ds, p, data) = testkit::demo();
    let script = testkit::smc(&p.names, 450.0, stages, 4);
    let spec = crate::spec::RunSpec::for_method(data, "smc").unwrap();
    let mut w = LogWriter::create(path, &Header::for_run(spec.to_value(), &ds, &p)).unwrap();
    for e in &script.events {
        w.event(&mut e.clone());
    }
    if end {
        w.end(Ok(&testkit::record(&ds, &p, &script))).unwrap();
    } else {
        // As a killed writer leaves it: what was sent is on disk, no end.
        w.abandon();
    }
    script
}

fn watch_app(paths: &[PathBuf]) -> (App, Follower) {
    let mut f = Follower::new(paths).unwrap();
    let mut app = App::watching(ViewOptions::default());
    for _ in 0..2 {
        for m in f.poll() {
            update(&mut app, Msg::Log(m));
        }
    }
    (app, f)
}

/// A finished log replays to the screen a run started inside shows (the
/// same worker messages, the same panes).
#[test]
fn a_finished_log_replays_as_the_run_looked_inside() {
    let dir = temp("replay");
    let path = dir.join("r.jsonl");
    let script = write_log(&path, 6, true);
    let (app, _) = watch_app(std::slice::from_ref(&path));
    assert_eq!(app.runs.len(), 1);
    assert_eq!(app.runs[0].status, RunStatus::Finished);
    assert_eq!(app.quit_word(), "quit");

    let (ds, p, data) = testkit::demo();
    let spec = crate::spec::RunSpec::for_method(data.clone(), "smc").unwrap();
    let mut inside = App::new(
        crate::app::DataState::Loaded(Box::new(crate::app::DataInfo::of(&ds, &p, data))),
        ViewOptions::default(),
    );
    let cmds = inside.enqueue(spec);
    assert_eq!(cmds.len(), 1);
    for e in &script.events {
        let event = WorkerEvent::Event(e.clone());
        update(&mut inside, Msg::Worker(WorkerMsg { run: 1, event }));
    }
    let record = Box::new(testkit::record(&ds, &p, &script));
    let event = WorkerEvent::Finished(record);
    update(&mut inside, Msg::Worker(WorkerMsg { run: 1, event }));
    // The panes (the footer's status line and the data path differ).
    let body = |s: String| s.lines().skip(1).take(30).collect::<Vec<_>>().join("\n");
    let a = body(testkit::screen(&app, 120, 40));
    let b = body(testkit::screen(&inside, 120, 40));
    assert_eq!(a, b);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A log without its end whose writer is gone (this test's own pid is alive,
/// so a dead one stands in) reads interrupted at its last stage.
#[test]
fn a_dead_writer_reads_interrupted_with_its_last_stage() {
    let dir = temp("dead");
    let path = dir.join("r.jsonl");
    write_log(&path, 5, false);
    // Rewrite the header's pid to a process that has ended.
    let mut child = std::process::Command::new("true").spawn().unwrap();
    let dead = child.id();
    child.wait().unwrap();
    let text = std::fs::read_to_string(&path).unwrap();
    let pid = format!("\"pid\":{}", std::process::id());
    let text = text.replacen(&pid, &format!("\"pid\":{dead}"), 1);
    std::fs::write(&path, &text).unwrap();
    // A cut last line, as a kill can leave it.
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .open(&path)
        .unwrap();
    f.write_all(b"{\"event\":\"smc_stage\",\"stage\":6,\"gam")
        .unwrap();
    drop(f);
    let (app, _) = watch_app(std::slice::from_ref(&path));
    let r = &app.runs[0];
    let RunStatus::Interrupted(why) = &r.status else {
        panic!("{:?}", r.status)
    };
    assert!(why.contains(&format!("process {dead} has ended")), "{why}");
    assert!(why.contains("incomplete"), "{why}");
    assert_eq!(r.smc.last().unwrap().stage, 5);
    assert_eq!(r.status_text(), "interrupted ⚠");
    let text = crate::cli::watch::describe(r);
    assert!(text.contains("interrupted at stage 5"), "{text}");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A live writer (this process) keeps the run running; the log is followed
/// as it grows, line by line, a cut line waiting for its end.
#[test]
fn a_growing_log_is_followed_and_a_cut_line_waits() {
    let dir = temp("grow");
    let path = dir.join("r.jsonl");
    write_log(&path, 3, false);
    let text = std::fs::read_to_string(&path).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    std::fs::write(&path, format!("{}\n", lines[..2].join("\n"))).unwrap();
    let (mut app, mut f) = watch_app(std::slice::from_ref(&path));
    assert_eq!(app.runs[0].status, RunStatus::Running);
    // Leaving the explorer leaves a followed run running: the footer says so.
    assert_eq!(app.quit_word(), "detach");
    let rest = lines[2..].join("\n") + "\n";
    let (a, b) = rest.split_at(rest.len() / 2);
    let mut file = std::fs::OpenOptions::new()
        .append(true)
        .open(&path)
        .unwrap();
    file.write_all(a.as_bytes()).unwrap();
    for m in f.poll() {
        update(&mut app, Msg::Log(m));
    }
    let mid = app.runs[0].smc.len();
    file.write_all(b.as_bytes()).unwrap();
    for m in f.poll() {
        update(&mut app, Msg::Log(m));
    }
    assert!(mid < 3 && app.runs[0].smc.len() == 3, "{mid}");
    assert_eq!(app.runs[0].status, RunStatus::Running);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Garbage is reported with its file and line and skipped; never a panic.
#[test]
fn garbage_lines_are_named_and_skipped() {
    let dir = temp("garbage");
    let path = dir.join("r.jsonl");
    write_log(&path, 2, true);
    let text = std::fs::read_to_string(&path).unwrap();
    let mut lines: Vec<String> = text.lines().map(String::from).collect();
    lines.insert(2, "hello".into());
    lines.insert(3, "{\"event\":\"smc_stage\",\"stage\":\"x\"}".into());
    lines.insert(4, "\u{0}\u{ff}".into());
    std::fs::write(&path, lines.join("\n") + "\n").unwrap();
    let mut f = Follower::new(std::slice::from_ref(&path)).unwrap();
    let problems: Vec<String> = f
        .poll()
        .into_iter()
        .filter_map(|m| match m.entry {
            LogEntry::Problem(p) => Some(p),
            _ => None,
        })
        .collect();
    assert_eq!(problems.len(), 3, "{problems:?}");
    assert!(problems[0].contains("r.jsonl:3: not a pacauc event log line"));
    assert!(problems[1].contains("r.jsonl:4: not a pacauc event"));
    // A file that is no log at all.
    let other = dir.join("x.jsonl");
    std::fs::write(&other, "{\"a\":1}\n").unwrap();
    let mut f = Follower::new(std::slice::from_ref(&other)).unwrap();
    assert!(matches!(&f.poll()[0].entry, LogEntry::Problem(p) if p.contains("x.jsonl:1")));
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Several logs in a folder land in one results table; a second run appended
/// to a log is a run of its own.
#[test]
fn a_folder_of_logs_fills_one_table() {
    let dir = temp("dir");
    write_log(&dir.join("a.jsonl"), 2, true);
    write_log(&dir.join("b.jsonl"), 3, true);
    write_log(&dir.join("b.jsonl"), 4, true);
    std::fs::write(dir.join("notes.jsonl"), "{\"x\":1}\n").unwrap();
    let (app, f) = watch_app(std::slice::from_ref(&dir));
    assert_eq!(f.files().len(), 2, "{:?}", f.files());
    let stages: Vec<usize> = app.runs.iter().map(|r| r.smc.len()).collect();
    assert_eq!(stages, vec![2, 3, 4]);
    assert!(app.runs.iter().all(|r| r.status == RunStatus::Finished));
    std::fs::remove_dir_all(&dir).unwrap();
}

/// 10⁶ events parse and apply (timed by hand: `cargo test --release --lib
/// eventlog::tests::a_million_events -- --ignored --nocapture`).
#[test]
#[ignore]
fn a_million_events() {
    let dir = temp("million");
    let path = dir.join("r.jsonl");
    let (ds, p, data) = testkit::demo();
    let script = testkit::smc(&p.names, 450.0, 50, 4);
    let spec = crate::spec::RunSpec::for_method(data, "smc").unwrap();
    let mut w = LogWriter::create(&path, &Header::for_run(spec.to_value(), &ds, &p)).unwrap();
    let stages: Vec<Event> = script
        .events
        .iter()
        .filter(|e| matches!(e, Event::SmcStage(_)))
        .map(|e| e.for_trace().unwrap())
        .collect();
    let moves = |i: usize| {
        Event::SmcMove(crate::engine::event::SmcMove {
            stage: i,
            gamma: i as f64,
            step: i % 7,
            acceptance: 0.3,
            max_correlation: Some(0.2),
            elapsed: i as f64 * 1e-3,
        })
    };
    // Stages with their moves in between, as SMC writes them: 10⁶ lines.
    let cpu_w = cpu_seconds();
    for i in 0..1_000_000 {
        let mut e = if i % 10 == 0 {
            stages[(i / 10) % stages.len()].clone()
        } else {
            moves(i)
        };
        w.event(&mut e);
    }
    w.end(Ok(&testkit::record(&ds, &p, &script))).unwrap();
    println!(
        "writing 10⁶ events: {:.2} s CPU (serialising and the writer thread)",
        cpu_seconds() - cpu_w
    );
    let bytes = std::fs::metadata(&path).unwrap().len();
    let cpu0 = cpu_seconds();
    let t0 = std::time::Instant::now();
    let mut f = Follower::new(std::slice::from_ref(&path)).unwrap();
    let mut app = App::watching(ViewOptions::default());
    // As `watch` reads a long log: a slice (`MAX_READ` bytes) a poll until
    // nothing is new.
    let (mut n, mut parsed) = (0, 0.0);
    loop {
        let t = std::time::Instant::now();
        let msgs = f.poll();
        parsed += t.elapsed().as_secs_f64();
        if msgs.is_empty() {
            break;
        }
        n += msgs.len();
        for m in msgs {
            update(&mut app, Msg::Log(m));
        }
    }
    let total = t0.elapsed().as_secs_f64();
    println!(
        "{n} lines ({:.0} MB): parse {parsed:.3} s, parse + apply {total:.3} s wall, {:.2} s CPU (all threads)",
        bytes as f64 / 1e6,
        cpu_seconds() - cpu0
    );
    assert_eq!(app.runs[0].status, RunStatus::Finished);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// CPU seconds of this process so far, user + system (`/proc/self/stat`, 100 ticks a second).
fn cpu_seconds() -> f64 {
    let text = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    let rest = &text[text.rfind(')').map_or(0, |i| i + 1)..];
    let f: Vec<f64> = rest
        .split_whitespace()
        .map(|x| x.parse().unwrap_or(0.0))
        .collect();
    (f.get(11).unwrap_or(&0.0) + f.get(12).unwrap_or(&0.0)) / 100.0
}
