"""The REPL: headless through prompt-toolkit's pipe input, its logic through ``Repl.handle``,
the Pygments lexer, and the real program in a pseudo-terminal (pexpect)."""
from __future__ import annotations

import io
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from prompt_toolkit.document import Document
from prompt_toolkit.input import create_pipe_input
from prompt_toolkit.output import DummyOutput
from prompt_toolkit.validation import ValidationError

import autodsl
from autodsl.cli import repl as repl_mod
from autodsl.cli.repl import Repl, SourceValidator
from autodsl.cli.complete import AutodslCompleter, call_context
from helpers.interrupt import sigint_after

ROOT = Path(__file__).resolve().parents[1]
ENTER = "\r"
CTRL_C = "\x03"
CTRL_D = "\x04"
CTRL_R = "\x12"
TAB = "\t"


# ---- helpers -----------------------------------------------------------------------

def make_repl():
    out = io.StringIO()
    return Repl(autodsl.Session(out=out), out=out), out


def run_lines(*inputs: str):
    """Run inputs through Repl.handle; the printed text."""
    r, out = make_repl()
    for text in inputs:
        r.handle(text)
    return r, out.getvalue()


def drive(keys: str, session=None, monkeypatch=None, history=False):
    """Type ``keys`` into the real PromptSession (pipe input, no terminal); (status, printed text, session)."""
    out = io.StringIO()
    session = session or autodsl.Session(out=out)
    session.out = out
    chunks = [keys] if isinstance(keys, str) else list(keys)
    with create_pipe_input() as inp:
        inp.send_text(chunks[0])

        def type_the_rest():         # later chunks after a pause: completion runs in the background
            for chunk in chunks[1:]:
                time.sleep(0.5)
                inp.send_text(chunk)
        typist = threading.Thread(target=type_the_rest, daemon=True)
        typist.start()
        status = repl_mod.main(session, history=history, input=inp, output=DummyOutput(), out=out)
        typist.join()
    return status, out.getvalue(), session


def completions(text: str, session=None, commands=None):
    session = session or autodsl.Session()
    r = Repl(session)
    c = AutodslCompleter(lambda: session, lambda: commands or r.commands, registry=autodsl.REGISTRY)
    return [(x.text, x.display_meta_text) for x in c.get_completions(Document(text, len(text)), None)]


def names(text, session=None):
    return [t for t, _ in completions(text, session)]


# ---- completion -------------------------------------------------------------------------

def test_completes_attributes_after_a_dot():
    s = autodsl.Session()
    s.run("x = tensor(2.0, requires_grad=true)")
    assert names("x.gr", s) == ["grad", "grad_fn"]
    assert "requires_grad" in names("(x*2).req", s)
    assert names("x.sum().bac", s) == ["backward"]
    assert names("1.5", s) == []            # a number's dot is not an attribute


def test_completes_session_names_and_builtins_with_their_doc():
    s = autodsl.Session()
    s.run("tensor_a = tensor(1.0); def tenfold(v) { return 10*v }")
    got = dict(completions("ten", s))
    assert list(got) == ["tenfold", "tensor_a", "tensor"]      # the user's names first
    assert got["tensor_a"] == "tensor scalar float64"
    assert got["tenfold"] == "def tenfold(v)"
    assert got["tensor"].startswith("A new leaf tensor")      # the built-in's one-line doc
    assert dict(completions("rel", s))["relu"]               # op registry doc as meta
    assert "for" in names("fo", s)                            # keywords too


def test_completes_keyword_arguments_inside_calls():
    s = autodsl.Session()
    s.run("x = tensor([1.0, 2.0]); def f(alpha, beta=2) { return alpha*beta }")
    assert names("sum(x, ", s) == ["dim=", "keepdim="]          # x filled input
    got = completions("sum(x, d", s)
    assert got[0] == ("dim=", "keyword argument")             # keywords first, then names
    assert names("tensor([1, 2], req", s)[0] == "requires_grad="
    assert names("x.sum(ke", s) == ["keepdim="]              # a method's keywords
    assert names("f(1, b", s)[0] == "beta="                     # a user function's parameters
    assert names("sum(x[0], d", s)[0] == "dim="              # a nested bracket closed inside
    assert "dim=" not in names("sum(x + d", s)                 # not at an argument's start
    assert names('print("sum(x, d', s) == []                   # inside a string: nothing
    assert call_context("f(a, g(b), ") == ("f", None, True)


