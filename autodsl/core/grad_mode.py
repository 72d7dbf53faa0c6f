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
    """Grad mode ``mode``, as PyTorch's: called alone (``set_grad_enabled(False)``) it sets the
    mode at once, until it is set again; as a ``with`` block, the mode before the call comes
    back at the block's end; as a decorator, around each call of the function (the mode at
    the decoration comes back at once). ``no_grad()`` and ``enable_grad()`` change nothing
    until their block is entered."""

    __slots__ = ("mode", "_saved", "_prev")

    def __init__(self, mode: bool = True):
        self.mode = bool(mode)
        self._saved = []
        self._prev = None
        if type(self) is set_grad_enabled:
            ctx = current()
            self._prev = (ctx, ctx.grad_enabled)    # what the first block gives back
            ctx.grad_enabled = self.mode

    def __enter__(self):
        prev, self._prev = self._prev, None
        ctx = current()
        self._saved.append(prev if prev is not None and prev[0] is ctx else (ctx, ctx.grad_enabled))
        ctx.grad_enabled = self.mode
        return self

    def __exit__(self, *exc):
        ctx, old = self._saved.pop()
        ctx.grad_enabled = old
        return False

    def __call__(self, fn):
        prev, self._prev = self._prev, None
        if prev is not None:        # a decorator: the mode it set at once is undone
            prev[0].grad_enabled = prev[1]

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
