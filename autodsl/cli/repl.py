"""The interactive prompt: prompt-toolkit for input, ``Session`` for everything else.

Two halves, so that the logic is testable without a terminal:

- ``Repl`` runs one accepted input (``handle(text)``): a ``:`` command from
  the table ``COMMANDS`` (each also by an unambiguous prefix, as in GHCi) or
  source for ``Session.run``. It never raises: a DSLError is printed with its
  caret, an internal fault is one line, and Ctrl-C during a statement rolls
  back, so variables and every ``.grad`` are as they were before that input
  (and every other change it made: see ``core/journal.py``; files it wrote
  are named, as they stay).
- ``main`` builds one ``PromptSession`` from small collaborators: persistent
  history (Ctrl-R searches it), the completer (``cli/complete.py``), the
  Pygments lexer (``lexer``), a validator that shows a syntax error at its
  column before anything runs, and key bindings where Enter runs the input
  when it parses as complete and opens a continuation line otherwise.

The REPL adds no semantics: ``:info x`` is ``info(x)``, ``:graph x`` is
``graph(x)``, and so on.
"""
from __future__ import annotations

import os
import sys
import time
import warnings
from contextlib import nullcontext
from pathlib import Path

from prompt_toolkit import PromptSession
from prompt_toolkit.auto_suggest import AutoSuggestFromHistory
from prompt_toolkit.enums import DEFAULT_BUFFER
from prompt_toolkit.filters import has_focus
from prompt_toolkit.history import FileHistory, InMemoryHistory
from prompt_toolkit.key_binding import KeyBindings
from prompt_toolkit.output import ColorDepth
from prompt_toolkit.validation import ValidationError, Validator

from autodsl.errors import DSLError, ValueError_
from autodsl.lang.values import param_text
from autodsl.lang.parser import KEYWORDS, is_incomplete
from autodsl.ops import REGISTRY
from autodsl.cli.complete import AutodslCompleter
from autodsl.cli.lexer import AutodslLexer
from autodsl import __version__
from autodsl.cli.progress import ClearingWriter, ProgressLine
from autodsl.core.journal import record_attrs, record_items, transaction
from autodsl.source import SOURCE_POS
from autodsl.core.tensor import PUBLIC_METHODS, Tensor
from autodsl.lang.values import suggest
from autodsl.cli.complete import describe_binding
from autodsl.session import PREDEFINED, _predefined
from autodsl.tools.info import info
from autodsl.tools.graph import graph
from autodsl.tools.graph import dot
import autodsl.backend as backend
from autodsl.tools.check import check
from autodsl.tools.explain import explain
from autodsl.tools.why import why
from autodsl.tools.compiled import CompiledFunction
from autodsl.names import names_by_id
from autodsl.tools.step import step
from autodsl.session import Session
from autodsl.lang.parser import parse

__all__ = ["main", "Repl", "history_path", "build_prompt_session", "SourceValidator"]

BANNER = ("autodsl {version}: differentiable expressions. Try:\n"
          "  x = tensor(2.0, requires_grad=true); y = x^3; y.backward(); x.grad\n"
          "Tab completes, Ctrl-R searches history, :help lists commands, :quit or Ctrl-D leaves.")

INTERRUPTED = "interrupted: variables and gradients are as they were before this input"


def interrupted_message(files=()) -> str:
    """What the REPL says after Ctrl-C rolled an input back: everything is undone (the undo
    journal, core/journal.py), except the files the input wrote, named here."""
    if not files:
        return INTERRUPTED
    return f"{INTERRUPTED}; the files it wrote stay: {', '.join(files)}"

