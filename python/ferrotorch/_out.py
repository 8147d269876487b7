"""The ``out=`` keyword of PyTorch's functions (``torch.add(a, b, out=c)``...).

One wrapper, :func:`_with_out`, is applied in one place (:func:`_install`) to every public
function that takes ``out=`` in PyTorch.  It computes the result as usual and writes it into
``out`` with PyTorch's rules:

* ``out`` (a tensor, or a tuple of tensors for ops returning several) is returned itself;
* an ``out`` of another shape is resized (with PyTorch's deprecation warning when it had
  elements);
* the result must be castable to ``out``'s dtype (``torch.can_cast``), else
  ``RuntimeError: result type Float can't be cast to the desired output type Long``;
  ops returning several tensors want each ``out`` of exactly the result's dtype;
* factory functions (``arange``, ``zeros``, ``randn``...) and ``sum``-like reductions take
  their dtype from ``out`` when no ``dtype=`` is given, as PyTorch's;
* in grad mode, an input (or ``out``) requiring grad raises PyTorch's autograd error.

With ``out=None`` the wrapper costs one call and one ``is None`` check.
"""

import builtins
import functools
import warnings

from ferrotorch import _C
from ferrotorch._C import Tensor

# Public callables that take ``out=`` in PyTorch 2.x (checked against its schemas/bindings).
TOP_LEVEL = """
abs absolute acos acosh add addbmm alias_copy addcdiv addcmul addmm addmv addr all amax amin aminmax
angle any arange arccos arccosh arcsin arcsinh arctan arctan2 arctanh argmax argmin asin asinh
atan atan2 atanh baddbmm bitwise_and bitwise_left_shift bitwise_not bitwise_or
bitwise_right_shift bitwise_xor bmm bucketize cat ceil chain_matmul cholesky cholesky_inverse
cholesky_solve clamp clamp_max clamp_min clip column_stack concat concatenate conj_physical
copysign cos cosh cross cummax cummin cumprod cumsum deg2rad detach_copy diag diagonal_copy
diff digamma div divide dot dstack empty eq erf erfc erfinv exp exp2 expm1 eye fix float_power
floor floor_divide fmax fmin fmod frac frexp full gather gcd ge ger greater greater_equal gt
hardshrink heaviside histc histogram hstack hypot i0 igamma igammac index_add index_copy
index_select inner inverse
isin isneginf isposinf kron kthvalue lcm ldexp le lerp less less_equal lgamma linspace log log10
log1p log2 log_softmax logaddexp logaddexp2 logcumsumexp logical_and logical_not logical_or
logical_xor logit logspace logsumexp lt lu_solve lu_unpack masked_select matmul matrix_power max
maximum mean median min minimum mm mode msort mul multinomial multiply mv mvlgamma nan_to_num
nanmean nanmedian nanquantile nansum narrow_copy ne neg negative nextafter nonzero norm normal
not_equal ones outer polygamma pow prod qr quantile rad2deg rand randint randn randperm range
reciprocal remainder renorm round row_stack rsqrt scatter scatter_add scatter_reduce searchsorted
sgn sigmoid sign signbit
sin sinc sinh slice_copy slice_scatter slogdet softmax sort split_copy sqrt square
squeeze_copy stack std
sub subtract sum svd t_copy take take_along_dim tan tanh tensordot topk
triangular_solve tril triu true_divide trunc unbind_copy unsqueeze_copy var vdot
view_copy vstack where xlogy zeros
""".split()

LINALG = """
cholesky cholesky_ex cond cross det eigh eigvalsh inv inv_ex lu lu_factor lu_factor_ex lu_solve
lstsq matmul matrix_norm matrix_power matrix_rank multi_dot norm pinv qr slogdet solve solve_ex
solve_triangular svd svdvals tensorinv tensorsolve vecdot vector_norm
""".split()

SPECIAL = """
bessel_j0 bessel_j1 bessel_y0 bessel_y1 digamma entr erf erfc erfcx erfinv exp2 expit expm1
gammainc gammaincc gammaln i0 i0e i1 i1e log1p log_ndtr logit logsumexp modified_bessel_i0
modified_bessel_i1 modified_bessel_k0 modified_bessel_k1 multigammaln ndtr ndtri polygamma psi
round scaled_modified_bessel_k0 scaled_modified_bessel_k1 sinc spherical_bessel_j0 xlog1py
xlogy zeta
""".split()

