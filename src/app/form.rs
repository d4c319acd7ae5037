//! The run form: a method and the few settings worth changing interactively.
//! Only fields whose flag `pacauc fit` accepts are shown, and only for the
//! methods they apply to.

use super::keys::Key;
use super::run_config::{self, RunConfig};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Applies {
    All,
    Bayesian,
    /// Gaussian or ARD prior.
    ScaledPrior,
    SpikeSlab,
    Method(&'static str),
}

#[derive(Debug)]
pub struct FieldSpec {
    /// The `pacauc fit` flag (without `--`).
    pub flag: &'static str,
    pub label: &'static str,
    /// What an empty field means / what to type.
    pub hint: &'static str,
    /// Fixed choices (cycled with ←→); empty = free text.
    pub choices: &'static [&'static str],
    applies: Applies,
}

macro_rules! field {
    ($flag:expr, $label:expr, $hint:expr, $choices:expr, $applies:expr) => {
        FieldSpec {
            flag: $flag,
            label: $label,
            hint: $hint,
            choices: $choices,
            applies: $applies,
        }
    };
}

/// Every field the form knows; `method` is handled separately.
pub const FIELDS: &[FieldSpec] = &[
    field!(
        "prior",
        "prior",
        "",
        &["gaussian", "ard", "spike-slab"],
        Applies::Bayesian
    ),
    field!(
        "prior-var",
        "prior variance ϑ",
        "default 1 (AUCs do not depend on it)",
        &[],
        Applies::ScaledPrior
    ),
    field!(
        "spike-var",
        "spike variance v0",
        "default 1e-4·v1",
        &[],
        Applies::SpikeSlab
    ),
    field!(
        "slab-var",
        "slab variance v1",
        "number or auto; default 1",
        &[],
        Applies::SpikeSlab
    ),
    field!(
        "inclusion-prior",
        "inclusion prior p",
        "number or auto; default 1−e^(−1/d)",
        &[],
        Applies::SpikeSlab
    ),
    field!(
        "gamma",
        "γ",
        "number, Kn (e.g. 2n) or auto; default n",
        &[],
        Applies::Bayesian
    ),
    field!(
        "particles",
        "particles N",
        "default of the engine",
        &[],
        Applies::Method("smc")
    ),
    field!(
        "moves",
        "moves per stage K",
        "default adaptive",
        &[],
        Applies::Method("smc")
    ),
    field!(
        "waste-free",
        "waste-free chain P",
        "empty = standard SMC",
        &[],
        Applies::Method("smc")
    ),
    field!(
        "ess",
        "ESS target τ",
        "default 0.5",
        &[],
        Applies::Method("smc")
    ),
    field!(
        "kernel",
        "move kernel",
        "",
        &["default", "rw", "pcn", "gpcn"],
        Applies::Method("smc")
    ),
    field!(
        "damping",
        "damping η",
        "default 0.7",
        &[],
        Applies::Method("ep")
    ),
    field!(
        "tol",
        "tolerance",
        "default 1e-4 (relative change)",
        &[],
        Applies::Method("ep")
    ),
    field!(
        "lambda",
        "penalty λ",
        "empty = by cross-validation",
        &[],
        Applies::Method("logit")
    ),
    field!(
        "rounds",
        "rounds",
        "empty = by cross-validation",
        &[],
        Applies::Method("rankboost")
    ),
    field!(
        "seed",
        "seed",
        "default: the explorer's --seed",
        &[],
        Applies::All
    ),
];

#[derive(Debug, Clone, PartialEq)]
pub struct Form {
    pub methods: Vec<String>,
    pub method: usize,
    /// Values by flag (choices hold their current choice).
    pub values: Vec<(&'static str, String)>,
    /// Row under the cursor: 0 = method, i ≥ 1 = `visible()[i - 1]`.
    pub cursor: usize,
    pub error: Option<String>,
}

/// What a key did to the form.
#[derive(Debug, Clone, PartialEq)]
pub enum FormOutcome {
    Stay,
    Close,
    Submit(RunConfig),
}

impl Form {
    /// A form preset to `config` (or to the first method).
    pub fn new(config: Option<&RunConfig>) -> Form {
        let methods = run_config::methods();
        let method = config
            .and_then(|c| methods.iter().position(|m| *m == c.method))
            .unwrap_or(0);
        let values = FIELDS
            .iter()
            .map(|f| {
                let v = config
                    .and_then(|c| c.get(f.flag))
                    .map(String::from)
                    .or_else(|| f.choices.first().map(|c| c.to_string()))
                    .unwrap_or_default();
                (f.flag, v)
            })
            .collect();
        Form {
            methods,
            method,
            values,
            cursor: 0,
            error: None,
        }
    }

    pub fn method(&self) -> &str {
        self.methods.get(self.method).map_or("", |s| s.as_str())
    }

    pub fn value(&self, flag: &str) -> &str {
        self.values
            .iter()
            .find(|(f, _)| *f == flag)
            .map_or("", |(_, v)| v.as_str())
    }

    fn value_mut(&mut self, flag: &str) -> Option<&mut String> {
        self.values
            .iter_mut()
            .find(|(f, _)| *f == flag)
            .map(|(_, v)| v)
    }

