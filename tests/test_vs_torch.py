"""autodsl against PyTorch (float64): forward values, gradients, second order, exception
types, and the subgradient conventions at the exact kink points. Skipped without torch."""
import math

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import autodsl as ad  # noqa: E402
from helpers import to_ad  # noqa: E402
from op_samples import SAMPLES, TorchNS  # noqa: E402

TS = [s for s in SAMPLES if s.torch]


def to_torch(value, requires_grad=False):
    if isinstance(value, np.ndarray):
        if value.dtype.kind == "f":
            return torch.tensor(value, dtype=torch.float64, requires_grad=requires_grad)
        if value.dtype.kind == "b":
            return torch.tensor(value, dtype=torch.bool)
        return torch.tensor(value, dtype=torch.int64)
    return value


def _is_float(a):
    return isinstance(a, np.ndarray) and a.dtype.kind == "f"


def _run_both(fn, args, order=1, seed=0):
    """Evaluate fn on both; returns (ad_out, torch_out, ad_grads, torch_grads) as arrays."""
    a_in = [to_ad(a, requires_grad=_is_float(a)) for a in args]
    t_in = [to_torch(a, requires_grad=_is_float(a)) for a in args]
    a_out = fn(ad, *a_in)
    t_out = fn(TorchNS, *t_in)
    if order == 0 or not a_out.requires_grad:
        return a_out, t_out, None, None
    rng = np.random.default_rng(seed)
    v = rng.standard_normal(a_out.shape)
    idx = [i for i, a in enumerate(args) if _is_float(a)]
    ag = ad.grad(a_out, [a_in[i] for i in idx], grad_outputs=[ad.tensor(v.tolist())],
                 create_graph=order > 1, allow_unused=True)
    tg = torch.autograd.grad(t_out, [t_in[i] for i in idx], grad_outputs=torch.tensor(v),
                             create_graph=order > 1, allow_unused=True)
    if order > 1:
        ws = [rng.standard_normal(args[i].shape) for i in idx]
        a_s = sum(((g * ad.tensor(w.tolist())).sum() for g, w in zip(ag, ws) if g is not None
                   and g.requires_grad), ad.zeros(()))
        t_s = sum(((g * torch.tensor(w)).sum() for g, w in zip(tg, ws) if g is not None
                   and g.requires_grad), torch.zeros((), dtype=torch.float64))
        ag = (ad.grad(a_s, [a_in[i] for i in idx], allow_unused=True) if a_s.requires_grad
              else [None] * len(idx))
        tg = (torch.autograd.grad(t_s, [t_in[i] for i in idx], allow_unused=True) if t_s.requires_grad
              else [None] * len(idx))
    shapes = [args[i].shape for i in idx]
    ag = [np.zeros(s) if g is None else g.numpy() for g, s in zip(ag, shapes)]
    tg = [np.zeros(s) if g is None else g.detach().numpy(force=True) for g, s in zip(tg, shapes)]
    return a_out, t_out, ag, tg


@pytest.mark.parametrize("sample", TS, ids=[s.id for s in TS])
def test_forward_matches_torch(sample):
    a_out, t_out, _, _ = _run_both(sample.fn, sample.args, order=0)
    t = t_out.detach().numpy()
    assert a_out.shape == tuple(t_out.shape)
    assert a_out.numpy().dtype == t.dtype
    np.testing.assert_allclose(a_out.numpy(), t, rtol=1e-12, atol=1e-12)
    assert a_out.requires_grad == t_out.requires_grad


GS = [s for s in TS if s.grad]


@pytest.mark.parametrize("sample", GS, ids=[s.id for s in GS])
def test_grad_matches_torch(sample):
    _, _, ag, tg = _run_both(sample.fn, sample.args, order=1)
    for a, t in zip(ag, tg):
        np.testing.assert_allclose(a, t, rtol=1e-10, atol=1e-12)


GGS = [s for s in TS if s.gradgrad]


@pytest.mark.parametrize("sample", GGS, ids=[s.id for s in GGS])
def test_second_order_matches_torch(sample):
    _, _, ag, tg = _run_both(sample.fn, sample.args, order=2)
    for a, t in zip(ag, tg):
        np.testing.assert_allclose(a, t, rtol=1e-10, atol=1e-12)


def test_grad_fn_names_follow_torch():
    x = ad.tensor([1.0, 2.0], requires_grad=True)
    tx = torch.tensor([1.0, 2.0], requires_grad=True)
    for fa, ft in [(lambda v: v * 2, lambda v: v * 2), (lambda v: v ** 2, lambda v: v ** 2),
                   (ad.relu, torch.relu), (ad.exp, torch.exp), (lambda v: v + 1, lambda v: v + 1),
                   (lambda v: v.sum(), lambda v: v.sum()), (lambda v: v / 3, lambda v: v / 3),
                   (ad.sigmoid, torch.sigmoid), (ad.tanh, torch.tanh)]:
        name = fa(x).grad_fn.name
        tname = type(ft(tx).grad_fn).__name__
        assert tname.startswith(name), (name, tname)


