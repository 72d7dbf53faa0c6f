"""The one module that names NumPy, CuPy and array_api_strict.

It maps a device to an array namespace (``xp``) and every other module works
on arrays through that namespace with the Array API standard only
(https://data-apis.org/array-api/): ``xp.sum(a, axis=...)``, ``xp.astype``,
``xp.reshape``, ``xp.isdtype``... The namespaces, chosen with
array-api-compat:

* "cpu": NumPy itself (NumPy >= 2.1 implements the standard in its main
  namespace, so the hot path pays nothing; older NumPy goes through
  ``array_api_compat.numpy``), or ``array_api_strict`` (the standard and
  nothing more) when the environment variable ``AUTODSL_ARRAY_API=strict`` is
  set at import or ``use_namespace("strict")`` is called: the test suite runs
  on it to prove that the code uses nothing NumPy-only.
* "cuda": CuPy through ``array_api_compat.cupy``.
* "dask": ``array_api_compat.dask.array`` (lazy, chunked arrays; ``backend/dask_device.py``
  holds what the device adds: chunks, computing, the scheduler).

What the standard lacks has one implementation per namespace here:
scatter-add (index gradients), indexing patterns the standard leaves out
(an integer array next to a slice, indexed writes), ``may_share_memory``,
contiguous copies, random numbers, host copies, and the floating-point error
state. For ``array_api_strict`` these go through a host NumPy array (DLPack)
and back; that is test-only and never on a fast path.

It also owns the dtype table, the default device and dtype (fields of the
run context, so that a Session can scope them) and the random generators.

Errors: DeviceError for an unknown or unavailable device, DTypeError for an
unknown dtype name, ValueError_ for an unknown namespace name.
"""
from __future__ import annotations

import contextlib
import functools
import sys
import os

import array_api_compat
import numpy as np

from autodsl.context import DEFAULT, current, scoped
from autodsl.errors import DeviceError, DTypeError, TypeError_, ValueError_
from autodsl.backend import dask_device, dask_index, dask_linalg

__all__ = [
    "DType", "float32", "float64", "int32", "int64", "bool_", "DTYPES", "as_dtype",
    "get_default_dtype", "set_default_dtype", "get_default_device",
    "set_default_device", "defaults", "xp", "check_device", "to_host", "seed",
    "is_floating", "namespace_of", "dtype_of", "device_of", "asarray", "may_share_memory",
    "scatter_add", "native_dtype", "kind_of", "copy", "ufunc_inplace", "unshared", "where", "where_nonzero", "zero_of", "writeable", "contiguous", "getitem",
    "setitem", "random_uniform", "random_normal", "fp_errors_off", "fp_errors_restore", "broadcast_shapes",
    "use_namespace", "namespace_name", "SCALAR_TYPES", "inplace_ufunc", "reduce_sum", "reduce_max", "reduce_mean", "min_max", "value_fits", "swap_last", "HOST_BOOL", "HOST_INT", "HOST_FLOAT",
    "is_host_array", "scalar_array", "NAMESPACES", "DEVICES", "is_lazy", "broadcast_to", "grad_copy",
]

# The devices check_device() accepts (a REPL lists these).
DEVICES = ("cpu", "cuda", "dask")

# The names use_namespace() and AUTODSL_ARRAY_API accept for the "cpu" device.
NAMESPACES = ("numpy", "strict")

# Host values (what users pass in and what NumPy's 0-d arithmetic returns).
HOST_BOOL = (bool, np.bool_)
HOST_INT = (int, np.integer)
HOST_FLOAT = (float, np.floating)
SCALAR_TYPES = np.generic          # NumPy scalars: Tensor turns them back into 0-d arrays
scalar_array = np.asarray
# A NumPy array's type: an op's hot path tests ``type(a) is HOST_ARRAY`` (on the host, with a
# NumPy dtype) before it calls on_host or kind_of, which every other array needs.
HOST_ARRAY = np.ndarray
# A host array's float64 dtype (NumPy's one object for it: ``a.dtype is HOST_F64`` is the test), and
# the 0-d float64 array of a Python float: the ops' 0-d fast path (Note [0-d fast path], ops/registry.py).
HOST_F64 = np.dtype(np.float64)
f64_scalar_array = np.array
__all__ += ["HOST_ARRAY", "HOST_F64", "f64_scalar_array"]


def is_host_array(v) -> bool:
    """True for a host NumPy array (user input: ``tensor(np_array)``)."""
    return isinstance(v, np.ndarray)


class DType:
    """A tensor element type: ``float32``, ``float64``, ``int32``, ``int64`` or ``bool``.

    ``np`` is the NumPy dtype (also CuPy's); ``native_dtype(d, xp)`` gives the
    dtype object of any namespace.
    """

    __slots__ = ("name", "np", "is_floating", "kind")

    def __init__(self, name: str, np_dtype):
        self.name = name
        self.np = np.dtype(np_dtype)
        self.kind = self.np.kind           # "f", "i" or "b"
        self.is_floating = self.kind == "f"

    def __repr__(self) -> str:
        return self.name

    def __reduce__(self):
        return (as_dtype, (self.name,))


float32 = DType("float32", np.float32)
float64 = DType("float64", np.float64)
int32 = DType("int32", np.int32)
int64 = DType("int64", np.int64)
bool_ = DType("bool", np.bool_)
DTYPES = {d.name: d for d in (float32, float64, int32, int64, bool_)}
# PyTorch's spellings: torch.float is float32, torch.double float64, torch.int int32, torch.long int64
_ALIASES = {"float": float32, "double": float64, "int": int32, "long": int64}

