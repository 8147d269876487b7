"""Recurrent layers: ``RNNCell``, ``LSTMCell``, ``GRUCell``, ``RNN``, ``LSTM``, ``GRU``.

Parameter names, shapes, gate order and initialisation follow PyTorch. A layer computes the
input projection of the whole sequence with one matmul (``x @ W_ih^T + b_ih`` for all time
steps at once), then one matmul per step for ``h @ W_hh^T`` followed by the gate elementwise
ops (for LSTM/GRU one fused Rust kernel, ``_C._lstm_cell_pointwise`` /
``_C._gru_cell_pointwise``). ``PackedSequence`` inputs run the same recurrence on the
padded time-major layout, updating only the ``batch_sizes[t]`` sequences still running at
step ``t``.
"""

import math
import numbers
import warnings

from ferrotorch import _C
from ferrotorch.autograd import Function
from ferrotorch.nn import functional as F
from ferrotorch.nn import init
from ferrotorch.nn.modules.module import Module
from ferrotorch.nn.parameter import Parameter
from ferrotorch.nn.utils.rnn import PackedSequence, _packed_to_padded, _padded_to_packed

__all__ = ["RNNBase", "RNN", "LSTM", "GRU", "RNNCellBase", "RNNCell", "LSTMCell", "GRUCell"]


def _empty(*shape, dtype=None, device=None):
    return _C.empty(*shape, dtype=dtype, device=device)


# Initialisers are applied to ``param.data`` (an alias without autograd): on main, in-place
# samplers on tensors of >= 16384 elements run on the kernel thread pool, where the caller's
# ``no_grad`` is not in effect, so filling a leaf that requires grad raises there.


def _zeros(shape, like):
    """Zeros in ``like``'s dtype, on its device."""
    return _C.zeros(*shape, dtype=like.dtype, device=like.device)


class _Unbind(Function):
    """``x.unbind(0)`` as ONE autograd node whose backward stacks the step gradients
    (per-step ``select`` nodes would each scatter into a full-size zero tensor)."""

    @staticmethod
    def forward(ctx, x):
        return tuple(x.unbind(0))

    @staticmethod
    def backward(ctx, *grads):
        return _C.stack(list(grads), 0)


def _steps(x):
    """The time steps of a (T, ...) tensor as a tuple of (...) tensors."""
    if x.shape[0] == 0:
        return ()
    return _Unbind.apply(x)


# ---------------------------------------------------------------------------- cell maths
# ``xw`` is the step's input projection. For RNN/LSTM it already includes ``b_hh`` (folded
# into the input-projection bias), so ``xw + h @ W_hh^T`` is ONE addmm per step; GRU keeps
# ``b_hh`` separate because ``b_hn`` sits inside ``r * (W_hn h + b_hn)``. ``w_hh_t`` is
# ``W_hh^T`` (a view taken once per layer).
def _hh(xw, h, w_hh_t):
    if h.dim() == 2:
        return xw.addmm(h, w_hh_t)
    return xw + h.matmul(w_hh_t)


def _rnn_tanh_cell(xw, h, w_hh_t):
    return _hh(xw, h, w_hh_t).tanh()


def _rnn_relu_cell(xw, h, w_hh_t):
    return _hh(xw, h, w_hh_t).relu()


# The gate nonlinearities and products run as ONE fused Rust kernel (one autograd node with
# a fused backward kernel; double backward uses composed formulas) when the operands are
# plain 2-D floating CPU tensors of one dtype with matching shapes; anything else
# (broadcasting, mixed dtypes, >2-D states, CUDA tensors: the fused kernel is CPU-only)
# takes the composed tensor-op path, which computes the same values. ``_FUSED = False``
# forces that path.
_FUSED = True


