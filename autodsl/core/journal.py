"""An undo log for the changes an input makes, so an interrupted input can be rolled back.

While a ``transaction()`` is open, every change an input can make to state that
outlives it is recorded first; if the block ends with an exception (Ctrl-C
included), the changes are undone in reverse order. What is recorded, and by whom:

* a tensor's values and version counter, before an in-place write (``record_values``),
  and the history the write moves (``grad_fn``, ``requires_grad``, retained
  tensors: ``record_attrs`` in ``ops/inplace.py``);
* a tensor's ``.grad`` (``record_grad``), and the saved values a backward frees;
* ``requires_grad``, ``retain_grad()``, hooks registered and handles removed
  (``record_attrs`` and ``record_items`` in ``core/tensor.py`` and ``core/node.py``);
* writes into lists (``xs[0] = 5``) and the variables of a namespace (``record_items``);
* attributes set through a setter, such as an optimizer's ``lr`` (``record_setter``);
* the run context's settings: default dtype and device, grad mode, trace, anomaly
  mode and the last backward (saved when the transaction opens), and its random
  generators: those ``seed()`` replaces (saved when it opens) and the state of those
  ``rand``/``randn`` draw from (``record_random``), so a rolled-back input's random
  numbers are drawn again the same.

Files written (``save``, ``dot``, ``plot``) stay written: ``record_file`` lists them
in the log's ``kept``, so that the message after an undo can say so.

The open log is the run context's ``journal``; outside a transaction each record
costs one context read and one ``is None`` test, and ops that write nothing record
nothing.

Tensor counters that only ever grow (``_gen``, the in-place history generation)
are not put back: a view whose base was rolled back then sees its history as
stale and rebuilds it from the base, which is always correct.
"""
from __future__ import annotations

import contextlib
from operator import attrgetter

from autodsl.backend import copy as _copy
from autodsl.context import DEFAULT, current, current_or_none

__all__ = [
    "merge",
    "record_attrs",
    "record_file",
    "record_grad",
    "record_items",
    "record_random",
    "record_setter",
    "record_values",
    "transaction",
]

# The run context's fields an input can change (built-ins such as set_default_dtype, trace,
# anomaly and backward set them); saved once per transaction.
_SETTINGS = ("grad_enabled", "trace_enabled", "anomaly", "last_backward", "last_trace")
_DEFAULTS = ("default_dtype", "default_device")     # (and the generators: on the same holder)
_get_settings, _get_defaults = attrgetter(*_SETTINGS), attrgetter(*_DEFAULTS)


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
    ctx = current_or_none() or current()
    log = ctx.journal
    if log is not None:
        key = ("grad", id(t))
        if key not in log.seen:
            log.seen.add(key)
            g = t._grad
            log.append((t, "grad", g, None if g is None else (_copy(g._data), g._version[0])))
    if ctx.deferred is not None:    # value checks wait (core/deferred.py): a failed one takes this back
        ctx.deferred.note_grads((t,))


def record_attrs(obj, *names, log=None) -> None:
    """Call before assigning the attributes ``names`` of ``obj`` (slots or plain attributes,
    put back as they are, without running any setter). ``log``: the open journal when the
    caller already read it (a loop over many objects reads the context once)."""
    if log is None:
        log = current().journal
        if log is None:
            return
    for name in names:
        key = ("attr", id(obj), name)
        if key not in log.seen:
            log.seen.add(key)
            log.append((obj, "attr", name, getattr(obj, name)))


def record_items(container) -> None:
    """Call before changing the items of a list or a dict in place (``xs[0] = 5``, a
    namespace's variables, a node's hooks): its items are put back, in their order,
    in the same object (so everything that holds it sees them)."""
    log = current().journal
    if log is not None:
        key = ("items", id(container))
        if key not in log.seen:
            log.seen.add(key)
            log.append((container, "items", container.copy(), None))


def record_setter(obj, name: str) -> None:
    """Call before ``setattr(obj, name, value)`` through a public setter whose effects reach
    further than the attribute (an optimizer's ``lr`` also writes its learning-rate tensors).
    The undo sets the old value through the same setter first, before every other entry is
    undone, so that the raw entries then put back exactly what the setter wrote."""
    log = current().journal
    if log is not None:
        key = ("set", id(obj), name)
        if key not in log.seen:
            log.seen.add(key)
            log.append((obj, "set", name, getattr(obj, name)))