# Native dtype objects of every loaded namespace, by id (dtype objects are singletons;
# keying by id never compares dtypes of different libraries, which strict warns about).
_BY_ID: dict[int, DType] = {id(d.np): d for d in DTYPES.values()}
_KIND: dict[int, str] = {id(d.np): d.kind for d in DTYPES.values()}


def as_dtype(spec) -> DType:
    """Turn a DType, a name (``"float32"``), a NumPy dtype or a namespace's dtype into a DType.

    Raises DTypeError for anything else, naming the accepted dtypes.
    """
    if isinstance(spec, DType):
        return spec
    d = _BY_ID.get(id(spec))
    if d is not None:
        return d
    if isinstance(spec, str):
        d = DTYPES.get(spec) or _ALIASES.get(spec)
        if d is not None:
            return d
    else:
        try:
            npd = np.dtype(spec)
        except (TypeError, ValueError):     # (ValueError: an object whose .dtype is not NumPy's)
            raise DTypeError(f"a dtype is one of {', '.join(DTYPES)} (dtype=float64) or a tensor's "
                             ".dtype") from None
        if npd.kind == "f":
            return float64 if npd.itemsize > 4 else float32
        if npd.kind in "iu":
            return _int_of(npd)
        if npd.kind == "b":
            return bool_
        what = _ARRAY_KINDS.get(npd.kind, "values that are not numbers")
        raise DTypeError(f"an array of {what} cannot be a tensor; a tensor holds one of "
                         f"{', '.join(DTYPES)}")
    raise DTypeError(f"unknown dtype {spec!r}; use one of {', '.join(DTYPES)}")


# what an array holds, by NumPy's dtype kind, for the dtypes a tensor cannot have
_ARRAY_KINDS = {"U": "text", "S": "bytes", "c": "complex numbers", "O": "arbitrary Python values",
                "M": "dates", "m": "time spans", "V": "records"}


def _int_of(npd) -> DType:
    """int32 for NumPy's int32 (as PyTorch keeps it); every other integer type becomes int64."""
    return int32 if npd.kind == "i" and npd.itemsize == 4 else int64


def dtype_of(arr) -> DType:
    """DType of a backend array (unknown kinds map to the nearest supported one)."""
    d = _BY_ID.get(id(arr.dtype))
    return d if d is not None else _slow_dtype(arr.dtype)


def _by_class(native) -> DType | None:
    """A namespace that makes a new dtype object per array (array_api_strict): look it up
    among that namespace's own dtypes only (they never meet another library's)."""
    table = _BY_DTYPE_CLASS.get(type(native))
    return None if table is None else table.get(native)


def _slow_dtype(native) -> DType:
    d = _by_class(native)
    if d is not None:
        return d
    k = kind_of(native)
    if k == "b":
        return bool_
    if k in "iu":
        return _int_of(native) if isinstance(native, np.dtype) else int64
    if k == "f":
        if isinstance(native, np.dtype):
            return float64 if native.itemsize > 4 else float32
        for ns in _foreign_namespaces():
            with contextlib.suppress(Exception):
                return float64 if ns.finfo(native).bits > 32 else float32
    raise DTypeError(f"unsupported array dtype {native!r}; use one of {', '.join(DTYPES)}")


def kind_of(native) -> str:
    """NumPy's ``kind`` letter ("f", "i", "u", "b", ...) of any namespace's dtype object
    (``arr.dtype``); only "f", "i" and "b" occur in tensors."""
    k = _KIND.get(id(native))
    if k is not None:
        return k
    d = _by_class(native)
    if d is not None:
        return d.kind
    if isinstance(native, np.dtype) or (isinstance(native, type) and issubclass(native, np.generic)):
        return np.dtype(native).kind
    for ns in _foreign_namespaces():
        with contextlib.suppress(Exception):
            for kind, name in (("b", "bool"), ("u", "unsigned integer"), ("i", "signed integer"),
                               ("f", "real floating"), ("c", "complex floating")):
                if ns.isdtype(native, name):
                    return kind
    return "?"


def _foreign_namespaces():
    """The loaded namespaces whose dtypes are not NumPy's."""
    return [ns for ns in _namespaces.values() if ns is not _np_xp and ns is not _cupy_xp]


def native_dtype(d: DType, ns):
    """The dtype object of namespace ``ns`` for DType ``d`` (``xp.float64``...)."""
    if ns is _np_xp or ns is _cupy_xp:
        return d.np
    return _native_tables[id(ns)][d.name]


def is_floating(d: DType) -> bool:
    return d.is_floating


def broadcast_shapes(*shapes) -> tuple:
    """The shape that ``shapes`` broadcast to; ValueError when they do not (host arithmetic)."""
    return tuple(np.broadcast_shapes(*shapes))


def broadcast_shape_or_none(*shapes):
    """``broadcast_shapes(*shapes)``, or None where they do not broadcast (for a caller that
    says so in the language's words)."""
    try:
        return broadcast_shapes(*shapes)
    except ValueError:
        return None


# -- namespaces --------------------------------------------------------------------------------

# NumPy >= 2.1 is the standard in its own namespace (np.astype, np.isdtype, np.permute_dims,
# np.cumulative_prod, reshape(copy=)...); older NumPy goes through the compat wrapper.
_NUMPY_NATIVE = getattr(np, "__array_api_version__", "0") >= "2023.12"
_np_xp = array_api_compat.array_namespace(np.empty(0), use_compat=not _NUMPY_NATIVE)
_cupy_xp = None          # array_api_compat.cupy, once cuda is asked for
_strict_xp = None        # array_api_strict, once asked for
_dask_xp = None          # array_api_compat.dask.array, once dask is asked for
_cpu = [_np_xp, "numpy"]                 # the "cpu" namespace and its name
_native_tables: dict[int, dict] = {}     # id(namespace) -> {"float64": its dtype, ...}
_namespaces: dict[int, object] = {}      # id(namespace) -> namespace
_BY_DTYPE_CLASS: dict[type, dict] = {}   # type of a non-NumPy dtype object -> {its dtypes: DType}
_NS_BY_TYPE: dict[type, object] = {np.ndarray: _np_xp}
_DEVICE_BY_TYPE: dict[type, str] = {np.ndarray: "cpu"}
_FLAVOR_BY_TYPE: dict[type, str] = {np.ndarray: "numpy"}


