"""IEEE arithmetic without warnings: x/0 is inf, 0/0 is nan, as in PyTorch.

NumPy would warn (or raise, under ``np.seterr(all="raise")``). ``ieee()``
scopes the backend's floating-point error state (``backend.ignore_fp_errors``);
it costs about a microsecond, so a Session run and a backward pass enter it
once, and ops inside skip it (``depth``).
"""
from __future__ import annotations

from autodsl.backend import ignore_fp_errors

__all__ = ["ieee", "depth"]

# How many ieee() blocks are open. Process-wide on purpose (a ContextVar read costs
# as much as the errstate it saves); another thread running ops meanwhile may at
# worst see NumPy's warnings.
depth = [0]


class _IEEE:
    """The context manager ``ieee()`` returns: a class, not a generator, since ops from the
    Python API enter one each (a generator-based context manager costs several times more)."""

    __slots__ = ("_errstate",)

    def __enter__(self):
        self._errstate = err = ignore_fp_errors()
        err.__enter__()
        depth[0] += 1
        return self

    def __exit__(self, *exc):
        depth[0] -= 1
        return self._errstate.__exit__(*exc)


def ieee() -> _IEEE:
    """Scope IEEE results (no warnings for x/0, 0/0, overflow) and mark ops as inside it."""
    return _IEEE()
