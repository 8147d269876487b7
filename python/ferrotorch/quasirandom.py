"""``torch.quasirandom``: the Sobol' low-discrepancy sequence engine.

:class:`SobolEngine` follows PyTorch's (same API, same state attributes ``sobolstate``,
``shift``, ``quasi``, ``num_generated``): Joe and Kuo's direction numbers
(``new-joe-kuo-6.21201``), 30 bits, Gray-code order. Unscrambled sequences are bit-for-bit
PyTorch's. The points are computed all at once from their indices (point ``i`` is the XOR of
the direction numbers selected by the bits of the Gray code ``i ^ (i >> 1)``), so a draw is a
loop over the 30 bits, not over the points.

Scrambling is PyTorch's (Owen's linear matrix scramble with a random lower-triangular unit
matrix per dimension, plus a random digital shift); the random bits come from ferrotorch's
generator, so a scrambled sequence is deterministic for a given ``seed`` but not bit-equal to
PyTorch's.

Limit: the direction-number table shipped here (:mod:`ferrotorch._sobol_data`) holds the
first 1111 dimensions of the 21201 PyTorch supports; a larger ``dimension`` (up to 21201)
raises ``NotImplementedError``, and one outside ``[1, 21201]`` raises PyTorch's
``ValueError``.
"""

import base64
import zlib

from ferrotorch import _C

Tensor = _C.Tensor

__all__ = ["SobolEngine"]

_TABLE = None


def _direction_table():
    """(degrees, polynomials, initial direction numbers) for dimensions 1 .. MAXDIM - 1 of
    the packed table (decoded once)."""
    global _TABLE
    if _TABLE is None:
        from ferrotorch import _sobol_data

        payload = zlib.decompress(base64.b64decode("".join(_sobol_data.DATA)))
        count = _sobol_data.MAXDIM - 1
        degrees = list(payload[:count])
        stream = payload[count:]
        bits = int.from_bytes(stream, "big")
        pos = len(stream) * 8
        polys, inits = [], []

        def take(width):
            nonlocal pos
            pos -= width
            return (bits >> pos) & ((1 << width) - 1)

        for s in degrees:
            inner = take(s - 1)
            polys.append((1 << s) | (inner << 1) | 1)
            inits.append([(take(k) << 1) | 1 for k in range(s)])
        _TABLE = (degrees, polys, inits)
    return _TABLE


def _initial_state(dimension, maxbit):
    """``sobolstate`` (``dimension x maxbit`` int64): the direction numbers ``v[d, j]``,
    already shifted to ``m_j << (maxbit - 1 - j)``. The recurrence
    ``m_j = 2^s m_{j-s} ^ m_{j-s} ^ XOR_{k<s-1} 2^(k+1) a_k m_{j-k-1}`` runs on all
    dimensions at once, one column at a time."""
    degrees, polys, inits = _direction_table()
    rows = dimension - 1
    cols = []
    if rows > 0:
        deg = _C.tensor(degrees[:rows], dtype=_C.int64)
        poly = _C.tensor(polys[:rows], dtype=_C.int64)
        top = max(degrees[:rows])
        init = _C.tensor([m + [0] * (top - len(m)) for m in inits[:rows]], dtype=_C.int64)
        zero = _C.zeros(rows, dtype=_C.int64)
        for j in range(maxbit):
            # m_{j - s} (the index clamped where j < s: those entries come from the table).
            base_idx = (j - deg).clamp(min=0)
            stacked = _C.stack(cols, 1) if cols else zero.unsqueeze(1)
            newv = stacked.gather(1, base_idx.clamp(max=max(len(cols) - 1, 0)).unsqueeze(1))
            newv = newv.squeeze(1)
            for k in range(min(top, j)):
                # coefficient bit (s - 1 - k) of the polynomial times 2^(k+1) m_{j-k-1}
                coef = ((poly >> (deg - 1 - k).clamp(min=0)) & 1).bool() & (k < deg)
                newv = newv ^ _C.where(coef, cols[j - k - 1] << (k + 1), zero)
            from_table = init[:, j] if j < top else zero
            cols.append(_C.where(j < deg, from_table, newv))
    first = _C.ones(1, maxbit, dtype=_C.int64)
    state = first if rows == 0 else _C.cat([first, _C.stack(cols, 1)], 0)
    pow2 = _C.tensor([1 << (maxbit - 1 - j) for j in range(maxbit)], dtype=_C.int64)
    return state * pow2


def _bits_msb_first(values, maxbit):
    """The bits of ``values`` (int64), most significant of ``maxbit`` first, as a new last
    dimension."""
    shifts = _C.tensor([maxbit - 1 - c for c in range(maxbit)], dtype=_C.int64)
    return (values.unsqueeze(-1) >> shifts) & 1


