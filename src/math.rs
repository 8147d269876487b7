//! Scalar special functions missing from `std`.

/// Error function (from `libm`).
pub fn erf(x: f64) -> f64 {
    libm::erf(x)
}

/// Complementary error function (from `libm`).
pub fn erfc(x: f64) -> f64 {
    libm::erfc(x)
}

/// Inverse error function: Giles' single-precision approximation refined by two Newton steps
/// on `erf`, which brings it to full f64 accuracy.
pub fn erfinv(y: f64) -> f64 {
    if y.is_nan() || !(-1.0..=1.0).contains(&y) {
        return f64::NAN;
    }
    if y == 1.0 {
        return f64::INFINITY;
    }
    if y == -1.0 {
        return f64::NEG_INFINITY;
    }
    let w = -((1.0 - y) * (1.0 + y)).ln();
    let mut x = if w < 5.0 {
        let w = w - 2.5;
        let mut p = 2.810_226_36e-08;
        for c in [
            3.432_739_39e-07,
            -3.523_387_7e-06,
            -4.391_506_54e-06,
            0.000_218_580_87,
            -0.001_253_725_03,
            -0.004_177_681_64,
            0.246_640_727,
            1.501_409_41,
        ] {
            p = c + p * w;
        }
        p * y
    } else {
        let w = w.sqrt() - 3.0;
        let mut p = -0.000_200_214_257;
        for c in [
            0.000_100_950_558,
            0.001_349_343_22,
            -0.003_673_428_44,
            0.005_739_507_73,
            -0.007_622_461_3,
            0.009_438_870_47,
            1.001_674_06,
            2.832_976_82,
        ] {
            p = c + p * w;
        }
        p * y
    };
    // Newton: x -= (erf(x) - y) / erf'(x), erf'(x) = 2/sqrt(pi) exp(-x^2).
    for _ in 0..2 {
        let err = erf(x) - y;
        x -= err / (std::f64::consts::FRAC_2_SQRT_PI * (-x * x).exp());
    }
    x
}

/// `ln |Γ(x)|` (from `libm`, a port of musl's; the sign is dropped, as in PyTorch).
pub fn lgamma(x: f64) -> f64 {
    libm::lgamma(x)
}

/// Digamma `ψ(x) = d/dx ln Γ(x)`, PyTorch's conventions at the poles: `ψ(±0) = ∓inf`,
/// NaN at the negative integers. Negative arguments use the reflection
/// `ψ(x) = ψ(1 - x) - π / tan(π x)`; small positive ones the recurrence
/// `ψ(x) = ψ(x + 1) - 1/x` up to 10, where the asymptotic series reaches full precision.
pub fn digamma(x: f64) -> f64 {
    use std::f64::consts::PI;
    if x == 0.0 {
        return if x.is_sign_negative() {
            f64::INFINITY
        } else {
            f64::NEG_INFINITY
        };
    }
    if x.is_nan() || x == f64::NEG_INFINITY {
        return f64::NAN;
    }
    if x < 0.0 {
        if x == x.trunc() {
            return f64::NAN;
        }
        // tan(π x) only needs x's fractional part (exact, and accurate for large |x|).
        return digamma(1.0 - x) - PI / (PI * x.fract()).tan();
    }
    let (mut x, mut acc) = (x, 0.0);
    while x < 10.0 {
        acc -= 1.0 / x;
        x += 1.0;
    }
    // ψ(x) ~ ln x - 1/(2x) - Σ B_2k / (2k x^2k)
    let z = 1.0 / (x * x);
    let series = z
        * (1.0 / 12.0
            - z * (1.0 / 120.0
                - z * (1.0 / 252.0
                    - z * (1.0 / 240.0 - z * (1.0 / 132.0 - z * (691.0 / 32760.0 - z / 12.0))))));
    acc + x.ln() - 0.5 / x - series
}

