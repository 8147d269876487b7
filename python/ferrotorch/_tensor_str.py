"""Torch-style printing of tensors (formatting lives in Python, as in PyTorch)."""

import contextlib
import math

from ferrotorch import _C

_DEFAULTS = dict(precision=4, threshold=1000, edgeitems=3, linewidth=80, sci_mode=None)
PRINT_OPTIONS = dict(_DEFAULTS)


def set_printoptions(precision=None, threshold=None, edgeitems=None, linewidth=None,
                     profile=None, sci_mode=None):
    """Same knobs as ``torch.set_printoptions``."""
    if profile == "default":
        PRINT_OPTIONS.update(_DEFAULTS)
    elif profile == "short":
        PRINT_OPTIONS.update(precision=2, threshold=1000, edgeitems=2, linewidth=80)
    elif profile == "full":
        PRINT_OPTIONS.update(precision=4, threshold=math.inf, edgeitems=3, linewidth=80)
    for k, v in dict(precision=precision, threshold=threshold, edgeitems=edgeitems,
                     linewidth=linewidth).items():
        if v is not None:
            PRINT_OPTIONS[k] = v
    PRINT_OPTIONS["sci_mode"] = sci_mode


def get_printoptions():
    """The current options, as a dict that can be passed back to ``set_printoptions``."""
    return dict(PRINT_OPTIONS)


@contextlib.contextmanager
def printoptions(**kwargs):
    """Temporarily change the print options (``torch._tensor_str.printoptions``)."""
    old = get_printoptions()
    set_printoptions(**kwargs)
    try:
        yield
    finally:
        set_printoptions(**old)


class _Formatter:
    """Decides one width and notation for all printed elements, as PyTorch's ``_Formatter``:
    for floating tensors only the nonzero finite values count (for the notation and for the
    width), so ``nan``, ``inf`` and zeros are never padded for."""

    def __init__(self, values, is_float, is_bool):
        self.is_float = is_float
        self.is_bool = is_bool
        self.int_mode = True
        self.sci_mode = False
        self.max_width = 1
        p = PRINT_OPTIONS["precision"]
        if is_bool or not is_float:
            self.max_width = max((len(str(v)) for v in values), default=1)
            return
        nonzero = [v for v in values if math.isfinite(v) and v != 0]
        if not nonzero:
            return
        absvals = [abs(v) for v in nonzero]
        mx, mn = max(absvals), min(absvals)
        self.int_mode = all(v == math.ceil(v) for v in nonzero)
        if PRINT_OPTIONS["sci_mode"] is None:
            self.sci_mode = mx / mn > 1000.0 or mx > 1.0e8 or mn < 1.0e-4
        else:
            self.sci_mode = PRINT_OPTIONS["sci_mode"]
        if self.sci_mode:
            self.max_width = max(len(f"{v:.{p}e}") for v in nonzero)
        elif self.int_mode:
            self.max_width = max(len(f"{v:.0f}") + 1 for v in nonzero)
        else:
            self.max_width = max(len(f"{v:.{p}f}") for v in nonzero)

    def format(self, v):
        p = PRINT_OPTIONS["precision"]
        if self.is_bool or not self.is_float:
            s = str(v)
        elif self.sci_mode:
            s = _fmt_special(v) or f"{v:{self.max_width}.{p}e}"
        elif self.int_mode:
            s = _fmt_special(v) or f"{v:.0f}."
        else:
            s = _fmt_special(v) or f"{v:.{p}f}"
        return s.rjust(self.max_width)


def _fmt_special(v):
    """How PyTorch prints a non-finite float (Python's ``format`` gives the same strings)."""
    if math.isnan(v):
        return "nan"
    if math.isinf(v):
        return "inf" if v > 0 else "-inf"
    return None


def _summarize(t, edge):
    """Indices to print along dim 0 (with None marking '...')."""
    n = t.shape[0]
    if n > 2 * edge:
        return list(range(edge)) + [None] + list(range(n - edge, n))
    return list(range(n))


