"""plot(f, lo, hi): the sampled values and derivatives, the refusals, the chart's text, the picture.

The derivative numbers are checked against the analytic derivative and against
central finite differences in float64.
"""
from __future__ import annotations

import contextlib
import io
import sys

import numpy as np
import pytest

import autodsl as ad
from autodsl.tools import plot as plotting


def run_lang(session, src):
    out = io.StringIO()
    session.out = out
    with contextlib.redirect_stdout(out):
        value = session.run(src)
    return value, out.getvalue()


def cubic(x):
    return x ** 3 - 2 * x


# -- the numbers ----------------------------------------------------------------------------------

def test_values_and_derivative_against_the_analytic_derivative():
    p = ad.plot(cubic, -2, 2)
    x = np.linspace(-2, 2, 201)
    np.testing.assert_array_equal(p.x.numpy(), ad.linspace(-2, 2, 201).numpy())   # (torch's, not NumPy's last bits)
    np.testing.assert_allclose(p.x.numpy(), x, rtol=0, atol=1e-15)
    np.testing.assert_allclose(p.y.numpy(), x ** 3 - 2 * x, rtol=1e-14, atol=1e-14)
    np.testing.assert_allclose(p.dy.numpy(), 3 * x ** 2 - 2, rtol=1e-14, atol=1e-14)
    assert p.dy.numpy()[0] == 10.0 and p.dy.numpy()[100] == -2.0
    assert not p.x.requires_grad and not p.dy.requires_grad


@pytest.mark.parametrize("name, fn", [
    ("tanh", ad.tanh), ("sigmoid", ad.sigmoid), ("sin", ad.sin),
    ("x*exp(-x^2)", lambda x: x * ad.exp(-x ** 2)),
    ("log(1+x^2)", lambda x: ad.log(1 + x ** 2)),
])
def test_derivative_against_central_differences(name, fn):
    p = ad.plot(fn, -1.5, 2.5, points=57)
    x = p.x.numpy()
    h = 1e-6

    def f_np(v):
        return fn(ad.tensor(v)).numpy()
    numeric = (f_np(x + h) - f_np(x - h)) / (2 * h)
    np.testing.assert_allclose(p.dy.numpy(), numeric, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(p.y.numpy(), f_np(x), rtol=1e-15)


def test_one_batched_call_plus_one_small_check():
    shapes = []

    def f(x):
        shapes.append(x.shape)
        return x * x
    ad.plot(f, 0, 1, points=50)
    assert shapes == [(50,), (3,)]           # not a Python loop per point


def test_parameters_used_by_f_keep_their_grad_and_the_trace_is_untouched():
    w = ad.tensor(3.0, requires_grad=True)
    x0 = ad.tensor(1.0, requires_grad=True)
    (w * x0).backward()
    before = ad.last_trace()
    p = ad.plot(lambda x: w * x ** 2, -1, 1, points=11)
    np.testing.assert_allclose(p.dy.numpy(), 6 * np.linspace(-1, 1, 11), atol=1e-14)
    assert w.grad.item() == 1.0                 # plot's own backward writes no .grad
    assert ad.last_trace() is before            # and is not "the last backward"


def test_works_inside_no_grad_and_for_constants_and_comparisons():
    with ad.no_grad():
        p = ad.plot(cubic, -1, 1, points=5)
    np.testing.assert_allclose(p.dy.numpy(), 3 * np.linspace(-1, 1, 5) ** 2 - 2)
    p = ad.plot(lambda x: 3, -1, 1, points=5)
    np.testing.assert_array_equal(p.y.numpy(), [3, 3, 3, 3, 3])
    np.testing.assert_array_equal(p.dy.numpy(), [0, 0, 0, 0, 0])
    p = ad.plot(lambda x: x > 0, -1, 1, points=5)
    np.testing.assert_array_equal(p.y.numpy(), [0, 0, 0, 1, 1])
    np.testing.assert_array_equal(p.dy.numpy(), [0, 0, 0, 0, 0])


def test_sign_changes_of_the_derivative_are_reported():
    p = ad.plot(cubic, -2, 2)
    line = next(ln for ln in p.text.splitlines() if "changes sign" in ln)
    roots = [float(v) for v in line.split("x = ")[1].split(", ")]
    assert roots == pytest.approx([-np.sqrt(2 / 3), np.sqrt(2 / 3)], abs=1e-3)
    # x^3 has df/dx = 0 at 0 without a change of sign: not a minimum or maximum
    assert "changes sign" not in ad.plot(lambda x: x ** 3, -1, 1).text
    # abs: -1, then 0 at x = 0, then 1
    line = next(ln for ln in ad.plot(ad.abs, -1, 1).text.splitlines() if "changes sign" in ln)
    assert line.endswith("near x = 0")


def test_points_that_are_not_finite_are_counted_and_not_drawn():
    p = ad.plot(lambda x: 1 / x, -1, 1, points=21)
    assert np.isinf(p.y.numpy()[10])
    assert "not finite (not drawn): f(x) at 1 and df/dx at 1 of the 21 points" in p.text


# -- refusals ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("fn", [
    lambda x: x - x.mean(),
    lambda x: ad.softmax(x, dim=0),
    lambda x: x * x.sum(),
    lambda x: x + (x.sum() - x.sum().detach()),     # elementwise values, mixed derivative
])
def test_non_elementwise_functions_are_refused(fn):
    with pytest.raises(ad.ValueError_, match="not elementwise"):
        ad.plot(fn, -1, 3)