def _fusable(gates, k, state, *others):
    """``gates`` is (B, k*H), ``state`` (B, H) and each of ``others`` shaped like ``gates``,
    all of one floating dtype, on the CPU."""
    if (not _FUSED or gates.dim() != 2 or state.dim() != 2
            or not gates.dtype.is_floating_point or gates.is_cuda or state.is_cuda):
        return False
    B, n = gates.shape
    return (state.shape[0] == B and n == k * state.shape[1] and state.dtype == gates.dtype
            and all(t.shape == gates.shape and t.dtype == gates.dtype for t in others))


def _lstm_cell(xw, h, c, w_hh_t, w_hr=None):
    gates = _hh(xw, h, w_hh_t)
    if _fusable(gates, 4, c):
        h, c = _C._lstm_cell_pointwise(gates, c)
    else:
        i, f, g, o = gates.chunk(4, -1)
        c = f.sigmoid() * c + i.sigmoid() * g.tanh()
        h = o.sigmoid() * c.tanh()
    if w_hr is not None:
        h = F.linear(h, w_hr)
    return h, c


def _gru_cell(xw, h, w_hh_t, b_hh):
    gh = h.matmul(w_hh_t) if b_hh is None else _hh(b_hh, h, w_hh_t)
    if _fusable(xw, 3, h, gh):
        return _C._gru_cell_pointwise(xw, gh, h)
    i_r, i_z, i_n = xw.chunk(3, -1)
    h_r, h_z, h_n = gh.chunk(3, -1)
    r = (i_r + h_r).sigmoid()
    z = (i_z + h_z).sigmoid()
    n = (i_n + r * h_n).tanh()
    return n + z * (h - n)


def _input_bias(mode, b_ih, b_hh):
    """Bias of the input projection: ``b_ih + b_hh`` except for GRU."""
    if b_ih is None or mode == "GRU":
        return b_ih
    return b_ih + b_hh


# ---------------------------------------------------------------------------- cells
class RNNCellBase(Module):
    __constants__ = ["input_size", "hidden_size", "bias"]

    def __init__(self, input_size, hidden_size, bias, num_chunks, device=None, dtype=None):
        super().__init__()
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.bias = bias
        self.weight_ih = Parameter(_empty(num_chunks * hidden_size, input_size, dtype=dtype,
                                          device=device))
        self.weight_hh = Parameter(_empty(num_chunks * hidden_size, hidden_size, dtype=dtype,
                                          device=device))
        if bias:
            self.bias_ih = Parameter(_empty(num_chunks * hidden_size, dtype=dtype, device=device))
            self.bias_hh = Parameter(_empty(num_chunks * hidden_size, dtype=dtype, device=device))
        else:
            self.register_parameter("bias_ih", None)
            self.register_parameter("bias_hh", None)
        self.reset_parameters()

    def extra_repr(self):
        s = f"{self.input_size}, {self.hidden_size}"
        if self.bias is not True:
            s += f", bias={self.bias}"
        if getattr(self, "nonlinearity", "tanh") != "tanh":
            s += f", nonlinearity={self.nonlinearity}"
        return s

    def reset_parameters(self):
        stdv = 1.0 / math.sqrt(self.hidden_size) if self.hidden_size > 0 else 0
        for weight in self.parameters():
            # ``.data``: see ``_init_data`` (same values as initialising the parameter).
            init.uniform_(weight.data, -stdv, stdv)

    def _prepare(self, input, hx, name):
        if input.dim() not in (1, 2):
            raise ValueError(f"{name}: Expected input to be 1D or 2D, got {input.dim()}D instead")
        hs = hx if isinstance(hx, (tuple, list)) else (hx,)
        for h in hs:
            if h is not None and h.dim() not in (1, 2):
                raise ValueError(
                    f"{name}: Expected hidden to be 1D or 2D, got {h.dim()}D instead")
        is_batched = input.dim() == 2
        if not is_batched:
            input = input.unsqueeze(0)
        if input.size(1) != self.input_size:
            raise RuntimeError(f"input has inconsistent input_size: got {input.size(1)} "
                               f"expected {self.input_size}")
        return input, is_batched

    def _check_hidden(self, input, hx, label=""):
        if hx.size(0) != input.size(0):
            raise RuntimeError(f"Input batch size {input.size(0)} doesn't match hidden{label} "
                               f"batch size {hx.size(0)}")
        if hx.size(1) != self.hidden_size:
            raise RuntimeError(f"hidden{label} has inconsistent hidden_size: got {hx.size(1)}, "
                               f"expected {self.hidden_size}")


