"""Value checks that wait for the values: an op's test of its inputs' values (a class index in
range, anomaly mode's nan test) on a device whose values are not on the host.

On NumPy an op tests its inputs at once and raises there. Reading a value is a host sync on
"cuda" (the CPU waits for the GPU) and a computation of the graph on a lazy device ("dask"), so
there an op computes the test as a 0-d bool array, true when the input is bad, and leaves it
here with the function that raises its error (``check``). The pending tests are read together
at the next host read (``settle``: ``.item()``, ``.tolist()``, ``.numpy()``, printing a tensor,
a lazy device's ``compute``), in one transfer per namespace; the first failed one raises its
op's error at the op's source position, with "(found when the values were computed)".

A failed check also takes back every ``.grad`` that a backward changed after the check was
made (as if the op had raised when it ran, before that backward), so that an error leaves the
gradients as they were; parameters an optimizer updated meanwhile are not taken back.

The pending checks live on the run context (``ctx.deferred``), so a Session has its own.
Anomaly mode's "warn" checks warn at the read instead of raising.
"""
from __future__ import annotations

import linecache

import autodsl.backend as backend
from autodsl.context import current
from autodsl.errors import DSLError
from autodsl.source import caller_pos

__all__ = ["check", "settle", "flags", "note_grads", "pending", "LATER"]

# at most this many checks wait: the next one reads them all (one transfer per namespace), so a
# loop that never reads a value does not keep every step's tests alive
_MAX_PENDING = 256
_MAX_UNDO = 4096        # .grad changes kept to take back (each may hold a gradient's copy)

LATER = " (found when the values were computed)"


class _Check:
    __slots__ = ("flag", "fail", "pos", "mark")

    def __init__(self, flag, fail, pos, mark):
        self.flag = flag        # 0-d bool array: true when the op's input was bad
        self.fail = fail        # raises the op's error (or warns); may read values
        self.pos = pos          # where the op was written
        self.mark = mark        # how many .grad changes were recorded before this check


class _Pending:
    """The checks of one run context not read yet, and the .grad changes made since the first."""

    __slots__ = ("checks", "undo", "seen")

    def __init__(self):
        self.checks: list[_Check] = []
        self.undo: list[tuple] = []     # (tensor, its .grad before, a copy of that .grad's values or None)
        self.seen: set = set()          # ids of the tensors in undo since the last check was made

    def note_grads(self, tensors) -> None:
        """Before a backward changes the ``.grad`` of ``tensors``: what takes the change back. Only
        a tensor's first change after the last check is kept (taking back to a check needs no
        more), so a loop's steps keep one entry per parameter each, and none for a .grad that
        was none (zero_grad's after the backward of the same step is a second change)."""
        seen = self.seen
        for t in tensors:
            if id(t) in seen:
                continue
            seen.add(id(t))
            old = t._grad
            saved = None
            if old is not None and backend.writeable(old._data):     # it may be added to in place
                saved = backend.copy(old._data)
            self.undo.append((t, old, saved))


def pending(ctx=None):
    """The run context's pending checks (a ``_Pending``), or None when none waits."""
    return (ctx or current()).deferred


def note_grads(tensors) -> None:
    """Called by a backward before it changes ``.grad``s while checks wait (see the module doc)."""
    p = current().deferred
    if p is not None:
        p.note_grads(tensors)


def check(flag, fail, pos=None) -> None:
    """Leave a value test of an op until its values are read (the module doc).

    ``flag``: a 0-d bool array on the op's device, true when the op's input was bad; ``fail()``:
    raises the op's DSLError (it may read values: it runs only when the test failed); ``pos``:
    the op's source position (default: the expression being evaluated, or the Python caller).
    """
    ctx = current()
    p = ctx.deferred
    if p is None:
        p = ctx.deferred = _Pending()
    if pos is None:
        pos = ctx.pos if ctx.pos is not None else caller_pos()
    p.checks.append(_Check(flag, fail, pos, len(p.undo)))
    p.seen = set()
    if len(p.checks) >= _MAX_PENDING or len(p.undo) >= _MAX_UNDO:
        settle()


def _read_flags(flags: list) -> list:
    """The host bool of each 0-d flag: one transfer per namespace (flags stacked)."""
    groups: dict[int, list] = {}
    for i, f in enumerate(flags):
        groups.setdefault(id(backend.namespace_of(f)), []).append(i)
    out = [False] * len(flags)
    for idx in groups.values():
        xp = backend.namespace_of(flags[idx[0]])
        host = backend.to_host(xp.stack([xp.reshape(flags[i], ()) for i in idx]))
        for i, v in zip(idx, host.tolist()):
            out[i] = bool(v)
    return out


def _position(pos) -> dict:
    """``pos`` (a SourcePos or ``(file, line, column, text)``) as DSLError.with_position's fields."""
    file, line, column = pos[0], pos[1], pos[2]
    source = getattr(pos, "_source", None)
    if source is not None:
        text = source.line_text(line)
    else:
        text = linecache.getline(file, line) if file and line else None
    # a language position knows where its expression ends: the caret run under the whole op,
    # as the cpu's immediate error shows it
    end = getattr(pos, "_end", None) if getattr(pos, "_start", None) == column else None
    if getattr(pos, "_prefix", None) is not None:
        end = None
    return {"file": file, "line": line, "column": column, "source_line": text or None,
            "end_column": end}


def flags(ctx=None) -> list:
    """The 0-d bool arrays of the pending checks, in order ([] when none waits): a lazy device's
    ``compute`` computes them in the same pass as its results and gives their values to
    ``settle(values=...)``."""
    p = (ctx or current()).deferred
    return [] if p is None else [c.flag for c in p.checks]


def settle(ctx=None, values=None) -> None:
    """Read the pending checks of the run context and raise the first failed one's error (the
    module doc); nothing when none waits. ``values``: the flags' host values, when the caller
    computed ``flags()`` itself (in one pass with its own results); default: read here."""
    ctx = ctx or current()
    p = ctx.deferred
    if p is None:
        return
    ctx.deferred = None         # first: a check's fail() reads values, which must not settle again
    if values is None:
        values = _read_flags([c.flag for c in p.checks])
    for c, bad in zip(p.checks, values):
        if not bad:
            continue
        try:
            c.fail()
        except DSLError as e:
            _take_back(p.undo[c.mark:])
            if not e.message.endswith(LATER):
                e.message += LATER
                e.args = (e.message,)
            if c.pos is not None and c.pos[1] is not None:
                e._python = True            # the op's position replaces the reading caller's line
                e.with_position(**_position(c.pos))
            raise


def _take_back(undo: list) -> None:
    for t, old, saved in reversed(undo):
        if saved is not None:
            old._data[...] = saved
            old._version[0] += 1
        t._grad = old
