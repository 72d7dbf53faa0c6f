"""Making tensors: tensor, zeros, ones, full, rand, randn, arange, linspace, eye, seed.

Every function takes ``dtype=`` (float64 by default for real numbers, or the
session's default), ``device=`` ("cpu", "cuda" or "dask") and ``requires_grad=``; the
creation functions also take ``chunks=``, dask's chunk sizes ("auto" by default: about 128 MiB
per chunk; a number, a tuple per dim, or -1 for a whole dim), read on the "dask" device only and
ignored elsewhere, so that a script runs unchanged on every device.
"""
from __future__ import annotations

import math

import autodsl.backend as backend
from autodsl.backend import dask_device, seed
from autodsl.context import current
from autodsl.errors import DTypeError, ShapeError, TypeError_, ValueError_
from autodsl.core import grad_mode
from autodsl.source import SOURCE_POS, caller_pos
from autodsl.core.tensor import Tensor, array_from_data
from autodsl.core.journal import record_random
from autodsl.core.limits import reserve_elements
from autodsl.core.quiet import ieee
from autodsl.core.words import kind, shown
from autodsl.ops import chunked
from autodsl.ops.graph_cut import warn_if_graph_cut

__all__ = ["tensor", "zeros", "ones", "full", "zeros_like", "ones_like", "rand", "randn",
           "arange", "linspace", "eye", "seed"]


def _dtype(dtype):
    return backend.get_default_dtype() if dtype is None else backend.as_dtype(dtype)


def _make(fn: str, device: str, dt, *args, chunks=None):
    """``xp.<fn>(*args, dtype=...)`` in the namespace of ``device`` (zeros, ones, arange...),
    once its size fits the memory limit (or the machine's memory): LimitError with the size.
    On "dask" a lazy array in ``chunks``, which takes no memory until it is computed."""
    shape = _shape_made(fn, args)
    if device == "dask":
        return dask_device.make(fn, args, dt.np, chunks)
    reserve_elements(shape, dt.np.itemsize, f"{fn}()")
    xp = backend.xp(device)
    if fn in ("ones", "full") and math.prod(shape) > chunked.LARGE:     # long: in pieces
        return chunked.filled(xp, shape, 1 if fn == "ones" else args[1], backend.native_dtype(dt, xp))
    with ieee():        # IEEE results (linspace(0, inf, 5)), no NumPy warning
        return getattr(xp, fn)(*args, dtype=backend.native_dtype(dt, xp))


def _shape_made(fn: str, args) -> tuple:
    """The shape ``xp.<fn>(*args)`` makes (its element count is what matters)."""
    if fn in ("zeros", "ones", "full"):
        return args[0]
    if fn == "eye":
        return (args[0], args[0] if args[1] is None else args[1])
    if fn == "linspace":
        return (max(args[2], 0),)
    if fn == "arange":
        start, end, step = args
        try:
            return (max(0, math.ceil((end - start) / step)),)
        except (TypeError, ValueError, OverflowError, ZeroDivisionError):
            return ()           # (arange itself says what is wrong)
    return ()


def _finish(arr, device, requires_grad):
    t = Tensor(arr, requires_grad=requires_grad, _device=device)
    cap = current().capture
    if cap is not None:     # compile() is recording: the same values on every call
        cap.const(t._data)
    # (tensors made inside a backward pass, under no_grad, are not worth a frame walk)
    t._pos = SOURCE_POS.get() or (caller_pos() if grad_mode.is_grad_enabled() else None)
    return t


def _size(size):
    if len(size) == 1 and isinstance(size[0], (list, tuple)):
        size = tuple(size[0])
    out = []
    for n in size:
        if isinstance(n, Tensor):
            n = n.item()
        if isinstance(n, bool) or not isinstance(n, (*backend.HOST_INT, *backend.HOST_FLOAT)):
            raise TypeError_(f"a size must be a whole number, not {kind(n)}; for example zeros([2, 3])")
        if not float(n).is_integer() or n < 0:
            raise ShapeError(f"a size must be a non-negative integer, not {shown(n)}")
        out.append(int(n))
    return tuple(out)


