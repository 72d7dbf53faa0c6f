"""Numbers and arrays as text: the shortest text that reads back to the same value.

Imports nothing from autodsl, so that every layer (the trace, the tables, the
REPL's numbers) formats values the same way. A tensor's own text is PyTorch's
form (core/tensor_repr.py).
"""
from __future__ import annotations

import numpy as np

__all__ = ["format_array", "format_number"]

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