/// Trigamma `ψ₁(x) = d/dx ψ(x)` (`polygamma(1, x)`): `+inf` at the poles (0 and the negative
/// integers), the reflection `ψ₁(x) = π² / sin²(π x) - ψ₁(1 - x)` for negative `x`, the
/// recurrence `ψ₁(x) = ψ₁(x + 1) + 1/x²` up to 10, then the asymptotic series.
pub fn trigamma(x: f64) -> f64 {
    use std::f64::consts::PI;
    if x.is_nan() || x == f64::NEG_INFINITY {
        return f64::NAN;
    }
    if x <= 0.0 {
        if x == x.trunc() {
            return f64::INFINITY;
        }
        let s = (PI * x.fract()).sin();
        return PI * PI / (s * s) - trigamma(1.0 - x);
    }
    let (mut x, mut acc) = (x, 0.0);
    while x < 10.0 {
        acc += 1.0 / (x * x);
        x += 1.0;
    }
    // ψ₁(x) ~ 1/x + 1/(2x²) + Σ B_2k / x^(2k+1)
    let z = 1.0 / (x * x);
    let series = z
        * (1.0 / 6.0
            - z * (1.0 / 30.0
                - z * (1.0 / 42.0
                    - z * (1.0 / 30.0 - z * (5.0 / 66.0 - z * (691.0 / 2730.0 - z * 7.0 / 6.0))))));
    acc + 1.0 / x + 0.5 * z + series / x
}

/// Hurwitz zeta `ζ(x, q) = Σ_{k≥0} (k + q)^(-x)` (`torch.special.zeta`; the Riemann zeta at
/// `q = 1`). Defined for `x > 1`: `x == 1` gives `+inf`, `x < 1` NaN. A non-positive integer `q`
/// hits a pole (`+inf`); other negative `q` are allowed only for integer `x` (NaN otherwise),
/// as in Cephes and PyTorch. Summed directly until `q + k` is large, then the Euler-Maclaurin
/// tail `a^(1-x)/(x-1) + a^(-x)/2 + Σ_j B_2j/(2j)! · x(x+1)…(x+2j-2) · a^(-x-2j+1)`.
pub fn hurwitz_zeta(x: f64, q: f64) -> f64 {
    // (2j)! / B_2j for j = 1..12: the Euler-Maclaurin coefficients' reciprocals.
    const FACT_OVER_BERNOULLI: [f64; 12] = [
        12.0,
        -720.0,
        30240.0,
        -1209600.0,
        47900160.0,
        -1.892_437_580_318_379_2e9,
        7.472_424_96e10,
        -2.950_130_727_918_164e12,
        1.164_678_281_435_006_7e14,
        -4.597_978_722_407_473e15,
        1.815_210_540_194_354_7e17,
        -7.166_165_256_175_667e18,
    ];
    if x.is_nan() || q.is_nan() {
        return f64::NAN;
    }
    if x == 1.0 {
        return f64::INFINITY;
    }
    if x < 1.0 {
        return f64::NAN;
    }
    if q <= 0.0 {
        if q == q.floor() {
            return f64::INFINITY;
        }
        if x != x.floor() {
            return f64::NAN;
        }
    }
    if q == f64::INFINITY {
        return 0.0;
    }
    // Direct sum over the first terms, stopping early when they no longer matter.
    let mut sum = q.powf(-x);
    let mut a = q;
    let mut k = 0;
    while k < 9 || a <= 9.0 {
        k += 1;
        a += 1.0;
        let term = a.powf(-x);
        sum += term;
        if (term / sum).abs() < f64::EPSILON {
            return sum;
        }
    }
    // Euler-Maclaurin tail from `a` on (the term at `a` was already added: hence `- 0.5`).
    let w = a;
    sum += w * w.powf(-x) / (x - 1.0) - 0.5 * w.powf(-x);
    let mut rising = 1.0; // x (x+1) ... (x+2j-2)
    let mut power = w.powf(-x); // divided by w once per factor: w^(-x-2j+1) at term j
    let mut extra = 0.0;
    for (j, &c) in FACT_OVER_BERNOULLI.iter().enumerate() {
        let m = (2 * j) as f64;
        rising *= x + m;
        power /= w;
        let term = rising * power / c;
        extra += term;
        if (term / (sum + extra)).abs() < f64::EPSILON {
            break;
        }
        rising *= x + m + 1.0;
        power /= w;
    }
    sum + extra
}

/// `ln(x^a e^-x / Γ(a))`: the common factor of the incomplete gamma series and fraction.
fn gamma_prefactor_ln(a: f64, x: f64) -> f64 {
    a * x.ln() - x - lgamma(a)
}

