"""The ops of the differential fuzz against PyTorch (tests/test_fuzz_vs_torch.py).

Each op is ``Op(name, arity, params, fn)``: ``params(draw, shapes)`` draws the op's
non-tensor arguments from the operands' shapes (a dim that exists, an exponent, a shape to
reshape to), and ``fn(m, *tensors, **params)`` computes it on a namespace ``m``: ``AD``
(autodsl) or ``TORCH`` (PyTorch with autodsl's spellings where they differ), so one lambda
runs on both. Kinds: elementwise (unary, with a number, binary with broadcasting),
reductions, views, matmul, and in-place writes: into a clone, straight into an intermediate
result, and through a view of one (reshape, transpose, permute, indexing) so that the write
lands in the base.
"""
from __future__ import annotations

import math

from hypothesis import strategies as st

import autodsl as ad
from op_samples import _Torch as _OpSamplesTorch

__all__ = ["AD", "OPS", "TORCH", "Op"]


class Op:
    def __init__(self, name, arity, params, fn, inplace=False):
        self.name, self.arity, self.params, self.fn, self.inplace = name, arity, params, fn, inplace

    def __repr__(self):
        return self.name


class _AD:
    """autodsl as the chain sees it."""

    def __getattr__(self, name):
        return getattr(ad, name)

    is_torch = False

    @staticmethod
    def vector_norm(x, p, dim, keepdim):
        return ad.norm(x, p=p, dim=dim, keepdim=keepdim)


class _Torch(_OpSamplesTorch):
    """PyTorch with autodsl's signatures where they differ: the op table's (tests/op_samples.py),
    and the few the chains add."""

    is_torch = True

    def softplus(self, x):
        return self._t().nn.functional.softplus(x)

    def logsigmoid(self, x):
        return self._t().nn.functional.logsigmoid(x)

    def relu(self, x):
        return self._t().relu(x)

    def sum(self, x, dim=None, keepdim=False):
        return self._t().sum(x, dim=() if dim is None else dim, keepdim=keepdim)

    def vector_norm(self, x, p, dim, keepdim):
        return self._t().linalg.vector_norm(x, ord=p, dim=dim, keepdim=keepdim)


AD = _AD()
TORCH = _Torch()


def _none(draw, shapes):
    return {}


def _dim(shape, draw, allow_none=True):
    choices = ([None] if allow_none else []) + list(range(-len(shape), len(shape)))
    return draw(st.sampled_from(choices or [None]))


def _reduce_params(need_dim=False):
    def params(draw, shapes):
        (shape,) = shapes
        dim = _dim(shape, draw, allow_none=not need_dim)
        if dim is None and need_dim:
            dim = 0         # a 0-d tensor has dim 0 (and -1) too
        return {"dim": dim, "keepdim": draw(st.booleans())}
    return params


def _dim_only(draw, shapes):
    (shape,) = shapes
    return {"dim": _dim(shape, draw, allow_none=False) if shape else 0}


_UNARY = {
    "neg": lambda m, x: m.neg(x), "exp": lambda m, x: m.exp(x), "sin": lambda m, x: m.sin(x),
    "cos": lambda m, x: m.cos(x), "tanh": lambda m, x: m.tanh(x),
    "sigmoid": lambda m, x: m.sigmoid(x), "relu": lambda m, x: m.relu(x),
    "abs": lambda m, x: m.abs(x), "sign": lambda m, x: m.sign(x),
    "square": lambda m, x: m.square(x), "sqrt": lambda m, x: m.sqrt(x),
    "log": lambda m, x: m.log(x), "log1p": lambda m, x: m.log1p(x),
    "expm1": lambda m, x: m.expm1(x), "softplus": lambda m, x: m.softplus(x),
    "logsigmoid": lambda m, x: m.logsigmoid(x), "floor": lambda m, x: m.floor(x),
    "ceil": lambda m, x: m.ceil(x), "round": lambda m, x: m.round(x),
    "trunc": lambda m, x: m.trunc(x), "clone": lambda m, x: m.clone(x),
}

_BINARY = {
    "add": lambda m, a, b: a + b, "sub": lambda m, a, b: a - b, "mul": lambda m, a, b: a * b,
    "div": lambda m, a, b: a / b, "maximum": lambda m, a, b: m.maximum(a, b),
    "minimum": lambda m, a, b: m.minimum(a, b), "atan2": lambda m, a, b: m.atan2(a, b),
    "pow": lambda m, a, b: m.pow(a, b),
    "where": lambda m, a, b: m.where(a > b, a, b),
}

