"""The functional API (jacobian, hessian, vjp, jvp, hvp, vhp): values against central finite
differences in float64, and values AND output nesting/shapes against
torch.autograd.functional where torch is importable."""
from __future__ import annotations

import contextlib
import io

import numpy as np
import pytest

import autodsl as ad

EPS = 1e-6


# ---- a table of functions, written once for both libraries (``lib`` is autodsl or torch) ----------

def f_scalar(lib, x):                    # scalar -> scalar
    return lib.sin(x) * x ** 2


def f_vec(lib, x):                       # vector -> vector
    return lib.tanh(x) * x.sum() + x ** 3


def f_mat_to_scalar(lib, w):             # matrix -> scalar
    return lib.exp(w * 0.3).sum() + (w ** 2).sum()


def f_two_inputs(lib, a, b):             # two inputs -> vector
    return a * b.sum() + a ** 2 * lib.sin(b)


def f_two_outputs(lib, a, b):            # two inputs -> two outputs (a tuple)
    return (a * b, (a - b).sum() ** 2)


def f_one_unused(lib, a, b):             # output independent of b
    return a ** 2


def f_scalar_loss(lib, a, b):            # two inputs -> one number (for hessian / hvp / vhp)
    return (a ** 2 * b).sum() + lib.sin(a).sum() * b.sum()


def _inputs(shapes, seed=0):
    rng = np.random.default_rng(seed)
    return [rng.uniform(-1.0, 1.0, size=s) for s in shapes]


CASES = [
    ("scalar->scalar", f_scalar, [()], False),
    ("vector->vector", f_vec, [(3,)], False),
    ("matrix->scalar", f_mat_to_scalar, [(2, 3)], False),
    ("two inputs", f_two_inputs, [(3,), (3,)], True),
    ("two outputs", f_two_outputs, [(3,), (3,)], True),
    ("unused input", f_one_unused, [(2,), (2,)], True),
    ("one input in a list", f_vec, [(3,)], True),
]


def ad_fn(f):
    return lambda *xs: f(ad, *xs)


def ad_inputs(arrays, as_tuple):
    ts = [ad.tensor(a.tolist(), dtype=ad.float64) for a in arrays]
    return tuple(ts) if as_tuple else ts[0]


def structure(obj):
    """Tuples stay tuples (recursively), tensors become ("T", shape): the nesting to compare."""
    if isinstance(obj, (tuple, list)):
        return tuple(structure(o) for o in obj)
    return ("T", tuple(obj.shape))


def flat_values(obj):
    if isinstance(obj, (tuple, list)):
        return [v for o in obj for v in flat_values(o)]
    arr = obj.detach().numpy() if hasattr(obj, "detach") else obj.numpy()
    return [np.asarray(arr, dtype=np.float64)]


def fd_jacobian(f, arrays):
    """Central differences: J[o][i] of shape out_o.shape + in_i.shape, from autodsl forwards."""
    def outputs(arrs):
        out = f(ad, *[ad.tensor(a.tolist(), dtype=ad.float64) for a in arrs])
        outs = out if isinstance(out, tuple) else (out,)
        return [np.asarray(o.numpy(), dtype=np.float64) for o in outs]

    base = outputs(arrays)
    jac = [[np.zeros(o.shape + a.shape) for a in arrays] for o in base]
    for i, a in enumerate(arrays):
        for idx in np.ndindex(*a.shape):
            plus = [x.copy() for x in arrays]
            minus = [x.copy() for x in arrays]
            plus[i][idx] += EPS
            minus[i][idx] -= EPS
            for o, (p, m) in enumerate(zip(outputs(plus), outputs(minus))):
                jac[o][i][(...,) + idx] = (p - m) / (2 * EPS)
    return jac


# ---- jacobian -------------------------------------------------------------------------------------

@pytest.mark.parametrize("name,f,shapes,as_tuple", CASES, ids=[c[0] for c in CASES])
def test_jacobian_matches_finite_differences(name, f, shapes, as_tuple):
    arrays = _inputs(shapes)
    J = ad.jacobian(ad_fn(f), ad_inputs(arrays, as_tuple))
    fd = fd_jacobian(f, arrays)
    multi_out = isinstance(f(ad, *ad_inputs(arrays, True)), tuple)
    for o in range(len(fd)):
        for i in range(len(arrays)):
            got = J
            if multi_out:
                got = got[o]
            if as_tuple:
                got = got[i]
            np.testing.assert_allclose(got.numpy(), fd[o][i], rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("name,f,shapes,as_tuple", CASES, ids=[c[0] for c in CASES])
def test_jacobian_matches_torch_values_and_nesting(name, f, shapes, as_tuple):
    torch = pytest.importorskip("torch")
    TF = pytest.importorskip("torch.autograd.functional")
    arrays = _inputs(shapes)
    ours = ad.jacobian(ad_fn(f), ad_inputs(arrays, as_tuple))
    t_in = tuple(torch.tensor(a, dtype=torch.float64) for a in arrays)
    theirs = TF.jacobian(lambda *xs: f(torch, *xs), t_in if as_tuple else t_in[0])
    assert structure(ours) == structure(theirs)
    for a, b in zip(flat_values(ours), flat_values(theirs)):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)


