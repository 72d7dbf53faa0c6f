"""norm's orders besides 1, 2, inf and p > 0: p = 0 (a count, with no gradient), negative p and
-inf, as torch.linalg.vector_norm (values, dtypes, gradients and the refusals over no elements).
The smooth ones are also in tests/op_samples.py (finite differences, second derivatives)."""
from __future__ import annotations

import math

import numpy as np
import pytest

import autodsl as ad

torch = pytest.importorskip("torch")

NAN = float("nan")
CASES = [
    (0, [3.0, 0.0, NAN], None), (0, [[1.0, 0.0], [0.0, 0.0]], 1), (0, [], None),
    (-1, [3.0, -4.0, 1.0], None), (-2, [3.0, 0.0, 1.0], None), (-0.5, [0.0, 2.0, -3.0], None),
    (-1, [0.0, 0.0], None), (-math.inf, [-2.0, 2.0, 2.0], None), (-math.inf, [-2.0, NAN, 3.0], None),
    (-math.inf, [[1.0, -5.0], [3.0, 2.0]], 0), (None, [3.0, 4.0], None), ("fro", [[1.0, 2.0], [3.0, 4.0]], None),
]


def _same(a, b):
    a, b = np.asarray(a), np.asarray(b)
    assert a.shape == b.shape and np.array_equal(np.signbit(a), np.signbit(b))
    np.testing.assert_allclose(a, b, rtol=1e-12, atol=0, equal_nan=True)


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("p, values, dim", CASES, ids=[f"p{c[0]}-{i}" for i, c in enumerate(CASES)])
def test_values_and_gradients_are_torchs(p, values, dim, dtype):
    x = ad.tensor(values, requires_grad=True, dtype=getattr(ad, dtype))
    y = ad.norm(x, p=p, dim=dim)
    y.sum().backward()
    tx = torch.tensor(values, requires_grad=True, dtype=getattr(torch, dtype))
    ty = torch.linalg.vector_norm(tx, ord=2 if p in (None, "fro") else p, dim=dim)
    ty.sum().backward()
    assert y.dtype.name == dtype and y.requires_grad
    _same(y.numpy(), ty.detach().numpy())
    assert (x.grad is None) == (tx.grad is None)
    if tx.grad is not None:
        _same(x.grad.numpy(), tx.grad.numpy())


def test_p0_counts_and_sends_no_gradient():
    x = ad.tensor([[1.5, 0.0, -2.0], [0.0, 0.0, 0.0]], requires_grad=True)
    y = x.norm(p=0, dim=1, keepdim=True)
    assert y.numpy().tolist() == [[2.0], [0.0]] and y.grad_fn is not None
    (y * 3.0).sum().backward()
    assert x.grad is None       # torch: an undefined gradient, never accumulated


@pytest.mark.parametrize("p", [-1, -0.5, -math.inf, math.inf])
def test_orders_without_an_identity_refuse_no_elements(p):
    with pytest.raises(ad.DSLError, match="no elements"):
        ad.norm(ad.tensor([]), p=p)
    with pytest.raises(RuntimeError):
        torch.linalg.vector_norm(torch.tensor([]), ord=p)
    # a reduction over dims of nonzero size has values, in both
    z = ad.norm(ad.zeros(0, 3), p=p, dim=1)
    assert z.shape == (0,) and tuple(torch.linalg.vector_norm(torch.zeros(0, 3), ord=p, dim=1).shape) == (0,)


@pytest.mark.parametrize("p", ["nuc", "a", True, NAN])
def test_other_orders_raise_in_the_languages_words(p):
    with pytest.raises(ad.DSLError, match="p must be a number"):
        ad.norm(ad.tensor([1.0, 2.0]), p=p)


def test_the_language_takes_negative_inf():
    s = ad.Session(echo=False)
    s.run("x = tensor([-2.0, 3.0, 0.5], requires_grad=true)\ny = norm(x, p=-inf)\ny.backward()")
    assert s["y"].item() == 0.5 and s["x"].grad.numpy().tolist() == [0.0, 0.0, 1.0]
