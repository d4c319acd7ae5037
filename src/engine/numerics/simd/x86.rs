//! The x86-64 vector types of the site kernels: AVX-512 (8 × f64 in one
//! register) and AVX2 + FMA (2 × 4 × f64), each only used inside functions
//! compiled for those features after runtime detection.

use super::*;
use std::arch::x86_64::*;

/// 8 lanes in one AVX-512 register (only inside avx512f+dq code).
#[derive(Clone, Copy)]
pub(crate) struct F64x8(__m512d);

// SAFETY (whole impl): these methods are only instantiated inside functions
// compiled with `target_feature(enable = "avx512f,avx512dq,avx512vl,avx2,fma")`,
// called after runtime detection; slices are length-checked before raw loads.
impl Add for F64x8 {
    type Output = Self;
    #[inline(always)]
    fn add(self, o: Self) -> Self {
        unsafe { Self(_mm512_add_pd(self.0, o.0)) }
    }
}
impl Sub for F64x8 {
    type Output = Self;
    #[inline(always)]
    fn sub(self, o: Self) -> Self {
        unsafe { Self(_mm512_sub_pd(self.0, o.0)) }
    }
}
impl Mul for F64x8 {
    type Output = Self;
    #[inline(always)]
    fn mul(self, o: Self) -> Self {
        unsafe { Self(_mm512_mul_pd(self.0, o.0)) }
    }
}
impl Neg for F64x8 {
    type Output = Self;
    #[inline(always)]
    fn neg(self) -> Self {
        unsafe {
            Self(_mm512_castsi512_pd(_mm512_xor_si512(
                _mm512_castpd_si512(self.0),
                _mm512_set1_epi64(i64::MIN),
            )))
        }
    }
}

