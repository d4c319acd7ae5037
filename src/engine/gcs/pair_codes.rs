//! The inner loop of the counting pass (`circle::CircleSampler`): for one
//! positive row against every negative, the code of the pair's breakpoint —
//! its pseudo-angle bucket `b` and whether the pair flips from concordant
//! (`2b`) or discordant (`2b + 1`), or, for `dA = 0`, concordant (`2K`),
//! discordant (`2K + 1`) or tied (`2K + 2`) on the whole half-circle.
//!
//! Where the CPU has AVX-512 or AVX2 a branch-free version is compiled for it
//! (the loop vectorises 8 or 4 pairs wide, with the division); elsewhere the
//! branchy scalar loop, whose sign tests predict well. Both do the same IEEE
//! operations in the same order, so the codes are the same bits (tested).

/// Codes of the pairs (positive with scores `(pa, pb)`, negatives `neg_a`,
/// `neg_b`) into `codes`, for `k` buckets.
pub fn fill(pa: f64, pb: f64, neg_a: &[f64], neg_b: &[f64], k: usize, codes: &mut [u32]) {
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("avx512f") {
            // SAFETY: the CPU has the features the function is compiled for.
            return unsafe { fill_avx512(pa, pb, neg_a, neg_b, k, codes) };
        }
        if std::arch::is_x86_feature_detected!("avx2") {
            // SAFETY: as above.
            return unsafe { fill_avx2(pa, pb, neg_a, neg_b, k, codes) };
        }
    }
    fill_scalar(pa, pb, neg_a, neg_b, k, codes)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512vl,avx512dq,avx2")]
unsafe fn fill_avx512(pa: f64, pb: f64, na: &[f64], nb: &[f64], k: usize, codes: &mut [u32]) {
    fill_branch_free(pa, pb, na, nb, k, codes)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn fill_avx2(pa: f64, pb: f64, na: &[f64], nb: &[f64], k: usize, codes: &mut [u32]) {
    fill_branch_free(pa, pb, na, nb, k, codes)
}

/// Selects instead of branches, so that the loop vectorises.
#[inline(always)]
fn fill_branch_free(pa: f64, pb: f64, na: &[f64], nb: &[f64], k: usize, codes: &mut [u32]) {
    let half_k = k as f64 / 2.0;
    let (top, k2) = (k as u32 - 1, 2 * k as u32);
    for ((code, &na), &nb) in codes.iter_mut().zip(na).zip(nb) {
        let (da, db) = (pa - na, pb - nb);
        let t = db / (da.abs() + db.abs());
        let p = if da < 0.0 { -t } else { t };
        // In [0, K] where finite; NaN (dA = dB = 0) casts to 0 and is not used.
        let b = (((p + 1.0) * half_k) as i32 as u32).min(top);
        let flipped = 2 * b + u32::from(da < 0.0);
        let flat = k2 + 2 - 2 * u32::from(db > 0.0) - u32::from(db < 0.0);
        // Not `da != 0.0`: a NaN takes the flat branch, as in the scalar loop.
        #[allow(clippy::double_comparisons)]
        let nonzero = da > 0.0 || da < 0.0;
        *code = if nonzero { flipped } else { flat };
    }
}

/// The scalar loop: branches on the sign of dA (most pairs are concordant, so
/// they predict well; a branch-free 2-wide SSE2 variant measured 25% slower).
fn fill_scalar(pa: f64, pb: f64, na: &[f64], nb: &[f64], k: usize, codes: &mut [u32]) {
    let half_k = k as f64 / 2.0;
    for ((code, &na), &nb) in codes.iter_mut().zip(na).zip(nb) {
        let (da, db) = (pa - na, pb - nb);
        let t = db / (da.abs() + db.abs());
        let p = if da < 0.0 { -t } else { t };
        let b = (((p + 1.0) * half_k) as u32).min(k as u32 - 1);
        *code = if da > 0.0 {
            2 * b
        } else if da < 0.0 {
            2 * b + 1
        } else if db > 0.0 {
            2 * k as u32
        } else if db < 0.0 {
            2 * k as u32 + 1
        } else {
            2 * k as u32 + 2
        };
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::numerics::rng::{normal, stream};

    /// Every path gives the scalar loop's codes, on scores with exact ties in
    /// A, in B and in both, zeros of either sign, and extreme ratios.
    #[test]
    fn vectorised_codes_equal_the_scalar_ones() {
        let mut r = stream(11, &[]);
        let mut g = |n: usize| -> Vec<f64> {
            (0..n)
                .map(|i| match i % 7 {
                    0 => 0.0,
                    1 => -0.0,
                    2 => 1e-300 * normal(&mut r),
                    _ => (normal(&mut r) * 4.0).round() / 4.0,
                })
                .collect()
        };
        let (pa, pb, na, nb) = (g(40), g(40), g(203), g(203));
        for k in [64usize, 4096, 1 << 18] {
            let mut want = vec![0; na.len()];
            let mut got = vec![0; na.len()];
            let mut free = vec![0; na.len()];
            for (&a, &b) in pa.iter().zip(&pb) {
                fill_scalar(a, b, &na, &nb, k, &mut want);
                fill(a, b, &na, &nb, k, &mut got);
                fill_branch_free(a, b, &na, &nb, k, &mut free);
                assert_eq!(got, want, "k = {k}, positive ({a}, {b})");
                assert_eq!(free, want, "k = {k}, positive ({a}, {b})");
                assert!(want.iter().all(|&c| c <= 2 * k as u32 + 2));
            }
        }
    }
}
