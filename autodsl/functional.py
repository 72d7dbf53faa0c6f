"""``grad()``: gradients as values, without touching ``.grad``."""
from __future__ import annotations

from .autograd import engine

__all__ = ["grad"]


def grad(outputs, inputs, grad_outputs=None, retain_graph=None, create_graph=False, allow_unused=False):
    """The gradients of ``outputs`` with respect to each of ``inputs``, as a list.

    ``outputs``: a tensor or a list of tensors; each non-scalar one needs a
    matching entry in ``grad_outputs`` (a tensor of its shape). ``inputs``: a
    tensor or a list; the result has one entry per input, of that input's
    shape. ``create_graph=true`` makes the results differentiable (higher-order
    derivatives). ``.grad`` fields are not changed.

    Raises AutogradError when an input does not require grad, or is not used
    by the outputs (unless ``allow_unused=true``, which gives none for it).

    Example: ``g = grad(y, x, create_graph=true)[0]``
    """
    return engine.grad(outputs, inputs, grad_outputs, retain_graph, create_graph, allow_unused)
