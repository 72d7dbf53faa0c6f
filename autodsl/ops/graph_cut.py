"""The warning of ``tensor(...)`` given tensors that require grad: it copies their values
and the graph is cut there, as ``torch.tensor`` does, which makes ``jacobian`` of a function
that builds its result with ``tensor([v[0]*v[1], v[0]^2])`` all zeros without a word.
"""
from __future__ import annotations

from autodsl.core import grad_mode
from autodsl.core.tensor import Tensor
from autodsl.source import warn_user

__all__ = ["warn_if_graph_cut"]


def _requires_grad_inside(data) -> bool:
    """Whether nested lists hold a tensor that requires grad (a walk without recursion)."""
    stack = [data]
    while stack:
        for x in stack.pop():
            if isinstance(x, (list, tuple)):
                stack.append(x)
            elif isinstance(x, Tensor) and x.requires_grad:
                return True
    return False


def warn_if_graph_cut(data) -> None:
    """Warn (at the user's position) when ``tensor(data)`` drops the graph of a tensor in ``data``.

    Nothing is said under ``no_grad``, where no graph is being recorded.
    """
    if not grad_mode.is_grad_enabled():
        return
    if isinstance(data, Tensor):
        if data.requires_grad:
            warn_user("tensor(x) copies x's values without its graph, so no gradient flows back "
                      "through it; use x.clone() to keep the graph (or x.detach() to say the cut is meant)")
    elif isinstance(data, (list, tuple)) and _requires_grad_inside(data):
        warn_user("tensor([...]) copies the values of tensors that require grad, so the graph is cut "
                  "there and no gradient flows back to them; use stack([...]) to build the tensor and "
                  "keep the graph")
