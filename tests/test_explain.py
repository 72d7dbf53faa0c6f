"""``explain(f, x)``: the chain rule for df/dx written out, one line per path from f to x.

The numbers are checked against the chain rule by hand, and the total
against ``grad()`` (and central differences in float64): the paths must add up
to the gradient, also when they are too many to list.
"""
from __future__ import annotations

import io
import math
import sys

import numpy as np
import pytest

import autodsl as ad
from autodsl.core import watch
from autodsl.errors import AutogradError, IndexError_, TypeError_, ValueError_
from autodsl.cli.repl import Repl

CHAIN = """\
x = tensor(2.0)
w1 = tensor(0.5, requires_grad=true)
w2 = tensor(-1.5, requires_grad=true)
b = tensor(1.0, requires_grad=true)
p = w1*x^2
q = p + b
k = w2*q
f = k^3
"""


def session(src: str) -> ad.Session:
    s = ad.Session(out=io.StringIO())
    s.run(src, "ex.ad")
    return s


def explain_in(s: ad.Session, call: str):
    """Run ``result = <call>`` in the session (an assignment: nothing printed); the result."""
    s.run(f"result = {call}")
    return s.namespace["result"]


def central(fn, x: np.ndarray, h: float = 1e-6) -> np.ndarray:
    """Central differences of the float64 function ``fn(array) -> float``."""
    g = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        e = np.zeros_like(x)
        e[i] = h
        g[i] = (fn(x + e) - fn(x - e)) / (2 * h)
    return g


# ---- the chain rule with the user's names ---------------------------------------------------

def test_chain_rule_with_named_intermediates():
    s = session(CHAIN)
    e = explain_in(s, "explain(f, w1)")
    assert str(e) == ("df/dw1 = df/dk * dk/dq * dq/dp * dp/dw1\n"
                      "       = 60.75 * (-1.5) * 1.0 * 4.0\n"
                      "       = -364.5")
    assert e.n_paths == 1 and len(e.paths) == 1
    path = e.paths[0]
    assert path.names == ["f", "k", "q", "p", "w1"]
    assert path.factors == [60.75, -1.5, 1.0, 4.0]
    assert math.prod(path.factors) == -364.5 == float(path.contribution) == float(e.total)
    # what backward computes
    s.run("f.backward()")
    assert float(s.namespace["w1"].grad) == -364.5


def test_chain_rule_with_source_text_where_there_is_no_name():
    s = session("x = tensor(2.0)\nw1 = tensor(0.5, requires_grad=true)\nw2 = tensor(-1.5, requires_grad=true)\n"
                "b = tensor(1.0, requires_grad=true)\nf = (w2*(w1*x^2+b))^3\n")
    e = explain_in(s, "explain(f, w1)")
    assert str(e).splitlines() == [
        "df/dw1 = df/d(w2*(w1*x^2+b)) * d(w2*(w1*x^2+b))/d(w1*x^2+b) * d(w1*x^2+b)/d(w1*x^2) * d(w1*x^2)/dw1",
        "       = 60.75 * (-1.5) * 1.0 * 4.0",
        "       = -364.5"]


def test_each_input_of_the_chain_rule_example():
    s = session(CHAIN)
    for name, factors, total in [("w2", [60.75, 3.0], 182.25), ("b", [60.75, -1.5, 1.0], -91.125),
                                 ("q", [60.75, -1.5], -91.125), ("k", [60.75], 60.75)]:
        e = explain_in(s, f"explain(f, {name})")
        assert e.paths[0].factors == factors, name
        assert float(e.total) == total, name
    assert str(explain_in(s, "explain(f, k)")) == "df/dk = 60.75"


def test_python_api_names_argument():
    x = ad.tensor(2.0)
    w1 = ad.tensor(0.5, requires_grad=True)
    inner = w1 * x ** 2
    f = inner ** 3
    e = ad.explain(f, w1, names={"f": f, "w1": w1, "inner": inner})
    assert str(e).splitlines()[0] == "df/dw1 = df/dinner * dinner/dw1"
    assert e.paths[0].factors == [12.0, 4.0]              # 3 * inner^2 = 3 * 2^2, then x^2
    # without names=, the caller's variables name things (as why() does); `x` here is the data,
    # so calling w1 `x` would mislead
    assert str(ad.explain(f, w1)).splitlines()[0] == "df/dw1 = df/dinner * dinner/dw1"
    unnamed = str(ad.explain(f, w1, names={})).splitlines()[0]
    assert unnamed == "d<PowBackward#1>/dx = d<PowBackward#1>/d<MulBackward#1> * d<MulBackward#1>/dx"


