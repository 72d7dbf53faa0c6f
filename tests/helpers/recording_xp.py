"""A recording stand-in for CuPy: arrays that wrap NumPy's and count every read to the host.

``recording_cuda(monkeypatch)`` registers it as the "cuda" device (through the backend's own
``_register``, as array_api_strict and CuPy are registered, with the flavor "cupy", so every
CuPy branch of the backend runs, on a fake ``cupy`` and ``cupyx``) and returns a ``Counter``:

* ``syncs``: device-to-host reads, each a host sync on a GPU: ``bool()``, ``float()``,
  ``int()``, ``index()``, ``.item()``, ``.tolist()``, ``__array__`` / ``__dlpack__`` (NumPy
  reading the array) and ``cupy.asnumpy``; ``where`` lists the stack of each;
* ``uploads``: host-to-device copies (``asarray`` of host data);
* ``copies``: device arrays copied (``asarray(device array, copy=True)``);
* ``written``: ufuncs computed straight into an array (``cupy.subtract(a, b, out=a)``).

Everything is undone by the monkeypatch when the test ends.
"""
from __future__ import annotations

import sys
import traceback
import types

import numpy as np
import pytest

import autodsl.backend as backend


class Counter:
    def __init__(self):
        self.syncs = 0
        self.uploads = self.copies = self.written = 0
        self.where: list[str] = []
        self.on = True

    def sync(self, what: str) -> None:
        if self.on:
            self.syncs += 1
            self.where.append(what + "\n" + "".join(traceback.format_stack(limit=20)[:-2]))

    def reset(self) -> None:
        self.syncs = self.uploads = self.copies = self.written = 0
        self.where = []


COUNTER = Counter()


def _unwrap(v):
    if type(v) is Rec:
        return v._a
    if type(v) is tuple:
        return tuple(_unwrap(x) for x in v)
    if type(v) is list:
        return [_unwrap(x) for x in v]
    return v


def _wrap(v):
    if isinstance(v, np.ndarray):
        return Rec(v)
    if isinstance(v, np.generic):       # CuPy gives 0-d arrays where NumPy gives scalars
        return Rec(np.asarray(v))
    if type(v) is tuple:
        return tuple(_wrap(x) for x in v)
    if isinstance(v, tuple):            # a named tuple (linalg.svd's result)
        return type(v)(*(_wrap(x) for x in v))
    if type(v) is list:
        return [_wrap(x) for x in v]
    return v


class Rec:
    """One device array (a NumPy array inside)."""

    __slots__ = ("_a", "__weakref__")

    def __init__(self, a):
        self._a = a

    # -- facts that need no data --
    shape = property(lambda self: self._a.shape)
    dtype = property(lambda self: self._a.dtype)
    ndim = property(lambda self: self._a.ndim)
    size = property(lambda self: self._a.size)
    T = property(lambda self: Rec(self._a.T))
    mT = property(lambda self: Rec(np.swapaxes(self._a, -1, -2)))
    device = "cuda:0"

    @property
    def base(self):
        return None if self._a.base is None else self._a.base

    def __array_namespace__(self, api_version=None):
        return NS

    def __len__(self):
        return len(self._a)

    # -- reads to the host: counted --
    def __bool__(self):
        COUNTER.sync("bool")
        return bool(self._a)

    def __float__(self):
        COUNTER.sync("float")
        return float(self._a)

    def __int__(self):
        COUNTER.sync("int")
        return int(self._a)

    def __index__(self):
        COUNTER.sync("index")
        return self._a.__index__()

    def item(self):
        COUNTER.sync("item")
        return self._a.item()

    def tolist(self):
        COUNTER.sync("tolist")
        return self._a.tolist()

    def __array__(self, dtype=None, copy=None):
        COUNTER.sync("__array__")
        return self._a if dtype is None else self._a.astype(dtype)

    def __dlpack__(self, **kw):
        COUNTER.sync("__dlpack__")
        return self._a.__dlpack__(**kw)

    def __dlpack_device__(self):
        return self._a.__dlpack_device__()

    def __repr__(self):
        return f"Rec({self._a!r})"

    # -- device work --
    def __getitem__(self, key):
        return _wrap(self._a[_unwrap(key)])

    def __setitem__(self, key, value):
        self._a[_unwrap(key)] = _unwrap(value)

    def astype(self, dtype, copy=True):
        return Rec(self._a.astype(dtype, copy=copy))

    def reshape(self, *shape, **kw):
        return Rec(self._a.reshape(*_unwrap(shape), **kw))

    def copy(self, order="K"):
        COUNTER.copies += 1
        return Rec(self._a.copy(order=order))

    def __neg__(self):
        return _wrap(-self._a)

    def __pos__(self):
        return _wrap(+self._a)

    def __abs__(self):
        return _wrap(abs(self._a))

    def __invert__(self):
        return _wrap(~self._a)

    __hash__ = object.__hash__


def _binary(name):
    op = getattr(np.ndarray, name)

    def method(self, other):
        if type(other) is not Rec and isinstance(other, np.ndarray):
            return NotImplemented       # a host array in device arithmetic: a bug to find
        with np.errstate(all="ignore"):   # (CuPy never warns of inf or nan)
            r = op(self._a, _unwrap(other))
        return r if r is NotImplemented else _wrap(r)
    method.__name__ = name
    return method


