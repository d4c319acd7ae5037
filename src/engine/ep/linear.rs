//! EP for the linear score on one data set: the pairs, the design (primal or
//! reduced form) and the persistent site state, so that runs at other γ or
//! other prior variances warm-start from the last one.

use std::sync::Arc;

use nalgebra::DMatrix;

use super::continuation::Continuable;

use super::design::{Design, Form, identical_pairs};
use super::outcome::{EpOutcome, SweepInfo};
use super::pair_ep::PairEp;
use super::pair_ep::start::{self, START_MIN_PAIRS, SampledStart};
use super::settings::{self, EpSettings};
use super::site::MAX_G;
use super::store::Precision;
use super::sweep_state::Marginal;
use crate::engine::interface::{Control, EngineError};
use crate::engine::pairs::{PairSample, PairSampling};

pub struct LinearEp {
    /// The rows by class; shared with the design and the sites' state when
    /// whitening is the identity (one copy of the rows, not three).
    xp: Arc<DMatrix<f64>>,
    xn: Arc<DMatrix<f64>>,
    /// n+ · n− of the data (the rows above are a pair sample's only).
    all_pairs: usize,
    design: Design,
    ep: PairEp,
    vars: Vec<f64>,
    /// The start from a pair sample of the last cold run that used one (runs
    /// on very many pairs; later warm runs, e.g. ARD's, keep it).
    start: Option<SampledStart>,
}

impl LinearEp {
    /// Rows `x` (standardised) with labels `y`, prior variances `vars`.
    pub fn new(
        x: &DMatrix<f64>,
        y: &[bool],
        vars: &[f64],
        form: Form,
        precision: Precision,
    ) -> Result<LinearEp, EngineError> {
        Self::with_pairs(x, y, vars, form, precision, None)
    }

    /// As `new`; with `sampling`, the sites live on a uniform sample of the
    /// pairs drawn from (seed, `keys`) (`pairs::PairSample`).
    pub fn with_pairs(
        x: &DMatrix<f64>,
        y: &[bool],
        vars: &[f64],
        form: Form,
        precision: Precision,
        sampling: Option<(PairSampling, &[u64])>,
    ) -> Result<LinearEp, EngineError> {
        let pos: Vec<usize> = (0..y.len()).filter(|&i| y[i]).collect();
        let neg: Vec<usize> = (0..y.len()).filter(|&i| !y[i]).collect();
        if pos.is_empty() || neg.is_empty() {
            return Err(EngineError::InvalidParams("EP needs both classes".into()));
        }
        let all_pairs = pos.len() * neg.len();
        // A pair sample's state holds only the rows its pairs touch (the rest
        // add nothing to its likelihood): at 10⁷ rows, about half the rows,
        // copies, marginals and sums of q's rebuild.
        let (pos, neg, sample) = match sampling {
            None => (pos, neg, None),
            Some((s, _)) if s.pairs == 0 => {
                return Err(EngineError::InvalidParams(
                    "a pair sample needs at least one pair".into(),
                ));
            }
            Some((s, keys)) => {
                let (sample, tp, tn) =
                    PairSample::draw(pos.len(), neg.len(), s.pairs, s.seed, keys).compact();
                let pick =
                    |rows: &[usize], keep: Vec<usize>| keep.iter().map(|&t| rows[t]).collect();
                (pick(&pos, tp), pick(&neg, tn), Some(sample))
            }
        };
        let (xp, xn) = (Arc::new(x.select_rows(&pos)), Arc::new(x.select_rows(&neg)));
        let design = Design::shared(&xp, &xn, vars, form);
        let (zp, zn, prior) = (design.zp.clone(), design.zn.clone(), design.prior.clone());
        let ep = match sample {
            None => PairEp::new(zp, zn, identical_pairs(&xp, &xn), prior, precision),
            Some(sample) => PairEp::sampled(zp, zn, sample, prior, precision),
        }
        .map_err(EngineError::Numerical)?;
        Ok(LinearEp {
            xp,
            xn,
            all_pairs,
            design,
            ep,
            vars: vars.to_vec(),
            start: None,
        })
    }

    /// The pairs of the likelihood: all positive/negative pairs M, or the B
    /// sampled ones (identical rows included: g = γ/M).
    pub fn pairs(&self) -> usize {
        self.ep.pairs()
    }
    /// All positive/negative pairs n+ · n−.
    pub fn all_pairs(&self) -> usize {
        self.all_pairs
    }
    pub fn state(&self) -> &PairEp {
        &self.ep
    }
    pub fn state_mut(&mut self) -> &mut PairEp {
        &mut self.ep
    }
    pub fn design(&self) -> &Design {
        &self.design
    }
    pub fn vars(&self) -> &[f64] {
        &self.vars
    }
    /// How the last cold run on very many pairs started (see `start`).
    pub fn sampled_start(&self) -> Option<&SampledStart> {
        self.start.as_ref()
    }

