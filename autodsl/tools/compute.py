"""compute and persist: when a lazy device's tensors get their values.

On the "dask" device an op records a graph; values exist only once something computes them.
``compute(loss, w, b)`` computes every tensor given, and the ``.grad`` of each, in one pass (parts
they share are computed once), and leaves each of them holding its values: reading them again
(``item``, ``numpy``, printing, later ops) computes nothing more. ``persist(w, b)`` does the same
but keeps the values where the scheduler keeps results (a cluster's workers), for parameters
between training steps: the next step's graph starts from them instead of from the whole history.

On "cpu" and "cuda" values are always at hand: both return their arguments unchanged, so that a
script runs on every device.
"""
from __future__ import annotations

from autodsl import backend
from autodsl.backend import dask_device
from autodsl.core import deferred
from autodsl.core.tensor import Tensor
from autodsl.core.words import kind
from autodsl.errors import TypeError_

__all__ = ["compute", "persist"]


def _targets(name: str, tensors: tuple) -> list:
    """The tensors given (a list or tuple of them counts as its items) and their gradients."""
    out = []
    for t in tensors:
        items = t if isinstance(t, (list, tuple)) else (t,)
        for x in items:
            if not isinstance(x, Tensor):
                raise TypeError_(f"{name}() takes tensors, not {kind(x)}; for example {name}(loss, w, b)")
            out.append(x)
            if x._grad is not None:
                out.append(x._grad)
    return [x for x in out if backend.is_lazy(x._data)]


def _result(tensors: tuple):
    return tensors[0] if len(tensors) == 1 else tensors


def compute(*tensors):
    """Compute the values of ``tensors`` and of their ``.grad``\\ s in one pass; returns the tensor
    (one given) or a tuple of them (several), the same tensor objects, now holding their values.

    On "dask" the scheduler is the session's (``Session(scheduler=...)``); the tensors keep their
    shapes, dtypes, chunks, history and device. On "cpu" and "cuda" nothing happens. A list or
    tuple of tensors counts as its items. TypeError_ for an argument that is not a tensor.

    Example: ``compute(loss, w, b)`` after ``loss.backward()``, then ``print(loss.item())``
    """
    lazy = _targets("compute", tensors)
    flags = deferred.flags()
    if flags and not all(backend.is_lazy(f) for f in flags):
        deferred.settle()           # some wait on another device: read there
        flags = []
    if lazy or flags:
        # the ops' waiting value checks in the same pass; a failed one raises before any tensor
        # changes (and takes back the .grads of the backward after it)
        try:
            values = dask_device.compute_arrays([x._data for x in lazy] + flags)
        except Exception:  # noqa: BLE001  (re-raised: only a failed check's error goes first)
            if flags:       # a bad value a check waits for (an index out of range) may fail a task
                deferred.settle()       # first: its own error, at the op's position
            raise
        if flags:
            deferred.settle(values=[bool(v) for v in values[len(lazy):]])
        for x, v in zip(lazy, values):
            # in place: a detach() or .data of x holds the same array object and must keep
            # sharing it (a later write into x rebinds that object)
            dask_device.hold(x._data, v)
    return _result(tensors)


def persist(*tensors):
    """Compute ``tensors`` (and their ``.grad``\\ s) and keep their values where the scheduler keeps
    results (a cluster's workers, or this process), so that later graphs start from them: for
    parameters between training steps. Returns the tensor or a tuple, as ``compute``. No-op on
    "cpu" and "cuda". TypeError_ for an argument that is not a tensor.

    Example: ``persist(w, b)`` after a step's update of w and b (samples/big_regression.ad)
    """
    lazy = _targets("persist", tensors)
    deferred.settle()               # the ops' waiting value checks first (core/deferred.py)
    if lazy:
        arrays = dask_device.persist_arrays([x._data for x in lazy])
        for x, a in zip(lazy, arrays):
            backend.rebind(x._data, a)      # in place, as compute (a detach() keeps sharing)
    return _result(tensors)
