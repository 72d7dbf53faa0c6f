"""The Jupyter kernel for notebooks written in the language (``python -m autodsl.kernel``).

Two halves, as the REPL (``cli/repl.py``), so that the logic is testable without ZeroMQ:

- ``CellRunner`` runs one cell in one ``Session`` kept for the notebook, through the REPL's
  own ``Repl`` (its ``:`` commands, its undo of an interrupted input, its ``<input N>``
  positions, N being the cell's execution count). A cell's lines that start with ``:`` are
  commands, the runs of lines between them are code. Each bare expression's value is an
  ``execute_result`` whose data is the value's rich display (``cli/mimebundle.py``:
  ``_repr_html_``, ``_repr_svg_``, ``_repr_png_``, ... and the REPL's text); with
  ``trace(true)`` each backward's trace is a ``display_data`` (its table, ``KernelSession``);
  ``print`` is the ``stdout`` stream; an error is an ``error`` output whose text is what the
  command line prints (``file:line:col: message``, the line, a caret), never a Python
  traceback. Completion and inspection (Shift-Tab) are the REPL's completer
  (``cli/complete.py``) and its ``:help``.
- ``kernel_class()`` wraps it in ipykernel's ``Kernel`` (ipykernel is the optional
  ``jupyter`` extra, imported only here); ``main`` launches it, or ``install`` registers
  the kernelspec ``autodsl`` as ipykernel's own installer does (``--user``, ``--sys-prefix``,
  ``--prefix P``).
"""
from __future__ import annotations

import contextlib
import io
import json
import os
import re
import sys
import tempfile
import time

from prompt_toolkit.completion import CompleteEvent
from prompt_toolkit.document import Document

from autodsl import __version__, backend
from autodsl.cli.complete import AutodslCompleter, call_context, describe_binding
from autodsl.cli.mimebundle import mimebundle
from autodsl.cli.repl import Repl, interrupted_message
from autodsl.core.display import format_value
from autodsl.core.tensor import PUBLIC_ATTRIBUTES, PUBLIC_METHODS, Tensor
from autodsl.errors import DSLError
from autodsl.lang.parser import KEYWORDS, is_incomplete
from autodsl.ops import REGISTRY
from autodsl.session import Session

__all__ = ["KERNEL_NAME", "LANGUAGE_INFO", "CellRunner", "KernelSession", "install", "kernel_class", "kernel_json", "main",
           "split_cell"]

KERNEL_NAME = "autodsl"
LANGUAGE_INFO = {
    "name": "autodsl",
    "version": __version__,
    "mimetype": "text/x-autodsl",
    "file_extension": ".ad",
    "pygments_lexer": "autodsl",        # cli/lexer.py, a Pygments plugin (pyproject's entry point)
}
BANNER = (f"autodsl {__version__}: differentiable expressions. Cells run in one session; "
          ":help lists the commands, Shift-Tab shows a built-in's documentation.")
QUIT_TEXT = (":quit leaves a console; a notebook keeps its session: restart the kernel to begin afresh, "
             "or :reset to forget the variables")
NEEDS_IPYKERNEL = 'the autodsl Jupyter kernel needs ipykernel and jupyter_client: pip install "autodsl[jupyter]"'

_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_KERNEL_NAME = re.compile(r"[A-Za-z0-9._-]+")       # what jupyter_client accepts as a kernel's name
_FLUSH_BYTES = 4096         # a stream sends what it holds past this size ...
_FLUSH_SECONDS = 0.2        # ... or when its oldest text is this old (a long loop's prints show as it runs)


