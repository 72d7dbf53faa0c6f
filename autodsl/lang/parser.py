"""Source text -> AST, with syntax errors made readable.

The grammar (``grammar/autodsl.lark``) is loaded once and parsed with LALR and
``propagate_positions=True``, without an internal transformer: the whole
source is parsed before anything runs, so a syntax error on line 50 is
reported before line 1 has any effect. A non-recursive Lark transformer then
turns the parse tree into the dataclasses of ``ast.py``.

Lark's exceptions become ``ParseError`` with a line, a column and one sentence
for the common mistakes (a bracket never closed, a stray operator, an input
that ends too early); no exception of Lark's leaves ``parse``. ``is_incomplete``
tells the REPL whether to ask for another line.

Parsing is linear in the length of the source, in time and memory: nodes keep
line and column numbers into the one source text (``Source``), and an f-string's
fields are parsed on their own and moved into place. A program nested deeper than
``MAX_NESTING`` levels is refused here, with its position, rather than failing
somewhere later in a recursion.
"""
from __future__ import annotations

import ast as _pyast
import functools
import sys
from pathlib import Path

from lark import Lark, Token, Transformer_NonRecursive, v_args
from lark.exceptions import (LarkError, UnexpectedCharacters, UnexpectedEOF, UnexpectedInput, UnexpectedToken,
                             VisitError)

from autodsl.errors import DSLError, ParseError
from autodsl.lang import ast as A
from autodsl.lang.fstring import Field, FStringError, split_fstring
from autodsl.lang.python_words import syntax_hint

__all__ = ["parse", "is_incomplete", "grammar_text", "get_parser", "KEYWORDS", "MAX_NESTING", "MAX_INT_DIGITS"]

# Levels of expressions and blocks inside each other (`-(-(-x))` is 4). The interpreter
# evaluates nested expressions by recursion, a few Python frames a level: 3000 levels fit
# in a run's recursion limit with room for calls (test_lang's 2000 `^` must work).
MAX_NESTING = 3000
# Python's own limit for an integer literal (int("9" * 4301) is refused, so is the literal):
# a decimal text that long takes quadratic time to convert.
MAX_INT_DIGITS = 4300

KEYWORDS = frozenset({"true", "false", "none", "def", "for", "while", "break", "continue", "in", "if",
                      "else", "no_grad", "return", "and", "or", "not"})

_OPEN = {"LPAR": "(", "LSQB": "[", "LBRACE": "{"}
_CLOSE = {"RPAR": "LPAR", "RSQB": "LSQB", "RBRACE": "LBRACE"}
_CLOSE_CHAR = {"LPAR": ")", "LSQB": "]", "LBRACE": "}"}


# ---- loading ---------------------------------------------------------------

def _grammar_path():
    try:
        from importlib.resources import files
        res = files("autodsl") / "grammar" / "autodsl.lark"
        if res.is_file():
            return res
    except Exception:  # pragma: no cover - odd importers
        pass
    return Path(__file__).resolve().parents[2] / "grammar" / "autodsl.lark"


@functools.lru_cache(maxsize=1)
def grammar_text() -> str:
    """The text of the grammar file."""
    return _grammar_path().read_text(encoding="utf-8")


class _PostLex:
    """Drops newlines inside ( ) and [ ], and a newline right before `else`.

    So a call or a list literal may span lines, and ``}`` / ``else {`` may sit
    on separate lines, without making the LALR grammar ambiguous.
    """

    always_accept = ()

    def process(self, stream):
        stack: list[str] = []
        pending = None
        for tok in stream:
            kind = tok.type
            if kind == "_NL":
                if stack and stack[-1] != "LBRACE":
                    continue
                if pending is None:
                    pending = tok
                continue
            if pending is not None:
                if kind != "ELSE":
                    yield pending
                pending = None
            if kind in _OPEN:
                stack.append(kind)
            elif kind in _CLOSE and stack and stack[-1] == _CLOSE[kind]:
                stack.pop()
            yield tok
        if pending is not None:
            yield pending


@functools.lru_cache(maxsize=1)
def get_parser() -> Lark:
    """The Lark parser (built once)."""
    return Lark(grammar_text(), parser="lalr", lexer="basic", propagate_positions=True,
                maybe_placeholders=True, postlex=_PostLex())


# ---- tree -> AST -----------------------------------------------------------

