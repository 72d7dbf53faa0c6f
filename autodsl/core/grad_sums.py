"""The sums of the gradients a backward pass sends to one node (core/engine.py).

Every gradient sent to a node is added to its buffer, in the order it is sent;
the node runs on the sum once its last one has come (Note [why counting]).
"""
from __future__ import annotations

try:
    import cython
except ImportError:
    from autodsl._pure import cython
from autodsl.context import current
from autodsl.core.tensor_fields import TensorFields

__all__ = ["add", "send_sum", "stage"]


# Note [float sums]: the gradients sent to one node all have its output's shape and dtype
# (validate_outputs). Where those are 0-d float64 host arrays (W3's fan-in: ten thousand
# gradients sent to one leaf), the pass sums them as Python floats, in the order they are
# sent, and makes one gradient of the sum when the node runs: the same IEEE additions as
# ``Tensor._plus`` makes one by one, without a Tensor and an array for every partial sum. Only
# where nothing reads the buffers meanwhile: not stepping (the stepper shows them), no observer,
# no create_graph (a sum is then a recorded op) and no compile() capture (it records each sum).
# A node's last gradient goes the Tensor way unless a float sum has begun: two gradients make
# one Tensor sum either way, and the float way costs more calls (the pure-Python W2's rungs).

@cython.locals(a=TensorFields, b=TensorFields)
def add(a, b, create_graph):
    """``a + b`` for two gradients sent to one node: a recorded op under create_graph, else the
    arrays' sum (which compile() records when it captures the pass)."""
    if create_graph:
        return a + b
    out = a._plus(b)
    cap = current().capture
    if cap is not None:         # compile() is recording (core/capture.py)
        cap.add(a._data, b._data, out._data)
    return out


@cython.locals(prev=TensorFields, og=TensorFields)
def send_sum(buffers, sums, nxt, prev, og) -> None:
    """A second or later gradient ``og`` sent to ``nxt``, whose buffer holds ``prev``: added to
    ``sums[nxt]``, the float sum, when both are 0-d float64 (Note [float sums]), else to the
    buffer. The engine makes a gradient of the float sum when ``nxt`` runs."""
    f = og._f64_item()
    s = sums.get(nxt)
    if f is not None:
        if s is None:
            s = prev._f64_item()
        if s is not None:
            sums[nxt] = s + f
            return
    if s is not None:       # (a float sum, then a gradient of another kind: validated outputs never do)
        prev = prev._from_f64(sums.pop(nxt))
    buffers[nxt] = add(prev, og, False)


def stage(staged, t, g, create_graph) -> None:
    """A gradient for leaf (or target) ``t``, summed into ``staged`` (id -> (tensor, gradient)),
    which the pass commits to ``.grad`` at its end."""
    prev = staged.get(id(t))
    staged[id(t)] = (t, g if prev is None else add(prev[1], g, create_graph))
