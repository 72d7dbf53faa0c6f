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
