"""Reductions: sum, mean, prod, max/min, norm, var, std, logsumexp, softmax, log_softmax.

``dim`` is None (all dimensions), an int, or a list of ints; ``keepdim``
keeps reduced dimensions with size 1, as in PyTorch.
"""
from __future__ import annotations

import builtins
import math

import autodsl.backend as backend
from autodsl.backend import kind_of, namespace_of
from autodsl.errors import IndexError_, RuntimeError_, TypeError_, ValueError_
from autodsl.core.grad_mode import is_grad_enabled
from autodsl.ops import chunked
from autodsl.ops.formula import TENSORS as F
from autodsl.ops.formula import define
from autodsl.ops.registry import Op, apply, defop
from autodsl.core.tensor import Tensor, as_tensor
from autodsl.errors import DTypeError
from autodsl.ops.elementwise import maximum
from autodsl.ops.elementwise import minimum
from autodsl.ops.elementwise import abs as _abs
from autodsl.ops.movement import cat, expand
from autodsl.ops.elementwise import where
from autodsl.ops.movement import IndexAdd
from autodsl.ops.elementwise import sign
from autodsl.ops.elementwise import exp
from autodsl.core.words import shown

__all__ = ["sum", "mean", "prod", "amax", "amin", "max", "min", "norm", "var", "std",
           "logsumexp", "softmax", "log_softmax"]


def _axes(dim, ndim):
    if dim is None or (isinstance(dim, (list, tuple)) and not dim):   # torch: dim=[] reduces all
        return tuple(range(ndim))
    dims = dim if isinstance(dim, (list, tuple)) else (dim,)
    out = []
    n = builtins.max(ndim, 1)
    for d in dims:
        if not isinstance(d, int) or isinstance(d, bool):
            try:        # (torch takes no true/false or 1.0 for a dim either)
                if isinstance(d, (*backend.HOST_BOOL, *backend.HOST_FLOAT)):
                    raise TypeError
                d = int(d)
            except Exception:  # noqa: BLE001
                raise TypeError_(f"dim must be an integer or a list of integers, not {shown(d)}") from None
        if not -n <= d < n:
            raise IndexError_(f"dim {d} is out of range for a tensor with {ndim} dimensions "
                              f"(valid: {-n} to {n - 1})")
        if d % n in out:        # torch: "dim 0 appears multiple times in the list of dims" (0-d too)
            raise IndexError_(f"dim {d % n} appears more than once in the list of dims {list(dims)}")
        out.append(d % n)
    return tuple(sorted(set(out))) if ndim else ()


def _kept(shape, axes):
    return tuple(1 if i in axes else n for i, n in enumerate(shape))


def _empty(a, axes, keepdim):
    """The (empty) result of reducing the empty ``a`` over ``axes``, all of nonzero size: dask
    reduces each of its empty chunks with NumPy, whose max of nothing raises."""
    shape = _kept(a.shape, axes) if keepdim else tuple(n for i, n in enumerate(a.shape) if i not in axes)
    return namespace_of(a).zeros(shape, dtype=a.dtype)


class _Reduction(Op):
    """Shared bookkeeping: remember the input shape and the keepdim shape of the output."""

    def _setup(self, a, dim, keepdim):
        if not isinstance(keepdim, backend.HOST_BOOL):     # torch: "keepdim must be bool"
            raise TypeError_(f"{self.op_name}: keepdim must be true or false, not {shown(keepdim)}")
        self.in_shape = a.shape
        self.axes = _axes(dim, a.ndim)
        self.kshape = _kept(a.shape, self.axes)
        self.keepdim = keepdim
        return self.axes

    def _spread(self, g):
        """g (output shape) -> broadcastable keepdim shape."""
        return g if self.keepdim else g.reshape(self.kshape)

    def _expand(self, g):
        return expand(self._spread(g), self.in_shape)


@defop("sum")
class Sum(_Reduction):
    """Sum over dim."""
    def forward(self, a, dim=None, keepdim=False):
        axes = self._setup(a, dim, keepdim)
        if a.size > chunked.LARGE:          # long: in pieces, so that an interrupt lands
            return chunked.sum(a, axes, keepdim)
        xp = namespace_of(a)
        if kind_of(a.dtype) == "b":         # torch: a sum of bools counts them (int64)
            a = xp.astype(a, xp.int64)
        return backend.reduce_sum(a, axes, keepdim)

    rule = "grad expanded to a's shape"

    def formula(self, F, g):
        return (F.expand(g if self.keepdim else F.reshape(g, self.kshape), self.in_shape),)