class RNNCell(RNNCellBase):
    r"""``h' = tanh(x W_ih^T + b_ih + h W_hh^T + b_hh)`` (or ``relu``)."""

    __constants__ = ["input_size", "hidden_size", "bias", "nonlinearity"]

    def __init__(self, input_size, hidden_size, bias=True, nonlinearity="tanh", device=None,
                 dtype=None):
        super().__init__(input_size, hidden_size, bias, num_chunks=1, device=device,
                         dtype=dtype)
        self.nonlinearity = nonlinearity

    def forward(self, input, hx=None):
        input, is_batched = self._prepare(input, hx, "RNNCell")
        if hx is None:
            hx = _zeros((input.size(0), self.hidden_size), input)
        elif not is_batched:
            hx = hx.unsqueeze(0)
        self._check_hidden(input, hx)
        xw = F.linear(input, self.weight_ih, _input_bias("RNN", self.bias_ih, self.bias_hh))
        if self.nonlinearity == "tanh":
            ret = _rnn_tanh_cell(xw, hx, self.weight_hh.t())
        elif self.nonlinearity == "relu":
            ret = _rnn_relu_cell(xw, hx, self.weight_hh.t())
        else:
            raise RuntimeError(f"Unknown nonlinearity: {self.nonlinearity}")
        return ret if is_batched else ret.squeeze(0)


class LSTMCell(RNNCellBase):
    r"""One LSTM step; gates ``i, f, g, o`` are stacked in that order in the weights.
    Returns ``(h', c')``."""

    def __init__(self, input_size, hidden_size, bias=True, device=None, dtype=None):
        super().__init__(input_size, hidden_size, bias, num_chunks=4, device=device,
                         dtype=dtype)

    def forward(self, input, hx=None):
        input, is_batched = self._prepare(input, hx, "LSTMCell")
        if hx is None:
            z = _zeros((input.size(0), self.hidden_size), input)
            hx = (z, z)
        elif not is_batched:
            hx = (hx[0].unsqueeze(0), hx[1].unsqueeze(0))
        self._check_hidden(input, hx[0], "[0]")
        self._check_hidden(input, hx[1], "[1]")
        xw = F.linear(input, self.weight_ih, _input_bias("LSTM", self.bias_ih, self.bias_hh))
        h, c = _lstm_cell(xw, hx[0], hx[1], self.weight_hh.t())
        if not is_batched:
            return h.squeeze(0), c.squeeze(0)
        return h, c


class GRUCell(RNNCellBase):
    r"""One GRU step; gates ``r, z, n`` with ``n = tanh(W_in x + b_in + r * (W_hn h + b_hn))``
    and ``h' = (1 - z) * n + z * h``."""

    def __init__(self, input_size, hidden_size, bias=True, device=None, dtype=None):
        super().__init__(input_size, hidden_size, bias, num_chunks=3, device=device,
                         dtype=dtype)

    def forward(self, input, hx=None):
        input, is_batched = self._prepare(input, hx, "GRUCell")
        if hx is None:
            hx = _zeros((input.size(0), self.hidden_size), input)
        elif not is_batched:
            hx = hx.unsqueeze(0)
        self._check_hidden(input, hx)
        xw = F.linear(input, self.weight_ih, self.bias_ih)
        ret = _gru_cell(xw, hx, self.weight_hh.t(), self.bias_hh)
        return ret if is_batched else ret.squeeze(0)


