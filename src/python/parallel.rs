//! `set_num_threads` / `get_num_threads`: the size of the pool CPU kernels run on.

use pyo3::prelude::*;

/// `set_num_threads(n)`: use `n` threads for CPU kernels.
#[pyfunction]
fn set_num_threads(n: i64) -> PyResult<()> {
    if n <= 0 {
        return Err(
            crate::Error::Runtime("set_num_threads expects a positive integer".into()).into(),
        );
    }
    Ok(crate::parallel::set_num_threads(n as usize)?)
}

/// `get_num_threads()`: threads used for CPU kernels (default: one per core).
#[pyfunction]
fn get_num_threads() -> usize {
    crate::parallel::get_num_threads()
}

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(set_num_threads, m)?)?;
    m.add_function(wrap_pyfunction!(get_num_threads, m)?)?;
    Ok(())
}
