//! What SMC samples: `π_γ(θ) ∝ prior(θ)·exp(−γ R(θ))` behind a small trait, so
//! the engine does not know whether θ is a linear score's coefficients (here) or
//! a score vector under a GP prior (later).

use std::sync::Mutex;

use nalgebra::DMatrix;
use rayon::prelude::*;

use super::fast_prior::FastPrior;
use super::reparam::PitMap;
use super::scores::{LinearScores, ScorePrecision, ScoreScratch};
use crate::engine::numerics::rng::Rng;
use crate::engine::prior::Prior;

/// A tempered target: a prior and a risk.
pub trait Target: Sync {
    /// Dimension of θ.
    fn dim(&self) -> usize;
    /// log prior density (normalised: SMC's log Z is relative to it).
    fn log_prior(&self, theta: &[f64]) -> f64;
    /// One prior draw into `out`.
    fn sample_prior(&self, rng: &mut Rng, out: &mut [f64]);
    /// Whether the prior is a zero-mean Gaussian (enables pCN moves and exact
    /// radial refreshes).
    fn prior_is_gaussian(&self) -> bool;
    /// Whether `R(cθ) = R(θ)` for every c > 0, θ the model parameter (the AUC risk
    /// of a linear score or of a score vector): then the radius of θ moves
    /// without risk evaluations.
    fn scale_invariant(&self) -> bool;
    /// Risks of the rows of `thetas` (m × dim, row-major) into `out` (length m).
    /// Must give the same bits for a row whatever the batch or thread count.
    fn risks(&self, thetas: &[f64], out: &mut [f64]);
    /// The model's parameter for a particle, when the sampler works in other
    /// coordinates (default: the same).
    fn natural(&self, particle: &[f64], theta: &mut [f64]) {
        theta.copy_from_slice(particle);
    }
    /// The inverse of `natural`.
    fn to_particle(&self, theta: &[f64], particle: &mut [f64]) {
        particle.copy_from_slice(theta);
    }
    /// log prior density of the model parameter θ (= `log_prior` unless the
    /// sampler reparametrises).
    fn log_prior_natural(&self, theta: &[f64]) -> f64 {
        self.log_prior(theta)
    }
    /// The prior sds √v_k when the particles are θ under a zero-mean Gaussian
    /// prior N(0, diag v) (the direction kernel's whitening); None otherwise.
    fn prior_sds(&self) -> Option<Vec<f64>> {
        None
    }
    /// How many particles `risks` evaluates together at best (its batches
    /// split into blocks of this many; None: no preference). The moves size
    /// their blocks of chains by it: a 64-chain call on blocks of 54 left a
    /// block of 10 that streamed X for 10 particles (DNA).
    fn batch(&self) -> Option<usize> {
        None
    }
    /// Spike-and-slab: P(z_k = 1 | D) from particles θ (rows of `thetas`); None
    /// for priors without inclusion variables.
    fn inclusion(&self, thetas: &[f64]) -> Option<Vec<f64>> {
        let _ = thetas;
        None
    }
    /// Targets whose risk in the sampler's coordinates changes along the rays
    /// θ → fθ of the model parameter by a known amount although the AUC risk
    /// does not (a reference path, `reference`): the particle of fθ (θ that
    /// of `cur`) into `new` and its risk, given the risk `risk` of `cur`
    /// (`scratch`: the target's work space). None (the default): no such
    /// moves (scale-invariant targets have their own).
    fn ray_step(
        &self,
        cur: &[f64],
        risk: f64,
        f: f64,
        new: &mut [f64],
        scratch: &mut Vec<f64>,
    ) -> Option<f64> {
        let _ = (cur, risk, f, new, scratch);
        None
    }
    /// Whether `ray_step` answers.
    fn moves_on_rays(&self) -> bool {
        false
    }
    /// Whether the particle is the model parameter itself (`natural` the
    /// identity): then θ → fθ scales the particle too.
    fn particle_is_natural(&self) -> bool {
        false
    }
    /// A cheap approximation S of the risk with the same prior, for delayed
    /// acceptance (`delayed`): the moves then evaluate the risk only for
    /// proposals that S accepts. None (the default): every proposal's risk.
    /// Must be scale-invariant when the risk is (radial moves keep S).
    fn surrogate(&self) -> Option<&dyn Target> {
        None
    }
}

