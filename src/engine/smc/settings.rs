//! SMC settings, their defaults and their validation.

use serde::{Deserialize, Serialize};

use super::moves::Kernel;
use super::reference::{GaussianReference, ReferenceChoice, ReferenceMode, ReferenceOrigin};
use crate::engine::interface::EngineError;

/// Move steps per stage (standard, non-waste-free SMC).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Moves {
    /// Exactly K steps per stage.
    Fixed(usize),
    /// Between `min` and `max` steps: stop once every coordinate and the risk
    /// have decorrelated from their stage-start values.
    Adaptive { min: usize, max: usize },
}

/// Default share of local proposals in the gpcn and copula moves (see
/// `SmcSettings::local_share`; docs/BENCHMARKS.md, "log Z at 84 features:
/// local steps").
pub const LOCAL_SHARE: f64 = 0.3;

/// Fewest particles SMC accepts. Below it the sampler cannot work: with N ≤ 1/τ
/// every tempering step keeps an ESS ≥ τN (one particle), so γ jumps from 0 to
/// γ_T in one step (N = 2: log Z off by ~100 on the sparse demo, reported
/// converged), and the decorrelation check compares correlations whose noise,
/// ≈ 1/√N, exceeds its threshold: no run with 3 ≤ N ≤ 50 passed it on Pima (d = 7)
/// or the sparse demo (d = 20), five and three seeds (docs/BENCHMARKS.md).
pub const MIN_PARTICLES: usize = 100;

/// Why `MIN_PARTICLES`, for refusals (after the setting's name).
pub fn particles_floor_reason(n: usize) -> String {
    format!(
        "must be ≥ {MIN_PARTICLES}; got {n}: with fewer particles SMC cannot work (when \
         N ≤ 1/τ one particle already meets the ESS target τN, so γ jumps to its target in one \
         step; and a correlation's noise, ≈ 1/√N, swamps the decorrelation check)"
    )
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SmcSettings {
    /// N: the size of the particle cloud.
    pub particles: usize,
    /// Waste-free SMC with chains of P states (N/P resampled ancestors).
    pub waste_free: Option<usize>,
    /// Move steps per stage (ignored when waste-free: P − 1).
    pub moves: Moves,
    /// ESS target τ of the tempering steps (share of N).
    pub ess: f64,
    pub kernel: Kernel,
    /// Initial step size (default per kernel: 2.38/√d for the random walk).
    pub scale: Option<f64>,
    /// Adapt the step size between move steps towards the kernel's acceptance target.
    pub adapt_scale: bool,
    /// Free radial moves for scale-invariant risks (no risk evaluation).
    pub radial: bool,
    /// |correlation| with the stage-start values below which the adaptive moves stop.
    pub decorrelation: f64,
    /// Share of particles that are still copies of another (resampled copies of
    /// one ancestor that have not moved apart) above which the adaptive moves go
    /// on: a near-independence kernel decorrelates the cloud's coordinates while
    /// a few particles in the fit's tails are still stuck with their copies.
    pub max_duplicated: f64,
    /// Cap on the number of tempering stages.
    pub max_stages: usize,
    /// Degrees of freedom ν of a Student-t proposal around the particles'
    /// fit (gpcn and copula moves; None: the Gaussian).
    #[serde(default)]
    pub proposal_df: Option<f64>,
    /// Share of gpcn and copula proposals that are local (step 2.38/√d,
    /// capped at the stage's step), drawn per chain and step independently of
    /// its state: a near-independence step cannot move a chain where π/q is
    /// large (a far tail of the fit), a local one can.
    #[serde(default = "no_local_steps")]
    pub local_share: f64,
    pub seed: u64,
    /// Independent runs (`runs`): R > 1 runs the sampler R times from seeds
    /// derived from `seed` and pools their clouds (see `runs`).
    #[serde(default = "one_run")]
    pub runs: usize,
    /// Only run r (from 1) of the `runs`, from the seed `runs` gives it, its
    /// whole cloud kept for `runs::pool_parts` (runs made apart, merged later).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub part: Option<usize>,
    /// Gaussian priors: sample the data's row space only when its rank is
    /// below d (exact; `engine::reduction`). Records from before ran without.
    #[serde(default)]
    pub row_space: bool,
    /// Scale-invariant risks under a Gaussian prior: gpcn's independence
    /// proposals are judged on the direction alone (`direction`; exact, and
    /// accepted more often). Off by default: measured on an 85-column survey
    /// file and DNA it saves 6–9% of the risk evaluations but costs as much
    /// CPU per proposal (two ray integrals), so it is not yet a gain.
    #[serde(default)]
    pub direction_moves: bool,
    /// Delayed acceptance with the risk on a row subsample as the first stage
    /// (`delayed`; exact). Records from before ran without (`Off`).
    #[serde(default)]
    pub surrogate: Surrogate,
    /// Where the tempering starts (`reference`): the prior, or a Gaussian
    /// reference (`reference_gaussian`, handed over by the caller). Records
    /// from before started from the prior.
    #[serde(default)]
    pub reference: ReferenceMode,
    /// The reference of `ReferenceMode::Ep` (None: the prior path). Not part
    /// of the record's settings.
    #[serde(skip)]
    pub reference_gaussian: Option<GaussianReference>,
    /// How the reference came about, for `details.reference` (set by whoever
    /// chose it).
    #[serde(skip)]
    pub reference_origin: Option<ReferenceOrigin>,
    /// The caller's choice of reference and why (`--smc-reference auto`),
    /// for `details.reference` of a single run (several runs keep the
    /// prior path, announced by the caller).
    #[serde(skip)]
    pub reference_choice: Option<ReferenceChoice>,
    /// A single prior-path run that flags a phase jump runs again from its
    /// final cloud's Gaussian and reports that run (`phase_rerun`). Records
    /// from before kept the prior path's log Z.
    #[serde(default)]
    pub phase_jump_rerun: bool,
}

/// The surrogate of delayed acceptance.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Surrogate {
    #[default]
    Off,
    /// On from `AUTO_SURROGATE_MIN_ROWS` rows, on `auto_surrogate_rows(n)` rows.
    Auto,
    /// The risk on this many rows (off when ≥ the data's rows).
    Rows(usize),
}