def test_jacobian_of_a_language_function_and_list_results():
    """`def` functions work; a list input is a tuple (the language has no tuple literal); a list
    returned by the function counts as a tuple of outputs."""
    s = ad.Session(out=io.StringIO())
    s.run("x = tensor([1.0, 2.0, 3.0])\n"
          "def sq(x) { return x^2 }\n"
          "def pair(a, b) { return [a * b, (a + b).sum()] }\n"
          "J = jacobian(sq, x)\n"
          "K = jacobian(pair, [x, x * 2])\n")
    np.testing.assert_allclose(s["J"].numpy(), np.diag([2.0, 4.0, 6.0]))
    K = s["K"]
    assert structure(K) == ((("T", (3, 3)), ("T", (3, 3))), (("T", (3,)), ("T", (3,))))
    np.testing.assert_allclose(K[0][0].numpy(), np.diag([2.0, 4.0, 6.0]))   # d(a*b)/da = diag(b)
    np.testing.assert_allclose(K[0][1].numpy(), np.diag([1.0, 2.0, 3.0]))   # d(a*b)/db = diag(a)
    np.testing.assert_allclose(K[1][0].numpy(), [1.0, 1.0, 1.0])


def test_language_shows_tuples_as_the_interpreter_shows_them():
    out = io.StringIO()
    s = ad.Session(out=out)
    s.run("def f(a, b) { return (a * b).sum() }\n"
          "hessian(f, [tensor(2.0), tensor(3.0)])\n")
    assert out.getvalue().strip() == "((tensor(0.), tensor(1.)), (tensor(1.), tensor(0.)))"   # as torch prints it


def test_jacobian_create_graph_gives_second_derivatives_like_torch():
    torch = pytest.importorskip("torch")
    TF = pytest.importorskip("torch.autograd.functional")
    a = np.array([0.3, -0.7, 1.1])
    x = ad.tensor(a.tolist(), requires_grad=True)
    J = ad.jacobian(ad_fn(f_vec), x, create_graph=True)
    assert J.requires_grad
    J.sum().backward()
    tx = torch.tensor(a, requires_grad=True)
    TJ = TF.jacobian(lambda v: f_vec(torch, v), tx, create_graph=True)
    TJ.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=1e-12)
    # without create_graph the result is detached and the inputs' .grad untouched
    y = ad.tensor(a.tolist(), requires_grad=True)
    J2 = ad.jacobian(ad_fn(f_vec), y)
    assert not J2.requires_grad and y.grad is None


def test_strict_mode_and_unused_inputs():
    a, b = ad.tensor([1.0, 2.0]), ad.tensor([3.0, 4.0])
    J = ad.jacobian(ad_fn(f_one_unused), (a, b))
    np.testing.assert_array_equal(J[1].numpy(), np.zeros((2, 2)))
    with pytest.raises(ad.AutogradError, match="independent of input 1"):
        ad.jacobian(ad_fn(f_one_unused), (a, b), strict=True)
    with pytest.raises(ad.AutogradError, match="strict"):
        ad.vjp(lambda x: x.detach() * 2, a, ad.ones(2), strict=True)


def test_unsupported_options_are_refused_clearly():
    x = ad.tensor([1.0, 2.0])
    with pytest.raises(ad.ValueError_, match="vectorize=true is not supported"):
        ad.jacobian(ad_fn(f_vec), x, vectorize=True)
    with pytest.raises(ad.ValueError_, match="forward-mode.*reverse-mode"):
        ad.jacobian(ad_fn(f_vec), x, strategy="forward-mode")
    with pytest.raises(ad.ValueError_, match="must be \"reverse-mode\""):
        ad.jacobian(ad_fn(f_vec), x, strategy="sideways")
    with pytest.raises(ad.ValueError_, match="outer_jacobian_strategy"):
        ad.hessian(lambda v: (v ** 2).sum(), x, outer_jacobian_strategy="forward-mode")
    with pytest.raises(ad.ValueError_, match="vectorize"):
        ad.hessian(lambda v: (v ** 2).sum(), x, vectorize=True)


