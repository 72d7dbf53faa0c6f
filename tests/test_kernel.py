"""The Jupyter kernel (autodsl/cli/kernel.py): cells, commands, errors, rich results,
completion and inspection, first through ``CellRunner`` (no ZeroMQ), then through a
started kernel and jupyter_client, and its kernelspec installer."""
from __future__ import annotations

import base64
import json
import re
import subprocess
import sys
import threading

import pytest
from helpers.jupyter_env import jupyter_environ, need_jupyter

from autodsl.cli.kernel import LANGUAGE_INFO, CellRunner, kernel_json, split_cell
from autodsl.cli.mimebundle import mimebundle

SEED = """x = tensor(2.0)
w1 = tensor(0.5, requires_grad=true)
w2 = tensor(-1.5, requires_grad=true)
b = tensor(1.0, requires_grad=true)
f = (w2*(w1*x^2+b))^3"""

NUMBER = re.compile(r"-?\d+(?:\.\d*)?(?:e[-+]?\d+)?")


def numbers(text: str) -> list[float]:
    return [float(t) for t in NUMBER.findall(text)]


class Cells:
    """A CellRunner and what it sent, cell by cell."""

    def __init__(self):
        self.sent: list[tuple[str, dict]] = []
        self.runner = CellRunner(lambda kind, content: self.sent.append((kind, content)))
        self.count = 0

    def run(self, code: str):
        self.count += 1
        self.sent = []
        reply = self.runner.execute(code, self.count)
        return reply, self.sent

    def stdout(self) -> str:
        return "".join(c["text"] for k, c in self.sent if k == "stream" and c["name"] == "stdout")

    def results(self) -> list[dict]:
        return [c for k, c in self.sent if k == "execute_result"]


@pytest.fixture
def cells():
    return Cells()


# ---- CellRunner ---------------------------------------------------------------------------

def test_values_are_results_prints_are_stdout_and_in_order(cells):
    reply, sent = cells.run(SEED + "\nf\nprint(\"between\")\nf.backward()\nw1.grad")
    assert reply["status"] == "ok" and reply["execution_count"] == 1
    kinds = [k for k, _ in sent]
    assert kinds == ["execute_result", "stream", "execute_result"]
    first, last = cells.results()
    assert numbers(first["data"]["text/plain"])[0] == -91.125
    assert numbers(last["data"]["text/plain"]) == [-364.5]
    assert first["execution_count"] == 1
    assert cells.stdout() == "between\n"


def test_a_cells_prints_are_one_stream_output(cells):
    _, sent = cells.run("for i in range(3) { print(i) }")
    assert sent == [("stream", {"name": "stdout", "text": "0\n1\n2\n"})]


def test_cells_share_one_session(cells):
    cells.run(SEED)
    reply, _ = cells.run("f.backward()\nb.grad")
    assert reply["status"] == "ok"
    assert numbers(cells.results()[0]["data"]["text/plain"]) == [-91.125]
    assert float(cells.runner.session["w2"].grad) == 182.25


def test_colon_commands_run_in_cells_between_code(cells):
    reply, _ = cells.run(SEED + "\n:trace on\nf.backward()\n:vars")
    assert reply["status"] == "ok"
    out = cells.stdout()
    assert "trace on" in out
    kinds = [k for k, _ in cells.sent]
    shown = [c["data"] for k, c in cells.sent if k == "display_data"]
    assert len(shown) == 1 and "backward trace: 7 steps" in shown[0]["text/plain"]     # the trace the command turned on
    assert re.search(r"^w1\s+\(\)\s+float", out, re.MULTILINE)  # :vars' table, after the backward
    assert kinds.index("display_data") < len(kinds) - 1 and "name  shape" in cells.sent[-1][1]["text"]


def test_an_error_is_an_error_output_with_the_cli_text_and_the_cell_line(cells):
    cells.run("a = 1")
    reply, sent = cells.run("a = 2\n:vars\nb = a +* 3")
    assert reply["status"] == "error"
    errors = [c for k, c in sent if k == "error"]
    assert len(errors) == 1
    text = "\n".join(errors[0]["traceback"])
    assert text.startswith("<input 2>:3:"), text        # the cell's third line, though after a command
    assert "b = a +* 3" in text and "^" in text
    assert "Traceback" not in text and "File \"" not in text
    assert reply["traceback"] == errors[0]["traceback"]
    assert cells.runner.session["a"] == 2                # what ran before the error stays


def test_a_runtime_error_names_its_position_and_the_session_goes_on(cells):
    reply, _ = cells.run("y = undefined_name + 1")
    assert reply["status"] == "error"
    assert reply["ename"] == "NameError"
    assert reply["traceback"][0].startswith("<input 1>:1:5: ")
    reply, _ = cells.run("1 + 1")
    assert reply["status"] == "ok" and cells.results()[0]["data"]["text/plain"] == "2"


