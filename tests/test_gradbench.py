"""The GradBench tool (benchmarks/gradbench) answers protocol messages in-process.

The responses are checked with GradBench's own protocol types (so the test needs
pydantic and GradBench's Python package from ../shared/gradbench, and skips
without them) and their outputs against NumPy.
"""
import io
import json
import sys
from pathlib import Path

import numpy as np
import pytest

GRADBENCH_PY = Path(__file__).resolve().parents[2] / "shared" / "gradbench" / "python" / "gradbench"

pytest.importorskip("pydantic")
if GRADBENCH_PY.is_dir() and str(GRADBENCH_PY) not in sys.path:
    sys.path.append(str(GRADBENCH_PY))
gb_eval = pytest.importorskip("gradbench.eval")

from benchmarks.gradbench.adapter import Tool, main


def converse(messages):
    """Feed `messages` to the tool's main loop as JSON lines; the parsed responses."""
    out = io.StringIO()
    main(io.StringIO("".join(json.dumps(m) + "\n" for m in messages)), out)
    return [json.loads(line) for line in out.getvalue().splitlines()]


def test_hello_conversation():
    xs = [1.0, -2.5, 3.25]
    messages = [{"id": 0, "kind": "start", "eval": "hello"},
                {"id": 1, "kind": "define", "module": "hello"}]
    for x in xs:
        messages.append({"id": len(messages), "kind": "evaluate", "module": "hello",
                         "function": "square", "input": x})
        messages.append({"id": len(messages), "kind": "evaluate", "module": "hello",
                         "function": "double", "input": x})
    responses = converse(messages)
    assert [r["id"] for r in responses] == list(range(len(messages)))
    assert gb_eval.StartResponse.model_validate(responses[0]).tool == "autodsl"
    assert gb_eval.DefineResponse.model_validate(responses[1]).success
    for i, x in enumerate(xs):
        sq = gb_eval.EvaluateResponse.model_validate(responses[2 + 2 * i])
        db = gb_eval.EvaluateResponse.model_validate(responses[3 + 2 * i])
        assert sq.success and db.success
        assert sq.output == pytest.approx(np.square(x), rel=1e-15)
        assert db.output == pytest.approx(2 * x, rel=1e-15)
        assert len(sq.timings) == 1 and sq.timings[0].name == "evaluate"
        assert sq.timings[0].nanoseconds > 0


def test_unknown_module_and_function_are_refused():
    tool = Tool()
    r = tool.handle({"id": 0, "kind": "define", "module": "no_such_eval"})
    assert r["id"] == 0 and r["success"] is False and "no_such_eval" in r["error"]
    # a Python file of the package that is not an eval is not a module either
    assert tool.handle({"id": 1, "kind": "define", "module": "adapter"})["success"] is False
    assert tool.handle({"id": 2, "kind": "define", "module": "hello"})["success"] is True
    r = tool.handle({"id": 3, "kind": "evaluate", "module": "hello", "function": "cube", "input": 2.0})
    assert r["success"] is False and "cube" in r["error"]
    r = tool.handle({"id": 4, "kind": "evaluate", "module": "lse_undefined", "function": "primal",
                     "input": {}})
    assert r["success"] is False and "not defined" in r["error"]
