"""The run context: everything one run of autodsl code needs, in one object.

A ``RunContext`` holds the state that used to be spread over flags and context
variables: grad mode, the source position being evaluated, the IEEE scope,
anomaly mode, the trace settings and sink, the name resolver, the undo journal,
the files permission, the last backward, the language's progress callback and
the default dtype and device.

One ContextVar holds the current context. A ``Session`` owns one and makes it
current while its code runs; the Python API uses ``DEFAULT``, the only
module-level mutable state of the package besides tables filled once at import.
Lower layers read ``current()``; nothing here imports the rest of the package,
so every layer can.

Threads: as in PyTorch, grad mode and the rest of a run's state are per thread.
The first thread's Python API uses ``DEFAULT``; every other thread gets a context
of its own the first time it asks (``current()``). The default dtype and device
are the process's, as PyTorch's are: a thread's context reads and sets them on
``DEFAULT``. A ``Session`` has its own context and its own defaults; use one
session per thread.
"""
from __future__ import annotations

import threading
from contextvars import ContextVar

__all__ = ["RunContext", "DEFAULT", "current", "current_or_none", "use", "scoped", "call_in"]


class RunContext:
    """The state of one run (see the module doc). Fields, with their defaults:

    * ``grad_enabled`` (True): new ops record a graph.
    * ``pos`` (None): where the expression being evaluated was written, a tuple
      ``(file, line, column, text)`` set by the language (a ``source.SourcePos``, which
      reads as that tuple and cuts ``text`` from the one source when read); None from Python.
    * ``ieee_depth`` (0): open ``ieee()`` scopes; ops skip their own when > 0.
    * ``in_pass`` (0): backward passes running (ops made inside are the engine's).
    * ``quiet`` (0): internal passes (check, plot, explain) that must not become
      the last backward.
    * ``anomaly`` (None): the anomaly-mode state, or None when off.
    * ``journal`` (None): the undo log of the open transaction.
    * ``names`` (None): a callable returning the namespace whose variables name
      tensors in errors, traces and graphs (a Session's).
    * ``files_allowed`` (True): built-ins may write files.
    * ``base_dir`` (None: the current directory): where relative paths of ``load``, ``save``
      and ``include`` start when no script file is running (a Session's ``base_dir``).
    * ``trace_enabled`` (False), ``trace_sink`` (None), ``trace_printer`` (None),
      ``last_trace`` (None): backward traces, where they go, the last one.
    * ``last_backward`` (None): what ``why()`` explains.
    * ``breaks`` ({}): where values left the graph (``core/watch.py``), by source node.
    * ``left`` ({}): the tensors alive that hold such values, the results of ops made from them
      without a graph included: ``{id(tensor): (weak reference, Break)}`` (``core/watch.py``).
    * ``loop_progress`` (None): the language's progress callback for long loops.
    * ``language`` (0): > 0 while the language runs, so errors take the script's
      position instead of a Python caller's.
    * ``default_dtype`` (None: float64), ``default_device`` ("cpu"; None: ``DEFAULT``'s).
    * ``owns_defaults`` (True): the dtype and device above are this context's own (``DEFAULT``'s
      and a Session's); a thread's context uses ``DEFAULT``'s instead.
    * ``capture`` (None): while ``compile`` records a call, what records it (``core/capture.py``).
    * ``limits`` (None): the run's resource limits and usage (``core/limits.py``), or None.
    * ``host_entry`` (None): a Session's ``Session.context``, the one way a call from outside its
      runs (the host calling a script's function, hook or compiled function) enters it (``call_in``).
    * ``rng`` ({}): the random generators by device ("cpu": NumPy's, "cuda": CuPy's) and the last
      ``seed`` (key "seed"); a thread's context draws from ``DEFAULT``'s, a Session from its own.
    * ``source_limit`` (None: 16 MB): the most bytes ``include`` and text ``load`` read of one file
      (``core/text_input.py``).
    * ``dask_scheduler`` (None): what computes dask arrays (``backend/dask_device.Scheduler``, a
      Session's); None: the default distributed Client if any, else dask's default scheduler.
    * ``deferred`` (None): value checks of ops on "cuda" or a lazy device waiting for the values
      to be read (``core/deferred.py``).
    """

    __slots__ = ("grad_enabled", "pos", "ieee_depth", "in_pass", "quiet", "anomaly", "journal",
                 "names", "files_allowed", "base_dir", "trace_enabled", "trace_sink", "trace_printer",
                 "last_trace", "last_backward", "breaks", "left", "loop_progress", "language", "default_dtype",
                 "default_device", "owns_defaults", "capture", "limits", "host_entry", "rng",
                 "source_limit", "dask_scheduler",
                 "deferred")

    def __init__(self, **fields):
        self.grad_enabled = True
        self.pos = None
        self.ieee_depth = 0
        self.in_pass = 0
        self.quiet = 0
        self.anomaly = None
        self.journal = None
        self.names = None
        self.files_allowed = True
        self.base_dir = None
        self.trace_enabled = False
        self.trace_sink = None
        self.trace_printer = None
        self.last_trace = None
        self.last_backward = None
        self.breaks = {}
        self.left = {}
        self.loop_progress = None
        self.language = 0
        self.default_dtype = None
        self.default_device = "cpu"
        self.owns_defaults = True
        self.capture = None
        self.limits = None
        self.host_entry = None
        self.rng = {}
        self.source_limit = None
        self.dask_scheduler = None
        self.deferred = None
        for k, v in fields.items():
            setattr(self, k, v)

    def __repr__(self) -> str:
        return f"<RunContext grad_enabled={self.grad_enabled} device={self.default_device}>"


