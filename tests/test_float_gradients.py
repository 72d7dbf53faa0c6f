"""Gradients sent as Python floats (Note [float gradients], core/grad_sums.py).

Where nothing watches a backward pass, the 0-d fast path's ops send their gradients on as
floats. Every value a user can see must be what the Tensor way gives, bit for bit (a pass in
anomaly mode goes the Tensor way: its observer reads each gradient), and a float must
become a Tensor wherever one is handed out: a hook's argument, a retained ``.grad``, what
``grad()`` returns, a leaf's ``.grad``, a node that does not take floats.
"""
import math

import numpy as np
import pytest

import autodsl as ad
from autodsl.core.trace import tracing


def _tensor_way(fn):
    """fn() in anomaly mode: its passes go the Tensor way."""
    with ad.detect_anomaly():
        return fn()


def _leaf(v=0.5):
    return ad.tensor(v, requires_grad=True, dtype=ad.float64)


def _w1(n=30):
    x = _leaf()
    y = x
    for _ in range(n):
        y = ad.relu(y * 0.999 + 0.001)
    y.backward()
    return x.grad.numpy()


def _w2(n=30):
    x = _leaf()
    y = x
    for _ in range(n):
        y = ad.sin(y) * ad.cos(y)
    y.backward()
    return x.grad.numpy()


def _mixed():
    """Floats into ops without a 0-d lane (sum, a view), and out of them again."""
    v = ad.tensor([0.25, -0.5, 1.5], requires_grad=True, dtype=ad.float64)
    s = v.sum()
    y = ad.sin(s) * ad.cos(v[1]) + ad.exp(s) / (s - 3.0) - v[2] ** 2.0
    y = ad.tanh(y) * ad.sigmoid(y)
    y.backward()
    return v.grad.numpy()


@pytest.mark.parametrize("fn", [_w1, _w2, _mixed], ids=["relu-chain", "diamond-ladder", "mixed"])
def test_a_pass_with_floats_gives_the_tensor_ways_bits(fn):
    got, want = fn(), _tensor_way(fn)
    assert got.dtype == want.dtype == np.float64 and got.shape == want.shape
    assert got.tobytes() == want.tobytes()


def test_the_diamond_ladder_against_its_derivative():
    x0 = 0.5
    x, dx = x0, 1.0
    for _ in range(30):
        x, dx = math.sin(x) * math.cos(x), dx * math.cos(2.0 * x)
    assert float(_w2()) == pytest.approx(dx, rel=1e-12)


def test_a_hook_gets_a_tensor_and_its_result_flows_on():
    seen = []
    x = _leaf(0.3)
    h = ad.sin(x) * 2.0
    h.register_hook(lambda g: (seen.append(g), g * 3.0)[1])
    y = ad.cos(h) * ad.sin(h)
    y.backward()
    (g,) = seen
    assert isinstance(g, ad.Tensor) and g.dtype == ad.float64 and g.shape == ()
    hv = math.sin(0.3) * 2.0
    assert float(g) == pytest.approx(math.cos(2.0 * hv), rel=1e-14)
    assert float(x.grad) == pytest.approx(3.0 * math.cos(2.0 * hv) * 2.0 * math.cos(0.3), rel=1e-14)


def test_a_retained_gradient_is_a_tensor_of_its_own():
    x = _leaf(0.7)
    h = ad.sin(x) * ad.cos(x)
    h.retain_grad()
    y = h * 5.0 + h * 0.25
    y.backward()
    assert isinstance(h.grad, ad.Tensor) and h.grad.dtype == ad.float64 and h.grad.shape == ()
    assert float(h.grad) == 5.25
    assert not h.grad.requires_grad and h.grad.grad_fn is None
    assert float(x.grad) == pytest.approx(5.25 * math.cos(1.4), rel=1e-14)


def test_grad_returns_tensors_for_leaves_and_intermediates():
    x = _leaf(0.9)
    h = ad.sin(x)
    y = h * h + ad.cos(h) * 2.0
    gx, gh = ad.grad(y, [x, h])
    for g in (gx, gh):
        assert isinstance(g, ad.Tensor) and g.dtype == ad.float64 and g.shape == ()
    hv = math.sin(0.9)
    want_h = 2.0 * hv - 2.0 * math.sin(hv)
    assert float(gh) == pytest.approx(want_h, rel=1e-14)
    assert float(gx) == pytest.approx(want_h * math.cos(0.9), rel=1e-14)
    assert x.grad is None


def test_backward_inputs_fills_only_those_grads():
    x = _leaf(0.4)
    h = ad.sin(x) * 3.0
    y = h * h
    y.backward(inputs=[h])
    assert x.grad is None
    assert float(h.grad) == pytest.approx(2.0 * 3.0 * math.sin(0.4), rel=1e-14)


def _twice():
    x = _leaf(0.2)
    for _ in range(2):
        (ad.sin(x) * ad.cos(x)).backward()
    return x.grad.numpy()


def test_a_second_backward_accumulates_into_grad():
    got = _twice()
    assert float(got) == pytest.approx(2.0 * math.cos(0.4), rel=1e-14)
    assert got.tobytes() == _tensor_way(_twice).tobytes()


def test_a_freed_graph_and_a_changed_saved_value_still_fail():
    x = _leaf(0.6)
    y = ad.sin(x) * ad.cos(x)
    y.backward()
    with pytest.raises(ad.AutogradError, match="retain_graph"):
        y.backward()
    x2 = _leaf(0.6)
    h = x2 * 2.0
    y2 = ad.sin(h) * 3.0
    with ad.no_grad():
        h.add_(1.0)
    with pytest.raises(ad.AutogradError):
        y2.backward()
    assert x2.grad is None


