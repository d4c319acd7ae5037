//! Normal-distribution functions for EP's site updates: `exp`, `log`, `log1p`,
//! reciprocals, `erfcx`, Φ and φ, `log Φ` and the Mills ratio `φ/Φ`, written
//! once over the [`Simd`] vector trait (no branches, no library calls, no
//! division instructions: the element-wise site work dominates EP's cost,
//! ALGORITHMS.md §4, and one vector division costs as much as ~40 FMAs).
//! Accuracy: ≤ 1 ulp for `exp`, `log`, reciprocals; ≤ 2e-15 relative for
//! `erfcx`, `log Φ`, `φ/Φ` over the whole line, far tails included (tests
//! against 50-digit references). The scalar versions (`F64x1`) serve callers
//! outside the kernels.

#![allow(clippy::excessive_precision)]

use super::simd::{F64x1, Simd};

/// Scalar lane type of this build (FMA when the whole build targets it).
pub(crate) type Scalar = F64x1<{ cfg!(target_feature = "fma") }>;

const LN2_HI: f64 = 6.931_471_803_691_238_2e-1; // 0x3fe62e42fee00000
const LN2_LO: f64 = 1.908_214_929_270_587_7e-10; // ln 2 − LN2_HI
const LOG2_E: f64 = std::f64::consts::LOG2_E;
/// 1.5·2^52: adding it rounds a float of magnitude < 2^51 to an integer.
const SHIFTER: f64 = 6_755_399_441_055_744.0;
pub(crate) const SQRT_2_OVER_PI: f64 = 0.797_884_560_802_865_4;
pub(crate) const INV_SQRT_2PI: f64 = 0.398_942_280_401_432_7;
/// ln(2π), the Gaussian densities' constant.
pub const LN_2PI: f64 = 1.837_877_066_409_345_5;
const INV_SQRT_2: f64 = std::f64::consts::FRAC_1_SQRT_2;

#[inline(always)]
fn c<V: Simd>(x: f64) -> V {
    V::splat(x)
}

/// `e^x`; results below 2^−1022 (x < −708) flush to 0; x ≤ 709. Error ≤ 2 ulp.
#[inline(always)]
pub(crate) fn exp<V: Simd>(x: V) -> V {
    let xc = x.max(c(-708.0)).min(c(709.0));
    let t = xc.fma(c(LOG2_E), c(SHIFTER));
    let kf = t - c(SHIFTER); // round(x / ln 2)
    let r = kf.fma(c(-LN2_LO), kf.fma(c(-LN2_HI), xc)); // |r| ≤ ln2/2
    // Taylor polynomial to r^13: truncation < 4e-18 on |r| ≤ 0.347.
    let mut p: V = c(1.0 / 6_227_020_800.0);
    for k in [
        1.0 / 479_001_600.0,
        1.0 / 39_916_800.0,
        1.0 / 3_628_800.0,
        1.0 / 362_880.0,
        1.0 / 40_320.0,
        1.0 / 5_040.0,
        1.0 / 720.0,
        1.0 / 120.0,
        1.0 / 24.0,
        1.0 / 6.0,
        0.5,
        1.0,
        1.0,
    ] {
        p = p.fma(r, c(k));
    }
    V::select(x.lt(c(-708.0)), c(0.0), p * V::pow2_of_shifted(t))
}

/// `1/x` for x ∈ [1e-300, 1e300] without a division instruction: a bit-level
/// first guess (≤ 12% off), two cubic Newton steps and a quadratic one. ≤ 1 ulp.
#[inline(always)]
pub(crate) fn recip<V: Simd>(x: V) -> V {
    let mut y = V::bits_rsub(0x7fde_6238_22fc_16e6, x);
    for _ in 0..2 {
        let e = (-x).fma(y, c(1.0));
        y = y.fma(e.fma(e, e), y); // y(1 + e + e²): error e → e³
    }
    let e = (-x).fma(y, c(1.0));
    y.fma(e, y)
}

/// `1/√x` for x ∈ [1e-300, 1e300]: bit-level first guess (≤ 3.5% off) and four
/// Newton steps. ≤ 1 ulp.
#[inline(always)]
pub(crate) fn rsqrt<V: Simd>(x: V) -> V {
    let mut y = V::bits_rsub_half(0x5fe6_eb50_c7b5_37a9, x);
    let hx = c::<V>(0.5) * x;
    for _ in 0..4 {
        let e = (-hx).fma(y * y, c(0.5)); // ½(1 − x y²)
        y = y.fma(e, y);
    }
    y
}

