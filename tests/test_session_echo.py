"""Session(echo=...): True prints each bare expression's value, False nothing, a callable
receives the values instead (the Jupyter kernel's rich display)."""
from __future__ import annotations

import io

import autodsl


def test_echo_callback_receives_each_bare_expression_value_and_prints_nothing():
    got, out = [], io.StringIO()
    s = autodsl.Session(echo=got.append, out=out)
    s.run("1 + 1\nx = tensor(3.0)\nx * 2\nprint(7)")
    assert got[0] == 2
    assert float(got[1]) == 6.0 and isinstance(got[1], autodsl.Tensor)
    assert len(got) == 2
    assert out.getvalue() == "7\n"          # print still writes; the values did not


def test_echo_false_and_true():
    out = io.StringIO()
    autodsl.Session(echo=False, out=out).run("1 + 1")
    assert out.getvalue() == ""
    autodsl.Session(echo=True, out=out).run("1 + 2")
    assert out.getvalue() == "3\n"
