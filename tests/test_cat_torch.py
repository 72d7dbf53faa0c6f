"""cat and stack as torch's: the dtype the inputs promote to (not NumPy's), and cat's skipping
of 1-d empty tensors, shape (0,), beside tensors of other shapes (with an empty gradient)."""
from __future__ import annotations

import numpy as np
import pytest

import autodsl as ad

torch = pytest.importorskip("torch")


def _a(shape, dtype, fill=1.0, grad=False):
    return ad.tensor(np.full(shape, fill), dtype=getattr(ad, dtype), requires_grad=grad)


def _t(shape, dtype, fill=1.0, grad=False):
    return torch.tensor(np.full(shape, fill), dtype=getattr(torch, dtype), requires_grad=grad)


@pytest.mark.parametrize("fn", ["cat", "stack"])
@pytest.mark.parametrize("dtypes", [("int64", "float32"), ("int32", "float32"), ("float32", "float64"),
                                    ("bool", "int32"), ("bool", "float32"), ("int32", "int64")])
def test_the_result_dtype_is_torchs(fn, dtypes):
    a = getattr(ad, fn)([_a((2,), d) for d in dtypes])
    t = getattr(torch, fn)([_t((2,), d) for d in dtypes])
    assert a.dtype.name == str(t.dtype).removeprefix("torch.")
    np.testing.assert_array_equal(a.numpy(), t.numpy())


def test_a_gradient_comes_back_in_its_inputs_dtype():
    x32, x64 = _a((2,), "float32", grad=True), _a((3,), "float64", grad=True)
    (ad.cat([x32, x64]) * 3.0).sum().backward()
    t32, t64 = _t((2,), "float32", grad=True), _t((3,), "float64", grad=True)
    (torch.cat([t32, t64]) * 3.0).sum().backward()
    assert x32.grad.dtype.name == "float32" and x64.grad.dtype.name == "float64"
    np.testing.assert_array_equal(x32.grad.numpy(), t32.grad.numpy())


@pytest.mark.parametrize("shapes, dim", [
    ([(0,), (2, 3)], 0), ([(2, 3), (0,)], 1), ([(0,), (0, 3)], 0), ([(0,), (0,)], 1), ([(0,), (2, 3), (0,)], -1),
])
def test_one_d_empty_tensors_are_skipped(shapes, dim):
    xs = [_a(s, "float64", grad=True) for s in shapes]
    ts = [_t(s, "float64", grad=True) for s in shapes]
    y, ty = ad.cat(xs, dim=dim), torch.cat(ts, dim=dim)
    assert y.shape == tuple(ty.shape)
    (y * 2.0).sum().backward()
    (ty * 2.0).sum().backward()
    for x, t in zip(xs, ts):
        assert x.grad.shape == tuple(t.grad.shape)
        np.testing.assert_array_equal(x.grad.numpy(), t.grad.numpy())


def test_shapes_that_do_not_fit_still_raise():
    with pytest.raises(ad.DSLError, match="must match"):
        ad.cat([_a((2, 3), "float64"), _a((2, 4), "float64")])
    with pytest.raises(RuntimeError):
        torch.cat([_t((2, 3), "float64"), _t((2, 4), "float64")])