# -- exception types -----------------------------------------------------------------------------

ERRORS = [
    ("add-shape", lambda m, a, b: m.add(a, b), [np.ones((2, 3)), np.ones(2)], ad.ShapeError, RuntimeError),
    ("mul-shape", lambda m, a, b: m.mul(a, b), [np.ones((4,)), np.ones(3)], ad.ShapeError, RuntimeError),
    ("matmul-shape", lambda m, a, b: m.matmul(a, b), [np.ones((2, 3)), np.ones((2, 3))], ad.ShapeError,
     RuntimeError),
    ("reshape-count", lambda m, a: m.reshape(a, 4, 2), [np.ones((2, 3))], ad.ShapeError, RuntimeError),
    ("cat-shape", lambda m, a, b: m.cat([a, b], dim=0), [np.ones((2, 3)), np.ones((2, 2))],
     ad.ShapeError, RuntimeError),
    ("stack-shape", lambda m, a, b: m.stack([a, b]), [np.ones(3), np.ones(2)], ad.ShapeError, RuntimeError),
    ("expand-shape", lambda m, a: m.expand(a, 3, 3), [np.ones((2, 3))], ad.ShapeError, RuntimeError),
    ("index-range", lambda m, a: m.getitem(a, 5), [np.ones((2, 3))], ad.IndexError_, IndexError),
    ("dim-range", lambda m, a: m.sum(a, dim=2), [np.ones((2, 3))], ad.IndexError_, IndexError),
    ("where-shape", lambda m, c, a, b: m.where(c, a, b), [np.ones((2,), bool), np.ones(3), np.ones(3)],
     ad.ShapeError, RuntimeError),
]


@pytest.mark.parametrize("case", ERRORS, ids=[c[0] for c in ERRORS])
def test_exception_types_match_torch(case):
    _, fn, args, ad_exc, torch_exc = case
    with pytest.raises(ad_exc):
        fn(ad, *[to_ad(a, requires_grad=_is_float(a)) for a in args])
    with pytest.raises(torch_exc):
        fn(TorchNS, *[to_torch(a, requires_grad=_is_float(a)) for a in args])
    assert issubclass(ad_exc, ad.DSLError)


def test_int_requires_grad_raises_in_both():
    with pytest.raises(ad.DTypeError):
        ad.tensor([1, 2], dtype=ad.int64, requires_grad=True)
    with pytest.raises(RuntimeError):
        torch.tensor([1, 2], requires_grad=True)


def test_nonscalar_backward_raises_in_both():
    with pytest.raises(ad.AutogradError):
        (ad.tensor([1.0, 2.0], requires_grad=True) * 2).backward()
    with pytest.raises(RuntimeError):
        (torch.tensor([1.0, 2.0], requires_grad=True) * 2).backward()


def test_freed_graph_raises_in_both():
    x = ad.tensor(2.0, requires_grad=True)
    y = ad.exp(x)
    y.backward()
    with pytest.raises(ad.AutogradError, match="retain_graph"):
        y.backward()
    tx = torch.tensor(2.0, requires_grad=True)
    ty = torch.exp(tx)
    ty.backward()
    with pytest.raises(RuntimeError, match="retain_graph"):
        ty.backward()


# -- subgradient and edge-case conventions at the exact points -----------------------------------

INF, NAN = math.inf, math.nan