def test_reductions_and_wrong_results_are_refused():
    with pytest.raises(ad.ShapeError, match=r"returned shape \(\) instead of \(201,\)"):
        ad.plot(lambda x: x.sum(), -1, 1)
    with pytest.raises(ad.TypeError_, match="forget `return`"):
        ad.plot(lambda x: None, -1, 1)
    with pytest.raises(ad.TypeError_, match="f is a tensor, so give the leaf x it is computed from"):
        ad.plot(ad.tensor(1.0) ** 3, -1, 1)
    with pytest.raises(ad.ValueError_, match="smaller to a larger"):
        ad.plot(cubic, 1, -1)
    with pytest.raises(ad.ValueError_, match="points must be between 3"):
        ad.plot(cubic, -1, 1, points=2)
    with pytest.raises(ad.TypeError_, match="lo must be a number"):
        ad.plot(cubic, "a", 1)
    with pytest.raises(ad.ValueError_, match="finite"):
        ad.plot(cubic, -ad.tensor(float("inf")), 1)


def test_language_refusals_explain_the_batched_call():
    s = ad.Session()
    with pytest.raises(ad.DSLError) as e:
        run_lang(s, "def g(x) { if x > 0 { return x } else { return -x } }\nplot(g, -1, 1)")
    assert e.value.line == 1                      # where f failed
    assert "201 elements" in e.value.message and "where(x > 0, a, b)" in e.value.message
    with pytest.raises(ad.TypeError_, match=r"give the leaf x .* plot\(f, x, -2, 2\) .* def f\(x\)"):
        run_lang(s, "x = tensor(1.0, requires_grad=true)\nplot(x^3 - 2*x, -2, 2)")


# -- a tensor f of one leaf x: one batched replay of its graph ----------------------------------------

def test_a_tensor_after_backward_gives_the_function_s_numbers_bit_for_bit():
    x = ad.tensor(0.5, requires_grad=True)
    y = x ** 3 - 2 * x
    y.backward()                                       # frees y's saved values: the replay does not mind
    p = ad.plot(y, x, -2, 2)
    q = ad.plot(cubic, -2, 2)
    for a, b in ((p.x, q.x), (p.y, q.y), (p.dy, q.dy)):
        np.testing.assert_array_equal(a.numpy(), b.numpy())
    assert p.dy.numpy()[0] == 10.0 and p.dy.numpy()[100] == -2.0
    assert x.item() == 0.5 and x.grad.item() == 3 * 0.25 - 2 and y.item() == 0.125 - 1.0
    assert "near x = -0.8165, 0.8165" in p.text


