"""Whether operations record the graph: ``no_grad``, ``enable_grad``.

The flag lives on a ContextVar so that it is restored on every exit path
(an error inside a ``no_grad`` block leaves grad mode as it was).
"""
from __future__ import annotations

import functools
from contextvars import ContextVar

__all__ = ["no_grad", "enable_grad", "set_grad_enabled", "is_grad_enabled"]

_grad_enabled: ContextVar[bool] = ContextVar("autodsl_grad_enabled", default=True)


def is_grad_enabled() -> bool:
    """True when new operations record a graph for backward."""
    return _grad_enabled.get()


class set_grad_enabled:
    """Context manager (and decorator) that sets grad mode to ``mode`` inside its block."""

    def __init__(self, mode: bool = True):
        self.mode = bool(mode)
        self._tokens = []

    def __enter__(self):
        self._tokens.append(_grad_enabled.set(self.mode))
        return self

    def __exit__(self, *exc):
        _grad_enabled.reset(self._tokens.pop())
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

    def __init__(self):
        super().__init__(False)


class enable_grad(set_grad_enabled):
    """Re-enable recording inside a ``no_grad`` block."""

    def __init__(self):
        super().__init__(True)
