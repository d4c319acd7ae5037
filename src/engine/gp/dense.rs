//! Dense symmetric positive-definite algebra for the GP's n × n matrices:
//! Cholesky, triangular inverse and solves, and the inverse `L⁻ᵀL⁻¹`, all
//! recursive so that nearly every flop is a large matrixmultiply GEMM.
//! (nalgebra's unblocked versions take 4 s for a Cholesky and 33 s for the
//! inverse at n = 2400 here; these take a fraction of a second.)
//!
//! Matrices are column-major `DMatrix<f64>`; "lower" results have an exactly
//! zero upper triangle.

use nalgebra::DMatrix;

/// Below this size the recursions switch to plain loops.
const LEAF: usize = 48;

/// A column-major view: element (i, j) at `p + i + j·ld`.
#[derive(Clone, Copy)]
struct View {
    p: *mut f64,
    rows: usize,
    cols: usize,
    ld: usize,
}

impl View {
    fn of(m: &mut DMatrix<f64>) -> View {
        View {
            p: m.as_mut_ptr(),
            rows: m.nrows(),
            cols: m.ncols(),
            ld: m.nrows(),
        }
    }
    /// The block of `rows × cols` from (r0, c0).
    fn sub(self, r0: usize, c0: usize, rows: usize, cols: usize) -> View {
        debug_assert!(r0 + rows <= self.rows && c0 + cols <= self.cols);
        View {
            // SAFETY: the offset stays inside the parent view (asserted above).
            p: unsafe { self.p.add(r0 + c0 * self.ld) },
            rows,
            cols,
            ld: self.ld,
        }
    }
    /// A square view split at `n1`: the blocks (1,1), (2,1) and (2,2).
    fn quarters(self, n1: usize) -> (View, View, View) {
        let n2 = self.rows - n1;
        (
            self.sub(0, 0, n1, n1),
            self.sub(n1, 0, n2, n1),
            self.sub(n1, n1, n2, n2),
        )
    }
    /// Rows `[0, r1)` and `[r1, rows)`.
    fn split_rows(self, r1: usize) -> (View, View) {
        (
            self.sub(0, 0, r1, self.cols),
            self.sub(r1, 0, self.rows - r1, self.cols),
        )
    }
    /// Columns `[0, c1)` and `[c1, cols)`.
    fn split_cols(self, c1: usize) -> (View, View) {
        (
            self.sub(0, 0, self.rows, c1),
            self.sub(0, c1, self.rows, self.cols - c1),
        )
    }
    /// # Safety
    /// (i, j) must be inside the view.
    #[inline(always)]
    unsafe fn at(self, i: usize, j: usize) -> *mut f64 {
        unsafe { self.p.add(i + j * self.ld) }
    }
}

/// `c ← alpha·op(a)·op(b) + beta·c`.
///
/// # Safety
/// The views must be valid for their shapes, and `c` must not overlap `a` or `b`.
unsafe fn gemm(alpha: f64, a: View, ta: bool, b: View, tb: bool, beta: f64, c: View) {
    let (m, k, rsa, csa) = if ta {
        (a.cols, a.rows, a.ld as isize, 1)
    } else {
        (a.rows, a.cols, 1, a.ld as isize)
    };
    let (k2, n, rsb, csb) = if tb {
        (b.cols, b.rows, b.ld as isize, 1)
    } else {
        (b.rows, b.cols, 1, b.ld as isize)
    };
    assert_eq!(k, k2);
    assert_eq!((m, n), (c.rows, c.cols));
    if m == 0 || n == 0 || k == 0 {
        if m > 0 && n > 0 && beta != 1.0 {
            for j in 0..n {
                for i in 0..m {
                    unsafe { *c.at(i, j) *= beta };
                }
            }
        }
        return;
    }
    unsafe {
        matrixmultiply::dgemm(
            m,
            k,
            n,
            alpha,
            a.p,
            rsa,
            csa,
            b.p,
            rsb,
            csb,
            beta,
            c.p,
            1,
            c.ld as isize,
        );
    }
}

