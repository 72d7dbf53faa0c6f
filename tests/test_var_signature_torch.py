"""var and std take torch's positional forms: var(x, dim, unbiased, keepdim) and var(x, unbiased);
correction by keyword, never beside unbiased."""
from __future__ import annotations

import numpy as np
import pytest

import autodsl as ad

torch = pytest.importorskip("torch")

X = [[1.0, 2.0, 3.0], [4.0, 5.0, 7.0]]
CALLS = [
    lambda m, x: m.var(x, 1, False), lambda m, x: m.var(x, 1, False, True), lambda m, x: x.std(False),
    lambda m, x: m.std(x, [0, 1], False), lambda m, x: m.var(x, None, False), lambda m, x: m.var(x, 1, keepdim=True),
    lambda m, x: m.var(x, dim=1, unbiased=False), lambda m, x: x.var(unbiased=True), lambda m, x: m.var(x, correction=2),
    lambda m, x: m.std(x, 0, True, True), lambda m, x: m.var(x, 1, correction=0.5),
]


@pytest.mark.parametrize("call", CALLS, ids=range(len(CALLS)))
def test_values_and_gradients_are_torchs(call):
    x = ad.tensor(X, requires_grad=True)
    t = torch.tensor(X, dtype=torch.float64, requires_grad=True)
    y, ty = call(ad, x), call(torch, t)
    assert y.shape == tuple(ty.shape)
    np.testing.assert_allclose(y.numpy(), ty.detach().numpy(), rtol=1e-14)
    y.sum().backward()
    ty.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), t.grad.numpy(), rtol=1e-13)


@pytest.mark.parametrize("call", [lambda m, x: m.var(x, 1, True, correction=0), lambda m, x: m.var(x, 1, 1),
                                  lambda m, x: m.std(x, unbiased=False, correction=0)])
def test_what_torch_refuses(call):
    with pytest.raises(TypeError):
        call(torch, torch.tensor(X))
    with pytest.raises(ad.DSLError, match="unbiased"):
        call(ad, ad.tensor(X))


def test_the_language_takes_the_same_forms():
    s = ad.Session(echo=False)
    s.run("x = tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 7.0]])\na = var(x, 1, false)\nb = x.std(false)")
    np.testing.assert_allclose(s["a"].numpy(), [2 / 3, 14 / 9])
    assert s["b"].numpy() == pytest.approx(torch.tensor(X).std(False).item())
