//! `pacauc bound RUN.json [--epsilon E]`: a record's PAC-Bayes certificate
//! recomputed at another confidence level (it depends on ρ only through
//! E_ρ R_n and KL, both kept in the record).

use std::path::PathBuf;

use clap::Args;

use super::fit::CliError;
use crate::engine::bounds::{Bound, DEFAULT_EPSILON, recompute};

#[derive(Debug, Clone, Args)]
pub struct BoundArgs {
    /// A run record (`pacauc fit … --out RUN.json`).
    pub record: PathBuf,
    /// Confidence 1 − ε.
    #[arg(long, default_value_t = DEFAULT_EPSILON, value_name = "E")]
    pub epsilon: f64,
}

pub fn run(args: &BoundArgs) -> Result<(), CliError> {
    let path = args.record.display();
    if !(args.epsilon > 0.0 && args.epsilon < 1.0) {
        return Err(CliError::Input(format!(
            "--epsilon must be in (0, 1); got {}",
            args.epsilon
        )));
    }
    let text = std::fs::read_to_string(&args.record)
        .map_err(|e| CliError::Input(format!("{path}: {e}")))?;
    let v: serde_json::Value = serde_json::from_str(&text)
        .map_err(|e| CliError::Input(format!("{path}: not JSON: {e}")))?;
    let b = v
        .get("bound")
        .filter(|b| !b.is_null())
        .or_else(|| v.get("details").and_then(|d| d.get("bound")))
        .ok_or_else(|| {
            CliError::Input(format!(
                "{path}: the record has no PAC-Bayes certificate (only Bayesian fits have one)"
            ))
        })?;
    let b: Bound = serde_json::from_value(b.clone())
        .map_err(|e| CliError::Input(format!("{path}: unreadable bound: {e}")))?;
    let out = recompute(&b, args.epsilon);
    println!("{}", serde_json::to_string_pretty(&out).unwrap_or_default());
    Ok(())
}
