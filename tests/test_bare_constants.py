"""Note [bare constants] (core/node.py): a Python float beside a 0-d float64 tensor gets no
Tensor in apply's 0-d lane, only its array. Its values, gradients (first and second order, against
PyTorch and central differences), zero signs and nans must be what the general path gives."""
from __future__ import annotations

import gc
import math

import numpy as np
import pytest

import autodsl as ad
from autodsl.core.tensor import Tensor

CS = [0.3, -1.7, 2.5e-3, -0.0, 0.0, 7.0]


def _f(x, cs):
    y = x * cs[0]
    for c in cs[1:]:
        y = y + x * c - x * c * c
    return y * y * 0.5


def _grads(x0, cs):
    x = ad.tensor(x0, requires_grad=True, dtype=ad.float64)
    y = _f(x, cs)
    (g,) = ad.grad(y, [x], create_graph=True)
    (gg,) = ad.grad(g, [x])
    return y.item(), g.item(), gg.item()


def test_first_and_second_derivatives_match_central_differences():
    x0, h = 0.5, 1e-5
    f = lambda v: _f(v, CS)       # noqa: E731  (plain floats: the same arithmetic)
    y, g, gg = _grads(x0, CS)
    assert y == pytest.approx(f(x0), rel=1e-15)
    assert g == pytest.approx((f(x0 + h) - f(x0 - h)) / (2 * h), rel=1e-8)
    assert gg == pytest.approx((f(x0 + h) - 2 * f(x0) + f(x0 - h)) / h ** 2, rel=1e-4)


def test_first_and_second_derivatives_match_pytorch_bit_for_bit():
    torch = pytest.importorskip("torch")
    x0 = 0.5
    x = torch.tensor(x0, requires_grad=True, dtype=torch.float64)
    y = _f(x, CS)
    (g,) = torch.autograd.grad(y, [x], create_graph=True)
    (gg,) = torch.autograd.grad(g, [x])
    assert _grads(x0, CS) == (y.item(), g.item(), gg.item())


def test_a_zeros_sign_and_a_nan_are_never_taken_from_another_constant():
    x = ad.tensor(2.0, requires_grad=True, dtype=ad.float64)
    for c in (-0.0, 0.0, -0.0, 0.0):        # one of them cached would give the other's sign
        y = x * c
        assert math.copysign(1.0, y.item()) == math.copysign(1.0, c)
        y.backward()
        assert math.copysign(1.0, x.grad.item()) == math.copysign(1.0, c)     # d(x c)/dx = c
        x.grad = None
    y = x * float("nan") + x * 1.0
    y.backward()
    assert math.isnan(y.item()) and math.isnan(x.grad.item())


def test_what_the_node_saved_of_a_constant_is_a_tensor_outside_the_graph():
    x = ad.tensor(0.5, requires_grad=True, dtype=ad.float64)
    y = x * 2.5
    saved = y.grad_fn.saved_tensors
    assert saved[0] is None                 # x is not needed: 2.5 has no gradient
    c = saved[1]
    assert isinstance(c, Tensor) and c.item() == 2.5
    assert not c.requires_grad and c.grad_fn is None and c.dtype == ad.float64
    y.backward()
    assert x.grad.item() == 2.5
    with pytest.raises(ad.AutogradError, match="retain_graph"):
        y.grad_fn.saved_tensors


@pytest.mark.numpy_only("the 0-d lane is NumPy's")
def test_a_chain_of_distinct_constants_keeps_no_tensor_per_constant():
    x = ad.tensor(0.5, requires_grad=True, dtype=ad.float64)
    cs = [float(c) for c in np.random.default_rng(0).uniform(-1, 1, 2000)]
    gc.collect()
    before = sum(type(o) is Tensor for o in gc.get_objects())
    y = x * cs[0]
    for c in cs[1:]:
        y = y + x * c
    after = sum(type(o) is Tensor for o in gc.get_objects())
    assert after - before <= 2          # y (and nothing per constant)
    y.backward()
    assert x.grad.item() == pytest.approx(math.fsum(cs), rel=1e-12)


def test_an_in_place_write_to_the_tensor_beside_a_constant_is_still_caught():
    x = ad.tensor(0.5, requires_grad=True, dtype=ad.float64)
    a = x * 1.0                             # a non-leaf 0-d tensor
    y = a * 3.0                             # saves nothing of a (3.0 has no gradient) ...
    z = a * a                               # ... this saves a
    with ad.no_grad():
        a.add_(1.0)
    y.backward()
    assert x.grad.item() == 3.0
    with pytest.raises(ad.AutogradError, match="modified by an in-place|version"):
        z.backward()


@pytest.mark.numpy_only("host constants are NumPy arrays marked read-only")
def test_a_constant_handed_out_by_saved_tensors_cannot_change_later_ops():
    # the general path's cached constant is read-only: a write is refused, in the language's words
    x = ad.tensor([1.0, 2.0], requires_grad=True)
    c = (x * 2.5).grad_fn.saved_tensors[1]
    with ad.no_grad(), pytest.raises(ad.AutogradError, match=r"cannot be written into.*clone\(\) it first") as e:
        c.add_(100.0)
    assert "read-only" in str(e.value) and "destination" not in str(e.value)     # (not NumPy's words)
    assert (ad.tensor([1.0, 1.0]) * 2.5).tolist() == [2.5, 2.5]
    # the 0-d lane's bare constant: what saved_tensors gives is the caller's own copy
    x = ad.tensor(1.0, requires_grad=True, dtype=ad.float64)
    for _ in range(2):          # (the first op of a class may take the general path)
        y = x * 2.5
        c = y.grad_fn.saved_tensors[1]
        with ad.no_grad():
            c.add_(100.0)
        y.backward()
        assert x.grad.item() == 2.5 and (ad.tensor(3.0, dtype=ad.float64) * 2.5).item() == 7.5
        x.grad = None


def test_a_float_beyond_float32_is_inf_without_numpys_warning_or_error():
    old = np.seterr(all="raise")
    try:
        x = ad.tensor(2.0, dtype=ad.float32, requires_grad=True)
        for y in (x * 1e300, x + 1e300, x - 1e39, ad.maximum(x, 1e300)):
            assert y.dtype == ad.float32 and np.isinf(y.item())
        (x * 1e300).backward()
        assert x.grad.item() == np.inf
    finally:
        np.seterr(**old)
