"""Session: one namespace of the language, its defaults, and ``run(source)``.

    s = autodsl.Session(device="cpu")
    s.run("w = tensor(2.0, requires_grad=true)\\ny = w^3\\ny.backward()")
    s["w"].grad            # tensor 12
    s.last_trace           # the last backward's trace (when tracing is on)

``run`` parses the whole source first (a syntax error anywhere runs nothing),
then executes it statement by statement under the session's default device
and dtype. A bare expression statement prints its value; ``run`` returns the
value of the last statement when it is a bare expression, else None. An error
raises a DSLError with its position; bindings made before the failing
statement stay, and the failing statement binds nothing. ``echo=False`` prints nothing for bare
expressions; ``echo=callback`` hands each value to ``callback(value)`` instead of printing
it (the Jupyter kernel's rich display, ``autodsl/cli/kernel.py``).

Limits for running untrusted code (all None by default: no limits):

    s = autodsl.Session(time_limit=2.0, step_limit=10**6, memory_limit="512M", files=False)

``time_limit`` is wall-clock seconds per ``run()`` and per host call into the session's
code (a script's function or hook); ``step_limit`` counts statements, loop iterations and
calls of user functions, per ``run()`` or host call; ``memory_limit`` (bytes, or a size such
as ``"512M"`` or ``"2G"``) bounds the tensors, strings and lists the session's variables hold,
checked before each allocation (see ``autodsl.core.limits`` for exactly what it counts). Past
a limit the run stops with ``LimitError`` at the line it had reached; the session stays
usable, its variables as for any error. ``source_limit`` (16 MB unless set) bounds the files
``include`` and the text formats of ``load`` read: a larger one is refused before it is read.

On the "dask" device (``Session(device="dask")``) arrays are computed by the session's
``scheduler``: None (the default) uses the process's distributed Client if there is one, else
starts a LocalCluster of ``workers`` processes (2 by default) the first time something is
computed, and shuts it down in ``close()`` (``with Session(...) as s:``, or when the session
is collected or the program exits); an address ("tcp://host:8786") connects to a running
scheduler; "threads" or "synchronous" compute in this process, without a cluster.
"""
from __future__ import annotations

import contextlib
import functools
import gc
import math
import os
import sys
import warnings
from typing import Any

import autodsl.backend as backend
from autodsl.backend import dask_device
from autodsl.context import RunContext, current, use
from autodsl.core.text_input import DEFAULT_SOURCE_LIMIT
from autodsl.core.anomaly import anomaly_state, get_anomaly_mode
from autodsl.core.quiet import ieee
from autodsl.core.trace import LazyNames
from autodsl.core.display import format_value
from autodsl.core.journal import record_attrs, record_items, transaction
from autodsl.core.limits import Limits, held_bytes, parse_size
from autodsl.errors import DSLError, NameError_, TypeError_, ValueError_
from autodsl.lang import ast as A
from autodsl.lang.builtins import make_builtins
from autodsl.lang.interpreter import Interpreter
from autodsl.lang.parser import KEYWORDS, parse
from autodsl.lang.values import describe

__all__ = ["Session"]

PREDEFINED = ("inf", "nan", "pi", "float32", "float64", "int32", "int64", "bool")

# deep `^` chains, nested brackets and user recursion (capped at 200 calls) need
# more Python frames than the default 1000; Python 3.11 frames of Python code
# do not use the C stack, so this is safe.
_RECURSION_LIMIT = 20000
# Net allocations between young collections while a script runs (CPython: 700). A script's
# graph lives for about one run, and every collection walks all of it that is alive then (each
# node once as young, again in the older generations): with 300,000 a collection comes after a
# few such graphs have come and gone by reference counting, so most of them are never walked.
# (W1 as a script, N=10,000, mean of 15 runs: 0.47-0.60 s with 10,000, 0.33-0.37 s with
# 300,000, against 0.37-0.45 s for the same work through the Python API.) Cyclic garbage waits
# at most that many allocations.
_GC_GEN0 = 300_000


