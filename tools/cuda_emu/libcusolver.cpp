// libcusolver.cpp: the dense (legacy cusolverDn) routines ferrotorch calls, run on the CPU with
// LAPACK semantics: column-major, 1-based pivots, info = k for a failure at step k. Each routine
// is one template (T = float or double) that computes in double and stores T. Device pointers
// (A, workspaces, devInfo, devIpiv) are plain host memory here, as in the rest of the emulator.
//
// Algorithms: potrf/getrf/getrs/geqrf/orgqr follow LAPACK's unblocked reference routines
// (dpotf2, dgetf2, dgetrs, dgeqr2 + dlarfg/dlarf, dorg2r) step by step, so factors, pivots,
// tau and info match LAPACK's conventions. syevd uses cyclic Jacobi and gesvd one-sided
// Jacobi (simple and accurate; eigen/singular vector signs are unspecified, as on the GPU).
// syevjBatched / gesvdjBatched (n, m <= 32) run the same two Jacobi loops matrix by matrix,
// with the tolerance / max sweeps of their syevjInfo_t / gesvdjInfo_t and cuSOLVER's per-matrix
// info (n+1 resp. min(m,n)+1 = not converged); gesvdj returns V (not V^T) and handles m < n.
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <limits>
#include <mutex>
#include <numeric>
#include <set>
#include <vector>

typedef int cusolverStatus_t;
enum : int {
    CUSOLVER_STATUS_SUCCESS = 0,
    CUSOLVER_STATUS_NOT_INITIALIZED = 1,
    CUSOLVER_STATUS_INVALID_VALUE = 3,
};
enum : int { FILL_LOWER = 0, FILL_UPPER = 1 };
enum : int { OP_N = 0, OP_T = 1, OP_C = 2 };
enum : int { EIG_NOVECTOR = 0, EIG_VECTOR = 1 };

#define FT_API extern "C" __attribute__((visibility("default")))

