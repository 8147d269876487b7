// index.cu: gather/scatter, index_select/index_add, masked_fill, where, cat.
//
// Index tensors are int64 (long long). Negative indices are wrapped once (j += size); indices
// still out of range are SKIPPED (gather/index_select write 0): the caller validates indices
// beforehand if it wants PyTorch's error, since a kernel cannot raise.
// `dim` is the dimension the index applies to (0 <= dim < ndim).
//
//   gather_<dt>(const T* x, StridedLayout xl, const long long* idx, StridedLayout il,
//               T* out, int dim, long long n)
//       out (contiguous, shape il.shape, n = numel) [..c..] = x[..idx[..c..] on dim..]
//   scatter_<dt>, scatter_add_<dt>(const T* src, StridedLayout sl, const long long* idx,
//               StridedLayout il, T* out, StridedLayout ol, int dim, long long n)
//       iterate over il.shape (n = numel of index); src is read at the same coordinates through
//       sl, so sl.shape must be il.shape with src's strides (src may be larger than index;
//       a scalar value is il's shape with zero strides); out is written in
//       place through ol. scatter_add uses atomic adds; scatter with duplicate indices leaves
//       one of the written values (unspecified which, as in PyTorch).
//   index_select_<dt>(const T* x, StridedLayout xl, const long long* idx, long long nidx,
//               T* out, int dim, long long n)
//       out contiguous, shape = xl.shape with shape[dim] = nidx.
//   index_add_<dt>(T* out, StridedLayout ol, const long long* idx, long long nidx,
//               const T* src, StridedLayout sl, int dim, double alpha, long long n)
//       out[.. idx[k] on dim ..] += alpha * src[.. k on dim ..] (atomic); iterate over sl.shape
//       (sl.shape[dim] == nidx, n = numel of src); alpha is truncated for integer dtypes.
//   masked_fill_<dt>(const T* x, StridedLayout xl, const bool* mask, StridedLayout ml,
//               T value, T* out, long long n)
//   where_<dt>(const bool* cond, StridedLayout cl, const T* a, StridedLayout al,
//               const T* b, StridedLayout bl, T* out, long long n)
//       all layouts broadcast to the output shape; out contiguous.
//   cat_copy_<dt>(const T* src, StridedLayout sl, T* out, long long src_cols,
//               long long out_cols, long long col_offset, long long n)
//       cat along dim d: view src as (rows, src_cols) with src_cols = prod(src.shape[d:]),
//       out as (rows, out_cols); out[r, col_offset + c] = src[r, c]; col_offset = (sum of the
//       previous inputs' size on d) * prod(shape[d+1:]). One launch per input; n = numel(src).
//   scatter_reduce_{prod,amax,amin}_<dt>(T* dst, const long long* off, const T* vals,
//               long long n)
//       dst[off[i]] = op(dst[off[i]], vals[i]) for i < n (offsets into dst's storage, vals
//       contiguous), atomically, so repeated offsets combine; amax/amin keep NaN, as the CPU.
#include "common.cuh"

__device__ __forceinline__ bool wrap_index(long long& j, long long size) {
    if (j < 0) j += size;
    return j >= 0 && j < size;
}

// Offsets for linear index i over `shape_l.shape`: in a (through a's strides) and in b
// (through b's strides, except dim `dim`, whose coordinate is returned in *cdim).
__device__ __forceinline__ void coords_offsets(long long i, const StridedLayout& shape_l,
                                               const StridedLayout& b, int dim, long long& off_a,
                                               long long& off_b, long long& cdim) {
    off_a = shape_l.offset;
    off_b = b.offset;
    cdim = 0;
    for (int d = shape_l.ndim - 1; d >= 0; --d) {
        const long long s = shape_l.shape[d];
        const long long q = i / s, c = i - q * s;
        i = q;
        off_a += c * shape_l.strides[d];
        if (d == dim) cdim = c;
        else off_b += c * b.strides[d];
    }
}