# ---------------------------------------------------------------------------- layers
class RNNBase(Module):
    r"""Shared machinery of ``RNN``/``LSTM``/``GRU``: parameters ``weight_ih_l{k}``,
    ``weight_hh_l{k}``, ``bias_ih_l{k}``, ``bias_hh_l{k}`` (``weight_hr_l{k}`` with
    ``proj_size``) and the same with a ``_reverse`` suffix for the backward direction."""

    __constants__ = ["mode", "input_size", "hidden_size", "num_layers", "bias", "batch_first",
                     "dropout", "bidirectional", "proj_size"]

    def __init__(self, mode, input_size, hidden_size, num_layers=1, bias=True,
                 batch_first=False, dropout=0.0, bidirectional=False, proj_size=0,
                 device=None, dtype=None):
        super().__init__()
        if (not isinstance(dropout, numbers.Number) or isinstance(dropout, bool)
                or not 0 <= dropout <= 1):
            raise ValueError("dropout should be a number in range [0, 1] representing the "
                             "probability of an element being zeroed")
        self.mode = mode
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.num_layers = num_layers
        self.bias = bias
        self.batch_first = batch_first
        self.dropout = float(dropout)
        self.bidirectional = bidirectional
        self.proj_size = proj_size
        num_directions = 2 if bidirectional else 1
        if dropout > 0 and num_layers == 1:
            warnings.warn(
                "dropout option adds dropout after all but last recurrent layer, so non-zero "
                "dropout expects num_layers greater than 1, but got "
                f"dropout={dropout} and num_layers={num_layers}",
                stacklevel=2,
            )
        if not isinstance(bias, bool):
            raise TypeError(f"bias should be of type bool, got: {type(bias).__name__}")
        if not isinstance(batch_first, bool):
            raise TypeError(f"batch_first should be of type bool, got: "
                            f"{type(batch_first).__name__}")
        if not isinstance(input_size, int):
            raise TypeError(f"input_size should be of type int, got: "
                            f"{type(input_size).__name__}")
        if input_size <= 0:
            raise ValueError("input_size must be greater than zero")
        if not isinstance(hidden_size, int):
            raise TypeError(f"hidden_size should be of type int, got: "
                            f"{type(hidden_size).__name__}")
        if hidden_size <= 0:
            raise ValueError("hidden_size must be greater than zero")
        if num_layers <= 0:
            raise ValueError("num_layers must be greater than zero")
        if proj_size < 0:
            raise ValueError("proj_size should be a positive integer or zero to disable "
                             "projections")
        if proj_size >= hidden_size:
            raise ValueError("proj_size has to be smaller than hidden_size")

        if mode == "LSTM":
            gate_size = 4 * hidden_size
        elif mode == "GRU":
            gate_size = 3 * hidden_size
        elif mode in ("RNN_TANH", "RNN_RELU"):
            gate_size = hidden_size
        else:
            raise ValueError("Unrecognized RNN mode: " + mode)
        if proj_size and mode != "LSTM":
            raise ValueError("proj_size argument is only supported for LSTM, not RNN or GRU")

        self._flat_weights_names = []
        self._all_weights = []
        real_hidden_size = proj_size if proj_size > 0 else hidden_size
        for layer in range(num_layers):
            for direction in range(num_directions):
                layer_input_size = input_size if layer == 0 else real_hidden_size * num_directions
                suffix = "_reverse" if direction == 1 else ""
                shapes = [("weight_ih_l{}{}", (gate_size, layer_input_size)),
                          ("weight_hh_l{}{}", (gate_size, real_hidden_size))]
                if bias:
                    shapes += [("bias_ih_l{}{}", (gate_size,)), ("bias_hh_l{}{}", (gate_size,))]
                if proj_size > 0:
                    shapes += [("weight_hr_l{}{}", (proj_size, hidden_size))]
                names = []
                for fmt, shape in shapes:
                    name = fmt.format(layer, suffix)
                    setattr(self, name, Parameter(_empty(*shape, dtype=dtype, device=device)))
                    names.append(name)
                self._flat_weights_names.extend(names)
                self._all_weights.append(names)
        self.reset_parameters()

    @property
    def _flat_weights(self):
        return [getattr(self, n, None) for n in self._flat_weights_names]

    @property
    def all_weights(self):
        return [[getattr(self, n) for n in names] for names in self._all_weights]

    def flatten_parameters(self):
        """No-op (kept for source compatibility with cuDNN code paths)."""

    def reset_parameters(self):
        stdv = 1.0 / math.sqrt(self.hidden_size) if self.hidden_size > 0 else 0
        for weight in self.parameters():
            # ``.data``: see ``_init_data`` (same values as initialising the parameter).
            init.uniform_(weight.data, -stdv, stdv)

    def extra_repr(self):
        s = f"{self.input_size}, {self.hidden_size}"
        if self.proj_size != 0:
            s += f", proj_size={self.proj_size}"
        if self.num_layers != 1:
            s += f", num_layers={self.num_layers}"
        if self.bias is not True:
            s += f", bias={self.bias}"
        if self.batch_first is not False:
            s += f", batch_first={self.batch_first}"
        if self.dropout != 0:
            s += f", dropout={self.dropout}"
        if self.bidirectional is not False:
            s += f", bidirectional={self.bidirectional}"
        return s

    # -- argument checks (PyTorch's messages) ------------------------------------------
    def check_input(self, input, batch_sizes=None):
        w = self._flat_weights[0]
        if input.dtype != w.dtype:
            raise ValueError(f"input must have the type {w.dtype}, got type {input.dtype}")
        expected_input_dim = 2 if batch_sizes is not None else 3
        if input.dim() != expected_input_dim:
            raise RuntimeError(
                f"input must have {expected_input_dim} dimensions, got {input.dim()}")
        if self.input_size != input.size(-1):
            raise RuntimeError(
                f"input.size(-1) must be equal to input_size. Expected {self.input_size}, "
                f"got {input.size(-1)}")

    def get_expected_hidden_size(self, input, batch_sizes=None):
        if batch_sizes is not None:
            mini_batch = int(batch_sizes[0])
        else:
            mini_batch = input.size(0) if self.batch_first else input.size(1)
        num_directions = 2 if self.bidirectional else 1
        real = self.proj_size if self.proj_size > 0 else self.hidden_size
        return (self.num_layers * num_directions, mini_batch, real)

    def check_hidden_size(self, hx, expected_hidden_size,
                          msg="Expected hidden size {}, got {}"):
        if tuple(hx.size()) != tuple(expected_hidden_size):
            raise RuntimeError(msg.format(expected_hidden_size, list(hx.size())))

    def check_forward_args(self, input, hidden, batch_sizes=None):
        self.check_input(input, batch_sizes)
        self.check_hidden_size(hidden, self.get_expected_hidden_size(input, batch_sizes))

    # -- the recurrence ----------------------------------------------------------------
    def _run(self, x, hx, batch_sizes=None):
        """``x`` time-major (T, B, I); ``hx`` a list of per-(layer, direction) states
        (``h`` or ``(h, c)``). Returns (output (T, B, D*H), list of final states).

        With ``batch_sizes`` (a packed input, sorted by decreasing length) only the first
        ``batch_sizes[t]`` rows are updated at step ``t``: the other rows keep their state
        (finished sequences keep their last state, not-yet-started ones in the reverse
        direction keep the initial state) and their outputs are zero."""
        num_directions = 2 if self.bidirectional else 1
        finals = []
        T = x.shape[0]
        for layer in range(self.num_layers):
            outs = []
            for direction in range(num_directions):
                idx = layer * num_directions + direction
                names = self._all_weights[idx]
                w_ih = getattr(self, names[0])
                w_hh = getattr(self, names[1])
                b_ih = getattr(self, names[2]) if self.bias else None
                b_hh = getattr(self, names[3]) if self.bias else None
                w_hr = getattr(self, names[-1]) if self.proj_size > 0 else None
                w_hh_t = w_hh.t()
                if self.mode != "GRU":
                    b_ih, b_hh = _input_bias(self.mode, b_ih, b_hh), None
                # One matmul for the input projection of every time step.
                xw = F.linear(x, w_ih, b_ih)
                steps = _steps(xw)
                order = range(T - 1, -1, -1) if direction == 1 else range(T)
                state = hx[idx]
                ys = [None] * T
                B = x.shape[1]
                for t in order:
                    bs = B if batch_sizes is None else batch_sizes[t]
                    if bs == B:
                        state = self._cell(steps[t], state, w_hh_t, b_hh, w_hr)
                        ys[t] = state[0] if self.mode == "LSTM" else state
                        continue
                    # Packed input: update the running rows only.
                    if self.mode == "LSTM":
                        part = (state[0][:bs], state[1][:bs])
                        new = self._cell(steps[t][:bs], part, w_hh_t, b_hh, w_hr)
                        state = (_C.cat([new[0], state[0][bs:]], 0),
                                 _C.cat([new[1], state[1][bs:]], 0))
                        y = new[0]
                    else:
                        y = self._cell(steps[t][:bs], state[:bs], w_hh_t, b_hh, w_hr)
                        state = _C.cat([y, state[bs:]], 0)
                    ys[t] = F.pad(y, (0, 0, 0, B - bs))
                finals.append(state)
                if T == 0:
                    h_size = w_hr.shape[0] if w_hr is not None else self.hidden_size
                    outs.append(_zeros((0, x.shape[1], h_size), x))
                else:
                    outs.append(_C.stack(ys, 0))
            x = outs[0] if num_directions == 1 else _C.cat(outs, 2)
            if self.dropout > 0 and self.training and layer < self.num_layers - 1:
                x = F.dropout(x, self.dropout, True)
        return x, finals

    def _cell(self, xw, state, w_hh_t, b_hh, w_hr):
        if self.mode == "LSTM":
            return _lstm_cell(xw, state[0], state[1], w_hh_t, w_hr)
        if self.mode == "GRU":
            return _gru_cell(xw, state, w_hh_t, b_hh)
        if self.mode == "RNN_TANH":
            return _rnn_tanh_cell(xw, state, w_hh_t)
        return _rnn_relu_cell(xw, state, w_hh_t)

    def permute_hidden(self, hx, permutation):
        if permutation is None:
            return hx
        if isinstance(hx, tuple):
            return hx[0].index_select(1, permutation), hx[1].index_select(1, permutation)
        return hx.index_select(1, permutation)

    def _forward_impl(self, input, hx, is_lstm, batch_sizes=None):
        if batch_sizes is not None:
            input = _packed_to_padded(input, batch_sizes)
        elif self.batch_first:
            input = input.transpose(0, 1)
        if is_lstm:
            h0 = hx[0].unbind(0)
            c0 = hx[1].unbind(0)
            states = list(zip(h0, c0))
        else:
            states = list(hx.unbind(0))
        out, finals = self._run(input, states, batch_sizes)
        if batch_sizes is not None:
            out = _padded_to_packed(out, batch_sizes)
        elif self.batch_first:
            out = out.transpose(0, 1)
        if is_lstm:
            h_n = _C.stack([s[0] for s in finals], 0)
            c_n = _C.stack([s[1] for s in finals], 0)
            return out, (h_n, c_n)
        return out, _C.stack(finals, 0)


