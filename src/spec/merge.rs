//! `pacauc merge`: SMC runs made apart — `--run r` of `--runs R`, in other
//! processes or on other machines — pooled into the record `--runs R` makes
//! in one process: the same seeds, the same clouds, so the same pooled
//! posterior, R-hat across runs, log Z mean ± sd and certificate (timings
//! aside). The data are read again from the spec's path and must be the file
//! the runs saw (its fingerprint).

use std::time::Instant;

use crate::engine::record::RunRecord;
use crate::engine::smc::PooledRuns;
use crate::engine::smc::runs::pool_parts;
use crate::engine::{Control, EngineError, NoObserver};

use super::build::{certify, problem, smc_settings};
use super::run_spec::{MethodSpec, RunSpec};
use super::validate::{Dims, validate};

/// Why runs cannot be merged, or the merged fit failed.
#[derive(Debug)]
pub enum MergeError {
    Input(String),
    Engine(EngineError),
}

impl std::fmt::Display for MergeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            MergeError::Input(m) => f.write_str(m),
            MergeError::Engine(e) => write!(f, "{e}"),
        }
    }
}

/// The spec every part shares, as `--runs R` (no `run`); an error naming the
/// part that differs. `names`: how to call each record in messages.
pub fn common_spec(records: &[RunRecord], names: &[String]) -> Result<RunSpec, String> {
    let mut common: Option<(RunSpec, &str)> = None;
    for (r, name) in records.iter().zip(names) {
        if r.part.is_none() {
            return Err(format!(
                "{name}: not the record of one run made apart (fit with --method smc \
                 --runs R --run r to make one)"
            ));
        }
        let mut spec = RunSpec::from_value(&r.spec).map_err(|e| format!("{name}: {e}"))?;
        let MethodSpec::Smc(smc) = &mut spec.method else {
            return Err(format!("{name}: a {} record, not SMC", r.method));
        };
        smc.run = None;
        // The thread count changes no bits.
        spec.threads = None;
        match &common {
            None => common = Some((spec, name)),
            Some((c, first)) if *c != spec => {
                return Err(format!(
                    "{name}: its spec differs from {first}'s (beyond `run`): merge runs of one \
                     spec\n  {first}: {}\n  {name}: {}",
                    super::command_line(c),
                    super::command_line(&spec)
                ));
            }
            Some(_) => {}
        }
        if r.dataset.fingerprint != records[0].dataset.fingerprint {
            return Err(format!(
                "{name}: its data ({}) differ from {}'s ({})",
                r.dataset.fingerprint, names[0], records[0].dataset.fingerprint
            ));
        }
    }
    common
        .map(|(s, _)| s)
        .ok_or_else(|| "merging needs the records of at least 2 runs".into())
}

/// The record `--runs R` makes, from the records of its R runs made apart.
pub fn merge(records: Vec<RunRecord>, names: &[String]) -> Result<RunRecord, MergeError> {
    let spec = common_spec(&records, names).map_err(MergeError::Input)?;
    let fingerprint = records[0].dataset.fingerprint.clone();
    let parts = records.into_iter().filter_map(|r| r.part).collect();
    let runs = pool_parts(parts).map_err(MergeError::Input)?;
    let t0 = Instant::now();
    let (ds, prepared) = spec.data.load().map_err(MergeError::Input)?;
    if ds.fingerprint != fingerprint {
        return Err(MergeError::Input(format!(
            "{}: the file changed since the runs were made (fingerprint {} now, {} then)",
            spec.data.path.display(),
            ds.fingerprint,
            fingerprint
        )));
    }
    let load_seconds = t0.elapsed().as_secs_f64();
    validate(
        &spec,
        Dims {
            n: prepared.train.rows(),
            d: prepared.names.len(),
        },
    )
    .map_err(|e| MergeError::Input(e.to_string()))?;
    let MethodSpec::Smc(smc) = &spec.method else {
        unreachable!("common_spec checked the method")
    };
    let engine = certify(
        &spec,
        Box::new(PooledRuns {
            settings: smc_settings(smc, spec.data.seed),
            runs,
        }),
    );
    let problem = problem(&spec, &prepared).map_err(|e| MergeError::Input(e.to_string()))?;
    super::run::record(
        &spec,
        (&ds, &prepared),
        engine.as_ref(),
        &problem,
        &Control::new(),
        &mut NoObserver,
        load_seconds,
    )
    .map_err(MergeError::Engine)
}
