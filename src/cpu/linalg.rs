//! Dense decompositions of one matrix at a time, on row-major slices (the tensor layer batches
//! them). LU, SVD and the symmetric eigensolver come from `nalgebra`; Cholesky and Householder
//! QR are written here so that failures can name the offending minor (as LAPACK/PyTorch do)
//! and so that QR can return a complete `Q` and handle zero columns without special cases.
//!
//! Conventions follow LAPACK/PyTorch: SVD singular values descending, symmetric eigenvalues
//! ascending, `R` of QR may have negative diagonal entries.

use crate::Element;
use nalgebra::{DMatrix, RealField};

/// Element types the decompositions run on (f32, f64).
pub trait LinalgElement: RealField + Element + Copy {}
impl LinalgElement for f32 {}
impl LinalgElement for f64 {}

/// Failure of a decomposition of one matrix.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DecompError {
    /// LU found an exactly zero pivot at this (1-based) diagonal position.
    Singular(usize),
    /// Cholesky: the leading minor of this (1-based) order is not positive-definite.
    NotPositiveDefinite(usize),
    /// An iterative algorithm (SVD, eigh) did not converge (e.g. NaN input).
    NoConvergence,
}

fn dm<T: LinalgElement>(a: &[T], m: usize, n: usize) -> DMatrix<T> {
    DMatrix::from_row_slice(m, n, a)
}

/// Row-major elements of a matrix.
fn rows<T: LinalgElement>(a: &DMatrix<T>) -> Vec<T> {
    let (m, n) = a.shape();
    let mut out = Vec::with_capacity(m * n);
    for i in 0..m {
        for j in 0..n {
            out.push(a[(i, j)]);
        }
    }
    out
}

/// The first exactly-zero pivot of an LU factorisation (1-based), if any.
fn zero_pivot<T: LinalgElement>(
    lu: &nalgebra::LU<T, nalgebra::Dyn, nalgebra::Dyn>,
) -> Option<usize> {
    let u = lu.u();
    (0..u.nrows())
        .find(|&i| u[(i, i)] == <T as Element>::zero())
        .map(|i| i + 1)
}

/// Inverse of the `n x n` matrix `a`.
pub fn inv<T: LinalgElement>(a: &[T], n: usize) -> Result<Vec<T>, DecompError> {
    if n == 0 {
        return Ok(vec![]);
    }
    let lu = dm(a, n, n).lu();
    if let Some(i) = zero_pivot(&lu) {
        return Err(DecompError::Singular(i));
    }
    lu.try_inverse()
        .map(|m| rows(&m))
        .ok_or(DecompError::Singular(n))
}

/// Determinant (0 for singular matrices, 1 for `0 x 0`).
pub fn det<T: LinalgElement>(a: &[T], n: usize) -> T {
    if n == 0 {
        return <T as Element>::one();
    }
    dm(a, n, n).lu().determinant()
}

/// `(sign, log|det|)`; sign 0 and log -inf for singular matrices.
pub fn slogdet<T: LinalgElement>(a: &[T], n: usize) -> (T, T) {
    if n == 0 {
        return (<T as Element>::one(), <T as Element>::zero());
    }
    let lu = dm(a, n, n).lu();
    let mut sign: T = lu.p().determinant();
    let mut logabs = <T as Element>::zero();
    let u = lu.u();
    for i in 0..n {
        let d = u[(i, i)];
        if d == <T as Element>::zero() {
            return (
                <T as Element>::zero(),
                <T as Element>::from_f64(f64::NEG_INFINITY),
            );
        }
        if d < <T as Element>::zero() {
            sign = -sign;
        }
        logabs += d.abs().ln();
    }
    (sign, logabs)
}

/// Solve `A X = B` for `A` (`n x n`) and `B` (`n x k`).
pub fn solve<T: LinalgElement>(
    a: &[T],
    n: usize,
    b: &[T],
    k: usize,
) -> Result<Vec<T>, DecompError> {
    if n == 0 || k == 0 {
        return Ok(vec![<T as Element>::zero(); n * k]);
    }
    let lu = dm(a, n, n).lu();
    if let Some(i) = zero_pivot(&lu) {
        return Err(DecompError::Singular(i));
    }
    lu.solve(&dm(b, n, k))
        .map(|x| rows(&x))
        .ok_or(DecompError::Singular(n))
}

