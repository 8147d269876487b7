//! `ferrotorch.Generator`, seeding functions and the random sampling functions/methods.
//! Argument conversion only; sampling lives in `crate::random`.

use super::creation::{check_device, check_device_or, finish_on, number, opt_dtype, shape_from};
use super::run;
use super::tensor::PyTensor;
use crate::random::{self, Generator, Param};
use crate::{DType, Device, Scalar, Tensor};
use pyo3::exceptions::{PyRuntimeError, PyTypeError};
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyDict, PyInt, PyTuple};

type Obj<'a, 'py> = Option<&'a Bound<'py, PyAny>>;

/// `ferrotorch.Generator(device='cpu')`: a seeded random number generator.
#[pyclass(name = "Generator", module = "ferrotorch")]
pub struct PyGenerator {
    pub inner: Generator,
}

/// Seeds as PyTorch takes them: any integer in [-2^63, 2^64) (negatives wrap).
fn extract_seed(seed: &Bound<'_, PyAny>) -> PyResult<u64> {
    if !seed.is_instance_of::<PyInt>() {
        return Err(PyTypeError::new_err(format!(
            "manual_seed expected an int, got {}",
            seed.get_type().name()?
        )));
    }
    if let Ok(v) = seed.extract::<u64>() {
        return Ok(v);
    }
    if let Ok(v) = seed.extract::<i64>() {
        return Ok(v as u64);
    }
    Err(PyRuntimeError::new_err(
        "Overflow when unpacking long: seeds must be in [-0x8000_0000_0000_0000, 0xffff_ffff_ffff_ffff]",
    ))
}

fn state_tensor(g: &Generator) -> PyTensor {
    let bytes = g.get_state();
    let n = bytes.len();
    Tensor::from_vec(bytes, &[n])
        .expect("state length matches its shape")
        .into()
}

fn set_state_from(g: &Generator, state: &Bound<'_, PyAny>) -> PyResult<()> {
    let t = state.cast::<PyTensor>().map_err(|_| {
        PyTypeError::new_err("expected a ferrotorch.ByteTensor (uint8 tensor) as the RNG state")
    })?;
    let t = t.borrow().inner.clone();
    if t.dtype() != DType::U8 {
        return Err(PyTypeError::new_err(format!(
            "expected a ferrotorch.ByteTensor, but got ferrotorch.{}Tensor",
            t.dtype().torch_name()
        )));
    }
    Ok(g.set_state(&t.to_vec::<u8>()?)?)
}

#[pymethods]
impl PyGenerator {
    #[new]
    #[pyo3(signature = (device=None))]
    fn py_new(device: Obj<'_, '_>) -> PyResult<Self> {
        check_device(device)?;
        Ok(PyGenerator {
            inner: Generator::default(),
        })
    }
    /// Seed the generator and return it.
    fn manual_seed<'py>(
        slf: Bound<'py, Self>,
        seed: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, Self>> {
        let s = extract_seed(seed)?;
        slf.borrow().inner.manual_seed(s);
        Ok(slf)
    }
    /// Reseed from OS entropy; returns the new seed.
    fn seed(&self) -> u64 {
        self.inner.seed()
    }
    fn initial_seed(&self) -> u64 {
        self.inner.initial_seed()
    }
    /// The state as a uint8 tensor (restore it with `set_state`).
    fn get_state(&self) -> PyTensor {
        state_tensor(&self.inner)
    }
    fn set_state<'py>(
        slf: Bound<'py, Self>,
        new_state: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, Self>> {
        set_state_from(&slf.borrow().inner, new_state)?;
        Ok(slf)
    }
    #[getter]
    fn device(&self) -> super::PyDevice {
        super::PyDevice(Device::Cpu)
    }
    fn __repr__(&self) -> String {
        "<ferrotorch.Generator object (cpu)>".into()
    }
}

static DEFAULT: PyOnceLock<Py<PyGenerator>> = PyOnceLock::new();

fn default_generator(py: Python<'_>) -> PyResult<Py<PyGenerator>> {
    Ok(DEFAULT
        .get_or_try_init(py, || {
            Py::new(
                py,
                PyGenerator {
                    inner: Generator::default_generator(),
                },
            )
        })?
        .clone_ref(py))
}

