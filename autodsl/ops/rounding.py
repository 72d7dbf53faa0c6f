"""Rounding and integer-style division: floor, ceil, trunc, round, remainder, floor_divide,
and div's rounding modes.

The rounding ops are recorded with a zero gradient, as PyTorch's FloorBackward0 (a result of a
tensor that requires grad requires grad too, and its gradient is zeros). Integer tensors pass
through them unchanged; bool tensors are refused, as PyTorch refuses them. Integer division by
zero is an error (PyTorch's "ZeroDivisionError"); floating division by zero gives IEEE results.
"""
from __future__ import annotations

import builtins
import math

from autodsl.backend import kind_of, namespace_of
from autodsl.core.words import shown
from autodsl.errors import DTypeError, TypeError_, ValueError_
from autodsl.ops.creation import zeros_like
from autodsl.ops.registry import Op, apply, defop

__all__ = ["ceil", "floor", "floor_divide", "remainder", "round", "rounded_div", "trunc"]

_xp = namespace_of


def _no_bool(name, *arrays):
    for a in arrays:
        if kind_of(a.dtype) == "b":
            raise DTypeError(f"{name} does not take a bool tensor; convert it first, e.g. "
                             "x.to(int64) or x.to(float64)")


def _no_integer_zero(name, a, b):
    """PyTorch raises for an integer division by zero (NumPy would give 0 and a warning)."""
    if kind_of(a.dtype) in "iu" and kind_of(b.dtype) in "iu" and _xp(b).any(b == 0):
        raise ValueError_(f"{name}: integer division by zero (the divisor has a 0); keep zeros out of "
                          "the divisor, or use floating tensors, which give inf or nan there")


class _Rounding(Op):
    """A unary rounding op: integers pass through, the gradient is zero everywhere."""
    __slots__ = ()
    pointwise = True
    rule = ("0",)
    function = None         # the namespace's function on floating arrays (not array_function:
                            # that would also run on integer arrays in a compiled program)

    def forward(self, a):
        _no_bool(self.op_name, a)
        if kind_of(a.dtype) in "iu":        # already whole numbers (NumPy would make them float)
            return _xp(a).asarray(a, copy=True)
        return getattr(_xp(a), self.function)(a)

    def backward(self, g):                  # torch: zeros_like(grad), also where grad is inf or nan
        return (zeros_like(g),)


@defop("floor")
class Floor(_Rounding):
    """The largest whole number <= a."""
    __slots__ = ()
    function = "floor"


@defop("ceil")
class Ceil(_Rounding):
    """The smallest whole number >= a."""
    __slots__ = ()
    function = "ceil"


@defop("trunc")
class Trunc(_Rounding):
    """a with its fraction dropped (rounded toward zero)."""
    __slots__ = ()
    function = "trunc"


@defop("round")
class Round(_Rounding):
    """a rounded half to even, to ``decimals`` decimal places."""
    __slots__ = ()

    def forward(self, a, decimals=0):
        _no_bool("round", a)
        xp = _xp(a)
        if kind_of(a.dtype) in "iu":
            if decimals != 0:
                raise DTypeError("round with decimals needs a floating tensor; convert it first, "
                                 "e.g. round(x.to(float64), decimals=-1)")
            return xp.asarray(a, copy=True)
        if decimals == 0:
            return xp.round(a)
        # torch: nearbyint(a * 10^d) / 10^d, and nearbyint(a / 10^-d) * 10^-d for d < 0
        # (10.0 ** 400 raises OverflowError: past float's range the factor is inf, as torch's)
        f = 10.0 ** abs(decimals) if abs(decimals) <= 308 else float("inf")
        if decimals > 0:
            return xp.round(a * f) / f
        return xp.round(a / f) * f


@defop("remainder")
class Remainder(Op):
    """a - b * floor(a / b): the remainder with the divisor's sign (Python's %)."""
    __slots__ = ()
    pointwise = True
    promote = True

    def forward(self, a, b):
        _no_bool("remainder", a, b)
        _no_integer_zero("remainder", a, b)
        if self._record and self.needs_input_grad[1]:
            self.save_for_backward(*self.inputs)
        xp = _xp(a)
        out = xp.remainder(a, b)
        if kind_of(out.dtype) == "f":       # torch: a zero result has a's sign (fmod's), NumPy gives b's
            out = xp.where(out == 0, xp.copysign(out, a), out)
        return out

    # floor(a / b) is (a - out) / b: the same number, in names the trace can fill in
    rule = ("grad", "-grad * (a - out) / b")

    def backward(self, g):
        na, nb = self.needs_input_grad
        gb = None
        if nb:
            x, y = self.saved_tensors
            gb = -g * floor_divide(x, y)    # torch: -grad * a.div(b, rounding_mode="floor")
        return (g if na else None), gb