def _pos(meta) -> dict:
    if getattr(meta, "empty", True):
        return {}
    end = meta.end_column if meta.end_line == meta.line else None
    return {"line": meta.line, "column": meta.column, "end_column": end}


def _tpos(tok: Token) -> dict:
    return {"line": tok.line, "column": tok.column, "end_column": tok.end_column}


class _Builder(Transformer_NonRecursive):
    """Parse tree -> ast.py nodes. Bottom-up, without recursion."""

    def __init__(self, source: A.Source):
        super().__init__(visit_tokens=False)
        self.source = source

    # statements
    @v_args(meta=True)
    def start(self, meta, children):
        return A.Program([c for c in children if c is not None], source=self.source, **_pos(meta))

    @v_args(meta=True)
    def block(self, meta, children):
        return [c for c in children if c is not None]

    @v_args(meta=True)
    def paren(self, meta, children):
        # `(a+b)`: the expression's span takes in its brackets, so that source text
        # cut from it (node positions, `explain`) stays balanced
        inner = children[0]
        p = _pos(meta)
        if p:
            inner.line, inner.column, inner.end_column = p["line"], p["column"], p["end_column"]
        return inner

    @v_args(meta=True)
    def expr_stmt(self, meta, children):
        return A.ExprStmt(children[0], **_pos(meta))

    @v_args(meta=True)
    def assign(self, meta, children):
        target, value = children
        p = _pos(meta)
        if isinstance(target, A.Name):
            return A.Assign(target.id, value, **p)
        if isinstance(target, A.Index):
            return A.SetItem(target.obj, target.keys, value, **p)
        if isinstance(target, A.Attribute):
            return A.SetAttr(target.obj, target.name, value, **p)
        raise self._bad_target(target, "=")

    @v_args(meta=True)
    def augassign(self, meta, children):
        target, op, value = children
        if not isinstance(target, (A.Name, A.Index)):
            raise self._bad_target(target, str(op))
        return A.AugAssign(target, str(op), value, **_pos(meta))

    def _bad_target(self, target, op):
        what = {A.Call: "a call", A.Number: "a number", A.String: "a string", A.Const: "a constant",
                A.ListExpr: "a list", A.Attribute: "an attribute"}.get(type(target), "this expression")
        hint = ("only a name (`x = ...`), an element (`x[i] = ...`) or a tensor's `grad` / "
                "`requires_grad` (`x.grad = none`) can be assigned")
        if op != "=":
            hint = f"`{op}` needs a name or an element on its left (`x {op} ...`, `x[i] {op} ...`)"
        return ParseError(f"cannot assign to {what}: {hint}").with_position(
            file=self.source.filename, line=target.line, column=target.column,
            source_line=self.source.line_text(target.line), end_column=target.end_column)

    @v_args(meta=True)
    def return_stmt(self, meta, children):
        return A.Return(children[0] if children else None, **_pos(meta))

    @v_args(meta=True)
    def break_stmt(self, meta, children):
        return A.Break(**_pos(meta))

    @v_args(meta=True)
    def continue_stmt(self, meta, children):
        return A.Continue(**_pos(meta))

    @v_args(meta=True)
    def funcdef(self, meta, children):
        name, params, body = children
        return A.FuncDef(str(name), params or [], body, source=self.source, **_pos(meta))

    def params(self, children):
        return [c for c in children if c is not None]

    @v_args(meta=True)
    def param(self, meta, children):
        name, default = children
        return A.Param(str(name), default, **_tpos(name))

    @v_args(meta=True)
    def for_stmt(self, meta, children):
        var, iterable, body = children
        return A.For(str(var), iterable, body, **_pos(meta))

    @v_args(meta=True)
    def while_stmt(self, meta, children):
        cond, body = children
        return A.While(cond, body, **_pos(meta))

    @v_args(meta=True)
    def if_stmt(self, meta, children):
        cond, body, orelse = children
        if isinstance(orelse, A.If):
            orelse = [orelse]
        return A.If(cond, body, orelse, **_pos(meta))

    @v_args(meta=True)
    def nograd_stmt(self, meta, children):
        return A.NoGrad(children[0], **_pos(meta))

    # expressions
    @v_args(meta=True)
    def or_expr(self, meta, children):
        return A.BoolOp("or", children, **_pos(meta))

    @v_args(meta=True)
    def and_expr(self, meta, children):
        return A.BoolOp("and", children, **_pos(meta))

    @v_args(meta=True)
    def not_op(self, meta, children):
        return A.Not(children[0], **_pos(meta))

    @v_args(meta=True)
    def comparison(self, meta, children):
        left, op, right = children
        return A.Compare(left, str(op), right, **_pos(meta))

    @v_args(meta=True)
    def _chain(self, meta, children):
        ops = [(str(children[i]), children[i + 1], children[i].line, children[i].column)
               for i in range(1, len(children), 2)]
        return A.Chain(children[0], ops, **_pos(meta))

    arith = _chain
    term = _chain

    @v_args(meta=True)
    def unary(self, meta, children):
        op, operand = children
        return A.Unary(str(op), operand, **_pos(meta))

    @v_args(meta=True)
    def power(self, meta, children):
        base, exponent = children
        return A.Power(base, exponent, **_pos(meta))

    @v_args(meta=True)
    def call(self, meta, children):
        func, arguments = children
        args, kwargs = [], []
        seen = set()
        for a in arguments or []:
            if isinstance(a, A.Keyword):
                if a.name in seen:
                    raise ParseError(f"keyword argument `{a.name}` is given twice").with_position(
                        file=self.source.filename, line=a.line, column=a.column,
                        source_line=self.source.line_text(a.line), end_column=a.end_column)
                seen.add(a.name)
                kwargs.append(a)
            else:
                if kwargs:
                    raise ParseError("a positional argument cannot follow a keyword argument: "
                                     "put positional arguments first").with_position(
                        file=self.source.filename, line=a.line, column=a.column,
                        source_line=self.source.line_text(a.line), end_column=a.end_column)
                args.append(a)
        return A.Call(func, args, kwargs, **_pos(meta))

    def arguments(self, children):
        return [c for c in children if c is not None]

    @v_args(meta=True)
    def kwarg(self, meta, children):
        name, value = children
        return A.Keyword(str(name), value, **_tpos(name))

    @v_args(meta=True)
    def attr(self, meta, children):
        obj, name = children
        # the caret of an attribute error points at `.name`
        return A.Attribute(obj, str(name), line=name.line, column=max(1, name.column - 1),
                           end_column=name.end_column)

    @v_args(meta=True)
    def index(self, meta, children):
        obj, keys = children
        return A.Index(obj, keys, **_pos(meta))

    def subscripts(self, children):
        return [c for c in children if c is not None]

    @v_args(meta=True)
    def slice(self, meta, children):
        lower, upper, step = (list(children) + [None, None, None])[:3]
        return A.Slice(lower, upper, step, **_pos(meta))

    @v_args(meta=True)
    def number(self, meta, children):
        tok = children[0]
        text = str(tok)
        if not text.isdigit():
            return A.Number(float(text), **_pos(meta))      # beyond 1.8e308: inf, as Python's float
        value = None
        if len(text) <= MAX_INT_DIGITS:
            try:
                value = int(text)
            except ValueError:          # a host that lowered sys.set_int_max_str_digits
                pass
        if value is None:
            # (the host's limit where it lowered it; 0 there means none)
            limit = min(MAX_INT_DIGITS, sys.get_int_max_str_digits() or MAX_INT_DIGITS)
            raise ParseError(f"this integer has {len(text)} digits, more than the {limit} an integer "
                             "written in a script may have (as in Python); write a number this large as a "
                             "float (`1.5e300`; beyond about 1.8e308 a float is inf)").with_position(
                file=self.source.filename, **_tpos(tok), source_line=self.source.line_text(tok.line))
        return A.Number(value, **_pos(meta))

    @v_args(meta=True)
    def string(self, meta, children):
        tok = children[0]
        try:
            value = _pyast.literal_eval(str(tok))
        except (ValueError, SyntaxError):
            raise ParseError("this string has an escape sequence that is not understood; "
                             "use \\n, \\t, \\\\, \\\" or \\'").with_position(
                file=self.source.filename, **_tpos(tok), source_line=self.source.line_text(tok.line))
        return A.String(value, **_pos(meta))

    @v_args(meta=True)
    def fstring(self, meta, children):
        tok = children[0]
        src = self.source
        try:
            pieces = split_fstring(str(tok))
        except FStringError as e:
            raise _err(e.message, src, tok.line, tok.column + e.start, tok.column + e.end) from None
        parts: list = []
        for p in pieces:
            if isinstance(p, Field):
                expr = _parse_field(p.expr, src, tok.line, tok.column + p.offset)
                parts.append(A.FormatField(expr, p.spec, line=tok.line, column=tok.column + p.start,
                                           end_column=tok.column + p.end))
            else:
                parts.append(str(p))
        return A.FString(parts, **_pos(meta))

    @v_args(meta=True)
    def true(self, meta, children):
        return A.Const(True, **_pos(meta))

    @v_args(meta=True)
    def false(self, meta, children):
        return A.Const(False, **_pos(meta))

    @v_args(meta=True)
    def none(self, meta, children):
        return A.Const(None, **_pos(meta))

    @v_args(meta=True)
    def name(self, meta, children):
        return A.Name(str(children[0]), **_pos(meta))

    @v_args(meta=True)
    def list(self, meta, children):
        return A.ListExpr([c for c in children if c is not None], **_pos(meta))


