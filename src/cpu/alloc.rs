//! Output buffers for kernels.
//!
//! A big fresh buffer costs one page fault per 4 KiB page on first write, which for a
//! 40 MB result costs more than the arithmetic. NumPy asks Linux for transparent huge pages
//! (`madvise(MADV_HUGEPAGE)`) on large allocations; we do the same, so a 10M-element
//! elementwise op faults 20 times instead of 10,000.

/// Buffers at least this big (bytes) get the huge-page hint (NumPy uses 4 MiB too).
const HUGE_PAGE_HINT_BYTES: usize = 4 << 20;

/// `n` copies of `T::default()` (all-zero bits for the dtypes we store: the allocation comes
/// from `calloc`, untouched until the kernel writes it).
pub fn output_vec<T: Copy + Default>(n: usize) -> Vec<T> {
    let mut v = vec![T::default(); n];
    advise_huge_pages(&mut v);
    v
}

/// Hint that `buf`'s not-yet-touched pages should be backed by huge pages (Linux only;
/// a no-op elsewhere or for small buffers; failure is harmless and ignored).
pub fn advise_huge_pages<T>(buf: &mut [T]) {
    let bytes = std::mem::size_of_val(buf);
    if bytes < HUGE_PAGE_HINT_BYTES {
        return;
    }
    #[cfg(target_os = "linux")]
    {
        const HUGE: usize = 2 << 20;
        let start = buf.as_mut_ptr() as usize;
        let aligned_start = start.next_multiple_of(HUGE);
        let end = (start + bytes) / HUGE * HUGE;
        if end > aligned_start {
            // SAFETY: [aligned_start, end) lies inside `buf`, which we borrow mutably; madvise
            // with MADV_HUGEPAGE only changes how the kernel backs these pages, never their
            // contents or validity.
            unsafe {
                libc::madvise(
                    aligned_start as *mut libc::c_void,
                    end - aligned_start,
                    libc::MADV_HUGEPAGE,
                );
            }
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn output_vec_is_zeroed() {
        let v = super::output_vec::<f32>(3 << 20);
        assert_eq!(v.len(), 3 << 20);
        assert!(v.iter().all(|&x| x == 0.0));
        assert!(super::output_vec::<i64>(0).is_empty());
    }
}
