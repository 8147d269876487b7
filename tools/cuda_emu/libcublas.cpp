// libcublas.cpp: the cuBLAS calls ferrotorch makes (GemmEx and its strided-batched form),
// run on the CPU in column-major order as cuBLAS defines them, with a float accumulator for
// f32/f16/bf16 and double for f64. TF32 compute is emulated by rounding the operands to
// TF32 (10-bit mantissa), so tests of the allow_tf32 switch see its effect. Also the
// triangular solve trsm (f32/f64), computed in double.
#include <cstdint>
#include <algorithm>
#include <cstring>
#include <vector>

#include "include/cuda_bf16.h"
#include "include/cuda_fp16.h"

typedef int cublasStatus_t;
enum : int { CUBLAS_STATUS_SUCCESS = 0, CUBLAS_STATUS_INVALID_VALUE = 7, CUBLAS_STATUS_NOT_SUPPORTED = 15 };
enum : int { CUDA_R_32F = 0, CUDA_R_64F = 1, CUDA_R_16F = 2, CUDA_R_16BF = 14 };
enum : int { COMPUTE_32F = 68, COMPUTE_32F_FAST_TF32 = 77, COMPUTE_64F = 70 };

#define FT_API extern "C" __attribute__((visibility("default")))

namespace {

double load(const void* p, int type, long long i) {
    switch (type) {
        case CUDA_R_32F: return ((const float*)p)[i];
        case CUDA_R_64F: return ((const double*)p)[i];
        case CUDA_R_16F: return (float)((const __half*)p)[i];
        default: return (float)((const __nv_bfloat16*)p)[i];
    }
}
void store(void* p, int type, long long i, double v) {
    switch (type) {
        case CUDA_R_32F: ((float*)p)[i] = (float)v; break;
        case CUDA_R_64F: ((double*)p)[i] = v; break;
        case CUDA_R_16F: ((__half*)p)[i] = __half((float)v); break;
        default: ((__nv_bfloat16*)p)[i] = __nv_bfloat16((float)v); break;
    }
}
float tf32(float x) {
    uint32_t u;
    std::memcpy(&u, &x, 4);
    if ((u & 0x7f800000u) != 0x7f800000u) u = (u + 0xfffu + ((u >> 13) & 1u)) & ~0x1fffu;
    std::memcpy(&x, &u, 4);
    return x;
}
bool known(int t) { return t == CUDA_R_32F || t == CUDA_R_64F || t == CUDA_R_16F || t == CUDA_R_16BF; }

// C = alpha * op(A) @ op(B) + beta * C, column-major; beta == 0 ignores C (it may be NaN).
cublasStatus_t gemm(int ta, int tb, int m, int n, int k, const void* alpha, const void* A, int at,
                    int lda, long long sa, const void* B, int bt, int ldb, long long sb,
                    const void* beta, void* C, int ct, int ldc, long long sc, int batch, int compute) {
    if (!known(at) || !known(bt) || !known(ct) || m < 0 || n < 0 || k < 0 || batch < 0)
        return CUBLAS_STATUS_INVALID_VALUE;
    const bool dbl = compute == COMPUTE_64F;
    const double al = dbl ? *(const double*)alpha : *(const float*)alpha;
    const double be = dbl ? *(const double*)beta : *(const float*)beta;
    const bool round_tf32 = compute == COMPUTE_32F_FAST_TF32;
    // op(A) as m rows of k and op(B) as n columns of k, contiguous, so the dot products stream.
    std::vector<double> pa((size_t)m * k), pb((size_t)n * k);
    for (int b = 0; b < batch; ++b) {
        for (int i = 0; i < m; ++i)
            for (int p = 0; p < k; ++p) {
                const long long ia = ta ? (long long)i * lda + p : (long long)p * lda + i;
                double x = load(A, at, b * sa + ia);
                pa[(size_t)i * k + p] = round_tf32 ? tf32((float)x) : x;
            }
        for (int j = 0; j < n; ++j)
            for (int p = 0; p < k; ++p) {
                const long long ib = tb ? (long long)p * ldb + j : (long long)j * ldb + p;
                double y = load(B, bt, b * sb + ib);
                pb[(size_t)j * k + p] = round_tf32 ? tf32((float)y) : y;
            }
        for (int j = 0; j < n; ++j) {
            const double* col = &pb[(size_t)j * k];
            for (int i = 0; i < m; ++i) {
                const double* row = &pa[(size_t)i * k];
                double r;
                if (dbl) {
                    double acc = 0;
                    for (int p = 0; p < k; ++p) acc += row[p] * col[p];
                    r = al * acc;
                } else {
                    float acc = 0;
                    for (int p = 0; p < k; ++p) acc += (float)row[p] * (float)col[p];
                    r = al * (double)acc;
                }
                const long long ic = b * sc + (long long)j * ldc + i;
                if (be != 0) r += be * load(C, ct, ic);
                store(C, ct, ic, dbl ? r : (double)(float)r);
            }
        }
    }
    return CUBLAS_STATUS_SUCCESS;
}

// trsm: op(A) X = alpha B (side LEFT) or X op(A) = alpha B (RIGHT); B (m x n) becomes X.
// Both reduce to solving M x = b with a dense triangular k x k M: for LEFT, M = op(A) and the
// columns of B are the right-hand sides; for RIGHT, M = op(A)^T and the rows of B are.
template <class T>
cublasStatus_t trsm(int side, int uplo, int trans, int diag, int m, int n, const T* alpha,
                    const T* A, int lda, T* B, int ldb) {
    const int k = side == 0 ? m : n;
    if (side < 0 || side > 1 || uplo < 0 || uplo > 1 || trans < 0 || trans > 2 || diag < 0 ||
        diag > 1 || m < 0 || n < 0 || lda < std::max(1, k) || ldb < std::max(1, m) || !alpha)
        return CUBLAS_STATUS_INVALID_VALUE;
    if (m == 0 || n == 0) return CUBLAS_STATUS_SUCCESS;
    const double al = *alpha;
    if (al == 0) {  // BLAS: B = 0 without reading A or B
        for (int j = 0; j < n; ++j)
            for (int i = 0; i < m; ++i) B[(size_t)j * ldb + i] = 0;
        return CUBLAS_STATUS_SUCCESS;
    }
    // M(i, j) = op(A)(i, j) for LEFT, op(A)(j, i) for RIGHT; only the stored triangle is read.
    const bool transpose = (trans != 0) != (side == 1);
    const bool lower = (uplo == 0) != transpose;  // which triangle of M is populated
    std::vector<double> M((size_t)k * k, 0.0);
    for (int j = 0; j < k; ++j)
        for (int i = 0; i < k; ++i) {
            if (lower ? i < j : i > j) continue;
            const int r = transpose ? j : i, c = transpose ? i : j;
            M[(size_t)j * k + i] = (i == j && diag == 1) ? 1.0 : (double)A[(size_t)c * lda + r];
        }
    std::vector<double> x(k);
    const int systems = side == 0 ? n : m;
    for (int s = 0; s < systems; ++s) {
        // LEFT: column s of B (stride 1); RIGHT: row s of B (stride ldb).
        T* b = side == 0 ? B + (size_t)s * ldb : B + s;
        const size_t step = side == 0 ? 1 : (size_t)ldb;
        for (int i = 0; i < k; ++i) x[i] = al * (double)b[i * step];
        if (lower) {
            for (int i = 0; i < k; ++i) {
                for (int p = 0; p < i; ++p) x[i] -= M[(size_t)p * k + i] * x[p];
                x[i] /= M[(size_t)i * k + i];
            }
        } else {
            for (int i = k - 1; i >= 0; --i) {
                for (int p = i + 1; p < k; ++p) x[i] -= M[(size_t)p * k + i] * x[p];
                x[i] /= M[(size_t)i * k + i];
            }
        }
        for (int i = 0; i < k; ++i) b[i * step] = (T)x[i];
    }
    return CUBLAS_STATUS_SUCCESS;
}

int g_handle_token;

}  // namespace

