//! `pacauc path`: the spike-and-slab regularisation path over the spike
//! variance v0 (RACL14 Fig. 3a), one warm-started EP run per v0.

use std::fmt::Write as _;
use std::io::IsTerminal;
use std::path::PathBuf;

use clap::{Args, ValueEnum};
use serde_json::json;

use super::fit::CliError;
use super::settings_args::{EpRun, SettingArgs};
use crate::engine::ep::spike_slab::engine::{SELECTED, selected_score};
use crate::engine::ep::spike_slab::{PathPoint, SsSettings, path, spike_var_grid};
use crate::engine::metrics::auc;
use crate::engine::record::write_atomic;
use crate::engine::{Control, Prior, ScoreModel};
use crate::spec::{self, MethodSpec, PriorKind, Tunable};

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum PathFormat {
    Json,
    /// One row per (v0, feature): spike_var,feature,mean,sd,inclusion,log_evidence,converged.
    Csv,
}

#[derive(Debug, Clone, Args)]
pub struct PathArgs {
    /// CSV file with a header row; the target is the last column unless --target.
    pub data: PathBuf,
    #[command(flatten)]
    pub settings: SettingArgs<EpRun>,
    /// Spike variances v0 (comma-separated; each in [1e-6, 1)·v1). Default:
    /// --grid-size values log-spaced over [1e-6, 0.1]·v1.
    #[arg(long, value_delimiter = ',', value_name = "V0,V0,…")]
    pub spike_var_grid: Option<Vec<f64>>,
    /// Number of default grid values.
    #[arg(long, default_value_t = 10, value_name = "N")]
    pub grid_size: usize,
    /// Output format (stdout, and --out).
    #[arg(long, value_enum, default_value = "json")]
    pub format: PathFormat,
    /// Also write the output to this file (atomically).
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,
}

