"""An OpInfo-like table: sample inputs for every public op (and composite function).

Each ``Sample`` holds a function ``fn(m, *args)`` written against a namespace
``m`` (``autodsl`` itself, ``NP`` for NumPy references, ``TorchNS`` for
PyTorch), and its arguments as NumPy arrays or plain values. Floating arrays
are the differentiable inputs; integer and bool arrays become constant
tensors; anything else is passed through. Only function forms are used, so
the same lambda runs on all three namespaces.

Domains and kinks: ``log``/``sqrt`` get positive inputs; ``relu``, ``abs``,
``clamp``, ``max``/``min`` and ``norm(p=1/inf)`` get inputs kept well away from
their kinks and ties (at least 0.1 away, much more than the finite-difference
step), so the central difference sees a smooth function. The exact kink points
are tested against PyTorch's conventions in ``test_vs_torch.py``.
"""
from __future__ import annotations

import math

import numpy as np

__all__ = ["Sample", "SAMPLES", "COMPOSITES", "NONDIFF", "NP", "TorchNS", "samples_for"]


class Sample:
    """One call of one op: ``fn(m, *args)``."""

    def __init__(self, op, desc, fn, *args, grad=True, gradgrad=True, torch=True, numpy=True,
                 atol=1e-5, rtol=1e-3):
        self.op = op
        self.desc = desc
        self.fn = fn
        self.args = args
        self.grad = grad
        self.gradgrad = gradgrad
        self.torch = torch
        self.numpy = numpy
        self.atol = atol
        self.rtol = rtol

    @property
    def id(self) -> str:
        return f"{self.op}-{self.desc}"

    def __repr__(self) -> str:
        return f"Sample({self.id})"


_rng = np.random.default_rng(20240601)

SHAPES = [(), (3,), (2, 3)]
PAIRS = [((), ()), ((3,), (3,)), ((2, 3), (2, 3)), ((2, 3), (3,)), ((2, 1), (1, 3)), ((), (2, 3))]


def _s(shape):
    return "x".join(map(str, shape)) or "scalar"


def r(*shape, lo=-2.0, hi=2.0):
    """Uniform values in [lo, hi]."""
    return np.asarray(_rng.uniform(lo, hi, size=shape))


def pos(*shape, lo=0.5, hi=2.0):
    """Positive values (log, sqrt, pow bases)."""
    return np.asarray(_rng.uniform(lo, hi, size=shape))


def off_kink(*shape, lo=0.3, hi=2.0):
    """Values with |x| in [lo, hi] and random signs: never near 0."""
    return np.asarray(_rng.uniform(lo, hi, size=shape) * _rng.choice([-1.0, 1.0], size=shape))


def distinct(*shape, lo=-2.0, hi=2.0):
    """Values at least (hi - lo) / (n - 1) apart: no ties for max/min."""
    n = int(np.prod(shape)) if shape else 1
    vals = np.linspace(lo, hi, max(n, 2))[:n]
    return _rng.permutation(vals).reshape(shape)


def distinct_abs(*shape):
    """Distinct magnitudes in [0.3, 2] with random signs (norm p=inf)."""
    return np.asarray(distinct(*shape, lo=0.3, hi=2.0) * _rng.choice([-1.0, 1.0], size=shape))


def apart(shape_a, shape_b, gap=0.15):
    """Two arrays whose broadcast elementwise differences are all at least ``gap``."""
    while True:
        a, b = r(*shape_a), r(*shape_b)
        if np.min(np.abs(a - b)) >= gap:
            return a, b


def away_from(shape, points, gap=0.15, lo=-1.5, hi=1.5):
    """Values at least ``gap`` away from each of ``points`` (clamp bounds)."""
    while True:
        x = r(*shape, lo=lo, hi=hi)
        if all(np.min(np.abs(x - p)) >= gap for p in points):
            return x


# -- namespaces ----------------------------------------------------------------------------------

def _np_axes(dim, ndim):
    if dim is None:
        return tuple(range(ndim))
    return tuple(d % max(ndim, 1) for d in (dim if isinstance(dim, (list, tuple)) else (dim,)))


