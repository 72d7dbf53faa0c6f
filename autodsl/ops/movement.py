"""Shape and indexing ops: reshape, transpose, permute, (un)squeeze, expand, cat,
stack, flatten, indexing and indexed writes.

Outputs that NumPy makes as views share storage (and the version counter)
with their input, as PyTorch's views do.
"""
from __future__ import annotations

import builtins
import numbers
import operator

import autodsl.backend as backend
from autodsl.backend import kind_of, namespace_of, scatter_add
from autodsl.core import deferred
from autodsl.errors import IndexError_, ShapeError, TypeError_
from autodsl.ops import chunked
from autodsl.ops.formula import define, forward_of
from autodsl.ops.registry import Op, apply, defop
from autodsl.core.tensor import Tensor
from autodsl.core.tensor import as_tensor
from autodsl.core.words import shown, kind, plain

__all__ = ["reshape", "view", "transpose", "permute", "unsqueeze", "squeeze", "expand", "cat",
           "stack", "flatten", "getitem", "index_put"]


def _shape_arg(shape):
    if len(shape) == 1 and isinstance(shape[0], (list, tuple)):
        shape = tuple(shape[0])
    out = []
    for n in shape:
        if isinstance(n, bool) or isinstance(n, float) and not n.is_integer():
            raise TypeError_(f"a shape holds integers, not {shown(n)}")
        try:
            out.append(int(n))
        except (TypeError, ValueError):
            raise TypeError_(f"a shape holds integers, not {shown(n)}") from None
    return tuple(out)


def _dim(d, ndim):
    n = builtins.max(ndim, 1)
    try:
        d = int(d)
    except (TypeError, ValueError):
        raise TypeError_(f"dim must be an integer, not {shown(d)}") from None
    if not -n <= d < n:
        raise IndexError_(f"dim {d} is out of range for a tensor with {ndim} dimensions "
                          f"(valid: {-n} to {n - 1})")
    return d % n


@defop("reshape")
class Reshape(Op):
    """The same elements in another shape (one size may be -1)."""
    view = True

    def forward(self, a, shape):
        self.in_shape = a.shape
        if sum(1 for n in shape if n == -1) > 1:
            raise ShapeError(f"reshape: only one size may be -1 (inferred), got {shape}")
        if any(n < -1 for n in shape):      # NumPy reads any negative size as "inferred"; torch refuses
            raise ShapeError(f"reshape: a size must be 0 or more, or -1 for the one inferred, got {shape}")
        try:
            return namespace_of(a).reshape(a, shape)
        except ValueError:
            raise ShapeError(f"cannot reshape a tensor of shape {a.shape} ({a.size} elements) into "
                             f"{shape}; the number of elements must stay the same") from None

    rule = "grad reshaped to a's shape"

    def backward(self, g):
        return (g.reshape(self.in_shape),)


@defop("transpose")
class Transpose(Op):
    """Swap two dimensions."""
    view = True

    def forward(self, a, dim0, dim1):
        self.dims = (_dim(dim0, a.ndim), _dim(dim1, a.ndim))
        if a.ndim < 2:
            return a
        perm = list(range(a.ndim))
        i, j = self.dims
        perm[i], perm[j] = j, i
        return namespace_of(a).permute_dims(a, tuple(perm))

    rule = "grad transposed back"

    def backward(self, g):
        return (g.transpose(*self.dims) if g.ndim >= 2 else g,)


@defop("permute")
class Permute(Op):
    """Reorder all dimensions."""
    view = True

    def forward(self, a, dims):
        dims = tuple(_dim(d, a.ndim) for d in dims)
        if sorted(dims) != list(range(a.ndim)):
            raise ShapeError(f"permute needs each of the {a.ndim} dims exactly once, got {dims}")
        self.dims = dims
        return namespace_of(a).permute_dims(a, dims)

    rule = "grad permuted back"

    def backward(self, g):
        inverse = [self.dims.index(i) for i in range(len(self.dims))]
        return (g.permute(inverse),)


