// common.cuh: definitions shared by every ferrotorch CUDA kernel file.
//
// The Rust side embeds this file with include_str! and hands it to NVRTC as the header source
// named "common.cuh"; kernels are compiled at run time for the GPU's own sm_XX.
// See cuda_kernels/README.md for the ABI (struct layout, kernel names, launch conventions).
#pragma once

#include <cuda_fp16.h>
#include <cuda_bf16.h>

// Generic templates compare unsigned types with zero; that is intended.
#pragma nv_diag_suppress 186

// ---------------------------------------------------------------------------------------------
// Strided layout, passed BY VALUE as a kernel argument (144 bytes).
// Rust mirror:
//   #[repr(C)] struct StridedLayout { ndim: i32, shape: [i64; 8], strides: [i64; 8], offset: i64 }
// (4 bytes of padding follow `ndim`, in both C and Rust.) Strides and offset are in elements.
// Unused trailing dims (d >= ndim) are ignored. A 0-d tensor has ndim == 0 and one element.
// Broadcasting is expressed by the caller: an input broadcast to the output's shape carries the
// output's shape with stride 0 on the broadcast dims.
// ---------------------------------------------------------------------------------------------
#define FT_MAX_DIMS 8

struct StridedLayout {
    int ndim;
    long long shape[FT_MAX_DIMS];
    long long strides[FT_MAX_DIMS];
    long long offset;
};

// Element offset (including layout.offset) of the element whose row-major linear index, over
// layout.shape, is `i`.
__device__ __noinline__ long long strided_offset(long long i, const StridedLayout& l) {
    long long off = l.offset;
    for (int d = l.ndim - 1; d >= 0; --d) {
        const long long s = l.shape[d];
        const long long q = i / s;
        off += (i - q * s) * l.strides[d];
        i = q;
    }
    return off;
}

// True when the layout is row-major contiguous (then element i lives at offset + i).
__device__ __noinline__ bool layout_is_contiguous(const StridedLayout& l) {
    long long expected = 1;
    for (int d = l.ndim - 1; d >= 0; --d) {
        if (l.shape[d] != 1 && l.strides[d] != expected) return false;
        expected *= l.shape[d];
    }
    return true;
}

// Offset of linear index i: fast when `contig` (hoisted out of the loop by the caller).
__device__ __forceinline__ long long layout_offset(long long i, const StridedLayout& l,
                                                   bool contig) {
    return contig ? l.offset + i : strided_offset(i, l);
}

// Grid-stride loop over [0, n): works for any grid/block size.
#define FT_GRID_STRIDE(i, n)                                                       \
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < (n);  \
         i += (long long)blockDim.x * gridDim.x)

// ---------------------------------------------------------------------------------------------
// Accumulation / compute types and load/store helpers.
// f16 and bf16 are loaded to float, computed in float, and rounded (to nearest even) on store.
// Every other type computes in itself (f64 in double).
// ---------------------------------------------------------------------------------------------
template <typename T> struct AccT { typedef T type; };
template <> struct AccT<__half> { typedef float type; };
template <> struct AccT<__nv_bfloat16> { typedef float type; };
// Float accumulator for reductions: float for f32/f16/bf16, double for f64.
template <typename T> struct FloatAccT { typedef float type; };
template <> struct FloatAccT<double> { typedef double type; };

template <typename T> __device__ __forceinline__ T to_acc(T x) { return x; }
__device__ __forceinline__ float to_acc(__half x) { return __half2float(x); }
__device__ __forceinline__ float to_acc(__nv_bfloat16 x) { return __bfloat162float(x); }

template <typename T> struct Cvt {
    template <typename A> static __device__ __forceinline__ T from(A v) {
        return static_cast<T>(v);
    }
};
template <> struct Cvt<__half> {
    template <typename A> static __device__ __forceinline__ __half from(A v) {
        return __float2half_rn(static_cast<float>(v));
    }
    // f64 -> f16 directly (avoids double rounding through float).
    static __device__ __forceinline__ __half from(double v) { return __double2half(v); }
};
template <> struct Cvt<__nv_bfloat16> {
    template <typename A> static __device__ __forceinline__ __nv_bfloat16 from(A v) {
        return __float2bfloat16_rn(static_cast<float>(v));
    }
};
template <> struct Cvt<bool> {
    template <typename A> static __device__ __forceinline__ bool from(A v) {
        return v != static_cast<A>(0);
    }
};

// Convert a compute value `v` (any arithmetic type) to storage type T.
template <typename T, typename A> __device__ __forceinline__ T from_acc(A v) {
    return Cvt<T>::from(v);
}

// Load element of any type as its compute type, or as float-accumulator type.
template <typename T> __device__ __forceinline__ typename FloatAccT<T>::type load_f(T x) {
    return static_cast<typename FloatAccT<T>::type>(to_acc(x));
}

// float +inf and quiet NaN (NVRTC has no <cmath> macros); convert to double exactly.
#define FT_INF (__int_as_float(0x7f800000))
#define FT_NAN (__int_as_float(0x7fc00000))

