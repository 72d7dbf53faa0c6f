"""Resource limits of a run: wall-clock time, interpreter steps and tensor memory.

A Session with limits puts a fresh ``Limits`` on its run context each time its code is
entered (``run()``, or a host call into a script's function or hook: ``Session.context``);
``ctx.limits`` is None when there are none, the Python API's default, and then an op pays
one attribute read for all of this. Long work calls ``poll()`` between deterministic
pieces, so a time limit holds off the main thread too (no signals), and an interrupt
(Ctrl-C) gets a chance to land between two pieces instead of after the whole op.

What each limit counts:

* time: wall-clock seconds from entering the session's code, checked between statements,
  loop iterations, calls and ops, between the nodes of a backward pass, and between the
  pieces of a long op (``poll``);
* steps: statements, loop iterations and calls of user functions, counted by the
  interpreter (``Limits.step``);
* memory: a bound on the bytes the session's data holds, checked before an allocation
  (``reserve``): a new tensor (creation functions), an op's result (``ops/op_limits.py``:
  broadcasting, matrix products, einsum, ops on ``expand``ed views), a string the script
  builds (``+``, f-strings, a format width), a list literal, ``tolist()``, the row views a
  ``for`` loop over a tensor makes, a product of two integers. One allocation larger than
  the limit fails at once, with its size. Else
  the bytes asked for since the last count are added to the last count of what the
  session holds; when that sum would pass the limit, the session's data is counted
  again (``held_bytes``: the storage of the tensors, their gradients, the values their
  graphs saved for backward, strings and lists reachable from its variables, each storage
  once) and the allocation fails if it still would. What only a running function's callers
  hold, temporaries inside one op and a backward pass's gradients are not counted; the time
  and step limits bound those.

Without a memory limit the same checks refuse an allocation larger than the machine's
memory, or from ``BIG_ALLOCATION`` up one larger than the memory free now, at once and with
its size (``reserve``; ``memory_error`` words NumPy's own MemoryError, which says its size),
instead of Python's MemoryError or an out-of-memory kill; an op's result is left to NumPy's
MemoryError there, so that an op without limits pays nothing for it.
"""
from __future__ import annotations

import os
import re
import sys
import time

from autodsl import names
from autodsl.context import current, current_or_none
from autodsl.core.node import AccumulateGrad, Node, SavedOutput, SavedTensor, const_entries, saved_entries
from autodsl.errors import LimitError

__all__ = [
    "BIG_ALLOCATION",
    "MACHINE_MEMORY",
    "Limits",
    "available_memory",
    "format_size",
    "held_bytes",
    "memory_error",
    "parse_size",
    "poll",
    "reserve",
    "reserve_elements",
]


def _machine_memory() -> int | None:
    try:
        return os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):      # not POSIX: no machine check
        return None


MACHINE_MEMORY = _machine_memory()      # bytes of physical memory (None: unknown)
# Allocations from this size up are checked against the memory free now, even without a
# memory limit (smaller ones against nothing: the check reads /proc/meminfo).
BIG_ALLOCATION = 1 << 26


