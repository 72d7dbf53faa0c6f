"""From plain Python, the trace, graph(), dot() and step() name tensors by the caller's variables,
as the language names them by its Session's: one mechanism (``autodsl.names.caller_namespace``).

Explicit ``names=`` wins; inside a Session its namespace wins; unnamed leaves of one shape are
numbered alike in the graph and the trace; an untraced backward never walks frames.
"""
from __future__ import annotations

import io
import sys

import pytest

import autodsl as ad
from autodsl.core import trace as trace_mod
import autodsl.names as names_mod

G = ad.tensor(5.0, requires_grad=True)      # a module-level tensor: a global variable of this file


@pytest.fixture(autouse=True)
def _trace_off():
    ad.trace(False)
    yield
    ad.trace(False)


# ---- the trace ----------------------------------------------------------------------------------

def test_trace_printed_from_python_names_leaves_by_the_callers_variables(capsys):
    w = ad.tensor(2.0, requires_grad=True)
    b = ad.tensor(1.0, requires_grad=True)
    line = sys._getframe().f_lineno + 1
    y = (w * 3.0 + b) ** 2
    ad.trace(True)
    y.backward()
    ad.trace(False)
    at = f"at test_python_names.py:{line} `y = (w * 3.0 + b) ** 2`"
    assert capsys.readouterr().out == "\n".join([
        "backward trace: 5 steps; each node runs once, when all gradients into it (deps) have arrived "
        "and been summed",
        f"step 1  PowBackward#1 {at}  deps 0 (root)",
        "        grad in  1.0",
        "        -> AddBackward#1  14.0",
        "           = grad * 2.0 * <AddBackward#1>^(2.0-1) = 1.0 * 2.0 * 7.0^(2.0-1)",
        f"step 2  AddBackward#1 {at}  deps 1",
        "        grad in  14.0",
        "        -> MulBackward#1  14.0",
        "           = grad",
        "        -> AccumulateGrad(b)  14.0",
        "           = grad",
        "step 3  AccumulateGrad(b)  deps 1",
        "        grad in  14.0",
        "        b.grad = 14.0",
        f"step 4  MulBackward#1 {at}  deps 1",
        "        grad in  14.0",
        "        -> AccumulateGrad(w)  42.0",
        "           = grad * 3.0 = 14.0 * 3.0",
        "step 5  AccumulateGrad(w)  deps 1",
        "        grad in  42.0",
        "        w.grad = 42.0",
    ]) + "\n"
    # dy/dw = 2*(3w + b)*3 = 42, dy/db = 2*(3w + b) = 14
    assert float(w.grad.item()) == 42.0 and float(b.grad.item()) == 14.0
    tr = ad.last_trace()
    assert [r.get("leaf") for r in tr.records()] == [None, None, "b", None, "w"]
    assert [r["node"] for r in tr.records()] == ["PowBackward#1", "AddBackward#1", "AccumulateGrad(b)",
                                                 "MulBackward#1", "AccumulateGrad(w)"]


def _backward_of(weight):
    loss = (weight * weight).sum()
    loss.backward()


def test_the_names_are_those_of_the_frame_that_called_backward(capsys):
    mine = ad.tensor([1.0, 2.0], requires_grad=True)
    ad.trace(True)
    _backward_of(mine)          # backward() is called in _backward_of: its variables name the leaves
    ad.trace(False)
    out = capsys.readouterr().out
    assert "step 3  AccumulateGrad(weight)  deps 2\n        grad in  [2., 4.]\n        weight.grad = [2., 4.]" in out
    assert "mine" not in out


def test_grad_from_python_names_where_the_gradients_go(capsys):
    w = ad.tensor(2.0, requires_grad=True)
    y = w ** 3
    ad.trace(True)
    (g,) = ad.grad(y, [w])
    ad.trace(False)
    assert float(g.item()) == 12.0
    out = capsys.readouterr().out
    assert "        -> AccumulateGrad(w)  12.0\n" in out
    assert "AccumulateGrad(leaf" not in out


