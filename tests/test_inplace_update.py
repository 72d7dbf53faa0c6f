"""`no_grad { w -= lr * g }` is computed straight into w's storage (backend.ufunc_inplace):
the results, dtypes, versions, errors and undo must be those of the general path."""
from __future__ import annotations

import io

import numpy as np
import pytest

import autodsl as ad
from autodsl import backend
from autodsl.cli.repl import Repl


CASES = [
    ("w -= 0.1 * g", "float64", [1.0, 2.0], [0.5, -0.5]),
    ("w += g", "float32", [1.0, 2.0], [0.25, 0.5]),
    ("w *= g", "float64", [[1.0, 2.0], [3.0, 4.0]], [10.0, 20.0]),      # broadcast
    ("w /= g", "float64", [1.0, -1.0, 0.0], [0.0, 0.0, 0.0]),          # inf, -inf, nan, silently
    ("w -= 3", "float32", [1.0, 2.0], None),
    ("w *= g", "float32", [1.0, 2.0], "float64"),                       # another dtype: general path
]


def _run(stmt, dtype, w0, g0):
    w = ad.tensor(w0, dtype=dtype, requires_grad=True)
    g = ad.tensor([2.0, 2.0]) if g0 == "float64" else (ad.tensor(g0, dtype=dtype) if g0 is not None else None)
    with ad.no_grad():
        exec(stmt, {}, {"w": w, "g": g})
    return w


@pytest.mark.parametrize("stmt,dtype,w0,g0", CASES)
def test_the_update_equals_the_general_path(monkeypatch, stmt, dtype, w0, g0):
    fast = _run(stmt, dtype, w0, g0)
    monkeypatch.setattr(backend, "ufunc_inplace", lambda *a: False)
    slow = _run(stmt, dtype, w0, g0)
    a, b = fast.numpy(), slow.numpy()
    assert a.dtype == b.dtype and np.array_equal(a, b, equal_nan=True)
    assert fast.version == slow.version == 1 and fast.requires_grad and fast.is_leaf


def test_a_write_the_update_cannot_take_gives_the_general_error():
    w = ad.tensor([[1.0, 2.0], [3.0, 4.0]])
    with pytest.raises(ad.ShapeError, match="do not broadcast"):
        w += ad.tensor([1.0, 2.0, 3.0])
    assert w.tolist() == [[1.0, 2.0], [3.0, 4.0]] and w.version == 0


def test_an_update_of_a_saved_tensor_still_fails_the_backward():
    x = ad.tensor([1.0, 2.0], requires_grad=True)
    h = x * 1.0
    y = (h * h).sum()
    with ad.no_grad():
        h -= 0.5
    with pytest.raises(ad.AutogradError, match="modified in place"):
        y.backward()


def test_ctrl_c_in_the_repl_undoes_the_update():
    out = io.StringIO()
    r = Repl(ad.Session(out=out), out=out)
    r.handle("w = tensor([1.0, 2.0], requires_grad=true)")

    def stop(*_):
        raise KeyboardInterrupt
    r.session.namespace["stop"] = stop
    r.handle("no_grad { w -= 0.5 }\nstop()")
    r.handle("print(w)")
    assert "interrupted" in out.getvalue().lower()
    assert out.getvalue().rstrip().endswith("tensor([1., 2.], requires_grad=true)")