/// Scores per block of particles (the block's n × m scores stay in L2 with
/// room for X's panels; more particles per block amortise the streaming of X).
const BLOCK_SCORES: usize = 131_072;
const MIN_BLOCK: usize = 12;
const MAX_BLOCK: usize = 96;

/// The AUC risk of the linear score `<θ, x>` on training rows, with a prior from
/// `engine::prior`.
pub struct LinearAuc {
    d: usize,
    scores: LinearScores,
    prior: Prior,
    fast_prior: FastPrior,
    /// Spike-and-slab: particles are η with θ_k = g(η_k) (see `reparam`).
    pit: Option<PitMap>,
    /// Particles per rayon task (fixed by the data: results cannot depend on the
    /// thread count).
    block: usize,
    /// One scratch per worker thread (index = rayon thread index).
    scratch: Vec<Mutex<Scratch>>,
    /// The same risk on a class-stratified row subsample (delayed acceptance).
    surrogate: Option<(Box<LinearAuc>, usize)>,
}

struct Scratch {
    scores: ScoreScratch,
    /// θ of a block of reparametrised particles.
    theta: Vec<f64>,
}

impl LinearAuc {
    /// The target with f32 score products where the data allow them.
    pub fn new(x: &DMatrix<f64>, y: &[bool], prior: Prior) -> LinearAuc {
        LinearAuc::with_precision(x, y, prior, ScorePrecision::Auto)
    }

    pub fn with_precision(
        x: &DMatrix<f64>,
        y: &[bool],
        prior: Prior,
        precision: ScorePrecision,
    ) -> LinearAuc {
        let (n, d) = x.shape();
        let order: Vec<usize> = (0..n)
            .filter(|&i| y[i])
            .chain((0..n).filter(|&i| !y[i]))
            .collect();
        let n_pos = y.iter().filter(|&&b| b).count();
        let scores = LinearScores::new(&x.select_rows(&order), n_pos, precision);
        let block = (BLOCK_SCORES / n.max(1)).clamp(MIN_BLOCK, MAX_BLOCK);
        let threads = rayon::current_num_threads().max(1) + 1;
        let scratch = (0..threads)
            .map(|_| {
                Mutex::new(Scratch {
                    scores: scores.scratch(),
                    theta: Vec::with_capacity(block * d),
                })
            })
            .collect();
        LinearAuc {
            d,
            scores,
            fast_prior: FastPrior::new(&prior, d),
            pit: match prior {
                Prior::SpikeSlab {
                    spike_var,
                    slab_var,
                    incl,
                } => Some(PitMap::new(spike_var, slab_var, incl)),
                _ => None,
            },
            prior,
            block,
            scratch,
            surrogate: None,
        }
    }

    /// The target with a surrogate: the same risk on `m` rows drawn without
    /// replacement per class in proportion to the classes (at least one of
    /// each), from a stream of `seed`. Costs O(m log m) per evaluation
    /// instead of O(n log n).
    pub fn with_surrogate(mut self, x: &DMatrix<f64>, y: &[bool], m: usize, seed: u64) -> Self {
        let rows = stratified_rows(y, m, seed);
        let ys: Vec<bool> = rows.iter().map(|&i| y[i]).collect();
        let mut sub = LinearAuc::new(&x.select_rows(&rows), &ys, self.prior.clone());
        sub.pit = self.pit.clone();
        self.surrogate = Some((Box::new(sub), rows.len()));
        self
    }

    /// Rows of the surrogate (None: no surrogate).
    pub fn surrogate_rows(&self) -> Option<usize> {
        self.surrogate.as_ref().map(|s| s.1)
    }

    pub fn prior(&self) -> &Prior {
        &self.prior
    }

