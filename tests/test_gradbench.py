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


def _evaluate(tool, module, function, input):
    r = tool.handle({"id": 0, "kind": "evaluate", "module": module, "function": function,
                     "input": input | {"min_runs": 1, "min_seconds": 0}})
    assert r["success"], r.get("error")
    return r["output"]


def test_every_script_has_its_conversion():
    from benchmarks.gradbench import adapter
    scripts = sorted(p.stem for p in adapter.HERE.glob("*.ad"))
    assert {"hello", "lse", "llsq", "gmm", "kmeans", "lstm"} <= set(scripts)
    for name in scripts:
        convert = __import__(f"benchmarks.gradbench.{name}", fromlist=["prepare"])
        assert callable(convert.prepare) and callable(convert.finish), name


def test_llsq_against_numpy():
    tool = Tool()
    assert tool.handle({"id": 0, "kind": "define", "module": "llsq"})["success"]
    rng = np.random.default_rng(1)
    for n, m in [(16, 1), (33, 5), (200, 128)]:
        x = rng.random(m)
        t = -1 + np.arange(n) * 2 / (n - 1)
        a = t[:, None] ** np.arange(m)
        r = np.sign(t) - a @ x
        np.testing.assert_allclose(_evaluate(tool, "llsq", "primal", {"x": x.tolist(), "n": n}),
                                   0.5 * r @ r, rtol=1e-12)
        np.testing.assert_allclose(_evaluate(tool, "llsq", "gradient", {"x": x.tolist(), "n": n}),
                                   -(a.T @ r), rtol=1e-10, atol=1e-12)


def test_kmeans_against_numpy():
    tool = Tool()
    assert tool.handle({"id": 0, "kind": "define", "module": "kmeans"})["success"]
    rng = np.random.default_rng(2)
    points = rng.random((50, 3))
    centroids = points[-4:]
    d2 = ((points[None, :, :] - centroids[:, None, :]) ** 2).sum(axis=2)     # k x n
    nearest = d2.argmin(axis=0)
    inp = {"points": points.tolist(), "centroids": centroids.tolist()}
    np.testing.assert_allclose(_evaluate(tool, "kmeans", "cost", inp), d2.min(axis=0).sum(), rtol=1e-12)
    # J_j = 2 sum over j's points of (C_j - P_i); H_j = 2 * (number of j's points)
    counts = np.bincount(nearest, minlength=4)[:, None]
    jac = 2 * (counts * centroids - np.array([points[nearest == j].sum(axis=0) for j in range(4)]))
    np.testing.assert_allclose(_evaluate(tool, "kmeans", "dir", inp), jac / (2 * counts),
                               rtol=1e-10, atol=1e-12)


def test_gmm_objective_against_gradbench_naive_posterior():
    pytest.importorskip("scipy")
    gmm_eval = pytest.importorskip("gradbench.evals.gmm.run")
    tool = Tool()
    assert tool.handle({"id": 0, "kind": "define", "module": "gmm"})["success"]
    for d, k, m, gamma in [(2, 3, 0, 1.0), (4, 2, 2, 0.7)]:
        inp = gmm_eval.generate(seed=3, d=d, k=k, n=6, m=m, gamma=gamma)
        naive = gmm_eval.expect_naive_objective("objective", inp)
        assert naive["success"]
        np.testing.assert_allclose(_evaluate(tool, "gmm", "objective", inp), naive["output"], rtol=1e-9)
        # the gradient against central differences of the objective in each parameter
        grads = _evaluate(tool, "gmm", "jacobian", inp)
        eps = 1e-6
        for name in ("alpha", "mu", "q", "l"):
            flat = np.asarray(inp[name], dtype=float).ravel()
            fd = []
            for i in range(flat.size):
                vals = []
                for sgn in (1, -1):
                    moved = flat.copy()
                    moved[i] += sgn * eps
                    shaped = moved.reshape(np.shape(inp[name])).tolist()
                    vals.append(_evaluate(tool, "gmm", "objective", inp | {name: shaped}))
                fd.append((vals[0] - vals[1]) / (2 * eps))
            np.testing.assert_allclose(np.ravel(grads[name]), fd, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("layers,chars", [(1, 6), (2, 9), (3, 4)])
def test_lstm_against_gradbench_pytorch_objective(layers, chars):
    torch = pytest.importorskip("torch")
    ref = pytest.importorskip("gradbench.tools.pytorch.lstm_objective")
    rng = np.random.default_rng(layers * 10 + chars)
    b = 5
    inp = {"main_params": rng.random((2 * layers, 4 * b)), "extra_params": rng.random((3, b)),
           "state": rng.random((2 * layers, b)),
           "sequence": rng.integers(0, 2, size=(chars, b)).astype(float)}
    params = [torch.tensor(inp[k], dtype=torch.float64, requires_grad=True)
              for k in ("main_params", "extra_params")]
    loss = ref.lstm_objective(*params, torch.tensor(inp["state"]), torch.tensor(inp["sequence"]))
    loss.backward()
    tool = Tool()
    assert tool.handle({"id": 0, "kind": "define", "module": "lstm"})["success"]
    as_json = {k: v.tolist() for k, v in inp.items()}
    np.testing.assert_allclose(_evaluate(tool, "lstm", "objective", as_json), loss.item(), rtol=1e-13)
    np.testing.assert_allclose(_evaluate(tool, "lstm", "jacobian", as_json),
                               np.concatenate([p.grad.numpy().ravel() for p in params]),
                               rtol=1e-11, atol=1e-14)


def test_table_parses_run_sh_lines_and_replaces_only_its_section(tmp_path):
    from benchmarks.gradbench import table
    out = ("primal       n=16                          0.288 ms  valid\n"
           "square                                        0.9 ms  valid\n"
           "square                                        0.5 ms  INVALID wrong\n"
           "gradient     n=16                     FAILED ['boom']\n"
           "2 valid, 1 invalid, 1 failed\n")
    run = table.parse("autodsl", out)
    assert run.rows == {("primal", "n=16"): (0.288, "valid"), ("square", ""): (0.9, "valid"),
                        ("square", "#2"): (0.5, "INVALID"), ("gradient", "n=16"): (None, "FAILED")}
    assert run.summary == "2 valid, 1 invalid, 1 failed"
    ref = table.parse("pytorch", "primal       n=16                          0.144 ms  valid\n")
    block = table.section({"lse": (run, ref)}, [], "")
    assert "| primal | n=16 | 0.288 | 0.144 | 2 | valid |" in block
    path = tmp_path / "RESULTS.md"
    path.write_text("# top\n\n<!-- cpu-results:begin -->\nkept\n<!-- cpu-results:end -->\n")
    table.write_section(block, path)
    table.write_section(block.replace("0.288", "0.3"), path)       # a rerun replaces it
    text = path.read_text()
    assert text.startswith("# top\n\n<!-- cpu-results:begin -->\nkept\n<!-- cpu-results:end -->")
    assert text.count(table.BEGIN) == 1 and "| 0.3 |" in text and "0.288" not in text
    # a rerun of one eval keeps the other evals' subsections
    other = table.section({"kmeans": (run, ref)}, [], "")
    merged = table._merge(text, other)
    assert "### lse" in merged and "### kmeans" in merged and merged.count(table.END) == 1