/// Natural log of a positive normal number (fdlibm's reduction to [√½, √2)
/// and the atanh series). Error ≤ 1 ulp.
#[inline(always)]
pub(crate) fn log<V: Simd>(x: V) -> V {
    let (m, kf) = V::frexp_sqrt2(x);
    let f = m - c(1.0);
    let s = f * recip(f + c(2.0));
    let z = s * s;
    // R(z) = Σ_{j≥1} 2 z^j/(2j+1); |s| ≤ 0.1716 → z ≤ 0.0295, truncation < 1e-18.
    let mut r: V = c(2.0 / 23.0);
    for k in [21.0, 19.0, 17.0, 15.0, 13.0, 11.0, 9.0, 7.0, 5.0, 3.0] {
        r = r.fma(z, c(2.0 / k));
    }
    r = r * z;
    let hfsq = c::<V>(0.5) * f * f;
    // log(1 + f) = f − hfsq + s(hfsq + R): the small terms first.
    let lo = s.fma(hfsq + r, kf.fma(c(LN2_LO), -hfsq));
    kf.fma(c(LN2_HI), f + lo)
}

/// Chebyshev coefficients of `(1 + 2u)·erfcx(u)` in `t = (u − 3)/(u + 3)` ∈ [−1, 1)
/// (after Shepherd & Laframboise 1981; one expansion for all u ≥ 0; the last
/// term is 6e-18). Produced with mpmath at 50 digits:
/// ```text
/// import mpmath as mp; mp.mp.dps = 50; K = 3; N = 27; M = 64
/// f = lambda t: 2/mp.sqrt(mp.pi) if t == 1 else (lambda u: (1+2*u)*mp.exp(u*u)*mp.erfc(u))(K*(1+t)/(1-t))
/// x = [mp.cos(mp.pi*(j+0.5)/M) for j in range(M)]
/// c = [2*sum(f(x[j])*mp.cos(mp.pi*n*(j+0.5)/M) for j in range(M))/M for n in range(N)]; c[0] /= 2
/// ```
const ERFCX_CHEB: [f64; 27] = [
    1.17756257419656007e+00,
    5.35390453961567640e-03,
    -9.37755034228420908e-02,
    5.43665255574432224e-02,
    -1.89765967078452079e-02,
    4.45342606146271157e-03,
    -6.33553171055314685e-04,
    1.76617195231715932e-05,
    1.28415328640566712e-05,
    -2.00722856590599130e-06,
    -1.80752279041483712e-07,
    7.54982834382509291e-08,
    1.88566852383860296e-09,
    -2.69951904979836388e-09,
    -1.46007911993910508e-11,
    1.03616074459694893e-10,
    1.47571597662347301e-12,
    -4.27734006439691100e-12,
    -2.07922492859799006e-13,
    1.81345020031769630e-13,
    1.97342557454473895e-14,
    -7.28794373759267338e-15,
    -1.51698786902281158e-15,
    2.35141122587814030e-16,
    1.00061116918216674e-16,
    -2.05725281695385460e-18,
    -5.60860821886318299e-18,
];

/// `(1 + 2u)·erfcx(u)` for u ≥ 0 (Clenshaw).
#[inline(always)]
fn erfcx_scaled<V: Simd>(u: V) -> V {
    let t = (u - c(3.0)).div(u + c(3.0));
    let t2 = t + t;
    let (mut b1, mut b2): (V, V) = (c(0.0), c(0.0));
    // The last two coefficients (|c| < 6e-18 ≪ an ulp of f ∈ [1, 1.13]) are dropped.
    for &k in ERFCX_CHEB[1..25].iter().rev() {
        let b0 = t2.fma(b1, c::<V>(k) - b2);
        b2 = b1;
        b1 = b0;
    }
    t.fma(b1, c::<V>(ERFCX_CHEB[0]) - b2)
}

/// The scaled complementary error function `erfcx(u) = e^{u²} erfc(u)`, u ≥ 0.
#[inline(always)]
pub(crate) fn erfcx<V: Simd>(u: V) -> V {
    let u = u.min(c(1e150));
    erfcx_scaled(u) * recip(c::<V>(1.0) + u + u)
}

