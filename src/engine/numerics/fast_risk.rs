//! The AUC risk of one score vector as fast as we can make it: the hot path of
//! SMC (tens of thousands of evaluations per run).
//!
//! Scores arrive split by class (positives first, as the SMC target orders the
//! rows). We count `2·#{s_p > s_n} + #{s_p = s_n}` exactly, without sorting:
//! 1. a vectorised pass (AVX-512/AVX2 when present) maps every score to one of
//!    B ≈ 4·n− equal-width buckets over [min, max] (or over the bulk, from a
//!    sample, when a few outliers dominate the range); the map is monotone, so
//!    bucket order never contradicts score order;
//! 2. a counting sort places the negatives by bucket (counts, a vectorised
//!    prefix sum, one scatter);
//! 3. each positive is credited with the negatives of lower buckets (one
//!    lookup) and compared exactly with the few in its own bucket (branch-free
//!    for ≤ 2; a crowded bucket is sorted once and bisected).
//!
//! Linear time on smooth score distributions, O(n log n) at worst; exact, with
//! ties counting ½ as in `metrics::auc` (equal scores always share a bucket).
//!
//! When the positives are fewer (a rare class: 6% of a survey file), steps
//! 2–3 swap the classes' roles on negated scores (`p > n ⇔ −n > −p`; bucket
//! k becomes B − 1 − k, keys are complemented): the buckets number 4·n+, and
//! the tables cleared and summed per evaluation shrink with them (a survey
//! look-alike, n+ = 198 of 3 300: 16× fewer buckets).
//!
//! Large inputs (≥ `BLOCKED_MIN_ROWS` rows) are counted partition by
//! partition: 4·n− buckets' tables leave the caches at a few hundred thousand
//! rows, and every step above becomes a cache miss per row (65 ns per row at
//! 7.5·10⁶ rows against 5 ns at 7.5·10³). The rows are first scattered, in
//! bucket order, into partitions of `PARTITION_BUCKETS` consecutive buckets
//! (one streaming pass); each partition is then counted as above with tables
//! that stay in L2, its positives also credited with every negative of the
//! partitions below.
//! Scores may be f64 or f32 (`Score`); either is ranked by its exact value.

/// Buckets per negative score.
const BUCKETS_PER_NEGATIVE: usize = 4;
/// Rows from which the count is cache-blocked (partitions of buckets).
pub(super) const BLOCKED_MIN_ROWS: usize = 1 << 18;
/// Buckets per partition of the blocked count: its tables (`start`,
/// `sorted_in`: 256 kB) stay in L2.
const PARTITION_BUCKETS: usize = 1 << 15;
/// A bucket with more negatives than this is sorted (once per evaluation) and
/// searched by bisection instead of scanned.
const SCAN_MAX: usize = 8;

/// A score type the kernel accepts: f64, or f32 (SMC's products where rounding
/// to f32 is safe). Scores are compared through their exact f64 values, so an
/// f32 score is ranked exactly as its own value.
pub trait Score: Copy + Into<f64> + Send + Sync + 'static {}
impl Score for f32 {}
impl Score for f64 {}

/// Scratch buffers of one thread, sized for a class split (n+, n−); reused by
/// every evaluation (no allocation in the hot loop).
#[derive(Debug, Clone)]
pub struct RiskScratch {
    n_pos: usize,
    n_neg: usize,
    /// The positives are placed by bucket and the negatives streamed past
    /// them, on negated scores (fewer positives; not in the blocked count).
    swap: bool,
    pub(super) buckets: usize,
    /// Buckets per partition (= `buckets` when the count is not blocked).
    pub(super) partition: usize,
    /// Bucket k's negatives are `neg[start[k]..start[k + 1]]`, k counted from
    /// the partition's first bucket (partition + 2 slots).
    start: Vec<u32>,
    /// Evaluation counter and, per bucket, the evaluation in which its
    /// negatives were last sorted (crowded buckets only).
    epoch: u32,
    sorted_in: Vec<u32>,
    /// Bucket of every score (positives then negatives).
    bucket_of: Vec<u32>,
    /// Negative scores grouped by bucket, as keys (two padding slots).
    neg: Vec<u64>,
    /// Keys for the sort-and-merge path.
    keys_p: Vec<u64>,
    keys_n: Vec<u64>,
    /// The blocked count's rows in partition order: buckets and keys of the
    /// positives, then of the negatives (empty when not blocked).
    part_bucket: Vec<u32>,
    part_key: Vec<u64>,
}