pub fn run(args: &PathArgs) -> Result<(), CliError> {
    let spec = spec::from_given(args.data.clone(), "ep", &args.settings.pairs())?;
    let refuse = |m: &str| Err(CliError::Input(m.into()));
    let Some(p) = spec
        .prior
        .as_ref()
        .filter(|p| p.kind == PriorKind::SpikeSlab)
    else {
        return refuse("pacauc path runs the spike-and-slab path: give --prior spike-slab");
    };
    if p.spike_var.is_some() {
        return refuse(
            "pacauc path varies the spike variance: give --spike-var-grid, not --spike-var",
        );
    }
    let Tunable::Value(slab_var) = p.slab_var else {
        return refuse("--slab-var auto is not supported by path");
    };
    if p.inclusion_prior == Some(Tunable::Auto) {
        return refuse("--inclusion-prior auto is not supported by path");
    }
    if spec.gamma == Some(spec::Gamma::Auto) {
        return refuse("--gamma auto is not supported by path; give γ");
    }
    let MethodSpec::Ep(ep) = &spec.method else {
        unreachable!("built as an EP spec")
    };
    let show_progress = std::io::stderr().is_terminal();
    let (ds, prepared) = spec.data.load().map_err(CliError::Input)?;
    let d = prepared.names.len();
    let incl = p
        .inclusion_prior
        .and_then(Tunable::value)
        .unwrap_or_else(|| Prior::theory_inclusion(d));
    let gamma = spec
        .gamma
        .and_then(|g| g.resolve(prepared.train.rows()))
        .expect("γ is a number here");
    let grid = match &args.spike_var_grid {
        Some(g) => g.clone(),
        None => spike_var_grid(slab_var, args.grid_size),
    };
    for &v0 in &grid {
        Prior::SpikeSlab {
            spike_var: v0,
            slab_var,
            incl,
        }
        .validate(d)
        .map_err(|m| CliError::Input(super::settings_args::render_message(&m)))?;
    }
    let engine = spec::build::ep_engine(ep, spec.gamma, spec.prior.as_ref(), spec.data.seed);
    let settings = SsSettings {
        ep: engine.settings,
        evidence_every_sweep: false,
        site_steps: engine.site_steps,
        ..SsSettings::default()
    };
    let ctl = Control::new();
    let train = &prepared.train;
    let result = path::run(
        &train.x,
        &train.y,
        gamma,
        slab_var,
        incl,
        &grid,
        &settings,
        engine.precision,
        engine.release_fixes,
        &ctl,
        &mut |p: &PathPoint| {
            if show_progress {
                eprintln!(
                    "v0 = {:.3e}: {} ({} sweeps, {:.2} s)",
                    p.spike_var,
                    if p.converged {
                        "converged"
                    } else {
                        "did not converge"
                    },
                    p.sweeps,
                    p.seconds
                );
            }
        },
        &mut |_, _| {},
    )?;

    let names = &prepared.names;
    let score_auc = |w: &[f64], x: &nalgebra::DMatrix<f64>, y: &[bool]| {
        auc(
            &ScoreModel::Linear {
                weights: w.to_vec(),
            }
            .score(x),
            y,
        )
    };
    let points: Vec<serde_json::Value> = result
        .points
        .iter()
        .map(|p| {
            let aucs = |w: &[f64]| {
                json!({
                    "train": score_auc(w, &train.x, &train.y),
                    "test": prepared.test.as_ref().map(|t| score_auc(w, &t.x, &t.y)),
                })
            };
            let selected: Vec<&String> = names
                .iter()
                .zip(&p.inclusion)
                .filter(|(_, q)| **q > SELECTED)
                .map(|(n, _)| n)
                .collect();
            json!({
                "spike_var": p.spike_var,
                "spike_over_slab": p.spike_var / slab_var,
                "converged": p.converged,
                "error": p.error,
                "sweeps": p.sweeps,
                "seconds": p.seconds,
                "released_fix": p.released,
                "log_evidence": p.log_evidence,
                "selected": selected,
                "auc": (p.converged).then(|| json!({
                    "mean": aucs(&p.mean),
                    "selected": selected_score(&p.mean, &p.inclusion).map(|w| aucs(&w)),
                })),
                "coefficients": (0..p.mean.len()).map(|k| json!({
                    "name": names[k], "mean": p.mean[k], "sd": p.sd[k], "inclusion": p.inclusion[k],
                })).collect::<Vec<_>>(),
            })
        })
        .collect();
    let text = match args.format {
        PathFormat::Json => {
            let v = json!({
                "dataset": crate::engine::record::DatasetReport::of(&ds),
                "rows_train": train.rows(),
                "features": d,
                "gamma": gamma,
                "slab_var": slab_var,
                "inclusion_prior": incl,
                "selected_threshold": SELECTED,
                "seconds": result.seconds,
                "points": points,
            });
            serde_json::to_string_pretty(&v).expect("json") + "\n"
        }
        PathFormat::Csv => {
            let mut s =
                String::from("spike_var,feature,mean,sd,inclusion,log_evidence,converged\n");
            let num = |v: Option<f64>| v.map_or(String::new(), |v| v.to_string());
            for p in &result.points {
                for (k, name) in names.iter().enumerate() {
                    let _ = writeln!(
                        s,
                        "{},{},{},{},{},{},{}",
                        p.spike_var,
                        csv_field(name),
                        num(p.mean.get(k).copied()),
                        num(p.sd.get(k).copied()),
                        num(p.inclusion.get(k).copied()),
                        num(p.log_evidence),
                        p.converged
                    );
                }
            }
            s
        }
    };
    if let Some(path) = &args.out {
        write_atomic(path, text.as_bytes()).map_err(|e| {
            CliError::Input(format!("{}: cannot write the path: {e}", path.display()))
        })?;
    }
    print!("{text}");
    Ok(())
}

/// A CSV field, quoted when it holds a comma, quote or newline.
fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}
