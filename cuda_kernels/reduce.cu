// reduce.cu: reductions and softmax along ONE dim of a contiguous tensor.
//
// The input is contiguous and viewed as (outer, dim, inner): element (o, k, i) is at
// x[(o * dim + k) * inner + i]. Reductions write a contiguous (outer, inner) result;
// softmax-like ops write a contiguous (outer, dim, inner) result.
//
// Launch (any grid works, every kernel is grid-stride):
//   block = 256 threads (a multiple of 32, at most 1024);
//   inner == 1: one block per row:      grid = min(outer, 65535)
//   inner  > 1: one thread per column:  grid = min(ceil(outer * inner / 256), 65535)
// Accumulation: float for f32/f16/bf16, double for f64, long long for integer sum/prod.
//
// Kernels (T = dtype; A = float for f32/f16/bf16, double for f64):
//   sum_<dt>, prod_<dt>      (const T* x, T* out, long long outer, long long dim, long long inner)
//                            numeric dtypes; integer results wrap to T (cast to i64 first for
//                            PyTorch's int64 result)
//   mean_<dt>                same arguments; float dtypes
//   max_<dt>, min_<dt>       (const T* x, T* values, long long* indices, outer, dim, inner)
//                            numeric dtypes; NaN wins; ties -> first index; values or indices
//                            may be null (argmax/argmin pass values = null)
//   var_<dt>                 (const T* x, T* out, T* mean_out, outer, dim, inner,
//                             double correction, int take_sqrt)
//                            float dtypes; Welford; out = M2 / max(N - correction, 0)
//                            (sqrt'ed when take_sqrt: std); mean_out may be null
//   logsumexp_<dt>           (const T* x, T* out, outer, dim, inner); float dtypes
//   softmax_fwd_<dt>, log_softmax_fwd_<dt>   (const T* x, T* y, outer, dim, inner)
//   softmax_bwd_<dt>         (const T* y, const T* gy, T* gx, outer, dim, inner)
//                            gx = y * (gy - sum(gy * y))
//   log_softmax_bwd_<dt>     (const T* y, const T* gy, T* gx, outer, dim, inner)
//                            gx = gy - exp(y) * sum(gy)      (y is the forward output)
//   cumsum_<dt>, cumprod_<dt> (const T* x, T* y, outer, dim, inner)
//                            numeric dtypes; inclusive scan along dim (same launch shapes;
//                            inner == 1: a block scan per row, in chunks of blockDim)
//   cummax_<dt>, cummin_<dt> (const T* x, T* values, long long* indices, outer, dim, inner)
//                            numeric dtypes; one thread per line (grid = ceil(outer * inner
//                            / 256)); NaN sticks; ties take the later index, as on the CPU
#include "common.cuh"

template <typename T> struct SumAccT { typedef typename FloatAccT<T>::type type; };
template <> struct SumAccT<long long> { typedef long long type; };
template <> struct SumAccT<int> { typedef long long type; };
template <> struct SumAccT<short> { typedef long long type; };
template <> struct SumAccT<signed char> { typedef long long type; };
template <> struct SumAccT<unsigned char> { typedef long long type; };

struct ProdOp {
    template <typename A> __device__ __forceinline__ A operator()(A a, A b) const { return a * b; }
};

// Reduce every (o, :, i) with `op` from `identity`, then out[o, i] = finish(acc).
template <typename T, typename A, typename Op, typename Finish>
__device__ __forceinline__ void reduce_dim(const T* __restrict__ x, T* __restrict__ out,
                                           long long outer, long long dim, long long inner,
                                           Op op, A identity, Finish finish) {
    if (inner == 1) {
        for (long long r = blockIdx.x; r < outer; r += gridDim.x) {
            const T* row = x + r * dim;
            A acc = identity;
            for (long long k = threadIdx.x; k < dim; k += blockDim.x)
                acc = op(acc, static_cast<A>(to_acc(row[k])));
            acc = block_reduce(acc, op, identity);
            if (threadIdx.x == 0) out[r] = from_acc<T>(finish(acc));
        }
    } else {
        FT_GRID_STRIDE(j, outer * inner) {
            const long long o = j / inner, i = j - o * inner;
            const T* p = x + o * dim * inner + i;
            A acc = identity;
            for (long long k = 0; k < dim; ++k) acc = op(acc, static_cast<A>(to_acc(p[k * inner])));
            out[j] = from_acc<T>(finish(acc));
        }
    }
}

struct Identity {
    template <typename A> __device__ __forceinline__ A operator()(A a) const { return a; }
};
template <typename A> struct Scale {
    A s;
    __device__ __forceinline__ A operator()(A a) const { return a * s; }
};

