"""Comparisons and logical ops: boolean results, never differentiable."""
from __future__ import annotations

import builtins
import numbers

from autodsl.backend import namespace_of
from autodsl.ops import chunked
from autodsl.ops.registry import Op, apply, apply2, defop

__all__ = ["lt", "le", "gt", "ge", "eq", "ne", "logical_and", "logical_or", "logical_not", "any", "all"]


class _Compare(Op):
    __slots__ = ()
    pointwise = True
    never_differentiable = True
    promote = True
    fn = None

    def forward(self, a, b=None):
        xp = namespace_of(a)
        return getattr(xp, self.fn)(a) if b is None else getattr(xp, self.fn)(a, b)


def _make(name, fn, doc):
    cls = type(name.capitalize(), (_Compare,), {"fn": fn, "__doc__": doc})
    return defop(name)(cls)


_OPS = {
    "lt": _make("lt", "less", "a < b"),
    "le": _make("le", "less_equal", "a <= b"),
    "gt": _make("gt", "greater", "a > b"),
    "ge": _make("ge", "greater_equal", "a >= b"),
    "eq": _make("eq", "equal", "a == b"),
    "ne": _make("ne", "not_equal", "a != b"),
    "logical_and": _make("logical_and", "logical_and", "a and b, elementwise"),
    "logical_or": _make("logical_or", "logical_or", "a or b, elementwise"),
    "logical_not": _make("logical_not", "logical_not", "not a, elementwise"),
}


class _Test(Op):
    """any/all over dims: bool results, never differentiable."""
    __slots__ = ()
    never_differentiable = True
    fn = None

    def forward(self, a, dim=None, keepdim=False):
        axes = None if dim is None else tuple(dim) if isinstance(dim, (list, tuple)) else (dim,)
        if a.ndim == 0 and axes is not None and builtins.all(
                isinstance(d, numbers.Integral) and not isinstance(d, bool) and d in (0, -1) for d in axes):
            axes = None         # torch: dim 0 (or -1) of a 0-d tensor is the tensor itself
        if a.size > chunked.LARGE:          # long: in pieces, so that an interrupt lands
            every = tuple(range(a.ndim)) if axes is None else tuple(sorted({d % a.ndim for d in axes}))
            return (chunked.reduce_any if self.fn == "any" else chunked.reduce_all)(a, every, keepdim)
        return getattr(namespace_of(a), self.fn)(a, axis=axes, keepdims=keepdim)


_ANY = defop("any")(type("Any", (_Test,), {"fn": "any", "__doc__": "True where any element is nonzero"}))
_ALL = defop("all")(type("All", (_Test,), {"fn": "all", "__doc__": "True where every element is nonzero"}))


def any(input, dim=None, keepdim=False):
    """True if any element (over ``dim``, or all dims) is true / nonzero. Example: ``(x > 0).any()``"""
    return apply(_ANY, input, dim=dim, keepdim=keepdim)


def all(input, dim=None, keepdim=False):
    """True if every element (over ``dim``, or all dims) is true / nonzero. Example: ``(x > 0).all()``"""
    return apply(_ALL, input, dim=dim, keepdim=keepdim)


def lt(input, other):
    """input < other, elementwise (a bool tensor; not differentiable). Example: ``lt(x, 0)``"""
    return apply2(_OPS["lt"], input, other)


def le(input, other):
    """input <= other, elementwise (bool). Example: ``le(x, 0)``"""
    return apply2(_OPS["le"], input, other)


def gt(input, other):
    """input > other, elementwise (bool). Example: ``gt(x, 0)``"""
    return apply2(_OPS["gt"], input, other)


def ge(input, other):
    """input >= other, elementwise (bool). Example: ``ge(x, 0)``"""
    return apply2(_OPS["ge"], input, other)


def eq(input, other):
    """input == other, elementwise (bool). Example: ``eq(x, y)``"""
    return apply2(_OPS["eq"], input, other)


def ne(input, other):
    """input != other, elementwise (bool). Example: ``ne(x, y)``"""
    return apply2(_OPS["ne"], input, other)


def logical_and(input, other):
    """Elementwise and of two bool tensors. Example: ``logical_and(x > 0, x < 1)``"""
    return apply(_OPS["logical_and"], input, other)


def logical_or(input, other):
    """Elementwise or of two bool tensors. Example: ``logical_or(x < 0, x > 1)``"""
    return apply(_OPS["logical_or"], input, other)


def logical_not(input):
    """Elementwise not of a bool tensor. Example: ``logical_not(x > 0)``"""
    return apply(_OPS["logical_not"], input)
