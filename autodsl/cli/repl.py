"""The interactive prompt: prompt-toolkit for input, ``Session`` for everything else.

Two halves, so that the logic is testable without a terminal:

- ``Repl`` runs one accepted input (``handle(text)``): a ``:`` command from
  the table ``COMMANDS`` (each also by an unambiguous prefix, as in GHCi) or
  source for ``Session.run``. It never raises: a DSLError is printed with its
  caret, an internal fault is one line, and Ctrl-C during a statement rolls
  back, so variables and every ``.grad`` are as they were before that input
  (and every other change it made: see ``core/journal.py``; files it wrote
  are named, as they stay).
- ``main`` runs the loop on one ``PromptSession`` (``cli/prompt.py``: history,
  completion, highlighting, the signature bar, Enter that runs complete input
  and opens a continuation line otherwise). A syntax error is printed as any
  error is, and the next prompt is a fresh one.

Help text and its pager live in ``cli/help.py``.

The REPL adds no semantics: ``:info x`` is ``info(x)``, ``:graph x`` is
``graph(x)``, and so on.
"""
from __future__ import annotations

import os
import sys
import time
import warnings
from contextlib import nullcontext

from autodsl import __version__, backend
from autodsl.cli.complete import describe_binding
from autodsl.cli.help import (
    SYNTAX_WORDS,
    TOPICS,
    builtin_help,
    builtins_screen,
    first_screen,
    page,
    user_function_help,
)
from autodsl.cli.progress import ClearingWriter, ProgressLine
from autodsl.cli.prompt import SourceValidator, build_prompt_session, history_path
from autodsl.core.tensor import PUBLIC_METHODS, Tensor
from autodsl.errors import DSLError, ValueError_
from autodsl.lang.attribute_help import attribute_help
from autodsl.lang.interpreter import UserFunction
from autodsl.lang.parser import KEYWORDS
from autodsl.lang.values import suggest
from autodsl.names import names_by_id
from autodsl.session import PREDEFINED, _predefined
from autodsl.source import SOURCE_POS
from autodsl.tools.check import check
from autodsl.tools.compiled import CompiledFunction
from autodsl.tools.explain import explain
from autodsl.tools.graph import dot, graph
from autodsl.tools.info import info
from autodsl.tools.step import step
from autodsl.tools.why import why

__all__ = ["Repl", "SourceValidator", "build_prompt_session", "history_path", "main"]

BANNER = ("autodsl {version}: differentiable expressions. Try:\n"
          "  x = tensor(2.0, requires_grad=true); y = x^3; y.backward(); x.grad\n"
          "Tab completes, Ctrl-R searches history, :help shows the help topics, :quit or Ctrl-D leaves.")

INTERRUPTED = "interrupted: variables and gradients are as they were before this input"


def interrupted_message(files=()) -> str:
    """What the REPL says after Ctrl-C rolled an input back: everything is undone (the undo
    journal, core/journal.py), except the files the input wrote, named here."""
    if not files:
        return INTERRUPTED
    return f"{INTERRUPTED}; the files it wrote stay: {', '.join(files)}"