impl RiskScratch {
    pub fn new(n_pos: usize, n_neg: usize) -> RiskScratch {
        let blocked = n_pos + n_neg >= BLOCKED_MIN_ROWS;
        RiskScratch::with_partition(n_pos, n_neg, blocked.then_some(PARTITION_BUCKETS))
    }

    /// Scratch whose count runs in partitions of `partition` buckets (None:
    /// in one piece). Tests force small partitions on small inputs.
    pub(super) fn with_partition(
        n_pos: usize,
        n_neg: usize,
        partition: Option<usize>,
    ) -> RiskScratch {
        // The class placed by bucket: the smaller one (the negatives when
        // the count may be blocked).
        let swap = partition.is_none() && n_pos < n_neg;
        let placed = if swap { n_pos } else { n_neg };
        let buckets = (BUCKETS_PER_NEGATIVE * placed).max(1);
        // A power of two: a bucket's partition is `k >> shift`.
        let partition = partition.map_or(buckets, |p| p.next_power_of_two().min(buckets));
        let blocked = partition < buckets;
        let rows = if blocked { n_pos + n_neg } else { 0 };
        RiskScratch {
            n_pos,
            n_neg,
            swap,
            buckets,
            partition,
            start: vec![0; partition + 2],
            epoch: 0,
            sorted_in: vec![0; partition],
            bucket_of: vec![0; n_pos + n_neg],
            neg: vec![0; placed + 2],
            keys_p: Vec::with_capacity(n_pos),
            keys_n: Vec::with_capacity(n_neg),
            part_bucket: vec![0; rows],
            part_key: vec![0; rows],
        }
    }

    /// `2·#{(p, n): s_p > s_n} + #{(p, n): s_p = s_n}` over all positive/negative
    /// pairs, i.e. twice the AUC numerator.
    // Inlined into the callers' loops over columns (an unrelated change
    // once left it a call: the SMC's risks 6% slower on Pima).
    #[inline(always)]
    pub fn twice_concordant<T: Score>(&mut self, pos: &[T], neg: &[T]) -> u64 {
        assert_eq!(
            (pos.len(), neg.len()),
            (self.n_pos, self.n_neg),
            "scratch sized for another class split"
        );
        if pos.is_empty() || neg.is_empty() {
            return 0;
        }
        match bucketize(pos, neg, self.buckets, &mut self.bucket_of) {
            Bucketed::Done => {}
            Bucketed::AllEqual => return (pos.len() * neg.len()) as u64,
            Bucketed::NotFinite => return self.sort_and_merge(pos, neg),
        }
        if self.partition < self.buckets {
            return self.count_blocked(pos, neg);
        }
        let (bp, bn) = self.bucket_of.split_at_mut(pos.len());
        let mut counter = RangeCounter {
            start: &mut self.start,
            neg: &mut self.neg,
            sorted_in: &mut self.sorted_in,
            epoch: &mut self.epoch,
        };
        if self.swap {
            // Negated scores: B − 1 − k is non-increasing in the score, `!key`
            // reverses the keys' order and keeps equal keys equal; then
            // `2·#{−p < −n} + #{−p = −n}` summed over the negatives is the
            // same count.
            let last = (self.buckets - 1) as u32;
            bp.iter_mut()
                .chain(bn.iter_mut())
                .for_each(|k| *k = last - *k);
            let (kn, kp) = (
                neg.iter().map(|&s| !key(s.into())),
                pos.iter().map(|&s| !key(s.into())),
            );
            return counter.count(bn, kn, bp, kp, 0);
        }
        let (kp, kn) = (
            pos.iter().map(|&s| key(s.into())),
            neg.iter().map(|&s| key(s.into())),
        );
        counter.count(bp, kp, bn, kn, 0)
    }