def test_completes_commands_and_their_arguments(tmp_path, monkeypatch):
    assert completions(":tr") == [(":trace", "print each backward step by step, or show the last one")]
    assert names(":d") == [":device", ":dot", ":dtype"]
    assert names(":trace o") == ["on", "off"]
    assert names(":dtype float3") == ["float32"]
    assert "tensor" in names(":help tens")
    assert ":vars" in names(":help :v")
    (tmp_path / "model.ad").write_text("1")
    (tmp_path / "data").mkdir()
    monkeypatch.chdir(tmp_path)
    assert names(":load mo") == ["model.ad"]                   # file names after :load
    assert names(":load ") == ["model.ad", "data/"]             # .ad files, then folders
    s = autodsl.Session()
    s.run("weights = tensor(1.0)")
    assert names(":info wei", s) == ["weights"]
    assert names(":info weights.is_", s) == ["is_leaf"]


def test_tab_completes_in_the_prompt():
    _, text, _ = drive(["x = tensor(2.0, requires_grad=true)" + ENTER + "x.is_le" + TAB,
                        ENTER + ":q" + ENTER])
    assert "true" in text.splitlines()


def test_completer_never_raises():
    class Broken:
        @property
        def namespace(self):
            raise RuntimeError("boom")
    c = AutodslCompleter(lambda: Broken(), lambda: [":help"])
    assert list(c.get_completions(Document("x"), None)) == []


# ---- multi-line input, syntax and runtime errors ---------------------------------------

def test_multi_line_input_runs_when_complete():
    keys = ("def f(a) {" + ENTER + "return a*2" + ENTER + "}" + ENTER
            + "f(3)" + ENTER
            + "v = [1," + ENTER + "2]" + ENTER + "v" + ENTER
            + "for i in range(2) {" + ENTER + "print(i)" + ENTER + "}" + ENTER
            + ":quit" + ENTER)
    status, text, s = drive(keys)
    assert status == 0
    lines = text.splitlines()
    assert "6" in lines and "0" in lines and "1" in lines
    assert s.run("f(5)") == 10


def test_syntax_error_is_shown_at_its_column_before_anything_runs():
    v = SourceValidator()
    with pytest.raises(ValidationError) as e:
        v.validate(Document("y = 5\nz = 1 +* 2"))
    assert "line 2, column" in e.value.message
    assert e.value.cursor_position == len("y = 5\n") + int(e.value.message.split("column ")[1].split(":")[0]) - 1
    v.validate(Document(":help"))            # commands are not source
    v.validate(Document("x = 1"))
    # in the prompt: Enter hands the input to the REPL, which prints the error and runs none of it
    # (`y` is never bound); the next prompt is a fresh one, and Ctrl-C on it changes nothing
    _, text, s = drive("y = 5; 1 +* 2" + ENTER + CTRL_C + "y" + ENTER + ":q" + ENTER)
    assert "y" not in s.namespace
    assert "<input 1>:1:11: unexpected `*`" in text and "<input 2>:1:1: `y` is not defined" in text


def test_syntax_error_through_handle_has_a_caret():
    r, text = run_lines("y = 1", "y = (2 +* 3)")
    assert "<input 2>:1:9: unexpected `*`" in text and "^" in text
    assert r.session["y"] == 1


def test_runtime_error_keeps_the_loop_and_earlier_bindings():
    _, text, s = drive("a = 1; b = tensor([1.0, 2.0]) + tensor([1.0, 2.0, 3.0]); c = 3" + ENTER
                       + "a + 1" + ENTER + ":q" + ENTER)
    assert "<input 1>:1:" in text and "^" in text
    assert "Traceback" not in text
    assert "2" in text.splitlines()
    assert s["a"] == 1 and "c" not in s.namespace


