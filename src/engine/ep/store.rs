//! Storage of the pair sites: K and h as n+ × n− row-major matrices, three of
//! each so that a sweep can be rolled back (§4's acceptance rule).
//!
//! Buffers rotate through three roles: `prev` (the last accepted state),
//! `cur` (the state whose posterior q is current: it is checked by the next
//! pass) and `next` (written by that pass). A rejected `cur` is shrunk in place
//! towards `prev` ((prev + cur)/2 = the same step with η halved).
//!
//! Sites are stored as f64 or, for very many pairs, f32 (24 instead of 48 bytes
//! per pair; EEG's 55M pairs need 1.3 GB). All arithmetic stays in f64 and the
//! posterior is always rebuilt from the stored (rounded) values, so q is exactly
//! the approximation the stored sites define; f32 rounding perturbs the fixed
//! point by ~1e-7 relative, far inside the 1e-4 convergence tolerance.

use rayon::prelude::*;

use crate::engine::numerics::simd::Simd;

/// A floating-point type sites can be stored in.
pub(crate) trait SiteScalar: Copy + Default + Send + Sync + 'static {
    fn to_f64(self) -> f64;
    fn from_f64(v: f64) -> Self;
    const NAME: &'static str;
    fn vload<V: Simd>(s: &[Self]) -> V;
    fn vstore<V: Simd>(v: V, s: &mut [Self]);
    /// The value the store will hold.
    fn vround<V: Simd>(v: V) -> V;
}

impl SiteScalar for f64 {
    #[inline(always)]
    fn to_f64(self) -> f64 {
        self
    }
    #[inline(always)]
    fn from_f64(v: f64) -> Self {
        v
    }
    const NAME: &'static str = "f64";
    #[inline(always)]
    fn vload<V: Simd>(s: &[Self]) -> V {
        V::load(s)
    }
    #[inline(always)]
    fn vstore<V: Simd>(v: V, s: &mut [Self]) {
        v.store(s)
    }
    #[inline(always)]
    fn vround<V: Simd>(v: V) -> V {
        v
    }
}

impl SiteScalar for f32 {
    #[inline(always)]
    fn to_f64(self) -> f64 {
        self as f64
    }
    #[inline(always)]
    fn from_f64(v: f64) -> Self {
        v as f32
    }
    const NAME: &'static str = "f32";
    #[inline(always)]
    fn vload<V: Simd>(s: &[Self]) -> V {
        V::load_f32(s)
    }
    #[inline(always)]
    fn vstore<V: Simd>(v: V, s: &mut [Self]) {
        v.store_f32(s)
    }
    #[inline(always)]
    fn vround<V: Simd>(v: V) -> V {
        v.round_f32()
    }
}

/// Site storage precision.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Precision {
    /// f64 unless that needs more than `AUTO_F64_BYTES`.
    Auto,
    F64,
    F32,
}

/// Largest site storage kept in f64 by `Precision::Auto` (1 GiB).
pub const AUTO_F64_BYTES: usize = 1 << 30;

impl Precision {
    /// Bytes per pair for all six site matrices.
    pub fn bytes_per_pair(f64_store: bool) -> usize {
        if f64_store { 48 } else { 24 }
    }

    /// Whether `pairs` sites are stored in f64.
    pub fn use_f64(self, pairs: usize) -> bool {
        match self {
            Precision::F64 => true,
            Precision::F32 => false,
            Precision::Auto => pairs.saturating_mul(48) <= AUTO_F64_BYTES,
        }
    }
}

/// Three (K, h) pairs of n+ × n− matrices and their roles.
pub(crate) struct SiteBuffers<S: SiteScalar> {
    pub n_pos: usize,
    pub n_neg: usize,
    k: [Vec<S>; 3],
    h: [Vec<S>; 3],
    pub prev: Option<usize>,
    pub cur: usize,
}