@defop("expand")
class Expand(Op):
    """Broadcast to a larger shape without copying (read-only)."""
    view = True

    def forward(self, a, shape):
        self.in_shape = a.shape
        lead = len(shape) - a.ndim
        if lead < 0:
            raise ShapeError(f"cannot expand shape {a.shape} to fewer dims {shape}")
        shape = tuple(a.shape[i - lead] if n == -1 and i >= lead else n for i, n in enumerate(shape))
        if shape == a.shape:
            return a[...]          # nothing to broadcast: a plain (writable) view, as in torch
        try:
            return backend.broadcast_to(a, shape)     # (dask: chunks kept, new dims "auto")
        except ValueError:
            raise ShapeError(f"cannot expand shape {a.shape} to {shape}: only size-1 dims can grow") from None

    rule = "grad summed over the expanded dimensions"

    def backward(self, g):
        return (sum_to(g, self.in_shape),)


@defop("cat")
class Cat(Op):
    """Join tensors along an existing dim (in the dtype they promote to, as torch). A 1-d empty
    tensor, shape (0,), is skipped beside tensors of other shapes, as torch still does for its
    old "empty" tensors; its gradient is empty."""
    promote = True

    def forward(self, *arrays, dim=0):
        if not arrays:
            raise ShapeError("cat needs at least one tensor")
        for i, a in enumerate(arrays):
            if a.ndim == 0:         # torch: "zero-dimensional tensor (at position i) cannot be concatenated"
                raise ShapeError(f"cat: the tensor at position {i} is 0-d (a single number) and has no dim "
                                 "to join along; stack([...]) joins numbers into a 1-d tensor")
        skip = [a.ndim == 1 and a.shape[0] == 0 for a in arrays]
        kept = [a for a, s in zip(arrays, skip) if not s]
        xp = namespace_of(arrays[0])
        if not kept:                # all of them (0,): torch gives (0,) whatever the dim
            self.dim, self.sizes = 0, [0] * len(arrays)
            return backend.contiguous(xp.concat(list(arrays), axis=0))
        d = _dim(dim, kept[0].ndim)
        self.dim = d
        self.sizes = [None if s else a.shape[d] for a, s in zip(arrays, skip)]
        try:
            return backend.contiguous(xp.concat(kept, axis=d))   # torch: a contiguous result
        except ValueError:
            raise ShapeError(f"cat along dim {d}: shapes {[a.shape for a in kept]} must match except "
                             f"in dim {d}") from None

    rule = "the slice of grad where this input was placed"

    def backward(self, g):
        out = []
        start = 0
        lead = (slice(None),) * self.dim
        for n, need in zip(self.sizes, self.needs_input_grad):
            if n is None:       # a skipped (0,): an empty gradient of its shape
                out.append(g.reshape(-1)[0:0] if need else None)
                continue
            out.append(g[lead + (slice(start, start + n),)] if need else None)
            start += n
        return tuple(out)


@defop("stack")
class Stack(Op):
    """Join tensors of one shape along a new dim (in the dtype they promote to, as torch)."""
    promote = True

    def forward(self, *arrays, dim=0):
        if not arrays:
            raise ShapeError("stack needs at least one tensor")
        d = _dim(dim, arrays[0].ndim + 1)
        self.dim = d
        if any(a.shape != arrays[0].shape for a in arrays):
            raise ShapeError(f"stack needs tensors of one shape, got {[a.shape for a in arrays]}")
        xp = namespace_of(arrays[0])
        return backend.contiguous(xp.stack(list(arrays), axis=d))       # torch: a contiguous result

    rule = "grad[i] along dim for the i-th input"

    def backward(self, g):
        lead = (slice(None),) * self.dim
        return tuple(g[lead + (i,)] if need else None for i, need in enumerate(self.needs_input_grad))