def test_internal_fault_is_one_line_and_the_loop_goes_on(monkeypatch):
    r, out = make_repl()
    monkeypatch.setitem(r.commands, ":vars", lambda arg: 1 / 0)
    r.handle(":vars")
    r.handle("1 + 1")
    lines = out.getvalue().splitlines()
    assert lines == ["internal error (ZeroDivisionError: division by zero); the session goes on", "2"]


def test_ctrl_d_exits():
    status, _, _ = drive("x = 1" + ENTER + CTRL_D)
    assert status == 0


# ---- Ctrl-C during a running statement -----------------------------------------------------

SETUP = """
w = tensor([1.0, 2.0], requires_grad=true)
(w * w).sum().backward()
k = 7
"""

LOOP = """
k = 100
for i in range({n}) {{
    loss = (w * 3).sum()
    loss.backward()
    no_grad {{ w -= 0.001 * w.grad }}
    w.grad[0] = 42
    fresh = i
    {extra}
}}
"""


def _state(s):
    return s["w"].tolist(), s["w"].grad.tolist(), s["k"], "fresh" in s.namespace, "loss" in s.namespace


def test_ctrl_c_in_a_loop_leaves_variables_and_grads_as_they_were():
    r, out = make_repl()
    r.handle(SETUP)
    before = _state(r.session)
    calls = []

    def interrupt_later():
        calls.append(1)
        if len(calls) == 50:
            raise KeyboardInterrupt
    r.session["tick"] = interrupt_later
    r.handle(LOOP.format(n=1000, extra="tick()"))
    assert len(calls) == 50
    assert INTERRUPTED_LINE in out.getvalue()
    assert _state(r.session) == before == ([1.0, 2.0], [2.0, 4.0], 7, False, False)
    assert "k = 100" not in "\n".join(r.accepted)      # an interrupted input is not saved
    r.handle("(w*w).sum().backward(); w.grad")          # the session works after
    assert "[4., 8.]" in out.getvalue()


INTERRUPTED_LINE = repl_mod.INTERRUPTED


@pytest.mark.skipif(not hasattr(signal, "pthread_kill"), reason="needs POSIX signals")
def test_sigint_from_a_timer_interrupts_a_long_loop_and_rolls_back():
    r, out = make_repl()
    r.handle(SETUP)
    before = _state(r.session)
    with sigint_after(0.3):
        r.handle(LOOP.format(n=10_000_000, extra=""))
    assert INTERRUPTED_LINE in out.getvalue()
    assert _state(r.session) == before


def test_ctrl_c_in_the_prompt_loop_rolls_back():
    s = autodsl.Session()
    s.run(SETUP)
    n = []

    def stop():
        n.append(1)
        if len(n) == 3:
            raise KeyboardInterrupt
    s["tick"] = stop
    loop = LOOP.format(n=100, extra="tick()").strip().replace("\n", "; ").replace("{;", "{").replace("; }", " }")
    _, text, s = drive(loop + ENTER + "k" + ENTER + ":q" + ENTER, session=s)
    assert INTERRUPTED_LINE in text
    assert _state(s) == ([1.0, 2.0], [2.0, 4.0], 7, False, False)


# ---- commands ---------------------------------------------------------------------------------

def test_help():
    _, text = run_lines(":help")
    assert ":vars" in text and ":help language" in text and ":help NAME" in text
    _, text = run_lines(":help commands")
    assert ":dot x" in text
    _, text = run_lines(":help sum")
    assert text.startswith("sum(input, dim=none, keepdim=false)") and "Example" in text
    _, text = run_lines(":h :va")
    assert text.startswith(":vars")
    _, text = run_lines(":help language")
    assert "no_grad" in text
    _, text = run_lines(":help tensr")
    assert "`tensor`" in text


def test_unknown_and_ambiguous_commands():
    _, text = run_lines(":frob", ":d")
    assert text.splitlines() == [":frob is not a command; :help lists them",
                                 ":d is ambiguous: :device, :dot, :dtype"]