impl<S: SiteScalar> SiteBuffers<S> {
    /// All sites zero (q = prior); fails cleanly when memory is short.
    pub fn zeros(n_pos: usize, n_neg: usize) -> Result<SiteBuffers<S>, String> {
        let m = n_pos
            .checked_mul(n_neg)
            .ok_or_else(|| "too many pairs".to_string())?;
        let alloc = || -> Result<Vec<S>, String> {
            let mut v = Vec::new();
            v.try_reserve_exact(m).map_err(|_| {
                format!(
                    "cannot allocate the EP sites: {m} pairs need {:.2} GB ({} storage)",
                    (m * 6 * std::mem::size_of::<S>()) as f64 / 1e9,
                    S::NAME
                )
            })?;
            v.resize(m, S::default());
            Ok(v)
        };
        Ok(SiteBuffers {
            n_pos,
            n_neg,
            k: [alloc()?, alloc()?, alloc()?],
            h: [alloc()?, alloc()?, alloc()?],
            prev: None,
            cur: 0,
        })
    }

    /// Number of sites (pairs).
    pub fn len(&self) -> usize {
        self.k[0].len()
    }

    /// The buffer the next pass writes into.
    pub fn next(&self) -> usize {
        (0..3)
            .find(|&b| b != self.cur && Some(b) != self.prev)
            .expect("three buffers")
    }

    /// After a pass found `cur` valid: `cur` becomes `prev`, `next` becomes `cur`.
    pub fn rotate(&mut self) {
        let next = self.next();
        self.prev = Some(self.cur);
        self.cur = next;
    }

    /// Back to the rollback point exactly (the current state is dropped; there
    /// is no rollback point afterwards).
    pub fn restore_prev(&mut self) {
        self.cur = self.prev.take().expect("a rollback point");
    }

    /// Forget the rollback point (e.g. after a warm start with new data).
    pub fn forget_prev(&mut self) {
        self.prev = None;
    }

    /// (K, h) of buffer `b`.
    pub fn get(&self, b: usize) -> (&[S], &[S]) {
        (&self.k[b], &self.h[b])
    }

    /// Reads (K, h) of buffer `r` and writes buffer `w` (r ≠ w).
    pub fn read_write(&mut self, r: usize, w: usize) -> (&[S], &[S], &mut [S], &mut [S]) {
        assert_ne!(r, w);
        let (kr, kw) = two(&mut self.k, r, w);
        let (hr, hw) = two(&mut self.h, r, w);
        (kr, hr, kw, hw)
    }

    /// Whether the current state has every site at zero.
    pub fn is_zero(&self) -> bool {
        let z = S::default().to_f64();
        self.k[self.cur].iter().all(|v| v.to_f64() == z)
            && self.h[self.cur].iter().all(|v| v.to_f64() == z)
    }

    /// Resets every site to zero.
    pub fn clear(&mut self) {
        for v in self.k.iter_mut().chain(self.h.iter_mut()) {
            v.fill(S::default());
        }
        self.prev = None;
        self.cur = 0;
    }

    /// (K, h) of the current state, or of the trial the last update pass
    /// wrote (`trial`), as f64 (exact for f32 storage).
    pub fn copy_out(&self, trial: bool) -> (Vec<f64>, Vec<f64>) {
        let b = if trial { self.next() } else { self.cur };
        let f = |v: &[S]| v.iter().map(|x| x.to_f64()).collect();
        (f(&self.k[b]), f(&self.h[b]))
    }

    /// Writes (K, h) into the current state (no rollback point afterwards),
    /// or into the trial (`trial`: the rollback point is kept).
    pub fn copy_in(&mut self, k: &[f64], h: &[f64], trial: bool) {
        let b = if trial { self.next() } else { self.cur };
        self.write(b, k, h);
        if !trial {
            self.prev = None;
        }
    }

    /// Buffer `b` ← (K, h).
    fn write(&mut self, b: usize, k: &[f64], h: &[f64]) {
        for (dst, src) in [(&mut self.k[b], k), (&mut self.h[b], h)] {
            for (d, v) in dst.iter_mut().zip(src) {
                *d = S::from_f64(*v);
            }
        }
    }

