"""Who owns a .grad: Note [stealing a gradient] (tensor.py).

A gradient only the engine holds becomes .grad without a copy (as PyTorch's
AccumulateGrad steals it); every gradient someone else can see is copied, so
that no two .grad fields, and no .grad and a user's tensor, share memory.
"""
from __future__ import annotations

import numpy as np
import pytest

import autodsl as ad
from autodsl import backend


@pytest.fixture
def copies(monkeypatch):
    n = [0]
    orig = backend.copy

    def counting(arr):
        n[0] += 1
        return orig(arr)
    monkeypatch.setattr(backend, "copy", counting)
    return n


def _apart(*arrays):
    return not any(np.shares_memory(a, b) for i, a in enumerate(arrays) for b in arrays[i + 1:])


def test_a_gradient_only_the_engine_holds_is_kept_without_a_copy(copies):
    if backend.namespace_name("cpu") != "numpy":
        pytest.skip("only NumPy arrays are kept: other namespaces always copy")
    x = ad.tensor(np.ones((3, 3)), requires_grad=True)
    w = ad.tensor(np.ones((3, 3)), requires_grad=True)
    (x @ w).sum().backward()
    assert copies[0] == 0
    assert x.grad.tolist() == [[3.0] * 3] * 3 and w.grad.tolist() == [[3.0] * 3] * 3
    assert _apart(x.grad._data, w.grad._data, x._data, w._data)


def test_a_bias_gradient_summed_over_the_batch_is_kept_without_a_copy(copies):
    if backend.namespace_name("cpu") != "numpy":
        pytest.skip("only NumPy arrays are kept: other namespaces always copy")
    x = ad.tensor(np.arange(6.0).reshape(3, 2))
    w = ad.tensor(np.ones((2, 4)), requires_grad=True)
    b = ad.tensor(np.zeros(4), requires_grad=True)
    c = ad.tensor(np.zeros((1, 4)), requires_grad=True)     # a kept dim: summed with keepdims
    ((x @ w + b) * (x @ w + c)).sum().backward()
    assert copies[0] == 0
    h = np.arange(6.0).reshape(3, 2) @ np.ones((2, 4))
    assert b.grad.shape == (4,) and c.grad.shape == (1, 4)
    np.testing.assert_array_equal(b.grad.numpy(), h.sum(axis=0))
    np.testing.assert_array_equal(c.grad.numpy(), h.sum(axis=0, keepdims=True))
    assert _apart(b.grad._data, c.grad._data, w.grad._data)


def test_the_callers_seed_is_never_kept(copies):
    a = ad.tensor([1.0, 2.0], requires_grad=True)
    b = ad.tensor([1.0, 2.0], requires_grad=True)
    seed = ad.tensor([1.0, 1.0])
    (a + b).backward(seed)
    assert _apart(a.grad._data, b.grad._data, seed._data)
    seed[0] = 5.0
    a.grad[1] = 7.0
    assert a.grad.tolist() == [1.0, 7.0] and b.grad.tolist() == [1.0, 1.0]


def test_one_gradient_sent_to_two_leaves_gives_two_buffers():
    a = ad.tensor(2.0, requires_grad=True)
    b = ad.tensor(3.0, requires_grad=True)
    (a + b).backward()                     # AddBackward sends the same tensor to both
    assert _apart(a.grad._data, b.grad._data)
    (a + b).backward()                     # accumulates in place: each its own
    assert (a.grad.item(), b.grad.item()) == (2.0, 2.0)


def test_retained_non_leaf_and_leaf_do_not_share():
    x = ad.tensor([1.0, 2.0], requires_grad=True)
    h = x + 0.0                            # AddBackward passes h's gradient on to x unchanged
    h.retain_grad()
    (h * 3).sum().backward()
    assert _apart(x.grad._data, h.grad._data)
    x.grad[0] = 9.0
    assert h.grad.tolist() == [3.0, 3.0]


def test_a_gradient_a_hook_kept_is_copied():
    kept = []
    d = ad.tensor([1.0, 2.0], requires_grad=True)
    d.register_hook(lambda g: kept.append(g))
    (d * 3).sum().backward()
    assert _apart(kept[0]._data, d.grad._data)
    (d * 3).sum().backward()               # in place into d.grad: the hook's tensor keeps its values
    assert kept[0].tolist() == [3.0, 3.0] and d.grad.tolist() == [6.0, 6.0]


def test_the_trace_keeps_its_own_numbers(copies):
    s = ad.Session(echo=False)
    s.run("e = tensor([1.0, 2.0], requires_grad=true)\n(e * 3).sum().backward()\n(e * 3).sum().backward()")
    first = [st for st in s.last_trace.steps if st.kind == "leaf"][0]
    assert first.grad_in.tolist() == [3.0, 3.0] and s["e"].grad.tolist() == [6.0, 6.0]
