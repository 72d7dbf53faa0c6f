"""In-place writes: ``x += y``, ``x[i] = v`` and the in-place methods, as PyTorch does them.

Refused on a leaf that requires grad while recording; the version counter is
bumped on every write; when recording, the target's history becomes the new
node, and a write through an indexing view rewrites the base's history
(CopySlices), also through reshape, transpose and permute views (Note [writes
through views]). Views made before their base's last in-place op rebuild their
history on use (Note [stale views]).
"""
from __future__ import annotations

from autodsl import backend
from autodsl.backend import namespace_of
from autodsl.context import current, current_or_none
from autodsl.core import grad_mode
from autodsl.core.journal import record_attrs, record_values
from autodsl.core.quiet import ieee
from autodsl.core.tensor import Tensor
from autodsl.core.watch import note_write
from autodsl.errors import AutogradError, DTypeError, ShapeError
from autodsl.names import names_of
from autodsl.source import python_frames
from autodsl.ops.movement import _Raw, expand, index_put, permute, reshape, transpose
from autodsl.ops.promotion import category
from autodsl.ops.registry import apply

__all__ = ["inplace", "refresh_view"]


def inplace(fn, target: Tensor, *args, what: str = "in-place operation", ufunc: str | None = None,
            frames: int = 0) -> Tensor:
    """Run ``fn(target, *args)`` and write the result into ``target``'s storage.

    Follows PyTorch: refused on a leaf that requires grad (and its views) while
    grad mode is on; bumps the version counter; when recording, the target's
    history becomes the new node (its old value is kept for backward).
    ``ufunc`` ("add", "subtract", ...): the elementwise op ``fn`` is, so that an
    update that records nothing (``no_grad { w -= lr * w.grad }``) is computed
    straight into the storage instead of into a new array that is then copied.
    ``frames``: how many Python frames of autodsl's are between the user's and this call
    (the walk for where the write happened starts above them: ``note_write``).
    """
    if target._base is not None and target._base_gen != target._base._gen:
        refresh_view(target)           # a view made before its base's last in-place op
    ctx = current_or_none() or current()
    grad_on = ctx.grad_enabled
    recording = grad_on and target.dtype.is_floating and (
        target._requires_grad or any(isinstance(a, Tensor) and a._requires_grad for a in args))
    base = target._base
    if grad_on:
        for t in (target, base):
            if t is not None and t.grad_fn is None and t._requires_grad:
                who = names_of(target)          # "w += ..." with the user's name, not the placeholder x
                if who and what.startswith(("x ", "writing x[")):
                    what = what.replace("x", who[0], 1)
                raise AutogradError(
                    f"{what} on a leaf tensor that requires grad: autograd needs its value as it is. "
                    "Update parameters inside a no_grad block (no_grad { w -= lr * w.grad }), "
                    "or write y = y - ... to make a new tensor")
    if recording and ctx.capture is not None:
        ctx.capture.fail(f"it writes in place while recording gradients ({what})")
    if recording and base is not None:
        return _inplace_on_view(fn, target, base, args, what)
    if recording:
        out = fn(_snapshot(target), *args)
    else:
        if ufunc is not None and len(args) == 1 and ctx.anomaly is None and _write_ufunc(ufunc, target, args[0], ctx, frames):
            return target
        with grad_mode.no_grad():
            out = fn(target, *args)
    _write(target, out, what)
    if recording:
        _move_history(target, out.grad_fn)
    return target


def refresh_view(t: Tensor) -> None:
    """Note [stale views]: an in-place op gave t's base a new history, so t's grad_fn is
    out of date; rebuild it by replaying the view's steps on the base (what PyTorch does
    lazily through the version counter). Only while recording: otherwise it is not needed."""
    if not grad_mode.is_grad_enabled():
        return
    base = t._base
    y = base
    for cls, params in t._view_chain:
        y = apply(cls, y, **params)
    record_attrs(t, "_base_gen")
    t._base_gen = base._gen
    if y.grad_fn is not None:
        _move_history(t, y.grad_fn)