# (id, fn(m, *args), args, expected output or None, expected gradients (one per float input) or None)
CONVENTIONS = [
    ("relu-at-0", lambda m, x: m.relu(x), [np.array([-1.0, 0.0, 2.0])], None, [[0.0, 0.0, 1.0]]),
    ("abs-at-0", lambda m, x: m.abs(x), [np.array([-1.0, 0.0, 2.0])], None, [[-1.0, 0.0, 1.0]]),
    ("sign-at-0", lambda m, x: m.sign(x), [np.array([-1.0, 0.0, 2.0])], [-1.0, 0.0, 1.0], [[0.0, 0.0, 0.0]]),
    ("clamp-at-bounds", lambda m, x: m.clamp(x, min=-0.5, max=0.5),
     [np.array([-0.5, 0.5, -1.0, 1.0, 0.0])], None, [[1.0, 1.0, 0.0, 0.0, 1.0]]),
    ("clamp-min-at-bound", lambda m, x: m.clamp(x, min=0.0), [np.array([0.0, -1.0, 1.0])], None,
     [[1.0, 0.0, 1.0]]),
    ("maximum-tie", lambda m, a, b: m.maximum(a, b), [np.array([1.0, 2.0, 5.0]), np.array([1.0, 3.0, 4.0])],
     None, [[0.5, 0.0, 1.0], [0.5, 1.0, 0.0]]),
    ("minimum-tie", lambda m, a, b: m.minimum(a, b), [np.array([1.0, 2.0, 5.0]), np.array([1.0, 3.0, 4.0])],
     None, [[0.5, 1.0, 0.0], [0.5, 0.0, 1.0]]),
    ("max-elementwise-tie", lambda m, a, b: m.max(a, b), [np.array([2.0, 1.0]), np.array([2.0, 0.0])], None,
     [[0.5, 1.0], [0.5, 0.0]]),
    ("max-reduction-tie", lambda m, x: m.max(x), [np.array([1.0, 3.0, 3.0, 2.0])], 3.0,
     [[0.0, 0.5, 0.5, 0.0]]),
    ("max-reduction-triple-tie", lambda m, x: m.max(x), [np.array([[3.0, 3.0], [1.0, 3.0]])], 3.0,
     [[[1 / 3, 1 / 3], [0.0, 1 / 3]]]),
    ("min-reduction-tie", lambda m, x: m.min(x), [np.array([1.0, 3.0, 1.0, 2.0])], 1.0,
     [[0.5, 0.0, 0.5, 0.0]]),
    ("amax-dim-tie", lambda m, x: m.amax(x, dim=1), [np.array([[2.0, 2.0, 1.0], [0.0, 1.0, 1.0]])], None,
     [[[0.5, 0.5, 0.0], [0.0, 0.5, 0.5]]]),
    ("pow-x^0-at-0", lambda m, x: m.pow(x, 0.0), [np.array([0.0, 2.0, -1.0])], [1.0, 1.0, 1.0],
     [[0.0, 0.0, 0.0]]),
    ("pow-x^0.5-at-0", lambda m, x: m.pow(x, 0.5), [np.array([0.0, 4.0])], [0.0, 2.0], [[INF, 0.25]]),
    ("pow-x^2-at-0", lambda m, x: m.pow(x, 2.0), [np.array([0.0, -3.0])], [0.0, 9.0], [[0.0, -6.0]]),
    ("pow-0^y", lambda m, x, y: m.pow(x, y), [np.array([0.0, 0.0, 0.0]), np.array([2.0, 0.5, 0.0])],
     [0.0, 0.0, 1.0], [[0.0, INF, 0.0], [0.0, 0.0, 0.0]]),
    ("pow-negative-base-int-exponent", lambda m, x: m.pow(x, 3), [np.array([-2.0, -0.5])], [-8.0, -0.125],
     [[12.0, 0.75]]),
    ("pow-negative-base-tensor-exponent", lambda m, x, y: m.pow(x, y), [np.array([-2.0]), np.array([2.0])],
     [4.0], [[-4.0], [NAN]]),
    ("sqrt-at-0", lambda m, x: m.sqrt(x), [np.array([0.0, 4.0])], [0.0, 2.0], [[INF, 0.25]]),
    ("sigmoid-saturation", lambda m, x: m.sigmoid(x), [np.array([-1000.0, 1000.0, 0.0])],
     [0.0, 1.0, 0.5], [[0.0, 0.0, 0.25]]),
    ("tanh-saturation", lambda m, x: m.tanh(x), [np.array([-1000.0, 1000.0, 0.0])], [-1.0, 1.0, 0.0],
     [[0.0, 0.0, 1.0]]),
    ("div-by-zero", lambda m, a, b: m.div(a, b), [np.array([1.0, -1.0, 0.0]), np.array([0.0, 0.0, 0.0])],
     [INF, -INF, NAN], [[INF, INF, INF], [-INF, INF, NAN]]),
    ("log-at-0", lambda m, x: m.log(x), [np.array([0.0, 1.0])], [-INF, 0.0], [[INF, 1.0]]),
    ("logsumexp-minus-inf", lambda m, x: m.logsumexp(x, dim=0), [np.array([-INF, 0.0, 0.0])],
     math.log(2.0), [[0.0, 0.5, 0.5]]),
    ("logsumexp-all-minus-inf", lambda m, x: m.logsumexp(x, dim=1), [np.array([[-INF, -INF], [0.0, 0.0]])],
     [-INF, math.log(2.0)], None),
    ("logsumexp-large", lambda m, x: m.logsumexp(x, dim=0), [np.array([1000.0, 1000.0])],
     1000.0 + math.log(2.0), [[0.5, 0.5]]),
    ("softmax-large", lambda m, x: m.softmax(x, dim=0), [np.array([1000.0, 0.0, -1000.0])],
     [1.0, 0.0, 0.0], None),
    ("log_softmax-large", lambda m, x: m.log_softmax(x, dim=0), [np.array([1000.0, 0.0, -1000.0])],
     [0.0, -1000.0, -2000.0], None),
    ("cross_entropy-large", lambda m, x, t: m.cross_entropy(x, t),
     [np.array([[1000.0, 0.0, -1000.0], [0.0, 1000.0, 0.0]]), np.array([0, 0])], 500.0,
     [[[0.0, 0.0, 0.0], [-0.5, 0.5, 0.0]]]),
    ("var", lambda m, x: m.var(x), [np.array([1.0, 2.0, 4.0])], 7 / 3, [[-4 / 3, -1 / 3, 5 / 3]]),
    ("std-zero", lambda m, x: m.std(x, dim=0), [np.array([[1.0, 2.0], [3.0, 2.0]])], [math.sqrt(2), 0.0],
     [[[-0.5 * math.sqrt(2), 0.0], [0.5 * math.sqrt(2), 0.0]]]),
    ("var-unbiased-false", lambda m, x: m.var(x, correction=0), [np.array([1.0, 3.0])], 1.0, [[-1.0, 1.0]]),
    ("prod-one-zero", lambda m, x: m.prod(x), [np.array([2.0, 0.0, 3.0])], 0.0, [[0.0, 6.0, 0.0]]),
    ("prod-two-zeros", lambda m, x: m.prod(x), [np.array([2.0, 0.0, 0.0])], 0.0, [[0.0, 0.0, 0.0]]),
    ("prod-zero-dim", lambda m, x: m.prod(x, dim=1), [np.array([[2.0, 0.0, 3.0], [1.0, 2.0, 3.0]])],
     [0.0, 6.0], None),
    ("norm-at-zero", lambda m, x: m.norm(x), [np.array([0.0, 0.0])], 0.0, [[0.0, 0.0]]),
]


