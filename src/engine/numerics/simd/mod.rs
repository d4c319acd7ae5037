//! Minimal explicit SIMD for the site kernels: one trait, three vector types
//! (AVX-512 8 × f64, AVX2 2 × 4 × f64, scalar). The maths is written once,
//! generic over `Simd`, and instantiated inside `#[target_feature]` functions,
//! where the `#[inline(always)]` methods below compile to single instructions.
//! (Auto-vectorised scalar code spilled heavily and ran ~3× slower.)

use std::ops::{Add, Mul, Neg, Sub};

/// A vector of f64 lanes with what the normal-distribution maths needs.
pub(crate) trait Simd:
    Copy + Add<Output = Self> + Sub<Output = Self> + Mul<Output = Self> + Neg<Output = Self>
{
    type M: Copy;
    const W: usize;
    fn splat(x: f64) -> Self;
    fn load(s: &[f64]) -> Self;
    fn store(self, s: &mut [f64]);
    fn load_f32(s: &[f32]) -> Self;
    fn store_f32(self, s: &mut [f32]);
    /// Rounded to f32 and back.
    fn round_f32(self) -> Self;
    /// Hardware division (the divider runs beside the FMA units: a few per site are free).
    fn div(self, o: Self) -> Self;
    /// `self·b + c` (fused where the ISA has FMA).
    fn fma(self, b: Self, c: Self) -> Self;
    fn abs(self) -> Self;
    fn min(self, o: Self) -> Self;
    fn max(self, o: Self) -> Self;
    fn lt(self, o: Self) -> Self::M;
    fn le(self, o: Self) -> Self::M;
    /// `self > o`, false for NaN.
    fn gt(self, o: Self) -> Self::M;
    fn mand(a: Self::M, b: Self::M) -> Self::M;
    fn mnot(a: Self::M) -> Self::M;
    /// `m ? a : b` lane-wise.
    fn select(m: Self::M, a: Self, b: Self) -> Self;
    /// `from_bits(c − bits(x))`.
    fn bits_rsub(c: u64, x: Self) -> Self;
    /// `from_bits(c − (bits(x) >> 1))`.
    fn bits_rsub_half(c: u64, x: Self) -> Self;
    /// For `t = y + 1.5·2^52` (y integral, |y| < 2^51): `2^y` as a float (y ≥ −1022).
    fn pow2_of_shifted(t: Self) -> Self;
    /// Positive normal x = m·2^e with m ∈ [√½, √2): (m, e as a float).
    fn frexp_sqrt2(x: Self) -> (Self, Self);
    /// Lane values into an array (tail and reductions).
    fn to_array(self, out: &mut [f64]);
    /// `x` exactly: the rounding error of `a·b` (FMA, or Dekker's split without).
    fn prod_err(a: Self, b: Self, p: Self) -> Self;
}

// ---------- scalar -----------------------------------------------------------

/// One lane; `FUSED` = use hardware FMA (only inside FMA target-feature code).
#[derive(Clone, Copy, Debug)]
pub(crate) struct F64x1<const FUSED: bool>(pub f64);

macro_rules! scalar_ops {
    ($t:ty) => {
        impl Add for $t {
            type Output = Self;
            #[inline(always)]
            fn add(self, o: Self) -> Self {
                Self(self.0 + o.0)
            }
        }
        impl Sub for $t {
            type Output = Self;
            #[inline(always)]
            fn sub(self, o: Self) -> Self {
                Self(self.0 - o.0)
            }
        }
        impl Mul for $t {
            type Output = Self;
            #[inline(always)]
            fn mul(self, o: Self) -> Self {
                Self(self.0 * o.0)
            }
        }
        impl Neg for $t {
            type Output = Self;
            #[inline(always)]
            fn neg(self) -> Self {
                Self(-self.0)
            }
        }
    };
}
scalar_ops!(F64x1<true>);
scalar_ops!(F64x1<false>);

const SHIFTER_BITS: u64 = 0x4338_0000_0000_0000; // 1.5·2^52
const SQRT_HALF_BITS: u64 = 0x3fe6_a09e_667f_3bcd;