template <typename T> __device__ __forceinline__ bool ft_isnan(T v) { return false; }
__device__ __forceinline__ bool ft_isnan(float v) { return isnan(v); }
__device__ __forceinline__ bool ft_isnan(double v) { return isnan(v); }

// ---------------------------------------------------------------------------------------------
// Atomic add for every dtype. Native where the hardware has it, otherwise a CAS loop on the
// aligned 32-bit word containing the element (16- and 8-bit types).
// ---------------------------------------------------------------------------------------------
template <typename T, typename A>
__device__ __forceinline__ void atomic_add_subword(T* addr, A val) {
    unsigned int* base = (unsigned int*)((size_t)addr & ~(size_t)3);
    const unsigned int shift = ((size_t)addr & 3) * 8;
    const unsigned int mask = (sizeof(T) == 1 ? 0xffu : 0xffffu) << shift;
    unsigned int old = *base, assumed;
    do {
        assumed = old;
        T cur;
        if (sizeof(T) == 1) {
            unsigned char b = (unsigned char)((assumed & mask) >> shift);
            memcpy(&cur, &b, 1);
        } else {
            unsigned short h = (unsigned short)((assumed & mask) >> shift);
            memcpy(&cur, &h, 2);
        }
        T next = from_acc<T>(to_acc(cur) + val);
        unsigned int bits;
        if (sizeof(T) == 1) {
            unsigned char b;
            memcpy(&b, &next, 1);
            bits = b;
        } else {
            unsigned short h;
            memcpy(&h, &next, 2);
            bits = h;
        }
        old = atomicCAS(base, assumed, (assumed & ~mask) | (bits << shift));
    } while (assumed != old);
}

__device__ __forceinline__ void atomic_add(float* p, float v) { atomicAdd(p, v); }
__device__ __forceinline__ void atomic_add(double* p, double v) { atomicAdd(p, v); }
__device__ __forceinline__ void atomic_add(int* p, int v) { atomicAdd(p, v); }
__device__ __forceinline__ void atomic_add(long long* p, long long v) {
    atomicAdd((unsigned long long*)p, (unsigned long long)v);  // two's complement wraps alike
}
__device__ __forceinline__ void atomic_add(__half* p, float v) {
#if __CUDA_ARCH__ >= 700
    atomicAdd(p, __float2half_rn(v));
#else
    atomic_add_subword(p, v);
#endif
}
__device__ __forceinline__ void atomic_add(__nv_bfloat16* p, float v) {
#if __CUDA_ARCH__ >= 800
    atomicAdd(p, __float2bfloat16_rn(v));
#else
    atomic_add_subword(p, v);
#endif
}
__device__ __forceinline__ void atomic_add(short* p, short v) { atomic_add_subword(p, (int)v); }
__device__ __forceinline__ void atomic_add(signed char* p, signed char v) {
    atomic_add_subword(p, (int)v);
}
__device__ __forceinline__ void atomic_add(unsigned char* p, unsigned char v) {
    atomic_add_subword(p, (int)v);
}
__device__ __forceinline__ void atomic_add(bool* p, bool v) {
    if (v) *(volatile bool*)p = true;  // bool "add" is logical or; racing writers agree
}

// Atomic read-modify-write `*addr = f(*addr)` for any 1-, 2-, 4- or 8-byte type: a CAS loop on
// the aligned word holding the element (f must be pure: it may run several times).
template <typename T, typename F> __device__ __forceinline__ void atomic_update(T* addr, F f) {
    if constexpr (sizeof(T) == 8) {
        unsigned long long* a = (unsigned long long*)addr;
        unsigned long long old = *a, assumed;
        do {
            assumed = old;
            T cur, next;
            memcpy(&cur, &assumed, 8);
            next = f(cur);
            unsigned long long bits;
            memcpy(&bits, &next, 8);
            old = atomicCAS(a, assumed, bits);
        } while (assumed != old);
    } else {
        unsigned int* base = (unsigned int*)((size_t)addr & ~(size_t)3);
        const unsigned int shift = ((size_t)addr & 3) * 8;
        const unsigned int mask =
            sizeof(T) == 4 ? 0xffffffffu : ((sizeof(T) == 1 ? 0xffu : 0xffffu) << shift);
        unsigned int old = *base, assumed;
        do {
            assumed = old;
            unsigned int word = (assumed & mask) >> shift;
            T cur;
            memcpy(&cur, &word, sizeof(T));
            T next = f(cur);
            unsigned int bits = 0;
            memcpy(&bits, &next, sizeof(T));
            old = atomicCAS(base, assumed, (assumed & ~mask) | (bits << shift));
        } while (assumed != old);
    }
}

// ---------------------------------------------------------------------------------------------
// Warp / block reductions (blockDim.x must be a multiple of 32, at most 1024).
// ---------------------------------------------------------------------------------------------
#define FT_FULL_MASK 0xffffffffu

