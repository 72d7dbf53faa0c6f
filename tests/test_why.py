"""why(x): the reason a .grad is none, zero or not finite, and the node or line responsible.

Each case asserts the reason code, the node named (its name and the trace's label), the
source line it points at, and the numbers in the explanation; the language, the Python
API (where why runs the pass again) and the REPL's ``:why`` are covered.
"""
from __future__ import annotations

import io
import sys

import numpy as np
import pytest

import autodsl as ad
from autodsl.core import watch
from autodsl.cli.repl import Repl


def run(src: str):
    """A Session that ran ``src`` (its printed output discarded)."""
    s = ad.Session(out=io.StringIO())
    s.run(src, "t.ad")
    return s


def ask(s, name: str):
    """why(name) evaluated in the session (so names come from the session)."""
    return s.run(f"why({name})", "t.ad")


def here() -> int:
    return sys._getframe(1).f_lineno


# -- the gradient reached x and was zeroed: which node ------------------------------------------------

def test_relu_that_was_off_is_named():
    s = run("w = tensor(-1.5, requires_grad=true)\n"
            "x = tensor(2.0)\n"
            "h = relu(w * x)\n"
            "loss = 3 * h + 1\n"
            "loss.backward()\n")
    assert s["w"].grad.item() == 0.0
    r = ask(s, "w")
    assert r.reason == "zero"
    assert r.node.name == "ReluBackward" and r.label == "ReluBackward#1"
    assert r.line == 3 and r.pos[2] == 5
    text = str(r)
    assert "w.grad is 0" in text
    assert "ReluBackward#1 (`h`) at 3:5 `relu(w * x)` got 3.0 and sent 0.0" in text
    assert "relu was off: `w * x` was -3.0" in text
    assert "`loss.backward()`" in text and "5:1" in text
    assert len(r.culprits) == 1


def test_relu_partly_off_counts_the_elements():
    s = run("w = tensor([-1.0, 2.0, -3.0, 4.0], requires_grad=true)\n"
            "y = relu(w).sum()\n"
            "y.backward()\n")
    np.testing.assert_array_equal(s["w"].grad.numpy(), [0, 1, 0, 1])
    r = ask(s, "w")
    assert r.reason == "partly_zero" and r.node.name == "ReluBackward" and r.line == 2
    assert "2 of 4 entries zero (50%)" in str(r)
    assert "sent [0., 1., 0., 1.]" in str(r)
    assert "at 2 of 4 elements" in str(r)


def test_clamp_at_its_bound():
    s = run("w = tensor([1.0, -2.0, 3.0], requires_grad=true)\n"
            "y = clamp(w, min=0, max=2).sum()\n"
            "y.backward()\n")
    r = ask(s, "w")
    assert r.reason == "partly_zero" and r.node.name == "ClampBackward" and r.line == 2
    assert "clamp(min=0, max=2) was at its bound at 2 of 3 elements" in str(r)


def test_where_branch_not_taken():
    s = run("a = tensor(1.0, requires_grad=true)\n"
            "b = tensor(5.0, requires_grad=true)\n"
            "y = where(a > 0, b, a * 2)\n"
            "y.backward()\n")
    assert s["a"].grad.item() == 0.0 and s["b"].grad.item() == 1.0
    r = ask(s, "a")
    assert r.reason == "zero" and r.node.name == "WhereBackward" and r.line == 3
    assert "where() took the other branch: the condition was true" in str(r)
    assert "towards `a * 2`" in str(r)


def test_max_that_was_not_the_maximum():
    s = run("a = tensor(1.0, requires_grad=true)\n"
            "b = tensor(5.0, requires_grad=true)\n"
            "y = max(a, b) * 2\n"
            "y.backward()\n")
    r = ask(s, "a")
    assert r.reason == "zero" and r.node.name == "MaximumBackward" and r.line == 3
    assert "got 2.0 and sent 0.0 towards `a`" in str(r)
    assert "`a` was the smaller one" in str(r)


def test_max_reduction_names_the_elements_that_were_not_it():
    s = run("v = tensor([1.0, 7.0, 3.0], requires_grad=true)\n"
            "m = v.max()\n"
            "m.backward()\n")
    r = ask(s, "v")
    assert r.reason == "partly_zero" and r.node.name == "MaxBackward" and r.line == 2
    assert "2 of 3 entries zero" in str(r)