def test_vars_table():
    _, text = run_lines("x = tensor([1.0, 2.0], requires_grad=true); y = (x*x).sum(); y.backward(); n = 3",
                        ":v")
    head, *rows = text.splitlines()
    assert head.split() == ["name", "shape", "dtype", "device", "requires_grad", "is_leaf", "grad_fn", "grad"]
    assert rows[0].split() == ["x", "(2,)", "float64", "cpu", "true", "true", "-", "set"]
    assert rows[1].split() == ["y", "()", "float64", "cpu", "true", "false", "SumBackward", "-"]
    assert rows[2] == "other variables: n (3)"
    assert not any(r.split()[0] in ("pi", "inf", "float32") for r in rows)   # predefined names hidden
    _, text = run_lines(":vars")
    assert text == "no variables yet\n"


def test_info():
    _, text = run_lines("x = tensor(2.0, requires_grad=true)", ":info x")
    for word in ("shape", "dtype", "requires_grad", "is_leaf", "grad_fn", "version"):
        assert word in text
    _, text = run_lines(":info nope")
    assert "`nope` is not defined" in text


def test_trace_on_off_last():
    r, text = run_lines(":trace last", ":trace on", "x = tensor(2.0, requires_grad=true); (x*x).backward()",
                        ":trace off", ":tr last", ":trace sideways")
    assert "no backward has been traced yet" in text
    assert "trace on" in text and "trace off" in text
    assert "MulBackward" in text                   # :trace last shows the last backward
    assert "usage: :trace on|off|last" in text
    assert r.session.trace is False


def test_graph_and_dot_go_through_the_session(tmp_path):
    if "graph" not in autodsl.Session().builtins:
        pytest.skip("graph()/dot() are not built-ins yet")
    _, text = run_lines("x = tensor(2.0, requires_grad=true); y = x*x", ":graph y")
    assert "MulBackward" in text
    _, text = run_lines("x = tensor(2.0, requires_grad=true); y = x*x", ":dot y")
    assert "digraph" in text
    path = tmp_path / "g.dot"
    run_lines("x = tensor(2.0, requires_grad=true); y = x*x", f":dot y {path}")
    assert "digraph" in path.read_text()


def test_graph_and_dot_usage():
    _, text = run_lines(":graph", ":dot")
    assert text.splitlines() == ["usage: :graph x  the graph x depends on, as a text tree",
                                 "usage: :dot x [file.dot|.svg|.png]  the graph of x in Graphviz DOT "
                                 "(printed, or written to the file)"]


def test_load(tmp_path):
    script = tmp_path / "s.ad"
    script.write_text("a = tensor(3.0, requires_grad=true)\nb = a^2\nb.backward()\na.grad\n")
    r, text = run_lines(f":load {script}", "a.grad + 1")
    assert text.splitlines() == ["tensor(6.)", "tensor(7.)"]
    bad = tmp_path / "bad.ad"
    bad.write_text("q = 1\nq = (2 +\n")
    r, text = run_lines(f":l {bad}", ":load /nonexistent/x.ad")
    assert f"{bad}:2:" in text and "q" not in r.session.namespace     # parsed before running
    assert "cannot read /nonexistent/x.ad" in text


def test_save_writes_a_script_that_reproduces_the_session(tmp_path):
    out = tmp_path / "session.ad"
    r, text = run_lines("w = tensor([1.0, 2.0], requires_grad=true)", "bad = w + tensor([1.0, 2.0, 3.0])",
                        ":dtype float32", "v = tensor(1.5)",
                        "def f(a) {\n    return a^2\n}", "f(w).sum().backward()", ":time z = w.grad * 2",
                        f":save {out}")
    assert f"saved 6 inputs to {out}" in text
    saved = out.read_text()
    assert "bad" not in saved
    assert "<input" not in saved and saved.startswith("# autodsl session, saved by :save\nw = tensor(")
    fresh = autodsl.Session(out=io.StringIO())
    try:
        fresh.run(saved, str(out))
    finally:
        autodsl.set_default_dtype(autodsl.float64)     # the saved script's set_default_dtype
    assert fresh["z"].tolist() == r.session["z"].tolist() == [4.0, 8.0]
    assert fresh["v"].dtype.name == r.session["v"].dtype.name == "float32"
    assert fresh["w"].grad.tolist() == [2.0, 4.0]
    _, text = run_lines(":save /nonexistent/dir/x.ad")
    assert "cannot write /nonexistent/dir/x.ad" in text