template <typename T>
__device__ __forceinline__ void gather_kernel(const T* __restrict__ x, const StridedLayout& xl,
                                              const long long* __restrict__ idx,
                                              const StridedLayout& il, T* __restrict__ out,
                                              int dim, long long n) {
    FT_GRID_STRIDE(i, n) {
        long long ioff, xoff, c;
        coords_offsets(i, il, xl, dim, ioff, xoff, c);
        long long j = idx[ioff];
        out[i] = wrap_index(j, xl.shape[dim]) ? x[xoff + j * xl.strides[dim]] : from_acc<T>(0);
    }
}

template <bool Add, typename T>
__device__ __forceinline__ void scatter_kernel(const T* __restrict__ src, const StridedLayout& sl,
                                               const long long* __restrict__ idx,
                                               const StridedLayout& il, T* out,
                                               const StridedLayout& ol, int dim, long long n) {
    FT_GRID_STRIDE(i, n) {
        long long ioff, ooff, c;
        coords_offsets(i, il, ol, dim, ioff, ooff, c);
        long long j = idx[ioff];
        if (!wrap_index(j, ol.shape[dim])) continue;
        const T v = src[strided_offset(i, sl)];
        T* p = out + ooff + j * ol.strides[dim];
        if (Add) atomic_add(p, to_acc(v));
        else *p = v;
    }
}

template <typename T>
__device__ __forceinline__ void index_select_kernel(const T* __restrict__ x,
                                                    const StridedLayout& xl,
                                                    const long long* __restrict__ idx,
                                                    long long nidx, T* __restrict__ out, int dim,
                                                    long long n) {
    FT_GRID_STRIDE(i, n) {
        long long r = i, off = xl.offset;
        bool ok = true;
        for (int d = xl.ndim - 1; d >= 0; --d) {
            const long long s = (d == dim) ? nidx : xl.shape[d];
            const long long q = r / s;
            long long c = r - q * s;
            r = q;
            if (d == dim) {
                c = idx[c];
                ok = wrap_index(c, xl.shape[d]);
            }
            off += c * xl.strides[d];
        }
        out[i] = ok ? x[off] : from_acc<T>(0);
    }
}

template <typename T>
__device__ __forceinline__ void index_add_kernel(T* out, const StridedLayout& ol,
                                                 const long long* __restrict__ idx,
                                                 long long nidx, const T* __restrict__ src,
                                                 const StridedLayout& sl, int dim, double alpha,
                                                 long long n) {
    typedef typename AccT<T>::type A;
    FT_GRID_STRIDE(i, n) {
        long long soff, ooff, c;
        coords_offsets(i, sl, ol, dim, soff, ooff, c);
        long long j = idx[c];
        if (!wrap_index(j, ol.shape[dim])) continue;
        A v = to_acc(src[soff]);
        if (alpha != 1.0) v = static_cast<A>(v * static_cast<A>(alpha));
        atomic_add(out + ooff + j * ol.strides[dim], v);
    }
}

