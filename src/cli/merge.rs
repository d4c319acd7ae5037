//! `pacauc merge RUN.json…`: SMC runs made apart (`fit --method smc --runs R
//! --run r`, in other processes or on other machines) pooled into the record
//! `--runs R` makes in one process (`spec::merge`).

use std::path::PathBuf;

use clap::Args;

use super::fit::{CliError, Format, emit};
use crate::engine::record::{RunRecord, check_writable};
use crate::spec::merge::{MergeError, merge};

#[derive(Debug, Clone, Args)]
pub struct MergeArgs {
    /// The records of runs 1..R of one `--runs R` spec (`fit --run r --out …`), in any order.
    #[arg(value_name = "RUN.json", required = true, num_args = 2..)]
    pub records: Vec<PathBuf>,
    /// Output format on stdout.
    #[arg(long, value_enum, default_value = "json")]
    pub format: Format,
    /// Also write the pooled record to this file (atomically; checked first).
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,
}

pub fn run(args: &MergeArgs) -> Result<(), CliError> {
    if let Some(path) = &args.out {
        check_writable(path).map_err(|e| {
            CliError::Input(format!("{}: cannot write the record: {e}", path.display()))
        })?;
    }
    let mut records = Vec::with_capacity(args.records.len());
    for path in &args.records {
        let text = std::fs::read_to_string(path)
            .map_err(|e| CliError::Input(format!("{}: {e}", path.display())))?;
        records.push(
            RunRecord::from_json(&text)
                .map_err(|e| CliError::Input(format!("{}: {e}", path.display())))?,
        );
    }
    let names: Vec<String> = args
        .records
        .iter()
        .map(|p| p.display().to_string())
        .collect();
    let record = merge(records, &names).map_err(|e| match e {
        MergeError::Input(m) => CliError::Input(m),
        MergeError::Engine(e) => CliError::from(e),
    })?;
    for w in &record.warnings {
        eprintln!("warning [{}]: {}", w.code, w.message);
    }
    emit(&record, args.out.as_deref(), args.format)
}