/// `(Φ(z), φ(z))`: Φ relative-accurate in the lower tail (from erfcx), φ relative-accurate
/// until it underflows (z² split exactly for large |z|). |z| capped at 1e10.
#[inline(always)]
pub(crate) fn cdf_pdf<V: Simd>(z: V) -> (V, V) {
    let z = z.max(c(-1e10)).min(c(1e10));
    let e_x = erfcx(z.abs() * c(INV_SQRT_2));
    let hi = z * z;
    let lo = V::prod_err(z, z, hi);
    let g = exp(c::<V>(-0.5) * hi) * c::<V>(-0.5).fma(lo, c(1.0));
    let half = c::<V>(0.5) * e_x * g; // Φ(−|z|)
    (
        V::select(z.lt(c(0.0)), half, c::<V>(1.0) - half),
        g * c(INV_SQRT_2PI),
    )
}

/// `(log Φ(z), φ(z)/Φ(z))`, accurate in both tails: for z < 0 from
/// `log Φ = log(½ erfcx(−z/√2)) − z²/2` (no underflow), for z ≥ 0 from
/// `log1p(−Φ(−z))`. |z| capped at 1e10 (then log Φ ≈ −5e19).
#[inline(always)]
pub(crate) fn log_ndtr_ratio<V: Simd>(z: V) -> (V, V) {
    let z = z.max(c(-1e10)).min(c(1e10));
    let e_x = erfcx(z.abs() * c(INV_SQRT_2));
    let hi = z * z;
    let lo = V::prod_err(z, z, hi);
    let g = exp(c::<V>(-0.5) * hi) * c::<V>(-0.5).fma(lo, c(1.0));
    let q = c::<V>(0.5) * e_x * g; // Φ(−|z|)
    let neg = z.lt(c(0.0));
    let arg = V::select(neg, c::<V>(0.5) * e_x, c::<V>(1.0) - q);
    let err = (arg - c(1.0)) + q; // rounding error of 1 − q (z ≥ 0)
    // z ≥ 0: −err/(1 − q) to first order (err ≤ 1.1e-16, q ≤ ½).
    let corr = V::select(neg, c::<V>(-0.5) * (hi + lo), -err * (c::<V>(1.0) + q));
    let num = V::select(neg, c(SQRT_2_OVER_PI), c::<V>(INV_SQRT_2PI) * g);
    let den = V::select(neg, e_x, arg);
    (log(arg) + corr, num * recip(den))
}

/// log Φ(z) (scalar).
pub fn log_ndtr(z: f64) -> f64 {
    log_ndtr_ratio(Scalar::splat(z)).0.0
}

/// The inverse Mills ratio φ(z)/Φ(z) (scalar).
pub fn mills_ratio(z: f64) -> f64 {
    log_ndtr_ratio(Scalar::splat(z)).1.0
}

/// `e^{u²} erfc(u)` for u ≥ 0 (scalar).
pub fn erfcx_scalar(u: f64) -> f64 {
    erfcx(Scalar::splat(u)).0
}

/// `log(e^a + e^b)` without overflow.
pub fn logaddexp(a: f64, b: f64) -> f64 {
    let m = a.max(b);
    if m == f64::NEG_INFINITY {
        return m;
    }
    m + (-(a - b).abs()).exp().ln_1p()
}

#[cfg(test)]
#[allow(clippy::approx_constant)]
mod tests {
    use super::*;