# Factory functions: the result takes ``out``'s dtype and device unless ``dtype=`` is given.
_FACTORIES = frozenset("""
arange range zeros ones empty full eye linspace logspace rand randn randint randperm
""".split())
# Reductions whose ``out`` dtype is the accumulation dtype (as PyTorch's ``sum(..., out=)``).
_DTYPE_FROM_OUT = frozenset("sum prod nansum cumsum cumprod".split())

# Ops PyTorch runs with out= on inputs requiring grad (composite ones: ``out`` then requires
# grad through the copy) instead of raising its autograd error.
_GRAD_OK = frozenset("""
alias_copy chain_matmul conj_physical diag diagonal_copy floor_divide inner log_softmax
nanquantile quantile slice_copy slice_scatter softmax split_copy squeeze_copy t_copy tensordot
unbind_copy unsqueeze_copy linalg_cond linalg_matrix_norm linalg_norm linalg_tensorsolve
special_ndtr
""".split())

# The op name PyTorch's autograd error reports, where it is not the function's own.
_ERROR_NAME = {
    "absolute": "abs", "arccos": "acos", "arccosh": "acosh", "arcsin": "asin",
    "arcsinh": "asinh", "arctan": "atan", "arctan2": "atan2", "arctanh": "atanh",
    "clip": "clamp", "cross": "linalg_cross", "diff": "sub", "divide": "div", "fix": "trunc",
    "float_power": "pow", "ger": "mul", "inverse": "linalg_inv_ex", "kron": "mul",
    "matrix_power": "matmul", "msort": "sort", "multiply": "mul", "nanmean": "nansum",
    "negative": "neg", "norm": "linalg_vector_norm", "outer": "mul", "qr": "linalg_qr",
    "slogdet": "_linalg_slogdet", "square": "pow", "subtract": "sub", "svd": "_linalg_svd",
    "true_divide": "div", "linalg_cholesky": "linalg_cholesky_ex", "linalg_det": "_linalg_det",
    "linalg_eigh": "_linalg_eigh", "linalg_eigvalsh": "_linalg_eigh",
    "linalg_inv": "linalg_inv_ex", "linalg_lu_factor": "linalg_lu_factor_ex",
    "linalg_matmul": "matmul", "linalg_matrix_power": "matmul",
    "linalg_slogdet": "_linalg_slogdet", "linalg_solve": "_linalg_solve_ex",
    "linalg_solve_ex": "_linalg_solve_ex", "linalg_svd": "_linalg_svd",
    "linalg_svdvals": "_linalg_svd", "linalg_vecdot": "vdot", "special_digamma": "digamma",
    "special_erf": "erf", "special_erfc": "erfc", "special_erfinv": "erfinv",
    "special_exp2": "exp2", "special_expit": "sigmoid", "special_expm1": "expm1",
    "special_gammainc": "igamma", "special_gammaincc": "igammac", "special_gammaln": "lgamma",
    "special_i0": "i0", "special_log1p": "log1p", "special_logit": "logit",
    "special_logsumexp": "logsumexp", "special_multigammaln": "mvlgamma",
    "special_psi": "digamma", "special_round": "round", "special_sinc": "sinc",
    "special_xlogy": "xlogy",
}

# Ops whose ``out`` must have exactly the result's dtype (no casting), with PyTorch's message
# ({res}/{out}: Float, Long...; {cres}/{cout}: float, long int...).
_EXACT = "Expected out tensor to have dtype {cres}, but got {cout} instead"
_FOUND = "Found dtype {out} but expected {res}"
_MATMUL = "result dtype {out} does not match input dtype {res}"
_TENSORDOT = ("tensordot: Expected the output tensor to have dtype {res}, but got an output "
              "tensor with dtype {out}")
_QUANTILE = "quantile() out tensor must be same dtype as the input tensor"
_AMAX = ("Expected the dtype for input and out to match, but got {res} for input's dtype and "
         "{out} for out's dtype.")
