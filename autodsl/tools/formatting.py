"""``format(value, format_spec)``: a number, a string or a one-element tensor as text.

The language's f-strings (``f"loss {loss:.4f}"``) format each field with this
function, and it is the built-in ``format``. A spec is Python's format
mini-language (``.4f``, ``.3e``, ``8.2f``, ``>10``, ``,d``); a one-element
tensor is formatted as its number (``item()``), as ``f"{t:.4f}"`` does for a
torch tensor. Without a spec a value is shown as ``print`` shows it, except a
0-d tensor, which shows its number as ``f"{t}"`` does in PyTorch (``2.0``, where
``print(t)`` shows ``tensor(2.)``), in its dtype's shortest digits (a float32 0.1
is ``0.1``).
"""
from __future__ import annotations

import builtins
import re

from autodsl.core.display import format_value
from autodsl.core.limits import reserve
from autodsl.core.replay import value_kind
from autodsl.core.tensor import Tensor
from autodsl.errors import TypeError_, ValueError_
from autodsl.textfmt import format_array

__all__ = ["format"]

_DIGITS = re.compile(r"\d+")
_EXAMPLES = "use Python's format mini-language, e.g. `.4f`, `.3e`, `8.2f`, `>10`, `d` for whole numbers"


def _what(v) -> str:
    """value_kind's words, and the containers and functions format() also meets."""
    if isinstance(v, list):
        return "a list"
    if type(v) is tuple:        # a (values, indices) pair and the like: value_kind names them
        return "a shape" if all(isinstance(d, int) for d in v) else "a sequence"
    if callable(v) and not isinstance(v, Tensor):
        return "a function"
    return value_kind(v)


def format(value, format_spec: str = "") -> str:
    """``value`` as text, following ``format_spec`` (Python's format mini-language).

    ``value``: a number, a boolean, a string, or a tensor with exactly one
    element (any shape, any dtype; formatted as ``value.item()``). Without a spec
    any value is shown as ``print`` shows it (a whole tensor too), but a 0-d tensor
    as its number, as PyTorch's ``format(t)`` does. Returns a string.

    Raises TypeError_ when the spec is not a string, or when a spec is given for
    a tensor with more than one element (index it or reduce it first) or for a
    value that is not a number or a string; ValueError_ when the spec does not
    apply to the value (``.2f`` for a string, ``d`` for 2.5).
    """
    if not isinstance(format_spec, str):
        raise TypeError_(f"format(): the format spec must be a string such as \".4f\", not {_what(format_spec)}")
    if not format_spec:
        if isinstance(value, Tensor) and value.ndim == 0:
            return format_array(value.numpy())      # a float32 keeps its own shortest digits (0.1)
        return value if isinstance(value, str) else format_value(value)
    if isinstance(value, Tensor):
        n = value.numel()
        if n != 1:
            raise TypeError_(f"the format spec `{format_spec}` needs a number, but this tensor has {n} "
                             f"elements (shape {tuple(value.shape)}): index it (`x[0]`, `x[0].item()`) or reduce "
                             "it (`x.sum()`) to one element first, or leave the spec out to show the whole tensor")
        number = value.item()
        what = f"a one-element {value.dtype} tensor"
    elif isinstance(value, (bool, int, float, str)):
        number = value
        what = "a string" if isinstance(value, str) else _what(value)
    else:
        raise TypeError_(f"the format spec `{format_spec}` applies to numbers, strings and one-element "
                         f"tensors, not to {_what(value)}; leave the spec out to show it as print does")
    widest = max((len(d) < 20 and int(d) for d in _DIGITS.findall(format_spec)), default=0)
    if widest > 4096:       # a width or precision of 10^10 would make a 10 GB string
        reserve(widest, "this formatted text")
    try:
        return builtins.format(number, format_spec)
    except (ValueError, TypeError):
        hint = ""
        if format_spec[-1:] in "dbox" and isinstance(number, float):
            hint = f" (`{format_spec[-1]}` needs a whole number; `.0f` rounds a float)"
        raise ValueError_(f"`{format_spec}` is not a format spec for {what}{hint}; {_EXAMPLES}") from None