namespace {

std::mutex g_mu;
std::set<void*> g_handles;  // live handles, so a destroyed or bogus handle is reported

bool live(void* h) {
    std::lock_guard<std::mutex> lock(g_mu);
    return h && g_handles.count(h);
}

const double kNaN = std::numeric_limits<double>::quiet_NaN();

// Workspace sizes (in elements of T). Generous and always positive; the routines scribble NaN
// over the whole workspace, so an allocation smaller than reported faults on the guard page.
int ws_elems(long long n) { return (int)std::max(1LL, std::min(n * 64, (long long)(1 << 30))); }

template <class T>
void scribble(T* w, long long count) {
    if (w) std::fill(w, w + count, (T)kNaN);
}

// Column-major matrix copied to double (rows x cols, leading dimension rows) and back.
template <class T>
std::vector<double> load(const T* A, int lda, int rows, int cols) {
    std::vector<double> a((size_t)rows * cols);
    for (int j = 0; j < cols; ++j)
        for (int i = 0; i < rows; ++i) a[(size_t)j * rows + i] = A[(size_t)j * lda + i];
    return a;
}
template <class T>
void store(T* A, int lda, const std::vector<double>& a, int rows, int cols) {
    for (int j = 0; j < cols; ++j)
        for (int i = 0; i < rows; ++i) A[(size_t)j * lda + i] = (T)a[(size_t)j * rows + i];
}

// ---- potrf (dpotf2) ---------------------------------------------------------------------
// UPPER is the transpose of LOWER (A = U^T U with U = L^T), so one loop over the lower
// triangle serves both: element (i, j), i >= j, of L lives at A[i + j*lda] or A[j + i*lda].
template <class T>
int potrf(void* h, int uplo, int n, T* A, int lda, T* work, int lwork, int* info) {
    if (!live(h)) return CUSOLVER_STATUS_NOT_INITIALIZED;
    if ((uplo != FILL_LOWER && uplo != FILL_UPPER) || n < 0 || lda < std::max(1, n) ||
        lwork < ws_elems(n) || !info)
        return CUSOLVER_STATUS_INVALID_VALUE;
    scribble(work, lwork);
    *info = 0;
    auto at = [&](int i, int j) -> T& {
        return uplo == FILL_LOWER ? A[(size_t)j * lda + i] : A[(size_t)i * lda + j];
    };
    for (int j = 0; j < n; ++j) {
        double ajj = at(j, j);
        for (int k = 0; k < j; ++k) ajj -= (double)at(j, k) * at(j, k);
        if (!(ajj > 0)) {  // not positive definite (or NaN): LAPACK stores ajj and stops
            at(j, j) = (T)ajj;
            *info = j + 1;
            return CUSOLVER_STATUS_SUCCESS;
        }
        ajj = std::sqrt(ajj);
        at(j, j) = (T)ajj;
        for (int i = j + 1; i < n; ++i) {
            double s = at(i, j);
            for (int k = 0; k < j; ++k) s -= (double)at(i, k) * at(j, k);
            at(i, j) = (T)(s / ajj);
        }
    }
    return CUSOLVER_STATUS_SUCCESS;
}

// ---- getrf (dgetf2) ---------------------------------------------------------------------
template <class T>
int getrf(void* h, int m, int n, T* A, int lda, T* work, int* ipiv, int* info) {
    if (!live(h)) return CUSOLVER_STATUS_NOT_INITIALIZED;
    if (m < 0 || n < 0 || lda < std::max(1, m) || !info) return CUSOLVER_STATUS_INVALID_VALUE;
    // No Lwork argument: scribble what bufferSize reported.
    scribble(work, ws_elems(std::max(m, n)));
    *info = 0;
    const int k = std::min(m, n);
    if (k == 0) return CUSOLVER_STATUS_SUCCESS;
    std::vector<double> a = load(A, lda, m, n);
    auto e = [&](int i, int j) -> double& { return a[(size_t)j * m + i]; };
    const double sfmin = std::numeric_limits<double>::min();
    for (int j = 0; j < k; ++j) {
        int p = j;
        if (ipiv) {  // idamax: the first entry of largest magnitude
            for (int i = j + 1; i < m; ++i)
                if (std::fabs(e(i, j)) > std::fabs(e(p, j))) p = i;
            ipiv[j] = p + 1;
        }
        if (e(p, j) != 0) {
            if (p != j)
                for (int c = 0; c < n; ++c) std::swap(e(j, c), e(p, c));
            if (std::fabs(e(j, j)) >= sfmin) {
                const double r = 1.0 / e(j, j);
                for (int i = j + 1; i < m; ++i) e(i, j) *= r;
            } else {
                for (int i = j + 1; i < m; ++i) e(i, j) /= e(j, j);
            }
        } else if (*info == 0) {
            *info = j + 1;  // exactly singular U; LAPACK goes on factorising
        }
        for (int c = j + 1; c < n; ++c) {  // rank-1 update of the trailing block
            const double u = e(j, c);
            for (int i = j + 1; i < m; ++i) e(i, c) -= e(i, j) * u;
        }
    }
    store(A, lda, a, m, n);
    return CUSOLVER_STATUS_SUCCESS;
}

// ---- getrs (dgetrs) ---------------------------------------------------------------------
template <class T>
int getrs(void* h, int trans, int n, int nrhs, const T* A, int lda, const int* ipiv, T* B,
          int ldb, int* info) {
    if (!live(h)) return CUSOLVER_STATUS_NOT_INITIALIZED;
    if (trans < OP_N || trans > OP_C || n < 0 || nrhs < 0 || lda < std::max(1, n) ||
        ldb < std::max(1, n) || !info)
        return CUSOLVER_STATUS_INVALID_VALUE;
    *info = 0;
    if (n == 0 || nrhs == 0) return CUSOLVER_STATUS_SUCCESS;
    std::vector<double> lu = load(A, lda, n, n);
    auto a = [&](int i, int j) { return lu[(size_t)j * n + i]; };
    std::vector<double> x(n);
    for (int c = 0; c < nrhs; ++c) {
        T* b = B + (size_t)c * ldb;
        for (int i = 0; i < n; ++i) x[i] = b[i];
        if (trans == OP_N) {
            if (ipiv)  // dlaswp forward: the swaps in the order getrf made them
                for (int i = 0; i < n; ++i) std::swap(x[i], x[ipiv[i] - 1]);
            for (int i = 0; i < n; ++i)  // L y = P b, L unit lower
                for (int k = 0; k < i; ++k) x[i] -= a(i, k) * x[k];
            for (int i = n - 1; i >= 0; --i) {  // U x = y
                for (int k = i + 1; k < n; ++k) x[i] -= a(i, k) * x[k];
                x[i] /= a(i, i);
            }
        } else {
            for (int i = 0; i < n; ++i) {  // U^T y = b (U^T lower)
                for (int k = 0; k < i; ++k) x[i] -= a(k, i) * x[k];
                x[i] /= a(i, i);
            }
            for (int i = n - 1; i >= 0; --i)  // L^T z = y (unit upper)
                for (int k = i + 1; k < n; ++k) x[i] -= a(k, i) * x[k];
            if (ipiv)  // P^T: the swaps undone in reverse order
                for (int i = n - 1; i >= 0; --i) std::swap(x[i], x[ipiv[i] - 1]);
        }
        for (int i = 0; i < n; ++i) b[i] = (T)x[i];
    }
    return CUSOLVER_STATUS_SUCCESS;
}

// ---- Householder reflectors (dlarfg / dlarf) --------------------------------------------
// dlarfg on (alpha, x[0..len)): afterwards H = I - tau v v^T with v = (1, x) maps
// (alpha, x_old) to (beta, 0); alpha becomes beta = -sign(alpha) * ||(alpha, x)||.
double larfg(double& alpha, double* x, int len) {
    if (len <= 0) return 0;
    double xnorm = 0;
    for (int i = 0; i < len; ++i) xnorm = std::hypot(xnorm, x[i]);
    if (xnorm == 0) return 0;  // already of the form (beta, 0): H = I
    const double norm = std::hypot(alpha, xnorm);
    const double beta = alpha >= 0 ? -norm : norm;
    const double tau = (beta - alpha) / beta;
    const double scale = 1.0 / (alpha - beta);
    for (int i = 0; i < len; ++i) x[i] *= scale;
    alpha = beta;
    return tau;
}
// C (rows x cols, leading dimension ldc) = H C with H = I - tau v v^T, v of length rows.
void larf_left(const double* v, double tau, double* C, int rows, int cols, int ldc) {
    if (tau == 0) return;
    for (int j = 0; j < cols; ++j) {
        double* c = C + (size_t)j * ldc;
        double w = 0;
        for (int i = 0; i < rows; ++i) w += v[i] * c[i];
        w *= tau;
        for (int i = 0; i < rows; ++i) c[i] -= v[i] * w;
    }
}

// ---- geqrf (dgeqr2) ---------------------------------------------------------------------
template <class T>
int geqrf(void* h, int m, int n, T* A, int lda, T* tau, T* work, int lwork, int* info) {
    if (!live(h)) return CUSOLVER_STATUS_NOT_INITIALIZED;
    if (m < 0 || n < 0 || lda < std::max(1, m) || lwork < ws_elems(n) || !info)
        return CUSOLVER_STATUS_INVALID_VALUE;
    scribble(work, lwork);
    *info = 0;
    const int k = std::min(m, n);
    if (k == 0) return CUSOLVER_STATUS_SUCCESS;
    std::vector<double> a = load(A, lda, m, n);
    for (int i = 0; i < k; ++i) {
        double* col = &a[(size_t)i * m + i];  // A(i:m, i)
        const double t = larfg(col[0], col + 1, m - i - 1);
        tau[i] = (T)t;
        if (i + 1 < n) {
            const double aii = col[0];
            col[0] = 1;  // v's implicit unit entry
            larf_left(col, t, &a[(size_t)(i + 1) * m + i], m - i, n - i - 1, m);
            col[0] = aii;
        }
    }
    store(A, lda, a, m, n);
    return CUSOLVER_STATUS_SUCCESS;
}

// ---- orgqr (dorg2r) ---------------------------------------------------------------------
template <class T>
int orgqr(void* h, int m, int n, int k, T* A, int lda, const T* tau, T* work, int lwork,
          int* info) {
    if (!live(h)) return CUSOLVER_STATUS_NOT_INITIALIZED;
    if (m < 0 || n < 0 || n > m || k < 0 || k > n || lda < std::max(1, m) ||
        lwork < ws_elems(n) || !info)
        return CUSOLVER_STATUS_INVALID_VALUE;
    scribble(work, lwork);
    *info = 0;
    if (n == 0) return CUSOLVER_STATUS_SUCCESS;
    std::vector<double> a = load(A, lda, m, n);
    auto e = [&](int i, int j) -> double& { return a[(size_t)j * m + i]; };
    for (int j = k; j < n; ++j) {  // columns k..n-1 start as unit vectors
        for (int i = 0; i < m; ++i) e(i, j) = 0;
        e(j, j) = 1;
    }
    for (int i = k - 1; i >= 0; --i) {
        const double t = tau[i];
        if (i + 1 < n) {  // apply H(i) to A(i:m, i+1:n)
            e(i, i) = 1;
            larf_left(&e(i, i), t, &e(i, i + 1), m - i, n - i - 1, m);
        }
        for (int r = i + 1; r < m; ++r) e(r, i) *= -t;
        e(i, i) = 1 - t;
        for (int r = 0; r < i; ++r) e(r, i) = 0;
    }
    store(A, lda, a, m, n);
    return CUSOLVER_STATUS_SUCCESS;
}

// ---- syevd / syevjBatched: cyclic Jacobi ----------------------------------------------
// a: n x n symmetric (both triangles), v: n x n or null, both column-major. On return a's
// diagonal holds the eigenvalues and v's columns the eigenvectors (unsorted). Converged (true)
// once off(A) = ||A - diag(A)||_F <= tol * ||A||_F, checked before each of max_sweeps sweeps and
// after the last (the stopping rule cuSOLVER documents for syevj).
bool jacobi_eig(std::vector<double>& a, std::vector<double>* v, int n, double tol,
                int max_sweeps) {
    auto A = [&](int i, int j) -> double& { return a[(size_t)j * n + i]; };
    auto V = [&](int i, int j) -> double& { return (*v)[(size_t)j * n + i]; };
    for (int sweep = 0;; ++sweep) {
        double off = 0, total = 0;
        for (int j = 0; j < n; ++j)
            for (int i = 0; i < n; ++i) {
                const double x = A(i, j) * A(i, j);
                total += x;
                if (i != j) off += x;
            }
        if (off == 0 || off <= tol * tol * total) return true;
        if (sweep >= max_sweeps) return false;  // also for NaN input
        for (int p = 0; p < n - 1; ++p)
            for (int q = p + 1; q < n; ++q) {
                const double apq = A(p, q);
                if (apq == 0) continue;
                // Rotation that zeroes (p, q): t = tan(angle), the smaller root (Rutishauser).
                const double theta = (A(q, q) - A(p, p)) / (2 * apq);
                double t;
                if (std::fabs(theta) > 1e150)
                    t = 0.5 / theta;
                else
                    t = (theta >= 0 ? 1.0 : -1.0) / (std::fabs(theta) + std::sqrt(theta * theta + 1));
                const double c = 1 / std::sqrt(t * t + 1), s = t * c;
                for (int k = 0; k < n; ++k) {  // columns p, q: A <- A J
                    const double akp = A(k, p), akq = A(k, q);
                    A(k, p) = c * akp - s * akq;
                    A(k, q) = s * akp + c * akq;
                }
                for (int k = 0; k < n; ++k) {  // rows p, q: A <- J^T A
                    const double apk = A(p, k), aqk = A(q, k);
                    A(p, k) = c * apk - s * aqk;
                    A(q, k) = s * apk + c * aqk;
                }
                A(p, q) = A(q, p) = 0;
                if (!v) continue;
                for (int k = 0; k < n; ++k) {
                    const double vkp = V(k, p), vkq = V(k, q);
                    V(k, p) = c * vkp - s * vkq;
                    V(k, q) = s * vkp + c * vkq;
                }
            }
    }
}

// One symmetric eigenproblem in place (syevd's and syevjBatched's contract): reads triangle
// `uplo` of A, writes ascending eigenvalues to W and, for jobz = VECTOR, the eigenvectors over
// A; otherwise the read triangle is destroyed (NaN makes a reader of it obvious). Returns
// whether Jacobi converged.
template <class T>
bool sym_eig(int jobz, int uplo, int n, T* A, int lda, T* W, double tol, int max_sweeps) {
    if (n == 0) return true;
    std::vector<double> a((size_t)n * n), v;
    for (int j = 0; j < n; ++j)
        for (int i = j; i < n; ++i) {  // only triangle `uplo` is read
            const double x = uplo == FILL_LOWER ? A[(size_t)j * lda + i] : A[(size_t)i * lda + j];
            a[(size_t)j * n + i] = a[(size_t)i * n + j] = x;
        }
    if (jobz == EIG_VECTOR) {
        v.assign((size_t)n * n, 0.0);
        for (int i = 0; i < n; ++i) v[(size_t)i * n + i] = 1;
    }
    const bool ok = jacobi_eig(a, jobz == EIG_VECTOR ? &v : nullptr, n, tol, max_sweeps);
    std::vector<int> order(n);
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](int x, int y) {
        return a[(size_t)x * n + x] < a[(size_t)y * n + y];
    });
    for (int j = 0; j < n; ++j) W[j] = (T)a[(size_t)order[j] * n + order[j]];
    if (jobz == EIG_VECTOR) {
        for (int j = 0; j < n; ++j)
            for (int i = 0; i < n; ++i) A[(size_t)j * lda + i] = (T)v[(size_t)order[j] * n + i];
    } else {
        for (int j = 0; j < n; ++j)
            for (int i = j; i < n; ++i)
                (uplo == FILL_LOWER ? A[(size_t)j * lda + i] : A[(size_t)i * lda + j]) = (T)kNaN;
    }
    return ok;
}

