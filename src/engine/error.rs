//! How an engine run fails: the one error type of the `Engine` interface, and
//! the typed reason a run did not converge (callers decide on the reason, never
//! on the words of the message), with the method's typed account of the stop
//! (`StopAccount`: callers decide on its values, never on the diagnostics JSON).

use std::any::Any;
use std::sync::Arc;

use serde::Serialize;

#[derive(Debug, Clone, thiserror::Error)]
pub enum EngineError {
    #[error("cancelled")]
    Cancelled,
    #[error("invalid parameters: {0}")]
    InvalidParams(String),
    /// The engine stopped without a usable answer: `reason` says which rule
    /// stopped it, `message` the whole story, the diagnostics the numbers
    /// (shown, never read back: `EngineError::diagnostics` adds the account's),
    /// `account` the method's typed facts its callers decide on.
    #[error("did not converge: {message}")]
    NotConverged {
        reason: NonConvergence,
        message: String,
        diagnostics: serde_json::Value,
        account: Option<Arc<dyn StopAccount>>,
    },
    #[error("numerical failure: {0}")]
    Numerical(String),
}

impl EngineError {
    /// A `NotConverged` error.
    pub fn not_converged(
        reason: NonConvergence,
        message: impl Into<String>,
        diagnostics: serde_json::Value,
    ) -> EngineError {
        EngineError::NotConverged {
            reason,
            message: message.into(),
            diagnostics,
            account: None,
        }
    }

    /// The same error carrying `account` (a `NotConverged` error; any other
    /// is returned as it is).
    pub fn with_account(self, account: impl StopAccount) -> EngineError {
        match self {
            EngineError::NotConverged {
                reason,
                message,
                diagnostics,
                ..
            } => EngineError::NotConverged {
                reason,
                message,
                diagnostics,
                account: Some(Arc::new(account)),
            },
            e => e,
        }
    }

    /// The method's typed account of a `NotConverged` error, if it gave one.
    pub fn account(&self) -> Option<&dyn StopAccount> {
        match self {
            EngineError::NotConverged {
                account: Some(a), ..
            } => Some(a.as_ref()),
            _ => None,
        }
    }

    /// The diagnostics of a `NotConverged` error as shown (the CLI's message):
    /// its numbers with the account rendered in.
    pub fn diagnostics(&self) -> Option<serde_json::Value> {
        let EngineError::NotConverged {
            diagnostics,
            account,
            ..
        } = self
        else {
            return None;
        };
        let mut d = diagnostics.clone();
        if let Some(a) = account {
            a.render(&mut d);
        }
        Some(d)
    }

    /// The reason, for a `NotConverged` error.
    pub fn non_convergence(&self) -> Option<NonConvergence> {
        match self {
            EngineError::NotConverged { reason, .. } => Some(*reason),
            _ => None,
        }
    }
}

/// A method's typed account of why it stopped: the values its own callers
/// decide on (they downcast it by `as_any`), rendered into the diagnostics
/// only where they are shown (`EngineError::diagnostics`).
pub trait StopAccount: std::fmt::Debug + Send + Sync + 'static {
    /// Adds what the diagnostics show of it (the fields records have carried).
    fn render(&self, diagnostics: &mut serde_json::Value);
    fn as_any(&self) -> &dyn Any;
}