def available_memory() -> int | None:
    """Bytes of memory free for new allocations now (Linux's MemAvailable), or None if unknown."""
    try:
        with open("/proc/meminfo", "rb") as f:
            for line in f:
                if line.startswith(b"MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return None


def format_size(n: int) -> str:
    """``n`` bytes in words: "512 bytes", "80.0 MB", "8.0 TB" (powers of 1000, as disks)."""
    if n < 1000:
        return f"{n} byte{'s' if n != 1 else ''}"
    for unit in ("KB", "MB", "GB", "TB", "PB", "EB"):
        n /= 1000
        if n < 1000 or unit == "EB":
            return f"{n:.1f} {unit}"
    raise AssertionError("unreachable")


_SIZE = re.compile(r"\s*(\d+(?:\.\d*)?|\.\d+)(?:e(\d+))?\s*([kmgtp]?)(i?)b?\s*", re.IGNORECASE)
_UNITS = {"": 0, "k": 1, "m": 2, "g": 3, "t": 4, "p": 5}


def parse_size(text) -> int:
    """A size in bytes from ``512M``, ``2G``, ``1.5GB``, ``64KiB`` or ``1000000``: K, M, G, T,
    P are powers of 1000 (with ``iB``, of 1024). ValueError (in words) for anything else."""
    if isinstance(text, int) and not isinstance(text, bool):
        n = text
    else:
        m = _SIZE.fullmatch(str(text))
        if m is None:
            raise ValueError(f"{text!r} is not a size: give bytes (1000000) or a number with K, M, G "
                             "or T (512M, 2G)")
        number, exp, unit, binary = m.groups()
        if binary and not unit:
            raise ValueError(f"{text!r} is not a size: iB needs a unit before it (KiB, MiB, GiB)")
        value = float(number) * (10 ** int(exp) if exp else 1) * (1024 if binary else 1000) ** _UNITS[unit.lower()]
        n = int(value)
    if n <= 0:
        raise ValueError(f"{text!r} is not a size: a size is a positive number of bytes")
    return n


class Limits:
    """The limits of one entry into a session's code and what it has used so far.

    * ``time_limit``: wall-clock seconds per ``run()`` or host call into session code, or None;
      ``deadline`` is the ``time.monotonic()`` value at which it runs out.
    * ``step_limit``: interpreter steps (statements, loop iterations, calls), or None;
      ``steps`` counts them.
    * ``memory_limit``: bytes of tensor storage (and strings, lists) the session may hold, or
      None; ``held`` is the last count of what it holds (None: not counted yet; a session
      passes on its previous entry's, so that entering costs no count), ``asked`` the bytes
      allocations asked for since, ``count`` a callable giving the count (``held_bytes`` over
      the session's variables).
    """

    __slots__ = (
        "asked",
        "count",
        "deadline",
        "held",
        "memory_limit",
        "step_limit",
        "steps",
        "time_limit",
    )

    def __init__(self, time_limit=None, step_limit=None, memory_limit=None, count=None, held=None):
        self.time_limit = time_limit
        self.deadline = None if time_limit is None else time.monotonic() + time_limit
        self.step_limit = step_limit
        self.steps = 0
        self.memory_limit = memory_limit
        self.held = held
        self.asked = 0
        self.count = count

    def step(self) -> None:
        """One interpreter step: LimitError past the step limit or the time limit."""
        self.steps += 1
        if self.step_limit is not None and self.steps > self.step_limit:
            raise LimitError(f"the run took more than its step limit of {self.step_limit:,} steps "
                             "(statements, loop iterations and calls); make the work smaller or "
                             "raise the limit")
        if self.deadline is not None and time.monotonic() > self.deadline:
            raise _time_error(self)

    def check_time(self) -> None:
        if self.deadline is not None and time.monotonic() > self.deadline:
            raise _time_error(self)

    def reserve(self, nbytes: int, what: str) -> None:
        """Check that ``nbytes`` more fit in the memory limit (see the module doc), then count
        them as asked for; the time limit is checked too. LimitError when they do not fit."""
        if self.deadline is not None and time.monotonic() > self.deadline:
            raise _time_error(self)
        limit = self.memory_limit
        if limit is None:
            _machine_check(nbytes, what)
            return
        if nbytes > limit:
            raise LimitError(f"{what} would need {format_size(nbytes)}, more than the memory limit of "
                             f"{format_size(limit)}; make it smaller or raise the limit")
        held = self.held
        if held is None or held + self.asked + nbytes > limit:
            held = self.held = self.count() if self.count is not None else 0
            self.asked = 0
            if held + nbytes > limit:
                raise LimitError(f"{what} would need {format_size(nbytes)}, and this session already "
                                 f"holds about {format_size(held)} of its memory limit of "
                                 f"{format_size(limit)}; delete what is no longer needed (x = none) "
                                 "or raise the limit")
        self.asked += nbytes


def _time_error(lim: Limits) -> LimitError:
    return LimitError(f"the run took longer than its time limit of {lim.time_limit:g} s; "
                      "make the work smaller or raise the limit")


def _machine_check(nbytes: int, what: str) -> None:
    if nbytes < BIG_ALLOCATION:
        return
    if MACHINE_MEMORY is not None and nbytes > MACHINE_MEMORY:
        raise LimitError(f"{what} would need {format_size(nbytes)}, more than this machine's memory "
                         f"({format_size(MACHINE_MEMORY)}); make it smaller")
    free = available_memory()
    if free is not None and nbytes > free:
        raise LimitError(f"{what} would need {format_size(nbytes)}, more than the "
                         f"{format_size(free)} of memory free now; make it smaller")


def poll() -> None:
    """Raise ``LimitError`` when the current run is past its time limit; cheap when it has none.

    Called between the pieces of long ops and between statements; a pending Ctrl-C is
    raised by Python itself at the call (this is Python code between two NumPy calls)."""
    ctx = current_or_none() or current()
    lim = ctx.limits
    if lim is not None and lim.deadline is not None and time.monotonic() > lim.deadline:
        raise _time_error(lim)


def reserve(nbytes: int, what: str) -> None:
    """Before allocating ``nbytes`` for ``what`` ("zeros", "this string"): LimitError when
    they do not fit in the current run's memory limit, or, with none, in the machine's memory."""
    lim = (current_or_none() or current()).limits
    if lim is not None:
        lim.reserve(nbytes, what)
    elif nbytes >= BIG_ALLOCATION:
        _machine_check(nbytes, what)


def reserve_elements(shape, itemsize: int, what: str) -> None:
    """``reserve`` for an array of ``shape`` (a tuple of sizes) and ``itemsize`` bytes per element."""
    n = itemsize
    for d in shape:
        n *= d
    reserve(n, what)


def memory_error(e: MemoryError, what: str | None = None) -> LimitError:
    """A MemoryError (NumPy's says how much it asked for) as a LimitError in the language's words."""
    size = getattr(e, "_total_size", None)
    subject = what or "this"
    if isinstance(size, int):
        machine = f" (this machine has {format_size(MACHINE_MEMORY)})" if MACHINE_MEMORY else ""
        return LimitError(f"out of memory: {subject} would need {format_size(size)}, more than is free"
                          f"{machine}; make it smaller")
    return LimitError(f"out of memory: {subject} needs more memory than is free; make the values "
                      "smaller (a long string, a large list or tensor)")


def held_bytes(roots) -> int:
    """About how many bytes the values in ``roots`` hold: each tensor's storage once (a view
    counts its base), its gradient and the graph that made it (the values its nodes saved for
    backward), strings, and lists, tuples and dicts with what they hold. Functions are not
    followed."""
    tensor_types = names.TENSOR_TYPES       # (core.tensor registers Tensor there; it imports this module)
    seen: set = set()
    total = 0

    def storage(a) -> int:
        while getattr(a, "base", None) is not None and hasattr(a.base, "nbytes"):
            a = a.base              # a NumPy view: the array that owns the memory
        if id(a) in seen:
            return 0
        seen.add(id(a))
        return int(getattr(a, "nbytes", 0))

    stack = list(roots)
    while stack:
        v = stack.pop()
        if v is None or id(v) in seen:
            continue
        if isinstance(v, tensor_types):
            seen.add(id(v))
            total += storage(v._data if v._base is None else v._base._data)
            stack.append(v._grad)
            stack.append(v.grad_fn)
        elif isinstance(v, Node):
            seen.add(id(v))
            for saved in saved_entries(v):
                if isinstance(saved, SavedTensor):
                    stack.append(saved.held)        # the tensor, or its grad_fn beside its array
                    if saved.data is not None:      # (Note [saved inputs])
                        total += storage(saved.data)
                elif isinstance(saved, SavedOutput):
                    total += storage(saved.data)
            for a in const_entries(v):
                if a is not None:
                    total += storage(a)
            stack.extend(getattr(v, "next_edges", None) or ())
            if isinstance(v, AccumulateGrad):
                stack.append(v.variable)
        elif isinstance(v, str):
            seen.add(id(v))
            total += sys.getsizeof(v)
        elif isinstance(v, (list, tuple)):
            seen.add(id(v))
            total += sys.getsizeof(v)
            stack.extend(v)
        elif isinstance(v, dict):
            seen.add(id(v))
            total += sys.getsizeof(v)
            stack.extend(v.values())
    return total
