//! `out = A·Bᵀ` for one fixed matrix A, packed once, against many small row
//! blocks B: SMC's score products (A = the training rows, B = a block of
//! particles) and its proposals (A = the Cholesky factor of the particles'
//! fit). matrixmultiply re-packed A on every call (a quarter of DNA's run time)
//! and starts its own threads inside rayon's above a size; here A is packed
//! once in panels of `PANEL` rows stored k-major, and register tiles of
//! (rows of a panel) × NR rows of B run with AVX-512 or AVX2 + FMA.
//!
//! Every output is the chain `acc ← fma(a_ik, b_jk, acc)` over k = 0, 1, …
//! from acc = 0 on every code path (AVX-512, AVX2, scalar `mul_add`), so the
//! bits depend neither on the CPU nor on block sizes or threads.

/// An element type of the products (f32 for scores where it is safe, f64).
pub trait Element: Copy + Default + PartialEq + std::fmt::Debug + Send + Sync + 'static {
    /// Rows per panel of A: a multiple of the register tiles' heights.
    const PANEL: usize;
    fn from_f64(x: f64) -> Self;
    /// `self·b + c`, rounded once.
    fn fma(self, b: Self, c: Self) -> Self;
    /// The vectorised products (see `PackedRows::mul_bt`).
    #[doc(hidden)]
    fn kernel(isa: Isa, a: &PackedRows<Self>, bp: &[Self], c: usize, out: &mut [Self], ld: usize);
    /// Rows of B per register tile of `isa` (0: unpacked, scalar path); the
    /// same for f32 and f64.
    #[doc(hidden)]
    fn tile_rows(isa: Isa) -> usize {
        match isa {
            Isa::Avx512 => x86::NR_AVX512,
            Isa::Avx2 => x86::NR_AVX2,
            Isa::Scalar => 0,
        }
    }
}

/// The instruction set the products run on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Isa {
    Avx512,
    Avx2,
    Scalar,
}

impl Isa {
    /// The best the CPU offers.
    pub fn detect() -> Isa {
        #[cfg(target_arch = "x86_64")]
        {
            if std::arch::is_x86_feature_detected!("avx512f") {
                return Isa::Avx512;
            }
            if std::arch::is_x86_feature_detected!("avx2")
                && std::arch::is_x86_feature_detected!("fma")
            {
                return Isa::Avx2;
            }
        }
        Isa::Scalar
    }

    /// Every path this CPU can run (for tests).
    pub fn available() -> Vec<Isa> {
        match Isa::detect() {
            Isa::Avx512 => {
                let mut v = vec![Isa::Avx512];
                #[cfg(target_arch = "x86_64")]
                if std::arch::is_x86_feature_detected!("avx2")
                    && std::arch::is_x86_feature_detected!("fma")
                {
                    v.push(Isa::Avx2);
                }
                v.push(Isa::Scalar);
                v
            }
            Isa::Avx2 => vec![Isa::Avx2, Isa::Scalar],
            Isa::Scalar => vec![Isa::Scalar],
        }
    }
}

/// A `rows × depth` matrix in panels of `T::PANEL` rows (the last padded with
/// zeros): element (i, k) at `data[(p·depth + k)·PANEL + l]`, i = p·PANEL + l.
#[derive(Debug, Clone)]
pub struct PackedRows<T: Element> {
    data: Vec<T>,
    rows: usize,
    depth: usize,
    isa: Isa,
}

impl<T: Element> PackedRows<T> {
    /// Packs A from its elements (converted to T).
    pub fn new(rows: usize, depth: usize, at: impl Fn(usize, usize) -> f64) -> PackedRows<T> {
        let panels = rows.div_ceil(T::PANEL);
        let mut data = vec![T::default(); panels * depth * T::PANEL];
        for i in 0..rows {
            let (p, l) = (i / T::PANEL, i % T::PANEL);
            for k in 0..depth {
                data[(p * depth + k) * T::PANEL + l] = T::from_f64(at(i, k));
            }
        }
        PackedRows {
            data,
            rows,
            depth,
            isa: Isa::detect(),
        }
    }

    /// The same matrix on another code path (tests; `isa` must be available).
    pub fn with_isa(mut self, isa: Isa) -> PackedRows<T> {
        assert!(Isa::available().contains(&isa), "{isa:?} is not available");
        self.isa = isa;
        self
    }

    pub fn rows(&self) -> usize {
        self.rows
    }

    pub fn depth(&self) -> usize {
        self.depth
    }

