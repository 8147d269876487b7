//! Float maths that vectorises: exp, log, tanh and erf for f32 without branches or table
//! lookups, so that a loop calling them compiles to SIMD code (8 lanes inside
//! [`with_avx2`](crate::cpu::simd::with_avx2)). `std`'s versions are libm calls, one element at
//! a time, which made `exp`/`sigmoid`/`tanh`/`gelu` on big f32 tensors 2-15x slower than
//! PyTorch (whose CPU kernels use SLEEF's vectorised functions).
//!
//! Each function is a range reduction plus a polynomial from Cephes (or, for erf, the rational
//! approximation Eigen and XLA use), with special values (NaN, +-inf, 0, subnormals) handled by
//! selects. Accuracy is about 1-2 ulp, like SLEEF's `_u10` functions; the unit tests measure it.
//! f64 keeps `std`'s functions.

/// `a * b + c`, fused when `FMA` (only instantiate `FMA = true` inside functions compiled for
/// the FMA instruction set: elsewhere `mul_add` is a slow libm call).
#[inline(always)]
fn fmadd<const FMA: bool>(a: f32, b: f32, c: f32) -> f32 {
    if FMA {
        a.mul_add(b, c)
    } else {
        a * b + c
    }
}

/// e^x for f32: Cody-Waite range reduction x = n ln2 + r, a degree-6 polynomial for e^r
/// (Cephes' `expf`, about 1 ulp), and 2^n built from exponent bits in two factors so subnormal
/// results come out right. NaN propagates; +inf -> inf; -inf and x < -104 -> 0.
#[inline(always)]
pub fn exp_f32(x: f32) -> f32 {
    exp_f32_with::<false>(x)
}

/// [`exp_f32`], with fused multiply-adds when `FMA` (see [`fmadd`]).
#[inline(always)]
pub fn exp_f32_with<const FMA: bool>(x: f32) -> f32 {
    const LOG2E: f32 = std::f32::consts::LOG2_E;
    const LN2_HI: f32 = 0.693_359_4;
    const LN2_LO: f32 = -2.121_944_4e-4;
    // Adding 1.5 * 2^23 rounds to an integer, which lands in the low mantissa bits.
    const MAGIC: f32 = 12_582_912.0;
    let xc = if x < -104.0 { -104.0 } else { x };
    let xc = if xc > 89.0 { 89.0 } else { xc };
    let t = fmadd::<FMA>(xc, LOG2E, MAGIC);
    let n = t - MAGIC;
    let ni = (t.to_bits() as i32).wrapping_sub(MAGIC.to_bits() as i32);
    let r = fmadd::<FMA>(-n, LN2_LO, fmadd::<FMA>(-n, LN2_HI, xc));
    let mut p = 1.987_569_1e-4f32;
    p = fmadd::<FMA>(p, r, 1.398_199_9e-3);
    p = fmadd::<FMA>(p, r, 8.333_452e-3);
    p = fmadd::<FMA>(p, r, 4.166_579_6e-2);
    p = fmadd::<FMA>(p, r, 1.666_666_5e-1);
    p = fmadd::<FMA>(p, r, 5.000_000_1e-1_f64 as f32);
    let y = fmadd::<FMA>(p * r, r, r) + 1.0;
    let n1 = ni >> 1;
    let n2 = ni.wrapping_sub(n1);
    let s1 = f32::from_bits((n1.wrapping_add(127) as u32) << 23);
    let s2 = f32::from_bits((n2.wrapping_add(127) as u32) << 23);
    let v = y * s1 * s2;
    if x < -104.0 {
        0.0
    } else {
        v
    }
}