    /// The count partition by partition (`bucket_of` holds every row's bucket).
    fn count_blocked<T: Score>(&mut self, pos: &[T], neg: &[T]) -> u64 {
        let shift = self.partition.next_power_of_two().trailing_zeros();
        let parts = (self.buckets >> shift) + 1;
        // Where each (class, partition) begins in `part_*`: positives'
        // partitions first, then negatives'.
        let mut at = vec![0usize; 2 * parts + 1];
        let (bp, bn) = self.bucket_of.split_at(pos.len());
        for (&k, class) in bp
            .iter()
            .map(|k| (k, 0))
            .chain(bn.iter().map(|k| (k, parts)))
        {
            at[class + (k >> shift) as usize + 1] += 1;
        }
        for i in 1..at.len() {
            at[i] += at[i - 1];
        }
        let bounds = at.clone();
        for (class, (b, values)) in [(0, (bp, pos)), (parts, (bn, neg))] {
            for (&k, &v) in b.iter().zip(values) {
                let slot = &mut at[class + (k >> shift) as usize];
                self.part_bucket[*slot] = k;
                self.part_key[*slot] = key(v.into());
                *slot += 1;
            }
        }
        let mut counter = RangeCounter {
            start: &mut self.start,
            neg: &mut self.neg,
            sorted_in: &mut self.sorted_in,
            epoch: &mut self.epoch,
        };
        let (keys, buckets) = (&self.part_key, &self.part_bucket);
        let mut twice = 0u64;
        for j in 0..parts {
            let (p, q) = (
                bounds[j]..bounds[j + 1],
                bounds[parts + j]..bounds[parts + j + 1],
            );
            if p.is_empty() {
                continue;
            }
            // Every negative of the partitions below ranks under these positives.
            let below = (q.start - bounds[parts]) as u64;
            twice += 2 * below * p.len() as u64;
            let (kp, kn) = (
                keys[p.clone()].iter().copied(),
                keys[q.clone()].iter().copied(),
            );
            twice += counter.count(&buckets[p], kp, &buckets[q], kn, (j << shift) as u32);
        }
        twice
    }

    /// The O(n log n) reference path: sort each class's keys, merge.
    pub fn sort_and_merge<T: Score>(&mut self, pos: &[T], neg: &[T]) -> u64 {
        sort_and_merge(pos, neg, &mut self.keys_p, &mut self.keys_n)
    }

    /// The empirical AUC risk `R_n = 1 − AUC` (NaN when a class is empty).
    pub fn risk<T: Score>(&mut self, pos: &[T], neg: &[T]) -> f64 {
        let pairs = (pos.len() * neg.len()) as u64;
        if pairs == 0 {
            return f64::NAN;
        }
        risk_from_twice(self.twice_concordant(pos, neg), pairs)
    }
}

/// The count within one range of buckets: the scratch tables it borrows.
struct RangeCounter<'a> {
    start: &'a mut [u32],
    neg: &'a mut [u64],
    sorted_in: &'a mut [u32],
    epoch: &'a mut u32,
}

impl RangeCounter<'_> {
    /// Twice the concordance of positives and negatives whose buckets lie in
    /// [base, base + start.len() − 2): `bp`/`bn` their buckets, `pk`/`nk` their
    /// keys in the same order.
    #[inline(always)]
    fn count(
        &mut self,
        bp: &[u32],
        pk: impl Iterator<Item = u64>,
        bn: &[u32],
        nk: impl Iterator<Item = u64>,
        base: u32,
    ) -> u64 {
        // Counting sort of the negatives by bucket. Counting into start[k + 2]
        // and placing through start[k + 1] leaves bucket k's negatives at
        // start[k]..start[k + 1], with no special case for k = 0.
        self.start.fill(0);
        for &k in bn {
            self.start[(k - base) as usize + 2] += 1;
        }
        inclusive_prefix(self.start);
        for (&k, n) in bn.iter().zip(nk) {
            let slot = &mut self.start[(k - base) as usize + 1];
            self.neg[*slot as usize] = n;
            *slot += 1;
        }

        // A positive in bucket k beats every negative of buckets < k; those in
        // bucket k itself are compared exactly.
        *self.epoch = self.epoch.wrapping_add(1);
        if *self.epoch == 0 {
            self.sorted_in.fill(0);
            *self.epoch = 1;
        }
        let epoch = *self.epoch;
        let mut twice = 0u64;
        for (&k, p) in bp.iter().zip(pk) {
            let k = (k - base) as usize;
            let begin = self.start[k] as usize;
            let end = self.start[k + 1] as usize;
            twice += 2 * begin as u64;
            let count = end - begin;
            if count <= 2 {
                // The common case without a branch on the bucket's content
                // (`neg` has two slots beyond any range's negatives, so both
                // reads are in bounds; a stale value there is masked out).
                let (n0, n1) = (self.neg[begin], self.neg[begin + 1]);
                let (m0, m1) = (u64::from(count >= 1), u64::from(count >= 2));
                twice += m0 * (2 * u64::from(p > n0) + u64::from(p == n0))
                    + m1 * (2 * u64::from(p > n1) + u64::from(p == n1));
                continue;
            }
            let group = &mut self.neg[begin..end];
            if group.len() <= SCAN_MAX {
                for &n in group.iter() {
                    twice += u64::from(p > n) * 2 + u64::from(p == n);
                }
            } else {
                if self.sorted_in[k] != epoch {
                    group.sort_unstable();
                    self.sorted_in[k] = epoch;
                }
                let below = group.partition_point(|&n| n < p);
                let not_above = group.partition_point(|&n| n <= p);
                twice += (2 * below + (not_above - below)) as u64;
            }
        }
        twice
    }
}

