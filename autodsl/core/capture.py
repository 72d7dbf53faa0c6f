"""Capture: one eager call of a function, recorded as a flat program of array operations.

Note [capture]: ``compile(fn)`` runs fn's first call eagerly with a ``Capture`` as the run
context's ``capture``. The places where arrays are made or change tell it what they do:
``ops.registry.apply`` (every op's forward, the ones inside backward formulas included),
``Op.apply`` (a node's derivative), the engine (gradient sums, ``.grad`` accumulation and the
seed), ``Tensor.grad`` (reads and ``= none``), ``Tensor.item`` (a value Python branches on),
the in-place writes and the creation functions. Each step names its inputs and outputs as
slots: a slot is one array value of the call, identified during the capture by the array
object (every array is kept alive until the capture ends, so no id is reused).

An op with a formula (Note [one formula]) replays as two plain calls, its ``forward`` and its
``formula`` on arrays, on a node of its own that the program keeps (the forward may leave
facts on it, a reduction's axes, that the formula reads). An op whose derivative is written
on Tensors replays its forward on a recording node and its ``backward`` on Tensors, as one
step each, so that whatever it computes from the data is computed again.

What a call does that the program cannot repeat stops the capture with a reason
(``CaptureError``): random numbers, a tensor made from a tensor's values, an in-place write
while recording, a hook, ``create_graph``; ``compile`` then runs the function eagerly and
says why, once.
"""
from __future__ import annotations

from autodsl.core.tensor import Tensor

__all__ = ["Capture", "CaptureError"]


class CaptureError(Exception):
    """The call cannot be replayed; ``args[0]`` says why, in the language's words."""