/// ln(x) for f32 (Cephes' `logf`, about 1 ulp): x = m 2^e with m in [sqrt(1/2), sqrt(2)),
/// a degree-8 polynomial in m - 1, and e ln2 added in two parts. Subnormals are scaled up
/// first. ln(0) = -inf, ln(x < 0) = NaN, ln(inf) = inf, NaN propagates.
#[inline(always)]
pub fn ln_f32(x: f32) -> f32 {
    const SQRT_HALF: f32 = std::f32::consts::FRAC_1_SQRT_2;
    let sub = x < f32::MIN_POSITIVE;
    let xs = if sub { x * 8_388_608.0 } else { x };
    let bits = xs.to_bits();
    let e = ((bits >> 23) & 0xff) as i32 - 126 - if sub { 23 } else { 0 };
    // The mantissa with the exponent of 0.5: m in [0.5, 1).
    let m = f32::from_bits((bits & 0x807f_ffff) | 0x3f00_0000);
    let low = m < SQRT_HALF;
    let e = (e - i32::from(low)) as f32;
    let m = if low { m + m - 1.0 } else { m - 1.0 };
    let z = m * m;
    let mut p = 7.037_683_6e-2f32;
    p = p * m - 1.151_461e-1;
    p = p * m + 1.167_699_9e-1;
    p = p * m - 1.242_014_1e-1;
    p = p * m + 1.424_932_3e-1;
    p = p * m - 1.666_805_8e-1;
    p = p * m + 2.000_071_4e-1;
    p = p * m - 2.499_999_4e-1;
    p = p * m + 3.333_333e-1;
    let y = m * z * p + e * -2.121_944_4e-4 - 0.5 * z;
    let v = m + y + e * 0.693_359_4;
    if x == f32::INFINITY {
        x
    } else if x == 0.0 {
        f32::NEG_INFINITY
    } else if x < 0.0 || x.is_nan() {
        f32::NAN
    } else {
        v
    }
}

/// e^x - 1 for f32 with relative accuracy near 0 (about 2 ulp): the degree-9 Taylor
/// polynomial below |x| = 1/2 (truncation under 1e-9 relative there), `exp_f32(x) - 1` above,
/// where the subtraction loses at most a factor e^0.5 / (e^0.5 - 1) ~ 2.5 of an ulp. -0 stays
/// -0, -inf gives -1, NaN propagates.
#[inline(always)]
pub fn expm1_f32(x: f32) -> f32 {
    let mut p = 2.755_731_9e-6f32; // 1/9!
    p = p * x + 2.480_158_7e-5; // 1/8!
    p = p * x + 1.984_127e-4; // 1/7!
    p = p * x + 1.388_888_9e-3; // 1/6!
    p = p * x + 8.333_333e-3; // 1/5!
    p = p * x + 4.166_666_8e-2; // 1/4!
    p = p * x + 1.666_666_7e-1; // 1/3!
    p = p * x + 0.5;
    let poly = x + x * x * p;
    let big = exp_f32(x) - 1.0;
    if x == 0.0 {
        x
    } else if x.abs() < 0.5 {
        poly
    } else {
        big
    }
}

/// ln(1 + x) for f32 (about 2 ulp): `ln(u) * x / (u - 1)` with u = 1 + x rounded, which
/// cancels the rounding of the sum (Goldberg's method); x itself where 1 + x rounds to 1.
/// ln1p(-1) = -inf, x < -1 gives NaN, inf stays inf, NaN propagates.
#[inline(always)]
pub fn ln1p_f32(x: f32) -> f32 {
    let u = 1.0 + x;
    let d = u - 1.0;
    let v = ln_f32(u) * (x / d);
    if d == 0.0 || x == f32::INFINITY {
        x
    } else {
        v
    }
}

/// tanh(x) for f32 (Cephes' `tanhf`, about 2 ulp): an odd polynomial below |x| = 0.625,
/// 1 - 2 / (e^2|x| + 1) with x's sign above it (which saturates to +-1 without overflow
/// trouble: e^2|x| = inf gives exactly 1).
#[inline(always)]
pub fn tanh_f32(x: f32) -> f32 {
    let z = x * x;
    let mut p = -5.704_988_7e-3f32;
    p = p * z + 2.063_909e-2;
    p = p * z - 5.373_971_6e-2;
    p = p * z + 1.333_144_2e-1;
    p = p * z - 3.333_328e-1;
    let small = p * z * x + x;
    let a = x.abs();
    let big = 1.0 - 2.0 / (exp_f32(a + a) + 1.0);
    // tanh is odd: the sign of x (also of -0.0, which the polynomial would turn into +0.0).
    let v = if a < 0.625 { small } else { big };
    v.copysign(x)
}

