"""GradBench's protocol for autodsl: one JSON message a line in, one response a line out.

`define` for module NAME loads `NAME.ad` (next to this file) into a fresh
`autodsl.Session` and imports the conversion module `benchmarks.gradbench.NAME`
(`NAME.py` here). A module without both is refused with success=false and an
error, as is a conversion module that fails to import. So an eval is added by
dropping in its two files; nothing here changes.

A conversion module provides:

- ``prepare(function, input) -> list``: the positional arguments of the
  language function named ``function`` (tensors, numbers), made from the
  eval's JSON ``input``. Not timed.
- ``finish(function, output) -> JSON``: the response's ``output`` from what the
  language function returned. Not timed.
- optionally ``SESSION = {"dtype": ...}``: keywords of the Session (the default
  here is float64, the dtype of every GradBench eval).

`evaluate` times only the call of the language function, as GradBench's Python
tools do (`gradbench.wrap.multiple_runs`): it repeats the call until both
``input["min_runs"]`` runs and ``input["min_seconds"]`` seconds are reached
and reports each run's nanoseconds (an input without those fields, such as
hello's plain number, runs once: `gradbench.wrap.function`). Arguments are
prepared once and reused by every run, so a language function that takes
gradients must not let them accumulate in ``.grad`` (use ``grad(...)``, or
clear ``.grad`` first, inside the timed function as the PyTorch tool does).
"""

from __future__ import annotations

import importlib
import json
import sys
import time
import traceback
from pathlib import Path
from typing import Any

import autodsl

HERE = Path(__file__).resolve().parent
PACKAGE = __package__ or "benchmarks.gradbench"
TOOL_NAME = "autodsl"


class Module:
    """One defined eval module: its session (NAME.ad loaded) and its conversion module."""

    def __init__(self, name: str, directory: Path = HERE, package: str = PACKAGE):
        script = directory / f"{name}.ad"
        if not name.isidentifier() or not script.is_file():
            raise LookupError(f"autodsl has no GradBench module {name!r} (no {script.name} in {directory})")
        if not (directory / f"{name}.py").is_file():
            raise LookupError(f"GradBench module {name!r} has {script.name} but no {name}.py "
                              "to convert its inputs and outputs")
        self.name = name
        self.convert = importlib.import_module(f"{package}.{name}")
        options = {"dtype": autodsl.float64, "echo": False, "files": False}
        options.update(getattr(self.convert, "SESSION", {}))
        self.session = autodsl.Session(**options)
        self.session.run(script.read_text(), filename=str(script))

    def function(self, name: str):
        value = self.session.get(name) if name.isidentifier() and not name.startswith("_") else None
        if not callable(value):
            raise LookupError(  # noqa: TRY004  (a missing function, answered as success=false)
                f"{self.name}.ad defines no function {name!r}")
        return value

    def evaluate(self, function: str, input: Any) -> dict:
        """The response fields of one evaluation: success, output and timings."""
        fn = self.function(function)
        args = self.convert.prepare(function, input)
        runs = input if isinstance(input, dict) else {}
        min_runs, min_seconds = int(runs.get("min_runs", 1)), float(runs.get("min_seconds", 0.0))
        timings = []
        elapsed = 0.0
        with self.session.context():
            while len(timings) < min_runs or elapsed < min_seconds:
                start = time.perf_counter_ns()
                output = fn(*args)
                end = time.perf_counter_ns()
                timings.append({"name": "evaluate", "nanoseconds": end - start})
                elapsed += (end - start) / 1e9
        return {"success": True, "output": self.convert.finish(function, output), "timings": timings}


class Tool:
    """The state of one protocol conversation: the modules defined so far."""

    def __init__(self, directory: Path = HERE, package: str = PACKAGE):
        self.directory = directory
        self.package = package
        self.modules: dict[str, Module] = {}

    def handle(self, message: dict) -> dict:
        """The response to one message (its id included)."""
        kind = message.get("kind")
        response: dict[str, Any] = {}
        if kind == "start":
            response["tool"] = TOOL_NAME
        elif kind == "define":
            try:
                self.modules[message["module"]] = Module(message["module"], self.directory, self.package)
                response["success"] = True
            except Exception as e:  # noqa: BLE001  (any failure to load is the eval's answer, not a crash)
                response = {"success": False, "error": _error_text(e)}
        elif kind == "evaluate":
            try:
                module = self.modules.get(message["module"])
                if module is None:
                    raise LookupError(f"module {message['module']!r} was not defined")
                response = module.evaluate(message["function"], message["input"])
            except Exception as e:  # noqa: BLE001  (a failed evaluation is answered, the tool goes on)
                response = {"success": False, "error": _error_text(e)}
        return {"id": message["id"]} | response


def _error_text(e: BaseException) -> str:
    if isinstance(e, (autodsl.DSLError, LookupError)):
        return str(e)
    return "".join(traceback.format_exception(e))


def main(stdin=None, stdout=None) -> None:
    stdin = sys.stdin if stdin is None else stdin
    stdout = sys.stdout if stdout is None else stdout
    tool = Tool()
    for line in stdin:
        if not line.strip():
            continue
        print(json.dumps(tool.handle(json.loads(line))), file=stdout, flush=True)
