//! Checkpoints of a tempering run (`sampler::run_checkpointed`): the γ values
//! a run must stop at exactly, and the cloud handed over at each.

use super::sampler::StageInfo;

/// Temperatures a run must stop at exactly (RACL14 §3.2: one run yields the
/// posterior at every γ of its path): the tempering step is capped so that a
/// stage ends on each (at most one extra stage per checkpoint), and after that
/// stage's moves `at` sees the cloud, which is then the γ posterior.
pub struct Checkpoints<'a> {
    /// Ascending; those above the run's target are never reached.
    pub gammas: &'a [f64],
    pub at: &'a mut dyn FnMut(&Checkpoint<'_>) -> AfterCheckpoint,
}

/// The cloud at a checkpoint: equally weighted (resampled and moved).
pub struct Checkpoint<'a> {
    /// Into `Checkpoints::gammas`.
    pub index: usize,
    /// Particles as model parameters, row-major N × d.
    pub theta: &'a [f64],
    pub d: usize,
    /// The stage that ended on the checkpoint (its γ is the checkpoint's).
    pub stage: &'a StageInfo,
    /// Every stage so far met the decorrelation rule.
    pub decorrelated: bool,
    /// Risk evaluations so far.
    pub evaluations: u64,
}

/// Whether a run goes on after a checkpoint.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AfterCheckpoint {
    Continue,
    /// End the run here (its result is the cloud at this checkpoint).
    Stop,
}