    /// New prior variances; the sites are kept (warm start).
    pub fn set_vars(&mut self, vars: &[f64]) {
        self.vars = vars.to_vec();
        let form = if self.design.is_reduced() {
            Form::Reduced
        } else {
            Form::Primal
        };
        self.design = Design::shared(&self.xp, &self.xn, vars, form);
        self.ep.set_design(
            self.design.zp.clone(),
            self.design.zn.clone(),
            self.design.prior.clone(),
        );
    }

    /// EP to convergence at γ from the current state.
    pub fn run(
        &mut self,
        gamma: f64,
        s: &EpSettings,
        ctl: &Control,
        on_sweep: &mut dyn FnMut(&SweepInfo<'_>, &Design),
    ) -> Result<EpOutcome, EngineError> {
        let g = gamma / self.pairs() as f64;
        if g > MAX_G {
            return Err(EngineError::InvalidParams(format!(
                "γ = {gamma} is {g:.3e} per pair; EP supports at most {MAX_G} per pair (γ ≤ {:.3e})",
                MAX_G * self.pairs() as f64
            )));
        }
        // A cold run on very many pairs starts from a pair sample's fixed
        // point (`start`: parallel EP from the prior overshoots at large γ).
        if gamma > 0.0
            && self.ep.sample().is_none()
            && self.pairs() >= START_MIN_PAIRS
            && self.ep.sites_are_zero()
        {
            self.start = Some(start::sampled_start(&mut self.ep, gamma, s, ctl)?);
        }
        let design = &self.design;
        self.ep.run(g, s, ctl, &mut |info| on_sweep(&info, design))
    }

    /// Starts a cold state near `q0` (EP's coordinates): every site computed
    /// from q0's marginals as its cavity in one undamped pass at γ, q rebuilt
    /// from them (`PairEp::start_from`). Only the start changes: the fixed
    /// point and the convergence test are a cold run's. False (the state
    /// left at the prior) when q0 does not fit the design or the start is
    /// invalid (a cavity, Q not positive definite).
    pub fn start_from(&mut self, q0: &super::posterior::Posterior, gamma: f64) -> bool {
        if q0.m.len() != self.design.dim() || !self.ep.sites_are_zero() {
            return false;
        }
        let g = gamma / self.pairs() as f64;
        g <= MAX_G && self.ep.start_from(q0, g)
    }

    /// Scores `<θ, x>` of the positive and of the negative rows (with a pair
    /// sample: of the rows it touches, numbered as in `state().sample()`).
    pub fn class_scores(&self, theta: &[f64]) -> (Vec<f64>, Vec<f64>) {
        let t = nalgebra::DVector::from_column_slice(theta);
        let s = |x: &DMatrix<f64>| (x * &t).iter().copied().collect();
        (s(&self.xp), s(&self.xn))
    }

    /// Posterior mean of θ.
    pub fn mean(&self) -> Vec<f64> {
        self.design
            .theta_mean(self.ep.posterior().expect("run first"))
    }
    /// Posterior sds of θ.
    pub fn sd(&self) -> Vec<f64> {
        self.design
            .theta_sd(self.ep.posterior().expect("run first"))
    }
    /// Posterior covariance of θ (primal form).
    pub fn cov(&self) -> Option<DMatrix<f64>> {
        self.design
            .theta_cov(self.ep.posterior().expect("run first"))
    }
    /// Posterior covariance of θ, factored (reduced form).
    pub fn cov_low_rank(&self) -> Option<crate::engine::fit::LowRankCov> {
        self.design
            .theta_cov_low_rank(self.ep.posterior().expect("run first"))
    }
}

/// Gaussian EP driven by the continuation in γ (`continuation`): the sweeps
/// of the target's run are streamed to `on_sweep`, the path's are not.
pub struct LinearPath<'a> {
    pub lep: &'a mut LinearEp,
    pub settings: EpSettings,
    pub ctl: &'a Control,
    pub on_sweep: &'a mut dyn FnMut(&SweepInfo<'_>, &Design),
}

impl Continuable for LinearPath<'_> {
    type Snapshot = Vec<f64>;
    type Outcome = EpOutcome;
    fn snapshot(&self) -> Vec<f64> {
        self.lep.ep.sites_vec()
    }
    fn restore(&mut self, snap: &Vec<f64>) {
        self.lep.ep.load_sites(snap);
    }
    fn reset(&mut self) {
        self.lep.ep.reset();
    }
    fn run_at(&mut self, gamma: f64, target: bool) -> Result<(EpOutcome, usize, f64), EngineError> {
        let s = if target {
            self.settings
        } else {
            settings::fold_settings(&self.settings)
        };
        let out = if target {
            self.lep.run(gamma, &s, self.ctl, self.on_sweep)?
        } else {
            self.lep.run(gamma, &s, self.ctl, &mut |_, _| {})?
        };
        let sweeps = out.sweeps;
        Ok((out, sweeps, s.tol))
    }
    fn marginal(&self) -> Marginal {
        let q = self.lep.ep.posterior().expect("converged");
        Marginal {
            mean: q.m.iter().copied().collect(),
            var: (0..q.m.len()).map(|k| q.v[(k, k)]).collect(),
        }
    }
}
