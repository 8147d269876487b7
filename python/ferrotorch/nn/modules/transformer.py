"""``TransformerEncoderLayer``, ``TransformerEncoder``, ``TransformerDecoderLayer``,
``TransformerDecoder`` and ``Transformer`` (PyTorch's structure, names and defaults)."""

import copy

from ferrotorch import _C
from ferrotorch.nn import functional as F
from ferrotorch.nn import init
from ferrotorch.nn.modules.activation import MultiheadAttention
from ferrotorch.nn.modules.container import ModuleList
from ferrotorch.nn.modules.dropout import Dropout
from ferrotorch.nn.modules.linear import Linear
from ferrotorch.nn.modules.module import Module
from ferrotorch.nn.modules.normalization import LayerNorm

__all__ = ["TransformerEncoderLayer", "TransformerEncoder", "TransformerDecoderLayer",
           "TransformerDecoder", "Transformer"]


def _layer_norm(d_model, eps, bias, device=None, dtype=None):
    kwargs = {"eps": eps}
    if not bias:
        kwargs["bias"] = False
    if device is not None:
        kwargs["device"] = device
    if dtype is not None:
        kwargs["dtype"] = dtype
    return LayerNorm(d_model, **kwargs)


def _get_activation_fn(activation):
    if activation == "relu":
        return F.relu
    if activation == "gelu":
        return F.gelu
    raise RuntimeError(f"activation should be relu/gelu, not {activation}")


def _get_clones(module, N):
    return ModuleList([copy.deepcopy(module) for _ in range(N)])


def _generate_square_subsequent_mask(sz, device=None, dtype=None):
    """``(sz, sz)`` float mask: ``-inf`` above the diagonal, ``0`` elsewhere."""
    mask = _C.full((sz, sz), float("-inf"), dtype=dtype or _C.get_default_dtype()).triu(1)
    return mask if device is None else mask.to(device)  # (triu has a CPU kernel only)


class TransformerEncoderLayer(Module):
    r"""Self-attention + feed-forward block (post-norm by default; ``norm_first=True`` for
    pre-norm). Submodules: ``self_attn``, ``linear1``, ``dropout``, ``linear2``, ``norm1``,
    ``norm2``, ``dropout1``, ``dropout2`` as in PyTorch.

    >>> import ferrotorch as torch
    >>> layer = torch.nn.TransformerEncoderLayer(d_model=16, nhead=4, dim_feedforward=64,
    ...                                          batch_first=True)
    >>> layer(torch.randn(2, 7, 16)).shape
    ferrotorch.Size([2, 7, 16])
    """

    __constants__ = ["norm_first"]

    def __init__(self, d_model, nhead, dim_feedforward=2048, dropout=0.1, activation=F.relu,
                 layer_norm_eps=1e-5, batch_first=False, norm_first=False, bias=True,
                 device=None, dtype=None):
        super().__init__()
        fk = {"device": device, "dtype": dtype}
        self.self_attn = MultiheadAttention(d_model, nhead, dropout=dropout, bias=bias,
                                            batch_first=batch_first, **fk)
        self.linear1 = Linear(d_model, dim_feedforward, bias=bias, **fk)
        self.dropout = Dropout(dropout)
        self.linear2 = Linear(dim_feedforward, d_model, bias=bias, **fk)
        self.norm_first = norm_first
        self.norm1 = _layer_norm(d_model, layer_norm_eps, bias, **fk)
        self.norm2 = _layer_norm(d_model, layer_norm_eps, bias, **fk)
        self.dropout1 = Dropout(dropout)
        self.dropout2 = Dropout(dropout)
        if isinstance(activation, str):
            activation = _get_activation_fn(activation)
        self.activation = activation

    def forward(self, src, src_mask=None, src_key_padding_mask=None, is_causal=False):
        x = src
        if self.norm_first:
            x = x + self._sa_block(self.norm1(x), src_mask, src_key_padding_mask, is_causal)
            x = x + self._ff_block(self.norm2(x))
        else:
            x = self.norm1(x + self._sa_block(x, src_mask, src_key_padding_mask, is_causal))
            x = self.norm2(x + self._ff_block(x))
        return x

    def _sa_block(self, x, attn_mask, key_padding_mask, is_causal=False):
        x = self.self_attn(x, x, x, attn_mask=attn_mask, key_padding_mask=key_padding_mask,
                           need_weights=False, is_causal=is_causal)[0]
        return self.dropout1(x)

    def _ff_block(self, x):
        x = self.linear2(self.dropout(self.activation(self.linear1(x))))
        return self.dropout2(x)


