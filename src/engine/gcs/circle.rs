//! One exact draw on a great circle (ALGORITHMS.md §10). On the circle
//! `u(φ) = cos φ·u + sin φ·v` the scores are `s(φ) = A cos φ + B sin φ`
//! (`A = Xu`, `B = Xv`), and a positive/negative pair with differences
//! `(dA, dB)` is discordant on an open half-circle: its status flips once in
//! (0, π), at `β = π/2 + atan(dB/dA)`, and `R(φ + π) = 1 − R(φ)` up to pairs that
//! are tied everywhere (identical rows in the plane; they count ½ as in
//! `metrics::auc`). The density `∝ exp(−γ R(φ))` is piecewise constant.
//!
//! Two exact samplers:
//! - [`sample_sorted`]: every breakpoint materialised and sorted, a sweep gives
//!   the arcs, an arc is drawn ∝ length·exp(−γR), φ uniform in it. O(M log M)
//!   time and O(M) memory: the reference, and the sampler for small M.
//! - [`CircleSampler`]: one counting pass over the M pairs puts each breakpoint
//!   in one of K buckets (a cheap monotone pseudo-angle, no atan, nothing of size
//!   M stored); prefix sums give R's range on every bucket, hence an envelope
//!   `exp(−γ R_lo)` that is exact on buckets without breakpoints. Rejection
//!   sampling from the envelope, with the risk at a proposed φ computed exactly
//!   from the scores (`fast_risk`, O(n) expected), draws exactly from the same
//!   density. O(M + K + trials·n) time, O(K + n) memory.
//!
//! Risks are kept as integers `2·discordant + ties` ("twice"), R = twice / 2M.

use std::f64::consts::PI;

use rand::RngExt;

use crate::engine::numerics::fast_risk::RiskScratch;
use crate::engine::numerics::rng::Rng;

use super::pair_codes;

/// Buckets whose envelope is below `e^{-DROP}` of the largest are left out: their
/// total share of the mass is below 1e-20, far under the rounding of the draw.
const DROP: f64 = 60.0;

/// Largest table of envelope weights; beyond it (tiny γ/M) they are computed.
const MAX_DECAY: usize = 1 << 22;

/// `exp(−g i)` for i up to the drop level, or an empty table when that is too long.
fn decay_table(g: f64) -> Vec<f64> {
    let len = if g > 0.0 {
        (DROP / g).ceil()
    } else {
        f64::INFINITY
    };
    if len >= MAX_DECAY as f64 {
        return Vec::new();
    }
    (0..len as usize).map(|i| (-g * i as f64).exp()).collect()
}

/// Scores of the two classes at φ = 0 (`a`) and φ = π/2 (`b`).
#[derive(Debug, Clone, Copy)]
pub struct Circle<'a> {
    pub pos_a: &'a [f64],
    pub pos_b: &'a [f64],
    pub neg_a: &'a [f64],
    pub neg_b: &'a [f64],
}

impl Circle<'_> {
    pub fn pairs(&self) -> u64 {
        (self.pos_a.len() * self.neg_a.len()) as u64
    }
}

/// The outcome of one draw.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Draw {
    /// The new angle, in [0, 2π).
    pub phi: f64,
    /// `2·discordant + ties` at φ (R = twice / 2M).
    pub twice: u64,
    /// Proposals made (1 for the sorted sampler).
    pub proposals: u32,
    /// Times the envelope was found below the density (rounding at a bucket
    /// edge; the acceptance was clamped to 1). Should stay 0.
    pub envelope_misses: u32,
}

/// The angle of a pair's flip in (0, π), from `dA ≠ 0`.
fn flip_angle(da: f64, db: f64) -> f64 {
    PI / 2.0 + (db / da).atan()
}

/// The piecewise-constant risk on [0, 2π): arc starts and their "twice" risks.
#[derive(Debug, Clone, PartialEq)]
pub struct Profile {
    pub starts: Vec<f64>,
    pub twice: Vec<u64>,
    pub pairs: u64,
}

