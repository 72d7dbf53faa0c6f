"""Bugs found by trying issue 13's notebooks, kernel and REPL as a new user would; one test each."""
from __future__ import annotations

import json
import os
import stat

import pytest


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def test_installed_kernelspec_is_readable_by_everyone_the_umask_allows(tmp_path):
    # A kernelspec installed system-wide or into a shared environment (--sys-prefix) must be
    # readable by the other users of that Jupyter: its folder was copied from a 0700 temporary
    # folder, so only its owner could list it.
    pytest.importorskip("jupyter_client", reason='the installer needs jupyter_client (pip install "autodsl[jupyter]")')
    from autodsl.cli.kernel import install

    where = install(prefix=str(tmp_path))
    mode = stat.S_IMODE(os.stat(where).st_mode)
    assert mode == 0o777 & ~_umask()
    with open(os.path.join(where, "kernel.json"), encoding="utf-8") as f:
        assert json.load(f)["argv"][1:3] == ["-m", "autodsl.kernel"]


def test_install_rejects_a_bad_kernel_name_in_words_without_a_traceback(tmp_path, capsys):
    # jupyter_client's ValueError for `--name a/b` reached the user as a Python traceback
    pytest.importorskip("jupyter_client", reason='the installer needs jupyter_client (pip install "autodsl[jupyter]")')
    from autodsl.cli.kernel import main

    assert main(["install", "--prefix", str(tmp_path), "--name", "a/b"]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and "--name 'a/b'" in err and "letters, digits" in err
    assert not (tmp_path / "share").exists()


def test_install_takes_options_written_with_equals_and_a_display_name(tmp_path, capsys):
    # ipykernel's installer takes --name=NAME and --display-name; ours said "unknown option"
    pytest.importorskip("jupyter_client", reason='the installer needs jupyter_client (pip install "autodsl[jupyter]")')
    from autodsl.cli.kernel import main

    assert main(["install", f"--prefix={tmp_path}", "--name=autodsl-2", "--display-name", "autodsl (course)"]) == 0
    spec = tmp_path / "share" / "jupyter" / "kernels" / "autodsl-2" / "kernel.json"
    assert json.loads(spec.read_text(encoding="utf-8"))["display_name"] == "autodsl (course)"
    assert f"installed kernelspec autodsl-2 in {spec.parent}" in capsys.readouterr().out
    assert main(["install", "--user=yes"]) == 2
    assert main(["install", "--name="]) == 2


def _runner():
    from autodsl.cli.kernel import CellRunner

    sent: list = []
    return CellRunner(lambda kind, content: sent.append((kind, content))), sent


def test_kernel_shows_a_traced_backward_as_the_trace_table_as_the_extension_does():
    # with trace(true) the IPython extension shows each backward's trace as its HTML table;
    # the kernel wrote the text form into stdout (the same table only from last_trace())
    runner, sent = _runner()
    code = "trace(true)\nw = tensor(2.0, requires_grad=true)\ny = (w*3)^2\ny.backward()\nprint(w.grad)"
    assert runner.execute(code, 1)["status"] == "ok"
    kinds = [k for k, _ in sent]
    shown = [c for k, c in sent if k == "display_data"]
    assert len(shown) == 1 and "<table" in shown[0]["data"]["text/html"]
    assert "grad * 2.0 * (w*3)^(2.0-1) = 1.0 * 2.0 * 6.0^(2.0-1)" in shown[0]["data"]["text/plain"]
    streams = "".join(c["text"] for k, c in sent if k == "stream")
    assert "backward trace" not in streams and streams.strip() == "tensor(36.)"
    assert kinds.index("display_data") < kinds.index("stream")      # in the order the cell made them
    # :reset keeps it, and trace(false) stops it
    sent.clear()
    runner.execute(":reset\nw = tensor(1.0, requires_grad=true)\n(w*w).backward()", 2)
    assert [k for k, _ in sent].count("display_data") == 1
    sent.clear()
    runner.execute("trace(false)\nw = tensor(1.0, requires_grad=true)\n(w*w).backward()", 3)
    assert not [k for k, _ in sent if k == "display_data"]


@pytest.mark.parametrize("source", ["x = 1 +", "y = 2 *", "1 + # a comment", "x = -", "for i in", "if x"])
def test_a_statement_that_no_next_line_can_finish_is_not_waited_for(source):
    # a new line ends a statement outside brackets, so after `x = 1 +` and Enter whatever came
    # next was an error ("unexpected end of line"): the REPL (and the kernel's is_complete)
    # asked for a line that could never help, where Python shows the error at once
    from autodsl.errors import ParseError
    from autodsl.lang.parser import is_incomplete, parse

    assert not is_incomplete(source)
    with pytest.raises(ParseError):
        parse(source + "\n0")


@pytest.mark.parametrize("source", ["x = (1 +", "f(1,", "x = [1, 2,\n", "def f(x) {", "def f(x) {\n  y = x\n",
                                    "if x {\n  y = 1\n} else {", "x = 1 + \\", "while true {",
                                    "def f(a) {\n  return a +"])
def test_a_statement_open_in_brackets_a_block_or_after_a_backslash_waits_for_the_next_line(source):
    from autodsl.lang.parser import is_incomplete

    assert is_incomplete(source)


def test_an_unfinished_line_in_a_block_is_named_when_the_block_closes():
    # (an error at Enter there would say "missing closing `}`", not what is wrong)
    from autodsl.errors import ParseError
    from autodsl.lang.parser import is_incomplete, parse

    assert not is_incomplete("def f(a) {\n  return a +\n}")
    with pytest.raises(ParseError) as info:
        parse("def f(a) {\n  return a +\n}")
    assert (info.value.line, info.value.column) == (2, 13) and "end of line" in info.value.message


def test_the_kernel_says_a_cell_with_a_dangling_operator_is_complete():
    runner, _ = _runner()
    assert runner.is_complete("x = 1 +") == {"status": "complete"}
    assert runner.is_complete("x = (1 +")["status"] == "incomplete"


def test_the_caret_lines_up_under_wide_characters_as_a_terminal_shows_them():
    # a CJK character takes two columns on a terminal and in a notebook's monospace output:
    # the caret under `s = "日本語" + 1` pointed at 語, not at the `+`
    import autodsl

    with pytest.raises(autodsl.errors.DSLError) as info:
        autodsl.Session().run('s = "日本語" + 1')
    line, caret = info.value.render().split("\n")[1:3]
    assert line == '    s = "日本語" + 1'
    assert caret == "    " + " " * len('s = "日本語" ') + " " * 3 + "^"
    with pytest.raises(autodsl.errors.DSLError) as info:
        autodsl.Session().run('t = "e\u0301" + undefined_x')      # e and a combining accent: one column
    assert info.value.render().split("\n")[2] == "    " + " " * len('t = "e" + ') + "^" * len("undefined_x")
    with pytest.raises(autodsl.errors.DSLError) as info:
        autodsl.Session().run('日本 = 1')
    assert info.value.render().split("\n")[2] == "    ^^"       # an unexpected wide character: both columns


@pytest.fixture(scope="module")
def ipshell():
    pytest.importorskip("IPython", reason="IPython is not installed (pip install ipython)")
    import builtins
    import sys

    from IPython.core.interactiveshell import InteractiveShell

    # (an IPython shell takes over __main__ and adds builtins: both given back afterwards)
    main, names = sys.modules.get("__main__"), set(vars(builtins))
    ip = InteractiveShell.instance()
    ip.run_line_magic("load_ext", "autodsl")
    yield ip
    ip.run_line_magic("unload_ext", "autodsl")
    InteractiveShell.clear_instance()
    if main is not None:
        sys.modules["__main__"] = main
    for extra in set(vars(builtins)) - names:
        delattr(builtins, extra)


def _ip_run(ip, code: str) -> str:
    from IPython.utils.capture import capture_output

    with capture_output() as cap:
        assert ip.run_cell(code).success
    return cap.stdout


def test_the_line_magic_leaves_braces_and_dollars_to_the_language(ipshell):
    # IPython expands {expr} and $name in a line magic's text with the notebook's Python
    # variables: `%autodsl print(f"{w}")` printed Python's w, not the session's tensor
    _ip_run(ipshell, "w = 99\nlr = 'python'")
    _ip_run(ipshell, "%autodsl w = tensor(2.5)")
    assert _ip_run(ipshell, '%autodsl print(f"{w}", f"{w * 2:.1f}")') == "2.5 5.0\n"
    _ip_run(ipshell, '%autodsl d = "$lr and {lr}"')
    assert _ip_run(ipshell, "%autodsl print(d)") == "$lr and {lr}\n"
    assert _ip_run(ipshell, '%%autodsl\nprint(f"{w}")') == "2.5\n"


@pytest.mark.parametrize("line", ["-s", "--session", "-s   ", "--session="])
def test_a_session_flag_without_a_name_is_a_usage_error(ipshell, line):
    # `%autodsl -s` ran "-s" as code: "`s` is not defined" at <input N>:1:2
    from IPython.utils.capture import capture_output

    with capture_output() as cap:
        res = ipshell.run_cell(f"%autodsl {line}")
    assert not res.success and type(res.error_in_exec).__name__ == "UsageError"
    assert "needs a session name" in str(res.error_in_exec) and "not defined" not in cap.stdout


def test_graph_pictures_of_non_ascii_source_under_a_non_utf8_locale(tmp_path):
    # DOT text went to Graphviz in the locale's encoding (text=True): under an ASCII locale (or
    # Windows' cp1252) a source line with 日本語 raised UnicodeEncodeError out of _repr_svg_ and
    # dot(x, "g.svg"); Graphviz reads and writes UTF-8
    import shutil
    import subprocess
    import sys

    if shutil.which("dot") is None:
        pytest.skip("Graphviz's dot is not installed (apt-get install graphviz)")
    script = (
        "import autodsl\n"
        "s = autodsl.Session(echo=False)\n"
        "s.run('def f(a) { return 2.0 }\\nw = tensor(2.0, requires_grad=true)\\ny = w * f(\"日本語 é\")')\n"
        "svg = s.run('graph(y)')._repr_svg_()\n"
        "assert svg is not None and '日本語 é' in svg, svg\n"
        f"s.run('dot(y, \"{tmp_path / 'g.svg'}\")')\n"
        "print('ok')\n")
    env = dict(os.environ, LC_ALL="C", LANG="C", PYTHONUTF8="0", PYTHONCOERCECLOCALE="0")
    (tmp_path / "s.py").write_text(script, encoding="utf-8")      # (a source file is read as UTF-8)
    p = subprocess.run([sys.executable, str(tmp_path / "s.py")], capture_output=True, timeout=120, env=env,
                       check=False)
    assert p.returncode == 0, p.stderr.decode("utf-8", "replace")
    assert "日本語 é" in (tmp_path / "g.svg").read_text(encoding="utf-8")


def test_the_device_command_offers_and_documents_every_device():
    # the dask device came in this round; :device completed and documented only cpu|cuda
    from prompt_toolkit.completion import CompleteEvent
    from prompt_toolkit.document import Document

    from autodsl import backend
    from autodsl.cli.complete import AutodslCompleter
    from autodsl.cli.repl import Repl
    from autodsl.ops import REGISTRY
    from autodsl.session import Session

    repl = Repl(Session())
    completer = AutodslCompleter(lambda: repl.session, lambda: repl.commands, registry=REGISTRY)
    got = [c.text for c in completer.get_completions(Document(":device ", 8), CompleteEvent(completion_requested=True))]
    assert got == list(backend.DEVICES) and "dask" in got
    assert "cpu|cuda|dask" in repl.cmd_device.__doc__


def test_quit_in_the_kernel_says_what_happens_and_asks_the_front_end_to_exit():
    # :quit in a cell did nothing and said nothing; IPython's kernel answers `exit` with the
    # ask_exit payload, on which jupyter console leaves (a notebook keeps its kernel)
    runner, sent = _runner()
    reply = runner.execute("a = 1\n:quit\nb = 2", 1)
    assert reply["status"] == "ok"
    assert reply["payload"] == [{"source": "ask_exit", "keepkernel": False}]
    text = "".join(c["text"] for k, c in sent if k == "stream")
    assert "restart the kernel" in text and ":reset" in text
    assert runner.execute("a + 1", 2)["payload"] == [] and runner.session["a"] == 1
    assert "b" not in runner.session            # :quit ends the cell, as it ends the REPL


def test_a_tensor_attribute_has_help_everywhere_help_is_asked():
    # Shift-Tab after `w.grad` found nothing, and :help x.grad / help("x.grad") said there was
    # no such built-in, suggesting the function grad() instead
    import io

    import autodsl
    from autodsl.core.tensor import PUBLIC_ATTRIBUTES
    from autodsl.lang.attribute_help import ATTRIBUTE_DOCS

    assert set(ATTRIBUTE_DOCS) == set(PUBLIC_ATTRIBUTES)
    runner, _ = _runner()
    runner.execute("w = tensor([1.0, 2.0], requires_grad=true)", 1)
    for code, pos in (("w.grad", 6), ("w.grad", 3), ("print(w.shape)", 12), ("w.requires_grad", 15)):
        reply = runner.inspect(code, pos)
        attr = code[code.index(".") + 1:].split(")")[0]
        assert reply["found"], code
        assert reply["data"]["text/plain"].startswith(f"x.{attr}  (an attribute")
    assert "backward() accumulated" in runner.inspect("w.grad", 6)["data"]["text/plain"]
    assert "(MulBackward, SumBackward" in runner.inspect("w.grad_fn", 9)["data"]["text/plain"]   # case kept
    out = io.StringIO()
    s = autodsl.Session(out=out)
    s.run('help("x.grad")\nhelp("shape")\nhelp(grad)')
    text = out.getvalue()
    assert text.startswith("x.grad  (an attribute") and "\nx.shape  (an attribute" in text
    assert "\ngrad(" in text              # the built-in grad() keeps its own doc
    from autodsl.cli.repl import Repl

    buf = io.StringIO()
    repl = Repl(autodsl.Session(), out=buf)
    repl.cmd_help("x.is_leaf")
    assert buf.getvalue().startswith("x.is_leaf  (an attribute") and "did you mean" not in buf.getvalue()


@pytest.mark.parametrize("source, words", [
    ("%timeit 1 + 1", ":time"),
    ("%%autodsl\nx = 1", "%%autodsl"),
    ("x = 1\n%autodsl x", "IPython"),
    ("w?", "help(name)"),
    ("?w", "help(name)"),
    ("exit", ":quit"),
    ("quit()", ":quit"),
])
def test_notebook_and_repl_habits_get_the_languages_way(source, words):
    # a learner coming from IPython types %timeit, %%autodsl (copied from the extension's
    # notebook into the autodsl kernel), w? or exit; each was a bare "unexpected `%`" or
    # "`exit` is not defined"
    import autodsl

    with pytest.raises(autodsl.errors.DSLError) as info:
        autodsl.Session(echo=False).run(source)
    assert words in info.value.message, info.value.message


def test_inspecting_a_lazy_tensor_in_the_kernel_does_not_compute_it(monkeypatch):
    # JupyterLab's contextual help asks for inspection as the cursor moves: over a dask
    # variable's name that computed its whole graph each time (the text showed its values)
    pytest.importorskip("dask", reason='the dask device needs dask (pip install "autodsl[dask]")')
    from autodsl import backend
    from autodsl.cli.kernel import CellRunner
    from autodsl.session import Session

    sent: list = []
    runner = CellRunner(lambda kind, content: sent.append((kind, content)),
                        session=Session(device="dask", scheduler="synchronous"))
    assert runner.execute("big = ones(1000, 3) * 2\nsmall = tensor([1.0, 2.0], device=\"cpu\")", 1)["status"] == "ok"
    reads = []
    real = backend.to_host
    monkeypatch.setattr(backend, "to_host", lambda arr: reads.append(arr) or real(arr))
    text = runner.inspect("big", 3)["data"]["text/plain"]
    assert text.startswith("big: tensor 1000x3 float64") and "dask" in text and "print(big)" in text
    assert reads == []
    assert "tensor([1., 2.])" in runner.inspect("small", 5)["data"]["text/plain"]       # host values are free


def test_notebook_session_run_from_python_shows_its_result_once(ipshell):
    # notebook_session().run("w * 3") in a Python cell showed the value twice: displayed as a
    # bare expression, and again as the cell's Out[] (the value run() returns)
    from IPython.utils.capture import capture_output

    with capture_output() as cap:
        res = ipshell.run_cell("import autodsl\n"
                               "autodsl.notebook_session('pyrun').run('w = tensor(2.0)\\nw * 3\\nw * 4')")
    assert res.success and res.result.item() == 8.0
    shown = [o.data["text/plain"] for o in cap.outputs]
    assert shown == ["tensor(6.)"]                  # the earlier bare expression, once; not the result
    with capture_output() as cap:
        res = ipshell.run_cell("autodsl.notebook_session('pyrun').run('x = 1')")
    assert res.success and res.result is None and not cap.outputs
    with capture_output() as cap:       # the cell magic still returns its last value as Out[]
        res = ipshell.run_cell("%%autodsl pyrun\nw * 5")
    assert res.result.item() == 10.0 and not cap.outputs


def test_inspection_on_an_argument_falls_back_to_the_call_it_is_in():
    # Shift-Tab with the cursor on `requires_grad` in tensor(2.0, requires_grad=true), or on a
    # variable the session does not know yet, found nothing; IPython shows the call's doc there
    runner, _ = _runner()
    code = "w = tensor(2.0, requires_grad=true)"
    for pos in (code.index("requires_grad") + 3, code.index("true") + 2, code.index("2.0") + 1):
        reply = runner.inspect(code, pos)
        assert reply["found"] and reply["data"]["text/plain"].startswith("tensor("), pos
    reply = runner.inspect("y = sum(not_yet_defined, dim=0)", 10)
    assert reply["found"] and reply["data"]["text/plain"].startswith("sum(")
    assert not runner.inspect("not_yet_defined + 1", 3)["found"]            # no call around it: nothing


@pytest.mark.parametrize("source, col", [("α = 0.1", 1), ("x = 2 * π", 9), ("lr_α = 1", 4)])
def test_a_non_ascii_letter_in_a_name_says_names_are_ascii(source, col):
    # Python takes α as a name; here it was a bare "unexpected character `α`"
    import autodsl

    with pytest.raises(autodsl.errors.ParseError) as info:
        autodsl.Session(echo=False).run(source)
    assert "ASCII" in info.value.message and info.value.column == col


def test_is_complete_reads_the_code_after_a_command_line():
    # a cell starting with a `:` line was "complete" whatever followed: jupyter console ran
    # `:vars` + `x = [1,` at Enter, an error, instead of opening a continuation line
    runner, _ = _runner()
    assert runner.is_complete(":vars\nx = [1,")["status"] == "incomplete"
    assert runner.is_complete(":vars\nx = [1,\n2]") == {"status": "complete"}
    assert runner.is_complete("x = 1\n:vars") == {"status": "complete"}
    assert runner.is_complete(":help sum") == {"status": "complete"}


def test_reset_keeps_the_sessions_limits_files_permission_and_scheduler(tmp_path):
    # :reset made a Session of the device, dtype and trace only: a session without file
    # access (files=False) could read and write files again, and its time, step and memory
    # limits, base folder and dask scheduler were gone
    import io

    from autodsl.cli.repl import Repl
    from autodsl.session import Session

    s = Session(time_limit=5, step_limit=1000, memory_limit="1GB", files=False, base_dir=str(tmp_path),
                source_limit=5000, scheduler="synchronous")
    repl = Repl(s, out=io.StringIO())
    repl.command(":reset")
    n = repl.session
    assert n is not s
    assert (n.time_limit, n.step_limit, n.memory_limit) == (5.0, 1000, 10 ** 9)
    assert (n.files, n.base_dir, n.source_limit) == (False, str(tmp_path), 5000)
    assert n.scheduler.spec == "synchronous"
    with pytest.raises(Exception) as info:
        n.run('save(tensor([1.0]), "x.npy")')
    assert "file" in str(info.value)
    assert not (tmp_path / "x.npy").exists()


def test_load_and_save_commands_respect_a_session_without_file_access(tmp_path):
    # Session(files=False) refuses load(), save(), include() and dot() files, but the REPL's
    # (and the kernel's) :load read any file, showing its first line in the syntax error,
    # and :save wrote one
    import io

    from autodsl.cli.repl import Repl
    from autodsl.session import Session

    secret = tmp_path / "secret.txt"
    secret.write_text("password: hunter2\n", encoding="utf-8")
    out = io.StringIO()
    repl = Repl(Session(files=False), out=out)
    repl.command(f":load {secret}")
    repl.command(f":save {tmp_path / 'saved.ad'}")
    text = out.getvalue()
    assert "hunter2" not in text and text.count("may not read or write files") == 2
    assert not (tmp_path / "saved.ad").exists()
