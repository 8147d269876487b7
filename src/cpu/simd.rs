//! Run-time choice of instruction set for the plain loops of the elementwise kernels.
//!
//! The crate is compiled for baseline x86-64 (SSE2) so that one wheel runs everywhere. A
//! loop written as ordinary Rust still vectorises, but only to 4-lane SSE2, and float
//! `floor/ceil/trunc/round` become libm calls (SSE4.1 is needed for `roundps`). Wrapping the
//! innermost loop in [`with_avx2`] compiles a second copy of it for AVX2 + FMA, picked when
//! the CPU has them. LLVM never contracts `a * b + c` into an FMA on its own (Rust forbids it),
//! so both copies produce the same bits.

/// Whether this CPU can run the AVX2 + FMA versions of the kernels (cached by std).
#[inline]
pub fn has_avx2_fma() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma")
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

/// Whether this CPU can run AVX-512F kernels (cached). `FERROTORCH_DISABLE_AVX512=1` turns them
/// off (to compare with the AVX2 path, or where AVX-512 lowers the clock).
#[inline]
pub fn has_avx512() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        static HAS: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
        *HAS.get_or_init(|| {
            std::arch::is_x86_feature_detected!("avx512f")
                && has_avx2_fma()
                && std::env::var_os("FERROTORCH_DISABLE_AVX512").is_none_or(|v| v != "1")
        })
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

/// Run `body`, compiled for AVX2 + FMA when the CPU has them. `body` should be the whole
/// inner loop (not one element): it is inlined into a function built for those features.
#[inline(always)]
pub fn with_avx2<R>(body: impl FnOnce() -> R) -> R {
    #[cfg(target_arch = "x86_64")]
    if has_avx2_fma() {
        // SAFETY: the CPU supports AVX2 and FMA (checked just above).
        return unsafe { run_avx2(body) };
    }
    body()
}

/// # Safety
/// The CPU must support AVX2 and FMA.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn run_avx2<R>(body: impl FnOnce() -> R) -> R {
    body()
}

#[cfg(test)]
mod tests {
    #[test]
    fn with_avx2_gives_the_same_bits_as_the_baseline_loop() {
        let x: Vec<f32> = (0..1000).map(|i| (i as f32 - 500.0) * 0.37).collect();
        let kernel = |x: &[f32]| -> Vec<f32> {
            x.iter()
                .map(|&v| (v * 1.5 + 0.25).floor() + (v * v).sqrt() / 3.0)
                .collect()
        };
        let fast = super::with_avx2(|| kernel(&x));
        let plain = kernel(&x);
        assert_eq!(
            fast.iter().map(|v| v.to_bits()).collect::<Vec<_>>(),
            plain.iter().map(|v| v.to_bits()).collect::<Vec<_>>()
        );
    }
}