def test_operand_mark_only_on_the_edge_it_names():
    s = session("a = tensor(2.0, requires_grad=true)\nb = a * 3\nf = b * b\n")
    lines = str(explain_in(s, "explain(f, a)")).splitlines()
    assert lines[0] == "path 1: df/da = df/db [operand 1] * db/da"
    assert lines[3] == "path 2: df/da = df/db [operand 2] * db/da"
    assert lines[-1] == "df/da = the sum over all paths = 18.0 + 18.0 = 36.0"


# ---- several paths ---------------------------------------------------------------------------

def test_x_times_x_plus_sin_x_has_three_paths():
    s = session("x = tensor(2.0, requires_grad=true)\ng = x*x + sin(x)\n")
    e = explain_in(s, "explain(g, x)")
    assert e.n_paths == 3
    assert [p.names for p in e.paths] == [["g", "x*x", "x [operand 1]"], ["g", "x*x", "x [operand 2]"],
                                          ["g", "sin(x)", "x"]]
    shares = [float(p.contribution) for p in e.paths]
    assert shares == [2.0, 2.0, pytest.approx(math.cos(2.0), rel=1e-15)]
    assert float(e.total) == pytest.approx(2 * 2.0 + math.cos(2.0), rel=1e-15)
    text = str(e).splitlines()
    assert text[0] == "path 1: dg/dx = dg/d(x*x) * d(x*x)/dx [operand 1]"
    assert text[6] == "path 3: dg/dx = dg/d(sin(x)) * d(sin(x))/dx"
    assert text[7] == "              = 1.0 * (-0.416147)"
    assert text[-1] == "dg/dx = the sum over all paths = 2.0 + 2.0 + (-0.416147) = 3.58385"


def test_a_path_that_is_x_itself():
    s = session("y = tensor(2.0, requires_grad=true)\nh = sin(y) * y\n")
    e = explain_in(s, "explain(h, y)")
    assert [p.names for p in e.paths] == [["h", "sin(y)", "y"], ["h", "y"]]
    assert e.paths[1].factors == [pytest.approx(math.sin(2.0), rel=1e-15)]
    assert float(e.total) == pytest.approx(2.0 * math.cos(2.0) + math.sin(2.0), rel=1e-15)


def ladder(n: int, x0: float = 0.5):
    """y_{k+1} = sin(y_k) + cos(y_k): 2^n paths from the top down to x."""
    x = ad.tensor(x0, requires_grad=True)
    y = x
    for _ in range(n):
        y = y.sin() + y.cos()
    return x, y


def ladder_value(v: float, n: int) -> float:
    for _ in range(n):
        v = math.sin(v) + math.cos(v)
    return v


def test_diamond_ladder_with_more_paths_than_listed():
    x, y = ladder(6)
    e = ad.explain(y, x, names={"x": x})
    assert e.n_paths == 64 and len(e.paths) == 16
    (g,) = ad.grad(y, [x], retain_graph=True)
    assert float(e.total) == pytest.approx(float(g), rel=1e-13)
    fd = (ladder_value(0.5 + 1e-6, 6) - ladder_value(0.5 - 1e-6, 6)) / 2e-6
    assert float(e.total) == pytest.approx(fd, rel=1e-6)
    text = str(e)
    assert "... and 48 more paths (explain(f, x, max_paths=64) lists all)" in text
    assert "= the sum over all paths (also those not shown) = " in text
    every = ad.explain(y, x, max_paths=64)
    assert len(every.paths) == 64
    assert sum(float(p.contribution) for p in every.paths) == pytest.approx(float(g), rel=1e-12)
    assert float(every.total) == pytest.approx(float(g), rel=1e-12)
    assert x.grad is None                                  # explain writes no .grad
    # every path is a product of its factors
    for p in every.paths:
        assert math.prod(p.factors) == pytest.approx(float(p.contribution), rel=1e-12)


