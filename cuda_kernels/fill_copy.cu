// fill_copy.cu: fill with a scalar and strided copies (same dtype).
//
//   fill_<dtype>(T* out, long long n, T value)
//       out[0..n) = value (contiguous).
//   fill_strided_<dtype>(T* out, StridedLayout ol, long long n, T value)
//       every element of the strided view ol of out = value (n = numel of ol).
//   copy_<dtype>(const T* x, StridedLayout xl, T* out, long long n)
//       strided -> contiguous: out[i] = x at linear index i of xl (.contiguous(), .clone()).
//   copy_into_<dtype>(const T* x, StridedLayout xl, T* out, StridedLayout ol, long long n)
//       strided -> strided, same shape (xl.shape == ol.shape; xl may be broadcast with stride 0):
//       in-place copy_ / setitem into a view. The caller must not pass overlapping views of
//       the same buffer.
//   band_<dtype>(const T* x, StridedLayout xl, T* out, long long n, long long rows,
//                long long cols, long long k, int lower)
//       tril (lower != 0: keep col - row <= k) / triu (keep col - row >= k) of the batch of
//       rows x cols matrices read through xl; out contiguous, zeros elsewhere.
//   nan_to_num_<f32|f64>(const T* x, StridedLayout xl, T* out, long long n, double nan,
//                        double posinf, double neginf)
//       NaN, +inf and -inf replaced by the given values (already the dtype's defaults).
// `value` is passed by value in the storage type: f16/bf16 as their 16-bit patterns (u16 on
// the Rust side), bool as one byte (0/1).
#include "common.cuh"

#define FT_FILL_COPY(unused, sfx, T)                                                         \
    extern "C" __global__ void fill_##sfx(T* out, long long n, T value) {                    \
        FT_GRID_STRIDE(i, n) { out[i] = value; }                                             \
    }                                                                                        \
    extern "C" __global__ void fill_strided_##sfx(T* out, StridedLayout ol, long long n,     \
                                                  T value) {                                 \
        const bool c = layout_is_contiguous(ol);                                             \
        FT_GRID_STRIDE(i, n) { out[layout_offset(i, ol, c)] = value; }                       \
    }                                                                                        \
    extern "C" __global__ void copy_##sfx(const T* __restrict__ x, StridedLayout xl,         \
                                          T* __restrict__ out, long long n) {                \
        const bool c = layout_is_contiguous(xl);                                             \
        FT_GRID_STRIDE(i, n) { out[i] = x[layout_offset(i, xl, c)]; }                        \
    }                                                                                        \
    extern "C" __global__ void copy_into_##sfx(const T* __restrict__ x, StridedLayout xl,    \
                                               T* __restrict__ out, StridedLayout ol,        \
                                               long long n) {                                \
        const bool cx = layout_is_contiguous(xl), co = layout_is_contiguous(ol);             \
        FT_GRID_STRIDE(i, n) { out[layout_offset(i, ol, co)] = x[layout_offset(i, xl, cx)]; } \
    }

FT_FOR_ALL(FT_FILL_COPY, _)

#define FT_BAND(unused, sfx, T)                                                               \
    extern "C" __global__ void band_##sfx(const T* __restrict__ x, StridedLayout xl,          \
                                          T* __restrict__ out, long long n, long long rows,   \
                                          long long cols, long long k, int lower) {           \
        const bool c = layout_is_contiguous(xl);                                              \
        FT_GRID_STRIDE(i, n) {                                                                \
            const long long col = i % cols, row = (i / cols) % rows;                          \
            const bool keep = lower ? (col - row <= k) : (col - row >= k);                    \
            out[i] = keep ? x[layout_offset(i, xl, c)] : from_acc<T>(0);                      \
        }                                                                                     \
    }

FT_FOR_ALL(FT_BAND, _)

#define FT_NAN_TO_NUM(unused, sfx, T)                                                         \
    extern "C" __global__ void nan_to_num_##sfx(const T* __restrict__ x, StridedLayout xl,    \
                                                T* __restrict__ out, long long n, double nan, \
                                                double posinf, double neginf) {               \
        const bool c = layout_is_contiguous(xl);                                              \
        FT_GRID_STRIDE(i, n) {                                                                \
            const T v = x[layout_offset(i, xl, c)];                                           \
            out[i] = isnan(v) ? T(nan) : (isinf(v) ? T(v > 0 ? posinf : neginf) : v);         \
        }                                                                                     \
    }

FT_NAN_TO_NUM(_, f32, float)
FT_NAN_TO_NUM(_, f64, double)
