"""The REPL without surprises (issue 13, item 5): syntax errors give a fresh prompt, a short
``:help`` and a pager, plain-text completion docs, folder-aware ``:load`` completion, no
keyword offered twice, the signature bar, bracket highlight, and file names of ``:load``ed code.

Through prompt-toolkit's pipe input (the real PromptSession, no terminal), ``Repl.handle``,
and the real program in a pseudo-terminal (pexpect) for the pager.
"""
from __future__ import annotations

import asyncio
import io
import os
import re
import sys
import threading
import time
from pathlib import Path

import pytest
from prompt_toolkit.document import Document
from prompt_toolkit.formatted_text import fragment_list_to_text
from prompt_toolkit.input import create_pipe_input
from prompt_toolkit.layout.processors import HighlightMatchingBracketProcessor
from prompt_toolkit.output import DummyOutput

import autodsl
from autodsl.cli import help as help_mod
from autodsl.cli import repl as repl_mod
from autodsl.cli.complete import AutodslCompleter, given_keywords, one_line_doc
from autodsl.cli.hints import call_signature, signature_fragments, signature_hint
from autodsl.cli.prompt import build_prompt_session
from autodsl.cli.repl import Repl
from autodsl.core.tensor import PUBLIC_METHODS, Tensor

ROOT = Path(__file__).resolve().parents[1]
ENTER, TAB, UP = "\r", "\t", "\x1b[A"


def drive(*chunks: str, session=None):
    """Type ``chunks`` into the real prompt (a pause between chunks lets completion run);
    (printed text, session)."""
    out = io.StringIO()
    session = session or autodsl.Session(out=out)
    session.out = out
    with create_pipe_input() as inp:
        inp.send_text(chunks[0])

        def type_the_rest():
            for chunk in chunks[1:]:
                time.sleep(0.5)
                inp.send_text(chunk)
        typist = threading.Thread(target=type_the_rest, daemon=True)
        typist.start()
        repl_mod.main(session, history=False, input=inp, output=DummyOutput(), out=out)
        typist.join()
    return out.getvalue(), session


def run_lines(*inputs: str):
    out = io.StringIO()
    r = Repl(autodsl.Session(out=out), out=out)
    for text in inputs:
        r.handle(text)
    return r, out.getvalue()


def names(text: str, session=None) -> list[str]:
    session = session or autodsl.Session()
    r = Repl(session)
    c = AutodslCompleter(lambda: session, lambda: r.commands, registry=autodsl.REGISTRY)
    return [x.text for x in c.get_completions(Document(text, len(text)), None)]


# ---- 1. a syntax error: shown as every error is, then a fresh prompt ---------------------------

def test_a_syntax_error_is_printed_with_its_caret_and_the_next_input_runs_on_a_fresh_line():
    text, s = drive("a = 5" + ENTER + "b = (a +* 2)" + ENTER + "a + 1" + ENTER + ":q" + ENTER)
    lines = text.splitlines()
    at = next(i for i, ln in enumerate(lines) if ln.startswith("<input 2>:1:9: unexpected `*`"))
    assert lines[at + 1].strip() == "b = (a +* 2)"
    assert lines[at + 2].index("^") == lines[at + 1].index("*")        # the caret under the `*`
    assert "6" in lines[at + 3:]            # `a + 1` ran on its own: it did not land in the old line
    assert s["a"] == 5 and "b" not in s.namespace


def test_a_syntax_error_goes_into_the_history():
    # Up brings the refused input back to be fixed: here it is run again as it was
    text, _ = drive("y = (1 +* 2)" + ENTER, UP + ENTER, ":q" + ENTER)
    assert "<input 1>:1:9: unexpected `*`" in text and "<input 2>:1:9: unexpected `*`" in text


def test_incomplete_input_still_opens_a_continuation_line():
    text, s = drive("v = [1," + ENTER + "2]" + ENTER + "v[1] * 10" + ENTER + ":q" + ENTER)
    assert "20" in text.splitlines() and s["v"] == [1, 2]


# ---- 2. :help: a short first screen, topics, a pager for long help -------------------------------

def test_help_first_screen_is_short_and_names_the_topics():
    _, text = run_lines(":help")
    lines = text.splitlines()
    assert len(lines) <= 15
    for topic in ("commands", "language", "autograd", "keys", "builtins", "NAME"):
        assert any(ln.strip().startswith(f":help {topic}") for ln in lines), topic
    assert ":check" in text and ":quit" in text            # the command names, not their usage lines
    _, builtins = run_lines(":help builtins")
    assert re.search(r"\btensor\b", builtins) and re.search(r"\bjacobian\b", builtins)
    _, commands = run_lines(":help commands")
    assert any(ln.startswith(":check f w1 b") for ln in commands.splitlines())


