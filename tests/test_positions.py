"""Source positions on graph nodes: ``node.pos == (file, line, column, text)``.

In the language, ``text`` is the source text of the expression that made the
node (balanced: a bracketed operand keeps its brackets) and ``column`` is the
operator's column for a binary operator, the expression's first column
otherwise; from the Python API, ``pos`` is ``(caller file, caller line, None,
None)`` and the text is read back from that file. The trace, ``graph``,
``dot``, ``info`` and version errors show them.
"""
from __future__ import annotations

import io
import os
import sys

import pytest

import autodsl as ad
from autodsl.source import format_pos, pos_text
from autodsl.core.trace import node_labels, walk
from autodsl.errors import AutogradError
from autodsl.cli.repl import Repl

THIS_FILE = os.path.abspath(__file__)

CHAIN = """\
x = tensor(2.0)
w1 = tensor(0.5, requires_grad=true)
w2 = tensor(-1.5, requires_grad=true)
b = tensor(1.0, requires_grad=true)
f = (w2*(w1*x^2+b))^3
"""


def run(src: str, filename: str = "pos.ad") -> ad.Session:
    s = ad.Session(out=io.StringIO())
    s.run(src, filename)
    return s


def by_label(t, names=None) -> dict:
    """{label: node.pos} for every node t's value depends on (labels as in graph() and the trace)."""
    labels = node_labels([t.grad_fn], names)
    return {labels[n]: n.pos for n in walk([t.grad_fn])}


def balanced(text: str) -> bool:
    depth = {"(": 0, "[": 0}
    close = {")": "(", "]": "["}
    for ch in text:
        if ch in depth:
            depth[ch] += 1
        elif ch in close:
            depth[close[ch]] -= 1
            if depth[close[ch]] < 0:
                return False
    return all(v == 0 for v in depth.values())


# ---- the language --------------------------------------------------------------------------

def test_chain_rule_node_positions_and_texts():
    s = run(CHAIN)
    got = by_label(s.namespace["f"])
    assert got == {
        "PowBackward#1": ("pos.ad", 5, 5, "(w2*(w1*x^2+b))^3"),
        "MulBackward#1": ("pos.ad", 5, 8, "w2*(w1*x^2+b)"),     # column of the `*`
        "AccumulateGrad(leaf scalar #1)": None,                 # three unnamed leaves, numbered in walk
        "AccumulateGrad(leaf scalar #2)": None,                 # order: w2, w1, b
        "AccumulateGrad(leaf scalar #3)": None,
        "AddBackward#1": ("pos.ad", 5, 16, "w1*x^2+b"),
        "MulBackward#2": ("pos.ad", 5, 12, "w1*x^2"),
    }
    # leaves remember where their tensor was made
    assert s.namespace["w1"]._pos == ("pos.ad", 2, 6, "tensor(0.5, requires_grad=true)")
    assert s.namespace["x"]._pos == ("pos.ad", 1, 5, "tensor(2.0)")


def test_chain_rule_with_x_requiring_grad_has_the_power_node():
    s = run(CHAIN.replace("tensor(2.0)", "tensor(2.0, requires_grad=true)"))
    got = by_label(s.namespace["f"])
    assert got["PowBackward#2"] == ("pos.ad", 5, 13, "x^2")      # `x^2` starts at column 13
    assert got["PowBackward#1"] == ("pos.ad", 5, 5, "(w2*(w1*x^2+b))^3")
    line = CHAIN.splitlines()[4]
    for label, pos in got.items():
        if pos is None:
            continue
        text = pos[3]
        assert text in line and balanced(text), (label, text)


@pytest.mark.parametrize("expr", [
    "((x + 1))*x", "(x)*(x)", "-(x+1)^2", "sin(x*(x+1)) + cos(x)", "x[0:2].sum() * (x[1] - 2)",
    "exp(-(x - 1)^2).sum()", "(x @ x) / ((x*x).sum() + 1)", "max(x, x*2) - min(x, (x)) + x.T",
    "cat([x, x*2]).mean() * -x[1]",
])
def test_every_text_is_a_balanced_piece_of_its_line(expr):
    s = run(f"x = tensor([1.0, 2.0, 3.0], requires_grad=true)\ny = {expr}\n")
    line = f"y = {expr}"
    nodes = [n for n in walk([s.namespace["y"].grad_fn]) if n.pos is not None]
    assert nodes
    for n in nodes:
        file, ln, col, text = n.pos
        assert (file, ln) == ("pos.ad", 2)
        assert text and text in line and balanced(text), (n.name, text)
        # the column lies inside the text's span on the line (the first column, or the operator's)
        start = line.index(text) + 1
        assert start <= col < start + len(text), (n.name, col, text)


