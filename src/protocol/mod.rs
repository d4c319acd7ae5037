//! RACL14's protocol end to end (Tables 1 and 2, `pacauc reproduce`): for each
//! data set and split seed S, the program's own stratified 75/25 split seeded
//! by S, every method of the program with γ by cross-validation on the
//! training part (`config::METHODS` says where a method takes the γ EP
//! Gaussian's CV chose instead), the test AUC and fit seconds of each run.
//!
//! Each run is a `RunSpec` made from the same settings `pacauc fit` takes and
//! run through `spec::build`, so `pacauc fit DATA --seed S …` gives the same
//! record; its record is saved as `OUT/records/<data>_<method>_<S>.json`
//! (atomically) and reused when its spec is the one that would run now, so an
//! interrupted reproduce resumes. The splits of a small data set run in
//! parallel (rayon); every number but the seconds is independent of the
//! thread count. No terminal code here: progress goes to a callback.

pub mod compare;
pub mod config;
mod outputs;
pub mod runs;
pub mod stats;
pub mod tables;

use std::path::PathBuf;

use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

pub use config::{DataPlan, GammaPolicy, METHODS, MethodPlan, data_plan, method_plan};
pub use outputs::Written;
pub use runs::{GammaSource, RunId, RunResult, Status, Summary, spec_of};
pub use tables::{Cell, Tables};

/// The full protocol, or `--quick`'s cheap one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    Full,
    Quick,
}

/// What to run and where.
#[derive(Debug, Clone)]
pub struct Options {
    pub mode: Mode,
    /// Folder of the CSV files (`NAME.csv`; the target as `pacauc fit` finds
    /// it: `data_settings`' `target`, else the last column).
    pub data_dir: PathBuf,
    /// Output folder: `records/`, `figures/`, the tables.
    pub out: PathBuf,
    /// Data sets by file stem (empty: the paper's — quick: the small ones — found in `data_dir`).
    pub only: Vec<String>,
    /// Method columns by key (empty: all; EP Gaussian is added when a chosen
    /// method takes its γ).
    pub methods: Vec<String>,
    /// Splits per data set instead of the plan's (quick: 2).
    pub splits: Option<usize>,
    /// Write the tables and figures from the records on disk without fitting.
    pub tables_only: bool,
    /// Data settings of every run (`target`, `positive`, … as `pacauc fit` takes them).
    pub data_settings: Vec<(String, String)>,
    /// The command that makes these tables (shown in them; without `--tables-only`).
    pub command: String,
}

/// What `run` did.
pub struct Outcome {
    pub results: Vec<RunResult>,
    pub written: Written,
}

/// The data sets of `opts`, checked to exist.
pub fn data_plans(opts: &Options) -> Result<Vec<DataPlan>, String> {
    if !opts.data_dir.is_dir() {
        return Err(format!(
            "{}: no such folder of data sets (the paper's are read from ../shared/datasets; \
             `pacauc gen-demo` makes demo data)",
            opts.data_dir.display()
        ));
    }
    let file = |n: &str| opts.data_dir.join(format!("{n}.csv"));
    let names: Vec<String> = if opts.only.is_empty() {
        let wanted = match opts.mode {
            Mode::Full => config::PAPER_SETS,
            Mode::Quick => config::QUICK_SETS,
        };
        wanted
            .iter()
            .filter(|n| file(n).is_file())
            .map(|n| n.to_string())
            .collect()
    } else {
        opts.only.clone()
    };
    if names.is_empty() {
        return Err(format!(
            "{}: none of the paper's data sets ({}) is there; name the files to use \
             (file stems, e.g. sparse_linear for sparse_linear.csv)",
            opts.data_dir.display(),
            config::PAPER_SETS.join(", ")
        ));
    }
    let mut plans = Vec::new();
    for n in names {
        if !file(&n).is_file() {
            return Err(format!("{}: no such data file", file(&n).display()));
        }
        let mut p = data_plan(&n);
        p.data_settings = opts.data_settings.clone();
        p.splits = opts.splits.unwrap_or(match opts.mode {
            Mode::Full => p.splits,
            Mode::Quick => config::QUICK_SPLITS.min(p.splits),
        });
        plans.push(p);
    }
    Ok(plans)
}