/// `manual_seed(seed)`: seed the default generator and return it.
#[pyfunction]
fn manual_seed(py: Python<'_>, seed: &Bound<'_, PyAny>) -> PyResult<Py<PyGenerator>> {
    // torch.manual_seed accepts anything int() accepts.
    let seed = if seed.is_instance_of::<PyInt>() {
        seed.clone()
    } else {
        seed.call_method0("__int__")?
    };
    random::manual_seed(extract_seed(&seed)?);
    default_generator(py)
}

#[pyfunction]
fn seed() -> u64 {
    Generator::default_generator().seed()
}

#[pyfunction]
fn initial_seed() -> u64 {
    Generator::default_generator().initial_seed()
}

#[pyfunction]
fn get_rng_state() -> PyTensor {
    state_tensor(&Generator::default_generator())
}

#[pyfunction]
fn set_rng_state(new_state: &Bound<'_, PyAny>) -> PyResult<()> {
    set_state_from(&Generator::default_generator(), new_state)
}

fn gen_of(g: &Option<PyRef<'_, PyGenerator>>) -> Option<Generator> {
    g.as_ref().map(|g| g.inner.clone())
}

fn numel_of(shape: &[i64]) -> usize {
    shape
        .iter()
        .fold(1usize, |a, &s| a.saturating_mul(s.max(0) as usize))
}

macro_rules! float_factory {
    ($( $name:ident, $pyname:literal => $f:path; )*) => {
        $(
            #[pyfunction]
            #[pyo3(name = $pyname)]
            #[pyo3(signature = (*args, generator=None, out=None, dtype=None, layout=None,
                                device=None, requires_grad=false, pin_memory=false, size=None))]
            #[allow(clippy::too_many_arguments)]
            fn $name(
                py: Python<'_>,
                args: &Bound<'_, PyTuple>,
                generator: Option<PyRef<'_, PyGenerator>>,
                out: Obj<'_, '_>,
                dtype: Obj<'_, '_>,
                layout: Obj<'_, '_>,
                device: Obj<'_, '_>,
                requires_grad: bool,
                pin_memory: bool,
                size: Obj<'_, '_>,
            ) -> PyResult<PyTensor> {
                let _ = (layout, pin_memory);
                let target = check_device(device)?;
                let shape = shape_from(args, size)?;
                let dtype = opt_dtype(dtype)?.unwrap_or(crate::default_dtype());
                let g = gen_of(&generator);
                let t = run(py, numel_of(&shape), || $f(&shape, dtype, target, g.as_ref()))?;
                write_out(out, finish_on(t, target, requires_grad)?)
            }
        )*
    };
}

float_factory! {
    rand_fn, "rand" => random::rand_on;
    randn_fn, "randn" => random::randn_on;
}

fn write_out(out: Obj<'_, '_>, t: PyTensor) -> PyResult<PyTensor> {
    match out {
        Some(o) if !o.is_none() => {
            let o = o.cast::<PyTensor>()?.borrow().inner.clone();
            if o.shape() != t.inner.shape() {
                return Err(crate::Error::Runtime(format!(
                    "out= tensor has shape {:?} but the result has shape {:?} (resizing is not supported)",
                    o.shape(),
                    t.inner.shape()
                ))
                .into());
            }
            o.copy_(&t.inner)?;
            Ok(o.into())
        }
        _ => Ok(t),
    }
}

fn int_arg(obj: &Bound<'_, PyAny>, what: &str) -> PyResult<i64> {
    match number(obj, what)? {
        Scalar::Float(f) => Ok(f as i64),
        s => Ok(s.to_i64()),
    }
}

/// `randint(low=0, high, size)`: `randint(high, size)` or `randint(low, high, size)`.
#[pyfunction]
#[pyo3(signature = (*args, size=None, low=None, high=None, generator=None, out=None,
                    dtype=None, layout=None, device=None, requires_grad=false,
                    pin_memory=false))]
