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
    target_hint: &dyn Fn() -> String,
) -> Result<(String, String), DataError> {
    if let Some(p) = positive {
        let p = canonical_label(p.trim());
        if !counts.contains_key(&p) {
            return Err(DataError::new(
                K::UnknownPositive,
                path,
                format!("--positive '{p}' is not a value of the target"),
            )
            .column(target, target_name)
            .hint(match closest(&p, counts.keys().map(String::as_str)) {
                Some(c) => format!(
                    "did you mean '{c}'? The target's values are {}",
                    list_labels(counts)
                ),
                None => format!("the target's values are {}", list_labels(counts)),
            }));
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
            format!("the target has only one class: {}", list_labels(counts)),
        )
        .column(target, target_name)
        .hint(format!(
            "ranking needs positive and negative rows; {}",
            target_hint()
        ))),
        2 => {
            let keys: Vec<&String> = counts.keys().collect();
            let set: BTreeSet<&str> = keys.iter().map(|s| s.as_str()).collect();
            if set == BTreeSet::from(["0", "1"]) || set == BTreeSet::from(["-1", "1"]) {
                Ok((
                    "1".into(),
                    "'1' (numeric labels 0/1 or -1/1; override with --positive)".into(),
                ))
            } else {
                // The rarer class; on a tie the one sorting last ("yes" over "no").
                let (a, b) = (keys[0], keys[1]);
                let pos = if counts[a] < counts[b] { a } else { b };
                Ok((
                    pos.clone(),
                    format!("'{pos}' (the rarer of the two values; override with --positive)"),
                ))
            }
        }
        k => {
            let numeric = counts.keys().all(|l| l.parse::<f64>().is_ok());
            let (what, hint) = if numeric && k > 10 {
                (
                    "it looks like a continuous number, not a class label",
                    target_hint(),
                )
            } else {
                (
                    "ranking needs two classes",
                    format!(
                        "name the positive class with --positive VALUE (the others become negatives); or: {}",
                        target_hint()
                    ),
                )
            };
            Err(DataError::new(
                K::TooManyClasses,
                path,
                format!(
                    "the target has {k} distinct values: {what} ({})",
                    list_labels(counts)
                ),
            )
            .column(target, target_name)
            .hint(hint))
        }
    }
}

/// Most label values listed in a message; the rest are counted.
const LISTED: usize = 6;

/// "'a' (3 rows), 'b' (1 row)", the most frequent first, at most `LISTED`
/// values and then how many more (a continuous target has thousands).
fn list_labels(counts: &BTreeMap<String, usize>) -> String {
    let mut v: Vec<(&String, &usize)> = counts.iter().collect();
    v.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
    // Counts say nothing when every value occurs once (a continuous column).
    let counted = v.first().is_some_and(|(_, c)| **c > 1);
    let mut s = v
        .iter()
        .take(LISTED)
        .map(|(l, c)| match (counted, **c) {
            (false, _) => format!("'{l}'"),
            (true, 1) => format!("'{l}' (1 row)"),
            (true, c) => format!("'{l}' ({c} rows)"),
        })
        .collect::<Vec<_>>()
        .join(", ");
    if v.len() > LISTED {
        s.push_str(&format!(", … and {} more", v.len() - LISTED));
    }
    s
}

/// Edit distance of two strings by character: insertions, deletions,
/// substitutions and swaps of two neighbours ("yse" is one swap from "yes",
/// the commonest typo), each one edit (optimal string alignment).
fn edit_distance(a: &str, b: &str) -> usize {
    let (a, b): (Vec<char>, Vec<char>) = (a.chars().collect(), b.chars().collect());
    // Three rows of the table: two rows back (for swaps), the last one, this one.
    let mut back: Vec<usize> = vec![0; b.len() + 1];
    let mut last: Vec<usize> = (0..=b.len()).collect();
    for i in 1..=a.len() {
        let mut row = vec![i; b.len() + 1];
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            row[j] = (last[j - 1] + cost).min(last[j] + 1).min(row[j - 1] + 1);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                row[j] = row[j].min(back[j - 2] + 1);
            }
        }
        back = std::mem::replace(&mut last, row);
    }
    last[b.len()]
}

/// The candidate nearest to `name` (case ignored) when it is near enough to be
/// a typo: at most a third of the name's length (rounded up) away, 1 to 3 edits,
/// and fewer edits than the name has characters (one letter is no typo of another).
pub(super) fn closest<'a>(
    name: &str,
    candidates: impl Iterator<Item = &'a str>,
) -> Option<&'a str> {
    let lower = name.to_lowercase();
    let limit = lower.chars().count().div_ceil(3).clamp(1, 3);
    candidates
        .map(|c| (edit_distance(&lower, &c.to_lowercase()), c))
        .filter(|&(d, _)| d <= limit && d < lower.chars().count())
        .min_by_key(|&(d, _)| d)
        .map(|(_, c)| c)
}

#[cfg(test)]
mod closest_tests {
    use super::*;

    #[test]
    fn typos_find_their_name_and_strangers_nothing() {
        let names = ["income", "deny", "self_employed"];
        assert_eq!(closest("incme", names.into_iter()), Some("income"));
        assert_eq!(
            closest("Self_Employd", names.into_iter()),
            Some("self_employed")
        );
        assert_eq!(closest("dney", names.into_iter()), Some("deny"));
        assert_eq!(closest("zzz", names.into_iter()), None);
        assert_eq!(edit_distance("kitten", "sitting"), 3);
        // A swap of neighbours is one edit: short labels find their value.
        assert_eq!(edit_distance("yse", "yes"), 1);
        assert_eq!(edit_distance("ab", "ba"), 1);
        assert_eq!(edit_distance("", "abc"), 3);
        assert_eq!(closest("yse", ["no", "yes"].into_iter()), Some("yes"));
        assert_eq!(
            closest("Sikc", ["healthy", "sick"].into_iter()),
            Some("sick")
        );
        // Nothing in common is no typo: "2" is not near "0".
        assert_eq!(closest("2", ["0", "1"].into_iter()), None);
    }
}