/// Cholesky factor of the symmetric matrix read from `a`'s lower triangle (or upper when
/// `upper`): returns `L` (lower) or `U = L^T` (upper).
pub fn cholesky<T: LinalgElement>(a: &[T], n: usize, upper: bool) -> Result<Vec<T>, DecompError> {
    let at = |i: usize, j: usize| -> T {
        // Element (i, j) with i >= j of the symmetric source.
        if upper {
            a[j * n + i]
        } else {
            a[i * n + j]
        }
    };
    let mut l = vec![<T as Element>::zero(); n * n];
    for j in 0..n {
        let mut s = at(j, j);
        for p in 0..j {
            s -= l[j * n + p] * l[j * n + p];
        }
        if s.partial_cmp(&<T as Element>::zero()) != Some(std::cmp::Ordering::Greater) {
            return Err(DecompError::NotPositiveDefinite(j + 1));
        }
        let d = s.sqrt();
        l[j * n + j] = d;
        for i in j + 1..n {
            let mut s = at(i, j);
            for p in 0..j {
                s -= l[i * n + p] * l[j * n + p];
            }
            l[i * n + j] = s / d;
        }
    }
    if upper {
        let mut u = vec![<T as Element>::zero(); n * n];
        for i in 0..n {
            for j in 0..=i {
                u[j * n + i] = l[i * n + j];
            }
        }
        return Ok(u);
    }
    Ok(l)
}

/// Householder QR of the `m x n` matrix `a`. Returns `(Q, R)` row-major: `Q` is `m x m` when
/// `complete` else `m x min(m, n)`; `R` is `m x n` when `complete` else `min(m, n) x n`.
/// With `want_q == false`, `Q` is empty.
pub fn qr<T: LinalgElement>(
    a: &[T],
    m: usize,
    n: usize,
    complete: bool,
    want_q: bool,
) -> (Vec<T>, Vec<T>) {
    let kmin = m.min(n);
    let mut r = a.to_vec();
    let mut vs: Vec<(Vec<T>, T)> = Vec::with_capacity(kmin);
    let mut w = vec![<T as Element>::zero(); n];
    for j in 0..kmin {
        let mut v: Vec<T> = (j..m).map(|i| r[i * n + j]).collect();
        let alpha = v[0];
        let below = v[1..]
            .iter()
            .fold(<T as Element>::zero(), |s, &x| s + x * x);
        if below == <T as Element>::zero() {
            // Nothing to eliminate: no reflection (tau = 0), so R keeps alpha's sign, as
            // LAPACK's dlarfg (qr(eye(n)) is (I, I)).
            vs.push((v, <T as Element>::zero()));
            continue;
        }
        let norm = (alpha * alpha + below).sqrt();
        let beta = if alpha >= <T as Element>::zero() {
            -norm
        } else {
            norm
        };
        let v0 = alpha - beta;
        for x in v.iter_mut().skip(1) {
            *x /= v0;
        }
        v[0] = <T as Element>::one();
        let tau = (beta - alpha) / beta;
        // R[j.., j..] -= tau * v * (v^T R[j.., j..])
        for c in w[j..].iter_mut() {
            *c = <T as Element>::zero();
        }
        for (ii, &vi) in v.iter().enumerate() {
            let row = &r[(j + ii) * n..(j + ii + 1) * n];
            for c in j..n {
                w[c] += vi * row[c];
            }
        }
        for (ii, &vi) in v.iter().enumerate() {
            let f = tau * vi;
            let row = &mut r[(j + ii) * n..(j + ii + 1) * n];
            for c in j..n {
                row[c] -= f * w[c];
            }
        }
        r[j * n + j] = beta;
        for i in j + 1..m {
            r[i * n + j] = <T as Element>::zero();
        }
        vs.push((v, tau));
    }
    let rrows = if complete { m } else { kmin };
    r.truncate(rrows * n);
    if !want_q {
        return (vec![], r);
    }
    let qc = if complete { m } else { kmin };
    let mut q = vec![<T as Element>::zero(); m * qc];
    for i in 0..qc.min(m) {
        q[i * qc + i] = <T as Element>::one();
    }
    let mut wq = vec![<T as Element>::zero(); qc];
    for (j, (v, tau)) in vs.iter().enumerate().rev() {
        if *tau == <T as Element>::zero() {
            continue;
        }
        for c in wq.iter_mut() {
            *c = <T as Element>::zero();
        }
        for (ii, &vi) in v.iter().enumerate() {
            let row = &q[(j + ii) * qc..(j + ii + 1) * qc];
            for c in 0..qc {
                wq[c] += vi * row[c];
            }
        }
        for (ii, &vi) in v.iter().enumerate() {
            let f = *tau * vi;
            let row = &mut q[(j + ii) * qc..(j + ii + 1) * qc];
            for c in 0..qc {
                row[c] -= f * wq[c];
            }
        }
    }
    (q, r)
}

