//! Issue 16, point 8: a replayed run shows the sweeps its live view showed.
//! EP's tuning loops (p by evidence here) run EP many times; the record used
//! to keep the last runs' sweeps only (596 of 2753 on one data set), so the
//! replayed EP pane differed from the live one.

use std::path::PathBuf;

use pacauc::app::run_view::RunView;
use pacauc::engine::record::{RunRecord, Seconds};
use pacauc::engine::{Control, Event};
use pacauc::spec;

#[test]
fn a_tuned_spike_and_slab_record_keeps_every_sweep() {
    let s = spec::from_given(
        PathBuf::from("demo-data/sparse_linear.csv"),
        "ep",
        &[
            ("prior", "spike-slab"),
            ("gamma", "n"),
            ("inclusion_prior", "auto"),
        ],
    )
    .unwrap();
    let (ds, prepared) = s.data.load().unwrap();
    let built = spec::build(&s, &prepared).unwrap();
    let mut live = 0usize;
    let fit = built
        .engine
        .run(&built.problem, &Control::new(), &mut |e: Event| {
            live += usize::from(matches!(e, Event::EpSweep(_)));
        })
        .unwrap();
    let final_sweeps = fit.details["sweeps"].as_u64().unwrap() as usize;
    assert!(live > final_sweeps, "p was tuned over several EP runs");
    let record = RunRecord::new(
        &ds,
        &prepared,
        &fit,
        s.to_value(),
        built.engine.params(),
        Seconds::default(),
    );
    let replayed = RunView::from_record(1, record, None);
    assert_eq!(replayed.ep.len(), live, "the replay shows every live sweep");
    // The final run's sweeps keep their moments; earlier runs' are stripped.
    let last = replayed.ep.last().unwrap();
    assert_eq!(last.mean.len(), prepared.names.len());
}