def test_a_tensor_with_other_leaves_keeps_their_values_and_grads():
    x = ad.tensor(0.0, requires_grad=True)
    w = ad.tensor(2.0, requires_grad=True)
    b = ad.tensor(-1.0, requires_grad=True)
    h = ad.tanh(x) * w + b
    p = ad.plot(h, x, -1, 3, points=41)
    xs = np.linspace(-1, 3, 41)
    np.testing.assert_allclose(p.y.numpy(), np.tanh(xs) * 2 - 1, rtol=1e-15, atol=1e-15)
    np.testing.assert_allclose(p.dy.numpy(), 2 * (1 - np.tanh(xs) ** 2), rtol=1e-14, atol=1e-15)
    assert w.grad is None and b.grad is None and x.grad is None


def test_a_tensor_in_the_language_has_its_expression_as_title():
    s = ad.Session()
    _, out = run_lang(s, "x = tensor(0.5, requires_grad=true)\ny = x^3 - 2*x\ny.backward()\nplot(y, x, -2, 2)")
    lines = out.rstrip("\n").splitlines()
    assert lines[0].strip() == "y(x) = x^3 - 2*x"
    assert "y(x)" in lines[2] and "dy/dx" in lines[3]
    assert lines[-2] == "201 points, x from -2 to 2: y(x) from -4 to 4, dy/dx from -2 to 10"


def test_a_tensor_that_is_not_elementwise_in_x_is_refused_naming_the_op():
    x = ad.tensor(0.5, requires_grad=True)
    w = ad.tensor([1.0, 2.0], requires_grad=True)
    with pytest.raises(ad.ValueError_, match="f is not elementwise in x: SumBackward at .* lies between x and f"):
        ad.plot((x * w).sum(), x, -1, 1)
    s = ad.Session()
    with pytest.raises(ad.ValueError_) as e:
        run_lang(s, "x = tensor(0.5, requires_grad=true)\nv = tensor([1.0, 2.0])\nf = (x * v) @ v\nplot(f, x, -1, 1)")
    assert e.value.message.startswith("plot(): f is not elementwise in x: MatmulBackward at 3:13 `(x * v) @ v`")
    ok = (x * w.sum()).exp()               # a reduction that does not depend on x is fine
    np.testing.assert_allclose(ad.plot(ok, x, 0, 1, points=3).y.numpy(), np.exp(3 * np.array([0, 0.5, 1])))


def test_a_tensor_refusals():
    x = ad.tensor(0.5, requires_grad=True)
    other = ad.tensor(1.0, requires_grad=True)
    with pytest.raises(ad.ValueError_, match=r"f uses the result of gt at .* plot a function instead"):
        ad.plot(ad.where(x > 0, x, -x), x, -1, 1)
    with pytest.raises(ad.ValueError_, match=r"f must have one element, but it has shape \(2,\)"):
        ad.plot(x * ad.tensor([1.0, 2.0]), x, -1, 1)
    with pytest.raises(ad.ValueError_, match="h must be a leaf that requires grad"):
        h = x * 2
        ad.plot(h * h, h, -1, 1)
    with pytest.raises(ad.ValueError_, match="f is not computed from other"):
        ad.plot(x * 2, other, -1, 1)
    with pytest.raises(ad.AutogradError, match="f has no graph"):
        ad.plot(ad.tensor(2.0) * 3, x, -1, 1)
    with pytest.raises(ad.TypeError_, match="takes a function and two numbers"):
        ad.plot(cubic, x, -1, 1)
    with pytest.raises(ad.TypeError_, match="x must be the tensor f is computed from, not a number"):
        ad.plot(x * 2, 0.5, -1, 1)


# -- the chart ---------------------------------------------------------------------------------------

