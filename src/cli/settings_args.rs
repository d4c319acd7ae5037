//! The registry's settings as command-line flags: `--key-with-dashes VALUE`,
//! with the registry's help and value names, negative numbers accepted as
//! values (so that `--gamma -1` gets the range error, not clap's "unexpected
//! argument"). clap only collects the text; `spec::from_given` parses and
//! checks it. A filter picks the settings a command takes.

use std::marker::PhantomData;

use clap::{Arg, ArgAction, ArgMatches, Args, Command, FromArgMatches};

use crate::spec::registry::{self, Group, Kind, Setting};
use crate::spec::{SpecError, name_settings};

/// Which settings a command takes.
pub trait Filter {
    fn include(s: &Setting) -> bool;
}

/// Every setting (`fit`, `bench`).
#[derive(Debug, Clone, Copy, Default)]
pub struct All;
impl Filter for All {
    fn include(_: &Setting) -> bool {
        true
    }
}

/// The data options (`explore`).
#[derive(Debug, Clone, Copy, Default)]
pub struct DataOnly;
impl Filter for DataOnly {
    fn include(s: &Setting) -> bool {
        s.group == Group::Data
    }
}

/// Everything an EP run takes except the cross-validation's folds and the
/// certificate (`path`).
#[derive(Debug, Clone, Copy, Default)]
pub struct EpRun;
impl Filter for EpRun {
    fn include(s: &Setting) -> bool {
        s.applies_to_method("ep") && s.key != "folds" && s.group != Group::Certificates
    }
}

/// EP's own settings and the GP prior's (`bench-ep`, which has its own γ,
/// prior and data options).
#[derive(Debug, Clone, Copy, Default)]
pub struct EpOnly;
impl Filter for EpOnly {
    fn include(s: &Setting) -> bool {
        s.group == Group::Ep || s.priors == [crate::spec::PriorKind::Gp]
    }
}

/// The settings given on the command line, as (registry key, text).
#[derive(Debug, Clone, Default)]
pub struct SettingArgs<F> {
    pub given: Vec<(&'static str, String)>,
    filter: PhantomData<F>,
}

impl<F> SettingArgs<F> {
    pub fn new(given: Vec<(&'static str, String)>) -> Self {
        SettingArgs {
            given,
            filter: PhantomData,
        }
    }

    /// The pairs as `from_given` takes them.
    pub fn pairs(&self) -> Vec<(&str, &str)> {
        self.given.iter().map(|(k, v)| (*k, v.as_str())).collect()
    }

    pub fn get(&self, key: &str) -> Option<&str> {
        self.given
            .iter()
            .find(|(k, _)| *k == key)
            .map(|(_, v)| v.as_str())
    }

    /// The settings as command-line words again (for child processes).
    pub fn to_argv(&self) -> Vec<String> {
        let mut a = Vec::new();
        for (key, text) in &self.given {
            a.push(flag(key));
            let switch = registry::setting_of(key).is_some_and(|s| s.kind == Kind::Switch);
            if !switch {
                a.push(text.clone());
            }
        }
        a
    }
}

/// The flag of a setting key (`max_stages` → `--max-stages`; also `method`).
pub fn flag(key: &str) -> String {
    format!("--{}", key.replace('_', "-"))
}

/// A spec error in the command line's words.
pub fn render(e: &SpecError) -> String {
    e.render(&flag)
}

/// An engine's message with the settings it names as flags.
pub fn render_message(m: &str) -> String {
    name_settings(m, &flag)
}

fn arg(s: &'static Setting) -> Arg {
    let help = if s.default.is_empty() {
        s.help.to_string()
    } else {
        format!("{} [default: {}]", s.help, s.default)
    };
    let a = Arg::new(s.key)
        .long(s.flag())
        .help(help)
        .help_heading(s.group.heading());
    match s.kind {
        Kind::Switch => a.action(ArgAction::SetTrue),
        Kind::TextList => a.action(ArgAction::Append).value_name(s.value_name()),
        Kind::Number(_) | Kind::Count(_) | Kind::Numbers(_) | Kind::Gamma | Kind::Tunable(_) => {
            a.value_name(s.value_name()).allow_negative_numbers(true)
        }
        Kind::Choice(_) | Kind::Text | Kind::Sized { .. } => a.value_name(s.value_name()),
    }
}

impl<F: Filter> FromArgMatches for SettingArgs<F> {
    fn from_arg_matches(m: &ArgMatches) -> Result<Self, clap::Error> {
        let mut given = Vec::new();
        for s in registry::SETTINGS.iter().filter(|s| F::include(s)) {
            match s.kind {
                Kind::Switch => {
                    if m.get_flag(s.key) {
                        given.push((s.key, String::new()));
                    }
                }
                _ => {
                    if let Some(values) = m.get_many::<String>(s.key) {
                        given.extend(values.map(|v| (s.key, v.clone())));
                    }
                }
            }
        }
        Ok(SettingArgs::new(given))
    }

    fn update_from_arg_matches(&mut self, m: &ArgMatches) -> Result<(), clap::Error> {
        *self = Self::from_arg_matches(m)?;
        Ok(())
    }
}

impl<F: Filter> Args for SettingArgs<F> {
    fn augment_args(cmd: Command) -> Command {
        cmd.args(registry::SETTINGS.iter().filter(|s| F::include(s)).map(arg))
    }

    fn augment_args_for_update(cmd: Command) -> Command {
        Self::augment_args(cmd)
    }
}