def _np_reduce(f):
    def red(x, dim=None, keepdim=False):
        return np.asarray(f(x, axis=_np_axes(dim, x.ndim), keepdims=keepdim))
    return red


def _np_lse(x, dim, keepdim=False):
    ax = _np_axes(dim, x.ndim)
    m = np.max(x, axis=ax, keepdims=True)
    m = np.where(np.isfinite(m), m, 0.0)
    s = np.log(np.sum(np.exp(x - m), axis=ax, keepdims=True)) + m
    return s if keepdim else np.squeeze(s, axis=ax) if ax else s


class _NumPy:
    """NumPy reference implementations with autodsl's (PyTorch's) signatures."""
    add, sub, mul, neg, exp, log, sqrt = np.add, np.subtract, np.multiply, np.negative, np.exp, np.log, np.sqrt
    sin, cos, tan, tanh, abs, sign = np.sin, np.cos, np.tan, np.tanh, np.abs, np.sign
    maximum, minimum, matmul = np.maximum, np.minimum, np.matmul
    lt, le, gt, ge, eq, ne = np.less, np.less_equal, np.greater, np.greater_equal, np.equal, np.not_equal
    logical_and, logical_or, logical_not = np.logical_and, np.logical_or, np.logical_not

    @staticmethod
    def any(x, dim=None, keepdim=False):
        return np.any(x, axis=dim, keepdims=keepdim)

    @staticmethod
    def all(x, dim=None, keepdim=False):
        return np.all(x, axis=dim, keepdims=keepdim)
    sum, mean, prod, amax, amin = (staticmethod(_np_reduce(np.sum)), staticmethod(_np_reduce(np.mean)),
                                   staticmethod(_np_reduce(np.prod)), staticmethod(_np_reduce(np.max)),
                                   staticmethod(_np_reduce(np.min)))

    @staticmethod
    def div(a, b):
        return np.true_divide(a, b)

    @staticmethod
    def pow(a, b):
        return np.power(a, b)

    @staticmethod
    def sigmoid(x):
        return 1.0 / (1.0 + np.exp(-x))

    @staticmethod
    def relu(x):
        return np.maximum(x, 0.0)

    @staticmethod
    def clamp(x, min=None, max=None):
        return np.clip(x, min, max)

    @staticmethod
    def where(c, a, b):
        return np.where(c, a, b)

    @staticmethod
    def clone(x):
        return np.array(x, copy=True)

    @staticmethod
    def max(x, other=None, dim=None, keepdim=False):
        if other is not None:
            return np.maximum(x, other)
        if dim is None:
            return NP.amax(x, dim, keepdim)
        return NP.amax(x, dim, keepdim), np.argmax(x, axis=dim, keepdims=keepdim)

    @staticmethod
    def min(x, other=None, dim=None, keepdim=False):
        if other is not None:
            return np.minimum(x, other)
        if dim is None:
            return NP.amin(x, dim, keepdim)
        return NP.amin(x, dim, keepdim), np.argmin(x, axis=dim, keepdims=keepdim)

    @staticmethod
    def norm(x, p=2, dim=None, keepdim=False):
        ax = _np_axes(dim, x.ndim)
        a = np.abs(x)
        if p == math.inf:
            return np.asarray(np.max(a, axis=ax, keepdims=keepdim))
        if p == -math.inf:
            return np.asarray(np.min(a, axis=ax, keepdims=keepdim))
        if p == 0:
            return np.asarray(np.sum(a != 0, axis=ax, keepdims=keepdim).astype(x.dtype))
        return np.asarray(np.sum(a ** p, axis=ax, keepdims=keepdim) ** (1.0 / p))

    @staticmethod
    def var(x, dim=None, keepdim=False, correction=1):
        return np.asarray(np.var(x, axis=_np_axes(dim, x.ndim), keepdims=keepdim, ddof=correction))

    @staticmethod
    def std(x, dim=None, keepdim=False, correction=1):
        return np.asarray(np.std(x, axis=_np_axes(dim, x.ndim), keepdims=keepdim, ddof=correction))

    logsumexp = staticmethod(_np_lse)

    @staticmethod
    def softmax(x, dim):
        return np.exp(x - _np_lse(x, dim, keepdim=True))

    @staticmethod
    def log_softmax(x, dim):
        return x - _np_lse(x, dim, keepdim=True)

    @staticmethod
    def reshape(x, *shape):
        return np.reshape(x, shape[0] if len(shape) == 1 and isinstance(shape[0], tuple) else shape)

    view = reshape

    @staticmethod
    def transpose(x, d0, d1):
        return np.swapaxes(x, d0, d1)

    @staticmethod
    def permute(x, *dims):
        return np.transpose(x, dims)

    @staticmethod
    def expand(x, *sizes):
        lead = len(sizes) - x.ndim
        shape = tuple(x.shape[i - lead] if n == -1 else n for i, n in enumerate(sizes))
        return np.broadcast_to(x, shape)

    @staticmethod
    def cat(xs, dim=0):
        return np.concatenate(xs, axis=dim)

    @staticmethod
    def stack(xs, dim=0):
        return np.stack(xs, axis=dim)

    @staticmethod
    def squeeze(x, dim=None):
        if dim is None:
            return np.squeeze(x)
        return np.squeeze(x, axis=dim) if x.shape[dim] == 1 else x

    @staticmethod
    def unsqueeze(x, dim):
        return np.expand_dims(x, dim if dim >= 0 else x.ndim + 1 + dim)

    @staticmethod
    def flatten(x, start_dim=0, end_dim=-1):
        if x.ndim == 0:
            return x.reshape(1)
        s, e = start_dim % x.ndim, end_dim % x.ndim
        return x.reshape(x.shape[:s] + (-1,) + x.shape[e + 1:])

    @staticmethod
    def getitem(x, key):
        return np.asarray(x[key])

    @staticmethod
    def index_put(x, key, v):
        y = np.array(x, copy=True)
        y[key] = v
        return y

    @staticmethod
    def mse_loss(a, b, reduction="mean"):
        d = (a - b) ** 2
        return {"mean": np.mean, "sum": np.sum, "none": np.asarray}[reduction](d)

    @staticmethod
    def nll_loss(logp, t, reduction="mean"):
        picked = -logp[t] if logp.ndim == 1 else -logp[np.arange(logp.shape[0]), t]
        return np.asarray({"mean": np.mean, "sum": np.sum, "none": np.asarray}[reduction](picked))

    @staticmethod
    def cross_entropy(x, t, reduction="mean"):
        logp = NP.log_softmax(x, -1)
        if t.dtype.kind == "f":
            per = -np.sum(t * logp, axis=-1)
            return np.asarray({"mean": np.mean, "sum": np.sum, "none": np.asarray}[reduction](per))
        return NP.nll_loss(logp, t, reduction)


