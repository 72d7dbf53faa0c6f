"""The op table: ``defop`` registers an op class, ``apply`` runs it and builds its node.

An op class subclasses ``Op`` (a graph ``Node``) and defines

* ``forward(self, *arrays, **params) -> array``: backend arrays in, one array
  out. ``self.inputs`` holds the input Tensors, for ``save_for_backward``.
* ``backward(self, g) -> tuple``: ``g`` is a Tensor; one Tensor (or None)
  per input, written with autodsl's own ops so that ``create_graph=true``
  gives higher-order derivatives. The engine reduces broadcast gradients to
  each input's shape, so ops never un-broadcast.

``differentiable`` lists which inputs can receive a gradient (default: all);
``view = True`` marks ops whose output may share storage with input 0.
"""
from __future__ import annotations

import contextlib
import gc
import weakref

import autodsl.backend as backend
try:
    import cython
except ImportError:
    from autodsl._pure import cython
from autodsl.context import RunContext, current, current_or_none
from autodsl.backend import kind_of, namespace_of
from autodsl.core import grad_mode
from autodsl.core.watch import after_op, follow_break, known_pos
from autodsl.core.node import Node, SavedOutput, SavedTensor, add_saved, next_seq_nr
from autodsl.core.grad_sums import as_gradient
from autodsl.source import caller_pos
from autodsl.errors import DeviceError, DSLError, ShapeError
from autodsl.ops import chunked
from autodsl.ops.formula import ARRAYS, FLOATS, TENSORS
from autodsl.core.tensor import PUBLIC_METHODS, Tensor, TensorBase, new_tensor
from autodsl.errors import DTypeError, IndexError_, TypeError_, ValueError_
from autodsl.core.words import plain
from autodsl.ops.promotion import f64_constant, fast_pair, promoted, to_tensors
from autodsl.ops.op_limits import check_op
from autodsl.core.limits import memory_error

_gc_isenabled, _gc_disable, _gc_enable = gc.isenabled, gc.disable, gc.enable
_ndarray = backend.HOST_ARRAY   # (a NumPy array is on the host: the test without a call, for every op)
_F64 = backend.HOST_F64
_f64_array = backend.f64_scalar_array

__all__ = ["Op", "defop", "apply", "apply1", "apply2", "REGISTRY", "OpInfo", "OpFlags", "mark_pointwise", "to_op",
           "install"]


class OpInfo:
    """One row of the op table: name, node name, class, arity, differentiable inputs, doc."""

    __slots__ = ("name", "node_name", "cls", "differentiable", "public", "doc")

    def __init__(self, name, node_name, cls, differentiable, public, doc):
        self.name = name
        self.node_name = node_name
        self.cls = cls
        self.differentiable = differentiable
        self.public = public
        self.doc = doc

    def __repr__(self) -> str:
        return f"OpInfo({self.name!r}, {self.node_name})"


REGISTRY: dict[str, OpInfo] = {}


class OpFlags:
    """The class attributes of an op class that ``apply`` reads for every op, read once.

    Note [op flags]: an op states its flags (``promote``, ``view``, ``pointwise``...) as class
    attributes; ``apply`` reads them from the class's ``_op_flags`` (made on the class's first
    op), so that compiled they are struct members and not a class lookup each (ops/registry.pxd).
    They are facts of the class: set them in its body, or with ``mark_pointwise`` before it
    runs an op, never on a class that has already run one."""

    __slots__ = ("cls", "promote", "pair", "floating", "differentiable", "never_differentiable",
                 "pointwise", "moves_device", "view", "f64", "f64_floats", "f64_formula", "f64_lane", "plain",
                 "rec", "rec_any2")

    def __init__(self, cls):
        self.cls = cls
        self.promote = cls.promote
        self.pair = cls.promote is True         # promote both of two inputs (fast_pair)
        self.floating = bool(cls.floating)
        self.differentiable = cls.differentiable
        self.never_differentiable = bool(cls.never_differentiable)
        self.pointwise = bool(cls.pointwise)
        self.moves_device = bool(cls.moves_device)
        self.view = bool(cls.view)
        # Note [0-d fast path]: only where the class's forward_f64 is beside the forward it stands
        # for (a subclass that writes another forward does not inherit the fast path)
        self.f64 = cls.forward_f64 is not None and _defined_in(cls, "forward_f64") is _defined_in(cls, "forward")
        # its formula on Python floats too (ops/formula.py's FLOATS): where the formula is the one
        # written beside that fast path; on a gradient Tensor, where it computes something (add's
        # passes g on: nothing to gain), on a float gradient always (Note [float gradients])
        self.f64_floats = self.f64 and cls.formula is not None and \
            _defined_in(cls, "formula") is _defined_in(cls, "forward_f64")
        self.f64_formula = self.f64_floats and not cls.passes_gradient
        # the op's 0-d fast path, tried first of all by apply1 and apply2 (its inputs need no promotion)
        self.f64_lane = self.f64 and self.differentiable is None and not self.view and not self.moves_device
        # Note [unrecorded pointwise ops]: apply2 tries _apply_plain first
        self.plain = self.pair and self.pointwise and self.differentiable is None and not self.view \
            and not self.moves_device
        # Note [recorded ops]: apply1 and apply2 try _apply_rec first, and apply for one input, or
        # for two that it does not promote (nll_loss's, whose second has no gradient)
        self.rec = self.differentiable is None and not self.never_differentiable and not self.view \
            and not self.moves_device
        self.rec_any2 = (self.differentiable is None or self.differentiable == (0,)) and not self.promote \
            and not self.never_differentiable and not self.view and not self.moves_device


def _defined_in(cls, name: str):
    """The class of ``cls``'s method resolution order whose body defines ``name``."""
    return next((k for k in cls.__mro__ if name in k.__dict__), None)


def _op_flags(cls) -> OpFlags:
    """``cls``'s OpFlags, made and kept on the class the first time (Note [op flags])."""
    flags = cls._op_flags = OpFlags(cls)
    return flags


def mark_pointwise(*classes) -> None:
    """Mark op classes as pointwise (their forward works element by element, so a huge one
    runs in pieces: ops/chunked.py), after their definition (Note [op flags])."""
    for cls in classes:
        cls.pointwise = True
        cls._op_flags = None