def test_float_gradients_against_torch():
    torch = pytest.importorskip("torch")
    xt = torch.tensor(0.5, dtype=torch.float64, requires_grad=True)
    yt = xt
    for _ in range(30):
        yt = torch.relu(yt * 0.999 + 0.001)
    yt.backward()
    assert _w1().tobytes() == xt.grad.numpy().tobytes()
    vt = torch.tensor([0.25, -0.5, 1.5], dtype=torch.float64, requires_grad=True)
    st = vt.sum()
    zt = torch.sin(st) * torch.cos(vt[1]) + torch.exp(st) / (st - 3.0) - vt[2] ** 2.0
    zt = torch.tanh(zt) * torch.sigmoid(zt)
    zt.backward()
    np.testing.assert_allclose(_mixed(), vt.grad.numpy(), rtol=1e-13, atol=0)


def test_a_trace_of_floats_shows_the_tensor_ways_numbers():
    """The trace keeps float gradients as they came (core/observer.py's takes_floats) and shows
    what the Tensor way shows."""
    def traced():
        texts = []
        with tracing(True, sink=lambda t: None, printer=texts.append):
            x = _leaf(0.8)
            y = ad.sin(x) * ad.cos(x)
            y = ad.relu(y * 0.5 + 0.25) + ad.sin(y) * y
            y.backward()
        (text,) = texts
        return text, x.grad.numpy()
    text, g = traced()
    want_text, want_g = _tensor_way(traced)
    assert text == want_text
    assert g.tobytes() == want_g.tobytes()
    x = 0.8
    s = math.sin(x) * math.cos(x)
    want = (0.5 + math.cos(s) * s + math.sin(s)) * math.cos(2 * x)
    assert float(g) == pytest.approx(want, rel=1e-14)
    last = ad.last_trace()
    grads = [st.grad_in for st in last.steps]
    assert all(type(a) is np.ndarray and a.dtype == np.float64 and a.shape == () for a in grads)
    assert all(type(a) is np.ndarray for st in last.steps if st.kind == "node" for _, a in st.sends if a is not None)


# Note [passed-on gradients] (ops/registry.py): what add and sub pass on is one object, as in torch

def _scale_in_place(g):
    g.mul_(10.0)


def test_a_hook_that_scales_in_place_scales_what_add_passed_to_both():
    x, w = _leaf(0.5), _leaf(0.25)
    x.register_hook(_scale_in_place)
    (x + w).backward()
    assert float(x.grad) == 10.0 and float(w.grad) == 10.0


def test_a_change_in_place_reaches_the_other_branch_of_an_add():
    x = _leaf(0.5)
    w = x * 3.0
    y = x * 2.0
    y.register_hook(_scale_in_place)
    (y + w).backward()
    # y's hook runs first (y was made after w) and scales the one gradient both branches read
    assert float(x.grad) == 2.0 * 10.0 + 3.0 * 10.0


def test_a_float_passed_along_two_edges_is_one_tensor():
    seen = []
    x = _leaf(0.5)
    y = x * 2.0
    w = x * 3.0
    y.register_hook(seen.append)
    w.register_hook(seen.append)
    (ad.sin(y + w) * 2.0).backward()        # the add's gradient comes as a float
    assert len(seen) == 2 and seen[0] is seen[1]
    assert float(seen[0]) == pytest.approx(2.0 * math.cos(2.5), rel=1e-15)


def test_grad_returns_the_grad_outputs_tensor_passed_on():
    x = _leaf(0.5)
    y = x * 2.0
    gs = ad.tensor(3.0, dtype=ad.float64)
    assert ad.grad([y + 0.0], [y], [gs])[0] is gs
    y2 = x * 2.0
    assert ad.grad([y2 - 0.0], [y2], [gs])[0] is gs
    a, b = ad.sin(x), ad.cos(x)
    ga, gb = ad.grad([a + b], [a, b])
    assert ga is gb


def test_a_script_hook_that_scales_in_place():
    s = ad.Session(echo=False)
    s.run("x = tensor(0.5, requires_grad=true, dtype=float64)\n"
          "w = tensor(0.25, requires_grad=true, dtype=float64)\n"
          "def hk(g) { g *= 10 }\n"
          "x.register_hook(hk)\n"
          "(x + w).backward()\n")
    assert float(s["x"].grad) == 10.0 and float(s["w"].grad) == 10.0


def test_passed_on_gradients_against_torch():
    torch = pytest.importorskip("torch")

    def run(m):
        x = m.tensor(0.5, dtype=m.float64, requires_grad=True)
        w = x * 3.0
        y = x * 2.0
        y.register_hook(lambda g: g.mul_(10.0) and None)
        z = m.sin(y + w) * 2.0 + (y - w) * 0.5
        z.backward()
        return float(x.grad)

    assert run(ad) == run(torch)


def test_a_trace_shows_what_was_sent_before_a_hook_changed_it_in_place():
    """The records keep a 0-d gradient's value as it was sent (core/step_log.py's _record), a
    float as a Tensor, so the trace reads the same both ways; the hook's change shows where
    the changed gradient comes in."""
    def traced():
        texts = []
        x = _leaf(0.5)
        y = ad.sin(x)
        z = y + 1.0
        y.register_hook(_scale_in_place)
        with tracing(True, sink=lambda t: None, printer=texts.append):
            ad.cos(z).backward()
        return texts[0], ad.last_trace().steps
    text, steps = traced()
    want_text, _ = _tensor_way(traced)
    assert text == want_text
    sent = -math.sin(math.sin(0.5) + 1.0)
    add_step, sin_step = steps[1], steps[2]
    assert float(add_step.grad_in) == sent and float(add_step.sends[0][1]) == sent
    assert float(sin_step.grad_in) == 10.0 * sent