template <class T>
int syevd(void* h, int jobz, int uplo, int n, T* A, int lda, T* W, T* work, int lwork,
          int* info) {
    if (!live(h)) return CUSOLVER_STATUS_NOT_INITIALIZED;
    if ((jobz != EIG_NOVECTOR && jobz != EIG_VECTOR) ||
        (uplo != FILL_LOWER && uplo != FILL_UPPER) || n < 0 || lda < std::max(1, n) ||
        lwork < ws_elems(n) || !info)
        return CUSOLVER_STATUS_INVALID_VALUE;
    scribble(work, lwork);
    *info = 0;
    sym_eig(jobz, uplo, n, A, lda, W, 1e-16, 100);
    return CUSOLVER_STATUS_SUCCESS;
}

// ---- gesvd: one-sided Jacobi ------------------------------------------------------------
// Fills the columns of u (m x cols, column-major) whose `have` flag is false with unit-norm
// vectors orthogonal to every other column: Gram-Schmidt (twice) on e_0, e_1, ... A unit
// vector rejected once stays rejected (the span only grows), so the scan never restarts.
void complete_basis(std::vector<double>& u, int m, int cols, std::vector<char> have) {
    std::vector<double> x(m);
    int next = 0;
    const double keep = 0.5 / std::sqrt((double)m);  // some e_i always has residual >= 1/sqrt(m)
    for (int j = 0; j < cols; ++j) {
        if (have[j]) continue;
        for (;; ++next) {
            if (next >= m) return;  // cannot happen while fewer than m columns are set
            std::fill(x.begin(), x.end(), 0.0);
            x[next] = 1;
            for (int pass = 0; pass < 2; ++pass)
                for (int c = 0; c < cols; ++c) {
                    if (!have[c]) continue;
                    const double* uc = &u[(size_t)c * m];
                    double d = 0;
                    for (int i = 0; i < m; ++i) d += uc[i] * x[i];
                    for (int i = 0; i < m; ++i) x[i] -= d * uc[i];
                }
            double nrm = 0;
            for (int i = 0; i < m; ++i) nrm += x[i] * x[i];
            nrm = std::sqrt(nrm);
            if (nrm > keep) {
                for (int i = 0; i < m; ++i) u[(size_t)j * m + i] = x[i] / nrm;
                have[j] = 1;
                ++next;
                break;
            }
        }
    }
}