def test_long_help_goes_through_the_pager_on_a_terminal(monkeypatch, capsys):
    paged = []
    monkeypatch.setattr(help_mod, "_interactive", lambda: True)
    monkeypatch.setattr(help_mod.shutil, "get_terminal_size", lambda *a: os.terminal_size((80, 12)))
    monkeypatch.setattr("pydoc.pager", paged.append)
    r = Repl(autodsl.Session())                  # writes to the terminal itself (out=None)
    r.handle(":help x.register_hook")
    r.handle(":help")                            # fits on the screen: printed
    assert len(paged) == 1 and paged[0].startswith("x.register_hook(hook)")
    assert capsys.readouterr().out.startswith("help topics")
    # written to a stream (tests, the Jupyter kernel): never paged
    out = io.StringIO()
    Repl(autodsl.Session(out=out), out=out).handle(":help x.register_hook")
    assert len(paged) == 1 and out.getvalue().startswith("x.register_hook(hook)")


def test_the_pager_in_a_real_terminal(tmp_path):
    pexpect = pytest.importorskip("pexpect")
    env = dict(os.environ)
    env.pop("MANPAGER", None)
    env.update({"PYTHONPATH": str(ROOT) + os.pathsep + env.get("PYTHONPATH", ""), "XDG_DATA_HOME": str(tmp_path),
                "TERM": "xterm", "NO_COLOR": "1", "PROMPT_TOOLKIT_NO_CPR": "1",
                "PAGER": "sed -e 's/^/paged: /'"})
    child = pexpect.spawn(sys.executable, ["-m", "autodsl", "--no-history"], cwd=str(ROOT), env=env,
                          encoding="utf-8", timeout=30, dimensions=(12, 100))
    try:
        child.expect_exact(">>>")
        child.send(":help builtins\r")
        child.expect_exact("paged: built-ins (:help NAME for one):")
        child.expect_exact(">>>")
        child.send(":quit\r")
        child.expect(pexpect.EOF)
    finally:
        child.close()
    assert child.exitstatus == 0


# ---- 3. completion docs in plain text -----------------------------------------------------------

MARKUP = re.compile(r"``|:[a-z]+:`|`|\*\*")


def test_completion_docs_have_no_rest_markup():
    s = autodsl.Session()
    docs = {n: one_line_doc(f, autodsl.REGISTRY, n) for n, f in s.builtins.items()}
    docs.update({"x." + m: one_line_doc(getattr(Tensor, m)) for m in PUBLIC_METHODS})
    marked = {n: d for n, d in docs.items() if MARKUP.search(d)}
    assert marked == {}
    assert docs["x.register_hook"].startswith("Call hook(grad) with this tensor's gradient")
    assert docs["zeros"] == "A tensor of zeros of shape size."
    # a colon inside brackets does not end the sentence
    assert docs["cumsum"].startswith("Running sums along dim (reverse: from the end")
    c = AutodslCompleter(lambda: s, list, registry=autodsl.REGISTRY)
    s.run("x = tensor([1.0], requires_grad=true)")
    metas = [x.display_meta_text for x in c.get_completions(Document("x.re"), None)]
    assert metas and not any(MARKUP.search(m) for m in metas)


def test_help_name_shows_the_doc_without_double_backquotes():
    _, text = run_lines(":help x.register_hook", ":help grad")
    assert "``" not in text and ":func:" not in text
    assert "Call `hook(grad)`" in text            # code keeps the language's backquotes


# ---- 4. :load completion: folders and .ad files -----------------------------------------------

def test_load_completion_walks_folders_and_puts_scripts_first(tmp_path, monkeypatch):
    (tmp_path / "model.ad").write_text("m = 1\n")
    (tmp_path / "notes.txt").write_text("")
    (tmp_path / ".hidden.ad").write_text("")
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "inner.ad").write_text("inner = 42\n")
    (tmp_path / "data" / "table.csv").write_text("")
    monkeypatch.chdir(tmp_path)
    assert names(":load ") == ["model.ad", "data/"]            # not notes.txt, not .hidden.ad
    assert names(":load d") == ["data/"]                       # a folder ends in `/`
    assert names(":load data/") == ["inner.ad"]                # and Tab walks into it
    assert names(":load no") == ["notes.txt"]                  # any file when nothing else matches
    assert names(":load .h") == [".hidden.ad"]
    assert names(":save m") == ["model.ad"]
    assert names(":dot x da") == ["data/"]
    # in the prompt: Tab, Tab completes the folder then the script in it
    _, s = drive(":load da" + TAB, TAB, ENTER + ":q" + ENTER)
    assert s["inner"] == 42


# ---- 5. a keyword already given is not offered again --------------------------------------------

