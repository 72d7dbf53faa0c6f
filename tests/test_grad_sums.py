"""The engine's sums of the gradients sent to one node (core/grad_sums.py) and its ready node.

Note [float gradients]: where nothing watches the pass, the 0-d fast path's ops send their
gradients as Python floats, and the floats sent to one node are summed as floats. The sums must
be the bits the one-by-one Tensor sums give (a pass in anomaly mode keeps those), in the
order the gradients are sent; the order in which nodes run must be the heap's (Note [the one
ready node], core/engine.py). tests/test_float_gradients.py checks where floats become Tensors.
"""
import math

import numpy as np
import pytest

import autodsl as ad


def _fan_in(cs, dtype=ad.float64, shape=None):
    """x's gradient of sum_k x * c_k, as W3 builds it; x 0-d unless ``shape``."""
    x = ad.tensor(0.5 if shape is None else np.full(shape, 0.5), requires_grad=True, dtype=dtype)
    y = x * cs[0]
    for c in cs[1:]:
        y = y + x * c
    (y if shape is None else y.sum()).backward()
    return x.grad.numpy()


def _watched(fn, *args):
    """fn(*args) in anomaly mode (its observer takes no floats: the sums are Tensor sums)."""
    with ad.detect_anomaly():
        return fn(*args)


# constants whose sum depends on the order of the additions (1e16 + 1 - 1e16 is 0 or 1)
_CANCELLING = [1e16, 1.0, -1e16, 3.0, 1e-3, -7.5e15, 2.5, 7.5e15, -1.0, 0.1]


@pytest.mark.parametrize("cs", [
    _CANCELLING,
    [float(c) for c in np.random.default_rng(1).uniform(-1, 1, 500)],
    [float(c) for c in np.random.default_rng(2).standard_normal(64) * 10.0 ** np.arange(-32, 32)],
], ids=["cancelling", "uniform-500", "magnitudes"])
def test_float_sums_are_the_bits_of_the_tensor_sums(cs):
    got = _fan_in(cs)
    want = _watched(_fan_in, cs)
    assert got.dtype == np.float64 and got.shape == ()
    assert got.tobytes() == want.tobytes()


def test_float_sums_follow_the_order_the_gradients_are_sent():
    cs = _CANCELLING
    got = float(_fan_in(cs))
    # the pass runs the node made last first: x * c_k sends c_k from the last k to the first
    want = 0.0
    first = True
    for c in reversed(cs):
        want = c if first else want + c
        first = False
    assert got == want
    forward = 0.0
    for c in cs:
        forward += c
    assert forward != want          # (these constants tell the two orders apart)


def test_float_sums_under_create_graph_are_the_recorded_sums():
    cs = _CANCELLING
    x = ad.tensor(0.5, requires_grad=True, dtype=ad.float64)
    y = x * x * cs[0]
    for c in cs[1:]:
        y = y + x * x * c
    (g,) = ad.grad(y, x, create_graph=True)
    assert g.requires_grad                  # the sums were recorded ops
    x2 = ad.tensor(0.5, requires_grad=True, dtype=ad.float64)
    y2 = x2 * x2 * cs[0]
    for c in cs[1:]:
        y2 = y2 + x2 * x2 * c
    (g2,) = ad.grad(y2, x2)
    assert g.numpy().tobytes() == g2.numpy().tobytes()


@pytest.mark.parametrize("dtype,shape", [(ad.float32, None), (ad.float64, (3,)), (ad.float64, (1,))])
def test_other_gradients_are_summed_as_tensors(dtype, shape):
    cs = _CANCELLING[:6]
    got = _fan_in(cs, dtype, shape)
    want = _watched(_fan_in, cs, dtype, shape)
    assert got.dtype == want.dtype and got.shape == want.shape
    assert got.tobytes() == want.tobytes()


def test_a_hook_sees_the_summed_gradient_once():
    seen = []
    x = ad.tensor(2.0, requires_grad=True, dtype=ad.float64)
    h = x * 1.0
    h.register_hook(lambda g: seen.append(float(g)))
    y = h * 3.0 + h * 4.0 + h * 0.5
    y.backward()
    assert seen == [7.5]
    assert float(x.grad) == 7.5


def test_the_order_of_the_pass_is_the_heaps():
    """A chain with branches: the nodes run in the order of the trace's steps, which the heap
    (-seq_nr) fixes; the hooks of the intermediate values fire in that order too."""
    order = []
    x = ad.tensor(1.5, requires_grad=True, dtype=ad.float64)
    a = ad.sin(x)
    b = a * 2.0
    c = ad.cos(a)
    d = b * c
    e = d + a
    for name, t in (("a", a), ("b", b), ("c", c), ("d", d)):
        t.register_hook(lambda g, name=name: order.append(name))
    e.backward()
    # d (made last of the four) first; then c and b are both ready, c made later; then a
    assert order == ["d", "c", "b", "a"]
    xa = 1.5
    da = math.cos(xa)
    want = (2.0 * math.cos(math.sin(xa)) - 2.0 * math.sin(xa) * math.sin(math.sin(xa)) + 1.0) * da
    assert float(x.grad) == pytest.approx(want, rel=1e-15, abs=0)


def test_float_sums_against_torch():
    torch = pytest.importorskip("torch")
    cs = [float(c) for c in np.random.default_rng(4).uniform(-1, 1, 200)]
    xt = torch.tensor(0.5, dtype=torch.float64, requires_grad=True)
    yt = xt * cs[0]
    for c in cs[1:]:
        yt = yt + xt * c
    yt.backward()
    assert float(_fan_in(cs)) == pytest.approx(float(xt.grad), rel=1e-13)