#[allow(clippy::too_many_arguments)]
fn randint(
    py: Python<'_>,
    args: &Bound<'_, PyTuple>,
    size: Obj<'_, '_>,
    low: Obj<'_, '_>,
    high: Obj<'_, '_>,
    generator: Option<PyRef<'_, PyGenerator>>,
    out: Obj<'_, '_>,
    dtype: Obj<'_, '_>,
    layout: Obj<'_, '_>,
    device: Obj<'_, '_>,
    requires_grad: bool,
    pin_memory: bool,
) -> PyResult<PyTensor> {
    let _ = (layout, pin_memory);
    let target = check_device(device)?;
    let mut pos: Vec<Bound<'_, PyAny>> = args.iter().collect();
    let size_obj = match size {
        Some(s) if !s.is_none() => s.clone(),
        _ => pos
            .pop()
            .ok_or_else(|| PyTypeError::new_err("randint() missing required argument 'size'"))?,
    };
    let shape = super::convert::extract_i64_seq(&size_obj)?;
    let (lo, hi) = match (pos.len(), low, high) {
        (2, None, None) => (int_arg(&pos[0], "low")?, int_arg(&pos[1], "high")?),
        (1, l, None) => (
            l.map(|l| int_arg(l, "low")).transpose()?.unwrap_or(0),
            int_arg(&pos[0], "high")?,
        ),
        (0, l, Some(h)) => (
            l.map(|l| int_arg(l, "low")).transpose()?.unwrap_or(0),
            int_arg(h, "high")?,
        ),
        _ => {
            return Err(PyTypeError::new_err(
                "randint() expects (high, size) or (low, high, size)",
            ))
        }
    };
    let dtype = opt_dtype(dtype)?.unwrap_or(DType::I64);
    let g = gen_of(&generator);
    let t = run(py, numel_of(&shape), || {
        random::randint(lo, hi, &shape, dtype, g.as_ref())
    })?;
    write_out(out, finish_on(t, target, requires_grad)?)
}

#[pyfunction]
#[pyo3(signature = (n, *, generator=None, out=None, dtype=None, layout=None, device=None,
                    requires_grad=false, pin_memory=false))]
#[allow(clippy::too_many_arguments)]
fn randperm(
    py: Python<'_>,
    n: &Bound<'_, PyAny>,
    generator: Option<PyRef<'_, PyGenerator>>,
    out: Obj<'_, '_>,
    dtype: Obj<'_, '_>,
    layout: Obj<'_, '_>,
    device: Obj<'_, '_>,
    requires_grad: bool,
    pin_memory: bool,
) -> PyResult<PyTensor> {
    let _ = (layout, pin_memory);
    let target = check_device(device)?;
    let n = super::convert::extract_index_int(n)?;
    let dtype = opt_dtype(dtype)?.unwrap_or(DType::I64);
    let g = gen_of(&generator);
    let t = run(py, n.max(0) as usize, || {
        random::randperm(n, dtype, g.as_ref())
    })?;
    write_out(out, finish_on(t, target, requires_grad)?)
}

fn param(obj: &Bound<'_, PyAny>, what: &str) -> PyResult<Param> {
    if let Ok(t) = obj.cast::<PyTensor>() {
        return Ok(Param::Tensor(t.borrow().inner.clone()));
    }
    Ok(Param::Number(number(obj, what)?.to_f64()))
}

/// `normal(mean, std, size=None)`: tensor means/stds give elementwise parameters; two
/// numbers need `size`.
#[pyfunction]
#[pyo3(signature = (mean=None, std=None, size=None, *, generator=None, out=None, dtype=None,
                    layout=None, device=None, requires_grad=false, pin_memory=false))]