class Op(Node):
    """Base class of op nodes (see the module doc).

    An op class that keeps nothing of its own per node declares ``__slots__ = ()``, so its
    nodes have no ``__dict__`` (a recorded graph is mostly nodes: Note [node memory]); one
    that keeps parameters (a reduction's dims) stores them as attributes as usual.
    """

    # ``_record``: this node records (some input needs a gradient); ``inputs``: the input
    # tensors while forward runs; ``_consts``: the arrays of the inputs no edge supplies (None
    # where an edge does; a two-input op's one constant bare: read it with core/node.py's
    # const_entries), ``_params``: the op's keyword parameters (None: none), which with the
    # edges are what re-running the forward needs (``rerun``, core/replay.py); ``_out_scalar``: a
    # 0-d output's array, for the displays (a node holds no reference to its output: Note [live
    # outputs] in core/rules.py).
    __slots__ = ("_record", "inputs", "_consts", "_params", "_out_scalar")

    differentiable = None
    _op_flags = None        # (Note [op flags]: made on the class's first op)
    view = False
    never_differentiable = False
    save_output = False   # append the output to the saved tensors (exp, sigmoid, ...)
    promote = False       # True or a tuple of input positions: compute in one promoted dtype
    moves_device = False  # the output may be on another device than the inputs (to())
    # the forward works element by element (on broadcast inputs, with number params): a huge
    # one runs on pieces of the result, so that an interrupt lands (ops/chunked.py)
    pointwise = False
    floating = False      # integer inputs are computed in the default float dtype (exp, div, ...)
    # the forward on floating inputs, when it is one Python operator ("{0} * {1}"): what a
    # compiled program writes instead of calling forward (core/program.py)
    expr = None
    # the formula sends the gradient on unchanged to every input (add): a compiled program
    # skips it (core/program.py)
    passes_gradient = False
    # the forward is ``xp.<array_function>(a)`` and nothing else (tanh): see ``specialize``
    array_function = None
    # ``forward_f64(self, x[, y])``: forward on Python floats, for one or two 0-d float64 host
    # arrays, as many as the op's inputs (Note [0-d fast path])
    forward_f64 = None
    # the formula on arrays as one expression per input ("{g} * {1}": {g} the gradient, {0},
    # {1} the saved values), when it is only operators: what a compiled program writes
    # instead of calling it (core/program.py); see ``formula_exprs``
    formula_expr = None

    def formula_exprs(self):
        """``formula_expr`` for this node (an op may choose by its input shapes), or None."""
        return self.formula_expr

    def save_for_backward(self, *tensors) -> None:
        if self._record:
            Node.save_for_backward(self, *tensors)

    @property
    def needs_input_grad(self) -> tuple:
        """One bool per input: does a gradient for it go anywhere? (Backward skips the rest.)"""
        return tuple(e is not None for e in self.next_edges)

    def forward(self, *arrays, **params):  # pragma: no cover
        raise NotImplementedError

    @classmethod
    def specialize(cls, arrays: tuple, params: dict):
        """The forward for inputs of the shapes, dtypes and devices of ``arrays`` and these
        ``params``, as a function of the input arrays that computes exactly what ``forward``
        does, with what depends only on those worked out once; or None (the default). A compiled program calls it instead of
        ``forward`` (core/program.py). What forward leaves on the node for the formula must
        depend only on those shapes, dtypes and params: the capture runs forward on the
        program's node once, and replays read it from there. The default: the
        namespace's function ``array_function`` names, for an op whose forward is just that."""
        if cls.array_function is None or params:
            return None
        return getattr(namespace_of(arrays[0]), cls.array_function)

    def rerun(self, inputs: tuple) -> Tensor:
        """This node's op again, on ``inputs`` (one Tensor per input, in the recorded order)
        and the recorded parameters: what a replay of the graph evaluates (core/replay.py)."""
        params = self._params
        return apply(type(self), *inputs, **params) if params else apply(type(self), *inputs)

    def backward(self, g):  # pragma: no cover
        raise NotImplementedError

    # Note [one formula]: an op states its derivative once, as ``formula(self, F, g, *saved)``
    # (see ops/formula.py); ``rule`` beside it is the text the trace prints. Ops that need more
    # than a formula (several passes, hooks into the engine) define ``backward(self, g)`` instead.
    formula = None

    @cython.locals(ctx=RunContext, g=TensorBase)
    def apply(self, g):
        if self.formula is None:
            cap = (current_or_none() or current()).capture
            return self.backward(g) if cap is None else _captured_backward(self, cap, g)
        ctx = current_or_none() or current()
        if ctx.grad_enabled:      # create_graph: record the formula's ops
            return self.formula(TENSORS, g, *self.saved_tensors)
        data = g._data
        device = g.device
        flags = type(self)._op_flags
        if flags is not None and flags.f64_formula and type(data) is _ndarray and data.dtype is _F64 \
                and data.ndim == 0 and ctx.capture is None and flags.cls is type(self):
            outs = _formula_f64(self, g, data, device)
            if outs is not None:
                return outs
        outs = self.formula(ARRAYS, data, *self.saved_arrays) if self._saved is not None or self._released \
            else self.formula(ARRAYS, data)
        if ctx.capture is not None:
            return _captured_formula(self, ctx.capture, g, outs)
        # g passed through unchanged (add's, sub's first) stays the same Tensor
        n = len(outs)
        if n == 2:
            a, b = outs
            return (g if a is data else None if a is None else new_tensor(a, device),
                    g if b is data else None if b is None else new_tensor(b, device))
        if n == 1:      # (a one-input op: no generator to make)
            a = outs[0]
            return (g if a is data else None if a is None else new_tensor(a, device),)
        # (a list, not a generator: compiled, a generator's closure cannot read the typed g)
        return tuple([g if o is data else None if o is None else new_tensor(o, device) for o in outs])

    @cython.locals(ctx=RunContext, flags=OpFlags, g=TensorBase)
    def evaluate(self, grad, floats=False):
        """``validate_outputs(apply(g), g)`` (core/node.py), without the check where it cannot
        change anything: ``g`` has the output's shape and dtype (seeds and hook results are
        checked, and every gradient sent was validated), so a 0-d float64 ``g`` into an
        elementwise op (one with a 0-d lane) whose inputs all had the output's dtype
        (``input_dtypes`` None) means 0-d float64 inputs, and the formula's gradients are 0-d
        float64 already. (The check was about a fifth of a 0-d node's pure-Python backward.)
        Where ``floats`` allows, such an op takes ``grad`` as a Python float or a Tensor and
        sends floats (Note [float gradients], core/grad_sums.py). A two-input op's gradient
        that only gained leading dims is summed on its array first (Note [a bias's gradient],
        ``_lead_sums``)."""
        flags = type(self)._op_flags
        f64 = flags is not None and flags.f64_floats and self.input_dtypes is None and flags.cls is type(self)
        if type(grad) is float:     # (only where floats allows: no create_graph, no capture)
            if f64:
                outs = _float_formula(self, grad)
                if outs is not None:
                    return _passed_on(self, outs, grad, None)
                f64 = False     # (its saved values are not 0-d float64: the arrays' way)
            grad = as_gradient(grad)
        g = grad
        data = g._data
        if f64 and type(data) is _ndarray and data.dtype is _F64 and data.ndim == 0:
            ctx = current_or_none() or current()
            if not ctx.grad_enabled and ctx.capture is None:
                if not flags.f64_formula:       # add's and sub's: g passed on, or its negation
                    return self.apply(g)
                if floats:
                    gf = data.item()
                    outs = _float_formula(self, gf)
                    if outs is not None:
                        return _passed_on(self, outs, gf, g)
                else:
                    outs = _formula_f64(self, g, data, g.device)
                    if outs is not None:
                        return outs
        outs = self.apply(g)
        shapes = self.input_shapes
        if type(outs) is not tuple or shapes is None or len(outs) != len(shapes) or len(outs) > 2:
            return self.validate_outputs(outs, g)
        # (a pointwise op's gradients only: the others' (matmul's) have their inputs' shapes, or
        # validate_outputs reduces them as before)
        if len(outs) == 2 and (shapes[0] != data.shape or shapes[1] != data.shape) \
                and (flags is None or flags.cls is not type(self) or flags.pointwise):
            outs = _lead_sums(self, outs, shapes)
        # what validate_outputs finds first, without its call: each gradient already of its
        # input's shape and dtype (then it gives back ``outs`` itself)
        if self.input_dtypes is None and _fits(outs[0], shapes[0], data.dtype) \
                and (len(outs) == 1 or _fits(outs[1], shapes[1], data.dtype)):
            return outs
        return self.validate_outputs(outs, g)


