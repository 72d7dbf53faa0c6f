"""What the gradient debugging tools (``why``, version errors) need recorded, recorded cheaply.

Three records, none of them on the hot path of a recorded op:

* The last backward (``note_backward``, once per backward or ``grad()`` call, from
  the engine): its root nodes (weakly), seed gradients, targets, whether it
  accumulates into ``.grad``, whether its graph had already been freed, where it
  was called, and its trace recorder when one ran. ``why(x)`` starts from it.
* Where a value left the graph (``note_untracked``, from ``ops.registry.apply``
  only for ops that record nothing although an input requires grad: inside
  ``no_grad``, comparisons, integer casts). Kept per source node, one entry per
  site (so a loop does not grow it), and per output tensor, both weakly.
* Where each in-place write happened (``note_write``, from the in-place path):
  the version counter, a list ``[n]``, becomes ``[n, (n, pos)]``. Version
  errors then name the line of the write.

``NAMES`` is set by a Session to a callable that returns its namespace, so that
errors raised below the language (a version error in backward) can name the
user's variable.
"""
from __future__ import annotations

import itertools
import weakref
from contextvars import ContextVar

from . import anomaly as _anomaly
from .node import SOURCE_POS, caller_pos

__all__ = ["NAMES", "LastBackward", "last_backward", "note_backward", "after_op", "note_untracked", "note_write",
           "write_record", "breaks_from", "made_by", "Break", "names_of", "quiet"]

NAMES: ContextVar = ContextVar("autodsl_tensor_names", default=None)

_serial = itertools.count(1)


def names_of(tensor=None, counter=None, data=None) -> list[str]:
    """The user's variable names for ``tensor`` (exactly that object first), then for
    tensors sharing its version ``counter`` (views, detached aliases), from ``NAMES``."""
    provider = NAMES.get()
    try:
        ns = provider() if provider is not None else _caller_namespace()
    except Exception:  # noqa: BLE001 - a name is a nicety
        return []
    exact, alias = [], []
    for k, v in list(ns.items()):
        if not isinstance(k, str) or k.startswith("_") or not hasattr(v, "_version"):
            continue
        if tensor is not None and v is tensor:
            exact.append(k)
        elif data is not None and getattr(v, "_data", None) is data:
            exact.append(k)
        elif counter is not None and v._version is counter:
            alias.append(k)
    return exact + alias


def _caller_namespace() -> dict:
    """The local variables of the first frame outside autodsl (the Python API user's code)."""
    import sys  # noqa: PLC0415
    from .node import _PACKAGE_DIR  # noqa: PLC0415
    f = sys._getframe(1)
    while f is not None and f.f_code.co_filename.startswith(_PACKAGE_DIR):
        f = f.f_back
    return {} if f is None else dict(f.f_locals)


# -- the last backward --------------------------------------------------------------------------

class LastBackward:
    """The facts of one backward (or ``grad()``) call, kept until the next one."""

    __slots__ = ("serial", "_roots", "seeds", "targets", "accumulate", "retain_graph",
                 "create_graph", "freed_before", "pos", "recorder")

    def __init__(self, task):
        self.serial = next(_serial)
        self._roots = [weakref.ref(node) for node, _ in task.seeds]
        # the seed values (host or device arrays), to re-run the pass for why(); never a graph
        self.seeds = [(weakref.ref(node), g._data, g.device) for node, g in task.seeds]
        t = task.targets
        self.targets = None if t is None else weakref.WeakSet(t)
        self.accumulate = task.accumulate
        self.retain_graph = task.retain_graph
        self.create_graph = task.create_graph
        # a root whose saved tensors an earlier backward freed: this pass fails
        self.freed_before = any(getattr(node, "_released", False) for node, _ in task.seeds)
        self.pos = SOURCE_POS.get() or caller_pos()
        self.recorder = task.recorder

    @property
    def roots(self) -> list:
        """The root nodes that are still alive (None entries dropped)."""
        return [n for n in (r() for r in self._roots) if n is not None]

    @property
    def roots_alive(self) -> bool:
        return all(r() is not None for r in self._roots)


_last: list = [None]
_quiet = [0]


def note_backward(task) -> None:
    """Called by the engine as each backward or grad() pass starts (not while ``quiet``)."""
    if not _quiet[0]:
        _last[0] = LastBackward(task)


def last_backward() -> LastBackward | None:
    """The record of the most recent backward or grad() call, or None."""
    return _last[0]


