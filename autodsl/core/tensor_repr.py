"""A tensor as PyTorch 2.x prints it: ``tensor(2.)``, ``tensor([1.0000e-05, 1.0000e+03])``,
``tensor([1, 2])``, ``tensor(6., grad_fn=<MulBackward>)``, ``tensor(2., dtype=float32)``.

A port of ``torch/_tensor_str.py`` (default print options: precision 4, threshold
1000, edgeitems 3, linewidth 80): one formatter per tensor picks integer mode
(``1.``), fixed (``1.5000``) or scientific (``1.0000e-05``) notation from the
finite nonzero elements and pads every element to the widest; a tensor of more
than 1000 elements shows its first and last 3 along each dim around ``...``.
Only the words differ where the language has its own: booleans are ``true`` /
``false`` in the language's style and a dtype is named as the language names it
(``float32``, not ``torch.float32``). Traces and tables do not use this: they
show plain numbers (autodsl/textfmt.py).
"""
from __future__ import annotations

import math

import numpy as np

__all__ = ["tensor_repr"]

PRECISION = 4
THRESHOLD = 1000
EDGEITEMS = 3
LINEWIDTH = 80
_PREFIX = "tensor("


class _Formatter:
    """The notation and width of every element of one tensor (torch's _Formatter)."""

    def __init__(self, arr: np.ndarray, words: tuple[str, str]):
        self.floating = arr.dtype.kind == "f"
        self.words = words
        self.int_mode = True
        self.sci_mode = False
        self.max_width = 1
        flat = arr.reshape(-1)
        if not self.floating:
            for v in flat.tolist():
                self.max_width = max(self.max_width, len(self._plain(v)))
            return
        vals = flat[np.isfinite(flat) & (flat != 0)].astype(np.float64)
        if vals.size == 0:
            return
        absolute = np.abs(vals)
        lo, hi = float(absolute.min()), float(absolute.max())
        self.int_mode = bool(np.all(vals == np.ceil(vals)))
        wide = hi / lo > 1000.0 or hi > 1.0e8
        if self.int_mode:
            # a whole-number float tensor keeps a trailing "." (``1.``): one more column
            self.sci_mode = wide
            texts = [f"{v:.{PRECISION}e}" if wide else f"{v:.0f}." for v in vals.tolist()]
        else:
            self.sci_mode = wide or lo < 1.0e-4
            spec = f".{PRECISION}{'e' if self.sci_mode else 'f'}"
            texts = [format(v, spec) for v in vals.tolist()]
        self.max_width = max(self.max_width, max(map(len, texts)))

    def _plain(self, v) -> str:
        if isinstance(v, bool):
            return self.words[0] if v else self.words[1]
        return str(v)

    def format(self, v) -> str:
        if self.floating:
            if self.sci_mode:
                text = f"{v:{self.max_width}.{PRECISION}e}"
            elif self.int_mode:
                text = f"{v:.0f}"
                if not (math.isinf(v) or math.isnan(v)):
                    text += "."
            else:
                text = f"{v:.{PRECISION}f}"
        else:
            text = self._plain(v)
        return (self.max_width - len(text)) * " " + text


def _summarized(arr: np.ndarray) -> np.ndarray:
    """The elements a summarized print shows (the formatter is fitted to these alone)."""
    if arr.ndim == 0:
        return arr
    if arr.ndim == 1:
        return np.concatenate((arr[:EDGEITEMS], arr[-EDGEITEMS:])) if arr.shape[0] > 2 * EDGEITEMS else arr
    rows = _rows(arr.shape[0], True)
    return np.stack([_summarized(arr[i]) for i in rows if i is not None])


def _rows(n: int, summarize: bool) -> list:
    """Row indices along a dim, ``None`` standing for the ``...`` of a summarized print."""
    if summarize and n > 2 * EDGEITEMS:
        return list(range(EDGEITEMS)) + [None] + list(range(n - EDGEITEMS, n))
    return list(range(n))


def _vector(arr: np.ndarray, indent: int, summarize: bool, fmt: _Formatter) -> str:
    per_line = max(1, (LINEWIDTH - indent) // (fmt.max_width + 2))
    data = [" ..." if i is None else fmt.format(arr[i].item()) for i in _rows(arr.shape[0], summarize)]
    lines = [", ".join(data[i:i + per_line]) for i in range(0, len(data), per_line)]
    return "[" + (",\n" + " " * (indent + 1)).join(lines) + "]"


def _body(arr: np.ndarray, indent: int, summarize: bool, fmt: _Formatter) -> str:
    if arr.ndim == 0:
        return fmt.format(arr.item())
    if arr.ndim == 1:
        return _vector(arr, indent, summarize, fmt)
    slices = ["..." if i is None else _body(arr[i], indent + 1, summarize, fmt)
              for i in _rows(arr.shape[0], summarize)]
    return "[" + ("," + "\n" * (arr.ndim - 1) + " " * (indent + 1)).join(slices) + "]"


def _torch_len(suffix: str) -> int:
    """The width torch's spelling of ``suffix`` takes (``dtype=torch.float32``): the suffixes
    wrap where torch's do, though the language names a dtype without ``torch.``."""
    return len(suffix) + (len("torch.") if suffix.startswith("dtype=") else 0)


def _add_suffixes(text: str, suffixes: list[str], indent: int) -> str:
    parts = [text]
    last_line = len(text) - text.rfind("\n") + 1
    for suffix in suffixes:
        width = _torch_len(suffix)
        if last_line + width + 2 > LINEWIDTH:
            parts.append(",\n" + " " * indent + suffix)
            last_line = indent + width
        else:
            parts.append(", " + suffix)
            last_line += width + 2
    parts.append(")")
    return "".join(parts)


def tensor_repr(arr, *, dtype: str, default_dtype: str, device: str = "cpu", grad_fn: str | None = None,
                requires_grad: bool = False, style: str = "dsl") -> str:
    """``arr`` (a host array) as PyTorch prints a tensor of these attributes.

    ``dtype`` and ``default_dtype`` are the language's dtype names (``float32``,
    ``int64``, ``bool``): as in PyTorch the dtype is shown unless it is the
    default dtype, int64 or bool (and for an empty tensor unless it is the
    default dtype). ``style="dsl"`` writes booleans as the language does
    (``true``); ``"python"`` as Python does (``True``).
    """
    arr = np.asarray(arr)
    words = ("True", "False") if style == "python" else ("true", "false")
    indent = len(_PREFIX)
    suffixes = []
    if device != "cpu":
        suffixes.append(f"device='{device}'")
    if arr.size == 0:
        if arr.ndim != 1:
            suffixes.append(f"size={tuple(arr.shape)}")
        if dtype != default_dtype:
            suffixes.append(f"dtype={dtype}")
        body = "[]"
    else:
        if dtype not in (default_dtype, "int64", "bool"):
            suffixes.append(f"dtype={dtype}")
        summarize = arr.size > THRESHOLD
        fmt = _Formatter(_summarized(arr) if summarize else arr, words)
        body = _body(arr, indent, summarize, fmt)
    if grad_fn is not None:
        suffixes.append(f"grad_fn=<{grad_fn}>")
    elif requires_grad:
        suffixes.append(f"requires_grad={words[0]}")
    return _add_suffixes(_PREFIX + body, suffixes, indent)
