//! One chain of the great-circle sampler: a unit direction u (whitened), the
//! scores of both sides at u, and per step a uniform tangent direction v, an
//! exact draw of φ on the circle through u and v, and an independent χ_d radius.

use nalgebra::DVector;

use super::circle::{Circle, CircleSampler};
use super::design::Design;
use crate::engine::rng::{Rng, normal, stream};

/// Recompute the scores from u every this many steps (the incremental update
/// `A ← A cos φ + B sin φ` accumulates rounding).
const REFRESH: usize = 64;
/// Stream key of the chains.
const KEY: u64 = 0x0067_6373;

/// Work counters of a stretch of steps.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Work {
    pub steps: u64,
    pub proposals: u64,
    pub envelope_misses: u64,
    /// Σ of the folded jump |φ| ∈ [0, π].
    pub jump: f64,
    /// Σ of the risk after each step.
    pub risk: f64,
}

#[derive(Debug, Clone)]
pub struct Chain {
    rng: Rng,
    u: DVector<f64>,
    v: DVector<f64>,
    a_pos: DVector<f64>,
    a_neg: DVector<f64>,
    b_pos: DVector<f64>,
    b_neg: DVector<f64>,
    sampler: CircleSampler,
    /// Steps taken (warm-up included).
    pub steps: usize,
    /// Kept draws of θ (rows of d) and their risks, after warm-up.
    pub draws: Vec<f64>,
    pub risks: Vec<f64>,
    /// The latest risk.
    pub risk: f64,
    pub work: Work,
}

impl Chain {
    /// Chain `index` of the run with `seed`, started at a prior draw.
    pub fn new(design: &Design, seed: u64, index: u64) -> Chain {
        let mut rng = stream(seed, &[KEY, index]);
        let d = design.d();
        let mut u = DVector::from_fn(d, |_, _| normal(&mut rng));
        u.normalize_mut();
        let mut c = Chain {
            rng,
            v: DVector::zeros(d),
            a_pos: design.pos.clone() * &u,
            a_neg: design.neg.clone() * &u,
            u,
            b_pos: DVector::zeros(design.pos.nrows()),
            b_neg: DVector::zeros(design.neg.nrows()),
            sampler: CircleSampler::new(design.pos.nrows(), design.neg.nrows(), design.gamma),
            steps: 0,
            draws: Vec::new(),
            risks: Vec::new(),
            risk: f64::NAN,
            work: Work::default(),
        };
        let circle = Circle {
            pos_a: c.a_pos.as_slice(),
            pos_b: c.b_pos.as_slice(),
            neg_a: c.a_neg.as_slice(),
            neg_b: c.b_neg.as_slice(),
        };
        c.risk = c.sampler.twice_at(&circle, 0.0) as f64 / (2 * design.pairs()) as f64;
        c
    }

    /// One step; the draw is kept when past `warmup` and on the thinning grid.
    pub fn step(&mut self, design: &Design, warmup: usize, thin: usize) {
        let d = design.d();
        for x in self.v.iter_mut() {
            *x = normal(&mut self.rng);
        }
        let along = self.v.dot(&self.u);
        self.v.axpy(-along, &self.u, 1.0);
        self.v.normalize_mut();
        design.pos.mul_to(&self.v, &mut self.b_pos);
        design.neg.mul_to(&self.v, &mut self.b_neg);
        let circle = Circle {
            pos_a: self.a_pos.as_slice(),
            pos_b: self.b_pos.as_slice(),
            neg_a: self.a_neg.as_slice(),
            neg_b: self.b_neg.as_slice(),
        };
        let draw = self.sampler.sample(&circle, design.gamma, &mut self.rng);
        let (s, c) = draw.phi.sin_cos();
        self.u.axpy(s, &self.v, c);
        self.a_pos.axpy(s, &self.b_pos, c);
        self.a_neg.axpy(s, &self.b_neg, c);
        self.steps += 1;
        if self.steps.is_multiple_of(REFRESH) {
            self.u.normalize_mut();
            design.pos.mul_to(&self.u, &mut self.a_pos);
            design.neg.mul_to(&self.u, &mut self.a_neg);
        }
        self.risk = draw.twice as f64 / (2 * design.pairs()) as f64;
        let w = &mut self.work;
        w.steps += 1;
        w.proposals += u64::from(draw.proposals);
        w.envelope_misses += u64::from(draw.envelope_misses);
        let phi = draw.phi.rem_euclid(2.0 * std::f64::consts::PI);
        w.jump += phi.min(2.0 * std::f64::consts::PI - phi);
        w.risk += self.risk;
        if self.steps > warmup && (self.steps - warmup).is_multiple_of(thin) {
            let r = (0..d)
                .map(|_| normal(&mut self.rng).powi(2))
                .sum::<f64>()
                .sqrt();
            self.draws
                .extend((0..d).map(|k| design.scale[k] * r * self.u[k]));
            self.risks.push(self.risk);
        }
    }

    /// The kept draws of coordinate k.
    pub fn column(&self, k: usize, d: usize) -> Vec<f64> {
        self.draws.iter().skip(k).step_by(d).copied().collect()
    }

    pub fn kept(&self, d: usize) -> usize {
        self.draws.len() / d
    }
}