def test_save_keeps_a_backward_run_by_step(tmp_path):
    # :step ... :continue wrote w.grad, but :save used to leave it out of the script
    out = tmp_path / "s.ad"
    r, text = run_lines("w = tensor([1.0, 2.0], requires_grad=true)", "y = (w * w).sum()", ":step y", ":next",
                        ":continue", ":step (w * 3).sum()", ":next 5", ":step y * 2", ":abort", f":save {out}")
    assert r.session["w"].grad.tolist() == [5.0, 7.0]
    saved = out.read_text()
    assert saved.splitlines()[-2:] == ["y.backward()", "((w * 3).sum()).backward()"]     # not the aborted one
    fresh = autodsl.Session(out=io.StringIO())
    fresh.run(saved, str(out))
    assert fresh["w"].grad.tolist() == [5.0, 7.0]


def test_inputs_are_numbered_in_errors_and_positions(tmp_path):
    # commands count: the third thing typed is <input 3>
    r, text = run_lines("a = tensor(1.0, requires_grad=true)", ":vars", "b = a + nope",
                        "c = a * 2", ":info c", ":graph c * 3", "c.backward()")
    lines = text.splitlines()
    assert lines[2].startswith("<input 3>:1:9: `nope` is not defined")    # after the :vars table
    assert "made at        <input 4>:1:7 `a * 2`" in lines                   # :info
    assert "MulBackward#1 at <input 6>:1:3 `c * 3`" in text                  # :graph of an expression
    r, text = run_lines("w = tensor(2.0, requires_grad=true)", "y = w * w", ":trace on", "y.backward()")
    assert "step 1  MulBackward#1 at <input 2>:1:7 `w * w`  deps 0 (root)" in text
    assert r.input_name == "<input 4>" and r.inputs == 4
    # a :load-ed file keeps its name; the inputs around it go on counting
    script = tmp_path / "lib.ad"
    script.write_text("q = tensor([1.0, 2.0])\nz = q + tensor([1.0, 2.0, 3.0])\n")
    r, text = run_lines("x = 1", f":load {script}", "x + nope")
    assert text.splitlines()[0].startswith(f"{script}:2:7: add: shapes (2,) and (3,) do not broadcast")
    assert "<input 3>:1:5: `nope` is not defined" in text


def test_version_error_names_the_inputs_of_the_save_and_the_write():
    r, text = run_lines("w = tensor([1.0, 2.0], requires_grad=true)", "x = w * 1", "y = x * x",
                        "x += 1", "y.sum().backward()", ":why x")
    lines = text.splitlines()
    assert lines[0].startswith("<input 5>:1:1: `x` (shape (2,)) was modified in place after MulBackward saved it "
                               "for backward: MulBackward (made at <input 3>:1:7 `x * x`) saved it at version 0, "
                               "and the in-place write at <input 4>:1:1 `x += 1` changed it to version 1.")
    assert lines[1:3] == ["    y.sum().backward()", "    ^^^^^^^^^^^^^^^^^^"]
    assert "it was made by AddBackward at <input 4>:1:1 `x += 1`" in text      # :why
    assert r.session["w"].grad is None                   # the failed backward wrote nothing


def test_error_in_a_function_says_where_it_was_called():
    r, text = run_lines("def f(a) {\n    return a @ 2\n}", "def g(b) { return f(b * 2) }",
                        "w = tensor([1.0, 2.0], requires_grad=true)", "g(w)")
    assert text.splitlines() == [
        "<input 1>:2:14: `@` (matrix product) needs two tensors; use `*` to multiply by a number",
        "        return a @ 2",
        "                 ^",
        "  in f(), called at <input 2>:1:19 `f(b * 2)`",
        "  in g(), called at <input 4>:1:1 `g(w)`",
    ]
    # a hook run by a backward that a command steps
    r, text = run_lines("def bad(g) { return g @ g }", "x = tensor(2.0, requires_grad=true)",
                        "h = x.register_hook(bad)", "y = x * 3", "y.backward()", ":step y", ":next", ":next")
    assert "  in the hook bad() on `x`, run by `y.backward()` at <input 5>:1:1" in text.splitlines()
    assert "  in the hook bad() on `x`, run by `:next` at <input 8>:1:1" in text.splitlines()
    assert r.session["x"].grad is None