_EXACT_DTYPE = {
    **dict.fromkeys("""
        addmm alias_copy argmax argmin take_along_dim cross detach_copy diag diagonal_copy
        gather index_add index_copy scatter scatter_add scatter_reduce inverse log_softmax
        matrix_power mm msort mv norm slice_copy slice_scatter
        softmax squeeze_copy t_copy tril triu unsqueeze_copy linalg_cholesky linalg_cross
        linalg_det linalg_eigvalsh linalg_inv linalg_matrix_power linalg_solve
        linalg_svdvals linalg_vector_norm""".split(), _EXACT),
    **dict.fromkeys("""
        abs absolute ceil conj_physical fix floor frac hardshrink lerp neg negative round sgn
        sign trunc special_round bitwise_not""".split(), _FOUND),
    **dict.fromkeys("dot vdot matmul linalg_matmul".split(), _MATMUL),
    **dict.fromkeys("inner tensordot".split(), _TENSORDOT),
    **dict.fromkeys("quantile nanquantile".split(), _QUANTILE),
    **dict.fromkeys("amax amin".split(), _AMAX),
    "index_select": "index_select(): self and result must have the same scalar type",
    "nan_to_num": "nan_to_num: dtype of out: {out} should be same as input: {res}",
    "logcumsumexp": "expected scalar_type {res} but found {out}",
    "histc": ("torch.histogram: input tensor and hist tensor should have the same dtype, but got "
              "input {cres} and hist {cout}"),
    "take": ("take(): self and out expected to have the same dtype, but got self.dtype = {res} "
             "and out.dtype = {out}"),
    "nonzero": "nonzero: Expected out tensor to have scalar type Long but got scalar type{out}",
    "multinomial": "multinomial expects Long tensor out, got: {out}",
    "linalg_matrix_norm": "linalg.matrix_norm expected out tensor dtype {res} but got: {out}",
    "linalg_norm": "linalg.norm expected out tensor dtype {res} but got: {out}",
    "linalg_multi_dot": "multi_dot(): expected out tensor to have dtype {cres} but got {cout}",
    "linalg_vecdot": "linalg.vecdot: Expected out of dtype{res} but found {out}",
}
# Ops returning several tensors whose message for an ``out`` of another dtype is not the
# generic one: one message per output.
_MULTI_DTYPE = {
    "cummax": ["expected scalar_type {res} but found {out}"] * 2,
    "cummin": ["expected scalar_type {res} but found {out}"] * 2,
    "histogram": [_EXACT_DTYPE["histc"],
                  "torch.histogram: input tensor and bin_edges tensor should have the same dtype, "
                  "but got input {cres} and bin_edges {cout} for dimension 0"],
}
# clamp with number bounds wants ``out`` of exactly the result's dtype (with tensor bounds
# the result is cast).
_CLAMP = frozenset("clamp clip clamp_min clamp_max".split())
_SEARCHSORTED = ("torch.searchsorted(): output tensor's dtype is wrong, it can only be Int(int32) "
                 "or Long(int64) depending on whether out_int32 flag is True, but we got output "
                 "tensor's dtype {out} and out_int32 flag is {flag}")


def _call_message(fname, args, kwargs):
    """The exact-dtype message of a call whose rule depends on its arguments, or None."""
    if fname in _CLAMP:
        bounds = list(args[1:]) + [v for k, v in kwargs.items() if k in ("min", "max")]
        return None if any(isinstance(b, Tensor) for b in bounds) else _FOUND
    if fname in ("searchsorted", "bucketize"):
        return _SEARCHSORTED.replace("{flag}", str(builtins.bool(kwargs.get("out_int32"))))
    return None


# Messages for a result that cannot be cast to ``out``'s dtype, where not the generic one.
_SAFE = ("{op}: Expected result to be safely castable from {res} dtype, but got result with "
         "dtype {out}")
_CAST_DTYPE = {
    **{k: _SAFE.replace("{op}", v) for k, v in {
        "cholesky": "cholesky", "cholesky_inverse": "cholesky_inverse",
        "cholesky_solve": "cholesky_solve", "linalg_cond": "linalg.cond",
        "linalg_pinv": "linalg.pinv", "linalg_tensorsolve": "tensorsolve",
        "linalg_matrix_rank": "torch.linalg.matrix_rank", "matrix_power": "matrix_power",
        "linalg_matrix_power": "matrix_power"}.items()},
    "diag": "diag: result type {res} can't be cast to the desired out= type {out}",
    "ldexp": "ldexp can't be cast to the desired output type {out}",
    "mean": "mean.dtype_out(): input types can't be cast to the desired output type {out}",
    "float_power": ("the output given to float_power has dtype {out} but the operation's result "
                    "requires dtype {res}"),
}
# torch.cat and the functions built on it raise a TypeError when the cast is not allowed.
_CAT = frozenset("cat concat concatenate stack hstack vstack dstack column_stack row_stack"
                 .split())