NP = _NumPy()


class _Torch:
    """PyTorch with autodsl's signatures where they differ (imports torch on first use)."""

    def __getattr__(self, name):
        import torch  # noqa: PLC0415
        return getattr(torch, name)

    @staticmethod
    def _t():
        import torch  # noqa: PLC0415
        return torch

    def max(self, x, other=None, dim=None, keepdim=False):
        t = self._t()
        if other is not None:
            return t.maximum(x, other if isinstance(other, t.Tensor) else t.tensor(other, dtype=x.dtype))
        if dim is not None:
            return t.max(x, dim=dim, keepdim=keepdim)
        return t.max(x) if not keepdim else t.amax(x, dim=(), keepdim=True)

    def min(self, x, other=None, dim=None, keepdim=False):
        t = self._t()
        if other is not None:
            return t.minimum(x, other if isinstance(other, t.Tensor) else t.tensor(other, dtype=x.dtype))
        if dim is not None:
            return t.min(x, dim=dim, keepdim=keepdim)
        return t.min(x) if not keepdim else t.amin(x, dim=(), keepdim=True)

    def amax(self, x, dim=None, keepdim=False):
        return self._t().amax(x, dim=() if dim is None else dim, keepdim=keepdim)

    def amin(self, x, dim=None, keepdim=False):
        return self._t().amin(x, dim=() if dim is None else dim, keepdim=keepdim)

    def prod(self, x, dim=None, keepdim=False):
        t = self._t()
        dims = range(x.ndim) if dim is None else (dim if isinstance(dim, (list, tuple)) else [dim])
        dims = sorted({d % max(x.ndim, 1) for d in dims}, reverse=True)
        if x.ndim == 0:
            return t.prod(x)
        for d in dims:
            x = t.prod(x, dim=d, keepdim=keepdim)
        return x

    def norm(self, x, p=2, dim=None, keepdim=False):
        return self._t().linalg.vector_norm(x, ord=p, dim=dim, keepdim=keepdim)

    def var(self, x, dim=None, keepdim=False, correction=1):
        return self._t().var(x, dim=dim, keepdim=keepdim, correction=correction)

    def std(self, x, dim=None, keepdim=False, correction=1):
        return self._t().std(x, dim=dim, keepdim=keepdim, correction=correction)

    def reshape(self, x, *shape):
        return x.reshape(*shape)

    view = reshape

    def permute(self, x, *dims):
        return x.permute(*dims)

    def expand(self, x, *sizes):
        return x.expand(*sizes)

    def squeeze(self, x, dim=None):
        return x.squeeze() if dim is None else x.squeeze(dim)

    def getitem(self, x, key):
        return x[key]

    def index_put(self, x, key, v):
        y = x.clone()
        y[key] = v
        return y

    def pow(self, a, b):
        t = self._t()
        if not isinstance(a, t.Tensor):
            a = t.tensor(a, dtype=b.dtype)
        return t.pow(a, b)

    def mse_loss(self, a, b, reduction="mean"):
        return self._t().nn.functional.mse_loss(a, b, reduction=reduction)

    def nll_loss(self, a, b, reduction="mean"):
        return self._t().nn.functional.nll_loss(a, b, reduction=reduction)

    def cross_entropy(self, a, b, reduction="mean"):
        return self._t().nn.functional.cross_entropy(a, b, reduction=reduction)