def test_brackets_around_a_whole_operand_are_kept_and_outer_ones_dropped():
    s = run("x = tensor(2.0, requires_grad=true)\nu = ((x + 1))\nv = (x)*(x)\nq = -(x+1)\n")
    assert s.namespace["u"].grad_fn.pos == ("pos.ad", 2, 9, "x + 1")
    assert s.namespace["v"].grad_fn.pos == ("pos.ad", 3, 8, "(x)*(x)")
    neg = s.namespace["q"].grad_fn
    assert neg.pos == ("pos.ad", 4, 5, "-(x+1)")
    assert neg.next_edges[0].pos == ("pos.ad", 4, 8, "x+1")


def test_multi_line_expression_has_no_text_but_a_position():
    s = run("x = tensor(2.0, requires_grad=true)\ny = (x*3 +\n     x^2)\n")
    got = by_label(s.namespace["y"])
    assert got["AddBackward#1"] == ("pos.ad", 2, 10, None)     # spans two lines: no text
    assert got["MulBackward#1"] == ("pos.ad", 2, 7, "x*3")
    assert got["PowBackward#1"] == ("pos.ad", 3, 6, "x^2")
    add = s.namespace["y"].grad_fn
    assert format_pos(add.pos) == "2:10"                       # no empty backquotes
    assert pos_text(add.pos) is None
    s.run("trace(true)\ny.backward()")
    text = s.out.getvalue()
    assert "step 1  AddBackward#1 at 2:10  deps 0 (root)" in text
    assert "MulBackward#1 at 2:7 `x*3`" in text


def test_call_spanning_lines_inside_brackets():
    s = run("x = tensor(2.0, requires_grad=true)\ny = maximum(x*2,\n            x^3)\n")
    mx = s.namespace["y"].grad_fn
    assert mx.pos[:3] == ("pos.ad", 2, 5) and mx.pos[3] is None
    assert {n.pos for n in mx.next_edges} == {("pos.ad", 2, 14, "x*2"), ("pos.ad", 3, 13, "x^3")}


def test_positions_inside_a_user_function_point_into_its_body():
    src = ("x = tensor(2.0, requires_grad=true)\n"
           "def g(a) {\n"
           "    t = a * a\n"
           "    return sin(t) + a\n"
           "}\n"
           "z = g(x) * 3\n")
    s = run(src, "fn.ad")
    got = by_label(s.namespace["z"])
    assert got["MulBackward#1"] == ("fn.ad", 6, 10, "g(x) * 3")
    assert got["AddBackward#1"] == ("fn.ad", 4, 19, "sin(t) + a")
    assert got["SinBackward#1"] == ("fn.ad", 4, 12, "sin(t)")
    assert got["MulBackward#2"] == ("fn.ad", 3, 11, "a * a")


def test_function_defined_in_one_repl_input_and_called_in_another_keeps_its_own_text():
    out = io.StringIO()
    r = Repl(ad.Session(out=out), out=out)
    for line in ["x = tensor(2.0, requires_grad=true)",
                 "def g(a) { t = a * a; return sin(t) + a }",
                 "a_long_name_for_the_result = g(x) * 1"]:
        r.handle(line)
    z = r.session.namespace["a_long_name_for_the_result"]
    got = by_label(z)
    assert got["MulBackward#1"][1:] == (1, 35, "g(x) * 1")
    assert got["MulBackward#2"][1:] == (1, 18, "a * a")        # cut from the def's line, not the caller's
    assert got["AddBackward#1"][1:] == (1, 37, "sin(t) + a")


