"""Long ops split into deterministic pieces, so that an interrupt or a time limit lands between two.

One NumPy call cannot be interrupted: Ctrl-C is raised by Python between two calls, and
``autodsl.core.limits.poll()`` (the time limit) runs between them too. An op whose work is
above ``LARGE`` elements therefore runs here, as a sequence of calls of about ``PIECE``
elements each (``MATMUL_PIECE`` multiply-adds for a matrix product), calling ``poll()``
before each. The pieces depend only on the shapes, never on timing, so results are the same
on every run; they equal the one-call results within float rounding (partial sums are added
in float64 for a float32 sum, in order). Below ``LARGE`` nothing here runs: the callers check
a size first, and that check is all the small ops pay.

* reductions: ``sum``, ``mean``, ``prod``, ``amax``/``amin``, ``sum_sq`` (norm), ``abs_pow_sum``
  (p-norm), ``var`` (var and std), ``logsumexp``, ``softmax``/``log_softmax``: the input is cut
  into blocks of whole trailing dims, each block reduced with keepdims and combined into the
  result in C order;
* ``matmul``: the result is cut into tiles of rows and columns (batch slabs for small
  matrices), the inner dim too when it alone is above a piece;
* ``pointwise(forward, arrays, params)``: an elementwise forward run on blocks of the
  broadcast result (ops/registry.py calls it for ops marked ``pointwise``);
* ``draw`` and ``filled``: ``rand``/``randn`` (the same numbers as one draw) and ``ones``/``full``.

A lazy array (dask's) is never cut here: it is a graph that dask already runs in its own chunks,
and nothing computes until it is asked to, so each function below gives the one-call graph.

Inputs here are large, and often ``expand``ed views with stride 0 whose every element is the
same memory: a piece never copies more than itself.
"""
from __future__ import annotations

import itertools
import math

from autodsl import backend
from autodsl.backend import kind_of, namespace_of
from autodsl.core.limits import poll

__all__ = ["LARGE", "MATMUL_PIECE", "PIECE", "abs_pow_sum", "amax", "amin", "arg_extreme", "blocks",
           "draw", "filled", "log_softmax", "logsumexp", "matmul", "may_be_large", "mean", "pointwise", "prod",
           "reduce_all", "reduce_any", "softmax", "sum", "sum_sq", "var"]

# Work (elements visited) above which an op is split; 2**24 float64 elements take tens of
# milliseconds, so the unsplit ops all end well within a second.
LARGE = 1 << 24
# Elements per piece of a reduction or pointwise op (a few milliseconds each).
PIECE = 1 << 22
# Multiply-adds per piece of a matrix product: about a tenth of a second of BLAS on two cores.
# Measured on a 3000 x 3000 product against one call: 2**29 took 1.55x its time, 2**31 1.13x
# (smaller products run BLAS further from its full speed).
MATMUL_PIECE = 1 << 31


