"""Fuzzing the language: random programs never make ``Session.run`` raise anything but a DSLError.

Programs come from tests/helpers/program_gen.py: well-formed programs drawn from the grammar
(statements, loops, defs, lists, strings, f-strings, built-in and method calls with random
arguments, backward/grad, hooks, indexing, in-place writes), and malformed text (random
token sequences, mutations of valid programs). For each one, ``Session(files=False).run``
either succeeds or raises a DSLError subclass that (and so does running a program's
top-level statements one by one in one session, as the REPL does):

* is not an internal fault: the interpreter turns a stray Python exception of a kind it
  does not know into ``RuntimeError_("internal error (...)")``; that is a bug here;
* carries a script position (file, line and column) and renders without a traceback;

afterwards the host's calls into the session (showing each value, calling each script
function, backward on each tensor, which runs its hooks) raise only DSLErrors too; and the
program ends in bounded time and memory (the generators keep loops and sizes small;
a generous wall-clock bound catches a hang, and the process's peak memory may not grow by
more than ``_MAX_GROWTH``). Where ``Session`` takes resource limits, each program runs under
a step, time and memory limit, and a ``LimitError`` is a fine outcome.

The examples are drawn from a fixed seed (``derandomize=True``, no example database), so a CI
run is the same every time. The default size keeps CI quick; a longer hunt runs with the
environment variable ``AUTODSL_FUZZ_EXAMPLES=N`` (N examples per test; e.g.
``AUTODSL_FUZZ_EXAMPLES=10000 python -m pytest tests/test_fuzz_programs.py``).
Findings of earlier hunts are kept as regression tests in tests/test_issue12_fuzz_found.py.
"""
from __future__ import annotations

import inspect
import io
import os
import resource
import time
import warnings

from helpers.program_gen import malformed, statements
from hypothesis import HealthCheck, given, settings

import autodsl
from autodsl.errors import DSLError

_EXAMPLES = int(os.environ.get("AUTODSL_FUZZ_EXAMPLES", "0") or 0)
_MAX_SECONDS = 30.0            # a hang, not slowness: every program here takes milliseconds
_MAX_GROWTH = 2 * 2 ** 30      # bytes the peak resident size may grow by during one test
_LIMITS = {"time_limit": 2.0, "step_limit": 20_000, "memory_limit": 2 ** 28}


def _session() -> autodsl.Session:
    kw = {"files": False, "echo": True, "out": io.StringIO()}
    params = inspect.signature(autodsl.Session).parameters
    kw.update({k: v for k, v in _LIMITS.items() if k in params})
    return autodsl.Session(**kw)


def _peak() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024     # Linux: KiB


def _run_one(s: autodsl.Session, source: str, whole: str) -> None:
    """``s.run(source)``: fine, or a well-formed DSLError; anything else propagates."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            s.run(source)
    except DSLError as e:
        text = e.render()
        assert "internal error" not in e.message, f"internal fault at {source!r} in {whole!r}: {text}"
        assert e.has_position and e.column is not None, f"no position at {source!r} in {whole!r}: {text}"
        assert "Traceback" not in text


_PYTHON_VALUES = (int, float, str, list, tuple, range, type(None))


def _is_python_function(value) -> bool:
    """A built-in bound to a name (``z = tensor``): a function of the autodsl package, not a
    script's."""
    return inspect.isfunction(value) or inspect.isbuiltin(value) or inspect.ismethod(value)


def _host_calls(s: autodsl.Session, source: str) -> None:
    """What a host program does with a session's values afterwards: show each one, call each
    script function, run backward on each tensor that requires grad (its hooks run). Each
    may fail only with a DSLError."""
    for name, value in s.bindings().items():
        if not isinstance(value, _PYTHON_VALUES):      # Python's own str() is not autodsl's
            str(value)
            repr(value)
        calls = []
        if callable(value) and not isinstance(value, type):
            calls = [lambda f=value: f(autodsl.tensor([1.0, -2.0], requires_grad=True))]
            if not _is_python_function(value):      # a built-in called wrongly from Python is
                calls.append(value)                 # Python's TypeError, as for any Python API
        elif isinstance(value, autodsl.Tensor) and value.requires_grad:
            calls = [lambda v=value: v.sum().backward()]
        for call in calls:
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    call()
            except DSLError as e:
                assert "internal error" not in e.message, f"internal fault in {name} after {source!r}: {e}"


def check_program(source: str, pieces=()) -> None:
    """Run ``source`` in one session, then each of ``pieces`` in turn in another (as a REPL
    would: an error in one does not stop the next); fail on anything but well-formed
    DSLErrors, a hang or a blow-up."""
    start = time.monotonic()
    s = _session()
    _run_one(s, source, source)
    _host_calls(s, source)
    s["x"] = 1                      # the session is still usable after an error
    assert s.run("x + 1") == 2
    s = _session()
    for piece in pieces:
        _run_one(s, piece, source)
    elapsed = time.monotonic() - start
    assert elapsed < _MAX_SECONDS, f"{source!r} ran for {elapsed:.0f} s"


def _settings(default: int) -> settings:
    """A fixed seed, no example database, no deadline (the bound is _MAX_SECONDS)."""
    return settings(max_examples=_EXAMPLES or default, derandomize=True, database=None,
                    deadline=None, print_blob=False, suppress_health_check=list(HealthCheck))


_BASELINE: dict = {}


def _check_memory(name: str) -> None:
    grown = _peak() - _BASELINE[name]
    assert grown < _MAX_GROWTH, f"the peak memory grew by {grown / 2 ** 20:.0f} MiB"


def test_well_formed_programs_raise_only_dsl_errors():
    _BASELINE["programs"] = _peak()

    @_settings(250)
    @given(statements())
    def run(pieces):
        check_program("\n".join(pieces), pieces)

    run()
    _check_memory("programs")


def test_malformed_text_raises_only_dsl_errors():
    _BASELINE["malformed"] = _peak()

    @_settings(250)
    @given(malformed())
    def run(source):
        check_program(source)

    run()
    _check_memory("malformed")