/// The method columns of `opts`, in table order (EP Gaussian added when a
/// chosen method takes its γ).
pub fn method_plans(opts: &Options) -> Result<Vec<&'static MethodPlan>, String> {
    if opts.methods.is_empty() {
        return Ok(METHODS.iter().collect());
    }
    for k in &opts.methods {
        if method_plan(k).is_none() {
            return Err(format!(
                "no method column '{k}'; the columns are {}",
                METHODS.iter().map(|m| m.key).collect::<Vec<_>>().join(", ")
            ));
        }
    }
    let needs_ep = opts
        .methods
        .iter()
        .any(|k| method_plan(k).is_some_and(|m| m.gamma != GammaPolicy::None));
    Ok(METHODS
        .iter()
        .filter(|m| {
            opts.methods.iter().any(|k| k == m.key) || (needs_ep && m.key == config::EP_KEY)
        })
        .collect())
}

/// Runs (or reuses) every run of the protocol, then writes the tables and
/// figures. `report` hears of each run as it ends (from worker threads).
pub fn run(opts: &Options, report: &(dyn Fn(&RunResult) + Sync)) -> Result<Outcome, String> {
    let data = data_plans(opts)?;
    let methods = method_plans(opts)?;
    let records = opts.out.join("records");
    std::fs::create_dir_all(&records)
        .map_err(|e| format!("{}: cannot create the folder: {e}", records.display()))?;
    let mut results = Vec::new();
    // Smallest files first: an interrupted full run has every small set
    // before it starts on DNA and EEG (the tables keep the paper's order).
    let mut order: Vec<&DataPlan> = data.iter().collect();
    let size = |d: &DataPlan| {
        std::fs::metadata(opts.data_dir.join(format!("{}.csv", d.name))).map_or(0, |m| m.len())
    };
    order.sort_by_key(|d| size(d));
    for d in order {
        let file = opts.data_dir.join(format!("{}.csv", d.name));
        let split = |&seed: &u64| {
            let fit = !opts.tables_only;
            runs::run_split(d, &file, seed, &methods, opts.mode, &records, fit, report)
        };
        let seeds: Vec<u64> = (0..d.splits as u64).collect();
        // Small sets: splits in parallel (each fit is short and mostly serial);
        // a big set's fits use every core on their own.
        let workers = if d.small && !opts.tables_only {
            rayon::current_num_threads()
        } else {
            1
        };
        let per_split = in_parallel(&seeds, workers, split);
        results.extend(per_split.into_iter().flatten());
        if !opts.tables_only {
            // After every data set: an interrupted run leaves its tables.
            write_outputs(opts, &data, &methods, &results)?;
        }
    }
    let written = write_outputs(opts, &data, &methods, &results)?;
    Ok(Outcome { results, written })
}

fn write_outputs(
    opts: &Options,
    data: &[DataPlan],
    methods: &[&'static MethodPlan],
    results: &[RunResult],
) -> Result<Written, String> {
    let tables = Tables {
        data,
        methods,
        results,
        mode: opts.mode,
        command: opts.command.clone(),
        from_disk: opts.tables_only,
    };
    outputs::write(&opts.out, &tables, &opts.out.join("records"))
}

/// `f` of every item, `workers` at a time, in item order. Plain scoped
/// threads, not rayon's pool: the engines' own cross-validations block on
/// threads that need rayon's workers (`select::kfold`), so a rayon worker
/// waiting in one would deadlock once every worker waits.
fn in_parallel<T: Sync, R: Send>(
    items: &[T],
    workers: usize,
    f: impl Fn(&T) -> R + Sync,
) -> Vec<R> {
    if workers <= 1 || items.len() <= 1 {
        return items.iter().map(&f).collect();
    }
    let next = AtomicUsize::new(0);
    let done: Mutex<Vec<(usize, R)>> = Mutex::new(Vec::new());
    std::thread::scope(|sc| {
        for _ in 0..workers.min(items.len()) {
            sc.spawn(|| {
                loop {
                    let i = next.fetch_add(1, Ordering::SeqCst);
                    let Some(item) = items.get(i) else { return };
                    let r = f(item);
                    done.lock().unwrap_or_else(|e| e.into_inner()).push((i, r));
                }
            });
        }
    });
    let mut done = done.into_inner().unwrap_or_else(|e| e.into_inner());
    done.sort_by_key(|(i, _)| *i);
    done.into_iter().map(|(_, r)| r).collect()
}

#[cfg(test)]
mod tests;