impl Profile {
    /// Every pair's breakpoint, sorted, and the sweep (O(M log M)).
    pub fn of(c: &Circle) -> Profile {
        let m = c.pairs();
        let mut flips: Vec<(f64, i64)> = Vec::new();
        let (mut d0, mut tied) = (0u64, 0u64);
        for (&pa, &pb) in c.pos_a.iter().zip(c.pos_b) {
            for (&na, &nb) in c.neg_a.iter().zip(c.neg_b) {
                let (da, db) = (pa - na, pb - nb);
                if da == 0.0 {
                    if db == 0.0 {
                        tied += 1;
                    } else if db < 0.0 {
                        d0 += 1;
                    }
                    continue;
                }
                if da < 0.0 {
                    d0 += 1;
                }
                flips.push((flip_angle(da, db), if da > 0.0 { 1 } else { -1 }));
            }
        }
        flips.sort_unstable_by(|x, y| x.0.total_cmp(&y.0));
        let mut starts = vec![0.0];
        let mut disc = vec![d0 as i64];
        for &(beta, delta) in &flips {
            let last = *disc.last().unwrap();
            if beta > *starts.last().unwrap() {
                starts.push(beta);
                disc.push(last + delta);
            } else {
                *disc.last_mut().unwrap() += delta;
            }
        }
        let half = starts.len();
        let live = (m - tied) as i64;
        let mut twice: Vec<u64> = disc.iter().map(|&d| 2 * d as u64 + tied).collect();
        for i in 0..half {
            starts.push(starts[i] + PI);
            twice.push(2 * (live - disc[i]) as u64 + tied);
        }
        Profile {
            starts,
            twice,
            pairs: m,
        }
    }

    /// The twice-risk at φ ∈ [0, 2π) (off the breakpoints).
    pub fn twice_at(&self, phi: f64) -> u64 {
        let i = self.starts.partition_point(|&s| s <= phi);
        self.twice[i.max(1) - 1]
    }

    fn end(&self, i: usize) -> f64 {
        self.starts.get(i + 1).copied().unwrap_or(2.0 * PI)
    }

    /// log ∫₀^{2π} exp(−γ R(φ)) dφ.
    pub fn log_integral(&self, gamma: f64) -> f64 {
        let g = gamma / (2 * self.pairs) as f64;
        let lo = *self.twice.iter().min().unwrap() as f64;
        let s: f64 = (0..self.starts.len())
            .map(|i| (self.end(i) - self.starts[i]) * (-g * (self.twice[i] as f64 - lo)).exp())
            .sum();
        s.ln() - g * lo
    }
}

/// The exact draw from the materialised profile.
pub fn sample_sorted(c: &Circle, gamma: f64, rng: &mut Rng) -> Draw {
    let p = Profile::of(c);
    let g = gamma / (2 * p.pairs) as f64;
    let lo = *p.twice.iter().min().unwrap() as f64;
    let w: Vec<f64> = (0..p.starts.len())
        .map(|i| (p.end(i) - p.starts[i]) * (-g * (p.twice[i] as f64 - lo)).exp())
        .collect();
    let i = pick(&w, rng);
    let u: f64 = rng.random();
    Draw {
        phi: p.starts[i] + u * (p.end(i) - p.starts[i]),
        twice: p.twice[i],
        proposals: 1,
        envelope_misses: 0,
    }
}

/// Index drawn ∝ `w` (not all zero).
fn pick(w: &[f64], rng: &mut Rng) -> usize {
    let total: f64 = w.iter().sum();
    let mut t = rng.random::<f64>() * total;
    for (i, &x) in w.iter().enumerate() {
        if t < x {
            return i;
        }
        t -= x;
    }
    w.iter().rposition(|&x| x > 0.0).unwrap_or(0)
}

/// The counting-pass sampler with its reusable buffers (one per chain).
#[derive(Debug, Clone)]
pub struct CircleSampler {
    k: usize,
    /// Bucket edges in angle: `edge[b]..edge[b + 1]`, b < K, covering [0, π].
    edge: Vec<f64>,
    /// Per bucket: flips from concordant (`2b`) and from discordant (`2b + 1`);
    /// then `dA = 0` pairs concordant (2K) or discordant (2K + 1) on (0, π), tied (2K + 2).
    hist: Vec<u32>,
    codes: Vec<u32>,
    /// Envelope over the 2K half-circle buckets: lower bound of twice-risk,
    /// whether it is exact, and the cumulative weights.
    lo: Vec<u64>,
    exact: Vec<bool>,
    cum: Vec<f64>,
    risk: RiskScratch,
    pos_s: Vec<f64>,
    neg_s: Vec<f64>,
    /// `exp(−γ i / 2M)` for the twice-risk excesses i below the drop level
    /// (γ and M are fixed for a chain; the envelope needs thousands per step).
    decay: Vec<f64>,
}

