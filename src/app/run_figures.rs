//! The figures of runs as the explorer holds them: the panes draw a run's
//! trace figure every frame, and `p` writes the figures of the chosen runs.
//! A finished run's figures come from its record (the same values as
//! `pacauc plot RUN.json`); a live or cancelled run's from its ring buffers,
//! which the same functions accept, so the live and finished views are one
//! figure.

use super::run_view::RunView;
use crate::engine::record::{Coefficient, Inclusion};
use crate::engine::smc::{Moves, SmcSettings};
use crate::figures::{
    self, Figure, GaussianSource, HistogramSource, SmcTargets, Source, ep_convergence, gcs_trace,
    inclusion, marginals, smc_trace, vb_trace,
};
use crate::spec::MethodSpec;

impl RunView {
    /// The cap on move steps per stage of the run's spec, and whether the
    /// moves are adaptive (stop once decorrelated) or fixed.
    pub fn moves_cap(&self) -> (usize, bool) {
        let default = SmcSettings::default().moves;
        match &self.spec.method {
            MethodSpec::Smc(s) => match (s.waste_free, s.moves) {
                (Some(p), _) => (p.saturating_sub(1).max(1), false),
                (None, Some(k)) => (k, false),
                (None, None) => match default {
                    Moves::Adaptive { max, .. } => (max, true),
                    Moves::Fixed(k) => (k, false),
                },
            },
            _ => (1, false),
        }
    }

    /// The targets of an SMC run: its record's settings once finished, else
    /// its spec's (the defaults where the spec leaves them).
    pub fn smc_targets(&self) -> SmcTargets {
        if let Some(r) = &self.record {
            return SmcTargets::of_parameters(&r.parameters, r.gamma);
        }
        SmcTargets {
            tau: Some(self.ess_target()),
            gamma: self.start_gamma(),
            moves_cap: Some(self.moves_cap()),
            decorrelation: Some(SmcSettings::default().decorrelation),
        }
    }

    pub fn smc_figure(&self) -> Option<Figure> {
        smc_trace(
            self.smc.iter(),
            &self.smc_targets(),
            &self.title(),
            "smc-trace",
        )
    }

    pub fn ep_figure(&self) -> Option<Figure> {
        let tol = self
            .record
            .as_ref()
            .and_then(|r| r.ep_tolerance())
            .unwrap_or_else(|| self.ep_tol());
        ep_convergence(self.ep.iter(), Some(tol), &self.title(), "ep-convergence")
    }

    pub fn vb_figure(&self) -> Option<Figure> {
        // The exact objective over every item, known when the run ends.
        let exact = self.record.as_ref().and_then(|r| r.final_objective());
        vb_trace(self.vb.iter(), exact, &self.title(), "vb-trace")
    }

    pub fn gcs_figure(&self) -> Option<Figure> {
        let (min_ess, max_rhat) = self.gcs_targets();
        gcs_trace(
            self.gcs.iter(),
            min_ess,
            max_rhat,
            &self.title(),
            "gcs-trace",
        )
    }

    /// Figures from what a run without a record holds (its live traces,
    /// moments, histograms and inclusion probabilities).
    fn live_figures(&self, names: &[String]) -> Vec<Figure> {
        let mut out: Vec<Figure> = [
            self.smc_figure(),
            self.ep_figure(),
            self.vb_figure(),
            self.gcs_figure(),
        ]
        .into_iter()
        .flatten()
        .collect();
        let coefs: Vec<Coefficient> = self
            .coefficients(names)
            .into_iter()
            .map(|c| Coefficient {
                name: c.name,
                mean: c.mean,
                sd: c.sd,
                quantiles: None,
            })
            .collect();
        let title = self.title();
        let data = format!("{} (so far)", self.status.word());
        let fig = if !self.histograms.is_empty() {
            let noun = if self.is_gcs() { "draws" } else { "particles" };
            let sample = HistogramSource {
                label: format!("{title} {noun}"),
                coefficients: &coefs,
                histograms: &self.histograms,
            };
            marginals(Some(&sample), &[], &data)
        } else {
            let g = [GaussianSource {
                label: title.clone(),
                coefficients: &coefs,
            }];
            marginals(None, &g, &data)
        };
        out.extend(fig);
        if let Some(p) = self.inclusion(names) {
            let probs: Vec<Inclusion> = p
                .into_iter()
                .map(|(name, prob)| Inclusion { name, prob })
                .collect();
            out.extend(inclusion(&probs, &title, "inclusion"));
        }
        out
    }
}

/// A figure's id made unique to its run when several runs are drawn.
fn with_run(mut f: Figure, run: &RunView, many: bool) -> Figure {
    if many {
        f.id = format!("{}-{}", f.id, run.id);
    }
    f
}

/// The figures of `runs` and what could not be drawn: the records of the
/// finished ones together (ROC curves overlaid, SMC histograms under the
/// Gaussians of the same posterior), the others from their live state.
pub fn figures_of(runs: &[&RunView], names: &[String]) -> (Vec<Figure>, Vec<String>) {
    let (done, live): (Vec<&RunView>, Vec<&RunView>) =
        runs.iter().partition(|r| r.record.is_some());
    let sources: Vec<Source> = done
        .iter()
        .filter_map(|r| {
            Some(Source::Run {
                label: format!("run-{}", r.id),
                record: r.record.clone()?,
            })
        })
        .collect();
    let (mut figs, mut skipped) = if sources.is_empty() {
        (Vec::new(), Vec::new())
    } else {
        figures::from_records(&sources)
    };
    // What no record has is not worth listing for a single run.
    skipped.retain(|s| !s.contains("needs") || sources.len() > 1);
    let many = runs.len() > 1;
    for r in live {
        let before = figs.len();
        figs.extend(live_figures_of(r, names, many));
        if figs.len() == before {
            skipped.push(format!(
                "{}: nothing to draw yet ({})",
                r.title(),
                r.status.word()
            ));
        } else if !done.is_empty() || r.status.is_live() {
            skipped.push(format!(
                "roc ({}): the run has no result yet; its figures show it so far",
                r.title()
            ));
        }
    }
    (figs, skipped)
}

fn live_figures_of(r: &RunView, names: &[String], many: bool) -> Vec<Figure> {
    r.live_figures(names)
        .into_iter()
        .map(|f| with_run(f, r, many))
        .collect()
}