_NAMES = {"float32": "Float", "float64": "Double", "float16": "Half", "bfloat16": "BFloat16",
          "int64": "Long", "int32": "Int", "int16": "Short", "int8": "Char", "uint8": "Byte",
          "bool": "Bool", "complex64": "ComplexFloat", "complex128": "ComplexDouble"}
# The C++ type names PyTorch's ``Expected out tensor to have dtype ...`` message uses.
_CPP_NAMES = {"float32": "float", "float64": "double", "float16": "c10::Half",
              "bfloat16": "c10::BFloat16", "int64": "long int", "int32": "int",
              "int16": "short int", "int8": "signed char", "uint8": "unsigned char",
              "bool": "bool", "complex64": "c10::complex<float>",
              "complex128": "c10::complex<double>"}

_RESIZE_WARNING = (
    "An output with one or more elements was resized since it had shape {old}, which does "
    "not match the required output shape {new}. This behavior is deprecated, and in a future "
    "PyTorch release outputs will not be resized unless they have zero elements. You can "
    "explicitly reuse an out tensor t by resizing it, inplace, to zero elements with "
    "t.resize_(0).")


def _short(dtype):
    return str(dtype).rsplit(".", 1)[-1]


def _kind(dtype):
    """0 bool, 1 integral, 2 floating, 3 complex."""
    if dtype == _C.bool:
        return 0
    if getattr(dtype, "is_complex", False):
        return 3
    return 2 if dtype.is_floating_point else 1


def _can_cast(from_, to):
    """``torch.can_cast``: no complex -> real, floating -> integral or non-bool -> bool."""
    return _kind(from_) <= _kind(to)


def _requires_grad(x):
    if isinstance(x, Tensor):
        return x.requires_grad
    if isinstance(x, (list, tuple)):
        return any(_requires_grad(y) for y in x)
    return False


def _check_out_tensor(out, fname):
    if not isinstance(out, Tensor):
        raise TypeError(f"{fname}(): argument 'out' must be Tensor, not {type(out).__name__}")


def _resize(out, shape):
    old = tuple(out.shape)
    if old == shape:
        return
    if out.numel() != 0:
        warnings.warn(_RESIZE_WARNING.format(old=list(old), new=list(shape)), UserWarning,
                      stacklevel=5)
    try:  # within the storage: a view of it, as PyTorch's resize_
        out.as_strided_(shape, _contiguous_strides(shape), out.storage_offset())
    except RuntimeError:  # a bigger storage: swap in a fresh one (the object stays the same)
        try:
            out.data = _C.empty(shape, dtype=out.dtype, device=out.device)
        except Exception as e:  # pragma: no cover - depends on the native build
            raise RuntimeError(f"out=: cannot resize the output tensor from shape {list(old)} "
                               f"to {list(shape)} ({e})") from None


def _contiguous_strides(shape):
    strides, acc = [], 1
    for s in reversed(shape):
        strides.append(acc)
        acc *= max(s, 1)
    return tuple(reversed(strides))


def _write(out, result, fname, exact_dtype, message=None):
    """Write ``result`` into ``out`` (resized); ``message``, if given, is the error for an
    ``out`` of another dtype (which must then match exactly)."""
    if out.device != result.device:
        raise RuntimeError(f"Expected all tensors to be on the same device, but found at least "
                           f"two devices, {result.device} and {out.device}!")
    if out.dtype != result.dtype:
        res, dst = _short(result.dtype), _short(out.dtype)
        names = {"res": _NAMES.get(res, res), "out": _NAMES.get(dst, dst),
                 "cres": _CPP_NAMES.get(res, res), "cout": _CPP_NAMES.get(dst, dst)}
        if message is not None:
            raise RuntimeError(message.format(**names))
        if exact_dtype:
            raise RuntimeError(_EXACT.format(**names))
        castable = _can_cast(result.dtype, out.dtype)
        msg = _CAST_DTYPE.get(fname) if not castable else None
        if msg is None:
            msg = _EXACT_DTYPE.get(fname)
        if msg is not None:
            raise RuntimeError(msg.format(**names))
        if not castable:
            if fname in _CAT:
                raise TypeError(f"torch.cat(): input types can't be cast to the desired output "
                                f"type {names['out']}")
            raise RuntimeError(f"result type {names['res']} can't be cast to the desired "
                               f"output type {names['out']}")
    _resize(out, tuple(result.shape))
    out.copy_(result)


