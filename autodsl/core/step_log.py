"""What the trace records of a backward pass as it runs: flat lists of nodes and arrays.

Note [trace records]: a Session keeps its last backward's trace for ``last_trace()``, so
what the records hold outlives the run, and when the run ends the collector walks every
object they made (its young generation is all of them). The records therefore keep the
gradients' arrays (a 0-d one's value as it was sent: a float, as a float gradient is kept,
Note [float gradients]), which the collector does not track, rather than their Tensors, and no
tuple per node: the nodes, the gradients in and what each node sent go into three lists, a
node's sends as one array (or None) where it has one edge that leads somewhere, a tuple
only where it has more. This module is compiled with the engine (setup.py's ``COMPILED``),
so that ``step``, called for every node of a Session's backward, is a C function. (W6, the
chain of 30,000 nodes as a script, compiled build: 1.28x the Python API when a record was a
tuple of Tensors per node, 1.08-1.10x now, side by side in one process.)
"""
from __future__ import annotations

try:
    import cython
except ImportError:
    from autodsl._pure import cython
from autodsl.backend import HOST_ARRAY, HOST_F64
from autodsl.core.node import Node
from autodsl.core.tensor_fields import TensorFields

__all__ = ["StepLog", "real_edges"]

_ndarray, _F64 = HOST_ARRAY, HOST_F64


@cython.locals(t=TensorFields)
def _record(t):
    """What a record keeps of the gradient Tensor ``t``: its array, or the value of a 0-d host
    one as it is now (a float for float64, else a copy), as a float gradient is kept (a hook
    that wrongly changes its gradient in place later in the pass would change the array; the
    copies of large arrays that would guard them too are not made)."""
    d = t._data
    if type(d) is _ndarray and d.ndim == 0:
        return d.item() if d.dtype is _F64 else d.copy()
    return d


class StepLog:
    """The records of one pass, in the order the nodes ran (trace.Recorder reads them): the
    record side of core/observer.py's PassObserver (an extension type in the compiled build,
    step_log.pxd, so it cannot derive from that Python class; ``finish`` is the Recorder's)."""

    __slots__ = ("roots", "deps", "create_graph", "hooks", "_nodes", "_grads", "_sends", "_leaves")

    def start(self, roots, create_graph):
        self.roots = roots
        self.deps = None        # the counts, made from roots when the steps are read (Recorder.steps)
        self.create_graph = create_graph
        self.hooks = {}         # {node: its gradient array before a tensor hook replaced it}
        self._nodes = []        # each node run and each leaf's AccumulateGrad, in order
        self._grads = []        # the gradient array into each (None where none came)
        self._sends = []        # per entry: what went along the edges that lead somewhere
        self._leaves = {}       # {index of a leaf's entry: the leaf tensor}

    def hooked(self, node, before):
        """A tensor hook on ``node`` replaced the gradient ``before`` (a node runs once in a pass)."""
        self.hooks[node] = _record(before)

    # (g and outs may hold Python floats, Note [float gradients] in core/grad_sums.py: a record
    # keeps the float, and the trace makes an array of it when its steps are read)
    @cython.locals(node=Node)
    def step(self, node, g, outs):
        self._nodes.append(node)
        self._grads.append(None if g is None else g if type(g) is float else _record(g))
        edges = node.next_edges
        n = len(edges)
        if n == 1:
            o = outs[0]
        elif n == 2 and (edges[0] is None or edges[1] is None):   # a constant operand
            o = outs[1] if edges[0] is None else outs[0]
        else:
            sent = tuple([None if x is None else x if type(x) is float else _record(x)
                          for x, e in zip(outs, edges) if e is not None])
            self._sends.append(sent[0] if len(sent) == 1 else sent)
            return
        self._sends.append(None if o is None else o if type(o) is float else _record(o))

    def accumulate(self, node, tensor, g):
        self._leaves[len(self._nodes)] = tensor
        self._nodes.append(node)
        self._grads.append(None if g is None else g if type(g) is float else _record(g))
        self._sends.append(())

    def sent(self, i) -> tuple:
        """What entry ``i``'s node sent along each of its ``real_edges``, in order (arrays,
        floats or None)."""
        s = self._sends[i]
        return s if type(s) is tuple else (s,)


def real_edges(node) -> tuple:
    """``node``'s next nodes, leaving out the edges that lead nowhere (a constant's)."""
    return tuple([e for e in node.next_edges if e is not None])
