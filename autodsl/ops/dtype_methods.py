"""``x.float() x.double() x.int() x.long() x.bool()``: PyTorch's dtype shorthands as Tensor methods.

Each is ``x.to(dtype)`` (``to_op``): a tensor already of that dtype is returned
as it is; a conversion between floating dtypes is recorded (its gradient comes
back converted to ``x``'s dtype, ToCopyBackward), one to an integer dtype or to
bool is not (the result never requires grad), as in PyTorch.
"""
from __future__ import annotations

from autodsl import backend
from autodsl.ops.registry import install, to_op

__all__ = ["to_bool", "to_double", "to_float", "to_int", "to_long"]


def to_float(self):
    """``x`` as float32 (``x.to(float32)``); differentiable from a floating ``x``."""
    return to_op(self, dtype=backend.float32)


def to_double(self):
    """``x`` as float64 (``x.to(float64)``); differentiable from a floating ``x``."""
    return to_op(self, dtype=backend.float64)


def to_int(self):
    """``x`` as int32 (``x.to(int32)``): floats are truncated toward zero; not differentiable."""
    return to_op(self, dtype=backend.int32)


def to_long(self):
    """``x`` as int64 (``x.to(int64)``): floats are truncated toward zero; not differentiable."""
    return to_op(self, dtype=backend.int64)


def to_bool(self):
    """``x`` as bool (``x.to(bool)``): true where ``x`` is not zero; not differentiable."""
    return to_op(self, dtype=backend.bool_)


install({"float": to_float, "double": to_double, "int": to_int, "long": to_long, "bool": to_bool})
