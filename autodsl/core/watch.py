"""What the gradient debugging tools (``why``, version errors) need recorded, recorded cheaply.

Three records, none of them on the hot path of a recorded op:

* The last backward (``note_backward``, once per backward or ``grad()`` call, from
  the engine): its root nodes (weakly), seed gradients, targets, whether it
  accumulates into ``.grad``, whether its graph had already been freed, where it
  was called, and its trace recorder when one ran. ``why(x)`` starts from it.
* Where a value left the graph (``after_op``, from ``ops.registry.apply``
  only for ops that record nothing although an input requires grad: inside
  ``no_grad``, comparisons, integer casts). Kept per source node (weakly), one
  entry per site (so a loop does not grow it) with a weak reference to its
  latest result.
* Where each in-place write happened (``note_write``, from the in-place path):
  the version counter, a list ``[n]``, becomes ``[n, (n, pos)]``. Version
  errors then name the line of the write.

Variable names come from ``autodsl.names``.
"""
from __future__ import annotations

import itertools
import sys
import weakref

try:
    import cython
except ImportError:
    from autodsl._pure import cython
from autodsl.context import current, current_or_none
from autodsl.core import anomaly as _anomaly
from autodsl.core.node import write_record  # noqa: F401 (re-exported)
from autodsl.source import POSITIONS, SOURCE_POS, caller_pos, python_frames

__all__ = ["LastBackward", "last_backward", "note_backward", "after_op", "note_write", "write_record", "known_pos",
           "breaks_from", "all_breaks", "made_by", "follow_break", "Break", "quiet"]

_serial = itertools.count(1)
_getframe = sys._getframe


def known_pos():
    """Compiled only: the position of the innermost Python frame's place when something was
    made or written there before, else None (then ``caller_pos`` walks). Compiled code pushes
    no frames, so that frame is usually the user's own; source.py's table holds only users'
    frames, so one of autodsl's misses (and so does this function's own frame, run as Python)."""
    f = _getframe(0)
    hit = POSITIONS.get((id(f.f_code), f.f_lasti))
    return None if hit is None else hit[1]




# -- the last backward --------------------------------------------------------------------------

class LastBackward:
    """The facts of one backward (or ``grad()``) call, kept until the next one."""

    __slots__ = ("serial", "_roots", "seeds", "targets", "accumulate", "retain_graph",
                 "create_graph", "freed_before", "pos", "recorder", "stepping")

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
        pos = current().pos
        if pos is None and cython.compiled:
            pos = known_pos()
        self.pos = pos if pos is not None else caller_pos(1 + _BACKWARD_FRAMES)
        self.recorder = task.recorder
        # a pass run by step() (core/stepper.py): "paused" or "aborted" until it finishes
        self.stepping = None

    @property
    def roots(self) -> list:
        """The root nodes that are still alive (None entries dropped)."""
        return [n for n in (r() for r in self._roots) if n is not None]

    @property
    def roots_alive(self) -> bool:
        return all(r() is not None for r in self._roots)


# The last backward is the run context's ``last_backward``: a Session has its own, so that
# why() in one session never explains another session's backward.

def note_backward(task) -> None:
    """Called by the engine as each backward or grad() pass starts (not while ``quiet``)."""
    ctx = current()
    if not ctx.quiet:
        ctx.last_backward = LastBackward(task)


# The frames from LastBackward.__init__ to the engine's: the walk to the user's frame starts above them.
_BACKWARD_FRAMES = python_frames(LastBackward.__init__, note_backward)


def last_backward() -> LastBackward | None:
    """The record of the most recent backward or grad() call (in this run context), or None."""
    return current().last_backward


class quiet:
    """While open, backward passes are not recorded as "the last backward" (why's re-runs)."""

    __slots__ = ("_ctx",)

    def __enter__(self):
        ctx = self._ctx = current()
        ctx.quiet += 1
        return self

    def __exit__(self, *exc):
        self._ctx.quiet -= 1
        return False


