//! Bindings for products (`@`, `mm`, `bmm`, `einsum`, ...) and `ferrotorch.linalg`. The
//! module-level functions are private (`_C._linalg_*`); `python/ferrotorch/linalg.py` gives them
//! PyTorch's signatures and named-tuple results.

use super::convert::{extract_dtype, extract_scalar};
use super::run;
use super::tensor::{tensor_from_data, PyTensor};
use crate::tensor::MatrixNormOrd;
use crate::{Scalar, Tensor};
use pyo3::exceptions::{PyRuntimeError, PyTypeError};
use pyo3::prelude::*;
use pyo3::types::PyList;

fn scalar_arg(obj: Option<&Bound<'_, PyAny>>, name: &str) -> PyResult<Scalar> {
    match obj {
        None => Ok(Scalar::Int(1)),
        Some(o) => extract_scalar(o)
            .ok_or_else(|| PyTypeError::new_err(format!("argument '{name}' must be a Number"))),
    }
}

/// A tensor operand for `@`: tensors, and lists/arrays (converted); otherwise `None` so
/// Python can try the reflected operator.
fn matmul_operand(obj: &Bound<'_, PyAny>) -> PyResult<Option<Tensor>> {
    if let Ok(t) = obj.cast::<PyTensor>() {
        return Ok(Some(t.borrow().inner.clone()));
    }
    if obj.is_instance_of::<PyList>() || super::numpy_interop::is_ndarray(obj) {
        return Ok(Some(tensor_from_data(obj, None)?));
    }
    Ok(None)
}

fn work(ts: &[&Tensor]) -> usize {
    ts.iter().map(|t| t.numel()).sum()
}

