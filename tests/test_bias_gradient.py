"""Note [a bias's gradient] (ops/registry.py): a two-input op's gradient that only gained
leading dims is summed on its array in a backward without create_graph, with the numbers
of the SumTo op it stands in for; any other broadcast, and every pass something watches,
goes through that op."""
from __future__ import annotations

import numpy as np
import pytest

import autodsl as ad
from autodsl.core.tensor import Tensor


@pytest.fixture
def sum_to_calls(monkeypatch):
    """How many times the backward reduced a gradient through the op (``sum_to_size``)."""
    calls = []
    real = Tensor.sum_to_size

    def counting(self, *shape):
        calls.append(tuple(self.shape))
        return real(self, *shape)
    monkeypatch.setattr(Tensor, "sum_to_size", counting)
    return calls


def _layer(dtype, batch_shape):
    rng = np.random.default_rng(3)
    x = rng.standard_normal(batch_shape + (5,)).astype(dtype)
    w = rng.standard_normal((5, 4)).astype(dtype)
    b = rng.standard_normal(4).astype(dtype)
    g = rng.standard_normal(batch_shape + (4,)).astype(dtype)
    return x, w, b, g


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("batch_shape", [(3,), (2, 3)])
def test_a_bias_gradient_is_the_ops_sum_without_the_op(sum_to_calls, dtype, batch_shape):
    x, w, b, g = _layer(dtype, batch_shape)
    wt = ad.tensor(w, requires_grad=True)
    bt = ad.tensor(b, requires_grad=True)
    (ad.tensor(x) @ wt + bt).backward(ad.tensor(g))
    assert sum_to_calls == []
    want = np.add.reduce(g, axis=tuple(range(len(batch_shape))))
    assert bt.grad.dtype == ad.tensor(b).dtype
    np.testing.assert_array_equal(bt.grad.numpy(), want)
    # the op's own sum, through create_graph (which records it), gives the same bits
    wt2 = ad.tensor(w, requires_grad=True)
    bt2 = ad.tensor(b, requires_grad=True)
    (gb,) = ad.grad(ad.tensor(x) @ wt2 + bt2, [bt2], grad_outputs=[ad.tensor(g)], create_graph=True)
    assert sum_to_calls == [batch_shape + (4,)]
    np.testing.assert_array_equal(gb.detach().numpy(), bt.grad.numpy())


def test_a_kept_dim_and_the_left_operand_still_go_through_the_op(sum_to_calls):
    x, w, b, g = _layer(np.float64, (3,))
    c = ad.tensor(b.reshape(1, 4), requires_grad=True)      # (1, 4): a kept dim, not a lead
    d = ad.tensor(b, requires_grad=True)
    h = ad.tensor(x) @ ad.tensor(w)
    (c + h).backward(ad.tensor(g))
    (d * h).backward(ad.tensor(g))          # the lead sum on mul's second input
    assert sum_to_calls == [(3, 4)]
    np.testing.assert_array_equal(c.grad.numpy(), g.sum(axis=0, keepdims=True))
    np.testing.assert_array_equal(d.grad.numpy(), np.add.reduce(g * (x @ w), axis=0))


def test_anomaly_mode_watches_the_sum_as_before(sum_to_calls):
    x, w, b, g = _layer(np.float64, (3,))
    bt = ad.tensor(b, requires_grad=True)
    with ad.detect_anomaly():
        (ad.tensor(x) @ ad.tensor(w) + bt).backward(ad.tensor(g))
    assert sum_to_calls == [(3, 4)]
    np.testing.assert_array_equal(bt.grad.numpy(), g.sum(axis=0))


def test_a_bias_gradient_matches_finite_differences():
    x, w, b, _ = _layer(np.float64, (2, 3))
    bt = ad.tensor(b, requires_grad=True)
    f = lambda bb: float((np.tanh(x @ w + bb) ** 2).sum())          # noqa: E731
    (ad.tanh(ad.tensor(x) @ ad.tensor(w) + bt) ** 2).sum().backward()
    eps = 1e-6
    fd = [(f(b + eps * e) - f(b - eps * e)) / (2 * eps) for e in np.eye(4)]
    np.testing.assert_allclose(bt.grad.numpy(), fd, rtol=1e-6, atol=1e-8)
