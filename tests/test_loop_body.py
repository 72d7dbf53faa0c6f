"""Compiled loop bodies (Note [compiled loop bodies], lang/loop_body.py): a loop run from the
written-out function does what the tree walker does, line for line: the same printed output,
variables, gradients, trace, step counts, and the same errors at the same positions."""
from __future__ import annotations

import io
import warnings

import numpy as np
import pytest

import autodsl as ad
from autodsl.errors import DSLError
from autodsl.lang import interpreter, loop_body

PROGRAMS = [
    # W1's loop, and its gradient
    "x = tensor(0.5, requires_grad=true, dtype=float64)\ny = x\n"
    "for i in range(N) { y = relu(y*0.999 + 0.001) }\ny.backward()\nprint(x.grad)",
    # names of the scope, numbers, strings, calls with several arguments, an echo
    "s = 0\nfor i in range(N) { s = s + i * 2 - 1; t = max(s, 3) }\nprint(s, t)",
    "w = tensor([1.0, 2.0], requires_grad=true)\nfor i in range(N) { z = (w * 2 + w / 3) @ w; print(z) }\n"
    "z.backward()\nprint(w.grad)",
    # break, continue, nested loops, if, while, augmented assignments (the interpreter's own)
    "n = 0\nfor i in range(N) { if i % 3 == 0 { continue }; if i > 20 { break }; n += i }\nprint(n)",
    "k = 0\nwhile k < N { k = k + 1; if k == 7 { continue }; m = k * k }\nprint(k, m)",
    "acc = []\nfor i in range(N) { for j in range(3) { acc = acc + [i * j] } }\nprint(len(acc), acc[-1])",
    # functions: calls, recursion, a loop in a function (its scope, the builtins behind it)
    "def f(a, b=2) { return a * b + 1 }\ns = 0\nfor i in range(N) { s = f(i) + f(i, b=3) }\nprint(s)",
    "def g(n) { t = 0; for i in range(n) { t = t + abs(i - 3) }; return t }\nprint(g(N), g(N))",
    "relu = 5\nfor i in range(N) { v = relu + i }\nprint(v)",
    # f-strings, lists, comparisons and powers fall back to eval
    "for i in range(N) { msg = f\"{i:03d}\"; p = 2 ^ (i % 5); q = [i, -i] }\nprint(msg, p, q)",
    # errors: an unknown name, a bad operand, a bad call, a private name, an error in a function
    "for i in range(N) { y = i + zz }",
    "x = tensor([1.0, 2.0])\nfor i in range(N) { y = x @ 3 }",
    "x = tensor([1.0, 2.0])\nfor i in range(N) { y = relu(x, 3, 4) }",
    "for i in range(N) { y = \"a\" + i }",
    "for i in range(N) { _y = 1 }",
    "for i in range(N) { y = _y }",
    "def h(a) { return a + none }\nfor i in range(N) { y = h(i) }",
    "x = tensor([1.0, 2.0])\nfor i in range(N) { y = x[i] * 2 }",
    "for i in range(N) { y = 1 // (i - 5) }",
    "x = tensor([1.0, 2.0])\nfor i in range(N) { y = x.nope }",
    # literal statements (echoed); an expression nested past Python's limit of nested blocks in
    # a compiled body (the loop then runs walked)
    "for i in range(N) { 0; \"s\"; none; 2.5 }\nprint(7)",
    "x = 0.5\nfor i in range(N) { y = " + "abs(" * 9 + "x + 1" + ") + 1" * 9 + " }\nprint(y)",
    "x = 0.5\nk = 0\nwhile k < N { k = k + 1; y = " + "abs(" * 9 + "x + k" + ") + 1" * 9 + " }\nprint(y)",
]


def _run(src: str, n: int, compile_at: int, monkeypatch):
    monkeypatch.setattr(interpreter, "COMPILE_AT", compile_at)
    out = io.StringIO()
    s = ad.Session(out=out, echo=True)
    error = None
    try:
        s.run(src.replace("N", str(n)))
    except DSLError as e:
        error = (type(e).__name__, str(e), e.line, e.column, e.end_column, tuple(e.calls))
    values = {k: (v.numpy().tolist() if isinstance(v, ad.Tensor) else v)
              for k, v in s.namespace.items() if isinstance(v, (int, float, str, list, ad.Tensor))}
    return out.getvalue(), error, values


