"""Op.evaluate (ops/registry.py): a 0-d float64 gradient into an elementwise op whose inputs all
had the output's dtype skips validate_outputs. What it returns must be what the checked way,
``validate_outputs(apply(g), g)``, returns: the same gradients, bit for bit, of each input's
shape and dtype; and where the skip does not apply (mixed dtypes, float32, arrays) the check runs."""
from __future__ import annotations

import math

import numpy as np
import pytest

import autodsl as ad

pytestmark = pytest.mark.numpy_only      # (the 0-d lane is the host's)

VALUES = [0.7, -1.3, 0.0, -0.0, math.inf, math.nan]
OPS = {
    "add": lambda a, b: a + b, "sub": lambda a, b: a - b, "mul": lambda a, b: a * b,
    "sin": lambda a, b: ad.sin(a), "cos": lambda a, b: ad.cos(a), "relu": lambda a, b: ad.relu(a),
}


def _bits(t):
    return None if t is None else (t._data.shape, t._data.dtype, t._data.tobytes())


def _both(y, g):
    node = y.grad_fn
    with ad.no_grad():          # (as in a backward without create_graph)
        fast = node.evaluate(g)
        checked = node.validate_outputs(node.apply(g), g)
    return [_bits(o) for o in fast], [_bits(o) for o in checked]


@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("left", ["tensor", "float"])
@pytest.mark.parametrize("a0", VALUES)
def test_evaluate_equals_the_checked_way(op, left, a0):
    a = ad.tensor(a0, requires_grad=True, dtype=ad.float64)
    b = ad.tensor(-0.4, requires_grad=True, dtype=ad.float64)
    y = OPS[op](a, b) if left == "tensor" else OPS[op](2.5, a) if op in ("add", "sub", "mul") else OPS[op](a, b)
    for g0 in (1.0, -0.0, math.nan, 3.5):
        fast, checked = _both(y, ad.tensor(g0, dtype=ad.float64))
        assert fast == checked
        for bits in fast:
            assert bits is None or bits[:2] == ((), np.dtype(np.float64))


@pytest.mark.parametrize("op", ["add", "sub", "mul"])
def test_mixed_dtypes_are_still_cast(op):
    # a float32 input beside a float64 one: the output is float64, and the float32 input's
    # .grad must come back float32 (through its cast's node, or the check's cast)
    a = ad.tensor(0.7, requires_grad=True, dtype=ad.float32)
    b = ad.tensor(-0.4, requires_grad=True, dtype=ad.float64)
    y = OPS[op](a, b)
    fast, checked = _both(y, ad.tensor(1.0, dtype=ad.float64))
    assert fast == checked
    y.backward()
    assert a.grad.dtype == ad.float32 and b.grad.dtype == ad.float64
    torch = pytest.importorskip("torch")
    ta = torch.tensor(0.7, dtype=torch.float32, requires_grad=True)
    tb = torch.tensor(-0.4, dtype=torch.float64, requires_grad=True)
    OPS[op](ta, tb).backward()
    assert a.grad.numpy().tobytes() == ta.grad.numpy().tobytes()
    assert b.grad.numpy().tobytes() == tb.grad.numpy().tobytes()


@pytest.mark.parametrize("op", OPS)
def test_float32_and_arrays_take_the_checked_way(op):
    for dtype, shape in ((ad.float32, ()), (ad.float64, (3,)), (ad.float64, (2, 1))):
        a = ad.tensor(np.full(shape, 0.7), requires_grad=True, dtype=dtype)
        b = ad.tensor(np.full((3,) if shape == (2, 1) else shape, -0.4), requires_grad=True, dtype=dtype)
        y = OPS[op](a, b)
        fast, checked = _both(y, ad.ones(y.shape, dtype=dtype))
        assert fast == checked
        for bits, t in zip(fast, (a, b)):
            assert bits is None or bits[:2] == (t._data.shape, t._data.dtype)


def test_a_chain_backward_matches_central_differences():
    # W1's chain through the engine: the skipped checks change no gradient
    def f(x):
        y = x
        for _ in range(50):
            y = ad.relu(y * 0.999 + 0.001) - ad.sin(y) * 0.01
        return y
    x = ad.tensor(0.5, requires_grad=True, dtype=ad.float64)
    f(x).backward()
    h = 1e-6
    num = (f(ad.tensor(0.5 + h, dtype=ad.float64)).item() - f(ad.tensor(0.5 - h, dtype=ad.float64)).item()) / (2 * h)
    assert x.grad.item() == pytest.approx(num, rel=1e-7)
    torch = pytest.importorskip("torch")
    tx = torch.tensor(0.5, dtype=torch.float64, requires_grad=True)
    ty = tx
    for _ in range(50):
        ty = torch.relu(ty * 0.999 + 0.001) - torch.sin(ty) * 0.01
    ty.backward()
    assert x.grad.item() == tx.grad.item()


def _saved_then_written(case, tensor, no_grad, relu, sin):
    """(x, y): y's op saved a value that is then written in place (autodsl's or torch's API)."""
    x, w = tensor(0.7), tensor(-0.4)
    if case == "relu output":
        y = relu(x * 2.0)
        y.add_(1.0)
        return x, y
    y, written = {"mul both": (x * w, w), "mul constant": (x * 2.5, x), "sin input": (sin(x), x)}[case]
    with no_grad():
        written += 1.0
    return x, y


@pytest.mark.parametrize("case", ["mul both", "mul constant", "sin input", "relu output"])
def test_a_zero_d_formula_still_checks_saved_versions(case):
    # _formula_f64 reads the kept arrays itself: a value written in place after it was saved
    # must still raise the version error, as PyTorch does, and an unchanged one must not
    x, y = _saved_then_written(case, lambda v: ad.tensor(v, requires_grad=True, dtype=ad.float64),
                               ad.no_grad, ad.relu, ad.sin)
    if case == "mul constant":      # x * 2.5 keeps only the constant: x's value is not needed
        y.backward()
        assert x.grad.item() == 2.5
        return
    with pytest.raises(ad.AutogradError, match="modified in place"):
        y.backward()
    torch = pytest.importorskip("torch")
    _, ty = _saved_then_written(case, lambda v: torch.tensor(v, dtype=torch.float64, requires_grad=True),
                                torch.no_grad, torch.relu, torch.sin)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        ty.backward()


def test_a_zero_d_formula_reads_unchanged_saved_values():
    x = ad.tensor(0.7, requires_grad=True, dtype=ad.float64)
    w = ad.tensor(0.4, requires_grad=True, dtype=ad.float64)
    y = ad.relu(ad.sin(x * w) * 3.0)
    y.backward()
    assert x.grad.item() == pytest.approx(3.0 * math.cos(0.7 * 0.4) * 0.4, rel=1e-15)
    torch = pytest.importorskip("torch")
    tx = torch.tensor(0.7, dtype=torch.float64, requires_grad=True)
    tw = torch.tensor(0.4, dtype=torch.float64, requires_grad=True)
    torch.relu(torch.sin(tx * tw) * 3.0).backward()
    assert x.grad.item() == tx.grad.item() and w.grad.item() == tw.grad.item()
