"""What a tensor's attributes (``x.grad``, ``x.shape``, ...) are, for ``help("x.grad")``, the
REPL's ``:help x.grad`` and the Jupyter kernel's inspection (Shift-Tab after ``w.grad``).

The methods have their docstrings (lang/help_text.py shows them); an attribute is a value,
not a function, so its text is written here, in the language's words, one entry for each of
``PUBLIC_ATTRIBUTES`` (a test checks that none is missing).
"""
from __future__ import annotations

from autodsl.core.tensor import PUBLIC_ATTRIBUTES

__all__ = ["ATTRIBUTE_DOCS", "attribute_help"]

ATTRIBUTE_DOCS = {
    "grad": "the gradient that backward() accumulated into this tensor (a tensor of its shape), or none "
            "before the first backward; backward adds to it, so clear it between steps (x.zero_grad(), "
            "or opt.zero_grad() for an optimizer's parameters). Only leaves that require grad get it, and a non-leaf after "
            "retain_grad()",
    "requires_grad": "true when autograd records the ops on this tensor, so that backward reaches it: made "
                     "with requires_grad=true or set with x.requires_grad_(); an op's result requires grad "
                     "when one of its inputs does (outside no_grad)",
    "is_leaf": "true for a tensor you made (tensor(), ones(), ...) rather than an op on tensors that "
               "require grad; backward fills .grad of leaves only",
    "grad_fn": "the graph node that made this tensor (MulBackward, SumBackward, ...), whose backward sends "
               "the gradient on to its inputs (grad_fn.next_functions); none for a leaf",
    "retains_grad": "true after x.retain_grad() on a non-leaf: backward then keeps its .grad too",
    "shape": "the size along each dim, as a tuple: () for a 0-d tensor (one number), (3,) for a vector, "
             "(2, 3) for a matrix",
    "ndim": "the number of dims, len(x.shape): 0 for a single number, 1 for a vector, 2 for a matrix",
    "dtype": "the type of the elements: float32, float64, int64 or bool",
    "device": "where the values are: cpu, cuda (a GPU, through CuPy) or dask (computed lazily, in chunks)",
    "T": "the tensor with its dims in reverse order: a matrix's transpose (a view: no copy)",
    "data": "the same values without the graph, as in PyTorch (prefer x.detach(): an in-place write through "
            "x.data is not seen by backward's check of the values it saved)",
    "version": "how many in-place writes (x += 1, x[0] = 2) this tensor's storage has had; backward uses "
               "it to refuse values changed after an op saved them",
}


def attribute_help(name: str) -> str | None:
    """The help text of the tensor attribute ``name`` (``grad``, ``x.grad`` or ``.grad``), or
    None when it names no attribute: ``x.grad`` on its first line, what it is on the next."""
    attr = name.split(".", 1)[1] if "." in name else name
    if attr not in PUBLIC_ATTRIBUTES:
        return None
    doc = ATTRIBUTE_DOCS[attr]
    return f"x.{attr}  (an attribute: read it without ())\n{doc[0].upper()}{doc[1:]}."