def test_bad_arguments_say_what_to_do():
    x = ad.tensor([1.0, 2.0])
    with pytest.raises(ad.TypeError_, match="entry 1 of the inputs is the number 2.0"):
        ad.jacobian(ad_fn(f_two_inputs), [x, 2.0])
    with pytest.raises(ad.TypeError_, match="needs a function"):
        ad.jacobian(x, x)
    with pytest.raises(ad.ValueError_, match="v can be left out only"):
        ad.vjp(ad_fn(f_vec), x)
    with pytest.raises(ad.ShapeError, match=r"v has shape \(3,\) but should have shape \(2,\)"):
        ad.vjp(ad_fn(f_vec), x, ad.ones(3))
    with pytest.raises(ad.ValueError_, match="v has 1 entries but there are 2"):
        ad.jvp(ad_fn(f_two_inputs), (x, x), (ad.ones(2),))
    with pytest.raises(ad.ValueError_, match="single number.*shape \\(2,\\)"):
        ad.hessian(ad_fn(f_vec), x)
    with pytest.raises(ad.ValueError_, match="single tensor, not a list"):
        ad.hvp(ad_fn(f_two_outputs), (x, x), (x, x))


# ---- hessian, vjp, jvp, hvp, vhp ------------------------------------------------------------------

def fd_hessian(f, arrays):
    """d/dx_j of the (finite-difference-checked) analytic gradient: H[i][j]."""
    def gradient(arrs):
        ts = [ad.tensor(a.tolist(), requires_grad=True) for a in arrs]
        return [g.numpy() for g in ad.grad(f(ad, *ts), ts)]
    H = [[np.zeros(a.shape + b.shape) for b in arrays] for a in arrays]
    for j, b in enumerate(arrays):
        for idx in np.ndindex(*b.shape):
            plus = [x.copy() for x in arrays]
            minus = [x.copy() for x in arrays]
            plus[j][idx] += EPS
            minus[j][idx] -= EPS
            for i, (p, m) in enumerate(zip(gradient(plus), gradient(minus))):
                H[i][j][(...,) + idx] = (p - m) / (2 * EPS)
    return H


def test_hessian_matches_finite_differences_and_torch():
    arrays = _inputs([(3,), (2, 3)], seed=1)
    arrays[1] = arrays[1][0]                       # two (3,) inputs
    H = ad.hessian(ad_fn(f_scalar_loss), ad_inputs(arrays, True))
    fd = fd_hessian(f_scalar_loss, arrays)
    for i in range(2):
        for j in range(2):
            np.testing.assert_allclose(H[i][j].numpy(), fd[i][j], rtol=1e-6, atol=1e-8)
    torch = pytest.importorskip("torch")
    TF = pytest.importorskip("torch.autograd.functional")
    t_in = tuple(torch.tensor(a) for a in arrays)
    TH = TF.hessian(lambda *xs: f_scalar_loss(torch, *xs), t_in)
    assert structure(H) == structure(TH)
    for a, b in zip(flat_values(H), flat_values(TH)):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)
    # a single input: a single tensor of shape input.shape * 2
    h1 = ad.hessian(lambda w: f_mat_to_scalar(ad, w), ad.tensor(_inputs([(2, 3)])[0].tolist()))
    assert h1.shape == (2, 3, 2, 3)


PRODUCTS = [
    # (name, function, input shapes, inputs as a tuple, v given as a tuple)
    ("vjp", f_vec, [(3,)], False),
    ("vjp", f_two_outputs, [(3,), (3,)], True),
    ("jvp", f_vec, [(3,)], False),
    ("jvp", f_two_outputs, [(3,), (3,)], True),
    ("vhp", f_scalar_loss, [(3,), (3,)], True),
    ("hvp", f_scalar_loss, [(3,), (3,)], True),
    ("vhp", lambda lib, x: (x ** 3).sum(), [(2, 2)], False),
    ("hvp", lambda lib, x: (x ** 3).sum(), [(2, 2)], False),
]


def _v_for(kind, f, arrays, as_tuple, rng):
    """v shaped like the outputs (vjp) or like the inputs (jvp, hvp, vhp)."""
    if kind == "vjp":
        out = f(ad, *[ad.tensor(a.tolist()) for a in arrays])
        outs = out if isinstance(out, tuple) else (out,)
        vs = [rng.uniform(-1, 1, size=o.shape) for o in outs]
        return vs, isinstance(out, tuple)
    return [rng.uniform(-1, 1, size=a.shape) for a in arrays], as_tuple


@pytest.mark.parametrize("kind,f,shapes,as_tuple", PRODUCTS,
                         ids=[f"{p[0]}-{i}" for i, p in enumerate(PRODUCTS)])