TorchNS = _Torch()


# -- the table -----------------------------------------------------------------------------------

SAMPLES: list[Sample] = []


def add(*a, **k):
    SAMPLES.append(Sample(*a, **k))


# Unary elementwise ops, with their domains.
_UNARY = {
    "neg": r, "exp": r, "sin": r, "cos": r, "tanh": r, "sigmoid": r, "clone": r,
    "log": pos, "sqrt": pos,
    "tan": lambda *s: r(*s, lo=-1.2, hi=1.2),
    "relu": off_kink, "abs": off_kink, "sign": off_kink,
}
for _name, _gen in _UNARY.items():
    for _shape in SHAPES:
        add(_name, _s(_shape), (lambda n: lambda m, x: getattr(m, n)(x))(_name), _gen(*_shape))

# Binary elementwise ops over the broadcast pairs.
for _name in ("add", "sub", "mul"):
    for _sa, _sb in PAIRS:
        add(_name, f"{_s(_sa)}+{_s(_sb)}", (lambda n: lambda m, a, b: getattr(m, n)(a, b))(_name),
            r(*_sa), r(*_sb))
    add(_name, "tensor-number", (lambda n: lambda m, a: getattr(m, n)(a, 2.5))(_name), r(2, 3))
    add(_name, "number-tensor", (lambda n: lambda m, a: getattr(m, n)(-1.5, a))(_name), r(3))
for _sa, _sb in PAIRS:
    add("div", f"{_s(_sa)}+{_s(_sb)}", lambda m, a, b: m.div(a, b), r(*_sa), off_kink(*_sb, lo=0.5))
add("div", "number-tensor", lambda m, a: m.div(2.0, a), off_kink(3, lo=0.5))
for _sa, _sb in PAIRS:
    add("pow", f"{_s(_sa)}+{_s(_sb)}", lambda m, a, b: m.pow(a, b), pos(*_sa), r(*_sb))
add("pow", "negative-base-int-exponent", lambda m, a: m.pow(a, 3), r(2, 3))
add("pow", "float-exponent", lambda m, a: m.pow(a, 2.5), pos(3))
add("pow", "number-base", lambda m, b: m.pow(2.0, b), r(3))
for _name in ("maximum", "minimum"):
    for _sa, _sb in PAIRS:
        add(_name, f"{_s(_sa)}+{_s(_sb)}", (lambda n: lambda m, a, b: getattr(m, n)(a, b))(_name),
            *apart(_sa, _sb))