def _register(ns, array_type, device: str, flavor: str) -> None:
    table = {d.name: getattr(ns, d.name) for d in DTYPES.values()}
    _native_tables[id(ns)] = table
    _namespaces[id(ns)] = ns
    for d in DTYPES.values():
        native = table[d.name]
        if not isinstance(native, np.dtype) and not (isinstance(native, type) and issubclass(native, np.generic)):
            _BY_ID[id(native)] = d
            _KIND[id(native)] = d.kind
            _BY_DTYPE_CLASS.setdefault(type(native), {})[native] = d
    _NS_BY_TYPE[array_type] = ns
    _DEVICE_BY_TYPE[array_type] = device
    _FLAVOR_BY_TYPE[array_type] = flavor


_register(_np_xp, np.ndarray, "cpu", "numpy")


def _load_strict():
    global _strict_xp
    if _strict_xp is None:
        try:
            import array_api_strict  # noqa: PLC0415  (lazy: tests only)
        except ImportError:
            raise ValueError_("the 'strict' array namespace needs array_api_strict; "
                              "install it with `pip install array-api-strict` (it is in the test extra)") from None
        ns = array_api_compat.array_namespace(array_api_strict.asarray(0.0))
        _register(ns, type(ns.asarray(0.0)), "cpu", "strict")
        _strict_xp = ns
    return _strict_xp


def _load_dask():
    global _dask_xp
    if _dask_xp is None:
        ns, array_type = dask_device.load()
        _register(ns, array_type, "dask", "dask")
        _dask_xp = ns
    return _dask_xp


def use_namespace(name: str):
    """Make the "cpu" device use the array namespace ``name``: "numpy" (the default) or
    "strict" (``array_api_strict``: the Array API standard and nothing else, for tests).

    Tensors made before the switch keep their arrays; do not mix them with new ones.
    Returns a context manager that switches back: ``with use_namespace("strict"): ...``.
    Raises ValueError_ for another name.
    """
    prev = _cpu[1]
    if name == "numpy":
        _cpu[:] = [_np_xp, "numpy"]
    elif name == "strict":
        _cpu[:] = [_load_strict(), "strict"]
    else:
        raise ValueError_(f"unknown array namespace {name!r}; use one of {', '.join(NAMESPACES)}")
    return _Restore(prev)


class _Restore:
    def __init__(self, prev):
        self.prev = prev

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        use_namespace(self.prev)
        return False


def namespace_name(device: str = "cpu") -> str:
    """"numpy" or "strict" for "cpu", "cupy" for "cuda", "dask" for "dask"."""
    return _cpu[1] if device == "cpu" else "dask" if device == "dask" else "cupy"


def get_default_dtype() -> DType:
    """The dtype that floating-point literals and creation functions use (float64 unless set)."""
    return current().default_dtype or DEFAULT.default_dtype or float64


def _defaults_holder():
    ctx = current()
    return ctx if ctx.owns_defaults else DEFAULT


def _floating(dtype) -> DType:
    d = as_dtype(dtype)
    if not d.is_floating:
        raise DTypeError(f"the default dtype must be a floating dtype, not {d.name}; use float32 or float64")
    return d


def set_default_dtype(dtype) -> None:
    """Set the default floating dtype (``float32`` or ``float64``) of the current run context
    (the Python API's, or inside a Session's code, the session's).

    Raises DTypeError for a non-floating dtype.
    """
    _defaults_holder().default_dtype = _floating(dtype)


def get_default_device() -> str:
    """The device new tensors go to when none is given ("cpu" unless set)."""
    return current().default_device or DEFAULT.default_device


def set_default_device(device) -> None:
    """Set the default device ("cpu", "cuda" or "dask"); raises DeviceError if it is unavailable."""
    _defaults_holder().default_device = check_device(device)


@contextlib.contextmanager
def defaults(device=None, dtype=None):
    """Scope the default device and dtype (a Session wraps each run in this)."""
    fields = {}
    if device is not None:
        fields["default_device"] = check_device(device)
    if dtype is not None:
        fields["default_dtype"] = _floating(dtype)
    with scoped(**fields):
        yield


_cupy = None


def _load_cupy():
    global _cupy, _cupy_xp
    if _cupy is None:
        try:
            import cupy  # noqa: PLC0415  (lazy: only when cuda is asked for)
        except ModuleNotFoundError as e:
            if e.name not in ("cupy", None):
                raise DeviceError(f"device 'cuda' needs CuPy, which is installed but could not load "
                                  f"the module {e.name}; reinstall CuPy for this machine's CUDA "
                                  "(`pip install autodsl[gpu]`), or use device='cpu'") from None
            raise DeviceError("device 'cuda' needs CuPy, which is not installed; install it with "
                              "`pip install autodsl[gpu]` on a machine with an NVIDIA GPU, or use "
                              "device='cpu'") from None
        except Exception as e:  # noqa: BLE001  (a broken install: its own words are the clue)
            raise DeviceError(
                "device 'cuda' needs CuPy, which is installed but failed to load "
                f"({e}); reinstall CuPy for this machine's CUDA (`pip install autodsl[gpu]`), "
                "or use device='cpu'") from None
        try:
            n = cupy.cuda.runtime.getDeviceCount()
        except Exception as e:  # noqa: BLE001
            raise DeviceError(f"device 'cuda' is not available: CuPy found no usable GPU ({e}); use device='cpu'") from None
        if n < 1:
            raise DeviceError("device 'cuda' is not available: no GPU was found; use device='cpu'")
        _cupy_xp = array_api_compat.array_namespace(cupy.empty(0))
        _register(_cupy_xp, cupy.ndarray, "cuda", "cupy")
        _cupy = cupy
    return _cupy


