"""Looking at tensors: ``info(x)``."""
from __future__ import annotations
from autodsl.core.display import format_array, format_value
from autodsl.core.html import RichDisplay, table
from autodsl.errors import TypeError_
from autodsl.core.tensor import Tensor
import autodsl.backend as backend
from autodsl.source import format_pos
from autodsl.core.words import kind as value_kind

__all__ = ["info", "Info"]


class Info(RichDisplay):
    """The autograd facts of one tensor; ``str()`` is a small table (in a notebook, an HTML one)."""

    def __init__(self, rows):
        self.rows = rows

    def __getitem__(self, key):
        return dict(self.rows)[key]

    def __str__(self) -> str:
        width = max(len(k) for k, _ in self.rows)
        return "\n".join(f"{k:<{width}}  {v}" for k, v in self.rows)

    __repr__ = __str__

    def _repr_html_(self) -> str:
        return table(["", ""], [[k, v.replace("\n" + " " * 15, "\n")] for k, v in self.rows],
                     css_class="autodsl-info")


def info(x) -> Info:
    """shape, dtype, device, requires_grad, is_leaf, grad_fn, retains_grad, grad and
    version of tensor ``x``. Example: ``info(w)``
    """
    if not isinstance(x, Tensor):
        what = f"the graph node {x.name}" if hasattr(x, "next_edges") and hasattr(x, "name") \
            else value_kind(x)
        raise TypeError_(f"info() takes a tensor, not {what}; info(y) describes y and its grad_fn")
    g = x._grad
    if g is None:
        grad_text = "none" + ("  (a non-leaf: call retain_grad() before backward to keep it)"
                              if x.grad_fn is not None and not x._retains_grad else "")
    else:
        grad_text = format_array(backend.to_host(g._data))
        if g.grad_fn is not None:
            grad_text += f"  (grad_fn=<{g.grad_fn.name}>)"
    nexts = ""
    if x.grad_fn is not None:
        names = [n.name if n is not None else "none" for n in x.grad_fn.next_edges]
        nexts = "  -> " + ", ".join(names) if names else ""
    rows = [
        ("shape", format_value(x.shape)),
        ("dtype", x.dtype.name),
        ("device", x.device),
        ("requires_grad", format_value(x.requires_grad)),
        ("is_leaf", format_value(x.is_leaf)),
        ("grad_fn", (f"<{x.grad_fn.name}>" + nexts) if x.grad_fn is not None else "none"),
        ("made at", format_pos(x.grad_fn.pos, file=True) if x.grad_fn is not None and x.grad_fn.pos
         else format_pos(getattr(x, "_pos", None), file=True) or "(not recorded)"),
        ("retains_grad", format_value(x._retains_grad)),
        ("grad", grad_text.replace("\n", "\n" + " " * 15)),
        ("version", str(x._version[0])),
    ]
    return Info(rows)
