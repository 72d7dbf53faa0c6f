"""``grad()``: gradients as values, without touching ``.grad``."""
from __future__ import annotations

import gc

from autodsl.core.engine import GraphTask
from autodsl.errors import AutogradError, TypeError_
from autodsl.core.tensor import Tensor, make_seeds
from autodsl.core.words import kind as value_kind

__all__ = ["grad"]

_gc_isenabled, _gc_disable, _gc_enable = gc.isenabled, gc.disable, gc.enable


def grad(outputs, inputs, grad_outputs=None, retain_graph=None, create_graph=False, allow_unused=False):
    """The gradients of ``outputs`` with respect to each of ``inputs``, as a list.

    ``outputs``: a tensor or a list of tensors; each non-scalar one needs a
    matching entry in ``grad_outputs`` (a tensor of its shape). ``inputs``: a
    tensor or a list; the result has one entry per input, of that input's
    shape. ``retain_graph`` defaults to ``create_graph``. ``create_graph=true``
    makes the results differentiable (higher-order derivatives). Leaves'
    ``.grad`` fields are not changed; a non-leaf that called ``retain_grad()``
    gets its gradient in ``.grad``, as in PyTorch.

    Raises AutogradError when an input does not require grad, or is not used
    by the outputs (unless ``allow_unused=true``, which gives none for it); TypeError_ when
    ``outputs`` or ``inputs`` is neither a tensor nor a list of them.

    Example: ``g = grad(y, x, create_graph=true)[0]``
    """
    held = _gc_isenabled()      # before anything is allocated: see Tensor.backward
    if held:
        _gc_disable()
    try:
        return _grad(outputs, inputs, grad_outputs, retain_graph, create_graph, allow_unused)
    finally:
        if held:
            _gc_enable()


def _grad(outputs, inputs, grad_outputs, retain_graph, create_graph, allow_unused):
    if retain_graph is None:
        retain_graph = create_graph
    if not isinstance(inputs, (Tensor, list, tuple)):
        raise TypeError_(f"grad(): the inputs must be a tensor or a list of tensors, not {value_kind(inputs)}; "
                         "for example grad(y, [w, b])")
    inputs = [inputs] if isinstance(inputs, Tensor) else list(inputs)
    if not inputs:
        raise AutogradError("grad() needs at least one input to differentiate with respect to")
    seeds = make_seeds(outputs, grad_outputs, "grad()")
    targets = {}
    nodes = []
    for i, t in enumerate(inputs):
        if not isinstance(t, Tensor):
            raise AutogradError(f"grad(): input {i} is {value_kind(t)}, not a tensor")
        if not t.requires_grad:
            raise AutogradError(f"grad(): input {i} does not require grad, so it has no gradient; "
                                "create it with requires_grad=true")
        node = t._gradient_edge()
        targets.setdefault(node, t)
        nodes.append(node)
    captured = GraphTask(seeds, retain_graph, create_graph, targets=targets, accumulate=False).run()
    result = []
    for i, (t, node) in enumerate(zip(inputs, nodes)):
        g = captured.get(node)
        if g is None and not allow_unused:
            raise AutogradError(
                f"grad(): input {i} (shape {t.shape}) was not used to compute the outputs, so it has "
                "no gradient; pass allow_unused=true to get none for it")
        result.append(g)
    return result