@cython.locals(node=Op, ctx=RunContext, a=TensorBase, b=TensorBase)
def _lead_sums(node, outs: tuple, shapes: tuple) -> tuple:
    """Note [a bias's gradient]: ``validate_outputs`` reduces a broadcast gradient by
    ``sum_to_size``, a whole op call (nothing records it in a backward without create_graph).
    A two-input op's gradient that only gained leading dims (``x @ w + b``'s for ``b``: the
    batch) is summed here on its array instead: what SumTo's forward computes for it, by the
    same call. Only where that op call would add nothing: no anomaly mode, compile() or
    Session limit watching, and a host array below chunked.LARGE (above it the op sums in
    pieces, so that an interrupt lands)."""
    ctx = current_or_none() or current()
    if ctx.grad_enabled or ctx.capture is not None or ctx.anomaly is not None or ctx.limits is not None:
        return outs
    edges = node.next_edges
    a, b = outs
    # (a gradient passed on unchanged, add's, has its input's shape: no call for it)
    return (a if a is None or edges[0] is None or a._data.shape == shapes[0] else _lead_sum(a, shapes[0]),
            b if b is None or edges[1] is None or b._data.shape == shapes[1] else _lead_sum(b, shapes[1]))


@cython.locals(t=TensorBase)
def _fits(t, shape: tuple, dtype) -> bool:
    """A formula's gradient ``t`` (a Tensor or None) has ``shape`` and ``dtype``."""
    return t is None or t._data.shape == shape and t._data.dtype == dtype


@cython.locals(t=TensorBase)
def _lead_sum(t, shape: tuple):
    d = t._data
    if type(d) is not _ndarray or d.size > chunked.LARGE:
        return t
    lead = d.ndim - len(shape)
    if lead <= 0 or d.shape[lead:] != shape:
        return t
    return new_tensor(backend.reduce_sum(d, tuple(range(lead)), False), t.device)


# (gf an object: compiled, a C double would make a new float at each use, and `a is gf` false)
@cython.locals(node=Op, g=TensorBase, gf=object)
def _formula_f64(node, g, data, device):
    """Note [0-d fast path], backward: ``node``'s formula on Python floats (ops/formula.py's
    FLOATS), for a 0-d float64 host gradient ``data`` (``g``'s array) and saved values that are
    all 0-d float64 host arrays too (else None: the formula runs on arrays). One Tensor (or
    None) per input; a gradient passed on unchanged is ``g`` itself, as on arrays."""
    gf = data.item()
    outs = _float_formula(node, gf)
    if outs is None:
        return None
    if len(outs) == 2:
        a, b = outs
        return (g if a is gf else None if a is None else new_tensor(_f64_array(a), device),
                g if b is gf else None if b is None else new_tensor(_f64_array(b), device))
    if len(outs) == 1:
        a = outs[0]
        return (g if a is gf else None if a is None else new_tensor(_f64_array(a), device),)
    return tuple([g if o is gf else None if o is None else new_tensor(_f64_array(o), device) for o in outs])


# Note [passed-on gradients]: a formula that returns its gradient itself passes that object on
# (add's ``g, g``, sub's first): as in torch, every edge it goes along gets the same Tensor, so a
# hook that changes it in place changes it for all of them, and grad() may return the caller's
# own grad_outputs tensor. On floats (Note [float gradients]) identity is the float's: a
# gradient Tensor passed on stays that Tensor, and a float passed along two or more edges becomes
# one Tensor that they share; a float passed along one edge stays a float (nothing shares it).
@cython.locals(node=Op)
def _passed_on(node, outs, gf, g):
    """``outs`` of ``node``'s formula on the float ``gf``, with what it passed on unchanged (``is
    gf``) as Note [passed-on gradients] asks: ``g``, the gradient Tensor ``gf`` was read from, or
    None where ``gf`` came as a float."""
    if len(outs) == 1:
        return outs if g is None or outs[0] is not gf else (g,)
    if len(outs) == 2 and outs[0] is not gf and outs[1] is not gf:
        return outs
    edges = node.next_edges
    same = 0
    for o, e in zip(outs, edges):
        if o is gf and e is not None:
            same += 1
    if same == 0 or same == 1 and g is None:
        return outs
    if g is None:
        g = as_gradient(gf)
    return tuple([g if o is gf else o for o in outs])


