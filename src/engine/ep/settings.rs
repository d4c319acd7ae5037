//! Settings of an EP run: the damping, the tolerance, the sweep loop's
//! limits and power EP's α. Shared by every EP flavour.

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
    /// The controller's accelerated steps (the secant step and Anderson
    /// mixing); off: plain damped sweeps, the reference the tests compare
    /// the accelerated ones with. The fixed point and the convergence test
    /// are the same.
    #[serde(default = "extrapolate_default")]
    pub extrapolate: bool,
    /// Power EP's α for the pair sites (`site::StepFactor::power`); not
    /// written while auto.
    #[serde(default, skip_serializing_if = "EpPower::is_auto")]
    pub power: EpPower,
}

fn extrapolate_default() -> bool {
    true
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

impl Default for EpSettings {
    fn default() -> Self {
        EpSettings {
            eta: 0.7,
            tol: 1e-4,
            max_sweeps: 1000,
            min_eta: 1e-4,
            extrapolate: true,
            power: EpPower::Auto,
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

/// Spike-and-slab: how a prior site whose negative-site fix recurs is
/// stepped (`spike_slab::site_steps`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SiteStepRule {
    /// Capped at `fix_eta`, then halved on a sign flip, grown while monotone.
    #[default]
    Adaptive,
    /// Capped at `fix_eta` for good (halved on a sign flip, never grown above it).
    Strict,
}

/// The default grid of γ/n (`EpSpec::gamma_grid`): 2^−4 … 2^4 (n = training
/// rows; ≤ 25n, §4). Geometric, as the posterior's scale grows like √γ to γ;
/// the continuation's γ₀ and largest step are its lowest point and factor.
pub const DEFAULT_GRID: [f64; 9] = [0.0625, 0.125, 0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 16.0];

/// EP inside the CV's folds converges to this multiple of the run's tolerance
/// (the final fit keeps the run's own). The held-out AUC only needs the
/// posterior mean's direction: at tol = 1e-3 the means are within ~0.002 sd of
/// their 1e-4 values (ALGORITHMS.md §4), while a slow fold needs tens of
/// sweeps per decade of tol. Announced in the log and the record (`details.cv_tol`).
pub const FOLD_TOL_FACTOR: f64 = 10.0;

/// The settings of EP runs inside the folds: the tolerance loosened by
/// `FOLD_TOL_FACTOR`.
pub fn fold_settings(ep: &EpSettings) -> EpSettings {
    EpSettings {
        tol: ep.tol * FOLD_TOL_FACTOR,
        ..*ep
    }
}
