"""How values look to people: scalars as plain numbers, small arrays NumPy-style,
large ones summarized, and ``requires_grad``/``grad_fn`` shown as PyTorch does.

``style="dsl"`` spells booleans and None as the language does (``true``,
``none``); ``style="python"`` as Python does.
"""
from __future__ import annotations

import numpy as np

__all__ = ["format_array", "format_number", "format_tensor", "format_value"]

_PRINT_OPTS = dict(threshold=60, edgeitems=3, linewidth=88, precision=8, suppress=False)


def format_number(v) -> str:
    """A Python/NumPy scalar as the shortest text that reads back to the same value."""
    if isinstance(v, (bool, np.bool_)):
        return "true" if v else "false"
    if isinstance(v, (int, np.integer)):
        return str(int(v))
    f = float(v)
    if f != f:
        return "nan"
    if f in (float("inf"), float("-inf")):
        return "inf" if f > 0 else "-inf"
    if f == int(f) and abs(f) < 1e16:
        return f"{f:.1f}"
    return repr(f)


def format_array(arr) -> str:
    """A host array: a plain number when it has one element and no dims, else NumPy's layout."""
    arr = np.asarray(arr)
    if arr.ndim == 0:
        return format_number(arr.item())
    with np.printoptions(**_PRINT_OPTS):
        text = np.array2string(arr, separator=", ")
    if arr.dtype == np.bool_:
        text = text.replace("True", "true").replace("False", "false")
    return text


def format_tensor(t, style: str = "dsl") -> str:
    """``-364.5`` for a plain scalar; ``tensor([1., 2.], requires_grad=true)`` otherwise."""
    from . import backend  # noqa: PLC0415
    arr = backend.to_host(t._data)
    body = format_array(arr)
    true = "true" if style == "dsl" else "True"
    extras = []
    if t.device != "cpu":
        extras.append(f"device={t.device}")
    if t.grad_fn is not None:
        extras.append(f"grad_fn=<{t.grad_fn.name}>")
    elif t.requires_grad:
        extras.append(f"requires_grad={true}")
    if arr.ndim == 0 and not extras:
        return body
    if t.dtype.is_floating and t.dtype is not backend.get_default_dtype():
        extras.insert(0, f"dtype={t.dtype.name}")
    if "\n" in body:
        body = body.replace("\n", "\n       ")
    return "tensor(" + ", ".join([body] + extras) + ")"


def format_value(v, style: str = "dsl") -> str:
    """Any value the language can produce, as the REPL and scripts print it."""
    from .tensor import Tensor  # noqa: PLC0415
    if isinstance(v, Tensor):
        return format_tensor(v, style)
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
    return str(v)
