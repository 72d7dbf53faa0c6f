"""Rich display in notebooks: the IPython display protocol on what autodsl shows.

IPython's own DisplayFormatter reads the objects here, as a notebook does: the trace is an
HTML table with a row per step and its numbers, graph(f) an SVG through Graphviz (the text
tree without it), check/info/explain/why HTML, plot a PNG through matplotlib (the text chart
without it), and a tensor's text is the REPL's.
"""
from __future__ import annotations

import base64
import html as html_lib
import re
import shutil
import sys

import pytest

import autodsl as ad
from autodsl.core import html
from autodsl.core.display import format_value

IPython = pytest.importorskip("IPython", reason="IPython is not installed (pip install ipython)")
from IPython.core.formatters import DisplayFormatter
from IPython.lib.pretty import pretty

SEED = """x = tensor(2.0)
w1 = tensor(0.5, requires_grad=true)
w2 = tensor(-1.5, requires_grad=true)
b = tensor(1.0, requires_grad=true)
f = (w2*(w1*x^2+b))^3
"""


def shown(obj) -> dict:
    """What a notebook gets for ``obj``: IPython's format dict."""
    data, _ = DisplayFormatter().format(obj)
    return data


def body_rows(markup: str) -> list[str]:
    """The <tr> rows of an HTML table's body."""
    body = markup.split("<tbody>", 1)[1].split("</tbody>", 1)[0]
    return re.findall(r"<tr[^>]*>.*?</tr>", body, flags=re.DOTALL)


def cells(row: str) -> list[str]:
    return re.findall(r"<td[^>]*>(.*?)</td>", row, flags=re.DOTALL)


@pytest.fixture
def seed():
    s = ad.Session(echo=False)
    s.run(SEED)
    return s


# -- the trace ---------------------------------------------------------------------------------

def test_trace_is_an_html_table_with_a_row_per_step_and_its_numbers(seed):
    seed.run("f.backward()")
    tr = seed.last_trace
    data = shown(tr)
    assert set(data) == {"text/plain", "text/html"}
    assert data["text/plain"] == str(tr)            # not <Trace of 8 steps>
    rows = body_rows(data["text/html"])
    assert len(rows) == len(tr) == 7           # x needs no gradient: 4 ops and 3 leaves
    first = cells(rows[0])
    # step, node, at, deps, grad in, sent to, rule: the numbers of w2*(w1*x^2+b) = -4.5
    assert first[:5] == ["1", "PowBackward#1", "5:5 `(w2*(w1*x^2+b))^3`", "0 (root)", "1.0"]
    assert first[5] == "-&gt; MulBackward#1  60.75"
    assert first[6] == "MulBackward#1: grad * 3.0 * (w2*(w1*x^2+b))^(3.0-1) = 1.0 * 3.0 * (-4.5)^(3.0-1)"
    leaves = {cells(r)[1]: cells(r)[5] for r in rows if cells(r)[1].startswith("AccumulateGrad")}
    # df/dw1 = 3(-4.5)^2 * w2 * x^2, df/dw2 = 3(-4.5)^2 * 3, df/db = 3(-4.5)^2 * w2
    assert leaves == {"AccumulateGrad(w2)": "w2.grad = 182.25", "AccumulateGrad(w1)": "w1.grad = -364.5",
                      "AccumulateGrad(b)": "b.grad = -91.125"}
    assert float(seed.run("w1.grad.item()")) == -364.5
    for rec, row in zip(tr.records(), rows):         # the same steps as the trace's data
        assert cells(row)[1] == rec["node"] and cells(row)[3].split()[0] == str(rec["deps"])


def test_trace_html_escapes_source_text():
    s = ad.Session(echo=False)
    s.run("x = tensor([0.5, 2.0], requires_grad=true)\nf = where(x < 1.0, x*2, x*3).sum()\nf.backward()")
    markup = shown(s.last_trace)["text/html"]
    assert "where(x &lt; 1.0, x*2, x*3)" in markup
    assert "x < 1.0" not in markup
    assert "x.grad = [2., 3.]" in markup


