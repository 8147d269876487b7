// sort.cu: stable sort of every row of a contiguous (rows, n) tensor, with the indices.
//
// A bitonic network over (value, index) pairs: the index breaks ties, so the order is total
// and the result is the stable sort PyTorch documents (equal values keep their order). NaN
// sorts as the largest value (last ascending, first descending). Rows are padded to P, the
// next power of two >= n; padding (index >= n) always sorts last and is never written out.
// The Rust side moves the sorted dim last (a contiguous copy) and takes `topk`/`kthvalue`
// as slices of the sorted rows.
//
// Kernels (T = dtype; every numeric dtype and bool):
//   sort_rows_<dt>(const T* x, T* values, long long* indices, long long rows, long long n,
//                  int P, int descending)
//       one block per row (grid-stride over rows), the whole row in dynamic shared memory:
//       P * (sizeof(T) + 4) bytes, P <= 4096; block = min(P / 2, 1024) threads.
//   sort_init_<dt>(const T* x, T* keys, long long* idx, long long rows, long long n,
//                  long long P)                                       grid-stride, rows * P
//   sort_step_<dt>(T* keys, long long* idx, long long rows, long long n, long long P,
//                  long long j, long long k, int descending)          grid-stride, rows * P / 2
//       one compare-exchange stage of the network on global scratch rows of length P;
//       the host runs k = 2, 4, ..., P and j = k/2, ..., 1.
//   sort_block_<dt>(T* keys, long long* idx, long long rows, long long n, long long P,
//                   long long k_lo, long long k_hi, long long j_hi, int descending)
//       the stages k = k_lo .. k_hi (powers of two), j = min(k / 2, j_hi) .. 1, within chunks
//       of FT_SORT_CHUNK consecutive elements of a row held in dynamic shared memory
//       (FT_SORT_CHUNK * (sizeof(T) + 8) bytes, block = FT_SORT_CHUNK / 2 threads, one
//       block per chunk, grid-stride). Needs j_hi < FT_SORT_CHUNK <= P. The host runs
//       k = 2 .. CHUNK in one launch, then for each larger k the global steps j >= CHUNK
//       and one launch for the rest.
//   sort_finish_<dt>(const T* keys, const long long* idx, T* values, long long* indices,
//                    long long rows, long long n, long long P)        grid-stride, rows * n
#include "common.cuh"

// Does (a, ia) go before (b, ib)? Padding (index >= n) goes last.
template <typename A>
__device__ __forceinline__ bool goes_before(A a, long long ia, A b, long long ib, long long n,
                                            bool descending) {
    const bool pa = ia >= n, pb = ib >= n;
    if (pa || pb) return !pa || (pb && ia < ib);
    const bool na = ft_isnan(a), nb = ft_isnan(b);
    if (na || nb) {
        if (na && nb) return ia < ib;
        return descending ? na : nb;  // NaN is the largest value
    }
    if (a == b) return ia < ib;
    return descending ? a > b : a < b;
}

// Compare-exchange of positions i < l in stage (k, j): ascending runs where (i & k) == 0.
template <typename T, typename I>
__device__ __forceinline__ void compare_exchange(T* keys, I* idx, long long i,
                                                 long long l, long long k, long long n,
                                                 bool descending) {
    typedef typename AccT<T>::type A;
    const A a = to_acc(keys[i]), b = to_acc(keys[l]);
    const bool up = (i & k) == 0;
    const bool swap = up ? goes_before(b, idx[l], a, idx[i], n, descending)
                         : goes_before(a, idx[i], b, idx[l], n, descending);
    if (swap) {
        const T t = keys[i];
        keys[i] = keys[l];
        keys[l] = t;
        const I u = idx[i];
        idx[i] = idx[l];
        idx[l] = u;
    }
}

template <typename T>
__device__ void sort_rows_smem(const T* __restrict__ x, T* __restrict__ values,
                               long long* __restrict__ indices, long long rows, long long n,
                               int P, bool descending) {
    extern __shared__ __align__(16) unsigned char smem_raw[];
    int* idx = reinterpret_cast<int*>(smem_raw);  // P indices, then P keys (aligned: P >= 2)
    T* keys = reinterpret_cast<T*>(idx + P);
    for (long long r = blockIdx.x; r < rows; r += gridDim.x) {
        const T* row = x + r * n;
        for (int c = threadIdx.x; c < P; c += blockDim.x) {
            keys[c] = c < n ? row[c] : row[0];
            idx[c] = c;
        }
        __syncthreads();
        for (int k = 2; k <= P; k <<= 1) {
            for (int j = k >> 1; j > 0; j >>= 1) {
                for (int p = threadIdx.x; p < P / 2; p += blockDim.x) {
                    // The p-th pair of this stage: i has bit j clear, l = i + j.
                    const int i = 2 * p - (p & (j - 1));
                    compare_exchange(keys, idx, i, i + j, k, n, descending);
                }
                __syncthreads();
            }
        }
        for (int c = threadIdx.x; c < n; c += blockDim.x) {
            values[r * n + c] = keys[c];
            indices[r * n + c] = idx[c];
        }
        __syncthreads();
    }
}

#define FT_SORT_CHUNK 2048

