// libcusolver.cpp: the dense (legacy cusolverDn) routines ferrotorch calls, run on the CPU with
// LAPACK semantics: column-major, 1-based pivots, info = k for a failure at step k. Each routine
// is one template (T = float or double) that computes in double and stores T. Device pointers
// (A, workspaces, devInfo, devIpiv) are plain host memory here, as in the rest of the emulator.
//
// Algorithms: potrf/getrf/getrs/geqrf/orgqr follow LAPACK's unblocked reference routines
// (dpotf2, dgetf2, dgetrs, dgeqr2 + dlarfg/dlarf, dorg2r) step by step, so factors, pivots,
// tau and info match LAPACK's conventions. syevd uses cyclic Jacobi and gesvd one-sided
// Jacobi (simple and accurate; eigen/singular vector signs are unspecified, as on the GPU).
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

// ---- syevd: cyclic Jacobi ---------------------------------------------------------------
// a: n x n symmetric (both triangles), v: n x n, both column-major. On return a's diagonal
// holds the eigenvalues and v's columns the eigenvectors (unsorted).
void jacobi_eig(std::vector<double>& a, std::vector<double>& v, int n) {
    auto A = [&](int i, int j) -> double& { return a[(size_t)j * n + i]; };
    auto V = [&](int i, int j) -> double& { return v[(size_t)j * n + i]; };
    for (int sweep = 0; sweep < 100; ++sweep) {
        double off = 0, total = 0;
        for (int j = 0; j < n; ++j)
            for (int i = 0; i < n; ++i) {
                const double x = A(i, j) * A(i, j);
                total += x;
                if (i != j) off += x;
            }
        if (off == 0 || off <= 1e-32 * total) return;  // off-diagonal below ~1e-16 relative
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
                for (int k = 0; k < n; ++k) {
                    const double vkp = V(k, p), vkq = V(k, q);
                    V(k, p) = c * vkp - s * vkq;
                    V(k, q) = s * vkp + c * vkq;
                }
            }
    }
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
    if (n == 0) return CUSOLVER_STATUS_SUCCESS;
    std::vector<double> a((size_t)n * n), v((size_t)n * n, 0.0);
    for (int j = 0; j < n; ++j)
        for (int i = j; i < n; ++i) {  // only triangle `uplo` is read
            const double x = uplo == FILL_LOWER ? A[(size_t)j * lda + i] : A[(size_t)i * lda + j];
            a[(size_t)j * n + i] = a[(size_t)i * n + j] = x;
        }
    for (int i = 0; i < n; ++i) v[(size_t)i * n + i] = 1;
    jacobi_eig(a, v, n);
    std::vector<int> order(n);
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](int x, int y) {
        return a[(size_t)x * n + x] < a[(size_t)y * n + y];
    });
    for (int j = 0; j < n; ++j) W[j] = (T)a[(size_t)order[j] * n + order[j]];
    if (jobz == EIG_VECTOR) {
        for (int j = 0; j < n; ++j)
            for (int i = 0; i < n; ++i) A[(size_t)j * lda + i] = (T)v[(size_t)order[j] * n + i];
    } else {  // LAPACK: triangle `uplo` is destroyed; NaN makes a reader of it obvious
        for (int j = 0; j < n; ++j)
            for (int i = j; i < n; ++i)
                (uplo == FILL_LOWER ? A[(size_t)j * lda + i] : A[(size_t)i * lda + j]) = (T)kNaN;
    }
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
    // Rotate column pairs until every pair is orthogonal to ~1e-15 relative; then
    // A V = (columns of norms sigma_j) and U's columns are those columns normalised.
    for (int sweep = 0; sweep < 100; ++sweep) {
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
                if (gamma == 0 || std::fabs(gamma) <= 1e-15 * std::sqrt(alpha * beta)) continue;
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
                double* vp = &v[(size_t)p * n];
                double* vq = &v[(size_t)q * n];
                for (int i = 0; i < n; ++i) {
                    const double x = vp[i], y = vq[i];
                    vp[i] = c * x - s * y;
                    vq[i] = s * x + c * y;
                }
            }
        if (!rotated) break;
    }
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

FT_API const char* cusolverGetStatusString(cusolverStatus_t s) {
    switch (s) {
        case CUSOLVER_STATUS_SUCCESS: return "CUSOLVER_STATUS_SUCCESS";
        case CUSOLVER_STATUS_NOT_INITIALIZED: return "CUSOLVER_STATUS_NOT_INITIALIZED";
        case CUSOLVER_STATUS_INVALID_VALUE: return "CUSOLVER_STATUS_INVALID_VALUE";
        default: return "CUSOLVER_STATUS_INTERNAL_ERROR (emulator)";
    }
}
