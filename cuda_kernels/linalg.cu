// Batched factorisations and solves of many small matrices, one thread per matrix (or per
// right-hand side): what cuSOLVER's per-matrix calls are slow at (a launch or more per
// matrix). The Rust side uses them for n <= 32 and batches of at least 32 matrices
// (src/cuda/linalg_ops.rs); results follow LAPACK's unblocked routines (dgetf2, dgetrs,
// dpotf2), so pivots and infos are the same as cuSOLVER's.
//
// Matrices are column-major n x n and follow each other contiguously; grid-stride loops, so
// any grid covers any batch.
#include "common.cuh"

#define FT_TID ((long long)blockIdx.x * blockDim.x + threadIdx.x)
#define FT_STRIDE ((long long)gridDim.x * blockDim.x)

// LU with partial pivoting: the row of the largest |value| in the column (the first of equal
// ones), LAPACK's 1-based pivots, info = the first zero pivot (1-based) or 0; elimination
// continues past a zero pivot, as dgetf2.
template <typename T>
__device__ void lu_one(T* m, int* piv, int* info, int n) {
    int first_zero = 0;
    for (int j = 0; j < n; ++j) {
        int p = j;
        T best = fabs(m[j + (long long)j * n]);
        for (int i = j + 1; i < n; ++i) {
            const T v = fabs(m[i + (long long)j * n]);
            if (v > best) {
                best = v;
                p = i;
            }
        }
        piv[j] = p + 1;
        const T pivot = m[p + (long long)j * n];
        if (pivot != T(0)) {
            if (p != j) {
                for (int c = 0; c < n; ++c) {
                    const T t = m[j + (long long)c * n];
                    m[j + (long long)c * n] = m[p + (long long)c * n];
                    m[p + (long long)c * n] = t;
                }
            }
            const T r = T(1) / pivot;
            for (int i = j + 1; i < n; ++i) m[i + (long long)j * n] *= r;
        } else if (first_zero == 0) {
            first_zero = j + 1;
        }
        for (int c = j + 1; c < n; ++c) {
            const T f = m[j + (long long)c * n];
            if (f != T(0)) {
                for (int i = j + 1; i < n; ++i) m[i + (long long)c * n] -= m[i + (long long)j * n] * f;
            }
        }
    }
    *info = first_zero;
}

#define FT_LU_BATCHED(sfx, T)                                                               \
    extern "C" __global__ void lu_batched_##sfx(T* a, int* piv, int* info, int n,         \
                                                long long batch) {                         \
        for (long long b = FT_TID; b < batch; b += FT_STRIDE)                              \
            lu_one<T>(a + b * n * n, piv + b * n, info + b, n);                            \
    }

// Solve op(M) X = B with M's LU factors (column-major, from lu_batched), B column-major
// n x k and overwritten by X; one thread per (matrix, column of B). `transpose`: M^T X = B.
template <typename T>
__device__ void lu_solve_one(const T* lu, const int* piv, T* x, int n, int transpose) {
    if (!transpose) {
        for (int i = 0; i < n; ++i) {  // P^T b
            const int p = piv[i] - 1;
            if (p != i) {
                const T t = x[i];
                x[i] = x[p];
                x[p] = t;
            }
        }
        for (int i = 0; i < n; ++i)  // L y = b (unit diagonal)
            for (int j = 0; j < i; ++j) x[i] -= lu[i + (long long)j * n] * x[j];
        for (int i = n - 1; i >= 0; --i) {  // U x = y
            for (int j = i + 1; j < n; ++j) x[i] -= lu[i + (long long)j * n] * x[j];
            x[i] /= lu[i + (long long)i * n];
        }
    } else {
        for (int i = 0; i < n; ++i) {  // U^T y = b
            for (int j = 0; j < i; ++j) x[i] -= lu[j + (long long)i * n] * x[j];
            x[i] /= lu[i + (long long)i * n];
        }
        for (int i = n - 1; i >= 0; --i)  // L^T z = y
            for (int j = i + 1; j < n; ++j) x[i] -= lu[j + (long long)i * n] * x[j];
        for (int i = n - 1; i >= 0; --i) {  // P z, swaps in reverse
            const int p = piv[i] - 1;
            if (p != i) {
                const T t = x[i];
                x[i] = x[p];
                x[p] = t;
            }
        }
    }
}

#define FT_LU_SOLVE_BATCHED(sfx, T)                                                         \
    extern "C" __global__ void lu_solve_batched_##sfx(const T* lu, const int* piv, T* b,   \
                                                      int n, int k, int transpose,         \
                                                      long long batch) {                   \
        for (long long t = FT_TID; t < batch * k; t += FT_STRIDE) {                       \
            const long long m = t / k, c = t % k;                                          \
            lu_solve_one<T>(lu + m * n * n, piv + m * n, b + m * n * k + c * n, n,         \
                            transpose);                                                    \
        }                                                                                  \
    }

