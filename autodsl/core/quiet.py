"""IEEE arithmetic without warnings, and the cyclic collector held off, while autodsl runs.

IEEE: x/0 is inf, 0/0 is nan, as in PyTorch. NumPy would warn (or raise, under
``np.seterr(all="raise")``). ``ieee()`` scopes the backend's floating-point error
state (``backend.fp_errors_off``) and counts the open scopes in the run context
(``ieee_depth``): a Session run and a backward pass enter one, and ops inside skip
their own.

``pass_state`` is the state a backward pass runs in: that scope, grad mode as the pass asks,
and the cyclic GC kept from running inside it (Note [the cost of an op] in ops/registry.py);
the host program's settings are back when it exits.
"""
from __future__ import annotations

import gc

from autodsl.backend import fp_errors_off, fp_errors_restore
from autodsl.context import current

__all__ = ["ieee", "pass_state"]

_gc_isenabled, _gc_disable, _gc_enable = gc.isenabled, gc.disable, gc.enable


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


class pass_state:
    """``with pass_state(create_graph):`` the state a backward pass runs in (the engine's
    ``GraphTask.running``): the run context's ``in_pass`` counted (ops of backward formulas are
    not the user's, core/watch.py), grad mode as ``create_graph`` asks, IEEE results, and the
    collector held off (the pass makes no cycles, but each collection its many small objects
    would trigger walks the whole graph); all as it was on exit. One class for the four: a pass
    enters it once, a stepped pass once per node."""

    __slots__ = ("_mode", "_ctx", "_grad", "_token", "_held")

    def __init__(self, create_graph: bool):
        self._mode = bool(create_graph)

    def __enter__(self):
        ctx = self._ctx = current()
        ctx.in_pass += 1
        self._held = _gc_isenabled()
        if self._held:
            _gc_disable()
        self._grad = ctx.grad_enabled
        ctx.grad_enabled = self._mode
        self._token = fp_errors_off()
        ctx.ieee_depth += 1
        return self

    def __exit__(self, *exc):
        ctx = self._ctx
        ctx.ieee_depth -= 1
        fp_errors_restore(self._token)
        ctx.grad_enabled = self._grad
        if self._held:
            _gc_enable()
        ctx.in_pass -= 1
        return False
