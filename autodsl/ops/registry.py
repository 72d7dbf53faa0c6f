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
from autodsl.context import current
from autodsl.backend import kind_of, namespace_of
from autodsl.core import grad_mode
from autodsl.core.journal import record_values
from autodsl.core.watch import after_op, note_write
from autodsl.core.quiet import ieee
from autodsl.core.node import Node, SavedOutput, next_seq_nr
from autodsl.source import caller_pos
from autodsl.names import names_of
from autodsl.errors import AutogradError, DeviceError, DSLError, DTypeError, ShapeError
from autodsl.ops.formula import ARRAYS, TENSORS
from autodsl.core.tensor import PUBLIC_METHODS, Tensor, as_tensor, new_tensor

_gc_isenabled, _gc_disable, _gc_enable = gc.isenabled, gc.disable, gc.enable

__all__ = ["Op", "defop", "apply", "inplace", "REGISTRY", "OpInfo", "sum_to", "to_op"]


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


class Op(Node):
    """Base class of op nodes (see the module doc)."""

    differentiable = None
    view = False
    never_differentiable = False
    save_output = False   # append the output to the saved tensors (exp, sigmoid, ...)
    promote = False       # True or a tuple of input positions: compute in one promoted dtype
    moves_device = False  # the output may be on another device than the inputs (to())
    floating = False      # integer inputs are computed in the default float dtype (exp, div, ...)

    def save_for_backward(self, *tensors) -> None:
        if self._record:
            Node.save_for_backward(self, *tensors)

    @property
    def needs_input_grad(self) -> tuple:
        """One bool per input: does a gradient for it go anywhere? (Backward skips the rest.)"""
        return tuple(e is not None for e in self.next_edges)

    def forward(self, *arrays, **params):  # pragma: no cover
        raise NotImplementedError

    def backward(self, g):  # pragma: no cover
        raise NotImplementedError

    # Note [one formula]: an op states its derivative once, as ``formula(self, F, g, *saved)``
    # (see ops/formula.py); ``rule`` beside it is the text the trace prints. Ops that need more
    # than a formula (several passes, hooks into the engine) define ``backward(self, g)`` instead.
    formula = None

    def apply(self, g):
        if self.formula is None:
            return self.backward(g)
        if current().grad_enabled:          # create_graph: record the formula's ops
            return self.formula(TENSORS, g, *self.saved_tensors)
        data = g._data
        outs = self.formula(ARRAYS, data, *self.saved_arrays) if self._saved is not None or self._released \
            else self.formula(ARRAYS, data)
        device = g.device
        # g passed through unchanged (add's, sub's first) stays the same Tensor
        if len(outs) == 2:
            a, b = outs
            return (g if a is data else None if a is None else new_tensor(a, device),
                    g if b is data else None if b is None else new_tensor(b, device))
        return tuple(g if o is data else None if o is None else new_tensor(o, device) for o in outs)


def defop(name: str, *, node_name: str | None = None, public: bool = True):
    """Class decorator: register an op under ``name`` with grad_fn name ``node_name``."""
    def deco(cls):
        cls.name = node_name or "".join(p.capitalize() for p in name.split("_")) + "Backward"
        cls.op_name = name
        REGISTRY[name] = OpInfo(name, cls.name, cls, cls.differentiable, public,
                                (cls.__doc__ or "").strip())
        return cls
    return deco


# Note [type promotion]
# PyTorch ranks operands in three tiers: tensors with dims, 0-d tensors, and
# plain numbers. Within a tier dtypes promote as usual (bool < int64 < float32
# < float64); a lower tier only matters when it brings a higher category
# (bool < integer < floating). So float32 * 2.5, float32 * tensor(2.5) and
# int64 + float32 are all float32, and int64 * 2.5 has the default float dtype.

def _category(d) -> int:
    return 2 if d.is_floating else (0 if d is backend.bool_ else 1)


def _promote(a, b):
    if a is None or a is b:
        return b
    if b is None:
        return a
    ca, cb = _category(a), _category(b)
    if ca != cb:
        return a if ca > cb else b
    return backend.float64 if ca == 2 else a    # float32+float64; int64 is the only integer dtype


def _combine(higher, lower):
    if higher is None:
        return lower
    if lower is None or higher.is_floating:
        return higher
    if higher is backend.bool_ or lower.is_floating:
        return _promote(higher, lower)
    return higher


def _scalar_dtype(v):
    if isinstance(v, backend.HOST_BOOL):
        return backend.bool_
    if isinstance(v, backend.HOST_INT):
        return backend.int64
    if isinstance(v, backend.HOST_FLOAT):
        return backend.get_default_dtype()
    return None