class _Stream(io.TextIOBase):
    """A text stream sent as Jupyter ``stream`` messages, buffered, flushed before each
    result so that outputs keep the order the cell made them in."""

    def __init__(self, runner: CellRunner, name: str):
        self.runner, self.name = runner, name
        self.parts: list[str] = []
        self.size = 0
        self.since = 0.0            # when the oldest text it holds was written

    def writable(self) -> bool:
        return True

    def write(self, text) -> int:
        text = str(text)
        if text:
            now = time.monotonic()
            if not self.parts:
                self.since = now
            self.parts.append(text)
            self.size += len(text)
            if self.size > _FLUSH_BYTES or now - self.since > _FLUSH_SECONDS:
                self.flush()
        return len(text)

    def flush(self) -> None:
        if not self.parts:
            return
        text, self.parts, self.size = "".join(self.parts), [], 0
        self.runner.send("stream", {"name": self.name, "text": text})


def split_cell(code: str) -> list[tuple[str, int, str]]:
    """A cell as ``(kind, first line index, text)`` pieces in order: ``("command", i, ":vars")``
    for each line that starts with ``:`` where no statement is open, ``("code", i, text)``
    for the runs of lines between them."""
    pieces: list[tuple[str, int, str]] = []
    lines = code.split("\n")
    start, chunk = 0, []

    def close(i: int) -> None:
        if "\n".join(chunk).strip():
            pieces.append(("code", start, "\n".join(chunk)))

    for i, line in enumerate(lines):
        if line.lstrip().startswith(":") and not (chunk and is_incomplete("\n".join(chunk))):
            close(i)
            pieces.append(("command", i, line.strip()))
            start, chunk = i + 1, []
        else:
            chunk.append(line)
    close(len(lines))
    return pieces


class KernelSession(Session):
    """The kernel's Session: with ``trace(true)`` a backward's trace is shown as its table
    (rich display, through the ``echo`` callback's runner) instead of written to stdout, as
    the IPython extension shows it."""

    def _print_trace(self, text: str) -> None:
        shown = getattr(self.echo, "__self__", None)
        if not isinstance(shown, CellRunner) or self.last_trace is None:
            super()._print_trace(text)
            return
        shown.display(self.last_trace)


