"""graph() and dot(): the text tree and the Graphviz DOT of a tensor's graph.

Golden files under tests/golden/ hold graph() and dot() of samples/chain_rule.ad
and samples/shared_input.ad after they ran (names from the session, as the
language passes them). Set AUTODSL_REGEN_GOLDEN=1 to rewrite them (and, where
Graphviz is installed, docs/graph.svg) after a deliberate change, then read
the diff.
"""
from __future__ import annotations

import contextlib
import io
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import autodsl as ad
from autodsl.core.trace import node_labels, tracing
from autodsl.tools.graph import Graph

graph_module = sys.modules["autodsl.tools.graph"]

ROOT = Path(__file__).resolve().parent.parent
GOLDEN = Path(__file__).resolve().parent / "golden"
REGEN = bool(os.environ.get("AUTODSL_REGEN_GOLDEN"))
HAVE_DOT = shutil.which("dot") is not None
NO_DOT = "Graphviz's dot program is not installed (apt-get install graphviz / brew install graphviz)"

SAMPLES = {"chain_rule": "f", "shared_input": "L"}


def run_sample(stem: str):
    """A session that ran samples/<stem>.ad (its output swallowed), and its names."""
    s = ad.Session()
    path = ROOT / "samples" / f"{stem}.ad"
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        s.run(path.read_text(), f"samples/{stem}.ad")
    names = {id(v): k for k, v in s.bindings().items() if isinstance(v, ad.Tensor)}
    return s, names


def check_golden(name: str, text: str) -> None:
    path = GOLDEN / name
    if REGEN:
        GOLDEN.mkdir(exist_ok=True)
        path.write_text(text if text.endswith("\n") else text + "\n", encoding="utf-8")
        return
    assert path.exists(), f"{path} is missing; run with AUTODSL_REGEN_GOLDEN=1 to make it"
    assert text.rstrip("\n") == path.read_text(encoding="utf-8").rstrip("\n")


# ---- golden files ------------------------------------------------------------------------------

@pytest.mark.parametrize("stem", sorted(SAMPLES))
def test_graph_golden(stem):
    s, names = run_sample(stem)
    check_golden(f"{stem}.graph.txt", str(ad.graph(s[SAMPLES[stem]], names=names)))


@pytest.mark.parametrize("stem", sorted(SAMPLES))
def test_dot_golden(stem):
    s, names = run_sample(stem)
    check_golden(f"{stem}.dot", ad.dot(s[SAMPLES[stem]], names=names))


def test_docs_picture(tmp_path):
    """docs/graph.svg is made from samples/chain_rule.ad by dot() (rewritten with the goldens)."""
    if REGEN and HAVE_DOT:
        s, names = run_sample("chain_rule")
        out = ad.dot(s["f"], str(tmp_path / "graph.svg"), names=names)
        (ROOT / "docs").mkdir(exist_ok=True)
        shutil.copyfile(out, ROOT / "docs" / "graph.svg")
    svg = ROOT / "docs" / "graph.svg"
    assert svg.exists() and "<svg" in svg.read_text()
    assert "PowBackward#1" in svg.read_text()


# ---- the tree ----------------------------------------------------------------------------------

def test_chain_rule_tree_shows_values_grads_marks_and_positions():
    s, names = run_sample("chain_rule")
    text = str(ad.graph(s["f"], names=names))
    lines = text.splitlines()
    assert lines[0] == "f = PowBackward#1 at 8:5 `(w2*(w1*x^2+b))^3`  scalar  -91.125"
    assert "MulBackward#1 at 8:8 `w2*(w1*x^2+b)`  scalar  -4.5" in text          # values of intermediates
    assert "AccumulateGrad(w1)  scalar  0.5  grad -364.5  leaf  requires_grad" in text
    assert "AccumulateGrad(b)  scalar  1.0  grad -91.125  leaf  requires_grad" in text
    assert "constant  scalar  3.0  requires_grad=false" in text          # the exponent of ^3
    assert "constant  scalar  4.0  requires_grad=false" in text          # x^2 with x = 2


def test_shared_node_printed_once_and_referenced():
    s, names = run_sample("shared_input")
    text = str(ad.graph(s["L"], names=names))
    assert text.count("c = MulBackward#2 at") == 1
    assert text.count("-> see MulBackward#2 above") == 2    # d = c*c uses it twice, e = c+1 once
    assert text.count("AccumulateGrad(a)") == 1


def test_labels_are_the_trace_labels():
    s, names = run_sample("shared_input")
    g = ad.graph(s["L"], names=names)
    trace = s.last_trace
    assert trace is not None
    tl = trace._labels()
    for st in trace.steps:
        assert tl[st.node] == g.labels[st.node]
    # and the trace's text uses them
    for st in trace.steps:
        assert g.labels[st.node] in str(trace)