def _parse_field(text: str, src: A.Source, line: int, column: int) -> A.Expr:
    """The expression of an f-string field that starts at (line, column) of ``src``.

    It is parsed as a program of its own (one line: an f-string has no newline), and its
    nodes, or the error, are then moved to their place, so that they carry the positions
    of the script itself. Only a syntax error parses it again moved into place by blank
    lines and spaces in front (its message may name other lines and columns): padding
    every field made a script of many f-strings quadratic.
    """
    try:
        tree = get_parser().parse(text)
    except UnexpectedInput:
        padded = "\n" * (line - 1) + " " * (column - 1) + text
        try:
            get_parser().parse(padded)
        except UnexpectedInput as e:
            err = _translate(e, A.Source(src.filename, padded))
            err.source_line = src.line_text(err.line)
            raise err from None
        except LarkError as e:
            raise _lark_error(e, src) from None
        raise _err("this f-string field cannot be read", src, line, column, column + len(text)) from None
    except LarkError as e:
        raise _lark_error(e, src) from None
    try:
        program = _build(tree, src)
    except ParseError as e:
        if e.line is not None:      # a position in the field's own text: move it into the script
            e.line, e.column = line, (e.column or 1) + column - 1
            e.end_column = None if e.end_column is None else e.end_column + column - 1
            e.source_line = src.line_text(line)
        raise
    _shift(program, line, column - 1)
    body = program.body
    if len(body) != 1 or not isinstance(body[0], A.ExprStmt):
        raise _err("only an expression can go inside the `{ }` of an f-string (no `=`, `;` or statements)",
                   src, line, column, column + len(text))
    return body[0].expr