impl CircleSampler {
    /// Buffers for `n_pos` × `n_neg` pairs and γ: K ≈ max(M/8, 4γ) buckets (a
    /// power of two in [64, 2^18]), so a bucket holds few breakpoints and its
    /// envelope is within a factor ~e^{1/4} of the density.
    pub fn new(n_pos: usize, n_neg: usize, gamma: f64) -> CircleSampler {
        let m = (n_pos * n_neg) as f64;
        let want = (m / 8.0).max(4.0 * gamma).clamp(64.0, (1u64 << 18) as f64);
        let k = (want as usize).next_power_of_two().min(1 << 18);
        let edge = (0..=k)
            .map(|b| {
                let p = -1.0 + 2.0 * b as f64 / k as f64;
                if p <= -1.0 {
                    0.0
                } else if p >= 1.0 {
                    PI
                } else {
                    PI / 2.0 + (p / (1.0 - p.abs())).atan()
                }
            })
            .collect();
        CircleSampler {
            k,
            edge,
            hist: vec![0; 2 * k + 3],
            codes: vec![0; n_neg],
            lo: vec![0; 2 * k],
            exact: vec![false; 2 * k],
            cum: vec![0.0; 2 * k],
            risk: RiskScratch::new(n_pos, n_neg),
            pos_s: vec![0.0; n_pos],
            neg_s: vec![0.0; n_neg],
            decay: decay_table(gamma / (2.0 * m)),
        }
    }

    pub fn buckets(&self) -> usize {
        self.k
    }

    /// The counting pass: bucket of every pair's breakpoint by the pseudo-angle
    /// `p = sign(dA)·dB/(|dA| + |dB|)`, monotone in β (one division per pair;
    /// `pair_codes`, vectorised where the CPU allows), then a histogram.
    fn count(&mut self, c: &Circle) {
        self.hist.fill(0);
        for (&pa, &pb) in c.pos_a.iter().zip(c.pos_b) {
            pair_codes::fill(pa, pb, c.neg_a, c.neg_b, self.k, &mut self.codes);
            for &code in &self.codes {
                self.hist[code as usize] += 1;
            }
        }
    }

    /// One exact draw of φ ∝ exp(−γ R(φ)) on the circle.
    pub fn sample(&mut self, c: &Circle, gamma: f64, rng: &mut Rng) -> Draw {
        let k = self.k;
        let m = c.pairs();
        self.count(c);
        let tied = u64::from(self.hist[2 * k + 2]);
        let live = m - tied;
        let downs: u64 = (0..k).map(|b| u64::from(self.hist[2 * b + 1])).sum();
        let mut disc = downs + u64::from(self.hist[2 * k + 1]);
        // Lower bounds (and exactness) of the twice-risk on each bucket and its mirror.
        for b in 0..k {
            let (up, down) = (u64::from(self.hist[2 * b]), u64::from(self.hist[2 * b + 1]));
            let empty = up + down == 0;
            self.lo[b] = 2 * (disc - down) + tied;
            self.lo[b + k] = 2 * (live - disc - up) + tied;
            self.exact[b] = empty;
            self.exact[b + k] = empty;
            disc = disc + up - down;
        }
        let g = gamma / (2 * m) as f64;
        let lo_min = *self.lo.iter().min().unwrap() as f64;
        let mut total = 0.0;
        for h in 0..2 * k {
            let excess = self.lo[h] - lo_min as u64;
            let w = match self.decay.get(excess as usize) {
                Some(&w) => w,
                None if !self.decay.is_empty() => 0.0, // below the drop level
                None => {
                    let e = g * excess as f64;
                    if e < DROP { (-e).exp() } else { 0.0 }
                }
            };
            let b = h % k;
            total += (self.edge[b + 1] - self.edge[b]) * w;
            self.cum[h] = total;
        }
        let mut draw = Draw {
            phi: 0.0,
            twice: 0,
            proposals: 0,
            envelope_misses: 0,
        };
        loop {
            draw.proposals += 1;
            let t = rng.random::<f64>() * total;
            let h = self.cum.partition_point(|&x| x <= t).min(2 * k - 1);
            let b = h % k;
            let u: f64 = rng.random();
            let mut phi = self.edge[b] + u * (self.edge[b + 1] - self.edge[b]);
            if h >= k {
                phi += PI;
            }
            if self.exact[h] {
                draw.phi = phi;
                draw.twice = self.lo[h];
                return draw;
            }
            let twice = self.twice_at(c, phi);
            let excess = twice as f64 - self.lo[h] as f64;
            if excess < 0.0 {
                draw.envelope_misses += 1;
            }
            if excess <= 0.0 || rng.random::<f64>() < (-g * excess).exp() {
                draw.phi = phi;
                draw.twice = twice;
                return draw;
            }
        }
    }