def test_factor_that_was_zero():
    s = run("w = tensor(2.0, requires_grad=true)\n"
            "z = tensor(0.0)\n"
            "y = (w * z) + 1\n"
            "y.backward()\n")
    r = ask(s, "w")
    assert r.reason == "zero" and r.node.name == "MulBackward" and r.line == 3
    assert "the other factor `z` was 0.0" in str(r)


def test_first_node_from_the_root_is_named():
    """Two nodes on the path would zero it; the one closest to the root is the answer."""
    s = run("w = tensor(-1.0, requires_grad=true)\n"
            "h = relu(w)\n"
            "y = relu(h - 1)\n"
            "y.backward()\n")
    r = ask(s, "w")
    assert r.reason == "zero" and r.line == 3 and r.label == "ReluBackward#1"
    assert r.node is s["y"].grad_fn


def test_gradients_that_cancel():
    s = run("a = tensor(1.0, requires_grad=true)\n"
            "y = a - a\n"
            "y.backward()\n")
    r = ask(s, "a")
    assert r.reason == "zero" and r.node.name == "AccumulateGrad"
    assert "cancelled out (1.0 + -1.0 = 0)" in str(r)


def test_retained_non_leaf_zeroed():
    s = run("w = tensor(3.0, requires_grad=true)\n"
            "h = w * 2\n"
            "h.retain_grad()\n"
            "y = relu(-h)\n"
            "y.backward()\n")
    r = ask(s, "h")
    assert r.reason == "zero" and r.node.name == "ReluBackward" and r.line == 4
    assert "`-h` was -6.0" in str(r)


def test_gradient_that_never_arrives():
    """where()'s condition input gets no gradient at all: .grad stays none, and why says who."""
    s = run("a = tensor(2.0, requires_grad=true)\n"
            "b = tensor(1.0, requires_grad=true)\n"
            "y = where(a > 0, b, a) + b\n"
            "y.backward()\n")
    r = ask(s, "a")
    assert r.reason == "zero" and r.node.name == "WhereBackward"


# -- none for other reasons ------------------------------------------------------------------------------

def test_non_leaf_suggests_retain_grad():
    s = run("w = tensor(1.0, requires_grad=true)\nh = w * 3\nh.backward()\n")
    r = ask(s, "h")
    assert r.reason == "non_leaf" and r.node.name == "MulBackward" and r.line == 2
    assert "h.retain_grad()" in str(r) and "made by MulBackward at 2:7 `w * 3`" in str(r)


def test_no_requires_grad_says_where_it_was_made():
    s = run("w = tensor(1.0, requires_grad=true)\n"
            "x = tensor(2.0)\n"
            "(w * x).backward()\n")
    r = ask(s, "x")
    assert r.reason == "no_requires_grad" and r.line == 2
    assert "made at 2:5 `tensor(2.0)` without requires_grad=true" in str(r)
    assert "x.requires_grad_()" in str(r)


def test_unnamed_tensor_is_not_given_a_made_up_name():
    # `x[0]` and `tensor(2.0)` have no name: the advice must not name another variable (`x`)
    s = run("x = tensor([1.0, -2.0], requires_grad=true)\nx.sum().backward()\n")
    r = ask(s, "x[0]")
    assert r.reason == "non_leaf"
    assert "Call retain_grad() on it before backward" in str(r) and "x.retain_grad()" not in str(r)
    r = ask(s, "tensor(2.0)")
    assert r.reason == "no_requires_grad"
    assert "call requires_grad_() on it before computing" in str(r) and "x.requires_grad_()" not in str(r)


def test_integer_tensor():
    s = run("i = tensor([1, 2], dtype=int64)\n")
    r = ask(s, "i")
    assert r.reason == "no_requires_grad" and "It is int64" in str(r)


def test_detached_tensor_names_its_source():
    s = run("a = tensor(3.0, requires_grad=true)\nd = a.detach()\n")
    r = ask(s, "d")
    assert r.reason == "no_requires_grad" and r.line == 2
    assert "`d` is a detach() of `a`, made at 2:5 `a.detach()`" in str(r)


def test_no_grad_output_says_where():
    s = run("w = tensor(3.0, requires_grad=true)\nno_grad { h = w * 2 }\n")
    r = ask(s, "h")
    assert r.reason == "no_requires_grad" and r.line == 2
    assert "`h` was computed at 2:17 `w * 2` from `w` inside a no_grad block" in str(r)