class CellRunner:
    """The kernel's logic without ZeroMQ; every output goes to ``send(msg_type, content)``
    (the kernel's iopub channel, or a list in tests)."""

    def __init__(self, send, session: Session | None = None):
        self.send_to = send
        self.silent = False
        self.count = 0
        self.stdout = _Stream(self, "stdout")
        self.stderr = _Stream(self, "stderr")
        if session is None:
            session = KernelSession()
        session.echo = self.show
        session.out = self.stdout
        self.repl = Repl(session, out=self.stdout)
        self.completer = AutodslCompleter(lambda: self.repl.session, lambda: self.repl.commands,
                                          registry=REGISTRY)

    @property
    def session(self) -> Session:
        return self.repl.session        # :reset replaces it

    def send(self, msg_type: str, content: dict) -> None:
        if not self.silent:
            self.send_to(msg_type, content)

    def flush(self) -> None:
        self.stdout.flush()
        self.stderr.flush()

    # -- execute ---------------------------------------------------------------------
    def show(self, value) -> None:
        """A bare expression's value: an ``execute_result`` with its rich display."""
        self.flush()
        data, metadata = mimebundle(value)
        self.send("execute_result", {"execution_count": self.count, "data": data, "metadata": metadata})

    def display(self, value) -> None:
        """A value shown as it comes, not as the cell's result (a traced backward's table)."""
        self.flush()
        data, metadata = mimebundle(value)
        self.send("display_data", {"data": data, "metadata": metadata, "transient": {}})

    def execute(self, code: str, count: int, silent: bool = False) -> dict:
        """Run one cell as execution ``count``; the ``execute_reply`` content."""
        self.count, self.silent = count, silent
        repl = self.repl
        repl.inputs = max(count, 1)         # positions read `<input 3>` for cell [3]
        try:
            with contextlib.redirect_stdout(self.stdout), contextlib.redirect_stderr(self.stderr):
                for kind, first, text in split_cell(code):
                    if repl.done:       # (:quit ends the cell, as it ends the REPL)
                        break
                    with repl.session.context():    # errors take the language's positions
                        if kind == "command":
                            repl.command(text)
                        else:
                            # blank lines before it, so that positions are the cell's lines
                            repl.run_source("\n" * first + text)
                            repl.accepted.append(text.strip("\n"))
                if repl.done:
                    print(QUIT_TEXT)
        except DSLError as e:
            return self._error(type(e).__name__.rstrip("_"), e.message, e.render())
        except KeyboardInterrupt as stop:
            kept = getattr(stop, "kept", None)
            text = "interrupted" if kept is None else interrupted_message(kept)
            return self._error("KeyboardInterrupt", text, text)
        except RecursionError:
            text = "internal error: nesting too deep; the session goes on"
            return self._error("RecursionError", text, text)
        except Exception as e:  # noqa: BLE001 - the kernel survives internal faults, as the REPL
            msg = str(e).splitlines()[0] if str(e) else ""
            text = f"internal error ({type(e).__name__}: {msg}); the session goes on"
            return self._error(type(e).__name__, text, text)
        finally:
            self.flush()
            self.silent = False
        payload = []
        if repl.done:       # as IPython's kernel answers `exit`: jupyter console leaves, a notebook stays
            repl.done = False
            payload.append({"source": "ask_exit", "keepkernel": False})
        return {"status": "ok", "execution_count": count, "payload": payload, "user_expressions": {}}

    def _error(self, ename: str, evalue: str, text: str) -> dict:
        self.flush()
        content = {"ename": ename, "evalue": evalue, "traceback": text.split("\n")}
        self.send("error", content)
        return {"status": "error", "execution_count": self.count, **content}

    def is_complete(self, code: str) -> dict:
        """``is_complete_reply``: "incomplete" (with an indent) while a statement is open."""
        pieces = split_cell(code)
        if not pieces or pieces[-1][0] == "command":
            return {"status": "complete"}
        try:
            open_ = is_incomplete(pieces[-1][2])        # the code after the last `:` line
        except Exception:  # noqa: BLE001
            return {"status": "unknown"}
        return {"status": "incomplete", "indent": "    "} if open_ else {"status": "complete"}

    # -- complete ----------------------------------------------------------------------
    def complete(self, code: str, cursor_pos: int) -> dict:
        """``complete_reply``: the REPL's completions at ``cursor_pos`` (a ``:`` command on the
        cursor's line is completed as the REPL completes it)."""
        cursor_pos = max(0, min(len(code), cursor_pos))
        before = code[:cursor_pos]
        line = before[before.rfind("\n") + 1:]
        text = line if line.lstrip().startswith(":") else before
        found = list(self.completer.get_completions(Document(text, len(text)),
                                                    CompleteEvent(completion_requested=True)))
        start = cursor_pos + min((c.start_position for c in found), default=0)
        start = max(0, start)
        matches, types = [], []
        for c in found:
            match = code[start:cursor_pos + c.start_position] + c.text
            if match in matches:
                continue
            matches.append(match)
            meta = c.display_meta_text
            types.append({"start": start, "end": cursor_pos, "text": match,
                          "type": _completion_type(meta), "signature": meta})
        return {"status": "ok", "matches": matches, "cursor_start": start, "cursor_end": cursor_pos,
                "metadata": {"_jupyter_types_experimental": types}}

    # -- inspect -------------------------------------------------------------------------
    def inspect(self, code: str, cursor_pos: int, detail_level: int = 0) -> dict:
        """``inspect_reply``: the ``:help`` text of the built-in, method, keyword or command at
        the cursor (or of the call the cursor is in), or what a variable holds."""
        pos = max(0, min(len(code), cursor_pos))
        name, method = _name_at(code, pos)
        # on a literal (true, none) or a name without help, inside a call: the call's doc
        text = None if name in ("true", "false", "none") else self.help_text(name, method)
        if text is None:
            callee, obj, _ = call_context(code[:pos])
            text = self.help_text(callee, obj is not None) if callee else self.help_text(name, method)
        if text is None:
            return {"status": "ok", "found": False, "data": {}, "metadata": {}}
        return {"status": "ok", "found": True, "data": {"text/plain": text}, "metadata": {}}

    def help_text(self, name: str | None, method: bool = False) -> str | None:
        if not name:
            return None
        session = self.session
        builtins = session.builtins
        if method:
            return self._help(f"x.{name}") if name in PUBLIC_METHODS or name in PUBLIC_ATTRIBUTES else None
        if name.startswith(":"):
            full = next((c for c in self.repl.commands if c == name), None)
            return self._help(full) if full else None
        if name in session.namespace and name not in builtins:
            value = session.namespace[name]
            head = f"{name}: {describe_binding(value)}"
            if not isinstance(value, Tensor):
                return head
            if not backend.on_host(value._data):
                # (inspection comes as the cursor moves: reading a lazy or GPU tensor's values
                # would compute its graph or wait for the GPU each time)
                return f"{head} on {value.device}; print({name}) to see its values"
            return f"{head}\n{format_value(value)}"
        if name in builtins or name in KEYWORDS:
            return self._help(name)
        return None

    def _help(self, arg: str) -> str:
        """What ``:help arg`` prints."""
        repl, buf = self.repl, io.StringIO()
        out, repl.out = repl.out, buf
        try:
            with repl.session.context():
                repl.cmd_help(arg)
        finally:
            repl.out = out
        return buf.getvalue().rstrip("\n")


