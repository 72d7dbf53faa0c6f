"""IEEE arithmetic without warnings: x/0 is inf, 0/0 is nan, as in PyTorch.

NumPy would warn (or raise, under ``np.seterr(all="raise")``). ``ieee()``
scopes the backend's floating-point error state (``backend.fp_errors_off``)
and counts the open scopes in the run context (``ieee_depth``): a Session run
and a backward pass enter one, and ops inside skip their own.
"""
from __future__ import annotations

from autodsl.backend import fp_errors_off, fp_errors_restore
from autodsl.context import current

__all__ = ["ieee"]


class _IEEE:
    """The context manager ``ieee()`` returns: a class, not a generator, since ops from the
    Python API enter one each (a generator-based context manager costs several times more)."""

    __slots__ = ("_token", "_ctx")

    def __enter__(self):
        self._token = fp_errors_off()
        ctx = self._ctx = current()
        ctx.ieee_depth += 1
        return self

    def __exit__(self, *exc):
        self._ctx.ieee_depth -= 1
        fp_errors_restore(self._token)
        return False


def ieee() -> _IEEE:
    """Scope IEEE results (no warnings for x/0, 0/0, overflow) and mark ops as inside it."""
    return _IEEE()