FT_API cublasStatus_t cublasCreate_v2(void** h) {
    *h = &g_handle_token;
    return CUBLAS_STATUS_SUCCESS;
}
FT_API cublasStatus_t cublasDestroy_v2(void*) { return CUBLAS_STATUS_SUCCESS; }
FT_API cublasStatus_t cublasSetStream_v2(void*, void*) { return CUBLAS_STATUS_SUCCESS; }
FT_API cublasStatus_t cublasSetMathMode(void*, int) { return CUBLAS_STATUS_SUCCESS; }
FT_API cublasStatus_t cublasSetWorkspace_v2(void*, void*, size_t) { return CUBLAS_STATUS_SUCCESS; }
FT_API cublasStatus_t cublasGemmEx(void*, int ta, int tb, int m, int n, int k, const void* alpha,
                                   const void* A, int at, int lda, const void* B, int bt, int ldb,
                                   const void* beta, void* C, int ct, int ldc, int compute, int) {
    return gemm(ta, tb, m, n, k, alpha, A, at, lda, 0, B, bt, ldb, 0, beta, C, ct, ldc, 0, 1,
                compute);
}
FT_API cublasStatus_t cublasGemmStridedBatchedEx(void*, int ta, int tb, int m, int n, int k,
                                                 const void* alpha, const void* A, int at, int lda,
                                                 long long sa, const void* B, int bt, int ldb,
                                                 long long sb, const void* beta, void* C, int ct,
                                                 int ldc, long long sc, int batch, int compute,
                                                 int) {
    return gemm(ta, tb, m, n, k, alpha, A, at, lda, sa, B, bt, ldb, sb, beta, C, ct, ldc, sc,
                batch, compute);
}
FT_API cublasStatus_t cublasStrsm_v2(void*, int side, int uplo, int trans, int diag, int m, int n,
                                     const float* alpha, const float* A, int lda, float* B,
                                     int ldb) {
    return trsm<float>(side, uplo, trans, diag, m, n, alpha, A, lda, B, ldb);
}
FT_API cublasStatus_t cublasDtrsm_v2(void*, int side, int uplo, int trans, int diag, int m, int n,
                                     const double* alpha, const double* A, int lda, double* B,
                                     int ldb) {
    return trsm<double>(side, uplo, trans, diag, m, n, alpha, A, lda, B, ldb);
}
FT_API const char* cublasGetStatusString(cublasStatus_t s) {
    return s == 0 ? "CUBLAS_STATUS_SUCCESS" : "CUBLAS_STATUS_INVALID_VALUE (emulator)";
}
FT_API const char* cublasGetStatusName(cublasStatus_t s) { return cublasGetStatusString(s); }
