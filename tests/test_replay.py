"""``replay(f, ...)``: a recorded graph evaluated again at new leaf values (core/replay.py).

The values are checked against eager evaluation: on the op table (every differentiable
sample, replayed at perturbed leaf values, must give exactly what the op computes eagerly at
those values, bit for bit) and on hand-computed examples. The originals are never touched.
"""
from __future__ import annotations

import io

import numpy as np
import pytest

import autodsl as ad
from autodsl.core.node import Node
from autodsl.core.replay import evaluate, fixed_inputs
from helpers import to_ad
from op_samples import DIFF_SAMPLES


def seed_example():
    x = ad.tensor(2.0)
    w1 = ad.tensor(0.5, requires_grad=True)
    w2 = ad.tensor(-1.5, requires_grad=True)
    b = ad.tensor(1.0, requires_grad=True)
    f = (w2 * (w1 * x ** 2 + b)) ** 3
    return x, w1, w2, b, f


def by_hand(w1, w2=-1.5, b=1.0, x=2.0):
    v = w2 * (w1 * x ** 2 + b)
    return v * v * v        # x^3 is x*x*x, as torch's pow kernel computes it (Python's ** is pow())


# ---- the op table -------------------------------------------------------------------------------

def _floats(sample):
    return [i for i, a in enumerate(sample.args) if isinstance(a, np.ndarray) and a.dtype.kind == "f"]


@pytest.mark.parametrize("sample", DIFF_SAMPLES, ids=[s.id for s in DIFF_SAMPLES])
def test_replay_of_every_op_equals_eager_evaluation_at_new_values(sample):
    rng = np.random.default_rng(7)
    ts = [to_ad(a, requires_grad=True) for a in sample.args]
    out = sample.fn(ad, *ts)
    before = out.numpy()
    idx = _floats(sample)
    # a relative perturbation keeps the values in their domains and away from kinks and ties
    new = {i: sample.args[i] * (1 + 1e-3 * rng.uniform(-1, 1, size=np.shape(sample.args[i]))) for i in idx}
    got = ad.replay(out, [ts[i] for i in idx], [ad.tensor(new[i].tolist(), dtype=ad.float64) for i in idx])
    eager = sample.fn(ad, *[to_ad(new[i]) if i in new else to_ad(a) for i, a in enumerate(sample.args)])
    assert got.shape == eager.shape and got.dtype is eager.dtype
    np.testing.assert_array_equal(got.numpy(), eager.numpy())      # bit for bit (nan equal to nan)
    assert not got.requires_grad
    np.testing.assert_array_equal(out.numpy(), before)                  # the original is untouched
    for i in idx:
        np.testing.assert_array_equal(ts[i].numpy(), sample.args[i])


RECORDED = [s for s in DIFF_SAMPLES if s.op in ("mul", "div", "pow", "tanh", "sum", "matmul", "softmax",
                                                 "getitem", "cat", "where", "mse_loss", "norm")]


@pytest.mark.parametrize("sample", RECORDED, ids=[s.id for s in RECORDED])
def test_a_recorded_replay_gives_a_graph_with_eager_gradients(sample):
    ts = [to_ad(a, requires_grad=True) for a in sample.args]
    out = sample.fn(ad, *ts).sum()
    idx = _floats(sample)
    expected = ad.grad(out, [ts[i] for i in idx], retain_graph=True, allow_unused=True)
    out.backward()                                  # frees the saved values
    again = ad.replay(out, record=True)
    assert again.requires_grad and again.grad_fn is not out.grad_fn
    got = ad.grad(again, [ts[i] for i in idx], allow_unused=True)
    for g, e in zip(got, expected):
        assert (g is None) == (e is None)
        if g is not None:
            np.testing.assert_array_equal(g.numpy(), e.numpy())


# ---- the seed example, by hand --------------------------------------------------------------------

def test_replay_at_new_values_by_hand_and_the_originals_untouched():
    x, w1, w2, b, f = seed_example()
    assert f.item() == -91.125
    assert ad.replay(f, {w1: 0.6, b: 2.0}).item() == by_hand(0.6, b=2.0) == pytest.approx(-287.496)
    assert ad.replay(f, [w1, b], [0.6, 2.0]).item() == by_hand(0.6, b=2.0)
    assert ad.replay(f, w1, 0.6).item() == by_hand(0.6)
    assert ad.replay(f).item() == -91.125
    assert (w1.item(), b.item(), f.item(), w1.version, b.version) == (0.5, 1.0, -91.125, 0, 0)
    assert w1.grad is None and b.grad is None


