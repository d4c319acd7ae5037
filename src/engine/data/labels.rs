//! The positive class: given by `--positive`, {0,1}/{-1,1} labels, or the rarer
//! of exactly two values — with a clear error for one class or too many.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use super::error::{DataError, DataErrorKind as K};
use super::schema::canonical_label;

/// The positive label and a sentence saying how it was chosen.
pub(super) fn choose_positive(
    path: &Path,
    target: usize,
    target_name: &str,
    counts: &BTreeMap<String, usize>,
    positive: Option<&str>,
) -> Result<(String, String), DataError> {
    let listing = || {
        counts
            .iter()
            .map(|(l, c)| format!("'{l}' ({c} row{})", if *c == 1 { "" } else { "s" }))
            .collect::<Vec<_>>()
            .join(", ")
    };
    if let Some(p) = positive {
        let p = canonical_label(p.trim());
        if !counts.contains_key(&p) {
            return Err(DataError::new(
                K::UnknownPositive,
                path,
                format!("--positive '{p}' is not a value of the target"),
            )
            .column(target, target_name)
            .hint(format!("the target's values are {}", listing())));
        }
        let rule = if counts.len() == 2 {
            format!("'{p}' (given by --positive)")
        } else {
            format!(
                "'{p}' vs the {} other values (given by --positive)",
                counts.len() - 1
            )
        };
        return Ok((p, rule));
    }
    match counts.len() {
        0 | 1 => Err(DataError::new(
            K::OneClass,
            path,
            format!("the target has only one class: {}", listing()),
        )
        .column(target, target_name)
        .hint("ranking needs positive and negative rows; check --target (default: the last column)")),
        2 => {
            let keys: Vec<&String> = counts.keys().collect();
            let set: BTreeSet<&str> = keys.iter().map(|s| s.as_str()).collect();
            if set == BTreeSet::from(["0", "1"]) || set == BTreeSet::from(["-1", "1"]) {
                Ok(("1".into(), "'1' (numeric labels)".into()))
            } else {
                // The rarer class; on a tie the one sorting last ("yes" over "no").
                let (a, b) = (keys[0], keys[1]);
                let pos = if counts[a] < counts[b] { a } else { b };
                Ok((pos.clone(), format!("'{pos}' (the rarer of the two values; override with --positive)")))
            }
        }
        _ => Err(DataError::new(
            K::TooManyClasses,
            path,
            format!("the target has {} distinct values: {}", counts.len(), listing()),
        )
        .column(target, target_name)
        .hint("name the positive class with --positive VALUE (the others become negatives), or pick another --target")),
    }
}
