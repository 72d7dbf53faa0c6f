"""The IPython extension: ``%load_ext autodsl``, ``%%autodsl`` cells, ``%autodsl`` lines and
``autodsl.notebook_session()``, run in a real IPython shell (``InteractiveShell.run_cell``)."""
from __future__ import annotations

import builtins
import sys

import pytest
from helpers.interrupt import sigint_after

import autodsl as ad
from autodsl.cli.notebook import INTERRUPTED

IPython = pytest.importorskip("IPython", reason="IPython is not installed (pip install ipython)")
from IPython.core.formatters import DisplayFormatter
from IPython.core.interactiveshell import InteractiveShell
from IPython.utils.capture import capture_output


@pytest.fixture(scope="module")
def shell():
    # An IPython shell takes over __main__ and adds names to builtins: give them back afterwards,
    # so that the tests after these run in the process as it was.
    main, names = sys.modules.get("__main__"), set(vars(builtins))
    ip = InteractiveShell.instance()
    yield ip
    InteractiveShell.clear_instance()
    if main is not None:
        sys.modules["__main__"] = main
    for extra in set(vars(builtins)) - names:
        delattr(builtins, extra)


@pytest.fixture
def ip(shell):
    shell.run_line_magic("load_ext", "autodsl")
    yield shell
    shell.run_line_magic("unload_ext", "autodsl")


def run(ip, code: str):
    """(result of run_cell, its captured stdout, its display outputs)."""
    with capture_output() as cap:
        res = ip.run_cell(code, store_history=True)
    return res, cap.stdout, cap.outputs


def user_names(ip) -> set:
    hidden = set(ip.user_ns_hidden)
    return {k for k in ip.user_ns if not k.startswith("_") and k not in hidden}


SEED = ("%%autodsl\nx = tensor(2.0)\nw1 = tensor(0.5, requires_grad=true)\nw2 = tensor(-1.5, requires_grad=true)\n"
        "b = tensor(1.0, requires_grad=true)\nf = (w2*(w1*x^2+b))^3\nf")


def test_a_cell_runs_in_the_notebook_session_and_returns_its_last_value(ip):
    res, _, _ = run(ip, SEED)
    assert res.success
    f = res.result
    assert isinstance(f, ad.Tensor) and f.item() == -91.125
    assert ad.notebook_session()["f"] is f
    res, _, _ = run(ip, "%%autodsl\nf.backward()\n[w1.grad.item(), w2.grad.item(), b.grad.item()]")
    assert res.result is None          # a plain value is printed as the language writes it, not returned
    s = ad.notebook_session()
    assert [s["w1"].grad.item(), s["w2"].grad.item(), s["b"].grad.item()] == [-364.5, 182.25, -91.125]


def test_every_bare_expression_is_shown_in_order_the_last_is_the_result(ip):
    res, out, outputs = run(ip, "%%autodsl\nw = tensor(2.0, requires_grad=true)\nw * 3\nprint(\"between\")\n"
                                "1 < 2\nw + 1")
    assert [o.data["text/plain"] for o in outputs] == ["tensor(6., grad_fn=<MulBackward>)"]
    assert out.splitlines()[0] == "between" and out.splitlines()[1] == "true"
    assert res.result.item() == 3.0
    assert "Out[" in out and "tensor(3., grad_fn=<AddBackward>)" in out


def test_rich_results_graph_trace_and_check(ip):
    run(ip, SEED)
    res, _, _ = run(ip, "%%autodsl\ngraph(f)")
    data, _ = DisplayFormatter().format(res.result)
    assert "text/plain" in data and data["text/plain"].startswith("f = PowBackward#1 at <input ")
    if "image/svg+xml" in data:                       # Graphviz installed
        assert data["image/svg+xml"].startswith("<svg") and "PowBackward#1" in data["image/svg+xml"]
    res, _, _ = run(ip, "%%autodsl\nf.backward()\nlast_trace()")
    html = DisplayFormatter().format(res.result)[0]["text/html"]
    assert html.count("<tr>") + html.count("<tr ") == 1 + len(res.result)      # the head and a row per step
    assert "w1.grad = -364.5" in html
    res, _, _ = run(ip, "%%autodsl\ncheck(f, [w1, w2, b])")
    assert res.result.ok and "PASS: " in DisplayFormatter().format(res.result)[0]["text/html"]


def test_trace_on_shows_each_backward_as_a_table(ip):
    res, _, outputs = run(ip, "%%autodsl\nw = tensor(3.0, requires_grad=true)\ntrace(true)\n(w^2).backward()\n"
                                "trace(false)")
    assert res.success
    (shown,) = outputs
    assert "backward trace: 2 steps" in shown.data["text/plain"]
    assert "<table" in shown.data["text/html"] and "w.grad = 6.0" in shown.data["text/html"]