/// Extend the `p x k` matrix `u` (orthonormal columns, row-major) to a `p x p` orthogonal matrix
/// whose first `k` columns are `u`.
fn complete_basis<T: LinalgElement>(u: &[T], p: usize, k: usize) -> Vec<T> {
    let (q, _) = qr(u, p, k, true, true);
    let mut out = q;
    for i in 0..p {
        out[i * p..i * p + k].copy_from_slice(&u[i * k..(i + 1) * k]);
    }
    out
}

/// Result of an SVD: `u` is `m x ucols`, `s` has `min(m, n)` entries (descending), `vh` is
/// `vrows x n` (all row-major; `u`/`vh` empty when not computed).
pub struct Svd<T> {
    pub u: Vec<T>,
    pub s: Vec<T>,
    pub vh: Vec<T>,
}

fn max_iter(m: usize, n: usize) -> usize {
    (m.max(n) * 200).max(2000)
}

/// SVD of the `m x n` matrix `a`. With `compute_uv`, `full` selects `U: m x m, Vh: n x n`
/// instead of `U: m x k, Vh: k x n`.
pub fn svd<T: LinalgElement>(
    a: &[T],
    m: usize,
    n: usize,
    compute_uv: bool,
    full: bool,
) -> Result<Svd<T>, DecompError> {
    let k = m.min(n);
    if k == 0 {
        let (u, vh) = if !compute_uv {
            (vec![], vec![])
        } else if full {
            (identity(m), identity(n))
        } else {
            (vec![], vec![])
        };
        return Ok(Svd { u, s: vec![], vh });
    }
    if a.iter().any(|x| !x.is_finite()) {
        return Err(DecompError::NoConvergence);
    }
    let dec = nalgebra::SVD::try_new(
        dm(a, m, n),
        compute_uv,
        compute_uv,
        T::default_epsilon(),
        max_iter(m, n),
    )
    .ok_or(DecompError::NoConvergence)?;
    let s: Vec<T> = dec.singular_values.iter().copied().collect();
    if !compute_uv {
        return Ok(Svd {
            u: vec![],
            s,
            vh: vec![],
        });
    }
    let (Some(u), Some(vt)) = (dec.u.as_ref(), dec.v_t.as_ref()) else {
        return Err(DecompError::NoConvergence);
    };
    let mut u = rows(u);
    let mut vh = rows(vt);
    if full {
        if m > k {
            u = complete_basis(&u, m, k);
        }
        if n > k {
            // Complete V = Vh^T (n x k), then transpose back.
            let v: Vec<T> = (0..n)
                .flat_map(|i| (0..k).map(move |j| (i, j)))
                .map(|(i, j)| vh[j * n + i])
                .collect();
            let vf = complete_basis(&v, n, k);
            vh = (0..n)
                .flat_map(|i| (0..n).map(move |j| (i, j)))
                .map(|(i, j)| vf[j * n + i])
                .collect();
        }
    }
    Ok(Svd { u, s, vh })
}

fn identity<T: LinalgElement>(n: usize) -> Vec<T> {
    let mut v = vec![<T as Element>::zero(); n * n];
    for i in 0..n {
        v[i * n + i] = <T as Element>::one();
    }
    v
}

