//! `pacauc bound RUN.json [--epsilon E]`: a record's PAC-Bayes certificate
//! recomputed at another confidence level (it depends on ρ only through
//! E_ρ R_n and KL, both kept in the record's `bound`).

use std::path::PathBuf;

use clap::{Args, ValueEnum};

use super::fit::CliError;
use super::settings_args::render_message;
use crate::engine::Event;
use crate::engine::bounds::{DEFAULT_EPSILON, recompute};
use crate::engine::quality;
use crate::engine::record::RunRecord;

#[derive(Debug, Clone, Args)]
pub struct BoundArgs {
    /// A run record (`pacauc fit … --out RUN.json`, or the explorer's export).
    pub record: PathBuf,
    /// The bound holds with probability ≥ 1 − ε.
    #[arg(long, default_value_t = DEFAULT_EPSILON, value_name = "E", allow_negative_numbers = true)]
    pub epsilon: f64,
    /// Output: the whole certificate as JSON, or its headline for people.
    #[arg(long, value_enum, default_value = "json")]
    pub format: BoundFormat,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum BoundFormat {
    Json,
    Table,
}

/// The certificate in one line: which number is "the" bound, and on what.
pub fn headline(b: &crate::engine::bounds::Bound) -> String {
    format!(
        "1 − AUC ≤ {:.4} with probability ≥ {} for a score drawn from {} \
         (empirical {:.4}, KL {:.2}){}",
        b.risk,
        1.0 - b.epsilon,
        b.drawn_from(),
        b.empirical_risk,
        b.kl,
        // A bound at or above ½ certifies nothing better than chance.
        if b.is_vacuous() {
            "; vacuous (≥ ½: no better than chance)"
        } else {
            ""
        }
    )
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
    let record =
        RunRecord::from_json(&text).map_err(|e| CliError::Input(format!("{path}: {e}")))?;
    let b = record.bound.as_ref().ok_or_else(|| {
        // A Bayesian fit without a certificate says why: `details.uncertified`
        // (GP fits) or a line of its trace (gcs without its evidence).
        let why = record
            .uncertified_reason()
            .map(|why| format!("no PAC-Bayes certificate: {why}"))
            .or_else(|| {
                record.trace.iter().find_map(|e| match e {
                    Event::Log { message, .. }
                        if message.starts_with("no PAC-Bayes certificate") =>
                    {
                        Some(message.clone())
                    }
                    _ => None,
                })
            });
        CliError::Input(match why {
            Some(why) => format!("{path}: the record of this {} run has {why}", record.method),
            None => format!(
                "{path}: the record of this {} run has no PAC-Bayes certificate (only the \
                 Bayesian methods' fits have one)",
                record.method
            ),
        })
    })?;
    let out = recompute(b, args.epsilon);
    // As `fit` prints the record's coded warnings: the number alone reads like a guarantee.
    if let Some(w) = quality::vacuous_certificate(&out) {
        eprintln!("warning [{}]: {}", w.code, render_message(&w.message));
    }
    // What it means, and why it is loose when it is (stderr: stdout stays JSON).
    eprintln!("{}", out.meaning());
    if let Some(why) = out.why_loose() {
        eprintln!("{why}");
    }
    match args.format {
        BoundFormat::Json => {
            println!("{}", serde_json::to_string_pretty(&out).unwrap_or_default())
        }
        BoundFormat::Table => println!("bound     {}", headline(&out)),
    }
    Ok(())
}
