//! Typed views of a saved record's `details`: the parts that clients (the
//! explorer's panes, figures from records, `pacauc table` and `pacauc bound`)
//! read back from disk. The methods write `details` as JSON; this module is
//! the one reader outside them, so a change of shape breaks here, in one
//! place with tests, not in a pane.
//!
//! Records written by older versions may lack any of these sections: every
//! view is optional and a missing or mistyped field reads as absent.

use serde::Deserialize;
use serde_json::Value;

use super::record::RunRecord;

/// A cross-validation's curve (`details.cv`, written by engine/select's
/// `CvReport` for every tuned method).
#[derive(Debug, Clone, Deserialize)]
pub struct CvCurve {
    pub parameter: String,
    pub grid: Vec<f64>,
    pub mean_auc: Vec<Option<f64>>,
    #[serde(default)]
    pub fold_auc: Vec<Vec<Option<f64>>>,
    pub chosen: Option<f64>,
    /// Folds of the cross-validation (absent in hand-made curves).
    #[serde(default)]
    pub folds: Option<usize>,
}

/// What an importance-sampling check found (`details.is_check`), as far as
/// summaries show it.
#[derive(Debug, Clone, PartialEq)]
pub struct IsCheckSummary {
    pub khat: Option<f64>,
    pub ess: Option<f64>,
    pub draws: Option<usize>,
    /// k̂ at or below its threshold (records without the flag read as trusted).
    pub trusted: bool,
}

/// A Gaussian-process run's posterior as its record keeps it.
#[derive(Debug, Clone, PartialEq)]
pub struct GpDetails {
    /// The training rows' predictive scores (mean, sd), sorted by mean.
    pub scores: Vec<(f64, f64)>,
    /// The kernel's length-scale (None: the linear kernel).
    pub lengthscale: Option<f64>,
    pub median_distance: Option<f64>,
    /// The evidence curve (ℓ, log Z) of a length-scale search, sorted by ℓ,
    /// converged points only.
    pub evidence: Vec<(f64, f64)>,
    /// The search's best ℓ lies at the end of its range.
    pub at_edge: bool,
    /// The GP's computational form ("full", "nystrom", …).
    pub form: Option<String>,
}

fn numbers(v: &Value) -> Vec<f64> {
    v.as_array()
        .map(|a| a.iter().map(|x| x.as_f64().unwrap_or(f64::NAN)).collect())
        .unwrap_or_default()
}

impl GpDetails {
    /// The view of a GP fit's `details` (None unless `model` is "gp").
    pub fn of(details: &Value) -> Option<GpDetails> {
        if details["model"] != "gp" {
            return None;
        }
        let mean = numbers(&details["training_scores"]["mean"]);
        let sd = numbers(&details["training_scores"]["sd"]);
        let mut scores: Vec<(f64, f64)> = mean.into_iter().zip(sd).collect();
        scores.sort_by(|a, b| a.0.total_cmp(&b.0));
        let ell = &details["lengthscale"];
        let mut evidence: Vec<(f64, f64)> = ell["search"]["curve"]
            .as_array()
            .map(|a| {
                a.iter()
                    .filter_map(|p| Some((p["lengthscale"].as_f64()?, p["log_z"].as_f64()?)))
                    .collect()
            })
            .unwrap_or_default();
        evidence.sort_by(|a, b| a.0.total_cmp(&b.0));
        Some(GpDetails {
            scores,
            lengthscale: ell["value"].as_f64(),
            median_distance: ell["median_distance"].as_f64(),
            evidence,
            at_edge: ell["search"]["at_edge"] == true,
            form: details["form"].as_str().map(str::to_string),
        })
    }
}

impl RunRecord {
    /// The GP view of a GP run's record (None for other models).
    pub fn gp(&self) -> Option<GpDetails> {
        GpDetails::of(&self.details)
    }

    /// EP's convergence tolerance as run.
    pub fn ep_tolerance(&self) -> Option<f64> {
        self.details.get("tol")?.as_f64()
    }

    /// VB's objective evaluated exactly (or on its stated pair sample) at the
    /// end of the run.
    pub fn final_objective(&self) -> Option<f64> {
        self.details.get("objective")?.as_f64()
    }

    /// The cross-validation curve of a tuned run: None without one, an error
    /// naming the problem when the section does not read as a curve.
    pub fn cv_curve(&self) -> Option<Result<CvCurve, String>> {
        let cv = self.details.get("cv").filter(|c| !c.is_null())?;
        Some(serde_json::from_value(cv.clone()).map_err(|e| format!("unreadable details.cv: {e}")))
    }

    /// The importance-sampling check's summary (None: no check in the record).
    pub fn is_check(&self) -> Option<IsCheckSummary> {
        let c = self.details.get("is_check").filter(|c| c.is_object())?;
        Some(IsCheckSummary {
            khat: c["khat"].as_f64(),
            ess: c["ess"].as_f64(),
            draws: c["draws"].as_u64().map(|d| d as usize),
            trusted: c["trusted"].as_bool().unwrap_or(true),
        })
    }

    /// How many draws the importance-sampling check used (None: no check).
    pub fn is_check_draws(&self) -> Option<usize> {
        self.is_check()?.draws
    }

    /// An SMC run that was one run only (so no R-hat or spread of log Z).
    pub fn is_single_smc_run(&self) -> bool {
        self.details["runs"]["count"] == 1
    }

    /// Why the run has no certificate, as the certificate's writer said it.
    pub fn uncertified_reason(&self) -> Option<&str> {
        self.details.get("uncertified")?.get("bound")?.as_str()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_a_gp_runs_scores_and_evidence_curve() {
        let d = serde_json::json!({
            "model": "gp",
            "form": "full",
            "training_scores": { "mean": [0.5, -1.0, 0.0], "sd": [0.1, 0.2, 0.3] },
            "lengthscale": { "value": 2.0, "median_distance": 1.0, "search": {
                "at_edge": false,
                "curve": [
                    { "lengthscale": 4.0, "log_z": -3.0 },
                    { "lengthscale": 1.0, "log_z": -5.0 },
                    { "lengthscale": 0.5, "log_z": null, "failure": "x" },
                ],
            }},
        });
        let g = GpDetails::of(&d).expect("a GP record");
        assert_eq!(g.scores, vec![(-1.0, 0.2), (0.0, 0.3), (0.5, 0.1)]);
        assert_eq!(g.evidence, vec![(1.0, -5.0), (4.0, -3.0)]);
        assert_eq!((g.lengthscale, g.median_distance), (Some(2.0), Some(1.0)));
        assert_eq!(g.form.as_deref(), Some("full"));
        assert!(!g.at_edge);
        assert!(GpDetails::of(&serde_json::json!({"model": "linear"})).is_none());
        assert!(GpDetails::of(&Value::Null).is_none());
    }
}