/// Lower Cholesky factor in place (the upper triangle is ignored); Err(j) when
/// the pivot of column j is not positive and finite.
///
/// # Safety
/// `a` must be a valid square view.
unsafe fn chol(a: View) -> Result<(), usize> {
    let n = a.rows;
    if n <= LEAF {
        for j in 0..n {
            unsafe {
                let mut d = *a.at(j, j);
                for k in 0..j {
                    d -= *a.at(j, k) * *a.at(j, k);
                }
                if !(d > 0.0 && d.is_finite()) {
                    return Err(j);
                }
                let d = d.sqrt();
                *a.at(j, j) = d;
                for i in j + 1..n {
                    let mut s = *a.at(i, j);
                    for k in 0..j {
                        s -= *a.at(i, k) * *a.at(j, k);
                    }
                    *a.at(i, j) = s / d;
                }
            }
        }
        return Ok(());
    }
    let n1 = n / 2;
    let (a11, a21, a22) = a.quarters(n1);
    unsafe {
        chol(a11)?;
        trsm_right_lower_t(a11, a21);
        syrk_lower(-1.0, a21, a22);
        chol(a22).map_err(|j| j + n1)
    }
}

/// `b ← b·L⁻ᵀ` (L lower, n × n; b m × n).
///
/// # Safety
/// Valid, non-overlapping views.
unsafe fn trsm_right_lower_t(l: View, b: View) {
    let n = l.rows;
    if n <= LEAF {
        for j in 0..n {
            unsafe {
                for k in 0..j {
                    let ljk = *l.at(j, k);
                    if ljk != 0.0 {
                        for i in 0..b.rows {
                            *b.at(i, j) -= *b.at(i, k) * ljk;
                        }
                    }
                }
                let inv = 1.0 / *l.at(j, j);
                for i in 0..b.rows {
                    *b.at(i, j) *= inv;
                }
            }
        }
        return;
    }
    let (l11, l21, l22) = l.quarters(n / 2);
    let (b1, b2) = b.split_cols(n / 2);
    unsafe {
        trsm_right_lower_t(l11, b1);
        gemm(-1.0, b1, false, l21, true, 1.0, b2);
        trsm_right_lower_t(l22, b2);
    }
}

/// `b ← L⁻¹·b` (L lower n × n; b n × m).
///
/// # Safety
/// Valid, non-overlapping views.
unsafe fn trsm_left_lower(l: View, b: View) {
    let n = l.rows;
    if n <= LEAF {
        for col in 0..b.cols {
            for i in 0..n {
                unsafe {
                    let mut s = *b.at(i, col);
                    for k in 0..i {
                        s -= *l.at(i, k) * *b.at(k, col);
                    }
                    *b.at(i, col) = s / *l.at(i, i);
                }
            }
        }
        return;
    }
    let (l11, l21, l22) = l.quarters(n / 2);
    let (b1, b2) = b.split_rows(n / 2);
    unsafe {
        trsm_left_lower(l11, b1);
        gemm(-1.0, l21, false, b1, false, 1.0, b2);
        trsm_left_lower(l22, b2);
    }
}

/// `b ← L⁻ᵀ·b` (L lower n × n; b n × m).
///
/// # Safety
/// Valid, non-overlapping views.
unsafe fn trsm_left_lower_t(l: View, b: View) {
    let n = l.rows;
    if n <= LEAF {
        for col in 0..b.cols {
            for i in (0..n).rev() {
                unsafe {
                    let mut s = *b.at(i, col);
                    for k in i + 1..n {
                        s -= *l.at(k, i) * *b.at(k, col);
                    }
                    *b.at(i, col) = s / *l.at(i, i);
                }
            }
        }
        return;
    }
    let (l11, l21, l22) = l.quarters(n / 2);
    let (b1, b2) = b.split_rows(n / 2);
    unsafe {
        trsm_left_lower_t(l22, b2);
        gemm(-1.0, l21, true, b2, false, 1.0, b1);
        trsm_left_lower_t(l11, b1);
    }
}

/// Lower triangle of `c ← c + alpha·a·aᵀ` (c n × n, a n × k).
///
/// # Safety
/// Valid, non-overlapping views.
unsafe fn syrk_lower(alpha: f64, a: View, c: View) {
    let n = c.rows;
    if n <= LEAF {
        // The whole block (its upper part is scratch).
        unsafe { gemm(alpha, a, false, a, true, 1.0, c) };
        return;
    }
    let (c11, c21, c22) = c.quarters(n / 2);
    let (a1, a2) = a.split_rows(n / 2);
    unsafe {
        syrk_lower(alpha, a1, c11);
        gemm(alpha, a2, false, a1, true, 1.0, c21);
        syrk_lower(alpha, a2, c22);
    }
}