def test_loop_nodes_share_their_statement_position():
    s = run("x = tensor(0.5, requires_grad=true)\ny = x\nfor i in range(3) { y = sin(y) * 2 }\n")
    nodes = list(walk([s.namespace["y"].grad_fn]))
    sins = [n.pos for n in nodes if n.name == "SinBackward"]
    muls = [n.pos for n in nodes if n.name == "MulBackward"]
    assert sins == [("pos.ad", 3, 25, "sin(y)")] * 3
    assert muls == [("pos.ad", 3, 32, "sin(y) * 2")] * 3


def test_for_over_a_tensor_gives_its_rows_the_for_statements_position():
    s = run("x = tensor([1.0, 2.0], requires_grad=true)\nacc = 0\nfor v in x { acc = acc + v * 2 }\n")
    idx = [n for n in walk([s.namespace["acc"].grad_fn]) if n.name == "IndexBackward"]
    assert len(idx) == 2
    for n in idx:
        assert n.pos[0] == "pos.ad" and n.pos[1] == 3


def test_other_expression_forms():
    src = ("x = tensor([1.0, 2.0], requires_grad=true)\n"      # 1
           "m = tensor([[1.0, 2.0]], requires_grad=true)\n"    # 2
           "t = m.T\n"                                          # 3
           "r = x[0]\n"                                         # 4
           "y = x * 1\n"                                        # 5
           "y += 3\n"                                           # 6
           "y[0] = 7\n"                                         # 7
           "k = x.sum(dim=0)\n"                                 # 8
           "d = x.detach()\n"                                   # 9
           "z = zeros(2)\n")                                    # 10
    s = run(src)
    ns = s.namespace
    assert ns["t"].grad_fn.pos == ("pos.ad", 3, 6, ".T")
    assert ns["r"].grad_fn.pos == ("pos.ad", 4, 5, "x[0]")
    put = ns["y"].grad_fn
    assert put.pos == ("pos.ad", 7, 1, "y[0] = 7")
    add = [n for n in walk([put]) if n.name == "AddBackward"][0]
    assert add.pos == ("pos.ad", 6, 1, "y += 3")
    assert ns["k"].grad_fn.pos == ("pos.ad", 8, 5, "x.sum(dim=0)")
    assert ns["d"]._pos == ("pos.ad", 9, 5, "x.detach()")
    assert ns["z"]._pos == ("pos.ad", 10, 5, "zeros(2)")


def test_the_nodes_of_a_create_graph_gradient_say_whose_backward_made_them():
    s = run("x = tensor(2.0, requires_grad=true)\ng = grad(x^3, [x], create_graph=true)[0]\n")
    g = s.namespace["g"]
    assert g.grad_fn is not None
    made = [n.pos for n in walk([g.grad_fn]) if n.pos is not None]
    assert made and all(p == ("pos.ad", 2, 10, "backward of x^3") for p in made)   # x^3 is at 2:10


# ---- what shows them -----------------------------------------------------------------------

def test_graph_dot_and_info_show_positions():
    s = run(CHAIN)
    f = s.namespace["f"]
    names = {id(v): k for k, v in s.bindings().items() if isinstance(v, ad.Tensor)}
    tree = str(ad.graph(f, names=names))
    assert "f = PowBackward#1 at 5:5 `(w2*(w1*x^2+b))^3`" in tree
    assert "MulBackward#1 at 5:8 `w2*(w1*x^2+b)`" in tree
    assert "AddBackward#1 at 5:16 `w1*x^2+b`" in tree
    assert "MulBackward#2 at 5:12 `w1*x^2`" in tree
    dot = ad.dot(f, names=names)
    assert "at 5:16" in dot and "w1*x^2+b" in dot
    info = str(ad.info(f)).splitlines()
    assert "made at        pos.ad:5:5 `(w2*(w1*x^2+b))^3`" in info
    leaf = str(ad.info(s.namespace["w1"])).splitlines()
    assert "made at        pos.ad:2:6 `tensor(0.5, requires_grad=true)`" in leaf


def test_trace_shows_positions():
    s = run(CHAIN + "trace(true)\nf.backward()\n")
    text = s.out.getvalue()
    assert "step 1  PowBackward#1 at 5:5 `(w2*(w1*x^2+b))^3`  deps 0 (root)" in text
    assert "step 6  MulBackward#2 at 5:12 `w1*x^2`  deps 1" in text
    rec = s.last_trace[0]
    assert rec["pos"] == {"file": "pos.ad", "line": 5, "column": 5, "text": "(w2*(w1*x^2+b))^3"}
    assert s.last_trace[2]["pos"] is None          # AccumulateGrad: no position of its own