/// Why a run stopped without converging. Serialised (run records, the
/// diagnostics' `detail.reason`, a cross-validation's failures) as the short
/// tags below, which records have always carried.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
pub enum NonConvergence {
    // The EP sweep loop (`ep::driver`).
    /// Invalid cavities at the prior, or η halved below its minimum on them.
    #[serde(rename = "invalid cavities")]
    InvalidCavities,
    /// The sweep cap was reached.
    #[serde(rename = "max sweeps")]
    MaxSweeps,
    /// η fell below its minimum while rebuilding q kept failing: Q not
    /// positive definite.
    #[serde(rename = "Q not positive definite")]
    NotPositiveDefinite,
    /// As `NotPositiveDefinite`, or a prior site's tilted distribution
    /// improper (spike-and-slab EP).
    #[serde(rename = "Q not positive definite or improper prior-site tilted distributions")]
    ImproperPriorSites,
    /// Δ is not finite.
    #[serde(rename = "non-finite")]
    NonFinite,
    /// The held-out scores of a cross-validation point are not finite.
    #[serde(rename = "non-finite scores")]
    NonFiniteScores,
    // Samplers.
    /// SMC reached its cap of stages before the target γ.
    #[serde(rename = "stage cap")]
    StageCap,
    // Searches over a grid or a hyper-parameter.
    /// A fit gave no evidence (GP-EP with degenerate sites).
    #[serde(rename = "no evidence")]
    NoEvidence,
    /// The method converged at no point of a search (cross-validation grid,
    /// evidence search) or not at the point the search chose.
    #[serde(rename = "search failed")]
    SearchFailed,
    /// A fold's run ended before this point of its path.
    #[serde(rename = "not reached")]
    NotReached,
    // The Anderson controller and the continuation in γ (`ep::controller`,
    // `ep::continuation`).
    /// Δ/η does not contract fast enough over a window to reach the tolerance.
    #[serde(rename = "no progress")]
    NoProgress,
    /// The continuation's step fell below its minimum: no fixed point in
    /// reach beyond the last converged γ.
    #[serde(rename = "no fixed point in reach")]
    NoFixedPointInReach,
}

impl NonConvergence {
    /// The tag as records carry it ("max sweeps", "no progress", …).
    pub fn tag(self) -> &'static str {
        match self {
            NonConvergence::InvalidCavities => "invalid cavities",
            NonConvergence::MaxSweeps => "max sweeps",
            NonConvergence::NotPositiveDefinite => "Q not positive definite",
            NonConvergence::ImproperPriorSites => {
                "Q not positive definite or improper prior-site tilted distributions"
            }
            NonConvergence::NonFinite => "non-finite",
            NonConvergence::NonFiniteScores => "non-finite scores",
            NonConvergence::StageCap => "stage cap",
            NonConvergence::NoEvidence => "no evidence",
            NonConvergence::SearchFailed => "search failed",
            NonConvergence::NotReached => "not reached",
            NonConvergence::NoProgress => "no progress",
            NonConvergence::NoFixedPointInReach => "no fixed point in reach",
        }
    }

    /// Whether the iteration itself shows no fixed point in reach (the
    /// controller's verdict): a fresh start from the prior only does worse
    /// there. Older records carry the retired verdicts' tags ("cycle",
    /// "drift", "wandering", "Δ stalled") as text; nothing reads them back.
    pub fn no_fixed_point_in_reach(self) -> bool {
        matches!(
            self,
            NonConvergence::NoProgress | NonConvergence::NoFixedPointInReach
        )
    }
}

impl std::fmt::Display for NonConvergence {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.tag())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ALL: [NonConvergence; 12] = [
        NonConvergence::InvalidCavities,
        NonConvergence::MaxSweeps,
        NonConvergence::NotPositiveDefinite,
        NonConvergence::ImproperPriorSites,
        NonConvergence::NonFinite,
        NonConvergence::NonFiniteScores,
        NonConvergence::StageCap,
        NonConvergence::NoEvidence,
        NonConvergence::SearchFailed,
        NonConvergence::NotReached,
        NonConvergence::NoProgress,
        NonConvergence::NoFixedPointInReach,
    ];

    /// Records carry the tags: serde and `tag` agree, and the EP driver's
    /// tags are the words records always had.
    #[test]
    fn serialises_to_the_tags_records_carry() {
        for r in ALL {
            assert_eq!(serde_json::to_value(r).unwrap(), r.tag(), "{r:?}");
        }
        let ep = ALL[..5].iter().map(|r| r.tag()).collect::<Vec<_>>();
        assert_eq!(
            ep,
            [
                "invalid cavities",
                "max sweeps",
                "Q not positive definite",
                "Q not positive definite or improper prior-site tilted distributions",
                "non-finite"
            ]
        );
        let unique: std::collections::HashSet<_> = ALL.iter().map(|r| r.tag()).collect();
        assert_eq!(unique.len(), ALL.len());
    }
}