add("clamp", "min-max", lambda m, x: m.clamp(x, min=-0.5, max=0.5), away_from((2, 3), (-0.5, 0.5)))
add("clamp", "min-only", lambda m, x: m.clamp(x, min=0.2), away_from((3,), (0.2,)))
add("clamp", "max-only", lambda m, x: m.clamp(x, max=-0.1), away_from((3,), (-0.1,)))
add("clamp", "scalar", lambda m, x: m.clamp(x, min=-1.0, max=1.0), np.array(0.4))
# tensor bounds (torch's clamp.Tensor), every value at least 0.2 from a bound and lo 0.4 from hi;
# the second has lo > hi where the result is hi
add("clamp", "tensor-bounds", lambda m, x, lo, hi: m.clamp(x, lo, hi),
    np.array([[-1.2, 0.1, 0.9], [0.4, -0.6, 1.4]]), np.array([-0.5, -0.2, 0.3]), np.array(0.7))
add("clamp", "tensor-bounds-crossed", lambda m, x, lo, hi: m.clamp(x, lo, hi),
    np.array([0.2, -1.0, 1.5]), np.array([0.8, 0.5, 0.9]), np.array([0.4, 0.1, 1.2]))
add("clamp", "tensor-bounds-scalar", lambda m, x, lo, hi: m.clamp(x, lo, hi),
    np.array(0.1), np.array(-0.4), np.array(0.6))
_cond = np.array([[True, False, True], [False, False, True]])
add("where", "2x3", lambda m, c, a, b: m.where(c, a, b), _cond, r(2, 3), r(2, 3))
add("where", "broadcast", lambda m, c, a, b: m.where(c, a, b), _cond, r(3), r(2, 1))
add("where", "scalar-branches", lambda m, c, a, b: m.where(c, a, b), np.array([True, False, True]),
    r(), r())
add("where", "number-other", lambda m, c, a: m.where(c, a, 0.0), _cond, r(2, 3))
add("where", "scalar", lambda m, c, a, b: m.where(c, a, b), np.array(True), r(), r())

# Elementwise max/min (composites of maximum/minimum).
for _name in ("max", "min"):
    add(_name, "elementwise-2x3+3", (lambda n: lambda m, a, b: getattr(m, n)(a, b))(_name),
        *apart((2, 3), (3,)))
    add(_name, "elementwise-number", (lambda n: lambda m, a: getattr(m, n)(a, 0.1))(_name),
        away_from((2, 3), (0.1,)))

# Reductions.
_DIMS = [(None, False), (0, False), (1, True), (-1, False), ([0, 1], False), (None, True)]
for _name in ("sum", "mean", "prod", "amax", "amin", "max", "min", "var", "std", "norm",
              "logsumexp"):
    gen = {"prod": off_kink, "amax": distinct, "amin": distinct, "max": distinct,
           "min": distinct}.get(_name, r)
    for _dim, _keep in _DIMS:
        if _name == "logsumexp" and _dim is None:
            continue
        if _name in ("max", "min") and isinstance(_dim, int):
            # torch: max(x, dim=d) is (values, indices); the gradient goes to the first extreme
            add(_name, f"2x3-dim{_dim}-keep{_keep}",
                (lambda n, d, k: lambda m, x: getattr(m, n)(x, dim=d, keepdim=k)[0])(_name, _dim, _keep),
                gen(2, 3))
            continue
        if _name in ("max", "min") and isinstance(_dim, list):
            continue
        add(_name, f"2x3-dim{_dim}-keep{_keep}",
            (lambda n, d, k: lambda m, x: getattr(m, n)(x, dim=d, keepdim=k))(_name, _dim, _keep),
            gen(2, 3))
    if _name not in ("var", "std", "logsumexp"):
        add(_name, "3", (lambda n: lambda m, x: getattr(m, n)(x))(_name), gen(3))
        add(_name, "scalar", (lambda n: lambda m, x: getattr(m, n)(x))(_name), gen())