@cython.locals(node=Op)
def _float_formula(node, gf):
    """``node``'s formula on Python floats for the float gradient ``gf``, where its saved
    values are all 0-d float64 host arrays: one float (or None) per input; else None."""
    # the saved arrays, as node.saved_arrays gives them, its work inlined for the usual kept
    # values (an array with its version counter, unchanged since: a Python call or two less per node)
    raw = node._saved
    tp = type(raw)
    if (tp is SavedOutput or tp is SavedTensor) and raw.data is not None and raw.counter[0] == raw.version:
        saved = (raw.data,)
    elif tp is tuple and len(raw) == 2:
        s, t = raw
        if (s is None or (type(s) is SavedTensor or type(s) is SavedOutput) and s.data is not None
                and s.counter[0] == s.version) and \
                (t is None or (type(t) is SavedTensor or type(t) is SavedOutput) and t.data is not None
                 and t.counter[0] == t.version):
            saved = (None if s is None else s.data, None if t is None else t.data)
        else:
            saved = node.saved_arrays       # (its checks raise the version error)
    elif raw is not None or node._released:
        saved = node.saved_arrays           # (raises the error of a graph already freed)
    else:
        saved = ()
    n = len(saved)
    if n == 1:
        s = saved[0]
        if s is None:
            outs = node.formula(FLOATS, gf, None)
        elif type(s) is _ndarray and s.dtype is _F64 and s.ndim == 0:
            outs = node.formula(FLOATS, gf, s.item())
        else:
            return None
    elif n == 2:
        s, t = saved
        if not (s is None or type(s) is _ndarray and s.dtype is _F64 and s.ndim == 0) or \
                not (t is None or type(t) is _ndarray and t.dtype is _F64 and t.ndim == 0):
            return None
        outs = node.formula(FLOATS, gf, None if s is None else s.item(), None if t is None else t.item())
    elif n == 0:
        outs = node.formula(FLOATS, gf)
    else:           # (no op with a 0-d fast path saves more: the arrays' way)
        return None
    return outs


def defop(name: str, *, node_name: str | None = None, public: bool = True):
    """Class decorator: register an op under ``name`` with grad_fn name ``node_name``."""
    def deco(cls):
        cls.name = node_name or "".join(p.capitalize() for p in name.split("_")) + "Backward"
        cls.op_name = name
        REGISTRY[name] = OpInfo(name, cls.name, cls, cls.differentiable, public,
                                (cls.__doc__ or "").strip())
        return cls
    return deco


def apply(cls, *inputs, **params) -> Tensor:
    """Run op ``cls`` on ``inputs`` (Tensors or numbers) and record its node when needed.

    Note [the cost of an op]: this runs for every op a user makes, so it does only what
    it must (about a page of attribute stores) and reads the run context once. The cyclic
    collector is held off while it runs: an op allocates a handful of objects, and each
    collection it would trigger walks the whole live graph (which has no reference cycles,
    so the collector frees nothing there); the host program's own allocations still
    trigger collections as usual, and its settings are never changed.
    """
    gc_on = _gc_isenabled()
    if gc_on:
        _gc_disable()
    try:
        flags = cls._op_flags
        if flags is not None and flags.cls is cls and 0 < len(inputs) <= 2 and type(inputs[0]) is Tensor:
            if len(inputs) == 1:
                if flags.rec and inputs[0]._requires_grad:
                    out = _apply_rec(cls, flags, inputs[0], None, params)
                    if out is not None:
                        return out
            elif flags.rec_any2 and type(inputs[1]) is Tensor and (
                    inputs[0]._requires_grad or flags.differentiable is None and inputs[1]._requires_grad):
                out = _apply_rec(cls, flags, inputs[0], inputs[1], params)
                if out is not None:
                    return out
        return _apply(cls, inputs, params)
    finally:
        if gc_on:
            _gc_enable()


@cython.locals(ctx=RunContext, flags=OpFlags, view=cython.bint, node=Op, t=TensorBase, out=TensorBase,
               src=TensorBase, a=TensorBase, b=TensorBase)