def test_last_trace_keeps_the_names_of_the_moment_of_the_backward(capsys):
    w = ad.tensor(3.0, requires_grad=True)
    ad.trace(True)
    (w * w).backward()
    ad.trace(False)
    printed = capsys.readouterr().out
    old = w
    w = ad.tensor(7.0, requires_grad=True)      # rebinding w afterwards renames nothing
    tr = ad.last_trace()
    assert str(tr) + "\n" == printed
    assert "step 2  AccumulateGrad(w)  deps 2\n        grad in  6.0\n        w.grad = 6.0" in str(tr)
    assert tr.records()[1]["leaf"] == "w"
    assert float(old.grad.item()) == 6.0 and w.grad is None


def test_a_kept_trace_reads_the_names_only_when_shown():
    kept = []
    w = ad.tensor(2.0, requires_grad=True)
    with trace_mod.tracing(False, sink=kept.append):     # kept, not printed
        (w * 3.0).backward()
    names = kept[0].names
    assert isinstance(names, trace_mod.LazyNames)
    assert names._namespaces is not None and dict.__len__(names) == 0    # copied, not yet read
    assert "AccumulateGrad(w)" in str(kept[0])
    assert names._namespaces is None and names.get(id(w)) == "w"


# ---- graph() and dot() -----------------------------------------------------------------------

def test_graph_from_python_names_the_callers_variables():
    w = ad.tensor(2.0, requires_grad=True)
    line = sys._getframe().f_lineno + 1
    f = (w * 3.0) ** 2
    at = f"at test_python_names.py:{line} `f = (w * 3.0) ** 2`"
    assert str(ad.graph(f)) == "\n".join([
        f"f = PowBackward#1 {at}  scalar  36.0",
        f"├─ MulBackward#1 {at}  scalar  6.0",
        "│  ├─ AccumulateGrad(w)  scalar  2.0  leaf  requires_grad",
        "│  └─ constant  scalar  3.0  requires_grad=false",
        "└─ constant  scalar  2.0  requires_grad=false",
    ])
    text = ad.dot(f)
    assert text.startswith("// The graph of f, made by autodsl.dot().")
    assert ('  n0 [label="f = PowBackward#1\\nat test_python_names.py:%d\\nf = (w * 3.0) ** 2\\n'
            'scalar  36.0", tooltip="PowBackward#1",' % line) in text
    assert '  n2 [label="w\\nscalar  2.0", tooltip="AccumulateGrad(w)",' in text


def test_globals_name_tensors_and_a_local_wins():
    y = (G * 2.0).sum()
    assert "AccumulateGrad(G)  scalar  5.0" in str(ad.graph(y))
    v = G                           # a local for the same tensor: the local name wins
    assert "AccumulateGrad(v)  scalar  5.0" in str(ad.graph(y))
    del v
    _hidden = ad.tensor(1.0, requires_grad=True)       # names starting with _ are not shown
    assert "AccumulateGrad(leaf scalar)" in str(ad.graph(_hidden * 2.0))
    ns = names_mod.caller_namespace()          # tensors only: not ad, pytest, sys
    assert sorted(ns) == ["G", "y"] and ns["G"] is G and ns["y"] is y


def test_only_autodsl_tensors_are_names():
    torch = pytest.importorskip("torch")
    t = torch.tensor(1.0, requires_grad=True)       # has _version and grad_fn too, but is not ours
    w = ad.tensor(1.0, requires_grad=True)
    ns = names_mod.caller_namespace()
    assert sorted(ns) == ["G", "w"] and ns["w"] is w and t is not None      # G: a global