/// Lower triangle of `c ← c + alpha·aᵀ·a` (c n × n, a k × n).
///
/// # Safety
/// Valid, non-overlapping views.
unsafe fn syrk_lower_t(alpha: f64, a: View, c: View) {
    let n = c.rows;
    if n <= LEAF {
        unsafe { gemm(alpha, a, true, a, false, 1.0, c) };
        return;
    }
    let (c11, c21, c22) = c.quarters(n / 2);
    let (a1, a2) = a.split_cols(n / 2);
    unsafe {
        syrk_lower_t(alpha, a1, c11);
        gemm(alpha, a2, true, a1, false, 1.0, c21);
        syrk_lower_t(alpha, a2, c22);
    }
}

/// `b ← b·L` (L lower n × n; b m × n).
///
/// # Safety
/// Valid, non-overlapping views.
unsafe fn trmm_right_lower(b: View, l: View) {
    let n = l.rows;
    if n <= LEAF {
        // Column j of the product needs columns k ≥ j of b: ascending j.
        for j in 0..n {
            unsafe {
                let ljj = *l.at(j, j);
                for i in 0..b.rows {
                    *b.at(i, j) *= ljj;
                }
                for k in j + 1..n {
                    let lkj = *l.at(k, j);
                    if lkj != 0.0 {
                        for i in 0..b.rows {
                            *b.at(i, j) += *b.at(i, k) * lkj;
                        }
                    }
                }
            }
        }
        return;
    }
    let (l11, l21, l22) = l.quarters(n / 2);
    let (b1, b2) = b.split_cols(n / 2);
    unsafe {
        trmm_right_lower(b1, l11);
        gemm(1.0, b2, false, l21, false, 1.0, b1);
        trmm_right_lower(b2, l22);
    }
}

/// `b ← alpha·L·b` (L lower n × n; b n × m).
///
/// # Safety
/// Valid, non-overlapping views.
unsafe fn trmm_left_lower(alpha: f64, l: View, b: View) {
    let n = l.rows;
    if n <= LEAF {
        // Row i of the product needs rows k ≤ i of b: descending i.
        for col in 0..b.cols {
            for i in (0..n).rev() {
                unsafe {
                    let mut s = 0.0;
                    for k in 0..=i {
                        s += *l.at(i, k) * *b.at(k, col);
                    }
                    *b.at(i, col) = alpha * s;
                }
            }
        }
        return;
    }
    let (l11, l21, l22) = l.quarters(n / 2);
    let (b1, b2) = b.split_rows(n / 2);
    unsafe {
        trmm_left_lower(alpha, l22, b2);
        gemm(alpha, l21, false, b1, false, 1.0, b2);
        trmm_left_lower(alpha, l11, b1);
    }
}

/// `b ← Lᵀ·b` (L lower n × n; b n × m).
///
/// # Safety
/// Valid, non-overlapping views.
unsafe fn trmm_left_lower_t(l: View, b: View) {
    let n = l.rows;
    if n <= LEAF {
        // Row i of the product needs rows k ≥ i of b: ascending i.
        for col in 0..b.cols {
            for i in 0..n {
                unsafe {
                    let mut s = 0.0;
                    for k in i..n {
                        s += *l.at(k, i) * *b.at(k, col);
                    }
                    *b.at(i, col) = s;
                }
            }
        }
        return;
    }
    let (l11, l21, l22) = l.quarters(n / 2);
    let (b1, b2) = b.split_rows(n / 2);
    unsafe {
        trmm_left_lower_t(l11, b1);
        gemm(1.0, l21, true, b2, false, 1.0, b1);
        trmm_left_lower_t(l22, b2);
    }
}

/// `l ← L⁻¹` in place (lower triangle; the upper one is not read).
///
/// # Safety
/// Valid square view.
unsafe fn trtri_lower(l: View) {
    let n = l.rows;
    if n <= LEAF {
        for j in 0..n {
            unsafe {
                let inv = 1.0 / *l.at(j, j);
                *l.at(j, j) = inv;
                // Column j of L⁻¹ below the diagonal: forward substitution.
                for i in j + 1..n {
                    let mut s = 0.0;
                    for k in j..i {
                        s += *l.at(i, k) * *l.at(k, j);
                    }
                    *l.at(i, j) = -s / *l.at(i, i);
                }
            }
        }
        return;
    }
    unsafe { invert_blocks(l.quarters(n / 2)) };
}