add("logsumexp", "3-dim0", lambda m, x: m.logsumexp(x, dim=0), r(3))
add("logsumexp", "large", lambda m, x: m.logsumexp(x, dim=1), r(2, 3) + 800.0)
add("var", "correction0", lambda m, x: m.var(x, dim=1, correction=0), r(2, 3))
add("std", "correction0", lambda m, x: m.std(x, dim=0, correction=0), r(2, 3))
add("var", "3", lambda m, x: m.var(x), r(3))
add("std", "3", lambda m, x: m.std(x), r(3))
add("norm_p1", "2x3", lambda m, x: m.norm(x, p=1), off_kink(2, 3))
add("norm_p1", "dim1", lambda m, x: m.norm(x, p=1, dim=1, keepdim=True), off_kink(2, 3))
add("norm_pinf", "2x3", lambda m, x: m.norm(x, p=math.inf), distinct_abs(2, 3))
add("norm_pinf", "dim0", lambda m, x: m.norm(x, p=math.inf, dim=0), distinct_abs(2, 3))
add("norm_p3", "2x3", lambda m, x: m.norm(x, p=3), off_kink(2, 3))
add("norm_p3", "dim1", lambda m, x: m.norm(x, p=3, dim=1), off_kink(2, 3))
add("norm_pm1", "2x3", lambda m, x: m.norm(x, p=-1), off_kink(2, 3))
add("norm_pm1.5", "dim1", lambda m, x: m.norm(x, p=-1.5, dim=1, keepdim=True), off_kink(2, 3))
add("norm_pminf", "2x3", lambda m, x: m.norm(x, p=-math.inf), distinct_abs(2, 3))
add("norm_pminf", "dim0", lambda m, x: m.norm(x, p=-math.inf, dim=0), distinct_abs(2, 3))
# (p = 0 counts and sends no gradient: tests/test_norm_orders.py)
for _name in ("softmax", "log_softmax"):
    for _dim in (0, 1, -1):
        add(_name, f"2x3-dim{_dim}", (lambda n, d: lambda m, x: getattr(m, n)(x, dim=d))(_name, _dim),
            r(2, 3))
    add(_name, "3", (lambda n: lambda m, x: getattr(m, n)(x, dim=0))(_name), r(3))
    add(_name, "large", (lambda n: lambda m, x: getattr(m, n)(x, dim=1))(_name), r(2, 3) * 3 + 1000.0)

# Shapes.
add("reshape", "2x3-3x2", lambda m, x: m.reshape(x, 3, 2), r(2, 3))
add("reshape", "2x3-flat", lambda m, x: m.reshape(x, -1), r(2, 3))
add("reshape", "scalar-1x1", lambda m, x: m.reshape(x, 1, 1), r())
add("reshape", "tuple", lambda m, x: m.reshape(x, (2, 1, 3)), r(6))
add("view", "2x3-6", lambda m, x: m.view(x, 6), r(2, 3))
add("view", "minus1", lambda m, x: m.view(x, 3, -1), r(2, 3))
add("transpose", "2x3", lambda m, x: m.transpose(x, 0, 1), r(2, 3))
add("transpose", "2x3x4", lambda m, x: m.transpose(x, -1, 0), r(2, 3, 4))
add("permute", "2x3x4", lambda m, x: m.permute(x, 2, 0, 1), r(2, 3, 4))
add("permute", "2x3", lambda m, x: m.permute(x, 1, 0), r(2, 3))
add("expand", "3-2x3", lambda m, x: m.expand(x, 2, 3), r(3))
add("expand", "2x1-2x3", lambda m, x: m.expand(x, 2, 3), r(2, 1))
add("expand", "1x3-minus1", lambda m, x: m.expand(x, 4, -1), r(1, 3))
add("expand", "scalar-3", lambda m, x: m.expand(x, 3), r())
add("cat", "dim0", lambda m, a, b: m.cat([a, b], dim=0), r(2, 3), r(1, 3))
add("cat", "dim1", lambda m, a, b: m.cat([a, b], dim=1), r(2, 3), r(2, 2))
add("cat", "three", lambda m, a, b, c: m.cat([a, b, c]), r(3), r(2), r(1))
add("stack", "dim0", lambda m, a, b: m.stack([a, b]), r(3), r(3))
add("stack", "dim1", lambda m, a, b: m.stack([a, b], dim=1), r(2, 3), r(2, 3))
add("stack", "scalars", lambda m, a, b, c: m.stack([a, b, c]), r(), r(), r())
add("squeeze", "all", lambda m, x: m.squeeze(x), r(2, 1, 3))
add("squeeze", "dim1", lambda m, x: m.squeeze(x, 1), r(2, 1, 3))
add("squeeze", "dim-not-1", lambda m, x: m.squeeze(x, 0), r(2, 1, 3))
add("unsqueeze", "dim0", lambda m, x: m.unsqueeze(x, 0), r(2, 3))
add("unsqueeze", "dim-1", lambda m, x: m.unsqueeze(x, -1), r(2, 3))
add("unsqueeze", "scalar", lambda m, x: m.unsqueeze(x, 0), r())
add("flatten", "2x3x2", lambda m, x: m.flatten(x), r(2, 3, 2))
add("flatten", "start1", lambda m, x: m.flatten(x, 1), r(2, 3, 2))
add("flatten", "scalar", lambda m, x: m.flatten(x), r())

