"""Bad input gives a DSLError that points at the line and column, with a caret.

One test per kind of mistake the issue names: a syntax error, an unknown name,
a shape mismatch, a wrong keyword, a non-scalar backward.
"""
from __future__ import annotations

import pytest

import autodsl as ad

SETUP = "x = tensor([1.0, 2.0], requires_grad=true)\ny = tensor([1.0, 2.0, 3.0])\n"


def error_of(src: str) -> ad.DSLError:
    s = ad.Session(echo=False)
    with pytest.raises(ad.DSLError) as info:
        s.run(src, filename="t.ad")
    return info.value


def caret_column(rendered: str) -> int:
    """1-based column of the first caret in the rendered message."""
    lines = rendered.splitlines()
    src, caret = lines[1], lines[2]
    assert src.startswith("    ") and caret.startswith("    ")
    return caret.index("^") - 4 + 1


@pytest.mark.parametrize("src, kind, line, column, words", [
    # a syntax error on line 3: reported before line 1 runs (x is never bound)
    (SETUP + "z = (x + 1\n", ad.ParseError, 3, None, ["bracket", "("]),
    (SETUP + "z = x +* y\n", ad.ParseError, 3, 8, ["*"]),
    (SETUP + "z = x + w\n", ad.NameError_, 3, 9, ["w"]),
    (SETUP + "z = x + y\n", ad.ShapeError, 3, 7, ["broadcast"]),   # the caret is on the operator
    (SETUP + "z = x.sum(dimm=0)\n", ad.TypeError_, 3, 5, ["dimm"]),
    (SETUP + "(x * 3).backward()\n", ad.AutogradError, 3, 1, ["gradient", "shape"]),
])
def test_error_points_at_the_mistake(src, kind, line, column, words):
    e = error_of(src)
    assert isinstance(e, kind), f"{type(e).__name__}: {e}"
    assert e.file == "t.ad" and e.line == line
    if column is not None:
        assert e.column == column
    text = e.render()
    assert text.startswith(f"t.ad:{line}:{e.column}: ")
    assert text.splitlines()[1].strip() == src.splitlines()[line - 1].strip()
    assert caret_column(text) == e.column
    assert any(w in e.message for w in words), e.message


def test_syntax_error_runs_nothing():
    s = ad.Session(echo=False)
    with pytest.raises(ad.ParseError):
        s.run("a = 1\nb = (2\n")
    assert "a" not in s


def test_error_keeps_the_session():
    s = ad.Session(echo=False)
    s.run("x = tensor(2.0, requires_grad=true)\ny = x * x\ny.backward()")
    with pytest.raises(ad.NameError_):
        s.run("z = nope + 1")
    assert s["x"].grad.item() == 4.0 and "z" not in s


def test_python_api_errors_carry_the_callers_file_and_line():
    import inspect
    a, b = ad.tensor([1.0, 2.0]), ad.tensor([1.0, 2.0, 3.0])
    with pytest.raises(ad.ShapeError) as info:
        line = inspect.currentframe().f_lineno + 1
        a + b
    e = info.value
    assert (e.file, e.line, e.column) == (__file__, line, None)
    assert not e.has_position                      # a script's position would replace it
    assert str(e).startswith(f"{__file__}:{line}: add: shapes (2,) and (3,) do not broadcast")
    assert str(e).splitlines()[1] == "    a + b"


def test_errors_inside_a_session_keep_the_scripts_position():
    s = ad.Session(echo=False)
    with pytest.raises(ad.ShapeError) as info:
        s.run("a = tensor([1.0, 2.0])\nb = a + tensor([1.0, 2.0, 3.0])\n", "x.ad")
    e = info.value
    assert (e.file, e.line, e.column) == ("x.ad", 2, 7) and e.has_position


# ---- errors inside user functions say where they were called -----------------------------------

NESTED = """def inner(a) {
    return a @ 2
}
def outer(b) {
    c = b * 2
    return inner(c)
}
w = tensor([1.0, 2.0], requires_grad=true)
y = outer(w)
"""


def test_error_in_nested_functions_lists_the_calls_innermost_first():
    e = error_of(NESTED)
    assert (e.file, e.line, e.column) == ("t.ad", 2, 14)          # the line in the body
    assert e.calls == ["in inner(), called at 6:12 `inner(c)`", "in outer(), called at 9:5 `outer(w)`"]
    assert e.render().splitlines() == [
        "t.ad:2:14: `@` (matrix product) needs two tensors; use `*` to multiply by a number",
        "        return a @ 2",
        "                 ^",
        "  in inner(), called at 6:12 `inner(c)`",
        "  in outer(), called at 9:5 `outer(w)`",
    ]


