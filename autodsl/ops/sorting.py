"""Sorting and arg-extremes: ``sort``, ``argsort``, ``topk``, ``argmax``, ``argmin``.

The indices are ops of their own that are never differentiable (int64 results); the values
are a gather at the same indices, found again in the values op's forward (``SortValues``,
``TopkValues``: ``Gather``'s gradient under torch's node names), so that the gradient
scatters back through them, as torch's SortBackward and TopkBackward do, and a replay of the
graph at new values sorts them again. Ties keep their order (a stable sort, torch's ``stable=True`` order, which is
also what its CPU sort gives by default); NaN counts as larger than every number, as in torch.
"""
from __future__ import annotations

from autodsl import backend
from autodsl.backend import kind_of, namespace_of
from autodsl.core.tensor import as_tensor
from autodsl.core.words import shown
from autodsl.errors import DTypeError, IndexError_, RuntimeError_, TypeError_
from autodsl.ops.gather import Gather
from autodsl.ops.movement import _dim, getitem
from autodsl.ops.reduce import MinMaxResult
from autodsl.ops.registry import Op, apply, defop

__all__ = ["argmax", "argmin", "argsort", "sort", "topk"]


def _stable_argsort(a, axis, descending):
    """Indices that sort ``a`` along ``axis``, ties in their original order both ways; NaN
    last ascending and first descending (torch's order)."""
    xp = namespace_of(a)
    if not descending:
        return xp.argsort(a, axis=axis, stable=True)
    # descending and stable: sort the reversed array ascending and reverse the result; equal
    # values then come out in their original order and NaN (last ascending) comes first
    n = a.shape[axis]
    rev = xp.argsort(xp.flip(a, axis=axis), axis=axis, stable=True)
    return (n - 1) - xp.flip(rev, axis=axis)


@defop("argsort", node_name="ArgsortBackward", public=False)
class Argsort(Op):
    """The int64 indices that sort a along dim (stable)."""
    never_differentiable = True
    rule = "no gradient: integer positions"

    def forward(self, a, dim, descending=False):
        if a.ndim == 0:
            _dim(dim, 0)
            return namespace_of(a).zeros((), dtype=namespace_of(a).int64)
        xp = namespace_of(a)
        return xp.astype(_stable_argsort(a, _dim(dim, a.ndim), descending), xp.int64, copy=False)


def _sort_indices(a, d, descending):
    xp = namespace_of(a)
    if a.ndim == 0:
        return xp.zeros((), dtype=xp.int64)
    return xp.astype(_stable_argsort(a, d, descending), xp.int64, copy=False)


@defop("sort", node_name="SortBackward")
class SortValues(Gather):
    """a sorted along dim: a gather at the indices that sort it, which forward finds again on
    every run (a replay sorts the new values), so the gradient goes back through them."""
    differentiable = None

    def forward(self, a, dim, descending=False):
        d = _dim(dim, a.ndim)
        idx = _sort_indices(a, d, descending)
        return self.gather(a, idx, namespace_of(a).reshape(idx, (-1,)) if a.ndim == 0 else idx, d,
                           a.shape or (1,))

    rule = "grad sent back to each value's place before the sort"

    def formula(self, F, g):
        return Gather.formula(self, F, g)[:1]


@defop("topk", node_name="TopkBackward")
class TopkValues(SortValues):
    """The k largest (or smallest) values of a along dim, in order: a gather as for sort."""

    def forward(self, a, k, dim, largest=True):
        d = _dim(dim, a.ndim)
        idx = _sort_indices(a, d, largest)
        if a.ndim == 0:
            return self.gather(a, idx, namespace_of(a).reshape(idx, (-1,)), d, (1,))
        idx = backend.getitem(idx, (slice(None),) * d + (slice(0, k),))
        return self.gather(a, idx, idx, d, a.shape)

    rule = "grad sent back to the places of the k values chosen"