def _apply(cls, inputs: tuple, params):
    """``apply``'s work, with the collector already held off. ``params``: the op's keyword
    parameters, a dict or None (apply1 and apply2 make no dict). Compiled, this is a C
    function (ops/registry.pxd): the operators and functions reach it without a Python call."""
    flags = cls._op_flags
    if flags is None or flags.cls is not cls:       # (inherited: a base class's)
        flags = _op_flags(cls)
    tensors = None
    if flags.pair and len(inputs) == 2:
        tensors = fast_pair(cls, inputs[0], inputs[1])
    elif len(inputs) == 1 and type(inputs[0]) is Tensor and (not flags.floating or (
            inputs[0]._data.dtype.kind == "f" if type(inputs[0]._data) is _ndarray
            else kind_of(inputs[0]._data.dtype) == "f")):
        tensors = inputs        # one tensor: nothing to promote unless the op needs a float
    if tensors is None:
        try:
            tensors = promoted(cls, inputs, to_op) if flags.promote else to_tensors(inputs)
        except TypeError_ as e:         # as_tensor's words do not know the op: name it
            raise TypeError_(f"{_said(cls)}: {e.message}") from None
        device = tensors[0].device if tensors else backend.get_default_device()
        for t in tensors:
            if t.device != device:
                raise DeviceError(f"{cls.op_name}: tensors on different devices ({device} and {t.device}); "
                                  f"move them to one device, e.g. .to(\"{device}\") on the {t.device} one")
    else:
        a = tensors[0]
        device = a.device
    ctx = current_or_none() or current()
    if flags.f64 and not params and flags.differentiable is None and not flags.view \
            and not flags.moves_device and ctx.limits is None and ctx.capture is None and ctx.anomaly is None:
        a = tensors[0]
        d0 = a._data
        if type(d0) is _ndarray and d0.dtype is _F64 and d0.ndim == 0 and a._base is None:
            if len(tensors) == 1:
                return _apply_f64(cls, flags, ctx, tensors, a, None, d0, None)
            if len(tensors) == 2:
                b = tensors[1]
                d1 = b._data
                if type(d1) is _ndarray and d1.dtype is _F64 and d1.ndim == 0 and b._base is None:
                    return _apply_f64(cls, flags, ctx, tensors, a, b, d0, d1)
    for t in tensors:
        if t._base is not None and t._base_gen != t._base._gen:
            t._refresh_view()       # a view made before its base's last in-place op (ops/inplace.py)
    node = cls.__new__(cls)
    diff = flags.differentiable
    record = False
    grad_on = ctx.grad_enabled
    if grad_on and not flags.never_differentiable:
        for i, t in enumerate(tensors):
            if t._requires_grad and (diff is None or i in diff):
                record = True
                break
    node._record = record
    node.inputs = tensors
    if not cython.compiled:     # (compiled, a new node starts with None and False there)
        node._saved = node._retained = node._pre_hooks = None
        node._released = False
    if record:      # before forward, so that forward saves only what the needed gradients use
        # (the usual arities spelled out, with Tensor._gradient_edge inlined: views were
        # refreshed above)
        if len(tensors) == 2 and diff is None:
            a, b = tensors
            node.next_edges = (
                None if not a._requires_grad else a.grad_fn if a.grad_fn is not None
                else a._accumulate if a._accumulate is not None else a._accumulate_node(),
                None if not b._requires_grad else b.grad_fn if b.grad_fn is not None
                else b._accumulate if b._accumulate is not None else b._accumulate_node())
        elif len(tensors) == 1:
            a = tensors[0]      # (it requires grad: record)
            node.next_edges = (a.grad_fn if a.grad_fn is not None else a._accumulate
                               if a._accumulate is not None else a._accumulate_node(),)
        else:
            node.next_edges = tuple([
                t._gradient_edge() if t._requires_grad and (diff is None or i in diff) else None
                for i, t in enumerate(tensors)])
    if len(tensors) == 2:
        a, b = tensors
        arrays = (a._data, b._data)
    elif len(tensors) == 1:
        a = tensors[0]
        arrays = (a._data,)
    else:
        arrays = [t._data for t in tensors]
    if ctx.limits is not None:          # a Session's time or memory limit (ops/op_limits.py)
        check_op(ctx.limits, cls, arrays, params or {})
    try:
        # (both inputs at most 4096 elements: the result is at most 2^24, never pieced)
        if flags.pointwise and (arrays[0].size > 4096 or arrays[-1].size > 4096 or len(arrays) > 2) \
                and chunked.may_be_large(arrays):
            out_arr = _pointwise(node, arrays, params or {}, ctx)
        elif flags.f64 and not params and type(arrays[0]) is _ndarray and arrays[0].dtype is _F64 \
                and arrays[0].ndim == 0 and (len(arrays) == 1 or len(arrays) == 2 and type(arrays[1])
                                             is _ndarray and arrays[1].dtype is _F64 and arrays[1].ndim == 0):
            # Note [0-d fast path]: one or two 0-d float64 arrays (W1-W3's graphs are all such ops).
            # Python's float arithmetic is the same IEEE double arithmetic, rounded the same way,
            # and never warns, so there is no NumPy error state to set, no 0-d ufunc call
            # (which returns a NumPy scalar, made a 0-d array again), only the array of the result.
            # Every result is NumPy's, bit for bit, except which of two nans a sum or a product
            # keeps (nan + -nan): that is the order the compiled code gives the CPU its operands,
            # which NumPy's own loops do not fix either (torch's 0-d result is this path's).
            # Sin and cos use the C library's functions where they give NumPy's bits
            # (backend/floats.py). The backward of such a node runs its formula on floats as
            # well (``_float_formula``), and the engine sends and sums such gradients as floats
            # (Note [float gradients], core/grad_sums.py).
            out_arr = node.forward_f64(float(arrays[0])) if len(arrays) == 1 \
                else node.forward_f64(float(arrays[0]), float(arrays[1]))
        # inside a Session run or a backward: IEEE results already set; off the host (CuPy never
        # warns, dask computes later: backend/ieee_tasks.py) there is no NumPy state to set
        else:
            token = None if ctx.ieee_depth or (arrays and type(arrays[0]) is not _ndarray
                                               and not backend.on_host(arrays[0])) \
                else backend.fp_errors_off()
            try:
                # (the usual calls spelled out: no argument tuple or keyword dict to pack)
                if params:
                    out_arr = node.forward(*arrays, **params)
                elif len(arrays) == 2:
                    out_arr = node.forward(arrays[0], arrays[1])
                elif len(arrays) == 1:
                    out_arr = node.forward(arrays[0])
                else:
                    out_arr = node.forward(*arrays)
            finally:
                if token is not None:
                    backend.fp_errors_restore(token)
    except DSLError:
        raise
    except (ValueError, IndexError, TypeError) as e:
        raise _translate(cls, tensors, e) from None
    except MemoryError as e:            # NumPy could not allocate the result: say how much
        raise memory_error(e, f"{cls.op_name}'s result") from None
    # a NumPy scalar becomes a 0-d array; only to() moves data to another device
    out = Tensor(out_arr) if flags.moves_device else new_tensor(out_arr, device)
    out_arr = out._data
    view = flags.view
    if arrays and (out_arr is arrays[0] or out_arr is arrays[-1]) and not view \
            and backend.is_lazy(out_arr):
        # dask may give back the input's own array object (einsum "ij->ij"); a write rebinds
        # the object it writes, so the result gets an object of its own (the same graph)
        out._data = out_arr = backend.copy(out_arr)
    # a lazy device shares no memory: there a view op is a view by what it is (a basic index,
    # a reshape...), and writes reach the base and its other views by rebinding (ops/inplace.py)
    lazy_view = view and backend.is_lazy(out_arr) and getattr(node, "basic", True)
    if view and tensors and (lazy_view or backend.may_share_memory(out_arr, tensors[0]._data)):
        src = tensors[0]
        out._version = src._version
        out._base = src._base if src._base is not None else src
        # the steps that make this view from its base: replayed when the base gets a new
        # history (in-place op) and by in-place writes through indexing views (CopySlices)
        out._view_chain = (() if src._base is None else src._view_chain) + ((cls, params or {}),)
        out._base_gen = out._base._gen
        if lazy_view:
            if out._base._views is None:
                out._base._views = weakref.WeakSet()
            out._base._views.add(out)
    node.inputs = None
    if record:
        node.seq_nr = next_seq_nr()
        pos = ctx.pos       # (a SourcePos is never false: no truth test, which would call its __len__)
        if pos is None and cython.compiled:
            pos = known_pos()
        node.pos = pos if pos is not None else caller_pos(_FRAMES_TO_CALLER)
        edges = node.next_edges
        node._params = params or None
        # the inputs no edge supplies, by reference (not copies): a replay reads them, graph()
        # shows a scalar one (x * 0.5)
        if None in edges:
            if len(arrays) == 2:        # one constant, kept bare (core/node.py's const_entries)
                d0, d1 = arrays
                node._consts = d0 if edges[0] is None else d1
            else:
                node._consts = tuple([d if e is None else None for d, e in zip(arrays, edges)])
        dt = out_arr.dtype
        # (Note [node memory], core/node.py) most nodes of a graph have the same
        # input shapes: one interned tuple serves them all.
        if len(arrays) == 1:             # (the usual arities spelled out: this runs for every op)
            d0 = arrays[0]
            shapes = (d0.shape,)
            node.input_dtypes = None if d0.dtype == dt else (d0.dtype,)   # None: all the output's
        elif len(arrays) == 2:
            d0, d1 = arrays
            shapes = (d0.shape, d1.shape)
            node.input_dtypes = None if d0.dtype == dt and d1.dtype == dt else (d0.dtype, d1.dtype)
        else:
            shapes = tuple([d.shape for d in arrays])
            dts = tuple([d.dtype for d in arrays])
            node.input_dtypes = None if all([d == dt for d in dts]) else dts
        _link(node, out, out_arr, shapes)
    if ctx.anomaly is not None or not (record or ctx.in_pass or grad_on and not flags.never_differentiable) \
            and (len(tensors) > 2 or len(tensors) and (tensors[0]._requires_grad or tensors[-1]._requires_grad)):
        # anomaly mode; why(): where a value that requires grad left the graph
        after_op(cls, tensors, out, node if record else None, grad_on, _FRAMES_TO_CALLER)
    if not record and ctx.left and not ctx.in_pass:    # why(): a value that left it, carried on
        follow_break(ctx, tensors, out)
    if ctx.capture is not None:         # compile() is recording this call (core/capture.py)
        ctx.capture.op(cls, node, inputs, tensors, params or {}, out, record)
    return out