def result_dtype(values):
    """The dtype PyTorch would compute ``values`` (tensors and numbers) in."""
    tiers = [None, None, None]
    for v in values:
        if isinstance(v, Tensor):
            tier, d = (1 if v._data.ndim == 0 else 0), v.dtype
        else:
            tier, d = 2, _scalar_dtype(v)
            if d is None:
                continue
        tiers[tier] = _promote(tiers[tier], d)
    return _combine(tiers[0], _combine(tiers[1], tiers[2]))


# Note [constant tensors]
# `y*0.999 + 0.001` in a loop makes a 0-d tensor for each Python float it meets. Such a
# tensor is never seen by the user and never written (nothing can reach it but the
# nodes that saved it), so one per (value, dtype, device) serves every op. Zero is left
# out: 0.0 == -0.0 as a key, but the sign of a zero shows in results (1 / -0.0).
_CONSTANTS: dict = {}


def _constant(value: float, like, device: str) -> Tensor:
    key = (value, type(like), like.dtype, device)   # the array type first: no cross-library dtype compare
    t = _CONSTANTS.get(key)
    if t is None:
        t = Tensor(namespace_of(like).asarray(value, dtype=like.dtype), _device=device)
        if value != 0.0 and value == value:          # not zero, not nan (nan never matches a key)
            if len(_CONSTANTS) >= 1024:
                _CONSTANTS.clear()
            _CONSTANTS[key] = t
    return t


def _promoted(cls, inputs):
    """Inputs as tensors of one dtype (over the op's ``promote`` positions)."""
    if len(inputs) == 2 and cls.promote is True:
        # the usual binary case first: x * y of one dtype, or x * 0.5 with a floating x
        a, b = inputs
        if type(a) is Tensor:
            arr = a._data
            if type(b) is Tensor:
                if arr.dtype == b._data.dtype and (not cls.floating or kind_of(arr.dtype) == "f"):
                    return [a, b]
            elif type(b) is float and kind_of(arr.dtype) == "f":
                return [a, _constant(b, arr, a.device)]
    which = range(len(inputs)) if cls.promote is True else cls.promote
    # Fast path: tensors of one dtype, plus plain numbers that do not raise its category.
    np_dt = None
    numbers = 0
    for i in which:
        v = inputs[i]
        tv = type(v)
        if tv is Tensor:
            d = v._data.dtype
            if np_dt is None:
                np_dt = d
            elif d != np_dt:
                break
        elif tv is float:
            numbers |= 2
        elif tv is int:
            numbers |= 1
        else:
            break
    else:
        kind = kind_of(np_dt) if np_dt is not None else None
        if kind == "f" or (kind == "i" and not numbers & 2 and not cls.floating) or \
                (kind == "b" and not numbers and not cls.floating):
            if not numbers:
                return list(inputs) if cls.promote is True else _to_tensors(inputs)
            first = next(inputs[i] for i in which if type(inputs[i]) is Tensor)
            xp = namespace_of(first._data)
            out = list(inputs)
            for i in which:
                v = inputs[i]
                if type(v) is not Tensor:
                    out[i] = Tensor(xp.asarray(v, dtype=np_dt), _device=first.device)
            return out if cls.promote is True else _to_tensors(out)
    return _promote_slow(cls, inputs, which)


def _promote_slow(cls, inputs, which):
    dt = result_dtype([inputs[i] for i in which])
    if dt is None:
        return _to_tensors(inputs)
    if cls.floating and not dt.is_floating:
        dt = backend.get_default_dtype()
    device = next((v.device for v in inputs if isinstance(v, Tensor)), backend.get_default_device())
    out = list(inputs)
    for i in which:
        v = inputs[i]
        if isinstance(v, Tensor):
            if v.dtype is not dt:
                out[i] = to_op(v, dtype=dt)
        elif _scalar_dtype(v) is not None:
            out[i] = Tensor(backend.asarray(v, dt, device), _device=device)
    return _to_tensors(out)


def _to_tensors(inputs):
    like = None
    for v in inputs:
        if isinstance(v, Tensor):
            if like is None or (v.dtype.is_floating and not like.dtype.is_floating):
                like = v
    out = []
    for v in inputs:
        out.append(v if isinstance(v, Tensor) else as_tensor(v, like=like))
    return out


