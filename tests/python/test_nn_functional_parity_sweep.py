"""Regression tests from a differential parity sweep of ``ferrotorch.nn.functional`` and the
nn layer classes against PyTorch.

The expected values are hard-coded (taken from PyTorch 2.15) or computed with NumPy, so the
tests run without torch; the ``*_vs_torch`` tests compare directly when torch is installed.
"""

import math
import warnings

import numpy as np
import pytest

import ferrotorch as ft
import ferrotorch.nn.functional as F
from ferrotorch import nn


def t(a, dtype=ft.float32):
    return ft.tensor(np.asarray(a), dtype=dtype)


X2 = [[0.5, -1.0, 2.0], [1.5, 0.2, -0.3]]


# --------------------------------------------------------------------------- nll / cross entropy
@pytest.mark.parametrize("fn", [F.nll_loss, F.cross_entropy])
@pytest.mark.parametrize("dtype,name", [(ft.int32, "Int"), (ft.int16, "Short"),
                                        (ft.bool, "Bool"), (ft.float64, "Double")])
def test_class_index_target_dtype_must_be_long_or_byte(fn, dtype, name):
    # A float target of another shape is a class-index target too (ATen decides by shape).
    with pytest.raises(RuntimeError, match=f"^expected target dtype to be Long or Byte, but got "
                                           f"{name}$"):
        fn(t(X2), ft.tensor([1, 0], dtype=dtype))


def test_uint8_targets_plain_but_not_spatial():
    x = t(X2)
    got = F.cross_entropy(x, ft.tensor([2, 0], dtype=ft.uint8))
    assert float(got) == pytest.approx(0.30222341418266296, rel=1e-6)
    assert float(F.nll_loss(x, ft.tensor([2, 0], dtype=ft.uint8))) == pytest.approx(-1.75)
    with pytest.raises(RuntimeError, match="^expected scalar type Long but found Byte$"):
        F.nll_loss(ft.zeros(2, 3, 4), ft.zeros(2, 4, dtype=ft.uint8))


def test_nll_weight_and_target_shape_checks():
    x = t(X2)
    tgt = ft.tensor([1, 0])
    msg = ("weight tensor should be defined either for all 3 classes or no classes but got "
           "weight tensor of shape: [2]")
    for fn in (F.nll_loss, F.cross_entropy):
        with pytest.raises(RuntimeError, match=f"^{msg}$".replace("[", r"\[").replace("]", r"\]")):
            fn(x, tgt, weight=ft.ones(2))
        with pytest.raises(RuntimeError, match="^expected scalar type Float but found Double$"):
            fn(x, tgt, weight=ft.ones(3, dtype=ft.float64))
    with pytest.raises(RuntimeError, match="^0D or 1D target tensor expected, multi-target"):
        F.nll_loss(x, ft.zeros(2, 1, dtype=ft.int64))
    with pytest.raises(RuntimeError, match=r"^Expected target size \[2, 3\], got \[2, 2\]$"):
        F.nll_loss(ft.zeros(2, 4, 3), ft.zeros(2, 2, dtype=ft.int64))
    with pytest.raises(RuntimeError, match="^weight tensor should be defined either for all or "
                                           "no classes$"):
        F.nll_loss(ft.zeros(2, 4, 3), ft.zeros(2, 3, dtype=ft.int64), weight=ft.ones(3))


def test_cross_entropy_probability_target_rules():
    x = t(X2)
    with pytest.raises(RuntimeError, match="^Expected floating point type for target with class "
                                           "probabilities, got Long$"):
        F.cross_entropy(x, ft.zeros(2, 3, dtype=ft.int64))
    with pytest.raises(RuntimeError, match="^ignore_index is not supported for floating point"):
        F.cross_entropy(x, ft.zeros(2, 3), ignore_index=1)
    # A float64 weight with probabilities promotes (no dtype check on this path).
    out = F.cross_entropy(x, ft.full((2, 3), 1 / 3), weight=ft.ones(3, dtype=ft.float64))
    assert out.dtype == ft.float64


