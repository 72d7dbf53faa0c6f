"""GradBench's ode, det, ba, saddle and particle evals through the autodsl tool, in-process.

Each eval's language script and conversion (benchmarks/gradbench/NAME.ad and NAME.py)
answer evaluate messages at small sizes; the outputs are checked against NumPy
ports of GradBench's C++ reference code, determinants from numpy.linalg, central
differences, and the expected values the saddle and particle evals carry. The
responses are checked with GradBench's protocol types, so the test needs pydantic
and GradBench's Python package from ../shared/gradbench, and skips without them.
"""
import sys
from pathlib import Path

import numpy as np
import pytest

GRADBENCH_PY = Path(__file__).resolve().parents[2] / "shared" / "gradbench" / "python" / "gradbench"

pytest.importorskip("pydantic")
if GRADBENCH_PY.is_dir() and str(GRADBENCH_PY) not in sys.path:
    sys.path.append(str(GRADBENCH_PY))
gb_eval = pytest.importorskip("gradbench.eval")

import autodsl
from benchmarks.gradbench.adapter import Tool


@pytest.fixture(scope="module")
def tool():
    t = Tool()
    for module in ("ode", "det", "ba", "saddle", "particle"):
        assert t.handle({"id": 0, "kind": "define", "module": module})["success"], module
    return t


def evaluate(tool, module, function, input):
    r = tool.handle({"id": 7, "kind": "evaluate", "module": module, "function": function,
                     "input": input | {"min_runs": 1, "min_seconds": 0}})
    assert r["success"], r.get("error")
    response = gb_eval.EvaluateResponse.model_validate(r)
    assert [t.name for t in response.timings] == ["evaluate"]
    return r["output"]


def central_difference(f, x, eps=1e-6):
    g = np.zeros_like(x)
    for i in range(x.size):
        e = np.zeros_like(x)
        e.flat[i] = eps
        g.flat[i] = (f(x + e) - f(x - e)) / (2 * eps)
    return g


# -- ode -------------------------------------------------------------------------------

def ode_reference(x, s):
    """cpp/gradbench/evals/ode.hpp's primal in NumPy."""
    def fun(y):
        return np.concatenate([x[:1], x[1:] * y[:-1]])
    h, y = 2.0 / s, np.zeros_like(x)
    for _ in range(s):
        k1 = fun(y)
        k2 = fun(y + h * k1 / 2)
        k3 = fun(y + h * k2 / 2)
        k4 = fun(y + h * k3)
        y = y + h * (k1 + 2 * k2 + 2 * k3 + k4) / 6
    return y


@pytest.mark.parametrize("n, s", [(1, 1), (2, 3), (7, 5), (40, 10)])
def test_ode_primal_and_gradient(tool, n, s):
    x = np.random.default_rng(n).random(n) + 0.5
    inp = {"x": x.tolist(), "s": s}
    np.testing.assert_allclose(evaluate(tool, "ode", "primal", inp), ode_reference(x, s),
                               rtol=1e-13, atol=1e-15)
    np.testing.assert_allclose(evaluate(tool, "ode", "gradient", inp),
                               central_difference(lambda v: ode_reference(v, s)[-1], x),
                               rtol=1e-6, atol=1e-9)


def test_ode_gradient_approaches_the_golden_formula(tool):
    # tools/manual/ode.cpp's gradient is the exact solution's: y_{n-1}(2) = x_0 prod_i x_i 2/(i+1)
    x = np.array([0.9, 0.7, 1.3, 0.4])
    y = 2 * x[0] * np.prod(x[1:] * 2 / np.arange(2, 5))
    np.testing.assert_allclose(evaluate(tool, "ode", "gradient", {"x": x.tolist(), "s": 200}),
                               y / x, rtol=1e-8)


# -- det -------------------------------------------------------------------------------

@pytest.mark.parametrize("ell", [1, 2, 3, 4, 5, 7])
def test_det_primal_and_gradient(tool, ell):
    A = np.random.default_rng(ell).random((ell, ell))
    inp = {"A": A.reshape(-1).tolist(), "ell": ell}
    primal = evaluate(tool, "det", "primal", inp)
    assert isinstance(primal, float)
    np.testing.assert_allclose(primal, np.linalg.det(A), rtol=1e-12, atol=1e-14)
    # the gradient of det A is its cofactor matrix, det(A) inv(A)^T
    np.testing.assert_allclose(evaluate(tool, "det", "gradient", inp),
                               (np.linalg.det(A) * np.linalg.inv(A).T).reshape(-1),
                               rtol=1e-10, atol=1e-12)


