//! The element-wise site work of one row of C (ALGORITHMS.md §4): cavity,
//! tilted moments, damped update, log C, in 8 f64 lanes (AVX-512, AVX2 + FMA or
//! portable), with the small-p block products done inside the row task.

use super::super::site::{LaneConsts, StepFactor, pair_lane};
use super::super::store::SiteScalar;
use super::{Isa, Op, RowStats};
use crate::engine::numerics::simd::Simd;

pub(super) struct RowQ<'a> {
    pub(super) mp: f64,
    pub(super) up: f64,
    pub(super) excl: &'a [u32],
}

pub(super) struct Cols<'a> {
    pub(super) mn: &'a [f64],
    pub(super) un: &'a [f64],
}

/// The small-p block products done in the row task: `c = Z_N (V z_i)` before
/// the update, `g = (new K row) Z_N` after it, and (`sums`) the new row added
/// to its group's column sums of K and h while it is in cache.
pub(super) struct Small<'a> {
    pub(super) zv: &'a [f64],
    pub(super) znt: &'a [f64],
    pub(super) g: Option<&'a mut [f64]>,
    pub(super) sums: Option<(&'a mut [f64], &'a mut [f64])>,
}

pub(super) struct RowOut<'a, S> {
    pub(super) k: &'a mut [S],
    pub(super) h: &'a mut [S],
    pub(super) k64: &'a mut [f64],
    pub(super) h64: &'a mut [f64],
}

#[allow(clippy::too_many_arguments)]
pub(super) fn update_row<S: SiteScalar>(
    isa: Isa,
    evidence: bool,
    q: &RowQ<'_>,
    cols: &Cols<'_>,
    c: &mut [f64],
    kin: &[S],
    hin: &[S],
    out: Option<RowOut<'_, S>>,
    small: Option<Small<'_>>,
    step: StepFactor,
    eta: f64,
) -> RowStats {
    simd_dispatch!(isa, evidence, update_row_small::<S>(
        q: &RowQ<'_>,
        cols: &Cols<'_>,
        c: &mut [f64],
        kin: &[S],
        hin: &[S],
        out: Option<RowOut<'_, S>>,
        small: Option<Small<'_>>,
        step: StepFactor,
        eta: f64,
    ) -> RowStats)
}

/// One row's share of the pass `op`: `c` its block products (Update,
/// Check), `out` the written sites (Update, Shrink, Relax), `k64`, `h64`
/// the f64 copies of the sites the aggregates are summed from.
#[allow(clippy::too_many_arguments)]
pub(super) fn run<S: SiteScalar>(
    op: Op,
    isa: Isa,
    step: StepFactor,
    q: &RowQ<'_>,
    cols: &Cols<'_>,
    c: &mut [f64],
    kin: &[S],
    hin: &[S],
    out: Option<(&mut [S], &mut [S])>,
    k64: &mut [f64],
    h64: &mut [f64],
    small: Option<Small<'_>>,
) -> RowStats {
    match op {
        Op::Update { .. } | Op::Check => {
            let (evidence, eta) = op.site_work();
            let out = out.map(|(k, h)| RowOut { k, h, k64, h64 });
            update_row(isa, evidence, q, cols, c, kin, hin, out, small, step, eta)
        }
        Op::Shrink | Op::Relax(_) => {
            let (k, h) = out.expect("Shrink writes sites");
            shrink_row(kin, hin, k, h, k64, h64, op.factor())
        }
        Op::Aggregate => load_row(kin, hin, k64, h64),
    }
}