@pytest.mark.parametrize("case", CONVENTIONS, ids=[c[0] for c in CONVENTIONS])
def test_convention_matches_torch(case):
    _, fn, args, expected_out, expected_grads = case
    with np.errstate(all="ignore"):
        a_out, t_out, ag, tg = _run_both(fn, args, order=1, seed=3)
    np.testing.assert_allclose(a_out.numpy(), t_out.detach().numpy(), rtol=1e-12, atol=1e-12)
    if expected_out is not None:
        np.testing.assert_allclose(a_out.numpy(), np.asarray(expected_out), rtol=1e-12, atol=1e-12)
    for a, t in zip(ag, tg):
        np.testing.assert_allclose(a, t, rtol=1e-10, atol=1e-12)
    if expected_grads is not None:
        # Seeded with ones (not a random vector) to compare with hand-written values.
        a_in = [to_ad(a, requires_grad=_is_float(a)) for a in args]
        with np.errstate(all="ignore"):
            out = fn(ad, *a_in)
            gs = ad.grad(out, [t for t, a in zip(a_in, args) if _is_float(a)],
                         grad_outputs=[ad.ones(*out.shape)], allow_unused=True)
        for g, e in zip(gs, expected_grads):
            np.testing.assert_allclose(g.numpy(), np.asarray(e, dtype=float), rtol=1e-12, atol=1e-12)


def test_prod_with_zero_matches_torch_on_2d_dims():
    x = np.array([[2.0, 0.0, 3.0], [0.0, 0.0, 5.0], [1.0, 2.0, 4.0]])
    for dim in (0, 1):
        _, _, ag, tg = _run_both(lambda m, v: m.prod(v, dim=dim), [x], order=1, seed=dim)
        np.testing.assert_allclose(ag[0], tg[0], rtol=1e-12)


def test_micrograd_style_expression():
    """The same expression on both sides (micrograd's test_more_ops)."""
    def f(m, a, b):
        c = a + b
        d = a * b + m.pow(b, 3)
        c = c + c + 1
        c = c + 1 + c + (-a)
        d = d + d * 2 + m.relu(b + a)
        d = d + 3 * d + m.relu(b - a)
        e = c - d
        f_ = m.pow(e, 2)
        g = f_ / 2.0
        g = g + 10.0 / f_
        return g
    a_out, t_out, ag, tg = _run_both(f, [np.array(-4.0), np.array(2.0)], order=1)
    np.testing.assert_allclose(a_out.numpy(), t_out.detach().numpy(), rtol=1e-12)
    np.testing.assert_allclose(ag, tg, rtol=1e-12)
    _, _, ag2, tg2 = _run_both(f, [np.array(-4.0), np.array(2.0)], order=2)
    np.testing.assert_allclose(ag2, tg2, rtol=1e-10)