class Capture:
    """The steps of one call (see the module doc). ``steps`` is a list of tuples whose first
    element is the kind; ``core/program.py`` turns them into a program."""

    def __init__(self):
        self.steps = []
        self.slot = {}          # id(array) -> slot
        self.keep = []          # every array seen, alive until the capture ends (unique ids)
        self.n = 0
        self.computed = set()   # slots a step computes afresh on every call
        self.ext = {}           # slot -> a tensor from outside the call, read when the program runs
        self.nodes = {}         # eager node -> (its replay node, forward kind)
        self.depth = 0          # > 0 inside a Tensor-level backward, whose ops are one step
        self.failed = None
        self.formula_ns = None

    # -- slots -------------------------------------------------------------------------
    def _new(self, arr, computed: bool) -> int:
        s = self.n
        self.n += 1
        self.slot[id(arr)] = s
        self.keep.append(arr)
        if computed:
            self.computed.add(s)
        return s

    def arg(self, t: Tensor, path) -> int:
        """A tensor argument of the call: slot bound from ``path`` when the program runs."""
        s = self.slot.get(id(t._data))
        if s is None:
            s = self._new(t._data, False)
            self.steps.append(("arg", s, path))
        return s

    def const(self, arr) -> int:
        s = self.slot.get(id(arr))
        if s is None:
            s = self._new(arr, False)
            self.steps.append(("const", s, arr))
        return s

    def tensor_in(self, t: Tensor) -> int:
        """The slot of ``t``'s values; a tensor the call did not make is read from ``t``."""
        s = self.slot.get(id(t._data))
        if s is None:
            s = self._new(t._data, False)
            self.steps.append(("ext", s, t))
            self.ext[s] = t
        return s

    def array_in(self, arr) -> int:
        s = self.slot.get(id(arr))
        return self.const(arr) if s is None else s

    def _out(self, arr) -> int:
        s = self.slot.get(id(arr))
        return self._new(arr, True) if s is None else s

    def fail(self, reason: str) -> None:
        if self.failed is None:
            self.failed = reason
        raise CaptureError(self.failed)

    # -- what the hooks report ------------------------------------------------------------
    def op(self, cls, node, raw_inputs, tensors, params, raw_out, out_t, recorded: bool) -> None:
        """An op's forward ran (``ops.registry.apply``): ``node`` its node (recorded or not),
        ``raw_out`` what its forward returned, ``out_t`` the output Tensor."""
        if self.depth:
            return
        out_arr = out_t._data
        ins = tuple(self.tensor_in(t) if type(r) is Tensor or isinstance(r, Tensor) else self.const(t._data)
                    for r, t in zip(raw_inputs, tensors))
        out = self._out(out_arr)
        rnode = cls.__new__(cls)
        opaque = recorded and cls.formula is None
        _prepare(rnode, node, len(tensors), recorded)
        if recorded:
            self.nodes[node] = rnode
        self.steps.append(("op", out, cls, rnode, ins, params or None, raw_out is not out_arr, opaque,
                           out_arr.ndim == 0, node.pos if recorded else None, out_t.device,
                           _expr(cls, tensors, params)))

    def formula(self, node, g_arr, outs_raw, outs, namespace) -> None:
        """``node``'s formula ran on arrays (``Op.apply``) in ``namespace`` (ops/formula.py's
        ARRAYS): ``outs_raw`` what it returned, ``outs`` those as the arrays it sent on."""
        self.formula_ns = namespace
        rnode = self._rnode(node)
        g = self.array_in(g_arr)
        saved = node._saved
        sv = None if saved is None else tuple(None if s is None else self._saved_slot(s) for s in saved)
        res = tuple(None if o is None else self._out(o) for o in outs)
        fix = tuple(o is not None and r is not o for r, o in zip(outs_raw, outs))
        self.steps.append(("formula", res, type(node), rnode, g, sv, fix))

    def opaque(self, node, g, outs) -> None:
        """``node``'s Tensor-level backward ran on the gradient ``g``, as one step."""
        rnode = self._rnode(node)
        gs = self.array_in(g._data)
        res = tuple(None if o is None else self._out(o._data) for o in outs)
        self.steps.append(("backward", res, rnode, gs, g.device))

    def _rnode(self, node):
        got = self.nodes.get(node)
        if got is None:
            self.fail(f"the derivative of {node.name} was asked for, but its forward ran before the call")
        return got

    def _saved_slot(self, s):
        t = getattr(s, "tensor", None)
        return self.tensor_in(t) if t is not None else self.array_in(s.data)

    def add(self, a, b, out) -> None:
        """The engine summed two gradients: ``out = a + b`` (arrays)."""
        self.steps.append(("add", self._new(out, True), self.array_in(a), self.array_in(b)))

    def accumulated(self, staged, updates) -> None:
        """The engine's commit: ``staged`` (tensor, gradient) pairs, ``updates`` what
        ``Tensor._grad_update`` made of each."""
        for (t, g), (_, (new, values)) in zip(staged, updates):
            self.accumulate(t, g._data, values is None and new._data is g._data)

    def accumulate(self, t: Tensor, g_arr, stole: bool) -> None:
        """``t.grad`` got the gradient ``g_arr`` (set, or added into it)."""
        self._leaf(t)
        s = self.array_in(g_arr)
        # the program decides for itself whether the gradient's array can become .grad as it is
        # (core/program.py): the capture keeps every array, so eager autodsl copied them all here
        owns = s in self.computed and getattr(g_arr, "base", 0) is None
        self.steps.append(("acc", t, s, owns))

    def grad_none(self, t: Tensor) -> None:
        self.steps.append(("grad_none", t))

    def read_grad(self, t: Tensor, g: Tensor) -> None:
        """``t.grad`` was read: the program reads it at the same point."""
        s = self._new(g._data, False)
        self.steps.append(("read_grad", s, t))

    def value(self, t: Tensor, value) -> None:
        """Python read the value of ``t`` (``item``, ``if``, ``float``): a guard."""
        if self.depth:
            return
        self.steps.append(("guard", self.tensor_in(t), value))

    def write_ufunc(self, name: str, target: Tensor, other) -> None:
        """``target <name>= other`` straight into its storage (an update under no_grad)."""
        if self.depth:
            return
        s = self.tensor_in(target)
        v = self.tensor_in(other) if isinstance(other, Tensor) else other
        self.steps.append(("ufunc", name, target, s, v, isinstance(other, Tensor), _write_pos(target)))

    def write(self, target: Tensor, src) -> None:
        """``target[...] = src`` (an in-place op that recorded nothing)."""
        if self.depth:
            return
        self.steps.append(("write", target, self.tensor_in(target), self.array_in(src), None))

    def _leaf(self, t: Tensor) -> None:
        if t.grad_fn is not None:
            self.fail("it keeps the gradient of a non-leaf tensor (retain_grad)")


def _expr(cls, tensors, params):
    """The operator a floating op's forward is (``Op.expr``), when nothing else in it applies."""
    expr = getattr(cls, "expr", None)
    if expr is None or params or not all(t._data.dtype.kind == "f" for t in tensors):
        return None
    return expr


def _write_pos(target):
    rec = target._version[1] if len(target._version) > 1 else None     # what note_write kept
    return None if rec is None else rec[1]


def _prepare(rnode, node, n: int, recorded: bool) -> None:
    """The fields a replay node needs, without references into the eager graph."""
    rnode._record = False
    rnode.inputs = (None,) * n
    rnode._saved = rnode._retained = rnode._pre_hooks = None
    rnode._released = False
    rnode._consts = rnode._out_ref = rnode._out_scalar = None
    rnode._params = None
    rnode.seq_nr = 0
    if recorded:
        rnode.next_edges = tuple(None if e is None else True for e in node.next_edges)
        rnode.input_shapes = node.input_shapes
        rnode.input_dtypes = node.input_dtypes
        rnode.pos = node.pos
    else:
        rnode.next_edges = (None,) * n
        rnode.input_shapes = ()
        rnode.input_dtypes = None
        rnode.pos = None