def test_explicit_names_win():
    w = ad.tensor(2.0, requires_grad=True)
    f = w * 3.0
    text = str(ad.graph(f, names={"weight": w}))
    assert text.splitlines()[0].startswith("MulBackward#1 at ")        # f is not in names=
    assert "AccumulateGrad(weight)  scalar  2.0" in text
    assert "AccumulateGrad(leaf scalar)" in str(ad.graph(f, names={}))
    assert '[label="weight\\nscalar  2.0"' in ad.dot(f, names={id(w): "weight"})
    s = ad.step(f, names={"weight": w})
    assert "AccumulateGrad(weight): 1 to come" in str(s)
    s.abort()


# ---- step() -----------------------------------------------------------------------------------

def test_step_from_python_names_the_callers_variables():
    w = ad.tensor(2.0, requires_grad=True)
    b = ad.tensor(1.0, requires_grad=True)
    line = sys._getframe().f_lineno + 1
    y = (w * 3.0 + b) ** 2
    at = f"at test_python_names.py:{line} `y = (w * 3.0 + b) ** 2`"
    s = ad.step(y)
    assert str(s) == "\n".join([
        "paused before step 1",
        f"  next     PowBackward#1 {at}",
        "  grad     1.0",
        "  ready    (empty)",
        "  waiting  (node: gradients still to come, gradient summed so far)",
        "           AccumulateGrad(b): 1 to come, nothing yet",
        "           AccumulateGrad(w): 1 to come, nothing yet",
        "           AddBackward#1: 1 to come, nothing yet",
        "           MulBackward#1: 1 to come, nothing yet",
        "  (.next() runs it, .finish() runs the rest, .abort() leaves every .grad as it was)",
    ])
    shown = s.next(3)
    assert ("step 3  AccumulateGrad(b)  deps 1\n        grad in  14.0\n"
            "        b.grad += grad in  (written when the whole pass has succeeded)") in shown
    assert f"  next     MulBackward#1 {at}\n  grad     14.0\n" in shown
    assert b.grad is None
    shown = s.next()
    assert "        -> AccumulateGrad(w)  42.0\n" in shown
    assert "  next     AccumulateGrad(w)\n  grad     42.0\n" in shown
    assert "        w.grad = 42.0" in s.next()
    assert float(w.grad.item()) == 42.0 and float(b.grad.item()) == 14.0


# ---- unnamed leaves ---------------------------------------------------------------------------

def _unnamed_product():
    a = ad.tensor([1.0, 2.0], requires_grad=True)
    return a, (ad.tensor([1.0, 2.0], requires_grad=True) * ad.tensor([3.0, 4.0], requires_grad=True) * a).sum()


def test_unnamed_leaves_of_one_shape_are_numbered_alike_in_graph_trace_and_dot(capsys):
    a, f = _unnamed_product()           # a and f are named here; the two other leaves are not
    g = ad.graph(f)
    lines = str(g).splitlines()
    assert lines[3:] == ["   │  ├─ AccumulateGrad(leaf 2 #1)  (2,)  [1., 2.]  leaf  requires_grad",
                         "   │  └─ AccumulateGrad(leaf 2 #2)  (2,)  [3., 4.]  leaf  requires_grad",
                         "   └─ AccumulateGrad(a)  (2,)  [1., 2.]  leaf  requires_grad"]
    text = ad.dot(f)
    assert '[label="leaf #1\\n(2,)  [1., 2.]", tooltip="AccumulateGrad(leaf 2 #1)",' in text
    assert '[label="leaf #2\\n(2,)  [3., 4.]", tooltip="AccumulateGrad(leaf 2 #2)",' in text
    ad.trace(True)
    f.backward()
    ad.trace(False)
    out = capsys.readouterr().out
    assert ("        -> AccumulateGrad(leaf 2 #1)  [3., 8.]\n"
            "           = grad * <AccumulateGrad(leaf 2 #2)>\n"
            "        -> AccumulateGrad(leaf 2 #2)  [1., 4.]\n"
            "           = grad * <AccumulateGrad(leaf 2 #1)>\n") in out
    assert "step 5  AccumulateGrad(leaf 2 #1)  deps 1\n        grad in  [3., 8.]\n        leaf.grad = [3., 8.]" in out
    assert "step 6  AccumulateGrad(leaf 2 #2)  deps 1\n        grad in  [1., 4.]\n        leaf.grad = [1., 4.]" in out
    # the graph and the trace give each node the same label
    tr = ad.last_trace()
    by_node = {st.node: rec["node"] for st, rec in zip(tr.steps, tr.records())}
    assert by_node == {node: g.labels[node] for node in by_node}
    assert len(set(g.labels.values())) == len(g.labels) == 6


