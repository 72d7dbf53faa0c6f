"""Installs operators (``+ - * / @ ** < ...``), in-place operators and op methods on Tensor.

PyTorch names and keywords: ``x.sum(dim=0, keepdim=True)``, ``x.reshape(2, 3)``.
"""
from __future__ import annotations

from autodsl.ops import compare as C
from autodsl.ops import elementwise as E
from autodsl.ops import gather as G
from autodsl.ops import decomp as D
from autodsl.ops import sorting as S
from autodsl.ops import linalg as L
from autodsl.ops import loss as Lo  # noqa: F401
from autodsl.ops import movement as M
from autodsl.ops import reduce as R
from autodsl.ops import rounding as Rd
from autodsl.ops import cumulative as Cu
from autodsl.ops import special as Sp
from autodsl.ops import triangle as Tr
from autodsl.ops.inplace import inplace, refresh_view
from autodsl.ops.movement import sum_to
from autodsl.ops.registry import install, to_op
from autodsl.backend import DType
from autodsl.core.tensor import Tensor
from autodsl.errors import DeviceError, ShapeError, TypeError_
from autodsl.core.words import shown
from autodsl.source import python_frames


def _r(fn):
    return lambda self, other: fn(other, self)


def _setitem(self, key, value):
    split = None if isinstance(key, M._Raw) else M.ints_first(M._key_arrays(key))
    if split is not None:       # x[1, :, idx] = v writes x[1][:, idx], as torch (M.ints_first)
        _setitem(M.getitem(self, M._Raw(split[0])), M._Raw(split[1]), value)
        return
    inplace(lambda t, v: M.index_put(t, key, v), self, value, what="writing x[...] =")


def _T(self):
    """All dims reversed (a transposed view for a matrix)."""
    return M.permute(self, *reversed(range(self.ndim))) if self.ndim >= 2 else self


def _mT(self):
    return M.transpose(self, -1, -2)


def _t(self):
    """``x.t()``, as torch's: a matrix's transpose (a view), a tensor of 0 or 1 dims as it is.
    Raises ShapeError for more than 2 dims (``transpose(dim0, dim1)`` or ``.mT`` says which)."""
    if self.ndim > 2:
        raise ShapeError(f"t() transposes a tensor of at most 2 dims, not {self.ndim}; use "
                         ".transpose(dim0, dim1), or .mT for the last two")
    return M.transpose(self, 0, 1) if self.ndim == 2 else self


_DTYPE_NAMES = ("float32", "float64", "int32", "int64", "bool")


_PY_TYPES = {float: "float64", int: "int64", bool: "bool"}     # torch: x.to(float) is float64


def _to(self, device=None, dtype=None, copy=False):
    """``x.to("cuda")``, ``x.to(float32)``, ``x.to(device=..., dtype=...)``, ``x.to(other)``
    (other's dtype and device), as in PyTorch; Python's float, int and bool stand for float64,
    int64 and bool, and ``copy=true`` gives a new tensor even where nothing changes."""
    if not isinstance(copy, bool):
        raise TypeError_(f"x.to(copy=...) must be true or false, not {shown(copy)}")
    out = _converted(self, _PY_TYPES.get(device, device) if isinstance(device, type) else device,
                     _PY_TYPES.get(dtype, dtype) if isinstance(dtype, type) else dtype)
    return E.clone(out) if copy and out is self else out


def _converted(self, device, dtype):
    if isinstance(device, Tensor):
        if dtype is not None:
            raise TypeError_("x.to(other) takes other's dtype and device; give no dtype= with it")
        device, dtype = device.device, device.dtype
    elif dtype is None and (isinstance(device, DType) or device in _DTYPE_NAMES):
        device, dtype = None, device
    elif isinstance(device, str) and device.strip().lower() not in ("cpu", "cuda", "cuda:0", "gpu", "dask"):
        raise DeviceError(f"x.to({device!r}): {device!r} is neither a device ('cpu', 'cuda', 'dask') nor a dtype "
                          f"({', '.join(_DTYPE_NAMES)})")
    return to_op(self, device=device, dtype=dtype)


def _inplace(fn, what, ufunc=None):
    def method(self, other):
        return inplace(fn, self, other, what=what, ufunc=ufunc, frames=frames)
    frames = python_frames(method)      # (this one's: where a write happened is its caller's line)
    return method


