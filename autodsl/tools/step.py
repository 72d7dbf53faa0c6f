"""``step(y)``: a backward pass run one node at a time (the REPL's ``:step``)."""
from __future__ import annotations

from autodsl.core import watch
from autodsl.core.engine import GraphTask
from autodsl.core.stepper import BackwardStepper
from autodsl.errors import AutogradError, TypeError_
from autodsl.names import names_by_id, user_names
from autodsl.core.tensor import Tensor, make_seeds
from autodsl.core.words import kind as value_kind

__all__ = ["step", "BackwardStepper"]


def step(tensor, gradient=None, retain_graph=None, create_graph=False, names=None) -> BackwardStepper:
    """Start ``tensor.backward(gradient, retain_graph, create_graph)`` paused before its first node.

    Returns a stepper: ``s.next()`` runs one node and shows what it received and
    sent, the ready queue and each waiting node's remaining dependency count;
    ``s.next(5)`` runs five; ``s.finish()`` runs the rest and writes ``.grad`` like
    ``backward()``; ``s.abort()`` drops the pass, leaving every ``.grad`` as it was.
    ``names``: variable names for the display ({name: tensor}); without it, a Session's
    variables, or from Python the caller's (its local and global tensors).

    Raises TypeError_ when ``tensor`` is not a tensor, and what ``backward()`` raises for
    bad roots (a non-scalar tensor without ``gradient``, a tensor that does not require grad).

    Example: ``s = step(f); s.next(); s.next(); s.finish()``
    """
    if not isinstance(tensor, Tensor):
        raise TypeError_(f"step(y) runs y.backward() one node at a time, so y must be a tensor, "
                         f"not {value_kind(tensor)}; compute y from tensors with requires_grad=true")
    if retain_graph is None:
        retain_graph = create_graph
    seeds = make_seeds(tensor, gradient, "step()")
    for node, _ in seeds:       # refuse now what the first :next would find
        if node._released:
            raise AutogradError(
                f"the graph of this tensor was freed by an earlier backward ({node.name}'s saved "
                "values are gone), so it cannot be stepped through; pass retain_graph=true to that "
                "backward, or compute the tensor again")
    task = GraphTask(seeds, retain_graph, create_graph, targets=None, accumulate=True)
    stepper = BackwardStepper(task, names_by_id(user_names(names)))
    stepper.record = watch.last_backward()      # GraphTask noted itself: why() sees a paused pass
    stepper._note()
    return stepper