def test_cross_entropy_label_smoothing_bounds():
    x, tgt = t(X2), ft.tensor([2, 0])
    with pytest.raises(RuntimeError, match=r"^label_smoothing must be between 0.0 and 1.0. "
                                           r"Got: 1.5$"):
        F.cross_entropy(x, tgt, label_smoothing=1.5)
    # ATen checks only the upper bound: a negative value means no smoothing.
    assert float(F.cross_entropy(x, tgt, label_smoothing=-0.5)) == pytest.approx(
        0.30222341418266296, rel=1e-6)


# --------------------------------------------------------------------------- other losses
def test_kl_div_negative_target_is_nan_and_legacy_args_do_not_warn():
    out = F.kl_div(ft.zeros(3), t([0.0, -1.0, 2.0]), reduction="none")
    got = out.numpy()
    assert got[0] == 0.0 and math.isnan(got[1]) and got[2] == pytest.approx(2 * math.log(2))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        F.kl_div(ft.zeros(3), ft.ones(3), size_average=True)
    with pytest.warns(UserWarning, match="batchmean"):
        F.kl_div(ft.zeros(3), ft.ones(3))


def test_loss_rank_checks():
    with pytest.raises(RuntimeError, match="^margin_ranking_loss : All input tensors should have "
                                           "same dimension"):
        F.margin_ranking_loss(ft.zeros(5, 1), ft.zeros(5), ft.ones(5))
    with pytest.raises(RuntimeError, match=r"^1D target tensor expects 2D input tensors, but "
                                           r"found inputs with sizes \[2, 4, 3\] and "
                                           r"\[2, 4, 3\].$"):
        F.cosine_embedding_loss(ft.zeros(2, 4, 3), ft.zeros(2, 4, 3), ft.ones(2))
    with pytest.raises(RuntimeError, match="^0D or 1D target tensor expected"):
        F.cosine_embedding_loss(ft.zeros(2, 3), ft.zeros(2, 3), ft.ones(2, 1))
    with pytest.raises(RuntimeError, match="anchor 2D, positive 1D, and negative 2D inputs$"):
        F.triplet_margin_loss(ft.zeros(4, 3), ft.zeros(3), ft.zeros(4, 3))
    with pytest.raises(ValueError, match="^margin must be greater than 0, got 0$"):
        F.triplet_margin_with_distance_loss(ft.zeros(2, 3), ft.zeros(2, 3), ft.zeros(2, 3),
                                            margin=0)


def test_triplet_with_distance_default_is_a_pairwise_distance_child():
    m = nn.TripletMarginWithDistanceLoss()
    assert isinstance(m.distance_function, nn.PairwiseDistance)
    assert repr(m) == "TripletMarginWithDistanceLoss(\n  (distance_function): PairwiseDistance()\n)"
    a, p, n = t([[0.0, 1.0]]), t([[0.0, 2.0]]), t([[3.0, 1.0]])
    assert float(m(a, p, n)) == pytest.approx(max(1.0 + 1.0 - 3.0, 0.0) + 0.0, abs=1e-5)


@pytest.mark.parametrize("fn,by_weight", [(F.mse_loss, True), (F.l1_loss, True),
                                          (F.huber_loss, False)])
def test_weighted_regression_losses(fn, by_weight):
    rng = np.random.RandomState(0)
    a, b = rng.randn(2, 3).astype(np.float32), rng.randn(2, 3).astype(np.float32)
    w = np.abs(rng.randn(2, 3)).astype(np.float32)
    d = np.abs(a - b)
    if fn is F.mse_loss:
        elem = d * d
    elif fn is F.l1_loss:
        elem = d
    else:
        elem = np.where(d < 1.0, 0.5 * d * d, d - 0.5)
    got = fn(t(a), t(b), weight=t(w))
    want = (elem * w).sum() / w.sum() if by_weight else (elem * w).mean()
    assert float(got) == pytest.approx(float(want), rel=1e-5)
    assert float(fn(t(a), t(b), weight=t(w), reduction="sum")) == pytest.approx(
        float((elem * w).sum()), rel=1e-5)
    with pytest.raises(ValueError, match="^Weights and input must have the same size.$"):
        fn(t(a), t(b), weight=t(w[0]))
    with pytest.raises(ValueError, match="^Invalid reduction mode: bad. Expected one of 'none', "
                                         "'mean', 'sum'.$"):
        fn(t(a), t(b), weight=t(w), reduction="bad")