@defop("mean")
class Mean(_Reduction):
    """Mean over dim."""
    def forward(self, a, dim=None, keepdim=False):
        axes = self._setup(a, dim, keepdim)
        self.count = 1
        for ax in axes:
            self.count *= a.shape[ax]
        if a.size > chunked.LARGE:
            return chunked.mean(a, axes, keepdim, self.count)
        return backend.reduce_mean(a, axes, keepdim, self.count)

    rule = "grad / n expanded to a's shape (n elements averaged)"

    def formula(self, F, g):
        # divided before the expand: the same numbers, one division per result instead of one per
        # input element (a mean of a huge expand keeps an O(1) gradient until sum_to)
        return (F.expand((g if self.keepdim else F.reshape(g, self.kshape)) / self.count, self.in_shape),)


@defop("prod")
class Prod(_Reduction):
    """Product over dim."""
    save_output = True

    def forward(self, a, dim=None, keepdim=False):
        axes = self._setup(a, dim, keepdim)
        self.save_for_backward(self.inputs[0])
        if a.size > chunked.LARGE:
            return chunked.prod(a, axes, keepdim)
        return namespace_of(a).prod(a, axis=axes, keepdims=keepdim)

    rule = "grad * out / a (products of the other elements where a has zeros)"

    def backward(self, g):
        x, out = self.saved_tensors
        if x.ndim == 0:             # torch: prod of one number is the identity
            return (g,)
        a = x._data
        xp = namespace_of(a)
        host = backend.on_host(a)
        if host and not xp.any(a == 0):
            return (self._expand(g) * self._spread(out).expand(self.in_shape) / x,)
        # Off the host (no host sync to test for zeros) the products of the others below serve
        # every element, zero or not; without create_graph, out / x where no element of the
        # product is 0 (torch's bits there), the products of the others where one is.
        # With zeros, out/x is 0/0: use the product of the other elements, from
        # exclusive cumulative products over the reduced dims (as torch's prod_backward).
        rest = [i for i in range(a.ndim) if i not in self.axes]
        perm = tuple(rest + list(self.axes))
        moved = xp.permute_dims(a, perm)
        # (the reduced dims' size spelled out: dask's reshape divides by the other dims' for a -1)
        flat = xp.reshape(moved, moved.shape[:len(rest)] + (math.prod(moved.shape[len(rest):]),))
        inverse = tuple(perm.index(i) for i in range(a.ndim))
        if is_grad_enabled():
            # create_graph: torch's prod_safe_zeros_backward through recorded ops, so that the
            # gradient is differentiable again (and its second derivative is torch's, nan where
            # the input has one): the products before and after each element, as cumprods of
            # the input shifted by one with a 1 in front, the one after it flipped
            one = Tensor(xp.ones(flat.shape[:-1] + (1,), dtype=a.dtype), _device=x.device)
            if flat.shape[-1] == 1:     # one element per product: no others, a constant 1
                return (self._expand(g) * one.reshape(*moved.shape).permute(*inverse),)
            rows = x.permute(*perm).reshape(*flat.shape)
            before = F.cumprod(cat([one, rows[..., :-1]], dim=-1), -1)
            after = F.cumprod(cat([one, rows[..., 1:][..., ::-1]], dim=-1), -1)[..., ::-1]
            others = (before * after).reshape(*moved.shape).permute(*inverse)
            return (self._expand(g) * others,)
        left = xp.cumulative_prod(flat, axis=-1, include_initial=True)[..., :-1]
        right = xp.flip(xp.cumulative_prod(xp.flip(flat, axis=-1), axis=-1, include_initial=True)[..., :-1],
                        axis=-1)
        others = xp.permute_dims(xp.reshape(left * right, moved.shape), inverse)
        if not host:
            o = self._spread(out)._data
            others = xp.where(o == 0, others, o / a)
        return (self._expand(g) * Tensor(others, _device=x.device),)


def empty_reduction(op, shape, axes, dim):
    """torch's errors for a max/min of an empty tensor: a dim of size 0 reduced has no
    extreme (IndexError), and neither has a whole empty tensor (no dim given); reducing
    only dims of nonzero size gives an empty result."""
    if dim is None:
        raise RuntimeError_(f"{op} of an empty tensor (shape {shape}) has no value; give the dims to "
                            "reduce with dim=... (dims of nonzero size give an empty result)")
    for ax in axes:
        if shape[ax] == 0:
            raise IndexError_(f"{op}: dim {ax} has size 0, so it has no {op[-3:]}imum over it; "
                              "reduce over a dim of nonzero size")


