"""NumPy's indexing rules on dask arrays, for what dask itself leaves out.

Dask indexes natively with basic indices, one 1-d integer array, and a bool mask of the whole
shape; it refuses two or more integer arrays ("nd fancy indexing": ``x[[1, 1], [0, 0]]``, the
gathers of ``max(x, dim)``, ``gather``, ``nll_loss``), and it writes neither through them nor
adds repeated indices up. Here every such key becomes one 1-d index into the flattened
array: the advanced dims are moved to the front and merged, and the broadcast index arrays
become one linear position (``i * n1 + j``), so that the read, the write and the
scatter-add stay lazy and chunked.

* ``getitem(arr, key)``: ``arr[key]`` with NumPy's result shape (the broadcast index dims in
  place when the advanced indices are adjacent, first otherwise; ``None`` is a new dim of
  size 1). A bool mask becomes the positions it selects: its size is data, so they are
  computed then (dask's ``compute_chunk_sizes``; the Array API allows an unknown size there,
  but a tensor's shape is always known).
* ``setitem(arr, key, value)``: ``arr[key] = value``; of repeated positions the last write
  stays, as in NumPy.
* ``scatter_add(target, key, values)``: ``target[key] += values`` with repeated positions all
  adding up (NumPy's ``add.at``), through one ``bincount`` with the values as weights.

The writes rebind ``arr`` to the new graph (as dask's own item assignment does): dask arrays
are immutable, and the array object is what the caller holds.

An index out of range raises IndexError in NumPy's words when the index is on the host. An
index that is itself lazy is known only when computed, and dask does not test its range: the
op tests it then (ops/movement.py, core/deferred.py); here an out-of-range position is only
kept from becoming another element's linear position.
"""
from __future__ import annotations

import math
from functools import partial

import numpy as np

from autodsl.backend import dask_device

__all__ = ["getitem", "rebind", "scatter_add", "setitem"]


def _da():
    import dask.array as da  # (only with dask arrays, which means dask is installed)
    return da


def _is_index_array(k) -> bool:
    return not (k is None or k is Ellipsis or isinstance(k, (int, slice)))


def _is_mask(k) -> bool:
    return _is_index_array(k) and np.dtype(k.dtype).kind == "b"


def _native(arr, key) -> bool:
    """Keys dask reads as NumPy does: basic indices with at most one 1-d integer array (and no
    int, which NumPy would count as an advanced index next to it)."""
    arrays = [k for k in key if _is_index_array(k)]
    if not arrays:
        return True
    if len(arrays) > 1 or _is_mask(arrays[0]) or arrays[0].ndim != 1:
        return False
    return not any(isinstance(k, int) for k in key)


def _positions(mask):
    """The integer arrays a bool mask stands for (its nonzero), with known lengths."""
    if isinstance(mask, np.ndarray):
        return list(np.nonzero(mask))
    da = _da()
    idx = da.nonzero(mask)
    # the sizes on the run's scheduler (dask's compute_chunk_sizes uses the default one, which
    # has no results persisted on a session's cluster), once: the arrays are columns of one
    first = dask_device.known_chunks(idx[0])
    return [first] + [da.Array(i.dask, i.name, first.chunks, meta=i._meta) for i in idx[1:]]


def _expand(ndim: int, key: tuple) -> tuple:
    """The key with masks replaced by their positions and the Ellipsis by slices."""
    out = []
    for k in key:
        if _is_mask(k):
            out.extend(_positions(k) if k.ndim else [k])
        else:
            out.append(k)
    used = sum(1 for k in out if k is not None and k is not Ellipsis)
    if used > ndim:
        raise IndexError(f"too many indices for array: array is {ndim}-dimensional, but {used} were indexed")
    full = []
    seen = False
    for k in out:
        if k is Ellipsis:
            if not seen:
                full.extend([slice(None)] * (ndim - used))
            seen = True
        else:
            full.append(k)
    if not seen:
        full.extend([slice(None)] * (ndim - used))
    return tuple(full)


def _checked(k, n: int, axis: int):
    """An integer index array (or int) for a dim of size n, negative positions counted from the
    end; out of range raises (host) or becomes a position no array has (lazy: fails at compute)."""
    if isinstance(k, (int, np.integer)):
        if not -n <= k < n:
            raise IndexError(f"index {k} is out of bounds for axis {axis} with size {n}")
        return np.asarray(k % n if n else k, dtype=np.int64)
    if isinstance(k, np.ndarray):
        if k.size:
            lo, hi = int(k.min()), int(k.max())
            if lo < -n or hi >= n:
                raise IndexError(f"index {lo if lo < -n else hi} is out of bounds for axis {axis} with size {n}")
        return np.where(k < 0, k + n, k).astype(np.int64, copy=False)
    return k          # lazy: made a position in one task with the others (_linear)


def _linear(*ks, sizes):
    """The flat positions of the broadcast index arrays ``ks`` over dims of ``sizes`` (one task
    per block): negative indices count from the end, and one out of range gives the position
    just past the end instead of another element's (the op tests the range: ops/movement.py)."""
    lin = np.zeros((), dtype=np.int64)
    bad = np.zeros((), dtype=bool)
    for k, n in zip(ks, sizes):
        k = np.asarray(k).astype(np.int64, copy=False)
        k = np.where(k < 0, k + n, k)
        bad = bad | (k < 0) | (k >= n)
        lin = lin * n + k
    return np.where(bad, math.prod(sizes), lin)


