//! One chain of the great-circle sampler: a unit direction u (whitened), the
//! scores of both sides at u, and per step a tangent direction v (uniform, or
//! shaped by a fixed covariance and then accepted by the Metropolis–Hastings
//! ratio of `directions`), an exact draw of φ on the circle through u and v,
//! and an independent χ_d radius.

use std::sync::Arc;

use nalgebra::DVector;
use rand::RngExt;

use super::circle::{Circle, CircleSampler};
use super::design::Design;
use super::directions::Shape;
use super::slice::slice_move;
use crate::engine::numerics::rng::{Rng, normal, stream};

/// Recompute the scores from u every this many steps (the incremental update
/// `A ← A cos φ + B sin φ` accumulates rounding).
const REFRESH: usize = 64;
/// Stream key of the chains.
const KEY: u64 = 0x0067_6373;

/// Work counters of a stretch of steps.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Work {
    pub steps: u64,
    /// Moves accepted (every step with uniform directions).
    pub accepted: u64,
    pub proposals: u64,
    pub envelope_misses: u64,
    /// Σ of the folded jump |φ| ∈ [0, π] (0 for a refused move).
    pub jump: f64,
    /// Σ of the risk after each step.
    pub risk: f64,
}

impl Work {
    pub fn add(&mut self, o: &Work) {
        self.steps += o.steps;
        self.accepted += o.accepted;
        self.proposals += o.proposals;
        self.envelope_misses += o.envelope_misses;
        self.jump += o.jump;
        self.risk += o.risk;
    }

