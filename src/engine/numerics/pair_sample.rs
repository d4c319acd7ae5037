//! E_ρ R_n from B sampled pairs for a family of Gaussians ρ_ab = N(m_a, s_b·Σ)
//! at once (several means, several spreads of one covariance): what the
//! certificate needs when it tries the fit's Gaussian at every spread.
//!
//! Why one pass: with Z = X L (Σ = L Lᵀ) a pair's s²_ij = ‖z_i − z_j‖² is the
//! same for every candidate up to the factor s_b, and μ_ij = (x_i − x_j)ᵀm_a
//! does not depend on s_b; so the rows' projections, the random draws and the
//! random reads of the rows are paid once, and each candidate costs one Φ per
//! pair. Per spread the old path recomputed X L_s, allocated it, and drew the
//! same pairs again (≈ 90% of a 10⁶-row certificate).
//!
//! The rows are packed once, class by class, as `[z_i, μ_i per mean, ‖z_i‖²]`
//! (one contiguous record per row: a pair reads two records, not six arrays),
//! filled block by block (no n × d temporary besides the records).
//!
//! Candidate (a, b) sees exactly the pairs `N(m_a, s_b Σ)` would see alone,
//! and values equal to theirs with the factor √s_b·L up to rounding (Φ by the
//! vectorised kernel of the pair pass: ~1 ulp from the scalar one). Chunks of pairs have their own random streams and
//! are pooled in order: the same bits for any thread count.

use nalgebra::DMatrix;
use rayon::prelude::*;

use super::gemm::{View, ViewMut, gemm};
use super::isa::{Isa, detected_isa};
use super::normal::cdf_pdf;
use super::pair_risk::{DEGENERATE, SampleMean, pool_chunks};
use super::rng::stream;
use super::simd::{F64x1, Simd, Two};
#[cfg(target_arch = "x86_64")]
use super::simd::{F64x4x2, F64x8};

/// Pairs per chunk: each chunk has its own random stream.
const SAMPLE_CHUNK: usize = 1 << 16;
const SAMPLE_KEY: u64 = 0x7061_6972_7372_6b31;
/// Rows per block of the packing GEMM.
const PACK_ROWS: usize = 4096;

/// The rows as records `[z (d), μ per mean, ‖z‖²]`, positives first.
struct Records {
    data: Vec<f64>,
    width: usize,
    pos: usize,
    neg: usize,
}

fn pack(x: &DMatrix<f64>, y: &[bool], means: &[&[f64]], l: &DMatrix<f64>) -> Records {
    let (n, d) = (x.nrows(), x.ncols());
    let nm = means.len();
    let width = d + nm + 1;
    let pos = y.iter().filter(|&&b| b).count();
    let mut data = vec![0.0; n * width];
    let mut z = vec![0.0; PACK_ROWS * d];
    let mut mu = vec![0.0; PACK_ROWS * nm];
    let (mut next_pos, mut next_neg) = (0, pos);
    let xs = x.as_slice();
    for i0 in (0..n).step_by(PACK_ROWS) {
        let i1 = (i0 + PACK_ROWS).min(n);
        let b = i1 - i0;
        gemm(
            1.0,
            View::of(x).rows(i0, i1),
            View::of(l),
            0.0,
            ViewMut {
                data: &mut z[..b * d],
                rows: b,
                cols: d,
                rs: d,
                cs: 1,
            },
        );
        // μ_i = Σ_k x_ik m_k in k order (column by column, as X·m).
        for (a, m) in means.iter().enumerate() {
            let acc = &mut mu[a * PACK_ROWS..a * PACK_ROWS + b];
            acc.fill(0.0);
            for (k, mk) in m.iter().enumerate() {
                let col = &xs[k * n + i0..k * n + i1];
                for (v, xk) in acc.iter_mut().zip(col) {
                    *v += xk * mk;
                }
            }
        }
        for r in 0..b {
            let slot = if y[i0 + r] {
                next_pos += 1;
                next_pos - 1
            } else {
                next_neg += 1;
                next_neg - 1
            };
            let rec = &mut data[slot * width..(slot + 1) * width];
            let zr = &z[r * d..(r + 1) * d];
            rec[..d].copy_from_slice(zr);
            for a in 0..nm {
                rec[d + a] = mu[a * PACK_ROWS + r];
            }
            rec[d + nm] = zr.iter().map(|v| v * v).sum();
        }
    }
    Records {
        data,
        width,
        pos,
        neg: n - pos,
    }
}