class RNN(RNNBase):
    r"""Elman RNN: ``h_t = tanh(x_t W_ih^T + b_ih + h_{t-1} W_hh^T + b_hh)`` (``relu`` with
    ``nonlinearity="relu"``). Returns ``(output, h_n)``.

    >>> import ferrotorch as torch
    >>> rnn = torch.nn.RNN(10, 20, 2)
    >>> output, hn = rnn(torch.randn(5, 3, 10), torch.randn(2, 3, 20))
    >>> tuple(output.shape), tuple(hn.shape)
    ((5, 3, 20), (2, 3, 20))
    """

    def __init__(self, *args, **kwargs):
        if "proj_size" in kwargs:
            raise ValueError("proj_size argument is only supported for LSTM, not RNN or GRU")
        if len(args) > 3:
            nonlinearity = args[3]
            args = args[:3] + args[4:]
        else:
            nonlinearity = kwargs.pop("nonlinearity", "tanh")
        if nonlinearity == "tanh":
            mode = "RNN_TANH"
        elif nonlinearity == "relu":
            mode = "RNN_RELU"
        else:
            raise ValueError(f"Unknown nonlinearity '{nonlinearity}'. Select from "
                             "'tanh' or 'relu'.")
        super().__init__(mode, *args, **kwargs)
        self.nonlinearity = nonlinearity

    def forward(self, input, hx=None):
        return _forward_simple(self, "RNN", input, hx)