def test_bce_target_dtype_checks():
    x = t([0.2, 0.7, 0.5])
    with pytest.raises(RuntimeError, match="^Found dtype Double but expected Float$"):
        F.binary_cross_entropy(x, ft.ones(3, dtype=ft.float64))
    with pytest.raises(RuntimeError, match="^Found dtype Long but expected Float$"):
        F.binary_cross_entropy(x, ft.tensor([0, 1, 1]))
    with pytest.raises(RuntimeError, match="^result type Float can't be cast to the desired "
                                           "output type Long$"):
        F.binary_cross_entropy_with_logits(x, ft.tensor([0, 1, 1]))
    # A float64 target promotes (as PyTorch's formula does).
    assert F.binary_cross_entropy_with_logits(x, ft.ones(3, dtype=ft.float64)).dtype == \
        ft.float64


def test_bilinear_argument_checks():
    w = ft.zeros(2, 4, 5)
    cases = [((ft.zeros(3, 4), ft.zeros(2, 3, 5)), "input dimensions do not match: got 2 and 3"),
             ((ft.zeros(3, 4), ft.zeros(2, 5)), "input batch dimensions do not match at dim 0: "
                                                "got 3 and 2"),
             ((ft.zeros(3, 3), ft.zeros(3, 5)), "input1 size does not match weight size: got 3 "
                                                "but expected 4"),
             ((ft.zeros(3, 4), ft.zeros(3, 6)), "input2 size does not match weight size: got 6 "
                                                "but expected 5")]
    for (a, b), msg in cases:
        with pytest.raises(RuntimeError, match=rf"^bilinear\(\): {msg}$"):
            F.bilinear(a, b, w)
    with pytest.raises(RuntimeError, match="bias size does not match weight size: got 3 but "
                                           "expected 2$"):
        F.bilinear(ft.zeros(3, 4), ft.zeros(3, 5), w, ft.zeros(3))


def test_conv_transpose_output_size_message():
    m = nn.ConvTranspose2d(4, 2, 3, stride=2, padding=1)
    with pytest.raises(ValueError, match=r"^requested an output size of \(15, 12\), but valid "
                                         r"sizes range from \[13, 11\] to \[14, 12\] \(for an "
                                         r"input of .*Size\(\[7, 6\]\)\)$"):
        m(ft.zeros(2, 4, 7, 6), output_size=(15, 12))
    assert m(ft.zeros(2, 4, 7, 6), output_size=[2, 4, 14, 12]).shape == (2, 2, 14, 12)


# --------------------------------------------------------------------------- pooling
def test_lp_pool_infinite_and_zero_norms():
    y = ft.arange(6.0).reshape(1, 1, 6) - 2.5
    assert F.lp_pool1d(y, math.inf, 2).tolist() == [[[2.5, 0.5, 2.5]]]
    assert F.lp_pool1d(y, -math.inf, 3, 2).tolist() == [[[0.5, 0.5]]]
    x2 = ft.arange(16.0).reshape(1, 1, 4, 4) - 7.5
    np.testing.assert_allclose(F.lp_pool2d(x2, math.inf, 2).numpy(),
                               [[[[7.5, 5.5], [5.5, 7.5]]]])
    with pytest.raises(ValueError, match="^norm_type must be a non-zero value, but got 0$"):
        F.lp_pool2d(x2, 0, 2)


def test_adaptive_pool_output_size_messages():
    x1, x2 = ft.zeros(2, 3, 8), ft.zeros(2, 3, 8, 8)
    with pytest.raises(RuntimeError, match=r"^adaptive_avg_pool1d\(\) argument 'output_size' "
                                           r"should contain one int \(got 2\)$"):
        F.adaptive_avg_pool1d(x1, (4, 4))
    with pytest.raises(TypeError, match="must be tuple of ints, not NoneType"):
        F.adaptive_max_pool1d(x1, None)
    with pytest.raises(RuntimeError, match="^adaptive_avg_pool2d: output_size must be 2$"):
        F.adaptive_avg_pool2d(x2, (4,))
    with pytest.raises(RuntimeError, match=r"^adaptive_max_pool2d\(\): internal error: "
                                           r"output_size.size\(\) must be 2$"):
        F.adaptive_max_pool2d(x2, (4, 4, 4))
    with pytest.raises(RuntimeError, match="^adaptive_avg_pool3d: output_size must be 3$"):
        F.adaptive_avg_pool3d(ft.zeros(1, 2, 4, 4, 4), (2, 2))
    assert F.adaptive_avg_pool2d(x2, (None, 2)).shape == (2, 3, 8, 2)