impl<const FUSED: bool> Simd for F64x1<FUSED>
where
    F64x1<FUSED>: Add<Output = Self> + Sub<Output = Self> + Mul<Output = Self> + Neg<Output = Self>,
{
    type M = bool;
    const W: usize = 1;
    #[inline(always)]
    fn splat(x: f64) -> Self {
        Self(x)
    }
    #[inline(always)]
    fn load(s: &[f64]) -> Self {
        Self(s[0])
    }
    #[inline(always)]
    fn store(self, s: &mut [f64]) {
        s[0] = self.0;
    }
    #[inline(always)]
    fn load_f32(s: &[f32]) -> Self {
        Self(s[0] as f64)
    }
    #[inline(always)]
    fn store_f32(self, s: &mut [f32]) {
        s[0] = self.0 as f32;
    }
    #[inline(always)]
    fn round_f32(self) -> Self {
        Self(self.0 as f32 as f64)
    }
    #[inline(always)]
    fn div(self, o: Self) -> Self {
        Self(self.0 / o.0)
    }
    #[inline(always)]
    fn fma(self, b: Self, c: Self) -> Self {
        if FUSED {
            Self(self.0.mul_add(b.0, c.0))
        } else {
            Self(self.0 * b.0 + c.0)
        }
    }
    #[inline(always)]
    fn abs(self) -> Self {
        Self(self.0.abs())
    }
    #[inline(always)]
    fn min(self, o: Self) -> Self {
        Self(self.0.min(o.0))
    }
    #[inline(always)]
    fn max(self, o: Self) -> Self {
        Self(self.0.max(o.0))
    }
    #[inline(always)]
    fn lt(self, o: Self) -> bool {
        self.0 < o.0
    }
    #[inline(always)]
    fn le(self, o: Self) -> bool {
        self.0 <= o.0
    }
    #[inline(always)]
    fn gt(self, o: Self) -> bool {
        self.0 > o.0
    }
    #[inline(always)]
    fn mand(a: bool, b: bool) -> bool {
        a & b
    }
    #[inline(always)]
    fn mnot(a: bool) -> bool {
        !a
    }
    #[inline(always)]
    fn select(m: bool, a: Self, b: Self) -> Self {
        if m { a } else { b }
    }
    #[inline(always)]
    fn bits_rsub(c: u64, x: Self) -> Self {
        Self(f64::from_bits(c.wrapping_sub(x.0.to_bits())))
    }
    #[inline(always)]
    fn bits_rsub_half(c: u64, x: Self) -> Self {
        Self(f64::from_bits(c.wrapping_sub(x.0.to_bits() >> 1)))
    }
    #[inline(always)]
    fn pow2_of_shifted(t: Self) -> Self {
        let k = t.0.to_bits().wrapping_sub(SHIFTER_BITS);
        Self(f64::from_bits(k.wrapping_add(1023) << 52))
    }
    #[inline(always)]
    fn frexp_sqrt2(x: Self) -> (Self, Self) {
        let ix = x.0.to_bits().wrapping_sub(SQRT_HALF_BITS);
        let k = (ix as i64) >> 52;
        let m = f64::from_bits((ix & 0x000f_ffff_ffff_ffff).wrapping_add(SQRT_HALF_BITS));
        (Self(m), Self(k as f64))
    }
    #[inline(always)]
    fn to_array(self, out: &mut [f64]) {
        out[0] = self.0;
    }
    #[inline(always)]
    fn prod_err(a: Self, b: Self, p: Self) -> Self {
        if FUSED {
            Self(a.0.mul_add(b.0, -p.0))
        } else {
            const SPLIT: f64 = 134_217_729.0; // 2^27 + 1
            let (ca, cb) = (SPLIT * a.0, SPLIT * b.0);
            let (ah, bh) = (ca - (ca - a.0), cb - (cb - b.0));
            let (al, bl) = (a.0 - ah, b.0 - bh);
            Self(((ah * bh - p.0) + ah * bl + al * bh) + al * bl)
        }
    }
}

// ---------- AVX-512 and AVX2 (simd/x86.rs) -------------------------------------

#[cfg(target_arch = "x86_64")]
pub(crate) use x86::{F64x4x2, F64x8};

#[cfg(target_arch = "x86_64")]
mod x86;

// ---------- two vectors per operation ------------------------------------------

/// Two independent vectors per operation: the site maths is a long dependency
/// chain (Clenshaw, Newton steps), so interleaving two chains keeps the FMA
/// units busy instead of waiting on latencies.
#[derive(Clone, Copy)]
pub(crate) struct Two<V>(V, V);

