"""Resource limits of a run: wall-clock time, interpreter steps and tensor memory.

A Session with limits puts a ``Limits`` on its run context while its code runs
(``ctx.limits``; None means no limits, the Python API's default). Long work
calls ``poll()`` between deterministic pieces, so a time limit holds off the
main thread too (no signals), and an interrupt (Ctrl-C) gets a chance to land
between two pieces instead of after the whole op.
"""
from __future__ import annotations

import time

from autodsl.context import current_or_none, current
from autodsl.errors import LimitError

__all__ = ["Limits", "poll"]


class Limits:
    """The limits of one run and what it has used so far.

    * ``time_limit``: wall-clock seconds per ``run()`` or host call into session code, or None;
      ``deadline`` is the ``time.monotonic()`` value at which it runs out.
    * ``step_limit``: interpreter steps (statements, loop iterations, calls), or None;
      ``steps`` counts them.
    * ``memory_limit``: bytes of tensor storage the session may hold, or None.
    """

    __slots__ = ("time_limit", "deadline", "step_limit", "steps", "memory_limit")

    def __init__(self, time_limit=None, step_limit=None, memory_limit=None):
        self.time_limit = time_limit
        self.deadline = None if time_limit is None else time.monotonic() + time_limit
        self.step_limit = step_limit
        self.steps = 0
        self.memory_limit = memory_limit


def poll() -> None:
    """Raise ``LimitError`` when the current run is past its time limit; cheap when it has none.

    Called between the pieces of long ops and between statements; a pending Ctrl-C is
    raised by Python itself at the call (this is Python code between two NumPy calls)."""
    ctx = current_or_none() or current()
    lim = ctx.limits
    if lim is not None and lim.deadline is not None and time.monotonic() > lim.deadline:
        raise LimitError(f"the run took longer than its time limit of {lim.time_limit:g} s; "
                         "make the work smaller or raise the limit")