struct SumOp {
    template <typename A> __device__ __forceinline__ A operator()(A a, A b) const { return a + b; }
};
struct MaxOp {  // NaN-propagating
    template <typename A> __device__ __forceinline__ A operator()(A a, A b) const {
        return (ft_isnan(a) || a > b) ? a : b;
    }
};

template <typename A, typename Op> __device__ __forceinline__ A warp_reduce(A v, Op op) {
    for (int o = 16; o > 0; o >>= 1) v = op(v, __shfl_down_sync(FT_FULL_MASK, v, o));
    return v;
}

// Reduce `v` over the block; every thread gets the result. Must be called by all threads.
template <typename A, typename Op> __device__ A block_reduce(A v, Op op, A identity) {
    __shared__ A smem[32];
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const int nwarps = (blockDim.x + 31) >> 5;
    v = warp_reduce(v, op);
    __syncthreads();  // smem may still be read by a previous call
    if (lane == 0) smem[warp] = v;
    __syncthreads();
    v = (threadIdx.x < nwarps) ? smem[threadIdx.x] : identity;
    if (warp == 0) v = warp_reduce(v, op);
    if (threadIdx.x == 0) smem[0] = v;
    __syncthreads();
    return smem[0];
}

// Welford mean/variance accumulator (merged across threads with Chan et al.'s formula).
template <typename A> struct Welford {
    A mean, m2, n;
    __device__ __forceinline__ void push(A x) {
        n += A(1);
        A d = x - mean;
        mean += d / n;
        m2 += d * (x - mean);
    }
    __device__ __forceinline__ void merge(A nb, A meanb, A m2b) {
        if (nb == A(0)) return;
        if (n == A(0)) {
            n = nb;
            mean = meanb;
            m2 = m2b;
            return;
        }
        A nt = n + nb, d = meanb - mean;
        mean += d * nb / nt;
        m2 += m2b + d * d * n * nb / nt;
        n = nt;
    }
};

template <typename A> __device__ __forceinline__ void warp_welford(Welford<A>& w) {
    for (int o = 16; o > 0; o >>= 1) {
        A nb = __shfl_down_sync(FT_FULL_MASK, w.n, o);
        A mb = __shfl_down_sync(FT_FULL_MASK, w.mean, o);
        A m2b = __shfl_down_sync(FT_FULL_MASK, w.m2, o);
        w.merge(nb, mb, m2b);
    }
}

// Result valid in thread 0 only.
template <typename A> __device__ void block_welford(Welford<A>& w) {
    __shared__ A sn[32], sm[32], sm2[32];
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const int nwarps = (blockDim.x + 31) >> 5;
    warp_welford(w);
    __syncthreads();
    if (lane == 0) {
        sn[warp] = w.n;
        sm[warp] = w.mean;
        sm2[warp] = w.m2;
    }
    __syncthreads();
    if (threadIdx.x < nwarps) {
        w.n = sn[threadIdx.x];
        w.mean = sm[threadIdx.x];
        w.m2 = sm2[threadIdx.x];
    } else {
        w.n = w.mean = w.m2 = A(0);
    }
    if (warp == 0) warp_welford(w);
}

// As block_welford, but every thread gets the result.
template <typename A> __device__ void block_welford_all(Welford<A>& w) {
    __shared__ A res[3];
    block_welford(w);
    if (threadIdx.x == 0) {
        res[0] = w.n;
        res[1] = w.mean;
        res[2] = w.m2;
    }
    __syncthreads();
    w.n = res[0];
    w.mean = res[1];
    w.m2 = res[2];
    __syncthreads();
}

// ---------------------------------------------------------------------------------------------
// Dtype lists. Each calls M(args..., suffix, C type) once per dtype; kernels are named
// <op>_<suffix>. Suffixes: f32 f64 f16 bf16 i64 i32 i16 i8 u8 bool.
// ---------------------------------------------------------------------------------------------
#define FT_FOR_FLOAT(M, ...)           \
    M(__VA_ARGS__, f32, float)         \
    M(__VA_ARGS__, f64, double)        \
    M(__VA_ARGS__, f16, __half)        \
    M(__VA_ARGS__, bf16, __nv_bfloat16)
#define FT_FOR_INT(M, ...)             \
    M(__VA_ARGS__, i64, long long)     \
    M(__VA_ARGS__, i32, int)           \
    M(__VA_ARGS__, i16, short)         \
    M(__VA_ARGS__, i8, signed char)    \
    M(__VA_ARGS__, u8, unsigned char)
#define FT_FOR_BOOL(M, ...) M(__VA_ARGS__, bool, bool)
// Numeric = float + int (no bool).
#define FT_FOR_NUMERIC(M, ...) FT_FOR_FLOAT(M, __VA_ARGS__) FT_FOR_INT(M, __VA_ARGS__)
#define FT_FOR_INT_BOOL(M, ...) FT_FOR_INT(M, __VA_ARGS__) FT_FOR_BOOL(M, __VA_ARGS__)
#define FT_FOR_ALL(M, ...) FT_FOR_NUMERIC(M, __VA_ARGS__) FT_FOR_BOOL(M, __VA_ARGS__)