    /// `out[j·ld + i] = Σ_k A[i, k]·B[j, k]` for the `c` rows of `b` (row-major
    /// c × depth, converted to T) and every row i of A; `scratch` holds B packed.
    pub fn mul_bt(&self, b: &[f64], c: usize, out: &mut [T], ld: usize, scratch: &mut Vec<T>) {
        if !has_work(self.rows, self.depth, b, c, out, ld) {
            return;
        }
        let nr = T::tile_rows(self.isa);
        if nr == 0 {
            self.mul_bt_scalar(b, c, out, ld, scratch);
            return;
        }
        pack_tiles(b, c, self.depth, nr, scratch);
        T::kernel(self.isa, self, scratch, c, out, ld);
    }

    /// The reference order of operations, one output at a time.
    fn mul_bt_scalar(&self, b: &[f64], c: usize, out: &mut [T], ld: usize, row: &mut Vec<T>) {
        let depth = self.depth;
        for j in 0..c {
            row.clear();
            row.extend(
                b[j * depth..(j + 1) * depth]
                    .iter()
                    .map(|&v| T::from_f64(v)),
            );
            for i in 0..self.rows {
                let (p, l) = (i / T::PANEL, i % T::PANEL);
                let base = p * depth * T::PANEL + l;
                let mut acc = T::default();
                for (k, &bk) in row.iter().enumerate() {
                    acc = self.data[base + k * T::PANEL].fma(bk, acc);
                }
                out[j * ld + i] = acc;
            }
        }
    }
}

/// Checks `out[j·ld + i]` (i < rows, j < c) and B's c rows of `depth` against
/// the buffers; false when there is nothing to compute.
pub(super) fn has_work<T>(
    rows: usize,
    depth: usize,
    b: &[f64],
    c: usize,
    out: &[T],
    ld: usize,
) -> bool {
    assert!(b.len() >= c * depth, "b holds fewer than c rows");
    assert!(
        ld >= rows,
        "the output's leading dimension is below the rows of A"
    );
    if c == 0 || rows == 0 {
        return false;
    }
    assert!(out.len() >= (c - 1) * ld + rows, "the output is too short");
    true
}

/// B (row-major c × depth) in tiles of `width` rows, k-major (a tile's values
/// for one k are adjacent), the last tile padded with zeros.
pub(super) fn pack_tiles<T: Element>(
    b: &[f64],
    c: usize,
    depth: usize,
    width: usize,
    scratch: &mut Vec<T>,
) {
    scratch.clear();
    scratch.resize(c.div_ceil(width) * depth * width, T::default());
    for j in 0..c {
        let (t, jj) = (j / width, j % width);
        let tile = &mut scratch[t * depth * width..(t + 1) * depth * width];
        for (k, &v) in b[j * depth..(j + 1) * depth].iter().enumerate() {
            tile[k * width + jj] = T::from_f64(v);
        }
    }
}

impl Element for f32 {
    const PANEL: usize = 32;
    #[inline]
    fn from_f64(x: f64) -> f32 {
        x as f32
    }
    #[inline]
    fn fma(self, b: f32, c: f32) -> f32 {
        self.mul_add(b, c)
    }
    fn kernel(isa: Isa, a: &PackedRows<f32>, bp: &[f32], c: usize, out: &mut [f32], ld: usize) {
        match isa {
            // SAFETY: `isa` came from `Isa::detect` or was checked by `with_isa`;
            // `mul_bt` checked the buffers against the shapes.
            #[cfg(target_arch = "x86_64")]
            Isa::Avx512 => unsafe { x86::f32_avx512(a, bp, c, out, ld) },
            #[cfg(target_arch = "x86_64")]
            Isa::Avx2 => unsafe { x86::f32_avx2(a, bp, c, out, ld) },
            _ => unreachable!("the scalar path does not pack B"),
        }
    }
}

impl Element for f64 {
    const PANEL: usize = 16;
    #[inline]
    fn from_f64(x: f64) -> f64 {
        x
    }
    #[inline]
    fn fma(self, b: f64, c: f64) -> f64 {
        self.mul_add(b, c)
    }
    fn kernel(isa: Isa, a: &PackedRows<f64>, bp: &[f64], c: usize, out: &mut [f64], ld: usize) {
        match isa {
            // SAFETY: as for f32.
            #[cfg(target_arch = "x86_64")]
            Isa::Avx512 => unsafe { x86::f64_avx512(a, bp, c, out, ld) },
            #[cfg(target_arch = "x86_64")]
            Isa::Avx2 => unsafe { x86::f64_avx2(a, bp, c, out, ld) },
            _ => unreachable!("the scalar path does not pack B"),
        }
    }
}

#[cfg(not(target_arch = "x86_64"))]
mod x86 {
    pub const NR_AVX512: usize = 0;
    pub const NR_AVX2: usize = 0;
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    use std::arch::x86_64::*;

