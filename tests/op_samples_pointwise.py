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

def _unary(name):
    return lambda m, x: getattr(m, name)(x)


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