# --------------------------------------------------------------------------- pad
def test_pad_length_and_mode_messages():
    x = ft.zeros(4)
    with pytest.raises(RuntimeError, match="but got padding length 4 and input of dimension 1$"):
        F.pad(x, (1, 1, 1, 1))
    with pytest.raises(NotImplementedError, match="^Padding size 2 is not supported for 1D "
                                                  "input tensor.\nSupported combinations"):
        F.pad(x, (1, 1), mode="reflect")
    with pytest.raises(NotImplementedError, match="Padding size 4 is not supported for 2D"):
        F.pad(ft.zeros(5, 4), (1, 1, 1, 1), mode="replicate")
    with pytest.raises(RuntimeError, match=r"^Expected 2D or 3D \(batch mode\) tensor with "
                                           r"possibly 0 batch size and other non-zero "
                                           r"dimensions for input, but got: \[2, 0\]$"):
        F.pad(ft.zeros(2, 0), (1, 0), mode="reflect")
    assert F.pad(ft.zeros(0, 2, 3), (1, 0), mode="reflect").shape == (0, 2, 4)
    for p in [(1.5, 0), (True, 1)]:
        with pytest.raises(TypeError, match=f"found element of type {type(p[0]).__name__} at "
                                            "pos 0$"):
            F.pad(ft.zeros(2, 3), p)


@pytest.mark.parametrize("pad,want", [
    ((-1, 1), [1, 2, 3, 4, 5, 1]), ((1, -1), [4, 0, 1, 2, 3, 4]), ((-2, 1), [2, 3, 4, 5, 2]),
    ((2, -1), [3, 4, 0, 1, 2, 3, 4]), ((-3, 3), [3, 4, 5, 3, 4, 5]), ((-2, -1), [2, 3, 4]),
])
def test_circular_pad_crops_before_wrapping(pad, want):
    x = ft.arange(6.0).reshape(1, 6)
    assert F.pad(x, pad, mode="circular").tolist() == [[float(v) for v in want]]


# --------------------------------------------------------------------------- interpolate
def test_interpolate_mode_errors():
    with pytest.raises(NotImplementedError, match=r"^Input Error: Only 3D, 4D and 5D input "
                                                  r"Tensors supported \(got 3D\) for the modes: "
                                                  r"nearest \| linear \| bilinear \| bicubic \| "
                                                  r"trilinear \| lanczos \| area \| nearest-exact "
                                                  r"\(got bicubic\)$"):
        F.interpolate(ft.zeros(1, 1, 4), size=3, mode="bicubic")
    with pytest.raises(NotImplementedError, match="^Got 5D input, but linear mode needs 3D"):
        F.interpolate(ft.zeros(1, 1, 2, 2, 2), size=3, mode="linear")
    with pytest.raises(NotImplementedError, match="^Got 5D input, but bilinear mode needs 4D"):
        F.interpolate(ft.zeros(1, 1, 2, 2, 2), size=3, mode="bilinear")


def test_interpolate_5d_scale_rules():
    # 3-d nearest uses the given scale even when the size does not change (no copy shortcut).
    x = ft.arange(3.0).reshape(1, 1, 1, 1, 3)
    got = F.interpolate(x, scale_factor=(1, 1, 1.3), mode="nearest")
    assert got.tolist() == [[[[[0.0, 0.0, 1.0]]]]]
    # ... while linear modes copy a same-size dim whatever the scale.
    y = ft.arange(6.0).reshape(1, 1, 1, 2, 3)
    got = F.interpolate(y, scale_factor=(1, 1, 1.3), mode="trilinear")
    assert got.tolist() == [[[[[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]]]]]


