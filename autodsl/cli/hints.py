"""The signature hint: what the REPL's bottom bar shows while a call is being typed.

``exp(`` shows ``exp(input)`` and the first sentence of its doc, ``x.sum(`` the method's
parameters without ``self``, ``f(`` a function defined in the session with its defaults,
``opt.step(`` an optimizer's method. Like the completer it looks at the text before the
cursor only and never evaluates anything; anything unexpected means "no hint".
"""
from __future__ import annotations

import inspect

from autodsl.cli.complete import call_context, one_line_doc
from autodsl.core.tensor import PUBLIC_METHODS, Tensor
from autodsl.lang.interpreter import UserFunction
from autodsl.lang.values import param_text

__all__ = ["call_signature", "signature_hint"]


def call_signature(text: str, session) -> str | None:
    """The signature of the call open at the end of ``text`` (``exp(input)``), or None."""
    try:
        found = _callee(text, session)
        if found is None:
            return None
        shown, fn, method = found
        if isinstance(fn, UserFunction):
            return shown + fn.signature_text()
        sig = inspect.signature(fn)
        params = list(sig.parameters.values())
        if method and params and params[0].name in ("self", "input"):
            params = params[1:]           # x.sum(...): the tensor is the object
        return f"{shown}({param_text(sig.replace(parameters=params))})"
    except Exception:  # noqa: BLE001 - a hint must never break the prompt
        return None


def signature_hint(text: str, session, width: int = 100, registry=None) -> str | None:
    """``call_signature`` followed by the first sentence of the callee's doc, cut to ``width``."""
    sig = call_signature(text, session)
    if sig is None:
        return None
    try:
        found = _callee(text, session)
        doc = "" if found is None or isinstance(found[1], UserFunction) else \
            one_line_doc(found[1], registry, None if found[2] else found[0])
    except Exception:  # noqa: BLE001
        doc = ""
    line = f"{sig}   {doc}" if doc else sig
    return line if len(line) <= width else line[: max(1, width - 1)] + "…"


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
