//! `torch.autograd.graph.saved_tensors_hooks` for the native ops: a Python pack/unpack pair
//! pushed on the Rust per-thread hook stack (see `crate::autograd::saved`).

use super::autograd::py_err_to_error;
use super::tensor::PyTensor;
use crate::autograd::{self, saved::Packed, SavedTensorHooks};
use crate::{Error, Tensor};
use pyo3::prelude::*;
use std::sync::Arc;

struct PythonHooks {
    pack: Py<PyAny>,
    unpack: Py<PyAny>,
}

impl SavedTensorHooks for PythonHooks {
    fn pack(&self, t: &Tensor) -> crate::Result<Packed> {
        Python::attach(|py| {
            let arg =
                Bound::new(py, PyTensor::from(t.clone())).map_err(|e| py_err_to_error(py, e))?;
            let packed = self
                .pack
                .call1(py, (arg,))
                .map_err(|e| py_err_to_error(py, e))?;
            Ok(Box::new(packed) as Packed)
        })
    }

    fn unpack(&self, packed: &Packed) -> crate::Result<Tensor> {
        let Some(obj) = packed.downcast_ref::<Py<PyAny>>() else {
            return Err(Error::Runtime(
                "saved tensor was packed by other hooks".into(),
            ));
        };
        Python::attach(|py| {
            let r = self
                .unpack
                .call1(py, (obj.clone_ref(py),))
                .map_err(|e| py_err_to_error(py, e))?;
            match r.bind(py).cast::<PyTensor>() {
                Ok(t) => Ok(t.borrow().inner.clone()),
                Err(_) => Err(Error::Type(format!(
                    "Output of saved tensor unpack_hook expected to be a Tensor but got result of type {}",
                    r.bind(py)
                        .get_type()
                        .name()
                        .map(|n| n.to_string())
                        .unwrap_or_default()
                ))),
            }
        })
    }

    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

/// Push `(pack_hook, unpack_hook)` for this thread (entering `saved_tensors_hooks`).
#[pyfunction]
fn _push_saved_tensors_hooks(pack_hook: Py<PyAny>, unpack_hook: Py<PyAny>) {
    autograd::push_saved_tensors_hooks(Arc::new(PythonHooks {
        pack: pack_hook,
        unpack: unpack_hook,
    }));
}

/// This thread's innermost `(pack_hook, unpack_hook)`, or None (what `autograd.Function`
/// packs its saved tensors with).
#[pyfunction]
fn _current_saved_tensors_hooks(py: Python<'_>) -> Option<(Py<PyAny>, Py<PyAny>)> {
    let hooks = autograd::current_saved_tensors_hooks()?;
    let ours = hooks.as_any().downcast_ref::<PythonHooks>()?;
    Some((ours.pack.clone_ref(py), ours.unpack.clone_ref(py)))
}

/// Pop this thread's innermost pair (leaving `saved_tensors_hooks`).
#[pyfunction]
fn _pop_saved_tensors_hooks() -> bool {
    autograd::pop_saved_tensors_hooks()
}

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(_push_saved_tensors_hooks, m)?)?;
    m.add_function(wrap_pyfunction!(_pop_saved_tensors_hooks, m)?)?;
    m.add_function(wrap_pyfunction!(_current_saved_tensors_hooks, m)?)?;
    Ok(())
}