DEFAULT = RunContext()
_current: ContextVar[RunContext | None] = ContextVar("autodsl_run_context", default=None)
_get = current_or_none = _current.get    # hot paths: ``current_or_none() or current()``
_MAIN = threading.main_thread()


def current() -> RunContext:
    """The run context of this thread (or of the Session whose code is running)."""
    ctx = _get()
    if ctx is None:
        ctx = _thread_context()
    return ctx


def _thread_context() -> RunContext:
    # The main thread's Python API runs on DEFAULT; another thread gets its own context,
    # once, sharing DEFAULT's dtype and device as PyTorch's threads share its defaults.
    ctx = DEFAULT if threading.current_thread() is _MAIN else RunContext(owns_defaults=False, default_device=None)
    _current.set(ctx)
    return ctx


class use:
    """Make ``ctx`` the current context inside the block (a Session's runs do this)."""

    __slots__ = ("ctx", "_token")

    def __init__(self, ctx: RunContext):
        self.ctx = ctx

    def __enter__(self) -> RunContext:
        self._token = _current.set(self.ctx)
        return self.ctx

    def __exit__(self, *exc):
        _current.reset(self._token)
        return False


class scoped:
    """Set fields of the current context inside the block, restoring them on every exit path:
    ``with scoped(grad_enabled=False): ...``. The context is the one current at entry."""

    __slots__ = ("fields", "_ctx", "_old")

    def __init__(self, **fields):
        self.fields = fields

    def __enter__(self) -> RunContext:
        ctx = self._ctx = current()
        self._old = {k: getattr(ctx, k) for k in self.fields}
        for k, v in self.fields.items():
            setattr(ctx, k, v)
        return ctx

    def __exit__(self, *exc):
        ctx = self._ctx
        for k, v in self._old.items():
            setattr(ctx, k, v)
        return False


def call_in(ctx: RunContext | None, fn, *args, **kwargs):
    """``fn(*args, **kwargs)`` run under ``ctx``, the context a function value was made in.

    A caller outside ``ctx`` (the host calling a Session's function, or its backward running a
    hook a script registered) enters it through ``ctx.host_entry`` (``Session.context``), so the
    session's files permission, dtype, device, names, generator and limits hold there too; a
    caller already inside, or a ``ctx`` with no entry (the Python API's), calls ``fn`` directly."""
    if ctx is None or ctx.host_entry is None or _get() is ctx:
        return fn(*args, **kwargs)
    with ctx.host_entry():
        return fn(*args, **kwargs)