    /// (z, log Φ(z), φ(z)/Φ(z)) from mpmath at 60 digits (log1p(−Φ(−z)) for z > 0).
    const REF: [(f64, f64, f64); 48] = [
        (-1e8, -5.00000000000001900e+15, 1.00000000000000015e+08),
        (-1e6, -5.00000000014734436e+11, 1.00000000000100001e+06),
        (-1000.0, -5.00007826694812160e+05, 1.00000099999800000e+03),
        (-100.0, -5.00552420869420530e+03, 1.00009998000999261e+02),
        (-38.5, -7.45695270290411031e+02, 3.85259390968544935e+01),
        (-37.0, -6.89030585576890644e+02, 3.70269876861269935e+01),
        (-30.0, -4.54321243956343210e+02, 3.00332596674336756e+01),
        (-20.0, -2.03917155371097266e+02, 2.00497530685278491e+01),
        (-12.5, -8.15759678707438809e+01, 1.25790073044069768e+01),
        (-10.0, -5.32312851505124698e+01, 1.00980932339625120e+01),
        (-8.0, -3.50134371599145524e+01, 8.12136811223611232e+00),
        (-6.0, -2.07367689499747065e+01, 6.15848260454459862e+00),
        (-5.5, -1.77793763526252597e+01, 5.67141031389730532e+00),
        (-4.0, -1.03601014865272916e+01, 4.22560714448947117e+00),
        (-3.0, -6.60772622151034916e+00, 3.28309865493043640e+00),
        (-2.5, -5.08164827727869017e+00, 2.82274479766390707e+00),
        (-2.0, -3.78318433368203211e+00, 2.37321553282284103e+00),
        (-1.5, -2.70594440082388976e+00, 1.93867716662254308e+00),
        (-1.0, -1.84102164500926357e+00, 1.52513527616098110e+00),
        (-0.7, -1.41896776153153170e+00, 1.29049933945816653e+00),
        (-0.5, -1.17591176159361854e+00, 1.14107777036806457e+00),
        (-0.25, -9.13061764811135101e-01, 9.63553979416403861e-01),
        (-0.1, -7.76154592730273318e-01, 8.62617471530936153e-01),
        (-1e-3, -6.93945383466965215e-01, 7.98521289562911352e-01),
        (-1e-9, -6.93147181357829822e-01, 7.97884561439485163e-01),
        (0.0, -6.93147180559945286e-01, 7.97884560802865406e-01),
        (1e-9, -6.93147179762060750e-01, 7.97884560166245538e-01),
        (1e-3, -6.92349614272688263e-01, 7.97248050056433066e-01),
        (0.1, -6.16505010115026342e-01, 7.35331748505780647e-01),
        (0.25, -5.12984075409430473e-01, 6.45839371016817321e-01),
        (0.5, -3.68946415288656404e-01, 5.09160433837033466e-01),
        (0.7, -2.77023942277131230e-01, 4.11924750419290664e-01),
        (1.0, -1.72753779023449877e-01, 2.87599970939178384e-01),
        (1.5, -6.91434556122339783e-02, 1.38789750458850752e-01),
        (2.0, -2.30129093289634899e-02, 5.52478626789899563e-02),
        (2.5, -6.22902548586000242e-03, 1.76378254869167354e-02),
        (3.0, -1.35080996474819378e-03, 4.43783904212566391e-03),
        (4.0, -3.16717433774892670e-05, 1.33834464468575139e-04),
        (5.0, -2.86651612963763577e-07, 1.48671994090490563e-06),
        (6.0, -9.86587645524375801e-10, 6.07588285581767622e-09),
        (8.0, -6.22096057427178585e-16, 5.05227108353689510e-15),
        (10.0, -7.61985302416052545e-24, 7.69459862670641876e-23),
        (12.5, -3.73256429887771309e-36, 4.69519535797514582e-35),
        (15.0, -3.67096619931275083e-51, 5.53070954984441638e-50),
        (20.0, -2.75362411860623374e-89, 5.52094836215976353e-88),
        (26.0, -2.47606331550338924e-149, 6.44725997139785170e-148),
        (30.0, -4.90671392714818718e-198, 1.47364613487854760e-196),
        (37.0, -5.72557122252457710e-300, 2.12000655152460556e-298),
    ];

    /// (u, erfcx(u)) from mpmath (asymptotic series for u ≥ 1e7).
    const ERFCX_REF: [(f64, f64); 17] = [
        (0.0, 1.00000000000000000e+00),
        (1e-6, 9.99998871621832874e-01),
        (0.01, 9.88815461046342548e-01),
        (0.3, 7.34599334567655138e-01),
        (1.0, 4.27583576155806999e-01),
        (2.0, 2.55395676310505748e-01),
        (2.9, 1.84601825955590826e-01),
        (3.0, 1.79001151181389956e-01),
        (3.1, 1.73718408605408242e-01),
        (5.0, 1.10704637733068628e-01),
        (10.0, 5.61409927438225875e-02),
        (30.0, 1.87958888614167506e-02),
        (100.0, 5.64161378298943302e-03),
        (1e4, 5.64189580726808426e-05),
        (1e8, 5.64189583547756227e-09),
        (1e15, 5.64189583547756258e-16),
        (1e100, 5.64189583547756314e-101),
    ];

    fn rel(a: f64, b: f64) -> f64 {
        if a == b { 0.0 } else { (a - b).abs() / b.abs() }
    }

    type P = F64x1<false>;
    type F = F64x1<true>;