/// The row with its small-p products, if any (see [`Small`]).
#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn update_row_small<V: Simd, S: SiteScalar, const EV: bool>(
    q: &RowQ<'_>,
    cols: &Cols<'_>,
    c: &mut [f64],
    kin: &[S],
    hin: &[S],
    mut out: Option<RowOut<'_, S>>,
    small: Option<Small<'_>>,
    step: StepFactor,
    eta: f64,
) -> RowStats {
    let nn = c.len();
    if let Some(sm) = &small {
        // c_j = Σ_k (Z_P V)_ik (Z_N)_jk, k in order (each lane and the tail alike).
        let mut j = 0;
        while j + V::W <= nn {
            let mut acc = V::splat(0.0);
            for (k, &a) in sm.zv.iter().enumerate() {
                acc = V::splat(a).fma(V::load(&sm.znt[k * nn + j..]), acc);
            }
            acc.store(&mut c[j..]);
            j += V::W;
        }
        for (jj, cj) in c.iter_mut().enumerate().skip(j) {
            let mut acc = V::splat(0.0);
            for (k, &a) in sm.zv.iter().enumerate() {
                acc = V::splat(a).fma(V::splat(sm.znt[k * nn + jj]), acc);
            }
            let mut t = [0.0; 16];
            acc.to_array(&mut t);
            *cj = t[0];
        }
    }
    let stats = update_row_impl::<V, S, EV>(
        q,
        cols,
        c,
        kin,
        hin,
        out.as_mut().map(|o| RowOut {
            k: &mut *o.k,
            h: &mut *o.h,
            k64: &mut *o.k64,
            h64: &mut *o.h64,
        }),
        step,
        eta,
    );
    let (znt, g, sums) = small.map_or((&[][..], None, None), |sm| (sm.znt, sm.g, sm.sums));
    if let (Some((kc, hc)), Some(o)) = (sums, out.as_ref()) {
        add_row::<V>(kc, o.k64);
        add_row::<V>(hc, o.h64);
    }
    if let (Some(g), Some(o)) = (g, out.as_ref()) {
        // g_k = Σ_j K_ij (Z_N)_jk: lane partial sums, then lanes and tail in order.
        for (k, gk) in g.iter_mut().enumerate() {
            let row = &znt[k * nn..(k + 1) * nn];
            let mut acc = V::splat(0.0);
            let mut j = 0;
            while j + V::W <= nn {
                acc = V::load(&o.k64[j..]).fma(V::load(&row[j..]), acc);
                j += V::W;
            }
            let mut t = [0.0; 16];
            acc.to_array(&mut t);
            let mut sum: f64 = t[..V::W].iter().sum();
            for (kv, zv) in o.k64[j..].iter().zip(&row[j..]) {
                sum += kv * zv;
            }
            *gk = sum;
        }
    }
    stats
}

/// `acc += v` (a function, not a closure: a closure is not inlined into the
/// `target_feature` callers, and its vector intrinsics became calls — 20% of
/// a pass).
#[inline(always)]
fn add_row<V: Simd>(acc: &mut [f64], v: &[f64]) {
    let n = v.len();
    let mut j = 0;
    while j + V::W <= n {
        (V::load(&acc[j..]) + V::load(&v[j..])).store(&mut acc[j..]);
        j += V::W;
    }
    for (a, x) in acc[j..n].iter_mut().zip(&v[j..n]) {
        *a += x;
    }
}

/// Lane-wise partial sums (fixed lane order: vectorised and deterministic).
#[derive(Clone, Copy)]
struct Acc<V> {
    k: V,
    h: V,
    log_c: V,
    negative: V,
    skipped: V,
    bad: V,
}

impl<V: Simd> Acc<V> {
    #[inline(always)]
    fn zero() -> Self {
        let z = V::splat(0.0);
        Acc {
            k: z,
            h: z,
            log_c: z,
            negative: z,
            skipped: z,
            bad: z,
        }
    }

    #[inline(always)]
    fn total(&self) -> RowStats {
        let s = |v: V| {
            let mut a = [0.0; 16];
            v.to_array(&mut a);
            a[..V::W].iter().sum::<f64>()
        };
        RowStats {
            k: s(self.k),
            h: s(self.h),
            log_c: s(self.log_c),
            negative: s(self.negative),
            skipped: s(self.skipped),
            bad: s(self.bad),
        }
    }
}

/// One row: vectors of `V::W` sites; a short tail goes through the same vector
/// code on a padded copy (a scalar tail cost as much as the rest of a short row).
#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn update_row_impl<V: Simd, S: SiteScalar, const EV: bool>(
    q: &RowQ<'_>,
    cols: &Cols<'_>,
    c: &mut [f64],
    kin: &[S],
    hin: &[S],
    mut out: Option<RowOut<'_, S>>,
    step: StepFactor,
    eta: f64,
) -> RowStats {
    let n = c.len();
    let cv = LaneConsts::<V>::new(step, eta);
    let mut acc = Acc::<V>::zero();
    let mut start = 0;
    for e in q.excl.iter().map(|&e| e as usize).chain(std::iter::once(n)) {
        // Sites start..e, then the non-site e (a = 0: its K, h stay 0).
        let mut j = start;
        while j + V::W <= e {
            lanes::<V, S, EV, false>(q, cols, &*c, kin, hin, out.as_mut(), &cv, j, V::W, &mut acc);
            j += V::W;
        }
        if j < e {
            tail::<V, S, EV>(
                q,
                cols,
                &*c,
                kin,
                hin,
                out.as_mut(),
                &cv,
                j,
                e - j,
                &mut acc,
            );
        }
        if e < n
            && let Some(o) = out.as_mut()
        {
            o.k[e] = S::default();
            o.h[e] = S::default();
            o.k64[e] = 0.0;
            o.h64[e] = 0.0;
        }
        start = e + 1;
    }
    acc.total()
}