@pytest.mark.parametrize("src", PROGRAMS)
@pytest.mark.parametrize("n", [1, 12])
def test_a_compiled_loop_does_what_the_tree_walker_does(src, n, monkeypatch):
    walked = _run(src, n, 10**9, monkeypatch)
    compiled = _run(src, n, 1, monkeypatch)
    assert compiled == walked
    if "zz" in src or "@ 3" in src or "relu(x, 3" in src:
        assert compiled[1] is not None and compiled[1][2] == 1 + src.count("\n", 0, src.index("for"))


def test_the_body_is_compiled_once_and_kept_on_the_loop(monkeypatch):
    made = []
    real = loop_body._made
    monkeypatch.setattr(loop_body, "_made", lambda w, name: made.append(name) or real(w, name))
    s = ad.Session(echo=False)
    s.run("def f() { t = 0; for i in range(100) { t = t + i }; return t }")
    assert [s.run("f()") for _ in range(3)] == [4950] * 3
    assert len(made) == 1
    s.run("for i in range(3) { u = i }")        # below COMPILE_AT: walked
    assert len(made) == 1 and s["u"] == 2


def test_a_literal_statement_compiles_without_a_python_warning(monkeypatch):
    # `0 is not None` in the written body would be Python's SyntaxWarning, shown as the script's
    walked = _run("for i in range(3) { 0 }", 3, 10**9, monkeypatch)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        compiled = _run("for i in range(3) { 0 }", 3, 1, monkeypatch)
    assert compiled == walked and walked[0] == "0\n0\n0\n"


def test_a_body_python_cannot_compile_runs_walked_and_is_not_written_again(monkeypatch):
    monkeypatch.setattr(interpreter, "COMPILE_AT", 1)
    made = []
    real = loop_body._made
    monkeypatch.setattr(loop_body, "_made", lambda w, name: made.append(real(w, name)) or made[-1])
    nested = "abs(" * 9 + "x + i" + ") + 1" * 9
    s = ad.Session(echo=False)
    s.run(f"def f(x) {{ for i in range(4) {{ y = {nested} }}; return y }}")
    assert [float(s.run("f(0.5)")) for _ in range(3)] == [12.5] * 3     # (0.5 + 3, then 9 times + 1)
    assert made == [None]           # tried once, on the first call, then left to the walker


def test_a_compiled_loop_counts_the_steps_the_tree_walker_counts(monkeypatch):
    def fewest_steps(compile_at):       # the smallest step limit the loop runs within
        monkeypatch.setattr(interpreter, "COMPILE_AT", compile_at)
        for limit in range(100, 200):
            try:
                ad.Session(echo=False, step_limit=limit).run("for i in range(50) { a = i; b = a + 1 }")
            except DSLError:
                continue
            return limit
    walked = fewest_steps(10**9)
    assert walked is not None and fewest_steps(1) == walked


def test_a_step_limit_stops_a_compiled_loop_where_it_stops_a_walked_one(monkeypatch):
    def stop(compile_at):
        monkeypatch.setattr(interpreter, "COMPILE_AT", compile_at)
        s = ad.Session(echo=False, step_limit=500)
        with pytest.raises(DSLError) as info:
            s.run("n = 0\nfor i in range(1000) { n = n + 1; m = n * 2 }")
        return str(info.value), s["n"]
    assert stop(1) == stop(10**9)


def test_a_compiled_loop_positions_its_ops_for_the_trace(monkeypatch):
    line = "for i in range(3) { y = sin(y * 2) }"

    def positions(compile_at):
        monkeypatch.setattr(interpreter, "COMPILE_AT", compile_at)
        s = ad.Session(echo=False)
        s.run("x = tensor(2.0, requires_grad=true)\ny = x\n" + line)
        np.testing.assert_allclose(s["y"].numpy(), np.sin(2 * np.sin(2 * np.sin(4.0))))
        node = s["y"].grad_fn
        return [(n.pos[1], n.pos[2]) for n in (node, node.next_edges[0])]
    compiled = positions(1)
    assert compiled == positions(10**9)
    assert compiled == [(3, line.index("sin") + 1), (3, line.index("*") + 1)]     # the call, its `*`
