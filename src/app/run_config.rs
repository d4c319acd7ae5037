//! The one mapping from the run form's settings to an engine: the form writes
//! the `pacauc fit` command line it stands for, the CLI's own parser and
//! `build_engine` turn it into an `Engine`. The explorer and `pacauc fit` can
//! therefore never disagree, and a method or flag added to the CLI shows up in
//! the form by itself.

use std::collections::BTreeSet;
use std::sync::OnceLock;

use clap::{CommandFactory, Parser, ValueEnum};

use crate::cli::DataArgs;
use crate::cli::GammaChoice;
use crate::cli::fit::{CliError, FitArgs, Method, build_engine};
use crate::engine::data::Prepared;
use crate::engine::{Engine, Prior, Problem};

/// A run's settings: the method and the form's non-empty fields as CLI flags
/// (without the leading `--`).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct RunConfig {
    pub method: String,
    pub settings: Vec<(String, String)>,
}

impl RunConfig {
    pub fn new(method: &str) -> RunConfig {
        RunConfig {
            method: method.to_string(),
            settings: Vec::new(),
        }
    }

    pub fn get(&self, flag: &str) -> Option<&str> {
        self.settings
            .iter()
            .find(|(f, _)| f == flag)
            .map(|(_, v)| v.as_str())
    }

    /// Short description: the method and its explicit settings.
    pub fn label(&self) -> String {
        let mut s = self.method.clone();
        for (f, v) in &self.settings {
            s.push_str(&format!(" {f}={v}"));
        }
        s
    }
}

#[derive(Parser)]
#[command(name = "fit")]
struct FitCommand {
    #[command(flatten)]
    args: FitArgs,
}

/// Method names the CLI knows, in its order.
pub fn methods() -> Vec<String> {
    Method::value_variants()
        .iter()
        .filter_map(|m| m.to_possible_value().map(|p| p.get_name().to_string()))
        .collect()
}

pub fn is_bayesian(method: &str) -> bool {
    Method::from_str(method, true).is_ok_and(|m| m.is_bayesian())
}

/// Long flags `pacauc fit` accepts (without `--`).
pub fn cli_flags() -> &'static BTreeSet<String> {
    static FLAGS: OnceLock<BTreeSet<String>> = OnceLock::new();
    FLAGS.get_or_init(|| {
        FitCommand::command()
            .get_arguments()
            .filter_map(|a| a.get_long().map(String::from))
            .collect()
    })
}

/// The methods the explorer runs on start: EP then SMC when this build has them,
/// else the baselines.
pub fn autorun_methods() -> Vec<String> {
    let all = methods();
    let wanted: Vec<String> = ["ep", "smc"]
        .iter()
        .filter(|m| all.iter().any(|a| a == *m))
        .map(|m| m.to_string())
        .collect();
    if wanted.is_empty() { all } else { wanted }
}

/// `pacauc fit …` arguments (without the program name) for a run on `data`.
pub fn argv(config: &RunConfig, data: &DataArgs) -> Vec<String> {
    let mut v = vec![data.data.display().to_string()];
    let mut push = |f: &str, val: String| {
        v.push(format!("--{f}"));
        v.push(val);
    };
    if let Some(t) = &data.target {
        push("target", t.clone());
    }
    if let Some(p) = &data.positive {
        push("positive", p.clone());
    }
    for d in &data.drop {
        push("drop", d.clone());
    }
    if let Some(m) = data.missing.to_possible_value()
        && m.get_name() != "drop"
    {
        push("missing", m.get_name().to_string());
    }
    match &data.test {
        Some(t) => push("test", t.display().to_string()),
        None if data.test_frac != 0.25 => push("test-frac", data.test_frac.to_string()),
        None => {}
    }
    if config.get("seed").is_none() && data.seed != 0 {
        push("seed", data.seed.to_string());
    }
    push("method", config.method.clone());
    for (f, val) in &config.settings {
        push(f, val.clone());
    }
    v
}

/// The equivalent command line, for display and copy-paste.
pub fn command_line(config: &RunConfig, data: &DataArgs) -> String {
    let mut s = String::from("pacauc fit");
    for a in argv(config, data) {
        s.push(' ');
        let plain = !a.is_empty()
            && a.chars()
                .all(|c| c.is_ascii_alphanumeric() || "-_./=:,+".contains(c));
        if plain {
            s.push_str(&a);
        } else {
            s.push('\'');
            s.push_str(&a.replace('\'', r"'\''"));
            s.push('\'');
        }
    }
    s
}