def test_comparison_output():
    s = run("w = tensor(3.0, requires_grad=true)\nm = (w > 1) * 1.0\n")
    r = ask(s, "m")
    assert r.reason == "no_requires_grad"


# -- not reached: where the path breaks -----------------------------------------------------------------

def test_not_reached_through_detach():
    s = run("a = tensor(3.0, requires_grad=true)\n"
            "b = tensor(2.0, requires_grad=true)\n"
            "d = a.detach()\n"
            "loss = d * b\n"
            "loss.backward()\n")
    assert s["b"].grad.item() == 3.0 and s["a"].grad is None
    r = ask(s, "a")
    assert r.reason == "not_reached" and r.line == 3
    text = str(r)
    assert "`a` is not in the graph of the last backward() (from `loss`, at 5:1" in text
    assert "cut by detach() at 3:5 `a.detach()`: `d` has `a`'s values" in text
    assert "MulBackward#1 (`loss`) at 4:10 `d * b` uses it" in text


def test_not_reached_through_a_temporary_detach():
    """The detached tensor was never a variable: the node that kept its values shows it."""
    s = run("a = tensor(3.0, requires_grad=true)\n"
            "b = tensor(2.0, requires_grad=true)\n"
            "loss = a.detach() * b\n"
            "loss.backward()\n")
    r = ask(s, "a")
    assert r.reason == "not_reached"
    assert ("The path is cut: MulBackward#1 (`loss`) at 3:19 `a.detach() * b` uses `a`'s values as a "
            "constant (a detach() or .data of it)") in str(r)


def test_not_reached_through_no_grad():
    s = run("w = tensor(3.0, requires_grad=true)\n"
            "v = tensor(2.0, requires_grad=true)\n"
            "no_grad { h = w * 2 }\n"
            "y = h * v\n"
            "y.backward()\n")
    r = ask(s, "w")
    assert r.reason == "not_reached" and r.line == 3
    assert [b.kind for b in r.breaks] == ["no_grad"]
    assert "at 3:17 `w * 2`, `w` was used inside a no_grad block" in str(r)


def test_not_reached_through_comparison_and_integer_cast():
    s = run("w = tensor(3.0, requires_grad=true)\n"
            "v = tensor(2.0, requires_grad=true)\n"
            "m = w > 1\n"
            "k = w.to(int64)\n"
            "y = v * m * k\n"
            "y.backward()\n")
    r = ask(s, "w")
    assert r.reason == "not_reached"
    assert [(b.kind, b.pos[1]) for b in r.breaks] == [("comparison", 3), ("integer_cast", 4)]
    assert "in a comparison (gt)" in str(r) and "in a cast to an integer dtype" in str(r)


def test_not_reached_break_from_an_intermediate():
    """The value left the graph at h = w*2 (a node above w), detached later in no_grad."""
    s = run("w = tensor(3.0, requires_grad=true)\n"
            "v = tensor(2.0, requires_grad=true)\n"
            "h = w * 2\n"
            "no_grad { k = h + 1 }\n"
            "y = k * v\n"
            "y.backward()\n")
    r = ask(s, "w")
    assert r.reason == "not_reached" and r.line == 4


def test_parameter_update_in_no_grad_is_not_a_break():
    s = run("w = tensor(3.0, requires_grad=true)\n"
            "v = tensor(2.0, requires_grad=true)\n"
            "(w * v).backward()\n"
            "no_grad { w -= 0.1 * w.grad }\n"
            "w.grad = none\n"
            "(v * 2).backward()\n")
    r = ask(s, "w")
    assert r.reason == "not_reached" and r.breaks == []


def test_a_loop_does_not_grow_the_record():
    s = run("w = tensor(3.0, requires_grad=true)\n"
            "no_grad { for i in range(50) { h = w * 2; m = w > i } }\n")
    with s.context():       # the breaks are the session's (its run context's)
        sites = watch.breaks_from(s["w"]._accumulate)
    assert [(b.kind, b.pos[1]) for b in sites] == [("no_grad", 2), ("comparison", 2)]
    assert watch.breaks_from(s["w"]._accumulate) == []      # not the Python API's


def test_never_used():
    s = run("w = tensor(3.0, requires_grad=true)\nv = tensor(2.0, requires_grad=true)\n(v * 2).backward()\n")
    r = ask(s, "w")
    assert r.reason == "not_reached" and "never used by an op that records a graph" in str(r)