def test_keywords_already_given_are_not_offered():
    s = autodsl.Session()
    s.run("x = tensor([[1.0, 2.0]]); def f(alpha, beta=2, gamma=3) { return alpha }")
    assert names("sum(x, dim=1, ", s) == ["keepdim="]
    assert names("sum(dim=1, ", s) == ["input=", "keepdim="]
    assert names("sum(x, ", s) == ["dim=", "keepdim="]          # x is input
    assert names("x.sum(keepdim=true, ", s) == ["dim="]
    assert names("f(1, gamma=2, ", s) == ["beta="]
    assert names("sum(x, dim=exp(", s)[0] == "input="          # the inner call's own keywords
    assert "dim=" in names("sum(x, keepdim=dim==1, ", s)        # `==` compares, it names no keyword
    assert given_keywords('f(a, b=g(c=1), "d=2", ') == {"b"}


# ---- 6. the signature of the call being typed, in the bottom bar -------------------------------------

def test_signature_of_the_call_being_typed():
    s = autodsl.Session()
    s.run("x = tensor([1.0], requires_grad=true); def f(a, b=2) { return a*b }; opt = sgd([x], lr=0.1)")
    assert call_signature("exp(", s) == "exp(input)"
    assert call_signature("y = exp(x", s) == "exp(input)"
    assert call_signature("f(", s) == "f(a, b=2)"               # a function of the session
    assert call_signature("x.sum(", s) == "x.sum(dim=none, keepdim=false)"
    assert call_signature("opt.step(", s) == "opt.step()"
    assert call_signature("sum(x, dim=exp(", s) == "exp(input)"  # the innermost open call
    assert call_signature("exp(x) + 1", s) is None              # closed: no call being typed
    assert call_signature("x(", s) is None and call_signature("if (", s) is None
    hint = signature_hint("tensor(", s, width=40)
    assert hint.startswith("tensor(data, requires_grad=false") and len(hint) <= 40


def test_the_bottom_bar_shows_the_signature_only_inside_a_call():
    out = io.StringIO()
    r = Repl(autodsl.Session(out=out), out=out)
    r.session.run("def f(a, b=2) { return a*b }")
    seen = []

    async def type_into(buf):          # an edit starts background work: it needs an event loop
        seen.append(prompt.bottom_toolbar)                       # no bar at an empty prompt
        buf.insert_text("y = exp(")
        seen.append(prompt.bottom_toolbar)
        buf.text = "f("
        buf.cursor_position = 2
        seen.append(prompt.bottom_toolbar)
        buf.insert_text("1)")
        seen.append(prompt.bottom_toolbar)                       # the call is closed: the bar goes
        buf.cursor_position = 2
        seen.append(prompt.bottom_toolbar)                       # the cursor back inside it
    with create_pipe_input() as inp:
        prompt = build_prompt_session(r, history=False, input=inp, output=DummyOutput(), color=False)
        asyncio.run(type_into(prompt.default_buffer))
    shown = [None if f is None else fragment_list_to_text(f) for f in seen]
    assert shown[0] is None and shown[1].startswith("exp(input)")
    assert shown[2:] == ["f(a, b=2)", None, "f(a, b=2)"]
    assert [t for style, t in seen[1] if "bold" in style] == ["input"]     # the parameter being typed


def test_the_bar_marks_the_parameter_the_argument_goes_to():
    s = autodsl.Session()
    s.run("x = tensor([1.0]); def f(a, b=2) { return a*b }")

    def current(text):
        return [t for style, t in signature_fragments(text, s) if style == "bold"]
    assert current("sum(") == ["input"]
    assert current("sum(x, ") == ["dim=none"]
    assert current("sum(x, keepdim=") == ["keepdim=false"]     # by the keyword being written
    assert current("x.sum(") == ["dim=none"]                   # a method: after the tensor itself
    assert current("f(1, ") == ["b=2"] and current("f(b=3, a=") == ["a"]
    assert current('print(1, 2, "three", ') == ["*values"]      # every further value goes there
    assert current("exp(x, ") == []                            # past the last parameter: none
    assert signature_hint("sum(x, ", s, width=20) == "sum(input, dim=none…"      # 20 characters


# ---- 7. matching brackets -------------------------------------------------------------------------

def test_matching_brackets_are_highlighted_but_not_comparisons():
    with create_pipe_input() as inp:
        prompt = build_prompt_session(Repl(autodsl.Session()), history=False, input=inp, output=DummyOutput())
    procs = [p for p in prompt.input_processors if isinstance(p, HighlightMatchingBracketProcessor)]
    assert len(procs) == 1
    text = "f(a[0], {b}) < c > d"
    pairs = procs[0]._get_positions_to_highlight(Document(text, text.index("[")))
    assert sorted(col for _, col in pairs) == [text.index("["), text.index("]")]
    assert procs[0]._get_positions_to_highlight(Document(text, text.index("<"))) == []