/// `R_n` from twice the concordance count and the number of pairs M.
#[inline]
pub fn risk_from_twice(twice_concordant: u64, pairs: u64) -> f64 {
    (2 * pairs - twice_concordant) as f64 / (2 * pairs) as f64
}

/// Running sums in place: `v[i] ← v[0] + … + v[i]`.
pub(super) fn inclusive_prefix(v: &mut [u32]) {
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("avx512f") {
            // SAFETY: the CPU has AVX-512F.
            return unsafe { inclusive_prefix_avx512(v) };
        }
        if std::arch::is_x86_feature_detected!("avx2") {
            // SAFETY: the CPU has AVX2.
            return unsafe { inclusive_prefix_avx2(v) };
        }
    }
    inclusive_prefix_scalar(v)
}

pub(super) fn inclusive_prefix_scalar(v: &mut [u32]) {
    let mut acc = 0u32;
    for x in v.iter_mut() {
        acc = acc.wrapping_add(*x);
        *x = acc;
    }
}

/// The scan 16 lanes at a time: log-step shifts within a register, then the
/// running total of the previous registers (one add instead of 16 dependent ones).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
pub(super) unsafe fn inclusive_prefix_avx512(v: &mut [u32]) {
    use std::arch::x86_64::*;
    let zero = _mm512_setzero_si512();
    let last = _mm512_set1_epi32(15);
    let mut carry = zero;
    let mut chunks = v.chunks_exact_mut(16);
    for c in &mut chunks {
        // SAFETY: `c` holds exactly 16 u32 (64 bytes); unaligned loads/stores.
        unsafe {
            let mut x = _mm512_loadu_si512(c.as_ptr().cast());
            // alignr::<16 − k>(x, 0) moves every lane up by k, zeros below.
            x = _mm512_add_epi32(x, _mm512_alignr_epi32::<15>(x, zero));
            x = _mm512_add_epi32(x, _mm512_alignr_epi32::<14>(x, zero));
            x = _mm512_add_epi32(x, _mm512_alignr_epi32::<12>(x, zero));
            x = _mm512_add_epi32(x, _mm512_alignr_epi32::<8>(x, zero));
            x = _mm512_add_epi32(x, carry);
            carry = _mm512_permutexvar_epi32(last, x);
            _mm512_storeu_si512(c.as_mut_ptr().cast(), x);
        }
    }
    let mut acc = _mm512_cvtsi512_si32(carry) as u32;
    for x in chunks.into_remainder() {
        acc = acc.wrapping_add(*x);
        *x = acc;
    }
}

/// The scan 8 lanes at a time: log-step shifts within a register, then the
/// running total of the previous registers (one add instead of 8 dependent ones).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
pub(super) unsafe fn inclusive_prefix_avx2(v: &mut [u32]) {
    use std::arch::x86_64::*;
    let zero = _mm256_setzero_si256();
    let lane3 = _mm256_set1_epi32(3);
    let lane7 = _mm256_set1_epi32(7);
    let mut carry = zero;
    let mut chunks = v.chunks_exact_mut(8);
    for c in &mut chunks {
        // SAFETY: `c` holds exactly 8 u32 (32 bytes); unaligned loads/stores.
        unsafe {
            let mut x = _mm256_loadu_si256(c.as_ptr().cast());
            // Prefix within each 128-bit half (byte shifts stay inside halves)…
            x = _mm256_add_epi32(x, _mm256_slli_si256::<4>(x));
            x = _mm256_add_epi32(x, _mm256_slli_si256::<8>(x));
            // …then the low half's total onto the high half, and the carry.
            let low_total = _mm256_permutevar8x32_epi32(x, lane3);
            x = _mm256_add_epi32(x, _mm256_blend_epi32::<0b1111_0000>(zero, low_total));
            x = _mm256_add_epi32(x, carry);
            carry = _mm256_permutevar8x32_epi32(x, lane7);
            _mm256_storeu_si256(c.as_mut_ptr().cast(), x);
        }
    }
    let mut acc = _mm256_extract_epi32::<0>(carry) as u32;
    for x in chunks.into_remainder() {
        acc = acc.wrapping_add(*x);
        *x = acc;
    }
}