def _key_arrays(key):
    """Tensors inside an index become arrays; lists become integer arrays."""
    if not isinstance(key, tuple):
        key = (key,)
    out = []
    for k in key:
        if type(k) is not int and not isinstance(k, bool) and isinstance(k, numbers.Integral):
            k = operator.index(k)   # NumPy's integer scalars (np.int64(1)) index as ints, as in torch
        if isinstance(k, Tensor):
            if k.dtype.is_floating:
                raise IndexError_("tensors used as indices must be integer or bool tensors "
                                  "(make them with dtype=int64, or from a comparison)")
            out.append(backend.copy(k._data))    # the index as it was: later writes to k do not move it
        elif isinstance(k, bool):
            raise IndexError_("true/false cannot index a tensor; use an integer, a slice or a bool tensor")
        elif isinstance(k, float):
            raise IndexError_(f"an index must be an integer, not {shown(k)}")
        elif isinstance(k, int) and not -2 ** 63 <= k < 2 ** 63:
            raise IndexError_(f"index {k} is out of range: no tensor has a dim that long")
        elif not isinstance(k, (int, slice, list)) and k is not None and k is not Ellipsis \
                and not backend.is_host_array(k):
            raise IndexError_(f"a tensor is indexed by integers, slices (`:`), `...`, none and int64 or "
                              f"bool tensors, not {kind(k)}")
        elif isinstance(k, list):
            arr = backend.asarray(k, None, "cpu")
            if arr.size and kind_of(arr.dtype) not in "biu":
                raise IndexError_("a list used as an index must hold integers or true/false values")
            out.append(arr if arr.size else namespace_of(arr).astype(arr, namespace_of(arr).int64))
        else:
            out.append(k)
    return tuple(out)


def _index_error(shape, key, e):
    msg = str(e)
    used = sum(1 for k in key if k is not None and k is not Ellipsis)
    if "too many indices" in msg:
        return IndexError_(f"{used} indices for a tensor with {len(shape)} dims (shape {shape}); "
                           "use at most one index per dim")
    if "out of bounds" in msg:
        return IndexError_(f"index out of range for a tensor of shape {shape}: "
                           + msg.replace("is out of bounds for axis", "is out of range for dim"))
    if "boolean index did not match" in msg:
        return IndexError_(f"a bool mask must have the shape of the dims it indexes (tensor shape {shape})")
    return IndexError_(f"cannot index a tensor of shape {shape}: {plain(msg)}")


def _is_basic(key):
    return all(k is None or k is Ellipsis or isinstance(k, (int, slice)) for k in key)


def _check_lazy_key(shape, key):
    """On a lazy device an integer index tensor is not at hand: its range is tested when the
    values are read (core/deferred.py), as NumPy tests it at once (dask would clip it)."""
    arrays = [k for k in key if not (k is None or k is Ellipsis or isinstance(k, (int, slice)))]
    if not any(backend.is_lazy(k) for k in arrays):
        return
    used = builtins.sum(k.ndim if kind_of(k.dtype) == "b" else 1 for k in arrays) + \
        builtins.sum(1 for k in key if isinstance(k, (int, slice)))
    d = 0
    for k in key:
        if k is Ellipsis:
            d += builtins.max(len(shape) - used, 0)
        elif k is None:
            continue
        elif isinstance(k, (int, slice)) or kind_of(k.dtype) == "b":
            d += 1 if isinstance(k, (int, slice)) else k.ndim
        else:
            if d < len(shape) and backend.is_lazy(k) and k.size:
                n = shape[d]
                xp = namespace_of(k)
                deferred.check(xp.any((k < -n) | (k >= n)), _range_error(shape, k, n, d))
            d += 1


def _range_error(shape, k, n, d):
    def fail():
        host = backend.to_host(k)
        bad = host[(host < -n) | (host >= n)].reshape(-1)[0]
        raise IndexError_(f"index {int(bad)} is out of range for dim {d} of a tensor of shape {shape} "
                          f"(valid: {-n} to {n - 1})")
    return fail


@defop("getitem", node_name="IndexBackward")
class GetItem(Op):
    """Indexing: ints, slices, none, ..., integer tensors (gather) and bool masks."""
    view = True
    view_key = True

    def forward(self, a, key):
        self.key = key
        self.in_shape = a.shape
        self.basic = _is_basic(key)
        if not self.basic:
            _check_lazy_key(a.shape, key)
        try:
            # basic keys get a trailing ...: x[0] of a vector is a 0-d view, not a copied scalar
            # (x[0] += 1 writes x), and the standard wants it where fewer indices than dims are given
            return backend.getitem(a, key)
        except IndexError as e:
            raise _index_error(a.shape, key, e) from None

    rule = "grad placed into zeros of a's shape at the index (repeated indices add)"

    def backward(self, g):
        return (apply(IndexAdd, g, key=self.key, shape=self.in_shape, basic=self.basic),)


