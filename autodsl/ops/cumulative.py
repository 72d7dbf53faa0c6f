"""Cumulative sums and products along a dim: cumsum, cumprod.

A 0-d tensor is its own cumulative sum and product (``dim`` 0 or -1, as PyTorch). Bool and
integer tensors accumulate in int64, as PyTorch.
"""
from __future__ import annotations

from autodsl import backend
from autodsl.backend import kind_of, namespace_of
from autodsl.core.grad_mode import is_grad_enabled
from autodsl.core.tensor import Tensor, as_tensor
from autodsl.core.words import shown
from autodsl.errors import IndexError_, TypeError_
from autodsl.ops.creation import ones_like
from autodsl.ops.elementwise import where
from autodsl.ops.formula import define
from autodsl.ops.movement import cat, transpose, unsqueeze
from autodsl.ops.reduce import sum as _sum
from autodsl.ops.registry import Op, apply, defop, to_op

__all__ = ["cumprod", "cumsum"]

_xp = namespace_of


def _axis(dim, ndim):
    if isinstance(dim, bool) or not isinstance(dim, int):
        raise TypeError_(f"dim must be an integer, not {shown(dim)}")
    n = max(ndim, 1)
    if not -n <= dim < n:
        raise IndexError_(f"dim {dim} is out of range for a tensor with {ndim} dimensions "
                          f"(valid: {-n} to {n - 1})")
    return dim % n


def _accumulating(a):
    """a as the dtype it accumulates in: int64 for bools and integers (torch), else its own."""
    xp = _xp(a)
    return xp.astype(a, xp.int64) if kind_of(a.dtype) in "biu" and a.dtype != xp.int64 else a


@defop("cumsum")
class Cumsum(Op):
    """Running sums along dim (``reverse``: from the end, the gradient's direction)."""

    def forward(self, a, dim, reverse=False):
        self.axis = _axis(dim, a.ndim)
        self.reverse = reverse
        a = _accumulating(a)
        xp = _xp(a)
        if a.ndim == 0:
            return xp.asarray(a, copy=True)
        if reverse:
            return xp.flip(xp.cumulative_sum(xp.flip(a, axis=self.axis), axis=self.axis), axis=self.axis)
        return xp.cumulative_sum(a, axis=self.axis)

    rule = "grad summed from the end along dim (a reversed cumsum)"

    def backward(self, g):
        return (apply(Cumsum, g, dim=self.axis, reverse=not self.reverse),)


@defop("cumprod")
class Cumprod(Op):
    """Running products along dim."""
    save_output = True

    def forward(self, a, dim):
        self.axis = _axis(dim, a.ndim)
        self.save_for_backward(self.inputs[0])
        a = _accumulating(a)
        xp = _xp(a)
        if a.ndim == 0:
            return xp.asarray(a, copy=True)
        return xp.cumulative_prod(a, axis=self.axis)

    rule = ("(grad * out) summed from the end along dim, over a; where a has zeros, grad times "
            "the products of the other elements")

    def backward(self, g):
        x, out = self.saved_tensors
        if x.ndim == 0 or x.shape[self.axis] == 1:     # torch: one element along dim passes grad
            return (g,)
        d = self.axis
        # (off the host, no host sync to test for zeros: the forms below serve inputs without too)
        xd = x._data
        if xd.size == 0 or backend.on_host(xd) and not _xp(xd).any(xd == 0):
            # d out_j / d x_i = out_j / x_i for j >= i
            return (apply(Cumsum, g * out, dim=d, reverse=True) / x,)
        if is_grad_enabled():       # create_graph: with ops, to be differentiated again
            return (_cumprod_grad_with_zeros(x, out, g, d),)
        return (Tensor(_cumprod_grad_with_zeros_arrays(x._data, out._data, g._data, d), _device=x.device),)