@cython.locals(flags=OpFlags, ctx=RunContext, node=Op, a=TensorBase, b=TensorBase, out=TensorBase,
               record=cython.bint, grad_on=cython.bint)
def _apply_f64(cls, flags, ctx, tensors, a, b, d0, d1):
    """``_apply`` for an op with a 0-d fast path on one or two 0-d float64 host tensors that are
    not views (``b`` and ``d1`` None for one; ``b`` None and ``d1`` an array for a Python float
    kept bare, Note [bare constants] in core/node.py, ``tensors`` then ``(a, d1)``), in a
    context without limits, capture or anomaly mode: what the general path does for them,
    without the checks that cannot apply (Note [0-d fast path]). Compiled, this and the general
    path are one C call apart."""
    node = cls.__new__(cls)
    grad_on = ctx.grad_enabled
    record = grad_on and not flags.never_differentiable and (
        a._requires_grad or b is not None and b._requires_grad)
    node._record = record
    node.inputs = tensors
    if not cython.compiled:     # (compiled, a new node starts with None and False there)
        node._saved = node._retained = node._pre_hooks = None
        node._released = False
    if record:
        ea = None if not a._requires_grad else a.grad_fn if a.grad_fn is not None \
            else a._accumulate if a._accumulate is not None else a._accumulate_node()
        if d1 is None:
            node.next_edges = (ea,)
        elif b is None:
            node.next_edges = (ea, None)
        else:
            node.next_edges = (ea, None if not b._requires_grad else b.grad_fn if b.grad_fn is not None
                               else b._accumulate if b._accumulate is not None else b._accumulate_node())
    out_arr = node.forward_f64(d0.item()) if d1 is None else node.forward_f64(d0.item(), d1.item())
    out = new_tensor(out_arr, a.device)
    node.inputs = None
    if record:
        node.seq_nr = next_seq_nr()
        pos = ctx.pos
        if pos is None and cython.compiled:
            pos = known_pos()
        node.pos = pos if pos is not None else caller_pos(_FRAMES_TO_CALLER)
        node._params = None
        edges = node.next_edges
        if d1 is None:
            node.input_shapes = _SCALAR_SHAPES_1
        else:
            node.input_shapes = _SCALAR_SHAPES_2
            if edges[0] is None or edges[1] is None:     # (bare: core/node.py's const_entries)
                node._consts = d0 if edges[0] is None else d1
        node.input_dtypes = None
        node._out_scalar = out_arr
        if node.save_output:
            add_saved(node, SavedOutput(out))
        out.grad_fn = node
        out._requires_grad = True
    elif not (ctx.in_pass or grad_on and not flags.never_differentiable) and (
            a._requires_grad or b is not None and b._requires_grad):
        after_op(cls, tensors if b is not None else (a,), out, None, grad_on,
                 _FRAMES_TO_CALLER)   # why(): where a value that requires grad left the graph
    if not record and ctx.left and not ctx.in_pass:    # why(): a value that left it, carried on
        follow_break(ctx, tensors, out)
    return out


# Note [recorded ops]: most ops of a forward are one of two tensors of one dtype (x @ w, z + b)
# or of one tensor (relu(z)), on host arrays, recorded, outside anomaly mode, compile()'s
# capture and a Session's limits. For them _apply's general work comes to a short list:
# _apply_rec is that list, and says None (then _apply runs) for anything else, and for any
# error, which _apply then raises in the op's words (a forward changes nothing before it
# fails but the node it is given, which is dropped).
@cython.locals(flags=OpFlags, ctx=RunContext, node=Op, a=TensorBase, b=TensorBase, out=TensorBase)
def _apply_rec(cls, flags, a, b, params):
    """``_apply(cls, (a,) or (a, b), params)`` for the op of Note [recorded ops] (``b`` None: one
    input; ``params``: the op's keyword parameters, a dict, or None), or None where the general
    path is needed. The caller has checked ``flags.rec`` (one input, or two of a ``pair`` op: the
    same dtype is checked here) or ``flags.rec_any2`` (two inputs, any dtypes), and that an input
    requires grad that the op differentiates."""
    d0 = a._data
    if type(d0) is not _ndarray or a._base is not None:
        return None
    if b is None:
        # (chunked.may_be_large of one array: above LARGE)
        if flags.floating and d0.dtype.kind != "f" or flags.pointwise and d0.size > chunked.LARGE \
                or flags.f64 and d0.ndim == 0 and d0.dtype is _F64:
            return None
        d1 = None
    else:
        d1 = b._data
        if type(d1) is not _ndarray or b._base is not None or d1.dtype is not d0.dtype and flags.pair \
                or b.device != a.device or flags.floating and d0.dtype.kind != "f" \
                or flags.pointwise and (d0.size > 4096 or d1.size > 4096) and chunked.may_be_large((d0, d1)) \
                or flags.f64 and d0.ndim == 0 and d1.ndim == 0 and d0.dtype is _F64:
            return None
    ctx = current_or_none() or current()
    if not ctx.grad_enabled or ctx.limits is not None or ctx.capture is not None or ctx.anomaly is not None:
        return None
    node = cls.__new__(cls)
    node._record = True
    if not cython.compiled:     # (compiled, a new node starts with None and False there)
        node._saved = node._retained = node._pre_hooks = None
        node._released = False
    # (Tensor._gradient_edge inlined: neither input is a view)
    ea = None if not a._requires_grad else a.grad_fn if a.grad_fn is not None \
        else a._accumulate if a._accumulate is not None else a._accumulate_node()
    token = None if ctx.ieee_depth else backend.fp_errors_off()
    try:
        if b is None:
            node.inputs = (a,)
            node.next_edges = (ea,)
            out_arr = node.forward(d0, **params) if params else node.forward(d0)
        else:
            node.inputs = (a, b)
            node.next_edges = (ea, None if not b._requires_grad or flags.differentiable is not None
                               else b.grad_fn if b.grad_fn is not None
                               else b._accumulate if b._accumulate is not None else b._accumulate_node())
            out_arr = node.forward(d0, d1, **params) if params else node.forward(d0, d1)
    except Exception:       # noqa: BLE001 - the general path raises it in the op's words
        return None
    finally:
        if token is not None:
            backend.fp_errors_restore(token)
    out = new_tensor(out_arr, a.device)         # (a NumPy scalar becomes a 0-d array)
    out_arr = out._data
    node.inputs = None
    node.seq_nr = next_seq_nr()
    pos = ctx.pos
    if pos is None and cython.compiled:
        pos = known_pos()
    node.pos = pos if pos is not None else caller_pos(_FRAMES_TO_CALLER)
    node._params = params or None
    dt = out_arr.dtype
    if b is None:
        shapes = (d0.shape,)
        node.input_dtypes = None if d0.dtype == dt else (d0.dtype,)
    else:
        edges = node.next_edges
        if edges[0] is None or edges[1] is None:    # (bare: core/node.py's const_entries)
            node._consts = d0 if edges[0] is None else d1
        shapes = (d0.shape, d1.shape)
        node.input_dtypes = None if d0.dtype == dt and d1.dtype == dt else (d0.dtype, d1.dtype)
    _link(node, out, out_arr, shapes)
    return out