impl Simd for F64x8 {
    type M = __mmask8;
    const W: usize = 8;
    #[inline(always)]
    fn splat(x: f64) -> Self {
        unsafe { Self(_mm512_set1_pd(x)) }
    }
    #[inline(always)]
    fn load(s: &[f64]) -> Self {
        assert!(s.len() >= 8);
        unsafe { Self(_mm512_loadu_pd(s.as_ptr())) }
    }
    #[inline(always)]
    fn store(self, s: &mut [f64]) {
        assert!(s.len() >= 8);
        unsafe { _mm512_storeu_pd(s.as_mut_ptr(), self.0) }
    }
    #[inline(always)]
    fn load_f32(s: &[f32]) -> Self {
        assert!(s.len() >= 8);
        unsafe { Self(_mm512_cvtps_pd(_mm256_loadu_ps(s.as_ptr()))) }
    }
    #[inline(always)]
    fn store_f32(self, s: &mut [f32]) {
        assert!(s.len() >= 8);
        unsafe { _mm256_storeu_ps(s.as_mut_ptr(), _mm512_cvtpd_ps(self.0)) }
    }
    #[inline(always)]
    fn round_f32(self) -> Self {
        unsafe { Self(_mm512_cvtps_pd(_mm512_cvtpd_ps(self.0))) }
    }
    #[inline(always)]
    fn div(self, o: Self) -> Self {
        unsafe { Self(_mm512_div_pd(self.0, o.0)) }
    }
    #[inline(always)]
    fn fma(self, b: Self, c: Self) -> Self {
        unsafe { Self(_mm512_fmadd_pd(self.0, b.0, c.0)) }
    }
    #[inline(always)]
    fn abs(self) -> Self {
        unsafe { Self(_mm512_abs_pd(self.0)) }
    }
    #[inline(always)]
    fn min(self, o: Self) -> Self {
        unsafe { Self(_mm512_min_pd(self.0, o.0)) }
    }
    #[inline(always)]
    fn max(self, o: Self) -> Self {
        unsafe { Self(_mm512_max_pd(self.0, o.0)) }
    }
    #[inline(always)]
    fn lt(self, o: Self) -> __mmask8 {
        unsafe { _mm512_cmp_pd_mask::<_CMP_LT_OQ>(self.0, o.0) }
    }
    #[inline(always)]
    fn le(self, o: Self) -> __mmask8 {
        unsafe { _mm512_cmp_pd_mask::<_CMP_LE_OQ>(self.0, o.0) }
    }
    #[inline(always)]
    fn gt(self, o: Self) -> __mmask8 {
        unsafe { _mm512_cmp_pd_mask::<_CMP_GT_OQ>(self.0, o.0) }
    }
    #[inline(always)]
    fn mand(a: __mmask8, b: __mmask8) -> __mmask8 {
        a & b
    }
    #[inline(always)]
    fn mnot(a: __mmask8) -> __mmask8 {
        !a
    }
    #[inline(always)]
    fn select(m: __mmask8, a: Self, b: Self) -> Self {
        unsafe { Self(_mm512_mask_blend_pd(m, b.0, a.0)) }
    }
    #[inline(always)]
    fn bits_rsub(c: u64, x: Self) -> Self {
        unsafe {
            Self(_mm512_castsi512_pd(_mm512_sub_epi64(
                _mm512_set1_epi64(c as i64),
                _mm512_castpd_si512(x.0),
            )))
        }
    }
    #[inline(always)]
    fn bits_rsub_half(c: u64, x: Self) -> Self {
        unsafe {
            Self(_mm512_castsi512_pd(_mm512_sub_epi64(
                _mm512_set1_epi64(c as i64),
                _mm512_srli_epi64::<1>(_mm512_castpd_si512(x.0)),
            )))
        }
    }
    #[inline(always)]
    fn pow2_of_shifted(t: Self) -> Self {
        unsafe {
            let k = _mm512_sub_epi64(
                _mm512_castpd_si512(t.0),
                _mm512_set1_epi64(SHIFTER_BITS as i64),
            );
            Self(_mm512_castsi512_pd(_mm512_slli_epi64::<52>(
                _mm512_add_epi64(k, _mm512_set1_epi64(1023)),
            )))
        }
    }
    #[inline(always)]
    fn frexp_sqrt2(x: Self) -> (Self, Self) {
        unsafe {
            let ix = _mm512_sub_epi64(
                _mm512_castpd_si512(x.0),
                _mm512_set1_epi64(SQRT_HALF_BITS as i64),
            );
            let k = _mm512_srai_epi64::<52>(ix);
            let m = _mm512_add_epi64(
                _mm512_and_si512(ix, _mm512_set1_epi64(0x000f_ffff_ffff_ffff)),
                _mm512_set1_epi64(SQRT_HALF_BITS as i64),
            );
            (Self(_mm512_castsi512_pd(m)), Self(_mm512_cvtepi64_pd(k)))
        }
    }
    #[inline(always)]
    fn to_array(self, out: &mut [f64]) {
        self.store(out)
    }
    #[inline(always)]
    fn prod_err(a: Self, b: Self, p: Self) -> Self {
        unsafe { Self(_mm512_fmsub_pd(a.0, b.0, p.0)) }
    }
}

// ---------- AVX2: two 4-lane registers, 8 lanes like AVX-512 -------------

/// 8 lanes as two AVX2 registers (only inside avx2+fma code): the same lane
/// layout as `F64x8`, so both give identical bits, and two independent
/// dependency chains per operation.
#[derive(Clone, Copy)]
pub(crate) struct F64x4x2(__m256d, __m256d);

macro_rules! both {
    ($f:ident, $a:expr, $b:expr) => {
        unsafe { F64x4x2($f($a.0, $b.0), $f($a.1, $b.1)) }
    };
}

impl Add for F64x4x2 {
    type Output = Self;
    #[inline(always)]
    fn add(self, o: Self) -> Self {
        both!(_mm256_add_pd, self, o)
    }
}
impl Sub for F64x4x2 {
    type Output = Self;
    #[inline(always)]
    fn sub(self, o: Self) -> Self {
        both!(_mm256_sub_pd, self, o)
    }
}
impl Mul for F64x4x2 {
    type Output = Self;
    #[inline(always)]
    fn mul(self, o: Self) -> Self {
        both!(_mm256_mul_pd, self, o)
    }
}
impl Neg for F64x4x2 {
    type Output = Self;
    #[inline(always)]
    fn neg(self) -> Self {
        unsafe {
            let s = _mm256_set1_pd(-0.0);
            Self(_mm256_xor_pd(self.0, s), _mm256_xor_pd(self.1, s))
        }
    }
}