def _autograd_error(fname):
    fname = _ERROR_NAME.get(fname, fname)
    raise RuntimeError(f"{fname}(): functions with out=... arguments don't support automatic "
                       f"differentiation, but one of the arguments requires grad.")


def _call_with_out(fn, fname, args, kwargs, out):
    if _requires_grad(out) and _C.is_grad_enabled():
        _autograd_error(fname)
    multi = isinstance(out, (tuple, list))
    if multi:
        for o in out:
            _check_out_tensor(o, fname)
    else:
        _check_out_tensor(out, fname)
    if fname in _FACTORIES and not multi:
        dtype = kwargs.get("dtype")
        if dtype is None:
            kwargs["dtype"] = out.dtype
        elif dtype != out.dtype:
            raise RuntimeError(f"dtype {_NAMES.get(_short(dtype), dtype)} does not match dtype "
                               f"of out parameter ({_NAMES.get(_short(out.dtype), out.dtype)})")
        kwargs.setdefault("device", out.device)
    elif fname in _DTYPE_FROM_OUT and not multi and kwargs.get("dtype") is None:
        kwargs["dtype"] = out.dtype
    result = fn(*args, **kwargs)
    # A differentiable op on inputs requiring grad (in grad mode) gives a result requiring
    # grad: PyTorch refuses out= then; non-differentiable ops (eq, argmax...) are fine.
    if fname not in _GRAD_OK and _requires_grad(result):
        _autograd_error(fname)
    if isinstance(result, Tensor):
        if multi:
            raise TypeError(f"{fname}(): argument 'out' must be Tensor, not "
                            f"{type(out).__name__}")
        _write(out, result, fname, False, _call_message(fname, args, kwargs))
        return out
    if not isinstance(result, (tuple, list)):
        raise RuntimeError(f"{fname}(): out= is not supported for a result of type "
                           f"{type(result).__name__}")
    if not multi:
        raise TypeError(f"{fname}(): argument 'out' must be tuple of Tensors, not "
                        f"{type(out).__name__}")
    if len(out) != len(result):
        raise RuntimeError(f"{fname}(): expected out= to be a tuple of {len(result)} tensors, "
                           f"got {len(out)}")
    messages = _MULTI_DTYPE.get(fname, [None] * len(out))
    for o, r, message in zip(out, result, messages):
        _write(o, r, fname, True, message)
    if hasattr(result, "_fields"):  # a named tuple (torch.return_types.*)
        return type(result)(*out)
    return type(out)(out)


def _with_out(fn, fname=None):
    """``fn`` taking PyTorch's ``out=`` keyword."""
    if getattr(fn, "_ft_out_wrapped", False):
        return fn
    fname = fname or getattr(fn, "__name__", "function")

    @functools.wraps(fn)
    def wrapper(*args, out=None, **kwargs):
        if out is None:
            return fn(*args, **kwargs)
        return _call_with_out(fn, fname, args, kwargs, out)

    wrapper._ft_out_wrapped = True
    return wrapper


def _install():
    import ferrotorch
    from ferrotorch import linalg, special

    wrapped = {}  # id(function) -> its wrapper: aliases (psi/digamma...) stay one object
    for module, names, prefix in ((ferrotorch, TOP_LEVEL, ""), (linalg, LINALG, "linalg_"),
                                  (special, SPECIAL, "special_")):
        for name in names:
            fn = getattr(module, name, None)
            if fn is None or not callable(fn):
                continue
            if id(fn) not in wrapped:
                wrapped[id(fn)] = (fn, _with_out(fn, prefix + name))
            setattr(module, name, wrapped[id(fn)][1])
    # autocast captured the functions it wraps at import: let it wrap (and restore) these.
    from ferrotorch.amp import autocast_mode

    autocast_mode._SWAPS.clear()
    autocast_mode._install_op_lists()