#define FT_SUM_PROD(unused, sfx, T)                                                          \
    extern "C" __global__ void sum_##sfx(const T* x, T* out, long long outer, long long dim, \
                                         long long inner) {                                  \
        typedef SumAccT<T>::type A;                                                          \
        reduce_dim<T, A>(x, out, outer, dim, inner, SumOp(), A(0), Identity());              \
    }                                                                                        \
    extern "C" __global__ void prod_##sfx(const T* x, T* out, long long outer, long long dim, \
                                          long long inner) {                                 \
        typedef SumAccT<T>::type A;                                                          \
        reduce_dim<T, A>(x, out, outer, dim, inner, ProdOp(), A(1), Identity());             \
    }
#define FT_MEAN(unused, sfx, T)                                                               \
    extern "C" __global__ void mean_##sfx(const T* x, T* out, long long outer, long long dim, \
                                          long long inner) {                                  \
        typedef FloatAccT<T>::type A;                                                         \
        Scale<A> s{A(1) / A(dim)};                                                            \
        reduce_dim<T, A>(x, out, outer, dim, inner, SumOp(), A(0), s);                        \
    }

// ---- max/min with index ---------------------------------------------------------------------
#define FT_NO_INDEX 0x7fffffffffffffffLL

template <bool IsMax, typename A>
__device__ __forceinline__ void arg_combine(A& v, long long& i, A v2, long long i2) {
    if (i2 == FT_NO_INDEX) return;
    bool take;
    if (i == FT_NO_INDEX) take = true;
    else if (ft_isnan(v2)) take = !ft_isnan(v) || i2 < i;  // first NaN wins
    else if (ft_isnan(v)) take = false;
    else take = IsMax ? (v2 > v || (v2 == v && i2 < i)) : (v2 < v || (v2 == v && i2 < i));
    if (take) {
        v = v2;
        i = i2;
    }
}

template <bool IsMax, typename A>
__device__ __forceinline__ void warp_arg_reduce(A& v, long long& i) {
    for (int o = 16; o > 0; o >>= 1) {
        A v2 = __shfl_down_sync(FT_FULL_MASK, v, o);
        long long i2 = __shfl_down_sync(FT_FULL_MASK, i, o);
        arg_combine<IsMax>(v, i, v2, i2);
    }
}

// Result valid in thread 0 only.
template <bool IsMax, typename A> __device__ void block_arg_reduce(A& v, long long& i) {
    __shared__ A sv[32];
    __shared__ long long si[32];
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const int nwarps = (blockDim.x + 31) >> 5;
    warp_arg_reduce<IsMax>(v, i);
    __syncthreads();
    if (lane == 0) {
        sv[warp] = v;
        si[warp] = i;
    }
    __syncthreads();
    if (threadIdx.x < nwarps) {
        v = sv[threadIdx.x];
        i = si[threadIdx.x];
    } else {
        i = FT_NO_INDEX;
    }
    if (warp == 0) warp_arg_reduce<IsMax>(v, i);
}

template <bool IsMax, typename T>
__device__ __forceinline__ void arg_reduce_dim(const T* __restrict__ x, T* values,
                                               long long* indices, long long outer,
                                               long long dim, long long inner) {
    typedef typename AccT<T>::type A;
    if (inner == 1) {
        for (long long r = blockIdx.x; r < outer; r += gridDim.x) {
            const T* row = x + r * dim;
            A v = A(0);
            long long idx = FT_NO_INDEX;
            for (long long k = threadIdx.x; k < dim; k += blockDim.x)
                arg_combine<IsMax>(v, idx, to_acc(row[k]), k);
            block_arg_reduce<IsMax>(v, idx);
            if (threadIdx.x == 0) {
                if (values) values[r] = from_acc<T>(v);
                if (indices) indices[r] = idx;
            }
        }
    } else {
        FT_GRID_STRIDE(j, outer * inner) {
            const long long o = j / inner, i = j - o * inner;
            const T* p = x + o * dim * inner + i;
            A v = A(0);
            long long idx = FT_NO_INDEX;
            for (long long k = 0; k < dim; ++k) arg_combine<IsMax>(v, idx, to_acc(p[k * inner]), k);
            if (values) values[j] = from_acc<T>(v);
            if (indices) indices[j] = idx;
        }
    }
}