template <typename T>
__device__ void sort_block_smem(T* __restrict__ keys, long long* __restrict__ idx,
                                long long rows, long long n, long long P, long long k_lo,
                                long long k_hi, long long j_hi, bool descending) {
    extern __shared__ __align__(16) unsigned char smem_raw[];
    long long* si = reinterpret_cast<long long*>(smem_raw);  // CHUNK indices, then keys
    T* sk = reinterpret_cast<T*>(si + FT_SORT_CHUNK);
    const long long per_row = P / FT_SORT_CHUNK;
    for (long long b = blockIdx.x; b < rows * per_row; b += gridDim.x) {
        const long long r = b / per_row;
        const long long base = (b - r * per_row) * FT_SORT_CHUNK;  // position in the row
        T* kr = keys + r * P + base;
        long long* ir = idx + r * P + base;
        for (int c = threadIdx.x; c < FT_SORT_CHUNK; c += blockDim.x) {
            sk[c] = kr[c];
            si[c] = ir[c];
        }
        __syncthreads();
        for (long long k = k_lo; k <= k_hi; k <<= 1) {
            for (long long j = (k >> 1) < j_hi ? (k >> 1) : j_hi; j > 0; j >>= 1) {
                for (int p = threadIdx.x; p < FT_SORT_CHUNK / 2; p += blockDim.x) {
                    const int i = 2 * p - (p & (int)(j - 1));
                    // The direction bit comes from the position in the row: i + base.
                    typedef typename AccT<T>::type A;
                    const A a = to_acc(sk[i]), c = to_acc(sk[i + j]);
                    const bool up = ((base + i) & k) == 0;
                    const bool swap = up ? goes_before(c, si[i + j], a, si[i], n, descending)
                                         : goes_before(a, si[i], c, si[i + j], n, descending);
                    if (swap) {
                        const T t = sk[i];
                        sk[i] = sk[i + j];
                        sk[i + j] = t;
                        const long long u = si[i];
                        si[i] = si[i + j];
                        si[i + j] = u;
                    }
                }
                __syncthreads();
            }
        }
        for (int c = threadIdx.x; c < FT_SORT_CHUNK; c += blockDim.x) {
            kr[c] = sk[c];
            ir[c] = si[c];
        }
        __syncthreads();
    }
}

#define FT_SORT(unused, sfx, T)                                                                \
    extern "C" __global__ void sort_rows_##sfx(const T* x, T* values, long long* indices,     \
                                               long long rows, long long n, int P,            \
                                               int descending) {                              \
        sort_rows_smem<T>(x, values, indices, rows, n, P, descending != 0);                   \
    }                                                                                         \
    extern "C" __global__ void sort_init_##sfx(const T* x, T* keys, long long* idx,           \
                                               long long rows, long long n, long long P) {    \
        FT_GRID_STRIDE(e, rows * P) {                                                         \
            const long long r = e / P, c = e - r * P;                                         \
            keys[e] = c < n ? x[r * n + c] : x[r * n];                                        \
            idx[e] = c;                                                                       \
        }                                                                                     \
    }                                                                                         \
    extern "C" __global__ void sort_step_##sfx(T* keys, long long* idx, long long rows,       \
                                               long long n, long long P, long long j,         \
                                               long long k, int descending) {                 \
        const long long half = P / 2;                                                         \
        FT_GRID_STRIDE(q, rows * half) {                                                      \
            const long long r = q / half, p = q - r * half;                                   \
            const long long i = 2 * p - (p & (j - 1));                                        \
            compare_exchange(keys + r * P, idx + r * P, i, i + j, k, n, descending != 0);     \
        }                                                                                     \
    }                                                                                         \
    extern "C" __global__ void sort_block_##sfx(T* keys, long long* idx, long long rows,      \
                                                long long n, long long P, long long k_lo,     \
                                                long long k_hi, long long j_hi,               \
                                                int descending) {                             \
        sort_block_smem<T>(keys, idx, rows, n, P, k_lo, k_hi, j_hi, descending != 0);         \
    }                                                                                         \
    extern "C" __global__ void sort_finish_##sfx(const T* keys, const long long* idx,         \
                                                 T* values, long long* indices,               \
                                                 long long rows, long long n, long long P) {  \
        FT_GRID_STRIDE(e, rows * n) {                                                         \
            const long long r = e / n, c = e - r * n;                                         \
            values[e] = keys[r * P + c];                                                      \
            indices[e] = idx[r * P + c];                                                      \
        }                                                                                     \
    }

FT_FOR_ALL(FT_SORT, _)

// searchsorted_<dt>(const T* seq, const T* vals, long long* out, long long n, long long m,
//                   long long per_line, int right)
//     out[j] = the first index i of the sorted (ascending, NaN last) row of seq that holds
//     vals[j] (per_line values share one row of m boundaries; per_line == 0: one row for
//     all) with seq[i] >= v (right == 0) or seq[i] > v (right != 0). Both contiguous.
template <typename A> __device__ __forceinline__ bool lt_nan_last(A a, A b) {
    if (ft_isnan(a)) return false;
    if (ft_isnan(b)) return true;
    return a < b;
}

#define FT_SEARCHSORTED(unused, sfx, T)                                                       \
    extern "C" __global__ void searchsorted_##sfx(const T* __restrict__ seq,                  \
                                                  const T* __restrict__ vals,                 \
                                                  long long* __restrict__ out, long long n,   \
                                                  long long m, long long per_line, int right) { \
        FT_GRID_STRIDE(j, n) {                                                                \
            const T* row = seq + (per_line > 0 ? (j / per_line) * m : 0);                     \
            const auto v = to_acc(vals[j]);                                                   \
            long long lo = 0, hi = m;                                                         \
            while (lo < hi) {                                                                 \
                const long long mid = lo + (hi - lo) / 2;                                     \
                const auto e = to_acc(row[mid]);                                              \
                const bool go_right = right ? !lt_nan_last(v, e) : lt_nan_last(e, v);         \
                if (go_right) lo = mid + 1; else hi = mid;                                    \
            }                                                                                 \
            out[j] = lo;                                                                      \
        }                                                                                     \
    }

FT_FOR_NUMERIC(FT_SEARCHSORTED, _)