def _fast_pair(cls, a, b):
    """[a, b] as tensors of one dtype for the usual binary case (x * y of one dtype, x * 0.5 with
    a floating x), or None to go the general way."""
    if type(a) is Tensor:
        arr = a._data
        if type(b) is Tensor:
            if arr.dtype == b._data.dtype and b.device == a.device and (
                    not cls.floating or kind_of(arr.dtype) == "f"):
                return [a, b]
        elif type(b) is float and kind_of(arr.dtype) == "f":
            return [a, _constant(b, arr, a.device)]
    return None


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
        return _apply(cls, inputs, params)
    finally:
        if gc_on:
            _gc_enable()


def _apply(cls, inputs, params) -> Tensor:
    tensors = None
    if cls.promote is True and len(inputs) == 2:
        tensors = _fast_pair(cls, inputs[0], inputs[1])
    if tensors is None:
        tensors = _promoted(cls, inputs) if cls.promote else _to_tensors(inputs)
        device = tensors[0].device if tensors else backend.get_default_device()
        for t in tensors:
            if t.device != device:
                raise DeviceError(f"{cls.op_name}: tensors on different devices ({device} and {t.device}); "
                                  "move them to one device with .to(\"cpu\") or .to(\"cuda\")")
    else:
        device = tensors[0].device
    for t in tensors:
        if t._base is not None and t._base_gen != t._base._gen:
            _refresh_view(t)
    ctx = current()
    node = cls.__new__(cls)
    diff = cls.differentiable
    record = False
    grad_on = ctx.grad_enabled
    if grad_on and not cls.never_differentiable:
        for i, t in enumerate(tensors):
            if t._requires_grad and (diff is None or i in diff):
                record = True
                break
    node._record = record
    node.inputs = tensors
    if record:      # before forward, so that forward saves only what the needed gradients use
        if len(tensors) == 2 and diff is None:
            a, b = tensors
            node.next_edges = (a._gradient_edge() if a._requires_grad else None,
                               b._gradient_edge() if b._requires_grad else None)
        else:
            node.next_edges = tuple(
                t._gradient_edge() if t._requires_grad and (diff is None or i in diff) else None
                for i, t in enumerate(tensors))
    if len(tensors) == 2:
        arrays = (tensors[0]._data, tensors[1]._data)
    elif len(tensors) == 1:
        arrays = (tensors[0]._data,)
    else:
        arrays = [t._data for t in tensors]
    try:
        if ctx.ieee_depth:        # inside a Session run or a backward: IEEE results already set
            out_arr = node.forward(*arrays, **params)
        else:
            token = backend.fp_errors_off()
            try:
                out_arr = node.forward(*arrays, **params)
            finally:
                backend.fp_errors_restore(token)
    except DSLError:
        raise
    except (ValueError, IndexError, TypeError) as e:
        raise _translate(cls, tensors, e) from None
    # a NumPy scalar becomes a 0-d array; only to() moves data to another device
    out = Tensor(out_arr) if cls.moves_device else new_tensor(out_arr, device)
    out_arr = out._data
    if cls.view and tensors and backend.may_share_memory(out_arr, tensors[0]._data):
        src = tensors[0]
        out._version = src._version
        out._base = src._base if src._base is not None else src
        # the steps that make this view from its base: replayed when the base gets a new
        # history (in-place op) and by in-place writes through indexing views (CopySlices)
        out._view_chain = (() if src._base is None else src._view_chain) + ((cls, params),)
        out._base_gen = out._base._gen
    node.inputs = None
    if record:
        node.seq_nr = next_seq_nr()
        node.pos = ctx.pos or caller_pos()
        edges = node.next_edges
        if None in edges:     # graph() shows the value of a scalar constant input (x * 0.5)
            if len(arrays) == 2:
                d0, d1 = arrays
                node._consts = (d0 if edges[0] is None and d0.ndim == 0 else None,
                                d1 if edges[1] is None and d1.ndim == 0 else None)
            else:
                node._consts = tuple(d if e is None and d.ndim == 0 else None for d, e in zip(arrays, edges))
        dt = out_arr.dtype
        if len(arrays) == 1:             # (the usual arities spelled out: this runs for every op)
            d0 = arrays[0]
            node.input_shapes = (d0.shape,)
            node.input_dtypes = None if d0.dtype == dt else (d0.dtype,)   # None: all the output's
        elif len(arrays) == 2:
            d0, d1 = arrays
            node.input_shapes = (d0.shape, d1.shape)
            node.input_dtypes = None if d0.dtype == dt and d1.dtype == dt else (d0.dtype, d1.dtype)
        else:
            node.input_shapes = tuple(d.shape for d in arrays)
            dts = tuple(d.dtype for d in arrays)
            node.input_dtypes = None if all(d == dt for d in dts) else dts
        node._out_ref = weakref.ref(out)                   # graph() shows outputs' values
        if out_arr.ndim == 0:
            node._out_scalar = out_arr
        if node.save_output:
            node._saved = (node._saved or ()) + (SavedOutput(out),)
        out.grad_fn = node
        out._requires_grad = True
    if ctx.anomaly is not None or not (record or ctx.in_pass or grad_on and not cls.never_differentiable):
        after_op(cls, tensors, out, node if record else None, grad_on)    # anomaly mode; why()
    return out