    /// Copies the trial (K then h) into `out` and the current state at the
    /// sorted coordinates `at` (that layout) into `x`, and returns ‖trial −
    /// current‖² (summed as `residual2`): Anderson's staged G(x) in one
    /// pass, each chunk's x read while the chunk is at hand.
    pub fn trial_out(&self, out: &mut [f64], at: &[usize], x: &mut [f64]) -> f64 {
        let (m, c, t) = (self.len(), self.cur, self.next());
        let (ok, oh) = out.split_at_mut(m);
        // The sample's part in each chunk, K's chunks then h's.
        let mut sample = Vec::new();
        let (mut at, mut x) = (at, x);
        for base in [0, m] {
            for lo in (0..m).step_by(CHUNK) {
                let hi = base + (lo + CHUNK).min(m);
                let k = at.partition_point(|&i| i < hi);
                let (a, ar) = at.split_at(k);
                let (xa, xr) = std::mem::take(&mut x).split_at_mut(k);
                sample.push((base + lo, a, xa));
                (at, x) = (ar, xr);
            }
        }
        let (sk, sh) = sample.split_at_mut(m.div_ceil(CHUNK));
        let mut r2 = 0.0;
        for (o, vc, vt, s) in [
            (ok, &self.k[c], &self.k[t], sk),
            (oh, &self.h[c], &self.h[t], sh),
        ] {
            let parts: Vec<f64> = o
                .par_chunks_mut(CHUNK)
                .zip(vc.par_chunks(CHUNK).zip(vt.par_chunks(CHUNK)))
                .zip(s.par_iter_mut())
                .map(|((o, (c, t)), (lo, at, x))| {
                    for (d, v) in o.iter_mut().zip(t) {
                        *d = v.to_f64();
                    }
                    for (x, &i) in x.iter_mut().zip(at.iter()) {
                        *x = c[i - *lo].to_f64();
                    }
                    dist2(c, t)
                })
                .collect();
            r2 += parts.iter().sum::<f64>();
        }
        r2
    }

    /// The trial ← Σ w·G over `parts` (newest first, `trial_out`'s layout),
    /// summed in that order at every coordinate (any thread count); false
    /// when a value is not finite.
    pub fn mix_trial(&mut self, parts: &[(&[f64], f64)]) -> bool {
        let (m, t) = (self.len(), self.next());
        let mut finite = true;
        for (dst, off) in [(&mut self.k[t], 0), (&mut self.h[t], m)] {
            finite &= dst
                .par_chunks_mut(CHUNK)
                .enumerate()
                .map(|(ci, d)| {
                    let a = off + ci * CHUNK;
                    let mut buf = [0.0f64; 256];
                    let mut ok = true;
                    for (bi, d) in d.chunks_mut(256).enumerate() {
                        let (lo, b) = (a + bi * 256, &mut buf[..d.len()]);
                        let (g0, w0) = parts[0];
                        for (x, g) in b.iter_mut().zip(&g0[lo..]) {
                            *x = w0 * g;
                        }
                        for &(g, w) in &parts[1..] {
                            for (x, g) in b.iter_mut().zip(&g[lo..]) {
                                *x += w * g;
                            }
                        }
                        for (d, x) in d.iter_mut().zip(b.iter()) {
                            ok &= x.is_finite();
                            *d = S::from_f64(*x);
                        }
                    }
                    ok
                })
                .reduce(|| true, |a, b| a && b);
        }
        finite
    }

    /// Current ← `v` (`trial_out`'s layout), the rollback point kept.
    pub fn set_current(&mut self, v: &[f64]) {
        let (m, c) = (self.len(), self.cur);
        self.write(c, &v[..m], &v[m..]);
    }

    /// ‖trial − current‖² over K and h of every site (the residual of a
    /// damped step, `controller`).
    pub fn residual2(&self) -> f64 {
        self.dist2(self.cur, self.next())
    }

    /// ‖current − rollback point‖² (0 without one).
    pub fn step2(&self) -> f64 {
        self.prev.map_or(0.0, |p| self.dist2(p, self.cur))
    }

    /// ‖b − a‖² over K and h of buffers a and b. Fixed chunks summed in
    /// order: the same for any number of threads.
    fn dist2(&self, c: usize, t: usize) -> f64 {
        let mut out = 0.0;
        for (vc, vt) in [(&self.k[c], &self.k[t]), (&self.h[c], &self.h[t])] {
            let parts: Vec<f64> = vc
                .par_chunks(CHUNK)
                .zip(vt.par_chunks(CHUNK))
                .map(|(c, t)| dist2(c, t))
                .collect();
            out += parts.iter().sum::<f64>();
        }
        out
    }