#define FT_MAX_MIN(unused, sfx, T)                                                          \
    extern "C" __global__ void max_##sfx(const T* x, T* values, long long* indices,         \
                                         long long outer, long long dim, long long inner) { \
        arg_reduce_dim<true, T>(x, values, indices, outer, dim, inner);                     \
    }                                                                                       \
    extern "C" __global__ void min_##sfx(const T* x, T* values, long long* indices,         \
                                         long long outer, long long dim, long long inner) { \
        arg_reduce_dim<false, T>(x, values, indices, outer, dim, inner);                    \
    }

// ---- variance (Welford; Welford/block_welford live in common.cuh) ---------------------------
template <typename T, typename A>
__device__ __forceinline__ void var_finish(const Welford<A>& w, double correction, int take_sqrt,
                                           T* out, T* mean_out, long long j) {
    A denom = w.n - A(correction);
    if (denom < A(0)) denom = A(0);
    A v = w.m2 / denom;
    if (take_sqrt) v = sqrt(v);
    out[j] = from_acc<T>(v);
    if (mean_out) mean_out[j] = from_acc<T>(w.n > A(0) ? w.mean : A(FT_NAN));
}

template <typename T>
__device__ __forceinline__ void var_dim(const T* __restrict__ x, T* out, T* mean_out,
                                        long long outer, long long dim, long long inner,
                                        double correction, int take_sqrt) {
    typedef typename FloatAccT<T>::type A;
    if (inner == 1) {
        for (long long r = blockIdx.x; r < outer; r += gridDim.x) {
            const T* row = x + r * dim;
            Welford<A> w{A(0), A(0), A(0)};
            for (long long k = threadIdx.x; k < dim; k += blockDim.x) w.push(load_f(row[k]));
            block_welford(w);
            if (threadIdx.x == 0) var_finish(w, correction, take_sqrt, out, mean_out, r);
        }
    } else {
        FT_GRID_STRIDE(j, outer * inner) {
            const long long o = j / inner, i = j - o * inner;
            const T* p = x + o * dim * inner + i;
            Welford<A> w{A(0), A(0), A(0)};
            for (long long k = 0; k < dim; ++k) w.push(load_f(p[k * inner]));
            var_finish(w, correction, take_sqrt, out, mean_out, j);
        }
    }
}

#define FT_VAR(unused, sfx, T)                                                             \
    extern "C" __global__ void var_##sfx(const T* x, T* out, T* mean_out, long long outer, \
                                         long long dim, long long inner, double correction, \
                                         int take_sqrt) {                                  \
        var_dim<T>(x, out, mean_out, outer, dim, inner, correction, take_sqrt);            \
    }

// ---- logsumexp, softmax, log_softmax ----------------------------------------------------------
// Row statistics: max and sum(exp(x - max)) with a finite shift (PyTorch's masking of inf max).
template <typename T, typename A>
__device__ __forceinline__ void row_max_sumexp_block(const T* row, long long dim, A& shift,
                                                     A& sum) {
    A m = -FT_INF;
    for (long long k = threadIdx.x; k < dim; k += blockDim.x) m = MaxOp()(m, load_f(row[k]));
    m = block_reduce(m, MaxOp(), A(-FT_INF));
    shift = isinf(m) ? A(0) : m;
    A s = A(0);
    for (long long k = threadIdx.x; k < dim; k += blockDim.x) s += exp(load_f(row[k]) - shift);
    sum = block_reduce(s, SumOp(), A(0));
}

template <typename T, typename A>
__device__ __forceinline__ void col_max_sumexp(const T* p, long long dim, long long inner,
                                               A& shift, A& sum) {
    A m = -FT_INF;
    for (long long k = 0; k < dim; ++k) m = MaxOp()(m, load_f(p[k * inner]));
    shift = isinf(m) ? A(0) : m;
    A s = A(0);
    for (long long k = 0; k < dim; ++k) s += exp(load_f(p[k * inner]) - shift);
    sum = s;
}

template <typename T>
__device__ __forceinline__ void logsumexp_dim(const T* __restrict__ x, T* __restrict__ out,
                                              long long outer, long long dim, long long inner) {
    typedef typename FloatAccT<T>::type A;
    A shift, sum;
    if (inner == 1) {
        for (long long r = blockIdx.x; r < outer; r += gridDim.x) {
            row_max_sumexp_block(x + r * dim, dim, shift, sum);
            if (threadIdx.x == 0) out[r] = from_acc<T>(log(sum) + shift);
        }
    } else {
        FT_GRID_STRIDE(j, outer * inner) {
            const long long o = j / inner, i = j - o * inner;
            col_max_sumexp(x + o * dim * inner + i, dim, inner, shift, sum);
            out[j] = from_acc<T>(log(sum) + shift);
        }
    }
}

