"""Op-table samples for gathers, scatters, masks, sorting, argmax/argmin and reductions over dims (see op_samples.py)."""
from __future__ import annotations

import numpy as np
from op_samples import COMPOSITES, NP, TorchNS, add, distinct, r  # noqa: F401

# -- NumPy references ----------------------------------------------------------------------------


def _key(index, d):
    nd = index.ndim
    return tuple(index if i == d else np.arange(n).reshape(tuple(n if j == i else 1 for j in range(nd)))
                 for i, n in enumerate(index.shape))


def _np_gather(x, dim, index):
    if x.ndim == 0:
        return np.full(index.shape, x)
    return np.asarray(x[_key(index, dim % x.ndim)])


def _np_scatter_into(x, dim, index, src, add_at):
    y = np.array(x, copy=True).reshape(x.shape or (1,))
    idx = index.reshape(-1) if x.ndim == 0 else index
    key = _key(idx, dim % y.ndim)
    if isinstance(src, np.ndarray):
        src = src.reshape(-1) if src.ndim == 0 else src
        src = src[tuple(slice(0, n) for n in idx.shape)]
    if add_at:
        np.add.at(y, key, src)
    else:
        y[key] = src
    return y.reshape(x.shape)


def _np_index_select(x, dim, index):
    if x.ndim == 0:
        return np.array(x, copy=True)
    return np.take(x, index.reshape(-1), axis=dim)


def _np_argsort(x, dim, descending):
    # stable both ways (the samples have no NaN)
    return np.argsort(-x if descending else x, axis=dim, kind="stable")


def _np_sort(x, dim=-1, descending=False, stable=False):
    if x.ndim == 0:
        return np.array(x, copy=True), np.array(0)
    idx = _np_argsort(x, dim, descending)
    return np.take_along_axis(x, idx, axis=dim), idx


def _np_topk(x, k, dim=-1, largest=True, sorted=True):
    if x.ndim == 0:
        return np.array(x, copy=True), np.array(0)
    idx = np.take(_np_argsort(x, dim, largest), np.arange(k), axis=dim)
    return np.take_along_axis(x, idx, axis=dim), idx


def _np_argmax(x, dim=None, keepdim=False):
    return np.asarray(np.argmax(x, axis=dim, keepdims=keepdim))


def _np_argmin(x, dim=None, keepdim=False):
    return np.asarray(np.argmin(x, axis=dim, keepdims=keepdim))


def _int_is_dim(orig):
    """torch's max(x, 1): an integer second argument is a dim."""
    def f(x, other=None, dim=None, keepdim=False):
        if isinstance(other, int) and not isinstance(other, bool):
            return orig(x, None, other, dim if isinstance(dim, bool) else keepdim)
        return orig(x, other, dim, keepdim)
    return f


def _np_index_put(orig):
    def f(x, key, v, accumulate=False):
        if not accumulate:
            return orig(x, key, v)
        y = np.array(x, copy=True)
        np.add.at(y, key, v)
        return y
    return f


NP.gather = _np_gather
NP.scatter = lambda x, dim, index, src: _np_scatter_into(x, dim, index, src, False)
NP.scatter_add = lambda x, dim, index, src: _np_scatter_into(x, dim, index, src, True)
NP.index_select = _np_index_select
NP.masked_fill = lambda x, mask, value: np.where(mask, np.asarray(value, dtype=x.dtype), x)
NP.sort, NP.topk, NP.argmax, NP.argmin = _np_sort, _np_topk, _np_argmax, _np_argmin
NP.max, NP.min = _int_is_dim(NP.max), _int_is_dim(NP.min)
NP.index_put = _np_index_put(NP.index_put)


# -- PyTorch adapters ----------------------------------------------------------------------------

def _torch_int_is_dim(orig, name):
    def f(x, other=None, dim=None, keepdim=False):
        if isinstance(other, int) and not isinstance(other, bool):
            return getattr(TorchNS._t(), name)(x, other, dim if isinstance(dim, bool) else keepdim)
        return orig(x, other, dim, keepdim)
    return f


def _torch_index_put(orig):
    def f(x, key, v, accumulate=False):
        if not accumulate:
            return orig(x, key, v)
        return TorchNS._t().index_put(x, key if isinstance(key, tuple) else (key,), v, accumulate=True)
    return f


TorchNS.max, TorchNS.min = _torch_int_is_dim(TorchNS.max, "max"), _torch_int_is_dim(TorchNS.min, "min")
TorchNS.index_put = _torch_index_put(TorchNS.index_put)


def _i(*rows):
    return np.array(rows, dtype=np.int64)