// a: m x n (m >= n), v: n x n or null, column-major. Rotates column pairs (a <- a J, v <- v J)
// until every pair is orthogonal to `tol` relative: then A V = (columns of norms sigma_j) and
// U's columns are those columns normalised. True if one sweep of max_sweeps found nothing left
// to rotate (the sweep after the last is a check only).
bool one_sided_jacobi(std::vector<double>& a, std::vector<double>* v, int m, int n, double tol,
                      int max_sweeps) {
    for (int sweep = 0;; ++sweep) {
        bool rotated = false;
        for (int p = 0; p < n - 1; ++p)
            for (int q = p + 1; q < n; ++q) {
                double* ap = &a[(size_t)p * m];
                double* aq = &a[(size_t)q * m];
                double alpha = 0, beta = 0, gamma = 0;
                for (int i = 0; i < m; ++i) {
                    alpha += ap[i] * ap[i];
                    beta += aq[i] * aq[i];
                    gamma += ap[i] * aq[i];
                }
                if (gamma == 0 || std::fabs(gamma) <= tol * std::sqrt(alpha * beta)) continue;
                if (sweep >= max_sweeps) return false;  // also for NaN input
                rotated = true;
                const double zeta = (beta - alpha) / (2 * gamma);
                double t;
                if (std::fabs(zeta) > 1e150)
                    t = 0.5 / zeta;
                else
                    t = (zeta >= 0 ? 1.0 : -1.0) / (std::fabs(zeta) + std::sqrt(1 + zeta * zeta));
                const double c = 1 / std::sqrt(1 + t * t), s = c * t;
                for (int i = 0; i < m; ++i) {
                    const double x = ap[i], y = aq[i];
                    ap[i] = c * x - s * y;
                    aq[i] = s * x + c * y;
                }
                if (!v) continue;
                double* vp = &(*v)[(size_t)p * n];
                double* vq = &(*v)[(size_t)q * n];
                for (int i = 0; i < n; ++i) {
                    const double x = vp[i], y = vq[i];
                    vp[i] = c * x - s * y;
                    vq[i] = s * x + c * y;
                }
            }
        if (!rotated) return true;
    }
}

