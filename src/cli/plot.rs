//! `pacauc plot`: every figure the given records support, written as PNG
//! and/or SVG files; what was skipped and why goes to stderr.

use std::path::PathBuf;

use clap::{Args, ValueEnum};

use super::fit::CliError;
use crate::figures::{self, Figure};
use crate::plot::{self, Format};

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum PlotFormat {
    Png,
    Svg,
    Both,
}

/// Figure kinds, as `--only` names them (a figure's file name starts with its kind).
pub const KINDS: [&str; 9] = [
    "roc",
    "marginals",
    "smc-trace",
    "ep-convergence",
    "vb-trace",
    "gcs-trace",
    "cv",
    "inclusion",
    "path",
];

#[derive(Debug, Clone, Args)]
pub struct PlotArgs {
    /// Run records (`pacauc fit --out`, the explorer's `e`) and regularisation
    /// paths (`pacauc path --out`). Records of the same data are drawn together
    /// (ROC curves of every run; SMC histograms under the EP Gaussians).
    #[arg(required = true, value_name = "RUN.json")]
    pub records: Vec<PathBuf>,
    /// Folder to write the figures into (created if missing).
    #[arg(long, value_name = "DIR")]
    pub out: PathBuf,
    /// File format.
    #[arg(long, value_enum, default_value = "both")]
    pub format: PlotFormat,
    /// Only these figures (comma-separated): roc, marginals, smc-trace,
    /// ep-convergence, vb-trace, gcs-trace, cv, inclusion, path.
    #[arg(long, value_delimiter = ',', value_name = "KIND,…")]
    pub only: Vec<String>,
}

fn kind_of(fig: &Figure) -> &str {
    KINDS
        .iter()
        .find(|k| fig.id == **k || fig.id.starts_with(&format!("{k}-")))
        .copied()
        .unwrap_or(fig.id.as_str())
}

/// What to say of `figures::from_records`' notes: about a figure that was
/// drawn, a "note" (marginals without the overlay); about one record, why it
/// was left out; a figure no record supports is named in one line — with its
/// reason when `--only` asked for it.
fn skip_report(skipped: &[String], figs: &[Figure], only: &[String]) -> Vec<String> {
    let mut lines = Vec::new();
    let mut unsupported = Vec::new();
    for s in skipped {
        let kind = s.split([' ', ':']).next().unwrap_or("");
        let asked = only.is_empty() || only.iter().any(|k| k == kind);
        let drawn = figs.iter().any(|f| kind_of(f) == kind);
        let about_a_record = s[kind.len()..].starts_with(" (");
        if !asked {
            continue;
        }
        if drawn {
            lines.push(format!("note: {s}"));
        } else if about_a_record || !only.is_empty() {
            lines.push(format!("skipped {s}"));
        } else if !unsupported.contains(&kind) {
            unsupported.push(kind);
        }
    }
    if !unsupported.is_empty() {
        lines.push(format!(
            "skipped {}: no record for them (--only KIND says what each needs)",
            unsupported.join(", ")
        ));
    }
    lines
}

pub fn run(args: &PlotArgs) -> Result<(), CliError> {
    for k in &args.only {
        if !KINDS.contains(&k.as_str()) {
            return Err(CliError::Input(format!(
                "--only {k}: no such figure; the figures are {}",
                KINDS.join(", ")
            )));
        }
    }
    let mut sources = Vec::new();
    for file in &args.records {
        let s = figures::load(file).map_err(|e| {
            CliError::Input(format!(
                "{}: {e}; make a record with `pacauc fit DATA.csv --out RUN.json` \
                 (or a path with `pacauc path DATA.csv --prior spike-slab --gamma G --out PATH.json`)",
                file.display()
            ))
        })?;
        sources.push(s);
    }
    let (figs, skipped) = figures::from_records(&sources);
    let wanted = |f: &Figure| args.only.is_empty() || args.only.iter().any(|k| k == kind_of(f));
    let formats: &[Format] = match args.format {
        PlotFormat::Png => &[Format::Png],
        PlotFormat::Svg => &[Format::Svg],
        PlotFormat::Both => &[Format::Png, Format::Svg],
    };
    std::fs::create_dir_all(&args.out).map_err(|e| {
        CliError::Input(format!(
            "--out {}: cannot create the folder: {e}",
            args.out.display()
        ))
    })?;
    let mut count = 0;
    for f in figs.iter().filter(|f| wanted(f)) {
        let paths = plot::write(f, &args.out, formats)
            .map_err(|e| CliError::Input(format!("{e}; choose a writable folder with --out")))?;
        for p in paths {
            println!("{}", p.display());
            count += 1;
        }
    }
    for line in skip_report(&skipped, &figs, &args.only) {
        eprintln!("{line}");
    }
    if count == 0 {
        return Err(CliError::Input(format!(
            "no figure to write{}: see the reasons above",
            if args.only.is_empty() {
                String::new()
            } else {
                format!(" for --only {}", args.only.join(","))
            }
        )));
    }
    Ok(())
}