/// The blocks (1,1), (2,1), (2,2) of `L⁻¹` in place of L's: the diagonal
/// blocks inverted, then W21 = −W22·L21·W11.
///
/// # Safety
/// Disjoint blocks of one valid square view.
unsafe fn invert_blocks((w11, w21, w22): (View, View, View)) {
    unsafe {
        trtri_lower(w11);
        trtri_lower(w22);
        trmm_right_lower(w21, w11);
        trmm_left_lower(-1.0, w22, w21);
    }
}

/// Lower triangle of `WᵀW` in place of the lower triangular W (its upper
/// triangle is not read).
///
/// # Safety
/// Valid square view.
unsafe fn lauum_lower(w: View) {
    let n = w.rows;
    if n <= LEAF {
        // V_ij = Σ_{k ≥ i} W_ki W_kj for i ≥ j, in increasing i (row i of V needs rows ≥ i of W).
        for i in 0..n {
            for j in 0..=i {
                let mut s = 0.0;
                for k in i..n {
                    unsafe { s += *w.at(k, i) * *w.at(k, j) };
                }
                unsafe { *w.at(i, j) = s };
            }
        }
        return;
    }
    let (w11, w21, w22) = w.quarters(n / 2);
    unsafe {
        lauum_lower(w11);
        syrk_lower_t(1.0, w21, w11);
        // V21 = W22ᵀ·W21.
        trmm_left_lower_t(w22, w21);
        lauum_lower(w22);
    }
}

fn zero_upper(m: &mut DMatrix<f64>) {
    let n = m.ncols();
    for j in 1..n {
        for i in 0..j.min(m.nrows()) {
            m[(i, j)] = 0.0;
        }
    }
}

fn mirror_lower(m: &mut DMatrix<f64>) {
    let n = m.ncols();
    for j in 1..n {
        for i in 0..j {
            m[(i, j)] = m[(j, i)];
        }
    }
}

/// The lower Cholesky factor of the symmetric matrix `a` (only its lower
/// triangle is read), or the index of the first non-positive pivot.
pub fn cholesky(mut a: DMatrix<f64>) -> Result<DMatrix<f64>, usize> {
    assert!(a.is_square());
    if a.nrows() == 0 {
        return Ok(a);
    }
    // SAFETY: the view covers exactly the owned square matrix.
    unsafe { chol(View::of(&mut a))? };
    zero_upper(&mut a);
    Ok(a)
}

/// `log |A|` from its Cholesky factor.
pub fn log_det(l: &DMatrix<f64>) -> f64 {
    2.0 * l.diagonal().iter().map(|d| d.ln()).sum::<f64>()
}

/// `L⁻¹` of a lower triangular matrix (zero upper triangle).
pub fn lower_inverse(mut l: DMatrix<f64>) -> DMatrix<f64> {
    assert!(l.is_square());
    // SAFETY: the view covers the owned square matrix.
    unsafe { trtri_lower(View::of(&mut l)) };
    zero_upper(&mut l);
    l
}

/// `A⁻¹ = L⁻ᵀL⁻¹` from the lower Cholesky factor L of A (symmetric result).
pub fn inverse_from_cholesky(l: &DMatrix<f64>) -> DMatrix<f64> {
    let mut w = l.clone();
    // SAFETY: the view covers the owned square matrix.
    unsafe {
        trtri_lower(View::of(&mut w));
        lauum_lower(View::of(&mut w));
    }
    mirror_lower(&mut w);
    w
}

/// Cholesky in place: the lower triangle of `a` becomes L (its upper triangle
/// is left as it was); Err(j) at a non-positive pivot.
pub fn cholesky_in_place(a: &mut DMatrix<f64>) -> Result<(), usize> {
    assert!(a.is_square());
    // SAFETY: the view covers exactly the owned square matrix.
    unsafe { chol(View::of(a)) }
}

/// The blocks of `A⁻¹` that GP-EP reads, in place of A's lower Cholesky
/// factor L, for the split `[0, n1) ∪ [n1, n)`: afterwards the lower triangle
/// holds `(A⁻¹)_21` (rows n1.., columns ..n1) and `(A⁻¹)_22`, and the returned
/// vector is the diagonal of `(A⁻¹)_11`. About n³/3 + n1³/3 + n1²n2 + 2n1n2²
/// flops instead of the full inverse's n³.
pub fn partial_inverse(l: &mut DMatrix<f64>, n1: usize) -> Vec<f64> {
    assert!(l.is_square() && n1 <= l.nrows());
    let n = l.nrows();
    let (w11, w21, w22) = View::of(l).quarters(n1);
    // SAFETY: disjoint blocks of the owned square matrix.
    unsafe { invert_blocks((w11, w21, w22)) };
    // diag(V11) = column norms² of W11 (lower) and W21.
    let diag = (0..n1)
        .map(|k| {
            let col = l.column(k);
            col.rows(k, n - k).norm_squared()
        })
        .collect();
    // SAFETY: as above.
    unsafe {
        trmm_left_lower_t(w22, w21);
        lauum_lower(w22);
    }
    diag
}