def test_a_single_unnamed_leaf_of_a_shape_is_not_numbered():
    w = ad.tensor([1.0, 2.0], requires_grad=True)
    f = (w * ad.tensor([3.0, 4.0], requires_grad=True) * ad.tensor(2.0, requires_grad=True)).sum()
    text = str(ad.graph(f))
    assert "AccumulateGrad(w)  (2,)" in text
    assert "AccumulateGrad(leaf 2)  (2,)  [3., 4.]" in text
    assert "AccumulateGrad(leaf scalar)  scalar  2.0" in text and "#1)" not in text


def test_numbering_follows_the_names_given():
    a, f = _unnamed_product()
    leaves = [ln.split("─ ")[1].split("  ")[0] for ln in str(ad.graph(f, names={})).splitlines()[3:]]
    assert leaves == ["AccumulateGrad(leaf 2 #1)", "AccumulateGrad(leaf 2 #2)", "AccumulateGrad(leaf 2 #3)"]


# ---- what walks frames, and when ------------------------------------------------------------

def _no_frames():
    raise AssertionError("walked the caller's frames")


def test_an_untraced_backward_walks_no_frames(monkeypatch):
    monkeypatch.setattr(names_mod, "caller_frame", _no_frames)
    w = ad.tensor(2.0, requires_grad=True)
    y = (w * w).sum()
    y.backward(retain_graph=True)
    (g,) = ad.grad(y, [w])
    assert float(w.grad.item()) == 4.0 and float(g.item()) == 4.0


def test_a_traced_backward_walks_frames_once(monkeypatch, capsys):
    calls = []
    real = names_mod.caller_frame
    monkeypatch.setattr(names_mod, "caller_frame", lambda: calls.append(1) or real())
    w = ad.tensor(2.0, requires_grad=True)
    y = w * w
    y.backward(retain_graph=True)
    assert calls == []
    ad.trace(True)
    y.backward()
    ad.trace(False)
    assert calls == [1]
    assert float(w.grad.item()) == 8.0
    capsys.readouterr()


# ---- a Session keeps its own namespace ------------------------------------------------------

def test_a_session_names_by_its_namespace_and_walks_no_frames(monkeypatch):
    monkeypatch.setattr(names_mod, "caller_frame", _no_frames)
    out = io.StringIO()
    s = ad.Session(out=out, trace=True)
    s.run("w1 = tensor(2.0, requires_grad=true)\nf = (w1 * 3)^2\nf.backward(retain_graph=true)\n")
    text = out.getvalue()
    assert "step 3  AccumulateGrad(w1)  deps 1\n        grad in  36.0\n        w1.grad = 36.0" in text
    assert s.last_trace.records()[-1]["leaf"] == "w1"
    q = s["w1"]                  # a Python local for the same tensor: the Session's name wins
    with s.context():
        assert str(ad.graph(s["f"])).splitlines()[0].startswith("f = PowBackward#1 at 2:")
        assert "AccumulateGrad(w1)  scalar  2.0" in str(ad.graph(s["f"]))
        assert '[label="w1\\nscalar  2.0\\ngrad 36.0"' in ad.dot(s["f"])
        st = ad.step(s["f"])
        assert "AccumulateGrad(w1): 1 to come" in str(st)
        st.abort()
    monkeypatch.undo()
    assert "AccumulateGrad(q)" in str(ad.graph(s["f"]))     # outside it, Python's names
    assert float(q.grad.item()) == 36.0