def _forward_packed(self, input, hx, is_lstm):
    data, batch_sizes, sorted_indices, unsorted_indices = input
    bs = [int(b) for b in batch_sizes.tolist()]
    num_directions = 2 if self.bidirectional else 1
    max_batch_size = bs[0] if bs else 0
    real = self.proj_size if self.proj_size > 0 else self.hidden_size
    if hx is None:
        h0 = _zeros((self.num_layers * num_directions, max_batch_size, real), data)
        if is_lstm:
            c0 = _zeros((self.num_layers * num_directions, max_batch_size, self.hidden_size), data)
            hx = (h0, c0)
        else:
            hx = h0
    else:
        hx = self.permute_hidden(tuple(hx) if is_lstm else hx, sorted_indices)
    self.check_forward_args(data, hx, batch_sizes)
    out, hidden = self._forward_impl(data, hx, is_lstm, bs)
    output = PackedSequence(out, batch_sizes, sorted_indices, unsorted_indices)
    return output, self.permute_hidden(hidden, unsorted_indices)


def _forward_simple(self, name, input, hx):
    if isinstance(input, PackedSequence):
        return _forward_packed(self, input, hx, False)
    if input.dim() not in (2, 3):
        raise ValueError(f"{name}: Expected input to be 2D or 3D, got {input.dim()}D tensor "
                         "instead")
    is_batched = input.dim() == 3
    batch_dim = 0 if self.batch_first else 1
    if not is_batched:
        input = input.unsqueeze(batch_dim)
        if hx is not None:
            if hx.dim() != 2:
                raise RuntimeError(f"For unbatched 2-D input, hx should also be 2-D but got "
                                   f"{hx.dim()}-D tensor")
            hx = hx.unsqueeze(1)
    elif hx is not None and hx.dim() != 3:
        raise RuntimeError(f"For batched 3-D input, hx should also be 3-D but got "
                           f"{hx.dim()}-D tensor")
    num_directions = 2 if self.bidirectional else 1
    max_batch_size = input.size(0) if self.batch_first else input.size(1)
    if hx is None:
        hx = _zeros((self.num_layers * num_directions, max_batch_size, self.hidden_size), input)
    self.check_forward_args(input, hx)
    output, hidden = self._forward_impl(input, hx, False)
    if not is_batched:
        output = output.squeeze(batch_dim)
        hidden = hidden.squeeze(1)
    return output, hidden