impl<V: Simd> Add for Two<V> {
    type Output = Self;
    #[inline(always)]
    fn add(self, o: Self) -> Self {
        Two(self.0 + o.0, self.1 + o.1)
    }
}
impl<V: Simd> Sub for Two<V> {
    type Output = Self;
    #[inline(always)]
    fn sub(self, o: Self) -> Self {
        Two(self.0 - o.0, self.1 - o.1)
    }
}
impl<V: Simd> Mul for Two<V> {
    type Output = Self;
    #[inline(always)]
    fn mul(self, o: Self) -> Self {
        Two(self.0 * o.0, self.1 * o.1)
    }
}
impl<V: Simd> Neg for Two<V> {
    type Output = Self;
    #[inline(always)]
    fn neg(self) -> Self {
        Two(-self.0, -self.1)
    }
}

impl<V: Simd> Simd for Two<V> {
    type M = (V::M, V::M);
    const W: usize = 2 * V::W;
    #[inline(always)]
    fn splat(x: f64) -> Self {
        Two(V::splat(x), V::splat(x))
    }
    #[inline(always)]
    fn load(s: &[f64]) -> Self {
        Two(V::load(s), V::load(&s[V::W..]))
    }
    #[inline(always)]
    fn store(self, s: &mut [f64]) {
        self.0.store(s);
        self.1.store(&mut s[V::W..]);
    }
    #[inline(always)]
    fn load_f32(s: &[f32]) -> Self {
        Two(V::load_f32(s), V::load_f32(&s[V::W..]))
    }
    #[inline(always)]
    fn store_f32(self, s: &mut [f32]) {
        self.0.store_f32(s);
        self.1.store_f32(&mut s[V::W..]);
    }
    #[inline(always)]
    fn round_f32(self) -> Self {
        Two(self.0.round_f32(), self.1.round_f32())
    }
    #[inline(always)]
    fn div(self, o: Self) -> Self {
        Two(self.0.div(o.0), self.1.div(o.1))
    }
    #[inline(always)]
    fn fma(self, b: Self, c: Self) -> Self {
        Two(self.0.fma(b.0, c.0), self.1.fma(b.1, c.1))
    }
    #[inline(always)]
    fn abs(self) -> Self {
        Two(self.0.abs(), self.1.abs())
    }
    #[inline(always)]
    fn min(self, o: Self) -> Self {
        Two(self.0.min(o.0), self.1.min(o.1))
    }
    #[inline(always)]
    fn max(self, o: Self) -> Self {
        Two(self.0.max(o.0), self.1.max(o.1))
    }
    #[inline(always)]
    fn lt(self, o: Self) -> Self::M {
        (self.0.lt(o.0), self.1.lt(o.1))
    }
    #[inline(always)]
    fn le(self, o: Self) -> Self::M {
        (self.0.le(o.0), self.1.le(o.1))
    }
    #[inline(always)]
    fn gt(self, o: Self) -> Self::M {
        (self.0.gt(o.0), self.1.gt(o.1))
    }
    #[inline(always)]
    fn mand(a: Self::M, b: Self::M) -> Self::M {
        (V::mand(a.0, b.0), V::mand(a.1, b.1))
    }
    #[inline(always)]
    fn mnot(a: Self::M) -> Self::M {
        (V::mnot(a.0), V::mnot(a.1))
    }
    #[inline(always)]
    fn select(m: Self::M, a: Self, b: Self) -> Self {
        Two(V::select(m.0, a.0, b.0), V::select(m.1, a.1, b.1))
    }
    #[inline(always)]
    fn bits_rsub(c: u64, x: Self) -> Self {
        Two(V::bits_rsub(c, x.0), V::bits_rsub(c, x.1))
    }
    #[inline(always)]
    fn bits_rsub_half(c: u64, x: Self) -> Self {
        Two(V::bits_rsub_half(c, x.0), V::bits_rsub_half(c, x.1))
    }
    #[inline(always)]
    fn pow2_of_shifted(t: Self) -> Self {
        Two(V::pow2_of_shifted(t.0), V::pow2_of_shifted(t.1))
    }
    #[inline(always)]
    fn frexp_sqrt2(x: Self) -> (Self, Self) {
        let (m0, e0) = V::frexp_sqrt2(x.0);
        let (m1, e1) = V::frexp_sqrt2(x.1);
        (Two(m0, m1), Two(e0, e1))
    }
    #[inline(always)]
    fn to_array(self, out: &mut [f64]) {
        self.0.to_array(out);
        self.1.to_array(&mut out[V::W..]);
    }
    #[inline(always)]
    fn prod_err(a: Self, b: Self, p: Self) -> Self {
        Two(V::prod_err(a.0, b.0, p.0), V::prod_err(a.1, b.1, p.1))
    }
}
