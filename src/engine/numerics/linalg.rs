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
}
