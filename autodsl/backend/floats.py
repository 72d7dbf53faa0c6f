"""NumPy's float64 sine and cosine on Python floats, bit for bit (Note [0-d fast path], ops/registry.py).

``sin`` and ``cos`` take a Python float and return NumPy's float64 result as a Python
float, without NumPy's 0-d machinery; they never warn (an infinite input gives NumPy's nan
quietly). A finite input goes to ``math.sin``/``math.cos`` when the C library's functions
give NumPy's values on this machine: checked once at import, over 1,031 probes from
subnormals to 2^1023. NumPy may bring its own vectorized sine (it did on some AVX-512 builds);
then ``LIBM_TRIG`` is False, and an op's 0-d fast path for sin and cos is off, so that a 0-d
result is always the same bits as the same element of an array.
"""
from __future__ import annotations

import math

import numpy as np

__all__ = ["LIBM_TRIG", "sin", "cos"]


def _probes() -> np.ndarray:
    k = np.arange(512.0)
    spread = (k * 0.6180339887498949) % 1.0 * 2.0 - 1.0     # (a low-discrepancy walk over [-1, 1))
    scales = 10.0 ** (k % 333.0 - 310.0)
    return np.concatenate([spread * 8.0, spread * scales,
                           [0.0, -0.0, 5e-324, math.pi, -math.pi / 2, 1e22, 2.0 ** 1023]])


def _agrees(fn, ufunc, probes) -> bool:
    with np.errstate(all="ignore"):     # (subnormal probes: NumPy may raise underflow)
        want = ufunc(probes)
    return np.fromiter(map(fn, probes.tolist()), np.float64, len(probes)).tobytes() == want.tobytes()


_PROBES = _probes()
LIBM_TRIG = _agrees(math.sin, np.sin, _PROBES) and _agrees(math.cos, np.cos, _PROBES)
del _PROBES
_math_sin, _math_cos, _np_sin, _np_cos = math.sin, math.cos, np.sin, np.cos


def _quiet(ufunc, x: float) -> float:
    with np.errstate(all="ignore"):     # sin(inf) is nan: NumPy's value, never its warning
        return float(ufunc(x))


def sin(x: float) -> float:
    """NumPy's float64 ``sin(x)`` as a Python float (``x`` a Python float)."""
    return _math_sin(x) if LIBM_TRIG and x - x == 0.0 else _quiet(_np_sin, x)


def cos(x: float) -> float:
    """NumPy's float64 ``cos(x)`` as a Python float (``x`` a Python float)."""
    return _math_cos(x) if LIBM_TRIG and x - x == 0.0 else _quiet(_np_cos, x)