def test_version_error_names_both_lines():
    s = run("x = tensor(3.0, requires_grad=true)\na = x * 2\nb = x.exp()\nc = a * b\nb += 1\n")
    with pytest.raises(AutogradError) as e:
        s.run("c.backward()")
    msg = str(e.value)
    assert "made at 4:7 `a * b`" in msg
    assert "the in-place write at 5:1 `b += 1` changed it to version 1" in msg


def test_long_texts_are_cut_in_display_but_kept_whole():
    expr = " + ".join(f"x*{k}" for k in range(1, 20))
    s = run(f"x = tensor(1.0, requires_grad=true)\ny = {expr}\n")
    pos = s.namespace["y"].grad_fn.pos
    assert pos[3] == expr
    shown = format_pos(pos)
    assert shown.endswith("...`") and len(shown.split("`")[1]) == 60


def test_format_pos_forms():
    assert format_pos(None) == ""
    assert format_pos(("a.ad", 3, 7, "x*y")) == "3:7 `x*y`"
    assert format_pos(("a.ad", 3, 7, "x*y"), file=True) == "a.ad:3:7 `x*y`"
    assert format_pos(("a.ad", 3, 7, "x*y"), text=False) == "3:7"
    assert format_pos(("/some/dir/b.py", 12, None, "y = x")) == "b.py:12 `y = x`"


# ---- the Python API ------------------------------------------------------------------------

def test_python_api_positions_name_this_file_and_line():
    here = sys._getframe().f_lineno
    x = ad.tensor(2.0, requires_grad=True)              # here + 1
    y = x * 3                                            # here + 2
    z = (y.sin()                                         # here + 3
         + x)                                            # here + 4
    d = x.detach()                                       # here + 5
    assert x._pos == (THIS_FILE, here + 1, None, None)
    assert pos_text(x._pos) == "x = ad.tensor(2.0, requires_grad=True)              # here + 1"
    assert y.grad_fn.pos == (THIS_FILE, here + 2, None, None)
    assert pos_text(y.grad_fn.pos).startswith("y = x * 3")
    assert d._pos == (THIS_FILE, here + 5, None, None)
    add = z.grad_fn
    sin = add.next_edges[0]
    assert add.pos[0] == THIS_FILE and add.pos[1] in (here + 3, here + 4)
    assert sin.pos == (THIS_FILE, here + 3, None, None)
    # the display: the file's base name and the line, then the line's text
    assert format_pos(y.grad_fn.pos).startswith(f"test_positions.py:{here + 2} `y = x * 3 ")
    assert format_pos(y.grad_fn.pos, text=False) == f"test_positions.py:{here + 2}"
    info = str(ad.info(y)).splitlines()
    assert any(ln.startswith(f"made at        test_positions.py:{here + 2} `y = x * 3 ") for ln in info)


def _helper_square(t):
    return t * t                                         # the node is made here


def test_python_api_position_is_the_first_frame_outside_the_package():
    x = ad.tensor(2.0, requires_grad=True)
    y = _helper_square(x)
    line = _helper_square.__code__.co_firstlineno + 1
    assert y.grad_fn.pos == (THIS_FILE, line, None, None)
    assert pos_text(y.grad_fn.pos).startswith("return t * t")


def test_python_api_positions_made_again_at_one_place_are_the_same_and_right():
    # the second time round, a position comes from the table of (code, offset) (compiled: without
    # the walk); a node that one of autodsl's own Python functions makes must still name the
    # user's line, not that function's
    x = ad.tensor([2.0, 3.0], requires_grad=True)
    first = sys._getframe().f_lineno + 3
    seen = []
    for _ in range(3):
        y = x * 3.0
        m = y.mean()
        seen.append((y.grad_fn.pos, m.grad_fn.pos))
    assert all(p == (THIS_FILE, first, None, None) and q == (THIS_FILE, first + 1, None, None) for p, q in seen)
    assert seen[1][0] is seen[0][0]             # one tuple per line