# -- graph ----------------------------------------------------------------------------------

@pytest.mark.skipif(shutil.which("dot") is None, reason="Graphviz's dot is not installed")
def test_graph_is_an_svg_picture_with_the_node_names(seed):
    g = seed.run("graph(f)")
    data = shown(g)
    assert set(data) == {"text/plain", "image/svg+xml"}
    svg = data["image/svg+xml"]
    assert svg.startswith("<svg") and svg.rstrip().endswith("</svg>")
    texts = [html_lib.unescape(t).replace("\xa0", " ") for t in re.findall(r">([^<]+)</text>", svg)]
    for name in ("f = PowBackward#1", "MulBackward#1", "MulBackward#2", "AddBackward#1", "w1", "w2", "b",
                 "scalar  -4.5", "scalar  0.5"):
        assert name in texts, name
    assert data["text/plain"] == str(g)


def test_graph_without_graphviz_is_the_text_tree(seed, monkeypatch):
    monkeypatch.setenv("PATH", "")              # no dot program to be found
    g = seed.run("graph(f)")
    assert g._repr_svg_() is None
    data = shown(g)
    assert set(data) == {"text/plain"}
    assert data["text/plain"].splitlines()[0] == "f = PowBackward#1 at 5:5 `(w2*(w1*x^2+b))^3`  scalar  -91.125"


@pytest.mark.skipif(shutil.which("dot") is None, reason="Graphviz's dot is not installed")
def test_graph_picture_names_the_variables_of_its_session_when_shown_later(seed):
    g = seed.run("graph(f)")
    # displayed after the run, outside the session's context: its variables still name the nodes
    assert ">w1<" in g._repr_svg_() and ">b<" in g._repr_svg_()


# -- check, info, explain, why -------------------------------------------------------------------

def test_check_table_shows_the_function_the_failing_element_and_its_error():
    x = ad.tensor([1.0, -2.0, 3.0], requires_grad=True)
    r = ad.check(lambda t: (t * t.detach()).sum(), x, names=["x"])
    markup = shown(r)["text/html"]
    assert "check f = 14.0: analytic (backward) vs numeric" in markup
    rows = body_rows(markup)
    assert [cells(row)[:6] for row in rows] == [
        ["x", "[0]", "1.0", "2.0", "1.0e+00", "5.0e-01"],
        ["x", "[1]", "-2.0", "-4.0", "2.0e+00", "5.0e-01"],
        ["x", "[2]", "3.0", "6.0", "3.0e+00", "5.0e-01"]]
    assert cells(rows[2])[6] == "FAIL &lt;- worst"
    assert all("background" in row.split(">", 1)[0] for row in rows)       # failing rows are marked
    assert "FAIL: |analytic - numeric| &lt;= atol + rtol*|numeric| fails for 3 of 3 elements" in markup


def test_a_passing_check_marks_no_row(seed):
    r = seed.run("check(f, [w1, w2, b])")
    rows = body_rows(shown(r)["text/html"])
    assert [cells(row)[0] for row in rows] == ["w1", "w2", "b"]
    assert [float(cells(row)[2]) for row in rows] == [-364.5, 182.25, -91.125]
    assert not any("background" in row.split(">", 1)[0] for row in rows)
    assert "PASS: " in shown(r)["text/html"]


def test_info_is_an_html_table_of_its_rows(seed):
    seed.run("f.backward()")
    i = seed.run("info(w1)")
    rows = [cells(r) for r in body_rows(shown(i)["text/html"])]
    assert rows == [[html.escape(k), html.escape(v.replace("\n" + " " * 15, "\n"))] for k, v in i.rows]
    assert dict(map(tuple, rows))["made at"] == "&lt;string&gt;:2:6 `tensor(0.5, requires_grad=true)`"
    assert dict(map(tuple, rows))["grad"] == "-364.5"