def test_labels_agree_when_run_order_differs_from_the_walk():
    """The engine runs nodes by seq_nr; labels follow the walk from the root, in both views."""
    a = ad.tensor(2.0, requires_grad=True)
    late = a.exp()            # made first, so the engine runs it after `early`
    early = a * 3.0
    y = (late * early) + (early * 2.0)
    traces = []
    with tracing(False, sink=traces.append):
        y.backward()
    tr = traces[0]
    tr.names = {id(a): "a"}
    g = ad.graph(y, names={"a": a})
    labels = tr._labels()
    assert all(labels[st.node] == g.labels[st.node] for st in tr.steps)
    assert [g.labels[n] for n in list(g.labels)[:3]] == ["AddBackward#1", "MulBackward#1", "ExpBackward#1"]


def test_graph_before_backward_and_retain_grad():
    x = ad.tensor([[1.0, -2.0], [3.0, 4.0]], requires_grad=True)
    h = (x * x).sum(dim=0)
    h.retain_grad()
    y = h.sum()
    text = str(ad.graph(y, names={"x": x, "h": h, "y": y}))
    assert " grad " not in text
    assert "AccumulateGrad(x)  (2, 2)  min -2.0 max 4.0  leaf  requires_grad" in text
    # Python callers: the node points at the caller's file, line and source line
    assert "h = SumBackward#2 at test_graph.py:136 `h = (x * x).sum(dim=0)`  (2,)  [10., 20.]  retains_grad" in text
    y.backward()
    text = str(ad.graph(y, names={"x": x, "h": h, "y": y}))
    assert "h = SumBackward#2 at test_graph.py:136 `h = (x * x).sum(dim=0)`  (2,)  [10., 20.]  grad [1., 1.]  retains_grad" in text
    assert "AccumulateGrad(x)  (2, 2)  min -2.0 max 4.0  grad min -4.0 max 8.0  leaf  requires_grad" in text
    # the product's output is held by nobody: its shape is still known, from its consumer
    assert "MulBackward#1 at test_graph.py:136 `h = (x * x).sum(dim=0)`  (2, 2)\n" in text + "\n"


def test_leaves_as_roots():
    w = ad.tensor(2.0, requires_grad=True)
    assert str(ad.graph(w, names={"w": w})) == "AccumulateGrad(w)  scalar  2.0  leaf  requires_grad"
    c = ad.tensor([1.0, 2.0])
    text = str(ad.graph(c, names={}))        # no names: not the caller's variables
    assert text.startswith("tensor  (2,)  [1., 2.]  leaf  requires_grad=false")
    assert str(ad.graph(c)).startswith("c  (2,)  [1., 2.]  leaf  requires_grad=false")
    assert "c" in str(ad.graph(c, names={id(c): "c"})).split()[0]
    assert "digraph" in ad.dot(c) and "digraph" in ad.dot(w)


def test_unnamed_leaves_use_the_trace_form():
    w = ad.tensor([1.0, 2.0, 3.0], requires_grad=True)
    assert "AccumulateGrad(leaf 3)" in str(ad.graph((w * 2.0).sum()))


def test_max_nodes_summarizes():
    w = ad.tensor(1.0, requires_grad=True)
    y = w
    for _ in range(30):
        y = y.exp()
    g = ad.graph(y, max_nodes=5)
    assert len(g) == 31 and g.shown == 5
    assert g.lines[-1] == "... 26 more nodes (graph(x, max_nodes=31) shows all)"
    assert sum(1 for ln in g.lines if "ExpBackward#" in ln) == 5


def test_100000_deep_chain_without_recursion():
    w = ad.tensor(1.0, requires_grad=True)
    y = w
    for _ in range(100_000):
        y = y * 1.0
    old = sys.getrecursionlimit()
    sys.setrecursionlimit(200)       # any recursion proportional to depth would fail here
    try:
        g = ad.graph(y)
        text = ad.dot(y)
        labels = node_labels([y.grad_fn])
    finally:
        sys.setrecursionlimit(old)
    assert len(g) == 100_001 and len(labels) == 100_001
    assert g.lines[-1] == "... 99801 more nodes (graph(x, max_nodes=100001) shows all)"
    assert max(len(ln) for ln in g.lines) < 200          # indentation restarts, marked [+24]
    assert any(ln.startswith("[+24] ") for ln in g.lines)
    edges = [ln for ln in text.splitlines() if ln.startswith("  ") and " -> " in ln]
    assert len(edges) == 200_000 and "MulBackward#100000" in text


def test_errors():
    x = ad.tensor(1.0, requires_grad=True)
    with pytest.raises(ad.TypeError_, match="takes a tensor"):
        ad.graph(3)
    with pytest.raises(ad.TypeError_, match="takes a tensor"):
        ad.dot([1, 2])
    with pytest.raises(ad.ValueError_, match="max_nodes"):
        ad.graph(x, max_nodes=0)
    with pytest.raises(ad.TypeError_, match="names"):
        ad.graph(x, names=["x"])
    with pytest.raises(ad.TypeError_, match="must be a string"):
        ad.dot(x, 42)
    with pytest.raises(ad.ValueError_, match=r"\.dot, \.gv, \.svg"):
        ad.dot(x, "graph.txt")