class _ArgExtreme(Op):
    never_differentiable = True
    rule = "no gradient: integer positions"
    pick = None

    def forward(self, a, dim=None, keepdim=False):
        xp = namespace_of(a)
        name = self.op_name
        if kind_of(a.dtype) == "b":
            raise DTypeError(f"{name} does not take a bool tensor; convert it with .to(int64)")
        if dim is None:
            if a.size == 0:
                raise IndexError_(f"{name} of an empty tensor has no position to give; give a dim of "
                                  "nonzero size with dim=...")
            flat = xp.asarray(getattr(xp, self.pick)(xp.reshape(a, (-1,))))
            out = xp.astype(flat, xp.int64)
            return xp.reshape(out, (1,) * a.ndim) if keepdim else out
        d = _dim(dim, a.ndim)
        if a.ndim == 0:
            return xp.zeros((), dtype=xp.int64)
        if a.shape[d] == 0:
            raise IndexError_(f"{name}: dim {d} has size 0, so it has no {self.what} position; reduce "
                              "over a dim of nonzero size")
        # NumPy (and torch) give the first occurrence of ties, and of NaN, which counts as
        # the largest value for argmax and the smallest for argmin, as in torch
        out = xp.asarray(getattr(xp, self.pick)(a, axis=d, keepdims=keepdim))
        return xp.astype(out, xp.int64, copy=False)


@defop("argmax", node_name="ArgmaxBackward", public=False)
class Argmax(_ArgExtreme):
    """The position of the largest value (the first of ties; NaN counts as the largest)."""
    pick, what = "argmax", "largest"


@defop("argmin", node_name="ArgminBackward", public=False)
class Argmin(_ArgExtreme):
    """The position of the smallest value (the first of ties; NaN counts as the smallest)."""
    pick, what = "argmin", "smallest"


def _bool_flag(name, v):
    if not isinstance(v, bool):
        raise TypeError_(f"{name} must be true or false, not {shown(v)}")
    return v


def argsort(input, dim=-1, descending=False, stable=False):
    """The int64 indices that sort ``input`` along ``dim`` (ties in their original order,
    NaN last; ``descending=true`` largest first, NaN first). No gradient.
    Example: ``argsort(x, dim=0)``"""
    _bool_flag("stable", stable)
    return apply(Argsort, as_tensor(input), dim=dim, descending=_bool_flag("descending", descending))


def sort(input, dim=-1, descending=False, stable=False):
    """``(values, indices)``: ``input`` sorted along ``dim`` and where each value was
    (``.values``/``.indices`` or ``[0]``/``[1]``, as torch). Ties keep their order (torch's
    stable order; ``stable`` is accepted either way), NaN sorts last (first when
    ``descending=true``). The gradient of the values goes back to the places they came from.
    Example: ``sort(x, descending=true).values``"""
    x = as_tensor(input)
    idx = argsort(x, dim=dim, descending=descending, stable=stable)
    return MinMaxResult(apply(SortValues, x, dim=dim, descending=descending), idx)


def topk(input, k, dim=-1, largest=True, sorted=True):
    """``(values, indices)`` of the ``k`` largest (``largest=false``: smallest) values along
    ``dim``, largest first (smallest first); ``sorted`` is accepted, the result is always in
    order. Ties come in their original order (torch leaves that order unspecified). The
    gradient goes back to the chosen places. Raises RuntimeError_ when k is negative or more
    than the size of dim. Example: ``topk(x, 2).values``"""
    x = as_tensor(input)
    _bool_flag("sorted", sorted)
    if x.dtype is backend.bool_:        # torch: "topk does not support bool dtypes"
        raise DTypeError("topk of a bool tensor; convert it first (.to(dtype=int64))")
    if isinstance(k, bool) or not isinstance(k, int):
        raise TypeError_(f"topk: k must be an integer, not {shown(k)}")
    d = _dim(dim, x.ndim)
    size = x.shape[d] if x.ndim else 1
    if not 0 <= k <= size:
        raise RuntimeError_(f"topk: k = {k} is out of range for dim {d} of size {size}; "
                            f"choose k from 0 to {size}")
    idx = argsort(x, dim=d, descending=_bool_flag("largest", largest))
    if x.ndim:
        idx = getitem(idx, (slice(None),) * d + (slice(0, k),))
    return MinMaxResult(apply(TopkValues, x, k=k, dim=d, largest=largest), idx)


def argmax(input, dim=None, keepdim=False):
    """The int64 position of the largest value, over all elements (flattened) or along ``dim``;
    the first of ties, and NaN counts as the largest (torch). No gradient. Raises IndexError_
    for an empty tensor without dim or an empty dim, DTypeError for a bool tensor.
    Example: ``argmax(x, dim=1)``"""
    return apply(Argmax, as_tensor(input), dim=dim, keepdim=keepdim)


def argmin(input, dim=None, keepdim=False):
    """The int64 position of the smallest value (as ``argmax``; NaN counts as the smallest,
    as in torch). Example: ``argmin(x)``"""
    return apply(Argmin, as_tensor(input), dim=dim, keepdim=keepdim)