def _translate(cls, tensors, e):
    shapes = " and ".join(str(t.shape) for t in tensors)
    msg = str(e)
    if "broadcast" in msg:
        return ShapeError(f"{cls.op_name}: shapes {shapes} do not broadcast: compared from the right, "
                          "each pair of sizes must be equal or 1; reshape or unsqueeze one operand")
    if "shape" in msg or "align" in msg or "mismatch" in msg or "size" in msg:
        return ShapeError(f"{cls.op_name}: the shapes {shapes} do not fit ({msg}); "
                          "check the shapes with .shape, or reshape/transpose one operand")
    if isinstance(e, IndexError):
        from autodsl.errors import IndexError_  # noqa: PLC0415
        return IndexError_(f"{cls.op_name}: {msg}")
    from autodsl.errors import ValueError_  # noqa: PLC0415
    return ValueError_(f"{cls.op_name}: {msg}")


def inplace(fn, target: Tensor, *args, what: str = "in-place operation", ufunc: str | None = None) -> Tensor:
    """Run ``fn(target, *args)`` and write the result into ``target``'s storage.

    Follows PyTorch: refused on a leaf that requires grad (and its views) while
    grad mode is on; bumps the version counter; when recording, the target's
    history becomes the new node (its old value is kept for backward).
    ``ufunc`` ("add", "subtract", ...): the elementwise op ``fn`` is, so that an
    update that records nothing (``no_grad { w -= lr * w.grad }``) is computed
    straight into the storage instead of into a new array that is then copied.
    """
    if target._base is not None and target._base_gen != target._base._gen:
        _refresh_view(target)           # a view made before its base's last in-place op
    recording = grad_mode.is_grad_enabled() and target.dtype.is_floating and (
        target._requires_grad or any(isinstance(a, Tensor) and a._requires_grad for a in args))
    base = target._base
    if grad_mode.is_grad_enabled():
        for t in (target, base):
            if t is not None and t.grad_fn is None and t._requires_grad:
                who = names_of(target)          # "w += ..." with the user's name, not the placeholder x
                if who and what.startswith(("x ", "writing x[")):
                    what = what.replace("x", who[0], 1)
                raise AutogradError(
                    f"{what} on a leaf tensor that requires grad: autograd needs its value as it is. "
                    "Update parameters inside a no_grad block (no_grad { w -= lr * w.grad }), "
                    "or write y = y - ... to make a new tensor")
        if recording and base is not None and any(step[0].op_name != "getitem" for step in target._view_chain):
            raise AutogradError(
                f"{what} on a reshaped or transposed view of another tensor while recording gradients "
                "is not supported; write through an index of the tensor itself (x[i] = ...), or "
                "clone() the view first")
    if recording and base is not None:
        return _inplace_on_view(fn, target, base, args, what)
    if recording:
        out = fn(_snapshot(target), *args)
    else:
        if ufunc is not None and len(args) == 1 and current().anomaly is None and _write_ufunc(ufunc, target, args[0]):
            return target
        with grad_mode.no_grad():
            out = fn(target, *args)
    _write(target, out, what)
    if recording:
        _move_history(target, out.grad_fn)
    return target


def _refresh_view(t: Tensor) -> None:
    """Note [stale views]: an in-place op gave t's base a new history, so t's grad_fn is
    out of date; rebuild it by replaying the view's steps on the base (what PyTorch does
    lazily through the version counter). Only while recording: otherwise it is not needed."""
    if not grad_mode.is_grad_enabled():
        return
    base = t._base
    y = base
    for cls, params in t._view_chain:
        y = apply(cls, y, **params)
    t._base_gen = base._gen
    if y.grad_fn is not None:
        _move_history(t, y.grad_fn)


Tensor._refresh_view = _refresh_view


def _move_history(t: Tensor, node) -> None:
    """After an in-place op, t's history is the new node; a retain_grad() follows it."""
    old = t.grad_fn
    if t._retains_grad and old is not None and old._retained:
        old._retained = [r for r in old._retained if r is not t] or None
        if node._retained is None:
            node._retained = []
        node._retained.append(t)
    t.grad_fn = node
    t._requires_grad = True
    t._gen += 1