def test_ladder_with_astronomically_many_paths_is_linear():
    x, y = ladder(60)
    old = sys.getrecursionlimit()
    sys.setrecursionlimit(300)
    try:
        e = ad.explain(y, x)
        text = str(e)
    finally:
        sys.setrecursionlimit(old)
    assert e.n_paths == 2 ** 60
    assert len(e.paths) == 16
    assert "... and about 10^18 more paths (too many to list; the total below counts every one)" in text
    first = text.splitlines()[0]                  # 120 factors: the middle of the path is left out
    assert "... (100 more) ..." in first and first.count(" * ") == 20
    (g,) = ad.grad(y, [x])
    assert float(e.total) == pytest.approx(float(g), rel=1e-12)


def test_10000_node_chain():
    x = ad.tensor(1.0, requires_grad=True)
    y = x
    for _ in range(10_000):
        y = y * 1.0001
    old = sys.getrecursionlimit()
    sys.setrecursionlimit(300)
    try:
        e = ad.explain(y, x)
        text = str(e)
    finally:
        sys.setrecursionlimit(old)
    assert e.n_paths == 1 and len(e.paths[0].factors) == 10_000     # every factor is kept...
    assert e.paths[0].factors == [1.0001] * 10_000
    assert float(e.total) == pytest.approx(1.0001 ** 10_000, rel=1e-9)
    chain, numbers, total = text.splitlines()                       # ...and the text shows both ends
    assert chain.count(" * ") == 20 and "* ... (9980 more) ... *" in chain
    assert chain.endswith("d<MulBackward#10000>/dx")
    assert numbers.strip() == "= " + " * ".join(["1.0001"] * 10 + ["... (9980 more) ..."] + ["1.0001"] * 10)
    assert total.strip() == "= 2.71815"


# ---- tensors ---------------------------------------------------------------------------------

def tensor_case():
    w = ad.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
    v = ad.tensor([1.0, -1.0], requires_grad=True)
    L = ((w @ v) ** 2).sum() + (w * v).sum()               # v broadcast over w's rows
    return w, v, L, {"w": w, "v": v, "L": L}


def L_numpy(w, v):
    return float(((w @ v) ** 2).sum() + (w * v).sum())


def test_tensor_paths_summarized_and_summed():
    w, v, L, names = tensor_case()
    e = ad.explain(L, w, names=names)
    assert e.n_paths == 2
    assert e.paths[0].factors is None                       # Jacobians, not numbers
    expected = central(lambda a: L_numpy(a, np.array([1.0, -1.0])), np.array([[1.0, 2.0], [3.0, 4.0]]))
    assert np.allclose(e.total, expected, rtol=1e-7, atol=1e-7)
    assert np.array_equal(e.paths[0].contribution, [[-2.0, 2.0], [-2.0, 2.0]])   # 2 (w v) v^T
    assert np.array_equal(e.paths[1].contribution, [[1.0, -1.0], [1.0, -1.0]])   # v in each row
    text = str(e).splitlines()
    assert text[0].startswith("dL/dw, with w of shape (2, 2): each path's factors are Jacobians")
    assert text[1] == "path 1: L -> <SumBackward#1> -> <PowBackward#1> -> <MatmulBackward#1> -> w"
    assert "path 2: L -> <SumBackward#2> -> <MulBackward#1> -> w" in text
    assert text[-2:] == ["dL/dw = the sum over all paths = [[-1.,  1.],",
                         "                                  [-1.,  1.]]"]


def test_tensor_element():
    w, v, L, names = tensor_case()
    e = ad.explain(L, w, element=[1, 0], names=names)
    text = str(e)
    assert text.startswith("dL/dw[1, 0], with w of shape (2, 2)")
    assert "    share of dL/dw[1, 0]: -2.0" in text and "    share of dL/dw[1, 0]: 1.0" in text
    assert text.splitlines()[-1] == "dL/dw[1, 0] = the sum over all paths = -1.0"
    ev = ad.explain(L, v, element=1, names=names)          # the broadcast input
    (gv,) = ad.grad(L, [v], retain_graph=True)
    assert sum(float(p.contribution[1]) for p in ev.paths) == float(gv[1])
    assert float(ev.total[1]) == float(gv[1]) == -6.0
    neg = ad.explain(L, w, element=(-1, 0), names=names)
    assert float(neg.total[-1, 0]) == -1.0