def _completion_type(meta: str) -> str:
    if meta == "keyword":
        return "keyword"
    if meta == "keyword argument":
        return "param"
    if meta == "attribute":
        return "property"
    if meta.startswith(("tensor ", "def ")):
        return "instance"
    return "function" if meta else "text"


def _name_at(code: str, pos: int) -> tuple[str | None, bool]:
    """(the name under or just before the cursor, is it a method after `.`?); a command at
    the start of the cursor's line; else the callee of the call the cursor is inside."""
    line_start = code.rfind("\n", 0, pos) + 1
    line = code[line_start:code.find("\n", pos) if "\n" in code[pos:] else len(code)]
    if line.lstrip().startswith(":"):
        return line.split()[0], False
    for m in _IDENT.finditer(code):
        if m.start() <= pos <= m.end() and not m.group()[0].isdigit():
            dot = code[:m.start()].rstrip().endswith(".")
            return m.group(), dot
        if m.start() > pos:
            break
    callee, obj, _ = call_context(code[:pos])
    return callee, obj is not None


# ---- the ipykernel side -------------------------------------------------------------------

def kernel_class():
    """ipykernel's ``Kernel`` subclass around a ``CellRunner`` (ImportError without ipykernel)."""
    from ipykernel.kernelbase import Kernel

    class AutodslKernel(Kernel):
        """The autodsl kernel: one Session per notebook; see ``autodsl.cli.kernel``."""

        implementation = "autodsl"
        implementation_version = __version__
        language = "autodsl"
        language_version = __version__
        language_info = LANGUAGE_INFO
        banner = BANNER

        def __init__(self, **kwargs):
            super().__init__(**kwargs)
            self.runner = CellRunner(self._publish)

        @property
        def kernel_info(self):
            # ipykernel offers its debugger whenever debugpy is installed; it debugs Python,
            # which a cell here is not
            info = dict(super().kernel_info)
            info["supported_features"] = [f for f in info.get("supported_features", []) if f != "debugger"]
            return info

        def _publish(self, msg_type: str, content: dict) -> None:
            self.send_response(self.iopub_socket, msg_type, content)

        async def do_execute(self, code, silent, store_history=True, user_expressions=None,
                             allow_stdin=False):
            return self.runner.execute(code, self.execution_count, silent=silent)

        async def do_complete(self, code, cursor_pos):
            return self.runner.complete(code, len(code) if cursor_pos is None else cursor_pos)

        async def do_inspect(self, code, cursor_pos, detail_level=0, omit_sections=()):
            return self.runner.inspect(code, len(code) if cursor_pos is None else cursor_pos, detail_level)

        async def do_is_complete(self, code):
            return self.runner.is_complete(code)

    return AutodslKernel