/// Eigen-decomposition of the symmetric matrix read from `a`'s lower (or `upper`) triangle.
/// Eigenvalues ascending; eigenvectors (`n x n`, columns) when `vectors`.
pub fn eigh<T: LinalgElement>(
    a: &[T],
    n: usize,
    upper: bool,
    vectors: bool,
) -> Result<(Vec<T>, Vec<T>), DecompError> {
    if n == 0 {
        return Ok((vec![], vec![]));
    }
    // nalgebra reads the lower triangle of its (column-major) matrix.
    let mut mat = if upper {
        DMatrix::from_column_slice(n, n, a)
    } else {
        dm(a, n, n)
    };
    // Mirror the used triangle so the matrix is exactly symmetric (and NaNs elsewhere are
    // ignored, as LAPACK ignores the other triangle).
    for i in 0..n {
        for j in i + 1..n {
            mat[(i, j)] = mat[(j, i)];
        }
    }
    if mat.iter().any(|x| !x.is_finite()) {
        return Err(DecompError::NoConvergence);
    }
    let dec = nalgebra::SymmetricEigen::try_new(mat, T::default_epsilon(), max_iter(n, n))
        .ok_or(DecompError::NoConvergence)?;
    let mut order: Vec<usize> = (0..n).collect();
    order.sort_by(|&i, &j| {
        dec.eigenvalues[i]
            .partial_cmp(&dec.eigenvalues[j])
            .unwrap_or(std::cmp::Ordering::Equal)
    });
    let w: Vec<T> = order.iter().map(|&i| dec.eigenvalues[i]).collect();
    if !vectors {
        return Ok((w, vec![]));
    }
    let mut v = vec![<T as Element>::zero(); n * n];
    for (c, &src) in order.iter().enumerate() {
        for r in 0..n {
            v[r * n + c] = dec.eigenvectors[(r, src)];
        }
    }
    Ok((w, v))
}

/// Pseudo-inverse (`n x m`) of the `m x n` matrix `a`: singular values above
/// `max(atol, rtol * s_max)` are inverted. `hermitian` uses the symmetric eigensolver.
pub fn pinv<T: LinalgElement>(
    a: &[T],
    m: usize,
    n: usize,
    atol: f64,
    rtol: f64,
    hermitian: bool,
) -> Result<Vec<T>, DecompError> {
    let mut out = vec![<T as Element>::zero(); n * m];
    if m == 0 || n == 0 {
        return Ok(out);
    }
    if hermitian {
        let (w, v) = eigh(a, n, false, true)?;
        let wmax = w.iter().fold(0.0f64, |acc, x| acc.max(x.to_f64().abs()));
        let tol = atol.max(rtol * wmax);
        for (p, &wp) in w.iter().enumerate() {
            if wp.to_f64().abs() <= tol {
                continue;
            }
            let inv = <T as Element>::one() / wp;
            for i in 0..n {
                let f = v[i * n + p] * inv;
                for j in 0..n {
                    out[i * n + j] += f * v[j * n + p];
                }
            }
        }
        return Ok(out);
    }
    let d = svd(a, m, n, true, false)?;
    let k = m.min(n);
    let smax = d.s.first().map(|x| x.to_f64()).unwrap_or(0.0);
    let tol = atol.max(rtol * smax);
    // out = V diag(1/s) U^T: out[i, j] = sum_p vh[p, i] / s_p * u[j, p]
    for p in 0..k {
        let sp = d.s[p];
        if sp.to_f64() <= tol {
            continue;
        }
        let inv = <T as Element>::one() / sp;
        for i in 0..n {
            let f = d.vh[p * n + i] * inv;
            for j in 0..m {
                out[i * m + j] += f * d.u[j * k + p];
            }
        }
    }
    Ok(out)
}

/// Minimum-norm least-squares solution of `A X = B` (`A: m x n`, `B: m x k`) through the
/// SVD. Singular values at or below `rcond * s_max` are treated as zero. Returns
/// `(X (n x k), rank, singular values)`.
pub fn lstsq<T: LinalgElement>(
    a: &[T],
    m: usize,
    n: usize,
    b: &[T],
    k: usize,
    rcond: f64,
) -> Result<(Vec<T>, usize, Vec<T>), DecompError> {
    let mut x = vec![<T as Element>::zero(); n * k];
    if m == 0 || n == 0 {
        return Ok((x, 0, vec![]));
    }
    let d = svd(a, m, n, true, false)?;
    let r = m.min(n);
    let smax = d.s.first().map(|x| x.to_f64()).unwrap_or(0.0);
    let tol = rcond * smax;
    let mut rank = 0;
    let mut utb = vec![<T as Element>::zero(); k];
    for p in 0..r {
        let sp = d.s[p];
        if sp.to_f64() <= tol || sp == <T as Element>::zero() {
            continue;
        }
        rank += 1;
        // utb = (U^T B)[p, :] / s_p
        for c in utb.iter_mut() {
            *c = <T as Element>::zero();
        }
        for i in 0..m {
            let uip = d.u[i * r + p];
            for c in 0..k {
                utb[c] += uip * b[i * k + c];
            }
        }
        for c in utb.iter_mut() {
            *c /= sp;
        }
        for i in 0..n {
            let v = d.vh[p * n + i];
            for c in 0..k {
                x[i * k + c] += v * utb[c];
            }
        }
    }
    Ok((x, rank, d.s))
}

