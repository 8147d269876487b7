"""``PackedSequence`` and the packing/padding helpers of ``torch.nn.utils.rnn``.

A packed sequence stores the time steps of a batch of variable-length sequences one after the
other (time-major), each step holding only the sequences that are still running: ``data`` is
``(sum(lengths), *)`` and ``batch_sizes[t]`` is the number of sequences longer than ``t``.
Sequences are sorted by decreasing length (``sorted_indices`` maps back to the caller's order).
"""

from collections import namedtuple
from collections.abc import Iterable

from ferrotorch import _C
from ferrotorch.nn import functional as F

__all__ = ["PackedSequence", "invert_permutation", "pack_padded_sequence",
           "pad_packed_sequence", "pad_sequence", "unpad_sequence", "pack_sequence",
           "unpack_sequence"]

_PackedSequenceBase = namedtuple(
    "PackedSequence", ["data", "batch_sizes", "sorted_indices", "unsorted_indices"])


def invert_permutation(permutation):
    """The inverse of a permutation given as an int64 index tensor (``None`` passes)."""
    if permutation is None:
        return None
    # A scatter rather than argsort (the sort family has CPU kernels only), as PyTorch.
    out = _C.empty_like(permutation)
    index = _C.arange(permutation.numel(), dtype=permutation.dtype, device=permutation.device)
    return out.scatter_(0, permutation, index)


class PackedSequence(_PackedSequenceBase):
    r"""Holds the ``data`` and ``batch_sizes`` of a packed batch of sequences (build it with
    :func:`pack_padded_sequence` or :func:`pack_sequence`, not directly)."""

    def __new__(cls, data, batch_sizes=None, sorted_indices=None, unsorted_indices=None):
        if unsorted_indices is None:
            unsorted_indices = invert_permutation(sorted_indices)
        if batch_sizes is None:
            # The ``PackedSequence((data, batch_sizes), sorted_indices=...)`` form.
            assert isinstance(data, (list, tuple)) and len(data) == 2, (
                "Expected data to be a list or tuple of length 2")
            data, batch_sizes = data
        elif batch_sizes.device.type != "cpu":
            raise ValueError(
                "batch_sizes should always be on CPU. Instances of PackedSequence should "
                "never be created manually. They should be instantiated by functions like "
                "pack_sequence and pack_padded_sequences in nn.utils.rnn. "
                "https://pytorch.org/docs/stable/nn.html#torch.nn.utils.rnn.pack_sequence")
        return super().__new__(cls, data, batch_sizes, sorted_indices, unsorted_indices)

    def _with_data(self, data):
        return type(self)(data, self.batch_sizes, self.sorted_indices, self.unsorted_indices)

    def to(self, *args, **kwargs):
        """``data`` moved or cast as ``Tensor.to``; the index tensors follow ``data`` to its
        device (``batch_sizes`` stays on the CPU), as PyTorch."""
        data = self.data.to(*args, **kwargs)
        if data is self.data:
            return self
        if data.device != self.data.device:

            def move(t):
                return None if t is None else t.to(data.device)

            return type(self)(
                data, self.batch_sizes, move(self.sorted_indices), move(self.unsorted_indices)
            )
        return self._with_data(data)

    def cpu(self, *args, **kwargs):
        return self.to("cpu") if self.data.is_cuda else self

    def cuda(self, *args, **kwargs):
        data = self.data.cuda(*args, **kwargs)
        return self if data is self.data else self.to(data.device)

    def double(self):
        return self.to(dtype=_C.float64)

    def float(self):
        return self.to(dtype=_C.float32)

    def half(self):
        return self.to(dtype=_C.float16)

    def long(self):
        return self.to(dtype=_C.int64)

    def int(self):
        return self.to(dtype=_C.int32)

    def short(self):
        return self.to(dtype=_C.int16)

    def char(self):
        return self.to(dtype=_C.int8)

    def byte(self):
        return self.to(dtype=_C.uint8)

    def pin_memory(self):
        # batch_sizes stays as it is, as PyTorch (see ``to``).
        def pin(t):
            return None if t is None else t.pin_memory()

        return type(self)(self.data.pin_memory(), self.batch_sizes,
                          pin(self.sorted_indices), pin(self.unsorted_indices))

    @property
    def is_cuda(self):
        return self.data.is_cuda

    def is_pinned(self):
        return self.data.is_pinned()


