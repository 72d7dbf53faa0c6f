"""Op-table samples for linear algebra (einsum, det, inverse, solve) and the losses' keywords (see op_samples.py)."""
from __future__ import annotations

import numpy as np
from op_samples import COMPOSITES, NP, TorchNS, add, r  # noqa: F401

_rng = np.random.default_rng(20261201)


def _wc(*shape):
    """Well-conditioned square matrices: 2·I plus small noise (det far from 0)."""
    n = shape[-1]
    return np.asarray(_rng.uniform(-0.3, 0.3, size=shape) + 2.0 * np.eye(n))


def _np_solve(a, b):
    vec = b.ndim == 1 or (b.ndim == a.ndim - 1 and b.shape == a.shape[:-1])     # torch.linalg.solve's rule
    return np.linalg.solve(a, b[..., None])[..., 0] if vec else np.linalg.solve(a, b)


NP.einsum = lambda eq, *ops: np.asarray(np.einsum(eq, *(ops[0] if isinstance(ops[0], list) else ops)))
NP.det = lambda a: np.asarray(np.linalg.det(a))
NP.inverse = np.linalg.inv
NP.solve = _np_solve
TorchNS.solve = lambda a, b: TorchNS._t().linalg.solve(a, b)

# -- einsum ---------------------------------------------------------------------------------------
_EINSUM = [
    ("matmul", "ij,jk->ik", [(2, 3), (3, 4)]),
    ("implicit-matmul", "ij,jk", [(2, 3), (3, 2)]),
    ("batched", "bij,bjk->bik", [(2, 2, 3), (2, 3, 2)]),
    ("ellipsis-broadcast", "...ij,...jk->...ik", [(2, 2, 3), (3, 2)]),
    ("diagonal", "ii->i", [(3, 3)]),
    ("trace", "ii", [(3, 3)]),
    ("diagonal-batch", "bii->bi", [(2, 3, 3)]),
    ("sum-all", "ij->", [(2, 3)]),
    ("transpose", "ij->ji", [(2, 3)]),
    ("outer", "i,j->ij", [(2,), (3,)]),
    ("dot", "i,i->", [(3,), (3,)]),
    ("three-operands", "ijk,jl,kl->il", [(2, 3, 2), (3, 2), (2, 2)]),
    ("repeated-in-two", "ij,ij->i", [(2, 3), (2, 3)]),
    ("scalar", "", [()]),
    ("scalars", ",->", [(), ()]),
    ("scalar-times-vector", ",i->i", [(), (3,)]),
    ("empty-dot", "i,i", [(0,), (0,)]),
    ("empty-rows", "ij->j", [(2, 0)]),
]


def _einsum_of(equation):
    return lambda m, *xs: m.einsum(equation, *xs)


for _desc, _eq, _shapes in _EINSUM:
    add("einsum", _desc, _einsum_of(_eq), *[r(*s) for s in _shapes])
add("einsum", "list-of-operands", lambda m, a, b: m.einsum("ij,j->i", [a, b]), r(2, 3), r(3))
add("einsum", "empty-contraction", lambda m, a, b: m.einsum("ij,jk->ik", a, m.reshape(b, (0, 3))),
    r(2, 0), r(0))

# -- det, inverse, solve ------------------------------------------------------------------------------
add("det", "3x3", lambda m, a: m.det(a), _wc(3, 3))
add("det", "1x1", lambda m, a: m.det(a), _wc(1, 1))
add("det", "batched", lambda m, a: m.det(a), _wc(2, 3, 3))
add("det", "empty-batch", lambda m, a: m.det(m.reshape(a, (0, 2, 2))), r(0))
add("det", "0x0", lambda m, a: m.det(m.reshape(a, (0, 0))), r(0))
add("inverse", "3x3", lambda m, a: m.inverse(a), _wc(3, 3))
add("inverse", "batched", lambda m, a: m.inverse(a), _wc(2, 2, 2))
# (the output flattened again: the tests build gradients from nested lists, which cannot hold (0, 2, 2))
add("inverse", "empty-batch", lambda m, a: m.reshape(m.inverse(m.reshape(a, (0, 2, 2))), (0,)), r(0))
add("solve", "vector", lambda m, a, b: m.solve(a, b), _wc(3, 3), r(3))
add("solve", "matrix", lambda m, a, b: m.solve(a, b), _wc(3, 3), r(3, 2))
add("solve", "batched-vectors", lambda m, a, b: m.solve(a, b), _wc(2, 3, 3), r(2, 3))
add("solve", "vector-broadcast-batch", lambda m, a, b: m.solve(a, b), _wc(2, 3, 3), r(3))
add("solve", "matrix-broadcast-batch", lambda m, a, b: m.solve(a, b), _wc(3, 3), r(2, 3, 2))
add("solve", "empty-columns", lambda m, a, b: m.solve(a, b), _wc(2, 2), r(2, 0))


# -- the losses' keywords: weight, ignore_index, label_smoothing, (N, C, d1, ...) ------------------------

def _np_nll(logp, t, weight=None, ignore_index=-100, reduction="mean"):
    lp = np.moveaxis(logp, 0 if logp.ndim == 1 else 1, -1)        # classes last
    valid = t != ignore_index
    safe = np.where(valid, t, 0)
    picked = -np.take_along_axis(lp, safe[..., None], axis=-1)[..., 0]
    w = np.ones(lp.shape[-1]) if weight is None else np.asarray(weight, dtype=np.float64)
    wt = np.where(valid, w[safe], 0.0)
    per = np.where(valid, picked * wt, 0.0)
    if reduction == "none":
        return per
    with np.errstate(invalid="ignore"):         # an empty batch's mean: 0 / 0 = nan, as torch
        return np.asarray(per.sum() if reduction == "sum" else per.sum() / wt.sum())


