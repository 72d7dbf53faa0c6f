"""Built-ins' docs as plain text: the language's ``help(name)`` and the REPL's ``:help NAME``.

The package's docstrings are written for Sphinx (````x.grad````, ``:func:`grad```,
``**note**``, ``::`` before an example); ``help()``, a completion menu, ``:help NAME`` and
the Jupyter kernel's inspection show them on a terminal or in a tooltip, where markup is
noise. This sits in the language's layer so that the language's ``help`` and the REPL
(autodsl/cli) show the same text.
"""
from __future__ import annotations

import inspect
import re
import sys
from collections.abc import Callable
from typing import Any

from autodsl.core.tensor import PUBLIC_METHODS, Tensor
from autodsl.errors import NameError_, TypeError_
from autodsl.lang.attribute_help import attribute_help
from autodsl.lang.interpreter import UserFunction
from autodsl.lang.values import describe, param_text, suggest

__all__ = ["builtin_help", "help_text", "make_help", "plain"]

_ROLE = re.compile(r":[a-z]+(?::[a-z]+)?:`~?([^`]+)`")        # :func:`grad`, :py:meth:`~x.sum`
_LITERAL = re.compile(r"``(.+?)``")
_LINK = re.compile(r"`([^`<]+?)(?:\s*<[^>]+>)?`_{1,2}")        # `text <url>`_ and `name`_
_STRONG = re.compile(r"\*\*(\S(?:.*?\S)?)\*\*")
_WORDS = re.compile(r"\b(True|False|None)\b")


def plain(doc: str, quote: str = "`") -> str:
    """``doc`` without reST markup: inline literals and roles become ``quote``-quoted
    (```x```, the language's way of quoting code in messages; ``quote=""`` for none), links
    their text, ``**strong**`` plain, ``::`` a colon; Python's True/False/None read as the
    language writes them (true, false, none)."""
    text = _ROLE.sub(lambda m: quote + m.group(1) + quote, doc)
    text = _LITERAL.sub(lambda m: quote + m.group(1) + quote, text)
    text = _LINK.sub(lambda m: m.group(1), text)
    text = _STRONG.sub(lambda m: m.group(1), text)
    text = re.sub(r"(?<=\S)::(?=\s|$)", ":", text)          # "Example::" introduces a block
    text = re.sub(r"^\s*::\s*$", "", text, flags=re.MULTILINE)
    return _WORDS.sub(lambda m: m.group().lower(), text)


def builtin_help(name: str, fn, method: bool = False) -> str:
    """A built-in's signature and doc, spelled as the language spells things (``method``:
    a tensor method, shown without ``self``)."""
    try:
        sig = inspect.signature(fn)
        if method:
            sig = sig.replace(parameters=list(sig.parameters.values())[1:])
        text = f"({param_text(sig)})"
    except (TypeError, ValueError):
        text = "(...)"
    doc = plain(inspect.cleandoc(fn.__doc__ or "(no documentation)"))
    return f"{name}{text}\n{doc}"


def _user_help(fn: UserFunction) -> str:
    where = f" in {fn.source.filename}" if fn.source is not None else ""
    return f"def {fn.name}{fn.signature_text()}\na function defined with def{where} (it has no doc)"


def _method_name(name: str) -> str | None:
    """``backward`` for ``x.backward``, ``.backward`` or ``backward``, when it is a tensor method."""
    method = name.split(".", 1)[1] if "." in name else name
    return method if method in PUBLIC_METHODS else None


def help_text(target, builtins: dict, names: dict | None = None) -> str:
    """The text ``help(target)`` prints.

    ``target``: a built-in (``sum``), a tensor method (``x.backward``), a function made
    with ``def``, or the name of one of these as a string (``"sum"``, ``"x.backward"``).
    ``builtins`` is the built-in table, ``names`` the variables a string may name.
    Raises NameError_ (with the names it may have meant) for a string that names none of
    them, TypeError_ for a value that is not a function.
    """
    if isinstance(target, str):
        fn = builtins.get(target)
        if fn is not None:
            return builtin_help(target, fn)
        method = _method_name(target)
        if method is not None:
            return builtin_help("x." + method, getattr(Tensor, method), method=True)
        attribute = attribute_help(target)         # help("x.grad"), help("shape")
        if attribute is not None:
            return attribute
        value = (names or {}).get(target)
        if isinstance(value, UserFunction):
            return _user_help(value)
        known = list(builtins) + [n for n, v in (names or {}).items() if isinstance(v, UserFunction)]
        raise NameError_(f"help(): no built-in or function named `{target}`{suggest(target, known)}; "
                         "write a built-in's name (help(sum) or help(\"sum\")) or a tensor method "
                         "(help(\"x.backward\"))")
    if isinstance(target, UserFunction):
        return _user_help(target)
    if inspect.ismethod(target) and isinstance(target.__self__, Tensor):        # x.backward, x.sum
        return builtin_help("x." + target.__name__, target.__func__, method=True)
    if callable(target) and not isinstance(target, (Tensor, type)):
        name = next((n for n, f in builtins.items() if f is target), None)
        if name is None:
            name = getattr(target, "__name__", "function").rstrip("_")
        return builtin_help(name, target)
    raise TypeError_(f"help() shows the doc of a built-in or a function, not of {describe(target)}; "
                     "give the function (help(sum), help(x.backward)) or its name as a string")


def make_help(get_out: Callable[[], Any] | None, get_interp: Callable[[], Any] | None,
              table: dict) -> Callable:
    """The language's ``help`` built-in, writing where ``print`` writes. ``table``: the
    built-ins, used when there is no running interpreter (whose built-ins win)."""

    def help_(name=None) -> None:
        """Show a built-in's signature and doc, as the REPL's `:help NAME` does: `help(sum)`,
        `help("sum")`, `help(x.backward)` or `help("x.backward")`; for a function made with
        `def`, its signature; for a tensor attribute, what it is (`help("x.grad")`). Raises NameError_ for a name that is neither (with the names it
        may have meant) and TypeError_ for a value that is not a function."""
        interp = get_interp() if get_interp is not None else None
        builtins = getattr(interp, "builtins", None) or table
        scope = getattr(interp, "globals", None)
        if name is None:
            text = ("help(name) shows a built-in's doc: help(sum), help(\"x.backward\"), or help(f) "
                    "for your own function; the REPL's :help lists the topics")
        else:
            text = help_text(name, builtins, getattr(scope, "vars", None))
        out = get_out() if get_out is not None else None
        out = out if out is not None else sys.stdout
        out.write(text + "\n")

    help_.__name__ = "help"
    return help_