    fn applies(&self, f: &FieldSpec) -> bool {
        let m = self.method();
        let bayes = run_config::is_bayesian(m);
        let prior = self.value("prior");
        let ok = match f.applies {
            Applies::All => true,
            Applies::Bayesian => bayes,
            Applies::ScaledPrior => bayes && prior != "spike-slab",
            Applies::SpikeSlab => bayes && prior == "spike-slab",
            Applies::Method(name) => m == name,
        };
        ok && run_config::cli_flags().contains(f.flag)
    }

    /// The fields shown for the current method.
    pub fn visible(&self) -> Vec<&'static FieldSpec> {
        FIELDS.iter().filter(|f| self.applies(f)).collect()
    }

    pub fn rows(&self) -> usize {
        1 + self.visible().len()
    }

    /// The run these settings describe (empty fields are left to the defaults).
    pub fn config(&self) -> RunConfig {
        let mut c = RunConfig::new(self.method());
        for f in self.visible() {
            let v = self.value(f.flag).trim();
            let is_default_choice = f.choices.first() == Some(&v);
            if !v.is_empty() && !is_default_choice {
                c.settings.push((f.flag.to_string(), v.to_string()));
            }
        }
        c
    }

    fn cycle(&mut self, step: isize) {
        if self.cursor == 0 {
            let n = self.methods.len().max(1) as isize;
            self.method = (self.method as isize + step).rem_euclid(n) as usize;
        } else if let Some(f) = self.visible().get(self.cursor - 1).copied()
            && !f.choices.is_empty()
        {
            let n = f.choices.len() as isize;
            let i = f
                .choices
                .iter()
                .position(|c| *c == self.value(f.flag))
                .unwrap_or(0) as isize;
            let next = f.choices[(i + step).rem_euclid(n) as usize].to_string();
            if let Some(v) = self.value_mut(f.flag) {
                *v = next;
            }
        }
        self.cursor = self.cursor.min(self.rows() - 1);
    }

    fn text_field(&self) -> Option<&'static str> {
        let f = self.visible().get(self.cursor.checked_sub(1)?).copied()?;
        f.choices.is_empty().then_some(f.flag)
    }

    /// Handles a key; `validate` checks a config before it is submitted.
    pub fn key(
        &mut self,
        key: Key,
        validate: impl Fn(&RunConfig) -> Result<(), String>,
    ) -> FormOutcome {
        let rows = self.rows();
        match key {
            Key::Esc => return FormOutcome::Close,
            Key::Up | Key::BackTab => self.cursor = (self.cursor + rows - 1) % rows,
            Key::Down | Key::Tab => self.cursor = (self.cursor + 1) % rows,
            Key::Left => self.cycle(-1),
            Key::Right => self.cycle(1),
            Key::Enter => {
                let c = self.config();
                match validate(&c) {
                    Ok(()) => return FormOutcome::Submit(c),
                    Err(e) => self.error = Some(e),
                }
                return FormOutcome::Stay;
            }
            Key::Backspace => {
                if let Some(flag) = self.text_field()
                    && let Some(v) = self.value_mut(flag)
                {
                    v.pop();
                }
            }
            Key::Char(c) if !c.is_control() => match self.text_field() {
                Some(flag) => {
                    if let Some(v) = self.value_mut(flag)
                        && v.chars().count() < 24
                    {
                        v.push(c);
                    }
                }
                // On a choice row, h/l cycle like ←/→.
                None if c == 'h' => self.cycle(-1),
                None if c == 'l' || c == ' ' => self.cycle(1),
                None if c == 'k' => self.cursor = (self.cursor + rows - 1) % rows,
                None if c == 'j' => self.cursor = (self.cursor + 1) % rows,
                None => {}
            },
            _ => {}
        }
        self.error = None;
        FormOutcome::Stay
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ok(_: &RunConfig) -> Result<(), String> {
        Ok(())
    }

    #[test]
    fn choose_method_edit_and_submit() {
        let mut f = Form::new(None);
        let logit = f.methods.iter().position(|m| m == "logit").unwrap();
        while f.method != logit {
            f.key(Key::Right, ok);
        }
        // The first field below the method of logit is λ (when the CLI has it).
        f.key(Key::Down, ok);
        let flag = f.visible()[0].flag;
        assert_eq!(flag, "lambda");
        for c in "0.5".chars() {
            f.key(Key::Char(c), ok);
        }
        f.key(Key::Backspace, ok);
        f.key(Key::Char('1'), ok);
        let FormOutcome::Submit(c) = f.key(Key::Enter, ok) else {
            panic!()
        };
        assert_eq!(c.method, "logit");
        assert_eq!(c.get("lambda"), Some("0.1"));
        assert_eq!(
            Form::new(Some(&c)).config(),
            c,
            "a form reopens with a run's settings"
        );
    }

    #[test]
    fn validation_errors_keep_the_form_open() {
        let mut f = Form::new(None);
        let out = f.key(Key::Enter, |_| Err("nope".into()));
        assert_eq!(out, FormOutcome::Stay);
        assert_eq!(f.error.as_deref(), Some("nope"));
        assert_eq!(f.key(Key::Esc, ok), FormOutcome::Close);
    }

    #[test]
    fn cursor_wraps() {
        let mut f = Form::new(None);
        let rows = f.rows();
        f.key(Key::Up, ok);
        assert_eq!(f.cursor, rows - 1);
        f.key(Key::Down, ok);
        assert_eq!(f.cursor, 0);
    }
}