def test_reset():
    r, text = run_lines("x = 1", ":trace on", ":reset", "x")
    assert "session reset" in text and "`x` is not defined" in text
    assert r.session.trace is True         # settings stay
    assert r.session["pi"] > 3


def test_reset_keeps_the_scheduler_choice_and_closes_the_old_one():
    out = io.StringIO()
    closed = []
    session = autodsl.Session(out=out, scheduler="threads", workers=3)
    session.scheduler.close = lambda: closed.append(True)
    r = Repl(session, out=out)
    r.handle(":reset")
    assert closed == [True]                     # a LocalCluster the old session started goes with it
    assert r.session is not session
    assert (r.session.scheduler.spec, r.session.scheduler.n_workers) == ("threads", 3)


def test_device_and_dtype():
    r, text = run_lines(":device", ":device cpu", ":dtype", ":dtype float32", "tensor(1.0).dtype",
                        ":dtype int64", ":dtype float64", "tensor(1.0).dtype")
    lines = text.splitlines()
    assert lines[:4] == ["device cpu", "device cpu", "dtype float64", "dtype float32"]
    assert "float32" in lines[4]
    assert "floating dtype" in text            # int64 refused with the reason
    assert "float64" in lines[-1]


def test_device_cuda_without_cupy_is_a_clear_error():
    try:
        import cupy  # noqa: F401
        pytest.skip("CuPy is installed")
    except ImportError:
        pass
    r, text = run_lines(":device cuda")
    # as every error: the message at the argument's position, the line, a caret run under it
    assert text.splitlines() == [text.splitlines()[0], "    :device cuda", "            ^^^^"]
    assert text.startswith("<input 1>:1:9: ") and "CuPy" in text and "Traceback" not in text
    assert r.session.device == "cpu"


def test_time():
    _, text = run_lines(":time x = 1 + 1", ":ti 2 * 3")
    lines = text.splitlines()
    assert lines[0].startswith("time: ") and lines[1] == "6" and lines[2].startswith("time: ")


def test_quit_by_prefix():
    r, _ = run_lines(":q")
    assert r.done
    status, text, _ = drive(":quit" + ENTER + "1 + 1" + ENTER)
    assert status == 0 and "2" not in text.splitlines()


# ---- history --------------------------------------------------------------------------------

def test_history_is_persistent_and_searchable(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path))
    monkeypatch.delenv("AUTODSL_NO_HISTORY", raising=False)
    drive("secret_value = 41" + ENTER + ":q" + ENTER, history=True)
    hist = tmp_path / "autodsl" / "history"
    assert "secret_value = 41" in hist.read_text()
    # a new REPL finds it with Ctrl-R
    _, text, s = drive(CTRL_R + "secret" + ENTER + ENTER + "secret_value + 1" + ENTER + ":q" + ENTER,
                       history=True)
    assert s["secret_value"] == 41 and "42" in text.splitlines()


def test_history_can_be_turned_off(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path))
    monkeypatch.setenv("AUTODSL_NO_HISTORY", "1")
    drive("x = 1" + ENTER + ":q" + ENTER, history=True)
    assert not (tmp_path / "autodsl" / "history").exists()
    monkeypatch.delenv("AUTODSL_NO_HISTORY")
    drive("x = 1" + ENTER + ":q" + ENTER, history=False)
    assert not (tmp_path / "autodsl" / "history").exists()


def test_history_path_follows_xdg(monkeypatch, tmp_path):
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path))
    assert repl_mod.history_path() == tmp_path / "autodsl" / "history"


# ---- progress for long loops ------------------------------------------------------------------

def test_loop_progress_hook_reports_the_outermost_loop_only():
    from autodsl.lang.interpreter import loop_progress
    seen = []
    s = autodsl.Session(out=io.StringIO())
    with loop_progress(lambda done, total: seen.append((done, total))):
        s.run("for i in range(3) { for j in range(5) { j } }")
    assert seen == [(1, 3), (2, 3), (3, 3)]
    s.run("for i in range(3) { i }")          # no hook installed: nothing reported
    assert len(seen) == 3