_dunders = {
    "__add__": E.add, "__radd__": _r(E.add),
    "__sub__": E.sub, "__rsub__": _r(E.sub),
    "__mul__": E.mul, "__rmul__": _r(E.mul),
    "__truediv__": E.div, "__rtruediv__": _r(E.div),
    "__matmul__": L.matmul, "__rmatmul__": _r(L.matmul),
    "__pow__": E.pow, "__rpow__": _r(E.pow),
    "__neg__": E.neg, "__pos__": lambda self: self, "__abs__": E.abs,
    "__lt__": C.lt, "__le__": C.le, "__gt__": C.gt, "__ge__": C.ge, "__eq__": C.eq, "__ne__": C.ne,
    "__and__": C.logical_and, "__rand__": _r(C.logical_and),
    "__or__": C.logical_or, "__ror__": _r(C.logical_or), "__invert__": C.logical_not,
    "__getitem__": M.getitem, "__setitem__": _setitem,
    "__iadd__": _inplace(E.add, "x += ...", "add"), "__isub__": _inplace(E.sub, "x -= ...", "subtract"),
    "__imul__": _inplace(E.mul, "x *= ...", "multiply"), "__itruediv__": _inplace(E.div, "x /= ...", "divide"),
    "__ipow__": _inplace(E.pow, "x **= ..."),
}

_methods = {
    "add": E.add, "sub": E.sub, "mul": E.mul, "div": E.div, "neg": E.neg, "pow": E.pow,
    "exp": E.exp, "log": E.log, "sqrt": E.sqrt, "sin": E.sin, "cos": E.cos, "tan": E.tan,
    "tanh": E.tanh, "sigmoid": E.sigmoid, "relu": E.relu, "abs": E.abs, "sign": E.sign,
    "clamp": E.clamp, "maximum": E.maximum, "minimum": E.minimum, "clone": E.clone,
    "matmul": L.matmul, "det": D.det, "inverse": D.inverse,
    "sum": R.sum, "mean": R.mean, "prod": R.prod, "max": R.max, "min": R.min, "amax": R.amax,
    "amin": R.amin, "norm": R.norm, "var": R.var, "std": R.std, "logsumexp": R.logsumexp,
    "softmax": R.softmax, "log_softmax": R.log_softmax,
    "reshape": M.reshape, "view": M.view, "transpose": M.transpose, "t": _t, "permute": M.permute,
    "unsqueeze": M.unsqueeze, "squeeze": M.squeeze, "expand": M.expand, "flatten": M.flatten,
    "any": C.any, "all": C.all, "logical_not": C.logical_not,
    "lt": C.lt, "le": C.le, "gt": C.gt, "ge": C.ge, "eq": C.eq, "ne": C.ne,
    "sum_to_size": lambda self, *shape: sum_to(self, M._shape_arg(shape)),
    "to": _to,
    "cpu": lambda self: to_op(self, device="cpu"),
    "cuda": lambda self: to_op(self, device="cuda"),
    "add_": _inplace(E.add, "add_", "add"), "sub_": _inplace(E.sub, "sub_", "subtract"),
    "mul_": _inplace(E.mul, "mul_", "multiply"), "div_": _inplace(E.div, "div_", "divide"),
    "pow_": _inplace(E.pow, "pow_"),
}

install(_dunders)
install(_methods, properties={"T": _T, "mT": _mT})
install({"_refresh_view": refresh_view})     # Note [stale views]: apply() and edges rebuild a view's history

# gathers, scatters, masks and sorting (ops/gather.py, ops/sorting.py), as torch's Tensor methods
install({"gather": G.gather, "scatter": G.scatter, "scatter_add": G.scatter_add,
         "index_select": G.index_select, "masked_fill": G.masked_fill, "index_put": M.index_put,
         "sort": S.sort, "argsort": S.argsort, "topk": S.topk, "argmax": S.argmax, "argmin": S.argmin,
         "scatter_": G.scatter_, "scatter_add_": G.scatter_add_, "masked_fill_": G.masked_fill_,
         "fill_": G.fill_, "zero_": G.zero_,
         "index_put_": G.index_put_})

# rounding and integer division (ops/rounding.py): x % y and x // y as Python and PyTorch mean them
install({
    "__mod__": Rd.remainder, "__rmod__": _r(Rd.remainder),
    "__floordiv__": Rd.floor_divide, "__rfloordiv__": _r(Rd.floor_divide),
    "__imod__": _inplace(Rd.remainder, "x %= ..."), "__ifloordiv__": _inplace(Rd.floor_divide, "x //= ..."),
    "floor": Rd.floor, "ceil": Rd.ceil, "trunc": Rd.trunc, "round": Rd.round,
    "remainder": Rd.remainder, "floor_divide": Rd.floor_divide,
    "remainder_": _inplace(Rd.remainder, "remainder_"), "floor_divide_": _inplace(Rd.floor_divide, "floor_divide_"),
})

# special functions, running sums and products, triangles (ops/special.py, cumulative.py, triangle.py)
install({
    "atan2": Sp.atan2, "log1p": Sp.log1p, "expm1": Sp.expm1, "square": Sp.square, "lgamma": Sp.lgamma,
    "digamma": Sp.digamma, "polygamma": lambda self, n: Sp.polygamma(n, self),
    "cumsum": Cu.cumsum, "cumprod": Cu.cumprod, "tril": Tr.tril, "triu": Tr.triu,
})
