//! The run form: a method and the settings the registry marks for the form,
//! only those that apply to the method and prior, with the registry's labels,
//! hints (`auto` offered only where it works) and help. It edits a `RunSpec`:
//! the session's data options plus the fields' text, checked by the spec layer
//! exactly as `pacauc fit` checks its flags.

use super::keys::Key;
use crate::spec::registry::{self, Kind, Setting};
use crate::spec::text::explicit_text;
use crate::spec::{DataSpec, PriorKind, RunSpec, SpecError, from_given};

#[derive(Debug, Clone, PartialEq)]
pub struct Form {
    /// The session's data options (the seed excepted: a field).
    pub data: DataSpec,
    pub methods: Vec<&'static str>,
    pub method: usize,
    /// Text by setting key (choices hold their current choice).
    pub values: Vec<(&'static str, String)>,
    /// Row under the cursor: 0 = method, i ≥ 1 = `visible()[i - 1]`.
    pub cursor: usize,
    pub error: Option<String>,
    /// A spec above the cost limits whose refusal was shown: Enter on the
    /// same spec again runs it.
    pub over_cost_shown: Option<RunSpec>,
}

/// What a key did to the form.
#[derive(Debug, Clone, PartialEq)]
pub enum FormOutcome {
    Stay,
    Close,
    Submit(Box<RunSpec>),
    /// Start it as a process of its own that outlives the explorer.
    Background(Box<RunSpec>),
}

/// A setting's name in the form's words (its label).
pub fn label_of(key: &str) -> String {
    registry::setting_of(key).map_or(key.to_string(), |s| s.label.to_string())
}

/// A spec error in the form's words.
pub fn render_error(e: &SpecError) -> String {
    e.render(&label_of)
}

fn form_settings() -> impl Iterator<Item = &'static Setting> {
    registry::SETTINGS.iter().filter(|s| s.form)
}

impl Form {
    /// A form preset to `preset`'s method and settings, on the session's `data`.
    pub fn new(preset: Option<&RunSpec>, data: &DataSpec) -> Form {
        let methods = registry::method_names();
        let first = RunSpec::for_method(data.clone(), methods[0]).expect("a registered method");
        let preset = preset.unwrap_or(&first);
        let method = methods
            .iter()
            .position(|m| *m == preset.method_name())
            .unwrap_or(0);
        let values = form_settings()
            .map(|s| {
                let text = match s.kind {
                    // A switch is a choice of off and on in the form.
                    Kind::Switch => if explicit_text(preset, s).is_some() {
                        "on"
                    } else {
                        "off"
                    }
                    .into(),
                    Kind::Choice(_) => explicit_text(preset, s).unwrap_or_else(|| s.default.into()),
                    _ => explicit_text(preset, s).unwrap_or_default(),
                };
                (s.key, text)
            })
            .collect();
        Form {
            data: data.clone(),
            methods,
            method,
            values,
            cursor: 0,
            error: None,
            over_cost_shown: None,
        }
    }

