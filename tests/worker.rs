//! The worker with a scripted engine on a real thread: order of messages,
//! pause, cancel, engine panics, snapshot throttling.

use std::time::{Duration, Instant};

use crossbeam_channel::{Receiver, bounded};
use pacauc::engine::{Event, Prior, Problem};
use pacauc::testkit::{self, ScriptedEngine};
use pacauc::worker::{self, Job, WorkerEvent, WorkerMsg};

fn job(run: u64, engine: ScriptedEngine) -> Job {
    let (ds, p, _) = testkit::demo();
    let problem = Problem::new(
        p.names.clone(),
        p.train.x.clone(),
        p.train.y.clone(),
        p.train.rows() as f64,
        Prior::Gaussian { var: 1.0 },
    )
    .unwrap();
    Job {
        run,
        spec: pacauc::spec::RunSpec::for_method(pacauc::spec::DataSpec::of("demo"), "smc").unwrap(),
        engine: Box::new(engine),
        problem,
        dataset: std::sync::Arc::new(ds),
        prepared: std::sync::Arc::new(p),
        load_seconds: 0.0,
        snapshot_interval: Duration::from_millis(100),
    }
}

fn smc_engine(stages: usize, delay_ms: u64) -> ScriptedEngine {
    let (_, p, _) = testkit::demo();
    ScriptedEngine {
        name: "smc",
        script: testkit::smc(&p.names, 750.0, stages, 3),
        delay: Duration::from_millis(delay_ms),
    }
}

fn collect(rx: &Receiver<WorkerMsg>) -> Vec<WorkerMsg> {
    let mut out = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(30);
    while Instant::now() < deadline {
        let m = rx
            .recv_timeout(Duration::from_secs(30))
            .expect("the worker answers");
        let end = !matches!(m.event, WorkerEvent::Event(_));
        out.push(m);
        if end {
            break;
        }
    }
    out
}

#[test]
fn events_then_the_record_on_a_named_thread() {
    let (tx, rx) = bounded(1024);
    let h = worker::spawn(job(5, smc_engine(12, 10)), tx).unwrap();
    let msgs = collect(&rx);
    assert!(msgs.iter().all(|m| m.run == 5));
    assert!(matches!(
        msgs[0].event,
        WorkerEvent::Event(Event::Started { .. })
    ));
    let stages = msgs
        .iter()
        .filter(|m| matches!(m.event, WorkerEvent::Event(Event::SmcStage(_))))
        .count();
    assert_eq!(stages, 12, "a roomy channel drops nothing");
    // 12 stages 10 ms apart with a 100 ms snapshot interval: at most a few snapshots.
    let snaps = msgs
        .iter()
        .filter(|m| matches!(&m.event, WorkerEvent::Event(Event::SmcStage(s)) if !s.histograms.is_empty()))
        .count();
    assert!((1..=4).contains(&snaps), "{snaps} snapshots");
    let WorkerEvent::Finished(record) = &msgs.last().unwrap().event else {
        panic!("no record")
    };
    assert_eq!(record.method, "smc");
    assert_eq!(
        record.trace.len(),
        13,
        "the record keeps the full trace (Started + 12 stages)"
    );
    assert!(!record.histograms.is_empty());
    assert!(record.auc.train > 0.5);
    while !h.is_finished() {
        std::thread::sleep(Duration::from_millis(5));
    }
}

#[test]
fn pause_holds_the_engine_and_cancel_ends_it() {
    let (tx, rx) = bounded(1024);
    let h = worker::spawn(job(1, smc_engine(200, 5)), tx).unwrap();
    rx.recv_timeout(Duration::from_secs(10)).unwrap();
    h.set_paused(true);
    std::thread::sleep(Duration::from_millis(50));
    while rx.try_recv().is_ok() {}
    std::thread::sleep(Duration::from_millis(150));
    assert!(rx.try_recv().is_err(), "a paused engine sends nothing");
    h.cancel();
    let msgs = collect(&rx);
    assert!(matches!(msgs.last().unwrap().event, WorkerEvent::Cancelled));
    h.cancel_and_join();
}

struct Panicking;

impl pacauc::engine::Engine for Panicking {
    fn name(&self) -> &'static str {
        "boom"
    }
    fn params(&self) -> serde_json::Value {
        serde_json::Value::Null
    }
    fn run(
        &self,
        _: &Problem,
        _: &pacauc::engine::Control,
        _: &mut dyn pacauc::engine::Observer,
    ) -> Result<pacauc::engine::Fit, pacauc::engine::EngineError> {
        panic!("index out of range in the engine")
    }
}

#[test]
fn an_engine_panic_is_a_failed_run() {
    let (tx, rx) = bounded(16);
    let mut j = job(2, smc_engine(1, 0));
    j.engine = Box::new(Panicking);
    let h = worker::spawn(j, tx).unwrap();
    let msgs = collect(&rx);
    match &msgs.last().unwrap().event {
        WorkerEvent::Failed(m) => assert!(m.contains("index out of range"), "{m}"),
        other => panic!("{other:?}"),
    }
    h.cancel_and_join();
}
