"""The "dask" device: arrays of ``array_api_compat.dask.array``, lazy and chunked.

Dask is optional (``pip install "autodsl[dask]"``): nothing here imports it before the device is
asked for. A dask array is a graph, not memory: ops build the graph, and values are computed
where a host number or array is needed (``item``, ``numpy``, printing: ``to_host``) or where the
program asks (``compute``, ``persist``). Dask arrays never share memory, and their item
assignment rebinds the array object's graph, so "in place" on this device means "the same
array object, a new graph".

The scheduler that computes is the run context's ``dask_scheduler`` (a Session's; see
``Scheduler``): threads, a ``dask.distributed`` Client given or found, or a LocalCluster the
session starts on first use and closes with itself. The Python API without a Session uses the
default distributed Client when there is one, else dask's own default scheduler.

Chunks: creation functions take dask's ``chunks=`` ("auto" by default); a broadcast keeps the
chunks of every dim its input already has and gives the new (or size-1) dims dask's "auto"
chunks, never one chunk for the whole result (a gradient broadcast back to 200 million elements
must not become one 1.6 GB task).

Errors: DeviceError when dask is not installed or a scheduler cannot be reached.
"""
from __future__ import annotations

import contextlib
import math
import weakref

import numpy as np

from autodsl.backend.ieee_tasks import compute_quietly, worker_plugin
from autodsl.context import current
from autodsl.errors import DeviceError, DSLError, RuntimeError_, ValueError_

__all__ = [
    "LAZY_RANDOM",
    "LOCAL_SCHEDULERS",
    "NpyFile",
    "Scheduler",
    "broadcast_to",
    "compute_arrays",
    "concrete",
    "from_host",
    "is_dask",
    "is_memmap",
    "load",
    "make",
    "persist_arrays",
    "random",
    "rechunk_like",
    "to_host",
]

# Schedulers that run in this process, named as dask names them (no cluster: tests, small runs).
LOCAL_SCHEDULERS = ("threads", "synchronous", "sync", "single-threaded", "processes")
# Above this many elements rand/randn on dask draw on the workers, chunk by chunk, from a seed
# taken from the session's generator (reproducible under seed(), but not the cpu's numbers):
# below it, the numbers are the cpu's, drawn on the host and split into chunks.
LAZY_RANDOM = 1 << 24

_INSTALL = 'device \'dask\' needs dask, which is not installed; install it with `pip install "autodsl[dask]"`'


def load():
    """``(namespace, array type)`` of the dask device; DeviceError when dask is missing."""
    try:
        import array_api_compat.dask.array as dx
        import dask.array as da
    except ImportError as e:
        if getattr(e, "name", None) not in (None, "dask", "dask.array", "toolz", "cloudpickle"):
            raise DeviceError(f"device 'dask' needs dask, which is installed but could not load "
                              f"the module {e.name}; reinstall it with `pip install \"autodsl[dask]\"`, "
                              "or use device='cpu'") from None
        raise DeviceError(_INSTALL + ", or use device='cpu'") from None
    return dx, da.Array


def _da():
    import dask.array as da
    return da


def is_dask(arr) -> bool:
    return type(arr).__module__.startswith("dask.array")


def _chunks(chunks):
    return "auto" if chunks is None else chunks


def is_memmap(data) -> bool:
    """A NumPy memory map of a whole file's array (``np.load(f, mmap_mode="r")``; not a slice of
    one, whose layout in the file ``NpyFile`` could not tell)."""
    return (isinstance(data, np.memmap) and bool(getattr(data, "filename", None))
            and getattr(data, "_mmap", None) is not None and data.base is data._mmap)


def from_host(host, chunks=None):
    """A dask array of the host values ``host`` (a NumPy array, or a memory map: read lazily)."""
    if is_memmap(host):
        # dask copies a NumPy array it is given (a memory map too: the whole file, at once);
        # a file it is given is read a chunk at a time, by whichever worker runs the chunk
        return _da().from_array(NpyFile(host), chunks=_chunks(chunks), asarray=True)
    return _da().from_array(host, chunks=_chunks(chunks), asarray=True)