class _Extreme(_Reduction):
    pick = None
    save_output = True

    def forward(self, a, dim=None, keepdim=False):
        axes = self._setup(a, dim, keepdim)
        if a.size == 0:
            # (max(x) and min(x) of the language are the ops max_all and min_all: named as written)
            empty_reduction(self.op_name.removesuffix("_all"), a.shape, axes, dim)
        self.save_for_backward(self.inputs[0])
        if a.size == 0:
            return _empty(a, axes, keepdim)
        if a.size > chunked.LARGE:
            return (chunked.amax if self.pick == "max" else chunked.amin)(a, axes, keepdim)
        return getattr(namespace_of(a), self.pick)(a, axis=axes, keepdims=keepdim)

    rule = "grad split evenly among the elements equal to out"

    def backward(self, g):
        x, out = self.saved_tensors         # the output is saved (version-checked), not kept raw
        hit = x == self._spread(out)
        count = hit.sum(dim=self.axes, keepdim=True)
        # torch (amax/amin: scale_grad_by_count, (grad / mask.sum(dims)) * mask): ties share the
        # gradient evenly; a slice whose extreme is nan has no element equal to it, so 0/0: nan
        return (self._spread(g) / count * hit,)


@defop("amax", node_name="MaxBackward")
class Amax(_Extreme):
    """Largest value over dim."""
    pick = "max"


@defop("amin", node_name="MinBackward")
class Amin(_Extreme):
    """Smallest value over dim."""
    pick = "min"


class _ExtremeOfAll(_Extreme):
    """max(x) / min(x) with no dim: the same forward as amax/amin, torch's other backward."""

    rule = "grad split evenly among the elements equal to out (the nan ones if out is nan)"

    def backward(self, g):
        x, out = self.saved_tensors
        o = self._spread(out)
        # torch (evenly_distribute_backward): the mask is x == out, or isnan(x) when out is nan,
        # and the masked elements are filled with grad / count (a fill: 0 elsewhere, even for an
        # inf grad)
        xp = namespace_of(x._data)
        hit = x == o
        hit = Tensor(hit._data | (xp.isnan(x._data) & xp.isnan(o._data)), _device=x.device)
        count = hit.sum(dim=self.axes, keepdim=True)
        return (where(hit, self._spread(g) / count, 0.0),)


@defop("max_all", node_name="MaxBackward", public=False)
class MaxAll(_ExtremeOfAll):
    """Largest element of the whole tensor: max(x)."""
    pick = "max"


@defop("min_all", node_name="MinBackward", public=False)
class MinAll(_ExtremeOfAll):
    """Smallest element of the whole tensor: min(x)."""
    pick = "min"


class MinMaxResult(tuple):
    """``(values, indices)`` of ``max(x, dim=d)`` / ``min(x, dim=d)``, as PyTorch returns them."""

    LANG_ATTRIBUTES = frozenset({"values", "indices"})
    __slots__ = ()

    def __new__(cls, values, indices):
        return super().__new__(cls, (values, indices))

    @property
    def values(self):
        return self[0]

    @property
    def indices(self):
        return self[1]

    def __repr__(self) -> str:
        return f"(values={self[0]!r}, indices={self[1]!r})"


@defop("max_dim", node_name="MaxBackward", public=False)
class ExtremeDim(Op):
    """Gather the max/min along one dim at precomputed indices; the gradient goes to those
    indices only (torch: max(dim)/min(dim) do not split ties, unlike max())."""

    def forward(self, a, key, out_shape):
        self.key, self.in_shape = key, a.shape
        xp = namespace_of(a)
        src = xp.reshape(a, (1,)) if a.ndim == 0 else a
        return xp.reshape(backend.getitem(src, key), out_shape)     # (nd fancy: dask has no src[key])

    rule = "grad sent to the index of each extreme (the first one on ties)"

    def backward(self, g):
        kshape = tuple(backend.broadcast_shapes(*(k.shape for k in self.key)))   # (a 0 with a 1 is 0)
        shape = self.in_shape or (1,)
        grad = apply(IndexAdd, g.reshape(kshape), key=self.key, shape=shape, basic=False)
        return (grad.reshape(self.in_shape),)


def _extreme_dim(pick, input, dim, keepdim, as_dim=False):
    x = as_tensor(input)
    if isinstance(dim, (list, tuple)):
        raise TypeError_(f"{pick}(x, dim=...) takes one dim; use amax/amin to reduce several")
    a = x._data
    xp = namespace_of(a)
    src = xp.reshape(a, (1,)) if a.ndim == 0 else a
    try:
        d = _axes(dim, src.ndim)[0]
    except IndexError_ as e:
        if not as_dim:
            raise
        # max(x, 1) meant as the elementwise max of x and 1 before integers became dims
        raise IndexError_(f"{e.args[0]}; {pick}(x, {dim}) with an integer reduces over dim {dim}, as "
                          f"in PyTorch: for the elementwise {pick}imum write {pick}(x, {float(dim)})") from None
    if a.size == 0:
        empty_reduction(pick, a.shape, (d,), dim)
    if src.size > chunked.LARGE:          # long: in pieces, so that an interrupt lands
        idx = chunked.arg_extreme(src, d, pick)
    else:
        idx = (xp.argmax if pick == "max" else xp.argmin)(src, axis=d, keepdims=True)   # first extreme
    key = tuple(idx if i == d else xp.reshape(xp.arange(n), tuple(n if j == i else 1 for j in range(src.ndim)))
                for i, n in enumerate(src.shape))
    if a.ndim == 0:
        out_shape = ()
    else:
        out_shape = idx.shape if keepdim else idx.shape[:d] + idx.shape[d + 1:]
    values = apply(ExtremeDim, x, key=key, out_shape=out_shape)
    indices = xp.astype(xp.reshape(idx, out_shape), xp.int64, copy=False)
    return MinMaxResult(values, Tensor(indices, _device=x.device))