def test_no_call_context_outside_functions_and_for_argument_errors():
    e = error_of(SETUP + "z = x + y\n")
    assert e.calls == [] and len(e.render().splitlines()) == 3
    e = error_of("def f(a) { return a }\nf(1, 2)\n")          # wrong arguments: the body never ran
    assert e.calls == [] and e.line == 2 and "takes 1 argument but 2 were given" in e.message


def test_a_call_from_another_file_names_it():
    s = ad.Session(echo=False)
    s.run("def f(a) {\n    return a + nope\n}\n", "lib.ad")
    with pytest.raises(ad.NameError_) as info:
        s.run("x = 1\nf(x)\n", "main.ad")
    assert info.value.render().splitlines()[0].startswith("lib.ad:2:16: `nope` is not defined")
    assert info.value.calls == ["in f(), called at main.ad:2:1 `f(x)`"]


def test_a_function_run_by_a_builtin_or_by_python():
    s = ad.Session(echo=False)
    with pytest.raises(ad.DSLError) as info:
        s.run("def g(w) { return w.sum() @ 2 }\nx = tensor([1.0], requires_grad=true)\ncheck(g, [x])\n", "c.ad")
    assert info.value.calls == ["in g(), called by `check(g, [x])` at 3:1"]
    import inspect
    with pytest.raises(ad.DSLError) as info:
        line = inspect.currentframe().f_lineno + 1
        s["g"](s["x"])
    assert info.value.calls == [f"in g(), called from Python at test_errors.py:{line}"]
    assert info.value.has_position and info.value.file == "c.ad"


def test_a_hook_that_raises_during_backward_says_which_backward_ran_it():
    s = ad.Session(echo=False)
    src = ("def bad(g) {\n    return g @ g\n}\n"
           "x = tensor(2.0, requires_grad=true)\nx.grad = tensor(5.0)\n"
           "h = x.register_hook(bad)\ny = x * 3\n\ny.backward()\n")
    with pytest.raises(ad.DSLError) as info:
        s.run(src, "h.ad")
    e = info.value
    assert (e.file, e.line) == ("h.ad", 2)
    assert e.render().splitlines()[1:] == [
        "        return g @ g",
        "                 ^",
        "  in the hook bad() on `x`, run by `y.backward()` at 9:1",
    ]
    assert s["x"].grad.item() == 5.0                       # the failed backward wrote nothing
    s.run("h.remove()\ny.backward()")
    assert s["x"].grad.item() == 8.0


def test_recursion_too_deep_gives_a_short_clean_message():
    e = error_of("def f(n) { return f(n + 1) }\nf(0)\n")
    assert isinstance(e, ad.RuntimeError_)
    assert len(e.calls) == 200
    assert e.render().splitlines() == [
        "t.ad:1:19: too many nested calls of user functions (more than 200) while calling `f`: "
        "does it call itself without ever stopping?",
        "    def f(n) { return f(n + 1) }",
        "                      ^^^^^^^^",
        "  in f(), called at 1:19 `f(n + 1)` (199 times)",
        "  in f(), called at 2:1 `f(0)`",
    ]
    # two functions calling each other: the innermost calls, a count, and the outermost
    e = error_of("def a(n) { return b(n) }\ndef b(n) { return a(n) + nope }\nx = 1\na(x)\n")
    assert e.message.startswith("too many nested calls")
    e = error_of("def a(n) { if n > 0 { return b(n - 1) }; return nope }\n"
                 "def b(n) { return a(n) }\na(7)\n")
    assert e.render().splitlines()[3:] == [
        "  in a(), called at 2:19 `a(n)`",
        "  in b(), called at 1:30 `b(n - 1)`",
        "  in a(), called at 2:19 `a(n)`",
        "  in b(), called at 1:30 `b(n - 1)`",
        "  ... 10 more",                # 15 calls: a(7), b(6), a(6), ..., a(0)
        "  in a(), called at 3:1 `a(7)`",
    ]


def test_inplace_on_a_leaf_names_the_variable_not_a_placeholder():
    # the message used to say "x += ..." whatever the variable was called
    e = error_of("w = tensor([1.0], requires_grad=true)\nw += 1\n")
    assert isinstance(e, ad.AutogradError)
    assert e.message.startswith("w += ... on a leaf tensor that requires grad")
    e = error_of("w = tensor([1.0], requires_grad=true)\nw[0] = 2\n")
    assert e.message.startswith("writing w[...] = on a leaf tensor")
    w = ad.tensor([1.0], requires_grad=True)               # the Python API: the caller's name
    with pytest.raises(ad.AutogradError, match=r"w -= \.\.\. on a leaf"):
        w -= 1