def blocks(shape, budget):
    """The blocks of an array of ``shape``, in C order: ``(index, first_coords)`` where
    ``index`` is a tuple of slices (every dim kept) and ``first_coords`` the block's start
    along each dim. Each block holds at most ``budget`` elements (one row of the last dim at
    least): whole trailing dims, a run of indices along one dim, single indices before it."""
    ndim = len(shape)
    k, tail = ndim, 1
    while k > 0 and tail * shape[k - 1] <= budget:
        k -= 1
        tail *= shape[k]
    if k == 0:
        yield tuple(slice(None) for _ in shape), (0,) * ndim
        return
    s = k - 1                                   # the dim cut into runs
    step = max(1, budget // tail)
    rest = (slice(None),) * (ndim - s - 1)
    for lead in itertools.product(*(range(n) for n in shape[:s])):
        head = tuple(slice(i, i + 1) for i in lead)
        for start in range(0, shape[s], step):
            yield (head + (slice(start, min(start + step, shape[s])),) + rest,
                   lead + (start,) + (0,) * (ndim - s - 1))


def _reduce(a, axes, keepdim, part, combine, acc_dtype=None):
    """Reduce ``a`` over ``axes`` block by block: ``part(block, out_index)`` gives a block's
    reduction with keepdims (``out_index``: where it lands in the keepdims result) and
    ``combine(x, y)`` merges two of them. The result has ``acc_dtype`` (default: the first
    part's dtype) until the caller converts it."""
    xp = namespace_of(a)
    if backend.is_lazy(a):              # one call: dask reduces chunk by chunk itself
        out = part(a, tuple(slice(None) for _ in a.shape))
        if acc_dtype is not None and out.dtype != acc_dtype:
            out = xp.astype(out, acc_dtype)
        return out if keepdim or not axes else xp.reshape(
            out, tuple(n for i, n in enumerate(a.shape) if i not in axes))
    kshape = tuple(1 if i in axes else n for i, n in enumerate(a.shape))
    out = None
    for idx, coords in blocks(a.shape, PIECE):
        poll()
        oidx = tuple(slice(None) if i in axes else sl for i, sl in enumerate(idx))
        p = part(a[idx], oidx)
        if out is None:
            out = xp.empty(kshape, dtype=p.dtype if acc_dtype is None else acc_dtype)
        if acc_dtype is not None and p.dtype != acc_dtype:
            p = xp.astype(p, acc_dtype)
        if all(coords[i] == 0 for i in axes):    # the first block that reaches this part of out
            out[oidx] = p
        else:
            out[oidx] = combine(out[oidx], p)
    if keepdim or not axes:
        return out
    return xp.reshape(out, tuple(n for i, n in enumerate(a.shape) if i not in axes))


def _acc(a):
    """float64 partial sums for float32 input (many pieces added in order lose less)."""
    xp = namespace_of(a)
    return backend.native_dtype(backend.float64, xp) if kind_of(a.dtype) == "f" else None


def _cast(out, like):
    xp = namespace_of(out)
    return out if out.dtype == like else xp.astype(out, like)


def sum(a, axes, keepdim):
    """``sum(a, axes)`` in pieces; bool counts as int64 (torch), per piece."""
    xp = namespace_of(a)
    if kind_of(a.dtype) == "b":
        def part(blk, _):
            return backend.reduce_sum(xp.astype(blk, xp.int64), axes, True)
    else:
        def part(blk, _):
            return backend.reduce_sum(blk, axes, True)
    out = _reduce(a, axes, keepdim, part, _add, _acc(a))
    return _cast(out, a.dtype) if kind_of(a.dtype) == "f" else out


def mean(a, axes, keepdim, count):
    """``mean`` of a floating ``a``: the pieces' sum divided by ``count``."""
    def part(blk, _):
        return backend.reduce_sum(blk, axes, True)
    return _cast(_reduce(a, axes, keepdim, part, _add, _acc(a)) / count, a.dtype)


def prod(a, axes, keepdim):
    """``prod`` in pieces (products multiplied in order, in NumPy's result dtype)."""
    xp = namespace_of(a)

    def part(blk, _):
        return xp.prod(blk, axis=axes, keepdims=True)
    return _reduce(a, axes, keepdim, part, _mul)


def amax(a, axes, keepdim):
    """``max`` over axes in pieces (a nan anywhere gives nan, as in one call)."""
    xp = namespace_of(a)
    return _reduce(a, axes, keepdim, lambda blk, _: xp.max(blk, axis=axes, keepdims=True), xp.maximum)


def amin(a, axes, keepdim):
    """``min`` over axes in pieces."""
    xp = namespace_of(a)
    return _reduce(a, axes, keepdim, lambda blk, _: xp.min(blk, axis=axes, keepdims=True), xp.minimum)


def reduce_any(a, axes, keepdim):
    """``any`` over axes in pieces."""
    xp = namespace_of(a)
    return _reduce(a, axes, keepdim, lambda blk, _: xp.any(blk, axis=axes, keepdims=True), xp.logical_or)


def reduce_all(a, axes, keepdim):
    """``all`` over axes in pieces."""
    xp = namespace_of(a)
    return _reduce(a, axes, keepdim, lambda blk, _: xp.all(blk, axis=axes, keepdims=True), xp.logical_and)


def arg_extreme(a, axis, pick):
    """``argmax`` (``pick`` "max") or ``argmin`` along ``axis`` with keepdims, in pieces: the
    first index of the extreme, as one call gives (a nan counts as the extreme, its first one)."""
    xp = namespace_of(a)
    if backend.is_lazy(a):
        return xp.astype((xp.argmax if pick == "max" else xp.argmin)(a, axis=axis, keepdims=True), xp.int64)
    kshape = tuple(1 if i == axis else n for i, n in enumerate(a.shape))
    value = index = None
    better = xp.greater if pick == "max" else xp.less
    floating = kind_of(a.dtype) == "f"
    for idx, coords in blocks(a.shape, PIECE):
        poll()
        blk = a[idx]
        oidx = tuple(slice(None) if i == axis else sl for i, sl in enumerate(idx))
        bi = (xp.argmax if pick == "max" else xp.argmin)(blk, axis=axis, keepdims=True)
        bv = xp.take_along_axis(blk, bi, axis=axis)
        bi = xp.astype(bi, xp.int64) + coords[axis]
        if value is None:
            value, index = xp.empty(kshape, dtype=a.dtype), xp.empty(kshape, dtype=xp.int64)
        if coords[axis] == 0:
            value[oidx], index[oidx] = bv, bi
            continue
        v = value[oidx]
        take = better(bv, v)
        if floating:                    # a nan wins over numbers, and the first nan stays
            take = xp.logical_or(take, xp.logical_and(xp.isnan(bv), xp.logical_not(xp.isnan(v))))
            take = xp.logical_and(take, xp.logical_not(xp.isnan(v)))
        value[oidx] = xp.where(take, bv, v)
        index[oidx] = xp.where(take, bi, index[oidx])
    return index


def sum_sq(a, axes, keepdim):
    """``sum(a * a)`` over axes (the 2-norm's sum) in pieces."""
    def part(blk, _):
        return backend.reduce_sum(blk * blk, axes, True)
    return _cast(_reduce(a, axes, keepdim, part, _add, _acc(a)), a.dtype)


def abs_pow_sum(a, p, axes, keepdim):
    """``sum(|a| ^ p)`` over axes (the p-norm's sum) in pieces."""
    xp = namespace_of(a)

    def part(blk, _):
        return backend.reduce_sum(xp.abs(blk) ** p, axes, True)
    return _cast(_reduce(a, axes, keepdim, part, _add, _acc(a)), a.dtype)


def var(a, axes, keepdim, count, denom):
    """``sum((a - mean(a))^2) / denom`` over axes: two passes of pieces (the mean, then the
    squares about it), as the one-call forward computes it."""
    mu = mean(a, axes, True, count)

    def part(blk, oidx):
        d = blk - mu[oidx]
        return backend.reduce_sum(d * d, axes, True)
    return _cast(_reduce(a, axes, keepdim, part, _add, _acc(a)) / denom, a.dtype)


def _shift(a, axes):
    """The max over axes (keepdims), 0 where it is not finite: logsumexp's shift (torch's)."""
    xp = namespace_of(a)
    m = amax(a, axes, True)
    return xp.where(xp.isfinite(m), m, xp.zeros((), dtype=m.dtype))


def logsumexp(a, axes, keepdim):
    """``log(sum(exp(a - m))) + m`` over axes, m the finite max: two passes of pieces."""
    xp = namespace_of(a)
    m = _shift(a, axes)

    def part(blk, oidx):
        return backend.reduce_sum(xp.exp(blk - m[oidx]), axes, True)
    s = xp.log(_cast(_reduce(a, axes, True, part, _add, _acc(a)), a.dtype)) + m
    return s if keepdim else xp.reshape(s, tuple(n for i, n in enumerate(a.shape) if i not in axes))


def _normalized(a, axis, finish):
    """``finish(block, m, s)`` on every block, m the max and s the sum of exp(a - m) along
    ``axis`` (keepdims): softmax's and log_softmax's three passes. The max as it is, as the
    one-call forward (torch's kernels): a +inf logit makes its slice nan."""
    xp = namespace_of(a)
    axes = (axis,)
    m = amax(a, axes, True)
    if backend.is_lazy(a):
        return finish(a, m, backend.reduce_sum(xp.exp(a - m), axes, True))

    def part(blk, oidx):
        return backend.reduce_sum(xp.exp(blk - m[oidx]), axes, True)
    s = _cast(_reduce(a, axes, True, part, _add, _acc(a)), a.dtype)
    out = xp.empty(a.shape, dtype=a.dtype)
    for idx, _ in blocks(a.shape, PIECE):
        poll()
        sidx = tuple(slice(None) if i == axis else sl for i, sl in enumerate(idx))
        out[idx] = finish(a[idx], m[sidx], s[sidx])
    return out


def softmax(a, axis):
    """``exp(a - m) / sum(exp(a - m))`` along ``axis`` in pieces."""
    xp = namespace_of(a)
    return _normalized(a, axis, lambda blk, m, s: xp.exp(blk - m) / s)


def log_softmax(a, axis):
    """``(a - m) - log(sum(exp(a - m)))`` along ``axis`` in pieces, as the one-call forward."""
    xp = namespace_of(a)
    return _normalized(a, axis, lambda blk, m, s: (blk - m) - xp.log(s))


def _add(x, y):
    return x + y


def _mul(x, y):
    return x * y


# -- matrix products ------------------------------------------------------------------------------

def matmul_work(a, b) -> int:
    """Multiply-adds of ``a @ b`` (batch dims broadcast); 0 when the shapes do not fit."""
    n = a.shape[-1]
    if b.shape[0 if b.ndim == 1 else -2] != n:
        return 0
    m = a.shape[-2] if a.ndim > 1 else 1
    p = b.shape[-1] if b.ndim > 1 else 1
    if a.ndim <= 2 and b.ndim <= 2:
        return m * n * p
    try:
        batch = backend.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    except Exception:  # noqa: BLE001 - the one-call product reports the shapes
        return 0
    return math.prod(batch) * m * n * p


def matmul(a, b):
    """``a @ b`` in pieces when it is above ``LARGE`` multiply-adds (else one call): panels of
    whole rows of the result, or tiles of rows and columns for wide results (each column
    strip of ``b`` copied once, so that every piece is a product of contiguous matrices), one
    batch index at a time; slabs of the batch for small matrices; the inner dim cut too only
    when it alone is above a piece. Shapes that do not fit go to the one call, which reports
    them."""
    # not large, or at most one piece's work whatever the operands (smaller products cost
    # BLAS speed), or a lazy product: one call. An expanded operand (stride 0) is not BLAS's,
    # NumPy's own loop is many times slower: its pieces are smaller (the test of the strides
    # only where it decides)
    work = matmul_work(a, b)
    if work <= LARGE or work <= MATMUL_PIECE // 16 or backend.is_lazy(a) or backend.is_lazy(b):
        return a @ b
    piece = MATMUL_PIECE if _dense(a) and _dense(b) else MATMUL_PIECE // 16
    if work <= piece:
        return a @ b
    xp = namespace_of(a)
    a2 = xp.expand_dims(a, axis=0) if a.ndim == 1 else a          # (n,) -> (1, n)
    b2 = xp.expand_dims(b, axis=-1) if b.ndim == 1 else b         # (n,) -> (n, 1)
    batch = tuple(backend.broadcast_shapes(a2.shape[:-2], b2.shape[:-2]))
    (m, n), p = a2.shape[-2:], b2.shape[-1]
    inner = min(n, piece)
    kslices = [slice(k, min(k + inner, n)) for k in range(0, n, inner)]
    budget = max(1, piece // inner)                 # result elements per piece
    out = None
    whole = slice(None)
    if m * p <= budget:                             # small matrices: slabs of the batch
        for bidx, _ in blocks(batch, max(1, budget // max(1, m * p))):
            for ks in kslices:
                poll()
                part = a2[_batch_index(bidx, a2.shape[:-2]) + (whole, ks)] @ \
                    b2[_batch_index(bidx, b2.shape[:-2]) + (ks, whole)]
                out = _put(out, bidx + (whole, whole), part, ks.start == 0, batch + (m, p))
    else:
        # tall tiles (up to 1024 rows): BLAS runs them near its full speed, square ones of the
        # same work often at a fraction of it
        if p * min(m, 1024) <= budget:
            c = p                                   # panels of whole rows
            r = min(m, max(1, budget // p))
        else:
            r = min(m, 1024, budget)
            c = max(1, budget // r)
        for bi in itertools.product(*(range(s) for s in batch)):
            head = tuple(slice(i, i + 1) for i in bi)
            ah, bh = _batch_index(head, a2.shape[:-2]), _batch_index(head, b2.shape[:-2])
            for j in range(0, p, c):
                cols = slice(j, min(j + c, p))
                for ks in kslices:
                    strip = b2[bh + (ks, cols)]
                    if c < p:                       # a contiguous copy: BLAS reads it fast
                        strip = xp.asarray(strip, copy=True)
                    for i in range(0, m, r):
                        poll()
                        rows = slice(i, min(i + r, m))
                        out = _put(out, head + (rows, cols), a2[ah + (rows, ks)] @ strip, ks.start == 0,
                                   batch + (m, p))
    shape = batch + ((m,) if a.ndim > 1 else ()) + ((p,) if b.ndim > 1 else ())
    return namespace_of(out).reshape(out, shape)


def _dense(x) -> bool:
    """No dim longer than 1 with stride 0 (an array without strides counts as dense)."""
    return all(st != 0 or n == 1 for st, n in zip(getattr(x, "strides", ()), x.shape))


def _put(out, idx, part, first, shape):
    """Write a piece of a product into ``out`` (made on the first piece), or add it to what an
    earlier piece of the inner dim left there."""
    if out is None:
        out = namespace_of(part).empty(shape, dtype=part.dtype)
    if first:
        out[idx] = part
    else:
        out[idx] = out[idx] + part
    return out


def _batch_index(bi, shape):
    """The slices of an operand's own batch dims (right-aligned, size 1 kept whole) for the
    result's batch slices ``bi``."""
    lead = len(bi) - len(shape)
    return tuple(slice(None) if n == 1 else bi[lead + i] for i, n in enumerate(shape))


# -- elementwise ops ------------------------------------------------------------------------------

def may_be_large(arrays) -> bool:
    """Cheap test of a pointwise op's inputs: can the broadcast result be above ``LARGE``
    elements? (It is at most the product of the inputs' sizes, and above both only when
    they differ in shape.) ``pointwise`` then works out the result's size."""
    if len(arrays) > 2:
        n = 1
        for x in arrays:
            n *= x.size
        return n > LARGE
    a, b = arrays[0], arrays[-1]
    na, nb = a.size, b.size
    if na * nb <= LARGE or na > LARGE or nb > LARGE:
        return na * nb > LARGE
    # both at most LARGE: the result is larger than both only when neither shape broadcasts
    # into the other (a bias (512,) into (256, 512) gives (256, 512): no pieces to work out)
    sa, sb = a.shape, b.shape
    if sa == sb or na == 1 or nb == 1:
        return False
    la, lb = len(sa), len(sb)
    return not (lb <= la and sa[la - lb:] == sb or la <= lb and sb[lb - la:] == sa)


def pointwise(forward, arrays, params):
    """``forward(*arrays, **params)`` of an elementwise op, on blocks of the broadcast result
    when that is above ``LARGE`` elements (else one call)."""
    try:
        shape = tuple(backend.broadcast_shapes(*(x.shape for x in arrays)))
    except Exception:  # noqa: BLE001 - the one call reports shapes that do not broadcast
        return forward(*arrays, **params)
    if math.prod(shape) <= LARGE or any(backend.is_lazy(x) for x in arrays):
        return forward(*arrays, **params)
    xp = namespace_of(arrays[0])
    out = None
    for idx, _ in blocks(shape, PIECE):
        poll()
        part = forward(*(x if x.ndim == 0 else x[_batch_index(idx, x.shape)] for x in arrays), **params)
        if out is None:
            out = xp.empty(shape, dtype=part.dtype)
        out[idx] = part
    return out


# -- creation -------------------------------------------------------------------------------------

def draw(random, shape, dtype, device):
    """``random(shape, dtype, device)`` (``backend.random_uniform`` or ``random_normal``), in
    pieces of the flattened result when it is above ``LARGE`` elements: the same numbers as
    one draw, since the generator gives them in order and fills a shape in C order."""
    n = math.prod(shape)
    if n <= LARGE or device == "dask":      # (dask draws in its chunks: dask_device.random)
        return random(shape, dtype, device)
    out = None
    for start in range(0, n, PIECE):
        poll()
        part = random((min(PIECE, n - start),), dtype, device)
        if out is None:
            out = namespace_of(part).empty((n,), dtype=part.dtype)
        out[start:start + part.shape[0]] = part
    return namespace_of(out).reshape(out, tuple(shape))


def filled(xp, shape, value, dtype):
    """``xp.full(shape, value)`` written in pieces (``LARGE`` elements or more)."""
    out = xp.empty(tuple(shape), dtype=dtype)
    for idx, _ in blocks(out.shape, PIECE):
        poll()
        out[idx] = value
    return out
