//! `pacauc compare DATA.csv --methods a,b,…`: maps flags to
//! `protocol::compare` and prints each split's AUCs with their intervals and
//! the paired differences against the first method, then the pooled ones.

use std::path::PathBuf;

use clap::{Args, ValueEnum};

use super::fit::CliError;
use super::settings_args::{DataOnly, SettingArgs};
use crate::engine::auc_interval::p_text;
use crate::protocol::compare::{CompareOptions, Comparison, compare};
use crate::protocol::{METHODS, RunResult, Status};

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum CompareFormat {
    Table,
    Json,
}

#[derive(Debug, Clone, Args)]
pub struct CompareArgs {
    /// CSV file with a header row; the target is the last column unless --target.
    pub data: PathBuf,
    /// Methods to compare (comma-separated; the first is the reference): logit,
    /// rankboost, ep, ep-ard, ep-ss, smc, gp-ep, vb, gcs — each as `reproduce`
    /// runs it (γ by cross-validation on the training part).
    #[arg(long, value_delimiter = ',', value_name = "M,…", required = true)]
    pub methods: Vec<String>,
    /// Stratified splits with seeds 0..K (each method sees the same K splits).
    #[arg(long, value_name = "K", default_value_t = 5,
          value_parser = clap::value_parser!(u64).range(1..))]
    pub splits: u64,
    /// Folder for the runs' records (reused when run again with the same settings).
    #[arg(long, value_name = "DIR", default_value = "compare")]
    pub out: PathBuf,
    /// Paired stratified bootstrap with this many replicates instead of DeLong.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(100..))]
    pub bootstrap: Option<u64>,
    /// Output format on stdout.
    #[arg(long, value_enum, default_value = "table")]
    pub format: CompareFormat,
    #[command(flatten)]
    pub settings: SettingArgs<DataOnly>,
}

fn report(r: &RunResult) {
    let what = match &r.status {
        Status::Fresh => format!("fitted in {:.1}s", r.wall),
        Status::Reused => "reused".into(),
        Status::Failed(e) => format!("FAILED  {}", e.lines().next().unwrap_or("")),
        Status::Skipped(why) => format!("skipped  {why}"),
    };
    eprintln!("  split {:<3} {:<10} {what}", r.id.seed, r.id.key);
}

pub fn run(args: &CompareArgs) -> Result<(), CliError> {
    for m in &args.methods {
        if !METHODS.iter().any(|p| p.key == m) {
            let keys: Vec<&str> = METHODS.iter().map(|p| p.key).collect();
            return Err(CliError::Input(format!(
                "--methods: no method '{m}'; the methods are {}",
                keys.join(", ")
            )));
        }
    }
    let opts = CompareOptions {
        file: args.data.clone(),
        methods: args.methods.clone(),
        splits: args.splits as usize,
        data_settings: args
            .settings
            .pairs()
            .into_iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
        out: args.out.clone(),
        bootstrap: args.bootstrap.map(|b| b as usize),
    };
    eprintln!(
        "compare: {} × {} split(s), methods {} (reference {}); records in {}",
        args.data.display(),
        args.splits,
        args.methods.join(", "),
        args.methods[0],
        args.out.join("records").display()
    );
    let c = compare(&opts, &report).map_err(CliError::Input)?;
    match args.format {
        CompareFormat::Json => {
            println!("{}", serde_json::to_string_pretty(&c).expect("json"));
        }
        CompareFormat::Table => print_table(&c),
    }
    Ok(())
}

fn print_table(c: &Comparison) {
    let method = c
        .rows
        .iter()
        .find_map(|r| r.auc.as_ref().map(|a| a.method.name()))
        .unwrap_or("DeLong");
    println!(
        "{:<5} {:<10} {:>30}   {:<48}",
        "split",
        "method",
        format!("test AUC ± SE [95% {method}]"),
        format!("minus {} ± SE [95%], p", c.reference)
    );
    for r in &c.rows {
        let auc = r.auc.as_ref().map_or_else(
            || r.status.clone(),
            |a| {
                format!(
                    "{:.4} ± {:.4} [{:.3}, {:.3}]",
                    a.auc, a.se, a.lower, a.upper
                )
            },
        );
        let diff = r.versus_reference.as_ref().map_or(String::new(), |p| {
            format!(
                "{:+.4} ± {:.4} [{:+.3}, {:+.3}], p {}",
                p.difference,
                p.se,
                p.lower,
                p.upper,
                p_text(p.p_value)
            )
        });
        println!("{:<5} {:<10} {:>30}   {diff}", r.seed, r.method, auc);
    }
    for p in &c.pooled {
        println!(
            "pooled over {} split(s): {} − {}: {:+.4} ± {:.4} [95% {:+.4}, {:+.4}], p {} ({}); \
             mean AUC of {} {:.4}",
            p.splits,
            p.method,
            c.reference,
            p.difference,
            p.se,
            p.lower,
            p.upper,
            p_text(p.p_value),
            p.rule,
            p.method,
            p.mean_auc
        );
    }
}
