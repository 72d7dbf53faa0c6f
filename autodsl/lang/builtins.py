"""The language's built-in names, built FROM autodsl's public functions.

Every callable in ``autodsl.__all__`` that is not a class (``Tensor``,
``Session``, ``no_grad``, the error classes) is a built-in of the same name,
with the same keywords: the language cannot drift from the Python API.

On top of those, the language defines exactly ``LANGUAGE_BUILTINS``:

- ``print(a, b, ..., sep=" ", end="\\n")``: print values the way the REPL shows them
  (strings without quotes) to the session's output.
- ``range(stop)`` / ``range(start, stop, step=1)``: integers for `for` loops
  (one-element integer tensors are accepted as bounds).
- ``len(x)``: the size of a tensor's first dimension, or the length of a
  shape, list or string.
- ``include("file.ad")``: run another script file in the current scope
  (``autodsl/lang/include.py``; it needs the running interpreter, so it is the language's).
- ``param("name", default)``: a script parameter: the value ``--set name=...`` (or
  ``Session.run(variables=)``) gave, else ``default`` (it reads the running script's scope).
- ``help(name)``: a built-in's signature and doc in plain text, as the REPL's ``:help NAME``
  shows it (``autodsl/lang/help_text.py``; it reads the running interpreter's names).
"""
from __future__ import annotations

import operator
import sys
from typing import Any, Callable

from autodsl.context import current
from autodsl.errors import TypeError_
import autodsl
from autodsl.core.display import format_value
from autodsl.core.tensor import Tensor
from autodsl.lang.help_text import make_help
from autodsl.lang.include import make_include
from autodsl.lang.values import describe
from autodsl.core.words import shown

__all__ = ["LANGUAGE_BUILTINS", "core_functions", "make_builtins"]

LANGUAGE_BUILTINS = frozenset({"print", "range", "len", "include", "param", "help"})


def core_functions() -> dict[str, Callable]:
    """``{name: function}`` for every public function of autodsl (classes excluded)."""
    table = {}
    for name in getattr(autodsl, "__all__", ()):
        obj = getattr(autodsl, name, None)
        if callable(obj) and not isinstance(obj, type) and not name.startswith("_"):
            table[name] = obj
    return table


def _format(v) -> str:
    return format_value(v)


def _as_int(v, what: str) -> int:
    if isinstance(v, bool) or isinstance(v, float):
        raise TypeError_(f"range() needs whole numbers, but the {what} is {shown(v)}")
    try:
        return operator.index(v)
    except TypeError:
        raise TypeError_(f"range() needs whole numbers, but the {what} is not an integer") from None


def _text_option(name: str, value, default: str) -> str:
    if value is None:
        return default
    if not isinstance(value, str):
        raise TypeError_(f"print(): {name} must be a string (or none for the default), not {describe(value)}")
    return value


def make_builtins(get_out: Callable[[], Any] | None = None,
                  get_interp: Callable[[], Any] | None = None) -> dict[str, Callable]:
    """The full built-ins table; ``get_out()`` gives the stream `print` writes to, and
    ``get_interp()`` the interpreter whose current scope `include` runs a file in."""

    def print_(*values, sep: str = " ", end: str = "\n") -> None:
        """Print values, separated by `sep` (strings without quotes). As in Python, none for
        `sep` or `end` is the default (a space, a newline); anything else but a string raises
        TypeError_."""
        sep = _text_option("sep", sep, " ")
        end = _text_option("end", end, "\n")
        out = get_out() if get_out is not None else None
        out = out if out is not None else sys.stdout
        out.write(sep.join(_format(v) for v in values) + end)

    def range_(start, stop=None, step=1):
        """The integers start, start+step, ... below stop (like Python's range)."""
        if stop is None:
            start, stop = 0, start
        return range(_as_int(start, "start"), _as_int(stop, "stop"), _as_int(step, "step"))

    def len_(x) -> int:
        """The length of a tensor's first dimension, a shape, a list or a string."""
        if isinstance(x, (Tensor, tuple, list, str, range)):
            return len(x)               # a tensor's own __len__ explains a 0-d tensor
        raise TypeError_("len() needs a tensor, a shape, a list or a string")

    def param_(name, default):
        """A script parameter: the value of the top-level variable `name` if one is defined
        (``autodsl train.ad --set lr=0.1``, ``Session.run(src, variables={"lr": 0.1})``, or an
        earlier assignment), else `default`.

        Example: ``lr = param("lr", 0.01)`` runs with 0.01 unless ``--set lr=...`` is given.
        Raises TypeError_ when `name` is not a string, or when `default` is a number or a bool and
        the parameter given is a string (a ``--set`` value the language could not read as one).
        Where `default` is a string, a number given is taken as its text (``--set name=3``: "3")."""
        if not isinstance(name, str):
            raise TypeError_('param() needs the parameter\'s name as a string: param("lr", 0.01)')
        cap = current().capture
        if cap is not None:     # inside compile(fn): the variable it reads is no guard of the replay
            cap.fail("it calls param(), which reads a variable by its name on every call")
        interp = get_interp() if get_interp is not None else None
        scope = getattr(interp, "globals", None)
        values = getattr(scope, "vars", {})
        if name not in values:
            return default
        value = values[name]
        if isinstance(default, str) and isinstance(value, (int, float)) and not isinstance(value, bool):
            return str(value)       # --set name=3 is read as a number; a text parameter wants "3"
        if isinstance(default, (bool, int, float)) and isinstance(value, str):
            kind = "true or false" if isinstance(default, bool) else "a number"
            raise TypeError_(f'the parameter `{name}` is the text "{value}", but its default is {kind}; '
                             f"give it as --set {name}={str(default).lower()} or similar")
        return value

    print_.__name__, range_.__name__, len_.__name__, param_.__name__ = "print", "range", "len", "param"
    table = core_functions()
    extra = {"print": print_, "range": range_, "len": len_, "include": make_include(get_interp),
             "param": param_, "help": make_help(get_out, get_interp, table)}
    assert set(extra) == LANGUAGE_BUILTINS
    table.update(extra)
    return table