#[allow(clippy::too_many_arguments)]
fn normal(
    py: Python<'_>,
    mean: Obj<'_, '_>,
    std: Obj<'_, '_>,
    size: Obj<'_, '_>,
    generator: Option<PyRef<'_, PyGenerator>>,
    out: Obj<'_, '_>,
    dtype: Obj<'_, '_>,
    layout: Obj<'_, '_>,
    device: Obj<'_, '_>,
    requires_grad: bool,
    pin_memory: bool,
) -> PyResult<PyTensor> {
    let _ = (layout, pin_memory);
    let target = check_device(device)?;
    let m = mean
        .map(|m| param(m, "mean"))
        .transpose()?
        .unwrap_or(Param::Number(0.0));
    let s = std
        .map(|s| param(s, "std"))
        .transpose()?
        .unwrap_or(Param::Number(1.0));
    let g = gen_of(&generator);
    let t = match (&m, &s, size) {
        (Param::Number(mv), Param::Number(sv), Some(size)) if !size.is_none() => {
            let shape = super::convert::extract_i64_seq(size)?;
            let dtype = opt_dtype(dtype)?.unwrap_or(crate::default_dtype());
            let (mv, sv) = (*mv, *sv);
            run(py, numel_of(&shape), || {
                random::normal_on(mv, sv, &shape, dtype, target, g.as_ref())
            })?
        }
        (Param::Number(_), Param::Number(_), _) => {
            return Err(PyTypeError::new_err(
                "normal() with a float mean and a float std needs a size argument",
            ))
        }
        _ => {
            if size.is_some_and(|s| !s.is_none()) {
                return Err(PyTypeError::new_err(
                    "normal(): size can only be given when mean and std are numbers",
                ));
            }
            let n = [&m, &s]
                .iter()
                .map(|p| match p {
                    Param::Tensor(t) => t.numel(),
                    Param::Number(_) => 1,
                })
                .max()
                .unwrap_or(1);
            let mut t = run(py, n, || random::normal_tensor(&m, &s, g.as_ref()))?;
            if let Some(d) = opt_dtype(dtype)? {
                t = t.to_dtype(d);
            }
            // Tensor means/stds: the result stays on their device unless `device=` is given.
            if device.is_none_or(|d| d.is_none()) {
                return write_out(out, finish_on(t.clone(), t.device(), requires_grad)?);
            }
            t
        }
    };
    write_out(out, finish_on(t, target, requires_grad)?)
}

macro_rules! like_factory {
    ($( $name:ident => $f:path; )*) => {
        $(
            #[pyfunction]
            #[pyo3(signature = (input, *, generator=None, dtype=None, layout=None, device=None,
                                requires_grad=false, memory_format=None))]
            #[allow(clippy::too_many_arguments)]
            fn $name(
                py: Python<'_>,
                input: PyRef<'_, PyTensor>,
                generator: Option<PyRef<'_, PyGenerator>>,
                dtype: Obj<'_, '_>,
                layout: Obj<'_, '_>,
                device: Obj<'_, '_>,
                requires_grad: bool,
                memory_format: Obj<'_, '_>,
            ) -> PyResult<PyTensor> {
                let _ = (layout, memory_format);
                let target = check_device_or(device, input.inner.device())?;
                let t = &input.inner;
                let shape: Vec<i64> = t.shape().iter().map(|&s| s as i64).collect();
                let dtype = opt_dtype(dtype)?.unwrap_or(t.dtype());
                let g = gen_of(&generator);
                let r = run(py, t.numel(), || $f(&shape, dtype, target, g.as_ref()))?;
                finish_on(r, target, requires_grad)
            }
        )*
    };
}

like_factory! {
    rand_like => random::rand_on;
    randn_like => random::randn_on;
}

/// `randint_like(input, high)` or `randint_like(input, low, high)`.
#[pyfunction]
#[pyo3(signature = (input, low_or_high=None, high=None, *, low=None, generator=None,
                    dtype=None, layout=None, device=None, requires_grad=false,
                    memory_format=None))]