int gesvd_ws(int m, int n) { return ws_elems((long long)m + n); }

template <class T>
int gesvd(void* h, signed char jobu, signed char jobvt, int m, int n, T* A, int lda, T* S, T* U,
          int ldu, T* VT, int ldvt, T* work, int lwork, T* rwork, int* info) {
    if (!live(h)) return CUSOLVER_STATUS_NOT_INITIALIZED;
    auto job_ok = [](signed char j) { return j == 'A' || j == 'S' || j == 'N'; };  // no 'O'
    const bool want_u = jobu == 'A' || jobu == 'S', want_v = jobvt == 'A' || jobvt == 'S';
    if (!job_ok(jobu) || !job_ok(jobvt) || m < 0 || n < 0 || m < n || lda < std::max(1, m) ||
        (want_u && ldu < std::max(1, m)) || (want_v && ldvt < std::max(1, n)) ||
        lwork < gesvd_ws(m, n) || !info)
        return CUSOLVER_STATUS_INVALID_VALUE;
    scribble(work, lwork);
    *info = 0;
    const int ucols = jobu == 'A' ? m : n;  // m >= n, so min(m, n) == n
    if (rwork && n > 1) std::fill(rwork, rwork + (n - 1), (T)0);  // unconverged superdiagonal
    if (m == 0 || n == 0) {
        if (jobu == 'A')
            for (int j = 0; j < m; ++j)
                for (int i = 0; i < m; ++i) U[(size_t)j * ldu + i] = (T)(i == j);
        return CUSOLVER_STATUS_SUCCESS;
    }
    std::vector<double> a = load(A, lda, m, n), v((size_t)n * n, 0.0);
    for (int i = 0; i < n; ++i) v[(size_t)i * n + i] = 1;
    one_sided_jacobi(a, &v, m, n, 1e-15, 100);
    std::vector<double> sigma(n);
    for (int j = 0; j < n; ++j) {
        double s = 0;
        for (int i = 0; i < m; ++i) s += a[(size_t)j * m + i] * a[(size_t)j * m + i];
        sigma[j] = std::sqrt(s);
    }
    std::vector<int> order(n);
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](int x, int y) { return sigma[x] > sigma[y]; });
    for (int j = 0; j < n; ++j) S[j] = (T)sigma[order[j]];
    if (want_u) {
        // Columns of (numerically) zero norm carry no direction: replace them, and for
        // jobu='A' the extra m-n columns, by an orthonormal completion.
        const double tiny = sigma[order[0]] * 1e-200;
        std::vector<double> u((size_t)m * ucols, 0.0);
        std::vector<char> have(ucols, 0);
        for (int j = 0; j < n; ++j) {
            const double s = sigma[order[j]];
            if (!(s > tiny) || s == 0) continue;
            for (int i = 0; i < m; ++i) u[(size_t)j * m + i] = a[(size_t)order[j] * m + i] / s;
            have[j] = 1;
        }
        complete_basis(u, m, ucols, have);
        store(U, ldu, u, m, ucols);
    }
    if (want_v)
        for (int j = 0; j < n; ++j)  // VT row j = column order[j] of V
            for (int i = 0; i < n; ++i) VT[(size_t)i * ldvt + j] = (T)v[(size_t)order[j] * n + i];
    for (int j = 0; j < n; ++j)  // A is destroyed (jobu, jobvt != 'O')
        for (int i = 0; i < m; ++i) A[(size_t)j * lda + i] = (T)kNaN;
    return CUSOLVER_STATUS_SUCCESS;
}

// ---- syevjBatched / gesvdjBatched ------------------------------------------------------
// syevjInfo_t / gesvdjInfo_t: tolerance (0 = machine epsilon of the routine's type; a smaller
// one is raised to it), max sweeps, sort flag (results are sorted either way: "any order").
enum : int { KIND_SYEVJ = 1, KIND_GESVDJ = 2 };
struct JacobiParams {
    int kind;
    double tol = 0;
    int max_sweeps = 100;
    int sort = 1;
};
std::set<void*> g_params;  // live syevjInfo_t / gesvdjInfo_t (under g_mu)

JacobiParams* params_of(void* p, int kind) {
    std::lock_guard<std::mutex> lock(g_mu);
    if (!p || !g_params.count(p)) return nullptr;
    auto* q = (JacobiParams*)p;
    return q->kind == kind ? q : nullptr;
}
int create_params(void** out, int kind) {
    if (!out) return CUSOLVER_STATUS_INVALID_VALUE;
    auto* q = new JacobiParams{kind};
    std::lock_guard<std::mutex> lock(g_mu);
    g_params.insert(q);
    *out = q;
    return CUSOLVER_STATUS_SUCCESS;
}
int destroy_params(void* p, int kind) {
    JacobiParams* q = params_of(p, kind);
    if (!q) return CUSOLVER_STATUS_INVALID_VALUE;
    std::lock_guard<std::mutex> lock(g_mu);
    g_params.erase(p);
    delete q;
    return CUSOLVER_STATUS_SUCCESS;
}
template <class T>
double eff_tol(const JacobiParams* q) {
    return std::max(q->tol, (double)std::numeric_limits<T>::epsilon());
}

const int kMaxJacobiN = 32;  // the batched Jacobi routines take n (m, n) <= 32 only
int jacobi_ws(int n, int batch) { return ws_elems((long long)std::max(1, n) * std::max(1, batch)); }