def _lengths_list(lengths):
    if isinstance(lengths, _C.Tensor):
        if lengths.dim() != 1:
            # PyTorch names the legacy scalar type: "2D cpu Long tensor".
            scalar = lengths.type().rsplit(".", 1)[-1].removesuffix("Tensor")
            raise RuntimeError(f"'lengths' argument should be a 1D CPU int64 tensor, but got "
                               f"{lengths.dim()}D {lengths.device.type} {scalar} tensor")
        return [int(v) for v in lengths.tolist()]
    return [int(v) for v in lengths]


def _pack_padded(input, lengths, batch_first):
    """(data, batch_sizes list) of a padded input whose lengths are sorted decreasingly."""
    if batch_first:
        input = input.transpose(0, 1)
    if lengths and min(lengths) <= 0:
        raise RuntimeError("Length of all samples has to be greater than 0, but found an "
                           "element in 'lengths' that is <= 0")
    if len(lengths) != input.size(1):
        raise RuntimeError(f"Expected `len(lengths)` to be equal to batch_size, but got "
                           f"{len(lengths)} (batch_size={input.size(1)})")
    max_len = lengths[0] if lengths else 0
    if max_len > input.size(0):
        raise RuntimeError(f"Expected sequence length to be at most {input.size(0)}, but got "
                           f"a length of {max_len}")
    batch_sizes = [sum(1 for n in lengths if n > t) for t in range(max_len)]
    steps = [input[t, :bs] for t, bs in enumerate(batch_sizes)]
    if not steps:
        return input.reshape(0, *input.shape[2:]), batch_sizes
    return _C.cat(steps, 0), batch_sizes


def pack_padded_sequence(input, lengths, batch_first=False, enforce_sorted=True):
    r"""Pack a padded batch ``(T, B, *)`` (``(B, T, *)`` with ``batch_first``) of sequences
    with the given ``lengths``. With ``enforce_sorted=False`` the lengths may be in any order
    (the batch is sorted internally and ``unsorted_indices`` restores it)."""
    lengths = _lengths_list(lengths)
    if enforce_sorted:
        if any(a < b for a, b in zip(lengths, lengths[1:])):
            raise RuntimeError(
                "`lengths` array must be sorted in decreasing order when `enforce_sorted` is "
                "True. You can pass `enforce_sorted=False` to pack_padded_sequence and/or "
                "pack_sequence to sidestep this requirement if you do not need ONNX "
                "exportability.")
        sorted_indices = None
    else:
        order = sorted(range(len(lengths)), key=lambda i: -lengths[i])
        sorted_indices = _C.tensor(order, dtype=_C.int64, device=input.device)
        lengths = [lengths[i] for i in order]
        input = input.index_select(0 if batch_first else 1, sorted_indices)
    data, batch_sizes = _pack_padded(input, lengths, batch_first)
    return PackedSequence(data, _C.tensor(batch_sizes, dtype=_C.int64), sorted_indices, None)


def _packed_to_padded(data, batch_sizes, padding_value=0.0, total_length=None):
    """Time-major ``(T, B, *)`` tensor from packed ``data`` (``batch_sizes`` a list)."""
    B = batch_sizes[0] if batch_sizes else 0
    T = len(batch_sizes) if total_length is None else total_length
    trail = tuple(data.shape[1:])
    steps = []
    offset = 0
    for bs in batch_sizes:
        step = data[offset:offset + bs]
        offset += bs
        if bs < B:
            step = F.pad(step, (0, 0) * len(trail) + (0, B - bs), value=padding_value)
        steps.append(step)
    for _ in range(T - len(batch_sizes)):
        steps.append(_C.full((B, *trail), padding_value, dtype=data.dtype, device=data.device))
    if not steps:
        return _C.zeros(0, B, *trail, dtype=data.dtype, device=data.device)
    return _C.stack(steps, 0)