def tensor(data, requires_grad=False, dtype=None, device=None, chunks=None):
    """A new leaf tensor from a number or nested lists (copied).

    A NumPy array keeps its dtype. Number literals give the default float
    dtype (float64) unless ``dtype`` is given: ``tensor([1, 2])`` is float64, ``tensor([1, 2], dtype=int64)`` is
    int64, ``tensor([true, false])`` is bool. Raises DTypeError if an integer
    or bool tensor is asked to require grad, ShapeError for ragged lists.
    Tensors that require grad in ``data`` give their values only, as in PyTorch: the
    graph is cut there, with a warning that points at ``stack`` (ops/graph_cut.py).

    A dask array stays lazy on the "dask" device (where it goes when ``device`` is not given),
    rechunked only when ``chunks`` is given; a NumPy memory map (``np.load(f, mmap_mode="r")``)
    on "dask" is read chunk by chunk when computed, never copied whole.

    Example: ``w = tensor([[1.0, 2.0]], requires_grad=true)``
    """
    if dask_device.is_dask(data):
        device = backend.check_device("dask" if device is None else device)
        if device == "dask":
            dt = None if dtype is None else backend.as_dtype(dtype)
            return _finish(backend.asarray(data, dt, device, chunks=chunks), device, requires_grad)
    if device is None and isinstance(data, Tensor):
        device = data.device            # torch.tensor(t) is on t's device when none is given
    device = backend.check_device(device)
    warn_if_graph_cut(data)
    if isinstance(data, Tensor):
        if current().capture is not None:
            current().capture.fail("it makes a tensor from another tensor's values with tensor()")
        data = data._data
        if device == "dask" and dask_device.is_dask(data):     # lazy still, an array object of its own
            dt = None if dtype is None else backend.as_dtype(dtype)
            return _finish(backend.asarray(data, dt, device, chunks=chunks).copy(), device, requires_grad)
    if hasattr(data, "dtype") and hasattr(data, "shape"):     # a NumPy/CuPy array keeps its dtype
        # (a memory map stays one on dask, which reads it a chunk at a time)
        host = data if device == "dask" and dask_device.is_memmap(data) else backend.to_host(data)
        dt = backend.as_dtype(host.dtype) if dtype is None else backend.as_dtype(dtype)
        arr = backend.contiguous(backend.asarray(host, dt, device, copy=True, chunks=chunks))   # a C-order copy
        return _finish(arr, device, requires_grad)
    dt = None if dtype is None else backend.as_dtype(dtype)
    arr = array_from_data(data, dt, device)
    if chunks is not None and device == "dask":
        arr = arr.rechunk(chunks)
    return _finish(arr, device, requires_grad)


def zeros(*size, dtype=None, device=None, requires_grad=False, chunks=None):
    """A tensor of zeros of shape ``size``. Example: ``zeros(2, 3)``"""
    device = backend.check_device(device)
    return _finish(_make("zeros", device, _dtype(dtype), _size(size), chunks=chunks), device, requires_grad)


def ones(*size, dtype=None, device=None, requires_grad=False, chunks=None):
    """A tensor of ones of shape ``size``. Example: ``ones(3)``"""
    device = backend.check_device(device)
    return _finish(_make("ones", device, _dtype(dtype), _size(size), chunks=chunks), device, requires_grad)


def full(size, fill_value, dtype=None, device=None, requires_grad=False, chunks=None):
    """A tensor of shape ``size`` filled with ``fill_value``; its dtype follows the value
    (bool, int64, or the default float) unless given. Example: ``full([2, 2], 7.0)``"""
    device = backend.check_device(device)
    if not isinstance(size, (list, tuple)):
        size = [size]
    if isinstance(fill_value, Tensor) and fill_value.ndim == 0:
        fill_value = fill_value.item()
    if not isinstance(fill_value, (*backend.HOST_BOOL, *backend.HOST_INT, *backend.HOST_FLOAT)):
        raise TypeError_(f"full(): fill_value must be a number (or true/false), not {kind(fill_value)}; "
                         "for example full([2, 2], 7.0)")
    if dtype is None and isinstance(fill_value, bool):
        dt = backend.bool_
    elif dtype is None and isinstance(fill_value, int):
        dt = backend.int64
    else:
        dt = _dtype(dtype)
    if not isinstance(fill_value, bool) and not backend.value_fits(fill_value, dt.np):
        raise ValueError_(f"full(): {fill_value!r} does not fit in {dt.name}; give a value inside its range, "
                          "or a wider dtype")
    return _finish(_make("full", device, dt, _size(size), fill_value, chunks=chunks), device, requires_grad)


def _like(input, name):
    if not isinstance(input, Tensor):       # torch: "argument 'input' must be Tensor"
        raise TypeError_(f"{name}() takes a tensor, whose shape, dtype and device it copies, not "
                         f"{kind(input)}; for a shape write {name.replace('_like', '')}([2, 3])")
    return input


def _chunks_of(input):
    """A dask tensor's chunks (a ``*_like`` tensor lines up with its input's), else None."""
    return input._data.chunks if input.device == "dask" else None


def zeros_like(input, dtype=None, requires_grad=False):
    """Zeros with the shape, dtype and device of ``input`` (on "dask", its chunks too).
    Example: ``zeros_like(x)``

    Raises TypeError_ when ``input`` is not a tensor."""
    input = _like(input, "zeros_like")
    return zeros(*input.shape, dtype=dtype or input.dtype, device=input.device, requires_grad=requires_grad,
                 chunks=_chunks_of(input))