class NpyFile:
    """A memory-mapped ``.npy`` file as dask reads it: shape and dtype, and the values of an
    index read from the file when asked (picklable: a worker process opens the file itself)."""

    def __init__(self, mm: np.memmap):
        self.filename = mm.filename
        self.offset = mm.offset
        self.shape = mm.shape
        self.dtype = mm.dtype
        self.ndim = mm.ndim
        self.order = "F" if mm.flags.f_contiguous and not mm.flags.c_contiguous else "C"

    def __getitem__(self, key):
        mm = np.memmap(self.filename, dtype=self.dtype, mode="r", offset=self.offset,
                       shape=self.shape, order=self.order)
        return np.array(mm[key])


def make(fn: str, args: tuple, dtype, chunks=None):
    """``zeros``/``ones``/``full``/``arange``/``linspace``/``eye`` of ``args`` (the creation
    function's, as NumPy takes them) in dask's chunks."""
    da, c = _da(), _chunks(chunks)
    if fn in ("zeros", "ones"):
        return getattr(da, fn)(args[0], dtype=dtype, chunks=c)
    if fn == "full":
        return da.full(args[0], args[1], dtype=dtype, chunks=c)
    if fn == "arange":
        return da.arange(*args, dtype=dtype, chunks=c)
    if fn == "linspace":
        return da.linspace(args[0], args[1], args[2], dtype=dtype, chunks=c)
    if fn == "eye":
        return da.eye(args[0], M=args[1], dtype=dtype, chunks=c)
    raise ValueError(fn)


def broadcast_to(a, shape: tuple):
    """``a`` broadcast to ``shape``: the dims ``a`` has at full size keep its chunks; new and
    size-1 dims get dask's "auto" chunks (dask alone makes each of those one chunk)."""
    da = _da()
    from dask.array.core import normalize_chunks
    shape = tuple(shape)
    if 0 in shape:          # nothing to chunk (dask's "auto" sizes divide by the element count)
        return da.broadcast_to(a, shape)
    lead = len(shape) - a.ndim
    spec = []
    for i, n in enumerate(shape):
        j = i - lead
        spec.append(a.chunks[j] if j >= 0 and a.shape[j] == n else "auto")
    chunks = normalize_chunks(tuple(spec), shape, dtype=a.dtype)
    return da.broadcast_to(a, shape, chunks=chunks)


def rechunk_like(arr, like):
    """``arr`` in the chunks of ``like`` (same shape), unchanged when they are already equal."""
    if arr.shape != like.shape or arr.chunks == like.chunks:
        return arr
    return arr.rechunk(like.chunks)


def random(gen, kind: str, shape: tuple, np_dtype, chunks=None):
    """Uniform (``kind`` "uniform") or standard normal numbers from the host generator ``gen``
    (the session's): drawn on the host below ``LAZY_RANDOM`` elements (the cpu's numbers), else
    chunk by chunk on the workers from one seed drawn from ``gen``."""
    n = int(np.prod(shape, dtype=np.int64))
    if n <= LAZY_RANDOM:
        host = gen.random(shape) if kind == "uniform" else gen.standard_normal(shape)
        return from_host(host.astype(np_dtype), chunks)
    rng = _da().random.default_rng(int(gen.integers(2**63)))
    c = _chunks(chunks)
    if kind == "uniform":
        return rng.random(shape, dtype=np.float64, chunks=c).astype(np_dtype)
    return rng.standard_normal(shape, dtype=np.float64, chunks=c).astype(np_dtype)


# -- computing ---------------------------------------------------------------------------------
# A computed array keeps its host value on itself (dask arrays take attributes), tagged with its
# graph's name: a write through dask's item assignment renames the graph, so a stale value is
# never read, and printing a tensor twice computes it once.

def _cached(arr):
    hit = getattr(arr, "_autodsl_host", None)
    if hit is not None and hit[0] == arr.name:
        return hit[1]
    return None


def _keep(arr, host) -> None:
    arr._autodsl_host = (arr.name, host)


def to_host(arr) -> np.ndarray:
    """The values of ``arr`` as a NumPy array, computed on the run's scheduler (once per graph)."""
    host = _cached(arr)
    if host is None:
        host = compute_arrays([arr])[0]
    return host


def concrete(host: np.ndarray, like):
    """A dask array of the computed values ``host`` of ``like``, in its chunks, that knows its
    values (reading it computes nothing; a graph built on it starts from them)."""
    arr = _da().from_array(host, chunks=like.chunks, asarray=True)
    _keep(arr, host)
    return arr


