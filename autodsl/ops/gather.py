"""Gathers and scatters along a dim, ``index_select`` and ``masked_fill``, with PyTorch's names,
keywords and index rules.

An index is an int64 tensor. ``gather`` and the scatters read or write ``x`` at the positions
the index holds along ``dim`` and at the index's own positions along the other dims (torch's
rule: the index may be smaller than ``x`` there, never larger). Each of these is one
advanced-indexing key (``along_key``), so the gradient of a gather is the scatter-add of the
same key (repeated indices add up) and the gradient of a scatter's source is the gather.
"""
from __future__ import annotations

from functools import partial

from autodsl import backend
from autodsl.backend import kind_of, namespace_of
from autodsl.core import deferred
from autodsl.core.tensor import Tensor, as_tensor
from autodsl.core.words import kind, shown
from autodsl.errors import DTypeError, IndexError_, ShapeError, TypeError_, ValueError_
from autodsl.ops.elementwise import where
from autodsl.ops.formula import define
from autodsl.ops.inplace import inplace
from autodsl.ops.movement import _dim, _Raw, expand, getitem, index_put
from autodsl.ops.registry import Op, apply, defop, to_op

__all__ = ["along_key", "check_index", "gather", "index_select", "masked_fill", "scatter", "scatter_add"]

# Note [a kept index]: the backward of a gather, a scatter, index_select, masked_fill and
# nll_loss reads its index (mask, target, weight) through what forward made of it (the key,
# often a view of the index's own array). As torch's SavedVariable does, the node saves that
# input: an in-place write to it before the backward raises the version error, and a second
# backward raises the freed-graph error, where the gradient would otherwise use the new values
# (or a freed graph run again) without a word. The formula takes it only for the checks.


def along_key(index, d):
    """The key of a gather/scatter along dim ``d``: ``index`` at ``d``, each other dim's own
    positions (an arange, shaped to broadcast) elsewhere."""
    xp = namespace_of(index)
    nd = index.ndim
    return tuple(index if i == d else xp.reshape(xp.arange(n, dtype=xp.int64),
                                                 tuple(n if j == i else 1 for j in range(nd)))
                 for i, n in enumerate(index.shape))


def check_index(op, index, size, d):
    """An index must hold int64 values in [0, size) (torch: no negative indices here)."""
    if kind_of(index.dtype) != "i":
        raise DTypeError(f"{op}: the index must be an int64 tensor, not {backend.dtype_of(index).name}; "
                         "make it with dtype=int64 (or .to(int64))")
    if not index.size:
        return
    xp = namespace_of(index)
    if not backend.on_host(index):      # no host sync: tested when the values are read (core/deferred.py)
        deferred.check(xp.any((index < 0) | (index >= size)), partial(_index_error, op, index, size, d))
        return
    lo, hi = int(xp.min(index)), int(xp.max(index))
    if lo < 0 or hi >= size:
        _index_error(op, index, size, d)


def _index_error(op, index, size, d):
    """check_index's error (reads the index's values)."""
    host = backend.to_host(index)
    lo, hi = int(host.min()), int(host.max())
    bad = lo if lo < 0 else hi
    valid = f"valid: 0 to {size - 1}" if size else "it has no positions"
    raise IndexError_(f"{op}: index {bad} is out of range for dim {d}, which has size {size} "
                      f"({valid})")


def _check_fits(op, index_shape, shape, d, what):
    """torch: the index is no larger than ``what`` (x or src) in any dim (other than ``d`` for x)."""
    for i, (n, m) in enumerate(zip(index_shape, shape)):
        if i != d and n > m:
            raise ShapeError(f"{op}: the index has shape {index_shape}, larger than {what}'s shape {shape} "
                             f"in dim {i}; it may be smaller than {what} in every dim but not larger")


def _along(op, a, index, dim, src_shape=None):
    """Checks shared by gather and the scatters; returns (dim, x's shape with at least one dim,
    the index with as many dims)."""
    d = _dim(dim, a.ndim)
    xp = namespace_of(index)
    if a.ndim == 0:                         # torch: a 0-d x takes a 0-d or 1-d index
        if index.ndim > 1:
            raise ShapeError(f"{op}: a 0-d tensor takes an index of 0 or 1 dims, not {index.ndim}")
        check_index(op, index, 1, d)
        return d, (1,), xp.reshape(index, (-1,))
    if index.ndim != a.ndim:
        raise ShapeError(f"{op}: the index must have as many dims as the tensor ({a.ndim}), not "
                         f"{index.ndim}; reshape or unsqueeze the index")
    check_index(op, index, a.shape[d], d)
    _check_fits(op, index.shape, a.shape, d, "the tensor")
    if src_shape is not None:
        _check_fits(op, index.shape, src_shape, -1, "src")
    return d, a.shape, index