def _quote(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


class Repl:
    """The REPL's logic without a terminal: ``handle(text)`` runs one accepted input."""

    def __init__(self, session, out=None, progress=None):
        self.session = session
        self.out = out
        self.progress = progress          # a progress.ProgressLine when stderr is a terminal
        self.accepted: list[str] = []     # what :save writes
        self.inputs = 0                   # inputs so far, commands included: the third is `<input 3>`
        self.done = False
        self.commands = {
            ":help": self.cmd_help, ":vars": self.cmd_vars, ":info": self.cmd_info,
            ":trace": self.cmd_trace, ":graph": self.cmd_graph, ":dot": self.cmd_dot,
            ":check": self.cmd_check, ":load": self.cmd_load, ":save": self.cmd_save, ":reset": self.cmd_reset,
            ":device": self.cmd_device, ":dtype": self.cmd_dtype, ":time": self.cmd_time,
            ":explain": self.cmd_explain, ":step": self.cmd_step, ":next": self.cmd_next, ":continue": self.cmd_continue,
            ":abort": self.cmd_abort,
            ":why": self.cmd_why, ":anomaly": self.cmd_anomaly, ":program": self.cmd_program,
            ":quit": self.cmd_quit,
        }
        self.stepper = None               # the backward being stepped by :step, if any

    # -- output --------------------------------------------------------------------
    def write(self, text: str) -> None:
        out = self.out if self.out is not None else sys.stdout
        out.write(text + "\n")
        out.flush()

    # -- one input -------------------------------------------------------------------
    def handle(self, text: str) -> None:
        """Run one input: a ``:`` command or source. Never raises; ``self.done`` after :quit."""
        stripped = text.strip()
        if not stripped:
            return
        self.inputs += 1
        try:
            with self.session.context():    # the REPL is the language: errors take its positions
                if stripped.startswith(":"):
                    self.command(stripped)
                else:
                    self.run_source(text)
                    self.accepted.append(text.strip("\n"))
        except DSLError as e:
            self.write(e.render())
        except KeyboardInterrupt as stop:
            # rolled back only when it landed inside an input's transaction (run_source marks it);
            # elsewhere (a command, the parse, after the input finished) nothing was undone
            kept = getattr(stop, "kept", None)
            self.write("interrupted" if kept is None else interrupted_message(kept))
        except RecursionError:
            self.write("internal error: nesting too deep; the session goes on")
        except Exception as e:  # noqa: BLE001 - the loop survives internal faults
            msg = str(e).splitlines()[0] if str(e) else ""
            self.write(f"internal error ({type(e).__name__}: {msg}); the session goes on")

    @property
    def input_name(self) -> str:
        """The source name of the input being run: ``<input 3>`` for the third (errors, positions)."""
        return f"<input {self.inputs or 1}>"

    def run_source(self, text: str, filename: str | None = None):
        """``session.run(text)``; on Ctrl-C undo everything the input changed (core/journal.py):
        bindings, tensors, .grad, flags, hooks, lists, settings and random generators.

        ``filename``: the source name in positions (default: this input's, ``<input 3>``).
        A DSLError keeps the script semantics (bindings made before the failing
        statement stay); only an interrupt rolls the whole input back.
        """
        session = self.session
        program = session.parse(text, filename or self.input_name)       # a syntax error runs nothing
        running = self.progress.running() if self.progress is not None else nullcontext()
        with running:
            return session.run_input(program)

    def value_of(self, expr: str):
        """The value of an expression typed after a command (the built-ins it then goes to are
        called directly, so a variable named `graph` or `dot` does not get in the way)."""
        session = self.session
        echo = session.echo
        session.echo = False
        try:
            program = session.parse(expr, self.input_name)
            if len(program.body) != 1 or type(program.body[0]).__name__ != "ExprStmt":
                raise ValueError_(f"expected one expression, such as a variable name, not {expr!r}")
            return self.run_source(expr)
        finally:
            session.echo = echo

    # -- commands ----------------------------------------------------------------------
    def resolve(self, name: str) -> str | None:
        """The command ``name`` stands for (exactly, or as an unambiguous prefix); None with a message."""
        if name in self.commands:
            return name
        # :reset throws the session away: it needs at least ":res" (GHCi's :r means reload)
        matches = [c for c in self.commands if c.startswith(name) and len(name) >= _MIN_PREFIX.get(c, 2)]
        if len(matches) == 1:
            return matches[0]
        if matches:
            self.write(f"{name} is ambiguous: {', '.join(sorted(matches))}")
        else:
            self.write(f"{name} is not a command; :help lists them")
        return None

    def command(self, text: str) -> None:
        name, _, arg = text.partition(" ")
        full = self.resolve(name)
        if full is not None:
            # what a command starts (the backward of :step) is "at" the command, not at a Python frame
            token = SOURCE_POS.set((self.input_name, 1, 1, text))
            try:
                self.commands[full](arg.strip())
            except DSLError as e:
                # a value the command cannot take (:graph 5, :step w of a vector) is shown as
                # every error is: at the command's argument, with the line and a caret run
                rest = text[len(name):]
                col = len(name) + len(rest) - len(rest.lstrip()) + 1 if arg.strip() else 1
                raise e.with_position(file=self.input_name, line=1, column=col, source_line=text,
                                      end_column=len(text) + 1 if arg.strip() else len(name) + 1)
            finally:
                SOURCE_POS.reset(token)

    def usage(self, name: str) -> str:
        return (self.commands[name].__doc__ or name).strip().splitlines()[0]

    def cmd_help(self, arg: str) -> None:
        """:help [name]  topics and commands, or a built-in's doc, a command's use, a topic"""
        builtins = self.session.builtins
        if not arg:
            self.write(first_screen(self.commands))
        elif arg in TOPICS:
            self.write(TOPICS[arg])
        elif arg in KEYWORDS or arg in SYNTAX_WORDS:      # :help while, :help %: no built-in of that name
            self.write(f"`{arg}` is part of the language, not a built-in; its summary (:help language):\n"
                       + TOPICS["language"])
        elif arg == "commands":
            self.page("\n".join(self.usage(c) for c in self.commands))
        elif arg in ("builtins", "built-ins"):
            self.page(builtins_screen(builtins))
        elif arg.startswith(":"):
            full = self.resolve(arg)
            if full is not None:
                self.write(self.usage(full))
        elif isinstance(self.session.namespace.get(arg), UserFunction):    # yours shadows a built-in
            self.write(user_function_help(arg, self.session.namespace[arg]))
        else:
            fn = builtins.get(arg)
            method = arg[2:] if arg.startswith("x.") else arg.lstrip(".")
            if fn is None and method in PUBLIC_METHODS:     # :help register_hook, :help x.backward
                self.page(builtin_help("x." + method, getattr(Tensor, method), method=True))
            elif fn is None and attribute_help(method) is not None:       # :help x.grad, :help shape
                self.write(attribute_help(method))
            elif fn is None:
                topics = list(TOPICS) + ["commands", "builtins"]
                self.write(f"no built-in or topic named {arg!r}{suggest(arg, list(builtins) + topics)}; "
                           ":help lists the topics")
            else:
                self.page(builtin_help(arg, fn))

    def page(self, text: str) -> None:
        """Long help through a pager on a terminal (cli/help.py), written as it is otherwise."""
        page(text, self.write, self.out)

    def cmd_vars(self, arg: str) -> None:
        """:vars  your variables: name, shape, dtype, device, requires_grad, is_leaf, grad_fn, grad"""
        rows, others = [], []
        for name, value in self.user_bindings().items():
            if isinstance(value, Tensor):
                gf = value.grad_fn
                rows.append([name, "(" + ", ".join(map(str, value.shape)) + ("," if len(value.shape) == 1 else "") + ")",
                             value.dtype.name, str(value.device), _b(value.requires_grad), _b(value.is_leaf),
                             getattr(gf, "name", None) or "-",
                             "set" if getattr(value, "_grad", None) is not None else "-"])
            else:
                others.append(f"{name} ({describe_binding(value)})")
        if not rows and not others:
            self.write("no variables yet")
            return
        if rows:
            head = ["name", "shape", "dtype", "device", "requires_grad", "is_leaf", "grad_fn", "grad"]
            self.write("\n".join(_table(head, rows)))
        if others:
            self.write("other variables: " + ", ".join(others))

    def user_bindings(self) -> dict:
        """The session's bindings less the untouched predefined names (inf, nan, pi, dtypes)."""
        fresh = _predefined()
        return {k: v for k, v in self.session.namespace.items()
                if not (k in PREDEFINED and v is fresh.get(k))}

    def cmd_info(self, arg: str) -> None:
        """:info x  shape, dtype, device, requires_grad, is_leaf, grad_fn, retains_grad, grad, version"""
        if not arg:
            self.write("usage: " + self.usage(":info"))
            return
        self.write(str(info(self.value_of(arg))))

    def cmd_trace(self, arg: str) -> None:
        """:trace on|off|last  print each backward step by step, or show the last one"""
        if arg in ("on", "off"):
            self.session.trace = arg == "on"
            self.accepted.append(f"trace({'true' if arg == 'on' else 'false'})")
            self.write(f"trace {arg}")
        elif arg in ("", "last"):
            tr = self.session.last_trace
            self.write(str(tr).rstrip("\n") if tr is not None else "no backward has been traced yet (:trace on)")
        else:
            self.write("usage: " + self.usage(":trace"))

    def cmd_graph(self, arg: str) -> None:
        """:graph x  the graph x depends on, as a text tree"""
        if not arg:
            self.write("usage: " + self.usage(":graph"))
            return
        self.write(str(graph(self.value_of(arg), names=self.session.namespace)))

    def cmd_dot(self, arg: str) -> None:
        """:dot x [file.dot|.svg|.png]  the graph of x in Graphviz DOT (printed, or written to the file)"""
        expr, _, path = arg.rpartition(" ") if _looks_like_path(arg) else (arg, "", "")
        expr = expr.strip()
        if not expr:
            self.write("usage: " + self.usage(":dot"))
            return
        value = self.value_of(expr)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            result = dot(value, path or None, names=self.session.namespace)
        for w in caught:
            self.write(f"warning: {w.message}")
        self.write(result)

    def cmd_check(self, arg: str) -> None:
        """:check f w1 b  f's gradient by backward vs central differences, element by element"""
        parts = arg.split()
        if len(parts) < 2:
            self.write("usage: " + self.usage(":check") + "  (f: a tensor computed from w1 and b, or a "
                       "function: def f() or def f(w1, b))")
            return
        fn, inputs = self.value_of(parts[0]), [self.value_of(p) for p in parts[1:]]
        s = self.session
        with s.context(), backend.defaults(device=s.device, dtype=s.dtype or backend.get_default_dtype()), \
                warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            result = check(fn, inputs, names=parts[1:])
        for w in caught:
            self.write(f"warning: {w.message}")
        self.write(str(result))

    def cmd_explain(self, arg: str) -> None:
        """:explain f x  the chain rule for df/dx written out, one line per path"""
        parts = arg.rsplit(None, 1)       # f may be an expression with spaces: `:explain (y * 2).sum() w`
        if len(parts) == 2 and len(parts[0].split()) > 1 and not _parses(self.session, parts[0]):
            parts = []
        if len(parts) != 2:
            self.write("usage: " + self.usage(":explain") + "  (f and x: variable names; explain(f, x, "
                       "element=[0, 1]) for one element)")
            return
        f, x = self.value_of(parts[0]), self.value_of(parts[1])
        with self.session.context():
            self.write(str(explain(f, x)))

    def cmd_program(self, arg: str) -> None:
        """:program f  the array operations a compiled function replays (f = compile(step))"""
        if not arg:
            self.write("usage: " + self.usage(":program"))
            return
        value = self.value_of(arg)
        program = getattr(value, "program", None) if isinstance(value, CompiledFunction) else None
        if not isinstance(value, CompiledFunction):
            self.write(f"{arg} is not a compiled function; make one with {arg}_c = compile({arg})")
        elif program is None:
            self.write(f"{arg} has not been called yet: its first call captures the program")
        else:
            with self.session.context():
                self.write(program.listing(names_by_id(self.session.namespace)))
            if value.eager_reason:
                self.write(f"(calls run eagerly now: {value.eager_reason})")

    def cmd_why(self, arg: str) -> None:
        """:why x  why x.grad is none, zero or nan after the last backward"""
        if not arg:
            self.write("usage: " + self.usage(":why"))
            return
        value = self.value_of(arg)
        with self.session.context():
            self.write(str(why(value, names=self.session.namespace)))

    def cmd_anomaly(self, arg: str) -> None:
        """:anomaly on|off|raise  report the op that first makes a nan or inf (warn, or raise an error)"""
        modes = {"on": "warn", "warn": "warn", "raise": "raise", "off": None}
        if arg not in modes and arg:
            self.write("usage: " + self.usage(":anomaly"))
            return
        if arg:
            self.session.anomaly = modes[arg]
            mode = modes[arg]
            self.accepted.append("anomaly(false)" if mode is None else
                                 "anomaly(true)" if mode == "warn" else 'anomaly(true, mode="raise")')
        mode = self.session.anomaly
        self.write("anomaly " + ("off" if mode is None else "on (warn once per site)" if mode == "warn"
                                 else "on (raise an error)"))

    def cmd_step(self, arg: str) -> None:
        """:step y  run y.backward() one node at a time: :next [n], :continue, :abort"""
        if not arg:
            self.write("usage: " + self.usage(":step"))
            return
        value = self.value_of(arg)
        with self.session.context():
            new = step(value)           # a bad :step leaves the one being stepped as it is
        new.hint = new.REPL_HINT
        new.saved_as = (arg if arg.isidentifier() else f"({arg})") + ".backward()"    # for :save
        if self.stepper is not None and not self.stepper.done:
            self.write(self.stepper.abort() + " (a new :step begins)")
        self.stepper = new
        self.write(str(self.stepper))

    def _stepping(self, command: str):
        if self.stepper is None or self.stepper.done:
            self.write(f"{command}: no backward is being stepped; start one with :step y")
            return None
        return self.stepper

    def cmd_next(self, arg: str) -> None:
        """:next [n]  run the next node (or n nodes) of the backward started by :step"""
        st = self._stepping(":next")
        if st is None:
            return
        try:
            n = int(arg) if arg else 1
        except ValueError:
            n = 0
        if n < 1:
            self.write("usage: " + self.usage(":next") + "  (n: a whole number of nodes, at least 1)")
            return
        with self.session.context():
            self.write(st.next(n))
        self._note_stepped(st)

    def cmd_continue(self, arg: str) -> None:
        """:continue  run the rest of the backward started by :step (then .grad is written)"""
        st = self._stepping(":continue")
        if st is not None:
            with self.session.context():
                self.write(st.finish())
            self._note_stepped(st)

    def _note_stepped(self, st) -> None:
        """A stepped backward that ran to its end wrote .grad: :save writes it as the backward() it was."""
        if st.done and not st.aborted:
            self.accepted.append(st.saved_as)

    def cmd_abort(self, arg: str) -> None:
        """:abort  drop the backward started by :step; every .grad stays as it was"""
        st = self._stepping(":abort")
        if st is not None:
            self.write(st.abort())

    def cmd_load(self, arg: str) -> None:
        """:load file.ad  run a script in this session"""
        if not arg:
            self.write("usage: " + self.usage(":load"))
            return
        if not self.session.files:
            self.write(f":load: {NO_FILES}")
            return
        path = os.path.expanduser(arg)
        try:
            with open(path, encoding="utf-8") as f:
                text = f.read()
        except (OSError, UnicodeDecodeError) as e:
            reason = getattr(e, "strerror", None) or type(e).__name__
            self.write(f"cannot read {arg}: {reason}")
            return
        self.run_source(text, filename=arg)
        self.accepted.append(f"# :load {arg}\n{text.rstrip()}")

    def cmd_save(self, arg: str) -> None:
        """:save file.ad  write this session's inputs (those that ran without error) as a script"""
        if not arg:
            self.write("usage: " + self.usage(":save"))
            return
        if not self.session.files:
            self.write(f":save: {NO_FILES}")
            return
        body = "\n".join(self.accepted)
        text = "# autodsl session, saved by :save\n" + (body + "\n" if body else "")
        try:
            with open(os.path.expanduser(arg), "w", encoding="utf-8") as f:
                f.write(text)
        except OSError as e:
            self.write(f"cannot write {arg}: {e.strerror or e}")
            return
        n = len(self.accepted)
        self.write(f"saved {n} input{'s' if n != 1 else ''} to {arg}")

    def cmd_reset(self, arg: str) -> None:
        """:reset  forget every variable (device, dtype, trace settings and limits stay)"""
        if self.stepper is not None and not self.stepper.done:
            self.write(self.stepper.abort())          # the variables it would write to are forgotten
        self.stepper = None
        s = self.session
        # the old session's cluster goes with it; the new one starts its own on first compute
        sched = s.scheduler
        s.close()
        # the limits and the files permission stay too (a session without file access must not
        # get it back by :reset); only the variables go
        self.session = type(s)(device=s.device, dtype=s.dtype, trace=s.trace, echo=s.echo, out=s.out,
                               anomaly=s.anomaly, scheduler=sched.spec, workers=sched.n_workers,
                               files=s.files, base_dir=s.base_dir, time_limit=s.time_limit,
                               memory_limit=s.memory_limit, step_limit=s.step_limit,
                               source_limit=s.source_limit)
        self.accepted = [line for line in self._settings_script()]
        self.write("session reset")

    def _settings_script(self) -> list[str]:
        lines = []
        if self.session.dtype is not None:
            lines.append(f"set_default_dtype({_dtype_name(self.session.dtype)})")
        if self.session.trace:
            lines.append("trace(true)")
        if self.session.anomaly:
            lines.append("anomaly(true)" if self.session.anomaly == "warn" else 'anomaly(true, mode="raise")')
        return lines

    def cmd_device(self, arg: str) -> None:
        """:device cpu|cuda|dask  where new tensors go"""
        if not arg:
            self.write(f"device {self.session.device}")
            return
        self.session.device = backend.check_device(arg)    # DeviceError says how to get CuPy
        if self.session.device != "cpu":
            self.accepted.append(f"# run with --device {self.session.device}")
        self.write(f"device {self.session.device}")

    def cmd_dtype(self, arg: str) -> None:
        """:dtype float32|float64  the default floating dtype of new tensors"""
        if not arg:
            current = self.session.dtype or backend.get_default_dtype()
            self.write(f"dtype {_dtype_name(current)}")
            return
        with backend.defaults(dtype=arg):     # validates: floating dtypes only
            pass
        name = _dtype_name(backend.as_dtype(arg))
        self.session.dtype = name
        self.accepted.append(f"set_default_dtype({name})")
        self.write(f"dtype {name}")

    def cmd_time(self, arg: str) -> None:
        """:time statement  run it and report how long it took"""
        if not arg:
            self.write("usage: " + self.usage(":time"))
            return
        start = time.perf_counter()
        self.run_source(arg)          # an error or Ctrl-C is reported instead of a time
        self.write(f"time: {_seconds(time.perf_counter() - start)}")
        self.accepted.append(arg)

    def cmd_quit(self, arg: str) -> None:
        """:quit  leave (Ctrl-D does too)"""
        self.done = True


# ---- small helpers ---------------------------------------------------------------------
_MIN_PREFIX = {":reset": 4}
# (as the built-ins load, save, include and dot refuse files in such a session: tools/io.py)
NO_FILES = "this session may not read or write files (Session(files=False))"


def _b(v: bool) -> str:
    return "true" if v else "false"


def _dtype_name(d) -> str:
    return getattr(d, "name", None) or str(d)


def _seconds(s: float) -> str:
    if s < 1e-3:
        return f"{s * 1e6:.0f} µs"
    if s < 1:
        return f"{s * 1e3:.1f} ms"
    return f"{s:.2f} s"


def _parses(session, text: str) -> bool:
    """Whether ``text`` is one expression (for commands whose first argument may contain spaces)."""
    try:
        body = session.parse(text, "<input>").body
    except DSLError:
        return False
    return len(body) == 1 and type(body[0]).__name__ == "ExprStmt"


def _looks_like_path(arg: str) -> bool:
    last = arg.rsplit(" ", 1)[-1] if " " in arg.strip() else ""
    return last.lower().endswith((".dot", ".gv", ".svg", ".png", ".pdf"))


def _table(head: list[str], rows: list[list[str]]) -> list[str]:
    widths = [max(len(r[i]) for r in [head] + rows) for i in range(len(head))]

    def fmt(r):
        return "  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip()
    return [fmt(head)] + [fmt(r) for r in rows]


def main(session, history: bool = True, input=None, output=None, out=None) -> int:
    """Run the interactive loop until :quit or Ctrl-D; returns the exit status (0).

    ``history=False`` (``--no-history`` or ``AUTODSL_NO_HISTORY=1``) keeps the
    history in memory only. ``input``/``output`` are prompt-toolkit's, for tests.
    """

    if os.environ.get("AUTODSL_NO_HISTORY"):
        history = False
    progress = None
    if input is None and _isatty(sys.stderr):
        progress = ProgressLine()
        session.out = ClearingWriter(progress, session.out)
    repl = Repl(session, out=out, progress=progress)
    color = not os.environ.get("NO_COLOR")
    prompt = build_prompt_session(repl, history=history, input=input, output=output, color=color)
    repl.write(BANNER.format(version=__version__))
    while not repl.done:
        try:
            text = prompt.prompt(">>> ")
        except KeyboardInterrupt:      # Ctrl-C while editing: drop the line
            continue
        except EOFError:               # Ctrl-D
            break
        except Exception as e:  # noqa: BLE001 - a fault of the prompt itself: report, go on
            repl.write(f"internal error in the prompt ({type(e).__name__}: {e}); the session goes on")
            continue
        try:
            repl.handle(text)
        except KeyboardInterrupt:      # Ctrl-C landing between inputs: nothing to undo
            repl.write("interrupted")
    return 0


def _isatty(stream) -> bool:
    try:
        return bool(stream.isatty())
    except Exception:  # noqa: BLE001
        return False