template <bool Log, typename T>
__device__ __forceinline__ void softmax_fwd_dim(const T* __restrict__ x, T* __restrict__ y,
                                                long long outer, long long dim, long long inner) {
    typedef typename FloatAccT<T>::type A;
    A shift, sum;
    if (inner == 1) {
        for (long long r = blockIdx.x; r < outer; r += gridDim.x) {
            const T* row = x + r * dim;
            row_max_sumexp_block(row, dim, shift, sum);
            const A lse = log(sum), inv = A(1) / sum;
            for (long long k = threadIdx.x; k < dim; k += blockDim.x) {
                const A v = load_f(row[k]) - shift;
                y[r * dim + k] = from_acc<T>(Log ? v - lse : exp(v) * inv);
            }
        }
    } else {
        FT_GRID_STRIDE(j, outer * inner) {
            const long long o = j / inner, i = j - o * inner;
            const T* p = x + o * dim * inner + i;
            T* q = y + o * dim * inner + i;
            col_max_sumexp(p, dim, inner, shift, sum);
            const A lse = log(sum), inv = A(1) / sum;
            for (long long k = 0; k < dim; ++k) {
                const A v = load_f(p[k * inner]) - shift;
                q[k * inner] = from_acc<T>(Log ? v - lse : exp(v) * inv);
            }
        }
    }
}

// softmax:     gx = y * (gy - sum(gy * y))
// log_softmax: gx = gy - exp(y) * sum(gy)
template <bool Log, typename T>
__device__ __forceinline__ void softmax_bwd_dim(const T* __restrict__ y, const T* __restrict__ gy,
                                                T* __restrict__ gx, long long outer,
                                                long long dim, long long inner) {
    typedef typename FloatAccT<T>::type A;
    if (inner == 1) {
        for (long long r = blockIdx.x; r < outer; r += gridDim.x) {
            const long long base = r * dim;
            A s = A(0);
            for (long long k = threadIdx.x; k < dim; k += blockDim.x)
                s += Log ? load_f(gy[base + k]) : load_f(gy[base + k]) * load_f(y[base + k]);
            s = block_reduce(s, SumOp(), A(0));
            for (long long k = threadIdx.x; k < dim; k += blockDim.x) {
                const A yv = load_f(y[base + k]), g = load_f(gy[base + k]);
                gx[base + k] = from_acc<T>(Log ? g - exp(yv) * s : yv * (g - s));
            }
        }
    } else {
        FT_GRID_STRIDE(j, outer * inner) {
            const long long o = j / inner, i = j - o * inner;
            const long long base = o * dim * inner + i;
            A s = A(0);
            for (long long k = 0; k < dim; ++k) {
                const long long e = base + k * inner;
                s += Log ? load_f(gy[e]) : load_f(gy[e]) * load_f(y[e]);
            }
            for (long long k = 0; k < dim; ++k) {
                const long long e = base + k * inner;
                const A yv = load_f(y[e]), g = load_f(gy[e]);
                gx[e] = from_acc<T>(Log ? g - exp(yv) * s : yv * (g - s));
            }
        }
    }
}

#define FT_SOFTMAX(unused, sfx, T)                                                             \
    extern "C" __global__ void logsumexp_##sfx(const T* x, T* out, long long outer,           \
                                               long long dim, long long inner) {              \
        logsumexp_dim<T>(x, out, outer, dim, inner);                                          \
    }                                                                                         \
    extern "C" __global__ void softmax_fwd_##sfx(const T* x, T* y, long long outer,           \
                                                 long long dim, long long inner) {            \
        softmax_fwd_dim<false, T>(x, y, outer, dim, inner);                                   \
    }                                                                                         \
    extern "C" __global__ void log_softmax_fwd_##sfx(const T* x, T* y, long long outer,       \
                                                     long long dim, long long inner) {        \
        softmax_fwd_dim<true, T>(x, y, outer, dim, inner);                                    \
    }                                                                                         \
    extern "C" __global__ void softmax_bwd_##sfx(const T* y, const T* gy, T* gx,              \
                                                 long long outer, long long dim,              \
                                                 long long inner) {                           \
        softmax_bwd_dim<false, T>(y, gy, gx, outer, dim, inner);                              \
    }                                                                                         \
    extern "C" __global__ void log_softmax_bwd_##sfx(const T* y, const T* gy, T* gx,          \
                                                     long long outer, long long dim,          \
                                                     long long inner) {                       \
        softmax_bwd_dim<true, T>(y, gy, gx, outer, dim, inner);                               \
    }