@defop("gather")
class Gather(Op):
    """Values of x along dim at index: ``out[i][j] = x[index[i][j]][j]`` for dim 0."""
    differentiable = (0,)

    def forward(self, a, index, dim):
        d, shape, idx = _along(self.op_name, a, index, dim)
        if self._record:        # Note [a kept index]
            self.save_for_backward(None, self.inputs[1])
        return self.gather(a, index, idx, d, shape)

    def gather(self, a, index, idx, d, shape):
        """a at ``index`` (``idx``: with at least one dim) along ``d``; the facts the formula reads."""
        self.key, self.in_shape, self.src_shape, self.idx_shape = along_key(idx, d), a.shape, shape, idx.shape
        src = namespace_of(a).reshape(a, shape) if a.ndim == 0 else a
        out = backend.getitem(src, self.key)
        return namespace_of(a).reshape(out, index.shape) if out.shape != index.shape else out

    rule = "grad added into zeros of x's shape at the gathered positions (repeated indices add)"

    def formula(self, F, g, *_kept):    # (the saved index: for its version check alone)
        if g.shape != self.idx_shape:
            g = F.reshape(g, self.idx_shape)
        gx = F.index_add(g, self.key, self.src_shape)
        return (gx if self.src_shape == self.in_shape else F.reshape(gx, self.in_shape), None)


@defop("scatter")
class Scatter(Op):
    """A copy of x with src (or a number, ``value``) written along dim at index; of repeated
    indices one write stays."""
    differentiable = (0, 2)

    def forward(self, a, index, *src, dim, value=None):
        xp = namespace_of(a)
        s = src[0] if src else None
        if s is not None and s.ndim != index.ndim and not (a.ndim == 0 and s.ndim <= 1):
            raise ShapeError(f"{self.op_name}: src must have as many dims as the index ({index.ndim}), "
                             f"not {s.ndim}")
        d, shape, idx = _along(self.op_name, a, index, dim, None if s is None or a.ndim == 0 else s.shape)
        if self._record:        # Note [a kept index]
            self.save_for_backward(None, self.inputs[1])
        self.key, self.in_shape, self.src_shape, self.idx_shape = along_key(idx, d), a.shape, shape, idx.shape
        out = xp.reshape(xp.asarray(a, copy=True), shape)
        if s is None:
            v = value
        else:
            if s.dtype != a.dtype:
                raise DTypeError(f"{self.op_name}: src is {backend.dtype_of(s).name} but the tensor is "
                                 f"{backend.dtype_of(a).name}; convert one with .to(dtype=...)")
            self.s_shape = s.shape
            s1 = xp.reshape(s, (-1,)) if s.ndim == 0 else s
            if s1.ndim != idx.ndim or any(n > m for n, m in zip(idx.shape, s1.shape)):
                raise ShapeError(f"{self.op_name}: the index has shape {index.shape}, larger than src's "
                                 f"shape {s.shape}")
            v = s1 if s1.shape == idx.shape else s1[tuple(slice(0, n) for n in idx.shape)]
        self._write(out, v)
        return xp.reshape(out, a.shape) if a.ndim == 0 else out

    def _write(self, out, v):
        backend.setitem(out, self.key, v)

    rule = "to x: grad with the written positions zeroed; to src: grad read at the index"

    def formula(self, F, g, *_kept):    # (the saved index: for its version check alone)
        g1 = F.reshape(g, self.src_shape) if g.shape != self.src_shape else g
        ngx, _, *ngs = self.needs_input_grad
        gx = self._grad_x(F, g, g1) if ngx else None
        if not ngs or not ngs[0]:
            return (gx, None) + ((None,) if ngs else ())
        gs = F.index_read(g1, self.key)
        if gs.shape != self.s_shape:
            if len(self.s_shape) == len(gs.shape):     # src larger than the index: zeros around
                gs = F.index_add(gs, tuple(slice(0, n) for n in gs.shape), self.s_shape)
            else:
                gs = F.reshape(gs, self.s_shape)
        return gx, None, gs

    def _grad_x(self, F, g, g1):
        gx = F.index_zero(g1, self.key)
        return gx if g1 is g else F.reshape(gx, self.in_shape)


