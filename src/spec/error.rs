//! Errors of a run specification. A message names the setting it is about
//! (`field`, the registry key) and may mention other settings as `` `key` ``;
//! front ends translate both into their own words (`--max-stages`, a form
//! label) with `SpecError::render` and `name_settings`. The library itself never
//! names a command-line flag.

use std::fmt;

use super::registry;

#[derive(Debug, Clone, PartialEq)]
pub struct SpecError {
    /// The setting at fault (a registry key, or `method`); None when no single
    /// setting is (the data cannot be prepared, say).
    pub field: Option<String>,
    /// Reads after the setting's name: "must be in (0, 1); got 1.5".
    pub message: String,
}

impl SpecError {
    pub fn field(field: &str, message: impl Into<String>) -> SpecError {
        SpecError {
            field: Some(field.to_string()),
            message: message.into(),
        }
    }

    pub fn other(message: impl Into<String>) -> SpecError {
        SpecError {
            field: None,
            message: message.into(),
        }
    }

    /// The message with every setting named by `name` (a CLI flag, a form label).
    pub fn render(&self, name: &dyn Fn(&str) -> String) -> String {
        let message = name_settings(&self.message, name);
        match &self.field {
            Some(f) => format!("{} {message}", name(f)),
            None => message,
        }
    }
}

impl fmt::Display for SpecError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.render(&|k| k.to_string()))
    }
}

impl std::error::Error for SpecError {}

/// `text` with every `` `key` `` of a setting (or `method`) replaced by `name(key)`.
pub fn name_settings(text: &str, name: &dyn Fn(&str) -> String) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(open) = rest.find('`') {
        let after = &rest[open + 1..];
        let Some(close) = after.find('`') else { break };
        let word = &after[..close];
        out.push_str(&rest[..open]);
        if word == "method" || registry::setting_of(word).is_some() {
            out.push_str(&name(word));
        } else {
            out.push('`');
            out.push_str(word);
            out.push('`');
        }
        rest = &after[close + 1..];
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settings_are_named_by_the_front_end() {
        let flag = |k: &str| format!("--{}", k.replace('_', "-"));
        let e = SpecError::field("ess", "must be in (0, 1); got 1.5");
        assert_eq!(e.render(&flag), "--ess must be in (0, 1); got 1.5");
        assert_eq!(
            name_settings("raise `max_stages` or use `method` ep; `auto` stays", &flag),
            "raise --max-stages or use --method ep; `auto` stays"
        );
        assert_eq!(name_settings("a ` lone tick", &flag), "a ` lone tick");
        assert_eq!(SpecError::other("no rows").to_string(), "no rows");
    }
}
