//! Dense products through matrixmultiply's GEMM with explicit strides, so
//! transposed operands cost no copy. (nalgebra's `tr_mul` uses column dot
//! products, several times slower on tall matrices.)

use nalgebra::DMatrix;

/// View of a column-major matrix, optionally transposed: (rows, cols, row stride, col stride).
fn op(a: &DMatrix<f64>, transpose: bool) -> (usize, usize, isize, isize) {
    let (r, c) = a.shape();
    if transpose {
        (c, r, r as isize, 1)
    } else {
        (r, c, 1, r as isize)
    }
}

/// `alpha · op(a) · op(b) + beta · out`.
pub fn gemm_into(
    alpha: f64,
    a: &DMatrix<f64>,
    ta: bool,
    b: &DMatrix<f64>,
    tb: bool,
    beta: f64,
    out: &mut DMatrix<f64>,
) {
    let (m, k, rsa, csa) = op(a, ta);
    let (k2, n, rsb, csb) = op(b, tb);
    assert_eq!(k, k2, "inner dimensions differ");
    assert_eq!(out.shape(), (m, n), "output shape");
    if m == 0 || n == 0 {
        return;
    }
    if k == 0 {
        *out *= beta;
        return;
    }
    let rsc = 1isize;
    let csc = m as isize;
    // SAFETY: the shapes and strides above describe exactly the three column-major
    // buffers, whose lengths are m·k, k·n and m·n; `out` does not alias a or b
    // (it is borrowed mutably).
    unsafe {
        matrixmultiply::dgemm(
            m,
            k,
            n,
            alpha,
            a.as_ptr(),
            rsa,
            csa,
            b.as_ptr(),
            rsb,
            csb,
            beta,
            out.as_mut_ptr(),
            rsc,
            csc,
        );
    }
}

/// `out = a[r0 .. r0 + m, :] · b` (out column-major m × b.ncols()), read in
/// place: a block of rows without copying them. Each entry is the same sum
/// as in the whole product's (the inner dimension is not split by rows).
pub fn rows_b_into(a: &DMatrix<f64>, r0: usize, m: usize, b: &DMatrix<f64>, out: &mut [f64]) {
    let (k, n) = (a.ncols(), b.ncols());
    assert!(r0 + m <= a.nrows(), "rows out of range");
    assert_eq!(b.nrows(), k, "inner dimensions differ");
    assert_eq!(out.len(), m * n, "out is not m × n");
    if m == 0 || n == 0 {
        return;
    }
    if k == 0 {
        out.fill(0.0);
        return;
    }
    // Calls small enough that matrixmultiply does not start its own threads
    // (callers run blocks on the thread pool); each element's sum is the same.
    let step = (UNTHREADED_GEMM / k).saturating_sub(n).max(64);
    let mut i0 = 0;
    while i0 < m {
        let rows = step.min(m - i0);
        // SAFETY: rows r0+i0..r0+i0+rows of the column-major a (row stride 1,
        // column stride a.nrows()) lie inside its buffer; b is a whole buffer
        // of k·n; out's rows i0.. (column stride m) lie inside its m·n values
        // and do not alias a or b (borrowed mutably).
        unsafe {
            matrixmultiply::dgemm(
                rows,
                k,
                n,
                1.0,
                a.as_ptr().add(r0 + i0),
                1,
                a.nrows() as isize,
                b.as_ptr(),
                1,
                k as isize,
                0.0,
                out.as_mut_ptr().add(i0),
                1,
                m as isize,
            );
        }
        i0 += rows;
    }
}

/// Each column of `m` cut into consecutive pieces of `sizes[b]` rows:
/// `out[b][k]` is piece b of column k. The pieces are disjoint, so blocks of
/// rows can be written on the thread pool.
pub fn column_pieces<'a>(m: &'a mut DMatrix<f64>, sizes: &[usize]) -> Vec<Vec<&'a mut [f64]>> {
    let (rows, cols) = m.shape();
    assert_eq!(
        sizes.iter().sum::<usize>(),
        rows,
        "the pieces cover the rows"
    );
    let mut out: Vec<Vec<&mut [f64]>> = sizes.iter().map(|_| Vec::with_capacity(cols)).collect();
    let mut rest = m.as_mut_slice();
    for _ in 0..cols {
        for (b, &size) in sizes.iter().enumerate() {
            let (piece, r) = std::mem::take(&mut rest).split_at_mut(size);
            out[b].push(piece);
            rest = r;
        }
    }
    out
}