#[allow(clippy::too_many_arguments)]
fn randint_like(
    py: Python<'_>,
    input: PyRef<'_, PyTensor>,
    low_or_high: Obj<'_, '_>,
    high: Obj<'_, '_>,
    low: Obj<'_, '_>,
    generator: Option<PyRef<'_, PyGenerator>>,
    dtype: Obj<'_, '_>,
    layout: Obj<'_, '_>,
    device: Obj<'_, '_>,
    requires_grad: bool,
    memory_format: Obj<'_, '_>,
) -> PyResult<PyTensor> {
    let _ = (layout, memory_format);
    let target = check_device_or(device, input.inner.device())?;
    let (lo, hi) = match (low_or_high, high) {
        (Some(a), Some(b)) => (int_arg(a, "low")?, int_arg(b, "high")?),
        (Some(a), None) => (
            low.map(|l| int_arg(l, "low")).transpose()?.unwrap_or(0),
            int_arg(a, "high")?,
        ),
        (None, Some(b)) => (
            low.map(|l| int_arg(l, "low")).transpose()?.unwrap_or(0),
            int_arg(b, "high")?,
        ),
        (None, None) => {
            return Err(PyTypeError::new_err(
                "randint_like() missing required argument 'high'",
            ))
        }
    };
    let t = &input.inner;
    let shape: Vec<i64> = t.shape().iter().map(|&s| s as i64).collect();
    let dtype = opt_dtype(dtype)?.unwrap_or(t.dtype());
    let g = gen_of(&generator);
    let r = run(py, t.numel(), || {
        random::randint(lo, hi, &shape, dtype, g.as_ref())
    })?;
    finish_on(r, target, requires_grad)
}

fn f64_arg(obj: &Bound<'_, PyAny>, what: &str) -> PyResult<f64> {
    Ok(number(obj, what)?.to_f64())
}