    fn ev<V: Simd>(f: impl Fn(V) -> V, x: f64) -> f64 {
        let mut o = [0.0; 8];
        f(V::splat(x)).to_array(&mut o);
        o[0]
    }

    fn check_all<V: Simd>() {
        for &(u, want) in &ERFCX_REF {
            let got = ev::<V>(erfcx, u);
            assert!(
                rel(got, want) < 1e-15,
                "erfcx({u}) = {got:e}, want {want:e}"
            );
        }
        for &(z, lp, ratio) in &REF {
            let l = ev::<V>(|z| log_ndtr_ratio(z).0, z);
            let r = ev::<V>(|z| log_ndtr_ratio(z).1, z);
            let (cdf, pdf) = (ev::<V>(|z| cdf_pdf(z).0, z), ev::<V>(|z| cdf_pdf(z).1, z));
            if z < 30.0 {
                // Φ from the linear-domain form, relative where it is not ~1.
                let want = lp.exp();
                // exp(log Φ) itself carries ~|log Φ|·1e-16 of error.
                let tol = 2e-15 * (1.0 + lp.abs());
                assert!(
                    rel(cdf, want) < tol || (z < -37.5 && cdf < 1e-300),
                    "Φ({z}) = {cdf:e}, want {want:e}"
                );
                let want_pdf = (-0.5 * z * z).exp() * INV_SQRT_2PI;
                assert!(
                    rel(pdf, want_pdf) < 1e-14 * (1.0 + z * z) || want_pdf < 1e-300,
                    "φ({z}) = {pdf:e}"
                );
            }
            assert!(
                rel(l, lp) < 2e-15,
                "log Φ({z}) = {l:e}, want {lp:e}, rel {:e}",
                rel(l, lp)
            );
            assert!(
                rel(r, ratio) < 2e-15,
                "φ/Φ({z}) = {r:e}, want {ratio:e}, rel {:e}",
                rel(r, ratio)
            );
        }
    }

    #[test]
    fn normal_functions_match_high_precision_references() {
        check_all::<P>();
        check_all::<F>();
    }

    /// exp and log against the standard library over a wide range.
    #[test]
    fn exp_log_match_std() {
        let mut worst = (0.0f64, 0.0f64, 0.0f64);
        for i in 0..200_001 {
            let x = -708.0 + 1417.0 * i as f64 / 200_000.0;
            let (a, b) = (ev::<P>(exp, x), x.exp());
            worst.0 = worst.0.max(rel(a, b));
            let y = (x / 10.0).exp(); // positive, from 1e-31 to 1e31
            worst.1 = worst
                .1
                .max((ev::<P>(log, y) - y.ln()).abs() / y.ln().abs().max(1.0));
        }
        assert!(worst.0 < 4e-16, "exp: worst rel error {:e}", worst.0);
        assert!(worst.1 < 4e-16, "log: worst error {:e}", worst.1);

        assert_eq!(ev::<P>(exp, -800.0), 0.0);
        assert_eq!(ev::<P>(log, 1.0), 0.0);
    }

    #[test]
    fn reciprocals_are_accurate() {
        let mut worst: (f64, f64) = (0.0, 0.0);
        for i in 0..100_000 {
            let x = (i as f64 * 0.0137 - 600.0).exp(); // 1e-261 … 1e300
            if x > 1e300 {
                continue;
            }
            worst.0 = worst.0.max(rel(ev::<P>(recip, x), 1.0 / x));
            worst.1 = worst.1.max(rel(ev::<P>(rsqrt, x), 1.0 / x.sqrt()));
        }
        assert!(
            worst.0 < 3e-16 && worst.1 < 3e-16,
            "recip {:e}, rsqrt {:e}",
            worst.0,
            worst.1
        );
    }

    /// Smoothness across the z = 0 switch and monotonicity of log Φ.
    #[test]
    fn log_ndtr_is_monotone_and_continuous() {
        let mut prev = f64::NEG_INFINITY;
        for i in 0..20_001 {
            let z = -50.0 + i as f64 * 0.005;
            let l = log_ndtr(z);
            assert!(l >= prev, "log Φ not monotone at {z}");
            prev = l;
        }
        assert!((log_ndtr(-1e-300) - log_ndtr(0.0)).abs() < 1e-15);
        assert!(logaddexp(f64::NEG_INFINITY, 0.0) == 0.0);
    }
}