@defop("index_add", node_name="IndexPutBackward", public=False)
class IndexAdd(Op):
    """zeros(shape) with g added at key; repeated indices add up (scatter-add)."""

    def forward(self, g, key, shape, basic):
        self.key = key
        xp = namespace_of(g)
        z = xp.zeros(shape, dtype=g.dtype)
        if g.size == 0:         # an empty slice's gradient: nothing to place (dask refuses the write)
            return z
        if basic:
            backend.setitem(z, key, g)
        else:
            scatter_add(z, key, g)     # plain z[key] += g would keep one of repeated indices
        return z

    rule = "grad read at the index"

    def backward(self, gg):
        return (getitem(gg, _Raw(self.key)),)


@defop("index_put")
class IndexPut(Op):
    """A copy of a with value written at key (the out-of-place form of x[key] = value)."""

    def forward(self, a, v, key, accumulate=False):
        self.key = key
        self.accumulate = accumulate
        _check_lazy_key(a.shape, key)
        out = namespace_of(a).asarray(a, copy=True)
        try:
            if accumulate:      # repeated indices all add (torch's accumulate=True)
                if v.dtype != a.dtype:
                    v = namespace_of(v).astype(v, a.dtype)
                target = backend.getitem(a, key).shape
                scatter_add(out, key, namespace_of(v).broadcast_to(v, target))
            else:
                backend.setitem(out, key, v)
        except ValueError:
            raise ShapeError(f"cannot write a value of shape {v.shape} into a slice of shape "
                             f"{backend.getitem(a, key).shape}") from None
        except IndexError as e:
            raise _index_error(a.shape, key, e) from None
        return out

    rule = ("grad with the written positions zeroed (all of grad with accumulate=true)",
            "grad read at the written positions")

    def backward(self, g):
        na, nv = self.needs_input_grad
        ga = (g if self.accumulate else index_put(g, _Raw(self.key), 0.0)) if na else None
        gv = getitem(g, _Raw(self.key)) if nv else None
        return ga, gv


class _Raw(tuple):
    """An index already converted to arrays (skips conversion)."""


def getitem(input, key):
    """input[key]: an int, a slice, a list of those, ``none``, or an integer/bool tensor.
    Gathering with repeated indices adds their gradients. Ints beside tensor (or list) indices
    select first, as in torch: ``x[1, :, idx]`` is ``x[1][:, idx]`` (NumPy would count the 1
    with idx and put their dim first). Example: ``x[0]``, ``x[:, 1:3]``, ``x[idx]``
    """
    if isinstance(key, _Raw):
        return apply(GetItem, input, key=tuple(key))
    k = _key_arrays(key)
    split = ints_first(k)
    if split is not None:           # torch's two nodes too: SelectBackward, then IndexBackward
        return apply(GetItem, apply(GetItem, input, key=split[0]), key=split[1])
    return apply(GetItem, input, key=k)


def ints_first(key):
    """``(the basic part, the rest)`` of an index (as ``_key_arrays`` makes it) that mixes ints
    with index arrays, or None: torch applies the ints, slices, ``none`` and ``...`` first and
    then the arrays, on the dims left, with ``:`` where the basic part's entries were. (NumPy
    counts an int beside an array as an array index, which moves the indexed dims to the front
    when a slice separates them.) The two keys are each NumPy's and torch's at once."""
    def is_array(k):
        return not (k is None or k is Ellipsis or isinstance(k, (int, slice)))
    if not any(isinstance(k, int) for k in key) or not any(is_array(k) for k in key):
        return None
    basic, rest = [], []
    for k in key:
        if isinstance(k, int):
            basic.append(k)
        elif k is None or isinstance(k, slice):
            basic.append(k)
            rest.append(slice(None))
        elif k is Ellipsis:
            basic.append(k)
            rest.append(k)
        else:       # an array: its dims (a bool mask's all of them) kept whole for now
            basic.extend([slice(None)] * (k.ndim if kind_of(k.dtype) == "b" else 1))
            rest.append(k)
    return tuple(basic), tuple(rest)


