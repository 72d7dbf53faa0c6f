"""The two namespaces a backward formula is written against (Note [one formula]).

An op declares its derivative once, as ``formula(self, F, g, *saved)``: ``g`` is the
gradient of its output and ``saved`` what its forward saved. Without create_graph
the engine runs it with ``F = ARRAYS`` on the backend arrays (nothing is recorded,
so NumPy's arithmetic is all it costs); with create_graph it runs with
``F = TENSORS`` on Tensors, so that every step is recorded for higher derivatives.
Operators (``g * y``, ``-g``) mean the same on both; functions come from ``F``.
The results are bit-identical: the recorded ops compute the same arithmetic on the
same arrays (tests/test_plain_backward.py).

An op with a 0-d fast path (``forward_f64``, Note [0-d fast path] in ops/registry.py) also
runs its formula with ``F = FLOATS`` on Python floats, when the gradient and the saved values
are 0-d float64 host arrays: the same IEEE double arithmetic, without NumPy's 0-d calls.
"""
from __future__ import annotations

import autodsl.backend as backend
from autodsl.backend import floats, namespace_of

_ndarray = backend.HOST_ARRAY

__all__ = ["ARRAYS", "FLOATS", "TENSORS", "define", "forward_of"]


class _Arrays:
    """``F`` on backend arrays."""

    __slots__ = ()

    @staticmethod
    def sin(a):
        return namespace_of(a).sin(a)

    @staticmethod
    def cos(a):
        return namespace_of(a).cos(a)

    @staticmethod
    def threshold_backward(g, x):
        """``where(x <= 0, +0, g)``: relu's gradient, ``x`` relu's output (its one caller), as
        torch's relu backward takes its result: relu'(0) = 0, and a nan x passes g. An output
        is >= 0, -0.0 or nan, so there ``x <= 0`` is ``x == 0``: the select keeps g where
        ``x != 0`` (backend.where_nonzero: a compare and a select, not a compare, its negation
        and a select; 59 -> 47 us at 256 x 512 float32)."""
        # a Python branch on the host: NumPy's 0-d select and compare cost 10x more (off the host
        # it would be a host sync)
        if x.ndim == 0 and g.ndim == 0:
            if type(x) is _ndarray and type(g) is _ndarray:     # (NumPy's: without the calls)
                return (backend.zero_of(g) if float(x) <= 0 else g).copy()   # a fresh array either way
            if backend.on_host(x):
                return backend.copy(backend.zero_of(g) if float(x) <= 0 else g)
        return backend.where_nonzero(x, g)


class _Floats:
    """``F`` on Python floats, for the formulas of the ops with a 0-d fast path: NumPy's
    float64 values bit for bit (tests/test_op_flags.py)."""

    __slots__ = ()

    sin = staticmethod(floats.sin)
    cos = staticmethod(floats.cos)

    @staticmethod
    def threshold_backward(g, x):
        # -(-g): a new float with g's bits (a gradient of its own, as on arrays: never g passed on)
        return 0.0 if x <= 0.0 else -(-g)


class _Tensors:
    """``F`` on Tensors: the ops themselves, registered by their modules at import."""

    sin = cos = threshold_backward = None


ARRAYS = _Arrays()
FLOATS = _Floats()
TENSORS = _Tensors()


def define(name: str, on_arrays, on_tensors) -> None:
    """Give formulas ``F.<name>``: ``on_arrays`` for ARRAYS, ``on_tensors`` (an op) for TENSORS.
    The ops' modules call it at import, for the movement ops a formula uses."""
    setattr(_Arrays, name, staticmethod(on_arrays))
    setattr(_Tensors, name, staticmethod(on_tensors))


def forward_of(cls):
    """``cls``'s forward as a function of arrays (on a node nothing keeps): what a formula on
    ARRAYS calls for a movement op, so that it gives exactly the op's arrays."""
    def run(a, *args, **params):
        node = cls.__new__(cls)
        node._record = False
        node.inputs = (None,)
        return cls.forward(node, a, *args, **params)
    run.__name__ = f"{cls.__name__.lower()}_forward"
    return run