@defop("scatter_add")
class ScatterAdd(Scatter):
    """A copy of x with src added along dim at index; repeated indices all add."""

    def _write(self, out, v):
        backend.scatter_add(out, self.key, v)

    rule = "to x: grad; to src: grad read at the index"

    def _grad_x(self, F, g, g1):
        return g


@defop("index_select")
class IndexSelect(Op):
    """The slices of x along dim at a 1-d index (repeats allowed)."""
    differentiable = (0,)

    def forward(self, a, index, dim):
        op = self.op_name
        d = _dim(dim, a.ndim)
        xp = namespace_of(a)
        if index.ndim > 1:
            raise ShapeError(f"{op}: the index must be a 0-d or 1-d tensor, not {index.ndim}-d; "
                             "flatten it with .flatten()")
        if a.ndim == 0 and index.size != 1:
            raise ShapeError(f"{op}: a 0-d tensor takes an index of one element, not {index.size}")
        check_index(op, index, a.shape[d] if a.ndim else 1, d)
        if self._record:        # Note [a kept index]
            self.save_for_backward(None, self.inputs[1])
        self.in_shape = a.shape
        self.src_shape = a.shape or (1,)
        self.key = (slice(None),) * d + (xp.reshape(index, (-1,)),)
        out = backend.getitem(xp.reshape(a, (1,)) if a.ndim == 0 else a, self.key)
        # torch's result is contiguous; NumPy's along a dim other than 0 is not (Fortran-like),
        # and a reshape of it would copy where torch's is a view (a write through it is lost)
        return xp.reshape(out, ()) if a.ndim == 0 else backend.contiguous(out)

    rule = "grad added into zeros of x's shape at the selected slices (repeated indices add)"

    def formula(self, F, g, *_kept):    # (the saved index: for its version check alone)
        if not self.in_shape:
            return (F.reshape(F.index_add(F.reshape(g, (1,)), self.key, (1,)), ()), None)
        return (F.index_add(g, self.key, self.src_shape), None)


@defop("masked_fill")
class MaskedFill(Op):
    """A copy of x with ``value`` where the bool mask (broadcast to x's shape) is true."""
    differentiable = (0, 2)

    def forward(self, a, mask, *value, number=None):
        op = self.op_name
        xp = namespace_of(a)
        if kind_of(mask.dtype) != "b":
            raise DTypeError(f"{op}: the mask must be a bool tensor, not {backend.dtype_of(mask).name}; "
                             "make it from a comparison such as x > 0")
        if backend.broadcast_shapes(mask.shape, a.shape) != a.shape:
            raise ShapeError(f"{op}: a mask of shape {mask.shape} does not broadcast to the tensor's "
                             f"shape {a.shape}")
        if value:
            v = value[0]
            if v.ndim:
                raise ShapeError(f"{op}: the value must be a number or a 0-d tensor, not a tensor of "
                                 f"shape {v.shape}")
            v = xp.astype(v, a.dtype) if v.dtype != a.dtype else v
        else:
            v = xp.astype(xp.asarray(number), a.dtype)
        if self._record:        # Note [a kept index]: the mask is saved, not kept raw
            self.save_for_backward(None, self.inputs[1])
        return xp.where(mask, v, a)

    rule = "grad where the mask is false (to x), the sum of grad where it is true (to value)"

    def backward(self, g):
        nx, _, *nv = self.needs_input_grad
        _, m = self.saved_tensors
        gx = where(m, 0.0, g) if nx else None
        gv = where(m, g, 0.0) if nv and nv[0] else None     # summed to the 0-d value by the engine
        return (gx, None, gv) if nv else (gx, None)


def _index_tensor(op, index, like):
    if isinstance(index, Tensor):
        return index
    if isinstance(index, (list, tuple, int)) and not isinstance(index, bool):
        arr = backend.asarray(list(index) if isinstance(index, tuple) else index, None, like.device)
        if arr.size == 0 or kind_of(arr.dtype) == "i":
            return Tensor(namespace_of(arr).astype(arr, namespace_of(arr).int64), _device=like.device)
        raise DTypeError(f"{op}: a list used as an index must hold integers, not {shown(index)}")
    raise TypeError_(f"{op}: the index must be an int64 tensor (or a list of integers), not "
                     f"{kind(index)}")


