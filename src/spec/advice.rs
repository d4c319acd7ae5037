//! Which method suits a data set, from its size and dimension: the cost of
//! each method at its default settings (`cost::estimate`) and what it gives.
//! `pacauc fit` without `--method` prints it, so a first run is never blind.
//!
//! The suggestion is the most exact method that fits a time budget: SMC
//! (samples the Gibbs posterior itself) when its estimate is within a
//! minute, else EP (a Gaussian approximation with its evidence, checked by
//! importance sampling) within ten, else VB (its stochastic optimiser scales
//! to large n), else the logistic baseline. The estimates are the cost
//! model's (a factor 2 either way; SMC's is a lower bound).

use std::path::PathBuf;

use super::cost::{self, CostEstimate, Sizes};
use super::text::from_given;

/// One method's line of advice.
#[derive(Debug, Clone)]
pub struct MethodOption {
    pub method: &'static str,
    /// What a run of it gives.
    pub gives: &'static str,
    pub cost: CostEstimate,
}

#[derive(Debug, Clone)]
pub struct Advice {
    pub options: Vec<MethodOption>,
    /// The method suggested (one of `options`).
    pub suggested: &'static str,
}

/// SMC within a minute, EP within ten: the budget of the suggestion.
const BUDGETS: [(&str, f64); 3] = [("smc", 60.0), ("ep", 600.0), ("vb", 600.0)];

const GIVES: [(&str, &str); 5] = [
    (
        "smc",
        "samples of the Gibbs posterior, log evidence, certificate",
    ),
    (
        "ep",
        "Gaussian posterior, log evidence, certificate, IS check",
    ),
    ("vb", "Gaussian posterior, ELBO, certificate"),
    (
        "gcs",
        "exact chains with R-hat and ESS; certificate (the Gibbs posterior's with --evidence)",
    ),
    ("logit", "a point score (baseline), no posterior"),
];

/// The advice for training data of sizes `s` on `threads` cores.
pub fn advise(s: Sizes, threads: usize) -> Advice {
    let options: Vec<MethodOption> = GIVES
        .iter()
        .filter_map(|&(method, gives)| {
            let spec = from_given(PathBuf::new(), method, &[]).ok()?;
            Some(MethodOption {
                method,
                gives,
                cost: cost::estimate(&spec, s, threads),
            })
        })
        .collect();
    let seconds = |m: &str| {
        options
            .iter()
            .find(|o| o.method == m)
            .map_or(f64::INFINITY, |o| o.cost.seconds)
    };
    let suggested = BUDGETS
        .iter()
        .find(|&&(m, budget)| seconds(m) <= budget)
        .map_or("logit", |&(m, _)| m);
    Advice { options, suggested }
}

impl Advice {
    /// The lines `pacauc fit` prints on stderr.
    pub fn describe(&self, s: Sizes) -> Vec<String> {
        let mut lines = vec![format!(
            "methods for {} training rows × {} features (estimated wall time here; --method chooses):",
            s.rows, s.features
        )];
        for o in &self.options {
            let mark = if o.method == self.suggested {
                "→"
            } else {
                " "
            };
            let time = match cost::duration(o.cost.seconds) {
                short if o.cost.seconds < 1.0 => short,
                t if o.cost.lower_bound => format!("≥ {t}"),
                t => format!("≈ {t}"),
            };
            lines.push(format!("  {mark} {:<6} {:>9}  {}", o.method, time, o.gives));
        }
        lines.push(format!(
            "suggested: --method {} (the most exact method within the time budget)",
            self.suggested
        ));
        lines
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sizes(rows: usize, features: usize) -> Sizes {
        Sizes {
            rows,
            positives: rows / 4,
            features,
        }
    }

    #[test]
    fn small_data_get_smc_large_data_a_cheaper_method() {
        assert_eq!(advise(sizes(450, 20), 2).suggested, "smc");
        let big = advise(sizes(2_000_000, 50), 2);
        assert_ne!(big.suggested, "smc");
        // The suggestion is within its budget, or the baseline.
        let s = big.suggested;
        let o = big.options.iter().find(|o| o.method == s).unwrap();
        assert!(
            s == "logit" || o.cost.seconds <= 600.0,
            "{s}: {}",
            o.cost.seconds
        );
    }

    #[test]
    fn the_suggestion_never_gets_cheaper_methods_worse() {
        // Growing n moves the suggestion down the list, never back up.
        let order = ["smc", "ep", "vb", "logit"];
        let rank = |n| {
            let a = advise(sizes(n, 20), 2);
            order.iter().position(|m| *m == a.suggested).unwrap()
        };
        let ranks: Vec<usize> = [300, 3_000, 30_000, 300_000, 3_000_000]
            .into_iter()
            .map(rank)
            .collect();
        assert!(ranks.windows(2).all(|w| w[0] <= w[1]), "{ranks:?}");
    }

    #[test]
    fn every_line_names_its_cost() {
        let a = advise(sizes(450, 20), 2);
        let lines = a.describe(sizes(450, 20));
        assert_eq!(lines.len(), a.options.len() + 2);
        assert!(lines.iter().any(|l| l.contains("→ smc")));
    }
}
