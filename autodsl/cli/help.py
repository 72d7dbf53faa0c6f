"""The REPL's help: a short first screen, topics, a built-in's doc, and a pager for long text.

``:help`` alone fits on one screen (topics, then the command names); the long parts are
topics of their own (``:help commands``, ``:help builtins``) and go through a pager on a
terminal (``page``), as IPython's ``?`` and Python's ``help()`` do.
"""
from __future__ import annotations

import os
import shutil
import sys

# the language's help() shows the same text
from autodsl.lang.help_text import builtin_help

__all__ = ["SYNTAX_WORDS", "TOPICS", "builtin_help", "builtins_screen", "first_screen", "page",
           "user_function_help"]

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
Ctrl-D           leave (on an empty line)
while typing a call, the bar at the bottom shows the function's parameters""",
}

# what each topic of the first screen is about (``commands`` and ``builtins`` are made from tables)
_ABOUT = {
    "commands": "the REPL's commands, one line each",
    "language": "statements, functions, loops, operators",
    "autograd": "backward, .grad, grad() and the commands that explain a gradient",
    "keys": "editing keys: Enter, Tab, Ctrl-R, Ctrl-C",
    "builtins": "every built-in function, by name",
}

# operators and forms that :help explains with the language's summary
SYNTAX_WORDS = frozenset({"+", "-", "*", "/", "//", "%", "^", "@", "==", "!=", "<", "<=", ">", ">=",
                          "+=", "-=", "*=", "/=", "//=", "%=", "f-string", "f-strings", "fstring", "{}"})


def first_screen(commands) -> str:
    """What ``:help`` shows: the topics, how to ask about one name, and the command names."""
    lines = ["help topics (:help TOPIC):"]
    lines += [f"  :help {topic:<10} {about}" for topic, about in _ABOUT.items()]
    lines.append("  :help NAME       a built-in's signature and doc: :help sum, :help x.backward, :help :trace")
    lines.append("commands (any unambiguous prefix works: :h, :v, :q):")
    lines += columns(list(commands), width=_width(), indent="  ")
    return "\n".join(lines)


def builtins_screen(builtins) -> str:
    """``:help builtins``: every built-in's name, in columns."""
    names = sorted(n for n in builtins if not n.startswith("_"))
    return "\n".join(["built-ins (:help NAME for one):"] + columns(names, width=_width(), indent="  "))


def columns(names: list[str], width: int, indent: str) -> list[str]:
    if not names:
        return []
    col = max(len(n) for n in names) + 2
    per_row = max(1, (width - len(indent)) // col)
    return [indent + "".join(n.ljust(col) for n in names[i:i + per_row]).rstrip()
            for i in range(0, len(names), per_row)]


def user_function_help(name: str, fn) -> str:
    """``:help f`` for a function defined with ``def``: its signature and where it was defined."""
    where = getattr(getattr(fn, "source", None), "filename", None)
    return f"{name}{fn.signature_text()}\na function you defined" + (f" (in {where})" if where else "")


def page(text: str, write, out=None) -> None:
    """Show ``text``: through a pager (``$PAGER``, else ``less``, as Python's ``help()``) when it
    is taller than the terminal and the REPL writes to the terminal itself (``out`` None and
    stdin and stdout terminals); with ``write`` otherwise (tests, the Jupyter kernel, pipes)."""
    if out is None and _interactive() and text.count("\n") + 2 > shutil.get_terminal_size().lines:
        import pydoc

        try:
            pydoc.pager(text)
        except Exception:  # noqa: BLE001 - a broken pager must not lose the text
            write(text)
        return
    write(text)


def _interactive() -> bool:
    try:
        return sys.stdin.isatty() and sys.stdout.isatty() and os.environ.get("TERM") != "dumb"
    except (AttributeError, ValueError):
        return False


def _width() -> int:
    return min(100, shutil.get_terminal_size((88, 24)).columns)
