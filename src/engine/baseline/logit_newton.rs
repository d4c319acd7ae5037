//! Newton's method for the L2-penalised logistic regression, by fused passes
//! over row blocks: one pass gives the loss, the gradient and the Hessian
//! `Zᵀ W Z` (Z = [1 | X]) without copying the design — each block of rows is
//! scaled by √W into a small scratch and accumulated by GEMM. Chunks of rows run
//! on the rayon pool and are summed in chunk order, so the result does not
//! depend on the thread count.

use nalgebra::{DMatrix, DVector};
use rayon::prelude::*;

/// Rows per parallel chunk (fixed: the summation order does not depend on threads).
const CHUNK: usize = 1 << 15;
/// Rows per GEMM block inside a chunk (the scratch stays in L2).
const BLOCK: usize = 256;

pub(super) fn sigmoid(t: f64) -> f64 {
    if t >= 0.0 {
        1.0 / (1.0 + (-t).exp())
    } else {
        let e = t.exp();
        e / (1.0 + e)
    }
}

/// Σ a_i b_i in 8 interleaved partial sums (fixed order): one running sum
/// waited on each add's latency (the gradient's 21 dots were most of a pass's
/// time outside its GEMM).
fn dot(a: &[f64], b: &[f64]) -> f64 {
    let n8 = a.len() / 8 * 8;
    let mut acc = [0.0f64; 8];
    for (x, y) in a[..n8].chunks_exact(8).zip(b[..n8].chunks_exact(8)) {
        for l in 0..8 {
            acc[l] += x[l] * y[l];
        }
    }
    let tail: f64 = a[n8..].iter().zip(&b[n8..]).map(|(x, y)| x * y).sum();
    ((acc[0] + acc[4]) + (acc[1] + acc[5])) + ((acc[2] + acc[6]) + (acc[3] + acc[7])) + tail
}

/// One pass's sums over rows: Σ loss, gradient and (optionally) Hessian in w = [b, β].
struct Sums {
    loss: f64,
    grad: Vec<f64>,
    hess: Vec<f64>,
}

/// Rows `lo..hi` of the pass at `w`.
fn chunk(x: &DMatrix<f64>, y: &[bool], w: &[f64], lo: usize, hi: usize, hess: bool) -> Sums {
    let (n, d) = x.shape();
    let p = d + 1;
    let xs = x.as_slice();
    let mut out = Sums {
        loss: 0.0,
        grad: vec![0.0; p],
        hess: if hess { vec![0.0; p * p] } else { Vec::new() },
    };
    let mut eta = [0.0f64; BLOCK];
    let mut r = [0.0f64; BLOCK];
    let mut s = if hess {
        vec![0.0; BLOCK * p]
    } else {
        Vec::new()
    };
    let mut start = lo;
    while start < hi {
        let m = BLOCK.min(hi - start);
        let eta = &mut eta[..m];
        eta.fill(w[0]);
        for k in 0..d {
            let col = &xs[k * n + start..k * n + start + m];
            let bk = w[k + 1];
            for (e, &v) in eta.iter_mut().zip(col) {
                *e += bk * v;
            }
        }
        let mut g0 = 0.0;
        for i in 0..m {
            let (e, yi) = (eta[i], y[start + i]);
            // One exp for both log(1 + e^η) and the probability (as `sigmoid`).
            let a = (-e.abs()).exp();
            out.loss += e.max(0.0) + a.ln_1p() - if yi { e } else { 0.0 };
            let pi = if e >= 0.0 {
                1.0 / (1.0 + a)
            } else {
                a / (1.0 + a)
            };
            r[i] = pi - f64::from(u8::from(yi));
            g0 += r[i];
            if hess {
                s[i] = (pi * (1.0 - pi)).sqrt().max(1e-12);
            }
        }
        out.grad[0] += g0;
        for k in 0..d {
            let col = &xs[k * n + start..k * n + start + m];
            out.grad[k + 1] += dot(col, &r[..m]);
            if hess {
                let (sw, rest) = s.split_at_mut(BLOCK);
                let dst = &mut rest[k * BLOCK..k * BLOCK + m];
                for ((o, &v), &q) in dst.iter_mut().zip(col).zip(&sw[..m]) {
                    *o = v * q;
                }
            }
        }
        if hess {
            // H += Sᵀ S over the block's m rows (S: m × p, column stride BLOCK).
            // SAFETY: S is BLOCK·p long and read at rows < m ≤ BLOCK of p columns;
            // out.hess is p·p, distinct from S.
            unsafe {
                matrixmultiply::dgemm(
                    p,
                    m,
                    p,
                    1.0,
                    s.as_ptr(),
                    BLOCK as isize,
                    1,
                    s.as_ptr(),
                    1,
                    BLOCK as isize,
                    1.0,
                    out.hess.as_mut_ptr(),
                    1,
                    p as isize,
                );
            }
        }
        start += m;
    }
    out
}