def test_explain_is_a_table_of_the_paths_with_their_factors(seed):
    e = seed.run("explain(f, w1)")
    markup = shown(e)["text/html"]
    (row,) = body_rows(markup)
    c = cells(row)
    assert c[0] == "1" and c[-1] == "-364.5"
    assert c[3] == "60.75 * (-1.5) * 1.0 * 4.0"       # the local derivatives along the one path
    assert c[1] == "f -&gt; w2*(w1*x^2+b) -&gt; w1*x^2+b -&gt; w1*x^2 -&gt; w1"
    assert "df/dw1 = -364.5" in markup


def test_explain_with_several_paths_sums_their_shares():
    s = ad.Session(echo=False)
    s.run("w = tensor(2.0, requires_grad=true)\na = w*3\nf = a*a + w")
    markup = shown(s.run("explain(f, w)"))["text/html"]
    assert [cells(r)[-1] for r in body_rows(markup)] == ["18.0", "18.0", "1.0"]
    assert "df/dw = 18.0 + 18.0 + 1.0 = 37.0" in markup


def test_why_is_html_with_its_answer_first():
    s = ad.Session(echo=False)
    s.run("w = tensor(-1.0, requires_grad=true)\nrelu(w * 2).backward()")
    y = s.run("why(w)")
    markup = shown(y)["text/html"]
    assert markup.count("<b>") == 1
    head = markup.split("<b>", 1)[1].split("</b>", 1)[0]
    assert head == html.escape(y.lines[0]) and "ReluBackward#1" in head
    assert shown(y)["text/plain"] == str(y)


# -- plot, the stepper, tensors ----------------------------------------------------------------

def test_plot_is_a_png_figure():
    pytest.importorskip("matplotlib", reason="matplotlib is not installed")
    s = ad.Session(echo=False)
    p = s.run("def f(x) { return x^3 - 2*x }\nplot(f, -2, 2)")
    data = shown(p)
    assert set(data) == {"text/plain", "image/png"}
    png = base64.b64decode(data["image/png"])       # base64, as a Jupyter message carries it
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and png == p._repr_png_()
    assert data["text/plain"] == p.text and "f(x) = x^3 - 2*x" in p.text


def test_plot_without_matplotlib_is_the_text_chart(monkeypatch):
    s = ad.Session(echo=False)
    p = s.run("def f(x) { return x^2 }\nplot(f, -1, 1)")
    monkeypatch.setitem(sys.modules, "matplotlib", None)        # import matplotlib fails
    monkeypatch.setitem(sys.modules, "matplotlib.figure", None)
    assert p._repr_png_() is None
    assert set(shown(p)) == {"text/plain"}
    assert "df/dx" in shown(p)["text/plain"]


def test_the_stepper_shows_its_state(seed):
    st = seed.run("step(f)")
    data = shown(st)
    assert data["text/plain"] == st.state and data["text/plain"].startswith("paused before step 1")
    assert html.escape(st.state) in data["text/html"]


def test_a_tensor_shows_as_the_repl_prints_it():
    t = ad.tensor([1.0, 2.0], requires_grad=True)
    assert pretty(t) == format_value(t) and "requires_grad=true" in pretty(t)
    assert shown(t) == {"text/plain": format_value(t)}
    assert pretty([t, ad.tensor(3.0)]) == f"[{format_value(t)}, {format_value(ad.tensor(3.0))}]"


# -- the bundle itself -------------------------------------------------------------------------

def test_mimebundle_matches_the_methods_and_honours_include_and_exclude(seed):
    seed.run("f.backward()")
    tr = seed.last_trace
    bundle = tr._repr_mimebundle_()
    assert bundle == {"text/plain": str(tr), "text/html": tr._repr_html_()}
    assert tr._repr_mimebundle_(include={"text/html"}) == {"text/html": tr._repr_html_()}
    assert tr._repr_mimebundle_(exclude={"text/html"}) == {"text/plain": str(tr)}


def test_html_table_escapes_every_cell():
    markup = html.table(["a<b", "c"], [["<script>", html.Markup("<i>kept</i>")]], caption="x & y",
                        footer=['"q"'])
    assert "<script>" not in markup and "&lt;script&gt;" in markup
    assert "<i>kept</i>" in markup and "x &amp; y" in markup and "&quot;q&quot;" in markup
    assert "a&lt;b" in markup