def _no_reduce(op, reduce):
    if reduce is not None:
        raise ValueError_(f"{op}: reduce= is not supported; use scatter_add for sums, or scatter "
                          "without reduce=")


def gather(input, dim, index):
    """``out[i][j] = input[index[i][j]][j]`` along ``dim`` (for dim 0; likewise for others):
    ``index`` is an int64 tensor with as many dims as ``input``, no larger in the other dims,
    values in [0, size of dim). The output has the index's shape and input's dtype; the
    gradient adds into the gathered positions (repeated indices add).
    Raises DTypeError (index not int64), ShapeError (dims), IndexError_ (out of range).
    Example: ``gather(x, 1, tensor([[0], [2]], dtype=int64))``
    """
    x = as_tensor(input)
    return apply(Gather, x, _index_tensor("gather", index, x), dim=dim)


def scatter(input, dim, index, src=None, value=None, reduce=None):
    """A copy of ``input`` with ``src[i][j]`` written at ``[index[i][j]][j]`` along ``dim`` (for
    dim 0): ``src`` a tensor of input's dtype at least the index's size, or a number (torch's
    ``scatter(x, dim, index, value)``). Of repeated indices one write stays (which one is not
    specified, as in torch). Gradients: to ``input``, grad with the written positions zeroed;
    to ``src``, grad read at the index (zeros where src is larger than the index).
    ``reduce=`` is not supported (ValueError_); errors as ``gather``.
    Example: ``scatter(x, 0, tensor([[1, 0, 1]], dtype=int64), 5.0)``
    """
    _no_reduce("scatter", reduce)
    if src is None and value is None:
        raise TypeError_("scatter needs src (a tensor) or value (a number)")
    x = as_tensor(input)
    idx = _index_tensor("scatter", index, x)
    if value is None and not isinstance(src, Tensor):
        value, src = src, None
    if src is None:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise TypeError_(f"scatter: value must be a number, not {kind(value)}")
        return apply(Scatter, x, idx, dim=dim, value=value)
    return apply(Scatter, x, idx, src, dim=dim)


def scatter_add(input, dim, index, src):
    """A copy of ``input`` with ``src[i][j]`` added at ``[index[i][j]][j]`` along ``dim`` (for
    dim 0); repeated indices all add. Gradients: grad to ``input``, grad read at the index to
    ``src``. Errors as ``gather`` and ``scatter``.
    Example: ``scatter_add(zeros(3), 0, tensor([0, 0, 2], dtype=int64), tensor([1.0, 2.0, 3.0]))``
    """
    x = as_tensor(input)
    s = as_tensor(src, like=x)
    return apply(ScatterAdd, x, _index_tensor("scatter_add", index, x), s, dim=dim)


def index_select(input, dim, index):
    """The slices of ``input`` along ``dim`` at a 1-d int64 ``index`` (repeats allowed; values
    in [0, size of dim)); the gradient adds into the selected slices.
    Example: ``index_select(x, 0, tensor([2, 0], dtype=int64))``
    """
    x = as_tensor(input)
    return apply(IndexSelect, x, _index_tensor("index_select", index, x), dim=dim)


def masked_fill(input, mask, value):
    """A copy of ``input`` with ``value`` (a number or a 0-d tensor, converted to input's dtype)
    where the bool ``mask`` is true. ``input`` and ``mask`` broadcast together, as in torch's
    out-of-place masked_fill (the result has their broadcast shape; ``x.masked_fill_`` needs a
    mask that broadcasts to x's shape). Gradients: grad where the mask is false to ``input``
    (summed back over the broadcast dims); the sum of grad where it is true to a tensor ``value``.
    Raises DTypeError (mask not bool), ShapeError (shapes do not broadcast, value not 0-d).
    Example: ``masked_fill(x, x < 0, 0.0)``
    """
    x = as_tensor(input)
    m = as_tensor(mask)
    shape = backend.broadcast_shape_or_none(m.shape, x.shape)
    if shape is not None and shape != x.shape:
        x = expand(x, shape)        # torch: expand_outplace(mask, self), then a masked_fill_
    return _masked_fill(x, m, value)