def test_det_of_a_singular_matrix(tool):
    # rows 0 and 2 equal: the determinant is 0 and the gradient still the cofactors
    A = np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.5], [1.0, 2.0, 3.0]])
    inp = {"A": A.reshape(-1).tolist(), "ell": 3}
    assert evaluate(tool, "det", "primal", inp) == pytest.approx(0.0, abs=1e-14)
    cof = np.array([[np.linalg.det(np.delete(np.delete(A, i, 0), j, 1)) * (-1) ** (i + j)
                     for j in range(3)] for i in range(3)])
    np.testing.assert_allclose(evaluate(tool, "det", "gradient", inp), cof.reshape(-1),
                               rtol=1e-12, atol=1e-12)


# -- ba --------------------------------------------------------------------------------

# the first camera, point, weight and feature of ADBench's ba1 (evals/ba/data)
BA_CAM = [-0.758453, -1.109613, -0.845551, 34.556073, 39.676747, 53.881673, 419.194514,
          5.864426, -8.518870, 0.087812, 0.002739]
BA_X = [7.203245, 0.001144, 3.023326]
BA_W = 0.417022
BA_FEAT = [271.760969, 834.209256]


def ba_reproj(cam, X, w, feat):
    """cpp/gradbench/evals/ba.hpp's computeReprojError for one observation, in NumPy."""
    rot, C = cam[0:3], cam[3:6]
    Xo = X - C
    theta = np.sqrt(rot @ rot)
    axis = rot / theta
    Xcam = (Xo * np.cos(theta) + np.cross(axis, Xo) * np.sin(theta)
            + axis * (axis @ Xo) * (1 - np.cos(theta)))
    proj = Xcam[:2] / Xcam[2]
    rsq = proj @ proj
    proj = proj * (1 + cam[9] * rsq + cam[10] * rsq * rsq)
    return w * (proj * cam[6] + cam[7:9] - feat)


def test_ba_objective(tool):
    inp = {"n": 3, "m": 4, "p": 7, "cam": BA_CAM, "x": BA_X, "w": BA_W, "feat": BA_FEAT}
    out = evaluate(tool, "ba", "objective", inp)
    err = ba_reproj(np.array(BA_CAM), np.array(BA_X), BA_W, np.array(BA_FEAT))
    assert out["reproj_error"]["repeated"] == 7 and out["w_err"]["repeated"] == 7
    # the error is a difference of numbers near the feature's (hundreds): an absolute tolerance
    np.testing.assert_allclose(out["reproj_error"]["elements"], err, rtol=1e-12, atol=1e-10)
    assert out["w_err"]["element"] == pytest.approx(1 - BA_W**2, rel=1e-15)


def test_ba_objective_without_rotation(tool):
    # a zero rotation takes the first-order form X - C (cross(0, X) = 0): plain projection
    cam = [0.0, 0.0, 0.0] + BA_CAM[3:]
    out = evaluate(tool, "ba", "objective",
                   {"n": 1, "m": 1, "p": 2, "cam": cam, "x": BA_X, "w": BA_W, "feat": BA_FEAT})
    Xo = np.array(BA_X) - np.array(BA_CAM[3:6])
    proj = Xo[:2] / Xo[2]
    rsq = proj @ proj
    proj = proj * (1 + cam[9] * rsq + cam[10] * rsq**2) * cam[6] + np.array(cam[7:9])
    np.testing.assert_allclose(out["reproj_error"]["elements"], BA_W * (proj - BA_FEAT),
                               rtol=1e-12, atol=1e-10)


def test_ba_jacobian_structure_and_values(tool):
    n, m, p = 3, 4, 15       # 2p reprojection rows: the eval's first 30 entries all theirs
    out = evaluate(tool, "ba", "jacobian",
                   {"n": n, "m": m, "p": p, "cam": BA_CAM, "x": BA_X, "w": BA_W, "feat": BA_FEAT})
    assert len(out["rows"]) == len(out["cols"]) == len(out["vals"]) == 31
    # ba.hpp's SparseMat: 15 entries in each of the 2p reprojection rows, then one per weight row
    assert out["rows"][:30] == [15 * i for i in range(30)] and out["rows"][30] == 31 * p
    first_row_cols = list(range(11)) + [11 * n, 11 * n + 1, 11 * n + 2, 11 * n + 3 * m]
    assert out["cols"][:30] == first_row_cols * 2
    assert out["cols"][30] == 11 * n + 3 * m + p - 1
    assert out["vals"][30] == pytest.approx(-2 * BA_W, rel=1e-15)
    # observation 0's block, column by column: camera (11), point (3), weight (1)
    params = np.array(BA_CAM + BA_X + [BA_W])

    def err(q):
        return ba_reproj(q[:11], q[11:14], q[14], np.array(BA_FEAT))
    J = np.stack([central_difference(lambda q, r=r: err(q)[r], params, eps=1e-7) for r in range(2)])
    np.testing.assert_allclose(np.array(out["vals"][:30]).reshape(2, 15), J, rtol=1e-5, atol=1e-5)