/// The last `r < V::W` sites from column `j`, padded with a harmless site.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn tail<V: Simd, S: SiteScalar, const EV: bool>(
    q: &RowQ<'_>,
    cols: &Cols<'_>,
    c: &[f64],
    kin: &[S],
    hin: &[S],
    out: Option<&mut RowOut<'_, S>>,
    cs: &LaneConsts<V>,
    j: usize,
    r: usize,
    acc: &mut Acc<V>,
) {
    const P: usize = 16;
    let (mut c_p, mut mn_p, mut un_p) = ([0.0; P], [0.0; P], [1.0; P]);
    let (mut k_p, mut h_p) = ([S::default(); P], [S::default(); P]);
    c_p[..r].copy_from_slice(&c[j..j + r]);
    mn_p[..r].copy_from_slice(&cols.mn[j..j + r]);
    un_p[..r].copy_from_slice(&cols.un[j..j + r]);
    k_p[..r].copy_from_slice(&kin[j..j + r]);
    h_p[..r].copy_from_slice(&hin[j..j + r]);
    let padded = Cols {
        mn: &mn_p,
        un: &un_p,
    };
    match out {
        Some(o) => {
            let (mut ko, mut ho, mut k64, mut h64) =
                ([S::default(); P], [S::default(); P], [0.0; P], [0.0; P]);
            let mut po = RowOut {
                k: &mut ko,
                h: &mut ho,
                k64: &mut k64,
                h64: &mut h64,
            };
            lanes::<V, S, EV, true>(q, &padded, &c_p, &k_p, &h_p, Some(&mut po), cs, 0, r, acc);
            o.k[j..j + r].copy_from_slice(&ko[..r]);
            o.h[j..j + r].copy_from_slice(&ho[..r]);
            o.k64[j..j + r].copy_from_slice(&k64[..r]);
            o.h64[j..j + r].copy_from_slice(&h64[..r]);
        }
        None => lanes::<V, S, EV, true>(q, &padded, &c_p, &k_p, &h_p, None, cs, 0, r, acc),
    }
}

const IOTA: [f64; 16] = [
    0., 1., 2., 3., 4., 5., 6., 7., 8., 9., 10., 11., 12., 13., 14., 15.,
];

/// `V::W` consecutive sites from column `j`.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn lanes<V: Simd, S: SiteScalar, const EV: bool, const PARTIAL: bool>(
    q: &RowQ<'_>,
    cols: &Cols<'_>,
    c: &[f64],
    kin: &[S],
    hin: &[S],
    out: Option<&mut RowOut<'_, S>>,
    cs: &LaneConsts<V>,
    j: usize,
    valid: usize,
    acc: &mut Acc<V>,
) {
    let cij = V::load(&c[j..]);
    let u_sum = V::splat(q.up) + V::load(&cols.un[j..]);
    let mu = V::splat(q.mp) - V::load(&cols.mn[j..]);
    let k = S::vload::<V>(&kin[j..]);
    let h = S::vload::<V>(&hin[j..]);
    let o = pair_lane::<V, EV>(mu, u_sum - (cij + cij), u_sum, k, h, cs);
    // The sums describe the stored (possibly rounded) sites.
    let (kq, hq) = (S::vround(o.k), S::vround(o.h));
    let (one, zero) = (V::splat(1.0), V::splat(0.0));
    let neg = V::mand(k.lt(zero), V::mnot(o.degenerate));
    if PARTIAL {
        // Only the first `valid` lanes count (a padded tail).
        let live = V::load(&IOTA).lt(V::splat(valid as f64));
        let keep = |v: V| V::select(live, v, zero);
        acc.k = acc.k + keep(kq);
        acc.h = acc.h + keep(hq);
        acc.log_c = acc.log_c + keep(o.log_c);
        acc.negative = acc.negative + V::select(V::mand(live, neg), one, zero);
        acc.skipped = acc.skipped + V::select(V::mand(live, o.degenerate), one, zero);
        acc.bad = acc.bad + V::select(V::mand(live, o.bad), one, zero);
    } else {
        acc.k = acc.k + kq;
        acc.h = acc.h + hq;
        acc.log_c = acc.log_c + o.log_c;
        acc.negative = acc.negative + V::select(neg, one, zero);
        acc.skipped = acc.skipped + V::select(o.degenerate, one, zero);
        acc.bad = acc.bad + V::select(o.bad, one, zero);
    }
    if let Some(o) = out {
        S::vstore(kq, &mut o.k[j..]);
        S::vstore(hq, &mut o.h[j..]);
        kq.store(&mut o.k64[j..]);
        hq.store(&mut o.h64[j..]);
    }
}

