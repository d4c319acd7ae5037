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
use super::reference::{self, Ellipse, EllipseRisk, Quadratic, Reference};
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

/// A χ_d draw.
fn chi(rng: &mut Rng, d: usize) -> f64 {
    (0..d).map(|_| normal(rng).powi(2)).sum::<f64>().sqrt()
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
    /// Ellipses around a Gaussian reference (`reference`): then the chain
    /// holds the whole whitened w as `e = w − μ` (a_pos/a_neg hold Xe,
    /// prec_u S⁻¹e, v ν and prec_v S⁻¹ν), and `m_pos`/`m_neg` hold Xμ.
    reference: Option<Arc<Reference>>,
    e: DVector<f64>,
    m_pos: DVector<f64>,
    m_neg: DVector<f64>,
    ellipse_risk: Option<EllipseRisk>,
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
            reference: None,
            e: DVector::zeros(0),
            m_pos: DVector::zeros(0),
            m_neg: DVector::zeros(0),
            ellipse_risk: None,
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

    /// Move on ellipses around `r` from now on (the point is kept: with no
    /// reference before, w = ρu with a fresh ρ ~ χ_d, exact as u's radius is
    /// independent of u).
    pub fn set_reference(&mut self, design: &Design, r: Arc<Reference>) {
        let w = match &self.reference {
            Some(old) => &old.mean + &self.e,
            None => {
                let rho = chi(&mut self.rng, design.d());
                &self.u * rho
            }
        };
        self.e = w - &r.mean;
        self.m_pos = &design.pos * &r.mean;
        self.m_neg = &design.neg * &r.mean;
        if self.ellipse_risk.is_none() {
            self.ellipse_risk = Some(EllipseRisk::new(design.pos.nrows(), design.neg.nrows()));
        }
        self.reference = Some(r);
        self.shape = None;
        self.reread_reference(design);
    }

    pub fn reference(&self) -> Option<&Reference> {
        self.reference.as_deref()
    }

    /// Recompute Xe, S⁻¹e, u and the twice-risk from e.
    fn reread_reference(&mut self, design: &Design) {
        let Some(r) = &self.reference else { return };
        design.pos.mul_to(&self.e, &mut self.a_pos);
        design.neg.mul_to(&self.e, &mut self.a_neg);
        self.prec_u = r.precision_times(&self.e);
        self.u = (&r.mean + &self.e).normalize();
        let el = Ellipse {
            pos: [
                self.m_pos.as_slice(),
                self.a_pos.as_slice(),
                self.b_pos.as_slice(),
            ],
            neg: [
                self.m_neg.as_slice(),
                self.a_neg.as_slice(),
                self.b_neg.as_slice(),
            ],
        };
        let er = self.ellipse_risk.as_mut().expect("set with the reference");
        self.twice = er.twice_at(&el, 0.0);
        self.risk = self.twice as f64 / (2 * design.pairs()) as f64;
    }

    /// One slice move on an ellipse around the reference, then the radius
    /// redrawn exactly; returns (accepted, φ, risk evaluations).
    fn step_reference(&mut self, design: &Design) -> (bool, f64, u32) {
        let r = self.reference.clone().expect("reference mode");
        for x in self.eps.iter_mut() {
            *x = normal(&mut self.rng);
        }
        r.draw(&self.eps, &mut self.v, &mut self.prec_v);
        design.pos.mul_to(&self.v, &mut self.b_pos);
        design.neg.mul_to(&self.v, &mut self.b_neg);
        let (mu, e, nu) = (&r.mean, &self.e, &self.v);
        let q = Quadratic {
            mu_mu: mu.dot(mu),
            mu_e: mu.dot(e),
            mu_nu: mu.dot(nu),
            e_e: e.dot(e),
            e_nu: e.dot(nu),
            nu_nu: nu.dot(nu),
            pe_e: e.dot(&self.prec_u),
            pe_nu: nu.dot(&self.prec_u),
            pnu_nu: self.eps.dot(&self.eps),
        };
        let el = Ellipse {
            pos: [
                self.m_pos.as_slice(),
                self.a_pos.as_slice(),
                self.b_pos.as_slice(),
            ],
            neg: [
                self.m_neg.as_slice(),
                self.a_neg.as_slice(),
                self.b_neg.as_slice(),
            ],
        };
        let g = design.gamma / (2 * design.pairs()) as f64;
        let er = self.ellipse_risk.as_mut().expect("set with the reference");
        let (phi, twice, evals) = reference::slice_move(er, &el, &q, g, self.twice, &mut self.rng);
        let (s, c) = phi.sin_cos();
        self.e.axpy(s, &self.v, c);
        self.a_pos.axpy(s, &self.b_pos, c);
        self.a_neg.axpy(s, &self.b_neg, c);
        self.prec_u.axpy(s, &self.prec_v, c);
        self.twice = twice;
        self.risk = twice as f64 / (2 * design.pairs()) as f64;
        // The radius given the direction is χ_d: w ← ρ w/‖w‖ (R unchanged).
        let w = &r.mean + &self.e;
        let t = chi(&mut self.rng, design.d()) / w.norm();
        self.e = w * t - &r.mean;
        for (a, m) in [
            (&mut self.a_pos, &self.m_pos),
            (&mut self.a_neg, &self.m_neg),
        ] {
            *a += m;
            *a *= t;
            *a -= m;
        }
        self.prec_u += &r.prec_mean;
        self.prec_u *= t;
        self.prec_u -= &r.prec_mean;
        self.u = (&r.mean + &self.e).normalize();
        (phi != 0.0, phi, evals)
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
        if self.reference.is_some() {
            let (accept, phi, evals) = self.step_reference(design);
            self.steps += 1;
            if self.steps.is_multiple_of(REFRESH) {
                self.reread_reference(design);
            }
            self.account(accept, phi, evals, 0);
            self.keep(design, warmup, thin);
            return;
        }
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
        self.account(accept, draw.phi, draw.proposals, draw.envelope_misses);
        self.keep(design, warmup, thin);
    }

    fn account(&mut self, accept: bool, phi: f64, proposals: u32, misses: u32) {
        let w = &mut self.work;
        w.steps += 1;
        w.proposals += u64::from(proposals);
        w.envelope_misses += u64::from(misses);
        if accept {
            w.accepted += 1;
            let phi = phi.rem_euclid(2.0 * std::f64::consts::PI);
            w.jump += phi.min(2.0 * std::f64::consts::PI - phi);
        }
        w.risk += self.risk;
    }

    /// Record u in the window; keep θ when past `warmup` on the thinning grid
    /// (its radius drawn, or w's own around a reference).
    fn keep(&mut self, design: &Design, warmup: usize, thin: usize) {
        let d = design.d();
        if self.recording {
            self.window.extend(self.u.iter());
        }
        if self.steps > warmup && (self.steps - warmup).is_multiple_of(thin) {
            if let Some(r) = &self.reference {
                let w = &r.mean + &self.e;
                self.draws.extend((0..d).map(|k| design.scale[k] * w[k]));
            } else {
                let r = chi(&mut self.rng, d);
                self.draws
                    .extend((0..d).map(|k| design.scale[k] * r * self.u[k]));
            }
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