# -- gather, scatter, scatter_add, index_select ---------------------------------------------------

add("gather", "2x3-dim1-repeats", lambda m, x, i: m.gather(x, 1, i), r(2, 3), _i([0, 2, 0], [1, 1, 2]))
add("gather", "2x3-dim0", lambda m, x, i: m.gather(x, 0, i), r(2, 3), _i([1, 0, 1]))
add("gather", "dim-1-smaller-index", lambda m, x, i: m.gather(x, -1, i), r(3, 4), _i([3], [0]))
add("gather", "index-wider-than-x", lambda m, x, i: m.gather(x, 1, i), r(2, 2), _i([1, 0, 1, 1]))
add("gather", "1d", lambda m, x, i: m.gather(x, 0, i), r(4), np.array([3, 3, 0], dtype=np.int64))
add("gather", "scalar", lambda m, x, i: m.gather(x, 0, i), r(), np.array(0, dtype=np.int64))
add("gather", "scalar-1d-index", lambda m, x, i: m.gather(x, 0, i), r(), np.array([0, 0], dtype=np.int64))
add("gather", "empty-index", lambda m, x, i: m.gather(x, 1, i), r(2, 3), np.zeros((2, 0), dtype=np.int64))
add("gather", "empty-x", lambda m, x, i: m.gather(x, 0, i), r(2, 0), np.zeros((1, 0), dtype=np.int64))

# (scatter: no repeated indices, where which write stays is unspecified)
add("scatter", "2x3-dim1", lambda m, x, i, s: m.scatter(x, 1, i, s), r(2, 3), _i([2, 0], [1, 2]), r(2, 2))
add("scatter", "dim0", lambda m, x, i, s: m.scatter(x, 0, i, s), r(3, 2), _i([2, 0]), r(1, 2))
add("scatter", "value", lambda m, x, i: m.scatter(x, 1, i, 2.5), r(2, 3), _i([1], [0]))
add("scatter", "scalar", lambda m, x, i, s: m.scatter(x, 0, i, s), r(), np.array(0, dtype=np.int64), r())
add("scatter", "empty-index", lambda m, x, i, s: m.scatter(x, 1, i, s), r(2, 3),
    np.zeros((2, 0), dtype=np.int64), r(2, 0))
add("scatter_add", "2x3-dim1-repeats", lambda m, x, i, s: m.scatter_add(x, 1, i, s), r(2, 3),
    _i([2, 2, 0], [1, 1, 1]), r(2, 3))
add("scatter_add", "dim0", lambda m, x, i, s: m.scatter_add(x, 0, i, s), r(3, 2), _i([2, 0], [2, 2]),
    r(2, 2))
add("scatter_add", "1d-histogram", lambda m, x, i, s: m.scatter_add(x, 0, i, s), r(3),
    np.array([0, 0, 2, 0], dtype=np.int64), r(4))
add("scatter_add", "scalar", lambda m, x, i, s: m.scatter_add(x, 0, i, s), r(), np.array(0, dtype=np.int64),
    r())
add("scatter_add", "empty-index", lambda m, x, i, s: m.scatter_add(x, 0, i, s), r(2, 3),
    np.zeros((2, 0), dtype=np.int64), r(2, 0))
add("index_select", "2x3-dim1-repeats", lambda m, x, i: m.index_select(x, 1, i), r(2, 3),
    np.array([2, 0, 2], dtype=np.int64))
add("index_select", "dim0", lambda m, x, i: m.index_select(x, 0, i), r(3, 2), np.array([1], dtype=np.int64))
add("index_select", "0d-index", lambda m, x, i: m.index_select(x, -1, i), r(2, 3), np.array(1, dtype=np.int64))
add("index_select", "scalar", lambda m, x, i: m.index_select(x, 0, i), r(), np.array(0, dtype=np.int64))
add("index_select", "empty-index", lambda m, x, i: m.index_select(x, 1, i), r(3, 2),
    np.zeros(0, dtype=np.int64))

# -- masked_fill, index_put(accumulate=true) ------------------------------------------------------

_mask = np.array([[True, False, True], [False, False, True]])
add("masked_fill", "2x3", lambda m, x, k: m.masked_fill(x, k, -1.5), r(2, 3), _mask)
add("masked_fill", "broadcast-mask", lambda m, x, k: m.masked_fill(x, k, 0.0), r(2, 3),
    np.array([False, True, True]))