/// Rows from which `Surrogate::Auto` turns delayed acceptance on: below it a
/// full evaluation costs little against the moves' other work.
pub const AUTO_SURROGATE_MIN_ROWS: usize = 100_000;

impl Surrogate {
    /// The surrogate's rows for data of n rows (None: off).
    pub fn rows(self, n: usize) -> Option<usize> {
        match self {
            Surrogate::Off => None,
            Surrogate::Auto if n < AUTO_SURROGATE_MIN_ROWS => None,
            // A tenth of the rows: the surrogate then costs ≈ 1/10 of a full
            // evaluation and its error still shrinks with n.
            Surrogate::Auto => Some(n / 10),
            Surrogate::Rows(m) if m == 0 || m >= n => None,
            Surrogate::Rows(m) => Some(m.max(2)),
        }
    }
}

/// Records from before the setting ran without local steps (the serde
/// default of `local_share` here and in the run specification).
pub fn no_local_steps() -> f64 {
    0.0
}

fn one_run() -> usize {
    1
}

impl Default for SmcSettings {
    fn default() -> Self {
        SmcSettings {
            particles: 10_000,
            waste_free: None,
            moves: Moves::Adaptive { min: 2, max: 200 },
            ess: 0.5,
            kernel: Kernel::Auto,
            scale: None,
            adapt_scale: true,
            radial: true,
            decorrelation: 0.1,
            max_duplicated: 0.01,
            max_stages: 1000,
            proposal_df: None,
            local_share: LOCAL_SHARE,
            seed: 0,
            runs: 1,
            part: None,
            row_space: true,
            direction_moves: false,
            surrogate: Surrogate::Off,
            reference: ReferenceMode::Prior,
            reference_gaussian: None,
            reference_origin: None,
            reference_choice: None,
            phase_jump_rerun: true,
        }
    }
}

impl SmcSettings {
    /// The fixed configuration of the speed comparison with `particles` (Chopin's
    /// Python package): waste-free, 1000 ancestors × chains of 10, random walk
    /// with c = 2.38/√d and no adaptation, no radial moves.
    pub fn benchmark() -> SmcSettings {
        SmcSettings {
            particles: 10_000,
            waste_free: Some(10),
            moves: Moves::Fixed(9),
            kernel: Kernel::Rw,
            adapt_scale: false,
            radial: false,
            ..SmcSettings::default()
        }
    }

