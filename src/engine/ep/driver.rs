//! The entry of EP's sweep loop for every flavour (ALGORITHMS.md §4, §5, §6):
//! one step controller (`controller`: damped sweeps, safeguarded Anderson
//! mixing, one non-progress verdict); the flavours' side of the contract is
//! `sweep_state`.

use super::settings::EpSettings;
use super::sweep_state::{Converged, Rules, SweepState, SweepStatus};
use crate::engine::interface::{Control, EngineError};

/// Runs EP to convergence from the current state. A failure is the caller's
/// to answer (the continuation takes a shorter step, power EP a smaller α);
/// no retry from the prior.
pub fn run<S: SweepState>(
    st: &mut S,
    s: &EpSettings,
    rules: Rules,
    ctl: &Control,
    on_sweep: &mut dyn FnMut(&S, &SweepStatus),
) -> Result<Converged, EngineError> {
    super::controller::run_once(st, s, rules, ctl, on_sweep)
}

#[cfg(test)]
#[path = "driver_tests.rs"]
mod tests;
