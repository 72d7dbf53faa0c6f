"""The signature hint: what the REPL's bottom bar shows while a call is being typed.

``exp(`` shows ``exp(input)`` and the first sentence of its doc, ``x.sum(`` the method's
parameters without ``self``, ``f(`` a function defined in the session with its defaults,
``opt.step(`` an optimizer's method. The parameter the argument at the cursor goes to is
marked (bold in the bar), as ptpython does: by position, or by the keyword being written.
Like the completer it looks at the text before the cursor only and never evaluates
anything; anything unexpected means "no hint".
"""
from __future__ import annotations

import inspect
import re

from autodsl.cli.complete import call_arguments, call_context, one_line_doc
from autodsl.core.tensor import PUBLIC_METHODS, Tensor
from autodsl.lang.interpreter import UserFunction
from autodsl.lang.values import describe_value, param_text

__all__ = ["call_signature", "signature_fragments", "signature_hint"]

_P = inspect.Parameter


def call_signature(text: str, session) -> str | None:
    """The signature of the call open at the end of ``text`` (``exp(input)``), or None."""
    parts = _signature(text, session)
    return None if parts is None else "".join(t for t, _ in parts[0])


def signature_fragments(text: str, session, width: int = 100, registry=None):
    """The bottom bar's formatted text: the signature, its current parameter in bold, then
    the first sentence of the doc; cut to ``width`` characters. None outside a call."""
    parts = _signature(text, session, registry)
    if parts is None:
        return None
    pieces, doc = parts
    if doc:
        pieces = [*pieces, ("   " + doc, False)]
    out, room = [], max(1, width)
    for piece, current in pieces:
        if len(piece) > room:
            piece = piece[: max(0, room - 1)] + "…"
        out.append(("bold" if current else "", piece))
        room -= len(piece)
        if room <= 0:
            break
    return out


def signature_hint(text: str, session, width: int = 100, registry=None) -> str | None:
    """``signature_fragments`` as plain text (for a front end without styles)."""
    frags = signature_fragments(text, session, width, registry)
    return None if frags is None else "".join(t for _, t in frags)


def _signature(text: str, session, registry=None):
    """([(piece, is the current parameter?)], doc) for the call open in ``text``, or None."""
    try:
        found = _callee(text, session)
        if found is None:
            return None
        shown, fn, method = found
        params = _params(fn, method)
        current = _current(call_arguments(text), params)
        pieces = [(shown + "(", False)]
        for i, (piece, _, _) in enumerate(params):
            if i:
                pieces.append((", ", False))
            pieces.append((piece, i == current))
        pieces.append((")", False))
        doc = "" if isinstance(fn, UserFunction) else one_line_doc(fn, registry, None if method else shown)
        return pieces, doc
    except Exception:  # noqa: BLE001 - a hint must never break the prompt
        return None


def _params(fn, method: bool) -> list[tuple[str, str, object]]:
    """(as shown, name, kind) of each parameter of ``fn`` (a method's without its tensor)."""
    if isinstance(fn, UserFunction):
        return [(p.name if p.name not in fn.defaults else f"{p.name}={describe_value(fn.defaults[p.name])}",
                 p.name, _P.POSITIONAL_OR_KEYWORD) for p in fn.params]
    sig = inspect.signature(fn)
    params = list(sig.parameters.values())
    if method and params and params[0].name in ("self", "input"):
        params = params[1:]           # x.sum(...): the tensor is the object
    return [(param_text(sig.replace(parameters=[p])), p.name, p.kind) for p in params]


def _current(args: list[str], params) -> int | None:
    """Which parameter the last, unfinished argument goes to."""
    if not args:
        return None
    m = re.match(r"\s*([A-Za-z_][A-Za-z0-9_]*)\s*=(?!=)", args[-1])
    if m:
        return next((i for i, (_, name, kind) in enumerate(params)
                     if name == m.group(1) and kind not in (_P.VAR_POSITIONAL, _P.POSITIONAL_ONLY)), None)
    if any(re.match(r"\s*[A-Za-z_][A-Za-z0-9_]*\s*=(?!=)", a) for a in args[:-1]):
        return None                   # a positional argument after a keyword: no parameter takes it
    n = len(args) - 1
    for i, (_, _, kind) in enumerate(params):
        if kind is _P.VAR_POSITIONAL:
            return i
        if kind in (_P.KEYWORD_ONLY, _P.VAR_KEYWORD):
            return None
        if n == 0:
            return i
        n -= 1
    return None


def _callee(text: str, session):
    """(name as shown, the callable, a method?) of the innermost open call, or None."""
    callee, obj, _ = call_context(text)
    if callee is None:
        return None
    namespace, builtins = session.namespace, session.builtins
    if obj is None:
        fn = namespace.get(callee, builtins.get(callee))
        return (callee, fn, False) if callable(fn) else None
    value = namespace.get(obj) if obj else None
    lang = getattr(type(value), "LANG_ATTRIBUTES", None) if value is not None else None
    if lang is not None and not isinstance(value, Tensor):
        if callee not in lang or not callable(getattr(value, callee, None)):
            return None
        return f"{obj}.{callee}", getattr(type(value), callee), True
    if callee not in PUBLIC_METHODS:
        return None
    return f"{obj or 'x'}.{callee}", getattr(Tensor, callee), True