def _np_cross_entropy(x, t, weight=None, ignore_index=-100, reduction="mean", label_smoothing=0.0):
    cdim = 0 if x.ndim == 1 else 1
    n = x.shape[cdim]
    logp = NP.log_softmax(x, cdim)
    wshape = [1] * x.ndim
    wshape[cdim] = n
    wb = np.ones(wshape) if weight is None else np.reshape(np.asarray(weight, dtype=np.float64), wshape)
    red = {"none": lambda v: v, "sum": lambda v: np.asarray(v.sum())}
    if t.dtype.kind == "f":
        terms = logp * (t * (1 - label_smoothing) + label_smoothing / n) * wb
        return red.get(reduction, lambda v: np.asarray(-terms.sum() / (x.size / n)))(-terms.sum(axis=cdim))
    nll = _np_nll(logp, t, weight, ignore_index, reduction)
    if label_smoothing == 0:
        return nll
    valid = t != ignore_index
    smooth = np.where(valid, -(logp * wb).sum(axis=cdim), 0.0)
    w = np.ones(n) if weight is None else np.asarray(weight, dtype=np.float64)
    counted = np.where(valid, w[np.where(valid, t, 0)], 0.0)
    smooth = red.get(reduction, lambda v: np.asarray(v.sum() / counted.sum()))(smooth)
    return nll * (1 - label_smoothing) + smooth * (label_smoothing / n)


def _torch_weight(weight, like):
    return None if weight is None else TorchNS._t().tensor(weight, dtype=like.dtype)


NP.nll_loss = _np_nll
NP.cross_entropy = _np_cross_entropy
TorchNS.nll_loss = lambda a, b, weight=None, **k: TorchNS._t().nn.functional.nll_loss(
    a, b, weight=_torch_weight(weight, a), **k)
TorchNS.cross_entropy = lambda a, b, weight=None, **k: TorchNS._t().nn.functional.cross_entropy(
    a, b, weight=_torch_weight(weight, a), **k)

_W = [0.5, 1.0, 2.0, 1.5]          # a Python list: a constant (floating arrays are differentiable inputs)
_T3 = np.array([1, 0, 3])
_T3_IGNORED = np.array([1, -100, 3])
_TND = np.array([[1, 0, 3], [2, 2, 0]])             # (N, d1) for logits (N, C, d1) = (2, 4, 3)
_PROB = _rng.dirichlet(np.ones(4), size=3)
_PROB_ND = np.moveaxis(_rng.dirichlet(np.ones(4), size=(2, 3)), -1, 1)    # (2, 4, 3), classes in dim 1


def _loss(name, **kw):
    return lambda m, a, t: getattr(m, name)(a, t, **kw)


for _red in ("mean", "sum", "none"):
    add("nll_loss", f"weight-{_red}", _loss("nll_loss", weight=_W, reduction=_red), r(3, 4), _T3)
    add("nll_loss", f"nd-{_red}", _loss("nll_loss", reduction=_red), r(2, 4, 3), _TND)
    add("cross_entropy", f"weight-ignored-{_red}", _loss("cross_entropy", weight=_W, reduction=_red),
        r(3, 4), _T3_IGNORED)
    add("cross_entropy", f"smoothing-{_red}", _loss("cross_entropy", reduction=_red, label_smoothing=0.2),
        r(3, 4), _T3)
    add("cross_entropy", f"smoothing-weight-ignored-{_red}",
        _loss("cross_entropy", weight=_W, reduction=_red, label_smoothing=0.1), r(3, 4), _T3_IGNORED)
    add("cross_entropy", f"nd-weight-smoothing-{_red}",
        _loss("cross_entropy", weight=_W, reduction=_red, label_smoothing=0.1), r(2, 4, 3), _TND)
    add("cross_entropy", f"prob-weight-smoothing-{_red}",
        _loss("cross_entropy", weight=_W, reduction=_red, label_smoothing=0.3), r(3, 4), _PROB)
    add("cross_entropy", f"prob-nd-{_red}", _loss("cross_entropy", reduction=_red), r(2, 4, 3), _PROB_ND)
add("nll_loss", "ignore-index-0", lambda m, a, t: m.nll_loss(a, t, ignore_index=0), r(3, 4), _T3)
add("nll_loss", "weight-unbatched", lambda m, a, t: m.nll_loss(a, t, weight=_W), r(4), np.array(2))
add("nll_loss", "nd-4d", lambda m, a, t: m.nll_loss(a, t, weight=_W), r(2, 4, 3, 2),
    np.array([[[0, 1], [2, 3], [3, 3]], [[1, 1], [0, 2], [2, 0]]]))
add("nll_loss", "empty-batch-sum", lambda m, a, t: m.nll_loss(m.reshape(a, (0, 4)), t, reduction="sum"),
    r(0), np.zeros(0, dtype=np.int64))
add("nll_loss", "empty-batch-mean", lambda m, a, t: m.nll_loss(m.reshape(a, (0, 4)), t),
    r(0), np.zeros(0, dtype=np.int64))
add("cross_entropy", "weight-unbatched-smoothing",
    lambda m, a, t: m.cross_entropy(a, t, weight=_W, label_smoothing=0.25), r(4), np.array(3))
add("cross_entropy", "prob-unbatched-smoothing", lambda m, a, t: m.cross_entropy(a, t, label_smoothing=0.1),
    r(4), _rng.dirichlet(np.ones(4)))
add("cross_entropy", "empty-batch", lambda m, a, t: m.cross_entropy(m.reshape(a, (0, 4)), t, weight=_W),
    r(0), np.zeros(0, dtype=np.int64))
