//! Output buffers for kernels.
//!
//! A big fresh buffer costs one page fault per 4 KiB page on first write, which for a
//! 40 MB result costs more than the arithmetic. NumPy asks Linux for transparent huge pages
//! (`madvise(MADV_HUGEPAGE)`) on large allocations; we do the same, so a 10M-element
//! elementwise op faults 20 times instead of 10,000.

use std::any::{Any, TypeId};
use std::sync::Mutex;

/// Buffers at least this big (bytes) get the huge-page hint (NumPy uses 4 MiB too).
const HUGE_PAGE_HINT_BYTES: usize = 4 << 20;

/// `n` copies of `T::default()` (all-zero bits for the dtypes we store: the allocation comes
/// from `calloc`, untouched until the kernel writes it).
pub fn output_vec<T: Copy + Default>(n: usize) -> Vec<T> {
    let mut v = vec![T::default(); n];
    advise_huge_pages(&mut v);
    v
}

/// A buffer of `n` elements whose contents the caller will overwrite completely: a recycled
/// one of the same type and length when the pool has it (no page faults, no zeroing), else
/// a fresh [`output_vec`].
pub fn output_vec_for_overwrite<T: Copy + Default + Send + 'static>(n: usize) -> Vec<T> {
    recycled(n).unwrap_or_else(|| output_vec(n))
}

/// `n` zeros, in a recycled buffer when the pool has one (zeroing memory that is already
/// mapped is cheaper than a fresh buffer's page faults).
pub fn zeroed_vec<T: Copy + Default + Send + 'static>(n: usize) -> Vec<T> {
    match recycled::<T>(n) {
        Some(mut v) => {
            v.fill(T::default());
            v
        }
        None => output_vec(n),
    }
}

/// Big buffers (at least this many bytes) are worth recycling: a fresh one costs a page fault
/// per page and the kernel's zeroing of it, more than the arithmetic of a simple kernel.
/// Smaller ones malloc serves from its free lists (128 KiB is glibc's initial threshold for
/// giving a buffer its own fresh mapping).
const RECYCLE_MIN_BYTES: usize = 128 << 10;
/// The pool holds at most this many bytes and buffers; older ones are freed first.
const RECYCLE_MAX_BYTES: usize = 128 << 20;
const RECYCLE_MAX_BUFFERS: usize = 16;

struct Pooled {
    type_id: TypeId,
    len: usize,
    bytes: usize,
    buf: Box<dyn Any + Send>,
}

/// Freed big CPU buffers, newest last. Steady-state loops (training steps, benchmarks)
/// allocate the same sizes over and over, so exact (type, length) matches are the norm.
static POOL: Mutex<Vec<Pooled>> = Mutex::new(Vec::new());

/// Give a no-longer-used buffer back for reuse (called when a tensor storage is dropped).
pub fn recycle<T: Copy + Send + 'static>(v: Vec<T>) {
    let bytes = std::mem::size_of_val(v.as_slice());
    if !(RECYCLE_MIN_BYTES..=RECYCLE_MAX_BYTES).contains(&bytes) {
        return;
    }
    let evicted: Vec<Pooled> = {
        let Ok(mut pool) = POOL.lock() else { return };
        pool.push(Pooled {
            type_id: TypeId::of::<T>(),
            len: v.len(),
            bytes,
            buf: Box::new(v),
        });
        let mut total: usize = pool.iter().map(|p| p.bytes).sum();
        let mut drop_n = 0;
        while pool.len() - drop_n > RECYCLE_MAX_BUFFERS || total > RECYCLE_MAX_BYTES {
            total -= pool[drop_n].bytes;
            drop_n += 1;
        }
        pool.drain(..drop_n).collect()
    };
    drop(evicted); // freed outside the lock
}

fn recycled<T: Copy + Send + 'static>(n: usize) -> Option<Vec<T>> {
    if n * std::mem::size_of::<T>() < RECYCLE_MIN_BYTES {
        return None;
    }
    let mut pool = POOL.lock().ok()?;
    let i = pool
        .iter()
        .rposition(|p| p.type_id == TypeId::of::<T>() && p.len == n)?;
    pool.remove(i).buf.downcast::<Vec<T>>().ok().map(|b| *b)
}

/// Free every recycled buffer (`ferrotorch.cpu.empty_cache()`-style; also used by tests).
pub fn release_recycled() {
    let all = POOL.lock().map(|mut p| std::mem::take(&mut *p));
    drop(all);
}

/// Bytes currently held by the recycling pool.
pub fn recycled_bytes() -> usize {
    POOL.lock()
        .map(|p| p.iter().map(|b| b.bytes).sum())
        .unwrap_or(0)
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

    #[test]
    fn big_buffers_are_recycled_by_type_and_length() {
        use super::*;
        let n = (RECYCLE_MIN_BYTES / 4) + 10;
        let mut v = output_vec::<f32>(n);
        v[3] = 7.0;
        let ptr = v.as_ptr();
        recycle(v);
        // Another type or length does not get it.
        assert!(recycled::<i32>(n).is_none());
        assert!(recycled::<f32>(n + 1).is_none());
        let w = output_vec_for_overwrite::<f32>(n);
        assert_eq!((w.as_ptr(), w.len(), w[3]), (ptr, n, 7.0));
        // Small buffers are not kept; the pool stays bounded.
        recycle(vec![1u8; 16]);
        for _ in 0..(RECYCLE_MAX_BUFFERS + 4) {
            recycle(output_vec::<f32>(n));
        }
        assert!(recycled_bytes() <= RECYCLE_MAX_BYTES);
        assert!(POOL.lock().unwrap().len() <= RECYCLE_MAX_BUFFERS);
        release_recycled();
    }
}
