// cast.cu: dtype conversion, strided input -> contiguous output.
//
//   cast_<src>_<dst>(const S* x, StridedLayout xl, D* out, long long n)
// for every (src, dst) pair of the 10 dtypes (src == dst included: a plain strided copy, same
// as copy_<dtype> in fill_copy.cu). Conversions follow C++/PyTorch: float -> int truncates toward zero
// (out-of-range values are unspecified), anything -> bool is (x != 0) (NaN -> true),
// bool -> number gives 0/1; to f16/bf16 rounds to nearest even (f64 -> f16 rounds once).
#include "common.cuh"

template <typename S, typename D>
__device__ __forceinline__ void cast_kernel(const S* __restrict__ x, const StridedLayout& xl,
                                            D* __restrict__ out, long long n) {
    const bool contig = layout_is_contiguous(xl);
    FT_GRID_STRIDE(i, n) { out[i] = from_acc<D>(to_acc(x[layout_offset(i, xl, contig)])); }
}

#define FT_CAST(ssfx, S, dsfx, D)                                                           \
    extern "C" __global__ void cast_##ssfx##_##dsfx(const S* x, StridedLayout xl, D* out,   \
                                                     long long n) {                         \
        cast_kernel<S, D>(x, xl, out, n);                                                   \
    }
// bf16 <-> f16 go through float explicitly (to_acc gives float for both).
#define FT_CAST_FROM(ssfx, S)                                                               \
    FT_CAST(ssfx, S, f32, float) FT_CAST(ssfx, S, f64, double) FT_CAST(ssfx, S, f16, __half) \
    FT_CAST(ssfx, S, bf16, __nv_bfloat16) FT_CAST(ssfx, S, i64, long long)                  \
    FT_CAST(ssfx, S, i32, int) FT_CAST(ssfx, S, i16, short) FT_CAST(ssfx, S, i8, signed char) \
    FT_CAST(ssfx, S, u8, unsigned char) FT_CAST(ssfx, S, bool, bool)

FT_CAST_FROM(f32, float)
FT_CAST_FROM(f64, double)
FT_CAST_FROM(f16, __half)
FT_CAST_FROM(bf16, __nv_bfloat16)
FT_CAST_FROM(i64, long long)
FT_CAST_FROM(i32, int)
FT_CAST_FROM(i16, short)
FT_CAST_FROM(i8, signed char)
FT_CAST_FROM(u8, unsigned char)
FT_CAST_FROM(bool, bool)