#[pymethods]
impl PyTensor {
    #[pyo3(signature = (from_=0.0, to=1.0, *, generator=None))]
    fn uniform_<'py>(
        slf: Bound<'py, Self>,
        from_: f64,
        to: f64,
        generator: Option<PyRef<'py, PyGenerator>>,
    ) -> PyResult<Bound<'py, Self>> {
        let t = slf.borrow().inner.clone();
        let g = gen_of(&generator);
        run(slf.py(), t.numel(), || t.uniform_(from_, to, g.as_ref()))?;
        Ok(slf)
    }
    #[pyo3(signature = (mean=0.0, std=1.0, *, generator=None))]
    fn normal_<'py>(
        slf: Bound<'py, Self>,
        mean: f64,
        std: f64,
        generator: Option<PyRef<'py, PyGenerator>>,
    ) -> PyResult<Bound<'py, Self>> {
        let t = slf.borrow().inner.clone();
        let g = gen_of(&generator);
        run(slf.py(), t.numel(), || t.normal_(mean, std, g.as_ref()))?;
        Ok(slf)
    }
    #[pyo3(signature = (mean=1.0, std=2.0, *, generator=None))]
    fn log_normal_<'py>(
        slf: Bound<'py, Self>,
        mean: f64,
        std: f64,
        generator: Option<PyRef<'py, PyGenerator>>,
    ) -> PyResult<Bound<'py, Self>> {
        let t = slf.borrow().inner.clone();
        let g = gen_of(&generator);
        run(slf.py(), t.numel(), || t.log_normal_(mean, std, g.as_ref()))?;
        Ok(slf)
    }
    #[pyo3(signature = (lambd=1.0, *, generator=None))]
    fn exponential_<'py>(
        slf: Bound<'py, Self>,
        lambd: f64,
        generator: Option<PyRef<'py, PyGenerator>>,
    ) -> PyResult<Bound<'py, Self>> {
        let t = slf.borrow().inner.clone();
        let g = gen_of(&generator);
        run(slf.py(), t.numel(), || t.exponential_(lambd, g.as_ref()))?;
        Ok(slf)
    }
    #[pyo3(signature = (median=0.0, sigma=1.0, *, generator=None))]
    fn cauchy_<'py>(
        slf: Bound<'py, Self>,
        median: f64,
        sigma: f64,
        generator: Option<PyRef<'py, PyGenerator>>,
    ) -> PyResult<Bound<'py, Self>> {
        let t = slf.borrow().inner.clone();
        let g = gen_of(&generator);
        run(slf.py(), t.numel(), || t.cauchy_(median, sigma, g.as_ref()))?;
        Ok(slf)
    }
    #[pyo3(signature = (p, *, generator=None))]
    fn geometric_<'py>(
        slf: Bound<'py, Self>,
        p: f64,
        generator: Option<PyRef<'py, PyGenerator>>,
    ) -> PyResult<Bound<'py, Self>> {
        let t = slf.borrow().inner.clone();
        let g = gen_of(&generator);
        run(slf.py(), t.numel(), || t.geometric_(p, g.as_ref()))?;
        Ok(slf)
    }
    /// `bernoulli_(p=0.5)` with a number or a tensor of probabilities.
    #[pyo3(signature = (p=None, *, generator=None))]
    fn bernoulli_<'py>(
        slf: Bound<'py, Self>,
        p: Obj<'_, 'py>,
        generator: Option<PyRef<'py, PyGenerator>>,
    ) -> PyResult<Bound<'py, Self>> {
        let t = slf.borrow().inner.clone();
        let g = gen_of(&generator);
        let p = match p {
            None => Param::Number(0.5),
            Some(p) => param(p, "p")?,
        };
        run(slf.py(), t.numel(), || match &p {
            Param::Number(v) => t.bernoulli_scalar_(*v, g.as_ref()),
            Param::Tensor(pt) => t.bernoulli_tensor_(pt, g.as_ref()),
        })?;
        Ok(slf)
    }
    /// `bernoulli()` (probabilities from this tensor) or `bernoulli(p)`.
    #[pyo3(signature = (p=None, *, generator=None))]
    fn bernoulli(
        &self,
        py: Python<'_>,
        p: Obj<'_, '_>,
        generator: Option<PyRef<'_, PyGenerator>>,
    ) -> PyResult<PyTensor> {
        let t = &self.inner;
        let g = gen_of(&generator);
        let p = p
            .filter(|p| !p.is_none())
            .map(|p| f64_arg(p, "p"))
            .transpose()?;
        Ok(run(py, t.numel(), || random::bernoulli(t, p, g.as_ref()))?.into())
    }
    #[pyo3(signature = (num_samples, replacement=false, *, generator=None))]
    fn multinomial(
        &self,
        py: Python<'_>,
        num_samples: i64,
        replacement: bool,
        generator: Option<PyRef<'_, PyGenerator>>,
    ) -> PyResult<PyTensor> {
        let t = &self.inner;
        let g = gen_of(&generator);
        Ok(run(py, t.numel(), || {
            random::multinomial(t, num_samples, replacement, g.as_ref())
        })?
        .into())
    }
    /// `random_()`, `random_(to)`, `random_(from, to)`; `to=None` means the dtype's max.
    #[pyo3(signature = (*args, generator=None, **kwargs))]
    fn random_<'py>(
        slf: Bound<'py, Self>,
        args: &Bound<'py, PyTuple>,
        generator: Option<PyRef<'py, PyGenerator>>,
        kwargs: Option<&Bound<'py, PyDict>>,
    ) -> PyResult<Bound<'py, Self>> {
        let opt_int = |o: Option<Bound<'py, PyAny>>| -> PyResult<Option<i64>> {
            match o {
                Some(o) if !o.is_none() => Ok(Some(int_arg(&o, "random_ bound")?)),
                _ => Ok(None),
            }
        };
        let mut from = None;
        let mut to = None;
        if let Some(kw) = kwargs {
            for (k, v) in kw.iter() {
                match k.extract::<String>()?.as_str() {
                    "from" | "from_" => from = opt_int(Some(v))?,
                    "to" => to = opt_int(Some(v))?,
                    k => {
                        return Err(PyTypeError::new_err(format!(
                            "random_() got an unexpected keyword argument '{k}'"
                        )))
                    }
                }
            }
        }
        match args.len() {
            0 => {}
            1 => to = opt_int(Some(args.get_item(0)?))?,
            2 => {
                from = opt_int(Some(args.get_item(0)?))?;
                to = opt_int(Some(args.get_item(1)?))?;
            }
            _ => return Err(PyTypeError::new_err("random_() takes at most 2 arguments")),
        }
        let t = slf.borrow().inner.clone();
        let g = gen_of(&generator);
        let from = from.unwrap_or(0);
        run(slf.py(), t.numel(), || t.random_(from, to, g.as_ref()))?;
        Ok(slf)
    }
}