    /// cur ← prev + f·(cur − prev): the last step scaled by f (needs a
    /// rollback point); returns ‖cur − prev‖² before (summed as `residual2`).
    pub fn scale_cur(&mut self, f: f64) -> f64 {
        let p = self.prev.expect("a rollback point");
        let c = self.cur;
        let (kp, hp, kc, hc) = self.read_write(p, c);
        let mut out = 0.0;
        for (src, dst) in [(kp, kc), (hp, hc)] {
            let parts: Vec<f64> = dst
                .par_chunks_mut(CHUNK)
                .zip(src.par_chunks(CHUNK))
                .map(|(d, s)| {
                    let mut acc = 0.0;
                    for (d, s) in d.iter_mut().zip(s) {
                        let (a, b) = (s.to_f64(), d.to_f64());
                        acc += (b - a) * (b - a);
                        *d = S::from_f64(a + f * (b - a));
                    }
                    acc
                })
                .collect();
            out += parts.iter().sum::<f64>();
        }
        out
    }
}

#[cfg(test)]
impl<S: SiteScalar> SiteBuffers<S> {
    /// Site (K, h) of pair (i, j) in the current state.
    pub fn value(&self, i: usize, j: usize) -> (f64, f64) {
        let idx = i * self.n_neg + j;
        (
            self.k[self.cur][idx].to_f64(),
            self.h[self.cur][idx].to_f64(),
        )
    }
}

/// Shared borrow of `v[r]` and mutable borrow of `v[w]`.
fn two<T>(v: &mut [Vec<T>; 3], r: usize, w: usize) -> (&[T], &mut [T]) {
    if r < w {
        let (a, b) = v.split_at_mut(w);
        (&a[r], &mut b[0])
    } else {
        let (a, b) = v.split_at_mut(r);
        (&b[0], &mut a[w])
    }
}

/// Values per task of the secant's passes.
const CHUNK: usize = 1 << 14;

/// ‖t − c‖² over one chunk, four lanes (vectorised).
fn dist2<S: SiteScalar>(c: &[S], t: &[S]) -> f64 {
    let mut acc = [0.0f64; 4];
    let (c4, t4) = (c.chunks_exact(4), t.chunks_exact(4));
    let (cr, tr) = (c4.remainder(), t4.remainder());
    for (c, t) in c4.zip(t4) {
        for l in 0..4 {
            let d = t[l].to_f64() - c[l].to_f64();
            acc[l] += d * d;
        }
    }
    for (c, t) in cr.iter().zip(tr) {
        let d = t.to_f64() - c.to_f64();
        acc[0] += d * d;
    }
    acc.iter().sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trial_out_reads_the_sample_of_every_chunk() {
        // 3 × CHUNK pairs and a bit: K and h span several chunks each.
        let (n_pos, n_neg) = (7, 3 * CHUNK / 7 + 5);
        let mut s = SiteBuffers::<f64>::zeros(n_pos, n_neg).unwrap();
        let m = s.len();
        let val = |i: usize, b: f64| ((i as f64) * 0.37 + b).sin();
        let (kc, hc): (Vec<f64>, Vec<f64>) = (
            (0..m).map(|i| val(i, 0.0)).collect(),
            (0..m).map(|i| val(m + i, 0.0)).collect(),
        );
        let (kt, ht): (Vec<f64>, Vec<f64>) = (
            (0..m).map(|i| val(i, 1.0)).collect(),
            (0..m).map(|i| val(m + i, 1.0)).collect(),
        );
        s.copy_in(&kc, &hc, false);
        s.copy_in(&kt, &ht, true);
        let at: Vec<usize> = (0..2 * m)
            .filter(|i| i % 997 == 3 || *i == CHUNK || *i == m)
            .collect();
        let (mut out, mut x) = (vec![0.0; 2 * m], vec![f64::NAN; at.len()]);
        let r2 = s.trial_out(&mut out, &at, &mut x);
        assert_eq!(r2, s.residual2());
        let (cur, trial): (Vec<f64>, Vec<f64>) = ([kc, hc].concat(), [kt, ht].concat());
        assert_eq!(out, trial);
        assert!(at.iter().zip(&x).all(|(&i, &v)| v == cur[i]));
    }
}
