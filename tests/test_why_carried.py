"""why() on a value computed from one that left the graph, by ops that recorded nothing either
(core/watch.follow_break): it names the site where the chain left the graph, never "give
requires_grad=true to the leaves" when the leaf has it."""
from __future__ import annotations

import gc
import io

import numpy as np
import pytest

import autodsl as ad
from autodsl.context import current

WRONG_ADVICE = "Give requires_grad=true"


def _run(source: str) -> str:
    out = io.StringIO()
    s = ad.Session(out=out)
    s.run(source)
    return out.getvalue()


def test_a_chain_inside_no_grad_names_the_site():
    text = _run("x = tensor(2.0, requires_grad=true)\n"
                "no_grad {\n"
                "    y = x * 2.0 + 1.0\n"
                "}\n"
                "why(y)\n")
    assert WRONG_ADVICE not in text
    assert "computed from the value made at 3:11 `x * 2.0` from `x` inside a no_grad block" in text


def test_the_sites_own_result_keeps_its_sentence():
    text = _run("x = tensor(2.0, requires_grad=true)\n"
                "no_grad { t = x * 2.0; y = t + 1.0 }\n"
                "why(t)\n")
    assert "`t` was computed at 2:17 `x * 2.0` from `x` inside a no_grad block" in text


def test_ops_outside_no_grad_on_such_a_value_carry_it_too():
    # grad on again, but nothing the op takes requires grad: no graph, from the same site
    text = _run("x = tensor([1.0, 2.0], requires_grad=true)\n"
                "no_grad { t = x * 2.0 }\n"
                "u = relu(t - 1.0).sum() * 3.0\n"
                "why(u)\n")
    assert WRONG_ADVICE not in text
    assert "the value made at 2:17 `x * 2.0`" in text


def test_a_graph_that_uses_a_carried_value_says_where_the_leaf_left():
    text = _run("x = tensor(2.0, requires_grad=true)\n"
                "w = tensor(3.0, requires_grad=true)\n"
                "no_grad { y = x * 2.0 + 1.0 }\n"
                "loss = w * (relu(y) * 0.5)\n"
                "loss.backward()\n"
                "why(x)\n")
    assert "Where its value left the graph: at 3:17 `x * 2.0`, `x` was used inside a no_grad block" in text


def test_from_python_as_well():
    x = ad.tensor([1.0, 2.0], requires_grad=True)
    with ad.no_grad():
        y = (x * 2.0 + 1.0).sum()
    w = ad.why(y)
    assert WRONG_ADVICE not in str(w) and "inside a no_grad block" in str(w)
    assert w.reason == "no_requires_grad"


def test_a_value_from_tensors_that_never_required_grad_keeps_the_leaf_advice():
    text = _run("x = tensor(2.0)\n"
                "no_grad { y = x * 2.0 + 1.0 }\n"
                "why(y)\n")
    assert WRONG_ADVICE in text


def test_the_records_go_with_the_tensors():
    x = ad.tensor([1.0, 2.0], requires_grad=True)
    with ad.no_grad():
        ys = [x * 2.0 + float(i) for i in range(50)]
    left = current().left
    assert len(left) >= 50
    del ys
    gc.collect()
    assert all(e[0]() is not None for e in left.values())
    assert len(left) <= 1         # (the loop site's latest result may be an operand still alive)
    del x
    gc.collect()
    assert len(current().left) == 0


def test_a_training_loop_records_nothing():
    # the parameter update under no_grad writes back into what it read: no value left the graph
    w = ad.tensor([1.0, 2.0], requires_grad=True)
    for _ in range(3):
        loss = (w * w).sum()
        w.grad = None
        loss.backward()
        with ad.no_grad():
            w -= 0.1 * w.grad
    assert len(current().left) == 0
    assert np.allclose(w.numpy(), np.array([1.0, 2.0]) * 0.8 ** 3)


def test_values_are_unchanged():
    # the records watch; they change no value or gradient (against PyTorch)
    x = ad.tensor([0.5, -1.5], requires_grad=True)
    with ad.no_grad():
        c = x * 2.0 + 1.0
    y = (x * c).sum()
    y.backward()
    torch = pytest.importorskip("torch")
    tx = torch.tensor([0.5, -1.5], dtype=torch.float64, requires_grad=True)
    with torch.no_grad():
        tc = tx * 2.0 + 1.0
    (tx * tc).sum().backward()
    assert c.numpy().tobytes() == tc.numpy().tobytes()
    assert x.grad.numpy().tobytes() == tx.grad.numpy().tobytes()


def test_a_comparisons_or_casts_own_result_names_it_not_its_dtype():
    a = ad.tensor([1.0, 2.0, 3.0], requires_grad=True)
    w = ad.why(a > 0)
    assert "in a comparison (gt)" in str(w) and "float64 (or float32)" not in str(w)
    w = ad.why(a.to(ad.int64) * 2 + 1)
    assert "in a cast to an integer dtype" in str(w) and "float64 (or float32)" not in str(w)
    # an integer tensor made as such keeps the dtype advice
    w = ad.why(ad.tensor([1, 2], dtype=ad.int64))
    assert "It is int64" in str(w)