def _size_option(name: str, size, example: str):
    """A size option's value (bytes, a whole float such as 1e9, or a text such as "512M") as
    bytes, or None; ValueError_ in the option's words otherwise."""
    if isinstance(size, float) and size.is_integer() and size > 0:
        size = int(size)
    if size is None:
        return None
    if not isinstance(size, (int, str)) or isinstance(size, bool):
        raise ValueError_(f"{name} is a number of bytes or a size such as \"{example}\" (or None), "
                          f"not {describe(size)}")
    try:
        return parse_size(size)
    except ValueError as e:
        raise ValueError_(f"{name}: {e}") from None


class UnknownNameError(NameError_, KeyError):
    """``session[name]`` for a name that is not bound (also a KeyError)."""


def _predefined() -> dict:
    names: dict[str, Any] = {"inf": math.inf, "nan": math.nan, "pi": math.pi}
    for dt in ("float32", "float64", "int32", "int64", "bool"):
        names[dt] = backend.as_dtype(dt)
    return names


_KEPT_PROGRAMS = 16         # Note [parsed once]: the Programs a session keeps, and the longest
_KEPT_SOURCE = 1 << 16      # source it keeps one of


class Session:
    """A namespace of the language with default device and dtype; see the module docs."""

    def __init__(self, device: str = "cpu", dtype=None, trace: bool = False, echo: bool = True,
                 out=None, files: bool = True, anomaly=False, base_dir=None,
                 time_limit=None, memory_limit=None, step_limit=None, source_limit=None,
                 scheduler=None, workers=None):
        # The session's run context: its defaults, trace, anomaly mode, names, files
        # permission and last backward, current while its code runs (see autodsl.context).
        self._ctx = RunContext(language=1, names=lambda: self.namespace,
                               trace_sink=self._set_last_trace, trace_printer=self._print_trace,
                               host_entry=self.context,
                               dask_scheduler=_dask_scheduler(scheduler, workers))
        self.device = device
        self.dtype = dtype
        self.anomaly = anomaly
        self.trace = trace
        self.files = files      # False: no built-in may read or write files (load, save, include, dot)
        self.base_dir = base_dir
        self.echo = echo
        self.out = out
        self.last_trace = None
        self.namespace: dict[str, Any] = _predefined()
        self._builtins = make_builtins(lambda: self.out, lambda: self._interp)
        self._interp = Interpreter(self.namespace, self._builtins, echo=self._echo)
        self._limits = (None, None, None)       # (time, steps, memory): see _entry_limits
        self._held = None       # the memory limit's last estimate of what the session holds
        self._programs: dict = {}   # (source, file name) -> the Program run parsed: see _program
        self.time_limit = time_limit
        self.step_limit = step_limit
        self.memory_limit = memory_limit
        self.source_limit = source_limit

    # -- resource limits ---------------------------------------------------------
    @property
    def time_limit(self) -> float | None:
        """Wall-clock seconds each ``run()`` or host call into the session's code may take, or None."""
        return self._limits[0]

    @time_limit.setter
    def time_limit(self, seconds) -> None:
        if seconds is not None and (isinstance(seconds, bool) or not isinstance(seconds, (int, float))
                                    or not seconds > 0):
            raise ValueError_(f"time_limit is a positive number of seconds (or None), not {describe(seconds)}")
        self._limits = (None if seconds is None else float(seconds),) + self._limits[1:]

    @property
    def step_limit(self) -> int | None:
        """Interpreter steps (statements, loop iterations, calls) per ``run()`` or host call, or None."""
        return self._limits[1]

    @step_limit.setter
    def step_limit(self, steps) -> None:
        if isinstance(steps, float) and steps.is_integer() and steps > 0:
            steps = int(steps)          # (step_limit=1e6)
        if steps is not None and (isinstance(steps, bool) or not isinstance(steps, int) or steps <= 0):
            raise ValueError_(f"step_limit is a positive whole number of steps (or None), not {describe(steps)}")
        self._limits = (self._limits[0], steps, self._limits[2])

    @property
    def memory_limit(self) -> int | None:
        """Bytes of tensors, strings and lists the session may hold, or None; set it to bytes or
        a size such as "512M" or "2G" (K, M, G, T: powers of 1000; KiB, MiB, GiB: of 1024)."""
        return self._limits[2]

    @memory_limit.setter
    def memory_limit(self, size) -> None:
        self._limits = self._limits[:2] + (_size_option("memory_limit", size, "512M"),)

    @property
    def source_limit(self) -> int:
        """The most bytes ``include`` and the text formats of ``load`` read of one file (16 MB
        unless set); a larger file is refused before it is read. Set it to bytes or a size such
        as "64M" (None: the default)."""
        return self._ctx.source_limit or DEFAULT_SOURCE_LIMIT

    @source_limit.setter
    def source_limit(self, size) -> None:
        self._ctx.source_limit = _size_option("source_limit", size, "64M")

    @contextlib.contextmanager
    def _entry_limits(self):
        # A fresh Limits for each entry into the session's code (Session.context): the time
        # and step limits count from here; the run context's ops and the interpreter read it.
        time_limit, step_limit, memory_limit = self._limits
        if time_limit is None and step_limit is None and memory_limit is None:
            yield
            return
        ctx, interp = self._ctx, self._interp
        saved = ctx.limits, interp.limits
        lim = ctx.limits = interp.limits = Limits(time_limit, step_limit, memory_limit,
                                                  count=self._held_bytes, held=self._held)
        try:
            yield
        finally:
            ctx.limits, interp.limits = saved
            if lim.held is not None:    # the next entry starts from this estimate (no count)
                self._held = lim.held + lim.asked

    def _held_bytes(self) -> int:
        # what the memory limit counts: the values of the session's variables and of the
        # scopes of the function running now (core/limits.py's held_bytes)
        roots = []
        scope = self._interp.scope
        while scope is not None:
            roots.extend(scope.vars.values())
            scope = scope.parent
        if self._interp.scope is not self._interp.globals:
            roots.extend(self.namespace.values())
        return held_bytes(roots)

    # -- settings (fields of the session's run context) -------------------------
    @property
    def device(self) -> str:
        """The default device of new tensors in this session ("cpu", "cuda" or "dask")."""
        return self._ctx.default_device

    @device.setter
    def device(self, device) -> None:
        self._ctx.default_device = backend.check_device(device)

    @property
    def dtype(self):
        """The session's default floating dtype, or None to use the Python API's default."""
        return self._ctx.default_dtype

    @dtype.setter
    def dtype(self, dtype) -> None:
        if dtype is not None:
            with backend.defaults(dtype=dtype):     # validates it (floating dtypes only)
                dtype = backend.get_default_dtype()
        self._ctx.default_dtype = dtype

    @property
    def trace(self) -> bool:
        """True when every backward in this session prints its trace."""
        return self._ctx.trace_enabled

    @trace.setter
    def trace(self, on) -> None:
        self._ctx.trace_enabled = bool(on)

    @property
    def anomaly(self):
        """Anomaly mode: None (off), "warn" or "raise" (see autodsl.anomaly)."""
        return get_anomaly_mode(self._ctx)

    @anomaly.setter
    def anomaly(self, mode) -> None:
        self._ctx.anomaly = anomaly_state("warn" if mode is True else (mode or None))

    @property
    def files(self) -> bool:
        """False: no built-in may write files (for embedding)."""
        return self._ctx.files_allowed

    @files.setter
    def files(self, allowed) -> None:
        self._ctx.files_allowed = bool(allowed)

    @property
    def base_dir(self) -> str | None:
        """Where relative paths of ``load``, ``save`` and ``include`` start for code that is not
        in a script file (``run`` strings, the REPL); None: the current directory. A script
        file's paths start at its own directory."""
        return self._ctx.base_dir

    @base_dir.setter
    def base_dir(self, path) -> None:
        # absolute, so that an included file's name (joined to it) is not joined to it again
        if path is not None and not isinstance(path, (str, os.PathLike)):
            raise TypeError_(f"Session(base_dir=...) is a directory's path (a string or a Path), not "
                             f"{describe(path)}")
        self._ctx.base_dir = None if path is None else os.path.abspath(os.fspath(path))

    # -- running ---------------------------------------------------------------
    def parse(self, source: str, filename: str = "<string>") -> A.Program:
        """Parse without running (raises ParseError; TypeError_ when ``source`` is not a string)."""
        if not isinstance(source, str):
            hint = " (decode bytes first: source.decode())" if isinstance(source, (bytes, bytearray)) else ""
            raise TypeError_(f"the source to run is a string of the language's code, not {describe(source)}{hint}")
        with use(self._ctx):
            return parse(source, filename)

    def run(self, source: str | A.Program, filename: str = "<string>", variables: dict | None = None):
        """Parse all of ``source``, then run it; the last bare expression's value, or None. A
        source string of at most 64 KiB run before with the same ``filename`` (one of the last
        16) is not parsed again (Note [parsed once]); a Program from ``parse`` runs as it is.

        ``variables``: names to define before it runs (``{"N": 1000, "lr": 0.1}``, as the
        command line's ``--set N=1000``); NameError_ for a name the language cannot use."""
        program = source if isinstance(source, A.Program) else self._program(source, filename)
        for name, value in (variables or {}).items():
            self[name] = value
        seen: set = set()
        # (the context outermost: nothing of run's own runs after it restores the collector's
        # threshold, see _Entry)
        with self.context():
            with warnings.catch_warnings():
                warnings.simplefilter("always", UserWarning)
                warnings.showwarning = self._make_warning_handler(program, seen)
                value, _ = self._interp.run(program)
        return value

    # Note [parsed once]: a Program depends only on its text and file name (positions are cut
    # from the text, and a loop's compiled body, kept on its node, only from the positions), and
    # running it leaves it as it was (``run`` takes a Program as well). So ``run`` keeps the
    # last few it parsed: an embedding that runs one source in a loop parses it once, where
    # Lark's parse of a four-line script cost more than a hundred iterations of its loop.
    def _program(self, source, filename) -> A.Program:
        """``parse(source, filename)``, or the Program it gave for the same text before."""
        if type(source) is not str or type(filename) is not str or len(source) > _KEPT_SOURCE:
            return self.parse(source, filename)
        programs = self._programs
        program = programs.get((source, filename))
        if program is None:
            program = self.parse(source, filename)      # (a ParseError keeps nothing)
            if len(programs) >= _KEPT_PROGRAMS:
                del programs[next(iter(programs))]      # the oldest
            programs[(source, filename)] = program
        return program

    def run_input(self, program: A.Program):
        """Run ``program`` as one input of the REPL or a notebook cell: on Ctrl-C (Jupyter's
        interrupt) everything it changed is taken back through the undo journal
        (core/journal.py: bindings, the last trace, tensors, .grad, hooks, flags, lists,
        settings and random generators), and the KeyboardInterrupt carries ``kept``, the
        names of what could not be. A DSLError keeps the script semantics: what ran before the
        failing statement stays. Returns what ``run`` returns."""
        value = error = log = None
        try:
            # the session's settings are saved when the transaction opens, in its context; its
            # variables and last trace here; every tensor, .grad, hook, flag and list by what
            # writes them
            with self.context(), transaction() as log:
                record_items(self.namespace)
                record_attrs(self, "last_trace")
                try:
                    value = self.run(program)
                except DSLError as e:     # not undone: raised after the transaction closes
                    error = e
        except KeyboardInterrupt as stop:
            stop.kept = () if log is None else tuple(dict.fromkeys(log.kept))    # for the message
            raise
        if error is not None:
            raise error
        return value

    def context(self):
        """The one way into the session: make its run context current (its default device
        and dtype, random generator, trace, anomaly mode, variable names, files permission,
        limits and last backward, and the language's positions for errors) and raise Python's
        recursion limit for the language's nesting, restoring both on exit.

        ``run()`` enters through it, REPL commands that call built-ins directly (``:step``)
        do, and so does every call into the session's code from outside a run: a script's
        function called from Python (``s["f"](x)``), a hook a script registered run by the
        host's ``backward()`` or ``grad()``, a compiled function, the text of a function
        value; they reach it as the run context's ``host_entry`` (``autodsl.context.call_in``).
        Entering from inside is free (nothing is set twice). The caller's grad mode and
        progress display carry over into it, and so does a backward pass it runs in."""
        return _Entry(self)

    @contextlib.contextmanager
    def _entered(self):
        """All of ``context()``'s work but the collector's threshold, which is ``_Entry``'s."""
        ctx = self._ctx
        outer = current()
        if outer is ctx:            # already inside (a REPL command around a run, a nested call)
            yield self
            return
        ctx.grad_enabled = outer.grad_enabled
        ctx.loop_progress = outer.loop_progress
        # a hook run by the host's backward is in that pass, as one run by the session's own is
        passes, ctx.in_pass = ctx.in_pass, outer.in_pass
        old_limit = sys.getrecursionlimit()
        if old_limit < _RECURSION_LIMIT:
            sys.setrecursionlimit(_RECURSION_LIMIT)
        try:
            with use(ctx), ieee(), self._entry_limits():
                yield self
        finally:
            ctx.in_pass = passes
            # (one a host function set inside is the host's now: kept, as the threshold below)
            if old_limit < _RECURSION_LIMIT and sys.getrecursionlimit() == _RECURSION_LIMIT:
                sys.setrecursionlimit(old_limit)

    def _print_trace(self, text: str) -> None:
        out = self.out if self.out is not None else sys.stdout
        out.write(text + "\n")
        out.flush()

    def _set_last_trace(self, trace) -> None:
        # Name leaves by the variables that hold them, so the trace reads "w1.grad = ...".
        trace.names = LazyNames(dict(self.namespace))     # built only if the trace is shown
        self.last_trace = trace

    def _echo(self, value) -> None:
        if not self.echo:
            return
        if callable(self.echo):     # a notebook kernel shows the value itself (rich display)
            self.echo(value)
            return
        out = self.out if self.out is not None else sys.stdout
        out.write(_format(value) + "\n")

    def _make_warning_handler(self, program: A.Program, seen: set):
        interp = self._interp

        def show(message, category, filename, lineno, file=None, line=None):
            pos = None
            try:
                pos = current().pos
            except ImportError:  # pragma: no cover
                pass
            if pos is None and interp.current_stmt is not None:
                st = interp.current_stmt
                pos = (program.source.filename if program.source else "<string>", st.line, st.column)
            where = f"{pos[0] or '<string>'}:{pos[1]}:{pos[2]}" if pos else "<string>"
            text = f"{where}: warning: {message}"
            if text in seen:
                return
            seen.add(text)
            sys.stderr.write(text + "\n")

        return show

    # -- the namespace ---------------------------------------------------------
    def __getitem__(self, name: str):
        try:
            return self.namespace[name]
        except KeyError:
            raise UnknownNameError(f"`{name}` is not defined in this session") from None

    def __setitem__(self, name: str, value) -> None:
        if not isinstance(name, str) or not name.isidentifier() or name.startswith("_"):
            raise NameError_(f"{name!r} cannot be a name in the language (letters, digits and `_`, "
                             "not starting with `_` or a digit)")
        if name in KEYWORDS:        # no script could read it: `for` is always the keyword
            raise NameError_(f"`{name}` is a keyword of the language, so it cannot be a variable's name; "
                             "choose another name")
        self.namespace[name] = value

    def __contains__(self, name) -> bool:
        return name in self.namespace

    def get(self, name: str, default=None):
        return self.namespace.get(name, default)

    def names(self) -> list[str]:
        """Every name a script can use here: its bindings and the built-ins (for completion)."""
        return sorted(set(self.namespace) | set(self._builtins))

    def bindings(self) -> dict[str, Any]:
        """The session's own bindings (predefined and user-made), as a new dict."""
        return dict(self.namespace)

    @property
    def builtins(self) -> dict:
        return dict(self._builtins)

    @property
    def scheduler(self):
        """What computes the session's dask arrays (see the module doc)."""
        return self._ctx.dask_scheduler

    def close(self) -> None:
        """Shut down what the session started to compute (a dask LocalCluster or the Client it
        connected); it can compute again afterwards, starting a new one. Also ``with Session() as s``."""
        self._ctx.dask_scheduler.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> bool:
        self.close()
        return False

    def __repr__(self) -> str:
        return f"Session(device={self.device!r}, dtype={self.dtype!r}, trace={self.trace})"


