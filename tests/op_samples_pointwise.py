"""Op-table samples for pointwise ops: cumulative sums and products, rounding, remainders, special functions, tril/triu (see op_samples.py)."""
from __future__ import annotations

import numpy as np
from op_samples import COMPOSITES, NP, PAIRS, TorchNS, _s, add, off_kink, r  # noqa: F401

_rng = np.random.default_rng(20261201)


def _frac_apart(x, gap=0.1, at=0.0):
    """True when every x is at least ``gap`` from the points ``k + at`` (k whole): away from the
    jumps of floor (at=0) or round (at=0.5)."""
    return x.size == 0 or np.min(np.abs((x - at) - np.round(x - at))) >= gap


def whole_off(*shape, at=0.0, scale=1.0):
    """Values in [-3.5, 3.5] / scale, never within 0.1 / scale of a jump ``k + at``."""
    while True:
        x = np.asarray(_rng.uniform(-3.5, 3.5, size=shape))
        if _frac_apart(x, at=at):
            return np.asarray(x / scale)


def quotient_off(shape_a, shape_b):
    """a and b (|b| >= 0.5) whose quotients a / b are all at least 0.1 from a whole number:
    remainder and floor_divide are smooth there."""
    while True:
        a, b = r(*shape_a, lo=-3.0, hi=3.0), off_kink(*shape_b, lo=0.5)
        if _frac_apart(np.asarray(a / b)):
            return a, b


# Integer inputs (no gradient, so not in the table) are tested in test_ops_pointwise.py.

def _unary(name, *args, **kw):
    """``name(x, *args, **kw)`` on the namespace ``m``."""
    return lambda m, x: getattr(m, name)(x, *args, **kw)


def _polygamma(n):
    return lambda m, x: m.polygamma(n, x)


def _with_number(f, number, first=False):
    return (lambda m, b: f(m, number, b)) if first else (lambda m, a: f(m, a, number))


# -- rounding ------------------------------------------------------------------------------------
_SHAPES = [(), (3,), (2, 3), (0,), (2, 0)]
for _name in ("floor", "ceil", "trunc", "round"):
    _at = 0.5 if _name == "round" else 0.0
    for _shape in _SHAPES:
        add(_name, _s(_shape), _unary(_name), whole_off(*_shape, at=_at), gradgrad=False)
add("round", "decimals2", lambda m, x: m.round(x, decimals=2), whole_off(2, 3, at=0.5, scale=100.0),
    gradgrad=False)
add("round", "decimals-1", lambda m, x: m.round(x, decimals=-1), whole_off(4, at=0.5) * 10.0, gradgrad=False)
NP.floor, NP.ceil, NP.trunc = np.floor, np.ceil, np.trunc
NP.round = lambda x, decimals=None: np.round(x, decimals or 0) if x.dtype.kind == "f" else np.array(x)
TorchNS.round = lambda x, decimals=None: __import__("torch").round(x, decimals=decimals or 0)

# -- remainder, floor_divide, div's rounding modes ----------------------------------------------
_PAIRS = PAIRS + [((0,), (0,)), ((2, 0), (0,))]
_DIVS = {
    "remainder": lambda m, a, b: m.remainder(a, b),
    "floor_divide": lambda m, a, b: m.floor_divide(a, b),
    "div_trunc": lambda m, a, b: m.div(a, b, rounding_mode="trunc"),
    "div_floor": lambda m, a, b: m.div(a, b, rounding_mode="floor"),
}
for _name, _fn in _DIVS.items():
    _op = "div" if _name.startswith("div") else _name
    _mode = _name[4:] + "-" if _op == "div" else ""
    _gg = _name == "remainder"
    for _sa, _sb in _PAIRS:
        add(_op, f"{_mode}{_s(_sa)}+{_s(_sb)}", _fn, *quotient_off(_sa, _sb), gradgrad=_gg)
    add(_op, f"{_mode}tensor-number", _with_number(_fn, 1.5), quotient_off((2, 3), ())[0],
        gradgrad=_gg)
    add(_op, f"{_mode}number-tensor", _with_number(_fn, 2.5, first=True), quotient_off((), (3,))[1],
        gradgrad=_gg)