class SobolEngine:
    r"""An engine for (scrambled) Sobol' sequences, as ``torch.quasirandom.SobolEngine``.

    Args:
        dimension (int): the dimensionality of the points (1 .. 1111 here; PyTorch: 21201).
        scramble (bool): whether to scramble (random linear matrix scramble and digital
            shift). Default ``False``.
        seed (int, optional): the seed of the scrambling's random bits.
    """

    MAXBIT = 30
    MAXDIM = 21201

    def __init__(self, dimension, scramble=False, seed=None):
        if dimension > self.MAXDIM or dimension < 1:
            raise ValueError("Supported range of dimensionality "
                             f"for SobolEngine is [1, {self.MAXDIM}]")
        from ferrotorch import _sobol_data

        if dimension > _sobol_data.MAXDIM:
            raise NotImplementedError(
                f"SobolEngine: ferrotorch ships the direction numbers of the first "
                f"{_sobol_data.MAXDIM} dimensions only (PyTorch: {self.MAXDIM}); got "
                f"dimension={dimension}")
        self.seed = seed
        self.scramble = scramble
        self.dimension = dimension
        self.sobolstate = _initial_state(dimension, self.MAXBIT)
        if not self.scramble:
            self.shift = _C.zeros(self.dimension, dtype=_C.int64)
        else:
            self._scramble()
        self.quasi = self.shift.clone()
        self._first_point = (self.quasi / 2 ** self.MAXBIT).reshape(1, -1)
        self.num_generated = 0

    def _points(self, start, n):
        """The integer points ``start .. start + n - 1`` of the sequence (``n x dimension``)."""
        index = _C.arange(start, start + n, dtype=_C.int64)
        gray = index ^ (index >> 1)
        result = self.shift.unsqueeze(0).expand(n, self.dimension).clone()
        zero = _C.zeros((), dtype=_C.int64)
        for bit in range(max(start + n, 1).bit_length()):
            chosen = ((gray >> bit) & 1).bool().unsqueeze(1)
            result = result ^ _C.where(chosen, self.sobolstate[:, bit].unsqueeze(0), zero)
        return result

    def draw(self, n=1, out=None, dtype=None):
        r"""The next ``n`` points of the sequence, an ``(n, dimension)`` tensor of ``dtype``
        (default: the default float dtype)."""
        if dtype is None:
            dtype = _C.get_default_dtype()
        n = int(n)
        if n < 0:
            raise ValueError(f"n must be non-negative, but got {n}")
        if self.num_generated == 0 and n == 1:
            result = self._first_point.to(dtype)
        else:
            points = self._points(self.num_generated, n)
            if n > 0:
                self.quasi = points[-1].clone()
            result = (points.to(_C.float64) * (1.0 / 2 ** self.MAXBIT)).to(dtype)
            if self.num_generated == 0:
                result = _C.cat((self._first_point.to(dtype), result[1:]), -2)
        self.num_generated += n
        if out is not None:
            out.resize_as_(result).copy_(result)
            return out
        return result

    def draw_base2(self, m, out=None, dtype=None):
        r"""The next ``2**m`` points; the total drawn must stay a power of 2 (the balance
        properties of Sobol' points), else ``ValueError``."""
        n = 2 ** m
        total_n = self.num_generated + n
        if not (total_n & (total_n - 1) == 0):
            raise ValueError("The balance properties of Sobol' points require "
                             f"n to be a power of 2. {self.num_generated} points have been "
                             f"previously generated, then: n={self.num_generated}+2**{m}="
                             f"{total_n}. If you still want to do this, please use "
                             "'SobolEngine.draw()' instead.")
        return self.draw(n=n, out=out, dtype=dtype)

    def reset(self):
        r"""Back to the first point."""
        self.quasi.copy_(self.shift)
        self.num_generated = 0
        return self

    def fast_forward(self, n):
        r"""Skip ``n`` points (as drawing them without using them)."""
        if n == 0:
            return self
        last = self.num_generated + n - 1
        self.quasi = self._points(last, 1)[0].clone()
        self.num_generated += n
        return self

    def _scramble(self):
        g = None
        if self.seed is not None:
            g = _C.Generator()
            g.manual_seed(self.seed)
        bits = self.MAXBIT
        # The random digital shift.
        shift_ints = _C.randint(2, (self.dimension, bits), generator=g)
        self.shift = (shift_ints * _C.tensor([1 << j for j in range(bits)],
                                             dtype=_C.int64)).sum(-1)
        # A random lower-triangular unit matrix per dimension applied to every direction
        # number's bits (most significant first), mod 2: PyTorch's _sobol_engine_scramble_.
        ltm = _C.randint(2, (self.dimension, bits, bits), generator=g).tril()
        eye = _C.eye(bits, dtype=ltm.dtype).unsqueeze(0)
        ltm = ltm * (1 - eye) + eye
        v_bits = _bits_msb_first(self.sobolstate, bits).to(_C.float64)  # (d, j, c)
        mixed = v_bits.matmul(ltm.to(_C.float64).transpose(-1, -2))     # (d, j, p)
        mixed = mixed.to(_C.int64).remainder(2)
        weights = _C.tensor([1 << (bits - 1 - p) for p in range(bits)], dtype=_C.int64)
        self.sobolstate = (mixed * weights).sum(-1)

    def __repr__(self):
        fmt_string = [f"dimension={self.dimension}"]
        if self.scramble:
            fmt_string += ["scramble=True"]
        if self.seed is not None:
            fmt_string += [f"seed={self.seed}"]
        return self.__class__.__name__ + "(" + ", ".join(fmt_string) + ")"