def index_put(input, key, value, accumulate=False):
    """A copy of ``input`` with ``value`` written at ``key`` (``x[key] = value`` is its in-place form):
    ``key`` an index as for ``x[...]`` (torch's tuple of index tensors included). With
    ``accumulate=true`` the value is added instead, and repeated indices all add up (as
    torch); without it, of repeated indices one write stays. Raises IndexError_ for an index
    out of range, ShapeError for a value that does not fit.
    A list of index tensors is torch's ``indices``, one per dim (``index_put(x, [i, j], v)`` is
    ``x[i, j] = v``); a list of integers is one index, as in ``x[[0, 2]]``.
    Example: ``index_put(x, 0, 5.0)``, ``index_put(x, [idx], v, accumulate=true)``
    """
    if isinstance(key, list) and key and builtins.all(isinstance(k, Tensor) for k in key):
        key = tuple(key)        # the language has no tuples: torch's list of index tensors
    k = key if isinstance(key, _Raw) else _key_arrays(key)
    if accumulate:
        if not isinstance(accumulate, bool):
            raise TypeError_(f"index_put: accumulate must be true or false, not {shown(accumulate)}")
        return apply(IndexPut, input, value, key=tuple(k), accumulate=True)
    return apply(IndexPut, input, value, key=tuple(k))


def reshape(input, *sizes, shape=None):
    """The same elements in a new shape; one size may be -1. The shape comes as sizes, a list,
    or torch's keyword ``shape=``. Example: ``x.reshape(2, 3)``, ``reshape(x, shape=[3, -1])``"""
    return apply(Reshape, input, shape=_shape_arg(_one_of("reshape", "shape", sizes, shape)))


def _one_of(name, keyword, positional, value):
    """The sizes or dims given positionally, or by torch's keyword (a list), not both."""
    if value is None:
        return positional
    if positional:
        raise TypeError_(f"{name}: give the {keyword} once, either as arguments or as {keyword}=[...]")
    return (value,)


def view(input, *shape):
    """The same storage in a new shape; like PyTorch, a ShapeError when the layout does not
    allow a view without copying (use reshape then). Example: ``x.view(-1)``"""
    out = reshape(input, *shape)
    if out._base is None and out._data.size > 1 and out is not input:
        raise ShapeError(f"view: a tensor of shape {tuple(input.shape)} with this memory layout (e.g. "
                         "after a transpose) cannot be viewed as "
                         f"{_shape_arg(shape)} without copying; use reshape(...) instead")
    return out


def transpose(input, dim0, dim1):
    """Swap dims dim0 and dim1 (a view). Example: ``transpose(x, 0, 1)``"""
    return apply(Transpose, input, dim0=dim0, dim1=dim1)


def permute(input, *order, dims=None):
    """Reorder the dims (a view); the order comes as dims, a list, or torch's keyword ``dims=``.
    Example: ``x.permute(2, 0, 1)``, ``permute(x, dims=[1, 0])``"""
    return apply(Permute, input, dims=_shape_arg(_one_of("permute", "dims", order, dims)))


def unsqueeze(input, dim):
    """Insert a size-1 dim at ``dim``. Example: ``x.unsqueeze(0)``"""
    t = as_tensor(input)
    d = _dim(dim, t.ndim + 1)
    shape = t.shape[:d] + (1,) + t.shape[d:]
    return reshape(t, shape)


def squeeze(input, dim=None):
    """Drop size-1 dims (all, or only ``dim``). Example: ``x.squeeze(1)``"""
    t = as_tensor(input)
    if dim is None:
        shape = tuple(n for n in t.shape if n != 1)
    else:
        dims = dim if isinstance(dim, (list, tuple)) else [dim]
        drop = {_dim(d, t.ndim) for d in dims}
        shape = tuple(n for i, n in enumerate(t.shape) if not (i in drop and n == 1))
    return reshape(t, shape)


def expand(input, *sizes):
    """Broadcast size-1 dims to ``sizes`` without copying (-1 keeps a size). Example: ``x.expand(3, 4)``"""
    t = as_tensor(input)
    shape = _shape_arg(sizes)
    if shape == t.shape:
        return t
    out = apply(Expand, t, shape=shape)
    return out