#[pymethods]
impl PyTensor {
    fn __matmul__(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        let Some(b) = matmul_operand(other)? else {
            return Ok(py.NotImplemented());
        };
        let a = &self.inner;
        let r = run(py, work(&[a, &b]), || a.matmul(&b))?;
        Ok(Py::new(py, PyTensor::from(r))?.into_any())
    }
    fn __rmatmul__(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        let Some(a) = matmul_operand(other)? else {
            return Ok(py.NotImplemented());
        };
        let b = &self.inner;
        let r = run(py, work(&[&a, b]), || a.matmul(b))?;
        Ok(Py::new(py, PyTensor::from(r))?.into_any())
    }
    /// Matrix product with PyTorch's `matmul` rules (batched, broadcasting, 1-d promotion).
    fn matmul(&self, py: Python<'_>, other: PyRef<'_, PyTensor>) -> PyResult<PyTensor> {
        let (a, b) = (&self.inner, &other.inner);
        Ok(run(py, work(&[a, b]), || a.matmul(b))?.into())
    }
    fn mm(&self, py: Python<'_>, mat2: PyRef<'_, PyTensor>) -> PyResult<PyTensor> {
        let (a, b) = (&self.inner, &mat2.inner);
        Ok(run(py, work(&[a, b]), || a.mm(b))?.into())
    }
    fn bmm(&self, py: Python<'_>, mat2: PyRef<'_, PyTensor>) -> PyResult<PyTensor> {
        let (a, b) = (&self.inner, &mat2.inner);
        Ok(run(py, work(&[a, b]), || a.bmm(b))?.into())
    }
    fn mv(&self, py: Python<'_>, vec: PyRef<'_, PyTensor>) -> PyResult<PyTensor> {
        let (a, b) = (&self.inner, &vec.inner);
        Ok(run(py, work(&[a, b]), || a.mv(b))?.into())
    }
    fn dot(&self, py: Python<'_>, tensor: PyRef<'_, PyTensor>) -> PyResult<PyTensor> {
        let (a, b) = (&self.inner, &tensor.inner);
        Ok(run(py, work(&[a, b]), || a.dot(b))?.into())
    }
    fn vdot(&self, py: Python<'_>, other: PyRef<'_, PyTensor>) -> PyResult<PyTensor> {
        let (a, b) = (&self.inner, &other.inner);
        Ok(run(py, work(&[a, b]), || a.vdot(b))?.into())
    }
    fn inner(&self, py: Python<'_>, other: PyRef<'_, PyTensor>) -> PyResult<PyTensor> {
        let (a, b) = (&self.inner, &other.inner);
        Ok(run(py, work(&[a, b]), || a.inner(b))?.into())
    }
    fn outer(&self, py: Python<'_>, vec2: PyRef<'_, PyTensor>) -> PyResult<PyTensor> {
        let (a, b) = (&self.inner, &vec2.inner);
        Ok(run(py, work(&[a, b]), || a.outer(b))?.into())
    }
    fn ger(&self, py: Python<'_>, vec2: PyRef<'_, PyTensor>) -> PyResult<PyTensor> {
        self.outer(py, vec2)
    }
    #[pyo3(signature = (mat1, mat2, *, beta=None, alpha=None))]
    fn addmm(
        &self,
        py: Python<'_>,
        mat1: PyRef<'_, PyTensor>,
        mat2: PyRef<'_, PyTensor>,
        beta: Option<&Bound<'_, PyAny>>,
        alpha: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<PyTensor> {
        let (beta, alpha) = (scalar_arg(beta, "beta")?, scalar_arg(alpha, "alpha")?);
        let (i, a, b) = (&self.inner, &mat1.inner, &mat2.inner);
        Ok(run(py, work(&[i, a, b]), || i.addmm(a, b, beta, alpha))?.into())
    }
    #[pyo3(signature = (batch1, batch2, *, beta=None, alpha=None))]
    fn baddbmm(
        &self,
        py: Python<'_>,
        batch1: PyRef<'_, PyTensor>,
        batch2: PyRef<'_, PyTensor>,
        beta: Option<&Bound<'_, PyAny>>,
        alpha: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<PyTensor> {
        let (beta, alpha) = (scalar_arg(beta, "beta")?, scalar_arg(alpha, "alpha")?);
        let (i, a, b) = (&self.inner, &batch1.inner, &batch2.inner);
        Ok(run(py, work(&[i, a, b]), || i.baddbmm(a, b, beta, alpha))?.into())
    }
    #[pyo3(signature = (mat, vec, *, beta=None, alpha=None))]
    fn addmv(
        &self,
        py: Python<'_>,
        mat: PyRef<'_, PyTensor>,
        vec: PyRef<'_, PyTensor>,
        beta: Option<&Bound<'_, PyAny>>,
        alpha: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<PyTensor> {
        let (beta, alpha) = (scalar_arg(beta, "beta")?, scalar_arg(alpha, "alpha")?);
        let (i, a, b) = (&self.inner, &mat.inner, &vec.inner);
        Ok(run(py, work(&[i, a, b]), || i.addmv(a, b, beta, alpha))?.into())
    }
    fn kron(&self, py: Python<'_>, other: PyRef<'_, PyTensor>) -> PyResult<PyTensor> {
        let (a, b) = (&self.inner, &other.inner);
        Ok(run(py, a.numel() * b.numel(), || a.kron(b))?.into())
    }
    fn trace(&self, py: Python<'_>) -> PyResult<PyTensor> {
        let a = &self.inner;
        Ok(run(py, 0, || a.trace())?.into())
    }
    #[pyo3(signature = (other, dim=None))]
    fn cross(
        &self,
        py: Python<'_>,
        other: PyRef<'_, PyTensor>,
        dim: Option<i64>,
    ) -> PyResult<PyTensor> {
        let (a, b) = (&self.inner, &other.inner);
        Ok(run(py, work(&[a, b]), || a.cross(b, dim))?.into())
    }
    fn inverse(&self, py: Python<'_>) -> PyResult<PyTensor> {
        let a = &self.inner;
        Ok(run(py, a.numel(), || a.linalg_inv())?.into())
    }
    fn det(&self, py: Python<'_>) -> PyResult<PyTensor> {
        let a = &self.inner;
        Ok(run(py, a.numel(), || a.linalg_det())?.into())
    }
    fn logdet(&self, py: Python<'_>) -> PyResult<PyTensor> {
        let a = &self.inner;
        Ok(run(py, a.numel(), || a.logdet())?.into())
    }
    #[pyo3(signature = (upper=false))]
    fn cholesky(&self, py: Python<'_>, upper: bool) -> PyResult<PyTensor> {
        let a = &self.inner;
        Ok(run(py, a.numel(), || a.linalg_cholesky(upper))?.into())
    }
    fn matrix_power(&self, py: Python<'_>, n: i64) -> PyResult<PyTensor> {
        let a = &self.inner;
        Ok(run(py, a.numel(), || a.matrix_power(n))?.into())
    }
    #[pyo3(signature = (rcond=1e-15))]
    fn pinverse(&self, py: Python<'_>, rcond: f64) -> PyResult<PyTensor> {
        let a = &self.inner;
        Ok(run(py, a.numel(), || {
            a.linalg_pinv(Some(0.0), Some(rcond), false)
        })?
        .into())
    }
}

fn tensors(list: &Bound<'_, PyAny>) -> PyResult<Vec<Tensor>> {
    let mut out = Vec::new();
    for item in list.try_iter()? {
        let item = item?;
        let t = item.cast::<PyTensor>().map_err(|_| {
            PyTypeError::new_err(format!(
                "expected a sequence of Tensors, got an element of type {}",
                item.get_type()
                    .name()
                    .map(|n| n.to_string())
                    .unwrap_or_default()
            ))
        })?;
        out.push(t.borrow().inner.clone());
    }
    Ok(out)
}

fn total(ts: &[Tensor]) -> usize {
    ts.iter().map(|t| t.numel()).sum()
}

#[pyfunction]
fn _einsum(py: Python<'_>, equation: &str, operands: &Bound<'_, PyAny>) -> PyResult<PyTensor> {
    let ops = tensors(operands)?;
    Ok(run(py, total(&ops), || Tensor::einsum(equation, &ops))?.into())
}

#[pyfunction]
fn _tensordot(
    py: Python<'_>,
    a: PyRef<'_, PyTensor>,
    b: PyRef<'_, PyTensor>,
    dims_a: Vec<i64>,
    dims_b: Vec<i64>,
) -> PyResult<PyTensor> {
    let (a, b) = (&a.inner, &b.inner);
    Ok(run(py, work(&[a, b]), || a.tensordot(b, &dims_a, &dims_b))?.into())
}

#[pyfunction]
fn _linalg_inv(py: Python<'_>, a: PyRef<'_, PyTensor>) -> PyResult<PyTensor> {
    let a = &a.inner;
    Ok(run(py, a.numel(), || a.linalg_inv())?.into())
}

#[pyfunction]
fn _linalg_det(py: Python<'_>, a: PyRef<'_, PyTensor>) -> PyResult<PyTensor> {
    let a = &a.inner;
    Ok(run(py, a.numel(), || a.linalg_det())?.into())
}

#[pyfunction]
fn _linalg_slogdet(py: Python<'_>, a: PyRef<'_, PyTensor>) -> PyResult<(PyTensor, PyTensor)> {
    let a = &a.inner;
    let (s, l) = run(py, a.numel(), || a.linalg_slogdet())?;
    Ok((s.into(), l.into()))
}

#[pyfunction]
fn _linalg_solve(
    py: Python<'_>,
    a: PyRef<'_, PyTensor>,
    b: PyRef<'_, PyTensor>,
    left: bool,
) -> PyResult<PyTensor> {
    let (a, b) = (&a.inner, &b.inner);
    Ok(run(py, work(&[a, b]), || a.linalg_solve(b, left))?.into())
}

#[pyfunction]
fn _linalg_cholesky(py: Python<'_>, a: PyRef<'_, PyTensor>, upper: bool) -> PyResult<PyTensor> {
    let a = &a.inner;
    Ok(run(py, a.numel(), || a.linalg_cholesky(upper))?.into())
}

#[pyfunction]
fn _linalg_qr(
    py: Python<'_>,
    a: PyRef<'_, PyTensor>,
    mode: &str,
) -> PyResult<(PyTensor, PyTensor)> {
    let a = &a.inner;
    let (q, r) = run(py, a.numel(), || a.linalg_qr(mode))?;
    Ok((q.into(), r.into()))
}

#[pyfunction]
fn _linalg_svd(
    py: Python<'_>,
    a: PyRef<'_, PyTensor>,
    full_matrices: bool,
) -> PyResult<(PyTensor, PyTensor, PyTensor)> {
    let a = &a.inner;
    let (u, s, vh) = run(py, a.numel(), || a.linalg_svd(full_matrices))?;
    Ok((u.into(), s.into(), vh.into()))
}

#[pyfunction]
fn _linalg_svdvals(py: Python<'_>, a: PyRef<'_, PyTensor>) -> PyResult<PyTensor> {
    let a = &a.inner;
    Ok(run(py, a.numel(), || a.linalg_svdvals())?.into())
}

#[pyfunction]
fn _linalg_eigh(
    py: Python<'_>,
    a: PyRef<'_, PyTensor>,
    uplo: &str,
    vectors: bool,
) -> PyResult<(PyTensor, PyTensor)> {
    let a = &a.inner;
    let (w, v) = run(py, a.numel(), || a.linalg_eigh(uplo, vectors))?;
    Ok((w.into(), v.into()))
}

#[pyfunction]
#[pyo3(signature = (a, b, rcond, driver))]
fn _linalg_lstsq(
    py: Python<'_>,
    a: PyRef<'_, PyTensor>,
    b: PyRef<'_, PyTensor>,
    rcond: Option<f64>,
    driver: Option<String>,
) -> PyResult<(PyTensor, PyTensor, PyTensor, PyTensor)> {
    let (a, b) = (&a.inner, &b.inner);
    let r = run(py, work(&[a, b]), || {
        a.linalg_lstsq(b, rcond, driver.as_deref())
    })?;
    Ok((
        r.solution.into(),
        r.residuals.into(),
        r.rank.into(),
        r.singular_values.into(),
    ))
}

#[pyfunction]
#[pyo3(signature = (x, ord, dim, keepdim))]
fn _linalg_vector_norm(
    py: Python<'_>,
    x: PyRef<'_, PyTensor>,
    ord: f64,
    dim: Option<Vec<i64>>,
    keepdim: bool,
) -> PyResult<PyTensor> {
    let x = &x.inner;
    Ok(run(py, x.numel(), || {
        x.linalg_vector_norm(ord, dim.as_deref(), keepdim)
    })?
    .into())
}

#[pyfunction]
fn _linalg_matrix_norm(
    py: Python<'_>,
    a: PyRef<'_, PyTensor>,
    ord: &Bound<'_, PyAny>,
    dim: (i64, i64),
    keepdim: bool,
) -> PyResult<PyTensor> {
    let ord = if let Ok(s) = ord.extract::<String>() {
        match s.as_str() {
            "fro" => MatrixNormOrd::Fro,
            "nuc" => MatrixNormOrd::Nuc,
            _ => {
                return Err(PyRuntimeError::new_err(format!(
                    "linalg.matrix_norm: Order {s} not supported."
                )))
            }
        }
    } else {
        MatrixNormOrd::P(ord.extract::<f64>()?)
    };
    let a = &a.inner;
    Ok(run(py, a.numel(), || a.linalg_matrix_norm(ord, dim, keepdim))?.into())
}

#[pyfunction]
#[pyo3(signature = (a, atol, rtol, hermitian))]
fn _linalg_matrix_rank(
    py: Python<'_>,
    a: PyRef<'_, PyTensor>,
    atol: Option<f64>,
    rtol: Option<f64>,
    hermitian: bool,
) -> PyResult<PyTensor> {
    let a = &a.inner;
    Ok(run(py, a.numel(), || {
        a.linalg_matrix_rank(atol, rtol, hermitian)
    })?
    .into())
}

#[pyfunction]
#[pyo3(signature = (a, atol, rtol, hermitian))]
fn _linalg_pinv(
    py: Python<'_>,
    a: PyRef<'_, PyTensor>,
    atol: Option<f64>,
    rtol: Option<f64>,
    hermitian: bool,
) -> PyResult<PyTensor> {
    let a = &a.inner;
    Ok(run(py, a.numel(), || a.linalg_pinv(atol, rtol, hermitian))?.into())
}

#[pyfunction]
fn _linalg_multi_dot(py: Python<'_>, tensors_: &Bound<'_, PyAny>) -> PyResult<PyTensor> {
    let ts = tensors(tensors_)?;
    Ok(run(py, total(&ts), || Tensor::multi_dot(&ts))?.into())
}

#[pyfunction]
fn _linalg_cross(
    py: Python<'_>,
    a: PyRef<'_, PyTensor>,
    b: PyRef<'_, PyTensor>,
    dim: i64,
) -> PyResult<PyTensor> {
    let (a, b) = (&a.inner, &b.inner);
    Ok(run(py, work(&[a, b]), || a.linalg_cross(b, dim))?.into())
}

#[pyfunction]
fn _linalg_solve_triangular(
    py: Python<'_>,
    a: PyRef<'_, PyTensor>,
    b: PyRef<'_, PyTensor>,
    upper: bool,
    left: bool,
    unitriangular: bool,
) -> PyResult<PyTensor> {
    let (a, b) = (&a.inner, &b.inner);
    Ok(run(py, work(&[a, b]), || {
        a.linalg_solve_triangular(b, upper, left, unitriangular)
    })?
    .into())
}

#[pyfunction]
fn _linalg_lu_factor(
    py: Python<'_>,
    a: PyRef<'_, PyTensor>,
) -> PyResult<(PyTensor, PyTensor, PyTensor)> {
    let a = &a.inner;
    let (lu, piv, info) = run(py, a.numel(), || a.linalg_lu_factor())?;
    Ok((lu.into(), piv.into(), info.into()))
}

#[pyfunction]
fn _linalg_lu(py: Python<'_>, a: PyRef<'_, PyTensor>) -> PyResult<(PyTensor, PyTensor, PyTensor)> {
    let a = &a.inner;
    let (p, l, u) = run(py, a.numel(), || a.linalg_lu())?;
    Ok((p.into(), l.into(), u.into()))
}

#[pyfunction]
fn _lu_pivots_to_permutation(
    pivots: PyRef<'_, PyTensor>,
    m: usize,
    dtype: &Bound<'_, PyAny>,
) -> PyResult<PyTensor> {
    let dt = extract_dtype(dtype)?;
    Ok(Tensor::lu_pivots_to_permutation(&pivots.inner, m, dt)?.into())
}

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(_einsum, m)?)?;
    m.add_function(wrap_pyfunction!(_tensordot, m)?)?;
    m.add_function(wrap_pyfunction!(_linalg_inv, m)?)?;
    m.add_function(wrap_pyfunction!(_linalg_det, m)?)?;
    m.add_function(wrap_pyfunction!(_linalg_slogdet, m)?)?;
    m.add_function(wrap_pyfunction!(_linalg_solve, m)?)?;
    m.add_function(wrap_pyfunction!(_linalg_cholesky, m)?)?;
    m.add_function(wrap_pyfunction!(_linalg_qr, m)?)?;
    m.add_function(wrap_pyfunction!(_linalg_svd, m)?)?;
    m.add_function(wrap_pyfunction!(_linalg_svdvals, m)?)?;
    m.add_function(wrap_pyfunction!(_linalg_eigh, m)?)?;
    m.add_function(wrap_pyfunction!(_linalg_lstsq, m)?)?;
    m.add_function(wrap_pyfunction!(_linalg_vector_norm, m)?)?;
    m.add_function(wrap_pyfunction!(_linalg_matrix_norm, m)?)?;
    m.add_function(wrap_pyfunction!(_linalg_matrix_rank, m)?)?;
    m.add_function(wrap_pyfunction!(_linalg_pinv, m)?)?;
    m.add_function(wrap_pyfunction!(_linalg_multi_dot, m)?)?;
    m.add_function(wrap_pyfunction!(_linalg_cross, m)?)?;
    m.add_function(wrap_pyfunction!(_linalg_solve_triangular, m)?)?;
    m.add_function(wrap_pyfunction!(_linalg_lu_factor, m)?)?;
    m.add_function(wrap_pyfunction!(_linalg_lu, m)?)?;
    m.add_function(wrap_pyfunction!(_lu_pivots_to_permutation, m)?)?;
    Ok(())
}