class LSTM(RNNBase):
    r"""Multi-layer LSTM (gates ``i, f, g, o``; optional ``proj_size`` projection of ``h``).
    Returns ``(output, (h_n, c_n))``.

    >>> import ferrotorch as torch
    >>> lstm = torch.nn.LSTM(10, 20, 2)
    >>> output, (hn, cn) = lstm(torch.randn(5, 3, 10))
    >>> tuple(output.shape), tuple(hn.shape), tuple(cn.shape)
    ((5, 3, 20), (2, 3, 20), (2, 3, 20))
    """

    def __init__(self, *args, **kwargs):
        super().__init__("LSTM", *args, **kwargs)

    def get_expected_cell_size(self, input, batch_sizes=None):
        if batch_sizes is not None:
            mini_batch = int(batch_sizes[0])
        else:
            mini_batch = input.size(0) if self.batch_first else input.size(1)
        num_directions = 2 if self.bidirectional else 1
        return (self.num_layers * num_directions, mini_batch, self.hidden_size)

    def check_forward_args(self, input, hidden, batch_sizes=None):
        self.check_input(input, batch_sizes)
        self.check_hidden_size(hidden[0], self.get_expected_hidden_size(input, batch_sizes),
                               "Expected hidden[0] size {}, got {}")
        self.check_hidden_size(hidden[1], self.get_expected_cell_size(input, batch_sizes),
                               "Expected hidden[1] size {}, got {}")

    def forward(self, input, hx=None):
        if isinstance(input, PackedSequence):
            return _forward_packed(self, input, hx, True)
        if input.dim() not in (2, 3):
            raise ValueError(f"LSTM: Expected input to be 2D or 3D, got {input.dim()}D "
                             "instead")
        is_batched = input.dim() == 3
        batch_dim = 0 if self.batch_first else 1
        num_directions = 2 if self.bidirectional else 1
        real_hidden_size = self.proj_size if self.proj_size > 0 else self.hidden_size
        if not is_batched:
            input = input.unsqueeze(batch_dim)
        max_batch_size = input.size(0) if self.batch_first else input.size(1)
        if hx is None:
            h_zeros = _zeros(
                (self.num_layers * num_directions, max_batch_size, real_hidden_size), input
            )
            c_zeros = _zeros(
                (self.num_layers * num_directions, max_batch_size, self.hidden_size), input
            )
            hx = (h_zeros, c_zeros)
        elif is_batched:
            if hx[0].dim() != 3 or hx[1].dim() != 3:
                raise RuntimeError(
                    "For batched 3-D input, hx and cx should also be 3-D but got "
                    f"({hx[0].dim()}-D, {hx[1].dim()}-D) tensors")
        else:
            if hx[0].dim() != 2 or hx[1].dim() != 2:
                raise RuntimeError(
                    "For unbatched 2-D input, hx and cx should also be 2-D but got "
                    f"({hx[0].dim()}-D, {hx[1].dim()}-D) tensors")
            hx = (hx[0].unsqueeze(1), hx[1].unsqueeze(1))
        self.check_forward_args(input, hx)
        output, (h_n, c_n) = self._forward_impl(input, hx, True)
        if not is_batched:
            output = output.squeeze(batch_dim)
            h_n, c_n = h_n.squeeze(1), c_n.squeeze(1)
        return output, (h_n, c_n)


class GRU(RNNBase):
    r"""Multi-layer GRU (gates ``r, z, n``). Returns ``(output, h_n)``.

    >>> import ferrotorch as torch
    >>> gru = torch.nn.GRU(10, 20, 2, batch_first=True)
    >>> output, hn = gru(torch.randn(3, 5, 10))
    >>> tuple(output.shape), tuple(hn.shape)
    ((3, 5, 20), (2, 3, 20))
    """

    def __init__(self, *args, **kwargs):
        if "proj_size" in kwargs:
            raise ValueError("proj_size argument is only supported for LSTM, not RNN or GRU")
        super().__init__("GRU", *args, **kwargs)

    def forward(self, input, hx=None):
        return _forward_simple(self, "GRU", input, hx)