TOPICS = {
    "language": """\
statements end at a newline or `;`; `#` starts a comment
  x = tensor([1.0, 2.0], requires_grad=true)   bind a name (never copies data)
  x[0] = 3;  x += 1                              in-place writes
  def f(a, b=2) { return a*b }                   functions
  for i in range(10) { ... }                     loops over range(n), lists and tensors
  while loss > 0.01 { ... }                      loops while a condition holds; break, continue
  if c { ... } else { ... }                      branches;  no_grad { ... } turns autograd off
  print(f"loss {loss:.4f} at {i}")               f-strings: {expr} or {expr:format spec}
operators, tightest first: call/attribute/index, ^ (right-assoc), unary -, * / // % @, + -, comparisons
a bare expression prints its value; see docs/language.md for everything""",
    "autograd": """\
leaves are tensors you made; only leaves that require grad get .grad (or retain_grad())
  y.backward()              seed 1 for a scalar y; y.backward(g) otherwise
  x.grad, x.grad_fn, x.is_leaf, x.requires_grad
  grad(y, [x])              gradients without touching .grad (create_graph=true for higher order)
  x.grad = none / x.zero_grad()   gradients accumulate until zeroed
  :trace on                 show each backward step by step; :graph y shows what y depends on
  :why x                    why x.grad is none or zero;  :anomaly on  where a nan or inf started
  :explain f x              the chain rule for df/dx with your names;  :step y  backward one node at a time
  :check f w b              backward's gradient against central differences (f: a tensor, after backward too)
  plot(f, lo, hi)           f and df/dx for a function f;  plot(y, x, lo, hi) for a tensor y of x
  replay(f, [w], [0.6])     f's recorded graph evaluated again at new values of its leaves
  train = compile(step)     calls replay step's captured array program;  :program train  shows it""",
    "keys": """\
Enter            run the input when it is complete, else open a continuation line
Escape Enter     always a new line
Tab              complete names, attributes after `.`, keyword arguments, commands, files
Up / Down        previous / next input;  Ctrl-R  search the history
Ctrl-C           cancel the line being edited, or interrupt a running statement (it is undone)
Ctrl-D           leave (on an empty line)""",
}


def history_path() -> Path:
    """Where the history lives: $XDG_DATA_HOME/autodsl/history (~/.local/share by default)."""
    base = os.environ.get("XDG_DATA_HOME") or os.path.join(os.path.expanduser("~"), ".local", "share")
    return Path(base) / "autodsl" / "history"


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
        error = value = None
        running = self.progress.running() if self.progress is not None else nullcontext()
        # The undo journal (core/journal.py) takes back everything the input changed: the
        # session's settings (saved when the transaction opens, in the session's context),
        # its variables and last trace (saved here), and every tensor, .grad, hook, flag and
        # list the input wrote (saved by whatever writes them).
        log = None
        try:
            with running, session.context(), transaction() as log:
                record_items(session.namespace)
                record_attrs(session, "last_trace")
                try:
                    value = session.run(program)
                except DSLError as e:     # not undone: raised after the transaction closes
                    error = e
        except KeyboardInterrupt as stop:
            stop.kept = () if log is None else tuple(dict.fromkeys(log.kept))    # for the message
            raise
        if error is not None:
            raise error
        return value

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
            finally:
                SOURCE_POS.reset(token)

    def usage(self, name: str) -> str:
        return (self.commands[name].__doc__ or name).strip().splitlines()[0]

    def cmd_help(self, arg: str) -> None:
        """:help [name]  commands and topics, or a built-in's doc, a command's use, a topic"""
        builtins = self.session.builtins
        if not arg:
            lines = ["commands (any unambiguous prefix works, e.g. :h, :v, :q):"]
            lines += ["  " + self.usage(c) for c in self.commands]
            lines.append("topics: " + ", ".join(f":help {t}" for t in TOPICS))
            names = sorted(n for n in builtins if not n.startswith("_"))
            lines.append("built-ins (:help NAME for one):")
            lines += _columns(names, width=88, indent="  ")
            self.write("\n".join(lines))
            return
        if arg in TOPICS:
            self.write(TOPICS[arg])
            return
        if arg in KEYWORDS or arg in _SYNTAX_WORDS:      # :help while, :help %: no built-in of that name
            self.write(f"`{arg}` is part of the language, not a built-in; its summary (:help language):\n"
                       + TOPICS["language"])
            return
        if arg == "commands":
            self.write("\n".join(self.usage(c) for c in self.commands))
            return
        if arg.startswith(":"):
            full = self.resolve(arg)
            if full is not None:
                self.write(self.usage(full))
            return
        fn = builtins.get(arg)
        method = arg[2:] if arg.startswith("x.") else arg.lstrip(".")
        if fn is None and method in PUBLIC_METHODS:     # :help register_hook, :help x.backward
            self.write(_builtin_help("x." + method, getattr(Tensor, method), method=True))
            return
        if fn is None:
            self.write(f"no built-in or topic named {arg!r}{suggest(arg, list(builtins) + list(TOPICS))}; "
                       ":help lists them")
            return
        self.write(_builtin_help(arg, fn))

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
        """:reset  forget every variable (device, dtype and trace settings stay)"""
        if self.stepper is not None and not self.stepper.done:
            self.write(self.stepper.abort())          # the variables it would write to are forgotten
        self.stepper = None
        s = self.session
        self.session = Session(device=s.device, dtype=s.dtype, trace=s.trace, echo=s.echo, out=s.out,
                               anomaly=s.anomaly)
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
        """:device cpu|cuda  where new tensors go"""
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