add("masked_fill", "tensor-value", lambda m, x, k, v: m.masked_fill(x, k, v), r(2, 3), _mask, r())
add("masked_fill", "scalar", lambda m, x, k, v: m.masked_fill(x, k, v), r(), np.array(True), r())
add("masked_fill", "empty", lambda m, x, k: m.masked_fill(x, k, 1.0), r(2, 0), np.zeros((2, 0), dtype=bool))
add("index_put", "accumulate-repeats", lambda m, x, i, v: m.index_put(x, (i,), v, accumulate=True), r(4),
    np.array([3, 0, 3, 3], dtype=np.int64), r(4))
add("index_put", "accumulate-rows", lambda m, x, i, v: m.index_put(x, (i,), v, accumulate=True), r(3, 2),
    np.array([1, 1], dtype=np.int64), r(2))
add("index_put", "accumulate-pairs", lambda m, x, i, j, v: m.index_put(x, (i, j), v, accumulate=True),
    r(2, 3), np.array([0, 1, 0], dtype=np.int64), np.array([2, 2, 2], dtype=np.int64), r(3))

# -- sort, topk -------------------------------------------------------------------------------------

add("sort", "3", lambda m, x: m.sort(x)[0], distinct(3))
add("sort", "2x3-dim0", lambda m, x: m.sort(x, dim=0)[0], distinct(2, 3))
add("sort", "2x3-descending", lambda m, x: m.sort(x, dim=1, descending=True)[0], distinct(2, 3))
add("sort", "stable", lambda m, x: m.sort(x, stable=True)[0], distinct(2, 4))
add("sort", "scalar", lambda m, x: m.sort(x)[0], r())
add("sort", "empty", lambda m, x: m.sort(x, dim=1)[0], r(2, 0))
add("topk", "k2", lambda m, x: m.topk(x, 2)[0], distinct(5))
add("topk", "2x4-dim0-smallest", lambda m, x: m.topk(x, 1, dim=0, largest=False)[0], distinct(2, 4))
add("topk", "2x4-k3", lambda m, x: m.topk(x, 3, dim=1)[0], distinct(2, 4))
add("topk", "scalar", lambda m, x: m.topk(x, 1)[0], r())
add("topk", "k0", lambda m, x: m.topk(x, 0, dim=1)[0], r(2, 3))

# -- max/min over a dim: torch's max(x, 1), empty tensors -----------------------------------------

def _pick(name, *args, first=False, **kw):
    """``m.<name>(x, *args, **kw)``, its values (``[0]``) when ``first``."""
    def fn(m, x):
        out = getattr(m, name)(x, *args, **kw)
        return out[0] if first else out
    return fn


for _name in ("max", "min"):
    add(_name, "int-second-argument", _pick(_name, 1, first=True), distinct(2, 3))
    add(_name, "int-second-argument-keepdim", _pick(_name, 0, True, first=True), distinct(2, 3))
    add(_name, "empty-other-dim", _pick(_name, dim=0, first=True), r(2, 0))
for _name in ("amax", "amin"):
    add(_name, "empty-other-dim", _pick(_name, dim=0), r(2, 0))
add("logsumexp", "empty-dim", lambda m, x: m.logsumexp(x, dim=1), r(2, 0), numpy=False)
add("logsumexp", "empty-dim-keepdim", lambda m, x: m.logsumexp(x, dim=1, keepdim=True), r(2, 0), numpy=False)
add("logsumexp", "empty-other-dim", lambda m, x: m.logsumexp(x, dim=0), r(2, 0))
add("softmax", "empty", lambda m, x: m.softmax(x, dim=1), r(2, 0), numpy=False)
add("softmax", "empty-other-dim", lambda m, x: m.softmax(x, dim=0), r(2, 0))
add("log_softmax", "empty", lambda m, x: m.log_softmax(x, dim=1), r(2, 0), numpy=False)

# -- torch's keywords: reshape(x, shape=...), permute(x, dims=...) ---------------------------------

def _shape_keyword(orig):
    def reshape(x, *sizes, shape=None):
        return orig(x, *((tuple(shape),) if shape is not None else sizes))
    return reshape


def _dims_keyword(orig):
    def permute(x, *order, dims=None):
        return orig(x, *(dims if dims is not None else order))
    return permute


NP.reshape, NP.permute = _shape_keyword(NP.reshape), _dims_keyword(NP.permute)
TorchNS.reshape, TorchNS.permute = _shape_keyword(TorchNS.reshape), _dims_keyword(TorchNS.permute)
add("reshape", "shape-keyword", lambda m, x: m.reshape(x, shape=[3, -1]), r(2, 3))
add("permute", "dims-keyword", lambda m, x: m.permute(x, dims=[2, 0, 1]), r(2, 3, 4))
