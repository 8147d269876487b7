// ft_emu.h: what the CUDA C in cuda_kernels/ needs from the device, for the CPU emulator.
//
// The emulator compiles every kernel as ordinary C++ and runs a launch block by block; the
// threads of a block are fibers on one OS thread (fibers.cpp), switched only at
// __syncthreads / warp intrinsics, so barrier and shuffle semantics hold exactly. Atomics need
// no locking: a launch runs under one lock and fibers never preempt one another.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <math.h>
#include <type_traits>

#include "cuda_bf16.h"
#include "cuda_fp16.h"

// ------------------------------------------------------------------ qualifiers and keywords
#define __device__ inline
#define __host__
#ifndef FT_EMU_SCAN  // the kernel-name scan keeps the marker
#define __global__
#endif
#define __forceinline__ __attribute__((always_inline))
#define __noinline__ __attribute__((noinline))
#define __shared__ static
#define __restrict__ __restrict
#define __align__(n) alignas(n)
#define __launch_bounds__(...)
#define __CUDA_ARCH__ 900

struct dim3 {
    unsigned x = 1, y = 1, z = 1;
};

namespace ft_emu {

// The running thread (fiber) of the current block.
struct ThreadCtx {
    dim3 tid;
    unsigned linear;  // x + y * bx + z * bx * by
};
extern ThreadCtx* current;
extern dim3 block_idx, block_dim, grid_dim;
extern unsigned char* dyn_smem;

void sync_block();  // __syncthreads
void sync_warp();   // all live lanes of the calling thread's warp
// Shuffle exchange: publish `bytes` of `v`, read the same-size value published by `src_lane`.
void warp_exchange(const void* v, void* out, unsigned size, int src_lane);

inline unsigned lane() { return current->linear & 31u; }

}  // namespace ft_emu

#define threadIdx (ft_emu::current->tid)
#define blockIdx (ft_emu::block_idx)
#define blockDim (ft_emu::block_dim)
#define gridDim (ft_emu::grid_dim)
#define warpSize 32

inline void __syncthreads() { ft_emu::sync_block(); }
inline void __syncwarp(unsigned = 0xffffffffu) { ft_emu::sync_warp(); }
inline void __threadfence() {}
inline void __threadfence_block() {}

template <typename T> inline T ft_emu_shfl(T v, int src) {
    static_assert(sizeof(T) <= 8, "shuffle of a type wider than 8 bytes");
    T out;
    ft_emu::warp_exchange(&v, &out, sizeof(T), src);
    return out;
}
template <typename T> inline T __shfl_down_sync(unsigned, T v, unsigned delta, int width = 32) {
    const int l = (int)ft_emu::lane();
    const int in_seg = l % width;
    return ft_emu_shfl(v, in_seg + (int)delta < width ? l + (int)delta : l);
}
template <typename T> inline T __shfl_up_sync(unsigned, T v, unsigned delta, int width = 32) {
    const int l = (int)ft_emu::lane();
    const int in_seg = l % width;
    return ft_emu_shfl(v, in_seg >= (int)delta ? l - (int)delta : l);
}
template <typename T> inline T __shfl_xor_sync(unsigned, T v, int mask, int width = 32) {
    const int l = (int)ft_emu::lane();
    const int src = l ^ mask;
    return ft_emu_shfl(v, (src / width == l / width) ? src : l);
}
template <typename T> inline T __shfl_sync(unsigned, T v, int src_lane, int width = 32) {
    const int l = (int)ft_emu::lane();
    return ft_emu_shfl(v, (l / width) * width + (src_lane % width));
}
unsigned __ballot_sync(unsigned mask, int pred);
inline int __any_sync(unsigned mask, int pred) { return __ballot_sync(mask, pred) != 0; }
inline int __all_sync(unsigned mask, int pred) { return __ballot_sync(mask, !pred) == 0; }

// ------------------------------------------------------------------ atomics (see file comment)
template <typename T, typename V> inline T atomicAdd(T* p, V v) {
    T old = *p;
    *p = (T)(old + v);
    return old;
}
inline __half atomicAdd(__half* p, __half v) {
    __half old = *p;
    *p = __half((float)old + (float)v);
    return old;
}
inline __nv_bfloat16 atomicAdd(__nv_bfloat16* p, __nv_bfloat16 v) {
    __nv_bfloat16 old = *p;
    *p = __nv_bfloat16((float)old + (float)v);
    return old;
}
template <typename T, typename V> inline T atomicCAS(T* p, V compare, V val) {
    T old = *p;
    if (old == (T)compare) *p = (T)val;
    return old;
}
template <typename T, typename V> inline T atomicExch(T* p, V val) {
    T old = *p;
    *p = (T)val;
    return old;
}
template <typename T, typename V> inline T atomicMax(T* p, V v) {
    T old = *p;
    if ((T)v > old) *p = (T)v;
    return old;
}
template <typename T, typename V> inline T atomicMin(T* p, V v) {
    T old = *p;
    if ((T)v < old) *p = (T)v;
    return old;
}

