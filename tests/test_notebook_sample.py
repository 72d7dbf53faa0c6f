"""samples/backprop.ipynb, executed by nbclient twice: through the autodsl kernel, and as
its IPython-extension copy (samples/backprop_ipython.ipynb: ``%load_ext autodsl``, then
``%%autodsl`` cells) through ipykernel's python3 kernel. Both must show the gradients, the
graph as an inline SVG (with Graphviz's dot), the trace and check tables as HTML, and
explain's chain rule. The kernelspecs are installed into a temporary JUPYTER_PATH
(tests/helpers/jupyter_env.py), so nothing depends on what the machine has installed."""
from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest
from helpers.jupyter_env import have_dot, jupyter_environ, need_jupyter

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = ROOT / "samples" / "backprop.ipynb"
COPY = ROOT / "samples" / "backprop_ipython.ipynb"

GRADIENTS = {"w1": -364.5, "w2": 182.25, "b": -91.125}


def _make_notebooks():
    sys.path.insert(0, str(ROOT / "samples"))
    try:
        import make_notebooks
    finally:
        sys.path.remove(str(ROOT / "samples"))
    return make_notebooks


def test_the_sample_is_saved_without_outputs_for_the_autodsl_kernel():
    nb = json.loads(SAMPLE.read_text(encoding="utf-8"))
    assert nb["metadata"]["kernelspec"]["name"] == "autodsl"
    assert nb["metadata"]["language_info"]["name"] == "autodsl"
    code = [c for c in nb["cells"] if c["cell_type"] == "code"]
    assert code and all(c["outputs"] == [] and c["execution_count"] is None for c in code)


def test_the_extension_copy_is_what_make_notebooks_writes():
    mk = _make_notebooks()
    want = mk.dumps(mk.extension_copy(json.loads(SAMPLE.read_text(encoding="utf-8"))))
    assert COPY.read_text(encoding="utf-8") == want, "run python samples/make_notebooks.py"
    nb = json.loads(want)
    code = [c for c in nb["cells"] if c["cell_type"] == "code"]
    assert "".join(code[0]["source"]) == "%load_ext autodsl"
    assert all("".join(c["source"]).startswith("%%autodsl\n") for c in code[1:])
    assert nb["metadata"]["kernelspec"]["name"] == "python3"


def _execute(path: Path, tmp: Path):
    need_jupyter()
    import nbformat
    from nbclient import NotebookClient

    nb = nbformat.read(str(path), as_version=4)
    with jupyter_environ(tmp):      # nbclient's kernel manager looks the kernelspec up there
        NotebookClient(nb, timeout=120, startup_timeout=120,
                       resources={"metadata": {"path": str(tmp)}}).execute()
    return nb


def _outputs(nb, first_line: str) -> list:
    """The outputs of the code cell whose code (after a %%autodsl line) starts with ``first_line``."""
    for cell in nb.cells:
        src = cell.source.removeprefix("%%autodsl\n")
        if cell.cell_type == "code" and src.startswith(first_line):
            return cell.outputs
    raise AssertionError(f"no cell starts with {first_line!r}")


def _data(outputs, mime: str) -> list[str]:
    return [o["data"][mime] for o in outputs
            if o["output_type"] in ("execute_result", "display_data") and mime in o["data"]]


def _text(outputs) -> str:
    parts = [o["text"] for o in outputs if o["output_type"] == "stream" and o["name"] == "stdout"]
    return "".join(parts) + "".join(_data(outputs, "text/plain"))


def _check_outputs(nb):
    for cell in nb.cells:
        errors = [o for o in cell.get("outputs", []) if o["output_type"] == "error"]
        assert not errors, f"{cell.source!r}: {errors}"
    printed = _text(_outputs(nb, 'print("df/dw1 ='))
    for name, want in GRADIENTS.items():
        m = re.search(rf"df/d{name}\s*=\s*\D*?(-?\d+(?:\.\d*)?)", printed)
        assert m and float(m.group(1)) == want, printed

    graph = _outputs(nb, "graph(f)")
    if have_dot():
        (svg,) = _data(graph, "image/svg+xml")
        assert svg.lstrip().startswith(("<svg", "<?xml")) and "</svg>" in svg
        for label in ("w1", "w2", "PowBackward"):
            assert label in svg
    else:
        assert "PowBackward" in _text(graph)

    explained = _text(_outputs(nb, "explain(f, w1)"))
    assert "df/dw1" in explained and "-364.5" in explained

    assert "finished" in _text(_outputs(nb, "s.finish()"))

    (trace,) = _data(_outputs(nb, "last_trace()"), "text/html")
    assert "<table" in trace
    rows = re.findall(r"<tr\b", trace)
    assert len(rows) >= 8, trace          # a header, then the 7 nodes the backward ran
    for node in ("PowBackward", "AccumulateGrad", "w1.grad"):
        assert node in trace

    (checked,) = _data(_outputs(nb, "check(f, [w1, w2, b])"), "text/html")
    assert "<table" in checked
    for name, want in GRADIENTS.items():
        row = next(r for r in re.findall(r"<tr\b.*?</tr>", checked, re.DOTALL) if re.search(rf">\s*{name}\s*<", r))
        assert str(want) in row, row


def test_the_sample_runs_in_the_autodsl_kernel(tmp_path):
    _check_outputs(_execute(SAMPLE, tmp_path))


def test_the_extension_copy_runs_in_ipython(tmp_path):
    pytest.importorskip("IPython", reason="the extension copy needs IPython")
    import autodsl
    if not hasattr(autodsl, "load_ipython_extension"):
        pytest.skip("autodsl has no IPython extension (load_ipython_extension) in this build")
    _check_outputs(_execute(COPY, tmp_path))
