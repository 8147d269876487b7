"""NumPy reference for convolutions shared by the conv test files: direct sums over kernel
offsets in float64 (cross-correlation, like PyTorch), with the three gradients on request."""

import itertools

import numpy as np


def _tup(v, nd):
    return tuple(v) if isinstance(v, (tuple, list)) else (v,) * nd


def ref_conv_with_grads(x, w, b, gy, stride=1, padding=0, dilation=1, groups=1):
    """Forward output and, for an upstream gradient ``gy`` (None: no gradients),
    (grad_x, grad_w, grad_b); ``padding`` may be an int/tuple, 'same' or 'valid'."""
    x = np.asarray(x, np.float64)
    w = np.asarray(w, np.float64)
    nd = x.ndim - 2
    k = w.shape[2:]
    s, d = _tup(stride, nd), _tup(dilation, nd)
    if padding == "valid":
        pads = [(0, 0)] * nd
    elif padding == "same":
        pads = [(d[i] * (k[i] - 1) // 2, d[i] * (k[i] - 1) - d[i] * (k[i] - 1) // 2)
                for i in range(nd)]
    else:
        pads = [(p, p) for p in _tup(padding, nd)]
    xp = np.pad(x, [(0, 0), (0, 0)] + pads)
    n, c = x.shape[:2]
    o = w.shape[0]
    cg, og = c // groups, o // groups
    osz = [(xp.shape[2 + i] - d[i] * (k[i] - 1) - 1) // s[i] + 1 for i in range(nd)]
    out = np.zeros((n, o, *osz))
    grads = gy is not None
    if grads:
        gy = np.asarray(gy, np.float64)
        gxp = np.zeros_like(xp)
        gw = np.zeros_like(w)
    for idx in itertools.product(*[range(kk) for kk in k]):
        sl = tuple(slice(idx[i] * d[i], idx[i] * d[i] + s[i] * (osz[i] - 1) + 1, s[i])
                   for i in range(nd))
        patch = xp[(slice(None), slice(None)) + sl]
        for g in range(groups):
            cs, os_ = slice(g * cg, (g + 1) * cg), slice(g * og, (g + 1) * og)
            wg = w[(os_, slice(None)) + idx]
            out[:, os_] += np.einsum("oc,nc...->no...", wg, patch[:, cs])
            if grads:
                gw[(os_, slice(None)) + idx] += np.einsum(
                    "nop,ncp->oc", gy[:, os_].reshape(n, og, -1),
                    patch[:, cs].reshape(n, cg, -1))
                gxp[(slice(None), cs) + sl] += np.einsum("oc,no...->nc...", wg, gy[:, os_])
    if b is not None:
        out += np.asarray(b, np.float64).reshape((1, -1) + (1,) * nd)
    if not grads:
        return out, None, None, None
    crop = tuple(slice(pads[i][0], pads[i][0] + x.shape[2 + i]) for i in range(nd))
    gx = gxp[(slice(None), slice(None)) + crop]
    gb = gy.sum(axis=tuple(i for i in range(gy.ndim) if i != 1))
    return out, gx, gw, gb


def ref_conv(x, w, b=None, stride=1, padding=0, dilation=1, groups=1):
    """Direct convolution (cross-correlation) in float64; padding may be 'same'/'valid'."""
    return ref_conv_with_grads(x, w, b, None, stride, padding, dilation, groups)[0]
