"""The gradients a backward pass sends between nodes, and their sums (core/engine.py).

Every gradient sent to a node is added to its buffer, in the order it is sent;
the node runs on the sum once its last one has come (Note [why counting]).
"""
from __future__ import annotations

from autodsl.backend import f64_scalar_array
from autodsl.context import current
import autodsl.names as _names

__all__ = ["add", "as_gradient", "stage"]


# Note [float gradients]: most nodes of W1-W3's graphs are ops on 0-d float64 host tensors, whose
# formulas run on Python floats (Note [0-d fast path], ops/registry.py). Where nothing needs the
# gradients as Tensors on the way (not stepping: the stepper shows them; no create_graph: each
# step is then a recorded op; no compile() capture: it records each one; no observer but the
# trace's, which keeps a float as it came: core/observer.py's ``takes_floats``), such an op
# sends its gradients on as Python floats, and a float sent to a node is added to its buffer as
# a float: the same IEEE double additions as ``Tensor._plus`` makes on the arrays, in the same
# order, without a Tensor and an array for every gradient. A float becomes a gradient Tensor
# (``as_gradient``) where a Tensor is needed: a node that does not take floats, a hook, a
# retained or captured gradient, a leaf's ``.grad``.

def add(a, b, create_graph):
    """``a + b`` for two gradients sent to one node: floats' sum (Note [float gradients]), a
    recorded op under create_graph, else the arrays' sum (which compile() records when it
    captures the pass)."""
    if type(a) is float or type(b) is float:
        if type(a) is float and type(b) is float:
            return a + b
        a, b = as_gradient(a), as_gradient(b)   # (a Tensor beside a float: both 0-d float64)
    if create_graph:
        return a + b
    out = a._plus(b)
    cap = current().capture
    if cap is not None:         # compile() is recording (core/capture.py)
        cap.add(a._data, b._data, out._data)
    return out


def as_gradient(g):
    """``g`` as a gradient Tensor: a float gradient (Note [float gradients]) as the 0-d float64
    host tensor it stands for; a Tensor as it is."""
    if type(g) is not float:
        return g
    return _names.TENSOR_TYPES[0](f64_scalar_array(g), _device="cpu")


def stage(staged, t, g, create_graph) -> None:
    """A gradient for leaf (or target) ``t``, summed into ``staged`` (id -> (tensor, gradient)),
    which the pass commits to ``.grad`` at its end."""
    prev = staged.get(id(t))
    staged[id(t)] = (t, g if prev is None else add(prev[1], g, create_graph))