fn parse(config: &RunConfig, data: &DataArgs) -> Result<FitArgs, String> {
    let args = std::iter::once("fit".to_string()).chain(argv(config, data));
    FitCommand::try_parse_from(args)
        .map(|c| c.args)
        .map_err(|e| {
            let text = e.render().to_string();
            let first = text.lines().next().unwrap_or("invalid settings");
            first.trim_start_matches("error: ").to_string()
        })
}

fn cli_error(e: CliError) -> String {
    match e {
        CliError::Input(m) | CliError::Engine(m) => m,
    }
}

/// γ and the prior for `n_train` rows and `d` features, as `pacauc fit` chooses them.
fn gamma_and_prior(
    args: &FitArgs,
    n_train: usize,
    d: usize,
) -> Result<(GammaChoice, Prior), String> {
    if args.method.is_bayesian() {
        Ok((args.bayes.gamma(n_train)?, args.bayes.prior(d)?))
    } else {
        // Baselines ignore γ and the prior.
        Ok((GammaChoice::Fixed(0.0), Prior::Gaussian { var: 1.0 }))
    }
}

/// Validates the settings for data of `n_train` rows and `d` features without
/// building anything (the form uses it before closing).
pub fn check(config: &RunConfig, data: &DataArgs, n_train: usize, d: usize) -> Result<(), String> {
    let args = parse(config, data)?;
    let (gamma, _) = gamma_and_prior(&args, n_train, d)?;
    build_engine(&args, gamma).map(|_| ()).map_err(cli_error)
}

/// The engine and the problem of a run on the prepared training rows.
pub fn build(
    config: &RunConfig,
    data: &DataArgs,
    prepared: &Prepared,
) -> Result<(Box<dyn Engine>, Problem), String> {
    let args = parse(config, data)?;
    let n = prepared.train.rows();
    let (gamma, prior) = gamma_and_prior(&args, n, prepared.names.len())?;
    let engine = build_engine(&args, gamma).map_err(cli_error)?;
    let fixed_gamma = match gamma {
        GammaChoice::Fixed(g) => g,
        GammaChoice::Auto => n as f64, // the starting point of the tuning
    };
    let problem = Problem::new(
        prepared.names.clone(),
        prepared.train.x.clone(),
        prepared.train.y.clone(),
        fixed_gamma,
        prior,
    )
    .map_err(|e| e.to_string())?;
    Ok((engine, problem))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    fn data() -> DataArgs {
        DataArgs {
            data: PathBuf::from("demo-data/sparse_linear.csv"),
            target: None,
            positive: None,
            drop: vec!["id col".into()],
            missing: crate::cli::MissingArg::Drop,
            test_frac: 0.25,
            seed: 3,
            test: None,
        }
    }

    #[test]
    fn form_settings_become_the_cli_command() {
        let mut c = RunConfig::new("logit");
        assert_eq!(
            command_line(&c, &data()),
            "pacauc fit demo-data/sparse_linear.csv --drop 'id col' --seed 3 --method logit"
        );
        c.settings.push(("seed".into(), "9".into()));
        let a = argv(&c, &data());
        assert_eq!(a.iter().filter(|s| *s == "--seed").count(), 1);
        assert!(parse(&c, &data()).is_ok());
    }

    #[test]
    fn bad_settings_give_the_cli_message() {
        let mut c = RunConfig::new("logit");
        c.settings.push(("lambda".into(), "abc".into()));
        let e = check(&c, &data(), 100, 5).unwrap_err();
        assert!(e.contains("lambda"), "{e}");
        let c = RunConfig::new("nonsense");
        assert!(check(&c, &data(), 100, 5).is_err());
    }

    #[test]
    fn every_method_is_offered_and_flags_are_introspected() {
        let m = methods();
        assert!(m.contains(&"logit".to_string()) && m.contains(&"rankboost".to_string()));
        assert!(cli_flags().contains("method") && cli_flags().contains("seed"));
        assert!(!autorun_methods().is_empty());
    }
}
