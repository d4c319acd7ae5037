//! Settings of an EP run: the damping, the tolerance and the rules of the
//! sweep loops, how a fit reaches its γ (`EpStart`) and how a run steps
//! towards its fixed point (`EpController`). Shared by every EP flavour.

/// Settings of one EP run.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct EpSettings {
    /// Initial damping step η (0 < η ≤ 1).
    pub eta: f64,
    /// Converged when Δ_t < tol·η_t.
    pub tol: f64,
    /// Most accepted sweeps.
    pub max_sweeps: usize,
    /// Give up when halving takes η below this.
    pub min_eta: f64,
    /// Halve η (and keep it halved) when Δ_t has not reached a new minimum for
    /// this many sweeps: parallel EP can settle into a cycle at a too large η
    /// (Glass at γ = 2.5n cycles at η = 0.7, converges at 0.5). 0 = never.
    pub stall_sweeps: usize,
    /// Declare a cycle (fail fast) after this many stall halvings in a row that
    /// did not halve the smallest Δ/η of their window: with no fixed point the
    /// change only shrinks with the step (Δ/η ≈ const) and halving η to
    /// `min_eta` takes hundreds of sweeps. 0 = never (halve to `min_eta`).
    #[serde(default)]
    pub cycle_stalls: usize,
    /// Extrapolate a geometric convergence (`driver`: an over-relaxed step
    /// when Δ has shrunk by a steady ratio for a few sweeps). The fixed point
    /// and the convergence test are unchanged.
    #[serde(default = "extrapolate_default")]
    pub extrapolate: bool,
    /// End a run early when its drift windows go nowhere (`verdict`): set
    /// where a failure has a fallback (CV folds, the first start of a
    /// fixed-γ fit with a warm path). Derived, never the user's choice: not
    /// written to records (a verdict that fires is in the failure's message).
    #[serde(default, skip_serializing)]
    pub early_verdict: bool,
    /// How a fit reaches its γ (`continuation`); not written while classic,
    /// so records made before the setting existed keep their spec.
    #[serde(default, skip_serializing_if = "EpStart::is_classic")]
    pub start: EpStart,
    /// How a run steps towards its fixed point (`controller`); not written
    /// while classic.
    #[serde(default, skip_serializing_if = "EpController::is_classic")]
    pub controller: EpController,
    /// Power EP's α for the pair sites (`site::StepFactor::power`); not
    /// written while auto.
    #[serde(default, skip_serializing_if = "EpPower::is_auto")]
    pub power: EpPower,
    /// Classic driver: an η cut by rejected sweeps grows back (doubled, up to
    /// the cap the stall rule leaves) after clean sweeps that each reach a new
    /// smallest Δ (`driver::Regrow`). Off: η stays cut for good. Not written
    /// while off.
    #[serde(default, skip_serializing_if = "is_false")]
    pub regrow: bool,
}

fn is_false(b: &bool) -> bool {
    !*b
}

/// Power EP's α (Minka 2004) for the pair sites: EP is α = 1; α < 1 removes
/// only α of a site for its cavity and damps the update by the power, a
/// different approximation (between EP and, as α → 0, the variational one)
/// that has a fixed point where EP's is out of reach.
#[derive(Debug, Clone, Copy, PartialEq, Default, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EpPower {
    /// EP (α = 1); where the final fit ends in a verdict that EP has no
    /// fixed point in reach, power EP along `FALLBACK_POWERS`, the record
    /// saying which α the answer is.
    #[default]
    Auto,
    /// This α throughout (1: EP, never power EP).
    Fixed(f64),
}

/// The α tried, in order, after EP's own verdict of no fixed point in reach.
pub const FALLBACK_POWERS: [f64; 2] = [0.5, 0.25];

impl EpPower {
    pub fn is_auto(&self) -> bool {
        *self == EpPower::Auto
    }

    /// The α a run starts with.
    pub fn alpha(&self) -> f64 {
        match self {
            EpPower::Auto => 1.0,
            EpPower::Fixed(a) => *a,
        }
    }
}

/// How a fit reaches its γ.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EpStart {
    /// From the prior (or the folds' average after a CV), then each
    /// flavour's rescue paths: spike-and-slab's default until its flip
    /// (`spec::ep_spec::default_driver`). Retired for Gaussian and GP EP
    /// (2026-11-30): read from older specs, it reaches γ by the continuation
    /// (GP through Nyström: after its coarse start), and the record says so
    /// (`retired_note`).
    #[default]
    Classic,
    /// Adaptive continuation in γ from a small γ (`continuation`, ALGORITHMS.md §16).
    Continuation,
}

impl EpStart {
    pub fn is_classic(&self) -> bool {
        *self == EpStart::Classic
    }

    /// `details.gamma.classic_start` of a Gaussian or GP EP run that asked for the
    /// retired classic start (its fallbacks are gone: records made with them
    /// can differ where they ran).
    pub fn retired_note(&self) -> Option<&'static str> {
        self.is_classic().then_some(
            "--ep-start classic is retired (2026-11-30): γ was reached by the continuation, as by every Gaussian and GP EP start",
        )
    }
}

/// How a run steps towards its fixed point.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EpController {
    /// Damped sweeps with the driver's stall, cycle, drift and extrapolation rules.
    #[default]
    Classic,
    /// Damped sweeps with safeguarded Anderson mixing and one non-progress
    /// verdict on the residual's contraction (`controller`).
    Anderson,
}

impl EpController {
    pub fn is_classic(&self) -> bool {
        *self == EpController::Classic
    }
}

fn extrapolate_default() -> bool {
    true
}

impl Default for EpSettings {
    fn default() -> Self {
        EpSettings {
            eta: 0.7,
            tol: 1e-4,
            max_sweeps: 1000,
            min_eta: 1e-4,
            stall_sweeps: 20,
            cycle_stalls: 0,
            extrapolate: true,
            early_verdict: false,
            start: EpStart::Classic,
            controller: EpController::Classic,
            power: EpPower::Auto,
            regrow: false,
        }
    }
}

impl EpSettings {
    pub fn validate(&self) -> Result<(), String> {
        if !(self.eta > 0.0 && self.eta <= 1.0) {
            return Err(format!(
                "the EP damping η must be in (0, 1]; got {}",
                self.eta
            ));
        }
        if !(self.tol > 0.0 && self.tol.is_finite()) {
            return Err(format!("the EP tolerance must be > 0; got {}", self.tol));
        }
        if self.max_sweeps == 0 {
            return Err("--max-sweeps must be ≥ 1".into());
        }
        if !(self.min_eta > 0.0 && self.min_eta <= self.eta) {
            return Err(format!(
                "the smallest η must be in (0, η]; got {}",
                self.min_eta
            ));
        }
        if let EpPower::Fixed(a) = self.power
            && !(a > 0.0 && a <= 1.0)
        {
            return Err(format!("power EP's α must be in (0, 1]; got {a}"));
        }
        Ok(())
    }
}