def test_cannot_write(tmp_path):
    x = ad.tensor(1.0, requires_grad=True)
    with pytest.raises(ad.RuntimeError_, match="cannot write"):
        ad.dot(x, str(tmp_path / "no" / "such" / "dir" / "g.dot"))


# ---- DOT ---------------------------------------------------------------------------------------

def test_dot_text_structure():
    s, names = run_sample("shared_input")
    text = ad.dot(s["L"], names=names)
    assert text.startswith("// The graph of L") and text.rstrip().endswith("}")
    assert 'n0 [label="L = AddBackward#1\\nat 8:7\\nd + e\\nscalar  43.0"' in text
    assert 'label="a\\nscalar  3.0\\ngrad 26.0", tooltip="AccumulateGrad(a)", shape=ellipse' in text
    # c = a*2 feeds d twice (d = c*c) and e once: three edges out of c's node
    c_id = next(ln.split()[0] for ln in text.splitlines() if "c = MulBackward#2" in ln)
    assert sum(1 for ln in text.splitlines() if ln.strip().startswith(f"{c_id} -> ")) == 3


def test_dot_quotes_and_escapes():
    t = ad.tensor(1.0, requires_grad=True)
    text = ad.dot(t * 2.0, names={'we"ird\\name': t})
    assert 'label="we\\"ird\\\\name\\nscalar  1.0"' in text
    if HAVE_DOT:
        subprocess.run(["dot", "-Tsvg"], input=text, text=True, capture_output=True, check=True)


def test_dot_file_dot(tmp_path):
    x = ad.tensor(2.0, requires_grad=True)
    y = x * x
    out = ad.dot(y, str(tmp_path / "g.dot"))
    assert out == str(tmp_path / "g.dot")
    assert (tmp_path / "g.dot").read_text() == ad.dot(y)
    assert ad.dot(y, tmp_path / "g.gv") == str(tmp_path / "g.gv")       # a Path is fine in Python


def test_dot_without_graphviz_writes_dot_and_warns(tmp_path, monkeypatch):
    monkeypatch.setattr(graph_module.shutil, "which", lambda name: None)
    x = ad.tensor(2.0, requires_grad=True)
    with pytest.warns(UserWarning, match=r"apt-get install graphviz, or brew install graphviz") as rec:
        out = ad.dot(x * x, str(tmp_path / "g.svg"))
    assert len(rec) == 1 and "\n" not in str(rec[0].message)
    assert out == str(tmp_path / "g.dot")
    assert (tmp_path / "g.dot").exists() and not (tmp_path / "g.svg").exists()


@pytest.mark.skipif(not HAVE_DOT, reason=NO_DOT)
@pytest.mark.parametrize("stem", sorted(SAMPLES))
def test_dot_output_parses_with_graphviz(stem):
    s, names = run_sample(stem)
    text = ad.dot(s[SAMPLES[stem]], names=names)
    proc = subprocess.run(["dot", "-Tsvg"], input=text, text=True, capture_output=True, check=False)
    assert proc.returncode == 0, proc.stderr
    assert "<svg" in proc.stdout and proc.stderr.strip() == ""


@pytest.mark.skipif(not HAVE_DOT, reason=NO_DOT)
def test_dot_renders_svg_and_png(tmp_path):
    s, names = run_sample("chain_rule")
    out = ad.dot(s["f"], str(tmp_path / "f.svg"), names=names)
    assert out == str(tmp_path / "f.svg")
    assert "<svg" in (tmp_path / "f.svg").read_text() and (tmp_path / "f.dot").exists()
    assert "MulBackward#2" in (tmp_path / "f.svg").read_text()
    ad.dot(s["f"], str(tmp_path / "f.png"), names=names)
    assert (tmp_path / "f.png").read_bytes()[:4] == b"\x89PNG"


# ---- in the language ---------------------------------------------------------------------------

def test_graph_and_dot_are_builtins(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    out = io.StringIO()
    s = ad.Session(out=out)
    s.run("w = tensor(2.0, requires_grad=true)\nf = (w*3)^2\ngraph(f)")
    text = out.getvalue()
    assert "PowBackward#1 at 2:5 `(w*3)^2`  scalar  36.0" in text and "MulBackward#1 at 2:7 `w*3`" in text
    assert isinstance(s.run("g = graph(f); g"), Graph)
    assert s.run('dot(f, "f.dot")') == "f.dot" and (tmp_path / "f.dot").exists()
    with pytest.raises(ad.TypeError_, match="must be a string"):
        s.run("dot(f, 3)")


def test_a_session_without_files_cannot_write(tmp_path):
    import autodsl as ad
    s = ad.Session(echo=False, files=False)
    target = tmp_path / "g.dot"
    with pytest.raises(ad.RuntimeError_, match="may not write files"):
        s.run(f'x = tensor(1.0, requires_grad=true)\ndot(x * 2, "{target}")')
    assert not target.exists()
    assert "digraph" in s.run("dot(x * 2)")          # the text is still available
