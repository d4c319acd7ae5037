//! Which column is the target, said out loud: the named one, or the last one —
//! and when the last one is only a default, every two-valued column is scored
//! as a target (its name, its place, its balance) and a warning names each
//! one at least as plausible as the default (a real file had its target
//! `deny` first and a rare yes/no *feature* last; the fit ran on the wrong
//! target without a word).

use super::columnar::distinct_numbers;
use super::csv_read::{RawTable, is_missing};
use super::tally::tally;

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
    "deny",
    "denied",
    "default",
    "churn",
    "churned",
    "fraud",
    "survived",
    "approved",
    "defaulted",
    "converted",
    "clicked",
    "died",
    "death",
    "event",
];

/// 2: the name is a usual target name; 1: it contains one as a word
/// ("is_fraud", "default_payment"); 0 otherwise.
fn name_score(name: &str) -> f64 {
    let name = name.trim().to_ascii_lowercase();
    if TARGET_NAMES.contains(&name.as_str()) {
        return 2.0;
    }
    let words: Vec<&str> = name
        .split(|c: char| !c.is_ascii_alphanumeric())
        .filter(|w| !w.is_empty())
        .collect();
    // One-letter names ("y") only count whole: "x_y" is no target.
    let word = |w: &&str| w.len() > 1 && TARGET_NAMES.contains(w);
    if words.len() > 1 && words.iter().any(word) {
        1.0
    } else {
        0.0
    }
}

/// The two distinct values of column `j` and their counts (missing cells
/// aside), or None when it has another number of values.
fn two_values(raw: &RawTable, j: usize) -> Option<[usize; 2]> {
    if let Some(values) = raw.numbers(j) {
        let seen = distinct_numbers(values, 2)?;
        return (seen.len() == 2).then(|| [seen[0].1, seen[1].1]);
    }
    let seen = tally(raw, raw.n_rows(), &|r| r, j, &|c| !is_missing(c), 2)?;
    (seen.len() == 2).then(|| [seen[0].1, seen[1].1])
}

/// Whether column `j` holds exactly two distinct values (missing cells aside).
fn two_valued(raw: &RawTable, j: usize) -> bool {
    two_values(raw, j).is_some()
}

/// How much column `j` looks like a target: its name (0–2), its place (the
/// last column 1.5 — the convention —, the first 1), its balance (½ when the
/// rarer value is at least 5% of the rows: a label is seldom rarer, a flag
/// feature often is). None when it does not have two values.
pub(super) fn plausibility(raw: &RawTable, j: usize) -> Option<f64> {
    let [a, b] = two_values(raw, j)?;
    let last = raw.header.len() - 1;
    let place = if j == last {
        1.5
    } else if j == 0 {
        1.0
    } else {
        0.0
    };
    let minority = a.min(b) as f64 / (a + b) as f64;
    let balance = if minority >= 0.05 { 0.5 } else { 0.0 };
    Some(name_score(&raw.header[j]) + place + balance)
}

/// The rarer value's share of column `j`, for the warning.
fn minority_share(raw: &RawTable, j: usize) -> f64 {
    two_values(raw, j).map_or(f64::NAN, |[a, b]| a.min(b) as f64 / (a + b) as f64)
}

/// How the target was chosen, in words, and warnings when it is only the
/// default and another two-valued column is at least as plausible a target.
pub(super) fn describe(raw: &RawTable, target: usize, given: bool) -> (String, Vec<String>) {
    let name = &raw.header[target];
    if given {
        return (format!("'{name}' (given by --target)"), Vec::new());
    }
    let rule = format!("'{name}' (the last column; name another with --target)");
    let own = plausibility(raw, target).unwrap_or(0.0);
    let mut rivals: Vec<(usize, f64)> = (0..raw.header.len())
        .filter(|&j| j != target)
        .filter_map(|j| plausibility(raw, j).map(|p| (j, p)))
        .filter(|&(_, p)| p >= own)
        .collect();
    rivals.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    let warnings = rivals
        .iter()
        .map(|&(j, _)| {
            let other = &raw.header[j];
            let why = |k: usize| {
                let mut w = Vec::new();
                if name_score(&raw.header[k]) > 0.0 {
                    w.push("a target's name".to_string());
                }
                if k == 0 {
                    w.push("first".into());
                }
                w.push(format!(
                    "rarer value {:.1}%",
                    100.0 * minority_share(raw, k)
                ));
                w.join(", ")
            };
            format!(
                "no --target given, so the last column '{name}' ({}) is the target; column \
                 '{other}' ({}) looks at least as much like one: if it is the target, pass \
                 --target '{other}'",
                why(target),
                why(j)
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::data::csv_read::parse_table;
    use std::path::Path;

    fn table(text: &str) -> RawTable {
        parse_table(Path::new("t.csv"), text.as_bytes()).unwrap()
    }

    /// Like the file: target `deny` first (12% yes), a yes/no feature
    /// last (1.6% yes), numbers between.
    fn deny_first(n: usize) -> String {
        let mut s = String::from("deny,income,ratio,self_employed\n");
        for i in 0..n {
            let deny = if i % 25 < 3 { "yes" } else { "no" };
            let se = if i % 125 < 2 { "yes" } else { "no" };
            s.push_str(&format!(
                "{deny},{},{:.2},{se}\n",
                1000 + i * 7 % 300,
                (i % 17) as f64 / 3.0
            ));
        }
        s
    }

    #[test]
    fn the_target_first_and_a_rare_flag_last_warns() {
        let raw = table(&deny_first(1000));
        let last = raw.header.len() - 1;
        let (_, w) = describe(&raw, last, false);
        assert_eq!(w.len(), 1, "{w:?}");
        assert!(
            w[0].contains("--target 'deny'") && w[0].contains("12.0%") && w[0].contains("1.6%"),
            "{}",
            w[0]
        );
        // Named: no warning.
        assert!(describe(&raw, last, true).1.is_empty());
    }

    #[test]
    fn a_usual_layout_does_not_warn() {
        // Binary features (one first, balanced) and `y` last.
        let mut s = String::from("v1,v2,sex,y\n");
        for i in 0..200 {
            s.push_str(&format!(
                "{},{},{},{}\n",
                i % 2,
                i % 7,
                (i / 2) % 2,
                (i / 3) % 2
            ));
        }
        let raw = table(&s);
        assert!(describe(&raw, 3, false).1.is_empty());
        // The same with an anonymous last column: the first binary column is
        // first (1) and balanced; the last is last (1.5) and balanced: no warning.
        let raw = table(&s.replacen("v1,v2,sex,y", "v1,v2,v3,v4", 1));
        assert!(describe(&raw, 3, false).1.is_empty());
    }

    #[test]
    fn names_score_whole_words() {
        assert_eq!(name_score("Default"), 2.0);
        assert_eq!(name_score("is_fraud"), 1.0);
        assert_eq!(name_score("x_y"), 0.0);
        assert_eq!(name_score("income"), 0.0);
    }
}