    /// "f32" or "f64": the precision of the score products.
    pub fn score_precision(&self) -> &'static str {
        self.scores.precision_name()
    }

    /// Why the products are f64 although f32 was allowed (None otherwise).
    pub fn f64_reason(&self) -> Option<&str> {
        self.scores.f64_reason.as_deref()
    }

    /// Samples θ itself even under a spike-and-slab prior (for comparisons).
    pub fn without_reparametrisation(mut self) -> LinearAuc {
        self.pit = None;
        self
    }

    /// Whether particles are reparametrised coordinates rather than θ.
    pub fn reparametrised(&self) -> bool {
        self.pit.is_some()
    }
}

impl Target for LinearAuc {
    fn dim(&self) -> usize {
        self.d
    }

    fn log_prior(&self, x: &[f64]) -> f64 {
        match &self.pit {
            None => self.fast_prior.log_density(x),
            // Density of η: prior of θ = g(η) times g'(η).
            Some(g) => x
                .iter()
                .enumerate()
                .map(|(k, &e)| self.fast_prior.log_density_coord(k, g.forward(e)) + g.log_slope(e))
                .sum(),
        }
    }

    fn sample_prior(&self, rng: &mut Rng, out: &mut [f64]) {
        self.prior.sample(rng, out);
        if let Some(g) = &self.pit {
            out.iter_mut().for_each(|t| *t = g.inverse(*t));
        }
    }

    fn prior_is_gaussian(&self) -> bool {
        self.pit.is_none() && matches!(self.prior, Prior::Gaussian { .. } | Prior::Ard { .. })
    }

    fn scale_invariant(&self) -> bool {
        true
    }

    fn prior_sds(&self) -> Option<Vec<f64>> {
        match (&self.pit, &self.prior) {
            (None, Prior::Gaussian { var }) => Some(vec![var.sqrt(); self.d]),
            (None, Prior::Ard { vars }) => Some(vars.iter().map(|v| v.sqrt()).collect()),
            _ => None,
        }
    }

    fn to_particle(&self, theta: &[f64], particle: &mut [f64]) {
        match &self.pit {
            None => particle.copy_from_slice(theta),
            Some(g) => {
                for (e, &t) in particle.iter_mut().zip(theta) {
                    *e = g.inverse(t);
                }
            }
        }
    }

    fn log_prior_natural(&self, theta: &[f64]) -> f64 {
        self.fast_prior.log_density(theta)
    }

    fn particle_is_natural(&self) -> bool {
        self.pit.is_none()
    }

    fn natural(&self, particle: &[f64], theta: &mut [f64]) {
        match &self.pit {
            None => theta.copy_from_slice(particle),
            Some(g) => {
                for (t, &e) in theta.iter_mut().zip(particle) {
                    *t = g.forward(e);
                }
            }
        }
    }

    fn batch(&self) -> Option<usize> {
        Some(self.block)
    }

    fn risks(&self, thetas: &[f64], out: &mut [f64]) {
        let d = self.d;
        assert_eq!(thetas.len(), out.len() * d, "one risk per particle");
        out.par_chunks_mut(self.block)
            .zip(thetas.par_chunks(self.block * d))
            .for_each(|(out, th)| {
                let slot = rayon::current_thread_index().unwrap_or(0) % self.scratch.len();
                let mut guard = self.scratch[slot].lock().unwrap_or_else(|e| e.into_inner());
                let Scratch { scores, theta } = &mut *guard;
                let th = match &self.pit {
                    None => th,
                    Some(g) => {
                        theta.clear();
                        theta.extend(th.iter().map(|&e| g.forward(e)));
                        &theta[..]
                    }
                };
                self.scores.risks(th, out, scores);
            });
    }
    fn inclusion(&self, thetas: &[f64]) -> Option<Vec<f64>> {
        super::summary::inclusion(thetas, self.d, &self.prior)
    }
    fn surrogate(&self) -> Option<&dyn Target> {
        self.surrogate.as_ref().map(|s| &*s.0 as &dyn Target)
    }
}

