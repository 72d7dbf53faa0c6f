"""Type promotion for ops: the dtype PyTorch computes tensors and numbers in.

``promoted(cls, inputs, cast)`` gives an op's inputs as tensors of one dtype
(``cast(t, dtype=...)`` converts a tensor, recording the conversion);
``fast_pair`` is the usual binary case in one check, ``result_dtype`` the rule.
"""
from __future__ import annotations

from math import copysign

import autodsl.backend as backend
from autodsl.backend import kind_of, namespace_of
from autodsl.core.tensor import Tensor, as_tensor, new_tensor
from autodsl.errors import ValueError_

__all__ = ["promoted", "fast_pair", "to_tensors", "result_dtype", "promote_types", "category", "constant_value",
           "f64_constant"]

_ndarray = backend.HOST_ARRAY
_F64, _f64_array = backend.HOST_F64, backend.f64_scalar_array


# Note [type promotion]
# PyTorch ranks operands in three tiers: tensors with dims, 0-d tensors, and
# plain numbers. Within a tier dtypes promote as usual (bool < int32 < int64 <
# float32 < float64); a lower tier only matters when it brings a higher category
# (bool < integer < floating). So float32 * 2.5, float32 * tensor(2.5) and
# int64 + float32 are all float32, int32 + 5 is int32, and int64 * 2.5 has the
# default float dtype.

def category(d) -> int:
    """A dtype's kind as a rank, bool 0 < integer 1 < floating 2: promotion takes the higher,
    and an in-place write may not go into a lower one (torch's rules)."""
    return 2 if d.is_floating else (0 if d is backend.bool_ else 1)


def _promote(a, b):
    if a is None or a is b:
        return b
    if b is None:
        return a
    ca, cb = category(a), category(b)
    if ca != cb:
        return a if ca > cb else b
    return backend.float64 if ca == 2 else backend.int64    # float32+float64, int32+int64


def promote_types(a, b):
    """The dtype two tensors with dims compute in (torch.promote_types): the higher category
    (bool < integer < floating), and the wider of two in one category."""
    return _promote(a, b)


def _combine(higher, lower):
    if higher is None:
        return lower
    if lower is None or higher.is_floating:
        return higher
    if higher is backend.bool_ or lower.is_floating:
        return _promote(higher, lower)
    return higher


def _scalar_dtype(v):
    if isinstance(v, backend.HOST_BOOL):
        return backend.bool_
    if isinstance(v, backend.HOST_INT):
        return backend.int64
    if isinstance(v, backend.HOST_FLOAT):
        return backend.get_default_dtype()
    return None


def result_dtype(values):
    """The dtype PyTorch would compute ``values`` (tensors and numbers) in."""
    tiers = [None, None, None]
    for v in values:
        if isinstance(v, Tensor):
            tier, d = (1 if v._data.ndim == 0 else 0), v.dtype
        else:
            tier, d = 2, _scalar_dtype(v)
            if d is None:
                continue
        tiers[tier] = _promote(tiers[tier], d)
    return _combine(tiers[0], _combine(tiers[1], tiers[2]))


# Note [constant tensors]
# `y*0.999 + 0.001` in a loop makes a 0-d tensor for each Python number it meets. Such a
# tensor is never written (a node's saved_tensors can hand it out: on the host its array is
# read-only, and an in-place write into it is refused), so one per (value, dtype, device)
# serves every op: on "cuda" each new one is a copy to the GPU. 0.0 == -0.0 as a key, but the
# sign of a zero shows in results (1 / -0.0), and nan never matches a key: those two are kept
# under keys of their own, looked up only when the plain key misses (a hit costs one lookup,
# as before). ``constant_value``
# gives the number a cached constant off the host holds without reading the array (a host
# sync on "cuda"); a NumPy array's number is read with float().
_CONSTANTS: dict = {}
_VALUES: dict = {}      # id(a cached constant's array) -> (that array, its Python number)
_F64_CONSTANTS: dict = {}   # float -> its 0-d float64 host array (f64_constant)


def _constant(value, like, device: str) -> Tensor:
    key = (value, type(like), like.dtype, device)   # the array type first: no cross-library dtype compare
    t = _CONSTANTS.get(key)
    if t is None:
        if value == 0.0 or value != value:          # a zero (by sign) or nan: its own key
            key = ("nan" if value != value else "+0" if copysign(1.0, value) > 0 else "-0",
                   type(like), like.dtype, device)
            t = _CONSTANTS.get(key)
            if t is not None:
                return t
        # (x * c over many distinct c makes one per c: the short way for a float64 on the host)
        host = type(like) is _ndarray
        if host and type(value) is float and like.dtype is _F64:
            arr = _f64_array(value)
        elif backend.on_host(like):   # (1e300 as float32 is inf, as in PyTorch: no NumPy warning or error)
            token = backend.fp_errors_off()
            try:
                arr = namespace_of(like).asarray(value, dtype=like.dtype)
            except OverflowError:       # an integer beyond the integer tensor's dtype (int32 + 2^40)
                wider = "x.to(float64)" if like.dtype.itemsize >= 8 else "x.to(int64) or x.to(float64)"
                raise ValueError_(f"the number {value} does not fit in {like.dtype}, the tensor's dtype; "
                                  f"convert the tensor to a wider dtype first, e.g. {wider}") from None
            finally:
                backend.fp_errors_restore(token)
        else:           # (CuPy never warns; dask casts when it computes, under its own state)
            arr = namespace_of(like).asarray(value, dtype=like.dtype)
        if host:        # shared by every op that meets this number: a write would change them all
            arr.flags.writeable = False
        t = new_tensor(arr, device)
        if len(_CONSTANTS) >= 1024:
            _CONSTANTS.clear()
            _VALUES.clear()
        _CONSTANTS[key] = t
        if not host:            # (on the host the ops read the number with float(): no entry needed)
            _VALUES[id(arr)] = (arr, value)
    return t