def test_progress_line_draws_after_the_delay_and_clears():
    from autodsl.cli.progress import ClearingWriter, ProgressLine
    err, out = io.StringIO(), io.StringIO()
    bar = ProgressLine(stream=err, delay=0.0, interval=0.0)
    s = autodsl.Session(out=ClearingWriter(bar, out))
    with bar.running():
        s.run("for i in range(4) { if i == 2 { print(i) } }")
    assert "4/4" in err.getvalue() and "[" in err.getvalue()
    assert err.getvalue().endswith("\r\x1b[K")           # erased at the end
    assert out.getvalue() == "2\n"                        # the output itself is untouched
    quiet = ProgressLine(stream=io.StringIO(), delay=60)
    with quiet.running():
        quiet.update(1, 10)
    assert quiet.stream.getvalue() == ""                  # short loops show nothing


# ---- the Pygments lexer ------------------------------------------------------------------------

def test_lexer_tokens():
    from pygments.token import Comment, Keyword, Name, Number, Operator, String
    from autodsl.cli.lexer import AutodslLexer
    src = 'def f(x) { return x^2 }  # square\ny = tensor([1, 2.5e-3], requires_grad=true) @ w.T; print("hi")\n'
    toks = [(t, v) for t, v in AutodslLexer().get_tokens(src) if v.strip()]
    assert (Keyword, "def") in toks and (Name.Function, "f") in toks and (Keyword, "return") in toks
    assert (Comment.Single, "# square") in toks
    assert (Name.Builtin, "tensor") in toks and (Name.Builtin, "print") in toks
    assert (Number.Integer, "1") in toks and (Number.Float, "2.5e-3") in toks
    assert (Keyword.Constant, "true") in toks
    assert (Operator, "^") in toks and (Operator, "@") in toks and (Operator, "=") in toks
    assert (Name.Attribute, "T") in toks
    assert (String.Double, '"hi"') in toks
    assert (Name, "y") in toks and (Name, "requires_grad") in toks
    # names that begin like keywords or built-ins stay names
    toks = [(t, v) for t, v in AutodslLexer().get_tokens("define iffy tensors inf") if v.strip()]
    assert toks[:3] == [(Name, "define"), (Name, "iffy"), (Name, "tensors")]
    assert toks[3] == (Name.Builtin.Pseudo, "inf")


def test_lexer_knows_every_builtin():
    from autodsl.cli.lexer import BUILTIN_NAMES, PREDEFINED
    assert set(autodsl.Session().builtins) - set(PREDEFINED) == set(BUILTIN_NAMES)


def _pygments_plugin_installed() -> bool:
    from importlib.metadata import entry_points
    return any(ep.name == "autodsl" for ep in entry_points(group="pygments.lexers"))