def test_language_chart_has_title_labels_axes_and_fixed_size():
    s = ad.Session()
    _, out = run_lang(s, "def f(x) { return x^3 - 2*x }\nplot(f, -2, 2)")
    lines = out.rstrip("\n").splitlines()
    assert lines[0].strip() == "f(x) = x^3 - 2*x"
    assert "f(x)" in lines[2] and "df/dx" in lines[3]        # the legend
    assert lines[1].startswith("    ┌") and "└" in lines[-5]
    assert lines[-4].split() == ["-2", "-1", "0", "1", "2"]   # x ticks
    assert lines[-3].strip() == "x"
    assert lines[-2] == "201 points, x from -2 to 2: f(x) from -4 to 4, df/dx from -2 to 10"
    chart = lines[:-2]
    assert len(chart) == plotting.FIXED_SIZE[1]
    assert max(len(ln) for ln in chart) == plotting.FIXED_SIZE[0]
    assert "\x1b[" not in out                                 # no colors without a terminal


def test_names_and_title_from_the_function():
    s = ad.Session()
    _, out = run_lang(s, "def loss(w) { y = w^2\nreturn y }\nplot(loss, -1, 1, width=40, height=10)")
    assert out.splitlines()[0].strip() == "loss(w)"           # two statements: no expression text
    assert "dloss/dw" in out
    p = ad.plot(ad.tanh, -1, 1, title="tanh and its slope", width=50, height=12)
    assert p.text.splitlines()[0].strip() == "tanh and its slope"
    assert "tanh(x)" in p.text and "dtanh/dx" in p.text
    assert max(len(ln) for ln in p.text.splitlines()[:12]) == 50
    assert len(p.text.splitlines()) == 12 + 1


def test_colors_only_on_a_terminal(monkeypatch):
    monkeypatch.setattr(plotting, "_on_terminal", lambda: True)
    monkeypatch.setattr(plotting, "_terminal_size", lambda: (60, 15))
    monkeypatch.delenv("NO_COLOR", raising=False)
    p = ad.plot(cubic, -2, 2)
    assert "\x1b[" in str(p) and "\x1b[" not in p.text
    assert len(p.text.splitlines()) == 15 + 2
    monkeypatch.setenv("NO_COLOR", "1")
    assert "\x1b[" not in str(ad.plot(cubic, -2, 2))


# -- the picture -------------------------------------------------------------------------------------

def test_picture_needs_matplotlib_with_a_clear_message(monkeypatch, tmp_path):
    monkeypatch.setitem(sys.modules, "matplotlib", None)      # as if not installed
    with pytest.raises(ad.RuntimeError_, match=r'pip install "autodsl\[plot\]"'):
        ad.plot(cubic, -1, 1, file=str(tmp_path / "f.svg"))
    assert not (tmp_path / "f.svg").exists()


def test_picture_format_and_permission_are_checked(tmp_path):
    with pytest.raises(ad.ValueError_, match=r"\.svg, \.png, \.pdf"):
        ad.plot(cubic, -1, 1, file=str(tmp_path / "f.txt"))
    s = ad.Session(files=False)
    with pytest.raises(ad.RuntimeError_, match="may not write files"):
        run_lang(s, f"plot(sin, -1, 1, file=\"{tmp_path / 'f.svg'}\")")


def test_picture_is_written_with_matplotlib(tmp_path, monkeypatch):
    pytest.importorskip("matplotlib", reason="matplotlib is an optional extra: pip install \"autodsl[plot]\"")
    monkeypatch.chdir(tmp_path)
    s = ad.Session()
    _, out = run_lang(s, 'def f(x) { return x^3 - 2*x }\np = plot(f, -2, 2, file="f.svg")\np.file\n'
                         'plot(tanh, -1, 1, file="t.png", width=40, height=10)')
    svg = (tmp_path / "f.svg").read_text()
    assert svg.lstrip().startswith("<?xml") and "<svg" in svg
    assert out.splitlines()[0] == "f.svg"
    assert "wrote t.png" in out
    assert (tmp_path / "t.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert not list(tmp_path.glob(".*partial"))