bool syevj_ok(int jobz, int uplo, int n, int lda, const JacobiParams* q, int batch) {
    return (jobz == EIG_NOVECTOR || jobz == EIG_VECTOR) &&
           (uplo == FILL_LOWER || uplo == FILL_UPPER) && n >= 0 && n <= kMaxJacobiN &&
           lda >= std::max(1, n) && q && batch >= 0;
}
bool gesvdj_ok(int jobz, int m, int n, int lda, int ldu, int ldv, const JacobiParams* q,
               int batch) {
    const bool vec = jobz == EIG_VECTOR;
    return (jobz == EIG_NOVECTOR || vec) && m >= 0 && n >= 0 && m <= kMaxJacobiN &&
           n <= kMaxJacobiN && lda >= std::max(1, m) && (!vec || ldu >= std::max(1, m)) &&
           (!vec || ldv >= std::max(1, n)) && q && batch >= 0;
}

template <class T>
int syevj_batched(void* h, int jobz, int uplo, int n, T* A, int lda, T* W, T* work, int lwork,
                  int* info, void* params, int batch) {
    if (!live(h)) return CUSOLVER_STATUS_NOT_INITIALIZED;
    const JacobiParams* q = params_of(params, KIND_SYEVJ);
    if (!syevj_ok(jobz, uplo, n, lda, q, batch) || lwork < jacobi_ws(n, batch) || !info)
        return CUSOLVER_STATUS_INVALID_VALUE;
    scribble(work, lwork);
    const double tol = eff_tol<T>(q);
    for (int b = 0; b < batch; ++b) {
        const bool ok = sym_eig(jobz, uplo, n, A + (size_t)b * lda * n, lda, W + (size_t)b * n,
                                tol, q->max_sweeps);
        info[b] = ok ? 0 : n + 1;  // cuSOLVER: n+1 = not converged
    }
    return CUSOLVER_STATUS_SUCCESS;
}

// One m x n SVD (gesvdjBatched's contract): S descending (min(m, n) values); with vectors,
// U m x m and V n x n (V itself, not V^T), both orthonormal. m < n runs on A^T = U' S V'^T,
// so U = V' and V = U'. A is destroyed. Returns whether Jacobi converged.
template <class T>
bool svd_one(bool vectors, int m, int n, T* A, int lda, T* S, T* U, int ldu, T* V, int ldv,
             double tol, int max_sweeps) {
    const bool tr = m < n;
    const int rows = tr ? n : m, cols = tr ? m : n;  // B = A or A^T, rows >= cols
    std::vector<double> b((size_t)rows * cols), v;
    for (int j = 0; j < n; ++j)
        for (int i = 0; i < m; ++i)
            b[tr ? (size_t)i * rows + j : (size_t)j * rows + i] = A[(size_t)j * lda + i];
    if (vectors) {
        v.assign((size_t)cols * cols, 0.0);
        for (int i = 0; i < cols; ++i) v[(size_t)i * cols + i] = 1;
    }
    // Column dot products carry ~rows ulps of rounding: asking for less would never converge.
    const double eps = std::numeric_limits<double>::epsilon();
    const bool ok = one_sided_jacobi(b, vectors ? &v : nullptr, rows, cols,
                                     std::max(tol, rows * eps), max_sweeps);
    std::vector<double> sigma(cols);
    for (int j = 0; j < cols; ++j) {
        double s = 0;
        for (int i = 0; i < rows; ++i) s += b[(size_t)j * rows + i] * b[(size_t)j * rows + i];
        sigma[j] = std::sqrt(s);
    }
    std::vector<int> order(cols);
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](int x, int y) { return sigma[x] > sigma[y]; });
    for (int j = 0; j < cols; ++j) S[j] = (T)sigma[order[j]];
    if (vectors) {
        // Left vectors of B (rows x rows): normalised columns, zero ones and the rest completed.
        std::vector<double> ub((size_t)rows * rows, 0.0), vb((size_t)cols * cols);
        std::vector<char> have(rows, 0);
        const double tiny = cols ? sigma[order[0]] * 1e-200 : 0;
        for (int j = 0; j < cols; ++j) {
            const double s = sigma[order[j]];
            if (!(s > tiny) || s == 0) continue;
            for (int i = 0; i < rows; ++i) ub[(size_t)j * rows + i] = b[(size_t)order[j] * rows + i] / s;
            have[j] = 1;
        }
        complete_basis(ub, rows, rows, have);
        for (int j = 0; j < cols; ++j)  // right vectors of B in the order of sigma
            for (int i = 0; i < cols; ++i) vb[(size_t)j * cols + i] = v[(size_t)order[j] * cols + i];
        store(U, ldu, tr ? vb : ub, m, m);
        store(V, ldv, tr ? ub : vb, n, n);
    }
    for (int j = 0; j < n; ++j)
        for (int i = 0; i < m; ++i) A[(size_t)j * lda + i] = (T)kNaN;
    return ok;
}