// Cholesky of the column-major triangle `upper` (A = U^T U) or lower (A = L L^T), LAPACK's
// dpotf2: info = the order of the first leading minor that is not positive definite (the
// factorisation stops there). The other triangle is not touched.
template <typename T>
__device__ void cholesky_one(T* m, int* info, int n, int upper) {
    // Element (i, j) of the factor's triangle, stored as U (upper) or L = U^T (lower).
    #define FT_CH(i, j) (upper ? m[(i) + (long long)(j) * n] : m[(j) + (long long)(i) * n])
    for (int j = 0; j < n; ++j) {
        T s = FT_CH(j, j);
        for (int k = 0; k < j; ++k) s -= FT_CH(k, j) * FT_CH(k, j);
        if (!(s > T(0))) {  // also NaN
            FT_CH(j, j) = s;
            *info = j + 1;
            return;
        }
        const T d = sqrt(s);
        FT_CH(j, j) = d;
        for (int c = j + 1; c < n; ++c) {
            T v = FT_CH(j, c);
            for (int k = 0; k < j; ++k) v -= FT_CH(k, j) * FT_CH(k, c);
            FT_CH(j, c) = v / d;
        }
    }
    #undef FT_CH
    *info = 0;
}

#define FT_CHOLESKY_BATCHED(sfx, T)                                                         \
    extern "C" __global__ void cholesky_batched_##sfx(T* a, int* info, int n, int upper,   \
                                                      long long batch) {                   \
        for (long long b = FT_TID; b < batch; b += FT_STRIDE)                              \
            cholesky_one<T>(a + b * n * n, info + b, n, upper);                            \
    }

// X A = B for the column-major A (n x n; `lower` triangle read, `unit`: ones on the
// diagonal) and B (m x n, overwritten by X): cuBLAS trsm's right-side, no-transpose case.
// One thread per (matrix, row of B).
template <typename T>
__device__ void trsm_right_one(const T* a, T* b, int m, int n, int lower, int unit) {
    // x A = y row by row: columns in the order that makes each unknown depend on solved ones.
    if (lower) {
        for (int j = n - 1; j >= 0; --j) {
            T v = b[(long long)j * m];
            for (int k = j + 1; k < n; ++k) v -= b[(long long)k * m] * a[k + (long long)j * n];
            b[(long long)j * m] = unit ? v : v / a[j + (long long)j * n];
        }
    } else {
        for (int j = 0; j < n; ++j) {
            T v = b[(long long)j * m];
            for (int k = 0; k < j; ++k) v -= b[(long long)k * m] * a[k + (long long)j * n];
            b[(long long)j * m] = unit ? v : v / a[j + (long long)j * n];
        }
    }
}

#define FT_TRSM_BATCHED(sfx, T)                                                             \
    extern "C" __global__ void trsm_right_batched_##sfx(const T* a, T* b, int m, int n,    \
                                                        int lower, int unit,               \
                                                        long long batch) {                 \
        for (long long t = FT_TID; t < batch * m; t += FT_STRIDE) {                       \
            const long long mat = t / m, row = t % m;                                      \
            trsm_right_one<T>(a + mat * n * n, b + mat * m * n + row, m, n, lower, unit);  \
        }                                                                                  \
    }

// The row-major permutation matrices P (m x m) with A = P L U from LAPACK's 1-based pivots
// (k per matrix, already checked to lie in 1..m): the row swaps applied in order to the
// identity permutation (`perm`: scratch of m ints per matrix), then P[perm[i]][i] = 1.
#define FT_LU_PERMUTATION(sfx, T)                                                           \
    extern "C" __global__ void lu_permutation_##sfx(const int* piv, T* out, int* perm,     \
                                                    int m, int k, long long batch) {       \
        for (long long b = FT_TID; b < batch; b += FT_STRIDE) {                            \
            int* q = perm + b * m;                                                         \
            T* p = out + b * m * m;                                                        \
            for (int i = 0; i < m; ++i) q[i] = i;                                          \
            for (int i = 0; i < k; ++i) {                                                  \
                const int s = piv[b * k + i] - 1;                                          \
                if (s < 0 || s >= m) continue; /* (the caller rejects these) */           \
                const int t = q[i];                                                        \
                q[i] = q[s];                                                               \
                q[s] = t;                                                                  \
            }                                                                              \
            for (long long e = 0; e < (long long)m * m; ++e) p[e] = T(0);                  \
            for (int i = 0; i < m; ++i) p[(long long)q[i] * m + i] = T(1);                 \
        }                                                                                  \
    }

FT_LU_PERMUTATION(f32, float)
FT_LU_PERMUTATION(f64, double)
FT_LU_BATCHED(f32, float)
FT_LU_BATCHED(f64, double)
FT_LU_SOLVE_BATCHED(f32, float)
FT_LU_SOLVE_BATCHED(f64, double)
FT_CHOLESKY_BATCHED(f32, float)
FT_CHOLESKY_BATCHED(f64, double)
FT_TRSM_BATCHED(f32, float)
FT_TRSM_BATCHED(f64, double)