def _shift(program: A.Program, line: int, columns: int) -> None:
    """Move every node of a one-line ``program`` to ``line``, ``columns`` to the right."""
    stack = [program]
    while stack:
        node = stack.pop()
        node.line = line
        node.column += columns
        if node.end_column is not None:
            node.end_column += columns
        if isinstance(node, A.Chain):
            node.ops = [(op, operand, line, col + columns) for op, operand, _, col in node.ops]
        stack.extend(A.children(node))


def _build(tree, src: A.Source) -> A.Program:
    """The AST of a Lark tree; a DSLError raised by a rule passes unwrapped, anything
    else a rule raises becomes a ParseError at that rule's place."""
    try:
        return _Builder(src).transform(tree)
    except VisitError as e:
        orig = e.orig_exc
        if isinstance(orig, DSLError):
            raise orig from None
        if isinstance(orig, (MemoryError, RecursionError)):
            raise orig from None        # the run's own handling of "out of memory" and depth
        meta = getattr(e.obj, "meta", None)
        line = getattr(meta, "line", None) if meta is not None and not getattr(meta, "empty", True) else None
        err = ParseError(f"this part of the script could not be read (an internal error of the parser, "
                         f"{type(orig).__name__}); please report it with the script")
        if line is not None:
            err.with_position(file=src.filename, line=line, column=meta.column,
                              source_line=src.line_text(line),
                              end_column=meta.end_column if meta.end_line == line else None)
        raise err from None