class quiet:
    """While open, backward passes are not recorded as "the last backward" (why's re-runs)."""

    def __enter__(self):
        _quiet[0] += 1
        return self

    def __exit__(self, *exc):
        _quiet[0] -= 1
        return False


# -- where values left the graph -------------------------------------------------------------------

class Break:
    """A value computed from tensors that require grad, without their gradient.

    ``kind``: "no_grad" (inside a no_grad block), "comparison" (a comparison or
    logical op: boolean, never differentiable) or "integer_cast" (``.to(int64)``
    and the like). ``op``: the op name. ``pos``: where. ``sources``: weak
    references to the graph nodes of the inputs that required grad.
    """

    __slots__ = ("kind", "op", "pos", "sources", "serial", "__weakref__")

    def __init__(self, kind, op, pos, sources):
        self.kind = kind
        self.op = op
        self.pos = pos
        self.sources = sources
        self.serial = next(_serial)

    def source_nodes(self) -> list:
        return [n for n in (r() for r in self.sources) if n is not None]

    def __repr__(self) -> str:
        return f"Break({self.kind!r}, {self.op!r}, {self.pos!r})"


_by_source: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()   # node -> {(kind, pos): Break}
_by_output: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()   # tensor -> Break


def after_op(cls, tensors, out, node, grad_on: bool) -> None:
    """The one call from ``ops.registry.apply`` after an op: made only while anomaly mode is on,
    or for an op that recorded no node because grad mode is off or the op is never
    differentiable. ``node``: the op's node when it recorded one, else None."""
    if node is None and (not grad_on or cls.never_differentiable):
        note_untracked(cls, tensors, out, grad_on)
    if _anomaly.ON[0]:
        _anomaly.check_forward(cls.op_name, tensors, out, node)


def note_untracked(cls, tensors, out, grad_on: bool) -> None:
    """Called by ``apply`` for an op that recorded no node (grad mode off, or an op that is
    never differentiable): remember it when an input requires grad."""
    srcs = None
    for t in tensors:
        if t._requires_grad:
            node = t.grad_fn if t.grad_fn is not None else t._accumulate_node()
            if srcs is None:
                srcs = [weakref.ref(node)]
            else:
                srcs.append(weakref.ref(node))
    if srcs is None:
        return
    if cls.never_differentiable:
        kind = "comparison"
    elif getattr(cls, "op_name", None) == "to" and out.dtype.is_floating is False:
        kind = "integer_cast"
    elif not grad_on:
        kind = "no_grad"
    else:       # pragma: no cover - apply() calls only in the cases above
        return
    pos = SOURCE_POS.get() or caller_pos()
    brk = Break(kind, getattr(cls, "op_name", cls.__name__), pos, srcs)
    key = (kind, pos)
    for ref in srcs:
        node = ref()
        sites = _by_source.get(node)
        if sites is None:
            _by_source[node] = sites = {}
        else:
            sites.pop(key, None)        # the most recent use of a site comes last
        sites[key] = brk
    _by_output[out] = brk


def breaks_from(node) -> list:
    """The Breaks whose inputs include ``node``'s tensor, oldest site first."""
    sites = _by_source.get(node)
    return [] if not sites else list(sites.values())


def all_breaks() -> list:
    """Every live Break (one per site and source), oldest first."""
    seen = {}
    for sites in list(_by_source.values()):
        for b in sites.values():
            seen[id(b)] = b
    return sorted(seen.values(), key=lambda b: b.serial)


def made_by(tensor) -> Break | None:
    """The Break that made ``tensor`` (it came out of an untracked op), or None."""
    try:
        return _by_output.get(tensor)
    except TypeError:
        return None


# -- in-place writes ---------------------------------------------------------------------------------

def note_write(target) -> None:
    """Called after an in-place write bumped ``target``'s version counter: remember where."""
    pos = SOURCE_POS.get() or caller_pos()
    counter = target._version
    rec = (counter[0], pos)
    if len(counter) == 1:
        counter.append(rec)
    else:
        counter[1] = rec
    if _by_source and pos is not None:
        # `w -= lr * w.grad` inside no_grad computes w - ... without a graph and writes it back
        # into w: that is an update of w, not a use of w that lost its gradient.
        node = target.grad_fn if target.grad_fn is not None else target._accumulate
        if node is not None:
            sites = _by_source.get(node)
            if sites:
                brk = sites.pop(("no_grad", pos), None)
                if brk is not None and not sites:
                    del _by_source[node]


def write_record(counter):
    """``(version after the write, pos)`` of the last recorded in-place write, or None."""
    return counter[1] if len(counter) > 1 else None
