"""The dependency-counted engine: shared inputs, deep graphs, each node once, order, higher order."""
import math

import numpy as np
import pytest

import autodsl as ad
from autodsl.core.node import AccumulateGrad
from autodsl.core.trace import tracing


def traced_backward(y, *args, **kwargs):
    """Run y.backward(...) and return its Trace."""
    got = []
    with tracing(False, sink=got.append):
        y.backward(*args, **kwargs)
    assert len(got) == 1
    return got[0]


def reachable_nodes(root):
    """Every node reachable from root's grad_fn (explicit stack)."""
    seen = {root.grad_fn}
    stack = [root.grad_fn]
    while stack:
        n = stack.pop()
        for nxt in n.next_edges:
            if nxt is not None and nxt not in seen:
                seen.add(nxt)
                stack.append(nxt)
    return seen


def assert_each_node_once(trace, root):
    nodes = [s.node for s in trace.steps]
    assert len(nodes) == len(set(map(id, nodes))), "a node ran twice"
    assert set(nodes) == reachable_nodes(root), "a reachable node did not run"


def test_a_plus_a():
    a = ad.tensor(3.0, requires_grad=True)
    b = a + a
    tr = traced_backward(b)
    assert a.grad.item() == 2.0
    assert tr.node_names() == ["AddBackward", "AccumulateGrad"]
    assert_each_node_once(tr, b)
    leaf = tr.steps[-1]
    assert leaf.kind == "leaf" and leaf.deps == 2       # waited for both edges of AddBackward
    assert leaf.grad_in.item() == 2.0


def test_b_is_a_plus_a_c_is_b_plus_b():
    # micrograd #64: the re-used non-leaf b must run once, on the sum 2.
    a = ad.tensor(-4.0, requires_grad=True)
    b = a + a
    c = b + b
    tr = traced_backward(c)
    assert a.grad.item() == 4.0
    assert tr.node_names() == ["AddBackward", "AddBackward", "AccumulateGrad"]
    assert_each_node_once(tr, c)
    b_step = tr.steps[1]
    assert b_step.node is b.grad_fn and b_step.deps == 2 and b_step.grad_in.item() == 2.0


def test_diamond():
    a = ad.tensor(1.5, requires_grad=True)
    b = a * 2.0
    c = a * 3.0
    d = b * c                                   # 6 a^2
    tr = traced_backward(d)
    assert math.isclose(a.grad.item(), 12 * 1.5)
    assert_each_node_once(tr, d)
    assert len(tr.steps) == 4


def test_shared_input_runs_once_on_the_summed_gradient():
    # L -> d -> c -> a and L -> e -> c -> a
    a = ad.tensor([0.5, -1.0], requires_grad=True)
    c = ad.exp(a)
    d = c * 3.0
    e = ad.sin(c)
    L = (d + e).sum()
    tr = traced_backward(L)
    assert_each_node_once(tr, L)
    c_steps = [s for s in tr.steps if s.node is c.grad_fn]
    assert len(c_steps) == 1
    c_step = c_steps[0]
    assert c_step.deps == 2
    sent = [og for s in tr.steps for nxt, og in s.sends if nxt is c.grad_fn]
    assert len(sent) == 2
    np.testing.assert_allclose(c_step.grad_in, sent[0] + sent[1])
    cv = np.exp([0.5, -1.0])
    np.testing.assert_allclose(c_step.grad_in, 3.0 + np.cos(cv))
    np.testing.assert_allclose(a.grad.numpy(), (3.0 + np.cos(cv)) * cv)
    # c's node ran after both d's and e's nodes
    order = [s.node for s in tr.steps]
    assert order.index(c.grad_fn) > order.index(d.grad_fn)
    assert order.index(c.grad_fn) > order.index(e.grad_fn)


def test_deep_chain_has_no_recursion_limit():
    x = ad.tensor(1.0, requires_grad=True)
    y = x
    n = 100_000
    for _ in range(n):
        y = y * 1.0001
    y.backward()
    assert math.isclose(x.grad.item(), 1.0001 ** n, rel_tol=1e-9)
    assert math.isclose(y.item(), 1.0001 ** n, rel_tol=1e-9)


