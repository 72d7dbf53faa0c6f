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
(``Capture.fail``): random numbers, a tensor made from a tensor's values, an index computed
from a tensor, an in-place write while recording, a hook, ``create_graph``. The call itself
goes on eagerly (it is never run twice); ``compile`` then runs the function eagerly and says
why, once.

Effects name their tensor as the program finds it again: a tensor argument by its path (the
call's own tensor, not the first call's), a tensor from outside by the object (``compile``
guards the variables it was found through), a tensor the call made by nothing (a replay
makes it again: its in-place writes change only the slot's array, and the creation
functions' constants are copied for every call).
"""
from __future__ import annotations

import sys

import autodsl.backend as backend
from autodsl.context import current
from autodsl.core.tensor import Tensor
from autodsl.core.node import saved_entries
from autodsl.core.quiet import ieee

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
        self.big = set()        # slots of arrays of 4,096 elements or more
        self.n = 0
        self.computed = set()   # slots a step computes afresh on every call
        self.ext = {}           # slot -> a tensor from outside the call, read when the program runs
        self.nodes = {}         # eager node -> (its replay node, forward kind)
        self.depth = 0          # > 0 inside a Tensor-level backward, whose ops are one step
        self.failed = None
        self.formula_ns = None
        self.args = {}          # id(tensor argument) -> its path: effects reach the call's own tensor
        self.arg_tensors = []   # (path, tensor argument)
        self.made = set()       # ids of the tensors the call's ops made (kept alive in ``keep``)
        self.fresh = set()      # const slots of the creation functions (zeros, tensor, ...): new each call
        self.touched = {}       # id -> a tensor from outside whose .grad the call reads or changes
        self.grads = {}         # id(a .grad tensor the call read) -> the tensor it is the .grad of

    # -- slots -------------------------------------------------------------------------
    def _new(self, arr, computed: bool) -> int:
        s = self.n
        self.n += 1
        self.slot[id(arr)] = s
        self.keep.append(arr)
        if computed:
            self.computed.add(s)
        if getattr(arr, "size", 0) >= 4096:
            self.big.add(s)
        return s

    def arg(self, t: Tensor, path) -> int:
        """A tensor argument of the call: slot bound from ``path`` when the program runs."""
        if id(t) not in self.args:
            self.args[id(t)] = path
            self.arg_tensors.append((path, t))
        s = self.slot.get(id(t._data))
        if s is None:
            s = self._new(t._data, False)
            self.steps.append(("arg", s, path))
        return s

    def const(self, arr) -> int:
        """A creation function made ``arr``: a constant, made anew on every call (the call may
        write into it or return it)."""
        s = self.slot.get(id(arr))
        if s is None:
            s = self._new(arr, False)
            self.steps.append(("const", s, backend.copy(arr)))    # as made: the call may write into it
        self.fresh.add(s)
        return s

    def _const(self, arr) -> int:
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
        return self._const(arr) if s is None else s

    def _out(self, arr) -> int:
        s = self.slot.get(id(arr))
        return self._new(arr, True) if s is None else s

    def fail(self, reason: str) -> None:
        """The call cannot be replayed: record why and stop recording. The call goes on eagerly
        (it is not run a second time: its effects so far stay, once); ``compile`` then says why."""
        if self.failed is None:
            self.failed = reason
        ctx = current()
        if ctx.capture is self:
            ctx.capture = None

    def _outside(self, t: Tensor) -> bool:
        """``t`` is neither an argument nor made by the call: a tensor the program finds again."""
        return id(t) not in self.args and id(t) not in self.made and self.slot.get(id(t._data)) not in self.fresh

    def _touch(self, t: Tensor) -> None:
        if self._outside(t):
            self.touched.setdefault(id(t), t)

    # -- what the hooks report ------------------------------------------------------------
    def op(self, cls, node, raw_inputs, tensors, params, out_t, recorded: bool) -> None:
        """An op's forward ran (``ops.registry.apply``): ``node`` its node (recorded or not),
        ``out_t`` the output Tensor."""
        if self.depth or self.failed:
            return
        if params and any(_holds_values(v) for v in params.values()):
            # e.g. x[idx], x[mask], max(x, dim=0): the index was computed from a tensor's values
            # before the op, where a replay would not compute it again
            return self.fail(f"{cls.op_name} takes values computed from a tensor (an index tensor, a "
                             "mask) that a replay would not compute again")
        out_arr = out_t._data
        ins = tuple(self.tensor_in(t) if type(r) is Tensor or isinstance(r, Tensor) else self._const(t._data)
                    for r, t in zip(raw_inputs, tensors))
        self.made.add(id(out_t))
        self.keep.append(out_t)
        out = self._out(out_arr)
        rnode = cls.__new__(cls)
        opaque = recorded and cls.formula is None
        _prepare(rnode, node, len(tensors), recorded)
        if recorded:
            self.nodes[node] = rnode
        arrays = tuple(t._data for t in tensors)
        fast = None if opaque else cls.specialize(arrays, params)
        if fast is not None and recorded:
            # a replay skips forward: what it leaves on the node for the formula (a count, the
            # reduction; Op.specialize promises nothing there depends on the values) is left now
            with ieee():        # (the op's own call held NumPy's FP warnings off only while it ran)
                cls.forward(rnode, *arrays, **(params or {}))
        self.steps.append(("op", out, cls, rnode, ins, params or None, opaque,
                           node.pos if recorded else None, out_t.device, _expr(cls, tensors, params), fast))

    def formula(self, node, g_arr, outs, namespace) -> None:
        """``node``'s formula ran on arrays (``Op.apply``) in ``namespace`` (ops/formula.py's
        ARRAYS): ``outs`` the arrays it sent on."""
        rnode = None if self.failed else self._rnode(node)
        if rnode is None:
            return
        self.formula_ns = namespace
        g = self.array_in(g_arr)
        saved = node._saved
        sv = None if saved is None else tuple(None if s is None else self._saved_slot(s)
                                              for s in saved_entries(node))
        res = tuple(None if o is None else self._out(o) for o in outs)
        self.steps.append(("formula", res, type(node), rnode, g, sv))

    def opaque(self, node, g, outs) -> None:
        """``node``'s Tensor-level backward ran on the gradient ``g``, as one step."""
        rnode = None if self.failed else self._rnode(node)
        if rnode is None:
            return
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
        if self.failed:
            return
        self.steps.append(("add", self._new(out, True), self.array_in(a), self.array_in(b)))

    def accumulated(self, staged, updates) -> None:
        """The engine's commit: ``staged`` (tensor, gradient) pairs, ``updates`` what
        ``Tensor._grad_update`` made of each."""
        for (t, g), (_, (new, values)) in zip(staged, updates):
            self.accumulate(t, g._data, values is None and new._data is g._data)

    def accumulate(self, t: Tensor, g_arr, stole: bool) -> None:
        """``t.grad`` got the gradient ``g_arr`` (set, or added into it)."""
        if self.failed or not self._leaf(t):
            return
        self._touch(t)
        s = self.array_in(g_arr)
        # the program decides for itself whether the gradient's array can become .grad as it is
        # (core/program.py): the capture keeps every array, so eager autodsl copied them all here
        self.steps.append(("acc", t, s, s in self.computed and self._fresh(g_arr)))

    def _fresh(self, arr) -> bool:
        """Does ``arr`` own its memory, or view memory that only it holds (the temporary a
        reshaped sum is a view of)? Then nothing else sees it if it becomes .grad as it is."""
        if not hasattr(arr, "base"):
            return False
        base = arr.base
        if base is None:
            return True
        # (sys.getrefcount: the view's reference, this local and the call's own)
        return getattr(base, "base", 0) is None and id(base) not in self.slot and sys.getrefcount(base) == 3

    def grad_none(self, t: Tensor) -> None:
        if self.failed:
            return
        self._touch(t)
        self.steps.append(("grad_none", t))

    def grad_is_none(self, t: Tensor) -> None:
        """``t.grad`` was read and was none: a guard that it is none then in a replay too."""
        if self.failed:
            return
        self._touch(t)
        self.steps.append(("grad_is_none", t))

    def read_grad(self, t: Tensor, g: Tensor) -> None:
        """``t.grad`` was read: the program reads it at the same point."""
        if self.failed:
            return
        self._touch(t)
        self.grads[id(g)] = t
        self.keep.append(g)
        s = self._new(g._data, False)
        self.steps.append(("read_grad", s, t))

    def value(self, t: Tensor, value, reader: str = "item") -> None:
        """Python read the value of ``t`` (``item``, ``if``, ``float``; ``reader="tolist"``:
        all its values, by ``tolist`` or ``numpy``): a guard."""
        if self.depth or self.failed:
            return
        self.steps.append(("guard", self.tensor_in(t), value, reader))

    def write_ufunc(self, name: str, target: Tensor, other) -> None:
        """``target <name>= other`` straight into its storage (an update under no_grad)."""
        if self.depth or self.failed:
            return
        s = self.tensor_in(target)
        v = self.tensor_in(other) if isinstance(other, Tensor) else other
        self.steps.append(("ufunc", name, target, s, v, isinstance(other, Tensor), _write_pos(target)))

    def write(self, target: Tensor, src) -> None:
        """``target[...] = src`` (an in-place op that recorded nothing)."""
        if self.depth or self.failed:
            return
        self.steps.append(("write", target, self.tensor_in(target), self.array_in(src), None))

    def _leaf(self, t: Tensor) -> bool:
        if t.grad_fn is not None:
            self.fail("it keeps the gradient of a non-leaf tensor (retain_grad)")
            return False
        return True

    def version_owner(self, t: Tensor):
        """The argument (its path, as ``("arg", path)``) or outside tensor (``("ext", tensor)``)
        whose version counter ``t`` shares (``t`` itself, a view or ``detach()`` of it), the
        tensor whose ``.grad`` ``t`` is (``("grad", tensor)``), or None: a counter only tensors
        the call made have, which a replay need not count."""
        counter = t._version
        if id(t) in self.args:
            return ("arg", self.args[id(t)])
        if id(t) in self.grads:         # g = w.grad; g *= 0.5: the .grad w has when the program runs
            return ("grad", self.grads[id(t)])
        for path, a in self.arg_tensors:
            if a._version is counter:
                return ("arg", path)
        for other in self.ext.values():
            if other._version is counter:
                return ("ext", other)
        return None


def _holds_values(v) -> bool:
    """Is ``v`` (an op's parameter) data: a tensor or an array, or a tuple holding one?"""
    if isinstance(v, Tensor):
        return True
    if isinstance(v, (tuple, list)):
        return any(_holds_values(x) for x in v)
    return hasattr(v, "shape") and hasattr(v, "dtype") and not isinstance(v, backend.SCALAR_TYPES)


def _expr(cls, tensors, params):
    """The operator a floating op's forward is (``Op.expr``), when nothing else in it applies."""
    expr = getattr(cls, "expr", None)
    if expr is None or params or not all(backend.kind_of(t._data.dtype) == "f" for t in tensors):
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
    rnode._consts = rnode._out_scalar = None
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