/// E_ρ R_n for every ρ_ab = N(`means[a]`, `spreads[b]`·L Lᵀ), each from the
/// same `count` pairs drawn uniformly with replacement (a uniform positive, an
/// independent uniform negative); result `a · spreads.len() + b`. Each pair's
/// Φ(−μ_ij/s_ij) is exact, an i.i.d. value in [0, 1] whose mean is E_ρ R_n; a
/// pair with s² ≤ DEGENERATE·(‖z_i‖² + ‖z_j‖²) is a tie (½) for every spread.
pub fn sampled_gaussian_pair_risks(
    x: &DMatrix<f64>,
    y: &[bool],
    means: &[&[f64]],
    l: &DMatrix<f64>,
    spreads: &[f64],
    count: usize,
    seed: u64,
) -> Vec<SampleMean> {
    let d = x.ncols();
    let recs = pack(x, y, means, l);
    let (nm, ns) = (means.len(), spreads.len());
    let cands = nm * ns;
    let count = count.max(2);
    let chunks = count.div_ceil(SAMPLE_CHUNK);
    let isa = detected_isa();
    let parts: Vec<Vec<(f64, f64, f64)>> = (0..chunks)
        .into_par_iter()
        .map(|c| {
            use rand::RngExt;
            let b = SAMPLE_CHUNK.min(count - c * SAMPLE_CHUNK);
            let mut r = stream(seed, &[SAMPLE_KEY, c as u64]);
            // The chunk's pairs first: the row reads below then do not wait on
            // the generator (more of them in flight).
            let picks: Vec<(usize, usize)> = (0..b)
                .map(|_| {
                    let i = r.random_range(0..recs.pos);
                    (i, recs.pos + r.random_range(0..recs.neg))
                })
                .collect();
            let w = recs.width;
            // Per pair s² (NaN for a tie) and μ_ij per mean.
            let mut s2s = vec![0.0; b];
            let mut dmu = vec![0.0; nm * b];
            for (p, &(i, j)) in picks.iter().enumerate() {
                let (ri, rj) = (
                    &recs.data[i * w..(i + 1) * w],
                    &recs.data[j * w..(j + 1) * w],
                );
                let s2: f64 = ri[..d]
                    .iter()
                    .zip(&rj[..d])
                    .map(|(a, b)| (a - b) * (a - b))
                    .sum();
                let tie = s2 <= DEGENERATE * (ri[d + nm] + rj[d + nm]);
                s2s[p] = if tie { f64::NAN } else { s2 };
                for a in 0..nm {
                    dmu[a * b + p] = ri[d + a] - rj[d + a];
                }
            }
            // Then each candidate's Φ(−μ_ij/s_ij) over the chunk, vectorised.
            let mut vals = vec![0.0; cands * b];
            for a in 0..nm {
                for (k, s) in spreads.iter().enumerate() {
                    let v = &mut vals[(a * ns + k) * b..(a * ns + k + 1) * b];
                    for ((t, m), s2) in v.iter_mut().zip(&dmu[a * b..(a + 1) * b]).zip(&s2s) {
                        *t = -m / (s2 * s).sqrt();
                    }
                    phi_in_place(isa, v);
                    for (t, s2) in v.iter_mut().zip(&s2s) {
                        if s2.is_nan() {
                            *t = 0.5;
                        }
                    }
                }
            }
            vals.chunks(b)
                .map(|v| {
                    let mb = v.iter().sum::<f64>() / b as f64;
                    let m2 = v.iter().map(|x| (x - mb) * (x - mb)).sum::<f64>();
                    (b as f64, mb, m2)
                })
                .collect()
        })
        .collect();
    (0..cands)
        .map(|k| {
            let own: Vec<_> = parts.iter().map(|p| p[k]).collect();
            let (tot, mean, m2) = pool_chunks(&own);
            SampleMean {
                mean,
                sd: (m2 / (tot - 1.0)).sqrt(),
                count,
            }
        })
        .collect()
}

/// Φ of every value of `t`, in place.
fn phi_in_place(isa: Isa, t: &mut [f64]) {
    match isa {
        #[cfg(target_arch = "x86_64")]
        // SAFETY: `detected_isa` returns Avx512 only when the CPU has these features.
        Isa::Avx512 => unsafe { phi_avx512(t) },
        #[cfg(target_arch = "x86_64")]
        // SAFETY: as above, for AVX2 and FMA.
        Isa::Avx2 => unsafe { phi_avx2(t) },
        _ => phi_impl::<F64x1<false>>(t),
    }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512dq,avx512vl,avx2,fma")]
unsafe fn phi_avx512(t: &mut [f64]) {
    phi_impl::<Two<F64x8>>(t)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn phi_avx2(t: &mut [f64]) {
    phi_impl::<Two<F64x4x2>>(t)
}

#[inline(always)]
fn phi_impl<V: Simd>(t: &mut [f64]) {
    let mut chunks = t.chunks_exact_mut(V::W);
    for c in &mut chunks {
        cdf_pdf(V::load(c)).0.store(c);
    }
    let tail = chunks.into_remainder();
    if !tail.is_empty() {
        let mut a = [0.0; 16];
        a[..tail.len()].copy_from_slice(tail);
        let mut out = [0.0; 16];
        cdf_pdf(V::load(&a)).0.to_array(&mut out);
        let k = tail.len();
        tail.copy_from_slice(&out[..k]);
    }
}