def ones_like(input, dtype=None, requires_grad=False):
    """Ones with the shape, dtype and device of ``input`` (on "dask", its chunks too).
    Example: ``ones_like(x)``

    Raises TypeError_ when ``input`` is not a tensor."""
    input = _like(input, "ones_like")
    return ones(*input.shape, dtype=dtype or input.dtype, device=input.device, requires_grad=requires_grad,
                chunks=_chunks_of(input))


def rand(*size, dtype=None, device=None, requires_grad=False, chunks=None):
    """Uniform random numbers in [0, 1) of shape ``size`` (see ``seed``). Example: ``rand(2, 2)``

    On "dask" up to 2**24 elements are the cpu's numbers for the same seed, drawn on the host;
    more are drawn on the workers, chunk by chunk, from a seed taken from the generator (the
    same for the same seed, but not the cpu's numbers)."""
    device = backend.check_device(device)
    dt = _dtype(dtype)
    _need_float(dt, "rand")
    _no_capture("rand")
    shape = _size(size)
    if device == "dask":
        return _finish(backend.random_uniform(shape, dt, device, chunks), device, requires_grad)
    reserve_elements(shape, 8, "rand()")           # (drawn as float64)
    arr = chunked.draw(backend.random_uniform, shape, dt, device)
    return _finish(arr, device, requires_grad)


def randn(*size, dtype=None, device=None, requires_grad=False, chunks=None):
    """Standard normal random numbers of shape ``size`` (see ``seed``; on "dask" as ``rand``).
    Example: ``randn(3)``"""
    device = backend.check_device(device)
    dt = _dtype(dtype)
    _need_float(dt, "randn")
    _no_capture("randn")
    shape = _size(size)
    if device == "dask":
        return _finish(backend.random_normal(shape, dt, device, chunks), device, requires_grad)
    reserve_elements(shape, 8, "randn()")
    arr = chunked.draw(backend.random_normal, shape, dt, device)
    return _finish(arr, device, requires_grad)


def _no_capture(name):
    ctx = current()
    if ctx.capture is not None:
        ctx.capture.fail(f"{name}() draws new numbers on every call")
    if ctx.journal is not None:     # an undone input's draws are drawn again, the same
        record_random()


def _need_float(dt, name):
    if not dt.is_floating:
        raise DTypeError(f"{name} makes floating-point numbers; use dtype=float32 or float64")


def _number_arg(fn, name, v, example):
    if isinstance(v, Tensor) and v.ndim == 0:
        v = v.item()
    if not isinstance(v, (*backend.HOST_BOOL, *backend.HOST_INT, *backend.HOST_FLOAT)):
        raise TypeError_(f"{fn}: {name} must be a number, not {kind(v)}; for example {example}")
    return v


def arange(start=None, end=None, step=1, dtype=None, device=None, requires_grad=False, chunks=None):
    """Evenly spaced values in [start, end) with ``step``, as torch.arange: int64 when all
    arguments are integers (or bools), else the default float dtype. Floating values are
    ``start + i*step`` computed in float64 (then rounded to the dtype); for an integer dtype
    start, end and step are first truncated to integers, as torch does. ``arange(n)`` and
    ``arange(end=n)`` start at 0. Example: ``arange(5)``, ``arange(0, 1, 0.25)``

    Raises TypeError_ for a start, end or step that is not a number, ValueError_ for step 0
    (also a step that truncates to 0 for int64), an end on the other side of start
    than step goes, or a start or end that is not finite, DTypeError for bool.
    """
    device = backend.check_device(device)
    if end is None:
        if start is None:
            raise TypeError_("arange needs an end, e.g. arange(5) or arange(0, 1, 0.25)")
        start, end = 0, start
    elif start is None:
        start = 0
    start, end, step = (_number_arg("arange", n, v, "arange(0, 1, 0.25)")
                        for n, v in (("start", start), ("end", end), ("step", step)))
    if dtype is None:
        whole = (*backend.HOST_INT, *backend.HOST_BOOL)
        dt = backend.int64 if all(isinstance(v, whole) for v in (start, end, step)) else \
            backend.get_default_dtype()
    else:
        dt = backend.as_dtype(dtype)
    if dt is backend.bool_:     # torch: not implemented for bool
        raise DTypeError("arange makes numbers, not bools; give an integer or floating dtype")
    if step == 0:
        raise ValueError_("arange: step must not be 0")
    if not all(math.isfinite(v) for v in (start, end, step)):       # torch: "unsupported range"
        raise ValueError_(f"arange: start, end and step must be finite numbers, not {shown(start)}, "
                          f"{shown(end)} and {shown(step)}")
    n, first, by, compute = _arange_size(start, end, step, dt)
    idx = _make("arange", device, compute, 0, n, 1, chunks=chunks)
    with ieee():
        arr = first + idx * by      # torch's kernel: start + i * step, in int64 or float64
    if compute is not dt:
        arr = backend.namespace_of(arr).astype(arr, backend.native_dtype(dt, backend.namespace_of(arr)))
    return _finish(arr, device, requires_grad)