#[inline(always)]
unsafe fn i64x4(c: u64) -> __m256i {
    unsafe { _mm256_set1_epi64x(c as i64) }
}

impl Simd for F64x4x2 {
    type M = (__m256d, __m256d);
    const W: usize = 8;
    #[inline(always)]
    fn splat(x: f64) -> Self {
        unsafe { Self(_mm256_set1_pd(x), _mm256_set1_pd(x)) }
    }
    #[inline(always)]
    fn load(s: &[f64]) -> Self {
        assert!(s.len() >= 8);
        unsafe {
            Self(
                _mm256_loadu_pd(s.as_ptr()),
                _mm256_loadu_pd(s.as_ptr().add(4)),
            )
        }
    }
    #[inline(always)]
    fn store(self, s: &mut [f64]) {
        assert!(s.len() >= 8);
        unsafe {
            _mm256_storeu_pd(s.as_mut_ptr(), self.0);
            _mm256_storeu_pd(s.as_mut_ptr().add(4), self.1);
        }
    }
    #[inline(always)]
    fn load_f32(s: &[f32]) -> Self {
        assert!(s.len() >= 8);
        unsafe {
            Self(
                _mm256_cvtps_pd(_mm_loadu_ps(s.as_ptr())),
                _mm256_cvtps_pd(_mm_loadu_ps(s.as_ptr().add(4))),
            )
        }
    }
    #[inline(always)]
    fn store_f32(self, s: &mut [f32]) {
        assert!(s.len() >= 8);
        unsafe {
            _mm_storeu_ps(s.as_mut_ptr(), _mm256_cvtpd_ps(self.0));
            _mm_storeu_ps(s.as_mut_ptr().add(4), _mm256_cvtpd_ps(self.1));
        }
    }
    #[inline(always)]
    fn round_f32(self) -> Self {
        unsafe {
            Self(
                _mm256_cvtps_pd(_mm256_cvtpd_ps(self.0)),
                _mm256_cvtps_pd(_mm256_cvtpd_ps(self.1)),
            )
        }
    }
    #[inline(always)]
    fn div(self, o: Self) -> Self {
        both!(_mm256_div_pd, self, o)
    }
    #[inline(always)]
    fn fma(self, b: Self, c: Self) -> Self {
        unsafe {
            Self(
                _mm256_fmadd_pd(self.0, b.0, c.0),
                _mm256_fmadd_pd(self.1, b.1, c.1),
            )
        }
    }
    #[inline(always)]
    fn abs(self) -> Self {
        unsafe {
            let m = _mm256_castsi256_pd(i64x4(0x7fff_ffff_ffff_ffff));
            Self(_mm256_and_pd(self.0, m), _mm256_and_pd(self.1, m))
        }
    }
    #[inline(always)]
    fn min(self, o: Self) -> Self {
        both!(_mm256_min_pd, self, o)
    }
    #[inline(always)]
    fn max(self, o: Self) -> Self {
        both!(_mm256_max_pd, self, o)
    }
    #[inline(always)]
    fn lt(self, o: Self) -> Self::M {
        unsafe {
            (
                _mm256_cmp_pd::<_CMP_LT_OQ>(self.0, o.0),
                _mm256_cmp_pd::<_CMP_LT_OQ>(self.1, o.1),
            )
        }
    }
    #[inline(always)]
    fn le(self, o: Self) -> Self::M {
        unsafe {
            (
                _mm256_cmp_pd::<_CMP_LE_OQ>(self.0, o.0),
                _mm256_cmp_pd::<_CMP_LE_OQ>(self.1, o.1),
            )
        }
    }
    #[inline(always)]
    fn gt(self, o: Self) -> Self::M {
        unsafe {
            (
                _mm256_cmp_pd::<_CMP_GT_OQ>(self.0, o.0),
                _mm256_cmp_pd::<_CMP_GT_OQ>(self.1, o.1),
            )
        }
    }
    #[inline(always)]
    fn mand(a: Self::M, b: Self::M) -> Self::M {
        unsafe { (_mm256_and_pd(a.0, b.0), _mm256_and_pd(a.1, b.1)) }
    }
    #[inline(always)]
    fn mnot(a: Self::M) -> Self::M {
        unsafe {
            let ones = _mm256_castsi256_pd(_mm256_set1_epi64x(-1));
            (_mm256_xor_pd(a.0, ones), _mm256_xor_pd(a.1, ones))
        }
    }
    #[inline(always)]
    fn select(m: Self::M, a: Self, b: Self) -> Self {
        unsafe {
            Self(
                _mm256_blendv_pd(b.0, a.0, m.0),
                _mm256_blendv_pd(b.1, a.1, m.1),
            )
        }
    }
    #[inline(always)]
    fn bits_rsub(c: u64, x: Self) -> Self {
        unsafe {
            let f = |v: __m256d| {
                _mm256_castsi256_pd(_mm256_sub_epi64(i64x4(c), _mm256_castpd_si256(v)))
            };
            Self(f(x.0), f(x.1))
        }
    }
    #[inline(always)]
    fn bits_rsub_half(c: u64, x: Self) -> Self {
        unsafe {
            let f = |v: __m256d| {
                _mm256_castsi256_pd(_mm256_sub_epi64(
                    i64x4(c),
                    _mm256_srli_epi64::<1>(_mm256_castpd_si256(v)),
                ))
            };
            Self(f(x.0), f(x.1))
        }
    }
    #[inline(always)]
    fn pow2_of_shifted(t: Self) -> Self {
        unsafe {
            let f = |v: __m256d| {
                let k = _mm256_sub_epi64(_mm256_castpd_si256(v), i64x4(SHIFTER_BITS));
                _mm256_castsi256_pd(_mm256_slli_epi64::<52>(_mm256_add_epi64(k, i64x4(1023))))
            };
            Self(f(t.0), f(t.1))
        }
    }
    #[inline(always)]
    fn frexp_sqrt2(x: Self) -> (Self, Self) {
        // No 64-bit arithmetic shift or int→float conversion in AVX2: take the
        // biased exponent field (logical shift) and convert through 2^52.
        unsafe {
            let f = |v: __m256d| {
                let ix = _mm256_sub_epi64(_mm256_castpd_si256(v), i64x4(SQRT_HALF_BITS));
                let m = _mm256_add_epi64(
                    _mm256_and_si256(ix, i64x4(0x000f_ffff_ffff_ffff)),
                    i64x4(SQRT_HALF_BITS),
                );
                // ix = bits(x) − bits(√½): the exponent field of ix (mod 2^12) is e + 1022
                // shifted; add 2^11 so the field is positive, then subtract it back.
                let e = _mm256_srli_epi64::<52>(_mm256_add_epi64(ix, i64x4(1 << 63)));
                let ef = _mm256_sub_pd(
                    _mm256_castsi256_pd(_mm256_or_si256(e, i64x4(0x4330_0000_0000_0000))),
                    _mm256_set1_pd(4_503_599_627_370_496.0 + 2048.0),
                );
                (_mm256_castsi256_pd(m), ef)
            };
            let (m0, e0) = f(x.0);
            let (m1, e1) = f(x.1);
            (Self(m0, m1), Self(e0, e1))
        }
    }
    #[inline(always)]
    fn to_array(self, out: &mut [f64]) {
        self.store(out)
    }
    #[inline(always)]
    fn prod_err(a: Self, b: Self, p: Self) -> Self {
        unsafe {
            Self(
                _mm256_fmsub_pd(a.0, b.0, p.0),
                _mm256_fmsub_pd(a.1, b.1, p.1),
            )
        }
    }
}
