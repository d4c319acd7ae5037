//! One run as the explorer sees it: its spec, status, live traces (ring
//! buffers) and, once finished, its record.

use std::path::PathBuf;

use super::ring::Ring;
use crate::engine::Event;
use crate::engine::event::{EpSweep, GcsBatch, Histogram, LogLevel, SmcMove, SmcStage, VbIter};
use crate::engine::record::RunRecord;
use crate::spec::{DataSpec, MethodSpec, RunSpec};
use crate::worker::RunId;

/// Points kept per live trace.
pub const TRACE_CAPACITY: usize = 4096;
/// Log lines kept per run.
pub const LOG_CAPACITY: usize = 64;

#[derive(Debug, Clone, PartialEq)]
pub enum RunStatus {
    Queued,
    Running,
    Paused,
    Finished,
    Failed(String),
    Cancelled,
    /// A followed event log ended without its end: its writer is gone (why).
    Interrupted(String),
}

impl RunStatus {
    pub fn is_live(&self) -> bool {
        matches!(self, RunStatus::Running | RunStatus::Paused)
    }

    pub fn word(&self) -> &'static str {
        match self {
            RunStatus::Queued => "queued",
            RunStatus::Running => "running",
            RunStatus::Paused => "paused",
            RunStatus::Finished => "done",
            RunStatus::Failed(_) => "failed",
            RunStatus::Cancelled => "cancelled",
            RunStatus::Interrupted(_) => "interrupted",
        }
    }
}

/// `Started` event contents.
#[derive(Debug, Clone, PartialEq)]
pub struct StartInfo {
    pub engine: String,
    pub n: usize,
    pub d: usize,
    pub pairs: usize,
    pub gamma: f64,
}

#[derive(Debug, Clone)]
pub struct RunView {
    pub id: RunId,
    /// What runs (a replayed run: its record's spec).
    pub spec: RunSpec,
    pub status: RunStatus,
    pub start: Option<StartInfo>,
    /// SMC stages without their histograms.
    pub smc: Ring<SmcStage>,
    /// Progress of the moves of the stage under way (cleared when it ends).
    pub smc_move: Option<SmcMove>,
    /// Several independent SMC runs: the one under way (from 1) and their
    /// number; `smc` holds that run's stages.
    pub smc_run: Option<(usize, usize)>,
    pub ep: Ring<EpSweep>,
    /// Great-circle sampler batches (R-hat, ESS, per-chain risk).
    pub gcs: Ring<GcsBatch>,
    /// VB's iterations (L-BFGS steps, or the stochastic optimiser's checks).
    pub vb: Ring<VbIter>,
    /// The latest particle histograms (live snapshot, then the final ones).
    pub histograms: Vec<Histogram>,
    pub logs: Ring<(LogLevel, String)>,
    pub record: Option<Box<RunRecord>>,
    /// Where the record was exported or replayed from, or the event log followed.
    pub file: Option<PathBuf>,
    /// A run followed in an event log: its writer.
    pub origin: Option<Origin>,
}

/// Who writes a followed run's event log.
#[derive(Debug, Clone, PartialEq)]
pub struct Origin {
    pub pid: u32,
    pub host: String,
    /// Seconds since the Unix epoch.
    pub started_unix: f64,
}

/// The latest event of every live series a run can report, by engine (the
/// coefficients, the elapsed time): named, so that a new engine is one more
/// field rather than one more tuple slot.
#[derive(Debug, Clone, Copy, Default)]
pub struct Latest<'a> {
    pub smc: Option<&'a SmcStage>,
    pub ep: Option<&'a EpSweep>,
    pub gcs: Option<&'a GcsBatch>,
    pub vb: Option<&'a VbIter>,
}

/// Posterior summaries of one coefficient.
#[derive(Debug, Clone, PartialEq)]
pub struct Coef {
    pub name: String,
    pub mean: f64,
    pub sd: f64,
}