def getitem(arr, key: tuple):
    """``arr[key]`` with NumPy's rules (see the module doc)."""
    if _native(arr, key):
        return arr[key]
    if len(key) == 1 or (len(key) == 2 and key[1] is Ellipsis):
        k = key[0]
        if _is_mask(k) and k.ndim == arr.ndim and k.ndim and not isinstance(k, np.ndarray):
            if tuple(k.shape) != tuple(arr.shape):
                raise IndexError(f"boolean index did not match indexed array: array shape {arr.shape}, "
                                 f"mask shape {k.shape}")
            return dask_device.known_chunks(arr[k])   # blockwise; only the count is computed
    key = _expand(arr.ndim, key)
    if any(k is None for k in key):       # a new dim of size 1 is a slice over it
        shape, it = [], iter(arr.shape)
        for k in key:
            shape.append(1 if k is None else next(it))
        arr = arr.reshape(tuple(shape))
        key = tuple(slice(None) if k is None else k for k in key)
    adv = [i for i, k in enumerate(key) if not isinstance(k, slice)]
    if not any(_is_index_array(key[i]) for i in adv):
        return arr[key]
    sliced = arr[tuple(k if isinstance(k, slice) else slice(None) for k in key)]
    idx = [_checked(key[i], sliced.shape[i], i) for i in adv]
    bshape = tuple(np.broadcast_shapes(*(tuple(k.shape) for k in idx)))
    rest = [i for i in range(sliced.ndim) if i not in adv]
    rest_shape = tuple(sliced.shape[i] for i in rest)
    da = _da()
    moved = da.transpose(sliced, tuple(adv) + tuple(rest)) if adv != list(range(len(adv))) else sliced
    sizes = [sliced.shape[i] for i in adv]
    flat = moved.reshape((math.prod(sizes),) + rest_shape)
    if any(isinstance(k, da.Array) for k in idx):
        from dask.array.core import elemwise
        lin = da.broadcast_to(elemwise(partial(_linear, sizes=tuple(sizes)), *idx, dtype=np.int64), bshape)
    else:
        lin = idx[0]
        for k, n in zip(idx[1:], sizes[1:]):
            lin = lin * n + k
        lin = np.broadcast_to(lin, bshape)
    out = flat[lin.reshape(-1)].reshape(bshape + rest_shape)
    if adv == list(range(adv[0], adv[-1] + 1)) and adv[0] > 0:
        # adjacent advanced indices: their dims stand where they were (NumPy's rule)
        nb, before = len(bshape), adv[0]
        order = list(range(nb, nb + before)) + list(range(nb)) + list(range(nb + before, out.ndim))
        out = da.transpose(out, tuple(order))
    return out


def _flat_positions(arr, key):
    """The flat positions ``arr[key]`` reads, as an array of the indexed shape."""
    da = _da()
    grid = da.arange(arr.size, dtype=np.int64, chunks=arr.size or 1).reshape(arr.shape)
    return getitem(grid, key)


def rebind(arr, new) -> None:
    """Make the dask array object ``arr`` stand for ``new``'s graph (dask's own item assignment
    does exactly this: ``Array.__setitem__``)."""
    arr._meta = new._meta
    arr.dask = new.dask
    arr._name = new.name
    arr._chunks = new.chunks


def setitem(arr, key: tuple, value) -> None:
    """``arr[key] = value`` (value a number or an array that broadcasts to the indexed shape)."""
    da = _da()
    scalar = isinstance(value, (int, float, bool, np.generic)) or value.ndim == 0
    if (scalar and len(key) <= 2 and _is_mask(key[0]) and key[0].ndim == arr.ndim
            and all(k is Ellipsis for k in key[1:])):
        if tuple(key[0].shape) != tuple(arr.shape):
            raise IndexError(f"boolean index did not match indexed array: array shape {arr.shape}, "
                             f"mask shape {key[0].shape}")
        rebind(arr, da.where(key[0], da.asarray(value, dtype=arr.dtype), arr))    # blockwise
        return
    if any(k is None for k in key) and not any(_is_index_array(k) for k in key):
        # dask's own assignment misreads a None in the key; a new dim is of size 1, so the
        # same write is the key without it and the value without those dims
        plain = tuple(k for k in key if k is not None)
        if not scalar:
            value = da.broadcast_to(value, arr[key].shape).reshape(arr[plain].shape)
        setitem(arr, plain, value)
        return
    # dask writes basic keys itself, except through a negative step (it writes the reverse)
    if _native(arr, key) and not any(_is_mask(k) or isinstance(k, slice) and (k.step or 1) < 0
                                     for k in key):
        arr[key] = value
        return
    if arr.size == 0:
        return
    pos = _flat_positions(arr, key)
    vals = da.broadcast_to(da.asarray(value, dtype=arr.dtype), pos.shape)
    flat = arr.reshape(-1)
    flat[pos.reshape(-1)] = vals.reshape(-1)
    rebind(arr, flat.reshape(arr.shape))


def scatter_add(target, key: tuple, values) -> None:
    """``target[key] += values``, repeated positions all adding up."""
    if target.size == 0:
        return
    da = _da()
    pos = _flat_positions(target, key)
    if pos.size == 0:
        return
    flat = pos.reshape(-1)
    vals = da.broadcast_to(da.asarray(values), pos.shape).reshape(-1).rechunk(flat.chunks)
    added = da.bincount(flat, weights=vals, minlength=target.size)
    rebind(target, target + added.reshape(target.shape).astype(target.dtype))