def check_device(device) -> str:
    """Normalise a device name ("cpu", "cuda", "cuda:0", "dask") and check that it can be used."""
    if device is None:
        return get_default_device()
    if not isinstance(device, str):
        raise DeviceError("a device is named by a string: \"cpu\", \"cuda\" or \"dask\" (or a tensor's .device)")
    name = device.strip().lower()
    if name == "cpu":
        return "cpu"
    if name in ("cuda", "cuda:0", "gpu"):
        _load_cupy()
        return "cuda"
    if name == "dask":
        _load_dask()
        return "dask"
    raise DeviceError(f"unknown device {device!r}; use 'cpu', 'cuda' or 'dask'")


def xp(device: str):
    """The array namespace of a device (NumPy or array_api_strict for "cpu", CuPy for "cuda",
    array_api_compat's dask.array for "dask")."""
    if device == "cpu":
        return _cpu[0]
    if device == "dask":
        return _load_dask()
    _load_cupy()
    return _cupy_xp


def _flavor(arr) -> str:
    f = _FLAVOR_BY_TYPE.get(type(arr))
    if f is None:
        _namespace_slow(arr)
        f = _FLAVOR_BY_TYPE.get(type(arr), "numpy")
    return f


def device_of(arr) -> str:
    """"cpu", "cuda" or "dask": where a backend array lives."""
    d = _DEVICE_BY_TYPE.get(type(arr))
    if d is None:
        _namespace_slow(arr)
        d = _DEVICE_BY_TYPE.get(type(arr), "cpu")
    return d


def namespace_of(arr):
    """The array namespace that owns ``arr`` (NumPy, array_api_strict or CuPy's)."""
    ns = _NS_BY_TYPE.get(type(arr))
    return ns if ns is not None else _namespace_slow(arr)


def _namespace_slow(arr):
    if isinstance(arr, np.generic):
        return _np_xp
    if array_api_compat.is_cupy_array(arr):
        _load_cupy()
        return _cupy_xp
    if _strict_xp is None and type(arr).__module__.startswith("array_api_strict"):
        _load_strict()
    if _dask_xp is None and dask_device.is_dask(arr):
        _load_dask()
    ns = _NS_BY_TYPE.get(type(arr))
    if ns is None:
        raise DeviceError(f"autodsl does not work on arrays of type {type(arr).__name__}")
    return ns


# -- what the standard lacks: one implementation per namespace ------------------------------

def to_host(arr, copy: bool = False) -> np.ndarray:
    """A host NumPy array with the values of a backend array (no copy for NumPy input
    unless ``copy``; a host array is never shared with a CuPy one)."""
    if type(arr) is np.ndarray:
        return arr.copy(order="K") if copy else arr
    if isinstance(arr, (np.ndarray, np.generic)):
        return np.array(arr, copy=True) if copy else np.asarray(arr)
    f = _flavor(arr)
    if f == "cupy":
        return _cupy.asnumpy(arr)
    if f == "dask":                      # computed (once per graph: printing twice computes once)
        host = dask_device.to_host(arr)
        return host.copy() if copy else host
    host = np.from_dlpack(arr)           # array_api_strict: a zero-copy view through DLPack
    return host.copy() if copy else host


def asarray(data, dtype: DType | None, device: str, copy: bool | None = None, chunks=None):
    """Make a backend array on ``device`` from nested lists, numbers or host/backend arrays.

    ``copy=True`` always copies; None copies only when needed. ``chunks`` (dask's meaning,
    "auto" when None) is read on the "dask" device only.
    """
    mod = xp(device)
    nd = None if dtype is None else native_dtype(dtype, mod)
    if device == "dask":
        if dask_device.is_dask(data):       # (immutable: a copy would be the same graph)
            arr = data if nd is None or data.dtype == nd else mod.astype(data, nd)
            arr = dask_device.known_chunks(arr)     # (a masked dask array's sizes are nan)
            return arr if chunks is None else arr.rechunk(chunks)
        if isinstance(data, np.memmap):     # read lazily, a chunk at a time (converted there too)
            arr = dask_device.from_host(data, chunks)
            return arr if nd is None or arr.dtype == nd else mod.astype(arr, nd)
        if not isinstance(data, np.ndarray):
            data = np.asarray(to_host(data) if hasattr(data, "__dlpack__") else data, dtype=nd)
        elif nd is not None and data.dtype != nd:
            data = data.astype(nd)
        elif copy:                          # the caller may write into its array later
            data = data.copy()
        return dask_device.from_host(data, chunks)
    # a cast: IEEE results (1e300 in float32 is inf), as torch gives, without NumPy's warning
    # (CuPy never warns; float64 holds every Python float)
    token = None if nd is None or device == "cuda" or mod is np and nd == np.float64 else fp_errors_off()
    try:
        return mod.asarray(data, dtype=nd) if copy is None else mod.asarray(data, dtype=nd, copy=copy)
    finally:
        if token is not None:
            fp_errors_restore(token)


