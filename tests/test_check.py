"""check(), gradcheck(), gradgradcheck() and the REPL's :check: the numbers in the table,
pass on correct derivatives, FAIL (False / AutogradError) on wrong ones."""
from __future__ import annotations

import io
import re
import warnings

import numpy as np
import pytest

import autodsl as ad
from autodsl.cli.repl import Repl


# ---- functions with right and wrong gradients ------------------------------------------------------

def cube(x):
    return x ** 3


def detached_square(x):
    """x * x with one factor detached: the value is x^2, the gradient says x instead of 2x."""
    return x * x.detach()


def cube_with_frozen_slope(x):
    """x^3 whose first derivative 3x^2 is right but computed from detached values, so the
    second derivative (backward of the backward) is 0 instead of 6x."""
    d = x.detach()
    return d ** 3 + 3 * d ** 2 * (x - d)


def two_in_two_out(a, b):
    return [a * b, (ad.sin(a) * b).sum()]


# ---- gradcheck --------------------------------------------------------------------------------------

def test_gradcheck_passes_on_correct_functions():
    x = ad.tensor([0.5, -1.5, 2.0], requires_grad=True)
    assert ad.gradcheck(cube, x) is True
    assert ad.gradcheck(cube, [x]) is True
    b = ad.tensor([1.0, 0.25, -0.5], requires_grad=True)
    assert ad.gradcheck(two_in_two_out, [x, b]) is True
    assert ad.gradcheck(cube_with_frozen_slope, x) is True       # first derivative right


def test_gradcheck_fails_on_a_wrong_gradient_and_says_where():
    x = ad.tensor([1.0, 2.0, 3.0], requires_grad=True)
    assert ad.gradcheck(detached_square, x, raise_exception=False) is False
    with pytest.raises(ad.AutogradError) as e:
        ad.gradcheck(detached_square, [x])
    msg = e.value.message
    # the worst entry: d output[2] / d x[2], analytic x = 3, numeric 2x = 6
    assert "output 0 with respect to input 0 (x)" in msg
    assert "d output[2] / d x[2]: analytic 3.0, numeric 6.0" in msg
    assert "3 of 9 entries" in msg