for _n in ("add", "sub", "mul", "truediv", "floordiv", "mod", "pow", "matmul", "and", "or", "xor",
           "lshift", "rshift"):
    for _f in (f"__{_n}__", f"__r{_n}__"):
        setattr(Rec, _f, _binary(_f))
    _i = f"__i{_n}__"
    if hasattr(np.ndarray, _i):
        setattr(Rec, _i, (lambda op: lambda self, other: (op(self._a, _unwrap(other)), self)[1])(
            getattr(np.ndarray, _i)))
for _f in ("__eq__", "__ne__", "__lt__", "__le__", "__gt__", "__ge__"):
    setattr(Rec, _f, _binary(_f))


class _Namespace(types.SimpleNamespace):
    """NumPy's functions on Rec arrays (the array namespace of the fake device)."""

    def __getattr__(self, name):
        f = getattr(self._module, name)
        if isinstance(f, types.ModuleType):
            return _Namespace(_module=f)    # xp.linalg, xp.fft: their functions on Rec arrays too
        if isinstance(f, type) or not callable(f):
            return f                # dtypes (xp.int64), constants (xp.inf)
        if name == "asarray":
            def asarray(obj, dtype=None, copy=None, device=None):
                upload = type(obj) is not Rec and not (isinstance(obj, (list, tuple)) and _has_rec(obj))
                if upload:
                    COUNTER.uploads += 1
                elif copy:
                    COUNTER.copies += 1
                # (an upload is a copy into device memory: never the host array itself)
                return Rec(np.array(_unwrap(obj), dtype=dtype, copy=True if copy or upload else None))
            return asarray

        def call(*args, **kw):
            with np.errstate(all="ignore"):   # (CuPy never warns of inf or nan)
                return _wrap(f(*_unwrap(args), **{k: _unwrap(v) for k, v in kw.items()}))
        call.__name__ = name
        return call


def _has_rec(obj) -> bool:
    return any(type(x) is Rec or isinstance(x, (list, tuple)) and _has_rec(x) for x in obj)


NS = _Namespace(_module=np)
for _d in ("float32", "float64", "int32", "int64", "bool"):
    setattr(NS, _d, getattr(np, _d))
NS.__array_api_version__ = "2023.12"


def _ufunc(name):
    f = getattr(np, name)

    def call(a, b, out=None):
        COUNTER.written += out is not None
        with np.errstate(all="ignore"):   # (CuPy never warns of inf or nan)
            r = f(_unwrap(a), _unwrap(b), out=None if out is None else out._a)
        return out if out is not None else _wrap(r)
    return call


def _fake_cupy():
    m = types.ModuleType("cupy")
    m.ndarray = Rec

    def asnumpy(a):
        COUNTER.sync("asnumpy")
        return a._a.copy()
    m.asnumpy = asnumpy
    m.asarray = lambda a, order=None, dtype=None: Rec(np.asarray(_unwrap(a), order=order, dtype=dtype))
    m.may_share_memory = lambda a, b: np.may_share_memory(_unwrap(a), _unwrap(b))
    for n in ("add", "subtract", "multiply", "true_divide"):
        setattr(m, n, _ufunc(n))
    return m


def _fake_cupyx():
    m = types.ModuleType("cupyx")
    m.__path__ = []                     # a package: cupyx.scipy.special below
    m.scatter_add = lambda target, key, values: np.add.at(target._a, _unwrap(key), _unwrap(values))
    return m


def _fake_cupyx_special():
    import scipy.special as sp
    m = types.ModuleType("cupyx.scipy.special")
    for name in ("gammaln", "psi", "polygamma"):
        f = getattr(sp, name)
        setattr(m, name, lambda *args, f=f: _wrap(np.asarray(f(*_unwrap(args)))))
    return m


def recording_cuda(monkeypatch) -> Counter:
    """Make "cuda" the recording device for one test (see the module doc)."""
    for name in ("_native_tables", "_namespaces", "_NS_BY_TYPE", "_DEVICE_BY_TYPE", "_FLAVOR_BY_TYPE"):
        monkeypatch.setattr(backend, name, dict(getattr(backend, name)))
    monkeypatch.setattr(backend, "_cupy", _fake_cupy())
    monkeypatch.setattr(backend, "_cupy_xp", NS)
    cupyx = _fake_cupyx()
    cupyx.scipy = types.ModuleType("cupyx.scipy")
    cupyx.scipy.__path__ = []
    cupyx.scipy.special = _fake_cupyx_special()
    monkeypatch.setitem(sys.modules, "cupyx", cupyx)
    monkeypatch.setitem(sys.modules, "cupyx.scipy", cupyx.scipy)
    monkeypatch.setitem(sys.modules, "cupyx.scipy.special", cupyx.scipy.special)
    backend._register(NS, Rec, "cuda", "cupy")
    COUNTER.reset()
    COUNTER.on = True
    return COUNTER


def stop_recording(counter: Counter) -> None:
    """A test's end: stop counting and drop the constants cached for the fake's arrays (they die
    with it; a later test's fake is another type)."""
    from autodsl.ops.promotion import _CONSTANTS

    counter.on = False
    for k in [k for k in _CONSTANTS if k[1] is Rec]:
        del _CONSTANTS[k]


@pytest.fixture(name="cuda")
def cuda_fixture(monkeypatch):
    """The fixture ``cuda`` of the sync-counting tests (import it into a test module): "cuda" is the recording device for the test; the
    value checks its steps left waiting are read at its end (they pass), so none leaks into the
    next test."""
    from autodsl.core import deferred

    c = recording_cuda(monkeypatch)
    yield c
    deferred.settle()
    stop_recording(c)
