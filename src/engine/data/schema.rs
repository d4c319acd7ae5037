//! The schema learnt from a training file: which columns become which features.
//! Applying it to another file (`--test`) gives the same features in the same order.

use serde::{Deserialize, Serialize};

/// How one source column becomes features.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum ColumnRule {
    /// A numeric column copied as one feature.
    Numeric { column: String },
    /// A text column one-hot encoded: one 0/1 feature `column=level` per kept level.
    /// `other_levels` were seen in training but encoded as all zeros (the reference
    /// level of a two-valued column, levels that were constant).
    OneHot {
        column: String,
        levels: Vec<String>,
        #[serde(default)]
        other_levels: Vec<String>,
    },
}

impl ColumnRule {
    pub fn column(&self) -> &str {
        match self {
            ColumnRule::Numeric { column } | ColumnRule::OneHot { column, .. } => column,
        }
    }

    pub fn feature_names(&self) -> Vec<String> {
        match self {
            ColumnRule::Numeric { column } => vec![column.clone()],
            ColumnRule::OneHot { column, levels, .. } => {
                levels.iter().map(|l| format!("{column}={l}")).collect()
            }
        }
    }
}

/// Everything needed to encode another file exactly as the training file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Schema {
    pub target: String,
    pub positive_label: String,
    pub rules: Vec<ColumnRule>,
}

impl Schema {
    pub fn feature_names(&self) -> Vec<String> {
        self.rules.iter().flat_map(|r| r.feature_names()).collect()
    }
}

/// Canonical form of a label: numbers compare by value ("1.0" == "1").
pub fn canonical_label(raw: &str) -> String {
    match raw.parse::<f64>() {
        Ok(v) if v.is_finite() => format!("{v}"),
        _ => raw.to_string(),
    }
}