def _lark_error(e: LarkError, src: A.Source) -> ParseError:
    """Any other exception of Lark's (not a syntax error) as a ParseError."""
    err = ParseError(f"the script could not be read (an internal error of the parser, {type(e).__name__}); "
                     "please report it with the script")
    line = getattr(e, "line", None)
    if isinstance(line, int) and line > 0:
        col = getattr(e, "column", None)
        err.with_position(file=src.filename, line=line, column=col if isinstance(col, int) and col > 0 else 1,
                          source_line=src.line_text(line))
    return err


def _check_nesting(program: A.Program, source: A.Source) -> None:
    """Refuse nodes more than ``MAX_NESTING`` levels deep (an explicit stack: no recursion)."""
    stack = [(program, 0)]
    while stack:
        node, depth = stack.pop()
        if depth > MAX_NESTING + 1:      # depth 0 is the program, 1 a statement of it: levels count from there
            raise _err(f"this is nested too deeply: more than {MAX_NESTING} levels of brackets, operators, "
                       "calls or blocks inside each other; split it into several statements that name "
                       "the parts (`a = ...`, then use `a`)", source, node.line, node.column,
                       node.end_column)
        depth += 1
        stack.extend((child, depth) for child in A.children(node))


def _check_jumps(program: A.Program, source: A.Source) -> None:
    """`return` only inside `def`; `break` / `continue` only inside a loop of the same
    function (an explicit stack: no recursion)."""
    stack = [(s, False, False) for s in program.body]
    while stack:
        stmt, in_def, in_loop = stack.pop()
        if isinstance(stmt, A.Return) and not in_def:
            raise ParseError("`return` outside a function: it can only appear inside `def name(...) { ... }`"
                             ).with_position(file=source.filename, line=stmt.line, column=stmt.column,
                                             source_line=source.line_text(stmt.line), end_column=stmt.column + 6)
        if isinstance(stmt, (A.Break, A.Continue)) and not in_loop:
            word = "break" if isinstance(stmt, A.Break) else "continue"
            where = (" of the same function (a function body does not see the loops it is called from)"
                     if in_def else "")
            raise _err(f"`{word}` outside a loop: it can only appear inside a `for` or `while` block{where}",
                       source, stmt.line, stmt.column, stmt.column + len(word))
        if isinstance(stmt, A.FuncDef):
            stack.extend((s, True, False) for s in stmt.body)
        elif isinstance(stmt, (A.For, A.While)):
            stack.extend((s, in_def, True) for s in stmt.body)
        elif isinstance(stmt, A.NoGrad):
            stack.extend((s, in_def, in_loop) for s in stmt.body)
        elif isinstance(stmt, A.If):
            stack.extend((s, in_def, in_loop) for s in stmt.body)
            stack.extend((s, in_def, in_loop) for s in stmt.orelse or [])


# ---- public entry points ---------------------------------------------------

def parse(source: str, filename: str = "<string>") -> A.Program:
    """Parse a whole source text into an ``ast.Program``; raises ParseError."""
    src = A.Source(filename, source)
    try:
        tree = get_parser().parse(source)
    except UnexpectedInput as e:
        raise _translate(e, src) from None
    except LarkError as e:
        raise _lark_error(e, src) from None
    program = _build(tree, src)
    _check_nesting(program, src)
    _check_jumps(program, src)
    return program


def _tokens_until(source: str, line: int, column: int) -> list[Token]:
    """The tokens before (line, column), ignoring any lexing error after them."""
    out = []
    try:
        for tok in get_parser().lex(source):
            if (tok.line, tok.column) >= (line, column):
                break
            out.append(tok)
    except UnexpectedInput:
        pass
    return out


def _open_brackets(tokens) -> list[Token]:
    stack: list[Token] = []
    for tok in tokens:
        if tok.type in _OPEN:
            stack.append(tok)
        elif tok.type in _CLOSE and stack and stack[-1].type == _CLOSE[tok.type]:
            stack.pop()
    return stack


_EXPR_START = {"NAME", "NUMBER", "STRING", "FSTRING", "LPAR", "LSQB", "TRUE", "FALSE", "NONE", "MINUS",
               "PLUS"}