# -- saddle ----------------------------------------------------------------------------

def gd_argmin(f, g, x):
    """cpp/gradbench/gd.hpp's multivariate_argmin in NumPy."""
    x = np.array(x, dtype=float)
    fx, gx, i, eta = f(x), g(x), 0, 1e-5
    while True:
        if np.linalg.norm(gx) <= 1e-5:
            return x
        if i == 10:
            eta, i = eta * 2, 0
            continue
        x_prime = x - eta * gx
        if np.linalg.norm(x - x_prime) <= 1e-5:
            return x
        fx_prime = f(x_prime)
        if fx_prime < fx:
            x, fx, gx, i = x_prime, fx_prime, g(x_prime), i + 1
        else:
            eta, i = eta / 2, 0


def saddle_reference(start):
    def f(x, y):
        return x @ x - y @ y

    def argmax_y(x):
        return gd_argmin(lambda y: -f(x, y), lambda y: 2 * y, start)
    x = gd_argmin(lambda x: f(x, argmax_y(x)), lambda x: 2 * x, start)
    return np.concatenate([x, argmax_y(x)])


@pytest.mark.parametrize("function", ["rr", "ff"])
def test_saddle_against_a_numpy_port(tool, function):
    # a start near the saddle keeps the descents short
    start = [2e-3, -1e-3]
    out = evaluate(tool, "saddle", function, {"start": start})
    assert len(out) == 4
    np.testing.assert_allclose(out, saddle_reference(np.array(start)), rtol=1e-10, atol=1e-15)


# -- particle --------------------------------------------------------------------------

def particle_objective(w):
    """x(t_f)_0^2 of GradBench's particle, by its naive Euler steps, in NumPy."""
    charges = np.array([[10.0, 0.0], [10.0, 10.0 - w]])
    x, v, dt = np.array([0.0, 8.0]), np.array([0.75, 0.0]), 0.1
    while True:
        d = x - charges
        dp = -(d / (np.sqrt((d * d).sum(axis=1)) ** 3)[:, None]).sum(axis=0)
        x_next = x + dt * v
        if x_next[1] < 0:
            break
        v, x = v - dt * dp, x_next
    x_final = x[0] - x[1] / v[1] * v[0]
    return x_final * x_final


def test_particle_objective_and_nested_gradient():
    from benchmarks.gradbench.adapter import Module
    s = Module("particle").session
    w = 0.15
    assert s.run(f"intersection_sqr(tensor({w}), false).item()") == pytest.approx(
        particle_objective(w), rel=1e-12)
    g = s.run(f"w = tensor({w}, requires_grad=true)\ngrad(intersection_sqr(w, true), w)[0].item()")
    assert g == pytest.approx(central_difference(particle_objective, np.array(w))[()], rel=1e-6)


def test_particle_descent_is_gradbench_gd():
    # the eval itself (from w = 0) runs for minutes: its descent on a parabola instead,
    # against the NumPy port of gd.hpp, and the conversion on its own
    from benchmarks.gradbench import particle
    from benchmarks.gradbench.adapter import Module
    s = Module("particle").session
    found = s.run("""
def q(w) { return 4 * (w - 0.3) ^ 2 + 1 }
def dq(w) {
    w = w.detach().requires_grad_()
    return grad(q(w), w)[0]
}
argmin(q, dq, tensor(-0.5)).item()
""")
    expected = gd_argmin(lambda w: 4 * (w[0] - 0.3) ** 2 + 1, lambda w: 8 * (w - 0.3), [-0.5])[0]
    assert found == pytest.approx(expected, rel=1e-12)
    assert abs(found - 0.3) < 1e-5
    w0 = particle.prepare("rr", {"w": 0.25})[0]
    assert w0.shape == () and w0.dtype == autodsl.float64
    assert particle.finish("rr", w0) == 0.25