def test_gradcheck_agrees_with_torch_on_the_verdicts():
    torch = pytest.importorskip("torch")
    x = [0.5, -1.5, 2.0]
    tx = torch.tensor(x, dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(lambda t: t ** 3, (tx,))
    assert not torch.autograd.gradcheck(lambda t: t * t.detach(), (tx,), raise_exception=False)
    assert torch.autograd.gradgradcheck(cube_with_frozen_slope, (tx,), raise_exception=False) is False
    ax = ad.tensor(x, requires_grad=True)
    assert ad.gradcheck(cube, ax) and not ad.gradcheck(detached_square, ax, raise_exception=False)
    assert ad.gradgradcheck(cube_with_frozen_slope, ax, raise_exception=False) is False


def test_gradcheck_runs_on_float64_copies_and_leaves_inputs_alone():
    x = ad.tensor([0.5, 1.5], dtype=ad.float32, requires_grad=True)
    seen = []

    def f(t):
        seen.append(t.dtype.name)
        return ad.exp(t)

    assert ad.gradcheck(f, x)
    assert set(seen) == {"float64"}
    assert x.dtype.name == "float32" and x.version == 0 and x.grad is None
    np.testing.assert_array_equal(x.numpy(), np.array([0.5, 1.5], dtype=np.float32))


def test_gradcheck_only_checks_inputs_that_require_grad_and_passes_others_through():
    x = ad.tensor([1.0, 2.0], requires_grad=True)
    c = ad.tensor([3.0, 4.0])                  # no grad: not checked, but given to fn
    assert ad.gradcheck(lambda a, k, s: a * k * s, [x, c, 2.0])
    with pytest.raises(ad.ValueError_, match="no input requires grad"):
        ad.gradcheck(cube, c)
    with pytest.raises(ad.TypeError_, match="needs a function"):
        ad.gradcheck(x, x)


def test_gradcheck_of_a_language_function_names_its_parameter():
    out = io.StringIO()
    s = ad.Session(out=out)
    s.run("def good(w) { return w^3 }\n"
          "def bad(w) { return w * w.detach() }\n"
          "x = tensor([1.0, 2.0], requires_grad=true)\n"
          "gradcheck(good, [x])\n"
          "gradcheck(bad, x, raise_exception=false)\n")
    assert out.getvalue().splitlines() == ["true", "false"]
    with pytest.raises(ad.AutogradError) as e:
        s.run("gradcheck(bad, x)")
    assert "input 0 (w)" in e.value.message and "d output[1] / d w[1]: analytic 2.0, numeric 4.0" in e.value.message
    assert e.value.line == 1                      # the error carries its position in the script


# ---- gradgradcheck -----------------------------------------------------------------------------------

def test_gradgradcheck_passes_on_correct_second_derivatives():
    x = ad.tensor([0.5, -1.5, 2.0], requires_grad=True)
    assert ad.gradgradcheck(cube, x) is True
    assert ad.gradgradcheck(lambda t: ad.tanh(t).sum() * t, x) is True
    b = ad.tensor([1.0, 0.25, -0.5], requires_grad=True)
    assert ad.gradgradcheck(two_in_two_out, [x, b]) is True
    go = [ad.ones(3), ad.tensor(2.0)]
    assert ad.gradgradcheck(two_in_two_out, [x, b], grad_outputs=go) is True


def test_gradgradcheck_fails_when_only_the_second_derivative_is_wrong():
    x = ad.tensor([1.0, 2.0, 3.0], requires_grad=True)
    assert ad.gradcheck(cube_with_frozen_slope, x)
    assert ad.gradgradcheck(cube_with_frozen_slope, x, raise_exception=False) is False
    with pytest.raises(ad.AutogradError) as e:
        ad.gradgradcheck(cube_with_frozen_slope, x, grad_outputs=ad.ones(3))
    # d grad_x[2] / d x[2]: analytic 0 (the slope was frozen), numeric 6 * 3 * 1 = 18
    assert re.search(r"d grad_x\[2\] / d x\[2\]: analytic 0\.0, numeric 18\.0", e.value.message)


def test_gradgradcheck_checks_its_grad_outputs_argument():
    x = ad.tensor([1.0, 2.0], requires_grad=True)
    with pytest.raises(ad.ValueError_, match=r"grad_outputs\[0\] must be a tensor of shape \(2,\)"):
        ad.gradgradcheck(cube, x, grad_outputs=ad.ones(3))


# ---- check: the table -------------------------------------------------------------------------------

X = [1.0, 2.0, 3.0]
Y = [2.0, 4.0, 6.5]


def regression_loss(w, b):
    x, y = ad.tensor(X), ad.tensor(Y)
    return ((w * x + b - y) ** 2).mean()


def test_check_table_numbers_for_a_regression_loss():
    w, b = ad.tensor(0.5, requires_grad=True), ad.tensor(0.1, requires_grad=True)
    r = ad.check(regression_loss, [w, b])
    # by hand: r_i = w x_i + b - y_i; dL/dw = 2/3 sum r_i x_i, dL/db = 2/3 sum r_i
    res = [0.5 * x + 0.1 - y for x, y in zip(X, Y)]
    dw = 2 / 3 * sum(r_ * x for r_, x in zip(res, X))
    db = 2 / 3 * sum(res)
    assert [row.name for row in r.rows] == ["w", "b"]          # the function's parameter names
    assert r.rows[0].analytic == pytest.approx(dw, rel=1e-14) and dw == pytest.approx(-14.6)
    assert r.rows[1].analytic == pytest.approx(db, rel=1e-14) and db == pytest.approx(-6.1333333333)
    for row in r.rows:
        assert row.numeric == pytest.approx(row.analytic, rel=1e-8)
        assert row.abs_err == abs(row.analytic - row.numeric) < 1e-7
        assert row.rel_err == pytest.approx(row.abs_err / max(abs(row.analytic), abs(row.numeric)))
        assert row.ok and row.index == ()
    assert r.ok and bool(r) and r.failures == []
    assert r.worst is max(r.rows, key=lambda row: row.abs_err / (1e-5 + 1e-3 * abs(row.numeric)))
    assert r.value == pytest.approx(sum(x * x for x in res) / 3)
    text = str(r)
    lines = text.splitlines()
    assert lines[0] == ("check regression_loss = 11.46: analytic (backward) vs numeric "
                        "(central differences, eps=1e-06, float64)")
    assert lines[1].split() == ["input", "index", "analytic", "numeric", "abs", "err", "rel", "err"]
    assert lines[2].split()[:4] == ["w", "-", "-14.6", "-14.6"]
    assert lines[3].split()[:4] == ["b", "-", "-6.1333333", "-6.1333333"]
    assert sum("<- worst" in ln for ln in lines) == 1
    assert lines[-1].startswith("PASS: |analytic - numeric| <= atol + rtol*|numeric| for all 2 elements "
                                "(atol=1e-05, rtol=0.001); worst ")


def test_check_marks_wrong_elements_and_the_worst():
    x = ad.tensor([1.0, -2.0, 3.0], requires_grad=True)
    r = ad.check(lambda t: detached_square(t).sum(), x, names=["x"])
    assert not r.ok and not bool(r)
    assert [row.analytic for row in r.rows] == [1.0, -2.0, 3.0]              # what backward says: x
    assert [row.numeric for row in r.rows] == pytest.approx([2.0, -4.0, 6.0])  # the truth: 2x
    assert [row.index for row in r.rows] == [(0,), (1,), (2,)]
    assert r.worst.index == (2,) and len(r.failures) == 3
    assert r.rows[2].rel_err == pytest.approx(0.5)
    lines = str(r).splitlines()
    assert lines[4].split() == ["x", "[2]", "3.0", "6.0", "3.0e+00", "5.0e-01", "FAIL", "<-", "worst"]
    assert lines[-1] == ("FAIL: |analytic - numeric| <= atol + rtol*|numeric| fails for 3 of 3 elements "
                         "(atol=1e-05, rtol=0.001); worst x[2]: analytic 3.0, numeric 6.0")


def test_check_with_a_function_of_no_arguments_nudges_the_inputs_in_place_and_restores_them():
    w = ad.tensor([[0.5, -1.0], [2.0, 0.25]], requires_grad=True)
    b = ad.tensor([0.1, -0.2], requires_grad=True)
    x = ad.tensor([1.5, -0.5])
    loss_graph = (w @ x + b).tanh().sum()          # a graph that saved w: must stay usable
    before_w, before_b = w.numpy().copy(), b.numpy().copy()

    def loss():
        return (w @ x + b).tanh().sum()

    r = ad.check(loss, [w, b], names=["w", "b"])
    assert r.ok and len(r.rows) == 6
    assert [row.element for row in r.rows] == ["w[0, 0]", "w[0, 1]", "w[1, 0]", "w[1, 1]", "b[0]", "b[1]"]
    h = np.tanh(np.array([[0.5, -1.0], [2.0, 0.25]]) @ np.array([1.5, -0.5]) + [0.1, -0.2])
    dh = 1 - h ** 2
    np.testing.assert_allclose([row.analytic for row in r.rows[4:]], dh, rtol=1e-14)
    np.testing.assert_allclose([row.analytic for row in r.rows[:4]], np.outer(dh, [1.5, -0.5]).ravel(),
                               rtol=1e-14)
    np.testing.assert_array_equal(w.numpy(), before_w)
    np.testing.assert_array_equal(b.numpy(), before_b)
    assert w.version == 0 and b.version == 0 and w.grad is None and b.grad is None
    loss_graph.backward()                           # no version error: nothing was written
    np.testing.assert_allclose(b.grad.numpy(), dh, rtol=1e-14)


def test_check_summarizes_large_inputs():
    ad.seed(0)
    w = ad.randn(10, 10, requires_grad=True)
    r = ad.check(lambda: (ad.tanh(w) * w).sum(), w, names=["w"])
    assert r.ok and len(r.rows) == 100
    lines = str(r).splitlines()
    shown = [ln for ln in lines[2:-1] if ln.startswith("w ")]
    assert 3 <= len(shown) <= 4 and shown[:3] == [ln for ln in lines[2:5]]
    assert "  ..." in lines
    assert any(ln.startswith("  (showing ") and "of 100 elements" in ln for ln in lines)
    assert any("<- worst" in ln for ln in shown)
    bad = ad.check(lambda: (w * w.detach()).sum(), w, names=["w"])
    assert len(bad.failures) == 100
    assert sum("FAIL" in ln for ln in str(bad).splitlines()[2:-1]) <= 3 + 1 + 3


def test_check_float32_inputs():
    w = ad.tensor([0.5, -1.25], dtype=ad.float32, requires_grad=True)
    # a function of the inputs: run on float64 copies, strict defaults
    r = ad.check(lambda t: (t ** 3).sum(), w)
    assert r.ok and r.dtype == "float64" and r.eps == 1e-6
    # a function of no arguments: float32 in place, with a warning and looser defaults
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        r32 = ad.check(lambda: (w ** 3).sum(), w, names=["w"])
    assert any("w is float32" in str(c.message) for c in caught)
    assert r32.ok and r32.dtype == "float32" and (r32.eps, r32.atol, r32.rtol) == (1e-3, 1e-3, 1e-2)
    np.testing.assert_allclose([row.numeric for row in r32.rows], [0.75, 4.6875], rtol=1e-3)
    np.testing.assert_array_equal(w.numpy(), np.array([0.5, -1.25], dtype=np.float32))


def test_check_refuses_what_it_cannot_check():
    w = ad.tensor([1.0, 2.0], requires_grad=True)
    with pytest.raises(ad.TypeError_, match="takes 2 arguments but 1 input was given"):
        ad.check(lambda a, b: a.sum(), [w])
    with pytest.raises(ad.ValueError_, match=r"shape \(2,\).*\.sum\(\)"):
        ad.check(lambda a: a * 2, [w])
    c = ad.tensor([1.0, 2.0])
    with pytest.raises(ad.AutogradError, match="does not require grad"):
        ad.check(lambda: (c * 2).sum(), [c], names=["c"])
    e = ad.tensor(1.0, requires_grad=True)
    ex = e.expand(3)
    with pytest.raises(ad.AutogradError, match="clone\\(\\) it first"):
        ad.check(lambda: (ex * 2).sum(), [ex], names=["ex"])
    with pytest.raises(ad.ValueError_, match="eps"):
        ad.check(lambda a: a.sum(), [w], eps=0)


# ---- check(f) of a tensor f: central differences by replaying its graph ------------------------

SEED = ("x = tensor(2.0)\nw1 = tensor(0.5, requires_grad=true)\nw2 = tensor(-1.5, requires_grad=true)\n"
        "b = tensor(1.0, requires_grad=true)\nf = (w2*(w1*x^2+b))^3\n")


def test_check_of_a_tensor_after_backward_has_the_seed_numbers():
    out = io.StringIO()
    s = ad.Session(out=out)
    s.run(SEED + "f.backward()\nr = check(f, [w1, b])")
    r = s.namespace["r"]
    assert r.ok and r.replayed and r.dtype == "float64" and r.value == -91.125
    assert [(row.name, row.analytic) for row in r.rows] == [("w1", -364.5), ("b", -91.125)]
    for row in r.rows:
        assert row.numeric == pytest.approx(row.analytic, rel=1e-8)
    text = str(r).splitlines()
    assert text[0] == ("check f = -91.125: analytic (backward) vs numeric (central differences of replays of "
                       "f's graph, eps=1e-06, float64)")
    assert text[-1].startswith("PASS")
    # nothing was touched: values, versions and the gradients of the user's backward
    s.run("ok = w1.item() == 0.5 and b.item() == 1.0 and w1.version == 0 and w1.grad.item() == -364.5")
    assert s.namespace["ok"] is True


def test_check_of_a_tensor_before_backward_and_of_tensors_and_intermediates():
    w = ad.tensor([1.0, -2.0, 3.0], requires_grad=True)
    b = ad.tensor(0.5, requires_grad=True)
    h = w * b
    loss = (ad.tanh(h) ** 2).sum() + b ** 2
    r = ad.check(loss, [w, b])
    t = np.tanh(np.array([1.0, -2.0, 3.0]) * 0.5)
    np.testing.assert_allclose([row.analytic for row in r.rows],
                               list(2 * t * (1 - t ** 2) * 0.5) + [float((2 * t * (1 - t ** 2) * [1, -2, 3]).sum() + 1)])
    assert r.ok and [row.element for row in r.rows] == ["w[0]", "w[1]", "w[2]", "b"]
    assert w.grad is None and loss.grad_fn is not None
    loss.backward()                             # the graph stays usable: check replays it
    np.testing.assert_array_equal(w.grad.numpy(), [row.analytic for row in r.rows[:3]])
    rh = ad.check(loss, [h])                    # an intermediate: the graph is cut there
    np.testing.assert_allclose([row.analytic for row in rh.rows], 2 * t * (1 - t ** 2))
    assert rh.ok
    unused = ad.tensor(1.0, requires_grad=True)
    ru = ad.check(loss, [b, unused], names=["b", "u"])
    assert ru.ok and (ru.rows[1].analytic, ru.rows[1].numeric) == (0.0, 0.0)


def test_check_of_a_float32_tensor_runs_in_float64_without_a_warning():
    w = ad.tensor([0.5, -1.25], dtype=ad.float32, requires_grad=True)
    y = (w ** 3).sum()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        r = ad.check(y, [w])
    assert r.ok and r.dtype == "float64"
    np.testing.assert_allclose([row.numeric for row in r.rows], [0.75, 4.6875], rtol=1e-7)


def test_check_of_a_tensor_says_what_the_replay_keeps_fixed_or_changed():
    w = ad.tensor([1.0, -2.0], requires_grad=True)
    y = (w * w.detach()).sum()        # backward and the replay agree: w.detach() is a constant to both
    r = ad.check(y, [w])
    assert r.ok and [row.analytic for row in r.rows] == [1.0, -2.0]
    assert r.notes[0].startswith("note: `y` uses a detach() or .data of `w` (an input of MulBackward at ")
    assert "check the function that computes y" in r.notes[0]
    z = ad.where(w > 0, w ** 2, -w).sum()       # a comparison: right away from its boundary, no note
    rz = ad.check(z, w)
    assert rz.ok and [row.analytic for row in rz.rows] == [2.0, -1.0] and not rz.notes
    with ad.no_grad():
        w -= 1.0                                 # y was computed before this update
    ry = ad.check((w ** 2).sum(), [w])
    assert not ry.notes
    x = ad.tensor(3.0, requires_grad=True)
    f = x ** 2
    with ad.no_grad():
        x += 1.0
    rf = ad.check(f, [x])
    assert rf.rows[0].analytic == 8.0 and rf.value == 16.0
    assert rf.notes == ["note: f's graph at the inputs' current values gives 16.0, not f's value 9.0: a tensor "
                        "it was computed from changed since (an in-place update); the check is at the current "
                        "values"]


def test_check_of_a_tensor_refuses_what_it_cannot_check():
    w = ad.tensor([1.0, 2.0], requires_grad=True)
    v = ad.tensor(1.0, requires_grad=True)
    c = ad.tensor(3.0)
    with pytest.raises(ad.ValueError_, match="check\\(\\): v is a leaf"):
        ad.check(v, [v])
    with pytest.raises(ad.AutogradError, match="check\\(\\): f has no graph"):
        ad.check(c * 2, [c])
    f = (w * c).sum()
    with pytest.raises(ad.AutogradError, match="c does not require grad, so f's graph holds its values"):
        ad.check(f, [c])
    with pytest.raises(ad.ValueError_, match=r"shape \(2,\)"):
        ad.check(w * c, [w])
    with pytest.raises(ad.TypeError_, match="needs a function or a tensor"):
        ad.check(3.0, [w])


def test_check_in_a_script_names_inputs_by_their_variables():
    out = io.StringIO()
    s = ad.Session(out=out)
    s.run("x = tensor([1.0, 2.0, 3.0])\n"
          "w1 = tensor([0.5, -0.5, 1.0], requires_grad=true)\n"
          "b = tensor(0.25, requires_grad=true)\n"
          "def loss() { return (relu(w1 * x + b) ^ 2).sum() }\n"
          "check(loss, [w1, b])\n")
    lines = out.getvalue().splitlines()
    assert lines[0].startswith("check loss = ")
    assert [ln.split()[0] for ln in lines[2:6]] == ["w1", "w1", "w1", "b"]
    # relu(0.5 - 0.75... ) by hand: z = w1*x + b = [0.75, -0.75, 3.25]; dL/dw1 = 2 relu(z) x, dL/db = sum 2 relu(z)
    assert lines[2].split()[1:3] == ["[0]", "1.5"]
    assert lines[3].split()[1:3] == ["[1]", "0.0"]
    assert lines[4].split()[1:3] == ["[2]", "19.5"]
    assert lines[5].split()[1:3] == ["-", "8.0"]
    assert lines[-1].startswith("PASS")


def test_check_from_python_names_inputs_by_the_callers_variables():
    # from Python the table used to say "input 0", "input 1" for a function of no arguments
    w1 = ad.tensor([0.5, -0.5], requires_grad=True)
    bias = ad.tensor(0.25, requires_grad=True)

    def loss():
        return ((w1 * 2 + bias) ** 2).sum()

    r = ad.check(loss, [w1, bias])
    assert r.ok
    assert [row.element for row in r.rows] == ["w1[0]", "w1[1]", "bias"]
    np.testing.assert_allclose([row.analytic for row in r.rows], [5.0, -3.0, 1.0], rtol=1e-14)   # 4z, sum 2z; z = [1.25, -0.75]
    lines = str(r).splitlines()
    assert [ln.split()[0] for ln in lines[2:5]] == ["w1", "w1", "bias"]


def test_check_does_not_print_traces_or_replace_the_last_one():
    out = io.StringIO()
    s = ad.Session(out=out, trace=True)
    s.run("w = tensor(2.0, requires_grad=true)\n(w^2).backward()\n")
    last = s.last_trace
    n = len(out.getvalue())
    s.run("def f() { return w^3 }\ncheck(f, w)\n")
    assert "backward trace" not in out.getvalue()[n:]
    assert s.last_trace is last


# ---- :check in the REPL -------------------------------------------------------------------------------

def run_repl(*inputs):
    out = io.StringIO()
    r = Repl(ad.Session(out=out), out=out)
    for text in inputs:
        r.handle(text)
    return r, out.getvalue()


def test_repl_check_command():
    _, text = run_repl("w = tensor([1.0, -2.0], requires_grad=true)",
                       "b = tensor(0.5, requires_grad=true)",
                       "def loss() { return (relu(w) * b).sum() + b^2 }",
                       ":check loss w b")
    lines = text.splitlines()
    assert lines[0] == "check loss = 0.75: analytic (backward) vs numeric (central differences, eps=1e-06, float64)"
    assert [ln.split()[:4] for ln in lines[2:5]] == [["w", "[0]", "0.5", "0.5"], ["w", "[1]", "0.0", "0.0"],
                                                      ["b", "-", "2.0", "2.0"]]
    assert lines[-1].startswith("PASS")


def test_repl_check_command_with_a_tensor_after_backward():
    _, text = run_repl("x = tensor(2.0)", "w1 = tensor(0.5, requires_grad=true)",
                       "w2 = tensor(-1.5, requires_grad=true)", "b = tensor(1.0, requires_grad=true)",
                       "f = (w2*(w1*x^2+b))^3", "f.backward()", ":check f w1 b")
    lines = text.splitlines()
    assert lines[0] == ("check f = -91.125: analytic (backward) vs numeric (central differences of replays of "
                        "f's graph, eps=1e-06, float64)")
    assert [ln.split()[:4] for ln in lines[2:4]] == [["w1", "-", "-364.5", "-364.5"],
                                                      ["b", "-", "-91.125", "-91.125"]]
    assert lines[-1].startswith("PASS") and "Traceback" not in text


def test_repl_check_usage_errors_and_help():
    r, text = run_repl(":check", "x = tensor(1.0, requires_grad=true)", ":check x x", ":che nothing x")
    lines = text.splitlines()
    assert lines[0].startswith("usage: :check f w1 b")
    assert "x is a leaf (made directly, not computed from other tensors)" in lines[1]
    assert "`nothing` is not defined" in text
    _, help_text = run_repl(":help commands")
    assert any(ln.strip().startswith(":check f w1 b") for ln in help_text.splitlines())


def test_repl_check_warns_about_float32_without_a_traceback():
    _, text = run_repl("w = tensor([0.5, 1.0], dtype=float32, requires_grad=true)",
                       "def f() { return (w^2).sum() }", ":check f w")
    assert text.startswith("warning: check(): w is float32")
    assert "PASS" in text


def test_completion_offers_check():
    from prompt_toolkit.document import Document

    from autodsl.cli.complete import AutodslCompleter
    session = ad.Session()
    r = Repl(session)
    c = AutodslCompleter(lambda: session, lambda: r.commands, registry=ad.REGISTRY)
    got = [x.text for x in c.get_completions(Document(":ch", 3), None)]
    assert got == [":check"]
    session.run("def loss() { return 1 }")
    got = [x.text for x in c.get_completions(Document(":check lo", 9), None)]
    assert "loss" in got


# ---- on the GPU (skipped without one) ------------------------------------------------------------------

def _gpu_reason():
    try:
        ad.zeros(1, device="cuda")
    except ad.DeviceError as e:
        return e.message
    return None


@pytest.mark.cuda
@pytest.mark.skipif(_gpu_reason() is not None, reason="no GPU")
def test_checks_and_the_functional_api_on_the_gpu():
    w = ad.tensor([0.5, -1.0], device="cuda", dtype=ad.float64, requires_grad=True)
    r = ad.check(lambda t: (t ** 3).sum(), w)
    assert r.ok and [row.analytic for row in r.rows] == pytest.approx([0.75, 3.0])
    assert ad.gradcheck(lambda t: t * t, w) and not ad.gradcheck(detached_square, w, raise_exception=False)
    assert ad.gradgradcheck(cube, w)
    J = ad.jacobian(lambda t: t ** 2, w)
    assert J.device == "cuda"
    np.testing.assert_allclose(J.numpy(), np.diag([1.0, -2.0]))
    w32 = ad.tensor([0.5, -1.0], device="cuda", dtype=ad.float32, requires_grad=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        r32 = ad.check(lambda: (w32 ** 2).sum(), w32, names=["w32"])
    assert r32.ok and w32.version == 0
    np.testing.assert_array_equal(w32.numpy(), np.array([0.5, -1.0], dtype=np.float32))


def test_checks_do_not_replace_the_backward_that_why_explains():
    s = ad.Session(out=io.StringIO())
    s.run("w = tensor([-1.0, 2.0], requires_grad=true)\nv = tensor(1.0, requires_grad=true)\n"
          "loss = relu(w).sum()\nloss.backward()\n"
          "def dbl(g) { return g * 2 }\ndef l() { return (w * v).sum() }\n", "t.ad")
    for call in ("check(dbl, [v])", "check(l, [w, v])", "gradcheck(dbl, [v])", "gradgradcheck(dbl, [v])",
                 "plot(dbl, 0, 1)"):
        s.run(f"r = {call}", "t.ad")
        r = s.run("why(w)", "t.ad")
        assert r.reason == "partly_zero" and r.label == "ReluBackward#1", call   # still loss.backward()
        assert "(from `loss`, at 4:1 `loss.backward()`)" in str(r), call
    assert s["w"].grad.tolist() == [0.0, 1.0] and s["v"].grad is None


def test_an_input_backward_cannot_reach_but_that_moves_f_gets_a_note():
    s = ad.Session(out=io.StringIO())
    s.run("w = tensor([1.0, 2.0], requires_grad=true)\nb = tensor(1.0, requires_grad=true)\n"
          "def loss() { return (w^2).sum() }\n", "t.ad")
    r = s.run("check(loss, [w[0]])", "t.ad")          # a slice: a new tensor that shares w's storage
    assert not r.ok and r.rows[0].analytic == 0.0 and r.rows[0].numeric == pytest.approx(2.0, rel=1e-6)
    assert str(r).splitlines()[-1].startswith("note: backward does not reach input 0: loss() does not use "
                                              "that tensor itself")
    assert "w[0] is a new tensor (check w itself)" in str(r)
    assert s["w"].tolist() == [1.0, 2.0]
    r = s.run("check(loss, [w, b])", "t.ad")          # b is unused: 0 = 0, no note
    assert r.ok and r.notes == [] and str(r).splitlines()[-1].startswith("PASS")