_HUMAN = {
    "RPAR": "`)`", "RSQB": "`]`", "RBRACE": "`}`", "LPAR": "`(`", "LSQB": "`[`", "LBRACE": "`{`",
    "COMMA": "`,`", "COLON": "`:`", "SEMICOLON": "`;`", "EQUAL": "`=`", "_NL": "a new line",
    "NAME": "a name", "NUMBER": "a number", "STRING": "a string", "DOT": "`.`",
    "$END": "the end of the input", "IN": "`in`", "ELSE": "`else`", "CIRCUMFLEX": "`^`",
    "PLUS": "`+`", "MINUS": "`-`", "STAR": "`*`", "SLASH": "`/`", "AT": "`@`", "PERCENT": "`%`",
    "DSLASH": "`//`", "FSTRING": "an f-string",
    "COMP_OP": "a comparison", "AUGOP": "`+=`", "OR": "`or`", "AND": "`and`", "NOT": "`not`",
}


def _describe(tok: Token) -> str:
    if tok.type == "$END":
        return "end of input"
    if tok.type == "_NL":
        return "end of line"
    if tok.type == "NAME":
        return f"name `{tok}`"
    if tok.type == "NUMBER":
        return f"number `{tok}`"
    if tok.type in ("STRING", "FSTRING"):
        return f"string {tok}"
    if str(tok) in KEYWORDS:
        return f"keyword `{tok}`"
    return f"`{tok}`"


def _expected(expected) -> str:
    exp = set(expected)
    parts = []
    if len(exp & _EXPR_START) >= 5:
        parts.append("an expression")
        exp -= _EXPR_START | {"NOT"}
    for name in sorted(exp):
        if name in _HUMAN and _HUMAN[name] not in parts:
            parts.append(_HUMAN[name])
    if not parts:
        return ""
    if len(parts) > 6:
        parts = parts[:6] + ["..."]
    return "; expected " + (parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " or " + parts[-1])


def _err(msg: str, src: A.Source, line: int, column: int, end_column: int | None = None) -> ParseError:
    return ParseError(msg).with_position(file=src.filename, line=line, column=column,
                                         source_line=src.line_text(line), end_column=end_column)


