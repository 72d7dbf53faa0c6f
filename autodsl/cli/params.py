"""Script parameters from the command line: ``autodsl train.ad --set N=1000 --set lr=0.1``.

A value that the language reads as a literal number (``1000``, ``0.1``, ``-2``, ``1e-3``),
boolean (``true``, ``false``) or ``none`` is that value, as the same text in a script would
be; ``inf``, ``-inf`` and ``nan`` are those numbers; a quoted string literal is its text;
anything else is the text itself, a string (``--set name=abc``, ``--set data=runs/iris.csv``).
"""
from __future__ import annotations

from autodsl.errors import DSLError
from autodsl.lang import ast as A
from autodsl.lang.parser import KEYWORDS, parse

__all__ = ["literal_value", "parse_sets"]


def literal_value(text: str):
    """The value of ``text`` as the language reads a literal, else ``text`` itself."""
    try:
        program = parse(text, "<--set>")
    except DSLError:
        return text
    if len(program.body) != 1 or not isinstance(program.body[0], A.ExprStmt):
        return text
    expr = program.body[0].expr
    if isinstance(expr, (A.Number, A.String, A.Const)):
        return expr.value
    if isinstance(expr, A.Unary) and isinstance(expr.operand, A.Number) and expr.op in "+-":
        return -expr.operand.value if expr.op == "-" else expr.operand.value
    # inf and nan are predefined names, not literals, but on a command line they mean the numbers
    if text.strip() in ("inf", "+inf", "-inf", "nan"):
        return float(text.strip())
    return text


def parse_sets(items: list[str]) -> dict:
    """``["N=1000", "name=abc"]`` -> ``{"N": 1000, "name": "abc"}`` (a later one wins).

    Raises ValueError with the sentence to show for an item without ``=`` or a name the
    language cannot bind."""
    out = {}
    for item in items:
        name, eq, value = item.partition("=")
        name = name.strip()
        if not eq:
            raise ValueError(f"--set {item}: write NAME=VALUE, for example --set N=1000")
        if not name.isidentifier() or name.startswith("_") or name in KEYWORDS:
            raise ValueError(f"--set {item}: `{name}` cannot be a name in the language (letters, digits and "
                             "`_`, not starting with `_` or a digit, and not a keyword)")
        out[name] = literal_value(value)
    return out