def kernel_json(executable: str | None = None) -> dict:
    """The kernelspec's ``kernel.json``: this Python runs ``-m autodsl.kernel``."""
    return {"argv": [executable or sys.executable, "-m", "autodsl.kernel", "-f", "{connection_file}"],
            "display_name": "autodsl", "language": "autodsl", "metadata": {"debugger": False}}


def install(user: bool = False, prefix: str | None = None, name: str = KERNEL_NAME,
            display_name: str | None = None) -> str:
    """Register the kernelspec (jupyter_client's ``install_kernel_spec``, as ipykernel's own
    installer): system-wide by default, ``user=True`` for this user, ``prefix`` for an
    environment (``sys.prefix`` for ``--sys-prefix``); the folder it went to."""
    from jupyter_client.kernelspec import KernelSpecManager

    spec = kernel_json()
    if display_name:
        spec["display_name"] = display_name
    with tempfile.TemporaryDirectory() as tmp:
        # the copy keeps its source folder's mode, and a temporary folder's is 0700: a folder
        # of the umask's mode, as ipykernel's installer stages, lets other users find the kernel
        source = os.path.join(tmp, "kernelspec")
        os.mkdir(source)
        with open(os.path.join(source, "kernel.json"), "w", encoding="utf-8") as f:
            json.dump(spec, f, indent=1)
        return KernelSpecManager().install_kernel_spec(source, name, user=user, prefix=prefix)


USAGE = """\
usage: python -m autodsl.kernel [-f CONNECTION_FILE]     start the kernel (Jupyter does this)
       python -m autodsl.kernel install [--user | --sys-prefix | --prefix PREFIX] [--name NAME]
                                        [--display-name TEXT]
                                                          register the kernelspec"""


def main(argv: list[str] | None = None) -> int:
    """``python -m autodsl.kernel``: launch the kernel, or ``install`` its kernelspec."""
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv and argv[0] in ("-h", "--help", "help"):
        print(USAGE)
        return 0
    if argv and argv[0] == "install":
        return _install_command(argv[1:])
    try:
        from ipykernel.kernelapp import IPKernelApp
        cls = kernel_class()
    except ImportError:
        print(NEEDS_IPYKERNEL, file=sys.stderr)
        return 1
    IPKernelApp.launch_instance(argv=argv, kernel_class=cls)
    return 0


def _install_command(args: list[str]) -> int:
    user, prefix, name, display = False, None, KERNEL_NAME, None
    it = iter(args)
    for a in it:
        a, eq, given = a.partition("=")       # --name=NAME, as ipykernel's installer takes it
        if a in ("--user", "--sys-prefix") and not eq:
            user, prefix = (True, prefix) if a == "--user" else (user, sys.prefix)
        elif a in ("--prefix", "--name", "--display-name"):
            value = given if eq else next(it, None)
            if not value:
                print(f"{a} needs a value\n{USAGE}", file=sys.stderr)
                return 2
            if a == "--prefix":
                prefix = value
            elif a == "--name":
                name = value
            else:
                display = value
        else:
            print(f"unknown option {a}{eq}{given}\n{USAGE}", file=sys.stderr)
            return 2
    if user and prefix is not None:
        print("--user and --sys-prefix/--prefix exclude each other", file=sys.stderr)
        return 2
    if not _KERNEL_NAME.fullmatch(name):
        print(f"--name {name!r}: a kernel's name holds only ASCII letters, digits, `-`, `.` and `_` "
              f"(such as autodsl-2)", file=sys.stderr)
        return 2
    try:
        where = install(user=user, prefix=prefix, name=name, display_name=display)
    except ImportError:
        print(NEEDS_IPYKERNEL, file=sys.stderr)
        return 1
    except OSError as e:
        print(f"cannot install the kernelspec: {e.strerror or e}; try --user or --sys-prefix",
              file=sys.stderr)
        return 1
    print(f"installed kernelspec {name} in {where}")
    return 0