def record_random() -> None:
    """Call before drawing random numbers: an undone input's draws are drawn again, the same.
    (The generators of NumPy are saved; one whose state cannot be read, CuPy's, is not.)"""
    ctx = current()
    log = ctx.journal
    if log is None:
        return
    rng = ctx.rng if ctx.owns_defaults else DEFAULT.rng
    for device, g in rng.items():
        bits = getattr(g, "bit_generator", None)
        key = ("attr", id(bits), "state")
        if device == "seed" or bits is None or key in log.seen:
            continue
        state = _state_of(bits)
        if state is not None:
            log.seen.add(key)
            log.append((bits, "attr", "state", state))


def _state_of(bits):
    try:
        return bits.state
    except Exception:  # noqa: BLE001 - a generator whose state cannot be read is not saved
        return None


def record_file(path) -> None:
    """Call after a file was written (``save``, ``dot``, ``plot``): an undo cannot take it
    back, so it is listed in the log's ``kept``, for the message that says what stays."""
    log = current().journal
    if log is not None:
        log.kept.append(str(path))


def merge(outer, log) -> None:
    """A transaction inside another (a compiled program's run inside a Session's): once it
    succeeded, its undo entries belong to the outer log too (where the outer has not saved
    an older state of the same thing)."""
    if outer is None:
        return
    outer.kept.extend(log.kept)
    for entry in log:
        key = _key(entry)
        if key not in outer.seen:
            outer.seen.add(key)
            outer.append(entry)


def _key(entry) -> tuple:
    obj, kind, name = entry[0], entry[1], entry[2]
    if kind in ("attr", "set"):
        return (kind, id(obj), name)
    return (kind, id(obj))


@contextlib.contextmanager
def transaction():
    """Undo every recorded change if the block raises (any exception, Ctrl-C too).

    Nested in another transaction, a block that ends normally hands its entries to the
    outer one, so the outer undo still reaches them."""
    log = _Log()
    ctx = current()
    holder = ctx if ctx.owns_defaults else DEFAULT
    settings, defaults = _get_settings(ctx), _get_defaults(holder)
    # seed() replaces the generators, and the first draw makes one: the old ones come back
    # (and the state of those it drew from: record_random)
    rng = holder.rng
    log.seen.add(("items", id(rng)))
    log.append((rng, "items", rng.copy(), None))
    outer, ctx.journal = ctx.journal, log
    try:
        yield log
        merge(outer, log)           # inside another transaction, its undo takes this one's back too
    except BaseException:
        ctx.journal = None          # what the undo itself writes is recorded nowhere
        try:
            _rollback(log)
        finally:
            for name, value in zip(_SETTINGS, settings):
                setattr(ctx, name, value)
            for name, value in zip(_DEFAULTS, defaults):
                setattr(holder, name, value)
        raise
    finally:
        ctx.journal = outer


class _Log(list):
    """The undo entries, plus which storages, fields and containers are already saved, and
    what cannot be undone (``kept``: the files written)."""

    def __init__(self):
        super().__init__()
        self.seen = set()
        self.kept = []


def _rollback(log) -> None:
    # Setters first (they may write into tensors the raw entries then put back exactly),
    # then every raw entry in reverse order. An entry that cannot be undone does not stop
    # the others; the first such error is raised at the end (the undo was not complete).
    failure = None
    for obj, kind, name, old in reversed(log):
        if kind == "set":
            try:
                setattr(obj, name, old)
            except Exception as e:  # noqa: BLE001 - reported after the rest is undone
                failure = failure or e
    for entry in reversed(log):
        try:
            _undo(*entry)
        except Exception as e:  # noqa: BLE001 - reported after the rest is undone
            failure = failure or e
    if failure is not None:
        raise failure


def _undo(obj, kind, old, extra) -> None:
    if kind == "values":
        obj._data[...] = old
        obj._version[0] = extra
    elif kind == "grad":
        obj._grad = old
        if old is not None:
            data, version = extra
            old._data[...] = data
            old._version[0] = version
    elif kind == "attr":
        setattr(obj, old, extra)
    elif kind == "items":
        obj.clear()
        if isinstance(obj, dict):
            obj.update(old)
        else:
            obj.extend(old)