enum Bucketed {
    Done,
    /// Every score is equal.
    AllEqual,
    /// A score is NaN or infinite, or the range overflows.
    NotFinite,
}

/// Bucket of every score (positives then negatives) into `out`: equal-width
/// buckets over [lo, hi] (the range of the scores, or of their bulk when a few
/// outliers dominate it). The map `clamp(⌊(s − lo)·scale⌋, 0, B − 1)` is
/// non-decreasing in s (each rounding step and the clamp are), so bucket order
/// never contradicts score order. Compiled for AVX-512 and AVX2 where present (the
/// loops vectorise; the result is the same bits on every path; the AVX-512
/// versions need Rust ≥ 1.89).
fn bucketize<T: Score>(pos: &[T], neg: &[T], buckets: usize, out: &mut [u32]) -> Bucketed {
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("avx512f") {
            // SAFETY: the CPU has the features the function is compiled for.
            return unsafe { bucketize_avx512(pos, neg, buckets, out) };
        }
        if std::arch::is_x86_feature_detected!("avx2") {
            // SAFETY: as above.
            return unsafe { bucketize_avx2(pos, neg, buckets, out) };
        }
    }
    bucketize_generic(pos, neg, buckets, out)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512vl,avx512dq,avx2")]
unsafe fn bucketize_avx512<T: Score>(
    pos: &[T],
    neg: &[T],
    buckets: usize,
    out: &mut [u32],
) -> Bucketed {
    bucketize_generic(pos, neg, buckets, out)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn bucketize_avx2<T: Score>(
    pos: &[T],
    neg: &[T],
    buckets: usize,
    out: &mut [u32],
) -> Bucketed {
    bucketize_generic(pos, neg, buckets, out)
}

#[inline(always)]
fn bucketize_generic<T: Score>(pos: &[T], neg: &[T], buckets: usize, out: &mut [u32]) -> Bucketed {
    let m = scan(pos, neg);
    if !(m.lo.is_finite() && m.hi.is_finite()) {
        return Bucketed::NotFinite;
    }
    if m.lo == m.hi {
        return Bucketed::AllEqual;
    }
    // Outliers (EEG has a few scores 100× the rest) would crowd every other score
    // into a few buckets: then spread the buckets over the bulk instead, from a
    // fixed sample of the scores; the rest go to the two end buckets (the clamp
    // keeps the map monotone), which the exact path handles.
    let n = (pos.len() + neg.len()) as f64;
    let mean = m.sum / n;
    let var = (m.sum2 / n - mean * mean).max(0.0);
    let (mut lo, mut hi) = (m.lo, m.hi);
    if (hi - lo) * (hi - lo) > 144.0 * var {
        let (a, b) = sample_range(pos, neg);
        if b > a {
            (lo, hi) = (a, b);
        }
    }
    let scale = buckets as f64 / (hi - lo);
    if !scale.is_finite() || scale == 0.0 {
        return Bucketed::NotFinite;
    }
    let last = (buckets - 1) as f64;
    let (op, on) = out.split_at_mut(pos.len());
    for (part, o) in [(pos, op), (neg, on)] {
        for (o, &s) in o.iter_mut().zip(part) {
            let t = (s.into() - lo) * scale;
            let t = if t > 0.0 { t } else { 0.0 };
            let t = if t < last { t } else { last };
            // SAFETY: s, lo and scale are finite, so t is a finite number in
            // [0, B − 1]: it fits a u32. (`as u32` would add a saturating check
            // that blocks vectorisation.)
            *o = unsafe { t.to_int_unchecked::<u32>() };
        }
    }
    Bucketed::Done
}

/// Range, sum and sum of squares of the scores.
struct Moments {
    lo: f64,
    hi: f64,
    sum: f64,
    sum2: f64,
}

/// Smallest and largest score, sum and sum of squares; NaN bounds when a score
/// is NaN or infinite.
#[inline(always)]
fn scan<T: Score>(a: &[T], b: &[T]) -> Moments {
    // Plain comparisons (not `f64::min`, whose NaN rule blocks vectorisation) on
    // 32 independent lanes (four AVX-512 registers: no long dependency chain).
    // NaN compares false and would slip through, so the sum catches non-finite
    // scores (it is NaN or infinite exactly when one is, or on overflow, where
    // the exact path is right anyway).
    const L: usize = 32;
    let (mut lo, mut hi) = ([f64::INFINITY; L], [f64::NEG_INFINITY; L]);
    let (mut sum, mut sum2) = ([0.0; L], [0.0; L]);
    for part in [a, b] {
        let mut it = part.chunks_exact(L);
        for c in &mut it {
            for j in 0..L {
                let v: f64 = c[j].into();
                lo[j] = if v < lo[j] { v } else { lo[j] };
                hi[j] = if v > hi[j] { v } else { hi[j] };
                sum[j] += v;
                sum2[j] += v * v;
            }
        }
        for (j, &v) in it.remainder().iter().enumerate() {
            let v: f64 = v.into();
            lo[j] = if v < lo[j] { v } else { lo[j] };
            hi[j] = if v > hi[j] { v } else { hi[j] };
            sum[j] += v;
            sum2[j] += v * v;
        }
    }
    let sum: f64 = sum.iter().sum();
    if !sum.is_finite() {
        return Moments {
            lo: f64::NAN,
            hi: f64::NAN,
            sum,
            sum2: f64::NAN,
        };
    }
    Moments {
        lo: lo
            .iter()
            .fold(f64::INFINITY, |m, &v| if v < m { v } else { m }),
        hi: hi
            .iter()
            .fold(f64::NEG_INFINITY, |m, &v| if v > m { v } else { m }),
        sum,
        sum2: sum2.iter().sum(),
    }
}

/// Smallest and largest of 64 scores taken at a fixed stride.
#[cold]
fn sample_range<T: Score>(pos: &[T], neg: &[T]) -> (f64, f64) {
    const S: usize = 64;
    let n = pos.len() + neg.len();
    let at = |i: usize| -> f64 {
        if i < pos.len() {
            pos[i].into()
        } else {
            neg[i - pos.len()].into()
        }
    };
    let (mut lo, mut hi) = (f64::INFINITY, f64::NEG_INFINITY);
    for j in 0..S.min(n) {
        let v = at(j * n / S.min(n));
        lo = lo.min(v);
        hi = hi.max(v);
    }
    (lo, hi)
}

/// Order-preserving map of a score to an unsigned key: equal scores (−0 and +0
/// included) give equal keys, `a < b ⇔ key(a) < key(b)` for non-NaN scores.
#[inline]
pub fn key(s: f64) -> u64 {
    let bits = (s + 0.0).to_bits(); // −0 + 0 = +0
    if bits >> 63 == 1 {
        !bits
    } else {
        bits | (1 << 63)
    }
}

/// Sorts each class's keys and counts by a merge.
pub fn sort_and_merge<T: Score>(pos: &[T], neg: &[T], kp: &mut Vec<u64>, kn: &mut Vec<u64>) -> u64 {
    kp.clear();
    kp.extend(pos.iter().map(|&s| key(s.into())));
    kn.clear();
    kn.extend(neg.iter().map(|&s| key(s.into())));
    kp.sort_unstable();
    kn.sort_unstable();
    merge_count(kp, kn)
}

/// Twice the concordance of two ascending key lists.
pub fn merge_count(pos: &[u64], neg: &[u64]) -> u64 {
    // For each positive: negatives strictly below (`below`) and equal (`eq`).
    let (mut below, mut twice) = (0usize, 0u64);
    let mut i = 0;
    while i < pos.len() {
        let p = pos[i];
        while below < neg.len() && neg[below] < p {
            below += 1;
        }
        let mut eq = below;
        while eq < neg.len() && neg[eq] == p {
            eq += 1;
        }
        // All positives equal to p share the counts.
        let mut same = 1;
        while i + same < pos.len() && pos[i + same] == p {
            same += 1;
        }
        twice += (same * (2 * below + (eq - below))) as u64;
        i += same;
    }
    twice
}
