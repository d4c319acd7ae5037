//! The moments of a copula fit's mapped columns by column dot products
//! (`GaussianFit::of_columns` up to `DOT_MAX_D` dimensions).

use nalgebra::DMatrix;

use super::FoldSums;

/// `FoldSums::of_with` of the columns `cols` (row i of weight `weights[i]`)
/// around `centre`: Σw and Σw² and Σw(x − c) in row order as there, the
/// second and fourth moments as dot products of the centred columns scaled
/// by √w (lanes summed in a fixed order: the same bits with any vector width).
pub(super) fn column_sums(cols: &[Vec<f64>], weights: &[f64], centre: &[f64]) -> FoldSums {
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("avx2") {
            // SAFETY: the CPU has the features the function is compiled for.
            return unsafe { column_sums_avx2(cols, weights, centre) };
        }
    }
    column_sums_generic(cols, weights, centre)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn column_sums_avx2(cols: &[Vec<f64>], weights: &[f64], centre: &[f64]) -> FoldSums {
    column_sums_generic(cols, weights, centre)
}

#[inline(always)]
fn column_sums_generic(cols: &[Vec<f64>], weights: &[f64], centre: &[f64]) -> FoldSums {
    let (d, n) = (centre.len(), weights.len());
    let sw: Vec<f64> = weights.iter().map(|w| w.sqrt()).collect();
    let mut s1 = vec![0.0; d];
    for k in 0..d {
        // The ordered sum alone, so that the scaled columns vectorise.
        s1[k] = cols[k][..n]
            .iter()
            .zip(weights)
            .fold(0.0, |s, (x, w)| s + w * (x - centre[k]));
    }
    // √w(x − c) and √w(x − c)² (`of_with`'s C and C₂, transposed), a block
    // of rows at a time: the block's 2d columns stay in L1 while every
    // pair's lanes take them (whole columns streamed each pair from L2:
    // 0.6 M cache misses a Pima run). Each lane adds its rows in row order,
    // in eight lanes (i mod 8), as the lanes of one dot product over the
    // whole columns would: the same bits.
    let scaled = |k: usize, rows: std::ops::Range<usize>, y: &mut [f64], y2: &mut [f64]| {
        let ck = centre[k];
        for (((y, y2), x), sw) in y
            .iter_mut()
            .zip(y2)
            .zip(&cols[k][rows.clone()])
            .zip(&sw[rows])
        {
            let v = x - ck;
            *y = sw * v;
            *y2 = sw * v * v;
        }
    };
    let pairs = d * (d + 1) / 2;
    let (mut acc, mut acc4) = (vec![[0.0f64; LANES]; pairs], vec![[0.0f64; LANES]; pairs]);
    let full = n / LANES * LANES;
    let (mut y, mut y2) = (vec![0.0; d * SUM_BLOCK], vec![0.0; d * SUM_BLOCK]);
    let mut start = 0;
    while start < full {
        let len = SUM_BLOCK.min(full - start);
        for k in 0..d {
            let at = k * SUM_BLOCK..k * SUM_BLOCK + len;
            scaled(k, start..start + len, &mut y[at.clone()], &mut y2[at]);
        }
        let mut p = 0;
        for a in 0..d {
            for b in 0..=a {
                let (ya, yb) = (&y[a * SUM_BLOCK..][..len], &y[b * SUM_BLOCK..][..len]);
                lane_add(&mut acc[p], ya, yb);
                let (ya, yb) = (&y2[a * SUM_BLOCK..][..len], &y2[b * SUM_BLOCK..][..len]);
                lane_add(&mut acc4[p], ya, yb);
                p += 1;
            }
        }
        start += len;
    }
    // The rows past the last full lane chunk (the tail).
    let (mut t, mut t2) = (vec![0.0; d * (n - full)], vec![0.0; d * (n - full)]);
    for k in 0..d {
        let at = k * (n - full)..(k + 1) * (n - full);
        scaled(k, full..n, &mut t[at.clone()], &mut t2[at]);
    }
    let (mut s2, mut s4) = (DMatrix::zeros(d, d), DMatrix::zeros(d, d));
    let mut p = 0;
    for a in 0..d {
        for b in 0..=a {
            let m = n - full;
            let v = lane_total(&acc[p], &t[a * m..][..m], &t[b * m..][..m]);
            let v4 = lane_total(&acc4[p], &t2[a * m..][..m], &t2[b * m..][..m]);
            (s2[(a, b)], s2[(b, a)]) = (v, v);
            (s4[(a, b)], s4[(b, a)]) = (v4, v4);
            p += 1;
        }
    }
    FoldSums {
        w: weights.iter().sum(),
        w2: weights.iter().map(|w| w * w).sum(),
        s1,
        s2,
        s4,
    }
}

/// The lanes of the column dot products and the rows of a block.
const LANES: usize = 8;
const SUM_BLOCK: usize = 32 * LANES;

/// Σ aᵢbᵢ over a block of whole lane chunks, lane i mod 8, added on.
#[inline(always)]
fn lane_add(acc: &mut [f64; LANES], a: &[f64], b: &[f64]) {
    for (x, y) in a.chunks_exact(LANES).zip(b.chunks_exact(LANES)) {
        for j in 0..LANES {
            acc[j] += x[j] * y[j];
        }
    }
}

/// The lanes added in a fixed order, then the tail rows a, b.
#[inline(always)]
fn lane_total(acc: &[f64; LANES], a: &[f64], b: &[f64]) -> f64 {
    let tail: f64 = a.iter().zip(b).map(|(x, y)| x * y).sum();
    ((acc[0] + acc[4]) + (acc[1] + acc[5])) + ((acc[2] + acc[6]) + (acc[3] + acc[7])) + tail
}