def test_interpolate_uint8_nearest():
    x = ft.arange(12, dtype=ft.uint8).reshape(1, 1, 3, 4)
    got = F.interpolate(x, size=(2, 6))
    assert got.dtype == ft.uint8
    assert got.tolist() == [[[[0, 0, 1, 2, 2, 3], [4, 4, 5, 6, 6, 7]]]]
    got = F.interpolate(ft.arange(4, dtype=ft.uint8).reshape(1, 1, 4), size=2,
                        mode="nearest-exact")
    assert got.tolist() == [[[1, 3]]]


# --------------------------------------------------------------------------- normalization
def test_batch_norm_argument_checks_in_aten_order():
    x = ft.zeros(4, 3, 5)
    o3, o4 = ft.ones(3), ft.ones(4)
    for args, name in [((o4, o4, o4, o4), "running_mean"), ((o3, o4, o4, o4), "running_var"),
                       ((o3, o3, o4, o4), "weight"), ((o3, o3, o3, o4), "bias")]:
        with pytest.raises(RuntimeError, match=f"^{name} should contain 3 elements not 4$"):
            F.batch_norm(x, *args, training=True)
    with pytest.raises(ValueError, match="^running_mean and running_var must either both be "
                                         "None or neither be None$"):
        F.batch_norm(x, None, o3, training=True)
    with pytest.raises(RuntimeError, match="^running_mean must be defined in evaluation mode$"):
        F.batch_norm(x, None, o3)
    with pytest.raises(RuntimeError, match="^running_var must be defined in evaluation mode$"):
        F.batch_norm(x, o3, None)
    with pytest.raises(RuntimeError, match="^running_mean should contain 3 elements not 4$"):
        nn.BatchNorm1d(4)(x)


def test_norm_layer_messages():
    with pytest.raises(ValueError, match=r"^num_channels \(3\) must be divisible by num_groups "
                                         r"\(2\)$"):
        nn.GroupNorm(2, 3)
    with pytest.raises(ValueError, match="^Expected 3D or higher dimensionality {26}input "
                                         r"\(got 2 dimensions\)$"):
        F.local_response_norm(ft.zeros(3, 4), 2)


# --------------------------------------------------------------------------- layers: repr / ctor
def test_layer_reprs_and_constructor_messages():
    assert repr(nn.Hardsigmoid(True)) == "Hardsigmoid()"
    assert repr(nn.Hardswish(inplace=True)) == "Hardswish()"
    assert repr(nn.ReLU(True)) == "ReLU(inplace=True)"
    with pytest.raises(AssertionError, match=r"^max_val \(-2.0\) must be greater than min_val "
                                             r"\(2.0\)$"):
        nn.Hardtanh(2.0, -2.0)
    m = nn.AdaptiveLogSoftmaxWithLoss(16, 10, [4, 8])
    assert repr(m).startswith("AdaptiveLogSoftmaxWithLoss(\n  (head): Linear(in_features=16")


@pytest.mark.parametrize("kw,err,msg", [
    (dict(input_size=3.0, hidden_size=4), TypeError, "input_size should be of type int, got: "
                                                     "float"),
    (dict(input_size=0, hidden_size=4), ValueError, "input_size must be greater than zero"),
    (dict(input_size=3, hidden_size=4, bias=1), TypeError, "bias should be of type bool, got: "
                                                           "int"),
    (dict(input_size=3, hidden_size=4, batch_first=None), TypeError,
     "batch_first should be of type bool, got: NoneType"),
])
def test_rnn_constructor_type_checks(kw, err, msg):
    with pytest.raises(err, match=f"^{msg}$"):
        nn.LSTM(**kw)


# --------------------------------------------------------------------------- activations / dropout
def test_threshold_keeps_integer_dtype():
    got = F.threshold(ft.arange(-3, 3), 0.5, 2.7)
    assert got.dtype == ft.int64
    assert got.tolist() == [2, 2, 2, 2, 1, 2]


def test_softshrink_lambda_range_message():
    with pytest.raises(RuntimeError, match=r"^lambda must be in range \[0, 3.40282e\+38\] for "
                                           r"input dtype Float, but found -0.5$"):
        F.softshrink(ft.ones(2), -0.5)
    with pytest.raises(RuntimeError, match=r"^lambda must be in range \[0, 1.79769e\+308\] for "
                                           r"input dtype Double, but found -1$"):
        F.softshrink(ft.ones(2, dtype=ft.float64), -1.0)