template <class T>
int gesvdj_batched(void* h, int jobz, int m, int n, T* A, int lda, T* S, T* U, int ldu, T* V,
                   int ldv, T* work, int lwork, int* info, void* params, int batch) {
    if (!live(h)) return CUSOLVER_STATUS_NOT_INITIALIZED;
    const JacobiParams* q = params_of(params, KIND_GESVDJ);
    if (!gesvdj_ok(jobz, m, n, lda, ldu, ldv, q, batch) ||
        lwork < jacobi_ws(std::max(m, n), batch) || !info)
        return CUSOLVER_STATUS_INVALID_VALUE;
    scribble(work, lwork);
    const double tol = eff_tol<T>(q);
    const bool vec = jobz == EIG_VECTOR;
    const int k = std::min(m, n);
    for (int b = 0; b < batch; ++b) {
        const bool ok = svd_one(vec, m, n, A + (size_t)b * lda * n, lda, S + (size_t)b * k,
                                vec ? U + (size_t)b * ldu * m : nullptr, ldu,
                                vec ? V + (size_t)b * ldv * n : nullptr, ldv, tol,
                                q->max_sweeps);
        info[b] = ok ? 0 : k + 1;  // cuSOLVER: min(m, n)+1 = not converged
    }
    return CUSOLVER_STATUS_SUCCESS;
}

// bufferSize helpers: validate like the real calls, report ws_elems.
int report(void* h, bool ok, int* lwork, int elems) {
    if (!live(h)) return CUSOLVER_STATUS_NOT_INITIALIZED;
    if (!ok || !lwork) return CUSOLVER_STATUS_INVALID_VALUE;
    *lwork = elems;
    return CUSOLVER_STATUS_SUCCESS;
}

}  // namespace

FT_API cusolverStatus_t cusolverDnCreate(void** handle) {
    if (!handle) return CUSOLVER_STATUS_INVALID_VALUE;
    void* h = new int(0);
    std::lock_guard<std::mutex> lock(g_mu);
    g_handles.insert(h);
    *handle = h;
    return CUSOLVER_STATUS_SUCCESS;
}
FT_API cusolverStatus_t cusolverDnDestroy(void* handle) {
    std::lock_guard<std::mutex> lock(g_mu);
    if (!handle || !g_handles.erase(handle)) return CUSOLVER_STATUS_NOT_INITIALIZED;
    delete (int*)handle;
    return CUSOLVER_STATUS_SUCCESS;
}
FT_API cusolverStatus_t cusolverDnSetStream(void* handle, void*) {
    return live(handle) ? CUSOLVER_STATUS_SUCCESS : CUSOLVER_STATUS_NOT_INITIALIZED;
}

#define FT_SOLVER(P, T)                                                                          \
    FT_API cusolverStatus_t cusolverDn##P##potrf_bufferSize(void* h, int uplo, int n, T*, int lda, \
                                                             int* lwork) {                       \
        return report(h, (uplo == FILL_LOWER || uplo == FILL_UPPER) && n >= 0 &&                \
                             lda >= std::max(1, n), lwork, ws_elems(n));                         \
    }                                                                                            \
    FT_API cusolverStatus_t cusolverDn##P##potrf(void* h, int uplo, int n, T* A, int lda, T* w,  \
                                                 int lwork, int* info) {                         \
        return potrf<T>(h, uplo, n, A, lda, w, lwork, info);                                     \
    }                                                                                            \
    FT_API cusolverStatus_t cusolverDn##P##getrf_bufferSize(void* h, int m, int n, T*, int lda,  \
                                                             int* lwork) {                       \
        return report(h, m >= 0 && n >= 0 && lda >= std::max(1, m), lwork,                      \
                      ws_elems(std::max(m, n)));                                                 \
    }                                                                                            \
    FT_API cusolverStatus_t cusolverDn##P##getrf(void* h, int m, int n, T* A, int lda, T* w,     \
                                                 int* ipiv, int* info) {                         \
        return getrf<T>(h, m, n, A, lda, w, ipiv, info);                                         \
    }                                                                                            \
    FT_API cusolverStatus_t cusolverDn##P##getrs(void* h, int trans, int n, int nrhs, const T* A, \
                                                 int lda, const int* ipiv, T* B, int ldb,        \
                                                 int* info) {                                    \
        return getrs<T>(h, trans, n, nrhs, A, lda, ipiv, B, ldb, info);                          \
    }                                                                                            \
    FT_API cusolverStatus_t cusolverDn##P##geqrf_bufferSize(void* h, int m, int n, T*, int lda,  \
                                                             int* lwork) {                       \
        return report(h, m >= 0 && n >= 0 && lda >= std::max(1, m), lwork, ws_elems(n));        \
    }                                                                                            \
    FT_API cusolverStatus_t cusolverDn##P##geqrf(void* h, int m, int n, T* A, int lda, T* tau,   \
                                                 T* w, int lwork, int* info) {                   \
        return geqrf<T>(h, m, n, A, lda, tau, w, lwork, info);                                   \
    }                                                                                            \
    FT_API cusolverStatus_t cusolverDn##P##orgqr_bufferSize(void* h, int m, int n, int k,        \
                                                             const T*, int lda, const T*,        \
                                                             int* lwork) {                       \
        return report(h, m >= 0 && n >= 0 && n <= m && k >= 0 && k <= n &&                      \
                             lda >= std::max(1, m), lwork, ws_elems(n));                         \
    }                                                                                            \
    FT_API cusolverStatus_t cusolverDn##P##orgqr(void* h, int m, int n, int k, T* A, int lda,    \
                                                 const T* tau, T* w, int lwork, int* info) {     \
        return orgqr<T>(h, m, n, k, A, lda, tau, w, lwork, info);                                \
    }                                                                                            \
    FT_API cusolverStatus_t cusolverDn##P##syevd_bufferSize(void* h, int jobz, int uplo, int n,  \
                                                             const T*, int lda, const T*,        \
                                                             int* lwork) {                       \
        return report(h, (jobz == EIG_NOVECTOR || jobz == EIG_VECTOR) &&                        \
                             (uplo == FILL_LOWER || uplo == FILL_UPPER) && n >= 0 &&            \
                             lda >= std::max(1, n), lwork, ws_elems(n));                         \
    }                                                                                            \
    FT_API cusolverStatus_t cusolverDn##P##syevd(void* h, int jobz, int uplo, int n, T* A,       \
                                                 int lda, T* W, T* w, int lwork, int* info) {    \
        return syevd<T>(h, jobz, uplo, n, A, lda, W, w, lwork, info);                            \
    }                                                                                            \
    FT_API cusolverStatus_t cusolverDn##P##gesvd_bufferSize(void* h, int m, int n, int* lwork) { \
        return report(h, m >= 0 && n >= 0, lwork, gesvd_ws(m, n));                              \
    }                                                                                            \
    FT_API cusolverStatus_t cusolverDn##P##gesvd(void* h, signed char jobu, signed char jobvt,   \
                                                 int m, int n, T* A, int lda, T* S, T* U,        \
                                                 int ldu, T* VT, int ldvt, T* w, int lwork,      \
                                                 T* rwork, int* info) {                          \
        return gesvd<T>(h, jobu, jobvt, m, n, A, lda, S, U, ldu, VT, ldvt, w, lwork, rwork,      \
                        info);                                                                   \
    }

