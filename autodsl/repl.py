"""The interactive prompt: prompt-toolkit input, Session for everything else.

Enter runs the input when it parses as complete and opens a continuation
line while a bracket or block is open. Errors are printed and the loop goes
on; variables survive every error. ``:`` commands are dispatched from a table.
"""
from __future__ import annotations

import os
import sys
from pathlib import Path

from .errors import DSLError

__all__ = ["main", "Repl", "history_path"]

BANNER = ("autodsl {version}: differentiable expressions. Try:\n"
          "  x = tensor(2.0, requires_grad=true); y = x^3; y.backward(); x.grad\n"
          "Type :help for commands, :quit or Ctrl-D to leave.")


def history_path() -> Path:
    """Where the history lives: $XDG_DATA_HOME/autodsl/history (~/.local/share by default)."""
    base = os.environ.get("XDG_DATA_HOME") or os.path.join(os.path.expanduser("~"), ".local", "share")
    return Path(base) / "autodsl" / "history"


class Repl:
    """The REPL's logic without a terminal: ``handle(text)`` runs one accepted input."""

    def __init__(self, session, out=None):
        self.session = session
        self.out = out or sys.stdout
        self.commands = {
            ":help": self.cmd_help, ":info": self.cmd_info, ":trace": self.cmd_trace,
            ":vars": self.cmd_vars, ":reset": self.cmd_reset, ":quit": self.cmd_quit,
        }
        self.done = False

    def write(self, text: str) -> None:
        self.out.write(text + "\n")
        self.out.flush()

    def handle(self, text: str) -> None:
        """Run one input: a `:` command or source. Never raises (except SystemExit on :quit)."""
        stripped = text.strip()
        if not stripped:
            return
        try:
            if stripped.startswith(":"):
                self.command(stripped)
            else:
                self.session.run(text, filename="<input>")
        except DSLError as e:
            self.write(e.render())
        except KeyboardInterrupt:
            self.write("interrupted; the session is as it was before this input")
        except Exception as e:  # noqa: BLE001  (the loop survives internal faults)
            self.write(f"internal error ({type(e).__name__}: {e}); the session goes on")

    def command(self, text: str) -> None:
        name, _, arg = text.partition(" ")
        matches = [c for c in self.commands if c.startswith(name)]
        if name in self.commands:
            matches = [name]
        if len(matches) != 1:
            options = ", ".join(sorted(self.commands))
            what = "is ambiguous" if matches else "is not a command"
            self.write(f"{name} {what}; commands: {options}")
            return
        self.commands[matches[0]](arg.strip())

    def cmd_help(self, arg: str) -> None:
        """:help [name]: this list, or the documentation of a built-in."""
        if arg:
            fn = self.session.builtins.get(arg)
            if fn is None:
                self.write(f"no built-in named {arg!r}")
                return
            self.write((fn.__doc__ or "(no documentation)").strip())
            return
        lines = ["commands:"]
        for name, fn in sorted(self.commands.items()):
            lines.append("  " + (fn.__doc__ or name).strip())
        lines.append("built-ins: " + ", ".join(sorted(n for n in self.session.builtins if not n.startswith("_"))))
        self.write("\n".join(lines))

    def cmd_info(self, arg: str) -> None:
        """:info x: shape, dtype, device, requires_grad, is_leaf, grad_fn, grad of x."""
        if not arg:
            self.write("usage: :info NAME")
            return
        self.session.run(f"info({arg})", filename="<input>")

    def cmd_trace(self, arg: str) -> None:
        """:trace on|off|last: print each backward's trace, or show the last one."""
        if arg in ("on", "off"):
            self.session.trace = arg == "on"
            self.write(f"trace {arg}")
        elif arg in ("", "last"):
            tr = self.session.last_trace
            self.write(str(tr) if tr is not None else "no backward has run yet")
        else:
            self.write("usage: :trace on|off|last")

    def cmd_vars(self, arg: str) -> None:
        """:vars: the tensors of this session, with their autograd state."""
        from .tensor import Tensor
        rows = [(n, v) for n, v in self.session.bindings().items() if isinstance(v, Tensor)]
        if not rows:
            self.write("no tensors yet")
            return
        self.write(f"{'name':<12} {'shape':<12} {'dtype':<8} {'requires_grad':<14} {'is_leaf':<8} "
                   f"{'grad_fn':<18} grad")
        for n, v in rows:
            gf = v.grad_fn.name if v.grad_fn is not None else "-"
            self.write(f"{n:<12} {str(v.shape):<12} {v.dtype.name:<8} {str(v.requires_grad).lower():<14} "
                       f"{str(v.is_leaf).lower():<8} {gf:<18} {'set' if v._grad is not None else '-'}")

    def cmd_reset(self, arg: str) -> None:
        """:reset: forget every variable."""
        from .session import Session
        s = self.session
        self.session = Session(device=s.device, dtype=s.dtype, trace=s.trace)
        self.write("session reset")

    def cmd_quit(self, arg: str) -> None:
        """:quit: leave (Ctrl-D does too)."""
        self.done = True


def main(session, history: bool = True) -> int:
    """Run the interactive loop on a terminal until :quit or Ctrl-D; returns the exit status."""
    from prompt_toolkit import PromptSession
    from prompt_toolkit.history import FileHistory, InMemoryHistory
    from prompt_toolkit.key_binding import KeyBindings

    from . import __version__
    from .lang.parser import is_incomplete

    repl = Repl(session)
    hist = InMemoryHistory()
    if history and not os.environ.get("AUTODSL_NO_HISTORY"):
        path = history_path()
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            hist = FileHistory(str(path))
        except OSError:
            pass

    kb = KeyBindings()

    @kb.add("enter")
    def _(event):
        buf = event.current_buffer
        text = buf.document.text
        if text.strip().startswith(":") or not is_incomplete(text):
            buf.validate_and_handle()
        else:
            buf.insert_text("\n")

    prompt = PromptSession(history=hist, key_bindings=kb, multiline=True,
                           prompt_continuation=lambda width, line, soft: "...".ljust(width))
    print(BANNER.format(version=__version__))
    while not repl.done:
        try:
            text = prompt.prompt(">>> ")
        except KeyboardInterrupt:
            continue
        except EOFError:
            break
        repl.handle(text)
    return 0