def test_dropout3d_treats_non_5d_input_as_one_sample():
    ft.manual_seed(0)
    x = ft.ones(6, 3, 5)
    with pytest.warns(UserWarning, match="Received a 3-D input to dropout3d"):
        out = F.dropout3d(x, 0.5, training=True)
    # One Bernoulli draw per dim-0 slice (the channel of an unbatched (C, D, H, W) sample).
    got = out.numpy()
    for c in range(6):
        assert len(np.unique(got[c])) == 1
    with pytest.warns(UserWarning):
        same = F.dropout3d(x, 0.5, training=False)
    assert same is not x and same.tolist() == x.tolist()


# --------------------------------------------------------------------------- embedding / one_hot
def test_embedding_and_one_hot_checks():
    with pytest.raises(RuntimeError, match="^'weight' must be 2-D$"):
        F.embedding(ft.tensor([1]), ft.zeros(10))
    with pytest.raises(RuntimeError, match=r"instead \(while checking arguments for embedding\)$"):
        F.embedding(ft.tensor([1.0]), ft.zeros(10, 3))
    with pytest.raises(RuntimeError, match="^Class values must be non-negative.$"):
        F.one_hot(ft.tensor([0, -1]))
    with pytest.raises(RuntimeError, match="^Class values must be smaller than num_classes.$"):
        F.one_hot(ft.tensor([0, 3]), 2)


# --------------------------------------------------------------------------- distances
@pytest.mark.parametrize("p,want", [(0.0, 3.0), (math.inf, 3.0000009536743164),
                                    (-math.inf, 1.0000009536743164),
                                    (-1.0, 0.5454548001289368), (2.0, math.sqrt(14.0))])
def test_pairwise_distance_is_a_norm(p, want):
    got = F.pairwise_distance(t([[1.0, -2.0, 3.0]]), ft.zeros(1, 3), p=p)
    assert got.shape == (1,)
    assert float(got[0]) == pytest.approx(want, rel=1e-5)


def test_pairwise_distance_gradient_and_keepdim():
    a = ft.tensor([[1.0, -2.0, 3.0]], requires_grad=True)
    d = F.pairwise_distance(a, ft.zeros(1, 3), p=math.inf, keepdim=True)
    assert d.shape == (1, 1)
    d.sum().backward()
    np.testing.assert_allclose(a.grad.numpy(), [[0.0, 0.0, 1.0]])


def test_cosine_similarity_dtypes():
    got = F.cosine_similarity(ft.tensor([[1, 2, 3]]), t([[1.0, 0.0, 1.0]]))
    assert got.dtype == ft.float32
    assert float(got[0]) == pytest.approx(4 / math.sqrt(14 * 2), rel=1e-6)
    with pytest.raises(RuntimeError, match="^expected common dtype to be floating point, yet "
                                           "common dtype is Long$"):
        F.cosine_similarity(ft.tensor([[1, 2]]), ft.tensor([[1, 2]]))


# --------------------------------------------------------------------------- unfold / fold
def test_unfold_fold_checks():
    x = ft.zeros(2, 3, 6, 5)
    with pytest.raises(RuntimeError, match="^It is expected kernel_size equals to 2, but got "
                                           "size 3$"):
        F.unfold(x, (2, 2, 2))
    with pytest.raises(RuntimeError, match="^kernel size should be greater than zero, but got "
                                           "kernel_height: 0 kernel_width: 0$"):
        F.unfold(x, 0)
    with pytest.raises(RuntimeError, match="^stride should be greater than zero, but got "
                                           "stride_height: 0 stride_width: 0$"):
        F.fold(ft.zeros(2, 12, 20), (6, 5), 2, stride=0)
    with pytest.raises(RuntimeError, match=r"^Given input with spatial size \(6, 5\), "
                                           r"kernel_size=\(7, 7\), dilation=\(1, 1\), "
                                           r"padding=\(0, 0\), calculated shape of the array "
                                           r"of sliding blocks as \(0, -1\), but its "
                                           r"components must be at least one.$"):
        F.unfold(x, 7)
    with pytest.raises(RuntimeError, match=r"^Expected 3D or 4D \(batch mode\) tensor"):
        F.unfold(ft.zeros(1, 2, 3, 4, 5), 2)
    with pytest.raises(RuntimeError, match=r"^Expected 2D or 3D \(batch mode\) tensor for input"):
        F.fold(ft.zeros(1, 2, 12, 12), (4, 5), 2)
    with pytest.raises(RuntimeError, match=r"kernel_size=\(2, 2\).$"):
        F.fold(ft.zeros(2, 13, 12), (4, 5), 2)
    assert F.unfold(ft.zeros(0, 3, 4, 4), 2).shape == (0, 12, 9)


