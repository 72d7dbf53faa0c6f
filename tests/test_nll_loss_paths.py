"""nll_loss (and cross_entropy) when every target counts, without a weight, reduced: the masks
are left out (NllLoss._forward_all_counted). The numbers must be the general path's bit for bit:
a weight of ones goes the general way and multiplies by exactly one."""
from __future__ import annotations

import numpy as np
import pytest

import autodsl as ad


def _loss_and_grad(z, y, **kw):
    x = ad.tensor(z, requires_grad=True)
    loss = ad.cross_entropy(x, ad.tensor(y, dtype=ad.int64), **kw)
    loss.backward()
    return loss.numpy(), x.grad.numpy()


SHAPES = [((7,), ()), ((5, 4), (5,)), ((3, 4, 2), (3, 2))]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("reduction", ["mean", "sum"])
@pytest.mark.parametrize("zs, ys", SHAPES)
def test_the_unmasked_path_gives_the_general_paths_bits(dtype, reduction, zs, ys):
    rng = np.random.default_rng(1)
    z = (rng.standard_normal(zs) * 3).astype(dtype)
    n_classes = zs[0] if len(zs) == 1 else zs[1]
    y = rng.integers(0, n_classes, ys)
    fast = _loss_and_grad(z, y, reduction=reduction)
    general = _loss_and_grad(z, y, reduction=reduction, weight=ad.tensor(np.ones(n_classes, dtype)))
    assert fast[0].dtype == general[0].dtype == dtype
    assert fast[0].tobytes() == general[0].tobytes()
    assert fast[1].tobytes() == general[1].tobytes()


@pytest.mark.parametrize("reduction", ["mean", "sum"])
def test_against_pytorch_and_central_differences(reduction):
    rng = np.random.default_rng(2)
    z = rng.standard_normal((6, 5))
    y = rng.integers(0, 5, 6)
    loss, grad = _loss_and_grad(z, y, reduction=reduction)
    f = lambda v: _loss_and_grad(v, y, reduction=reduction)[0]      # noqa: E731
    h = 1e-6
    for i, j in [(0, 0), (2, 3), (5, 4), (3, y[3])]:
        e = np.zeros_like(z)
        e[i, j] = h
        assert grad[i, j] == pytest.approx((f(z + e) - f(z - e)) / (2 * h), rel=1e-6, abs=1e-9)
    torch = pytest.importorskip("torch")
    tz = torch.tensor(z, requires_grad=True)
    tl = torch.nn.functional.cross_entropy(tz, torch.tensor(y), reduction=reduction)
    tl.backward()
    assert loss == pytest.approx(tl.item(), rel=1e-14)
    np.testing.assert_allclose(grad, tz.grad.numpy(), rtol=1e-13, atol=1e-16)


def test_targets_that_do_not_all_count_go_the_general_way():
    z = np.array([[1.0, 2.0, 0.5], [0.0, -1.0, 3.0], [2.0, 2.0, 2.0]])
    # an ignore_index among the classes, present: that row counts for nothing
    loss, grad = _loss_and_grad(z, np.array([1, 0, 2]), ignore_index=0)
    kept, kept_grad = _loss_and_grad(z[[0, 2]], np.array([1, 2]))
    assert loss == pytest.approx(kept, rel=1e-15)
    assert np.all(grad[1] == 0) and grad[[0, 2]] == pytest.approx(kept_grad, rel=1e-15)
    # a class outside the range: the same error as before
    with pytest.raises(ad.ValueError_, match=r"class indices must be in 0\.\.2"):
        _loss_and_grad(z, np.array([1, 3, 0]))
    with pytest.raises(ad.ValueError_, match=r"class indices must be in 0\.\.2"):
        _loss_and_grad(z, np.array([-1, 0, 0]))
    # an empty batch: the mean over no targets is nan, as in torch
    loss, _ = _loss_and_grad(np.zeros((0, 3)), np.zeros((0,), np.int64))
    assert np.isnan(loss)


@pytest.mark.parametrize("kw", [{}, {"reduction": "sum"}, {"reduction": "none"}, {"weight": [1.0, 2.0, 3.0]}])
def test_label_smoothing_keeps_a_float32_loss_float32(kw):
    kw = dict(kw)
    if "weight" in kw:
        kw["weight"] = ad.tensor(kw["weight"], dtype=ad.float32)
    x = ad.tensor([[1.0, 2.0, 0.5], [0.0, 1.0, -1.0]], dtype=ad.float32, requires_grad=True)
    y = ad.cross_entropy(x, ad.tensor([1, 2], dtype=ad.int64), label_smoothing=0.1, **kw)
    assert y.dtype == ad.float32
    y.sum().backward()
    assert x.grad.dtype == ad.float32
    torch = pytest.importorskip("torch")
    tkw = dict(kw)
    if "weight" in tkw:
        tkw["weight"] = torch.tensor([1.0, 2.0, 3.0])
    tx = torch.tensor([[1.0, 2.0, 0.5], [0.0, 1.0, -1.0]], requires_grad=True)
    ty = torch.nn.functional.cross_entropy(tx, torch.tensor([1, 2]), label_smoothing=0.1, **tkw)
    np.testing.assert_allclose(y.numpy(), ty.detach().numpy(), rtol=1e-6)
    ty.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("n", [1, 3, 7, 255, 1000, 12345, 99991])
def test_the_means_scale_is_the_general_paths_at_many_batch_sizes(dtype, n):
    # the unmasked path makes -1/n in one rounding; the general one divides -1 by n in the dtype
    rng = np.random.default_rng(n)
    z = rng.standard_normal((n, 2)).astype(dtype)
    y = rng.integers(0, 2, n)
    fast = _loss_and_grad(z, y)
    general = _loss_and_grad(z, y, weight=ad.tensor(np.ones(2, dtype)))
    assert fast[0].tobytes() == general[0].tobytes()
    assert fast[1].tobytes() == general[1].tobytes()


def test_one_rounding_of_the_double_quotient_is_the_float32_quotient():
    # why the unmasked path may round -1/n once from a double (below 2**24, where n is exact)
    n = np.unique(np.random.default_rng(3).integers(1, 1 << 24, 1_000_000)).astype(np.float64)
    assert np.array_equal(np.float32(-1) / n.astype(np.float32), (-1.0 / n).astype(np.float32))


@pytest.mark.parametrize("eps", [-0.1, float("nan")])
def test_label_smoothing_below_zero_or_nan_smooths_nothing_as_torch(eps):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(4)
    z, y = rng.standard_normal((5, 3)), rng.integers(0, 3, 5)
    plain, _ = _loss_and_grad(z, y)
    got, _ = _loss_and_grad(z, y, label_smoothing=eps)
    assert got.tobytes() == plain.tobytes()
    want = torch.nn.functional.cross_entropy(torch.tensor(z), torch.tensor(y), label_smoothing=eps)
    assert got == pytest.approx(want.item(), rel=1e-14)
    with pytest.raises(ad.DSLError, match="label_smoothing"):
        _loss_and_grad(z, y, label_smoothing=1.5)