@cython.locals(node=Op, out=TensorBase)
def _link(node, out, out_arr, shapes: tuple):
    """The end of making a recorded node, ``_apply``'s and ``_apply_rec``'s: its input
    ``shapes`` (interned: Note [node memory]), a 0-d output's array, the saved output, and
    ``out`` (whose array is ``out_arr``) made its output."""
    node.input_shapes = _SHAPES.get(shapes) or _intern_shapes(shapes)
    if out_arr.ndim == 0:
        node._out_scalar = out_arr
    if node.save_output:
        add_saved(node, SavedOutput(out))
    out.grad_fn = node
    out._requires_grad = True


_SCALAR_SHAPES_1 = ((),)
_SCALAR_SHAPES_2 = ((), ())


@cython.locals(flags=OpFlags, ctx=RunContext, t=TensorBase)
def apply1(cls, a) -> Tensor:
    """``apply(cls, a)``, with the collector held off from before Python packs the arguments.

    Note [packing the arguments]: a call ``apply(cls, a)`` makes ``apply``'s ``*inputs`` tuple
    before ``apply`` can hold the collector off; where the graph keeps tuples (its edges) the
    free list of tuples runs dry, so that tuple is a new object, and the collection it triggers
    walks the whole young graph: in the pure-Python build that came at nearly every op (W1: 15
    young collections per 3,000 nodes instead of 1, and a quarter of the time); the compiled
    build packs the same tuple. The operators and most functions call these two."""
    gc_on = _gc_isenabled()
    if gc_on:
        _gc_disable()
    try:
        flags = cls._op_flags
        if flags is not None and flags.f64_lane and flags.cls is cls and type(a) is Tensor:
            # Note [0-d fast path]: a 0-d float64 host tensor first of all, here, a call before
            # _apply: what _apply's checks come to for it, without their calls
            t = a
            d0 = t._data
            if type(d0) is _ndarray and d0.dtype is _F64 and d0.ndim == 0 and t._base is None:
                ctx = current_or_none() or current()
                if ctx.limits is None and ctx.capture is None and ctx.anomaly is None:
                    return _apply_f64(cls, flags, ctx, (t,), t, None, d0, None)
        if flags is not None and flags.rec and flags.cls is cls and type(a) is Tensor and a._requires_grad:
            out = _apply_rec(cls, flags, a, None, None)
            if out is not None:
                return out
        return _apply(cls, (a,), None)
    finally:
        if gc_on:
            _gc_enable()


@cython.locals(flags=OpFlags, ctx=RunContext, t=TensorBase, u=TensorBase)
def apply2(cls, a, b) -> Tensor:
    """``apply(cls, a, b)``, with the collector held off from before Python packs the arguments
    (Note [packing the arguments] at ``apply1``); two 0-d float64 tensors, or a float beside
    one, take the 0-d lane here (Note [0-d fast path])."""
    gc_on = _gc_isenabled()
    if gc_on:
        _gc_disable()
    try:
        flags = cls._op_flags
        if flags is not None and flags.f64_lane and flags.pair and flags.cls is cls and type(a) is Tensor:
            t = a
            d0 = t._data
            if type(d0) is _ndarray and d0.dtype is _F64 and d0.ndim == 0 and t._base is None:
                ctx = current_or_none() or current()
                if ctx.limits is None and ctx.capture is None and ctx.anomaly is None:
                    if type(b) is float:        # Note [bare constants] (core/node.py)
                        d1 = f64_constant(b)
                        return _apply_f64(cls, flags, ctx, (t, d1), t, None, d0, d1)
                    if type(b) is Tensor and b.device == t.device:
                        u = b
                        d1 = u._data
                        if type(d1) is _ndarray and d1.dtype is _F64 and d1.ndim == 0 and u._base is None:
                            return _apply_f64(cls, flags, ctx, (t, u), t, u, d0, d1)
        if flags is not None and flags.rec and flags.pair and flags.cls is cls and type(a) is Tensor \
                and type(b) is Tensor and (a._requires_grad or b._requires_grad):
            out = _apply_rec(cls, flags, a, b, None)
            if out is not None:
                return out
        if flags is not None and flags.plain and flags.cls is cls and not (
                type(a) is Tensor and a._requires_grad or type(b) is Tensor and b._requires_grad):
            out = _apply_plain(cls, a, b)
            if out is not None:
                return out
        return _apply(cls, (a, b), None)
    finally:
        if gc_on:
            _gc_enable()


# Note [unrecorded pointwise ops]: an optimizer's update (no_grad { w -= lr * w.grad }), or any
# elementwise op of two host arrays when neither input requires grad, records nothing: no node
# to link, no position, no saved value, no view, nothing for why() (no input requires grad).
# _apply_plain computes it with only the checks that can still change the result: the same
# dtypes (fast_pair: no promotion), no stale view, no huge result (those go in pieces), no
# limits, compile() capture, anomaly mode or why()'s tracking of values that left the graph.
# Anything else, and any error (which the general path then raises in the op's words), goes
# the general way.
@cython.locals(ctx=RunContext, node=Op, t=TensorBase, u=TensorBase)
def _apply_plain(cls, a, b):
    """``_apply(cls, (a, b), None)`` for an unrecorded pointwise op of two host arrays, or None
    where that general path is needed."""
    # (first, before fast_pair; apply2 has checked it, a direct caller may not have)
    if type(a) is Tensor and a._requires_grad or type(b) is Tensor and b._requires_grad:
        return None
    tensors = fast_pair(cls, a, b)      # (a Tensor it returns is a or b, or a new constant)
    if tensors is None:
        return None
    t, u = tensors
    if t._base is not None or u._base is not None:
        return None
    d0, d1 = t._data, u._data
    if type(d0) is not _ndarray or type(d1) is not _ndarray or d0.ndim == 0 and d1.ndim == 0 \
            or (d0.size > 4096 or d1.size > 4096) and chunked.may_be_large((d0, d1)):
        return None         # (two 0-d arrays: the 0-d fast path's numbers, through _apply)
    ctx = current_or_none() or current()
    if ctx.limits is not None or ctx.capture is not None or ctx.anomaly is not None or ctx.left:
        return None
    node = cls.__new__(cls)
    node._record = False
    node.inputs = tensors
    if not cython.compiled:
        node._saved = node._retained = node._pre_hooks = None
        node._released = False
    token = None if ctx.ieee_depth else backend.fp_errors_off()
    try:
        out_arr = node.forward(d0, d1)
    except Exception:       # noqa: BLE001 - the general path raises it in the op's words
        return None
    finally:
        if token is not None:
            backend.fp_errors_restore(token)
    return new_tensor(out_arr, t.device)