# --------------------------------------------------------------------------- grid_sample / affine
def _cubic_weights(f):
    a = -0.75  # PyTorch's cubic convolution coefficient

    def near(x):
        return ((a + 2) * x - (a + 3)) * x * x + 1

    def far(x):
        return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a

    return [far(f + 1), near(f), near(1 - f), far(2 - f)]


def test_grid_sample_tricubic_matches_numpy():
    rng = np.random.RandomState(0)
    vol = rng.randn(5, 6, 7).astype(np.float32)
    x = ft.tensor(vol.reshape(1, 1, 5, 6, 7))
    # Points whose 4 taps per axis are all inside the volume (no padding rule involved).
    pts = np.array([[1.3, 2.2, 3.7], [2.5, 1.5, 2.25], [2.0, 3.6, 1.1]])  # (d, h, w)
    sizes = np.array([5, 6, 7])
    norm = pts / (sizes - 1) * 2 - 1  # align_corners=True
    grid = ft.tensor(norm[:, ::-1].reshape(1, 1, 1, 3, 3).astype(np.float32).copy())
    got = F.grid_sample(x, grid, mode="bicubic", align_corners=True).numpy().reshape(-1)
    want = []
    for p in pts:
        base = np.floor(p).astype(int)
        wd, wh, ww = (_cubic_weights(p[i] - base[i]) for i in range(3))
        want.append(sum(wd[i] * wh[j] * ww[k] * vol[base[0] - 1 + i, base[1] - 1 + j,
                                                     base[2] - 1 + k]
                        for i in range(4) for j in range(4) for k in range(4)))
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)


def test_grid_sample_check_order_and_messages():
    x = ft.zeros(2, 3, 5, 6)
    with pytest.raises(RuntimeError, match=r"^grid_sampler\(\): expected 4D input and grid with "
                                           r"same number of dimensions"):
        F.grid_sample(x, ft.zeros(2, 4, 7, 2, 2), align_corners=False)
    with pytest.raises(RuntimeError, match=r"expected grid to have size 2 in last dimension"):
        F.grid_sample(x, ft.zeros(2, 4, 7, 2, 3), align_corners=False)
    with pytest.raises(RuntimeError, match="^expected scalar type Float but found Double$"):
        F.grid_sample(x, ft.zeros(2, 4, 7, 2, dtype=ft.float64), align_corners=False)


def test_affine_grid_messages():
    with pytest.raises(ValueError, match=r"for size \(2, 3, 4, 5\). Got"):
        F.affine_grid(ft.zeros(2, 3, 3), (2, 3, 4, 5), False)
    with pytest.raises(ValueError, match=r"^Expected non-zero, positive output size. Got "
                                         r"\[2, 3, 0, 5\]$"):
        F.affine_grid(ft.zeros(2, 2, 3), [2, 3, 0, 5], False)
    with pytest.raises(RuntimeError, match=r"^Expected size for first two dimensions of batch2 "
                                           r"tensor to be: \[3, 3\] but got: \[2, 3\].$"):
        F.affine_grid(ft.zeros(2, 2, 3), (3, 3, 4, 5), False)


# --------------------------------------------------------------------------- attention
def test_sdpa_argument_messages():
    q = ft.zeros(1, 2, 3, 4)
    with pytest.raises(RuntimeError, match="^Expected query, key, and value to have the same "
                                           "dtype, but got query.dtype: double key.dtype: float "
                                           "and value.dtype: float instead.$"):
        F.scaled_dot_product_attention(q.double(), q, q)
    with pytest.raises(RuntimeError, match="^Expected attn_mask dtype to be bool or float or to "
                                           "match query dtype, but got attn_mask.dtype: long int "
                                           "and  query.dtype: float instead.$"):
        F.scaled_dot_product_attention(q, q, q, attn_mask=ft.zeros(3, 3, dtype=ft.int64))
    with pytest.raises(RuntimeError, match="^Expected query, key, and value to all be  at least 2 "
                                           "dimensional, but got query.dim: 1 key.dim: 1 and "
                                           "value.dim: 1 instead.$"):
        F.scaled_dot_product_attention(ft.zeros(4), ft.zeros(4), ft.zeros(4))