/// erf(x) for f32: the rational approximation x P(x^2) / Q(x^2) on [-4, 4] of Eigen's
/// `generic_fast_erf_float` (XLA uses the same; a few ulp), +-1 beyond 3.9, NaN propagates.
#[inline(always)]
pub fn erf_f32(x: f32) -> f32 {
    let xc = x.clamp(-4.0, 4.0);
    let x2 = xc * xc;
    let mut p = -2.726_142_3e-10f32;
    p = p * x2 + 2.770_681_4e-8;
    p = p * x2 - 2.101_024e-6;
    p = p * x2 - 5.692_506_4e-5;
    p = p * x2 - 7.349_906_3e-4;
    p = p * x2 - 2.954_6e-3;
    p = p * x2 - 1.609_603_3e-2;
    let mut q = -1.456_607_2e-5f32;
    q = q * x2 - 2.133_740_6e-4;
    q = q * x2 - 1.682_827e-3;
    q = q * x2 - 7.373_329_2e-3;
    q = q * x2 - 1.426_474e-2;
    // Beyond 3.9, erf(x) rounds to +-1 in f32 (the rational is an ulp short of it there).
    // NaN fails every comparison and stays NaN through the polynomials.
    if xc.abs() > 3.9 {
        1f32.copysign(x)
    } else {
        xc * p / q
    }
}

/// erfc(z) for z = -x / sqrt 2 >= 1 (f32): e^(-z^2) g(1/z) / (z sqrt(pi)). g is a degree-9 polynomial in
/// 1/z - 0.55, a weighted least-squares fit to erfc(z) e^(z^2) z sqrt(pi) on z in [1, 10]
/// made for this crate (relative error under 2e-7 evaluated in f32); beyond 10, e^(-z^2)
/// is (nearly) zero anyway. Unlike 1 - erf(z) it keeps its relative accuracy far out in the
/// tail.
#[inline(always)]
fn erfc_tail_f32(z: f32, x: f32) -> f32 {
    const FRAC_1_SQRT_PI: f32 = 0.564_189_6;
    let t = 1.0 / z;
    let u = t - 0.55;
    let mut g = -5.498_997_5e-2f32;
    g = g * u + 1.441_181_5e-1;
    g = g * u - 1.297_400_6e-1;
    g = g * u + 2.476_762_4e-2;
    g = g * u + 9.028_674e-2;
    g = g * u - 1.723_311_8e-1;
    g = g * u + 1.742_690_2e-1;
    g = g * u - 3.608_305_8e-2;
    g = g * u - 3.013_788e-1;
    g = g * u + 8.903_982e-1;
    // z^2 = x^2 / 2 from x itself, as hi + lo exactly (Dekker's split of x into 12 + 12
    // bits): the rounding of z = x / sqrt 2 and of z * z each cost up to 5e-6 relative in
    // e^(-z^2) near z = 9.
    // Below -20 the exponential is 0 anyway; clamping keeps x^2 finite (x = -1e30 gives
    // -0 rather than NaN, -inf still gives NaN through the caller's -inf * 0).
    let x = x.max(-20.0);
    let xh = f32::from_bits(x.to_bits() & 0xffff_f000);
    let xl = x - xh;
    let x2 = x * x;
    let lo = ((xh * xh - x2) + 2.0 * xh * xl) + xl * xl;
    exp_f32(-0.5 * x2) * (1.0 - 0.5 * lo) * g * t * FRAC_1_SQRT_PI
}

/// GELU, x Phi(x) = x/2 (1 + erf(x / sqrt 2)), for f32. For x below -sqrt 2 it is computed
/// as x/2 erfc(-x / sqrt 2): there 1 + erf cancels (PyTorch's own float kernel loses up to
/// a few percent of the value near x = -5, and all of it further out), erfc does not.
#[inline(always)]
pub fn gelu_f32(x: f32) -> f32 {
    let z = x * std::f32::consts::FRAC_1_SQRT_2;
    let body = 0.5 * x * (1.0 + erf_f32(z));
    let tail = 0.5 * x * erfc_tail_f32(-z, x);
    // -inf gives NaN through the tail (-inf * 0), as PyTorch's gelu(-inf).
    if z <= -1.0 {
        tail
    } else {
        body
    }
}

/// The transcendental functions of the elementwise kernels, vectorisable for f32 and `std`'s
/// for f64 (exact to well under an ulp; f64 tensors are used where accuracy matters most).
pub trait VecMath: Copy {
    fn vexp(self) -> Self;
    fn vln(self) -> Self;
    fn vtanh(self) -> Self;
    fn verf(self) -> Self;
    /// GELU (the erf form).
    fn vgelu(self) -> Self;
    /// e^x - 1, accurate near 0.
    fn vexpm1(self) -> Self;
    /// ln(1 + x), accurate near 0.
    fn vln1p(self) -> Self;
}