// ------------------------------------------------------------------ bit and integer intrinsics
inline float __int_as_float(int i) {
    float f;
    std::memcpy(&f, &i, 4);
    return f;
}
inline int __float_as_int(float f) {
    int i;
    std::memcpy(&i, &f, 4);
    return i;
}
inline unsigned __float_as_uint(float f) { return (unsigned)__float_as_int(f); }
inline float __uint_as_float(unsigned u) { return __int_as_float((int)u); }
inline double __longlong_as_double(long long i) {
    double d;
    std::memcpy(&d, &i, 8);
    return d;
}
inline long long __double_as_longlong(double d) {
    long long i;
    std::memcpy(&i, &d, 8);
    return i;
}
inline unsigned __umulhi(unsigned a, unsigned b) {
    return (unsigned)(((unsigned long long)a * b) >> 32);
}
inline unsigned long long __umul64hi(unsigned long long a, unsigned long long b) {
    return (unsigned long long)(((unsigned __int128)a * b) >> 64);
}
inline int __popc(unsigned x) { return __builtin_popcount(x); }
inline int __popcll(unsigned long long x) { return __builtin_popcountll(x); }
inline int __clz(int x) { return x == 0 ? 32 : __builtin_clz((unsigned)x); }
inline int __clzll(long long x) { return x == 0 ? 64 : __builtin_clzll((unsigned long long)x); }
inline int __ffs(int x) { return __builtin_ffs(x); }
inline int __ffsll(long long x) { return __builtin_ffsll(x); }
template <typename T> inline T __ldg(const T* p) { return *p; }

// ------------------------------------------------------------------ math (CUDA's global overloads)
template <typename A, typename B> inline std::common_type_t<A, B> min(A a, B b) {
    using C = std::common_type_t<A, B>;
    return (C)b < (C)a ? (C)b : (C)a;
}
template <typename A, typename B> inline std::common_type_t<A, B> max(A a, B b) {
    using C = std::common_type_t<A, B>;
    return (C)a < (C)b ? (C)b : (C)a;
}
inline float rsqrtf(float x) { return 1.0f / std::sqrt(x); }
inline double rsqrt(double x) { return 1.0 / std::sqrt(x); }
inline float rsqrt(float x) { return rsqrtf(x); }
inline float __expf(float x) { return std::exp(x); }
inline float __logf(float x) { return std::log(x); }
inline float __fdividef(float a, float b) { return a / b; }
inline float exp10f(float x) { return std::pow(10.0f, x); }
inline void sincospi(double x, double* s, double* c) {
    *s = std::sin(M_PI * x);
    *c = std::cos(M_PI * x);
}
inline void sincospif(float x, float* s, float* c) {
    double sd, cd;
    sincospi((double)x, &sd, &cd);
    *s = (float)sd;
    *c = (float)cd;
}
inline void sincosf_(float x, float* s, float* c) {
    *s = std::sin(x);
    *c = std::cos(x);
}
inline double sinpi(double x) { return std::sin(M_PI * x); }
inline double cospi(double x) { return std::cos(M_PI * x); }
inline float sinpif(float x) { return (float)sinpi(x); }
inline float cospif(float x) { return (float)cospi(x); }
inline double normcdf(double x) { return 0.5 * std::erfc(-x * M_SQRT1_2); }
inline float normcdff(float x) { return (float)normcdf(x); }

// erfinv: Giles' single-precision approximation as a start, then two Newton steps on erf in
// double (accurate to about 1 ulp of double, as CUDA's erfinv is).
inline double erfinv(double y) {
    if (!(y > -1.0 && y < 1.0)) {
        if (y == 1.0) return HUGE_VAL;
        if (y == -1.0) return -HUGE_VAL;
        return NAN;
    }
    double w = -std::log((1.0 - y) * (1.0 + y)), x;
    if (w < 5.0) {
        w -= 2.5;
        x = 2.81022636e-08;
        x = 3.43273939e-07 + x * w;
        x = -3.5233877e-06 + x * w;
        x = -4.39150654e-06 + x * w;
        x = 0.00021858087 + x * w;
        x = -0.00125372503 + x * w;
        x = -0.00417768164 + x * w;
        x = 0.246640727 + x * w;
        x = 1.50140941 + x * w;
    } else {
        w = std::sqrt(w) - 3.0;
        x = -0.000200214257;
        x = 0.000100950558 + x * w;
        x = 0.00134934322 + x * w;
        x = -0.00367342844 + x * w;
        x = 0.00573950773 + x * w;
        x = -0.0076224613 + x * w;
        x = 0.00943887047 + x * w;
        x = 1.00167406 + x * w;
        x = 2.83297682 + x * w;
    }
    x *= y;
    for (int k = 0; k < 2; ++k) {
        const double err = std::erf(x) - y;
        x -= err / (M_2_SQRTPI * std::exp(-x * x));
    }
    return x;
}
inline float erfinvf(float y) { return (float)erfinv((double)y); }
inline float erfinv(float y) { return erfinvf(y); }