def _pointwise(node, arrays, params, ctx):
    """A pointwise forward that may be huge: in pieces when its result is (ops/chunked.py)."""
    if ctx.ieee_depth:
        return chunked.pointwise(node.forward, arrays, params)
    token = backend.fp_errors_off()
    try:
        return chunked.pointwise(node.forward, arrays, params)
    finally:
        backend.fp_errors_restore(token)


def _captured_formula(node, cap, g, outs):
    """Op.apply's formula path while compile() records: the same results, and the step."""
    data, device = g._data, g.device
    wrapped = tuple(None if o is None else g if o is data else new_tensor(o, device) for o in outs)
    cap.formula(node, g._data, tuple(None if w is None else w._data for w in wrapped), ARRAYS)
    return wrapped


def _captured_backward(node, cap, g):
    """A Tensor-level backward while compile() records: its ops become one step."""
    cap.depth += 1
    try:
        outs = node.backward(g)
    finally:
        cap.depth -= 1
    outs = outs if type(outs) is tuple else tuple(outs) if isinstance(outs, list) else (outs,)
    cap.opaque(node, g, outs)
    return outs


_SHAPES: dict = {}


def _intern_shapes(shapes: tuple) -> tuple:
    if len(_SHAPES) >= 4096:
        _SHAPES.clear()
    _SHAPES[shapes] = shapes
    return shapes


# Note [the user's frame]: where caller_pos may start its walk, from _apply or _apply_f64. Run
# as Python, the frames below it are autodsl's all: caller_pos, _apply (or _apply_f64, which
# apply1 and apply2 call for the 0-d lane, and _apply a frame deeper: the walk steps through
# that one), one of apply, apply1 and apply2, and the function that called that one, for only
# autodsl's modules call those three (their callers are the public functions and the
# methods). Each frame the walk steps through is a frame object Python makes for it (about
# 0.2 us each, most of the cost of a node's position), so starting at the first frame that may
# be the user's saves three of them per op. Compiled, this module's functions push no frames:
# the walk starts at the first Python frame, which a public function in a module run as
# Python may be.
_FRAMES_TO_CALLER = 4 if type(apply).__name__ == "function" else 1


# the built-in a user called, for the ops that are one of its forms (max(x) is max_all)
_SAID_AS = {"max_all": "max", "max_dim": "max", "min_all": "min", "clamp_max": "clamp",
            "clamp_min": "clamp", "div_floor": "div", "div_trunc": "div", "norm_1": "norm",
            "norm_inf": "norm", "norm_0": "norm", "pnorm": "norm", "sum_to": "sum", "threshold_backward": "relu"}


def _said(cls) -> str:
    return _SAID_AS.get(cls.op_name, cls.op_name)


def _translate(cls, tensors, e):
    """An array library's exception from ``cls``'s forward as a DSLError in the language's words."""
    op_name = _said(cls)
    shapes = " and ".join(str(t.shape) for t in tensors)
    msg = str(e)
    if "broadcast" in msg:
        return ShapeError(f"{op_name}: shapes {shapes} do not broadcast: compared from the right, "
                          "each pair of sizes must be equal or 1; reshape or unsqueeze one operand")
    if "ufunc" in msg or "boolean subtract" in msg or "boolean negative" in msg:
        # NumPy has no loop for these dtypes: name them, as torch's "not implemented for 'Bool'"
        # (sub and neg say so themselves: here the bool arithmetic is inside another op's forward)
        dtypes = " and ".join(dict.fromkeys(t.dtype.name for t in tensors))
        return DTypeError(f"{op_name} does not take {dtypes} tensors; convert first, e.g. x.to(float64)")
    msg = plain(msg)
    if "shape" in msg or "align" in msg or "mismatch" in msg or "size" in msg:
        return ShapeError(f"{op_name}: the shapes {shapes} do not fit ({msg}); "
                          "check the shapes with .shape, or reshape/transpose one operand")
    if isinstance(e, IndexError):
        return IndexError_(f"{op_name}: {msg}")
    if isinstance(e, TypeError):
        return TypeError_(f"{op_name}: {msg}")
    return ValueError_(f"{op_name}: {msg}")


@defop("to", node_name="ToCopyBackward", public=False)
class ToCopy(Op):
    """Copy to another dtype and/or device."""
    moves_device = True

    def forward(self, a, dtype, device):
        self.src = (backend.dtype_of(a), backend.device_of(a))
        if device != backend.device_of(a):
            a = backend.asarray(backend.to_host(a), None, device)
        if dtype is None:
            return a
        xp = namespace_of(a)
        return xp.astype(a, backend.native_dtype(dtype, xp), copy=False)

    rule = "grad converted back to a's dtype and device"

    def backward(self, g):
        dt, dev = self.src
        return (to_op(g, device=dev, dtype=dt if dt.is_floating else None),)


def to_op(x: Tensor, device=None, dtype=None) -> Tensor:
    dev = x.device if device is None else backend.check_device(device)
    dt = None if dtype is None else backend.as_dtype(dtype)
    if dev == x.device and (dt is None or dt is x.dtype):
        return x
    # an integer or bool copy cannot require grad: make it outside the graph
    recordable = dt is None or dt.is_floating
    with contextlib.nullcontext() if recordable else grad_mode.no_grad():
        return apply(ToCopy, x, dtype=dt, device=dev)


def install(names_to_functions: dict, *, properties: dict | None = None) -> None:
    """Install functions as Tensor methods (first argument: the tensor) and list them for the language."""
    for name, fn in names_to_functions.items():
        setattr(Tensor, name, fn)
        if not name.startswith("_"):
            PUBLIC_METHODS.add(name)
    for name, fn in (properties or {}).items():
        setattr(Tensor, name, property(fn))
