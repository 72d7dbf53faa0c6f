"""Graph nodes: the backward functions that the engine runs.

A ``Node`` is the ``grad_fn`` of a tensor made by an op. It holds
``next_edges`` (one per op input: the node that input's gradient goes to, or
None when that input needs no gradient), a ``seq_nr`` (creation order, used by
the engine for a deterministic order), the shapes and dtypes of the inputs
(the engine reduces broadcast gradients back to them), and its saved tensors,
each stamped with the version it had when saved.

A leaf that requires grad gets one ``AccumulateGrad`` node, which is where
its gradients end up.
"""
from __future__ import annotations

import itertools
import sys
from contextvars import ContextVar

from ..errors import AutogradError

__all__ = ["Node", "AccumulateGrad", "SavedTensor", "SavedOutput", "SOURCE_POS", "next_seq_nr"]

# (filename, line, column) of the source expression being evaluated, set by the
# language; nodes record it so that the graph and the trace can point at it.
SOURCE_POS: ContextVar[tuple | None] = ContextVar("autodsl_source_pos", default=None)

_seq = itertools.count()
next_seq_nr = _seq.__next__


class SavedTensor:
    """A tensor saved for backward, with the version it had when saved.

    Note [saved tensor versions]: every tensor shares a version counter with
    its views and detached aliases; each in-place write bumps it. If the
    counter moved between save and backward, the value backward would read is
    not the value forward used, so unpacking fails and names the node.
    """

    __slots__ = ("tensor", "version")

    def __init__(self, tensor):
        self.tensor = tensor
        self.version = tensor._version[0]

    def unpack(self, node: "Node", index: int):
        t = self.tensor
        _check_version(node, index, t._version, self.version, t._data.shape)
        return t


class SavedOutput:
    """A node's own output, saved without the Tensor object.

    Note [saved outputs]: keeping the output Tensor would make a reference
    cycle (output -> grad_fn -> saved output), so graphs would wait for the
    cyclic GC instead of being freed when the last tensor goes. Like PyTorch,
    keep the values and the version counter, and rebuild an equivalent tensor
    (same storage, same history: grad_fn is this node) when backward needs it.
    """

    __slots__ = ("data", "counter", "version", "device", "cls")

    def __init__(self, tensor):
        self.data = tensor._data
        self.counter = tensor._version
        self.version = tensor._version[0]
        self.device = tensor.device
        self.cls = type(tensor)

    def unpack(self, node: "Node", index: int):
        _check_version(node, index, self.counter, self.version, self.data.shape)
        t = self.cls(self.data, _device=self.device)
        t._version = self.counter
        t.grad_fn = node
        t._requires_grad = True
        return t


def _check_version(node, index, counter, version, shape):
    if counter[0] != version:
        raise AutogradError(
            f"a tensor that {node.name} saved for backward (its input or output number {index}, "
            f"shape {tuple(shape)}) was modified in place afterwards: it is at version "
            f"{counter[0]}, but {node.name} saved it at version {version}. "
            f"Use an out-of-place form (`x = x * 3` instead of `x *= 3`), or clone() it before the in-place write")


class Node:
    """A backward function in the graph (the ``grad_fn`` of a non-leaf tensor).

    Subclasses set ``name`` (``MulBackward``) and implement ``apply(grad)``,
    which takes the gradient of the node's output (a Tensor) and returns one
    gradient per entry of ``next_edges`` (Tensor or None).
    """

    name = "Node"
    __slots__ = ("next_edges", "seq_nr", "input_shapes", "input_dtypes", "pos",
                 "_saved", "_released", "_retained", "__weakref__")

    def __init__(self):
        self.next_edges = ()
        self.seq_nr = next_seq_nr()
        self.input_shapes = ()
        self.input_dtypes = ()
        self.pos = SOURCE_POS.get()
        self._saved = None
        self._released = False
        self._retained = None   # the non-leaf outputs that called retain_grad()

    # -- saved tensors ---------------------------------------------------------
    def save_for_backward(self, *tensors) -> None:
        """Keep ``tensors`` (Tensors or None) for backward, stamped with their versions."""
        self._saved = tuple(None if t is None else SavedTensor(t) for t in tensors)

    @property
    def saved_tensors(self) -> tuple:
        """The saved tensors, after checking that none was modified in place.

        Raises AutogradError when the graph was freed by an earlier backward
        (the fix: ``retain_graph=true``) or when a saved tensor changed.
        """
        if self._released:
            raise AutogradError(
                f"tried to run backward through {self.name} a second time, but its saved values "
                f"were freed by the first backward; pass retain_graph=true to the first backward "
                f"(or to grad()) if you need to backward twice through the same graph")
        saved = self._saved
        if saved is None:
            return ()
        return tuple(None if s is None else s.unpack(self, i) for i, s in enumerate(saved))

    def release(self) -> None:
        """Free saved tensors (after a backward without retain_graph)."""
        if self._saved is not None:
            self._saved = None
            self._released = True

    # -- public view -------------------------------------------------------------
    @property
    def next_functions(self) -> tuple:
        """PyTorch's view of the edges: ``((node, 0), ...)``, None where no gradient flows."""
        return tuple((n, 0) if n is not None else (None, 0) for n in self.next_edges)

    def apply(self, grad):  # pragma: no cover - every subclass overrides it
        raise NotImplementedError

    def __repr__(self) -> str:
        return f"<{self.name}>"


class AccumulateGrad(Node):
    """The sink of a leaf that requires grad: the engine adds what reaches it into ``.grad``."""

    name = "AccumulateGrad"
    __slots__ = ("variable",)

    def __init__(self, variable):
        super().__init__()
        self.variable = variable
        self.pos = None
        self.input_shapes = (tuple(variable.shape),)
        self.input_dtypes = (variable._data.dtype,)
        # torch: AccumulateGrad has the highest priority, so a leaf's .grad is
        # settled as soon as every gradient into it has arrived.
        self.seq_nr = sys.maxsize

    def apply(self, grad):
        return ()