# ---- 8. positions in a :load-ed file keep its name ----------------------------------------------------

def test_positions_of_loaded_code_name_their_file(tmp_path):
    lib = tmp_path / "lib.ad"
    lib.write_text("w = tensor(2.0, requires_grad=true)\ny = w * w\n"
                   "def f(v) {\n    return v + tensor([1.0, 2.0, 3.0])\n}\n")
    _, text = run_lines(f":load {lib}", ":trace on", "y.backward()", ":graph y", ":trace last",
                        "z = w * 3", "z.backward()", "f(tensor([1.0, 2.0]))")
    assert f"step 1  MulBackward#1 at {lib}:2:7 `w * w`  deps 0 (root)" in text      # the trace
    assert f"y = MulBackward#1 at {lib}:2:7 `w * w`" in text                           # :graph
    assert text.count(f"{lib}:2:7 `w * w`") == 3                                         # :trace last too
    assert "MulBackward#1 at <input 6>:1:7 `w * 3`" in text                              # inputs as before
    assert f"{lib}:4:14: add: shapes (2,) and (3,) do not broadcast" in text            # an error in it
    assert "called at <input 8>:1:1" in text


def test_a_script_run_alone_keeps_short_positions(tmp_path):
    # one file: the name would say nothing new (the samples' expected output relies on it)
    s = autodsl.Session(out=io.StringIO(), trace=True)
    s.run("w = tensor(2.0, requires_grad=true)\ny = w * w\ny.backward()\n", str(tmp_path / "one.ad"))
    assert "MulBackward#1 at 2:7 `w * w`" in str(s.last_trace)


def test_the_signature_bar_in_a_real_terminal(tmp_path):
    # the bar needs the terminal's answer to a cursor-position request (as any terminal gives)
    pexpect = pytest.importorskip("pexpect")
    env = dict(os.environ)
    env.pop("PROMPT_TOOLKIT_NO_CPR", None)
    env.update({"PYTHONPATH": str(ROOT) + os.pathsep + env.get("PYTHONPATH", ""), "XDG_DATA_HOME": str(tmp_path),
                "TERM": "xterm", "NO_COLOR": "1"})
    child = pexpect.spawn(sys.executable, ["-m", "autodsl", "--no-history"], cwd=str(ROOT), env=env,
                          encoding="utf-8", timeout=30, dimensions=(24, 100))

    def expect(text):                  # the text, with any styles between its characters
        styled = "(?:\x1b\\[[0-9;]*m)*".join(re.escape(ch) for ch in text)
        while child.expect(["\x1b\\[6n", styled]) == 0:
            child.send("\x1b[3;1R")          # the cursor is on row 3, column 1
    try:
        expect(">>>")
        child.send("def f(a, b=2) { return a*b }\r")
        expect(">>>")
        child.send("exp(")
        expect("exp(input)")
        child.send("f(")
        expect("f(a, b=2)")
        child.send("1))\r")
        expect("7.389")                     # exp(f(1)) ran
        child.send(":quit\r")
        child.expect(pexpect.EOF)
    finally:
        child.close()
    assert child.exitstatus == 0


# ---- 9. Session(echo=True), as the README says ----------------------------------------------------------

def test_echo_is_documented_and_does_what_the_readme_says():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert "`Session(echo=True)`" in readme and "`echo=False` prints nothing" in readme
    out = io.StringIO()
    s = autodsl.Session(out=out)                 # echo=True is the default
    assert s.run("x = 2\nx + 1\nx * 5") == 10
    assert out.getvalue().split() == ["3", "10"]
    quiet = io.StringIO()
    autodsl.Session(out=quiet, echo=False).run("1 + 1")
    assert quiet.getvalue() == ""
    seen = []
    autodsl.Session(echo=seen.append).run("1 + 1\n2 * 3")
    assert seen == [2, 6]


def test_help_on_a_function_you_defined():
    s = autodsl.Session()
    s.run("def relu(a, b=2) { return a }\ndef scale(v) { return 2 * v }")
    out = io.StringIO()
    r = Repl(s, out=out)
    r.handle(":help relu")                        # yours shadows the built-in, as in the language
    r.handle(":help sc")                          # not a prefix search: a name
    text = out.getvalue().splitlines()
    assert text[:2] == ["relu(a, b=2)", "a function you defined (in <string>)"]
    assert text[2].startswith("no built-in or topic named 'sc'")
    assert names(":help sca", s)[:1] == ["scale"] and "scatter" in names(":help sca", s)