def _collect(lst, shape, summarize, edge):
    """Flat list of the values that will be printed (for width computation)."""
    if not shape:
        return [lst]
    n = shape[0]
    idx = list(range(n))
    if summarize and n > 2 * edge:
        idx = list(range(edge)) + list(range(n - edge, n))
    out = []
    for i in idx:
        out.extend(_collect(lst[i], shape[1:], summarize, edge))
    return out


def _fmt_nested(lst, shape, fmt, indent, summarize, edge, linewidth):
    if not shape:
        return fmt.format(lst)
    if summarize and not edge:
        # edgeitems=0: PyTorch prints a bare "[...]" (no leading space, no nesting).
        return "[...]"
    n = shape[0]
    idx = list(range(n))
    if summarize and n > 2 * edge:
        idx = list(range(edge)) + [None] + list(range(n - edge, n))
    if len(shape) == 1:
        items = [" ..." if i is None else fmt.format(lst[i]) for i in idx]
        # Wrap long rows like PyTorch.
        per_line = max(1, (linewidth - indent) // (fmt.max_width + 2))
        lines = [", ".join(items[i:i + per_line]) for i in range(0, len(items), per_line)]
        return "[" + (",\n" + " " * (indent + 1)).join(lines) + "]"
    parts = []
    for i in idx:
        if i is None:
            parts.append("...")
        else:
            parts.append(_fmt_nested(lst[i], shape[1:], fmt, indent + 1, summarize, edge,
                                     linewidth))
    sep = "," + "\n" * (len(shape) - 1) + " " * (indent + 1)
    return "[" + sep.join(parts) + "]"


def _tensor_str(t, indent):
    shape = tuple(t.shape)
    numel = t.numel()
    summarize = numel > PRINT_OPTIONS["threshold"]
    edge = PRINT_OPTIONS["edgeitems"]
    if t.dtype in (_C.float16, _C.bfloat16):
        t = t.float()
    lst = t.tolist()
    values = _collect(lst, shape, summarize, edge)
    fmt = _Formatter(values, t.is_floating_point(), t.dtype == _C.bool)
    return _fmt_nested(lst, shape, fmt, indent, summarize, edge, PRINT_OPTIONS["linewidth"])


def _repr(self, *, tensor_contents=None):
    prefix = "tensor("
    indent = len(prefix)
    suffixes = []
    if self.numel() == 0 and self.dim() != 1:
        body = "[]"
        suffixes.append(f"size={tuple(self.shape)}")
    elif self.numel() == 0:
        body = "[]"
    else:
        body = _tensor_str(self.detach() if hasattr(self, "detach") else self, indent)
        if not PRINT_OPTIONS["edgeitems"]:
            # With edgeitems=0 nothing shows the shape, so PyTorch spells it out.
            suffixes.append(f"size={tuple(self.shape)}")
    if self.device.type != "cpu":
        suffixes.append(f"device='{self.device}'")
    default = _C.get_default_dtype()
    if self.dtype not in (default, _C.int64, _C.bool) or (self.numel() == 0 and
                                                          self.dtype != default):
        suffixes.append(f"dtype={self.dtype!r}")
    grad_fn = getattr(self, "grad_fn", None)
    if grad_fn is not None:
        name = grad_fn.name() if hasattr(grad_fn, "name") else type(grad_fn).__name__
        suffixes.append(f"grad_fn=<{name}>")
    elif self.requires_grad:
        suffixes.append("requires_grad=True")
    return _add_suffixes(prefix + body, suffixes, indent)


def _add_suffixes(tensor_str, suffixes, indent):
    """Append ``dtype=``, ``grad_fn=``... like PyTorch: a suffix that would pass the line
    width goes on its own line. (The ``+ 1`` below, rather than ``- 1``, is PyTorch's.)"""
    parts = [tensor_str]
    last_line_len = len(tensor_str) - tensor_str.rfind("\n") + 1
    for suffix in suffixes:
        if last_line_len + len(suffix) + 2 > PRINT_OPTIONS["linewidth"]:
            parts.append(",\n" + " " * indent + suffix)
            last_line_len = indent + len(suffix)
        else:
            parts.append(", " + suffix)
            last_line_len += len(suffix) + 2
    parts.append(")")
    return "".join(parts)


_C.Tensor.__repr__ = _repr
_C.Tensor.__str__ = _repr
