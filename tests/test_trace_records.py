"""Note [trace records] (core/step_log.py): a Session keeps its last backward's trace, so the
records hold the gradients' arrays, not their Tensors, and no tuple for a node whose only
other input is a constant; a two-input op keeps its one constant bare (core/node.py's
const_entries). What the trace, the graph and why() show is unchanged."""
from __future__ import annotations

import gc

import numpy as np
import pytest

import autodsl as ad
from autodsl.core.node import const_entries
from autodsl.core.replay import evaluate
from autodsl.core.tensor import Tensor, run_backward
from autodsl.core.trace import tracing

CHAIN = """
x = tensor(0.5, requires_grad=true, dtype=float64)
y = x
for i in range(200) { y = relu(y*0.999 + 0.001) }
y.backward()
"""


def _live(kind) -> int:
    return sum(1 for o in gc.get_objects() if type(o) is kind)


def test_a_sessions_kept_trace_holds_no_gradient_tensors():
    gc.collect()
    before = _live(Tensor)      # (what other tests left alive)
    s = ad.Session(echo=False)
    s.run(CHAIN)
    gc.collect()
    trace = s.last_trace
    assert trace is not None and len(trace) == 601          # 600 nodes and the leaf
    # the 600 gradients in and the 600 sent are arrays of the trace, not Tensors kept alive
    assert _live(Tensor) - before < 50
    # and its numbers are the backward's: the leaf got d(y)/dx, each node the gradient in
    steps = trace.steps
    assert steps[-1].kind == "leaf"
    assert steps[-1].grad_after == pytest.approx(float(s["x"].grad))
    assert float(steps[0].grad_in) == 1.0                    # the seed into the last relu
    nxt, sent = steps[0].sends[0]
    assert nxt is steps[1].node and float(sent) == 1.0       # relu of a positive input
    nxt, sent = steps[2].sends[0]                            # the mul by 0.999: one real edge
    assert len(steps[2].sends) == 1 and float(sent) == pytest.approx(0.999)


def test_a_traced_step_of_two_real_edges_and_of_a_constant_edge():
    x = ad.tensor(3.0, requires_grad=True)
    w = ad.tensor(2.0, requires_grad=True)
    a = x * w               # two real edges
    b = 4.0 * a             # a constant first
    c = b - 1.0             # a constant second
    s = ad.Session(echo=False)        # keeps the trace without printing it
    s["c"] = c
    s.run("c.backward()")
    tr = s.last_trace
    by_name = {st.node.name: st for st in tr.steps if st.kind == "node"}
    sub, mul_c, mul_xw = by_name["SubBackward"], None, None
    for st in tr.steps:
        if st.kind == "node" and st.node.name == "MulBackward":
            if len(st.sends) == 2:
                mul_xw = st
            else:
                mul_c = st
    assert [float(v) for _, v in sub.sends] == [1.0]
    assert sub.sends[0][0] is mul_c.node
    assert [float(v) for _, v in mul_c.sends] == [4.0]
    assert mul_c.sends[0][0] is mul_xw.node
    assert {n.variable is x: float(v) for n, v in mul_xw.sends} == {True: 8.0, False: 12.0}
    assert "grad in" in tr.format()


@pytest.mark.parametrize("make, index", [(lambda x: x * 0.5, 1), (lambda x: 0.5 * x, 0),
                                         (lambda x: ad.where(x > 0, x, 0.5), 2)])
def test_const_entries_line_up_with_the_edges(make, index):
    x = ad.tensor(np.array([1.0, -2.0]), requires_grad=True)
    node = make(x).grad_fn
    entries = const_entries(node)
    assert len(entries) == len(node.next_edges)
    for i, (e, c) in enumerate(zip(node.next_edges, entries)):
        if i == index:
            assert e is None and float(c) == 0.5
        elif e is not None:
            assert c is None
    # the graph shows the constant, and a replay at a new value of x uses it
    assert "0.5" in str(ad.graph(make(x)))
    acc = next(e for e in node.next_edges if e is not None)
    new = ad.tensor(np.array([3.0, -4.0]))
    got = evaluate([node], {acc: new}).outputs[node]
    np.testing.assert_array_equal(got.numpy(), make(new).numpy())


def test_a_node_without_constants_has_no_entries():
    x = ad.tensor(1.0, requires_grad=True)
    assert const_entries((x * x).grad_fn) == ()
    assert const_entries(ad.sin(x).grad_fn) == ()


def _counts_by_hand(roots):
    # every edge of the graph reachable from roots, counted once per edge (a set of seen nodes)
    seen, stack, counts = set(roots), list(roots), {}
    while stack:
        for nxt in stack.pop().next_edges:
            if nxt is None:
                continue
            counts[nxt] = counts.get(nxt, 0) + 1
            if nxt not in seen:
                seen.add(nxt)
                stack.append(nxt)
    return counts


@pytest.mark.parametrize("retain", [False, True])
def test_a_traces_dependency_counts_are_the_engines(retain):
    # the trace makes its counts again from the pass's roots when its steps are first read
    # (after the pass, its saved values freed or not): the counts the engine ran with
    x = ad.tensor([0.5, -1.5, 2.0], requires_grad=True)
    w = ad.tensor(0.3, requires_grad=True)
    a = x * w
    b = ad.sin(a) + a * a           # a diamond: a feeds three edges
    y1 = (b * w).sum()
    y2 = (a + b).sum()              # a second root that shares the graph
    roots = (y1.grad_fn, y2.grad_fn)
    want = _counts_by_hand(roots)
    with tracing(False, sink=lambda tr: None):
        run_backward([y1, y2], retain_graph=retain)
        trace = ad.last_trace()
    steps = trace.steps
    assert len(steps) == len({st.node for st in steps})
    for st in steps:
        assert st.deps == want.get(st.node, 0), st.node
    assert [st.deps for st in steps if st.node in roots] == [0, 0]
    # x's and w's gradients as PyTorch gives them for the same two roots
    torch = pytest.importorskip("torch")
    tx = torch.tensor([0.5, -1.5, 2.0], dtype=torch.float64, requires_grad=True)
    tw = torch.tensor(0.3, dtype=torch.float64, requires_grad=True)
    ta = tx * tw
    tb = torch.sin(ta) + ta * ta
    torch.autograd.backward([(tb * tw).sum(), (ta + tb).sum()])
    assert np.allclose(x.grad.numpy(), tx.grad.numpy(), rtol=1e-15, atol=0)
    assert np.allclose(w.grad.numpy(), tw.grad.numpy(), rtol=1e-15, atol=0)
