"""AST of the autodsl language: small dataclasses, each with a source position.

The parser (``parser.py``) turns Lark's parse tree into these nodes; the
interpreter (``interpreter.py``) walks them. Positions are 1-based; ``end_column``
is one past the last character on ``line`` (None when the node spans lines).

Left-associative operator chains (``a + b - c + ...``) are kept flat in one
``Chain`` node so that a 3000-term sum is evaluated by a loop, not by 3000
nested calls.
"""
from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any

__all__ = [
    "Node", "Source", "Expr", "Stmt",
    "Number", "String", "Const", "Name", "ListExpr", "Chain", "Compare", "BoolOp", "Not",
    "Unary", "Power", "Call", "Attribute", "Index", "Slice", "Keyword", "FString", "FormatField",
    "ExprStmt", "Assign", "SetItem", "SetAttr", "AugAssign", "FuncDef", "Param", "For", "While",
    "Break", "Continue", "If", "NoGrad", "Return", "Program", "children",
]


@dataclass(eq=False)
class Source:
    """The text a node came from, so errors can show the line later."""
    filename: str
    text: str
    lines: list[str] = field(default_factory=list)

    def __post_init__(self):
        if not self.lines:
            self.lines = self.text.split("\n")

    def line_text(self, line: int | None) -> str | None:
        if line is None or not 1 <= line <= len(self.lines):
            return None
        return self.lines[line - 1].rstrip("\r")


@dataclass(eq=False, kw_only=True)
class Node:
    line: int = 0
    column: int = 0
    end_column: int | None = None


class Expr(Node):
    pass


class Stmt(Node):
    pass


# ---- expressions -----------------------------------------------------------

@dataclass(eq=False)
class Number(Expr):
    value: int | float


@dataclass(eq=False)
class String(Expr):
    value: str


@dataclass(eq=False)
class Const(Expr):
    """``true``, ``false`` or ``none``."""
    value: Any


@dataclass(eq=False)
class Name(Expr):
    id: str


@dataclass(eq=False)
class ListExpr(Expr):
    items: list[Expr]


@dataclass(eq=False)
class Chain(Expr):
    """``first op1 e1 op2 e2 ...`` for the left-associative ``+ - * / // % @``.

    ``ops`` holds ``(op, operand, op_line, op_column)`` tuples.
    """
    first: Expr
    ops: list[tuple[str, Expr, int, int]]


@dataclass(eq=False)
class Compare(Expr):
    left: Expr
    op: str
    right: Expr


@dataclass(eq=False)
class BoolOp(Expr):
    op: str               # "and" | "or"
    values: list[Expr]


@dataclass(eq=False)
class Not(Expr):
    operand: Expr


@dataclass(eq=False)
class Unary(Expr):
    op: str               # "-" | "+"
    operand: Expr


@dataclass(eq=False)
class Power(Expr):
    base: Expr
    exponent: Expr


@dataclass(eq=False)
class Keyword(Node):
    name: str
    value: Expr


@dataclass(eq=False)
class Call(Expr):
    func: Expr
    args: list[Expr]
    keywords: list[Keyword]


@dataclass(eq=False)
class Attribute(Expr):
    obj: Expr
    name: str


@dataclass(eq=False)
class Slice(Expr):
    lower: Expr | None
    upper: Expr | None
    step: Expr | None


@dataclass(eq=False)
class Index(Expr):
    obj: Expr
    keys: list[Expr]      # one key -> x[k]; several -> x[(k1, k2)]


@dataclass(eq=False)
class FormatField(Node):
    """One ``{value:spec}`` of an f-string (``spec`` is "" when there is none)."""
    value: Expr
    spec: str


@dataclass(eq=False)
class FString(Expr):
    """``f"loss {loss:.4f} at {i}"``: literal text (str) and fields, in order."""
    parts: list[str | FormatField]


# ---- statements ------------------------------------------------------------

@dataclass(eq=False)
class ExprStmt(Stmt):
    expr: Expr


@dataclass(eq=False)
class Assign(Stmt):
    name: str
    value: Expr


@dataclass(eq=False)
class SetItem(Stmt):
    obj: Expr
    keys: list[Expr]
    value: Expr


@dataclass(eq=False)
class SetAttr(Stmt):
    obj: Expr
    name: str
    value: Expr


@dataclass(eq=False)
class AugAssign(Stmt):
    target: Expr          # Name or Index
    op: str               # "+=" | "-=" | "*=" | "/=" | "%=" | "//="
    value: Expr


@dataclass(eq=False)
class Param(Node):
    name: str
    default: Expr | None


@dataclass(eq=False)
class FuncDef(Stmt):
    name: str
    params: list[Param]
    body: list[Stmt]
    source: Source | None = None


@dataclass(eq=False)
class For(Stmt):
    var: str
    iterable: Expr
    body: list[Stmt]


@dataclass(eq=False)
class While(Stmt):
    cond: Expr
    body: list[Stmt]


@dataclass(eq=False)
class Break(Stmt):
    """``break``: leave the innermost `for` / `while` loop."""


@dataclass(eq=False)
class Continue(Stmt):
    """``continue``: go on with the next iteration of the innermost loop."""


@dataclass(eq=False)
class If(Stmt):
    cond: Expr
    body: list[Stmt]
    orelse: list[Stmt] | None


@dataclass(eq=False)
class NoGrad(Stmt):
    body: list[Stmt]


@dataclass(eq=False)
class Return(Stmt):
    value: Expr | None


@dataclass(eq=False)
class Program(Node):
    body: list[Stmt]
    source: Source | None = None


# ---- walking ---------------------------------------------------------------

_POSITION_FIELDS = frozenset({"line", "column", "end_column", "source"})
# per node class, the fields that may hold nodes (fixed once the classes exist)
_CHILD_FIELDS = {cls: tuple(f.name for f in fields(cls) if f.name not in _POSITION_FIELDS)
                 for cls in (Number, String, Const, Name, ListExpr, Chain, Compare, BoolOp, Not, Unary,
                             Power, Keyword, Call, Attribute, Slice, Index, FormatField, FString, ExprStmt,
                             Assign, SetItem, SetAttr, AugAssign, Param, FuncDef, For, While, Break, Continue,
                             If, NoGrad, Return, Program)}


def children(node: Node) -> list[Node]:
    """The nodes directly inside ``node``, in source order: sub-expressions, a block's
    statements, a call's keywords, a def's parameters, an f-string's fields and the
    operands of a ``Chain``. For walks with an explicit stack (no recursion)."""
    out = []
    for name in _CHILD_FIELDS[type(node)]:
        value = getattr(node, name)
        if isinstance(value, Node):
            out.append(value)
        elif isinstance(value, list):
            for item in value:
                if isinstance(item, Node):
                    out.append(item)
                elif isinstance(item, tuple):       # a Chain's (op, operand, line, column)
                    out.append(item[1])
    return out