@defop("norm")
class Norm(_Reduction):
    """Euclidean (2-) norm over dim."""
    save_output = True

    def forward(self, a, dim=None, keepdim=False):
        axes = self._setup(a, dim, keepdim)
        self.save_for_backward(self.inputs[0])
        xp = namespace_of(a)
        if a.size > chunked.LARGE:
            return xp.sqrt(chunked.sum_sq(a, axes, keepdim))
        return xp.sqrt(xp.sum(a * a, axis=axes, keepdims=keepdim))

    rule = "grad * a / out"

    def backward(self, g):
        x, out = self.saved_tensors
        o = self._spread(out)
        # torch (linalg_vector_norm_backward, p = 2): grad * (x / norm).masked_fill_(norm == 0, 0):
        # 0 at the zero vector (nan for an inf grad there, and a nan second derivative, as torch),
        # and x / norm first, so that grad * x cannot overflow where the result is finite
        return (self._spread(g) * where(o == 0, 0.0, x / o),)


@defop("pnorm", node_name="NormBackward", public=False)
class PNorm(_Reduction):
    """(sum |a|^p)^(1/p) over dim, for p other than 1, 2 and inf."""
    save_output = True

    def forward(self, a, p, dim=None, keepdim=False):
        axes = self._setup(a, dim, keepdim)
        if p < 0:
            _no_identity(a, dim, axes, p)
        self.p = p
        self.save_for_backward(self.inputs[0])
        xp = namespace_of(a)
        if a.size > chunked.LARGE:
            return chunked.abs_pow_sum(a, p, axes, keepdim) ** (1.0 / p)
        return xp.sum(xp.abs(a) ** p, axis=axes, keepdims=keepdim) ** (1.0 / p)

    rule = "grad * a * |a|^(p-2) / out^(p-1)"

    def backward(self, g):
        x, out = self.saved_tensors
        o = self._spread(out)
        gs, p = self._spread(g), self.p
        # torch (linalg_vector_norm_backward): for p < 1, sgn(x)|x|^(p-1), 0 where x == 0, times
        # grad * norm^(1-p); otherwise x|x|^(p-2) (sgn(x)|x|^(p-1) for p < 2) times grad / norm^(p-1)
        # with 0 where the norm is 0: the mask stands on the grad factor alone, so that a second
        # derivative at the zero vector is 0 too, not 0 * inf
        if p < 1.0:
            return (where(x == 0, 0.0, sign(x) * _abs(x) ** (p - 1)) * gs * o ** (1 - p),)
        scaled = x * _abs(x) ** (p - 2) if p >= 2.0 else sign(x) * _abs(x) ** (p - 1)
        return (scaled * where(o == 0, 0.0, gs / o ** (p - 1)),)


@defop("norm_1", node_name="NormBackward", public=False)
class L1Norm(_Reduction):
    """sum |a| over dim: the 1-norm."""
    save_output = True      # torch's vector norm keeps its result: a write into it is caught

    def forward(self, a, dim=None, keepdim=False):
        axes = self._setup(a, dim, keepdim)
        self.save_for_backward(self.inputs[0])
        if a.size > chunked.LARGE:
            return chunked.abs_pow_sum(a, 1.0, axes, keepdim)
        return backend.reduce_sum(namespace_of(a).abs(a), axes, keepdim)

    rule = ("grad * sign(a)",)

    def backward(self, g):
        x, _ = self.saved_tensors       # the output only for its version check, as torch
        return (self._expand(g) * sign(x),)     # torch: sgn(x) * grad; sign(0) = sign(nan) = 0


def _no_identity(a, dim, axes, p):
    """torch's error for a norm without an identity (p = inf, -inf or negative) over no elements."""
    if a.size == 0 and (dim is None or any(a.shape[ax] == 0 for ax in axes)):
        largest = {math.inf: "the largest |x|", -math.inf: "the smallest |x|"}.get(p, f"(sum |x|^{shown(p)})^(1/p)")
        raise RuntimeError_(f"norm(p={shown(p)}) of no elements (shape {a.shape}) has no value, as "
                            f"{largest} of nothing; reduce over dims of nonzero size")


