//! GEMM on strided views of slices (blocks of row-major site matrices against
//! column-major nalgebra matrices), through matrixmultiply; and the column
//! sums of such blocks.

use rayon::prelude::*;

/// Element (i, j) of a `rows × cols` matrix at `data[i·rs + j·cs]`.
#[derive(Clone, Copy)]
pub(crate) struct View<'a> {
    pub data: &'a [f64],
    pub rows: usize,
    pub cols: usize,
    pub rs: usize,
    pub cs: usize,
}

pub(crate) struct ViewMut<'a> {
    pub data: &'a mut [f64],
    pub rows: usize,
    pub cols: usize,
    pub rs: usize,
    pub cs: usize,
}

fn span(rows: usize, cols: usize, rs: usize, cs: usize) -> usize {
    if rows == 0 || cols == 0 {
        0
    } else {
        (rows - 1) * rs + (cols - 1) * cs + 1
    }
}

impl<'a> View<'a> {
    /// A column-major nalgebra matrix.
    pub fn of(m: &'a nalgebra::DMatrix<f64>) -> View<'a> {
        View {
            data: m.as_slice(),
            rows: m.nrows(),
            cols: m.ncols(),
            rs: 1,
            cs: m.nrows(),
        }
    }
    pub fn t(self) -> View<'a> {
        View {
            rows: self.cols,
            cols: self.rows,
            rs: self.cs,
            cs: self.rs,
            ..self
        }
    }
    /// Rows `r0..r1`.
    pub fn rows(self, r0: usize, r1: usize) -> View<'a> {
        View {
            data: &self.data[r0 * self.rs..],
            rows: r1 - r0,
            ..self
        }
    }
}

/// `c ← alpha·a·b + beta·c`.
pub(crate) fn gemm(alpha: f64, a: View<'_>, b: View<'_>, beta: f64, c: ViewMut<'_>) {
    assert_eq!(a.cols, b.rows, "inner dimensions");
    assert_eq!((a.rows, b.cols), (c.rows, c.cols), "output shape");
    assert!(span(a.rows, a.cols, a.rs, a.cs) <= a.data.len());
    assert!(span(b.rows, b.cols, b.rs, b.cs) <= b.data.len());
    assert!(span(c.rows, c.cols, c.rs, c.cs) <= c.data.len());
    if c.rows == 0 || c.cols == 0 {
        return;
    }
    if a.cols == 0 {
        for i in 0..c.rows {
            for j in 0..c.cols {
                c.data[i * c.rs + j * c.cs] *= beta;
            }
        }
        return;
    }
    // SAFETY: the asserts above keep every addressed element inside the three
    // slices; `c` is a unique borrow, so it aliases neither input.
    unsafe {
        matrixmultiply::dgemm(
            a.rows,
            a.cols,
            b.cols,
            alpha,
            a.data.as_ptr(),
            a.rs as isize,
            a.cs as isize,
            b.data.as_ptr(),
            b.rs as isize,
            b.cs as isize,
            beta,
            c.data.as_mut_ptr(),
            c.rs as isize,
            c.cs as isize,
        );
    }
}

/// Adds the block's rows to the column sums, columns split over threads
/// (each column sums its rows in order).
pub fn column_sums(
    kb: &[f64],
    hb: &[f64],
    b: usize,
    nn: usize,
    k_col: &mut [f64],
    h_col: &mut [f64],
) {
    const SLAB: usize = 512;
    k_col
        .par_chunks_mut(SLAB)
        .zip(h_col.par_chunks_mut(SLAB))
        .enumerate()
        .for_each(|(s, (kc, hc))| {
            let j0 = s * SLAB;
            for r in 0..b {
                let (kr, hr) = (
                    &kb[r * nn + j0..][..kc.len()],
                    &hb[r * nn + j0..][..hc.len()],
                );
                for (a, v) in kc.iter_mut().zip(kr) {
                    *a += v;
                }
                for (a, v) in hc.iter_mut().zip(hr) {
                    *a += v;
                }
            }
        });
}

#[cfg(test)]
mod tests {
    use super::*;
    use nalgebra::DMatrix;

    #[test]
    fn strided_blocks_match_nalgebra() {
        let a = DMatrix::from_fn(9, 4, |i, j| (i as f64 * 0.3 - j as f64).sin());
        let b = DMatrix::from_fn(6, 4, |i, j| (i + 2 * j) as f64 * 0.1 - 0.2);
        // Rows 2..7 of a times bᵀ into a row-major 5 × 6 buffer.
        let mut out = vec![0.0; 30];
        gemm(
            1.0,
            View::of(&a).rows(2, 7),
            View::of(&b).t(),
            0.0,
            ViewMut {
                data: &mut out,
                rows: 5,
                cols: 6,
                rs: 6,
                cs: 1,
            },
        );
        let want = a.rows(2, 5) * b.transpose();
        for i in 0..5 {
            for j in 0..6 {
                assert!((out[i * 6 + j] - want[(i, j)]).abs() < 1e-13);
            }
        }
    }
}