FT_FOR_NUMERIC(FT_SUM_PROD, _)
FT_FOR_FLOAT(FT_MEAN, _)
FT_FOR_NUMERIC(FT_MAX_MIN, _)
FT_FOR_FLOAT(FT_VAR, _)
FT_FOR_FLOAT(FT_SOFTMAX, _)

// ---- scans -------------------------------------------------------------------------------------
// Inclusive scan of every (o, :, i) with the associative `op`.
template <typename T, typename A, typename Op>
__device__ __forceinline__ void scan_dim(const T* __restrict__ x, T* __restrict__ y,
                                         long long outer, long long dim, long long inner, Op op,
                                         A identity) {
    if (inner == 1) {
        __shared__ A warp_tot[32];
        const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
        const int nwarps = (blockDim.x + 31) >> 5;
        for (long long r = blockIdx.x; r < outer; r += gridDim.x) {
            A carry = identity;
            for (long long base = 0; base < dim; base += blockDim.x) {
                const long long k = base + threadIdx.x;
                A v = k < dim ? static_cast<A>(to_acc(x[r * dim + k])) : identity;
                for (int o = 1; o < 32; o <<= 1) {
                    const A u = __shfl_up_sync(FT_FULL_MASK, v, o);
                    if (lane >= o) v = op(u, v);
                }
                if (lane == 31) warp_tot[warp] = v;
                __syncthreads();
                if (warp == 0) {
                    A t = lane < nwarps ? warp_tot[lane] : identity;
                    for (int o = 1; o < 32; o <<= 1) {
                        const A u = __shfl_up_sync(FT_FULL_MASK, t, o);
                        if (lane >= o) t = op(u, t);
                    }
                    if (lane < nwarps) warp_tot[lane] = t;  // inclusive prefix of warp totals
                }
                __syncthreads();
                const A before = warp > 0 ? op(carry, warp_tot[warp - 1]) : carry;
                if (k < dim) y[r * dim + k] = from_acc<T>(op(before, v));
                carry = op(carry, warp_tot[nwarps - 1]);
                __syncthreads();  // warp_tot is rewritten by the next chunk
            }
        }
    } else {
        FT_GRID_STRIDE(j, outer * inner) {
            const long long o = j / inner, i = j - o * inner;
            const long long base = o * dim * inner + i;
            A acc = identity;
            for (long long k = 0; k < dim; ++k) {
                acc = op(acc, static_cast<A>(to_acc(x[base + k * inner])));
                y[base + k * inner] = from_acc<T>(acc);
            }
        }
    }
}

template <bool IsMax, typename T>
__device__ __forceinline__ void cum_extremum_dim(const T* __restrict__ x, T* __restrict__ values,
                                                 long long* __restrict__ indices, long long outer,
                                                 long long dim, long long inner) {
    typedef typename AccT<T>::type A;
    FT_GRID_STRIDE(j, outer * inner) {
        const long long o = j / inner, i = j - o * inner;
        const long long base = o * dim * inner + i;
        A best = A(0);
        long long at = 0;
        for (long long k = 0; k < dim; ++k) {
            const A v = to_acc(x[base + k * inner]);
            const bool take = k == 0 || ft_isnan(v) || (!ft_isnan(best) && (IsMax ? v >= best : v <= best));
            if (take) {
                best = v;
                at = k;
            }
            values[base + k * inner] = from_acc<T>(best);
            indices[base + k * inner] = at;
        }
    }
}

#define FT_SCAN(unused, sfx, T)                                                                \
    extern "C" __global__ void cumsum_##sfx(const T* x, T* y, long long outer, long long dim, \
                                            long long inner) {                                \
        typedef SumAccT<T>::type A;                                                           \
        scan_dim<T, A>(x, y, outer, dim, inner, SumOp(), A(0));                               \
    }                                                                                         \
    extern "C" __global__ void cumprod_##sfx(const T* x, T* y, long long outer,               \
                                             long long dim, long long inner) {                \
        typedef SumAccT<T>::type A;                                                           \
        scan_dim<T, A>(x, y, outer, dim, inner, ProdOp(), A(1));                              \
    }                                                                                         \
    extern "C" __global__ void cummax_##sfx(const T* x, T* values, long long* indices,        \
                                            long long outer, long long dim, long long inner) {\
        cum_extremum_dim<true, T>(x, values, indices, outer, dim, inner);                     \
    }                                                                                         \
    extern "C" __global__ void cummin_##sfx(const T* x, T* values, long long* indices,        \
                                            long long outer, long long dim, long long inner) {\
        cum_extremum_dim<false, T>(x, values, indices, outer, dim, inner);                    \
    }

FT_FOR_NUMERIC(FT_SCAN, _)