@defop("norm_inf", node_name="NormBackward", public=False)
class InfNorm(_Reduction):
    """max |a| over dim: the inf-norm; with ``smallest``, min |a|: the -inf norm."""
    save_output = True

    def forward(self, a, dim=None, keepdim=False, smallest=False):
        axes = self._setup(a, dim, keepdim)
        _no_identity(a, dim, axes, -math.inf if smallest else math.inf)
        self.save_for_backward(self.inputs[0])
        xp = namespace_of(a)
        if smallest:        # (the min of the |x|, nan where one is nan, as torch's)
            return xp.min(xp.abs(a), axis=axes, keepdims=keepdim)
        if a.size > chunked.LARGE:
            return chunked.amax(xp.abs(a), axes, keepdim)
        return xp.max(xp.abs(a), axis=axes, keepdims=keepdim)

    rule = "grad * sign(a) split evenly among the elements whose |a| is out (or nan)"

    def backward(self, g):
        x, out = self.saved_tensors
        o = self._spread(out)
        xp = namespace_of(x._data)
        ax = xp.abs(x._data)
        # torch (linalg_vector_norm_backward, inf): mask = |x| == norm, or |x| is nan; then
        # sgn(x) * ((grad / mask.sum(dim)) * mask): a nan element takes the gradient, and its
        # sgn(nan) = 0 makes it 0 (an amax of |x| would give nan)
        mask = Tensor((ax == o._data) | xp.isnan(ax), _device=x.device)
        count = mask.sum(dim=self.axes, keepdim=True)
        return (sign(x) * (self._spread(g) / count * mask),)


@defop("norm_0", node_name="NormBackward", public=False)
class ZeroNorm(_Reduction):
    """The number of nonzero elements over dim (a nan counts), in a's dtype: the "0-norm"."""

    def forward(self, a, dim=None, keepdim=False):
        axes = self._setup(a, dim, keepdim)
        xp = namespace_of(a)
        return xp.sum(xp.astype(a != 0, a.dtype), axis=axes, keepdims=keepdim)

    rule = "none (a count: torch sends no gradient, and .grad stays none)"

    def backward(self, g):
        return (None,)


@defop("var")
class Var(_Reduction):
    """Variance over dim with Bessel's correction (correction=1) unless told otherwise."""
    def forward(self, a, dim=None, keepdim=False, correction=1):
        axes = self._setup(a, dim, keepdim)
        self.save_for_backward(self.inputs[0])
        n = 1
        for ax in axes:
            n *= a.shape[ax]
        self.denom = n - correction
        self.whole = dim is None or a.ndim == 0
        if a.size > chunked.LARGE:
            return chunked.var(a, axes, keepdim, n, builtins.max(self.denom, 0))
        return _sum_sq_dev(a, axes, keepdim, n) / builtins.max(self.denom, 0)

    rule = "grad * 2 * (a - mean(a)) / (n - correction)"

    def backward(self, g):
        (x,) = self.saved_tensors
        return (_var_backward(self, self._spread(g), x),)


def _sum_sq_dev(a, axes, keepdim, n):
    """sum((a - mean(a))^2) over axes; the mean as a sum over n, so an empty tensor gives 0 with
    no NumPy warning (torch's var/std then divide by the degrees of freedom, at least 0: nan
    for no elements or no degrees of freedom, never the -0.0 of a negative divisor)."""
    d = a - backend.reduce_mean(a, axes, True, n)
    return namespace_of(a).sum(d * d, axis=axes, keepdims=keepdim)


def _var_backward(node, g, x):
    """torch's var_backward (g in the keepdim shape): 2(x - mean)/(n - correction) · g; over the
    whole tensor with no degrees of freedom left, g · (nan where x == mean, else inf), a
    constant (no history), as torch; over dims, 2/0 is inf, as torch's double arithmetic."""
    mu = x.mean(dim=node.axes, keepdim=True)
    if node.whole and node.denom <= 0:
        xp = namespace_of(x._data)
        c = xp.where(x._data == mu._data, xp.asarray(float("nan"), dtype=x._data.dtype),
                     xp.asarray(float("inf"), dtype=x._data.dtype))
        return g * Tensor(c, _device=x.device)
    scale = 2.0 / node.denom if node.denom else float("inf")
    return g * scale * (x - mu)     # d var = 2(x - mean)/(n - c)


