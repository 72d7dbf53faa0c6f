"""Whether operations record the graph: ``no_grad``, ``enable_grad``.

The flag is a field of the run context (``autodsl.context``), restored on every
exit path (an error inside a ``no_grad`` block leaves grad mode as it was).
"""
from __future__ import annotations

import functools

from autodsl.context import current

__all__ = ["no_grad", "enable_grad", "set_grad_enabled", "is_grad_enabled"]


def is_grad_enabled() -> bool:
    """True when new operations record a graph for backward."""
    return current().grad_enabled


class set_grad_enabled:
    """Context manager (and decorator) that sets grad mode to ``mode`` inside its block."""

    __slots__ = ("mode", "_saved")

    def __init__(self, mode: bool = True):
        self.mode = bool(mode)
        self._saved = []

    def __enter__(self):
        ctx = current()
        self._saved.append((ctx, ctx.grad_enabled))
        ctx.grad_enabled = self.mode
        return self

    def __exit__(self, *exc):
        ctx, old = self._saved.pop()
        ctx.grad_enabled = old
        return False

    def __call__(self, fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with type(self)(self.mode) if type(self) is set_grad_enabled else type(self)():
                return fn(*args, **kwargs)
        return wrapper


class no_grad(set_grad_enabled):
    """Inside this block nothing is recorded: results do not require grad.

    Use it for parameter updates (``w -= lr * w.grad``), which are refused on a
    leaf that requires grad otherwise. Example (language)::

        no_grad { w -= 0.1 * w.grad }
    """

    __slots__ = ()

    def __init__(self):
        super().__init__(False)


class enable_grad(set_grad_enabled):
    """Re-enable recording inside a ``no_grad`` block."""

    __slots__ = ()

    def __init__(self):
        super().__init__(True)