def _np_trunc_div(a, b):
    q = np.trunc(np.true_divide(a, b))
    return q.astype(np.result_type(a, b)) if np.result_type(a, b).kind in "iu" else q


def _np_div(a, b, rounding_mode=None):
    if rounding_mode is None:
        return np.true_divide(a, b)
    if rounding_mode == "floor":
        return np.floor_divide(a, b)
    return _np_trunc_div(a, b)


def _np_int_aware(f):
    """A Python float with an int64 array computes in float64 (PyTorch's default float dtype)."""
    def run(a, b):
        if isinstance(b, float) and not isinstance(a, float) and a.dtype.kind in "iu":
            a = a.astype(np.float64)
        if isinstance(a, float) and not isinstance(b, float) and b.dtype.kind in "iu":
            b = b.astype(np.float64)
        return f(a, b)
    return run


NP.remainder, NP.floor_divide = _np_int_aware(np.remainder), _np_int_aware(np.floor_divide)
NP.div = lambda a, b, rounding_mode=None: _np_int_aware(lambda x, y: _np_div(x, y, rounding_mode))(a, b)


def _torch_tensor_first(f):
    """torch's number-first overloads (remainder(2.5, b)) have no derivative: the number as a tensor.
    (floor_divide has none at all: its twin div(rounding_mode="floor") has the zero one autodsl gives.)"""
    def run(a, b):
        torch = __import__("torch")
        if not isinstance(a, torch.Tensor):
            a = torch.tensor(a, dtype=b.dtype if b.dtype.is_floating_point or isinstance(a, int)
                             else torch.get_default_dtype())
        return f(torch, a, b)
    return run


TorchNS.remainder = _torch_tensor_first(lambda t, a, b: t.remainder(a, b))
TorchNS.floor_divide = _torch_tensor_first(lambda t, a, b: t.div(a, b, rounding_mode="floor"))


# -- special functions ---------------------------------------------------------------------------
_SHAPES_0 = [(), (3,), (2, 3), (0,)]
for _sa, _sb in PAIRS + [((0,), (0,)), ((2, 0), (2, 1))]:
    add("atan2", f"{_s(_sa)}+{_s(_sb)}", lambda m, a, b: m.atan2(a, b), off_kink(*_sa), off_kink(*_sb))
add("atan2", "negative-x-near-the-cut", lambda m, a, b: m.atan2(a, b), np.array([0.3, -0.3]), np.array([-1.5, -1.5]))
_SMOOTH = {
    "log1p": lambda *s: r(*s, lo=-0.5, hi=2.0), "expm1": r, "square": r, "logsigmoid": lambda *s: r(*s, lo=-6, hi=6),
    "lgamma": lambda *s: r(*s, lo=0.3, hi=4.0), "digamma": lambda *s: r(*s, lo=0.3, hi=4.0),
}
# torch's trigamma (polygamma(1, x): digamma's derivative, lgamma's second) is a truncated series
# good to about 1e-9, SciPy's to the last digits; so these samples are checked against torch
# at 1e-8 in test_ops_pointwise.py, not at the table's 1e-10
_TRIGAMMA = ("lgamma", "digamma")
for _name, _gen in _SMOOTH.items():
    for _shape in _SHAPES_0:
        add(_name, _s(_shape), _unary(_name), _gen(*_shape), torch=_name not in _TRIGAMMA)
add("lgamma", "negative-non-integers", _unary("lgamma"), np.array([-0.5, -1.5, -2.7, -3.2]), torch=False)
add("digamma", "negative-non-integers", _unary("digamma"), np.array([-0.5, -1.5, -2.7]), torch=False)
for _n in (0, 1, 2):
    for _shape in ((), (2, 3), (0,)):
        add("polygamma", f"n{_n}-{_s(_shape)}", _polygamma(_n), r(*_shape, lo=0.4, hi=3.0), torch=_n == 2)