def _translate(e: UnexpectedInput, src: A.Source) -> ParseError:
    text = src.text
    if isinstance(e, UnexpectedCharacters):
        ch = text[e.pos_in_stream] if 0 <= e.pos_in_stream < len(text) else "?"
        if ch in "\"'":
            msg = f"this string is never closed: add the closing {ch} on the same line"
        elif ch == "&":
            msg = "unexpected character `&`: use `and` to combine conditions"
        elif ch == "|":
            msg = "unexpected character `|`: use `or` to combine conditions"
        elif ch == "!":
            msg = "unexpected character `!`: use `not` for negation, `!=` for 'not equal'"
        elif ch == "\\":
            msg = "unexpected `\\`: a line continuation must be the last character on its line"
        elif ch.isidentifier() and not ch.isascii():       # Python's names take it, the language's do not
            msg = (f"unexpected character `{ch}`: a name is made of ASCII letters, digits and `_` "
                   f"(alpha, not α); `{ch}` may be in strings and comments")
        elif ch == "?":
            msg = "unexpected character `?`: there is no `name?`; write help(name) (:help name at the prompt)"
        elif not ch.isprintable() or ch.isspace():      # NUL, a zero-width space: name it by its code
            msg = f"unexpected invisible character U+{ord(ch):04X}; delete it (it may come from a copy and paste)"
        else:
            msg = f"unexpected character `{ch}`"
        return _err(msg, src, e.line, e.column)

    tok = e.token if isinstance(e, UnexpectedToken) else None
    expected = getattr(e, "expected", None) or getattr(e, "accepts", None) or set()
    at_end = tok is None or tok.type == "$END"
    if at_end:
        stack = _open_brackets(_tokens_until(text, 10 ** 9, 0))
        if stack:
            o = stack[-1]
            return _err(f"missing closing `{_CLOSE_CHAR[o.type]}`: the `{o}` opened here is never closed",
                        src, o.line, o.column, o.end_column)
        lines = text.rstrip().split("\n")
        line = len(lines)
        col = len(lines[-1]) + 1 if lines else 1
        return _err("unexpected end of input: the statement is not finished" + _expected(expected),
                    src, line, col)

    line, col = tok.line, tok.column
    before = _tokens_until(text, line, col)
    stack = _open_brackets(before)
    prev = before[-1] if before else None
    if tok.type == "RBRACE" and prev is not None and prev.type == "FSTRING" and tok.line == prev.line \
            and tok.column == prev.end_column:
        # f"{x"}: the f-string ended at a quote inside its field, and the `}` after it is stray
        try:
            split_fstring(str(prev))
        except FStringError:
            q = str(prev)[1]
            other = "'" if q == '"' else '"'
            return _err(f"this f-string ends at the {q} before its field's `}}`: close the field before "
                        f"the quote (f{q}{{x}}{q}); a string inside the `{{ }}` takes the other quote "
                        f"({other}...{other})", src, prev.line, prev.column, tok.end_column)
    if tok.type in _CLOSE:
        if stack and stack[-1].type != _CLOSE[tok.type]:
            o = stack[-1]
            return _err(f"`{tok}` does not match the `{o}` opened at line {o.line}, column {o.column}; "
                        f"expected `{_CLOSE_CHAR[o.type]}`", src, line, col, tok.end_column)
        if not stack:
            return _err(f"unmatched `{tok}`: there is no opening bracket for it", src, line, col, tok.end_column)
    if stack and stack[-1].line < line and stack[-1].type != "LBRACE":
        o = stack[-1]
        return _err(f"missing closing `{_CLOSE_CHAR[o.type]}`: the `{o}` opened here is still open "
                    f"at line {line}", src, o.line, o.column, o.end_column)
    prev = before[-1] if before else None
    if tok.type == "COLON" and (prev is None or prev.type in ("_NL", "SEMICOLON")):
        # `:explain f w` piped into `autodsl`, or in a .ad file: those are the REPL's commands
        return _err("`:` commands (such as `:explain f x`) work only at the interactive prompt; in a "
                    "script call the built-in of the same name (`explain(f, x)`, `why(x)`, `info(x)`)",
                    src, line, col, tok.end_column)
    hint = syntax_hint(tok, before, expected)
    if hint is not None:
        msg, first, last = hint
        return _err(msg, src, first.line, first.column, last.end_column if last.line == first.line else None)
    if tok.type == "STAR" and prev is not None and prev.type == "STAR":
        return _err("`**` is not an operator: use `^` for powers (`x^2`)", src, prev.line, prev.column,
                    tok.end_column)
    if tok.type == "COMP_OP" and "COMP_OP" not in expected and _comparison_before(before):
        return _err("comparisons do not chain: write `(a < b) and (b < c)` instead of `a < b < c`",
                    src, line, col, tok.end_column)
    if tok.type == "_NL" and "LBRACE" in expected:
        return _err("expected `{` on the same line to open the block", src, line, col)
    if tok.type == "EQUAL" and "EQUAL" not in expected:
        return _err("unexpected `=`: use `==` to compare, or assign with `name = value` "
                    "as a statement of its own", src, line, col, tok.end_column)
    if tok.type in ("NAME", "NUMBER", "STRING", "FSTRING", "LPAR", "LSQB") and prev is not None and \
            prev.type in ("NAME", "NUMBER", "STRING", "FSTRING", "RPAR", "RSQB"):
        return _err(f"unexpected {_describe(tok)}: an operator or a `;` / new line is missing before it",
                    src, line, col, tok.end_column)
    return _err(f"unexpected {_describe(tok)}" + _expected(expected), src, line, col, tok.end_column)


def _comparison_before(tokens) -> bool:
    """Is there a comparison earlier in the same statement (`a < b < c`)?"""
    for t in reversed(tokens):
        if t.type in ("_NL", "SEMICOLON", "LBRACE", "RBRACE"):
            return False
        if t.type == "COMP_OP":
            return True
    return False


def is_incomplete(source: str) -> bool:
    """True when ``source`` ended too early and a next line can go on with it (the REPL should
    read another line): inside brackets or a block, or after a ``\\``. A top-level statement
    cut short where a new line cannot go (``x = 1 +``: a new line ends it there) is not waited
    for: no next line could finish it, so it is an error now. Inside a ``{ }`` block the input
    stays open until the block is closed, whose parse then names the unfinished line (an
    error at once would read "missing closing `}`")."""
    if source.rstrip(" \t").endswith("\\"):
        return True
    if not _ends_early(source):
        return False
    return _ends_early(source + "\n") or any(t.type == "LBRACE" for t in _open_brackets(
        _tokens_until(source, 10 ** 9, 0)))


def _ends_early(source: str) -> bool:
    try:
        get_parser().parse(source)
    except UnexpectedToken as e:
        return e.token.type == "$END"
    except UnexpectedEOF:
        return True
    except (UnexpectedInput, LarkError):
        return False
    return False
