"""Numbers and arrays as text: the shortest text that reads back to the same value.

Imports nothing from autodsl, so that every layer (the trace, Tensor's repr,
the REPL) formats values the same way.
"""
from __future__ import annotations

import numpy as np

__all__ = ["format_number", "format_array", "format_tensor_parts"]

_PRINT_OPTS = dict(threshold=60, edgeitems=3, linewidth=88, precision=8, suppress=False)


def format_number(v) -> str:
    """A Python/NumPy scalar: ``3``, ``2.5``, ``-364.5``, ``true``, ``nan``, ``-inf``."""
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
    if isinstance(v, np.floating) and v.dtype.itemsize < 8:
        return str(v)       # float32's own shortest digits (0.1), not its double's (0.10000000149011612)
    return repr(f)


def format_array(arr) -> str:
    """A host array: a plain number when it has no dims, else NumPy's layout (summarized when large)."""
    arr = np.asarray(arr)
    if arr.ndim == 0:
        return format_number(arr[()])       # a NumPy scalar: it keeps its dtype's digits
    with np.printoptions(**_PRINT_OPTS):
        text = np.array2string(arr, separator=", ")
    if arr.dtype == np.bool_:
        text = text.replace("True", "true").replace("False", "false")
    return text


def format_tensor_parts(arr, *, dtype_note: str | None, device: str, grad_fn: str | None,
                        requires_grad: bool, style: str = "dsl") -> str:
    """``-364.5`` for a plain scalar; ``tensor([1., 2.], requires_grad=true)`` otherwise."""
    body = format_array(arr)
    extras = []
    if device != "cpu":
        extras.append(f"device={device}")
    if grad_fn is not None:
        extras.append(f"grad_fn=<{grad_fn}>")
    elif requires_grad:
        extras.append("requires_grad=" + ("true" if style == "dsl" else "True"))
    if np.ndim(arr) == 0 and not extras:
        return body
    if dtype_note:
        extras.insert(0, f"dtype={dtype_note}")
    body = body.replace("\n", "\n       ")
    return "tensor(" + ", ".join([body] + extras) + ")"