# operators and forms that :help explains with the language's summary
_SYNTAX_WORDS = frozenset({"+", "-", "*", "/", "//", "%", "^", "@", "==", "!=", "<", "<=", ">", ">=",
                           "+=", "-=", "*=", "/=", "//=", "%=", "f-string", "f-strings", "fstring", "{}"})


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
    fmt = lambda r: "  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip()  # noqa: E731
    return [fmt(head)] + [fmt(r) for r in rows]


def _columns(names: list[str], width: int, indent: str) -> list[str]:
    if not names:
        return []
    col = max(len(n) for n in names) + 2
    per_row = max(1, (width - len(indent)) // col)
    return [indent + "".join(n.ljust(col) for n in names[i:i + per_row]).rstrip()
            for i in range(0, len(names), per_row)]


def _builtin_help(name: str, fn, method: bool = False) -> str:
    """A built-in's signature and doc, spelled as the language spells things (``method``:
    a tensor method, shown without ``self``)."""
    import inspect
    import re
    try:
        sig = inspect.signature(fn)
        if method:
            sig = sig.replace(parameters=list(sig.parameters.values())[1:])
        text = f"({param_text(sig)})"
    except (TypeError, ValueError):
        text = "(...)"
    doc = inspect.cleandoc(fn.__doc__ or "(no documentation)")
    doc = doc.replace("``", "`").replace("::\n", ":\n")
    doc = re.sub(r"\b(True|False|None)\b", lambda m: m.group().lower(), doc)
    return f"{name}{text}\n{doc}"


# ---- the prompt ------------------------------------------------------------------------

class SourceValidator(Validator):
    """Shows a syntax error at its column before anything runs (``:`` commands are not checked)."""

    def validate(self, document) -> None:
        text = document.text
        if not text.strip() or text.lstrip().startswith(":"):
            return
        try:
            parse(text, "<input>")
        except DSLError as e:
            if not e.has_position:
                raise ValidationError(cursor_position=len(text), message=e.message) from None
            try:
                index = document.translate_row_col_to_index(max(0, e.line - 1), max(0, (e.column or 1) - 1))
            except Exception:  # noqa: BLE001
                index = len(text)
            raise ValidationError(cursor_position=index,
                                  message=f"line {e.line}, column {e.column or 1}: {e.message}") from None
        except Exception:  # noqa: BLE001 - a broken check must not block input
            return


def _key_bindings() -> KeyBindings:

    kb = KeyBindings()
    editing = has_focus(DEFAULT_BUFFER)     # not in the Ctrl-R search field

    def newline(buf) -> None:
        line = buf.document.current_line_before_cursor
        indent = line[: len(line) - len(line.lstrip())]
        if line.rstrip().endswith("{"):
            indent += "    "
        buf.insert_text("\n" + indent)

    @kb.add("enter", filter=editing)
    def _(event):
        buf = event.current_buffer
        text = buf.document.text
        try:
            incomplete = not text.lstrip().startswith(":") and is_incomplete(text)
        except Exception:  # noqa: BLE001
            incomplete = False
        if incomplete and text.strip():
            newline(buf)
        else:
            buf.validate_and_handle()

    @kb.add("escape", "enter", filter=editing)
    def _(event):
        newline(event.current_buffer)

    @kb.add("}", filter=editing)
    def _(event):
        buf = event.current_buffer
        before = buf.document.current_line_before_cursor
        if before and not before.strip():
            buf.delete_before_cursor(min(4, len(before)))
        buf.insert_text("}")

    return kb


def build_prompt_session(repl: Repl, history: bool = True, input=None, output=None, color: bool = True):
    """One PromptSession wired to ``repl``: history, completion, lexer, validator, key bindings."""

    hist = InMemoryHistory()
    if history:
        path = history_path()
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            hist = FileHistory(str(path))
        except OSError:
            pass
    lexer = None
    if color:
        try:
            from prompt_toolkit.lexers import PygmentsLexer

            lexer = PygmentsLexer(AutodslLexer)
        except ImportError:   # pygments missing: plain text
            lexer = None
    completer = AutodslCompleter(lambda: repl.session, lambda: repl.commands, registry=REGISTRY)
    return PromptSession(
        history=hist, key_bindings=_key_bindings(), multiline=True, completer=completer,
        complete_while_typing=False, auto_suggest=AutoSuggestFromHistory(), lexer=lexer,
        validator=SourceValidator(), validate_while_typing=False, search_ignore_case=True,
        prompt_continuation=lambda width, line, soft: "... ".rjust(width), input=input, output=output,
        color_depth=None if color else ColorDepth.MONOCHROME,
    )


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