/// Regularised incomplete gamma functions `(P(a, x), Q(a, x))` for `a > 0, x > 0` (finite):
/// the power series when `x < a + 1`, the continued fraction (modified Lentz) otherwise, as in
/// Numerical Recipes; each converges quickly on its side, and the other value is `1 - ` it.
fn incomplete_gamma(a: f64, x: f64) -> (f64, f64) {
    const MAX_TERMS: usize = 100_000;
    if x < a + 1.0 {
        let (mut ap, mut term) = (a, 1.0 / a);
        let mut sum = term;
        for _ in 0..MAX_TERMS {
            ap += 1.0;
            term *= x / ap;
            sum += term;
            if term.abs() < sum.abs() * f64::EPSILON {
                break;
            }
        }
        let p = (sum.ln() + gamma_prefactor_ln(a, x)).exp().min(1.0);
        (p, 1.0 - p)
    } else {
        const TINY: f64 = 1e-300;
        let mut b = x + 1.0 - a;
        let mut c = 1.0 / TINY;
        let mut d = 1.0 / b;
        let mut h = d;
        for i in 1..MAX_TERMS {
            let an = -(i as f64) * (i as f64 - a);
            b += 2.0;
            d = an * d + b;
            if d.abs() < TINY {
                d = TINY;
            }
            c = b + an / c;
            if c.abs() < TINY {
                c = TINY;
            }
            d = 1.0 / d;
            let step = d * c;
            h *= step;
            if (step - 1.0).abs() < f64::EPSILON {
                break;
            }
        }
        let q = (h.ln() + gamma_prefactor_ln(a, x)).exp().min(1.0);
        (1.0 - q, q)
    }
}

/// The edge cases of `igamma`/`igammac` shared by both, following PyTorch: NaN for negative
/// or NaN arguments and for `a = x = 0`; `P(0, x > 0) = 1`, `P(a, 0) = 0`, `P(a, inf) = 1`,
/// `P(inf, x finite) = 0`.
fn incomplete_gamma_edge(a: f64, x: f64) -> Option<f64> {
    if a.is_nan() || x.is_nan() || a < 0.0 || x < 0.0 || (a == 0.0 && x == 0.0) {
        return Some(f64::NAN);
    }
    if a == 0.0 {
        return Some(1.0);
    }
    if x == 0.0 {
        return Some(0.0);
    }
    if x.is_infinite() {
        return Some(1.0);
    }
    if a.is_infinite() {
        return Some(0.0);
    }
    None
}

/// Regularised lower incomplete gamma `P(a, x) = γ(a, x) / Γ(a)` (`torch.special.gammainc`).
pub fn gammainc(a: f64, x: f64) -> f64 {
    incomplete_gamma_edge(a, x).unwrap_or_else(|| incomplete_gamma(a, x).0)
}

/// Regularised upper incomplete gamma `Q(a, x) = 1 - P(a, x)` (`torch.special.gammaincc`),
/// computed directly where it is small so that it keeps its relative precision.
pub fn gammaincc(a: f64, x: f64) -> f64 {
    match incomplete_gamma_edge(a, x) {
        Some(p) => 1.0 - p,
        None => incomplete_gamma(a, x).1,
    }
}

/// `d x / d a` for a Gamma(a, 1) sample `x` at a fixed quantile (implicit reparameterisation:
/// `-(∂P/∂a) / (∂P/∂x)`), with `∂P/∂a` by a central difference on the float64 `P`.
pub fn standard_gamma_grad(a: f64, x: f64) -> f64 {
    if !(a > 0.0 && x > 0.0) || a.is_infinite() || x.is_infinite() {
        return f64::NAN;
    }
    let h = 1e-5 * a.max(1e-3);
    let (lo, hi) = if a - h > 0.0 {
        (a - h, a + h)
    } else {
        (a, a + h)
    };
    let dp_da = (gammainc(hi, x) - gammainc(lo, x)) / (hi - lo);
    let density = ((a - 1.0) * x.ln() - x - lgamma(a)).exp();
    if density == 0.0 {
        return 0.0;
    }
    -dp_da / density
}

