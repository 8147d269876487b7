//! A caching device allocator, like PyTorch's: freed blocks are kept per size class and
//! handed out again, so a training loop in steady state never calls `cuMemAlloc`/`cuMemFree`.
//!
//! All work of a device is queued on its streams in order; a block freed by a tensor may be
//! reused at once by the next allocation because any later kernel that writes it is queued
//! after every kernel that read it (the same single-stream reasoning as PyTorch's allocator;
//! tensors used on a side stream must be kept alive by the caller until it is synchronised).

use super::MemoryStats;
use cudarc::driver::{result, sys::CUdeviceptr, DriverError};
use std::collections::HashMap;

/// Block sizes: multiples of 512 bytes up to 1 MiB, multiples of 2 MiB above.
pub fn round_size(bytes: usize) -> usize {
    const SMALL: usize = 512;
    const LARGE: usize = 2 << 20;
    let bytes = bytes.max(1);
    if bytes <= (1 << 20) {
        bytes.div_ceil(SMALL) * SMALL
    } else {
        bytes.div_ceil(LARGE) * LARGE
    }
}

#[derive(Default)]
pub struct CachingAllocator {
    /// Free blocks by rounded size.
    free: HashMap<usize, Vec<CUdeviceptr>>,
    allocated: usize,
    peak: usize,
    reserved: usize,
}

impl CachingAllocator {
    /// A block of at least `bytes` bytes (the caller has bound the device's context).
    pub fn alloc(&mut self, bytes: usize) -> Result<(CUdeviceptr, usize), DriverError> {
        let size = round_size(bytes);
        let ptr = match self.free.get_mut(&size).and_then(|v| v.pop()) {
            Some(p) => p,
            None => {
                // SAFETY: a plain device allocation in the current context.
                let fresh = unsafe { result::malloc_sync(size) };
                let p = match fresh {
                    Ok(p) => p,
                    Err(_) => {
                        // Out of memory: give the cache back to the driver and retry once.
                        self.release_cached();
                        // SAFETY: as above.
                        unsafe { result::malloc_sync(size) }?
                    }
                };
                self.reserved += size;
                p
            }
        };
        self.allocated += size;
        self.peak = self.peak.max(self.allocated);
        Ok((ptr, size))
    }

    /// Return a block obtained from `alloc` with its rounded `size`.
    pub fn free(&mut self, ptr: CUdeviceptr, size: usize) {
        self.allocated = self.allocated.saturating_sub(size);
        self.free.entry(size).or_default().push(ptr);
    }

    /// Free every cached block (`torch.cuda.empty_cache()`); the caller has bound the context.
    pub fn release_cached(&mut self) {
        // cuMemFree needs the blocks idle: wait for queued work first.
        let _ = result::ctx::synchronize();
        for (size, blocks) in self.free.drain() {
            for p in blocks {
                // SAFETY: `p` came from malloc_sync and no tensor uses it (it is cached).
                // cuMemFree waits for queued work that may still read it.
                if unsafe { result::free_sync(p) }.is_ok() {
                    self.reserved = self.reserved.saturating_sub(size);
                }
            }
        }
    }

    pub fn stats(&self) -> MemoryStats {
        MemoryStats {
            allocated: self.allocated,
            peak_allocated: self.peak,
            reserved: self.reserved,
        }
    }

    pub fn reset_peak(&mut self) {
        self.peak = self.allocated;
    }
}

#[cfg(test)]
mod tests {
    use super::round_size;

    #[test]
    fn size_classes() {
        assert_eq!(round_size(0), 512);
        assert_eq!(round_size(1), 512);
        assert_eq!(round_size(513), 1024);
        assert_eq!(round_size(1 << 20), 1 << 20);
        assert_eq!(round_size((1 << 20) + 1), 2 << 20);
        assert_eq!(round_size(5 << 20), 6 << 20);
    }
}