class TransformerEncoder(Module):
    r"""A stack of ``num_layers`` deep copies of ``encoder_layer`` (``layers``), followed by
    the optional ``norm``. ``enable_nested_tensor`` is accepted and ignored."""

    __constants__ = ["norm"]

    def __init__(self, encoder_layer, num_layers, norm=None, enable_nested_tensor=True,
                 mask_check=True):
        super().__init__()
        self.layers = _get_clones(encoder_layer, num_layers)
        self.num_layers = num_layers
        self.norm = norm
        self.enable_nested_tensor = enable_nested_tensor
        self.mask_check = mask_check

    def forward(self, src, mask=None, src_key_padding_mask=None, is_causal=None):
        output = src
        for mod in self.layers:
            output = mod(output, src_mask=mask, is_causal=bool(is_causal),
                         src_key_padding_mask=src_key_padding_mask)
        if self.norm is not None:
            output = self.norm(output)
        return output


class TransformerDecoderLayer(Module):
    r"""Self-attention, cross-attention over ``memory`` and feed-forward (submodules
    ``self_attn``, ``multihead_attn``, ``linear1``, ``dropout``, ``linear2``, ``norm1..3``,
    ``dropout1..3`` as in PyTorch)."""

    __constants__ = ["norm_first"]

    def __init__(self, d_model, nhead, dim_feedforward=2048, dropout=0.1, activation=F.relu,
                 layer_norm_eps=1e-5, batch_first=False, norm_first=False, bias=True,
                 device=None, dtype=None):
        super().__init__()
        fk = {"device": device, "dtype": dtype}
        self.self_attn = MultiheadAttention(d_model, nhead, dropout=dropout,
                                            batch_first=batch_first, bias=bias, **fk)
        self.multihead_attn = MultiheadAttention(d_model, nhead, dropout=dropout,
                                                 batch_first=batch_first, bias=bias, **fk)
        self.linear1 = Linear(d_model, dim_feedforward, bias=bias, **fk)
        self.dropout = Dropout(dropout)
        self.linear2 = Linear(dim_feedforward, d_model, bias=bias, **fk)
        self.norm_first = norm_first
        self.norm1 = _layer_norm(d_model, layer_norm_eps, bias, **fk)
        self.norm2 = _layer_norm(d_model, layer_norm_eps, bias, **fk)
        self.norm3 = _layer_norm(d_model, layer_norm_eps, bias, **fk)
        self.dropout1 = Dropout(dropout)
        self.dropout2 = Dropout(dropout)
        self.dropout3 = Dropout(dropout)
        if isinstance(activation, str):
            activation = _get_activation_fn(activation)
        self.activation = activation

    def forward(self, tgt, memory, tgt_mask=None, memory_mask=None, tgt_key_padding_mask=None,
                memory_key_padding_mask=None, tgt_is_causal=False, memory_is_causal=False):
        x = tgt
        if self.norm_first:
            x = x + self._sa_block(self.norm1(x), tgt_mask, tgt_key_padding_mask,
                                   tgt_is_causal)
            x = x + self._mha_block(self.norm2(x), memory, memory_mask,
                                    memory_key_padding_mask, memory_is_causal)
            x = x + self._ff_block(self.norm3(x))
        else:
            x = self.norm1(x + self._sa_block(x, tgt_mask, tgt_key_padding_mask,
                                              tgt_is_causal))
            x = self.norm2(x + self._mha_block(x, memory, memory_mask,
                                               memory_key_padding_mask, memory_is_causal))
            x = self.norm3(x + self._ff_block(x))
        return x

    def _sa_block(self, x, attn_mask, key_padding_mask, is_causal=False):
        x = self.self_attn(x, x, x, attn_mask=attn_mask, key_padding_mask=key_padding_mask,
                           is_causal=is_causal, need_weights=False)[0]
        return self.dropout1(x)

    def _mha_block(self, x, mem, attn_mask, key_padding_mask, is_causal=False):
        x = self.multihead_attn(x, mem, mem, attn_mask=attn_mask,
                                key_padding_mask=key_padding_mask, is_causal=is_causal,
                                need_weights=False)[0]
        return self.dropout2(x)

    def _ff_block(self, x):
        x = self.linear2(self.dropout(self.activation(self.linear1(x))))
        return self.dropout3(x)


