"""A one-line progress bar on a terminal's stderr for loops that run longer than a second.

Installed by the REPL (and by the command line for scripts) only when stderr
is a terminal, so piped output never changes. The outermost `for` loop of a
statement reports ``(done, total)`` through ``autodsl.lang.interpreter.
loop_progress``; the bar appears once the statement has run for
``delay`` seconds, is redrawn at most ten times a second, and is erased
before anything else is written to the session's output (``wrap``) and when
the statement ends.
"""
from __future__ import annotations

import contextlib
import sys
import time

from autodsl.lang.interpreter import loop_progress

__all__ = ["ProgressLine", "ClearingWriter"]

_WIDTH = 30


class ProgressLine:
    """The bar for one terminal; ``running()`` scopes it to one statement."""

    def __init__(self, stream=None, delay: float = 1.0, interval: float = 0.1):
        self.stream = stream
        self.delay = delay
        self.interval = interval
        self.start = 0.0
        self.last_draw = 0.0
        self.shown = False

    def _stream(self):
        return self.stream if self.stream is not None else sys.stderr

    @contextlib.contextmanager
    def running(self):
        """Report the loops of the statement run inside this block; erase the bar at the end."""
        self.start = time.monotonic()
        self.last_draw = 0.0
        try:
            with loop_progress(self.update):
                yield self
        finally:
            self.clear()

    def update(self, done: int, total: int | None) -> None:
        now = time.monotonic()
        if now - self.start < self.delay or now - self.last_draw < self.interval:
            return
        self.last_draw = now
        self._stream().write("\r\x1b[K" + render(done, total, now - self.start))
        self._stream().flush()
        self.shown = True

    def clear(self) -> None:
        if self.shown:
            self.shown = False
            try:
                self._stream().write("\r\x1b[K")
                self._stream().flush()
            except (OSError, ValueError):
                pass


def render(done: int, total: int | None, elapsed: float) -> str:
    """``[#########.....]  450/1000  1.2s  eta 1.5s`` (no bar when the length is unknown)."""
    if not total:
        return f"{done} iterations  {elapsed:.1f}s"
    filled = min(_WIDTH, int(_WIDTH * done / total))
    eta = elapsed * (total - done) / done if done else 0.0
    return f"[{'#' * filled}{'.' * (_WIDTH - filled)}]  {done}/{total}  {elapsed:.1f}s  eta {eta:.1f}s"


class ClearingWriter:
    """A text stream that erases the progress bar before writing to the real stdout."""

    def __init__(self, progress: ProgressLine, target=None):
        self.progress = progress
        self.target = target

    def _target(self):
        return self.target if self.target is not None else sys.stdout

    def write(self, text: str) -> int:
        self.progress.clear()
        return self._target().write(text)

    def flush(self) -> None:
        self._target().flush()