def special(name: str, arr, *before):
    """``scipy.special.<name>(*before, arr)`` (``cupyx.scipy.special``'s for a CuPy array), in
    arr's dtype and on its device: lgamma, digamma and polygamma (ops/special.py). SciPy is
    imported on first use, so that importing autodsl stays fast."""
    if device_of(arr) == "cuda":
        import cupyx.scipy.special as sp  # noqa: PLC0415  (optional: only with CuPy arrays)
        return namespace_of(arr).astype(getattr(sp, name)(*before, arr), arr.dtype, copy=False)
    import scipy.special as sp  # noqa: PLC0415  (on first use)
    if device_of(arr) == "dask":         # chunk by chunk, lazily
        fn = getattr(sp, name)
        return arr.map_blocks(lambda b: fn(*before, b).astype(b.dtype, copy=False), dtype=arr.dtype)
    return asarray(getattr(sp, name)(*before, to_host(arr)), dtype_of(arr), "cpu")


_INT_OF = {np.dtype(np.float32): np.int32, np.dtype(np.float64): np.int64}


def zero_of(arr):
    """A 0-d +0 of ``arr``'s dtype on its device (shared: never write into it)."""
    key = (type(arr), arr.dtype)
    z = _ZEROS.get(key)
    if z is None:
        mod = namespace_of(arr)
        z = _ZEROS[key] = mod.zeros((), dtype=arr.dtype)
    return z


_ZEROS: dict = {}


def where(cond, a, b):
    """``where(cond, a, b)`` elementwise (the standard's ``where``).

    NumPy's where branches on every element and runs ~10x slower than arithmetic on
    a random mask, and relu's, clamp's and max's gradients are ``where(mask, g, 0)``:
    for that form (a float array and a 0-d +0.0 of its dtype, the mask of a's shape)
    the select is done on the bits instead: ``a``'s bits as integers times the mask's bytes
    (0 or 1), one pass, which gives exactly ``where``'s result (nan, inf and -0.0 of ``a``
    kept where the mask is true, +0.0 elsewhere). (The bit-and with ``-mask`` it replaced
    made an integer mask first: 51 against 43 us at 256 x 512 float32, NumPy's own
    ``g * (x > 0)`` 39 us.)
    """
    if type(a) is np.ndarray and type(cond) is np.ndarray and type(b) is np.ndarray:
        it = _INT_OF.get(a.dtype)
        if (it is not None and b.ndim == 0 and b.dtype == a.dtype and cond.dtype == np.bool_
                and cond.shape == a.shape and b == 0 and not np.signbit(b)):
            return np.multiply(a.view(it), cond.view(np.uint8), dtype=it).view(a.dtype)
        it = _INT_OF.get(b.dtype)
        # the mirrored form, where(mask, +0, b) (relu's gradient as torch tests it, x <= 0, so
        # that a nan x passes the gradient): b's bits times not-mask
        if (it is not None and a.ndim == 0 and a.dtype == b.dtype and cond.dtype == np.bool_
                and cond.shape == b.shape and a == 0 and not np.signbit(a)):
            return np.multiply(b.view(it), np.logical_not(cond).view(np.uint8), dtype=it).view(b.dtype)
    return namespace_of(a).where(cond, a, b)


def where_nonzero(x, a):
    """``where(x != 0, a, +0)``: ``a`` where ``x`` is nonzero (nan included), +0.0 elsewhere;
    ``x`` and ``a`` of one shape. On the host the select is on the bits, as ``where``'s: ``a``'s
    bits times the mask's bytes, one pass after the compare, nan, inf and -0.0 of ``a`` kept."""
    if type(a) is np.ndarray and type(x) is np.ndarray and x.shape == a.shape:
        it = _INT_OF.get(a.dtype)
        if it is not None:
            return np.multiply(a.view(it), np.not_equal(x, 0).view(np.uint8), dtype=it).view(a.dtype)
    return namespace_of(a).where(x != 0, a, zero_of(a))


_UFUNCS = {"add": np.add, "subtract": np.subtract, "multiply": np.multiply, "divide": np.true_divide}


def reduce_sum(a, axis, keepdims: bool):
    """``xp.sum(a, axis=axis, keepdims=keepdims)``; on a NumPy array straight through
    ``np.add.reduce``, which is what ``np.sum`` calls (the same result, without its wrapper)."""
    if type(a) is np.ndarray:
        return _add_reduce(a, axis=axis, keepdims=keepdims)
    return namespace_of(a).sum(a, axis=axis, keepdims=keepdims)


def reduce_max(a, axis, keepdims: bool):
    """``xp.max(a, axis=axis, keepdims=keepdims)`` of a non-empty array; on a NumPy array straight
    through ``np.maximum.reduce``, which is what ``np.max`` calls (the same result, without its
    wrapper)."""
    if type(a) is np.ndarray:
        return _max_reduce(a, axis=axis, keepdims=keepdims)
    return namespace_of(a).max(a, axis=axis, keepdims=keepdims)


def value_fits(value, dtype, xp=np) -> bool:
    """Whether arrays of ``dtype`` (of namespace ``xp``) hold the number ``value``: an integer dtype
    no nan, inf or number outside its range; a float dtype no finite number beyond its largest
    (nan and inf it holds); bool anything (torch: "value cannot be converted to type ... without
    overflow")."""
    k = kind_of(dtype)
    if k in ("i", "u"):
        info = xp.iinfo(dtype)
        return value == value and abs(value) != float("inf") and info.min <= value <= info.max
    if k == "f":
        return value != value or abs(value) == float("inf") or abs(value) <= float(xp.finfo(dtype).max)
    return True


def min_max(a) -> tuple:
    """``(xp.min(a), xp.max(a))`` of a non-empty array (0-d arrays); on a NumPy array straight
    through the ufuncs' ``reduce`` (``np.min`` and ``np.max`` without their wrappers)."""
    if type(a) is np.ndarray:
        return _min_reduce(a, axis=None), _max_reduce(a, axis=None)
    xp = namespace_of(a)
    return xp.min(a), xp.max(a)