impl RunView {
    pub fn new(id: RunId, spec: RunSpec) -> RunView {
        RunView {
            id,
            spec,
            status: RunStatus::Queued,
            start: None,
            smc: Ring::new(TRACE_CAPACITY),
            smc_move: None,
            smc_run: None,
            ep: Ring::new(TRACE_CAPACITY),
            gcs: Ring::new(TRACE_CAPACITY),
            vb: Ring::new(TRACE_CAPACITY),
            histograms: Vec::new(),
            logs: Ring::new(LOG_CAPACITY),
            record: None,
            file: None,
            origin: None,
        }
    }

    /// A finished run read back from its record: the trace is replayed through
    /// the same path as live events, so every pane looks as it did.
    pub fn from_record(id: RunId, record: RunRecord, file: Option<PathBuf>) -> RunView {
        let spec = RunSpec::from_value(&record.spec)
            .ok()
            .or_else(|| RunSpec::for_method(DataSpec::of(&record.dataset.path), &record.method))
            .unwrap_or_default();
        let mut v = RunView::new(id, spec);
        v.status = RunStatus::Finished;
        for e in &record.trace {
            v.apply(e.clone());
        }
        v.histograms = record.histograms.clone();
        v.record = Some(Box::new(record));
        v.file = file;
        v
    }

    pub fn method(&self) -> &str {
        match (&self.record, &self.start) {
            (Some(r), _) => &r.method,
            (None, Some(s)) => &s.engine,
            (None, None) => self.spec.method_name(),
        }
    }

    /// "#3 smc"
    pub fn title(&self) -> String {
        format!("#{} {}", self.id, self.method())
    }

    pub fn apply(&mut self, event: Event) {
        match event {
            Event::Started {
                engine,
                n,
                d,
                pairs,
                gamma,
            } => {
                self.start = Some(StartInfo {
                    engine,
                    n,
                    d,
                    pairs,
                    gamma,
                })
            }
            Event::SmcStage(mut s) => {
                let h = std::mem::take(&mut s.histograms);
                if !h.is_empty() {
                    self.histograms = h;
                }
                self.smc.push(s);
                self.smc_move = None;
            }
            Event::SmcMove(m) => self.smc_move = Some(m),
            Event::SmcRun { run, runs, .. } => {
                // The trace shows the run under way (each starts from γ = 0).
                self.smc.clear();
                self.smc_move = None;
                self.smc_run = Some((run, runs));
            }
            Event::EpSweep(s) => self.ep.push(s),
            Event::GcsBatch(b) => self.gcs.push(b),
            Event::VbIter(it) => self.vb.push(it),
            Event::Log { level, message } => self.logs.push((level, message)),
        }
    }

    pub fn is_smc(&self) -> bool {
        !self.smc.is_empty() || self.method() == "smc"
    }

    pub fn is_gcs(&self) -> bool {
        !self.gcs.is_empty() || self.method() == "gcs"
    }

    /// A sampler's run (the sampler pane shows SMC and gcs runs).
    pub fn is_sampler(&self) -> bool {
        self.is_smc() || self.is_gcs()
    }

    pub fn is_ep(&self) -> bool {
        !self.ep.is_empty() || self.method() == "ep"
    }

    pub fn is_vb(&self) -> bool {
        !self.vb.is_empty() || self.method() == "vb"
    }

    /// A Gaussian approximation (EP or VB): the convergence pane's runs, and
    /// the Gaussian the marginals pane overlays on SMC's particles.
    pub fn is_gaussian(&self) -> bool {
        self.is_ep() || self.is_vb()
    }