def flatten(input, start_dim=0, end_dim=-1):
    """Merge dims start_dim..end_dim into one. Example: ``x.flatten()``"""
    t = as_tensor(input)
    if t.ndim == 0:
        return reshape(t, (1,))
    s, e = _dim(start_dim, t.ndim), _dim(end_dim, t.ndim)
    if s > e:
        raise ShapeError(f"flatten: start_dim {start_dim} comes after end_dim {end_dim}")
    n = 1
    for k in t.shape[s:e + 1]:
        n *= k
    return reshape(t, t.shape[:s] + (n,) + t.shape[e + 1:])


def cat(tensors, dim=0):
    """Join a list of tensors along an existing dim. Example: ``cat([a, b], dim=0)``"""
    if not isinstance(tensors, (list, tuple)):
        raise TypeError_("cat takes a list of tensors, e.g. cat([a, b])")
    return apply(Cat, *tensors, dim=dim)


def stack(tensors, dim=0):
    """Join a list of same-shape tensors along a new dim. Example: ``stack([a, b])``"""
    if not isinstance(tensors, (list, tuple)):
        raise TypeError_("stack takes a list of tensors, e.g. stack([a, b])")
    return apply(Stack, *tensors, dim=dim)


def _sum_to_axes(shape, target):
    lead = len(shape) - len(target)
    axes = list(range(lead))
    for i, n in enumerate(target):
        if n == 1 and shape[lead + i] != 1:
            axes.append(lead + i)
    return tuple(axes), lead


@defop("sum_to", node_name="SumBackward", public=False)
class SumTo(Op):
    """Reduce a broadcast gradient back to ``shape`` (the inverse of expand)."""

    def forward(self, a, shape):
        self.shape_in = a.shape
        if len(shape) > a.ndim:
            raise ValueError(f"cannot sum shape {a.shape} to {shape}")
        axes, lead = _sum_to_axes(a.shape, shape)
        for i, n in enumerate(shape):
            if n != 1 and a.shape[lead + i] != n:
                raise ValueError(f"cannot sum shape {a.shape} to {shape}")
        if not axes:
            out = a
        elif a.size > chunked.LARGE:        # the gradient of a sum of a huge expand: in pieces
            out = chunked.sum(a, axes, True)
        elif len(axes) == lead:     # only the dims the shape drops (a bias's gradient)
            return backend.reduce_sum(a, axes, False)
        else:
            out = backend.reduce_sum(a, axes, True)
        # no reshape that changes nothing: its view would make the gradient a copy in .grad
        return out if tuple(out.shape) == shape else namespace_of(a).reshape(out, shape)

    @classmethod
    def specialize(cls, arrays, params):
        shape = params["shape"]
        a_shape = arrays[0].shape
        axes, _ = _sum_to_axes(a_shape, shape)
        if not axes:
            return None
        if tuple(n for i, n in enumerate(a_shape) if i not in axes) == shape:
            # the summed dims are the ones the shape drops: the same sums, without a reshape
            return lambda a: backend.reduce_sum(a, axes, False)

        def sum_to_shape(a):        # forward's arithmetic, its checks and axes done already
            return namespace_of(a).reshape(backend.reduce_sum(a, axes, True), shape)
        return sum_to_shape

    rule = "grad summed back to a's shape"

    def backward(self, g):
        return (expand(g, self.shape_in),)


def sum_to(x: Tensor, shape) -> Tensor:
    """Sum ``x`` over broadcast dimensions so that it has ``shape``."""
    shape = tuple(shape)
    if x.shape == shape:
        return x
    return apply(SumTo, x, shape=shape)


# what backward formulas use of this module (Note [one formula], ops/formula.py)
_sum_to_arrays = forward_of(SumTo)
_expand_arrays = forward_of(Expand)
_reshape_arrays = forward_of(Reshape)
define("sum_to", lambda a, shape: a if a.shape == shape else _sum_to_arrays(a, shape), sum_to)
define("expand", lambda a, shape: a if a.shape == shape else _expand_arrays(a, shape),
       lambda t, shape: expand(t, *shape))
define("reshape", _reshape_arrays, lambda t, shape: reshape(t, *shape))
define("mT", backend.swap_last, lambda t: transpose(t, -1, -2))     # a view: exactly Transpose's values
_index_add_arrays = forward_of(IndexAdd)
define("index_add", lambda g, key, shape: _index_add_arrays(g, key, shape, False),
       lambda t, key, shape: apply(IndexAdd, t, key=key, shape=shape, basic=False))