def test_bad_elements():
    w, v, L, names = tensor_case()
    with pytest.raises(IndexError_, match=r"element=\[2, 0\] is not an index into x of shape \(2, 2\)"):
        ad.explain(L, w, element=[2, 0])
    with pytest.raises(IndexError_):
        ad.explain(L, w, element=0)                        # one index for two dimensions
    with pytest.raises(TypeError_, match=r"element=\) takes an index"):
        ad.explain(L, w, element="a")


def test_views_and_indexing():
    x = ad.tensor([1.0, 2.0, 3.0], requires_grad=True)
    f = (x[1:] * x[:2]).sum()
    e = ad.explain(f, x, element=1, names={"x": x, "f": f})
    assert [float(p.contribution[1]) for p in e.paths] == [1.0, 3.0]     # x[0] and x[2]
    assert np.array_equal(e.total, [2.0, 4.0, 2.0])


def test_float32():
    x = ad.tensor(0.5, requires_grad=True, dtype="float32")
    f = (x * 3).sin()
    e = ad.explain(f, x, names={"x": x, "f": f})
    assert e.paths[0].factors == [pytest.approx(math.cos(1.5), rel=1e-6), 3.0]
    assert float(e.total) == pytest.approx(3 * math.cos(1.5), rel=1e-6)
    assert e.total.dtype == np.float32


# ---- what explain cannot explain -------------------------------------------------------------

def test_after_backward_without_retain_graph_the_graph_is_replayed():
    s = session(CHAIN + "f.backward()\n")
    e = explain_in(s, "explain(f, w1)")
    assert str(e) == ("df/dw1 = df/dk * dk/dq * dq/dp * dp/dw1\n"
                      "       = 60.75 * (-1.5) * 1.0 * 4.0\n"
                      "       = -364.5")
    assert e.paths[0].factors == [60.75, -1.5, 1.0, 4.0] and float(e.total) == -364.5
    assert float(explain_in(s, "explain(f, q)").total) == 60.75 * -1.5        # an intermediate x
    assert float(explain_in(s, "explain(f, b)").total) == -91.125
    assert float(s.namespace["w1"].grad) == -364.5        # unchanged by explain
    with pytest.raises(AutogradError, match="retain_graph=true"):
        s.run("f.backward()")                              # the user's graph is still freed


def test_after_backward_tensors_and_shared_inputs_match_grad():
    rng = np.random.default_rng(3)
    w = ad.tensor(rng.standard_normal((2, 3)).tolist(), requires_grad=True)
    v = ad.tensor(rng.standard_normal(3).tolist(), requires_grad=True)
    h = ad.tanh(w @ v)
    loss = (h * h).sum() + (w * w).sum()
    (expected,) = ad.grad(loss, [w], retain_graph=True)
    loss.backward()
    e = ad.explain(loss, w, names={"w": w, "v": v, "h": h, "loss": loss})
    assert e.n_paths == 4
    np.testing.assert_allclose(e.total, expected.numpy(), rtol=1e-12)
    np.testing.assert_allclose(e.total, w.grad.numpy(), rtol=1e-12)     # the paths summed in another order


def test_after_backward_and_an_update_the_graph_cannot_be_replayed():
    s = session(CHAIN + "f.backward()\nno_grad { w1 -= 0.1 * w1.grad }\n")
    with pytest.raises(AutogradError) as err:
        s.run("explain(f, w1)")
    msg = err.value.message
    assert msg.startswith("explain needs the values inside f's graph, which a backward freed, and evaluating "
                          "that graph again gives ")
    assert "not f's value -91.125: a tensor it was computed from changed since" in msg
    assert "retain_graph=true" in msg


def test_after_backward_with_retain_graph():
    s = session(CHAIN + "f.backward(retain_graph=true)\n")
    assert float(explain_in(s, "explain(f, w1)").total) == -364.5
    assert float(s.namespace["w1"].grad) == -364.5        # unchanged by explain


def test_f_that_does_not_depend_on_x():
    s = session(CHAIN + "z = tensor([1.0, 2.0], requires_grad=true)\n")
    e = explain_in(s, "explain(f, z)")
    assert e.n_paths == 0 and e.paths == []
    assert np.array_equal(e.total, [0.0, 0.0])
    assert str(e) == ("df/dz = 0: no path leads from f to z (why(z) after f.backward() tells where "
                      "the graph breaks)")
    s.run("d = w1.detach() * 3\ng = d * w2")
    e = explain_in(s, "explain(g, w1)")
    assert e.n_paths == 0                                    # the path breaks at detach
    assert "after g.backward()" in str(e)                    # f's own name, not a literal `f`


