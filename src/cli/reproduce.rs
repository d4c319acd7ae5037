//! `pacauc reproduce`: RACL14 Tables 1 and 2 with the paper's protocol
//! (`protocol/`); this file only maps flags to `protocol::Options` and prints.

use std::path::PathBuf;

use clap::Args;

use super::fit::CliError;
use crate::protocol::{self, Mode, Options, RunResult, Status};

/// The default folder of the paper's data sets (next to the project).
pub const DATA_DIR: &str = "../shared/datasets";

#[derive(Debug, Clone, Args)]
pub struct ReproduceArgs {
    /// Few splits, the small data sets (pima, glass, spect_train) and cheap
    /// settings: a few minutes on 2 cores. Not the protocol's numbers.
    #[arg(long)]
    pub quick: bool,
    /// Output folder: records/, figures/, table1.md/.csv, table2.md/.csv.
    #[arg(long, value_name = "DIR", default_value = "reproduce")]
    pub out: PathBuf,
    /// Folder of the data sets (NAME.csv; the target is the last column
    /// unless --target names another, as in `pacauc fit`).
    #[arg(long, value_name = "DIR", default_value = DATA_DIR)]
    pub data: PathBuf,
    /// Only these data sets (file stems, comma-separated), e.g. pima,glass.
    #[arg(long, value_delimiter = ',', value_name = "NAME,…")]
    pub only: Vec<String>,
    /// Only these method columns (comma-separated): logit, rankboost, ep,
    /// ep-ard, ep-ss, smc, gp-ep, vb, gcs (ep is added when a chosen method
    /// takes its γ).
    #[arg(long, value_delimiter = ',', value_name = "M,…")]
    pub methods: Vec<String>,
    /// Split seeds 0..K per data set instead of the protocol's (20 for the
    /// small sets, 5 for Credit and DNA, 2 for EEG; quick: 2).
    #[arg(long, value_name = "K", value_parser = clap::value_parser!(u64).range(1..))]
    pub splits: Option<u64>,
    /// Only write the tables and figures from the records in OUT (no fitting).
    #[arg(long)]
    pub tables_only: bool,
    /// Target column of every data set (default: the last column).
    #[arg(long, value_name = "COLUMN")]
    pub target: Option<String>,
    /// Value of the target that counts as positive (default: as `pacauc fit` chooses, announced).
    #[arg(long, value_name = "VALUE")]
    pub positive: Option<String>,
}

/// The command line that makes the tables (as given, without `--tables-only`).
fn command_line() -> String {
    let mut args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| a != "--tables-only")
        .collect();
    args.insert(0, "pacauc".into());
    args.join(" ")
}

/// "0.4s", "3m05s".
fn duration(s: f64) -> String {
    if s < 60.0 {
        format!("{s:.1}s")
    } else {
        format!("{}m{:02.0}s", (s / 60.0).floor(), s % 60.0)
    }
}

fn report(r: &RunResult) {
    let what = match &r.status {
        Status::Fresh => format!(
            "{:>8}  test AUC {}",
            duration(r.wall),
            r.summary.as_ref().map_or("-".into(), |s| {
                let auc = match (s.test_auc, s.test_se) {
                    (Some(a), Some(se)) => format!("{a:.4} ± {se:.4}"),
                    (Some(a), None) => format!("{a:.4}"),
                    _ => "-".into(),
                };
                // Said at once, not only in the tables' notes.
                match s.alternative {
                    Some(_) => format!("{auc}  (power EP's answer: EP has no fixed point here)"),
                    None => auc,
                }
            })
        ),
        Status::Reused => "  reused".into(),
        Status::Failed(e) => format!(
            "  FAILED  {}",
            e.lines()
                .next()
                .unwrap_or("")
                .chars()
                .take(160)
                .collect::<String>()
        ),
        Status::Skipped(why) => format!(" skipped  {why}"),
    };
    eprintln!("{:<28} {what}", r.id.stem());
}

pub fn run(args: &ReproduceArgs) -> Result<(), CliError> {
    let opts = Options {
        mode: if args.quick { Mode::Quick } else { Mode::Full },
        data_dir: args.data.clone(),
        out: args.out.clone(),
        only: args.only.clone(),
        methods: args.methods.clone(),
        splits: args.splits.map(|k| k as usize),
        tables_only: args.tables_only,
        command: command_line(),
        data_settings: [("target", &args.target), ("positive", &args.positive)]
            .into_iter()
            .filter_map(|(k, v)| Some((k.to_string(), v.clone()?)))
            .collect(),
    };
    let data = protocol::data_plans(&opts).map_err(|e| {
        CliError::Input(format!(
            "{e}{}",
            if args.data.as_os_str() == DATA_DIR {
                "; give another folder with --data (e.g. --data demo-data --only sparse_linear)"
            } else {
                ""
            }
        ))
    })?;
    let methods =
        protocol::method_plans(&opts).map_err(|e| CliError::Input(format!("--methods: {e}")))?;
    let runs: usize = data.iter().map(|d| d.splits).sum::<usize>() * methods.len();
    eprintln!(
        "reproduce: {} data set(s) ({}), {} method(s), {runs} runs; records in {}",
        data.len(),
        data.iter()
            .map(|d| format!("{} × {}", d.name, d.splits))
            .collect::<Vec<_>>()
            .join(", "),
        methods.len(),
        args.out.join("records").display()
    );
    let outcome = protocol::run(&opts, &report).map_err(CliError::Input)?;
    let count = |f: fn(&Status) -> bool| outcome.results.iter().filter(|r| f(&r.status)).count();
    eprintln!(
        "reproduce: {} fitted, {} reused, {} failed, {} skipped",
        count(|s| *s == Status::Fresh),
        count(|s| *s == Status::Reused),
        count(|s| matches!(s, Status::Failed(_))),
        count(|s| matches!(s, Status::Skipped(_))),
    );
    // Skipped and failed runs, each reason once with the runs it concerns.
    let mut reasons: Vec<(String, Vec<String>)> = Vec::new();
    for r in &outcome.results {
        let why = match &r.status {
            Status::Failed(e) => format!("failed: {}", e.lines().next().unwrap_or("")),
            Status::Skipped(w) => format!("skipped: {w}"),
            _ => continue,
        };
        match reasons.iter_mut().find(|(w, _)| *w == why) {
            Some((_, ids)) => ids.push(r.id.stem()),
            None => reasons.push((why, vec![r.id.stem()])),
        }
    }
    for (why, ids) in &reasons {
        eprintln!("  {why} — {}", ids.join(", "));
    }
    for s in &outcome.written.skipped_figures {
        eprintln!("figure skipped: {s}");
    }
    for f in &outcome.written.files {
        println!("{}", f.display());
    }
    Ok(())
}