/// Stream key of the surrogate's row subsample (with the seed).
const KEY_SURROGATE: u64 = 0x5EED_0051;

/// About `m` row indices (sorted), each class sampled without replacement in
/// proportion to its size and at least once.
pub fn stratified_rows(y: &[bool], m: usize, seed: u64) -> Vec<usize> {
    let mut r = crate::engine::numerics::rng::stream(seed, &[KEY_SURROGATE]);
    let n = y.len();
    let mut rows = Vec::with_capacity(m.min(n));
    for class in [true, false] {
        let mut idx: Vec<usize> = (0..n).filter(|&i| y[i] == class).collect();
        if idx.is_empty() {
            continue;
        }
        let want =
            ((m as f64 * idx.len() as f64 / n.max(1) as f64).round() as usize).clamp(1, idx.len());
        // Partial Fisher–Yates: the first `want` are a uniform sample.
        for k in 0..want {
            let last = idx.len() - 1;
            let j = k + (rand::RngExt::random::<f64>(&mut r) * (idx.len() - k) as f64) as usize;
            idx.swap(k, j.min(last));
        }
        rows.extend_from_slice(&idx[..want]);
    }
    rows.sort_unstable();
    rows
}

/// A test target with a closed-form answer: prior N(0, var·I) and the quadratic
/// risk `R(θ) = ‖θ − b‖²/2` (a Gaussian likelihood). Then the posterior is
/// N(γb/(1/var + γ), 1/(1/var + γ)) per coordinate and
/// `log Z_γ = Σ_k [−½ log(1 + γ·var) − b_k²/(2(var + 1/γ))]`.
pub struct Quadratic {
    pub b: Vec<f64>,
    pub var: f64,
}

impl Quadratic {
    pub fn log_z(&self, gamma: f64) -> f64 {
        if gamma == 0.0 {
            return 0.0;
        }
        self.b
            .iter()
            .map(|&bk| {
                -0.5 * (gamma * self.var).ln_1p() - bk * bk / (2.0 * (self.var + 1.0 / gamma))
            })
            .sum()
    }
    /// Posterior mean and sd of coordinate k at γ.
    pub fn posterior(&self, gamma: f64, k: usize) -> (f64, f64) {
        let prec = 1.0 / self.var + gamma;
        (gamma * self.b[k] / prec, prec.recip().sqrt())
    }
}

impl Target for Quadratic {
    fn dim(&self) -> usize {
        self.b.len()
    }
    fn log_prior(&self, theta: &[f64]) -> f64 {
        Prior::Gaussian { var: self.var }.log_density(theta)
    }
    fn sample_prior(&self, rng: &mut Rng, out: &mut [f64]) {
        Prior::Gaussian { var: self.var }.sample(rng, out)
    }
    fn prior_is_gaussian(&self) -> bool {
        true
    }
    fn scale_invariant(&self) -> bool {
        false
    }
    fn risks(&self, thetas: &[f64], out: &mut [f64]) {
        let d = self.b.len();
        for (o, t) in out.iter_mut().zip(thetas.chunks_exact(d)) {
            *o = 0.5
                * t.iter()
                    .zip(&self.b)
                    .map(|(a, b)| (a - b) * (a - b))
                    .sum::<f64>();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::metrics::auc;
    use crate::engine::numerics::rng;

    /// The same target without a batch preference (the moves then use
    /// blocks of 64 chains).
    struct Unbatched<'a>(&'a LinearAuc);

    impl Target for Unbatched<'_> {
        fn dim(&self) -> usize {
            self.0.dim()
        }
        fn log_prior(&self, theta: &[f64]) -> f64 {
            self.0.log_prior(theta)
        }
        fn sample_prior(&self, rng: &mut Rng, out: &mut [f64]) {
            self.0.sample_prior(rng, out)
        }
        fn prior_is_gaussian(&self) -> bool {
            self.0.prior_is_gaussian()
        }
        fn scale_invariant(&self) -> bool {
            self.0.scale_invariant()
        }
        fn risks(&self, thetas: &[f64], out: &mut [f64]) {
            self.0.risks(thetas, out)
        }
    }