# Indexing.
add("getitem", "int", lambda m, x: m.getitem(x, 1), r(2, 3))
add("getitem", "negative-int", lambda m, x: m.getitem(x, -1), r(3))
add("getitem", "slice", lambda m, x: m.getitem(x, (slice(None), slice(1, 3))), r(2, 3))
add("getitem", "step-slice", lambda m, x: m.getitem(x, slice(None, None, 2)), r(5))
add("getitem", "tuple", lambda m, x: m.getitem(x, (1, slice(0, 2))), r(2, 3))
add("getitem", "int-pair", lambda m, x: m.getitem(x, (0, 2)), r(2, 3))
add("getitem", "int-tensor-repeats", lambda m, x, i: m.getitem(x, i), r(3), np.array([0, 2, 0, 0]))
add("getitem", "int-tensor-rows", lambda m, x, i: m.getitem(x, i), r(2, 3), np.array([1, 1, 0]))
add("getitem", "int-tensor-pairs", lambda m, x, i, j: m.getitem(x, (i, j)), r(2, 3),
    np.array([0, 1, 0]), np.array([2, 2, 2]))
add("getitem", "bool-mask", lambda m, x, k: m.getitem(x, k), r(2, 3), _cond)
add("getitem", "bool-mask-rows", lambda m, x, k: m.getitem(x, k), r(2, 3), np.array([False, True]))
add("index_put", "int", lambda m, x, v: m.index_put(x, 1, v), r(2, 3), r(3))
add("index_put", "int-broadcast-value", lambda m, x, v: m.index_put(x, 0, v), r(2, 3), r())
add("index_put", "slice", lambda m, x, v: m.index_put(x, (slice(None), slice(0, 2)), v), r(2, 3),
    r(2, 2))
add("index_put", "int-tensor", lambda m, x, i, v: m.index_put(x, i, v), r(4), np.array([3, 0]), r(2))
add("index_put", "bool-mask", lambda m, x, k: m.index_put(x, k, 0.0), r(2, 3), _cond)

# Linear algebra and losses.
add("matmul", "dot", lambda m, a, b: m.matmul(a, b), r(3), r(3))
add("matmul", "matrix-vector", lambda m, a, b: m.matmul(a, b), r(2, 3), r(3))
add("matmul", "vector-matrix", lambda m, a, b: m.matmul(a, b), r(3), r(3, 2))
add("matmul", "matrix-matrix", lambda m, a, b: m.matmul(a, b), r(2, 3), r(3, 4))
add("matmul", "batched-broadcast", lambda m, a, b: m.matmul(a, b), r(2, 2, 3), r(3, 2))
add("matmul", "batched-both", lambda m, a, b: m.matmul(a, b), r(2, 1, 2, 3), r(3, 3, 2))
for _red in ("mean", "sum", "none"):
    add("mse_loss", _red, (lambda k: lambda m, a, b: m.mse_loss(a, b, reduction=k))(_red),
        r(2, 3), r(2, 3))
    add("nll_loss", _red, (lambda k: lambda m, a, t: m.nll_loss(a, t, reduction=k))(_red),
        r(3, 4), np.array([1, 0, 3]))
    add("cross_entropy", f"index-{_red}",
        (lambda k: lambda m, a, t: m.cross_entropy(a, t, reduction=k))(_red), r(3, 4),
        np.array([1, 0, 3]))
    add("cross_entropy", f"prob-{_red}",
        (lambda k: lambda m, a, t: m.cross_entropy(a, t, reduction=k))(_red), r(3, 4),
        _rng.dirichlet(np.ones(4), size=3))