    /// The latest event of each live series (a run of one engine fills one).
    pub fn latest(&self) -> Latest<'_> {
        Latest {
            smc: self.smc.last(),
            ep: self.ep.last(),
            gcs: self.gcs.last(),
            vb: self.vb.last(),
        }
    }

    /// Posterior means and sds: the record's when finished, else the latest
    /// SMC stage's, EP sweep's, gcs batch's (once draws are kept) or VB
    /// iteration's.
    pub fn coefficients(&self, names: &[String]) -> Vec<Coef> {
        if let Some(r) = &self.record {
            return r
                .coefficients
                .iter()
                .map(|c| Coef {
                    name: c.name.clone(),
                    mean: c.mean,
                    sd: c.sd,
                })
                .collect();
        }
        let latest = self.latest();
        let (mean, sd) = if let Some(s) = latest.smc {
            (&s.mean, &s.sd)
        } else if let Some(e) = latest.ep {
            (&e.mean, &e.sd)
        } else if let Some(g) = latest.gcs.filter(|g| !g.mean.is_empty()) {
            // No draws kept yet during warm-up: nothing to show until then.
            (&g.mean, &g.sd)
        } else if let Some(v) = latest.vb {
            (&v.mean, &v.sd)
        } else {
            return Vec::new();
        };
        // An engine may leave out the sds of intermediate sweeps (costly to form).
        mean.iter()
            .enumerate()
            .map(|(k, &mean)| Coef {
                name: names
                    .get(k)
                    .cloned()
                    .unwrap_or_else(|| format!("θ{}", k + 1)),
                mean,
                sd: sd.get(k).copied().unwrap_or(f64::NAN),
            })
            .collect()
    }

    /// Inclusion probabilities by feature: the record's when finished, else the
    /// latest SMC stage's or EP sweep's (the pane fills while a spike-and-slab run
    /// goes on).
    pub fn inclusion(&self, names: &[String]) -> Option<Vec<(String, f64)>> {
        if let Some(r) = &self.record {
            return Some(
                r.inclusion
                    .as_ref()?
                    .iter()
                    .map(|i| (i.name.clone(), i.prob))
                    .collect(),
            );
        }
        let probs = match (self.smc.last(), self.ep.last()) {
            (Some(s), _) => s.inclusion.as_ref()?,
            (None, Some(e)) => e.inclusion.as_ref()?,
            (None, None) => return None,
        };
        Some(
            probs
                .iter()
                .enumerate()
                .map(|(k, &p)| {
                    let name = names.get(k).cloned();
                    (name.unwrap_or_else(|| format!("θ{}", k + 1)), p)
                })
                .collect(),
        )
    }

    /// Seconds since the start: the record's fit time, else the latest event's.
    pub fn elapsed(&self) -> Option<f64> {
        if let Some(r) = &self.record {
            return Some(r.seconds.fit);
        }
        let latest = self.latest();
        let a = latest.smc.map(|s| s.elapsed);
        let b = latest.ep.map(|s| s.elapsed);
        let c = latest.gcs.map(|s| s.elapsed);
        let d = latest.vb.map(|s| s.elapsed);
        a.into_iter().chain(b).chain(c).chain(d).reduce(f64::max)
    }

    /// The γ its `Started` event announced: none while CV chooses it.
    pub fn start_gamma(&self) -> Option<f64> {
        self.start
            .as_ref()
            .map(|s| s.gamma)
            .filter(|g| g.is_finite())
    }

    /// The γ of the posterior it approximates: the record's, else the one its
    /// start announced; none while CV is choosing it.
    pub fn posterior_gamma(&self) -> Option<f64> {
        self.record
            .as_ref()
            .and_then(|r| r.gamma)
            .or_else(|| self.start_gamma())
    }

    /// Whether two runs approximate the same posterior (same data, prior and
    /// γ), so that their marginals may be drawn together: a γ not yet chosen
    /// matches nothing. `plot` applies the same rule to records.
    pub fn same_posterior(&self, other: &RunView) -> bool {
        let gamma = match (self.posterior_gamma(), other.posterior_gamma()) {
            (Some(a), Some(b)) => (a - b).abs() <= 1e-9 * a.abs().max(b.abs()),
            _ => false,
        };
        let (prior, data) = match (&self.record, &other.record) {
            (Some(a), Some(b)) => (
                serde_json::to_value(&a.prior).ok() == serde_json::to_value(&b.prior).ok(),
                a.dataset.fingerprint == b.dataset.fingerprint,
            ),
            _ => (self.spec.prior == other.spec.prior, true),
        };
        gamma && prior && data
    }

    /// Where a live or cancelled run got to: "stage 5, γ 12.3 of 449", "sweep 30".
    pub fn progress_text(&self) -> Option<String> {
        let gamma_t = self.start_gamma();
        if let Some(s) = self.smc.last() {
            let of = gamma_t.map_or(String::new(), |g| format!(" of {g}"));
            return Some(format!("stage {}, γ {:.4}{of}", s.stage, s.gamma));
        }
        self.ep.last().map(|s| format!("sweep {}", s.sweep))
    }

    /// The record's warnings that cast doubt on the result (`Warning::casts_doubt`).
    pub fn doubts(&self) -> Vec<&crate::engine::quality::Warning> {
        self.record.as_ref().map_or(Vec::new(), |r| {
            r.warnings.iter().filter(|w| w.casts_doubt()).collect()
        })
    }

    /// The status as the results table and pane titles show it: a finished
    /// run that did not converge or carries warnings says so; a cancelled one
    /// that its posterior is partial.
    pub fn status_text(&self) -> String {
        match (&self.status, &self.record) {
            (RunStatus::Finished, Some(r)) if !r.converged => "not conv.".into(),
            (RunStatus::Finished, Some(_)) if !self.doubts().is_empty() => "done ⚠".into(),
            (RunStatus::Cancelled, _) if self.is_partial() => "cancelled ⚠".into(),
            (RunStatus::Interrupted(_), _) if self.is_partial() => "interrupted ⚠".into(),
            (s, _) => s.word().into(),
        }
    }

    /// A cancelled run that left moments in the panes.
    fn is_partial(&self) -> bool {
        !self.smc.is_empty() || !self.ep.is_empty()
    }

    /// What a pane title adds to the run's name when its numbers are not a
    /// final, trusted answer (None when they are).
    pub fn status_note(&self) -> Option<String> {
        match &self.status {
            RunStatus::Finished => match &self.record {
                Some(r) if !r.converged => Some("NOT CONVERGED".into()),
                _ => match self.doubts().len() {
                    0 => None,
                    k => Some(format!("{k} warning(s), m")),
                },
            },
            RunStatus::Cancelled if self.is_partial() => {
                Some("cancelled: partial posterior".into())
            }
            RunStatus::Interrupted(_) if self.is_partial() => {
                Some("interrupted: partial posterior".into())
            }
            s => Some(s.word().into()),
        }
    }

    /// Whether the run's result should not be read as final.
    pub fn is_doubtful(&self) -> bool {
        match &self.status {
            RunStatus::Finished => {
                self.record.as_ref().is_some_and(|r| !r.converged) || !self.doubts().is_empty()
            }
            s => !s.is_live(),
        }
    }

    /// EP's convergence tolerance (its spec's, else the default).
    pub fn ep_tol(&self) -> f64 {
        match &self.spec.method {
            MethodSpec::Ep(e) => e.tol,
            _ => crate::spec::EpSpec::default().tol,
        }
    }

    /// A gcs run's stopping targets: (smallest ESS, largest R-hat) (its spec's,
    /// else the defaults).
    pub fn gcs_targets(&self) -> (f64, f64) {
        match &self.spec.method {
            MethodSpec::Gcs(g) => (g.min_ess, g.max_rhat),
            _ => {
                let g = crate::spec::GcsSpec::default();
                (g.min_ess, g.max_rhat)
            }
        }
    }

    /// The target ESS fraction τ of an SMC run (its spec's, else the default).
    pub fn ess_target(&self) -> f64 {
        match &self.spec.method {
            MethodSpec::Smc(s) => s.ess,
            _ => crate::spec::SmcSpec::default().ess,
        }
    }
}