def reduce_mean(a, axis, keepdims: bool, count: int):
    """``xp.mean(a, axis=axis, keepdims=keepdims)`` of ``count`` elements per result; on a
    floating NumPy array, the sum over ``np.add.reduce`` divided by the count, which is what
    ``np.mean`` computes for float32 and float64."""
    if type(a) is np.ndarray and a.dtype.kind == "f" and a.dtype.itemsize >= 4:
        return _add_reduce(a, axis=axis, keepdims=keepdims) / count
    if count == 0:      # a mean of nothing is nan (0/0), without NumPy's "Mean of empty slice" warning
        return namespace_of(a).sum(a, axis=axis, keepdims=keepdims) / count
    return namespace_of(a).mean(a, axis=axis, keepdims=keepdims)


def swap_last(a):
    """``a`` with its last two dims swapped (a view; ``a`` itself below 2 dims)."""
    n = a.ndim
    if n < 2:
        return a
    if type(a) is np.ndarray:
        return a.swapaxes(-1, -2)
    perm = list(range(n))
    perm[-1], perm[-2] = n - 2, n - 1
    return namespace_of(a).permute_dims(a, tuple(perm))


_add_reduce = np.add.reduce
_min_reduce, _max_reduce = np.minimum.reduce, np.maximum.reduce


def inplace_ufunc(name: str, device: str = "cpu"):
    """The ufunc ``ufunc_inplace(name, ...)`` calls for arrays of ``device`` (NumPy's, or CuPy's on
    "cuda"): a compiled program calls it directly."""
    if device == "cuda":
        return getattr(_cupy, _CUPY_UFUNCS[name])
    return _UFUNCS[name]


def ufunc_inplace(name: str, arr, other) -> bool:
    """``arr = arr <name> other`` computed straight into arr's memory (NumPy's ``out=``), where that
    is exactly what computing a new array and copying it back would give: ``arr`` a writeable
    floating NumPy array, ``other`` a float (or an int below 2**53) or a NumPy array of arr's dtype
    that broadcasts to arr's shape. Returns False (and does nothing) otherwise."""
    if type(arr) is not np.ndarray:
        return _flavor(arr) == "cupy" and _cupy_ufunc_inplace(name, arr, other)
    if arr.dtype.kind != "f" or not arr.flags.writeable or not _fits_in_place(arr, other):
        return False
    _UFUNCS[name](arr, other, out=arr)      # NumPy copies first where other overlaps arr
    return True


def _cupy_ufunc_inplace(name: str, arr, other) -> bool:
    """``ufunc_inplace`` for a CuPy array: its ufuncs take ``out=`` as NumPy's do (no new array,
    no copy back). CuPy does not copy an operand that overlaps ``out`` first, as NumPy does, so
    an overlapping one other than arr itself goes the copying way."""
    if kind_of(arr.dtype) != "f" or not _fits_in_place(arr, other):
        return False
    if type(other) is type(arr) and other is not arr and _cupy.may_share_memory(arr, other):
        return False
    getattr(_cupy, _CUPY_UFUNCS[name])(arr, other, out=arr)
    return True


def _fits_in_place(arr, other) -> bool:
    """Whether ``arr <op> other`` has arr's shape and dtype whatever other's values: ``other`` an
    array of arr's type and dtype that broadcasts to arr's shape, a float, or an int that a
    float64 holds exactly (below 2**53)."""
    to = type(other)
    if to is type(arr):
        if other.dtype != arr.dtype:
            return False
        if other.shape == arr.shape:
            return True
        try:
            return np.broadcast_shapes(other.shape, arr.shape) == arr.shape
        except ValueError:
            return False
    return to is float or (to is int and -2**53 < other < 2**53)


_CUPY_UFUNCS = {"add": "add", "subtract": "subtract", "multiply": "multiply", "divide": "true_divide"}


def unshared(arr, refs: int) -> bool:
    """True when ``arr`` is a writeable NumPy or CuPy array that owns its memory and that
    nothing holds but the ``refs`` references its caller knows of (then it may be kept instead
    of copied, as PyTorch's AccumulateGrad steals a gradient nobody else holds). Never for a
    dask array (immutable: nothing to steal) or array_api_strict's (its base is not visible)."""
    if type(arr) is np.ndarray:
        return arr.base is None and arr.flags.writeable and sys.getrefcount(arr) <= refs + 1   # +1: getrefcount's
    return _flavor(arr) == "cupy" and arr.base is None and sys.getrefcount(arr) <= refs + 1


# Hosts: namespaces whose values are in host memory, where reading one costs no host sync
_HOST_FLAVORS = frozenset({"numpy", "strict"})


def on_host(arr) -> bool:
    """True when reading ``arr``'s values costs nothing: a NumPy (or array_api_strict) array.
    False on "cuda" (a read waits for the GPU: a host sync) and on a lazy device (a read
    computes the graph): ops test values (``if any(...)``) only where this is true, and
    otherwise compute both branches with ``where`` or leave the test to ``core/deferred.py``."""
    return type(arr) is np.ndarray or _flavor(arr) in _HOST_FLAVORS


__all__ += ["on_host"]


def copy(arr):
    """A copy with its own storage (NumPy: the same memory layout, as ``clone`` promises)."""
    if type(arr) is np.ndarray:
        return arr.copy(order="K")
    if isinstance(arr, np.generic):     # immutable (a compiled program's 0-d values): itself
        return arr
    if _flavor(arr) == "dask":          # a new array object (dask's item assignment rebinds one)
        return arr.copy()
    return namespace_of(arr).asarray(arr, copy=True)


