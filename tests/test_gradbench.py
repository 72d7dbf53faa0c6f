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


def _lse_reference(x):
    a = np.max(x)
    value = a + np.log(np.sum(np.exp(x - a)))
    return value, np.exp(x - value)          # the gradient is softmax(x)


def test_lse_conversation_repeats_and_matches_numpy():
    rng = np.random.default_rng(5)
    x = rng.uniform(-100, 100, size=1000)
    x[3] = x.max()                           # a tie at the max: the gradient is still softmax
    runs = {"min_runs": 3, "min_seconds": 0}
    responses = converse([
        {"id": 0, "kind": "start", "eval": "lse"},
        {"id": 1, "kind": "define", "module": "lse"},
        {"id": 2, "kind": "evaluate", "module": "lse", "function": "primal",
         "input": {"x": x.tolist()} | runs},
        {"id": 3, "kind": "evaluate", "module": "lse", "function": "gradient",
         "input": {"x": x.tolist()} | runs},
    ])
    value, gradient = _lse_reference(x)
    primal = gb_eval.EvaluateResponse.model_validate(responses[2])
    grad = gb_eval.EvaluateResponse.model_validate(responses[3])
    assert primal.success and grad.success
    assert isinstance(primal.output, float)
    np.testing.assert_allclose(primal.output, value, rtol=1e-14)
    np.testing.assert_allclose(grad.output, gradient, rtol=1e-12, atol=1e-300)
    # min_runs repeats the call (the gradient not accumulating across runs), one timing per run
    assert [t.name for t in grad.timings] == ["evaluate"] * 3


def test_min_seconds_keeps_running():
    tool = Tool()
    tool.handle({"id": 0, "kind": "define", "module": "lse"})
    r = tool.handle({"id": 1, "kind": "evaluate", "module": "lse", "function": "primal",
                     "input": {"x": [1.0, 2.0], "min_runs": 1, "min_seconds": 0.05}})
    assert r["success"]
    assert sum(t["nanoseconds"] for t in r["timings"]) >= 0.05e9
    assert r["output"] == pytest.approx(np.logaddexp(1.0, 2.0), rel=1e-15)
