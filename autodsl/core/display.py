"""How values look to people: scalars as plain numbers, small arrays NumPy-style,
large ones summarized, and ``requires_grad``/``grad_fn`` shown as PyTorch does.

``style="dsl"`` spells booleans and None as the language does (``true``,
``none``); ``style="python"`` as Python does.
"""
from __future__ import annotations

import inspect

import numpy as np

from autodsl.core.tensor import Tensor
from autodsl.textfmt import format_array, format_number

__all__ = ["format_array", "format_number", "format_value"]


def format_value(v, style: str = "dsl") -> str:
    """Any value the language can produce, as the REPL and scripts print it."""
    if isinstance(v, Tensor):
        return v._format(style)
    if v is None:
        return "none" if style == "dsl" else "None"
    if isinstance(v, (bool, np.bool_)):
        return ("true" if v else "false") if style == "dsl" else str(bool(v))
    if isinstance(v, (int, float, np.integer, np.floating)):
        return format_number(v)
    if isinstance(v, str):
        return v
    if isinstance(v, tuple):
        inner = ", ".join(format_value(x, style) for x in v)
        return f"({inner},)" if len(v) == 1 else f"({inner})"
    if isinstance(v, list):
        return "[" + ", ".join(format_value(x, style) for x in v) + "]"
    if inspect.isroutine(v):     # (a compiled function is a routine, not a FunctionType)
        return f"<built-in function {v.__name__.rstrip('_')}>"
    return str(v)