#[cfg(test)]
mod gamma_tests {
    use super::*;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() <= 1e-13 * b.abs().max(1.0)
    }

    #[test]
    fn digamma_and_trigamma_known_values() {
        const EULER: f64 = 0.577_215_664_901_532_9;
        let pi2 = std::f64::consts::PI * std::f64::consts::PI;
        assert!(close(digamma(1.0), -EULER));
        assert!(close(digamma(0.5), -EULER - 2.0 * std::f64::consts::LN_2));
        assert!(close(digamma(20.5), digamma(19.5) + 1.0 / 19.5));
        assert!(close(digamma(-0.5), digamma(1.5) + 0.0)); // ψ(-1/2) = ψ(3/2) - π/tan(-π/2) = ψ(3/2)
        assert_eq!(digamma(0.0), f64::NEG_INFINITY);
        assert!(digamma(-3.0).is_nan());
        assert!(close(trigamma(1.0), pi2 / 6.0));
        assert!(close(trigamma(0.5), pi2 / 2.0));
        assert!(close(trigamma(3.25), trigamma(4.25) + 1.0 / (3.25 * 3.25)));
        assert!(close(trigamma(-0.5), pi2 - trigamma(1.5)));
        assert_eq!(trigamma(-2.0), f64::INFINITY);
        // Hurwitz zeta: Riemann values, ζ(2, x) = ψ₁(x), the shift ζ(s, q) = ζ(s, q + 1) + q^-s.
        assert!(close(hurwitz_zeta(2.0, 1.0), pi2 / 6.0));
        assert!(close(hurwitz_zeta(4.0, 1.0), pi2 * pi2 / 90.0));
        assert!(close(hurwitz_zeta(3.0, 1.0), 1.202_056_903_159_594_2));
        for q in [0.01, 0.3, 1.7, 9.5, 33.0, 1e4] {
            assert!(close(hurwitz_zeta(2.0, q), trigamma(q)), "{q}");
            let s = 3.7;
            assert!(
                close(hurwitz_zeta(s, q), hurwitz_zeta(s, q + 1.0) + q.powf(-s)),
                "{q}"
            );
        }
        assert_eq!(hurwitz_zeta(1.0, 2.0), f64::INFINITY);
        assert!(hurwitz_zeta(0.5, 2.0).is_nan());
        assert_eq!(hurwitz_zeta(2.0, -3.0), f64::INFINITY);
        assert!(hurwitz_zeta(2.5, -0.5).is_nan());
        // ψ is the derivative of ln Γ, ψ₁ the derivative of ψ (central differences).
        for x in [0.3, 1.7, 4.2, 9.9, 12.5, 150.0, -2.3] {
            let h = 1e-5;
            let d = (lgamma(x + h) - lgamma(x - h)) / (2.0 * h);
            assert!(
                (d - digamma(x)).abs() < 1e-7 * digamma(x).abs().max(1.0),
                "{x}"
            );
            let d1 = (digamma(x + h) - digamma(x - h)) / (2.0 * h);
            assert!(
                (d1 - trigamma(x)).abs() < 1e-6 * trigamma(x).abs().max(1.0),
                "{x}"
            );
        }
    }

    #[test]
    fn incomplete_gamma_known_values() {
        // P(1, x) = 1 - e^-x; P(0.5, x) = erf(sqrt x); Q(3, 2) = 5 e^-2.
        for &x in &[0.1, 1.0, 2.5, 10.0, 40.0] {
            assert!((gammainc(1.0, x) - (1.0 - (-x).exp())).abs() < 1e-14);
            assert!((gammainc(0.5, x) - erf(x.sqrt())).abs() < 1e-13);
        }
        assert!((gammaincc(3.0, 2.0) - 5.0 * (-2.0f64).exp()).abs() < 1e-14);
        assert!((gammaincc(1.0, 50.0) / (-50.0f64).exp() - 1.0).abs() < 1e-12);
        assert!(gammainc(-1.0, 1.0).is_nan() && gammainc(0.0, 0.0).is_nan());
        assert_eq!(gammainc(0.0, 1.0), 1.0);
        assert_eq!(gammainc(2.0, 0.0), 0.0);
        assert_eq!(gammaincc(2.0, f64::INFINITY), 0.0);
    }

    #[test]
    fn standard_gamma_grad_at_a_one() {
        // a = 1 is Exp(1): x = -ln(1 - u); holding u fixed, dx/da solves
        // ∂P/∂a + e^-x dx/da = 0, checked here against a finite difference of the quantile.
        let (a, x) = (1.0, 0.7);
        let u = gammainc(a, x);
        let quantile = |a: f64| {
            let (mut lo, mut hi) = (0.0, 50.0);
            for _ in 0..200 {
                let mid = 0.5 * (lo + hi);
                if gammainc(a, mid) < u {
                    lo = mid;
                } else {
                    hi = mid;
                }
            }
            0.5 * (lo + hi)
        };
        let fd = (quantile(1.0 + 1e-5) - quantile(1.0 - 1e-5)) / 2e-5;
        assert!((standard_gamma_grad(a, x) - fd).abs() < 1e-6);
    }
}