    /// The work done since `before` (a snapshot of the same chain).
    pub fn since(&self, before: &Work) -> Work {
        Work {
            steps: self.steps - before.steps,
            accepted: self.accepted - before.accepted,
            proposals: self.proposals - before.proposals,
            envelope_misses: self.envelope_misses - before.envelope_misses,
            jump: self.jump - before.jump,
            risk: self.risk - before.risk,
        }
    }
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
    /// Shaped directions (None: uniform), Λu, Λv and the normals of z.
    shape: Option<Arc<Shape>>,
    prec_u: DVector<f64>,
    prec_v: DVector<f64>,
    eps: DVector<f64>,
    /// Directions u recorded while `recording` (the warm-up window Σ is
    /// estimated from).
    pub window: Vec<f64>,
    pub recording: bool,
    /// Steps taken (warm-up included).
    pub steps: usize,
    /// Kept draws of θ (rows of d) and their risks, after warm-up.
    pub draws: Vec<f64>,
    pub risks: Vec<f64>,
    /// The latest risk and its twice-count (`2·discordant + ties`).
    pub risk: f64,
    twice: u64,
    /// Slice moves on the circle (`slice`) instead of the exact draw.
    pub slice: bool,
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
            shape: None,
            prec_u: DVector::zeros(d),
            prec_v: DVector::zeros(d),
            eps: DVector::zeros(d),
            window: Vec::new(),
            recording: false,
            steps: 0,
            draws: Vec::new(),
            risks: Vec::new(),
            risk: f64::NAN,
            twice: 0,
            slice: false,
            work: Work::default(),
        };
        c.reread_risk(design);
        c
    }

    /// The risk at the current point, counted afresh from its scores.
    fn reread_risk(&mut self, design: &Design) {
        let circle = Circle {
            pos_a: self.a_pos.as_slice(),
            pos_b: self.b_pos.as_slice(),
            neg_a: self.a_neg.as_slice(),
            neg_b: self.b_neg.as_slice(),
        };
        self.twice = self.sampler.twice_at(&circle, 0.0);
        self.risk = self.twice as f64 / (2 * design.pairs()) as f64;
    }

    /// Draw the tangent directions from `shape` from now on (None: uniform).
    pub fn set_shape(&mut self, shape: Option<Arc<Shape>>) {
        self.shape = shape;
        if let Some(sh) = &self.shape {
            sh.precision_times(&self.u, &mut self.prec_u);
        }
    }

    pub fn shape(&self) -> Option<&Shape> {
        self.shape.as_deref()
    }

    /// The current unit direction (whitened).
    pub fn direction(&self) -> &DVector<f64> {
        &self.u
    }

    /// A tangent direction at u into `v`; with a shape also Λv and the log
    /// acceptance ratio as a function of φ's inputs `(a, b, c)`.
    fn draw_direction(&mut self) -> Option<(f64, f64, f64)> {
        loop {
            for x in self.eps.iter_mut() {
                *x = normal(&mut self.rng);
            }
            let Some(shape) = &self.shape else {
                self.v.copy_from(&self.eps);
                let along = self.v.dot(&self.u);
                self.v.axpy(-along, &self.u, 1.0);
                self.v.normalize_mut();
                return None;
            };
            if shape.direction(&self.u, &self.eps, &mut self.v, &mut self.prec_v) {
                let a = self.u.dot(&self.prec_u);
                let b = self.v.dot(&self.prec_u);
                let c = self.v.dot(&self.prec_v);
                return Some((a, b, c));
            }
        }
    }

    /// One step; the draw is kept when past `warmup` and on the thinning grid.
    pub fn step(&mut self, design: &Design, warmup: usize, thin: usize) {
        let d = design.d();
        let forms = self.draw_direction();
        design.pos.mul_to(&self.v, &mut self.b_pos);
        design.neg.mul_to(&self.v, &mut self.b_neg);
        let circle = Circle {
            pos_a: self.a_pos.as_slice(),
            pos_b: self.b_pos.as_slice(),
            neg_a: self.a_neg.as_slice(),
            neg_b: self.b_neg.as_slice(),
        };
        let draw = if self.slice {
            slice_move(
                &mut self.sampler,
                &circle,
                design.gamma,
                self.twice,
                &mut self.rng,
            )
        } else {
            self.sampler.sample(&circle, design.gamma, &mut self.rng)
        };
        let accept = match (&self.shape, forms) {
            (Some(shape), Some((a, b, c))) => {
                let log_ratio = shape.log_ratio(draw.phi, a, b, c);
                // One uniform per step whatever the outcome: the stream stays aligned.
                let t: f64 = self.rng.random();
                !shape.correct || log_ratio >= 0.0 || t < log_ratio.exp()
            }
            _ => true,
        };
        if accept {
            let (s, c) = draw.phi.sin_cos();
            self.u.axpy(s, &self.v, c);
            self.a_pos.axpy(s, &self.b_pos, c);
            self.a_neg.axpy(s, &self.b_neg, c);
            if self.shape.is_some() {
                self.prec_u.axpy(s, &self.prec_v, c);
            }
            self.twice = draw.twice;
            self.risk = draw.twice as f64 / (2 * design.pairs()) as f64;
        }
        self.steps += 1;
        if self.steps.is_multiple_of(REFRESH) {
            self.u.normalize_mut();
            design.pos.mul_to(&self.u, &mut self.a_pos);
            design.neg.mul_to(&self.u, &mut self.a_neg);
            if let Some(sh) = &self.shape {
                sh.precision_times(&self.u, &mut self.prec_u);
            }
            if self.slice {
                // The slice's level is read at the current point: the same
                // scores it is compared with.
                self.reread_risk(design);
            }
        }
        let w = &mut self.work;
        w.steps += 1;
        w.proposals += u64::from(draw.proposals);
        w.envelope_misses += u64::from(draw.envelope_misses);
        if accept {
            w.accepted += 1;
            let phi = draw.phi.rem_euclid(2.0 * std::f64::consts::PI);
            w.jump += phi.min(2.0 * std::f64::consts::PI - phi);
        }
        w.risk += self.risk;
        if self.recording {
            self.window.extend(self.u.iter());
        }
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