    pub fn method(&self) -> &'static str {
        self.methods.get(self.method).copied().unwrap_or("")
    }

    pub fn value(&self, key: &str) -> &str {
        self.values
            .iter()
            .find(|(k, _)| *k == key)
            .map_or("", |(_, v)| v.as_str())
    }

    fn value_mut(&mut self, key: &str) -> Option<&mut String> {
        self.values
            .iter_mut()
            .find(|(k, _)| *k == key)
            .map(|(_, v)| v)
    }

    /// The prior the fields apply to (None for the baselines).
    pub fn prior(&self) -> Option<PriorKind> {
        let info = registry::method(self.method())?;
        let chosen = serde_json::from_value(serde_json::json!(self.value("prior"))).ok();
        info.bayesian
            .then(|| chosen.filter(|p| info.priors.contains(p)))
            .flatten()
            .or_else(|| info.priors.first().copied())
    }

    /// The choices of a choice field (the priors the method accepts, for
    /// `prior`; off and on for a switch); empty for a text field.
    pub fn choices(&self, s: &Setting) -> Vec<&'static str> {
        match (s.kind, s.key, registry::method(self.method())) {
            (Kind::Switch, ..) => vec!["off", "on"],
            (Kind::Choice(_), "prior", Some(m)) => m.priors.iter().map(|p| p.name()).collect(),
            (Kind::Choice(_), ..) => s.choices(self.method()).to_vec(),
            _ => Vec::new(),
        }
    }

    /// The fields shown for the current method and prior.
    pub fn visible(&self) -> Vec<&'static Setting> {
        let (m, p) = (self.method(), self.prior());
        form_settings().filter(|s| s.applies(m, p)).collect()
    }

    pub fn rows(&self) -> usize {
        1 + self.visible().len()
    }

    /// The setting under the cursor (None on the method row).
    pub fn focused(&self) -> Option<&'static Setting> {
        self.visible().get(self.cursor.checked_sub(1)?).copied()
    }

    /// The run these fields describe (empty fields keep the defaults).
    pub fn spec(&self) -> Result<RunSpec, SpecError> {
        let given: Vec<(&str, &str)> = self
            .visible()
            .into_iter()
            .filter_map(|s| {
                let v = self.value(s.key).trim();
                match s.kind {
                    Kind::Switch => (v == "on").then_some((s.key, "")),
                    Kind::Choice(_) if v == s.default => None,
                    _ => (!v.is_empty()).then_some((s.key, v)),
                }
            })
            .collect();
        let mut spec = from_given(self.data.path.clone(), self.method(), &given)?;
        spec.data = DataSpec {
            seed: spec.data.seed,
            ..self.data.clone()
        };
        crate::spec::check(&spec)?;
        Ok(spec)
    }

    fn cycle(&mut self, step: isize) {
        if self.cursor == 0 {
            let n = self.methods.len().max(1) as isize;
            self.method = (self.method as isize + step).rem_euclid(n) as usize;
        } else if let Some(s) = self.focused() {
            let choices = self.choices(s);
            if !choices.is_empty() {
                let n = choices.len() as isize;
                let i = choices
                    .iter()
                    .position(|c| *c == self.value(s.key))
                    .unwrap_or(0) as isize;
                let next = choices[(i + step).rem_euclid(n) as usize].to_string();
                if let Some(v) = self.value_mut(s.key) {
                    *v = next;
                }
            }
        }
        self.cursor = self.cursor.min(self.rows() - 1);
    }

    fn text_field(&self) -> Option<&'static str> {
        let s = self.focused()?;
        self.choices(s).is_empty().then_some(s.key)
    }

    /// Handles a key; `validate` checks a spec (against the data) before it is submitted.
    pub fn key(
        &mut self,
        key: Key,
        validate: impl Fn(&RunSpec) -> Result<(), String>,
    ) -> FormOutcome {
        let rows = self.rows();
        match key {
            Key::Esc => return FormOutcome::Close,
            Key::Up | Key::BackTab => self.cursor = (self.cursor + rows - 1) % rows,
            Key::Down | Key::Tab => self.cursor = (self.cursor + 1) % rows,
            Key::Left => self.cycle(-1),
            Key::Right => self.cycle(1),
            Key::Enter | Key::CtrlB => {
                match self.spec().map_err(|e| render_error(&e)).and_then(|s| {
                    validate(&s)?;
                    Ok(s)
                }) {
                    Ok(s) if key == Key::CtrlB => return FormOutcome::Background(Box::new(s)),
                    Ok(s) => return FormOutcome::Submit(Box::new(s)),
                    Err(e) => self.error = Some(e),
                }
                return FormOutcome::Stay;
            }
            Key::Backspace => {
                if let Some(k) = self.text_field()
                    && let Some(v) = self.value_mut(k)
                {
                    v.pop();
                }
            }
            Key::Char(c) if !c.is_control() => match self.text_field() {
                Some(k) => {
                    if let Some(v) = self.value_mut(k)
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
    use crate::spec::{Gamma, MethodSpec};

    fn ok(_: &RunSpec) -> Result<(), String> {
        Ok(())
    }

    fn data() -> DataSpec {
        DataSpec {
            drop: vec!["id".into()],
            seed: 3,
            ..DataSpec::of("demo-data/sparse_linear.csv")
        }
    }

    fn choose(f: &mut Form, method: &str) {
        while f.method() != method {
            f.key(Key::Right, ok);
        }
    }

    fn type_into(f: &mut Form, key: &str, text: &str) {
        f.cursor = 1 + f.visible().iter().position(|s| s.key == key).unwrap();
        for c in text.chars() {
            f.key(Key::Char(c), ok);
        }
    }

    #[test]
    fn choose_method_edit_and_submit() {
        let mut f = Form::new(None, &data());
        choose(&mut f, "logit");
        // The first field of logit is λ.
        f.key(Key::Down, ok);
        assert_eq!(f.focused().unwrap().key, "lambda");
        for c in "0.5".chars() {
            f.key(Key::Char(c), ok);
        }
        f.key(Key::Backspace, ok);
        f.key(Key::Char('1'), ok);
        let FormOutcome::Submit(s) = f.key(Key::Enter, ok) else {
            panic!()
        };
        let s = *s;
        let MethodSpec::Logit(l) = &s.method else {
            panic!()
        };
        assert_eq!(l.lambda, Some(0.1));
        assert_eq!(s.data, data(), "the session's data options, the seed kept");
        let again = Form::new(Some(&s), &data());
        assert_eq!(
            again.spec().unwrap(),
            s,
            "a form reopens with a run's settings"
        );
    }

    #[test]
    fn fields_and_hints_follow_the_method_and_prior() {
        let mut f = Form::new(None, &data());
        choose(&mut f, "smc");
        let keys: Vec<&str> = f.visible().iter().map(|s| s.key).collect();
        assert!(keys.contains(&"particles") && keys.contains(&"prior_var"));
        assert!(!keys.contains(&"damping") && !keys.contains(&"lambda"));
        let gamma = registry::setting_of("gamma").unwrap();
        // SMC takes γ = auto with the Gaussian prior (cross-validation along its path).
        assert!(gamma.hint(f.method(), f.prior()).contains("auto"));
        choose(&mut f, "gcs");
        assert!(!gamma.hint(f.method(), f.prior()).contains("auto"));
        choose(&mut f, "ep");
        assert!(gamma.hint(f.method(), f.prior()).contains("auto"));
        f.cursor = 1 + f.visible().iter().position(|s| s.key == "prior").unwrap();
        while f.value("prior") != "spike-slab" {
            f.key(Key::Right, ok);
        }
        let keys: Vec<&str> = f.visible().iter().map(|s| s.key).collect();
        assert!(keys.contains(&"slab_var") && !keys.contains(&"prior_var"));
        // Spike-and-slab EP takes γ = auto (cross-validation).
        assert!(gamma.hint("ep", f.prior()).contains("auto"));
        type_into(&mut f, "gamma", "2n");
        let s = f.spec().unwrap();
        assert_eq!(s.gamma, Some(Gamma::PerN(2.0)));
        assert_eq!(s.prior_kind(), Some(PriorKind::SpikeSlab));
        // A switch is off/on; typing does not edit it.
        assert_eq!(f.value("keep_fixes"), "off");
        type_into(&mut f, "keep_fixes", "x");
        f.key(Key::Right, ok);
        let s = f.spec().unwrap();
        let MethodSpec::Ep(ep) = &s.method else {
            panic!()
        };
        assert!(ep.keep_fixes);
        assert_eq!(Form::new(Some(&s), &data()).value("keep_fixes"), "on");
    }

    #[test]
    fn errors_are_in_the_forms_words_and_keep_it_open() {
        let mut f = Form::new(None, &data());
        choose(&mut f, "ep");
        type_into(&mut f, "damping", "2");
        assert_eq!(f.key(Key::Enter, ok), FormOutcome::Stay);
        assert_eq!(
            f.error.as_deref(),
            Some("damping η must be in (0, 1]; got 2")
        );
        let mut f = Form::new(None, &data());
        assert_eq!(f.key(Key::Enter, |_| Err("nope".into())), FormOutcome::Stay);
        assert_eq!(f.error.as_deref(), Some("nope"));
        assert_eq!(f.key(Key::Esc, ok), FormOutcome::Close);
    }

    #[test]
    fn cursor_wraps() {
        let mut f = Form::new(None, &data());
        let rows = f.rows();
        f.key(Key::Up, ok);
        assert_eq!(f.cursor, rows - 1);
        f.key(Key::Down, ok);
        assert_eq!(f.cursor, 0);
    }
}