@pytest.mark.skipif(not _pygments_plugin_installed(), reason="autodsl is not installed (pip install -e .)")
def test_pygmentize_highlights_a_sample():
    # pygments' own command line from this interpreter: a `pygmentize` on PATH may belong
    # to another Python that has no autodsl lexer registered.
    p = subprocess.run([sys.executable, "-m", "pygments", "-l", "autodsl", "-f", "html", str(ROOT / "samples" / "chain_rule.ad")],
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    assert '<span class="nb">tensor</span>' in p.stdout        # a built-in
    assert '<span class="c1">#' in p.stdout                     # a comment
    from pygments.lexers import get_lexer_for_filename
    assert get_lexer_for_filename("x.ad").name == "autodsl"


# ---- the real program in a pseudo-terminal -------------------------------------------------------

def test_real_program_in_a_pseudo_terminal(tmp_path):
    pexpect = pytest.importorskip("pexpect")
    env = dict(os.environ)
    env.update({"PYTHONPATH": str(ROOT) + os.pathsep + env.get("PYTHONPATH", ""), "AUTODSL_NO_HISTORY": "1",
                "XDG_DATA_HOME": str(tmp_path), "TERM": "xterm", "NO_COLOR": "1",
                "PROMPT_TOOLKIT_NO_CPR": "1"})
    child = pexpect.spawn(sys.executable, ["-m", "autodsl", "--no-history"], cwd=str(ROOT), env=env,
                          encoding="utf-8", timeout=30, dimensions=(24, 120))
    try:
        child.expect_exact(">>>")
        child.send("x = tensor(2.0, requires_grad=true); (x*x).backward(); x.grad\r")
        child.expect_exact("tensor(4.)")
        child.expect_exact(">>>")
        child.send("y = tensor([1.0, 2.0]) + tensor([1.0, 2.0, 3.0])\r")
        child.expect_exact("<input 2>:1:")
        child.expect_exact(">>>")
        # a long loop shows a progress bar after about a second; Ctrl-C stops it and undoes it
        child.send("k = 1; for i in range(10000000) { k = i }\r")
        child.expect_exact("/10000000")
        child.sendintr()
        child.expect_exact("interrupted")
        child.expect_exact(">>>")
        child.send("k\r")
        child.expect_exact("`k` is not defined")     # the whole input was undone, `k = 1` too
        child.expect_exact(">>>")
        child.send(":quit\r")
        child.expect(pexpect.EOF)
    finally:
        child.close()
    assert "Traceback" not in (child.before or "")
    assert child.exitstatus == 0


def test_commands_call_the_builtins_even_when_a_variable_shadows_them(tmp_path):
    r, out = run_lines("x = tensor(2.0, requires_grad=true)", "dot = x * 3", "graph = 5", "info = 1",
                       ":graph dot", f":dot dot {tmp_path / 'g.dot'}", ":info dot")
    text = out
    assert "dot = MulBackward#1" in text                       # the tree, named by the session
    assert "digraph" in (tmp_path / "g.dot").read_text()
    assert "grad_fn        <MulBackward>" in text
    assert "not a function" not in text


def test_graph_of_an_expression_points_at_what_was_typed():
    r, text = run_lines("a = tensor(1.0, requires_grad=true)", ":graph a * 2 + 1")
    assert "AddBackward#1 at <input 2>:1:7" in text and "MulBackward#1 at <input 2>:1:3" in text


def test_command_argument_that_is_not_one_expression():
    r, text = run_lines("a = tensor(1.0)", ":graph a b")
    assert "graph(" not in text and "a b" in text


def test_reset_needs_more_than_one_letter():
    r, text = run_lines("a = 1", ":r")
    assert r.session["a"] == 1                  # ":r" is not taken as :reset
    assert "not a command" in text or "ambiguous" in text
    r.handle(":res")
    assert "a" not in r.session


def test_ctrl_c_also_restores_dtype_and_trace(monkeypatch):
    r, out = make_repl()

    def interrupt(*args):
        raise KeyboardInterrupt

    r.session.namespace["boom"] = interrupt
    r.handle("set_default_dtype(float32); trace(true); boom()")
    assert r.session.dtype is None and r.session.trace is False
    r.handle("v = tensor([1.0])")
    assert r.session["v"].dtype.name == "float64"


@pytest.mark.parametrize("command, column, carets", [
    (":step y", 7, 1),              # a vector: it needs a gradient of its shape
    (":step 3", 7, 1),              # a number, not a tensor
    (":graph 5", 8, 1),
    (":why 5", 6, 1),
    (":explain y w", 10, 3),        # y is not a scalar
    (":check  y w", 9, 3),          # (two spaces: the column is the argument's)
])
def test_a_commands_error_about_its_argument_has_the_position_and_a_caret(command, column, carets):
    r, out = make_repl()
    r.handle("w = tensor([1.0, 2.0], requires_grad=true)")
    r.handle("y = w * 2")
    out.truncate(0), out.seek(0)
    r.handle(command)
    lines = out.getvalue().splitlines()
    assert lines[0].startswith(f"<input 3>:1:{column}: ")
    assert lines[1] == "    " + command
    assert lines[2] == "    " + " " * (column - 1) + "^" * carets
    assert "Traceback" not in out.getvalue()
    out.truncate(0), out.seek(0)
    r.handle("y")                   # the session goes on, its variables kept
    assert out.getvalue().startswith("tensor([2., 4.]")