def _snapshot(t: Tensor) -> Tensor:
    """A copy of t's values that keeps t's place in the graph (its grad_fn or its leaf)."""
    old = Tensor(backend.copy(t._data), _device=t.device)
    old.grad_fn = t.grad_fn
    old._requires_grad = t._requires_grad
    if t.grad_fn is None and t._requires_grad:
        old._accumulate = t._accumulate_node()
    return old


def _inplace_on_view(fn, view: Tensor, base: Tensor, args, what: str) -> Tensor:
    """An in-place write through an indexing view, recorded as PyTorch's CopySlices does:
    the base's new history is "the old base with this slice replaced", and the view's
    history becomes the slice of that new base."""
    from autodsl.ops.movement import _Raw, getitem, index_put  # noqa: PLC0415
    chain = [params["key"] for _, params in view._view_chain]
    out = fn(_snapshot(view), *args)
    old_base = _snapshot(base)
    outer = [old_base]
    for key in chain[:-1]:
        outer.append(getitem(outer[-1], _Raw(key)))
    inner = out
    for key, holder in zip(reversed(chain), reversed(outer)):
        inner = index_put(holder, _Raw(key), inner)
    _write(view, out, what)
    _move_history(base, inner.grad_fn)
    _refresh_view(view)
    return view


def _write_ufunc(name: str, target: Tensor, other) -> bool:
    """``target <name>= other`` in place through the backend when it can (see backend.ufunc_inplace);
    the same bookkeeping as ``_write``: undo record, version, where the write happened."""
    if type(other) is Tensor:
        if other.device != target.device or other._base is not None and other._base_gen != other._base._gen:
            return False
        value = other._data
    else:
        value = other
    record_values(target)
    if current().ieee_depth:
        done = backend.ufunc_inplace(name, target._data, value)
    else:
        with ieee():
            done = backend.ufunc_inplace(name, target._data, value)
    if done:
        target._version[0] += 1
        note_write(target)
    return done


def _write(target: Tensor, out: Tensor, what: str) -> None:
    if out.dtype is not target.dtype and out.dtype.is_floating and not target.dtype.is_floating:
        raise DTypeError(f"{what}: the result is {out.dtype.name} but the tensor written into is "
                         f"{target.dtype.name}; make the tensor floating (dtype=float64) first")
    if out.shape != target.shape:
        try:
            ok = backend.broadcast_shapes(out.shape, target.shape) == target.shape
        except ValueError:
            ok = False
        if not ok:
            raise ShapeError(f"{what}: the result has shape {out.shape}, which does not fit the tensor "
                             f"written into (shape {target.shape})")
    record_values(target)
    src = out._data
    if src.dtype != target._data.dtype:      # e.g. int64 into float64: the standard casts explicitly
        src = namespace_of(src).astype(src, target._data.dtype)
    try:
        target._data[...] = src
    except ValueError as e:
        raise AutogradError(f"{what}: this tensor cannot be written into ({e}); "
                            "an expanded tensor shares memory between elements, clone() it first") from None
    target._version[0] += 1
    note_write(target)              # where: version errors name the line of the write


# -- helpers that the engine and several ops use ---------------------------------------------

def _sum_to_axes(shape, target):
    lead = len(shape) - len(target)
    axes = list(range(lead))
    for i, n in enumerate(target):
        if n == 1 and shape[lead + i] != 1:
            axes.append(lead + i)
    return tuple(axes), lead


@defop("sum_to", node_name="SumBackward", public=False)
class SumTo(Op):
    """Reduce a broadcast gradient back to ``shape`` (the inverse of expand)."""

    def forward(self, a, shape):
        self.shape_in = a.shape
        if len(shape) > a.ndim:
            raise ValueError(f"cannot sum shape {a.shape} to {shape}")
        axes, lead = _sum_to_axes(a.shape, shape)
        for i, n in enumerate(shape):
            if n != 1 and a.shape[lead + i] != n:
                raise ValueError(f"cannot sum shape {a.shape} to {shape}")
        xp = namespace_of(a)
        out = xp.sum(a, axis=axes, keepdims=True) if axes else a
        return xp.reshape(out, shape)

    rule = "grad summed back to a's shape"

    def backward(self, g):
        from autodsl.ops.movement import expand  # noqa: PLC0415
        return (expand(g, self.shape_in),)


def sum_to(x: Tensor, shape) -> Tensor:
    """Sum ``x`` over broadcast dimensions so that it has ``shape``."""
    shape = tuple(shape)
    if x.shape == shape:
        return x
    return apply(SumTo, x, shape=shape)


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