FT_SOLVER(S, float)
FT_SOLVER(D, double)

#define FT_JACOBI(P, T)                                                                          \
    FT_API cusolverStatus_t cusolverDn##P##syevjBatched_bufferSize(                              \
        void* h, int jobz, int uplo, int n, const T*, int lda, const T*, int* lwork,             \
        void* params, int batch) {                                                               \
        return report(h, syevj_ok(jobz, uplo, n, lda, params_of(params, KIND_SYEVJ), batch),   \
                      lwork, jacobi_ws(n, batch));                                              \
    }                                                                                            \
    FT_API cusolverStatus_t cusolverDn##P##syevjBatched(void* h, int jobz, int uplo, int n,      \
                                                        T* A, int lda, T* W, T* w, int lwork,    \
                                                        int* info, void* params, int batch) {    \
        return syevj_batched<T>(h, jobz, uplo, n, A, lda, W, w, lwork, info, params, batch);    \
    }                                                                                            \
    FT_API cusolverStatus_t cusolverDn##P##gesvdjBatched_bufferSize(                             \
        void* h, int jobz, int m, int n, const T*, int lda, const T*, const T*, int ldu,         \
        const T*, int ldv, int* lwork, void* params, int batch) {                                \
        return report(h, gesvdj_ok(jobz, m, n, lda, ldu, ldv, params_of(params, KIND_GESVDJ),  \
                                   batch), lwork, jacobi_ws(std::max(m, n), batch));            \
    }                                                                                            \
    FT_API cusolverStatus_t cusolverDn##P##gesvdjBatched(                                        \
        void* h, int jobz, int m, int n, T* A, int lda, T* S, T* U, int ldu, T* V, int ldv,      \
        T* w, int lwork, int* info, void* params, int batch) {                                   \
        return gesvdj_batched<T>(h, jobz, m, n, A, lda, S, U, ldu, V, ldv, w, lwork, info,      \
                                 params, batch);                                                 \
    }

FT_JACOBI(S, float)
FT_JACOBI(D, double)

#define FT_JACOBI_INFO(Name, X, KIND)                                                            \
    FT_API cusolverStatus_t cusolverDnCreate##Name##Info(void** info) {                          \
        return create_params(info, KIND);                                                        \
    }                                                                                            \
    FT_API cusolverStatus_t cusolverDnDestroy##Name##Info(void* info) {                          \
        return destroy_params(info, KIND);                                                       \
    }                                                                                            \
    FT_API cusolverStatus_t cusolverDnX##X##SetTolerance(void* info, double tol) {               \
        JacobiParams* q = params_of(info, KIND);                                                 \
        if (!q || !(tol >= 0)) return CUSOLVER_STATUS_INVALID_VALUE;                             \
        q->tol = tol;                                                                            \
        return CUSOLVER_STATUS_SUCCESS;                                                          \
    }                                                                                            \
    FT_API cusolverStatus_t cusolverDnX##X##SetMaxSweeps(void* info, int max_sweeps) {           \
        JacobiParams* q = params_of(info, KIND);                                                 \
        if (!q || max_sweeps < 1) return CUSOLVER_STATUS_INVALID_VALUE;                          \
        q->max_sweeps = max_sweeps;                                                              \
        return CUSOLVER_STATUS_SUCCESS;                                                          \
    }                                                                                            \
    FT_API cusolverStatus_t cusolverDnX##X##SetSortEig(void* info, int sort) {                   \
        JacobiParams* q = params_of(info, KIND);                                                 \
        if (!q) return CUSOLVER_STATUS_INVALID_VALUE;                                            \
        q->sort = sort;                                                                          \
        return CUSOLVER_STATUS_SUCCESS;                                                          \
    }

FT_JACOBI_INFO(Syevj, syevj, KIND_SYEVJ)
FT_JACOBI_INFO(Gesvdj, gesvdj, KIND_GESVDJ)

FT_API const char* cusolverGetStatusString(cusolverStatus_t s) {
    switch (s) {
        case CUSOLVER_STATUS_SUCCESS: return "CUSOLVER_STATUS_SUCCESS";
        case CUSOLVER_STATUS_NOT_INITIALIZED: return "CUSOLVER_STATUS_NOT_INITIALIZED";
        case CUSOLVER_STATUS_INVALID_VALUE: return "CUSOLVER_STATUS_INVALID_VALUE";
        default: return "CUSOLVER_STATUS_INTERNAL_ERROR (emulator)";
    }
}