@pytest.mark.parametrize("kind", ["bool", "float"])
def test_sdpa_fully_masked_rows_are_zero_with_finite_gradients(kind):
    rng = np.random.RandomState(0)
    x = ft.tensor(rng.randn(1, 3, 4).astype(np.float32), requires_grad=True)
    if kind == "bool":
        mask = ft.ones(3, 3, dtype=ft.bool)
        mask[1] = False
    else:
        mask = ft.zeros(3, 3)
        mask[1] = float("-inf")
    out = F.scaled_dot_product_attention(x, x, x, attn_mask=mask)
    assert out[0, 1].tolist() == [0.0] * 4
    out.pow(2).sum().backward()
    assert np.isfinite(x.grad.numpy()).all()
    # The live rows are ordinary attention.
    xs = x.detach().numpy()[0]
    s = xs @ xs.T / 2.0
    p = np.exp(s - s.max(1, keepdims=True))
    p /= p.sum(1, keepdims=True)
    np.testing.assert_allclose(out.detach().numpy()[0, [0, 2]], (p @ xs)[[0, 2]], rtol=1e-5,
                               atol=1e-6)


def test_mha_key_padding_mask_shape_message():
    m = nn.MultiheadAttention(8, 2)
    q = ft.zeros(4, 2, 8)
    with pytest.raises(AssertionError, match=r"^Expected key_padded_mask.shape\[1\] to be 4, but "
                                             r"got 3$"):
        m(q, q, q, key_padding_mask=ft.zeros(2, 3, dtype=ft.bool))


# --------------------------------------------------------------------------- vs torch
def test_losses_and_sampling_vs_torch():
    torch = pytest.importorskip("torch")
    import torch.nn.functional as TF

    rng = np.random.RandomState(0)
    vol = rng.randn(1, 2, 3, 4, 5).astype(np.float32)
    grid = (rng.rand(1, 2, 3, 4, 3).astype(np.float32) * 2.4 - 1.2)
    for pm in ("zeros", "border", "reflection"):
        for ac in (True, False):
            want = TF.grid_sample(torch.tensor(vol), torch.tensor(grid), mode="bicubic",
                                  padding_mode=pm, align_corners=ac).numpy()
            got = F.grid_sample(ft.tensor(vol), ft.tensor(grid), mode="bicubic",
                                padding_mode=pm, align_corners=ac).numpy()
            np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)
    a, b = rng.randn(4, 5).astype(np.float32), rng.randn(4, 5).astype(np.float32)
    for p in (0.0, 1.0, 3.0, math.inf, -math.inf, -1.0, 0.5):
        want = TF.pairwise_distance(torch.tensor(a), torch.tensor(b), p=p).numpy()
        got = F.pairwise_distance(ft.tensor(a), ft.tensor(b), p=p).numpy()
        np.testing.assert_allclose(got, want, rtol=1e-5)
    logits = rng.randn(5, 4).astype(np.float32)
    tgt = np.array([0, 1, 3, 2, 2], dtype=np.uint8)
    for ls in (0.0, 0.2):
        want = TF.cross_entropy(torch.tensor(logits), torch.tensor(tgt), label_smoothing=ls)
        got = F.cross_entropy(ft.tensor(logits), ft.tensor(tgt), label_smoothing=ls)
        assert float(got) == pytest.approx(float(want), rel=1e-5)
    x = rng.randn(1, 2, 3, 4, 5).astype(np.float32)
    for sf in [(1.3, 0.5, 2.0), (2.3, 1.0, 1.7)]:
        for mode in ("nearest", "trilinear"):
            want = TF.interpolate(torch.tensor(x), scale_factor=sf, mode=mode).numpy()
            got = F.interpolate(ft.tensor(x), scale_factor=sf, mode=mode).numpy()
            np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