def test_an_error_shows_as_the_command_line_prints_it_and_the_session_keeps_its_variables(ip):
    res, out, _ = run(ip, "%%autodsl\na = tensor([1.0, 2.0])\nb = a * 2\nc = a @ nope\nd = 1")
    assert isinstance(res.error_in_exec, ad.NameError_)
    count = res.execution_count
    assert out.splitlines()[:3] == [f"<input {count}>:4:9: `nope` is not defined (did you mean `ne`?)",
                                    "    c = a @ nope", "            ^^^^"]      # line 4 of the cell
    assert "Traceback" not in out and "File " not in out
    s = ad.notebook_session()
    assert s["b"].tolist() == [2.0, 4.0] and "c" not in s and "d" not in s
    res, out, _ = run(ip, "%%autodsl\nb.sum()")
    assert res.success and res.result.item() == 6.0


def test_a_syntax_error_runs_nothing(ip):
    res, out, _ = run(ip, "%%autodsl\nk = 1\ny = k +\n")
    assert isinstance(res.error_in_exec, ad.ParseError)
    assert out.splitlines()[0].startswith(f"<input {res.execution_count}>:3:")
    assert "^" in out and "Traceback" not in out
    assert "k" not in ad.notebook_session()


def test_an_interrupt_takes_back_what_the_cell_changed(ip):
    run(ip, "%%autodsl\na = -5\nw = tensor(1.0, requires_grad=true)")
    with sigint_after(0.3):
        res, out, _ = run(ip, "%%autodsl\na = 0\n(w * 2).backward()\nfor i in range(100000000) { a = a + 1 }")
    assert isinstance(res.error_in_exec, KeyboardInterrupt)
    assert out.strip() == INTERRUPTED and "Traceback" not in out
    s = ad.notebook_session()
    assert s["a"] == -5 and s["w"].grad is None
    res, _, _ = run(ip, "%autodsl a + 1")
    assert res.result is None and ad.notebook_session()["a"] == -5


def test_the_line_magic_runs_one_line(ip):
    run(ip, "%autodsl v = tensor([1.0, 2.0, 3.0])")
    res, _, _ = run(ip, "%autodsl v.sum()")
    assert res.result.item() == 6.0
    res, out, _ = run(ip, "%autodsl v.shape[0] == 3")
    assert res.result is None and out.strip() == "true"
    res, out, _ = run(ip, "%autodsl")
    assert "%%autodsl" in out and "sessions: default" in out


def test_named_sessions_are_separate(ip):
    run(ip, "%%autodsl alpha\nx = 1")
    run(ip, "%%autodsl beta\nx = 2")
    run(ip, "%autodsl -s beta y = x + 10")
    assert ad.notebook_session("alpha")["x"] == 1
    assert ad.notebook_session("beta")["x"] == 2 and ad.notebook_session("beta")["y"] == 12
    assert "x" not in ad.notebook_session() and "y" not in ad.notebook_session("alpha")
    res, _, _ = run(ip, "%%autodsl alpha beta\nx")
    assert type(res.error_in_exec).__name__ == "UsageError"


def test_nothing_is_injected_into_the_notebook_namespace(ip):
    before = user_names(ip)
    run(ip, SEED)
    run(ip, "%autodsl q = 5")
    assert user_names(ip) == before
    for name in ("x", "w1", "w2", "b", "f", "q"):
        assert name not in ip.user_ns


def test_notebook_session_is_the_cells_session_from_python(ip):
    res, _, _ = run(ip, "import autodsl\ns = autodsl.notebook_session()\ns['k'] = autodsl.tensor(4.0)\ns")
    assert isinstance(res.result, ad.Session)
    res, _, _ = run(ip, "%%autodsl\nk * 2")
    assert res.result.item() == 8.0
    assert ad.notebook_session() is ad.notebook_session("default")
    with pytest.raises(ad.TypeError_):
        ad.notebook_session(3)
    run(ip, "del s, autodsl")


def test_loading_again_keeps_the_sessions_unloading_drops_them(shell):
    shell.run_line_magic("load_ext", "autodsl")
    run(shell, "%autodsl kept = 1")
    shell.run_line_magic("reload_ext", "autodsl")     # unload + load: a fresh start
    assert "kept" not in ad.notebook_session()
    run(shell, "%autodsl kept = 2")
    from autodsl.cli.notebook import load_ipython_extension
    load_ipython_extension(shell)                     # already loaded: the sessions stay
    assert ad.notebook_session()["kept"] == 2
    shell.run_line_magic("unload_ext", "autodsl")
    res, _, _ = run(shell, "%%autodsl\n1")
    assert res.error_in_exec is not None and "autodsl" not in shell.magics_manager.magics["cell"]


def test_notebook_session_outside_ipython_says_what_to_do(monkeypatch):
    monkeypatch.setattr(IPython, "get_ipython", lambda: None)
    with pytest.raises(ad.RuntimeError_, match=r"autodsl.Session\(\)"):
        ad.notebook_session()


def test_the_extension_functions_are_not_builtins_of_the_language():
    s = ad.Session()
    for name in ("load_ipython_extension", "unload_ipython_extension", "notebook_session"):
        assert name not in ad.__all__ and name not in s.builtins