    use super::{Element, PackedRows};

    /// Rows of B per register tile: AVX-512 holds 2 × 12 accumulators (of 32
    /// registers; B is broadcast from memory), AVX2 2 × 6 (of 16, with two
    /// rows of A and one broadcast).
    pub const NR_AVX512: usize = 12;
    pub const NR_AVX2: usize = 6;
    /// Vectors per column of a register tile.
    const V: usize = 2;

    /// One SIMD vector of T.
    trait Lanes<T>: Copy {
        const W: usize;
        unsafe fn zero() -> Self;
        unsafe fn load(p: *const T) -> Self;
        /// `self·(*b) + acc`, fused.
        unsafe fn fma_splat(self, b: *const T, acc: Self) -> Self;
        unsafe fn store(self, p: *mut T);
    }

    macro_rules! lanes {
        ($name:ident, $t:ty, $v:ty, $w:expr, $zero:ident, $load:ident, $set1:ident, $fma:ident, $store:ident) => {
            #[derive(Clone, Copy)]
            struct $name($v);
            impl Lanes<$t> for $name {
                const W: usize = $w;
                #[inline(always)]
                unsafe fn zero() -> Self {
                    unsafe { $name($zero()) }
                }
                #[inline(always)]
                unsafe fn load(p: *const $t) -> Self {
                    unsafe { $name($load(p)) }
                }
                #[inline(always)]
                unsafe fn fma_splat(self, b: *const $t, acc: Self) -> Self {
                    unsafe { $name($fma(self.0, $set1(*b), acc.0)) }
                }
                #[inline(always)]
                unsafe fn store(self, p: *mut $t) {
                    unsafe { $store(p, self.0) }
                }
            }
        };
    }

    lanes!(
        Z32,
        f32,
        __m512,
        16,
        _mm512_setzero_ps,
        _mm512_loadu_ps,
        _mm512_set1_ps,
        _mm512_fmadd_ps,
        _mm512_storeu_ps
    );
    lanes!(
        Z64,
        f64,
        __m512d,
        8,
        _mm512_setzero_pd,
        _mm512_loadu_pd,
        _mm512_set1_pd,
        _mm512_fmadd_pd,
        _mm512_storeu_pd
    );
    lanes!(
        Y32,
        f32,
        __m256,
        8,
        _mm256_setzero_ps,
        _mm256_loadu_ps,
        _mm256_set1_ps,
        _mm256_fmadd_ps,
        _mm256_storeu_ps
    );
    lanes!(
        Y64,
        f64,
        __m256d,
        4,
        _mm256_setzero_pd,
        _mm256_loadu_pd,
        _mm256_set1_pd,
        _mm256_fmadd_pd,
        _mm256_storeu_pd
    );

    /// Register tiles of V·W rows of a panel × NR rows of B, panel-major (a
    /// panel of A stays in L1 while the tiles of B stream by).
    ///
    /// Safety: the ISA of `S` is enabled; `bp` holds ⌈c/NR⌉ packed tiles; `out`
    /// holds (c − 1)·ld + rows elements.
    #[inline(always)]
    unsafe fn drive<T: Element, S: Lanes<T>, const NR: usize>(
        a: &PackedRows<T>,
        bp: &[T],
        c: usize,
        out: &mut [T],
        ld: usize,
    ) {
        let depth = a.depth;
        let h = V * S::W;
        let panels = a.rows.div_ceil(T::PANEL);
        let tiles = c.div_ceil(NR);
        debug_assert!(bp.len() >= tiles * depth * NR);
        debug_assert!(T::PANEL.is_multiple_of(h) && h <= 64);
        let out = out.as_mut_ptr();
        for p in 0..panels {
            let panel = a.data[p * depth * T::PANEL..].as_ptr();
            for r in (0..T::PANEL).step_by(h) {
                let row0 = p * T::PANEL + r;
                if row0 >= a.rows {
                    break;
                }
                let valid = (a.rows - row0).min(h);
                for t in 0..tiles {
                    // SAFETY (whole block): the panel holds depth·PANEL values,
                    // read at k·PANEL + r + v·W < depth·PANEL; the tile holds
                    // depth·NR values; outputs are written at j·ld + row0 + lane
                    // for j < c and row0 + lane < rows.
                    unsafe {
                        let mut acc = [[S::zero(); V]; NR];
                        let mut ap = panel.add(r);
                        let mut bk = bp.as_ptr().add(t * depth * NR);
                        for _ in 0..depth {
                            let av = [S::load(ap), S::load(ap.add(S::W))];
                            for (j, aj) in acc.iter_mut().enumerate() {
                                for v in 0..V {
                                    aj[v] = av[v].fma_splat(bk.add(j), aj[v]);
                                }
                            }
                            ap = ap.add(T::PANEL);
                            bk = bk.add(NR);
                        }
                        let cols = (c - t * NR).min(NR);
                        for (j, aj) in acc.iter().enumerate().take(cols) {
                            let o = out.add((t * NR + j) * ld + row0);
                            if valid == h {
                                for (v, a) in aj.iter().enumerate() {
                                    a.store(o.add(v * S::W));
                                }
                            } else {
                                let mut tmp = [T::default(); 64];
                                for (v, a) in aj.iter().enumerate() {
                                    a.store(tmp.as_mut_ptr().add(v * S::W));
                                }
                                std::ptr::copy_nonoverlapping(tmp.as_ptr(), o, valid);
                            }
                        }
                    }
                }
            }
        }
    }