def _move_history(t: Tensor, node) -> None:
    """After an in-place op, t's history is the new node; a retain_grad() follows it."""
    old = t.grad_fn
    log = current().journal
    if log is not None:     # an undone write takes its history back too (_gen only grows)
        record_attrs(t, "grad_fn", "_requires_grad", log=log)
        if old is not None:
            record_attrs(old, "_retained", log=log)
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
    """An in-place write through a view, recorded as PyTorch's CopySlices does: the base's
    new history is "the old base with the view's part replaced by the result", and the view's
    history becomes that part of the new base (Note [writes through views])."""
    steps = view._view_chain
    out = fn(_snapshot(view), *args)
    old_base = _snapshot(base)
    outer = [old_base]          # the old base, and the view's steps replayed on it
    for cls, params in steps[:-1]:
        outer.append(apply(cls, outer[-1], **params))
    inner = out
    for i in range(len(steps) - 1, -1, -1):
        cls, params = steps[i]
        inner = _put_back(cls, params, outer[i], inner, view.shape if i == len(steps) - 1 else outer[i + 1].shape)
    _write(view, out, what)
    _move_history(base, inner.grad_fn)
    refresh_view(view)
    return view


# Note [writes through views]
# PyTorch records a write into a view of a base that needs gradients as CopySlices on the base:
# the view's region of the base, found by as_strided, is replaced by the result. The Array API
# has no as_strided, so the region is found by replaying the view's steps (its _view_chain) on
# the old base, and the result is put back step by step, innermost first, each by the step's
# inverse: an index by index_put into the tensor it was taken from, a reshape, transpose or
# permute (which cover all of their input, so nothing of it is left over) by the reshape back,
# the same transpose, the inverse permutation. The gradients are PyTorch's; the nodes are named
# for these ops (the base's last one, the view's replayed step) where torch shows CopySlices
# and AsStridedBackward0. An expanded view (elements sharing memory) cannot be written, as in torch.

def _put_back(cls, params, holder: Tensor, inner: Tensor, shape) -> Tensor:
    """``holder`` with the part one view step ``cls(holder, **params)`` (of shape ``shape``)
    reads replaced by ``inner``: the inverse of that step, recorded."""
    name = cls.op_name
    if name == "getitem":
        return index_put(holder, _Raw(params["key"]), inner)
    if tuple(inner.shape) != tuple(shape):      # a broadcast value (v += 1.0 via copy_ of a row)
        inner = expand(inner, *shape)
    if name == "reshape":
        return reshape(inner, holder.shape)
    if name == "transpose":
        return transpose(inner, params["dim0"], params["dim1"])
    if name == "permute":
        dims = [d % len(params["dims"]) for d in params["dims"]]
        return permute(inner, [dims.index(i) for i in range(len(dims))])
    if name == "expand" and tuple(shape) == tuple(holder.shape):     # x.expand(x.shape): a plain view
        return inner
    raise AutogradError("this in-place write goes into an expanded tensor, whose elements share "
                        "memory, so it has no single place to go; clone() the tensor first")


def _write_ufunc(name: str, target: Tensor, other, ctx, frames: int) -> bool:
    """``target <name>= other`` in place through the backend when it can (see backend.ufunc_inplace);
    the same bookkeeping as ``_write``: undo record, version, where the write happened. ``ctx``:
    the run context; ``frames``: ``inplace``'s."""
    if type(other) is Tensor:
        if other.device != target.device or other._base is not None and other._base_gen != other._base._gen:
            return False
        value = other._data
    else:
        value = other
    if ctx.journal is not None:     # (a Session's undo journal: the old values, before the write)
        record_values(target)
    token = None if ctx.ieee_depth else backend.fp_errors_off()
    try:
        done = backend.ufunc_inplace(name, target._data, value)
    finally:
        if token is not None:
            backend.fp_errors_restore(token)
    if done:
        target._version[0] += 1
        note_write(target, None, _WRITE_FRAMES + frames)
        if ctx.capture is not None:      # compile() is recording (core/capture.py)
            ctx.capture.write_ufunc(name, target, other)
    return done