def _arange_size(start, end, step, dt):
    """``(size, start, step, the dtype the values are computed in)`` as torch's arange makes
    them: checked on the arguments as given (for int64 the step once truncated: torch refuses
    one that truncates to 0 there, and takes it for the smaller integer dtypes); sized from
    them (int64 from the truncated ones: ceil((end - start) / step) in integers); the values
    ``start + i*step`` in float64, or for an integer dtype in int64 from start and step
    truncated toward 0. ValueError_ for an end on the other side of start than step goes."""
    if dt is backend.int64 and int(step) == 0:
        raise ValueError_(f"arange: step must not be 0 (int64 truncates the step {shown(step)} to 0)")
    if not (step > 0 and end >= start or step < 0 and end <= start):
        raise ValueError_(f"arange: end {shown(end)} is on the other side of start {shown(start)} than step "
                          f"{shown(step)} goes; swap them or change the step's sign")
    if dt is backend.int64:
        xs, xe, xst = int(start), int(end), int(step)
        n = (abs(xe - xs) + abs(xst) - 1) // abs(xst)
    else:
        n = math.ceil((float(end) - float(start)) / float(step))
    if n > 2 ** 63 - 1:
        raise ValueError_(f"arange: {n} values are too many")
    if dt.is_floating:
        return n, float(start), float(step), backend.float64
    return n, int(start), int(step), backend.int64


def linspace(start, end, steps, dtype=None, device=None, requires_grad=False, chunks=None):
    """``steps`` evenly spaced values from start to end, both included, as torch.linspace: the
    step (end - start) / (steps - 1) in the dtype (float64 for an integer dtype, whose start and
    end are first made integers, truncated toward 0), the first half of the values
    ``start + i*step``, the rest ``end - (steps - 1 - i)*step``. Example: ``linspace(0, 1, 5)``

    Raises TypeError_ for a start or end that is not a number or steps that is not a whole number,
    ValueError_ for negative steps or, with an integer dtype, a start or end it cannot hold,
    DTypeError for bool."""
    device = backend.check_device(device)
    start, end = (_number_arg("linspace", n, v, "linspace(0, 1, 5)") for n, v in (("start", start), ("end", end)))
    if isinstance(steps, bool) or not isinstance(steps, backend.HOST_INT):     # torch: steps is an int
        raise TypeError_(f"linspace: steps must be a whole number, not {shown(steps)}; for example "
                         "linspace(0, 1, 5)")
    steps = int(steps)
    if steps < 0:
        raise ValueError_("linspace: steps must be non-negative")
    dt = _dtype(dtype)
    if dt is backend.bool_:         # torch: not implemented for bool
        raise DTypeError("linspace makes numbers, not bools; give an integer or floating dtype")
    if dt.is_floating:
        compute = dt
    else:
        bits = dt.np.itemsize * 8
        for name, v in (("start", start), ("end", end)):
            if not (math.isfinite(v) and -2 ** (bits - 1) <= math.trunc(v) < 2 ** (bits - 1)):
                raise ValueError_(f"linspace: {name} {shown(v)} does not fit {dt.name}; give a floating dtype")
        start, end = math.trunc(start), math.trunc(end)
        compute = backend.float64
    idx = _make("arange", device, compute, 0, steps, 1, chunks=chunks)
    xp = backend.namespace_of(idx)
    cdt = backend.native_dtype(compute, xp)
    s0, s1 = xp.asarray(start, dtype=cdt), xp.asarray(end, dtype=cdt)
    with ieee():        # IEEE results (linspace(0, inf, 3) is nan), no NumPy warning
        if steps == 1:
            arr = xp.zeros((1,), dtype=cdt) + s0
        else:
            step = (s1 - s0) / xp.asarray(steps - 1, dtype=cdt)
            half = steps // 2
            arr = xp.where(idx < half, s0 + step * idx, s1 - step * (xp.asarray(steps - 1, dtype=cdt) - idx))
    if compute is not dt:
        arr = xp.astype(arr, backend.native_dtype(dt, xp))
    return _finish(arr, device, requires_grad)


def eye(n, m=None, dtype=None, device=None, requires_grad=False, chunks=None):
    """The n x m identity matrix (m = n by default). Raises ShapeError for a size that is
    negative or not whole (2.5, inf), TypeError_ for one that is not a number. Example: ``eye(3)``"""
    device = backend.check_device(device)
    n, m = _size((n,))[0], None if m is None else _size((m,))[0]
    arr = _make("eye", device, _dtype(dtype), n, m, chunks=chunks)
    return _finish(arr, device, requires_grad)