def test_replay_after_backward_and_a_fresh_graph():
    x, w1, w2, b, f = seed_example()
    f.backward()
    assert (w1.grad.item(), w2.grad.item(), b.grad.item()) == (-364.5, 182.25, -91.125)
    assert ad.replay(f, {w1: 0.6}).item() == by_hand(0.6)
    with pytest.raises(ad.AutogradError, match="retain_graph=true"):
        f.backward()
    g = ad.replay(f, record=True)           # the same leaves, saved values again
    assert g.requires_grad and g.item() == -91.125
    g.backward()
    assert (w1.grad.item(), w2.grad.item(), b.grad.item()) == (-729.0, 364.5, -182.25)


def test_a_given_tensor_that_requires_grad_is_the_fresh_graph_leaf():
    x, w1, w2, b, f = seed_example()
    v = ad.tensor(0.6, requires_grad=True)
    g = ad.replay(f, {w1: v}, record=True)
    g.backward()
    # d/dw1 (w2*(w1*x^2+b))^3 = 3*(w2*(w1*4+1))^2 * w2*4 at w1=0.6
    assert v.grad.item() == pytest.approx(3 * (-1.5 * 3.4) ** 2 * -6.0)
    assert w1.grad is None
    u = ad.tensor(0.6)                                  # one that does not require grad is not changed
    ad.replay(f, {w1: u}, record=True)
    assert not u.requires_grad


def test_values_are_converted_to_the_leaf_dtype_and_may_be_batched():
    x, w1, w2, b, f = seed_example()
    batch = ad.replay(f, {w1: [0.5, 0.6, 0.7]})
    assert batch.shape == (3,)
    np.testing.assert_array_equal(batch.numpy(), [by_hand(0.5), by_hand(0.6), by_hand(0.7)])
    assert ad.replay(f, {w1: np.array([[0.6], [0.7]])}).shape == (2, 1)
    assert ad.replay(f, {w1: ad.tensor(0.6, dtype=ad.float32)}).item() == by_hand(float(np.float32(0.6)))
    assert ad.replay(f, {w1: 1}).item() == by_hand(1.0)
    w = ad.tensor([1.0, 2.0], dtype=ad.float32, requires_grad=True)
    y = (w * w).sum()
    r = ad.replay(y, [w], [[3.0, 4.0]])
    assert r.dtype is ad.float32 and r.item() == 25.0


def test_an_intermediate_cuts_the_graph():
    w = ad.tensor(3.0, requires_grad=True)
    h = w * 2
    f = h ** 2 + w
    assert ad.replay(f, {h: 10.0}).item() == 103.0
    assert ad.replay(f, {w: 1.0}).item() == 5.0


def test_shared_nodes_run_once_and_in_place_histories_replay():
    w = ad.tensor([1.0, 2.0], requires_grad=True)
    y = w * 3
    y += 1                        # an in-place op on a non-leaf: its history is the new node
    y[0] = w[1] * 10              # a write through an index (CopySlices)
    f = (y * y).sum()
    # eager at w = [2, 5]: y = [50, 16], f = 2500 + 256
    assert ad.replay(f, {w: [2.0, 5.0]}).item() == 2756.0
    assert f.item() == 20.0 ** 2 + 7.0 ** 2


def test_a_chain_of_100000_nodes_needs_no_recursion():
    w = ad.tensor(1.0, requires_grad=True)
    y = w
    for _ in range(100_000):
        y = y * 1.0 + 0.0
    assert ad.replay(y, {w: 3.0}).item() == 3.0


def test_intermediate_values_are_freed_as_the_walk_goes():
    w = ad.tensor(1.0, requires_grad=True)
    y = w
    for _ in range(50):
        y = ad.sin(y)
    done = evaluate([y.grad_fn], {})
    assert list(done.outputs) == [y.grad_fn]        # only the root's value is kept
    assert done.outputs[y.grad_fn].item() == y.item()