# -- where values left the graph -------------------------------------------------------------------

class Break:
    """A value computed from tensors that require grad, without their gradient.

    ``kind``: "no_grad" (inside a no_grad block), "comparison" (a comparison or
    logical op: boolean, never differentiable) or "integer_cast" (``.to(int64)``
    and the like); "update" for a no_grad op whose result was written back into
    its own input (``w -= lr * w.grad``: not a loss of gradient). ``op``: the op
    name. ``pos``: where. ``sources``: weak references to the graph nodes of the
    inputs that required grad; ``out``: to the latest result made at this site;
    ``arrays``: weak references to the arrays of its results that are still alive (a
    graph may hold them as constants, which a replay cannot recompute: core/replay.py).
    """

    __slots__ = ("kind", "op", "pos", "sources", "out", "serial", "arrays")

    def __init__(self, kind, op, pos, sources, out):
        self.kind = kind
        self.op = op
        self.pos = pos
        self.sources = sources
        self.out = out
        self.serial = next(_serial)
        self.arrays = []

    def source_nodes(self) -> list:
        return [n for n in (r() for r in self.sources) if n is not None]

    def note_array(self, arr) -> None:
        """Remember (weakly) a result's array; the dead ones go when the list grows."""
        arrays = self.arrays
        if len(arrays) >= 8:
            arrays[:] = [r for r in arrays if r() is not None]
        try:
            arrays.append(weakref.ref(arr))
        except TypeError:       # pragma: no cover - an array type without weak references
            pass

    def out_arrays(self) -> list:
        """The arrays of this site's results that are still alive."""
        return [a for a in (r() for r in self.arrays) if a is not None]

    def __repr__(self) -> str:
        return f"Break({self.kind!r}, {self.op!r}, {self.pos!r})"


# The run context's ``breaks``: id(source node) -> (weak reference to it, {(kind, pos): Break}).
# A plain dict by id with a weakref callback, not a WeakKeyDictionary: its lookups cost 50 ns
# instead of microseconds.

def _sites_of(node, create: bool):
    by_source = current().breaks
    key = id(node)
    entry = by_source.get(key)
    if entry is not None and entry[0]() is node:
        return entry[1]
    if not create:
        return None

    def gone(ref, key=key, by_source=by_source):
        e = by_source.get(key)
        if e is not None and e[0] is ref:
            del by_source[key]

    sites = {}
    by_source[key] = (weakref.ref(node, gone), sites)
    return sites


def after_op(cls, tensors, out, node, grad_on: bool, frames: int = 1) -> None:
    """The one call from ``ops.registry.apply`` after an op: made only while anomaly mode is on,
    or for an op that recorded no node because grad mode is off or the op is never
    differentiable. ``node``: the op's node when it recorded one, else None. ``frames``: how
    many frames above its caller the user's may begin (``caller_pos``'s ``start``, less this
    function's own frame, which it pushes only when it runs as Python).

    For the latter, when an input requires grad, remember where its value left the
    graph (a Break): one per site and source, so running a line again only updates it.
    """
    if node is None and not current().in_pass:
        nodes = None
        for t in tensors:
            if t._requires_grad:
                src = t.grad_fn if t.grad_fn is not None else t._accumulate_node()
                if nodes is None:
                    nodes = [src]
                else:
                    nodes.append(src)
        if nodes is not None:
            if cls.never_differentiable:
                kind = "comparison"
            elif cls.op_name == "to" and not out.dtype.is_floating:
                kind = "integer_cast"
            else:
                kind = "no_grad"
            key = (kind, SOURCE_POS.get() or caller_pos(frames + _AFTER_OP_FRAMES))
            brk = _sites_of(nodes[0], True).get(key) if len(nodes) == 1 else None
            if brk is not None:         # this site again (a loop): the latest result, the latest time
                brk.out = weakref.ref(out)
                brk.serial = next(_serial)
            else:
                brk = Break(kind, cls.op_name, key[1], [weakref.ref(n) for n in nodes], weakref.ref(out))
                for src in nodes:
                    _sites_of(src, True)[key] = brk
            brk.note_array(out._data)
            _note_left(current().left, out, brk)
    if current().anomaly is not None:
        _anomaly.check_forward(cls.op_name, tensors, out, node)


