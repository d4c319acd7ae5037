//! The files of a reproduce: the tables (Markdown and CSV) and the figure set
//! drawn through `figures/` and `plot/` from the records of split 0 — the ROC
//! curves of every method per data set (RACL14 Fig. 2) and EP against the
//! SMC histogram on Pima (Fig. 1). All written atomically.

use std::path::{Path, PathBuf};

use super::tables::Tables;
use crate::engine::record::write_atomic;
use crate::figures::{self, Figure, Source};
use crate::plot::{self, Format};

/// What was written, and the figures that could not be drawn (why).
#[derive(Debug, Default)]
pub struct Written {
    pub files: Vec<PathBuf>,
    pub skipped_figures: Vec<String>,
}

/// The split whose records the figures show.
pub const FIGURE_SPLIT: u64 = 0;
/// The data set of Fig. 1 (EP against SMC marginals).
pub const MARGINALS_DATA: &str = "pima";

pub fn write(out: &Path, t: &Tables, records: &Path) -> Result<Written, String> {
    let mut w = Written::default();
    for (name, text) in [
        ("table1.md", t.table1_md()),
        ("table1.csv", t.table1_csv()),
        ("table2.md", t.table2_md()),
        ("table2.csv", t.table2_csv()),
    ] {
        let path = out.join(name);
        write_atomic(&path, text.as_bytes()).map_err(|e| format!("{}: {e}", path.display()))?;
        w.files.push(path);
    }
    let dir = out.join("figures");
    std::fs::create_dir_all(&dir)
        .map_err(|e| format!("{}: cannot create the folder: {e}", dir.display()))?;
    for d in t.data {
        let keys: Vec<&str> = t.methods.iter().map(|m| m.key).collect();
        let sources = split_records(records, &d.name, &keys);
        if sources.is_empty() {
            w.skipped_figures.push(format!(
                "roc ({}): no record of split {FIGURE_SPLIT} yet",
                d.name
            ));
            continue;
        }
        let figs = figures::from_records(&sources).0;
        let mut wanted: Vec<Figure> = figs.into_iter().filter(|f| f.id == "roc").collect();
        if d.name == MARGINALS_DATA {
            // EP Gaussian and SMC alone: the other priors' posteriors differ.
            let pair = split_records(records, &d.name, &["ep", "smc"]);
            let has_smc = pair
                .iter()
                .any(|s| matches!(s, Source::Run { record, .. } if !record.histograms.is_empty()));
            let m: Vec<Figure> = if pair.len() == 2 && has_smc {
                figures::from_records(&pair)
                    .0
                    .into_iter()
                    .filter(|f| f.id == "marginals")
                    .collect()
            } else {
                Vec::new()
            };
            if m.is_empty() {
                w.skipped_figures.push(format!(
                    "marginals ({}): needs the EP Gaussian and SMC records of split \
                     {FIGURE_SPLIT}",
                    d.name
                ));
            }
            wanted.extend(m);
        }
        for f in &mut wanted {
            f.title = format!("{} · {} · split {FIGURE_SPLIT}", f.title, d.name);
            f.id = format!("{}-{}", f.id, d.name);
        }
        for f in &wanted {
            let paths = plot::write(f, &dir, &[Format::Png, Format::Svg])?;
            w.files.extend(paths);
        }
    }
    Ok(w)
}

/// The records of split `FIGURE_SPLIT` of `data` that exist, named by their
/// method column (the figures' legend).
fn split_records(records: &Path, data: &str, keys: &[&str]) -> Vec<Source> {
    let mut out = Vec::new();
    for k in keys {
        let path = records.join(format!("{data}_{k}_{FIGURE_SPLIT}.json"));
        if let Ok(Source::Run { record, .. }) = figures::load(&path) {
            out.push(Source::Run {
                label: k.to_string(),
                record,
            });
        }
    }
    out
}
