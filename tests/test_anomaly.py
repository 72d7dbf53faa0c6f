"""Anomaly mode: the op (forward) or node (backward) where a nan/inf was born, warn or raise.

The reports are checked for the op or node they name, its line, which input went bad and
the numbers shown; that only the root cause is reported (not everything the nan spreads
to), once per site; that raising leaves every .grad as it was; that it is scoped per
Session; and the CLI flags and the REPL command.
"""
from __future__ import annotations

import io
import os
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

import autodsl as ad
from autodsl.context import current
from autodsl.core import anomaly as A
from autodsl.cli.repl import Repl

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(autouse=True)
def anomaly_off():
    """Each test starts and ends with anomaly mode off in the Python API's context."""
    ad.anomaly(False)
    yield
    ad.anomaly(False)


def here() -> int:
    return sys._getframe(1).f_lineno


def caught(fn):
    """Run fn with every warning recorded; the AnomalyWarnings' reports."""
    with warnings.catch_warnings(record=True) as ws:
        warnings.simplefilter("always")
        fn()
    return [w.message.report for w in ws if isinstance(w.message, A.AnomalyWarning)]


def run_session(src, **kw):
    """(session, stdout, stderr, error) after running src in a Session."""
    out, err = io.StringIO(), io.StringIO()
    s = ad.Session(out=out, **kw)
    old = sys.stderr
    sys.stderr = err
    error = None
    try:
        s.run(src, "n.ad")
    except ad.DSLError as e:
        error = e
    finally:
        sys.stderr = old
    return s, out.getvalue(), err.getvalue(), error


# -- forward ----------------------------------------------------------------------------------------

def test_forward_warns_at_the_op_that_made_the_nan():
    x = ad.tensor(0.5, requires_grad=True)

    def compute():
        y = ad.sqrt(x - 1)          # the nan is born here ...
        (y * 2 + 1).exp()           # ... and only spreads here
    line = here() - 2
    ad.anomaly(True)
    reports = caught(compute)
    assert len(reports) == 1
    r = reports[0]
    assert (r.where, r.op, r.line, r.bad) == ("forward", "sqrt", line, "nan")
    assert r.node.name == "SqrtBackward"
    assert "input 0: scalar, value -0.5" in str(r)
    assert "output: scalar, value nan" in str(r)
    assert "sqrt of a negative number is nan" in str(r)


def test_forward_summarizes_tensor_inputs():
    ad.anomaly(True)
    a = ad.tensor([1.0, 0.0, -2.0, 3.0, 4.0])
    r = caught(lambda: ad.log(a))[0]
    assert r.op == "log" and r.bad == "nan and -inf"
    assert "input 0 `a`: shape (5,), min -2.0 max 4.0, no nan/inf" in str(r)     # named from the caller
    assert "output: shape (5,), min 0.0 max 1.38629 (of the finite ones), 1 nan, 1 -inf of 5" in str(r)


def test_overflow_is_reported_with_its_hint():
    ad.anomaly(True)
    r = caught(lambda: ad.exp(ad.tensor(1000.0)))[0]
    assert (r.op, r.bad) == ("exp", "inf") and "overflows" in str(r)


def test_nan_that_came_in_is_not_reported_again():
    ad.anomaly(True)
    assert caught(lambda: ad.tensor(float("nan")) * 2 + ad.tensor([1.0, float("inf")])) == []


def test_forward_raise_in_the_language_points_at_the_op():
    s, out, err, e = run_session("x = tensor(0.5, requires_grad=true)\n"
                                 "anomaly(true, mode=\"raise\")\n"
                                 "y = 2 * sqrt(x - 1)\n"
                                 "print(\"not reached\")\n")
    assert isinstance(e, ad.ValueError_)
    assert (e.line, e.column) == (3, 9)                      # the caret is under sqrt(x - 1)
    assert e.report.op == "sqrt" and e.report.line == 3
    assert "anomaly: sqrt at 3:9 `sqrt(x - 1)` produced nan from finite inputs" in e.message
    assert "input 0 `x - 1`: scalar, value -0.5" in e.message
    assert "not reached" not in out and "y" not in s