def hold(arr, host: np.ndarray) -> None:
    """Make the array object ``arr`` itself stand for its computed values ``host`` (see
    ``concrete``), for everything that holds it."""
    new = concrete(host, arr)
    arr._meta, arr.dask, arr._name, arr._chunks = new._meta, new.dask, new.name, new.chunks
    _keep(arr, host)


def compute_arrays(arrays: list) -> list:
    """The NumPy values of several dask arrays, computed in one pass (shared parts once)."""
    import dask
    todo = [a for a in arrays if _cached(a) is None]
    if todo:
        sched = _scheduler()
        client = sched.client() if sched is not None else (_default_client() or _client_of(todo))
        kw = {"scheduler": client} if client is not None else (
            {"scheduler": sched.name} if sched is not None and sched.name else {})
        values = _in_words(compute_quietly, dask.compute, *todo, **kw)   # IEEE results in the tasks
        for a, v in zip(todo, values):
            _keep(a, np.asarray(v))
    return [_cached(a) for a in arrays]


def known_chunks(arr):
    """``arr`` with every chunk's size known: a boolean mask gives dask a nan size, which a
    tensor never has (shapes, numel, the backward's broadcasts read it). The sizes alone are
    computed, on the run's scheduler (dask's own ``compute_chunk_sizes`` uses the default one)."""
    if not any(math.isnan(c) for dim in arr.chunks for c in dim):
        return arr
    da = _da()
    nd = arr.ndim
    sizes = arr.map_blocks(lambda b: np.array(b.shape, dtype=np.int64).reshape((1,) * nd + (nd,)),
                           dtype=np.int64, chunks=tuple((1,) * len(c) for c in arr.chunks) + ((nd,),),
                           new_axis=nd, meta=np.empty((0,) * (nd + 1), dtype=np.int64))
    host = compute_arrays([sizes])[0]
    chunks = tuple(tuple(int(v) for v in host[(0,) * i + (slice(None),) + (0,) * (nd - 1 - i) + (i,)])
                   for i in range(nd))
    return da.Array(arr.dask, arr.name, chunks, meta=arr._meta)


def persist_arrays(arrays: list) -> list:
    """The arrays computed and kept where the scheduler keeps results (a cluster's workers'
    memory, or this process's for the local schedulers), as new dask arrays of the same values."""
    import dask
    sched = _scheduler()
    client = sched.client() if sched is not None else (_default_client() or _client_of(arrays))
    if client is not None:
        # (dask.persist would gather to this process unless the client is the default one, and
        # wait() looks for the default one: this client is made current for it)
        from distributed import wait
        with client.as_current():
            out = client.persist(list(arrays))
            _in_words(wait, out)
        return list(out)
    kw = {"scheduler": sched.name} if sched is not None and sched.name else {}
    return list(_in_words(compute_quietly, dask.persist, *arrays, **kw))


def _in_words(run, *args, **kwargs):
    """``run(*args, **kwargs)``, a task's exception (a file read lazily, gone; a worker killed)
    as a RuntimeError_ in the language's words instead of dask's or NumPy's."""
    try:
        return run(*args, **kwargs)
    except DSLError:
        raise
    except OSError as e:
        what = f"{e.strerror or e}" + (f": '{e.filename}'" if e.filename else "")
        raise RuntimeError_(f"a file could not be read when its values were computed ({what}); "
                            "keep a file given to load() in place until its tensors are computed "
                            "(compute() reads them)") from None
    except MemoryError:
        raise RuntimeError_("computing the values ran out of memory; use smaller chunks= "
                            "or more workers") from None
    except Exception as e:  # noqa: BLE001  (a task's own error: said in words, not dask's traceback)
        name = type(e).__name__
        if name == "KilledWorker":
            raise RuntimeError_("a dask worker died while computing the values (most often its "
                                "memory limit: use smaller chunks= or more workers)") from None
        raise RuntimeError_(f"a task failed when the values were computed ({name}: {e})") from None


def _scheduler():
    return current().dask_scheduler


def _client_of(arrays):
    """The Client of a persisted array's results (a session's tensor read from Python, outside
    the session: its values are on the session's cluster), or None."""
    try:
        from distributed import Future
    except ImportError:
        return None
    for a in arrays:
        for v in a.__dask_graph__().values():
            v = getattr(v, "value", v)          # (dask's task spec wraps data in a DataNode)
            if isinstance(v, Future):
                return v.client
    return None


