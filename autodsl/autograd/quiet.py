"""IEEE arithmetic without warnings: x/0 is inf, 0/0 is nan, as in PyTorch.

NumPy would warn (or raise, under ``np.seterr(all="raise")``). ``ieee()``
scopes the backend's floating-point error state (``backend.ignore_fp_errors``);
it costs about a microsecond, so a Session run and a backward pass enter it
once, and ops inside skip it (``depth``).
"""
from __future__ import annotations

import contextlib

from ..backend import ignore_fp_errors

__all__ = ["ieee", "depth"]

# How many ieee() blocks are open. Process-wide on purpose (a ContextVar read costs
# as much as the errstate it saves); another thread running ops meanwhile may at
# worst see NumPy's warnings.
depth = [0]


@contextlib.contextmanager
def ieee():
    with ignore_fp_errors():
        depth[0] += 1
        try:
            yield
        finally:
            depth[0] -= 1