/// `cur ← prev + f·(cur − prev)`: f = ½ is the rejected step again with η
/// halved (computed as (prev + cur)/2), f > 1 the step over-relaxed.
fn shrink_row<S: SiteScalar>(
    kp: &[S],
    hp: &[S],
    kc: &mut [S],
    hc: &mut [S],
    k64: &mut [f64],
    h64: &mut [f64],
    f: f64,
) -> RowStats {
    let mut st = RowStats::default();
    let mix = |p: S, c: S| {
        let (p, c) = (p.to_f64(), c.to_f64());
        if f == 0.5 {
            0.5 * (p + c)
        } else {
            p + f * (c - p)
        }
    };
    for j in 0..kc.len() {
        let k = S::from_f64(mix(kp[j], kc[j]));
        let h = S::from_f64(mix(hp[j], hc[j]));
        kc[j] = k;
        hc[j] = h;
        k64[j] = k.to_f64();
        h64[j] = h.to_f64();
        st.k += k64[j];
        st.h += h64[j];
    }
    st
}

fn load_row<S: SiteScalar>(kc: &[S], hc: &[S], k64: &mut [f64], h64: &mut [f64]) -> RowStats {
    let mut st = RowStats::default();
    for j in 0..kc.len() {
        k64[j] = kc[j].to_f64();
        h64[j] = hc[j].to_f64();
        st.k += k64[j];
        st.h += h64[j];
    }
    st
}

/// Nanoseconds per site update of the element-wise kernel alone (one thread,
/// rows of 1024 synthetic sites in cache, best of `reps`): the benchmark's
/// measure of the site work without GEMMs or threading.
pub fn site_throughput(isa: Isa, evidence: bool, reps: usize) -> f64 {
    const N: usize = 1024;
    let mut r = crate::engine::numerics::rng::stream(7, &[]);
    let mut nrm = || crate::engine::numerics::rng::normal(&mut r);
    let mut c: Vec<f64> = (0..N).map(|_| 0.3 * nrm()).collect();
    let mn: Vec<f64> = (0..N).map(|_| nrm()).collect();
    let un: Vec<f64> = (0..N).map(|_| 1.0 + 0.1 * nrm().abs()).collect();
    let kin: Vec<f64> = (0..N).map(|_| 0.01 * nrm()).collect();
    let hin: Vec<f64> = (0..N).map(|_| 0.01 * nrm()).collect();
    let (mut ko, mut ho, mut k64, mut h64) =
        (vec![0.0; N], vec![0.0; N], vec![0.0; N], vec![0.0; N]);
    let q = RowQ {
        mp: 0.5,
        up: 1.2,
        excl: &[],
    };
    let cols = Cols { mn: &mn, un: &un };
    let step = StepFactor::new(1e-3);
    let mut best = f64::INFINITY;
    let mut sink = 0.0;
    for _ in 0..reps {
        let t = std::time::Instant::now();
        for _ in 0..64 {
            let out = RowOut {
                k: &mut ko,
                h: &mut ho,
                k64: &mut k64,
                h64: &mut h64,
            };
            sink += update_row(
                isa,
                evidence,
                &q,
                &cols,
                &mut c,
                &kin,
                &hin,
                Some(out),
                None,
                step,
                0.7,
            )
            .k;
        }
        best = best.min(t.elapsed().as_secs_f64());
    }
    std::hint::black_box(sink);
    best * 1e9 / (64 * N) as f64
}