def test_diamond_ladder_runs_each_node_once():
    x = ad.tensor(0.3, requires_grad=True)
    y = x
    levels = 10_000
    for _ in range(levels):
        y = ad.sin(y) * ad.cos(y)          # each level: a diamond Sin/Cos -> Mul
    tr = traced_backward(y)
    assert len(tr.steps) == 3 * levels + 1   # Sin, Cos, Mul per level, plus AccumulateGrad
    assert_each_node_once(tr, y)
    # reference: the derivative of f(y) = sin(y)cos(y) = sin(2y)/2 is cos(2y), chained
    v, d = 0.3, 1.0
    for _ in range(levels):
        d *= math.cos(2 * v)
        v = math.sin(2 * v) / 2
    assert math.isclose(y.item(), v, rel_tol=1e-12, abs_tol=1e-300)
    assert math.isclose(x.grad.item(), d, rel_tol=1e-9, abs_tol=1e-300)


def test_short_ladder_value():
    x = ad.tensor(0.7, requires_grad=True)
    y = x
    for _ in range(3):
        y = ad.sin(y) * ad.cos(y)
    y.backward()
    v, d = 0.7, 1.0
    for _ in range(3):
        d *= math.cos(2 * v)
        v = math.sin(2 * v) / 2
    assert math.isclose(x.grad.item(), d, rel_tol=1e-12)


def _build():
    a = ad.tensor([1.0, 2.0], requires_grad=True)
    b = ad.tensor([0.5, -0.5], requires_grad=True)
    h = ad.tanh(a * b + a)
    return ad.exp(h).sum() + (h * b).sum()


def test_order_is_deterministic_and_reads_like_the_forward_in_reverse():
    names = [traced_backward(_build()).node_names() for _ in range(3)]
    assert names[0] == names[1] == names[2]
    x = ad.tensor([1.0, 2.0], requires_grad=True)
    y = ad.exp(x * 2.0).sum()
    assert traced_backward(y).node_names() == ["SumBackward", "ExpBackward", "MulBackward", "AccumulateGrad"]


def test_trace_records_leaf_grad_after_accumulation():
    x = ad.tensor([1.0, 2.0], requires_grad=True)
    tr = traced_backward((x * 3.0).sum())
    leaf = tr.steps[-1]
    assert leaf.kind == "leaf" and isinstance(leaf.node, AccumulateGrad) and leaf.leaf is x
    np.testing.assert_array_equal(leaf.grad_after, [3.0, 3.0])
    assert ad.last_trace() is tr


def test_accumulation_across_two_backwards():
    x = ad.tensor([1.0, -2.0], requires_grad=True)
    y = (x * x).sum()
    y.backward(retain_graph=True)
    np.testing.assert_array_equal(x.grad.numpy(), [2.0, -4.0])
    first = x.grad
    y.backward()
    np.testing.assert_array_equal(x.grad.numpy(), [4.0, -8.0])
    assert x.grad is first                              # accumulated into the same buffer
    z = (x * 10.0).sum()
    z.backward()
    np.testing.assert_array_equal(x.grad.numpy(), [14.0, 2.0])


def test_first_grad_owns_its_buffer():
    # the incoming gradient of x is the seed of y (ones); .grad must not alias it
    x = ad.tensor([1.0, 2.0], requires_grad=True)
    seed = ad.tensor([1.0, 1.0])
    x.backward(seed)
    x.backward(seed)
    np.testing.assert_array_equal(seed.numpy(), [1.0, 1.0])
    np.testing.assert_array_equal(x.grad.numpy(), [2.0, 2.0])
    # AddBackward sends the same gradient to both leaves: their .grad must be separate buffers
    a = ad.tensor(1.0, requires_grad=True)
    b = ad.tensor(2.0, requires_grad=True)
    (a + b).backward()
    (a * 5.0).backward()
    assert a.grad.item() == 6.0 and b.grad.item() == 1.0
    (a + b).backward()
    assert a.grad.item() == 7.0 and b.grad.item() == 2.0


def test_grad_leaves_dot_grad_untouched():
    x = ad.tensor([1.0, 2.0], requires_grad=True)
    w = ad.tensor([3.0, 4.0], requires_grad=True)
    y = (x * w).sum()
    gx, gw = ad.grad(y, [x, w], retain_graph=True)
    np.testing.assert_array_equal(gx.numpy(), [3.0, 4.0])
    np.testing.assert_array_equal(gw.numpy(), [1.0, 2.0])
    assert x.grad is None and w.grad is None
    y.backward(retain_graph=True)
    before = x.grad.numpy()
    ad.grad(y, [x])
    np.testing.assert_array_equal(x.grad.numpy(), before)


def test_grad_unused_input():
    x = ad.tensor(1.0, requires_grad=True)
    z = ad.tensor(1.0, requires_grad=True)
    y = x * 2.0
    with pytest.raises(ad.AutogradError, match="allow_unused"):
        ad.grad(y, [x, z], retain_graph=True)
    gx, gz = ad.grad(y, [x, z], allow_unused=True)
    assert gx.item() == 2.0 and gz is None