def test_warn_once_per_site_in_a_session():
    s, out, err, e = run_session("anomaly(true)\n"
                                 "x = tensor(-1.0)\n"
                                 "for i in range(5) { y = log(x * (i + 1)) }\n"
                                 "z = log(x)\n")
    assert e is None
    assert err.count("warning: anomaly:") == 2
    assert "n.ad:3:25: warning: anomaly: log at 3:25 `log(x * (i + 1))` produced nan" in err
    assert "n.ad:4:5: warning: anomaly: log at 4:5 `log(x)` produced nan" in err


# -- backward ---------------------------------------------------------------------------------------

def test_backward_warns_at_the_node_with_the_gradient_in():
    u = ad.tensor([0.0, 4.0], requires_grad=True)
    line = here() + 1
    s = ad.sqrt(u).sum()
    ad.anomaly(True)
    reports = caught(s.backward)
    assert len(reports) == 1                 # not also the division inside SqrtBackward's formula
    r = reports[0]
    assert (r.where, r.op, r.line, r.input, r.bad) == ("backward", "SqrtBackward", line, 0, "inf")
    text = str(r)
    assert "grad in: shape (2,), values 1.0, 1.0" in text
    assert "grad for input 0: shape (2,), values inf, 0.25 (1 inf)" in text
    assert "input 0 (forward): shape (2,), values 0.0, 4.0" in text
    np.testing.assert_array_equal(u.grad.numpy(), [np.inf, 0.25])     # warn: the pass goes on


def test_backward_raise_changes_no_grad():
    s, out, err, e = run_session("anomaly(true, mode=\"raise\")\n"
                                 "u = tensor(0.0, requires_grad=true)\n"
                                 "v = tensor(1.0, requires_grad=true)\n"
                                 "y = sqrt(u) + v\n"
                                 "y.backward()\n")
    assert isinstance(e, ad.AutogradError)
    assert e.line == 5                                       # the backward() call, with its caret
    assert e.report.op == "SqrtBackward" and e.report.line == 4 and e.report.input == 0
    assert "anomaly: SqrtBackward at 4:5 `sqrt(u)` produced inf in the gradient for its input 0" in e.message
    assert "input 0 `u` (forward): scalar, value 0.0" in e.message
    assert s["u"].grad is None and s["v"].grad is None      # nothing was accumulated


def test_backward_of_a_nan_forward_is_not_reported_twice():
    x = ad.tensor(-1.0, requires_grad=True)
    ad.anomaly(True)
    reports = caught(lambda: ad.sqrt(x).backward())
    assert [(r.where, r.op) for r in reports] == [("forward", "sqrt")]


@pytest.mark.parametrize("shape", [(), (1,)])
def test_a_nan_from_a_non_finite_input_is_reported_by_the_backward(shape):
    # sin(inf) is nan from a non-finite input: the forward check says nothing, so the backward's
    # nan gradient from a finite one is reported, whether or not the graph still knows sin's value
    x = ad.tensor(np.full(shape, np.inf), requires_grad=True, dtype=ad.float64)
    ad.anomaly(True)
    reports = caught(lambda: (ad.sin(x) * 1.0).backward(ad.tensor(np.ones(shape))))
    assert [(r.where, r.op, r.bad) for r in reports] == [("backward", "SinBackward", "nan")]


def test_create_graph_backward_checks_nodes_not_formula_ops():
    x = ad.tensor(0.0, requires_grad=True)
    y = ad.sqrt(x)
    ad.anomaly(True)
    reports = caught(lambda: ad.grad(y, [x], create_graph=True))
    assert [(r.where, r.op) for r in reports] == [("backward", "SqrtBackward")]


# -- the switch --------------------------------------------------------------------------------------

def test_off_means_no_check():
    assert current().anomaly is None and A.get_anomaly_mode() is None
    assert caught(lambda: ad.sqrt(ad.tensor(-1.0))) == []