_NUMBERS = [0, 1, 2, 3, 0.5, -1, -2, 2.5, -0.5, 1e-3]


def _number(draw, shapes):
    return {"c": draw(st.sampled_from(_NUMBERS))}


def _clamp(draw, shapes):
    lo = draw(st.sampled_from([None, -1.0, 0.0, 0.5]))
    hi = draw(st.sampled_from([None, 1.0, 0.0, 2.0] if lo is not None else [1.0, 0.0, 2.0]))
    return {"lo": lo, "hi": hi}


def _reshape(draw, shapes):
    (shape,) = shapes
    n = math.prod(shape)
    opts = [(-1,), (n,), (1, n), (n, 1)]
    if n == 6:
        opts += [(3, 2), (2, 3), (6,), (2, -1), (1, 2, 3)]
    return {"shape": draw(st.sampled_from(opts))}


def _perm(draw, shapes):
    (shape,) = shapes
    return {"dims": draw(st.permutations(range(len(shape))))}


def _transpose(draw, shapes):
    (shape,) = shapes
    if not shape:
        return {"d0": -1, "d1": -1}
    return {"d0": _dim(shape, draw, False), "d1": _dim(shape, draw, False)}


def _unsqueeze(draw, shapes):
    (shape,) = shapes
    return {"dim": draw(st.integers(-len(shape) - 1, len(shape)))}


def _expand(draw, shapes):
    (shape,) = shapes
    return {"shape": tuple([2] + [3 if s == 1 and draw(st.booleans()) else s for s in shape])}


def _index(draw, shapes):
    (shape,) = shapes
    if not shape:
        return {"key": ()}
    k = draw(st.sampled_from(["0", "-1", "1:", ":1", "::2", "..., 0", ":, 1:", "none"]))
    key = {"0": 0, "-1": -1, "1:": slice(1, None), ":1": slice(None, 1), "::2": slice(None, None, 2),
           "..., 0": (Ellipsis, 0), ":, 1:": (slice(None), slice(1, None)), "none": None}[k]
    return {"key": key}


def _norm(draw, shapes):
    (shape,) = shapes
    p = draw(st.sampled_from([2, 1, math.inf, 3]))
    return {"p": p, "dim": _dim(shape, draw), "keepdim": draw(st.booleans())}


def _std(draw, shapes):
    d = _reduce_params()(draw, shapes)
    d["correction"] = draw(st.sampled_from([0, 1]))
    return d


def _view_write(draw, shapes):
    """In-place through a view of a fresh intermediate result (the base is what flows on)."""
    (shape,) = shapes
    views = ["reshape", "index"] + (["transpose", "permute"] if len(shape) >= 2 else [])
    view = draw(st.sampled_from(views))
    write = draw(st.sampled_from(["mul_", "add_", "setitem", "setitem_tensor"]))
    return {"view": view, "write": write, "c": draw(st.sampled_from([2.0, -1.0, 0.0, 0.5]))}


def _apply_view(x, view):
    if view == "reshape":
        return x.reshape(-1)
    if view == "transpose":
        return x.transpose(0, 1)
    if view == "permute":
        return x.permute(list(reversed(range(x.ndim))))
    return x[0] if x.ndim else x[()]


def view_write(m, x, y, view, write, c):
    base = x * 1.0                  # a non-leaf to write into (x may be a leaf)
    v = _apply_view(base, view)
    if write == "mul_":
        v.mul_(c)
    elif write == "add_":
        v.add_(y if y.ndim <= v.ndim and all(s in (1, t) for s, t in zip(y.shape[::-1], v.shape[::-1]))
               else c)
    elif write == "setitem":
        v[...] = c
    else:
        v[...] = y.sum() * c        # a recorded value written through the view
    return base


def inplace_direct(m, x, y, method):
    """In-place straight into an intermediate result, as torch allows (its saved values may be
    needed by backward: then both must refuse at backward)."""
    getattr(x, method)(y)
    return x


OPS: list[Op] = []
for _n, _f in _UNARY.items():
    OPS.append(Op(_n, 1, _none, _f))
for _n, _f in _BINARY.items():
    OPS.append(Op(_n, 2, _none, _f))