/// A view of a matrix the routine only reads.
fn read_only(m: &DMatrix<f64>) -> View {
    View {
        p: m.as_ptr() as *mut f64,
        rows: m.nrows(),
        cols: m.ncols(),
        ld: m.nrows(),
    }
}

/// `b ← L⁻¹b` for every column of b (only L's lower triangle is read).
pub fn solve_lower(l: &DMatrix<f64>, b: &mut DMatrix<f64>) {
    assert!(l.is_square() && l.nrows() == b.nrows());
    // SAFETY: trsm_left_lower never writes its first argument; `b` is a
    // distinct, uniquely borrowed matrix of matching shape.
    unsafe { trsm_left_lower(read_only(l), View::of(b)) };
}

/// `b ← L⁻ᵀb` for every column of b (only L's lower triangle is read).
pub fn solve_lower_t(l: &DMatrix<f64>, b: &mut DMatrix<f64>) {
    assert!(l.is_square() && l.nrows() == b.nrows());
    // SAFETY: as in `solve_lower`.
    unsafe { trsm_left_lower_t(read_only(l), View::of(b)) };
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spd(n: usize) -> DMatrix<f64> {
        let b = DMatrix::from_fn(n, n, |i, j| ((i * 7 + j * 13) as f64 * 0.37).sin());
        &b * b.transpose() + DMatrix::identity(n, n) * (n as f64 * 0.1)
    }

    /// Every routine against nalgebra's, at sizes that exercise the leaves and
    /// several levels of recursion (odd splits included).
    #[test]
    fn matches_nalgebra() {
        for n in [1, 5, 48, 49, 131, 300] {
            let a = spd(n);
            let l = cholesky(a.clone()).unwrap();
            let want = a.clone().cholesky().unwrap().l();
            assert!((&l - &want).amax() < 1e-10 * want.amax(), "chol n={n}");
            let li = lower_inverse(l.clone());
            assert!(
                (&li * &l - DMatrix::identity(n, n)).amax() < 1e-10,
                "trtri n={n}"
            );
            let inv = inverse_from_cholesky(&l);
            assert!(
                (&inv * &a - DMatrix::identity(n, n)).amax() < 1e-9,
                "inv n={n}"
            );
            assert_eq!(inv, inv.transpose());
            let mut b = DMatrix::from_fn(n, 3, |i, j| (i + j) as f64 * 0.1 - 1.0);
            let b0 = b.clone();
            solve_lower(&l, &mut b);
            assert!((&l * &b - &b0).amax() < 1e-10, "solve n={n}");
            solve_lower_t(&l, &mut b);
            assert!((&a * &b - &b0).amax() < 1e-9, "solve_t n={n}");
            let want_ld = 2.0 * want.diagonal().iter().map(|d| d.ln()).sum::<f64>();
            assert!((log_det(&l) - want_ld).abs() < 1e-9 * want_ld.abs().max(1.0));
        }
    }

    #[test]
    fn partial_inverse_matches_the_inverse() {
        for (n, n1) in [(10, 3), (130, 97), (131, 0), (60, 60)] {
            let a = spd(n);
            let inv = a.clone().try_inverse().unwrap();
            let mut l = a.clone();
            cholesky_in_place(&mut l).unwrap();
            let diag = partial_inverse(&mut l, n1);
            for k in 0..n1 {
                assert!((diag[k] - inv[(k, k)]).abs() < 1e-10, "diag {k}");
            }
            for j in 0..n {
                for i in n1.max(j)..n {
                    assert!((l[(i, j)] - inv[(i, j)]).abs() < 1e-10, "({i}, {j})");
                }
            }
        }
    }

    #[test]
    fn reports_the_failing_pivot() {
        let mut a = spd(100);
        a[(70, 70)] = -1e6;
        assert_eq!(cholesky(a), Err(70));
    }
}