# -- the last backward ---------------------------------------------------------------------------------

def test_no_backward_yet_and_sessions_are_separate():
    run("a = tensor(1.0, requires_grad=true)\n(a * 2).backward()\n")
    s = run("w = tensor(3.0, requires_grad=true)\n")
    assert ask(s, "w").reason == "no_backward"


def test_ok_and_nonfinite():
    s = run("w = tensor([1.0, 0.0], requires_grad=true)\n(w * 3).sum().backward()\n")
    r = ask(s, "w")
    assert r.reason == "ok" and "[3., 3.]" in str(r)
    s = run("w = tensor(0.0, requires_grad=true)\nsqrt(w).backward()\n")
    r = ask(s, "w")
    assert r.reason == "nonfinite" and "anomaly(true)" in str(r)
    s.run("anomaly(true)", "t.ad")                   # already on: do not tell to turn it on
    r = ask(s, "w")
    assert r.reason == "nonfinite" and "Anomaly mode is on" in str(r) and "Turn on" not in str(r)


def test_reset_after_backward():
    s = run("w = tensor(3.0, requires_grad=true)\ny = w * 2\ny.backward()\nw.grad = none\n")
    r = ask(s, "w")
    assert r.reason == "reset" and "sent `w` the gradient 2.0" in str(r)


def test_grad_call_and_inputs():
    s = run("w = tensor(3.0, requires_grad=true)\nv = tensor(3.0, requires_grad=true)\n"
            "y = w * v\ny.backward(inputs=[v], retain_graph=true)\n")
    r = ask(s, "w")
    assert r.reason == "not_in_inputs" and r.line == 4
    s.run("g = grad(y, [w])")
    assert ask(s, "w").reason == "grad_call"


def test_graph_freed_by_an_earlier_backward():
    s = ad.Session(out=io.StringIO())
    s.run("w = tensor(3.0, requires_grad=true)\ny = w * w\ny.backward()\nw.grad = none\n")
    with pytest.raises(ad.AutogradError, match="retain_graph"):
        s.run("y.backward()")
    r = ask(s, "w")
    assert r.reason == "graph_freed" and "retain_graph=true" in str(r)


def test_output_dropped_but_kept_by_the_trace():
    """A Session's trace keeps the nodes of its last backward, so a temporary output still works."""
    s = run("w = tensor(2.0, requires_grad=true)\n(w * 0).backward()\n")
    r = ask(s, "w")
    assert r.reason == "zero" and r.node.name == "MulBackward" and r.line == 2
    assert "the other factor was 0.0" in str(r)


def test_root_gone():
    w = ad.tensor(2.0, requires_grad=True)
    (w * 0).backward()           # the Python API without a trace: nothing keeps the output
    r = ad.why(w)
    assert r.reason == "root_gone" and "keep the output in a variable" in str(r)


def test_language_reads_the_facts():
    s = run("w = tensor(-1.0, requires_grad=true)\ny = relu(w)\ny.backward()\n"
            "r = why(w).reason\nn = why(w).node.name\nl = why(w).line\n")
    assert (s["r"], s["n"], s["l"]) == ("zero", "ReluBackward", 2)


def test_why_of_a_non_tensor():
    with pytest.raises(ad.TypeError_, match="why\\(\\) takes a tensor"):
        ad.why(3)


# -- the Python API: the pass is run again (no trace) ----------------------------------------------------

def test_python_api_reruns_a_retained_graph():
    w = ad.tensor([-1.0, 2.0], requires_grad=True)
    line = here() + 1
    y = ad.relu(w * 3).sum()
    y.backward(retain_graph=True)
    r = ad.why(w)
    assert r.reason == "partly_zero" and r.node.name == "ReluBackward" and r.line == line
    assert str(r).startswith("w.grad has 1 of 2 entries zero")     # named from the caller's variables
    np.testing.assert_array_equal(w.grad.numpy(), [0.0, 3.0])       # the re-run changed no .grad
    assert watch.last_backward().retain_graph is True               # ... and is not "the last backward"