_AFTER_OP_FRAMES = python_frames(after_op)     # after_op's own frame, when it runs as Python


# The run context's ``left``: id(tensor) -> (weak reference to it, Break), for every tensor alive
# that holds a value that left the graph at a Break, or was computed from one without a graph
# (by id with a weakref callback, as ``breaks``).

def _note_left(left: dict, out, brk) -> None:
    key = id(out)

    def gone(ref, key=key, left=left):
        e = left.get(key)
        if e is not None and e[0] is ref:
            del left[key]

    try:
        left[key] = (weakref.ref(out, gone), brk)
    except TypeError:       # pragma: no cover - a tensor type without weak references
        pass


def follow_break(ctx, tensors, out) -> None:
    """An op that recorded no node took a value that left the graph (``x * 2.0`` inside a no_grad
    block, then ``+ 1.0`` on its result): its result left at the same Break, so that why() on it
    names that site instead of advising requires_grad on leaves that have it. ``ops.registry``
    calls this only while ``ctx.left`` holds something."""
    left = ctx.left
    e = left.get(id(out))
    if e is not None and e[0]() is out:
        return          # (after_op placed it at a Break of its own: the nearer explanation)
    for t in tensors:
        e = left.get(id(t))
        if e is not None and e[0]() is t and e[1].kind != "update":
            _note_left(left, out, e[1])
            e[1].note_array(out._data)
            return


def breaks_from(node) -> list:
    """The Breaks whose inputs include ``node``'s tensor, oldest first (updates left out)."""
    sites = _sites_of(node, False)
    return [] if not sites else sorted((b for b in sites.values() if b.kind != "update"),
                                       key=lambda b: b.serial)


def all_breaks() -> list:
    """Every live Break (one per site and source), oldest first (updates left out)."""
    seen = {}
    for _, sites in list(current().breaks.values()):
        for b in sites.values():
            if b.kind != "update":
                seen[id(b)] = b
    return sorted(seen.values(), key=lambda b: b.serial)


def made_by(tensor) -> Break | None:
    """The Break ``tensor`` came out of (a result of its untracked op, or of ops on such a
    result that recorded nothing either: ``follow_break``), or None."""
    e = current().left.get(id(tensor))
    return e[1] if e is not None and e[0]() is tensor and e[1].kind != "update" else None


# -- in-place writes ---------------------------------------------------------------------------------

def note_write(target, pos=None, frames: int = 0) -> None:
    """Called after an in-place write bumped ``target``'s version counter: remember where
    (``pos``: where the write was written, when the caller knows; else the running position,
    or the user's frame, whose walk may skip ``frames`` Python frames, this one's included,
    when the caller knows that many are autodsl's)."""
    ctx = current_or_none() or current()
    if pos is None:
        pos = ctx.pos
        if pos is None and cython.compiled:
            pos = known_pos()
        if pos is None:
            pos = caller_pos(1 + frames)
    counter = target._version
    rec = (counter[0], pos)
    if len(counter) == 1:
        counter.append(rec)
    else:
        counter[1] = rec
    if ctx.breaks and pos is not None:
        # `w -= lr * w.grad` inside no_grad computes w - ... without a graph and writes it back
        # into w: that is an update of w, not a use of w that lost its gradient.
        node = target.grad_fn if target.grad_fn is not None else target._accumulate
        if node is not None:
            sites = _sites_of(node, False)
            if sites:
                brk = sites.get(("no_grad", pos))
                if brk is not None:
                    brk.kind = "update"