/// Σ over all rows, chunk by chunk in order.
fn pass(x: &DMatrix<f64>, y: &[bool], w: &DVector<f64>, hess: bool) -> Sums {
    let n = x.nrows();
    let chunks = n.div_ceil(CHUNK).max(1);
    let parts: Vec<Sums> = (0..chunks)
        .into_par_iter()
        .map(|c| {
            chunk(
                x,
                y,
                w.as_slice(),
                c * CHUNK,
                ((c + 1) * CHUNK).min(n),
                hess,
            )
        })
        .collect();
    let mut it = parts.into_iter();
    let mut acc = it.next().expect("one chunk at least");
    for s in it {
        acc.loss += s.loss;
        acc.grad.iter_mut().zip(&s.grad).for_each(|(a, b)| *a += b);
        acc.hess.iter_mut().zip(&s.hess).for_each(|(a, b)| *a += b);
    }
    acc
}

fn penalty(w: &DVector<f64>, lambda: f64) -> f64 {
    0.5 * lambda * w.rows(1, w.len() - 1).norm_squared()
}

/// The data term's pass (loss, gradient, Hessian; no penalty) at `w`: Newton
/// restarted from w on the same rows at another λ (the CV's warm starts)
/// starts from it instead of a pass (one in three or four of the CV's).
pub(super) struct Pass {
    w: DVector<f64>,
    sums: Sums,
}

/// Newton's method with a backtracking line search on rows `x` (no intercept
/// column: w[0] is the intercept); `w0` a warm start, `cached` the pass at
/// some w on these rows (used when it is w0 bit for bit). Returns the
/// optimum, the penalised Hessian at the last step, the iterations and the
/// pass at the optimum.
pub(super) fn newton(
    x: &DMatrix<f64>,
    y: &[bool],
    lambda: f64,
    w0: Option<&DVector<f64>>,
    cached: Option<Pass>,
) -> (DVector<f64>, DMatrix<f64>, usize, Pass) {
    let p = x.ncols() + 1;
    let mut w = w0.cloned().unwrap_or_else(|| DVector::zeros(p));
    let same = |c: &Pass| {
        c.w.len() == p
            && c.w
                .iter()
                .zip(w.iter())
                .all(|(a, b)| a.to_bits() == b.to_bits())
    };
    // Each candidate's pass gives its loss and, once accepted, the next step's
    // gradient and Hessian: one pass per iteration. `at_w` is always the pass at w.
    let mut at_w = match cached {
        Some(c) if same(&c) => c.sums,
        _ => pass(x, y, &w, true),
    };
    let mut f = at_w.loss + penalty(&w, lambda);
    let mut it = 0;
    loop {
        it += 1;
        let mut grad = DVector::from_column_slice(&at_w.grad);
        let mut hess = DMatrix::from_column_slice(p, p, &at_w.hess);
        for k in 1..p {
            grad[k] += lambda * w[k];
            hess[(k, k)] += lambda;
        }
        hess[(0, 0)] += 1e-10 * (1.0 + hess[(0, 0)]); // an intercept alone can run off on one-class folds
        let chol = match hess.clone().cholesky() {
            Some(c) => c,
            None => return (w.clone(), hess, it, Pass { w, sums: at_w }),
        };
        let step = chol.solve(&grad);
        let mut t = 1.0;
        let mut accepted = false;
        while t > 1e-10 {
            let cand = &w - &step * t;
            let at_cand = pass(x, y, &cand, true);
            let fc = at_cand.loss + penalty(&cand, lambda);
            if fc <= f + 1e-4 * t * -grad.dot(&step) || (fc - f).abs() <= 1e-14 * f.abs() {
                w = cand;
                at_w = at_cand;
                accepted = fc < f || (fc - f).abs() <= 1e-14 * f.abs();
                f = fc;
                break;
            }
            t *= 0.5;
        }
        let small = step.amax() * t < 1e-10 * (1.0 + w.amax());
        if !accepted || small || it >= 100 {
            return (w.clone(), hess, it, Pass { w, sums: at_w });
        }
    }
}
