"""The one module that names NumPy and CuPy.

It maps a device name to an array namespace (``xp``), owns the dtype table,
the session defaults (device and dtype, on ContextVars so that a Session can
scope them), the random number generators, and host copies.

Errors: DeviceError for an unknown or unavailable device, DTypeError for an
unknown dtype name.
"""
from __future__ import annotations

import contextlib
from contextvars import ContextVar

import numpy as np

from .errors import DeviceError, DTypeError

__all__ = [
    "DType", "float32", "float64", "int64", "bool_", "DTYPES", "as_dtype",
    "get_default_dtype", "set_default_dtype", "get_default_device",
    "set_default_device", "defaults", "xp", "check_device", "to_host", "rng",
    "seed", "is_floating", "namespace_of", "dtype_of", "device_of", "asarray", "may_share_memory",
    "scatter_add",
]


class DType:
    """A tensor element type: ``float32``, ``float64``, ``int64`` or ``bool``.

    ``np`` is the NumPy dtype; the same object is used for every device.
    """

    __slots__ = ("name", "np", "is_floating")

    def __init__(self, name: str, np_dtype):
        self.name = name
        self.np = np.dtype(np_dtype)
        self.is_floating = self.np.kind == "f"

    def __repr__(self) -> str:
        return self.name

    def __reduce__(self):
        return (as_dtype, (self.name,))


float32 = DType("float32", np.float32)
float64 = DType("float64", np.float64)
int64 = DType("int64", np.int64)
bool_ = DType("bool", np.bool_)
DTYPES = {d.name: d for d in (float32, float64, int64, bool_)}
_BY_NP = {d.np: d for d in DTYPES.values()}
# PyTorch's spellings: torch.float is float32, torch.double float64, torch.long int64
_ALIASES = {"float": float32, "double": float64, "long": int64}


def as_dtype(spec) -> DType:
    """Turn a DType, a name (``"float32"``) or a NumPy dtype into a DType.

    Raises DTypeError for anything else, naming the accepted dtypes.
    """
    if isinstance(spec, DType):
        return spec
    if isinstance(spec, str):
        d = DTYPES.get(spec) or _ALIASES.get(spec)
        if d is not None:
            return d
    else:
        try:
            npd = np.dtype(spec)
        except TypeError:
            npd = None
        if npd is not None:
            if npd in _BY_NP:
                return _BY_NP[npd]
            if npd.kind == "f":
                return float64 if npd.itemsize > 4 else float32
            if npd.kind in "iu":
                return int64
    raise DTypeError(f"unknown dtype {spec!r}; use one of {', '.join(DTYPES)}")


def dtype_of(arr) -> DType:
    """DType of a backend array (unknown kinds map to the nearest supported one)."""
    d = _BY_NP.get(arr.dtype)
    return d if d is not None else as_dtype(arr.dtype)


def is_floating(d: DType) -> bool:
    return d.is_floating


_default_dtype: ContextVar[DType] = ContextVar("autodsl_default_dtype", default=float64)
_default_device: ContextVar[str] = ContextVar("autodsl_default_device", default="cpu")


def get_default_dtype() -> DType:
    """The dtype that floating-point literals and creation functions use (float64 unless set)."""
    return _default_dtype.get()


def set_default_dtype(dtype) -> None:
    """Set the default floating dtype (``float32`` or ``float64``).

    Raises DTypeError for a non-floating dtype.
    """
    d = as_dtype(dtype)
    if not d.is_floating:
        raise DTypeError(f"the default dtype must be a floating dtype, not {d.name}; use float32 or float64")
    _default_dtype.set(d)


def get_default_device() -> str:
    """The device new tensors go to when none is given ("cpu" unless set)."""
    return _default_device.get()


def set_default_device(device) -> None:
    """Set the default device ("cpu" or "cuda"); raises DeviceError if it is unavailable."""
    _default_device.set(check_device(device))