def test_x_computed_after_f():
    s = session("w = tensor([1.0, 2.0], requires_grad=true)\nf = (w * w).sum()\n")
    e = explain_in(s, "explain(f, w[0])")       # the student meant df/dw[0]
    assert e.n_paths == 0
    assert str(e) == ("df/d(w[0]) = 0: w[0] was computed after f, so f cannot depend on it; for one "
                      "element of a tensor w, use explain(f, w, element=[0])")
    s.run("g = w * 2")
    assert str(explain_in(s, "explain(f, g)")) == "df/dg = 0: g was computed after f, so f cannot depend on it"


def test_f_is_x():
    s = session(CHAIN)
    e = explain_in(s, "explain(f, f)")
    assert str(e) == "df/df = 1 (f is f itself)"
    assert float(e.total) == 1.0 and e.n_paths == 1


def test_argument_errors():
    s = session(CHAIN + "v = tensor([1.0, 2.0], requires_grad=true)\nc = tensor(1.0)\n")
    with pytest.raises(ValueError_, match="needs a scalar f"):
        s.run("explain(v * 2, w1)")
    with pytest.raises(ValueError_, match="f has no graph"):
        s.run("explain(c * 2, w1)")
    with pytest.raises(ValueError_, match="x does not require grad"):
        s.run("explain(f, x)")
    with pytest.raises(TypeError_, match="takes two tensors"):
        s.run("explain(f, 3)")


def test_zero_and_nonfinite_factors():
    x = ad.tensor(-1.0, requires_grad=True)
    e = ad.explain(x.relu() * 2, x)
    assert e.paths[0].factors == [2.0, 0.0] and float(e.total) == 0.0
    z = ad.tensor(0.0, requires_grad=True)
    e = ad.explain(z.sqrt() * 0 + z.log(), z)
    assert e.paths[0].factors[:2] == [1.0, 0.0] and e.paths[0].factors[2] == math.inf
    assert math.isnan(float(e.paths[0].contribution))     # 0 * inf, as backward computes it
    assert float(e.paths[1].contribution) == math.inf
    (g,) = ad.grad(z.sqrt() * 0 + z.log(), [z])
    assert math.isnan(float(e.total)) and math.isnan(float(g))


def test_second_order_graph():
    x = ad.tensor(2.0, requires_grad=True)
    (gx,) = ad.grad(x ** 3, [x], create_graph=True)        # 3x^2
    e = ad.explain(gx, x)
    assert float(e.total) == 12.0                          # 6x


def test_intermediate_x():
    x = ad.tensor(1.0, requires_grad=True)
    a = x * 3
    g = a.exp()
    e = ad.explain(g, a, names={"a": a, "g": g})
    assert e.paths[0].names == ["g", "a"]
    assert float(e.total) == pytest.approx(math.exp(3.0), rel=1e-15)


def test_hooks_are_named_and_the_total_is_backwards():
    x = ad.tensor(2.0, requires_grad=True)
    h = x * 3
    h.register_hook(lambda g: g * 10)
    k = h * h
    e = ad.explain(k, x, names={"x": x, "h": h, "k": k})
    assert [float(p.contribution) for p in e.paths] == [18.0, 18.0]     # without the hook
    assert float(e.total) == 360.0                                      # backward, with it
    text = str(e).splitlines()
    assert text[-2] == "dk/dx = backward's value, with the hooks = 360.0"
    assert text[-1].startswith("(tensor hooks (register_hook) on h change the gradient")
    k.backward()
    assert float(x.grad) == 360.0


# ---- no side effects --------------------------------------------------------------------------

def test_explain_neither_prints_a_trace_nor_replaces_the_last_backward():
    s = session("x = tensor(0.5, requires_grad=true)\ny = x\nfor i in range(5) { y = sin(y) + cos(y) }\n"
                "y.backward(retain_graph=true)\ntrace(true)\n")
    last_trace = s.last_trace
    last = watch.last_backward()
    before = s.out.getvalue()
    e = explain_in(s, "explain(y, x, max_paths=2)")        # 32 paths: the total comes from one backward
    assert e.n_paths == 32
    assert s.out.getvalue() == before                       # no trace printed
    assert s.last_trace is last_trace
    assert watch.last_backward() is last
    assert float(e.total) == pytest.approx(float(s.namespace["x"].grad), rel=1e-13)