/// `column_pieces` with blocks of `block` rows (the last one shorter).
pub fn column_blocks(m: &mut DMatrix<f64>, block: usize) -> Vec<Vec<&mut [f64]>> {
    let n = m.nrows();
    let sizes: Vec<usize> = (0..n.div_ceil(block))
        .map(|b| block.min(n - b * block))
        .collect();
    column_pieces(m, &sizes)
}

/// Rows per block of `at_built`: fixed, so that the sums are grouped the same
/// whatever the number of threads (each block's partial product, then the
/// partials added in block order).
pub const PAR_BLOCK: usize = 1 << 15;

/// Largest `(p + c) · k` of one GEMM call inside a block: below matrixmultiply's
/// threading threshold (2¹⁵), so it does not start its own threads inside the
/// pool's (and at p = 20 every call still has k ≥ 700).
const UNTHREADED_GEMM: usize = (1 << 15) - 1;

/// `zᵀ S` (p × c) for an n × c matrix S never held whole: `fill(r0, m, s)`
/// writes rows r0..r0+m of S into `s` (m × c, column-major). Blocks of
/// `PAR_BLOCK` rows go on the thread pool; the result's bits do not depend on
/// the number of threads.
pub fn at_built(
    z: &DMatrix<f64>,
    c: usize,
    fill: impl Fn(usize, usize, &mut [f64]) + Sync,
) -> DMatrix<f64> {
    use rayon::prelude::*;
    let (n, p) = z.shape();
    let mut out = DMatrix::zeros(p, c);
    if n == 0 || p == 0 || c == 0 {
        return out;
    }
    let step = (UNTHREADED_GEMM / (p + c)).max(64);
    let partials: Vec<Vec<f64>> = (0..n.div_ceil(PAR_BLOCK))
        .into_par_iter()
        .map_init(Vec::new, |s: &mut Vec<f64>, b| {
            let r0 = b * PAR_BLOCK;
            let m = PAR_BLOCK.min(n - r0);
            s.resize(m * c, 0.0);
            fill(r0, m, &mut s[..m * c]);
            let mut part = vec![0.0; p * c];
            let mut i0 = 0;
            while i0 < m {
                let k = step.min(m - i0);
                // SAFETY: zᵀ's rows r0+i0.. (p × k, row stride n, column stride 1
                // once transposed) lie inside the column-major z; s's rows
                // i0..i0+k (k × c, column stride m) inside s; part is p × c and
                // aliases neither.
                unsafe {
                    matrixmultiply::dgemm(
                        p,
                        k,
                        c,
                        1.0,
                        z.as_ptr().add(r0 + i0),
                        n as isize,
                        1,
                        s.as_ptr().add(i0),
                        1,
                        m as isize,
                        1.0,
                        part.as_mut_ptr(),
                        1,
                        p as isize,
                    );
                }
                i0 += k;
            }
            part
        })
        .collect();
    for part in &partials {
        for (o, v) in out.as_mut_slice().iter_mut().zip(part) {
            *o += v;
        }
    }
    out
}

/// The row mean m of `x` and the scatter `Σ_i (x_i − m)ᵀ(x_i − m)` of its
/// rows about it (a covariance up to the divisor the caller chooses).
pub fn row_scatter(x: &DMatrix<f64>) -> (nalgebra::RowDVector<f64>, DMatrix<f64>) {
    let mean = x.row_mean();
    let mut c = x.clone();
    for mut row in c.row_iter_mut() {
        row -= &mean;
    }
    let scatter = at_b(&c, &c);
    (mean, scatter)
}

/// `aᵀ · b`.
pub fn at_b(a: &DMatrix<f64>, b: &DMatrix<f64>) -> DMatrix<f64> {
    let mut out = DMatrix::zeros(a.ncols(), b.ncols());
    gemm_into(1.0, a, true, b, false, 0.0, &mut out);
    out
}

/// `a · bᵀ`.
pub fn a_bt(a: &DMatrix<f64>, b: &DMatrix<f64>) -> DMatrix<f64> {
    let mut out = DMatrix::zeros(a.nrows(), b.nrows());
    gemm_into(1.0, a, false, b, true, 0.0, &mut out);
    out
}

/// `a · b`.
pub fn a_b(a: &DMatrix<f64>, b: &DMatrix<f64>) -> DMatrix<f64> {
    let mut out = DMatrix::zeros(a.nrows(), b.ncols());
    gemm_into(1.0, a, false, b, false, 0.0, &mut out);
    out
}

