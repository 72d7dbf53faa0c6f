"""The fields of a tensor, in a module that imports nothing, so that every module can type them.

``TensorFields`` is the root of ``Tensor``'s classes: ``TensorFields`` (the fields) <-
``TensorBase`` (their methods, core/tensor.py) <- ``Tensor`` (a Python class, on which the ops
install their methods). Compiled, the first two are extension types (their ``.pxd`` files):
a compiled module that types a local as one reads its fields as struct members (Note [typed
locals] in autodsl/_pure.py). The modules that ``core/tensor.py`` itself imports (the node,
the engine) can type tensors only as ``TensorFields``: importing ``core/tensor.py`` for its
type would import them again, in a cycle.
"""
from __future__ import annotations

__all__ = ["TensorFields"]


class TensorFields:
    """The fields of a Tensor (see ``core/tensor.py`` for what each one holds)."""

    __slots__ = ("_data", "_version", "_base", "_requires_grad", "grad_fn", "_grad",
                 "_retains_grad", "_accumulate", "device", "_view_chain", "_gen", "_base_gen",
                 "_pos", "_views", "_alias", "__weakref__")