    /// The exact twice-risk at φ from the scores (ties ½).
    pub fn twice_at(&mut self, c: &Circle, phi: f64) -> u64 {
        let (sn, cs) = phi.sin_cos();
        for ((s, &a), &b) in self.pos_s.iter_mut().zip(c.pos_a).zip(c.pos_b) {
            *s = a * cs + b * sn;
        }
        for ((s, &a), &b) in self.neg_s.iter_mut().zip(c.neg_a).zip(c.neg_b) {
            *s = a * cs + b * sn;
        }
        2 * c.pairs() - self.risk.twice_concordant(&self.pos_s, &self.neg_s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::mcmc_diag::ks_distance;
    use crate::engine::numerics::rng::{normal, stream};

    /// Scores of a random 2-D problem with some exact ties among the rows.
    fn scores(np: usize, nn: usize, seed: u64) -> [Vec<f64>; 4] {
        let mut r = stream(seed, &[]);
        let mut g = |n: usize, shift: f64| -> Vec<f64> {
            (0..n)
                .map(|_| ((normal(&mut r) + shift) * 4.0).round() / 4.0)
                .collect()
        };
        [g(np, 0.8), g(np, 0.0), g(nn, 0.0), g(nn, 0.3)]
    }

    fn circle(s: &[Vec<f64>; 4]) -> Circle<'_> {
        Circle {
            pos_a: &s[0],
            pos_b: &s[1],
            neg_a: &s[2],
            neg_b: &s[3],
        }
    }

    fn brute_twice(c: &Circle, phi: f64) -> u64 {
        let (sn, cs) = phi.sin_cos();
        let mut t = 0;
        for (&pa, &pb) in c.pos_a.iter().zip(c.pos_b) {
            for (&na, &nb) in c.neg_a.iter().zip(c.neg_b) {
                let (sp, sq) = (pa * cs + pb * sn, na * cs + nb * sn);
                t += if sp < sq { 2 } else { u64::from(sp == sq) };
            }
        }
        t
    }

    #[test]
    fn profile_equals_brute_force_risk() {
        let s = scores(13, 17, 1);
        let c = circle(&s);
        let p = Profile::of(&c);
        let mut r = stream(2, &[]);
        for _ in 0..500 {
            let phi = r.random::<f64>() * 2.0 * PI;
            assert_eq!(p.twice_at(phi), brute_twice(&c, phi), "φ = {phi}");
        }
        // The mirror: R(φ + π) = 1 − R(φ) apart from the always-tied pairs.
        let mut sampler = CircleSampler::new(13, 17, 1.0);
        for _ in 0..200 {
            let phi = r.random::<f64>() * 2.0 * PI;
            assert_eq!(sampler.twice_at(&c, phi), brute_twice(&c, phi));
        }
    }

    /// The CDF of φ under the exact profile.
    fn cdf(p: &Profile, gamma: f64, phi: f64) -> f64 {
        let g = gamma / (2 * p.pairs) as f64;
        let lo = *p.twice.iter().min().unwrap() as f64;
        let (mut below, mut total) = (0.0, 0.0);
        for i in 0..p.starts.len() {
            let (a, b) = (p.starts[i], p.end(i));
            let w = (-g * (p.twice[i] as f64 - lo)).exp();
            total += (b - a) * w;
            below += (phi.min(b) - a).max(0.0) * w;
        }
        below / total
    }

    /// Both samplers against the exact CDF; 4000 draws: the 1% critical value
    /// of the KS distance is 1.63/√4000 = 0.026. The bucket sampler is also run
    /// with a γ large enough that most proposals are rejected.
    #[test]
    fn both_samplers_draw_the_exact_density() {
        let s = scores(20, 30, 3);
        let c = circle(&s);
        let p = Profile::of(&c);
        for gamma in [0.0, 30.0, 600.0] {
            let mut r = stream(4, &[gamma as u64]);
            let mut cs = CircleSampler::new(20, 30, gamma);
            let (mut a, mut b) = (Vec::new(), Vec::new());
            for _ in 0..4000 {
                let d = sample_sorted(&c, gamma, &mut r);
                assert_eq!(d.twice, p.twice_at(d.phi));
                a.push(d.phi);
                let d = cs.sample(&c, gamma, &mut r);
                assert_eq!(d.twice, p.twice_at(d.phi));
                assert_eq!(d.envelope_misses, 0);
                b.push(d.phi);
            }
            let f = |x| cdf(&p, gamma, x);
            let (ka, kb) = (ks_distance(a, &f), ks_distance(b, &f));
            assert!(ka < 0.026 && kb < 0.026, "γ = {gamma}: KS {ka} {kb}");
            // A deliberately wrong density (γ 30% higher) is rejected.
            if gamma > 0.0 {
                let mut r = stream(5, &[]);
                let b: Vec<f64> = (0..4000)
                    .map(|_| cs.sample(&c, gamma, &mut r).phi)
                    .collect();
                let wrong = ks_distance(b, &|x| cdf(&p, 1.3 * gamma, x));
                assert!(
                    wrong > 0.026,
                    "γ = {gamma}: wrong density not rejected ({wrong})"
                );
            }
        }
    }
}