# The frames from note_write to the caller of inplace(): the walk to the user's frame for where
# a write happened starts above them.
_WRITE_FRAMES = python_frames(note_write, _write_ufunc, inplace)


def _write(target: Tensor, out: Tensor, what: str) -> None:
    # torch's rule for a result written in place: never into a lower kind (bool < integer <
    # floating): a float result into an integer tensor, an integer one into a bool tensor
    if out.dtype is not target.dtype and category(out.dtype) > category(target.dtype):
        raise DTypeError(f"{what}: the result is {out.dtype.name} but the tensor written into is "
                         f"{target.dtype.name}; convert the tensor first (x = x.to(dtype={out.dtype.name}))")
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
        with ieee():        # (1e300 into float32 is inf, as torch writes it)
            src = namespace_of(src).astype(src, target._data.dtype)
    if current().capture is not None:
        current().capture.write(target, src)
    try:
        if backend.is_lazy(target._data):
            # dask's own item assignment walks the whole graph built so far: an optimizer's
            # updates in a loop took quadratic time. A whole write is the new value itself.
            new = src if src.shape == target._data.shape else backend.broadcast_to(src, target.shape)
            backend.rebind(target._data, backend.grad_copy(new, target._data))
        else:
            target._data[...] = src
    except ValueError:
        raise AutogradError(f"{what}: this tensor cannot be written into: it is an expanded view, whose "
                            "elements share memory, or a constant the graph keeps read-only; clone() it "
                            "first") from None
    target._version[0] += 1
    note_write(target)              # where: version errors name the line of the write
    if backend.is_lazy(target._data):
        _after_lazy_write(target)


def _after_lazy_write(t: Tensor) -> None:
    """The views rebound after a write into t (Note [writes on a lazy device]); when the array
    written is that of a detach()/.data of a view (its _alias, core/tensor.py), the write goes
    on into that view's base too."""
    _rebind_views(t)
    holder = t._base if t._base is not None else t
    view = getattr(holder, "_alias", None)
    if view is not None and view._data is holder._data:
        _after_lazy_write(view)


def _rebind_views(target: Tensor) -> None:
    """Note [writes on a lazy device]: a dask array is immutable, so a write rebinds the written
    array to a new graph and nothing else sees it. A write into a view is put back into its
    base (the view's steps inverted, as for CopySlices), and every other live view of the base
    is made again from the new base: ``row = m[1]; row += 10`` updates ``m``, and ``m[1] = 0``
    updates ``row``. (A detach() shares the array object itself, so it sees the write already.)"""
    base = target._base
    with grad_mode.no_grad():
        if base is not None:
            steps = target._view_chain
            outer = [Tensor(base._data, _device=base.device)]
            for cls, params in steps[:-1]:
                outer.append(apply(cls, outer[-1], **params))
            inner = Tensor(target._data, _device=target.device)
            for i in range(len(steps) - 1, -1, -1):
                cls, params = steps[i]
                inner = _put_back(cls, params, outer[i], inner,
                                  target.shape if i == len(steps) - 1 else outer[i + 1].shape)
            if inner._data is not base._data:
                record_values(base)     # an undone write takes the base's values back too
                backend.rebind(base._data, inner._data)
        else:
            base = target
        for view in list(base._views or ()):
            if view is target or view._data is base._data:
                continue
            y = Tensor(base._data, _device=base.device)
            for cls, params in view._view_chain:
                y = apply(cls, y, **params)
            if y._data is not view._data:
                record_values(view)
                backend.rebind(view._data, y._data)