    /// The moves' blocks of chains follow the target's batch; the chains do
    /// not depend on them, bit for bit.
    #[test]
    fn move_steps_do_not_depend_on_the_chain_blocks() {
        use super::super::gaussian_fit::CrossFit;
        use super::super::moves::{Chains, Kernel, Proposals, StepSpec, step};
        let mut r = rng::stream(7, &[]);
        let (n, d, m) = (5000, 6, 300);
        let x = DMatrix::from_fn(n, d, |_, _| rng::normal(&mut r));
        let y: Vec<bool> = (0..n).map(|i| i % 4 == 0).collect();
        let t = LinearAuc::new(&x, &y, Prior::Gaussian { var: 1.0 });
        assert_eq!(t.batch(), Some(26), "131 072 scores / 5000 rows");
        let mut theta = vec![0.0; m * d];
        for row in theta.chunks_exact_mut(d) {
            t.sample_prior(&mut r, row);
        }
        let cf = CrossFit::of(&theta, d, &vec![1.0 / m as f64; m], m, 2, 1.0);
        let fresh = || {
            let mut c = Chains {
                d,
                risk: vec![0.0; m],
                log_prior: theta.chunks_exact(d).map(|p| t.log_prior(p)).collect(),
                theta: theta.clone(),
                white: Vec::new(),
                rng: (0..m).map(|j| rng::stream(8, &[j as u64])).collect(),
                surrogate: Vec::new(),
                jac: Vec::new(),
                fold: (0..m).map(|j| cf.fold_of(j)).collect(),
            };
            t.risks(&c.theta, &mut c.risk);
            c.whiten(&cf.fits);
            c
        };
        let spec = StepSpec {
            kernel: Kernel::Gpcn,
            gamma: 50.0,
            scale: 0.6,
            fits: &cf.fits,
            radial: true,
            chart: None,
            maps: None,
            df: None,
            local_share: 0.3,
            direction: false,
        };
        let (mut a, mut b) = (fresh(), fresh());
        let (mut ba, mut bb) = (Proposals::default(), Proposals::default());
        for _ in 0..4 {
            let sa = step(&t, &mut a, &mut ba, spec);
            let sb = step(&Unbatched(&t), &mut b, &mut bb, spec);
            assert_eq!(sa.accepted, sb.accepted);
        }
        let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        assert_eq!(bits(&a.theta), bits(&b.theta));
        assert_eq!(bits(&a.white), bits(&b.white));
        assert_eq!(bits(&a.risk), bits(&b.risk));
        assert_eq!(bits(&a.log_prior), bits(&b.log_prior));
    }

    #[test]
    fn linear_risks_match_metrics_in_any_batch() {
        let mut r = rng::stream(3, &[]);
        let (n, d) = (203, 5);
        // A binary column makes ties between rows.
        let x = DMatrix::from_fn(n, d, |i, k| {
            if k == 0 {
                (i % 2) as f64
            } else {
                rng::normal(&mut r)
            }
        });
        let y: Vec<bool> = (0..n).map(|i| (i * 7) % 3 == 0).collect();
        let t = LinearAuc::new(&x, &y, Prior::Gaussian { var: 1.0 });
        let m = 37;
        let thetas: Vec<f64> = (0..m * d)
            .map(|j| {
                if j % d == 0 {
                    1.0
                } else if j % 11 == 0 {
                    0.0
                } else {
                    rng::normal(&mut r)
                }
            })
            .collect();
        let mut all = vec![0.0; m];
        t.risks(&thetas, &mut all);
        for j in 0..m {
            let th = nalgebra::DVector::from_column_slice(&thetas[j * d..(j + 1) * d]);
            let s: Vec<f64> = (&x * th).iter().copied().collect();
            assert!((all[j] - (1.0 - auc(&s, &y))).abs() < 1e-12);
            let mut one = [0.0];
            t.risks(&thetas[j * d..(j + 1) * d], &mut one);
            assert_eq!(one[0].to_bits(), all[j].to_bits());
        }
    }
}