#define FT_INDEX(unused, sfx, T)                                                             \
    extern "C" __global__ void gather_##sfx(const T* x, StridedLayout xl, const long long* idx, \
                                            StridedLayout il, T* out, int dim, long long n) { \
        gather_kernel<T>(x, xl, idx, il, out, dim, n);                                       \
    }                                                                                        \
    extern "C" __global__ void scatter_##sfx(const T* src, StridedLayout sl,                 \
                                             const long long* idx, StridedLayout il, T* out, \
                                             StridedLayout ol, int dim, long long n) {       \
        scatter_kernel<false, T>(src, sl, idx, il, out, ol, dim, n);                         \
    }                                                                                        \
    extern "C" __global__ void scatter_add_##sfx(const T* src, StridedLayout sl,             \
                                                 const long long* idx, StridedLayout il,     \
                                                 T* out, StridedLayout ol, int dim,          \
                                                 long long n) {                              \
        scatter_kernel<true, T>(src, sl, idx, il, out, ol, dim, n);                          \
    }                                                                                        \
    extern "C" __global__ void index_select_##sfx(const T* x, StridedLayout xl,              \
                                                  const long long* idx, long long nidx,      \
                                                  T* out, int dim, long long n) {            \
        index_select_kernel<T>(x, xl, idx, nidx, out, dim, n);                               \
    }                                                                                        \
    extern "C" __global__ void index_add_##sfx(T* out, StridedLayout ol, const long long* idx, \
                                               long long nidx, const T* src,                 \
                                               StridedLayout sl, int dim, double alpha,      \
                                               long long n) {                                \
        index_add_kernel<T>(out, ol, idx, nidx, src, sl, dim, alpha, n);                     \
    }                                                                                        \
    extern "C" __global__ void masked_fill_##sfx(const T* x, StridedLayout xl,               \
                                                 const bool* mask, StridedLayout ml,         \
                                                 T value, T* out, long long n) {             \
        const bool cx = layout_is_contiguous(xl), cm = layout_is_contiguous(ml);             \
        FT_GRID_STRIDE(i, n) {                                                               \
            out[i] = mask[layout_offset(i, ml, cm)] ? value : x[layout_offset(i, xl, cx)];   \
        }                                                                                    \
    }                                                                                        \
    extern "C" __global__ void where_##sfx(const bool* cond, StridedLayout cl, const T* a,   \
                                           StridedLayout al, const T* b, StridedLayout bl,   \
                                           T* out, long long n) {                            \
        const bool cc = layout_is_contiguous(cl), ca = layout_is_contiguous(al),             \
                   cb = layout_is_contiguous(bl);                                            \
        FT_GRID_STRIDE(i, n) {                                                               \
            out[i] = cond[layout_offset(i, cl, cc)] ? a[layout_offset(i, al, ca)]            \
                                                    : b[layout_offset(i, bl, cb)];           \
        }                                                                                    \
    }                                                                                        \
    extern "C" __global__ void cat_copy_##sfx(const T* src, StridedLayout sl, T* out,        \
                                              long long src_cols, long long out_cols,        \
                                              long long col_offset, long long n) {           \
        const bool cs = layout_is_contiguous(sl);                                            \
        FT_GRID_STRIDE(i, n) {                                                               \
            const long long r = i / src_cols, c = i - r * src_cols;                          \
            out[r * out_cols + col_offset + c] = src[layout_offset(i, sl, cs)];              \
        }                                                                                    \
    }

FT_FOR_ALL(FT_INDEX, _)

struct CombineProd {
    template <typename A> __device__ __forceinline__ A operator()(A cur, A x) const {
        return cur * x;
    }
};
struct CombineMax {
    template <typename A> __device__ __forceinline__ A operator()(A cur, A x) const {
        return (!ft_isnan(cur) && (ft_isnan(x) || x > cur)) ? x : cur;
    }
};
struct CombineMin {
    template <typename A> __device__ __forceinline__ A operator()(A cur, A x) const {
        return (!ft_isnan(cur) && (ft_isnan(x) || x < cur)) ? x : cur;
    }
};

template <typename T, typename Op>
__device__ __forceinline__ void scatter_reduce_offsets(T* dst, const long long* off,
                                                       const T* vals, long long n) {
    Op op;
    FT_GRID_STRIDE(i, n) {
        const auto x = to_acc(vals[i]);
        atomic_update(dst + off[i], [&](T cur) { return from_acc<T>(op(to_acc(cur), x)); });
    }
}

#define FT_SCATTER_REDUCE(name, Op, sfx, T)                                                   \
    extern "C" __global__ void scatter_reduce_##name##_##sfx(T* dst, const long long* off,    \
                                                             const T* vals, long long n) {    \
        scatter_reduce_offsets<T, Op>(dst, off, vals, n);                                     \
    }

FT_FOR_NUMERIC(FT_SCATTER_REDUCE, prod, CombineProd)
FT_FOR_NUMERIC(FT_SCATTER_REDUCE, amax, CombineMax)
FT_FOR_NUMERIC(FT_SCATTER_REDUCE, amin, CombineMin)