def _padded_to_packed(padded, batch_sizes):
    return _C.cat([padded[t, :bs] for t, bs in enumerate(batch_sizes)], 0)


def pad_packed_sequence(sequence, batch_first=False, padding_value=0.0, total_length=None):
    r"""Inverse of :func:`pack_padded_sequence`: returns ``(padded, lengths)`` with
    ``lengths`` an int64 tensor, in the caller's original batch order."""
    batch_sizes = [int(b) for b in sequence.batch_sizes.tolist()]
    max_seq_length = len(batch_sizes)
    if total_length is not None:
        if total_length < max_seq_length:
            raise ValueError(
                "Expected total_length to be at least the length of the longest sequence in "
                f"input, but got total_length={total_length} and max sequence length being "
                f"{max_seq_length}")
    padded = _packed_to_padded(sequence.data, batch_sizes, padding_value, total_length)
    B = batch_sizes[0] if batch_sizes else 0
    lengths = [sum(1 for bs in batch_sizes if bs > b) for b in range(B)]
    lengths = _C.tensor(lengths, dtype=_C.int64)
    if batch_first:
        padded = padded.transpose(0, 1)
    if sequence.unsorted_indices is not None:
        batch_dim = 0 if batch_first else 1
        # ``lengths`` stays on the CPU, as PyTorch's.
        return (padded.index_select(batch_dim, sequence.unsorted_indices),
                lengths.index_select(0, sequence.unsorted_indices.cpu()))
    return padded, lengths


def pad_sequence(sequences, batch_first=False, padding_value=0.0, padding_side="right"):
    r"""Stack a list of ``(L_i, *)`` tensors into ``(max L, B, *)`` (``(B, max L, *)`` with
    ``batch_first``), padding with ``padding_value`` on ``padding_side``."""
    if padding_side not in ("left", "right"):
        raise RuntimeError(f"Expected padding_side to be one of left or right, but got "
                           f"{padding_side}.")
    if isinstance(sequences, _C.Tensor):
        sequences = list(sequences.unbind(0))
    if not isinstance(sequences, Iterable):
        raise RuntimeError("pad_sequence: Expected iterable for input sequences, but got arg "
                           f"of type: {type(sequences)}")
    sequences = list(sequences)
    if not sequences:
        raise RuntimeError("received an empty list of sequences")
    if any(s.dim() == 0 for s in sequences):
        raise RuntimeError("pad_sequence: expected every sequence to have at least one "
                           "dimension, but got a 0-d tensor")
    max_len = max(s.size(0) for s in sequences)
    # The output takes the dtype of the first sequence (PyTorch copies every sequence into
    # a buffer of that dtype rather than promoting).
    dtype = sequences[0].dtype
    padded = []
    for s in sequences:
        if s.dtype != dtype:
            s = s.to(dtype)
        extra = max_len - s.size(0)
        if extra:
            tail = (0, 0) * (s.dim() - 1)
            side = (0, extra) if padding_side == "right" else (extra, 0)
            s = F.pad(s, tail + side, value=padding_value)
        padded.append(s)
    return _C.stack(padded, 0 if batch_first else 1)


def unpad_sequence(padded_sequences, lengths, batch_first=False):
    r"""Split a padded batch back into a list of tensors of the given lengths."""
    if not batch_first:
        padded_sequences = padded_sequences.transpose(0, 1)
    return [seq[:n] for seq, n in zip(padded_sequences.unbind(0), _lengths_list(lengths))]


def pack_sequence(sequences, enforce_sorted=True):
    r"""Pack a list of variable-length ``(L_i, *)`` tensors."""
    lengths = [v.size(0) for v in sequences]
    return pack_padded_sequence(pad_sequence(sequences), lengths,
                                enforce_sorted=enforce_sorted)


def unpack_sequence(packed_sequences):
    r"""Inverse of :func:`pack_sequence`: the list of sequences."""
    padded, lengths = pad_packed_sequence(packed_sequences, batch_first=True)
    return unpad_sequence(padded, lengths, batch_first=True)