def _masked_fill(x, m, value, what="masked_fill"):
    """``x`` with ``value`` where the mask ``m`` (broadcastable to x's shape) is true. A number
    must fit x's dtype (as torch: no silent overflow or wrap); ValueError_ else."""
    if isinstance(value, Tensor):
        if value.ndim:
            raise ShapeError(f"{what}: the value must be a number or a 0-d tensor, not a tensor of "
                             f"shape {value.shape}")
        if value.dtype is not x.dtype and value.dtype.is_floating:
            value = to_op(value, dtype=x.dtype)     # the gradient comes back in value's dtype
        return apply(MaskedFill, x, m, value)
    if not isinstance(value, (int, float)):     # (true/false too, as torch: 1 and 0 in a number tensor)
        raise TypeError_(f"{what}: value must be a number or a 0-d tensor, not {kind(value)}")
    _check_fill_value(value, x, what)
    return apply(MaskedFill, x, m, number=value)


def _check_fill_value(value, x, what):
    """Refuse a number that x's dtype cannot hold: nan, inf or a number out of range for an
    integer dtype, a finite number beyond a float dtype's largest (torch: "value cannot be
    converted to type ... without overflow")."""
    if not backend.value_fits(value, x._data.dtype, namespace_of(x._data)):
        raise ValueError_(f"{what}: {value!r} does not fit in {x.dtype.name}; give a value inside its "
                          "range, or make the tensor of a wider dtype")


# torch's in-place forms, Tensor methods (ops/methods.py): refused on a leaf that requires grad
# while recording, as every in-place write is (ops/inplace.py)
def scatter_(self, dim, index, src=None, value=None, reduce=None):
    """``x.scatter_(dim, index, src)``: ``scatter`` written into x; returns x."""
    srcs = (src,) if isinstance(src, Tensor) else ()
    v = value if value is not None or srcs else src
    return inplace(lambda t, *s: scatter(t, dim, index, *s, value=v, reduce=reduce), self, *srcs,
                   what="scatter_")


def scatter_add_(self, dim, index, src):
    """``x.scatter_add_(dim, index, src)``: ``scatter_add`` written into x; returns x."""
    return inplace(lambda t, s: scatter_add(t, dim, index, s), self, as_tensor(src, like=self),
                   what="scatter_add_")


def masked_fill_(self, mask, value, what="masked_fill_"):
    """``x.masked_fill_(mask, value)``: ``masked_fill`` written into x; returns x. (``what``:
    the method's name in errors.)"""
    vs = (value,) if isinstance(value, Tensor) else ()
    m = as_tensor(mask)
    return inplace(lambda t, *v: _masked_fill(t, m, v[0] if v else value, what), self, *vs, what=what)


def fill_(self, value):
    """``x.fill_(value)``: every element of x set to ``value`` (a number, or a 0-d tensor whose
    gradient is then the sum of x's), cast to x's dtype; returns x. Through it x's own gradient
    is zero, as in torch (a masked_fill_ with a mask that is true everywhere). Raises TypeError_
    for a value that is neither, and AutogradError on a leaf that requires grad while recording."""
    return _fill(self, value, "fill_")


def zero_(self):
    """``x.zero_()``: every element of x set to 0 (``fill_(0)``); returns x."""
    return _fill(self, 0, "zero_")


def _fill(x, value, what):
    if isinstance(value, backend.HOST_BOOL):        # (torch's fill_ takes a bool: 1 or 0)
        value = int(value)
    elif isinstance(value, (*backend.HOST_INT, *backend.HOST_FLOAT)) and not isinstance(value, (int, float)):
        value = value.item()        # a NumPy scalar
    everywhere = Tensor(namespace_of(x._data).asarray(True), _device=x.device)
    return masked_fill_(x, everywhere, value, what=what)


def index_put_(self, indices, values, accumulate=False):
    """``x.index_put_(indices, values, accumulate=false)``: ``index_put`` written into x; returns x."""
    return inplace(lambda t, v: index_put(t, indices, v, accumulate=accumulate), self, values,
                   what="index_put_")


# what the formulas above use (Note [one formula], ops/formula.py): reads and zeroed writes at a key
def _index_zero_arrays(g, key):
    out = namespace_of(g).asarray(g, copy=True)
    backend.setitem(out, key, 0)
    return out


define("index_read", backend.getitem, lambda t, key: getitem(t, _Raw(key)))
define("index_zero", _index_zero_arrays, lambda t, key: index_put(t, _Raw(key), 0.0))
