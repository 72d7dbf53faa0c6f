"""An undo log for in-place changes, so an interrupted statement can be rolled back.

While a ``transaction()`` is open, every in-place write to a tensor's values
and every change of a ``.grad`` is recorded first; if the block ends with an
exception (Ctrl-C included), the changes are undone in reverse order. The open
log is the run context's ``journal``; outside a transaction recording costs one
context read.
"""
from __future__ import annotations

import contextlib
from autodsl.backend import copy as _copy
from autodsl.context import current

__all__ = ["transaction", "record_values", "record_grad"]

def record_values(t) -> None:
    """Call before writing into ``t``'s storage in place.

    Only the first write to each tensor object is saved. Undoing those first
    snapshots in reverse order restores overlapping views and detached aliases
    too: whatever a snapshot captured from an earlier write is overwritten
    again by the earlier object's own (older) snapshot.
    """
    log = current().journal
    if log is not None:
        key = ("values", id(t))     # the log holds t, so its id is not reused meanwhile
        if key not in log.seen:
            log.seen.add(key)
            log.append((t, "values", _copy(t._data), t._version[0]))


def record_grad(t) -> None:
    """Call before replacing ``t.grad`` (or adding into it in place)."""
    log = current().journal
    if log is not None:
        key = ("grad", id(t))
        if key not in log.seen:
            log.seen.add(key)
            g = t._grad
            log.append((t, "grad", g, None if g is None else (_copy(g._data), g._version[0])))


@contextlib.contextmanager
def transaction():
    """Undo every recorded change if the block raises (any exception, Ctrl-C too)."""
    log = _Log()
    ctx = current()
    outer, ctx.journal = ctx.journal, log
    try:
        yield log
    except BaseException:
        _rollback(log)
        raise
    finally:
        ctx.journal = outer


class _Log(list):
    """The undo entries, plus which storages and .grad fields are already saved."""

    def __init__(self):
        super().__init__()
        self.seen = set()


def _rollback(log) -> None:
    for t, kind, old, extra in reversed(log):
        if kind == "values":
            t._data[...] = old
            t._version[0] = extra
        else:
            t._grad = old
            if old is not None:
                data, version = extra
                old._data[...] = data
                old._version[0] = version