for _shape in _SHAPES_0:
    add("softplus", _s(_shape), lambda m, x: m.softplus(x), r(*_shape, lo=-4, hi=4))
# beta = 2, threshold = 1: the linear region starts at x = 0.5, where softplus jumps; kept 0.1 away
add("softplus", "beta2-threshold1", lambda m, x: m.softplus(x, beta=2, threshold=1),
    np.array([[-1.5, 0.2, 0.35], [0.65, 1.1, 3.0]]))
add("softplus", "linear-region", lambda m, x: m.softplus(x, threshold=5), np.array([5.5, 7.0, 30.0]))
NP.atan2, NP.log1p, NP.expm1, NP.square = np.arctan2, np.log1p, np.expm1, np.square
NP.logsigmoid = lambda x: -np.logaddexp(0.0, -x)
NP.softplus = lambda x, beta=1, threshold=20: np.where(x * beta > threshold, x, np.log1p(np.exp(x * beta)) / beta)


def _scipy(name):
    def run(*args):
        import scipy.special
        return np.asarray(getattr(scipy.special, name)(*args))
    return run


NP.lgamma, NP.digamma = _scipy("gammaln"), _scipy("psi")
NP.polygamma = lambda n, x: _scipy("psi")(x) if n == 0 else _scipy("polygamma")(n, x)
TorchNS.softplus = lambda x, beta=1, threshold=20: __import__("torch").nn.functional.softplus(
    x, beta=beta, threshold=threshold)
TorchNS.logsigmoid = lambda x: __import__("torch").nn.functional.logsigmoid(x)

# -- cumulative sums and products ---------------------------------------------------------------
_CUM = [((), 0), ((), -1), ((4,), 0), ((2, 3), 0), ((2, 3), 1), ((2, 3), -1), ((2, 3, 2), 1), ((0,), 0),
        ((2, 0), 1), ((2, 0), 0)]
for _name in ("cumsum", "cumprod"):
    for _shape, _dim in _CUM:
        add(_name, f"{_s(_shape)}-dim{_dim}", _unary(_name, _dim),
            np.asarray(r(*_shape, lo=0.3, hi=1.8) * _rng.choice([-1.0, 1.0], size=_shape)))
add("cumsum", "keyword-dim", lambda m, x: m.cumsum(x, dim=1), r(2, 3))
# torch's cumprod backward with zeros in the input: one zero, a zero first and last, several zeros
add("cumprod", "one-zero", lambda m, x: m.cumprod(x, 0), np.array([1.5, -0.7, 0.0, 1.2, 0.9]))
add("cumprod", "zero-first-and-last", lambda m, x: m.cumprod(x, 1),
    np.array([[0.0, 1.3, -0.8, 1.1], [1.2, 0.6, -1.4, 0.0]]))
add("cumprod", "several-zeros", lambda m, x: m.cumprod(x, -1),
    np.array([[1.1, 0.0, 0.7, 0.0, -1.3], [0.0, 0.0, 1.5, 0.8, 1.2]]))
add("cumprod", "zeros-along-dim0", lambda m, x: m.cumprod(x, 0),
    np.array([[1.1, 0.0, 0.7], [0.0, 0.0, -1.5], [0.6, 1.4, 0.9]]))


def _np_cum(f):
    return lambda x, dim: np.array(x, copy=True) if x.ndim == 0 else f(x, axis=dim)


NP.cumsum, NP.cumprod = _np_cum(np.cumsum), _np_cum(np.cumprod)

# -- triangles -----------------------------------------------------------------------------------
for _name in ("tril", "triu"):
    for _shape in ((3, 3), (2, 4), (4, 2), (2, 3, 3), (3, 0), (2, 2, 0)):
        add(_name, _s(_shape), _unary(_name), r(*_shape))
    for _d in (1, -1, 2, -5):
        add(_name, f"diagonal{_d}", _unary(_name, diagonal=_d), r(3, 4))
NP.tril = lambda x, diagonal=0: np.tril(x, k=diagonal)
NP.triu = lambda x, diagonal=0: np.triu(x, k=diagonal)
