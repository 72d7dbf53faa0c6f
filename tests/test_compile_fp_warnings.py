"""compile(): the capture, like every op, keeps NumPy's floating-point warnings away from the
user (an overflow to inf, 0/0 is nan: IEEE results, no RuntimeWarning); the capture ran an
op's forward once more for its node after the op's own call had put NumPy's error state back."""
from __future__ import annotations

import warnings

import numpy as np

import autodsl as ad


def _step(w):
    def step(x):
        w.grad = None
        loss = ad.exp(x * w).sum() + (x / (x * 0.0)).sum() + ad.mse_loss(x[:0], x[:0])
        loss.backward()
        return loss.detach()
    return step


def test_a_capture_and_its_replays_give_ieee_results_without_warnings():
    x = ad.tensor(np.full(3, 1000.0))
    w_eager = ad.tensor(np.ones(3), requires_grad=True)
    want = _step(w_eager)(x).numpy()
    w = ad.tensor(np.ones(3), requires_grad=True)
    fn = ad.compile(_step(w))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for _ in range(3):          # the capture, then replays
            np.testing.assert_array_equal(fn(x).numpy(), want)
            np.testing.assert_array_equal(w.grad.numpy(), w_eager.grad.numpy())
    assert np.isnan(want) and np.isinf(w.grad.numpy()).all()