/// `bernoulli(input, p=None, *, generator=None)`.
#[pyfunction]
#[pyo3(signature = (input, p=None, *, generator=None, out=None))]
fn bernoulli(
    py: Python<'_>,
    input: PyRef<'_, PyTensor>,
    p: Obj<'_, '_>,
    generator: Option<PyRef<'_, PyGenerator>>,
    out: Obj<'_, '_>,
) -> PyResult<PyTensor> {
    let r = input.bernoulli(py, p, generator)?;
    write_out(out, r)
}

/// `_standard_gamma_raw(alpha, *, generator=None)`: Gamma(alpha, 1) samples without autograd
/// (the Python layer adds the implicit-reparameterisation gradient).
#[pyfunction]
#[pyo3(signature = (alpha, *, generator=None))]
fn _standard_gamma_raw(
    py: Python<'_>,
    alpha: PyRef<'_, PyTensor>,
    generator: Option<PyRef<'_, PyGenerator>>,
) -> PyResult<PyTensor> {
    let (a, g) = (&alpha.inner, gen_of(&generator));
    Ok(run(py, a.numel(), || random::standard_gamma(a, g.as_ref()))?.into())
}

/// `_standard_gamma_grad(alpha, samples)`: `d sample / d alpha` at a fixed quantile.
#[pyfunction]
fn _standard_gamma_grad(
    py: Python<'_>,
    alpha: PyRef<'_, PyTensor>,
    samples: PyRef<'_, PyTensor>,
) -> PyResult<PyTensor> {
    let (a, x) = (&alpha.inner, &samples.inner);
    Ok(run(py, a.numel(), || a.standard_gamma_grad(x))?.into())
}

/// `poisson(input, generator=None)`.
#[pyfunction]
#[pyo3(signature = (input, generator=None))]
fn poisson(
    py: Python<'_>,
    input: PyRef<'_, PyTensor>,
    generator: Option<PyRef<'_, PyGenerator>>,
) -> PyResult<PyTensor> {
    let (r, g) = (&input.inner, gen_of(&generator));
    Ok(run(py, r.numel(), || random::poisson(r, g.as_ref()))?.into())
}

#[pyfunction]
#[pyo3(signature = (input, num_samples, replacement=false, *, generator=None, out=None))]
fn multinomial(
    py: Python<'_>,
    input: PyRef<'_, PyTensor>,
    num_samples: i64,
    replacement: bool,
    generator: Option<PyRef<'_, PyGenerator>>,
    out: Obj<'_, '_>,
) -> PyResult<PyTensor> {
    let r = input.multinomial(py, num_samples, replacement, generator)?;
    write_out(out, r)
}

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyGenerator>()?;
    m.add("default_generator", default_generator(m.py())?)?;
    m.add_function(wrap_pyfunction!(manual_seed, m)?)?;
    m.add_function(wrap_pyfunction!(seed, m)?)?;
    m.add_function(wrap_pyfunction!(initial_seed, m)?)?;
    m.add_function(wrap_pyfunction!(get_rng_state, m)?)?;
    m.add_function(wrap_pyfunction!(set_rng_state, m)?)?;
    m.add_function(wrap_pyfunction!(rand_fn, m)?)?;
    m.add_function(wrap_pyfunction!(randn_fn, m)?)?;
    m.add_function(wrap_pyfunction!(randint, m)?)?;
    m.add_function(wrap_pyfunction!(randperm, m)?)?;
    m.add_function(wrap_pyfunction!(normal, m)?)?;
    m.add_function(wrap_pyfunction!(rand_like, m)?)?;
    m.add_function(wrap_pyfunction!(randn_like, m)?)?;
    m.add_function(wrap_pyfunction!(randint_like, m)?)?;
    m.add_function(wrap_pyfunction!(bernoulli, m)?)?;
    m.add_function(wrap_pyfunction!(multinomial, m)?)?;
    m.add_function(wrap_pyfunction!(_standard_gamma_raw, m)?)?;
    m.add_function(wrap_pyfunction!(_standard_gamma_grad, m)?)?;
    m.add_function(wrap_pyfunction!(poisson, m)?)?;
    Ok(())
}