add("mse_loss", "scalar", lambda m, a, b: m.mse_loss(a, b), r(), r())
add("nll_loss", "unbatched", lambda m, a, t: m.nll_loss(a, t), r(4), np.array(2))
add("cross_entropy", "index-unbatched", lambda m, a, t: m.cross_entropy(a, t), r(4), np.array(2))
add("cross_entropy", "index-large-logits", lambda m, a, t: m.cross_entropy(a, t),
    r(2, 3) * 5 + 500.0, np.array([2, 0]))

# Comparisons and logical ops: never differentiable.
NONDIFF = ("lt", "le", "gt", "ge", "eq", "ne", "logical_and", "logical_or", "logical_not", "any", "all")
_a = np.array([[0.5, -1.0, 2.0], [0.0, 3.0, -2.0]])
_b = np.array([0.5, 1.0, -2.0])
for _name in ("lt", "le", "gt", "ge", "eq", "ne"):
    add(_name, "2x3+3", (lambda n: lambda m, a, b: getattr(m, n)(a, b))(_name), _a, _b,
        grad=False, gradgrad=False)
    add(_name, "number", (lambda n: lambda m, a: getattr(m, n)(a, 0.5))(_name), _a,
        grad=False, gradgrad=False)
for _name in ("logical_and", "logical_or"):
    add(_name, "2x3", (lambda n: lambda m, a, b: getattr(m, n)(a, b))(_name), _cond,
        np.array([True, False, False]), grad=False, gradgrad=False)
    add(_name, "from-comparisons",
        (lambda n: lambda m, a: getattr(m, n)(m.gt(a, 0.0), m.lt(a, 1.0)))(_name), _a,
        grad=False, gradgrad=False)
add("logical_not", "2x3", lambda m, c: m.logical_not(c), _cond, grad=False, gradgrad=False)
add("logical_not", "from-comparison", lambda m, a: m.logical_not(m.gt(a, 0.0)), _a,
    grad=False, gradgrad=False)

for _name in ("any", "all"):
    add(_name, "2x3", (lambda n: lambda m, c: getattr(m, n)(c))(_name), _cond, grad=False, gradgrad=False)
    add(_name, "2x3-dim1", (lambda n: lambda m, c: getattr(m, n)(c, dim=1))(_name), _cond,
        grad=False, gradgrad=False)
    add(_name, "from-comparison-dim0-keep",
        (lambda n: lambda m, a: getattr(m, n)(m.gt(a, 0.0), dim=0, keepdim=True))(_name), _a,
        grad=False, gradgrad=False)

# Public functions built by composition (not registry rows of their own); each must have samples.
COMPOSITES = ["max", "min", "norm_p1", "norm_pinf", "norm_p3", "cross_entropy", "squeeze",
              "unsqueeze", "flatten", "view"]

# Each later family of ops keeps its samples (and its NP / TorchNS references, set as attributes
# of those objects) in a file of its own, which calls ``add`` and extends ``COMPOSITES``.
import op_samples_pointwise  # noqa: E402,F401
import op_samples_indexing  # noqa: E402,F401
import op_samples_linalg  # noqa: E402,F401
import op_samples_binary_loss  # noqa: E402,F401


def samples_for(name):
    return [s for s in SAMPLES if s.op == name]


DIFF_SAMPLES = [s for s in SAMPLES if s.grad]
NONDIFF_SAMPLES = [s for s in SAMPLES if not s.grad]