def test_bad_mode():
    with pytest.raises(ad.ValueError_, match="warn.*raise"):
        ad.anomaly(True, mode="loud")


def test_a_string_is_not_a_switch():
    s = ad.Session(out=io.StringIO())
    with pytest.raises(ad.TypeError_, match="takes true or false, not the string 'off'"):
        s.run('anomaly("off")')                  # a non-empty string would have turned it on
    assert s.anomaly is None and A.get_anomaly_mode() is None


def test_detect_anomaly_context_manager():
    with ad.detect_anomaly(mode="raise"):
        assert current().anomaly is not None and A.get_anomaly_mode() == "raise"
        with pytest.raises(ad.ValueError_) as info:
            ad.log(ad.tensor(0.0))
        assert info.value.report.bad == "-inf"
    assert current().anomaly is None


def test_scoped_per_session():
    s1, _, err1, _ = run_session("anomaly(true)\nsqrt(tensor(-1.0))\n")
    assert s1.anomaly == "warn" and "warning: anomaly" in err1
    assert current().anomaly is None and A.get_anomaly_mode() is None       # gone once the run ended
    s2, _, err2, _ = run_session("sqrt(tensor(-1.0))\n")
    assert s2.anomaly is None and err2 == ""
    _, _, err3, _ = run_session("y = sqrt(tensor(-1.0))\n", anomaly=True)
    assert "warning: anomaly" in err3
    s1.run("anomaly(false)")
    assert s1.anomaly is None


def test_session_rejects_a_bad_mode():
    with pytest.raises(ad.ValueError_):
        ad.Session(anomaly="loud")


# -- CLI and REPL ---------------------------------------------------------------------------------------

def cli(*args):
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    p = subprocess.run([sys.executable, "-m", "autodsl", *args], capture_output=True, text=True, env=env,
                       cwd=ROOT, timeout=120)
    assert "Traceback" not in p.stderr
    return p


def test_cli_anomaly_flags():
    src = "x = tensor(0.5, requires_grad=true)\ny = sqrt(x - 1)\nprint(\"end\")\n"
    p = cli("--anomaly", "-c", src)
    assert p.returncode == 0 and p.stdout == "end\n"
    assert p.stderr.startswith("<string>:2:5: warning: anomaly: sqrt at 2:5 `sqrt(x - 1)` produced nan")
    p = cli("--anomaly-raise", "-c", src)
    assert p.returncode == 1 and p.stdout == ""
    assert p.stderr.startswith("<string>:2:5: anomaly: sqrt at 2:5 `sqrt(x - 1)` produced nan")
    assert "    y = sqrt(x - 1)\n        ^^^^^^^^^^^" in p.stderr
    p = cli("-c", src)
    assert p.returncode == 0 and p.stderr == ""


def test_repl_anomaly_command(capsys):
    out = io.StringIO()
    r = Repl(ad.Session(out=out), out=out)
    for line in [":anomaly", ":anomaly on", "y = log(tensor(0.0))", ":anomaly raise", "y = log(tensor(0.0))",
                 ":anomaly off", "y = log(tensor(0.0))", ":anomaly sideways"]:
        r.handle(line)
    text = out.getvalue()
    err = capsys.readouterr().err
    assert text.splitlines()[:3] == ["anomaly off", "anomaly on (warn once per site)", "anomaly on (raise an error)"]
    assert "<input 5>:1:5: anomaly: log at <input 5>:1:5 `log(tensor(0.0))` produced -inf from finite inputs" in text
    assert err.count("warning: anomaly") == 1
    assert "usage: :anomaly on|off|raise" in text
    assert "anomaly(false)" in r.accepted and 'anomaly(true, mode="raise")' in r.accepted


def test_help_and_argument_errors_quote_the_string_default():
    s = ad.Session(out=io.StringIO())
    with pytest.raises(ad.TypeError_) as e:
        s.run('anomaly(mod="raise")')
    assert 'it accepts (enabled=true, mode="warn")' in e.value.message     # not mode=warn