    #[target_feature(enable = "avx512f")]
    pub unsafe fn f32_avx512(
        a: &PackedRows<f32>,
        bp: &[f32],
        c: usize,
        out: &mut [f32],
        ld: usize,
    ) {
        unsafe { drive::<f32, Z32, NR_AVX512>(a, bp, c, out, ld) }
    }

    #[target_feature(enable = "avx512f")]
    pub unsafe fn f64_avx512(
        a: &PackedRows<f64>,
        bp: &[f64],
        c: usize,
        out: &mut [f64],
        ld: usize,
    ) {
        unsafe { drive::<f64, Z64, NR_AVX512>(a, bp, c, out, ld) }
    }

    #[target_feature(enable = "avx2,fma")]
    pub unsafe fn f32_avx2(a: &PackedRows<f32>, bp: &[f32], c: usize, out: &mut [f32], ld: usize) {
        unsafe { drive::<f32, Y32, NR_AVX2>(a, bp, c, out, ld) }
    }

    #[target_feature(enable = "avx2,fma")]
    pub unsafe fn f64_avx2(a: &PackedRows<f64>, bp: &[f64], c: usize, out: &mut [f64], ld: usize) {
        unsafe { drive::<f64, Y64, NR_AVX2>(a, bp, c, out, ld) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::numerics::rng;

    /// Every path gives the bits of the scalar FMA chain, for shapes that leave
    /// partial panels, tiles and register tiles.
    fn same_bits<T: Element>() {
        let mut r = rng::stream(11, &[]);
        for (rows, depth, c) in [
            (1, 1, 1),
            (37, 5, 13),
            (70, 180, 29),
            (16, 3, 12),
            (5, 0, 3),
        ] {
            let a: Vec<f64> = (0..rows * depth).map(|_| rng::normal(&mut r)).collect();
            let b: Vec<f64> = (0..c * depth).map(|_| rng::normal(&mut r)).collect();
            let ld = rows + 3;
            let mut want = vec![T::default(); c * ld];
            for j in 0..c {
                for i in 0..rows {
                    let mut acc = T::default();
                    for k in 0..depth {
                        acc = T::from_f64(a[i * depth + k]).fma(T::from_f64(b[j * depth + k]), acc);
                    }
                    want[j * ld + i] = acc;
                }
            }
            for isa in Isa::available() {
                let packed =
                    PackedRows::<T>::new(rows, depth, |i, k| a[i * depth + k]).with_isa(isa);
                let mut got = vec![T::default(); c * ld];
                packed.mul_bt(&b, c, &mut got, ld, &mut Vec::new());
                assert_eq!(got, want, "{isa:?} rows {rows} depth {depth} c {c}");
            }
        }
    }

    #[test]
    fn every_path_gives_the_scalar_bits() {
        same_bits::<f32>();
        same_bits::<f64>();
    }

    #[test]
    fn f64_products_are_accurate() {
        let (rows, depth, c) = (9, 4, 2);
        let a: Vec<f64> = (0..rows * depth).map(|v| (v as f64 * 0.37).sin()).collect();
        let b: Vec<f64> = (0..c * depth).map(|v| (v as f64 * 0.11).cos()).collect();
        let packed = PackedRows::<f64>::new(rows, depth, |i, k| a[i * depth + k]);
        let mut out = vec![0.0; c * rows];
        packed.mul_bt(&b, c, &mut out, rows, &mut Vec::new());
        for j in 0..c {
            for i in 0..rows {
                let want: f64 = (0..depth)
                    .map(|k| a[i * depth + k] * b[j * depth + k])
                    .sum();
                assert!((out[j * rows + i] - want).abs() < 1e-14);
            }
        }
    }
}