def test_python_api_positions_by_every_route_to_an_op():
    # Note [the user's frame] (ops/registry.py): the walk starts at the first frame that may be
    # the user's, whatever the route: an operator, its reflected form, a method, a function, one
    # called by C (reduce, map), on 0-d float64 values (the fast path) and on arrays
    import functools
    for x in (ad.tensor(0.5, requires_grad=True, dtype=ad.float64), ad.tensor([0.5, 2.0], requires_grad=True)):
        here = sys._getframe().f_lineno
        made = [x * 0.5,                                     # here + 1
                2.0 * x,                                     # here + 2
                x.relu(),                                    # here + 3
                ad.sin(x),                                   # here + 4
                functools.reduce(ad.mul, [x, x, x]),         # here + 5
                next(map(ad.cos, [x]))]                      # here + 6
        assert [t.grad_fn.pos for t in made] == [(THIS_FILE, here + i, None, None) for i in range(1, 7)]


def test_why_names_the_users_line_where_a_value_left_the_graph():
    # why()'s record of a no_grad op starts its walk where the op's position would (after_op's frames)
    for x in (ad.tensor(0.5, requires_grad=True, dtype=ad.float64), ad.tensor([0.5, 2.0], requires_grad=True)):
        here = sys._getframe().f_lineno
        with ad.no_grad():
            y = x * 2.0                                      # here + 2
            z = ad.sin(x)                                    # here + 3
        assert f"computed at test_positions.py:{here + 2} " in str(ad.why(y))
        assert f"computed at test_positions.py:{here + 3} " in str(ad.why(z))


def test_version_errors_name_the_users_line_of_an_in_place_write_by_every_route():
    # note_write's walk starts above inplace() (ops/inplace.py's _WRITE_FRAMES): the operator,
    # the method, a tensor or a float operand, the ufunc write and the general one (into a view)
    for dtype in (ad.float64, ad.float32):
        for route in range(4):
            x = ad.tensor([1.0, 2.0], requires_grad=True, dtype=dtype)
            a = x * 1.0
            y = (a * a).sum()
            with ad.no_grad():
                here = sys._getframe().f_lineno
                if route == 0:
                    a -= ad.tensor([0.5, 0.5], dtype=dtype)  # here + 2
                elif route == 1:
                    a.sub_(0.5)                              # here + 4
                elif route == 2:
                    a.mul_(2.0)                              # here + 6
                else:
                    a[:1].add_(1.0)                          # here + 8
            with pytest.raises(ad.AutogradError) as e:
                y.backward()
            assert f"the in-place write at test_positions.py:{here + 2 + 2 * route} " in str(e.value)


def test_the_last_backward_remembers_the_users_line_by_every_route():
    # LastBackward's walk starts above note_backward (core/watch.py's _BACKWARD_FRAMES)
    from autodsl.core import watch
    import functools
    for x in (ad.tensor(0.5, requires_grad=True, dtype=ad.float64), ad.tensor([0.5, 2.0], requires_grad=True)):
        here = sys._getframe().f_lineno
        (x * 2.0).sum().backward()                           # here + 1
        assert watch.last_backward().pos == (THIS_FILE, here + 1, None, None)
        ad.grad((x * 3.0).sum(), [x])                        # here + 3
        assert watch.last_backward().pos == (THIS_FILE, here + 3, None, None)
        functools.reduce(lambda a, b: a.backward(), [(x * 4.0).sum(), None])   # here + 5 (the lambda)
        assert watch.last_backward().pos == (THIS_FILE, here + 5, None, None)


def test_python_api_trace_and_step_show_the_callers_line():
    here = sys._getframe().f_lineno
    x = ad.tensor(2.0, requires_grad=True)
    y = x * 5                                            # here + 2
    shown = []
    with ad.core.trace.tracing(True, printer=shown.append):
        y.backward()
    assert f"MulBackward#1 at test_positions.py:{here + 2} `y = x * 5" in shown[0]
    st = ad.step(x * 7)                                   # here + 7
    assert f"next     MulBackward#1 at test_positions.py:{here + 7} `st = ad.step(x * 7)" in str(st)
    st.abort()


def test_python_line_that_cannot_be_read_back_has_no_text():
    pos = ("/nonexistent/file.py", 3, None, None)
    assert pos_text(pos) is None
    assert format_pos(pos) == "file.py:3"