class _Entry:
    """``Session.context()``: ``Session._entered``, and the collector's young threshold raised
    to ``_GC_GEN0`` while inside (a script builds graphs of many small objects, and every
    young collection walks them).

    Note [the collection after a run]: the graph a run leaves (W1: 30,000 nodes) is all young,
    so with the host's threshold back the next allocation walks all of it, once, whoever makes
    it. The Python API leaves that walk to the host's next allocation (``apply`` holds the
    collector off while it allocates, ops/registry.py); so does this, a class rather than a
    generator: restoring the threshold is the last thing it does, after everything that
    allocates on the way out (contextlib's StopIteration, the inner managers), and
    ``Session.run`` has nothing left to do after it but return. Same work, the host's
    collection, as for the same graph made through the Python API (W6: 20 ms of a 130 ms run
    of W1 as a script was that walk, inside the run)."""

    __slots__ = ("_session", "_open")

    def __init__(self, session):
        self._session = session
        # (the inner manager, the host's threshold or None) of each entry not left yet: one
        # object entered again, after or inside its own block, keeps each entry's own
        self._open: list = []

    def __enter__(self):
        session = self._session
        threshold = None
        if current() is not session._ctx:
            host = gc.get_threshold()
            if host[0] and host[0] < _GC_GEN0:
                threshold = host
        inner = session._entered()
        value = inner.__enter__()       # (if it raises, nothing was changed)
        self._open.append((inner, threshold))
        if threshold is not None:
            gc.set_threshold(_GC_GEN0, *threshold[1:])
        return value

    def __exit__(self, *exc):
        inner, threshold = self._open.pop()
        try:
            return inner.__exit__(*exc)
        finally:
            if threshold is not None:
                # a generation's threshold other than the one set on entry was set inside by the
                # host (a host function a script called): that one is the host's, kept; the
                # others come back (gc.set_threshold(gc.get_threshold()[0], 50, 50) inside sets
                # generations 1 and 2 only)
                ours = (_GC_GEN0, *threshold[1:])
                gc.set_threshold(*[h if now == o else now
                                   for now, o, h in zip(gc.get_threshold(), ours, threshold)])

    def __call__(self, func):
        """As a decorator (``@s.context()``): each call of ``func`` runs inside the session."""
        session = self._session

        @functools.wraps(func)
        def inside(*args, **kwargs):
            with _Entry(session):       # (one per call: calls from two threads keep apart)
                return func(*args, **kwargs)
        return inside


def _dask_scheduler(spec, workers):
    """The session's dask scheduler (nothing starts until a dask array is computed); ValueError_
    for an unknown scheduler name or a worker count that is not a whole number above 0."""
    if workers is not None and (isinstance(workers, bool) or not isinstance(workers, int) or workers < 1):
        raise ValueError_(f"workers is a whole number of dask worker processes above 0, not {describe(workers)}")
    return dask_device.Scheduler(spec, n_workers=workers)


def _format(value) -> str:
    return format_value(value)