/// `out = a · b` for column-major slices: a is m × k, b is k × n, out is m × n.
/// (For blocks of particles stored contiguously, without building matrices.)
pub fn a_b_slices(a: &[f64], m: usize, k: usize, b: &[f64], n: usize, out: &mut [f64]) {
    assert_eq!(a.len(), m * k, "a is not m × k");
    assert_eq!(b.len(), k * n, "b is not k × n");
    assert_eq!(out.len(), m * n, "out is not m × n");
    if m == 0 || n == 0 {
        return;
    }
    if k == 0 {
        out.fill(0.0);
        return;
    }
    // SAFETY: the lengths were checked against the shapes; column-major strides
    // (1, rows) stay inside each buffer; `out` is borrowed mutably, so it aliases
    // neither input.
    unsafe {
        matrixmultiply::dgemm(
            m,
            k,
            n,
            1.0,
            a.as_ptr(),
            1,
            m as isize,
            b.as_ptr(),
            1,
            k as isize,
            0.0,
            out.as_mut_ptr(),
            1,
            m as isize,
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn products_match_nalgebra() {
        let a = DMatrix::from_fn(7, 3, |i, j| (i as f64 - 2.0 * j as f64).sin());
        let b = DMatrix::from_fn(7, 4, |i, j| (i * j) as f64 * 0.1 - 0.3);
        let c = DMatrix::from_fn(5, 3, |i, j| (i + 2 * j) as f64 * 0.7);
        assert!((at_b(&a, &b) - a.transpose() * &b).amax() < 1e-12);
        assert!((a_bt(&a, &c) - &a * c.transpose()).amax() < 1e-12);
        assert!((a_b(&c, &a.transpose()) - &c * a.transpose()).amax() < 1e-12);
        let mut out = vec![0.0; 5 * 7];
        let at = a.transpose();
        a_b_slices(c.as_slice(), 5, 3, at.as_slice(), 7, &mut out);
        assert!((DMatrix::from_column_slice(5, 7, &out) - &c * &at).amax() < 1e-12);
    }

    /// The pieces tile each column in order; an empty matrix gives empty pieces.
    #[test]
    fn column_pieces_tile_the_columns() {
        let mut m = DMatrix::from_fn(7, 3, |i, k| (10 * k + i) as f64);
        let pieces = column_pieces(&mut m, &[3, 0, 4]);
        assert_eq!(pieces.len(), 3);
        assert_eq!(pieces[0][2], &[20.0, 21.0, 22.0]);
        assert!(pieces[1].iter().all(|p| p.is_empty()));
        assert_eq!(pieces[2][1], &[13.0, 14.0, 15.0, 16.0]);
        let blocks = column_blocks(&mut m, 5);
        assert_eq!((blocks[0][0].len(), blocks[1][0].len()), (5, 2));
        let mut empty = DMatrix::<f64>::zeros(0, 2);
        let pieces = column_pieces(&mut empty, &[0, 0]);
        assert!(
            pieces
                .iter()
                .all(|b| b.len() == 2 && b.iter().all(|p| p.is_empty()))
        );
    }

    /// `at_built` against the whole product (rows spanning several blocks, a
    /// ragged last block), and the same bits on one thread as on four.
    #[test]
    fn built_products_match_and_ignore_threads() {
        let n = 2 * PAR_BLOCK + 4099;
        let z = DMatrix::from_fn(n, 5, |i, j| ((i * 31 + j * 7) as f64 * 0.37).sin());
        let w: Vec<f64> = (0..n).map(|i| (i as f64 * 0.013).cos() * 1e-3).collect();
        let mut scaled = DMatrix::zeros(n, 6);
        for k in 0..5 {
            for i in 0..n {
                scaled[(i, k)] = z[(i, k)] * w[i];
            }
        }
        for i in 0..n {
            scaled[(i, 5)] = w[i];
        }
        let fill = |r0: usize, m: usize, s: &mut [f64]| {
            for k in 0..6 {
                for i in 0..m {
                    s[k * m + i] = scaled[(r0 + i, k)];
                }
            }
        };
        let want = at_b(&z, &scaled);
        let on = |t: usize| {
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(t)
                .build()
                .unwrap();
            pool.install(|| at_built(&z, 6, fill))
        };
        let got = on(1);
        assert!((&got - &want).amax() < 1e-12 * want.amax());
        assert_eq!(got, on(4));
        let v = DMatrix::from_fn(5, 5, |i, j| 1.0 / (1 + i + j) as f64);
        let whole = a_b(&z, &v);
        let (r0, m) = (PAR_BLOCK - 3, 4101);
        let mut out = vec![0.0; m * 5];
        rows_b_into(&z, r0, m, &v, &mut out);
        for k in 0..5 {
            for i in 0..m {
                assert_eq!(out[k * m + i].to_bits(), whole[(r0 + i, k)].to_bits());
            }
        }
    }
}
