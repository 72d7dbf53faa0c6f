"""What the engine tells whoever watches a backward pass (Note [observers]).

The trace's recorder, anomaly mode and the stepper watch a pass through this
interface instead of branches in the engine's loop. Every method does nothing
here; an observer overrides what it needs. With no observer attached the engine
calls none of them.
"""
from __future__ import annotations

__all__ = ["PassObserver"]


class PassObserver:
    """The points of a pass at which the engine calls its observers, in order."""

    __slots__ = ()

    # True where ``step`` takes Python floats for 0-d float64 gradients (Note [float
    # gradients], core/grad_sums.py); the engine sends Tensors while any observer does not.
    takes_floats = False

    def start(self, roots: tuple, create_graph: bool) -> None:
        """The pass begins at the nodes ``roots`` (``core.node.dependency_counts(roots)``
        gives each node's dependency count as the pass began)."""

    def hooked(self, node, before) -> None:
        """A tensor hook on ``node`` replaced the gradient ``before``."""

    def step(self, node, grad, outs) -> None:
        """``node`` ran on the gradient ``grad`` and returned ``outs``, one Tensor or None per edge
        (or Python floats, where ``takes_floats``)."""

    def accumulate(self, node, tensor, grad) -> None:
        """``grad`` is staged for ``tensor.grad`` (a leaf, a target or a retained tensor)."""

    def finish(self, staged: dict) -> None:
        """The pass succeeded and ``.grad`` fields were written (``staged``: what was)."""