impl VecMath for f32 {
    #[inline(always)]
    fn vexp(self) -> f32 {
        exp_f32(self)
    }
    #[inline(always)]
    fn vln(self) -> f32 {
        ln_f32(self)
    }
    #[inline(always)]
    fn vtanh(self) -> f32 {
        tanh_f32(self)
    }
    #[inline(always)]
    fn verf(self) -> f32 {
        erf_f32(self)
    }
    #[inline(always)]
    fn vgelu(self) -> f32 {
        gelu_f32(self)
    }
    #[inline(always)]
    fn vexpm1(self) -> f32 {
        expm1_f32(self)
    }
    #[inline(always)]
    fn vln1p(self) -> f32 {
        ln1p_f32(self)
    }
}

impl VecMath for f64 {
    #[inline(always)]
    fn vexp(self) -> f64 {
        self.exp()
    }
    #[inline(always)]
    fn vln(self) -> f64 {
        self.ln()
    }
    #[inline(always)]
    fn vtanh(self) -> f64 {
        self.tanh()
    }
    #[inline(always)]
    fn verf(self) -> f64 {
        crate::math::erf(self)
    }
    #[inline(always)]
    fn vgelu(self) -> f64 {
        self * 0.5 * (1.0 + crate::math::erf(self * std::f64::consts::FRAC_1_SQRT_2))
    }
    #[inline(always)]
    fn vexpm1(self) -> f64 {
        self.exp_m1()
    }
    #[inline(always)]
    fn vln1p(self) -> f64 {
        self.ln_1p()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Largest error of `f` against the f64 reference over `xs`, in units of the f32 spacing
    /// at the reference value (ulp).
    fn worst_ulp(
        xs: impl Iterator<Item = f32>,
        f: fn(f32) -> f32,
        reference: fn(f64) -> f64,
    ) -> f64 {
        let mut worst = 0.0f64;
        for x in xs {
            let (got, want) = (f(x) as f64, reference(x as f64));
            if !want.is_finite() || want.abs() < f32::MIN_POSITIVE as f64 {
                continue;
            }
            let ulp = f32::EPSILON as f64 * 2f64.powi((want.abs()).log2().floor() as i32);
            worst = worst.max((got - want).abs() / ulp);
        }
        worst
    }

    fn grid(lo: f32, hi: f32, step: f32) -> impl Iterator<Item = f32> {
        let n = ((hi - lo) / step) as usize;
        (0..=n).map(move |i| lo + i as f32 * step)
    }

    #[test]
    fn exp_is_within_two_ulp_and_handles_special_values() {
        assert!(worst_ulp(grid(-103.0, 88.0, 0.0137), exp_f32, f64::exp) < 2.0);
        assert!(worst_ulp(grid(-1.0, 1.0, 1e-4), exp_f32, f64::exp) < 2.0);
        assert_eq!(exp_f32(f32::NEG_INFINITY), 0.0);
        assert_eq!(exp_f32(-1000.0), 0.0);
        assert_eq!(exp_f32(f32::INFINITY), f32::INFINITY);
        assert_eq!(exp_f32(89.0), f32::INFINITY);
        assert!(exp_f32(f32::NAN).is_nan());
        assert_eq!(exp_f32(0.0), 1.0);
        // Subnormal results (e^-100 = 3.7e-44) keep their value to the subnormal spacing.
        assert!((exp_f32(-100.0) as f64 - (-100f64).exp()).abs() < 1.5e-45);
    }

    #[test]
    fn ln_is_within_two_ulp_and_handles_special_values() {
        assert!(worst_ulp(grid(1e-3, 10.0, 1.3e-3), ln_f32, f64::ln) < 2.0);
        assert!(worst_ulp(grid(0.5, 2.0, 1e-5), ln_f32, f64::ln) < 2.0);
        let wide = (-120..120).map(|k| 1.37f32 * 2f32.powi(k));
        assert!(worst_ulp(wide, ln_f32, f64::ln) < 2.0);
        let tiny = f32::from_bits(1000); // a subnormal
        assert!(((ln_f32(tiny) as f64) - (tiny as f64).ln()).abs() < 1e-5);
        assert_eq!(ln_f32(0.0), f32::NEG_INFINITY);
        assert_eq!(ln_f32(-0.0), f32::NEG_INFINITY);
        assert!(ln_f32(-1.0).is_nan());
        assert!(ln_f32(f32::NAN).is_nan());
        assert_eq!(ln_f32(f32::INFINITY), f32::INFINITY);
        assert_eq!(ln_f32(1.0), 0.0);
    }

    #[test]
    fn expm1_and_ln1p_keep_relative_accuracy_near_zero() {
        let xs = grid(-20.0, 20.0, 0.001_3)
            .chain(grid(-1e-3, 1e-3, 1.7e-7))
            .chain([1e-30, -1e-30, 1e-8, -1e-8, 0.499_99, 0.5, -0.5]);
        assert!(worst_ulp(xs, expm1_f32, f64::exp_m1) <= 3.0);
        let ys = grid(-0.999, 30.0, 0.000_77)
            .chain(grid(-1e-3, 1e-3, 1.3e-7))
            .chain([1e-30, 1e-8, 1e20, 3e38]);
        assert!(worst_ulp(ys, ln1p_f32, f64::ln_1p) <= 3.0);
        assert_eq!(expm1_f32(-0.0).to_bits(), (-0.0f32).to_bits());
        assert_eq!(expm1_f32(f32::NEG_INFINITY), -1.0);
        assert_eq!(expm1_f32(f32::INFINITY), f32::INFINITY);
        assert!(expm1_f32(f32::NAN).is_nan() && ln1p_f32(f32::NAN).is_nan());
        assert_eq!(ln1p_f32(-1.0), f32::NEG_INFINITY);
        assert!(ln1p_f32(-2.0).is_nan());
        assert_eq!(ln1p_f32(f32::INFINITY), f32::INFINITY);
    }

    #[test]
    fn tanh_is_within_three_ulp_and_saturates() {
        assert!(worst_ulp(grid(-10.0, 10.0, 1.1e-3), tanh_f32, f64::tanh) < 3.0);
        assert!(worst_ulp(grid(-1e-3, 1e-3, 1e-7), tanh_f32, f64::tanh) < 3.0);
        assert_eq!(tanh_f32(100.0), 1.0);
        assert_eq!(tanh_f32(-100.0), -1.0);
        assert_eq!(tanh_f32(f32::INFINITY), 1.0);
        assert_eq!(tanh_f32(f32::NEG_INFINITY), -1.0);
        assert!(tanh_f32(f32::NAN).is_nan());
        assert_eq!(tanh_f32(-0.0).to_bits(), (-0.0f32).to_bits());
    }

    #[test]
    fn erf_is_close_to_the_f64_erf() {
        let mut worst_rel = 0.0f64;
        for x in grid(-6.0, 6.0, 7e-4) {
            let want = crate::math::erf(x as f64);
            if want != 0.0 {
                worst_rel = worst_rel.max(((erf_f32(x) as f64 - want) / want).abs());
            }
        }
        assert!(worst_rel < 5e-7, "worst relative error {worst_rel}");
        assert_eq!(erf_f32(10.0), 1.0);
        assert_eq!(erf_f32(-10.0), -1.0);
        assert_eq!(erf_f32(0.0), 0.0);
        assert!(erf_f32(f32::NAN).is_nan());
    }

    #[test]
    fn gelu_keeps_its_relative_accuracy_in_the_negative_tail() {
        let reference = |x: f64| 0.5 * x * crate::math::erfc(-x / std::f64::consts::SQRT_2);
        let mut worst_rel = 0.0f64;
        let mut at = 0.0;
        for x in grid(-13.0, 6.0, 3.1e-3) {
            let want = reference(x as f64);
            if want.abs() > 1e-37 {
                let rel = ((gelu_f32(x) as f64 - want) / want).abs();
                if rel > worst_rel {
                    (worst_rel, at) = (rel, x);
                }
            }
        }
        assert!(worst_rel < 2e-6, "worst relative error {worst_rel} at {at}");
        assert!(gelu_f32(f32::NEG_INFINITY).is_nan());
        assert_eq!(gelu_f32(f32::INFINITY), f32::INFINITY);
        assert_eq!(gelu_f32(-30.0), 0.0);
        assert_eq!(gelu_f32(-1e30), 0.0);
        assert!(gelu_f32(f32::NAN).is_nan());
        assert_eq!(gelu_f32(0.0), 0.0);
    }
}