def _default_client():
    """The process's default distributed Client, or None (no cluster is started for the Python
    API: a program that wants one makes its Client, which dask then uses everywhere)."""
    try:
        from distributed import get_client
    except ImportError:
        return None
    try:
        return get_client()
    except ValueError:          # no client in this process
        return None


class Scheduler:
    """What computes a Session's dask arrays, chosen by ``spec``:

    * None: the default distributed Client when one exists (used as it is, never closed), else a
      LocalCluster of ``n_workers`` worker processes started on first use and closed with the
      session (``close``, also at exit through a finalizer);
    * "threads", "synchronous" (or "sync"/"single-threaded"), "processes": dask's local
      schedulers, no cluster;
    * an address ("tcp://host:8786", anything with "://"): a Client connected on first use,
      closed with the session (the cluster itself is left running);
    * a ``distributed.Client``: used as it is, never closed.

    ValueError_ for another string; DeviceError when distributed is missing or the address cannot
    be reached.
    """

    def __init__(self, spec=None, n_workers: int | None = None, memory_limit="auto"):
        if isinstance(spec, str):
            s = spec.strip()
            if s.lower() not in LOCAL_SCHEDULERS and "://" not in s:
                raise ValueError_(f"unknown dask scheduler {spec!r}; give 'threads', 'synchronous', "
                                  "'processes' or a scheduler address such as 'tcp://127.0.0.1:8786'")
            spec = s.lower() if s.lower() in LOCAL_SCHEDULERS else s
        self.spec = spec
        self.n_workers = n_workers
        self.memory_limit = memory_limit
        self._client = None
        self._owned = []            # what close() shuts down: our Client, our LocalCluster
        self._finalizer = None

    @property
    def name(self) -> str | None:
        """The local scheduler's name, or None for a distributed one."""
        return self.spec if isinstance(self.spec, str) and self.spec in LOCAL_SCHEDULERS else None

    @property
    def started(self) -> bool:
        """Whether this scheduler started a cluster or a client that ``close`` will shut down."""
        return bool(self._owned)

    def client(self):
        """The distributed Client to compute on (started or connected on first use), or None for
        a local scheduler."""
        if self.name is not None:
            return None
        if self._client is not None:
            return self._client
        if self.spec is not None and not isinstance(self.spec, str):
            self._client = self.spec           # a Client given: as it is
            return self._client
        try:
            import distributed
        except ImportError:
            raise DeviceError("a dask cluster needs dask's distributed package; install it with "
                              '`pip install "autodsl[dask]"`, or use scheduler="threads"') from None
        if isinstance(self.spec, str):          # an address
            try:
                client = distributed.Client(self.spec, set_as_default=False, timeout="10s")
            except (OSError, TimeoutError) as e:
                raise DeviceError(f"cannot reach the dask scheduler at {self.spec} ({e}); start it "
                                  "or give another address (or scheduler='threads')") from None
            self._own(client)
            client.register_plugin(worker_plugin())     # IEEE results in its workers' tasks
            self._client = client
            return client
        existing = _default_client()
        if existing is not None:
            self._client = existing
            return existing
        cluster = distributed.LocalCluster(
            n_workers=self.n_workers or 2, threads_per_worker=1, processes=True,
            memory_limit=self.memory_limit, dashboard_address=":0")   # a free port: never fails on a taken 8787
        self._own(cluster)
        client = distributed.Client(cluster, set_as_default=False)
        self._own(client)
        client.register_plugin(worker_plugin())         # IEEE results in its workers' tasks
        self._client = client
        return client

    def _own(self, thing) -> None:
        self._owned.append(thing)
        if self._finalizer is None:
            self._finalizer = weakref.finalize(self, _close_all, self._owned)

    def close(self) -> None:
        """Shut down the client and cluster this scheduler started (nothing it was given)."""
        self._client = None
        if self._finalizer is not None:
            self._finalizer()           # runs _close_all once, and not again at exit
            self._finalizer = None

    def __repr__(self) -> str:
        what = self.spec if isinstance(self.spec, str) else "default" if self.spec is None else "client"
        return f"<dask scheduler {what}>"


def _close_all(owned: list) -> None:
    # the client before its cluster (the reverse of starting), each shut down once
    while owned:
        thing = owned.pop()
        with contextlib.suppress(Exception):    # shutting down at exit: nothing left to tell
            thing.close()
