"""Note [unrecorded pointwise ops] (ops/registry.py): an elementwise op of two host arrays that
records nothing (an optimizer's update, inference under no_grad) takes _apply_plain. Each case
is checked against the general path, forced here by anomaly mode (which _apply_plain leaves
to it): the same bits, dtype and shape, the same errors, and the general path wherever it
still has work to do (an input that requires grad, a view, a huge result)."""
import numpy as np
import pytest

import autodsl as ad
from autodsl.core.anomaly import AnomalyWarning
from autodsl.ops import registry
from autodsl.ops import elementwise as E


def _both(fn):
    """fn() without and with anomaly mode (the general path)."""
    fast = fn()
    with ad.detect_anomaly():
        general = fn()
    return fast, general


def _same(a, b):
    a, b = np.asarray(a.numpy()), np.asarray(b.numpy())
    assert a.dtype == b.dtype and a.shape == b.shape
    assert a.tobytes() == b.tobytes()


OPS = [lambda x, y: x + y, lambda x, y: x - y, lambda x, y: x * y, lambda x, y: x / y,
       lambda x, y: ad.maximum(x, y), lambda x, y: x ** y, lambda x, y: x < y,
       lambda x, y: 0.01 * x, lambda x, y: y - 2.5, lambda x, y: 1.0 / y]


@pytest.mark.parametrize("dtype", [ad.float32, ad.float64])
@pytest.mark.parametrize("op", range(len(OPS)))
def test_an_unrecorded_op_gives_the_general_paths_bits(dtype, op):
    rng = np.random.default_rng(op)
    x = ad.tensor(rng.standard_normal((5, 7)), dtype=dtype)
    y = ad.tensor(np.concatenate([[np.inf, -0.0, np.nan, 0.0], rng.standard_normal(31)]).reshape(5, 7), dtype=dtype)
    for grad_mode in (ad.no_grad, ad.enable_grad):
        with grad_mode():
            fast, general = _both(lambda: OPS[op](x, y))
        _same(fast, general)
        assert fast.grad_fn is None and not fast.requires_grad


def test_the_update_of_a_parameter_writes_the_general_paths_values():
    rng = np.random.default_rng(1)
    init, g = rng.standard_normal((4, 3)).astype(np.float32), rng.standard_normal((4, 3)).astype(np.float32)
    out = []
    for anomaly in (False, True):
        w = ad.tensor(init, requires_grad=True)
        w.grad = ad.tensor(g)
        with ad.detect_anomaly() if anomaly else ad.no_grad():
            with ad.no_grad():
                w -= 0.01 * w.grad
        out.append(w.detach().numpy().tobytes())
    assert out[0] == out[1]
    assert out[0] == (init - np.float32(0.01) * g).tobytes()


def test_errors_are_the_ops_own():
    a, b = ad.tensor(np.ones((2, 3))), ad.tensor(np.ones((4, 5)))
    with ad.no_grad():
        with pytest.raises(ad.ShapeError) as fast:
            a + b
    with ad.detect_anomaly():
        with pytest.raises(ad.ShapeError) as general:
            a + b
    assert fast.value.message == general.value.message and "add" in fast.value.message


def test_what_the_fast_path_leaves_to_the_general_one():
    x, y = ad.tensor(np.ones((3, 3))), ad.tensor(np.full((3, 3), 2.0))
    assert registry._apply_plain(E.Mul, x, y) is not None
    w = ad.tensor(np.ones((3, 3)), requires_grad=True)
    assert registry._apply_plain(E.Mul, w, y) is None            # why() notes where it left the graph
    assert registry._apply_plain(E.Mul, x[0], y[0]) is None      # a view (it may be stale)
    s, t = ad.tensor(2.0, dtype=ad.float64), ad.tensor(3.0, dtype=ad.float64)
    assert registry._apply_plain(E.Mul, s, t) is None            # two 0-d float64: the 0-d fast path
    assert registry._apply_plain(E.Mul, x, ad.tensor([1, 2, 3], dtype=ad.int64)) is None   # promotion


def test_why_still_sees_a_value_that_left_the_graph_under_no_grad():
    w = ad.tensor([1.0, 2.0], requires_grad=True)
    with ad.no_grad():
        y = w * 2.0
    assert "no_grad" in str(ad.why(y))


def test_a_view_made_before_its_bases_in_place_op_reads_the_new_values():
    base = ad.tensor(np.arange(6.0).reshape(2, 3))
    row = base[1]
    with ad.no_grad():
        base *= 10.0
        out = row * 1.0
    assert np.array_equal(out.numpy(), np.array([30.0, 40.0, 50.0]))


def test_anomaly_mode_still_checks_an_unrecorded_op():
    x = ad.tensor(np.zeros(3))
    with ad.detect_anomaly(), ad.no_grad():
        with pytest.warns(AnomalyWarning, match="div .* produced nan from finite inputs"):
            x / x
