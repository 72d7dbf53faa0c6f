"""Values of the language: their names in messages, truth, number power, error translation.

Helpers of the interpreter, kept apart so that ``interpreter.py`` holds only
binding, scope and control flow.
"""
from __future__ import annotations

import difflib
import inspect
import math

from autodsl.errors import (DSLError, IndexError_, RuntimeError_, ShapeError, TypeError_, ValueError_)
from autodsl.core.tensor import Tensor

from autodsl.core.display import format_value
from autodsl.core.limits import memory_error
from autodsl.core.words import kind, plain, shown, type_words

__all__ = ["describe", "describe_value", "translate_exception", "truth", "number_pow",
           "param_text", "suggest", "NUMBER_TYPES"]

_NUMBER = (bool, int, float)
NUMBER_TYPES = _NUMBER


def describe(v) -> str:
    """The kind of a value, in the language's words (``core/words.kind``)."""
    return kind(v)


def describe_value(v) -> str:
    try:
        return format_value(v)
    except Exception:  # pragma: no cover - display not available
        return repr(v)


def translate_exception(e: BaseException) -> DSLError:
    """A stray Python exception as the closest DSLError, in plain words."""
    if isinstance(e, DSLError):
        return e
    msg = plain(str(e)) or type_words(type(e).__name__)
    if isinstance(e, ZeroDivisionError):
        return ValueError_("division by zero (plain numbers; tensors give inf or nan instead)")
    if isinstance(e, OverflowError):
        return ValueError_(f"a number is too large to represent ({msg})")
    if isinstance(e, RecursionError):
        return RuntimeError_("this is nested too deeply to evaluate (too many levels of brackets, "
                             "`^` or function calls); split it into several statements")
    if isinstance(e, TypeError):
        return TypeError_(msg)
    if isinstance(e, ValueError):
        if "broadcast" in msg:
            return ShapeError(f"shapes do not broadcast together: {msg}")
        return ValueError_(msg)
    if isinstance(e, IndexError):
        return IndexError_(msg)
    if isinstance(e, KeyError):
        return IndexError_(f"no entry {msg}")
    if isinstance(e, MemoryError):
        return memory_error(e)          # with its size when NumPy said it (core/limits.py)
    return RuntimeError_(f"internal error ({type(e).__name__}): {msg}")


def truth(v) -> bool:
    if isinstance(v, bool):
        return v
    if v is None:
        return False
    if isinstance(v, (int, float)):
        return v != 0
    if isinstance(v, Tensor):
        return bool(v)          # one element, or Tensor.__bool__ says how to reduce it
    raise TypeError_(f"a condition must be true/false, a number or a one-element tensor, not {describe(v)}")


def param_text(sig: inspect.Signature) -> str:
    parts = []
    for p in sig.parameters.values():
        if p.kind is p.VAR_POSITIONAL:
            parts.append(f"*{p.name}")
        elif p.kind is p.VAR_KEYWORD:
            parts.append(f"**{p.name}")
        elif p.default is p.empty:
            parts.append(p.name)
        elif isinstance(p.default, str):        # as it is typed: mode="warn", not mode=warn; end="\n"
            parts.append(f"{p.name}={shown(p.default)}")
        elif isinstance(p.default, tuple):      # a script writes a list: betas=[0.9, 0.999]
            parts.append(f"{p.name}={describe_value(list(p.default))}")
        else:
            parts.append(f"{p.name}={describe_value(p.default)}")
    return ", ".join(parts)


def suggest(name: str, options) -> str:
    close = difflib.get_close_matches(name, sorted(options), n=3, cutoff=0.6)
    if not close:
        return ""
    return " (did you mean " + " or ".join(f"`{c}`" for c in close) + "?)"


def number_pow(a, b):
    """``a ^ b`` on plain numbers: Python's ``**`` with the language's errors."""
    if isinstance(a, bool):
        a = int(a)
    if isinstance(b, bool):
        b = int(b)
    if a == 0 and b < 0:
        raise ValueError_("0 cannot be raised to a negative power (division by zero)")
    if isinstance(a, int) and isinstance(b, int) and b > 0 and abs(a) > 1 \
            and b * math.log2(abs(a)) > 4096:
        a = float(a)
    try:
        r = a ** b
    except OverflowError:
        raise ValueError_(f"{a}^{b} is too large to represent as a number") from None
    if isinstance(r, complex):  # a negative base to a fractional power: not a real number
        return math.nan
    return r