/// Solve `A X = B` for a triangular `A` (`n x n`; only its `upper` or lower triangle is read,
/// and `unit` takes its diagonal as ones) and `B` (`n x k`), by substitution on whole rows of
/// `B`. As in LAPACK's `trsm`, a zero diagonal gives inf/NaN rather than an error.
pub fn solve_triangular<T: LinalgElement>(
    a: &[T],
    n: usize,
    b: &[T],
    k: usize,
    upper: bool,
    unit: bool,
) -> Vec<T> {
    let mut x = b.to_vec();
    if k == 0 {
        return x;
    }
    let zero = <T as Element>::zero();
    for step in 0..n {
        let i = if upper { n - 1 - step } else { step };
        // Rows already solved sit after row i (upper) or before it (lower).
        let (solved, row_i) = if upper {
            let (head, tail) = x.split_at_mut((i + 1) * k);
            (tail as &[T], &mut head[i * k..])
        } else {
            let (head, tail) = x.split_at_mut(i * k);
            (head as &[T], &mut tail[..k])
        };
        let first = if upper { i + 1 } else { 0 };
        for (r, xj) in solved.chunks_exact(k).enumerate() {
            let aij = a[i * n + first + r];
            if aij != zero {
                for (v, &w) in row_i.iter_mut().zip(xj) {
                    *v -= aij * w;
                }
            }
        }
        if !unit {
            let d = a[i * n + i];
            for v in row_i.iter_mut() {
                *v /= d;
            }
        }
    }
    x
}

/// The result of [`lu_factor`].
pub struct LuFactors<T> {
    /// `L` below the diagonal (unit diagonal implied) and `U` on and above it, `m x n`.
    pub lu: Vec<T>,
    /// LAPACK's 1-based row interchanges: row `i` was swapped with row `pivots[i]`.
    pub pivots: Vec<i32>,
    /// 0, or the 1-based position of the first exactly-zero pivot (`U` is singular).
    pub info: i32,
}

/// LU factorisation with partial pivoting of the `m x n` matrix `a` (LAPACK's `getrf`
/// conventions: `P^T A = L U`, the factorisation runs to the end even when `U` is singular).
/// The rank-1 updates of large trailing blocks run in parallel across rows.
pub fn lu_factor<T: LinalgElement>(a: &[T], m: usize, n: usize) -> LuFactors<T> {
    use rayon::prelude::*;
    let mut lu = a.to_vec();
    let k = m.min(n);
    let zero = <T as Element>::zero();
    let mut pivots = Vec::with_capacity(k);
    let mut info = 0i32;
    for j in 0..k {
        let mut p = j;
        let mut best = lu[j * n + j].abs();
        for i in j + 1..m {
            let v = lu[i * n + j].abs();
            if v > best {
                best = v;
                p = i;
            }
        }
        pivots.push((p + 1) as i32);
        if p != j {
            for c in 0..n {
                lu.swap(j * n + c, p * n + c);
            }
        }
        let d = lu[j * n + j];
        if d == zero {
            // The column below is all zeros too: nothing to eliminate.
            if info == 0 {
                info = (j + 1) as i32;
            }
            continue;
        }
        let (head, tail) = lu.split_at_mut((j + 1) * n);
        let pivot_row = &head[j * n + j + 1..(j + 1) * n];
        let eliminate = |row: &mut [T]| {
            let l = row[j] / d;
            row[j] = l;
            if l != zero {
                for (v, &u) in row[j + 1..].iter_mut().zip(pivot_row) {
                    *v -= l * u;
                }
            }
        };
        if (m - j - 1) * (n - j) >= 1 << 16 {
            tail.par_chunks_mut(n).for_each(eliminate);
        } else {
            tail.chunks_mut(n).for_each(eliminate);
        }
    }
    LuFactors { lu, pivots, info }
}