def test_silent_execution_sends_nothing(cells):
    cells.sent = []
    reply = cells.runner.execute("print(1)\n2", 5, silent=True)
    assert reply["status"] == "ok" and cells.sent == []
    reply, _ = cells.run("print(3)")
    assert cells.stdout() == "3\n"


def test_split_cell_keeps_open_statements_together():
    code = "a = 1\n:vars\nb = 2\nc = 3\n:trace on\ndef f(x) {\n:not a command\n}"
    assert split_cell(code) == [("code", 0, "a = 1"), ("command", 1, ":vars"), ("code", 2, "b = 2\nc = 3"),
                                ("command", 4, ":trace on"), ("code", 5, "def f(x) {\n:not a command\n}")]


def test_completion_is_the_repls(cells):
    cells.run(SEED)
    r = cells.runner.complete("y = si", 6)
    assert {"sin", "sinh", "sign"} & set(r["matches"]) >= {"sin", "sign"}
    assert (r["cursor_start"], r["cursor_end"]) == (4, 6)
    assert "w1" in cells.runner.complete("z = w", 5)["matches"]          # the session's variables
    r = cells.runner.complete("w1.bac", 6)
    assert r["matches"] == ["backward"] and r["cursor_start"] == 3
    assert "keepdim=" in cells.runner.complete("sum(w1, kee", 11)["matches"]
    r = cells.runner.complete("f\n:tr", 5)                # a command on the cursor's line
    assert r["matches"] == [":trace"] and r["cursor_start"] == 2
    types = r["metadata"]["_jupyter_types_experimental"]
    assert types[0]["text"] == ":trace"


def test_inspection_shows_a_builtins_doc_a_method_and_a_variable(cells):
    cells.run(SEED)
    r = cells.runner.inspect("y = sin(w1)", 5)
    assert r["found"] and r["data"]["text/plain"].startswith("sin(")
    r = cells.runner.inspect("sum(w1, ", 8)                  # inside the call: its callee
    assert r["found"] and r["data"]["text/plain"].startswith("sum(")
    assert "keepdim" in r["data"]["text/plain"]
    r = cells.runner.inspect("f.backward()", 4)
    assert r["found"] and r["data"]["text/plain"].startswith("x.backward(")
    r = cells.runner.inspect("w2", 1)
    assert r["found"] and "w2: tensor scalar" in r["data"]["text/plain"]
    assert not cells.runner.inspect("nothing_here", 3)["found"]
    assert cells.runner.inspect(":vars", 2)["data"]["text/plain"].startswith(":vars")


def test_is_complete(cells):
    assert cells.runner.is_complete("def f(x) {")["status"] == "incomplete"
    assert cells.runner.is_complete("x = 1")["status"] == "complete"
    assert cells.runner.is_complete(":vars")["status"] == "complete"


def test_reset_keeps_the_kernels_display(cells):
    cells.run("a = 1\n:reset")
    reply, _ = cells.run("2 * 3")
    assert reply["status"] == "ok" and cells.results()[0]["data"]["text/plain"] == "6"
    assert "a" not in cells.runner.session


# ---- the display protocol ---------------------------------------------------------------

class _Rich:
    def _repr_html_(self):
        return "<b>rich</b>"

    def _repr_png_(self):
        return b"\x89PNG-bytes"

    def _repr_svg_(self):
        raise RuntimeError("a broken repr is skipped")

    def _repr_mimebundle_(self, include=None, exclude=None):
        return {"text/markdown": "**md**"}, {"text/markdown": {"note": 1}}

    def _repr_latex_(self):
        return None           # not available


def test_mimebundle_reads_the_ipython_display_protocol():
    data, md = mimebundle(_Rich())
    assert data["text/html"] == "<b>rich</b>"
    assert base64.b64decode(data["image/png"]) == b"\x89PNG-bytes"
    assert data["text/markdown"] == "**md**" and md == {"text/markdown": {"note": 1}}
    assert "image/svg+xml" not in data and "text/latex" not in data
    assert "text/plain" in data
    json.dumps(data)


def test_mimebundle_of_a_plain_value_is_the_repls_text():
    from autodsl.core.display import format_value
    assert mimebundle(2.5) == ({"text/plain": format_value(2.5)}, {})
    assert mimebundle([1, 2])[0] == {"text/plain": format_value([1, 2])}


# ---- the kernel over ZeroMQ -----------------------------------------------------------------

@pytest.fixture(scope="module")
def kernel(tmp_path_factory):
    need_jupyter()
    from jupyter_client.manager import start_new_kernel

    tmp = tmp_path_factory.mktemp("jupyter")
    with jupyter_environ(tmp):      # the kernelspec lookup reads JUPYTER_PATH
        km, kc = start_new_kernel(kernel_name="autodsl", startup_timeout=60, cwd=str(tmp))
    kc.manager = km         # for the interrupt test
    yield kc
    kc.stop_channels()
    km.shutdown_kernel(now=True)