def is_lazy(arr) -> bool:
    """Whether ``arr`` is a graph computed later (a dask array): its values are not at hand."""
    return _FLAVOR_BY_TYPE.get(type(arr)) == "dask"


def broadcast_to(a, shape: tuple):
    """``a`` broadcast to ``shape`` (a read-only view); on dask in chunks that keep a's and cut
    the new dims in dask's "auto" sizes (``dask_device.broadcast_to``)."""
    if _FLAVOR_BY_TYPE.get(type(a)) == "dask":
        return dask_device.broadcast_to(a, shape)
    return namespace_of(a).broadcast_to(a, shape)


def grad_copy(g, like):
    """A copy of the gradient array ``g`` to become the ``.grad`` of a leaf whose array is
    ``like``: on dask a new array object in ``like``'s chunks (a gradient keeps its leaf's
    chunks however the backward cut them), elsewhere ``copy(g)``."""
    if _FLAVOR_BY_TYPE.get(type(g)) == "dask":
        return dask_device.rechunk_like(g, like).copy()
    return copy(g)


def rebind(arr, new) -> None:
    """Make ``arr`` hold ``new``'s values (its shape and dtype), seen by everything that holds
    ``arr``: written into its memory, or on dask (immutable arrays) the array object made to
    stand for ``new``'s graph, as dask's own item assignment does."""
    if _FLAVOR_BY_TYPE.get(type(arr)) == "dask":
        dask_index.rebind(arr, new)
    else:
        arr[...] = new


__all__ += ["rebind"]


def per_matrix(fn, arrays, core: int):
    """``fn(*arrays)`` for arrays of square-matrix batches (..., n, n); on dask, ``fn`` runs on
    NumPy blocks of whole matrices (backend/dask_linalg.py), ``core`` being the result's matrix
    dims (0 for det, 2 for inverse, solve, the cofactor)."""
    if _FLAVOR_BY_TYPE.get(type(arrays[0])) == "dask":
        dt = arrays[-1].dtype     # NumPy's linalg gives float64 for integer matrices
        return dask_linalg.per_matrix(fn, arrays, core, dt if kind_of(dt) == "f" else np.float64)
    return fn(*arrays)


__all__ += ["per_matrix"]


def writeable(arr) -> bool:
    """Whether ``arr[...] = v`` may write into arr (a broadcast view may not)."""
    if type(arr) is np.ndarray:
        return arr.flags.writeable
    f = _flavor(arr)
    if f == "strict":
        return np.from_dlpack(arr).flags.writeable
    return True


def contiguous(arr):
    """``arr`` in row-major (C) order, copied only when it is not (PyTorch's cat/stack results are)."""
    f = _flavor(arr)
    if f == "numpy":
        return np.asarray(arr, order="C")         # (ascontiguousarray would make a 0-d array 1-d)
    if f == "cupy":
        return _cupy.asarray(arr, order="C")
    if f == "dask":                     # (no memory layout to speak of)
        return arr
    host = np.from_dlpack(arr)
    return arr if host.flags.c_contiguous else namespace_of(arr).asarray(np.ascontiguousarray(host))


def may_share_memory(a, b) -> bool:
    """Whether two arrays of one device may overlap in memory (a cheap bounds check)."""
    if type(a) is np.ndarray:
        return type(b) is np.ndarray and np.may_share_memory(a, b)
    f = _flavor(a)
    if f == "cupy":
        return _cupy.may_share_memory(a, b)
    if f == "dask":                     # graphs, not memory: nothing is shared
        return False
    if _flavor(b) != f:
        return False
    return bool(np.may_share_memory(np.from_dlpack(a), np.from_dlpack(b)))


def _standard_key(arr, key: tuple, set_: bool) -> bool:
    """Whether the standard defines ``arr[key]``: basic indices with an Ellipsis (or one per
    dim), integer arrays with ints and one per dim (reading only), or one bool mask alone."""
    arrays = mask = False
    basic = 0
    for k in key:
        if k is None or k is Ellipsis or isinstance(k, slice):
            basic += 1
        elif not isinstance(k, int):
            arrays = True
            mask = mask or kind_of(k.dtype) == "b"
    if not arrays:
        return True
    if mask:
        return len(key) == 1
    return not set_ and not basic and len(key) == arr.ndim


def _full_key(key: tuple) -> tuple:
    """A basic index made explicit for the standard: a trailing Ellipsis where it has none
    (NumPy implies it; ``x[0]`` of a matrix is ``x[0, ...]``)."""
    for k in key:
        if k is Ellipsis:
            return key
        if not (k is None or isinstance(k, (int, slice))):
            return key
    return key + (Ellipsis,)


def _host_key(key):
    return tuple(to_host(k) if not (k is None or k is Ellipsis or isinstance(k, (int, slice))) else k
                 for k in key)


def getitem(arr, key: tuple):
    """``arr[key]`` with NumPy's indexing rules (ints, slices, None, ..., integer arrays,
    bool masks, in any mix); basic indices give views. IndexError as NumPy raises it."""
    key = _full_key(key)
    if type(arr) is np.ndarray:
        return arr[key]
    f = _flavor(arr)
    if f == "dask":                     # nd fancy indexing and masks, lazily (backend/dask_index.py)
        return dask_index.getitem(arr, key)
    if f != "strict" or _standard_key(arr, key, False):
        return arr[key]
    return namespace_of(arr).asarray(to_host(arr)[_host_key(key)])