@defop("std")
class Std(_Reduction):
    """Standard deviation over dim (correction=1 by default)."""
    save_output = True

    def forward(self, a, dim=None, keepdim=False, correction=1):
        axes = self._setup(a, dim, keepdim)
        self.save_for_backward(self.inputs[0])
        n = 1
        for ax in axes:
            n *= a.shape[ax]
        self.denom = n - correction
        self.whole = dim is None or a.ndim == 0
        xp = namespace_of(a)
        if a.size > chunked.LARGE:
            return xp.sqrt(chunked.var(a, axes, keepdim, n, builtins.max(self.denom, 0)))
        return xp.sqrt(_sum_sq_dev(a, axes, keepdim, n) / builtins.max(self.denom, 0))

    rule = "grad * (a - mean(a)) / ((n - correction) * out)"

    def backward(self, g):
        x, out = self.saved_tensors
        o = self._spread(out)
        # d std = d var / (2 std).  torch (std_backward): (grad / (2 result)).masked_fill_(result == 0,
        # 0), then var_backward: 0 where std == 0 (not 0/0 = nan), and the mask stands before the
        # (x - mean) factor, so that a second derivative there is 0 too
        return (_var_backward(self, where(o == 0, 0.0, self._spread(g) / (o * 2)), x),)


@defop("logsumexp")
class Logsumexp(_Reduction):
    """log(sum(exp(a))) over dim, shifted by the max so that it never overflows."""
    save_output = True

    def forward(self, a, dim=None, keepdim=False):
        axes = self._setup(a, dim, keepdim)
        self.save_for_backward(self.inputs[0])
        return _logsumexp(a, axes, keepdim)

    rule = "grad * exp(a - out)"

    def backward(self, g):
        x, out = self.saved_tensors
        return (self._spread(g) * exp(x - self._spread(out)),)   # d lse = softmax(x)


def _logsumexp(a, axes, keepdim):
    xp = namespace_of(a)
    if any(a.shape[ax] == 0 for ax in axes):     # torch: the log of an empty sum, -inf
        shape = _kept(a.shape, axes) if keepdim else tuple(n for i, n in enumerate(a.shape) if i not in axes)
        return xp.full(shape, -float("inf"), dtype=a.dtype)
    if a.size == 0:
        return _empty(a, axes, keepdim)
    if a.size > chunked.LARGE:
        return chunked.logsumexp(a, axes, keepdim)
    m = backend.reduce_max(a, axes, True)
    m = xp.where(xp.isfinite(m), m, 0.0)     # an all -inf slice stays -inf, not nan
    s = xp.log(backend.reduce_sum(xp.exp(a - m), axes, True)) + m
    return s if keepdim else xp.reshape(s, tuple(n for i, n in enumerate(a.shape) if i not in axes))


@defop("softmax")
class Softmax(Op):
    """exp(a) / sum(exp(a)) along dim, max-shifted."""
    save_output = True

    def forward(self, a, dim):
        xp = namespace_of(a)
        if a.ndim == 0:                  # one element: softmax is 1 (torch accepts dim 0 / -1)
            _axes(dim, 0)
            self.axis = None
            return xp.exp(a - a)         # torch: exp(a - max) / sum: nan for a nan or infinite a
        (self.axis,) = _axes(dim, a.ndim)
        if a.size == 0:                  # torch: empty in, empty out
            return xp.asarray(a, copy=True)
        if a.size > chunked.LARGE:
            return chunked.softmax(a, self.axis)
        # torch shifts by the max as it is: a +inf logit makes inf - inf = nan of its slice (there
        # is no finite answer), an all -inf slice is nan as well
        e = xp.exp(a - backend.reduce_max(a, self.axis, True))
        return e / backend.reduce_sum(e, self.axis, True)

    rule = "out * (grad - sum(grad * out))"

    def backward(self, g):
        (out,) = self.saved_tensors
        return (out * (g - (g * out).sum(dim=self.axis, keepdim=True)),)   # J = diag(s) - s s^T


@defop("log_softmax")
class LogSoftmax(Op):
    """a - logsumexp(a) along dim."""
    save_output = True

    def forward(self, a, dim):
        if a.ndim == 0:                  # one element: log_softmax is 0
            _axes(dim, 0)
            self.axis = None
            return a - a                 # torch: nan for a nan or infinite a
        (self.axis,) = _axes(dim, a.ndim)
        if a.size > chunked.LARGE:
            return chunked.log_softmax(a, self.axis)
        if a.size == 0:                  # torch: empty in, empty out
            return namespace_of(a).asarray(a, copy=True)
        xp = namespace_of(a)
        # torch's kernel: (a - max) - log(sum(exp(a - max))), the max as it is (a +inf logit: nan)
        t = a - backend.reduce_max(a, self.axis, True)
        return t - xp.log(backend.reduce_sum(xp.exp(t), self.axis, True))

    rule = "grad - exp(out) * sum(grad)"

    def formula(self, F, g, out):
        return (g - F.exp(out) * F.sum_keepdim(g, self.axis),)


