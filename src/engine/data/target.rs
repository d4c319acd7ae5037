//! Which column is the target, said out loud: the named one, or the last one —
//! and when the last one is only a default, a warning if another column looks
//! more like a target (a real file had a yes/no *feature* last and its target
//! elsewhere; the fit ran on the wrong target without a word).

use std::collections::BTreeSet;

use super::csv_read::{RawTable, is_missing};

/// Column names that usually hold the label (compared without case).
const TARGET_NAMES: &[&str] = &[
    "y",
    "target",
    "label",
    "class",
    "outcome",
    "response",
    "diagnosis",
    "result",
];

fn target_like(name: &str) -> bool {
    TARGET_NAMES
        .iter()
        .any(|t| t.eq_ignore_ascii_case(name.trim()))
}

/// Whether column `j` holds exactly two distinct values (missing cells aside).
fn two_valued(raw: &RawTable, j: usize) -> bool {
    let mut seen = BTreeSet::new();
    for r in 0..raw.n_rows() {
        let c = raw.cell(r, j);
        if !is_missing(c) && seen.insert(c) && seen.len() > 2 {
            return false;
        }
    }
    seen.len() == 2
}

/// How the target was chosen, in words, and warnings when it is only the
/// default and another column looks like a target.
pub(super) fn describe(raw: &RawTable, target: usize, given: bool) -> (String, Vec<String>) {
    let name = &raw.header[target];
    if given {
        return (format!("'{name}' (given by --target)"), Vec::new());
    }
    let rule = format!("'{name}' (the last column; name another with --target)");
    if target_like(name) {
        return (rule, Vec::new());
    }
    let warnings = (0..raw.header.len())
        .filter(|&j| j != target && target_like(&raw.header[j]) && two_valued(raw, j))
        .map(|j| {
            let other = &raw.header[j];
            format!(
                "no --target given, so the last column '{name}' is the target; column '{other}' looks more like one \
                 (its name, two values): if it is the target, pass --target '{other}'"
            )
        })
        .collect();
    (rule, warnings)
}

/// The hint for a target with the wrong number of classes: where the target
/// comes from and which columns could be it.
pub(super) fn hint(raw: &RawTable, target: usize, given: bool, excluded: &[bool]) -> String {
    let origin = if given {
        "check --target".to_string()
    } else {
        format!(
            "the target is the last column ('{}') unless --target names another",
            raw.header[target]
        )
    };
    const SHOWN: usize = 5;
    let candidates: Vec<String> = (0..raw.header.len())
        .filter(|&j| j != target && !excluded[j] && two_valued(raw, j))
        .map(|j| format!("'{}'", raw.header[j]))
        .collect();
    match candidates.len() {
        0 => origin,
        k => {
            let mut list = candidates[..k.min(SHOWN)].join(", ");
            if k > SHOWN {
                list.push_str(&format!(" and {} more", k - SHOWN));
            }
            format!("{origin}; columns with two values: {list}")
        }
    }
}