def f64_constant(value: float):
    """The 0-d float64 host array of the Python float ``value``, for the 0-d lane of ``apply``,
    which keeps it bare (Note [bare constants], core/node.py): one per value, as the Tensors
    above, except a zero and a nan (the reasons above), made each time.
    Shape (), dtype float64; raises nothing."""
    arr = _F64_CONSTANTS.get(value)
    if arr is None:
        arr = _f64_array(value)
        if value != 0.0 and value == value:
            if len(_F64_CONSTANTS) >= 1024:
                _F64_CONSTANTS.clear()
            _F64_CONSTANTS[value] = arr
    return arr


def constant_value(arr):
    """The Python number ``arr`` holds when it is the array of a cached constant off the host
    (``x ^ 2``'s 2 on "cuda"), else None: read without touching the array (no host sync)."""
    e = _VALUES.get(id(arr))
    return e[1] if e is not None and e[0] is arr else None


def promoted(cls, inputs, cast):
    """Inputs as tensors of one dtype (over the op's ``promote`` positions)."""
    if len(inputs) == 2 and cls.promote is True:
        # the usual binary case first: x * y of one dtype, or x * 0.5 with a floating x
        a, b = inputs
        if type(a) is Tensor:
            arr = a._data
            if type(b) is Tensor:
                if arr.dtype == b._data.dtype and (not cls.floating or kind_of(arr.dtype) == "f"):
                    return [a, b]
            elif type(b) is float and kind_of(arr.dtype) == "f":
                return [a, _constant(b, arr, a.device)]
    which = range(len(inputs)) if cls.promote is True else cls.promote
    # Fast path: tensors of one dtype, plus plain numbers that do not raise its category.
    np_dt = None
    numbers = 0
    for i in which:
        v = inputs[i]
        tv = type(v)
        if tv is Tensor:
            d = v._data.dtype
            if np_dt is None:
                np_dt = d
            elif d != np_dt:
                break
        elif tv is float:
            numbers |= 2
        elif tv is int:
            numbers |= 1
        else:
            break
    else:
        kind = kind_of(np_dt) if np_dt is not None else None
        if kind == "f" or (kind == "i" and not numbers & 2 and not cls.floating) or \
                (kind == "b" and not numbers and not cls.floating):
            if not numbers:
                return list(inputs) if cls.promote is True else to_tensors(inputs)
            first = next(inputs[i] for i in which if type(inputs[i]) is Tensor)
            like = first._data
            out = list(inputs)
            for i in which:
                v = inputs[i]
                if type(v) is not Tensor:
                    out[i] = _constant(v, like, first.device)
            return out if cls.promote is True else to_tensors(out)
    return _promote_slow(cls, inputs, which, cast)


def _promote_slow(cls, inputs, which, cast):
    dt = result_dtype([inputs[i] for i in which])
    if dt is None:
        return to_tensors(inputs)
    if cls.floating and not dt.is_floating:
        dt = backend.get_default_dtype()
    device = next((v.device for v in inputs if isinstance(v, Tensor)), backend.get_default_device())
    out = list(inputs)
    for i in which:
        v = inputs[i]
        if isinstance(v, Tensor):
            if v.dtype is not dt:
                out[i] = cast(v, dtype=dt)
        elif _scalar_dtype(v) is not None:
            out[i] = Tensor(backend.asarray(v, dt, device), _device=device)
    return to_tensors(out)


def to_tensors(inputs):
    like = None
    for v in inputs:
        if isinstance(v, Tensor):
            if like is None or (v.dtype.is_floating and not like.dtype.is_floating):
                like = v
    out = []
    for v in inputs:
        out.append(v if isinstance(v, Tensor) else as_tensor(v, like=like))
    return out


def fast_pair(cls, a, b):
    """[a, b] as tensors of one dtype for the usual binary case (x * y of one dtype, x * 0.5 or
    0.5 * x with a floating x), or None to go the general way."""
    if type(a) is Tensor:
        arr = a._data
        if type(b) is Tensor:
            if arr.dtype == b._data.dtype and b.device == a.device and (
                    not cls.floating or kind_of(arr.dtype) == "f"):
                return [a, b]
        # (a NumPy dtype's kind is an attribute: kind_of's call only for other arrays)
        elif type(b) is float and (arr.dtype.kind == "f" if type(arr) is _ndarray else kind_of(arr.dtype) == "f"):
            return [a, _constant(b, arr, a.device)]
    elif type(a) is float and type(b) is Tensor:       # 0.5 * x, 1 - x (the reflected operators)
        arr = b._data
        if arr.dtype.kind == "f" if type(arr) is _ndarray else kind_of(arr.dtype) == "f":
            return [_constant(a, arr, b.device), b]
    return None