# -- public functions ---------------------------------------------------------------------------

def sum(input, dim=None, keepdim=False):
    """Sum of the elements, over all dims or over ``dim`` (int or list). Example: ``x.sum(dim=0)``"""
    return apply(Sum, input, dim=dim, keepdim=keepdim)


def floating_input(name: str, input) -> Tensor:
    """``input`` as a Tensor; DTypeError when it is not floating: the ops that torch refuses on
    integer and bool tensors (mean, var, std, norm, softmax, log_softmax, the losses)."""
    t = as_tensor(input)
    if not t.dtype.is_floating:
        raise DTypeError(f"{name} needs a floating tensor, this one is {t.dtype.name}; "
                         "convert it with .to(dtype=float64)")
    return t


def mean(input, dim=None, keepdim=False):
    """Mean of the elements (floating tensors), over all dims or ``dim``. Example: ``x.mean(dim=1)``"""
    return apply(Mean, floating_input("mean", input), dim=dim, keepdim=keepdim)


def prod(input, dim=None, keepdim=False):
    """Product of the elements (zeros handled in the gradient). Example: ``prod(x)``"""
    return apply(Prod, input, dim=dim, keepdim=keepdim)


def amax(input, dim=None, keepdim=False):
    """Largest element over ``dim``; ties share the gradient evenly. Example: ``amax(x, dim=0)``"""
    return apply(Amax, input, dim=dim, keepdim=keepdim)


def amin(input, dim=None, keepdim=False):
    """Smallest element over ``dim``; ties share the gradient evenly. Example: ``amin(x, dim=0)``"""
    return apply(Amin, input, dim=dim, keepdim=keepdim)


def _dim_as_other(name, other, dim, keepdim, input=None):
    """torch: ``max(x, 1)`` reduces over dim 1 (``max(x, 1, True)`` keeps it); only a tensor or
    a float second argument is elementwise, or any second argument after a plain number
    (``max(3, 5)`` is 5: a number has no dims to reduce)."""
    if isinstance(input, (bool, int, float)):
        return other, dim, keepdim
    if isinstance(other, int) and not isinstance(other, bool):
        if isinstance(dim, bool):
            dim, keepdim = None, dim
        if dim is not None:
            raise TypeError_(f"{name}(x, {other}) already reduces over dim {other}; give the dim once")
        return None, other, keepdim
    return other, dim, keepdim


def max(input, other=None, dim=None, keepdim=False):
    """``max(x)`` / ``x.max(dim=0)``: the largest element (a reduction; ties share the gradient
    evenly). ``max(a, b)``: the elementwise maximum (ties split in half).

    With ``dim`` it returns ``(values, indices)`` as PyTorch does (``.values``, ``.indices``,
    or ``[0]``, ``[1]``), and the gradient goes to the first maximum only. An integer second
    argument is that dim, as in PyTorch: ``max(x, 1)`` is ``max(x, dim=1)`` (``max(x, 1,
    true)`` keeps it); a float or a tensor is elementwise (``max(x, 0.0)`` is relu).
    Over an empty dim there is no maximum (IndexError_), and none of a whole empty tensor
    (RuntimeError_); reducing dims of nonzero size of an empty tensor gives an empty result.
    Example: ``max(x)``, ``x.max(dim=1)[0]``, ``max(x, 1).indices``, ``max(x, 0.0)``
    """
    as_dim = isinstance(other, int) and not isinstance(other, bool)
    other, dim, keepdim = _dim_as_other("max", other, dim, keepdim, input)
    if other is not None:
        if dim is not None:
            raise TypeError_("max(a, b) is elementwise and takes no dim; use max(a, dim=...) to reduce")
        return maximum(input, other)
    if dim is not None:
        return _extreme_dim("max", input, dim, keepdim, as_dim)
    if isinstance(input, Tensor) and input._data.size == 0:
        empty_reduction("max", input.shape, (), None)
    return apply(MaxAll, input, keepdim=keepdim)


def min(input, other=None, dim=None, keepdim=False):
    """``min(x)``: the smallest element (ties share the gradient evenly). ``x.min(dim=0)``:
    ``(values, indices)`` as for ``max``. ``min(a, b)``: the elementwise minimum (ties split
    in half); an integer second argument is a dim, as for ``max``.
    Example: ``x.min()``, ``x.min(dim=0).values``, ``min(x, 1)``
    """
    as_dim = isinstance(other, int) and not isinstance(other, bool)
    other, dim, keepdim = _dim_as_other("min", other, dim, keepdim, input)
    if other is not None:
        if dim is not None:
            raise TypeError_("min(a, b) is elementwise and takes no dim; use min(a, dim=...) to reduce")
        return minimum(input, other)
    if dim is not None:
        return _extreme_dim("min", input, dim, keepdim, as_dim)
    if isinstance(input, Tensor) and input._data.size == 0:
        empty_reduction("min", input.shape, (), None)
    return apply(MinAll, input, keepdim=keepdim)