/// The row permutation encoded by LAPACK-style `pivots` on `m` rows: `perm[i]` is the row of
/// `A` that ends up in row `i` of `P^T A`.
pub fn pivots_to_permutation(pivots: &[i32], m: usize) -> Vec<usize> {
    let mut perm: Vec<usize> = (0..m).collect();
    for (i, &p) in pivots.iter().enumerate() {
        perm.swap(i, (p - 1) as usize);
    }
    perm
}

#[cfg(test)]
mod tests {
    use super::*;

    fn matmul(a: &[f64], b: &[f64], m: usize, k: usize, n: usize) -> Vec<f64> {
        let mut o = vec![0.0; m * n];
        for i in 0..m {
            for p in 0..k {
                for j in 0..n {
                    o[i * n + j] += a[i * k + p] * b[p * n + j];
                }
            }
        }
        o
    }

    fn close(a: &[f64], b: &[f64]) -> bool {
        a.len() == b.len() && a.iter().zip(b).all(|(x, y)| (x - y).abs() < 1e-9)
    }

    #[test]
    fn qr_reconstructs_including_zero_column() {
        let a = [1.0, 0.0, 2.0, 3.0, 0.0, -1.0, 4.0, 0.0, 0.5, 2.0, 0.0, 1.0];
        for complete in [false, true] {
            let (q, r) = qr(&a, 4, 3, complete, true);
            let qc = if complete { 4 } else { 3 };
            assert!(close(&matmul(&q, &r, 4, qc, 3), &a));
        }
    }

    #[test]
    fn cholesky_and_errors() {
        let a = [4.0, 2.0, 2.0, 3.0];
        let l = cholesky(&a, 2, false).unwrap();
        let lt = [l[0], l[2], l[1], l[3]];
        assert!(close(&matmul(&l, &lt, 2, 2, 2), &a));
        assert_eq!(
            cholesky(&[1.0, 2.0, 2.0, 1.0], 2, false),
            Err(DecompError::NotPositiveDefinite(2))
        );
        assert_eq!(inv(&[1.0, 2.0, 2.0, 4.0], 2), Err(DecompError::Singular(2)));
    }

    #[test]
    fn svd_full_is_orthogonal() {
        let a = [1.0, 2.0, 3.0, 4.0, 5.0, 6.5];
        let d = svd(&a, 3, 2, true, true).unwrap();
        let mut ut = vec![0.0; 9];
        for i in 0..3 {
            for j in 0..3 {
                ut[j * 3 + i] = d.u[i * 3 + j];
            }
        }
        let eye = matmul(&ut, &d.u, 3, 3, 3);
        assert!(close(&eye, &identity::<f64>(3)));
        assert!(d.s[0] >= d.s[1]);
    }
    #[test]
    fn lu_reconstructs_with_pivoting() {
        let a = [0.0, 2.0, 1.0, 4.0, 1.0, 3.0, 2.0, 5.0, 7.0];
        let f = lu_factor(&a, 3, 3);
        assert_eq!(f.info, 0);
        let perm = pivots_to_permutation(&f.pivots, 3);
        let (mut l, mut u) = (vec![0.0; 9], vec![0.0; 9]);
        for i in 0..3 {
            for j in 0..3 {
                if j < i {
                    l[i * 3 + j] = f.lu[i * 3 + j];
                } else {
                    u[i * 3 + j] = f.lu[i * 3 + j];
                }
            }
            l[i * 3 + i] = 1.0;
        }
        let lu = matmul(&l, &u, 3, 3, 3);
        let pa: Vec<f64> = perm
            .iter()
            .flat_map(|&r| a[r * 3..r * 3 + 3].to_vec())
            .collect();
        assert!(close(&lu, &pa));
        let singular = lu_factor(&[1.0, 2.0, 2.0, 4.0], 2, 2);
        assert_eq!(singular.info, 2);
    }

    #[test]
    fn triangular_solves_both_triangles() {
        let l = [2.0, 0.0, 1.0, 4.0];
        let x = solve_triangular(&l, 2, &[2.0, 9.0], 1, false, false);
        assert!(close(&x, &[1.0, 2.0]));
        let u = [2.0, 1.0, 9.0, 4.0]; // the 9 below the diagonal is never read
        let x = solve_triangular(&u, 2, &[4.0, 8.0], 1, true, false);
        assert!(close(&x, &[1.0, 2.0]));
        let x = solve_triangular(&u, 2, &[4.0, 8.0], 1, true, true);
        assert!(close(&x, &[-4.0, 8.0]));
    }
}