class TransformerDecoder(Module):
    r"""A stack of ``num_layers`` deep copies of ``decoder_layer`` and an optional ``norm``."""

    __constants__ = ["norm"]

    def __init__(self, decoder_layer, num_layers, norm=None):
        super().__init__()
        self.layers = _get_clones(decoder_layer, num_layers)
        self.num_layers = num_layers
        self.norm = norm

    def forward(self, tgt, memory, tgt_mask=None, memory_mask=None, tgt_key_padding_mask=None,
                memory_key_padding_mask=None, tgt_is_causal=None, memory_is_causal=False):
        output = tgt
        for mod in self.layers:
            output = mod(output, memory, tgt_mask=tgt_mask, memory_mask=memory_mask,
                         tgt_key_padding_mask=tgt_key_padding_mask,
                         memory_key_padding_mask=memory_key_padding_mask,
                         tgt_is_causal=bool(tgt_is_causal), memory_is_causal=memory_is_causal)
        if self.norm is not None:
            output = self.norm(output)
        return output


class Transformer(Module):
    r"""Encoder-decoder transformer ("Attention Is All You Need") with PyTorch's defaults
    (``d_model=512, nhead=8``, 6 + 6 layers, final ``LayerNorm`` on both stacks)."""

    def __init__(self, d_model=512, nhead=8, num_encoder_layers=6, num_decoder_layers=6,
                 dim_feedforward=2048, dropout=0.1, activation=F.relu, custom_encoder=None,
                 custom_decoder=None, layer_norm_eps=1e-5, batch_first=False, norm_first=False,
                 bias=True, device=None, dtype=None):
        super().__init__()
        fk = {"device": device, "dtype": dtype}
        if custom_encoder is not None:
            self.encoder = custom_encoder
        else:
            encoder_layer = TransformerEncoderLayer(d_model, nhead, dim_feedforward, dropout,
                                                    activation, layer_norm_eps, batch_first,
                                                    norm_first, bias, **fk)
            encoder_norm = _layer_norm(d_model, layer_norm_eps, bias, **fk)
            self.encoder = TransformerEncoder(encoder_layer, num_encoder_layers, encoder_norm)
        if custom_decoder is not None:
            self.decoder = custom_decoder
        else:
            decoder_layer = TransformerDecoderLayer(d_model, nhead, dim_feedforward, dropout,
                                                    activation, layer_norm_eps, batch_first,
                                                    norm_first, bias, **fk)
            decoder_norm = _layer_norm(d_model, layer_norm_eps, bias, **fk)
            self.decoder = TransformerDecoder(decoder_layer, num_decoder_layers, decoder_norm)
        self._reset_parameters()
        self.d_model = d_model
        self.nhead = nhead
        self.batch_first = batch_first

    def forward(self, src, tgt, src_mask=None, tgt_mask=None, memory_mask=None,
                src_key_padding_mask=None, tgt_key_padding_mask=None,
                memory_key_padding_mask=None, src_is_causal=None, tgt_is_causal=None,
                memory_is_causal=False):
        is_batched = src.dim() == 3
        if not self.batch_first and src.size(1) != tgt.size(1) and is_batched:
            raise RuntimeError("the batch number of src and tgt must be equal")
        if self.batch_first and src.size(0) != tgt.size(0) and is_batched:
            raise RuntimeError("the batch number of src and tgt must be equal")
        if src.size(-1) != self.d_model or tgt.size(-1) != self.d_model:
            raise RuntimeError("the feature number of src and tgt must be equal to d_model")
        memory = self.encoder(src, mask=src_mask, src_key_padding_mask=src_key_padding_mask,
                              is_causal=src_is_causal)
        return self.decoder(tgt, memory, tgt_mask=tgt_mask, memory_mask=memory_mask,
                            tgt_key_padding_mask=tgt_key_padding_mask,
                            memory_key_padding_mask=memory_key_padding_mask,
                            tgt_is_causal=tgt_is_causal, memory_is_causal=memory_is_causal)

    @staticmethod
    def generate_square_subsequent_mask(sz, device=None, dtype=None):
        return _generate_square_subsequent_mask(sz, device, dtype)

    def _reset_parameters(self):
        for p in self.parameters():
            if p.dim() > 1:
                init.xavier_uniform_(p.data)  # ``.data``: see the note in rnn.py