class _IntegerDivision(Op):
    """A division rounded to a whole number: its gradient is zero for both inputs."""
    __slots__ = ()
    pointwise = True
    promote = True
    rule = ("0", "0")

    def backward(self, g):
        na, nb = self.needs_input_grad
        z = zeros_like(g)
        return (z if na else None), (z if nb else None)


@defop("floor_divide")
class FloorDivide(_IntegerDivision):
    """floor(a / b) (Python's //), broadcasting."""
    __slots__ = ()
    what = "floor_divide"       # the function its errors name

    def forward(self, a, b):
        _no_bool(self.what, a, b)
        _no_integer_zero(self.what, a, b)
        return _xp(a).floor_divide(a, b)


@defop("div_floor", node_name="DivBackward", public=False)
class DivFloor(FloorDivide):
    """div(a, b, rounding_mode="floor"): floor(a / b), as floor_divide, recorded as div's."""
    __slots__ = ()
    what = "div"


@defop("div_trunc", node_name="DivBackward", public=False)
class DivTrunc(_IntegerDivision):
    """div(a, b, rounding_mode="trunc"): a / b rounded toward zero."""
    __slots__ = ()

    def forward(self, a, b):
        _no_bool("div", a, b)
        _no_integer_zero("div", a, b)
        xp = _xp(a)
        if kind_of(a.dtype) in "iu":
            # C's integer division, from the floor one: one up where the signs differ and it is inexact
            q = xp.floor_divide(a, b)
            inexact = (q * b != a) & ((a < 0) != (b < 0))
            return q + xp.astype(inexact, q.dtype)
        return xp.trunc(a / b)              # torch: trunc(a / b)


# -- public functions ---------------------------------------------------------------------------

def floor(input):
    """The largest whole number <= x, elementwise (integer tensors unchanged). Its gradient is 0
    everywhere (PyTorch's choice, also at the jumps). Example: ``floor(x)``"""
    return apply(Floor, input)


def ceil(input):
    """The smallest whole number >= x, elementwise (integer tensors unchanged); gradient 0.
    Example: ``ceil(x)``"""
    return apply(Ceil, input)


def trunc(input):
    """x rounded toward zero, elementwise (integer tensors unchanged); gradient 0.
    Example: ``trunc(x)``"""
    return apply(Trunc, input)


def round(input, decimals=None):
    """x rounded to ``decimals`` decimal places (none: 0), halves to even as PyTorch and Python
    do: ``round(tensor([0.5, 1.5, 2.5]))`` is ``[0, 2, 2]``; a negative ``decimals`` rounds to
    tens, hundreds, ... The gradient is 0. Integer tensors pass through (with decimals 0; other
    decimals raise DTypeError). On a plain number it is Python's round: ``round(2.567, 2)`` is
    2.57 and ``round(2.5)`` is the int 2; ``round(nan)`` and ``round(inf)`` raise ValueError_ (no
    whole number), as Python's do.

    Example: ``round(x, decimals=2)``
    """
    if decimals is not None and (isinstance(decimals, bool) or not isinstance(decimals, int)):
        raise TypeError_(f"round: decimals must be a whole number, not {shown(decimals)}")
    if type(input) in (int, float, bool):      # a plain Python number (not a NumPy scalar): Python's round
        if decimals is None and type(input) is float and not math.isfinite(input):
            raise ValueError_(f"round({input}) has no whole number to give (round of a plain number is a "
                              "whole number); check the value first, or round a tensor, "
                              f"round(tensor({input})), which keeps nan and inf")
        return builtins.round(input) if decimals is None else builtins.round(input, decimals)
    return apply(Round, input, decimals=decimals or 0)


def remainder(input, other):
    """input - other * floor(input / other): Python's ``%``, the result has the divisor's sign
    (``remainder(-5, 3)`` is 1). Integer and floating tensors, broadcasting, PyTorch's promotion.
    Gradients: grad to input, -floor(input / other) * grad to other. An integer division by zero
    raises ValueError_; floating gives nan there. Example: ``remainder(x, 2.0)``, ``x % 2``
    """
    return apply(Remainder, input, other)


def floor_divide(input, other):
    """floor(input / other): Python's ``//`` (``floor_divide(-5, 3)`` is -2), broadcasting,
    PyTorch's promotion; the gradient is 0. An integer division by zero raises ValueError_;
    floating gives ±inf or nan. Example: ``floor_divide(x, 2)``, ``x // 2``
    """
    return apply(FloorDivide, input, other)


def rounded_div(input, other, rounding_mode):
    """``div(input, other, rounding_mode=...)`` for "trunc" and "floor" (elementwise.div calls it,
    so this module imports nothing of elementwise)."""
    if isinstance(rounding_mode, str):      # (a tensor's == would be elementwise)
        if rounding_mode == "trunc":
            return apply(DivTrunc, input, other)
        if rounding_mode == "floor":
            return apply(DivFloor, input, other)
    raise ValueError_(f"div: rounding_mode must be none, \"trunc\" or \"floor\", not {shown(rounding_mode)}")
