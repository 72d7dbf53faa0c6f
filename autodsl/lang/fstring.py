"""The text of an f-string token cut into literal text and ``{expr:spec}`` fields.

``f"loss {loss:.4f} at {i}"`` is one token of the grammar (``FSTRING``); the
parser calls ``split_fstring`` on it and parses each field's expression with the
language's own grammar. The rules are Python's (before 3.12): ``{{`` and ``}}``
are literal braces, a field is an expression, then optionally ``:`` and a format
spec of Python's format mini-language; the expression may hold brackets, slices
and strings in the other quote, but no backslash. ``!r`` conversions, ``{x=}``
and fields nested in a spec are left out, with an error that says so.
"""
from __future__ import annotations

import ast as _pyast

__all__ = ["FStringError", "Field", "Text", "split_fstring"]

_OPENERS = {"(": ")", "[": "]", "{": "}"}


class FStringError(Exception):
    """A mistake in an f-string: ``message``, and its place as offsets in the token's text."""

    def __init__(self, message: str, start: int, end: int | None = None):
        super().__init__(message)
        self.message = message
        self.start = start
        self.end = end if end is not None else start + 1


class Text(str):
    """Literal text of an f-string (escapes and doubled braces already decoded)."""


class Field:
    """``{expr:spec}``: the expression's source text and its offset in the token's text."""

    __slots__ = ("end", "expr", "offset", "spec", "start")

    def __init__(self, expr: str, offset: int, spec: str, start: int, end: int):
        self.expr = expr
        self.offset = offset        # where ``expr`` starts in the token's text
        self.spec = spec
        self.start = start          # the field's `{` and one past its `}`
        self.end = end


def _decode(raw: str, quote: str, start: int) -> Text:
    try:
        return Text(_pyast.literal_eval(quote + raw + quote))
    except (ValueError, SyntaxError):
        raise FStringError("this f-string has an escape sequence that is not understood; "
                           "use \\n, \\t, \\\\, \\\" or \\'", start, start + len(raw)) from None


def split_fstring(token: str) -> list[Text | Field]:
    """Cut the token's text (``f"..."`` with its quotes) into literal ``Text`` and ``Field`` parts.

    Raises FStringError for a lone ``}``, a ``{`` never closed, an empty field, a
    backslash inside a field, ``!r``-style conversions and nested fields in a spec.
    """
    quote = token[1]
    body_start, body_end = 2, len(token) - 1
    parts: list[Text | Field] = []
    raw: list[str] = []
    raw_start = body_start
    i = body_start
    while i < body_end:
        ch = token[i]
        if ch == "\\" and i + 1 < body_end:          # an escape: its next character is literal text
            raw.append(token[i:i + 2])
            i += 2
            continue
        if ch == "}":
            if token[i + 1:i + 2] == "}":
                raw.append("}")
                i += 2
                continue
            raise FStringError("a single `}` in an f-string must be doubled: write `}}` for a brace", i)
        if ch == "{":
            if token[i + 1:i + 2] == "{":
                raw.append("{")
                i += 2
                continue
            if raw:
                parts.append(_decode("".join(raw), quote, raw_start))
                raw = []
            field, i = _field(token, i, body_end)
            parts.append(field)
            raw_start = i
            continue
        raw.append(ch)
        i += 1
    if raw:
        parts.append(_decode("".join(raw), quote, raw_start))
    return parts


def _field(token: str, open_at: int, body_end: int) -> tuple[Field, int]:
    """The field whose `{` is at ``open_at``; returns it and the offset after its `}`."""
    stack: list[str] = []
    in_string = None
    i = open_at + 1
    colon = None
    while i < body_end:
        ch = token[i]
        if ch == "\\":
            raise FStringError("a `\\` cannot appear inside the `{ }` of an f-string: "
                               "compute the value before the f-string", i)
        if in_string is not None:
            if ch == in_string:
                in_string = None
        elif ch in "\"'":
            in_string = ch
        elif ch == "#":     # the language's comment sign would swallow the rest of the field
            raise FStringError("a `#` cannot appear inside the `{ }` of an f-string (outside a string "
                               "there): put the comment after the line", i)
        elif ch in _OPENERS:
            stack.append(_OPENERS[ch])
        elif stack and ch == stack[-1]:
            stack.pop()
        elif not stack and ch == "!" and token[i + 1:i + 2] != "=":
            raise FStringError("`!r` / `!s` conversions are not supported in f-strings: `{x}` shows "
                               "a value as print does", i, i + 2)
        elif not stack and ch == ":":
            colon = i
            break
        elif ch == "}" and "}" not in stack:
            break           # an unclosed `(` or `[` before it is the expression's error to report
        i += 1
    if colon is not None:
        close = token.find("}", colon, body_end)
        nested = token.find("{", colon, body_end)
        if 0 <= nested < close or (close < 0 <= nested):
            raise FStringError("a format spec cannot hold another `{ }` field: write the spec out "
                               "(`{x:.4f}`) or build it with format(x, spec)", nested)
        if close < 0:
            i = body_end
        else:
            i = close
    if i >= body_end:
        raise FStringError("this `{` in an f-string is never closed: add the `}`, or write `{{` for "
                           "a brace", open_at)
    end_expr = colon if colon is not None else i
    expr = token[open_at + 1:end_expr]
    if not expr.strip():
        raise FStringError("an f-string field `{}` is empty: put an expression inside, or write `{{}}` "
                           "for braces", open_at, i + 1)
    spec = token[colon + 1:i] if colon is not None else ""
    return Field(expr, open_at + 1, spec, open_at, i + 1), i + 1