def setitem(arr, key: tuple, value) -> None:
    """``arr[key] = value`` with NumPy's indexing rules; ``value`` (an array of arr's dtype,
    or a number) broadcasts to the indexed shape."""
    key = _full_key(key)
    if not isinstance(value, (int, float, bool)) and value.dtype != arr.dtype:
        value = namespace_of(value).astype(value, arr.dtype)      # NumPy casts; the standard does not
    if type(arr) is not np.ndarray and _flavor(arr) == "dask":
        dask_index.setitem(arr, key, value)
        return
    if type(arr) is np.ndarray or _flavor(arr) != "strict" or _standard_key(arr, key, True):
        arr[key] = value
        return
    host = to_host(arr, copy=True)
    host[_host_key(key)] = value if isinstance(value, (int, float, bool)) else to_host(value)
    arr[...] = namespace_of(arr).asarray(host)


def scatter_add(target, key, values) -> None:
    """``target[key] += values`` where repeated indices in ``key`` all add up (NumPy's add.at)."""
    f = _flavor(target)
    if f == "numpy":
        np.add.at(target, key, values)
    elif f == "cupy":
        import cupyx  # noqa: PLC0415  (ships with CuPy)
        cupyx.scatter_add(target, key, values)
    elif f == "dask":
        dask_index.scatter_add(target, key, values)
    else:
        host = to_host(target, copy=True)
        np.add.at(host, _host_key(key), to_host(values))
        target[...] = namespace_of(target).asarray(host)


# NumPy warns (or raises, under np.seterr) where IEEE arithmetic gives inf or nan;
# PyTorch does neither. CuPy never warns; array_api_strict runs on NumPy.
# NumPy 2 keeps its error state in a ContextVar; setting it directly costs about a sixth
# of entering np.errstate, and ops from the Python API enter one scope each.
try:
    from numpy._core._ufunc_config import _extobj_contextvar as _np_errstate_var
    with np.errstate(all="ignore"):
        _IGNORE_ALL = _np_errstate_var.get()
except (ImportError, AttributeError):      # another NumPy layout: the public context manager
    _np_errstate_var = None


def fp_errors_off():
    """Start ignoring FP errors (no context manager object: an op's hot path uses it, and so
    does ``core.quiet.ieee``); give what it returns to ``fp_errors_restore`` on every exit path."""
    if _np_errstate_var is not None:
        return _np_errstate_var.set(_IGNORE_ALL)
    err = np.errstate(all="ignore")
    err.__enter__()
    return err


def fp_errors_restore(token) -> None:
    if _np_errstate_var is not None:
        _np_errstate_var.reset(token)
    else:
        token.__exit__(None, None, None)


if _np_errstate_var is not None:
    # the same two as C calls, without a Python frame each: every op of the Python API makes both
    fp_errors_off = functools.partial(_np_errstate_var.set, _IGNORE_ALL)
    fp_errors_restore = _np_errstate_var.reset


# -- random numbers -------------------------------------------------------------------------------
# The generators live on the run context (``ctx.rng``): the Python API's are DEFAULT's (its
# threads share them, as PyTorch's threads share its default generator); a Session has its own,
# so a script's seed() leaves the host program's numbers alone and two sessions draw apart.

def _generators() -> dict:
    ctx = current()
    return ctx.rng if ctx.owns_defaults else DEFAULT.rng


def _generator(device: str):
    gens = _generators()
    g = gens.get(device)
    if g is None:
        n = gens.get("seed")        # a device first used after seed(n) starts from n too
        if device in ("cpu", "dask"):    # dask draws on the host (or seeds its chunks from it)
            g = np.random.default_rng(n)
        else:
            g = _load_cupy().random.default_rng(n)
        gens[device] = g
    return g


def _on_device(host, device: str):
    if device == "cpu" and _cpu[0] is not _np_xp:
        return _cpu[0].asarray(host)
    return host


def random_uniform(shape: tuple, dtype: DType, device: str, chunks=None):
    """Uniform numbers in [0, 1) of ``shape`` and ``dtype`` on ``device`` (see ``seed``;
    ``chunks`` on "dask" only, see ``dask_device.random``)."""
    if device == "dask":
        return dask_device.random(_generator(device), "uniform", shape, dtype.np, chunks)
    return _on_device(_generator(device).random(shape).astype(dtype.np), device)


def random_normal(shape: tuple, dtype: DType, device: str, chunks=None):
    """Standard normal numbers of ``shape`` and ``dtype`` on ``device`` (see ``seed``;
    ``chunks`` on "dask" only)."""
    if device == "dask":
        return dask_device.random(_generator(device), "normal", shape, dtype.np, chunks)
    return _on_device(_generator(device).standard_normal(shape).astype(dtype.np), device)


def seed(n: int) -> None:
    """Seed the random generators of ``rand``/``randn`` (every device's), for reproducible
    numbers: from Python, the program's (shared by its threads); in a session's script, that
    session's own, so the host program's numbers do not change and two sessions seeded alike
    draw the same numbers.

    ``n`` is a non-negative whole number (3.0 is taken as 3); TypeError_ for a value that is not
    a number, ValueError_ for a negative or fractional one.
    """
    number = not isinstance(n, HOST_BOOL) and isinstance(n, (*HOST_INT, *HOST_FLOAT))
    if not number or not float(n).is_integer() or n < 0:
        shown = (str(n).lower() if number or isinstance(n, HOST_BOOL) else f'"{n}"' if isinstance(n, str)
                 else "none" if n is None else "a list" if isinstance(n, list)
                 else "a function" if callable(n) else "that value")
        raise (ValueError_ if number else TypeError_)(
            f"seed() takes a whole number 0 or more, such as seed(0), not {shown}")
    n = int(n)
    gens = _generators()
    gens.clear()
    gens["seed"] = n
    gens["cpu"] = np.random.default_rng(n)
    if _cupy is not None:
        gens["cuda"] = _cupy.random.default_rng(n)


_env = os.environ.get("AUTODSL_ARRAY_API", "").strip().lower()
if _env and _env != "numpy":
    use_namespace(_env)