# ---- the REPL --------------------------------------------------------------------------------

def test_repl_explain():
    out = io.StringIO()
    r = Repl(ad.Session(out=out), out=out)
    for line in CHAIN.splitlines():
        r.handle(line)
    r.handle(":explain f w1")
    assert out.getvalue() == ("df/dw1 = df/dk * dk/dq * dq/dp * dp/dw1\n"
                              "       = 60.75 * (-1.5) * 1.0 * 4.0\n"
                              "       = -364.5\n")
    out.seek(0)
    out.truncate()
    r.handle(":explain f")
    assert out.getvalue().startswith("usage: :explain")
    out.seek(0)
    out.truncate()
    r.handle(":explain f nothere")
    assert "`nothere` is not defined" in out.getvalue()


def test_repl_explain_after_backward():
    out = io.StringIO()
    r = Repl(ad.Session(out=out), out=out)
    for line in (CHAIN + "f.backward()").splitlines():
        r.handle(line)
    r.handle(":explain f w1")
    assert out.getvalue() == ("df/dw1 = df/dk * dk/dq * dq/dp * dp/dw1\n"
                              "       = 60.75 * (-1.5) * 1.0 * 4.0\n"
                              "       = -364.5\n")


def test_repl_explain_of_an_expression_with_spaces():
    out = io.StringIO()
    r = Repl(ad.Session(out=out), out=out)
    for line in CHAIN.splitlines():
        r.handle(line)
    r.handle(":explain (w2 * q)^3 w2")          # f is everything before the last word
    assert out.getvalue() == ("d((w2 * q)^3)/dw2 = d((w2 * q)^3)/d(w2 * q) * d(w2 * q)/dw2\n"
                              "                  = 60.75 * 3.0\n"
                              "                  = 182.25\n")
    for bad in (":explain f w1 extra", ":explain f"):
        out.seek(0)
        out.truncate()
        r.handle(bad)
        assert out.getvalue().startswith("usage: :explain")


def test_leaf_f_and_bad_max_paths():
    x = ad.tensor(1.0, requires_grad=True)
    with pytest.raises(ValueError_, match="f is a leaf"):
        ad.explain(x, x)
    with pytest.raises(TypeError_, match="max_paths=\\) takes a whole number, not \"x\""):
        ad.explain(x * 2, x, max_paths="x")
    e = ad.explain(x * x, x, max_paths=-3)                   # at least one path is listed
    assert len(e.paths) == 1 and e.n_paths == 2 and float(e.total) == 2.0


def test_a_colon_command_in_a_script_says_to_call_the_builtin():
    s = ad.Session(out=io.StringIO())
    with pytest.raises(ad.ParseError) as e:
        s.run("w = tensor(2.0, requires_grad=true)\nf = w^3\n:explain f w\n", "<stdin>")
    assert (e.value.line, e.value.column) == (3, 1)
    assert e.value.message.startswith("`:` commands (such as `:explain f x`) work only at the interactive "
                                      "prompt; in a script call the built-in of the same name (`explain(f, x)`")
    assert "w" not in s.namespace            # a syntax error runs nothing


def test_help_autograd_lists_the_commands_that_explain_a_gradient():
    out = io.StringIO()
    r = Repl(ad.Session(out=out), out=out)
    r.handle(":help autograd")
    text = out.getvalue()
    for cmd in (":why x", ":anomaly on", ":explain f x", ":step y", ":check f w b", "plot(f, lo, hi)",
                "plot(y, x, lo, hi)", "replay(f, [w], [0.6])"):
        assert cmd in text, cmd


def test_total_is_a_tensor_in_the_language():
    s = session("w = tensor([2.0, 1.0], requires_grad=true)\nf = (w^2).sum()\n")
    t = s.run("explain(f, w).total + 1")            # was a NumPy array the language could not use
    assert isinstance(t, ad.Tensor) and t.tolist() == [5.0, 3.0]
    assert s.run("explain(f, w).n_paths") == 1
    assert isinstance(ad.explain(s["f"], s["w"]).total, np.ndarray)     # from Python: a host array