def _cumprod_grad_with_zeros(x, out, g, d):
    """grad_i = sum_{j >= i} g_j prod_{m <= j, m != i} x_m, written with ops (so that it is
    differentiable again) as prod_{m < i} x_m * sum_{j >= i} g_j prod_{i < m <= j} x_m: the second
    product is a cumprod of x with its first i + 1 entries set to 1, one row per i (n^2 work, as
    torch's cumprod_backward when it must be differentiable)."""
    xt, ot, gt = (transpose(t, d, -1) for t in (x, out, g))
    n = xt.shape[-1]
    ar = backend.xp(x.device).arange(n)
    upto = Tensor(ar[None, :] <= ar[:, None], _device=x.device)        # [i, m]: m <= i
    from_i = Tensor(ar[None, :] >= ar[:, None], _device=x.device)      # [i, j]: j >= i
    rows = where(upto, 1.0, unsqueeze(xt, -2))                          # [..., i, m]
    after = cumprod(rows, dim=-1)                                       # prod_{i < m <= j} x_m
    before = cat([ones_like(ot[..., :1]), ot[..., :-1]], dim=-1)        # prod_{m < i} x_m
    # torch multiplies prod_{m < i} x_m into each product before the sum (its omitted_products),
    # so that an inf there meets a 0 product (nan) as in torch
    omitted = unsqueeze(before, -1) * after
    return transpose(_sum(where(from_i, unsqueeze(gt, -2) * omitted, 0.0), dim=-1), d, -1)


def _keep(out, dtype):
    """torch: an integer ``dtype=`` is the result's dtype too (int32 stays int32, not the int64
    that integers accumulate in without it)."""
    return out if dtype is None else to_op(out, dtype=dtype)


def _as(input, dtype):
    """torch's ``dtype=``: the input converted first (recorded, so a floating input keeps its gradient)."""
    return input if dtype is None else to_op(as_tensor(input), dtype=dtype)


def _cumprod_grad_with_zeros_arrays(x, out, g, d):
    """The same gradient on arrays in O(n), as torch's cumprod_backward without create_graph. With
    k the first zero of a row: for i < k it is the zero-free formula (the terms j >= k are 0);
    for i = k, prod_{m < k} x_m * (g_k + sum_{j > k} g_j prod_{k < m <= j} x_m); for i > k, 0
    (every product it sums has x_k in it). As torch, each sum runs only over the terms that are
    not 0 by a zero (j < k, then j before the second zero), so that an inf or nan gradient where
    the product is 0 gives no inf * 0 = nan."""
    xp = _xp(x)
    x, out, g = (xp.moveaxis(a, d, -1) for a in (x, out, g))
    n = x.shape[-1]
    idx = xp.arange(n)
    zero = x == 0
    k = xp.where(xp.any(zero, axis=-1), xp.argmax(xp.astype(zero, xp.int8), axis=-1), n)[..., None]
    before, at = idx < k, idx == k
    one = xp.ones((), dtype=x.dtype)
    w = xp.where(before, g * out, backend.zero_of(x))                    # torch: w masked to j < k
    rev = xp.flip(xp.cumulative_sum(xp.flip(w, axis=-1), axis=-1), axis=-1)
    part1 = xp.where(before, rev / xp.where(before, x, one), backend.zero_of(x))
    first_run = xp.cumulative_sum(xp.astype(zero, xp.int64), axis=-1) == 1    # k <= j < the second zero
    # prod_{k < m <= j} x_m, over the first run only (1 elsewhere), times g masked to that run (torch)
    after = xp.cumulative_prod(xp.where(first_run & (idx > k), x, one), axis=-1)
    s = xp.sum(xp.where(first_run, g, backend.zero_of(x)) * after, axis=-1, keepdims=True)
    left = xp.sum(xp.where(idx == k - 1, out, backend.zero_of(x)), axis=-1, keepdims=True)
    left = xp.where(k == 0, one, left)                                  # prod_{m < k} x_m
    return xp.moveaxis(part1 + xp.where(at, left * s, backend.zero_of(x)), -1, d)


def cumsum(input, dim, dtype=None):
    """Running sums along ``dim``: ``cumsum(tensor([1, 2, 3]), 0)`` is ``[1, 3, 6]``. Bools and
    integers sum in int64; ``dtype=`` converts the input first. The gradient is grad summed from
    the end. Example: ``cumsum(x, dim=0)``"""
    return _keep(apply(Cumsum, _as(input, dtype), dim=dim), dtype)


def cumprod(input, dim, dtype=None):
    """Running products along ``dim``: ``cumprod(tensor([1, 2, 3]), 0)`` is ``[1, 2, 6]``;
    ``dtype=`` converts the input first. The gradient is PyTorch's, also where the input has
    zeros (the products of the other elements). Example: ``cumprod(x, dim=0)``"""
    return _keep(apply(Cumprod, _as(input, dtype), dim=dim), dtype)


# prod's gradient with create_graph (ops/reduce.py, below this module) takes cumprods: Note [one formula]
define("cumprod", lambda a, dim: _xp(a).cumulative_prod(a, axis=dim), cumprod)
