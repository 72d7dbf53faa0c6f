"""mse_loss of empty tensors, as PyTorch: the mean of nothing is nan, the sum 0, and backward
gives an empty gradient (it raised a Python ZeroDivisionError)."""
from __future__ import annotations

import numpy as np
import pytest

import autodsl as ad


@pytest.mark.parametrize("reduction, want", [("mean", np.nan), ("sum", 0.0)])
def test_an_empty_mse_loss_and_its_gradient(reduction, want):
    a = ad.tensor(np.zeros((0, 4)), requires_grad=True)
    b = ad.tensor(np.zeros((0, 4)), requires_grad=True)
    loss = ad.mse_loss(a, b, reduction=reduction)
    np.testing.assert_array_equal(loss.numpy(), want)
    loss.backward()
    assert a.grad.shape == (0, 4) and b.grad.shape == (0, 4)


def test_an_empty_mse_loss_matches_torch():
    torch = pytest.importorskip("torch")
    for reduction in ("mean", "sum", "none"):
        x = torch.zeros((0, 3), dtype=torch.float64, requires_grad=True)
        t = torch.nn.functional.mse_loss(x, torch.zeros((0, 3), dtype=torch.float64), reduction=reduction)
        a = ad.tensor(np.zeros((0, 3)), requires_grad=True)
        got = ad.mse_loss(a, ad.tensor(np.zeros((0, 3))), reduction=reduction)
        np.testing.assert_array_equal(got.numpy(), t.detach().numpy())
        got.sum().backward()
        t.sum().backward()
        assert a.grad.shape == tuple(x.grad.shape)


def test_a_compiled_step_over_an_empty_batch_gives_the_eager_loss_and_gradient():
    w = ad.tensor(np.ones(3), requires_grad=True)

    def step(x, y):
        w.grad = None
        loss = ad.mse_loss(x * w, y)
        loss.backward()
        return loss.detach()

    fn = ad.compile(step)
    x, y = ad.tensor(np.zeros((0, 3))), ad.tensor(np.zeros((0, 3)))
    want = step(x, y).numpy()
    for _ in range(2):          # the capture, then a replay
        np.testing.assert_array_equal(fn(x, y).numpy(), want)
        np.testing.assert_array_equal(w.grad.numpy(), np.zeros(3))