OPS += [
    Op("pow_number", 1, _number, lambda m, x, c: x ** c),
    Op("number_pow", 1, _number, lambda m, x, c: m.pow(m.tensor(abs(c) + 0.5, dtype=x.dtype), x)),
    Op("mul_number", 1, _number, lambda m, x, c: x * c),
    Op("rdiv_number", 1, _number, lambda m, x, c: c / x),
    Op("rsub_number", 1, _number, lambda m, x, c: c - x),
    Op("clamp", 1, _clamp, lambda m, x, lo, hi: m.clamp(x, min=lo, max=hi)),
    Op("sum", 1, _reduce_params(), lambda m, x, dim, keepdim: m.sum(x, dim=dim, keepdim=keepdim)),
    Op("mean", 1, _reduce_params(), lambda m, x, dim, keepdim: m.mean(x, dim=dim, keepdim=keepdim)),
    Op("prod", 1, _reduce_params(), lambda m, x, dim, keepdim: m.prod(x, dim=dim, keepdim=keepdim)),
    Op("amax", 1, _reduce_params(), lambda m, x, dim, keepdim: m.amax(x, dim=dim, keepdim=keepdim)),
    Op("amin", 1, _reduce_params(), lambda m, x, dim, keepdim: m.amin(x, dim=dim, keepdim=keepdim)),
    Op("max", 1, _none, lambda m, x: m.max(x)),
    Op("std", 1, _std, lambda m, x, dim, keepdim, correction: m.std(x, dim=dim, keepdim=keepdim,
                                                                      correction=correction)),
    Op("var", 1, _std, lambda m, x, dim, keepdim, correction: m.var(x, dim=dim, keepdim=keepdim,
                                                                      correction=correction)),
    Op("logsumexp", 1, _reduce_params(need_dim=True),
       lambda m, x, dim, keepdim: m.logsumexp(x, dim=dim, keepdim=keepdim)),
    Op("norm", 1, _norm, lambda m, x, p, dim, keepdim: m.vector_norm(x, p, dim, keepdim)),
    Op("softmax", 1, _dim_only, lambda m, x, dim: m.softmax(x, dim)),
    Op("log_softmax", 1, _dim_only, lambda m, x, dim: m.log_softmax(x, dim)),
    Op("cumsum", 1, _dim_only, lambda m, x, dim: m.cumsum(x, dim)),
    Op("cumprod", 1, _dim_only, lambda m, x, dim: m.cumprod(x, dim)),
    Op("reshape", 1, _reshape, lambda m, x, shape: x.reshape(*shape)),
    Op("permute", 1, _perm, lambda m, x, dims: x.permute(list(dims))),
    Op("transpose", 1, _transpose, lambda m, x, d0, d1: x.transpose(d0, d1)),
    Op("unsqueeze", 1, _unsqueeze, lambda m, x, dim: x.unsqueeze(dim)),
    Op("squeeze", 1, _none, lambda m, x: x.squeeze()),
    Op("expand", 1, _expand, lambda m, x, shape: x.expand(*shape)),
    Op("index", 1, _index, lambda m, x, key: x[key]),
    Op("matmul", 2, _none, lambda m, a, b: a @ b),
    Op("cat", 2, _dim_only, lambda m, a, b, dim: m.cat([a, b], dim=dim)),
    Op("stack", 2, _unsqueeze, lambda m, a, b, dim: m.stack([a, b], dim=dim)),
    Op("sort", 1, _dim_only, lambda m, x, dim: m.sort(x, dim=dim).values),
    Op("topk", 1, _dim_only, lambda m, x, dim: m.topk(x, 1, dim=dim).values),
    Op("flatten", 1, _none, lambda m, x: m.flatten(x)),
    Op("masked_fill", 2, _number, lambda m, x, y, c: m.masked_fill(x, y > 0, c)),
    Op("index_select", 1, _dim_only,
       lambda m, x, dim: m.index_select(x, dim, m.tensor([0, 0] if x.ndim else [0], dtype=m.int64))),
    Op("tril", 1, _none, lambda m, x: m.tril(x)),
    Op("T", 1, _none, lambda m, x: x.T),
    Op("view_write", 2, _view_write, view_write, inplace=True),
    Op("add_", 2, lambda d, s: {"method": "add_"}, inplace_direct, inplace=True),
    Op("mul_", 2, lambda d, s: {"method": "mul_"}, inplace_direct, inplace=True),
    Op("div_", 2, lambda d, s: {"method": "div_"}, inplace_direct, inplace=True),
]