@contextlib.contextmanager
def defaults(device=None, dtype=None):
    """Scope the default device and dtype (a Session wraps each run in this)."""
    tokens = []
    if device is not None:
        tokens.append((_default_device, _default_device.set(check_device(device))))
    if dtype is not None:
        d = as_dtype(dtype)
        if not d.is_floating:
            raise DTypeError(f"the default dtype must be a floating dtype, not {d.name}; use float32 or float64")
        tokens.append((_default_dtype, _default_dtype.set(d)))
    try:
        yield
    finally:
        for var, tok in reversed(tokens):
            var.reset(tok)


_cupy = None


def _load_cupy():
    global _cupy
    if _cupy is None:
        try:
            import cupy  # noqa: PLC0415  (lazy: only when cuda is asked for)
        except Exception as e:  # noqa: BLE001
            raise DeviceError(
                "device 'cuda' needs CuPy, which is not installed or failed to import "
                f"({type(e).__name__}: {e}); install it with `pip install autodsl[gpu]` "
                "on a machine with an NVIDIA GPU, or use device='cpu'") from None
        try:
            n = cupy.cuda.runtime.getDeviceCount()
        except Exception as e:  # noqa: BLE001
            raise DeviceError(f"device 'cuda' is not available: CuPy found no usable GPU ({e}); use device='cpu'") from None
        if n < 1:
            raise DeviceError("device 'cuda' is not available: no GPU was found; use device='cpu'")
        _cupy = cupy
    return _cupy


def check_device(device) -> str:
    """Normalise a device name ("cpu", "cuda", "cuda:0") and check that it can be used."""
    if device is None:
        return get_default_device()
    name = str(device).strip().lower()
    if name == "cpu":
        return "cpu"
    if name in ("cuda", "cuda:0", "gpu"):
        _load_cupy()
        return "cuda"
    raise DeviceError(f"unknown device {device!r}; use 'cpu' or 'cuda'")


def xp(device: str):
    """The array namespace for a device: numpy for "cpu", cupy for "cuda"."""
    if device == "cpu":
        return np
    return _load_cupy()


def device_of(arr) -> str:
    return "cpu" if isinstance(arr, (np.ndarray, np.generic)) else "cuda"


def namespace_of(arr):
    """The array namespace (numpy or cupy) that owns ``arr``."""
    if isinstance(arr, (np.ndarray, np.generic)):
        return np
    return _load_cupy()


def may_share_memory(a, b) -> bool:
    """Whether two arrays of one device may overlap in memory (a cheap bounds check)."""
    if isinstance(a, np.ndarray):
        return isinstance(b, np.ndarray) and np.may_share_memory(a, b)
    return _load_cupy().may_share_memory(a, b)


def scatter_add(target, key, values) -> None:
    """``target[key] += values`` where repeated indices in ``key`` all add up (NumPy's add.at)."""
    if isinstance(target, np.ndarray):
        np.add.at(target, key, values)
    else:
        import cupyx  # noqa: PLC0415  (ships with CuPy)
        cupyx.scatter_add(target, key, values)


def to_host(arr) -> np.ndarray:
    """Copy a backend array to a host NumPy array (no copy for NumPy input)."""
    if isinstance(arr, np.ndarray):
        return arr
    if isinstance(arr, np.generic):
        return np.asarray(arr)
    return _load_cupy().asnumpy(arr)


def asarray(data, dtype: DType | None, device: str):
    """Make a backend array on ``device`` from nested lists, numbers or arrays."""
    mod = xp(device)
    if device != "cpu" and isinstance(data, np.ndarray):
        return mod.asarray(data, dtype=None if dtype is None else dtype.np)
    return mod.asarray(data, dtype=None if dtype is None else dtype.np)


_rng = {"cpu": np.random.default_rng()}


def rng(device: str):
    """The random generator of a device (re-seeded by ``seed``)."""
    g = _rng.get(device)
    if g is None:
        g = _rng[device] = xp(device).random.default_rng()
    return g


def seed(n: int) -> None:
    """Seed every device's random generator, for reproducible ``rand``/``randn``.

    ``n`` is a non-negative integer.
    """
    n = int(n)
    _rng.clear()
    _rng["cpu"] = np.random.default_rng(n)
    if _cupy is not None:
        _rng["cuda"] = _cupy.random.default_rng(n)