    pub fn validate(&self, d: usize) -> Result<(), EngineError> {
        let bad = |m: String| Err(EngineError::InvalidParams(m));
        if d == 0 {
            return bad("SMC needs at least one parameter".into());
        }
        if self.particles < MIN_PARTICLES {
            return bad(format!(
                "`particles` {}",
                particles_floor_reason(self.particles)
            ));
        }
        if !(self.ess > 0.0 && self.ess < 1.0) {
            return bad(format!("`ess` must be in (0, 1); got {}", self.ess));
        }
        // ν ≤ 0 (or NaN) would make every acceptance ratio NaN: every move refused.
        if let Some(df) = self.proposal_df.filter(|df| !(*df > 0.0 && df.is_finite())) {
            return bad(format!(
                "`proposal_df` (the Student-t proposal's ν) must be a positive number; got {df}"
            ));
        }
        if !(0.0..1.0).contains(&self.local_share) {
            return bad(format!(
                "`local_share` (the share of local proposals) must be in [0, 1); got {}",
                self.local_share
            ));
        }
        if let Some(p) = self.waste_free {
            if p < 2 {
                return bad(format!("`waste_free` needs chains of ≥ 2 states; got {p}"));
            }
            if !self.particles.is_multiple_of(p) || self.particles / p < 2 {
                return bad(format!(
                    "`waste_free` {p}: `particles` ({}) must be a multiple of P with ≥ 2 chains",
                    self.particles
                ));
            }
        }
        match self.moves {
            Moves::Fixed(0) => return bad("`moves` must be ≥ 1".into()),
            Moves::Adaptive { min, max } if min == 0 || max < min => {
                return bad(format!(
                    "adaptive moves need 1 ≤ min ≤ max; got {min}..{max}"
                ));
            }
            _ => {}
        }
        if let Some(c) = self.scale {
            let max = self.kernel.resolve(d, true).max_scale(d);
            if !(c > 0.0 && c <= max) {
                return bad(format!("the step size must be in (0, {max}]; got {c}"));
            }
        }
        if !(self.decorrelation > 0.0 && self.decorrelation < 1.0) {
            return bad(format!(
                "the decorrelation threshold must be in (0, 1); got {}",
                self.decorrelation
            ));
        }
        if !(0.0..1.0).contains(&self.max_duplicated) {
            return bad(format!(
                "the share of duplicated particles must be in [0, 1); got {}",
                self.max_duplicated
            ));
        }
        if self.max_stages == 0 {
            return bad("`max_stages` must be ≥ 1".into());
        }
        if self.runs == 0 {
            return bad("`runs` must be ≥ 1".into());
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A Student-t ν ≤ 0 or NaN is refused up front (it would make every
    /// acceptance ratio NaN, so every move would be silently refused).
    #[test]
    fn a_non_positive_proposal_df_is_refused() {
        for df in [0.0, -1.0, f64::NAN, f64::INFINITY] {
            let s = SmcSettings {
                proposal_df: Some(df),
                ..SmcSettings::default()
            };
            let e = s.validate(3).unwrap_err().to_string();
            assert!(e.contains("proposal_df"), "{e}");
        }
        let ok = SmcSettings {
            proposal_df: Some(5.0),
            ..SmcSettings::default()
        };
        assert!(ok.validate(3).is_ok());
    }

    /// Settings recorded before local steps existed ran without them: read
    /// back as 0, while a new default is `LOCAL_SHARE`; a share of 1 is refused.
    #[test]
    fn records_without_local_share_read_as_none() {
        let mut v = serde_json::to_value(SmcSettings::default()).unwrap();
        assert_eq!(v["local_share"], LOCAL_SHARE);
        v.as_object_mut().unwrap().remove("local_share");
        let old: SmcSettings = serde_json::from_value(v).unwrap();
        assert_eq!(old.local_share, 0.0);
        let e = SmcSettings {
            local_share: 1.0,
            ..SmcSettings::default()
        }
        .validate(3)
        .unwrap_err()
        .to_string();
        assert!(e.contains("local_share"), "{e}");
    }
}
