//! `pacauc bench-load DATA.csv`: the loader alone (read, split into cells,
//! type, encode, clean) timed on a user's file — wall and CPU seconds, MB/s
//! and peak memory — so its throughput can be checked on any machine without
//! a fit around it (not a timed test).

use std::path::PathBuf;
use std::time::Instant;

use clap::Args;

use super::bench_ep::{cpu_ns, peak_mb};
use super::fit::CliError;
use crate::engine::data::{Dataset, LoadOptions};

#[derive(Debug, Clone, Args)]
pub struct BenchLoadArgs {
    /// The data file, CSV or Arrow IPC (last column the target unless --target).
    pub data: PathBuf,
    /// Target column (default: the last one).
    #[arg(long)]
    pub target: Option<String>,
    /// Label value of the positive class.
    #[arg(long)]
    pub positive: Option<String>,
    /// Columns to ignore (comma-separated).
    #[arg(long, value_delimiter = ',')]
    pub drop: Vec<String>,
    /// Timed loads (the median by CPU time is reported).
    #[arg(long, default_value_t = 1, value_name = "R")]
    pub repeat: usize,
}

pub fn run(a: &BenchLoadArgs) -> Result<(), CliError> {
    if a.repeat == 0 {
        return Err(CliError::Input("--repeat must be ≥ 1".into()));
    }
    let opts = LoadOptions {
        target: a.target.clone(),
        positive: a.positive.clone(),
        drop: a.drop.clone(),
        ..LoadOptions::default()
    };
    let bytes = std::fs::metadata(&a.data).map_or(0, |m| m.len()) as f64;
    let mut runs = Vec::new();
    let mut shape = (0, 0);
    for _ in 0..a.repeat {
        let (t, c) = (Instant::now(), cpu_ns());
        let ds = Dataset::load(&a.data, &opts).map_err(|e| CliError::Input(e.to_string()))?;
        runs.push((t.elapsed().as_secs_f64(), (cpu_ns() - c) as f64 * 1e-9));
        shape = (ds.rows(), ds.features());
    }
    runs.sort_by(|p, q| p.1.total_cmp(&q.1));
    let (wall, cpu) = runs[runs.len() / 2];
    println!(
        "bench-load: {} ({:.1} MB), {} rows × {} features, {} thread(s): median of {} loads \
         {:.2} s wall ({:.0} MB/s), {:.2} CPU s; peak {:.0} MB",
        a.data.display(),
        bytes / 1e6,
        shape.0,
        shape.1,
        rayon::current_num_threads(),
        a.repeat,
        wall,
        bytes / 1e6 / wall,
        cpu,
        peak_mb()
    );
    Ok(())
}