def test_a_view_result_does_not_share_a_leaf_storage():
    w = ad.tensor([1.0, 2.0], requires_grad=True)
    v = w[0:1]
    r = ad.replay(v)
    r[0] = 9.0
    assert w.numpy().tolist() == [1.0, 2.0]


# ---- the language ----------------------------------------------------------------------------------

def test_replay_is_a_builtin_of_the_language():
    s = ad.Session(out=io.StringIO())
    s.run("x = tensor(2.0)\nw1 = tensor(0.5, requires_grad=true)\nw2 = tensor(-1.5, requires_grad=true)\n"
          "b = tensor(1.0, requires_grad=true)\nf = (w2*(w1*x^2+b))^3\nf.backward()")
    r = s.run("replay(f, [w1, b], [0.6, 2.0])")
    assert r.item() == by_hand(0.6, b=2.0) and not r.requires_grad
    assert s.run("replay(f, w1, 0.6)").item() == by_hand(0.6)
    assert s.run("replay(f, [w1], [[0.5, 1.0]]).shape") == (2,)
    with pytest.raises(ad.ValueError_) as info:
        s.run("replay(f, [x], [3.0])")
    assert info.value.line == 1 and "`x` does not require grad" in info.value.message


# ---- errors ------------------------------------------------------------------------------------------

def test_errors_in_the_language_s_words():
    x, w1, w2, b, f = seed_example()
    other = ad.tensor(1.0, requires_grad=True)
    with pytest.raises(ad.TypeError_, match="takes a tensor computed from leaves"):
        ad.replay(lambda: f, {w1: 1.0})
    with pytest.raises(ad.AutogradError, match="`x` has no graph to evaluate again"):
        ad.replay(x, {})
    with pytest.raises(ad.ValueError_, match="`other` is not in `f`'s graph"):
        ad.replay(f, {other: 2.0})
    with pytest.raises(ad.ValueError_, match="`x` does not require grad, so `f`'s graph holds its values "
                                             "as a constant"):
        ad.replay(f, {x: 3.0})
    with pytest.raises(ad.ValueError_, match="2 tensors but 1 values"):
        ad.replay(f, [w1, b], [0.6])
    with pytest.raises(ad.TypeError_, match="give the new values as a list"):
        ad.replay(f, [w1], 0.6)
    with pytest.raises(ad.TypeError_, match="one key is a number"):
        ad.replay(f, {1.0: 2.0})
    with pytest.raises(ad.TypeError_, match="not a string"):
        ad.replay(f, {w1: "0.6"})
    with pytest.raises(ad.ShapeError):
        ad.replay((w1 * ad.tensor([1.0, 2.0])).sum(), {w1: [1.0, 2.0, 3.0]})
    assert ad.replay(w1, {w1: 4.0}).item() == 4.0              # f is the leaf itself


def test_values_computed_without_the_graph_are_refused():
    w = ad.tensor(0.5, requires_grad=True)
    z = ad.where(w > 0, w, 0.0)
    with pytest.raises(ad.ValueError_, match=r"`z` uses the result of gt at .* \(an input of WhereBackward at "
                                             r".*\), which was computed without recording a graph"):
        ad.replay(z, {w: -1.0})
    assert ad.replay(z).item() == 0.5                        # nothing changes: nothing is stale
    y = w * w.detach()
    with pytest.raises(ad.ValueError_, match="uses a detach\\(\\) or .data of `w` \\(an input of MulBackward"):
        ad.replay(y, {w: 2.0})
    with ad.no_grad():
        c = w * 2
    u = c * w
    (fx,) = fixed_inputs([u.grad_fn], [w._accumulate])
    assert fx.kind == "no_grad" and fx.node is u.grad_fn and fx.index == 0


def test_a_node_that_is_not_an_op_cannot_run_again():
    class Custom(Node):
        name = "CustomBackward"

        def apply(self, grad):
            return ()

    t = ad.tensor(2.0)
    t.grad_fn = Custom()
    t._requires_grad = True
    f = t * 3
    with pytest.raises(ad.AutogradError, match="CustomBackward cannot be evaluated again"):
        ad.replay(f)
