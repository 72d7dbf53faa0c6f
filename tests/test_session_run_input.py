"""Session.run_input: one REPL input or notebook cell, taken back whole on Ctrl-C."""
from __future__ import annotations

import pytest

import autodsl as ad
from autodsl.errors import NameError_


def _interrupt():
    raise KeyboardInterrupt


def test_ctrl_c_takes_back_the_whole_input():
    s = ad.Session(echo=False)
    s.run("n = 1\nw = tensor(2.0, requires_grad=true)")
    s["stop"] = _interrupt
    with pytest.raises(KeyboardInterrupt) as e:
        s.run_input(s.parse("n = 2\nw.backward()\nm = 3\nstop()", "<input 2>"))
    assert e.value.kept == ()
    assert s["n"] == 1 and s["w"].grad is None and "m" not in s.namespace


def test_an_error_keeps_what_ran_before_it():
    s = ad.Session(echo=False)
    with pytest.raises(NameError_):
        s.run_input(s.parse("n = 2\nnope + 1", "<input 1>"))
    assert s["n"] == 2


def test_it_returns_the_last_value():
    s = ad.Session(echo=False)
    assert s.run_input(s.parse("x = 4\nx * 2", "<input 1>")) == 8