def _execute(kc, code):
    outputs = []
    reply = kc.execute_interactive(code, output_hook=outputs.append, timeout=60)
    return reply["content"], [(m["msg_type"], m["content"]) for m in outputs
                              if m["msg_type"] not in ("status", "execute_input")]


def test_kernel_info_names_the_language(kernel):
    kernel.kernel_info()
    info = kernel.get_shell_msg(timeout=30)["content"]
    assert info["implementation"] == "autodsl"
    assert {k: info["language_info"][k] for k in ("name", "file_extension", "pygments_lexer")} == \
        {"name": "autodsl", "file_extension": ".ad", "pygments_lexer": "autodsl"}
    assert info["language_info"] == LANGUAGE_INFO
    assert "debugger" not in info.get("supported_features", [])


def test_kernel_executes_cells_in_one_session(kernel):
    reply, out = _execute(kernel, SEED + "\nprint(\"made f\")\n:vars")
    assert reply["status"] == "ok"
    text = "".join(c["text"] for k, c in out if k == "stream")
    assert "made f" in text and re.search(r"^w1\s+\(\)", text, re.MULTILINE)
    reply, out = _execute(kernel, "f.backward()\nw1.grad\nw2.grad")
    results = [c["data"]["text/plain"] for k, c in out if k == "execute_result"]
    assert [numbers(r) for r in results] == [[-364.5], [182.25]]


def test_kernel_errors_are_the_cli_text(kernel):
    reply, out = _execute(kernel, "nope(1)")
    assert reply["status"] == "error"
    (err,) = [c for k, c in out if k == "error"]
    assert err["traceback"][0].startswith("<input ") and ":1:1: " in err["traceback"][0]
    assert not any("Traceback" in line for line in err["traceback"])
    reply, _ = _execute(kernel, "1")                     # the kernel goes on
    assert reply["status"] == "ok"


def test_kernel_interrupt_undoes_the_cell(kernel):
    """Jupyter's interrupt is the REPL's Ctrl-C: the input is rolled back and the kernel goes on
    (sent again every 2 s until the reply comes, as a user presses it again)."""
    _execute(kernel, "n = 0")
    done = threading.Event()

    def interrupt():
        if not done.wait(1.0):
            while True:
                kernel.manager.interrupt_kernel()
                if done.wait(2.0):
                    return

    sender = threading.Thread(target=interrupt, daemon=True)
    sender.start()
    try:
        reply, out = _execute(kernel, "for i in range(100000000) { n = n + 1 }")
    finally:
        done.set()
        sender.join()
    assert reply["status"] == "error" and reply["ename"] == "KeyboardInterrupt"
    assert "as they were before this input" in reply["evalue"]
    _, out = _execute(kernel, "n")
    assert [c["data"]["text/plain"] for k, c in out if k == "execute_result"] == ["0"]


def test_kernel_completes_and_inspects(kernel):
    kernel.complete("y = expl", 8)
    r = kernel.get_shell_msg(timeout=30)["content"]
    assert r["matches"] == ["explain"] and r["cursor_start"] == 4
    kernel.inspect("explain(f, w1)", 3)
    r = kernel.get_shell_msg(timeout=30)["content"]
    assert r["found"] and r["data"]["text/plain"].startswith("explain(")


# ---- the kernelspec --------------------------------------------------------------------------

def test_kernel_json_runs_this_python():
    spec = kernel_json()
    assert spec["argv"] == [sys.executable, "-m", "autodsl.kernel", "-f", "{connection_file}"]
    assert spec["language"] == "autodsl"


def test_install_command_writes_the_kernelspec(tmp_path):
    pytest.importorskip("jupyter_client", reason='the installer needs jupyter_client (pip install "autodsl[jupyter]")')
    p = subprocess.run([sys.executable, "-m", "autodsl.kernel", "install", "--prefix", str(tmp_path)],
                       capture_output=True, text=True, timeout=120, cwd=str(tmp_path), check=False)
    assert p.returncode == 0, p.stderr
    spec_file = tmp_path / "share" / "jupyter" / "kernels" / "autodsl" / "kernel.json"
    assert json.loads(spec_file.read_text()) == kernel_json()
    assert str(spec_file.parent) in p.stdout
    bad = subprocess.run([sys.executable, "-m", "autodsl.kernel", "install", "--user", "--prefix", "x"],
                         capture_output=True, text=True, timeout=120, cwd=str(tmp_path), check=False)
    assert bad.returncode == 2 and "exclude each other" in bad.stderr