def test_retain_graph_error():
    x = ad.tensor(2.0, requires_grad=True)
    y = x * x
    y.backward()
    with pytest.raises(ad.AutogradError, match="retain_graph"):
        y.backward()
    assert x.grad.item() == 4.0                         # the failed second pass added nothing


def test_retain_graph_allows_a_second_pass():
    x = ad.tensor(2.0, requires_grad=True)
    y = ad.exp(x)
    y.backward(retain_graph=True)
    y.backward()
    assert math.isclose(x.grad.item(), 2 * math.exp(2.0))


def test_higher_order_cube():
    x = ad.tensor(2.0, requires_grad=True)
    y = x ** 3
    (d1,) = ad.grad(y, x, create_graph=True)
    assert d1.item() == 12.0 and d1.requires_grad
    (d2,) = ad.grad(d1, x, create_graph=True)
    assert d2.item() == 12.0
    (d3,) = ad.grad(d2, x)
    assert d3.item() == 6.0


def test_higher_order_sin():
    x = ad.tensor(0.8, requires_grad=True)
    (d1,) = ad.grad(ad.sin(x), x, create_graph=True)
    (d2,) = ad.grad(d1, x, create_graph=True)
    (d3,) = ad.grad(d2, x)
    assert math.isclose(d1.item(), math.cos(0.8))
    assert math.isclose(d2.item(), -math.sin(0.8))
    assert math.isclose(d3.item(), -math.cos(0.8))


def test_backward_create_graph_gives_differentiable_grad():
    x = ad.tensor(3.0, requires_grad=True)
    y = x ** 2
    y.backward(create_graph=True)
    g = x.grad
    assert g.item() == 6.0 and g.requires_grad
    (d2,) = ad.grad(g, x)
    assert d2.item() == 2.0


def test_mixed_partials():
    x = ad.tensor(1.5, requires_grad=True)
    w = ad.tensor(-0.5, requires_grad=True)
    f = x * x * w + ad.exp(x * w)
    (fx,) = ad.grad(f, x, create_graph=True)
    (fxw,) = ad.grad(fx, w)
    # d/dw (2xw + w e^{xw}) = 2x + e^{xw} + xw e^{xw}
    e = math.exp(1.5 * -0.5)
    assert math.isclose(fxw.item(), 3.0 + e + 1.5 * -0.5 * e)


def test_multiple_roots_with_grad_outputs():
    x = ad.tensor([1.0, 2.0], requires_grad=True)
    y1 = x * 2.0
    y2 = (x * x).sum()
    (g,) = ad.grad([y1, y2], [x], grad_outputs=[ad.tensor([1.0, -1.0]), None])
    np.testing.assert_array_equal(g.numpy(), [2.0 + 2.0, -2.0 + 4.0])


def test_backward_inputs_restricts_accumulation():
    a = ad.tensor(1.0, requires_grad=True)
    b = ad.tensor(2.0, requires_grad=True)
    (a * b).backward(inputs=[a])
    assert a.grad.item() == 2.0
    assert b.grad is None


def test_broadcast_gradient_reduced_to_input_shape():
    a = ad.tensor([[1.0], [2.0]], requires_grad=True)     # (2, 1)
    b = ad.tensor([1.0, 2.0, 3.0], requires_grad=True)    # (3,)
    (a * b).sum().backward()
    assert a.grad.shape == (2, 1) and b.grad.shape == (3,)
    np.testing.assert_array_equal(a.grad.numpy(), [[6.0], [6.0]])
    np.testing.assert_array_equal(b.grad.numpy(), [3.0, 3.0, 3.0])


def test_an_ops_output_starts_as_a_made_tensor_does():
    """new_tensor (an op's output, made without Tensor.__init__) sets every slot as __init__ does."""
    import numpy as np
    from autodsl.core.tensor import Tensor, new_tensor
    from autodsl.core.tensor_fields import TensorFields
    a = np.asarray([1.0, 2.0])
    made, fast = Tensor(a, _device="cpu"), new_tensor(a, "cpu")
    for slot in TensorFields.__slots__:
        if slot == "__weakref__":
            continue
        mv, fv = getattr(made, slot), getattr(fast, slot)
        assert (mv is fv) or (mv == fv), slot
    assert made._version is not fast._version        # each its own counter
    assert type(new_tensor(np.float64(2.0), "cpu")._data) is np.ndarray    # scalars become 0-d arrays