def test_python_api_after_a_backward_that_freed_the_graph_replays_it():
    w = ad.tensor(-1.0, requires_grad=True)
    line = here() + 1
    y = ad.relu(w * 2)
    y.backward()
    r = ad.why(w)
    assert r.reason == "zero" and r.node is y.grad_fn and r.label == "ReluBackward#1" and r.line == line
    assert str(r).splitlines()[1] == (
        f"- ReluBackward#1 (`y`) at test_why.py:{line} `y = ad.relu(w * 2)` got 1.0 and sent 0.0 towards "
        "MulBackward#1: relu was off: its input was -2.0, and relu'(x) = 0 for x <= 0")
    assert w.grad.item() == 0.0 and w.version == 0
    with pytest.raises(ad.AutogradError, match="retain_graph=true"):
        y.backward()                          # the user's graph stays freed


def _relu_loss(retain_graph):
    v = ad.tensor([1.0, -2.0, 3.0], requires_grad=True)
    loss = (ad.relu(v * 2) * ad.tensor([1.0, 1.0, 0.0])).sum()
    loss.backward(retain_graph=retain_graph)
    return v, loss


def test_python_api_a_replayed_graph_explains_as_the_retained_one():
    v, loss = _relu_loss(retain_graph=False)
    freed = ad.why(v)
    v, loss = _relu_loss(retain_graph=True)
    kept = ad.why(v)
    assert str(freed) == str(kept)
    assert freed.reason == "partly_zero" and [c[1] for c in freed.culprits] == ["MulBackward#1", "ReluBackward#1"]
    assert "got [1., 1., 1.] and sent [1., 1., 0.] towards ReluBackward#1: the other factor was 0" in str(freed)


def test_python_api_freed_graph_whose_leaves_changed_says_what_to_do():
    w = ad.tensor(-1.0, requires_grad=True)
    b = ad.tensor(1.0, requires_grad=True)
    y = ad.relu(w) + b
    y.backward()
    with ad.no_grad():
        b += 1.0
    r = ad.why(w)
    assert r.reason == "zero" and r.node is None
    assert "a tensor it was computed from changed since (an in-place update such as w -= lr * w.grad)" in str(r)
    assert "retain_graph=true" in str(r)


def test_python_api_trace_and_rerun_agree():
    w = ad.tensor(-2.0, requires_grad=True)
    y = ad.clamp(w * 2, min=-1.0)
    y.backward(retain_graph=True)
    rerun = ad.why(w)
    w.grad = None
    ad.trace(True)
    try:
        import contextlib
        with contextlib.redirect_stdout(io.StringIO()):
            y.backward(retain_graph=True)
    finally:
        ad.trace(False)
    traced = ad.why(w)
    assert rerun.reason == traced.reason == "zero"
    assert rerun.node is traced.node and rerun.node.name == "ClampBackward"
    assert rerun.culprits == traced.culprits
    assert "got 1.0 and sent 0.0 towards MulBackward#1: clamp(min=-1.0) was at its bound" in str(rerun)


# -- the REPL ------------------------------------------------------------------------------------------

def test_repl_why():
    out = io.StringIO()
    r = Repl(ad.Session(out=out), out=out)
    for line in ["w = tensor(-1.0, requires_grad=true)", "h = relu(w * 2)", "h.backward()", ":why w", ":why"]:
        r.handle(line)
    text = out.getvalue()
    assert "w.grad is 0" in text
    assert "ReluBackward#1 (`h`) at <input 2>:1:5 `relu(w * 2)` got 1.0 and sent 0.0 towards `w * 2`" in text
    assert "usage: :why x" in text


def test_a_stepped_backward_that_is_paused_or_aborted():
    out = io.StringIO()
    r = Repl(ad.Session(out=out), out=out)

    def do(line):
        out.seek(0)
        out.truncate()
        r.handle(line)
        return out.getvalue()

    do("w = tensor(2.0, requires_grad=true)")
    do("f = w^3")
    do(":step f")
    do(":next")
    assert do(":why w") == ("w.grad is none: the last backward() (from `f`, at <input 3>:1:1 `:step f`) is paused "
                            "(step(), :step): .grad is written when it finishes (:continue, or .finish() "
                            "on the stepper)\n")      # at the command, not at a Python frame
    do(":abort")
    assert do(":why w").startswith("w.grad is none: the last backward() (from `f`, at <input 3>:1:1 `:step f`) was "
                                   "aborted")
    assert r.session.run("why(w).reason") == "step_aborted"
    do(":step f")
    do(":continue")
    assert do(":why w") == "w.grad is set and has no zero entries: 12.0\n"