def test_products_match_torch_and_the_jacobian(kind, f, shapes, as_tuple):
    rng = np.random.default_rng(3)
    arrays = _inputs(shapes, seed=2)
    vs, v_tuple = _v_for(kind, f, arrays, as_tuple, rng)
    v_ad = tuple(ad.tensor(v.tolist()) for v in vs)
    ours = getattr(ad, kind)(ad_fn(f), ad_inputs(arrays, as_tuple), v_ad if v_tuple else v_ad[0])
    assert isinstance(ours, tuple) and len(ours) == 2          # (func_output, product)
    # against the Jacobian / Hessian contracted with v
    if kind in ("vjp", "jvp"):
        fd = fd_jacobian(f, arrays)
        prod = ours[1] if isinstance(ours[1], tuple) else (ours[1],)
        for k, p in enumerate(prod):
            if kind == "vjp":      # sum over outputs of v_o . J[o][k]
                want = sum(np.tensordot(v, fd[o][k], axes=v.ndim) for o, v in enumerate(vs))
            else:                  # sum over inputs of J[k][i] . v_i
                want = sum(np.tensordot(fd[k][i], v, axes=v.ndim) for i, v in enumerate(vs))
            np.testing.assert_allclose(p.numpy(), want, rtol=1e-6, atol=1e-8)
    else:
        H = fd_hessian(f, arrays)
        prod = ours[1] if isinstance(ours[1], tuple) else (ours[1],)
        for k, p in enumerate(prod):
            want = sum(np.tensordot(H[k][i], v, axes=v.ndim) for i, v in enumerate(vs))  # symmetric H
            np.testing.assert_allclose(p.numpy(), want, rtol=1e-6, atol=1e-7)
    torch = pytest.importorskip("torch")
    TF = pytest.importorskip("torch.autograd.functional")
    t_in = tuple(torch.tensor(a) for a in arrays)
    t_v = tuple(torch.tensor(v) for v in vs)
    theirs = getattr(TF, kind)(lambda *xs: f(torch, *xs), t_in if as_tuple else t_in[0],
                               t_v if v_tuple else t_v[0])
    assert structure(ours) == structure(theirs)
    for a, b in zip(flat_values(ours), flat_values(theirs)):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)


def test_v_may_be_left_out_for_one_number():
    x = ad.tensor(0.5)
    out, g = ad.vjp(lambda t: ad.sin(t) * t ** 2, x)
    assert out.item() == pytest.approx(np.sin(0.5) * 0.25)
    assert g.item() == pytest.approx(np.cos(0.5) * 0.25 + np.sin(0.5) * 1.0)
    _, d = ad.jvp(lambda t: t ** 3, x)
    assert d.item() == pytest.approx(0.75)
    _, h = ad.hvp(lambda t: t ** 3, x)
    _, h2 = ad.vhp(lambda t: t ** 3, x)
    assert h.item() == pytest.approx(3.0) and h2.item() == pytest.approx(3.0)


def test_create_graph_on_products_keeps_the_graph():
    x = ad.tensor([0.5, -1.0], requires_grad=True)
    _, hv = ad.hvp(lambda t: (t ** 3).sum(), x, ad.ones(2), create_graph=True)
    assert hv.requires_grad                          # 6 x: differentiable again
    (g,) = ad.grad(hv.sum(), [x])
    np.testing.assert_allclose(g.numpy(), [6.0, 6.0])
    _, jv = ad.jvp(lambda t: t ** 2, x, ad.ones(2))
    assert not jv.requires_grad
    np.testing.assert_allclose(jv.numpy(), [1.0, -2.0])


def test_the_inputs_are_not_touched():
    x = ad.tensor([1.0, 2.0], requires_grad=True)
    before = x.numpy().copy()
    ad.jacobian(ad_fn(f_vec), x)
    ad.hessian(lambda t: (t ** 3).sum(), x)
    ad.vjp(ad_fn(f_vec), x, ad.ones(2))
    assert x.grad is None and x.version == 0
    np.testing.assert_array_equal(x.numpy(), before)


def test_works_inside_no_grad():
    with ad.no_grad():
        J = ad.jacobian(lambda t: t ** 2, ad.tensor([1.0, 3.0]))
    np.testing.assert_allclose(J.numpy(), np.diag([2.0, 6.0]))


def test_help_shows_the_functional_api_as_builtins():
    from autodsl.cli.repl import Repl
    out = io.StringIO()
    r = Repl(ad.Session(out=out), out=out)
    with contextlib.redirect_stdout(io.StringIO()):
        r.handle(":help jacobian")
    text = out.getvalue()
    assert text.startswith("jacobian(func, inputs, create_graph=false, strict=false, vectorize=false")
    assert "vectorize=true" in text and "not supported" in text