def norm(input, p=2, dim=None, keepdim=False):
    """The p-norm of a floating tensor over all dims or ``dim``, as torch.linalg.vector_norm:
    p = 2 (default; none and "fro" mean 2), 1, inf (the largest |x|), -inf (the smallest), 0
    (the number of nonzero elements: no gradient, .grad stays none, as torch), or any other
    number, (sum |x|^p)^(1/p) (0 when an element is 0 and p < 0). DTypeError for an integer
    tensor, RuntimeError for p = inf, -inf or negative over no elements (no identity), as
    torch. The gradient of the 2-norm at the zero vector is 0. Example: ``norm(x)``,
    ``x.norm(p=1)``
    """
    input = floating_input("norm", input)
    if p is None or p == "fro":
        p = 2
    if isinstance(p, bool) or not isinstance(p, (int, float)) or p != p:
        raise ValueError_(f"norm: p must be a number (or inf, -inf, \"fro\"), not {shown(p)}")
    if p == 2:
        return apply(Norm, input, dim=dim, keepdim=keepdim)
    if p == 1:
        return apply(L1Norm, input, dim=dim, keepdim=keepdim)
    if p == math.inf or p == -math.inf:
        return apply(InfNorm, input, dim=dim, keepdim=keepdim, smallest=p < 0)
    if p == 0:
        return apply(ZeroNorm, input, dim=dim, keepdim=keepdim)
    return apply(PNorm, input, p=float(p), dim=dim, keepdim=keepdim)


def var(input, dim=None, unbiased=None, keepdim=False, *, correction=None):
    """Variance over all dims or ``dim``, divided by n - correction (correction=1, Bessel's,
    unless told otherwise; ``unbiased=false`` means 0), with torch's signatures: ``var(x, dim,
    unbiased, keepdim)``, ``var(x, unbiased)``, ``var(x, dim=..., keepdim=..., correction=...)``
    (correction by keyword only, and not beside unbiased). Example: ``x.var(dim=0)``
    """
    dim, correction = _var_args("var", dim, unbiased, correction)
    return apply(Var, floating_input("var", input), dim=dim, keepdim=keepdim, correction=correction)


def std(input, dim=None, unbiased=None, keepdim=False, *, correction=None):
    """Standard deviation, sqrt of ``var`` (the same signatures). Example: ``std(x)``"""
    dim, correction = _var_args("std", dim, unbiased, correction)
    return apply(Std, floating_input("std", input), dim=dim, keepdim=keepdim, correction=correction)


def _var_args(name, dim, unbiased, correction):
    """``(dim, correction)`` from torch's forms: a bool second argument is ``unbiased``."""
    if isinstance(dim, backend.HOST_BOOL):      # var(x, false): torch's var(input, unbiased)
        if unbiased is not None:
            raise TypeError_(f"{name}(x, {shown(dim)}, ...): the second argument is unbiased here, and "
                             "unbiased is given again; give dim as a number or a list")
        dim, unbiased = None, dim
    if unbiased is None:
        return dim, 1 if correction is None else correction
    if correction is not None:
        raise TypeError_(f"{name}: give unbiased or correction, not both (unbiased=false is correction=0)")
    if not isinstance(unbiased, backend.HOST_BOOL):
        raise TypeError_(f"{name}: unbiased must be true or false, not {shown(unbiased)}; for a dim "
                         f"and keepdim write {name}(x, dim, keepdim=true)")
    return dim, 1 if unbiased else 0


def logsumexp(input, dim, keepdim=False):
    """log(sum(exp(x))) over ``dim``, stable for huge values and -inf entries.
    Example: ``logsumexp(x, dim=0)``
    """
    return apply(Logsumexp, input, dim=dim, keepdim=keepdim)


def softmax(input, dim):
    """Softmax along ``dim`` (max-shifted, stable). Example: ``softmax(x, dim=-1)``"""
    return apply(Softmax, floating_input("softmax", input), dim=dim)


def log_softmax(input, dim):
    """log(softmax(x)) along ``dim``, computed as x - logsumexp(x). Example: ``log_softmax(x, dim=1)``"""
    return apply(LogSoftmax, floating_input("log_softmax", input), dim=dim)


# what backward formulas use of this module (Note [one formula], ops/formula.py): Sum's arrays
define("sum_keepdim", lambda a, dim: backend.reduce_sum(a, _axes(dim, a.ndim), True),
       lambda t, dim: sum(t, dim=dim, keepdim=True))
