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
