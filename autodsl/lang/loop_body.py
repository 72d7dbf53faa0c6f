"""A loop body that runs many times, as one Python function made once.

Note [compiled loop bodies]: walking the AST costs, for each statement of a loop body, a
handful of Python calls (``exec``, ``exec_Assign``, ``eval``, ``eval_Call``, ``call``...)
and their dispatch: for `y = relu(y*0.999 + 0.001)` about 60% more than the three ops it
runs. ``compile_for`` (a `for` loop with its body) and ``compile_body`` (a `while` loop's
body) write the statements out as the source of one Python function
that does what those calls do, inline, and compiles it once; the loop keeps it on its AST
node, so a loop in a function compiles once for every call.

Only the common node kinds are spelled out (an assignment to a name, an expression
statement, names, literals, `+ - * / // % @` chains and calls with positional arguments);
every other node is run by the interpreter's own ``exec`` / ``eval``, called from the
generated code. What is spelled out keeps the interpreter's semantics step by step: the
same name lookups (innermost scope, then the general lookup), the same fast test before an
operator, the same source position set for each op, the same step counting, and the same
error translation and positions (each node's code sits in the ``try`` that ``eval`` or
``exec`` would wrap it in). ``break`` and ``continue`` pass through as they do from ``exec``.

The generated code's file name lies inside the package, so that the frame walks of
autodsl/source.py take its frames for autodsl's own, as they take the interpreter's.
"""
from __future__ import annotations

import os

from autodsl.context import current
from autodsl.core.tensor import Tensor
from autodsl.errors import DSLError
from autodsl.lang import ast as A
from autodsl.lang.values import translate_exception

__all__ = ["compile_body", "compile_for", "COMPILE_AT"]

# Iterations from which a loop's body is compiled: below it, writing and compiling the
# function (a fraction of a millisecond) costs more than it saves.
COMPILE_AT = 64

_FILE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "<loop body>")
_OPERATORS = {"+": "+", "-": "-", "*": "*", "/": "/", "%": "%", "//": "//"}     # (not `@`)


class _Missing:
    __slots__ = ()


_MISSING = _Missing()


class _Writer:
    """The source of one body function, and the objects its code refers to by name."""

    def __init__(self, interp):
        self.interp = interp
        self.lines: list[str] = []
        self.env = {"MISSING": _MISSING, "Tensor": Tensor, "DSLError": DSLError,
                    "translate_exception": translate_exception, "current": current}
        self.temps = 0

    def ref(self, obj, prefix: str = "K") -> str:
        name = f"{prefix}{len(self.env)}"
        self.env[name] = obj
        return name

    def literal(self, value) -> str:
        """A constant's text in the code: Python's own literal where it reads back exactly
        (a compiled constant, loaded without a name lookup), else a name for the object."""
        if value is None or type(value) in (bool, int, float) and value == value and abs(value) != float("inf"):
            return repr(value)
        return self.ref(value)

    def temp(self) -> str:
        self.temps += 1
        return f"t{self.temps}"

    def emit(self, depth: int, text: str) -> None:
        self.lines.append("    " * depth + text)

    def guarded(self, depth: int, node_ref: str) -> None:
        """The handlers ``eval`` and ``exec`` wrap a node's code in."""
        self.emit(depth, "except DSLError as e:")
        self.emit(depth + 1, f"raise I._attach(e, {node_ref})")
        self.emit(depth, "except BrokenPipeError:")
        self.emit(depth + 1, "raise")
        self.emit(depth, "except Exception as e:")
        self.emit(depth + 1, f"raise I._attach(translate_exception(e), {node_ref}) from None")

    # -- expressions: each returns the name that holds its value ------------------------------
    def expr(self, node: A.Expr, depth: int) -> str:
        tp = type(node)
        if tp is A.Number or tp is A.String or tp is A.Const:
            return self.literal(node.value)
        if tp is A.Name:
            return self.name(node, depth)
        if tp is A.Chain:
            return self.chain(node, depth)
        if tp is A.Call and not node.keywords:
            return self.call(node, depth)
        out = self.temp()
        self.emit(depth, f"{out} = I.eval({self.ref(node, 'N')})")
        return out

    def name(self, node: A.Name, depth: int) -> str:
        out = self.temp()
        if node.id[0] == "_":
            self.emit(depth, f"{out} = I.eval({self.ref(node, 'N')})")      # (its error, positioned)
            return out
        # eval_Name: the innermost scope first, else the general lookup
        self.emit(depth, f"{out} = vars.get({node.id!r}, MISSING)")
        self.emit(depth, f"if {out} is MISSING:")
        self.emit(depth + 1, f"{out} = I.eval({self.ref(node, 'N')})")
        return out

    def chain(self, node: A.Chain, depth: int) -> str:
        interp = self.interp
        first = node.first
        positions = node.__dict__.get("_pos") or interp._chain_positions(node)
        out = self.temp()
        self.emit(depth, "try:")
        d = depth + 1
        value = self.expr(first, d)
        self.emit(d, f"{out} = {value}")
        for (op, operand, line, column), pos in zip(node.ops, positions):
            right = self.expr(operand, d)
            p = self.ref(pos, "P")
            self.emit(d, "try:")
            if op in _OPERATORS:
                known = type(operand) is A.Number and type(operand.value) in (int, float)
                if known:       # (eval_Chain's test, with the number's type known)
                    self.emit(d + 1, f"if type({out}) is Tensor:")
                else:
                    self.emit(d + 1, f"ta = type({out}); tb = type({right})")
                    self.emit(d + 1, "if ((ta is Tensor and (tb is Tensor or tb is float or tb is int))"
                                     " or (tb is Tensor and (ta is float or ta is int))):")
                self.emit(d + 2, f"outer = ctx.pos; ctx.pos = {p}")
                self.emit(d + 2, "try:")
                self.emit(d + 3, f"{out} = {out} {_OPERATORS[op]} {right}")
                self.emit(d + 2, "finally:")
                self.emit(d + 3, "ctx.pos = outer")
                self.emit(d + 1, "else:")
                self.emit(d + 2, f"{out} = I.binop({op!r}, {out}, {right}, {p})")
            else:
                self.emit(d + 1, f"{out} = I.binop({op!r}, {out}, {right}, {p})")
            self.emit(d, "except Exception as exc:")
            self.emit(d + 1, f"e = I._operator_error(exc, {line}, {column})")
            self.emit(d + 1, "if e is exc:")
            self.emit(d + 2, "raise")
            self.emit(d + 1, "raise e from None")
        self.guarded(depth, self.ref(node, "N"))
        return out

    def call(self, node: A.Call, depth: int) -> str:
        interp = self.interp
        f = node.func
        out = self.temp()
        me = self.ref(node, "N")
        pos = self.ref(interp._node_pos(node), "P")
        self.emit(depth, "try:")
        d = depth + 1
        func = self.temp()
        if type(f) is A.Name and f.id[0] != "_":
            # eval_Call: a name of the innermost scope, else a built-in at the top level,
            # else the general lookup
            self.emit(d, f"{func} = vars.get({f.id!r}, MISSING)")
            self.emit(d, f"if {func} is MISSING:")
            self.emit(d + 1, f"{func} = B.get({f.id!r}, MISSING) if top else MISSING")
            self.emit(d + 1, f"if {func} is MISSING:")
            self.emit(d + 2, f"{func} = I.eval({self.ref(f, 'N')})")
        else:
            self.emit(d, f"{func} = {self.expr(f, d)}")
        args = ", ".join(self.expr(a, d) for a in node.args)
        self.emit(d, f"if type({func}) in FUNCTION_TYPES:")       # Interpreter.call's usual case
        self.emit(d + 1, f"outer = ctx.pos; ctx.pos = {pos}")
        self.emit(d + 1, "try:")
        self.emit(d + 2, f"{out} = {func}({args})")
        self.emit(d + 1, "except TypeError as e:")
        self.emit(d + 2, f"raise I._call_type_error({func}, [{args}], {{}}, {me}, e) from None")
        self.emit(d + 1, "finally:")
        self.emit(d + 2, "ctx.pos = outer")
        self.emit(d, "else:")
        self.emit(d + 1, f"{out} = I.call({func}, [{args}], {{}}, {me})")
        self.guarded(depth, me)
        return out

    # -- statements ------------------------------------------------------------------------
    def stmt(self, stmt: A.Stmt, depth: int) -> None:
        tp = type(stmt)
        if not (tp is A.Assign and stmt.name[0] != "_" or tp is A.ExprStmt):
            self.emit(depth, f"I.exec({self.ref(stmt, 'S')})")
            return
        me = self.ref(stmt, "S")
        self.emit(depth, "try:")
        d = depth + 1
        self.emit(d, "if L is not None:")
        self.emit(d + 1, "L.step()")
        value = self.expr(stmt.value if tp is A.Assign else stmt.expr, d)
        if tp is A.Assign:
            self.emit(d, f"vars[{stmt.name!r}] = {value}")
        else:       # (through a name: `0 is not None` on a literal is a SyntaxWarning in Python)
            shown = self.temp()
            self.emit(d, f"{shown} = {value}")
            self.emit(d, f"if {shown} is not None and I.echo is not None:")
            self.emit(d + 1, f"I.echo({shown})")
        self.guarded(depth, me)


def compile_body(body: list[A.Stmt], interp, function_types) -> "callable":
    """``run(I, vars, B, top)``: runs ``body`` once as ``interp`` would, given the interpreter,
    the innermost scope's dict, the built-ins and whether that scope is the session's (a
    `while` loop's body: the loop itself stays the interpreter's, with its condition); None
    where Python cannot compile it (``_made``)."""
    w = _Writer(interp)
    w.env["FUNCTION_TYPES"] = function_types
    w.emit(0, "def run(I, vars, B, top):")
    w.emit(1, "ctx = current(); L = I.limits")
    for stmt in body:
        w.stmt(stmt, 1)
    if not body:
        w.emit(1, "pass")
    return _made(w, "run")


def compile_for(loop: A.For, interp, function_types, stop_loop, next_iteration) -> "callable":
    """``run(I, items, vars, B, top, report, total)``: the rest of ``Interpreter.exec_For``
    (its iterations over ``items``, as ``_iteration`` runs them, and the progress ``report``),
    with ``loop``'s body written out. ``stop_loop`` and ``next_iteration``: the exceptions that
    `break` and `continue` raise. None where Python cannot compile it (``_made``)."""
    w = _Writer(interp)
    w.env.update(FUNCTION_TYPES=function_types, Break=stop_loop, Continue=next_iteration)
    w.emit(0, "def run(I, items, vars, B, top, report, total):")
    # (the run context and the limits stay the same for the whole loop: a call into another
    # session's function enters and leaves its own)
    w.emit(1, "ctx = current(); L = I.limits")
    w.emit(1, "for done, item in enumerate(items, 1):")
    w.emit(2, f"vars[{loop.var!r}] = item")
    w.emit(2, "if L is not None:")
    w.emit(3, "L.step()")
    w.emit(2, "try:")
    for stmt in loop.body:
        w.stmt(stmt, 3)
    if not loop.body:
        w.emit(3, "pass")
    w.emit(2, "except Continue:")
    w.emit(3, "pass")
    w.emit(2, "except Break:")
    w.emit(3, "break")
    w.emit(2, "if report is not None:")
    w.emit(3, "report(done, total)")
    return _made(w, "run")


def _made(w: _Writer, name: str):
    """The function ``name`` that ``w`` wrote, or None where Python cannot compile it (an
    expression nested past Python's limit of nested blocks: the interpreter runs the loop)."""
    try:
        code = compile("\n".join(w.lines) + "\n", _FILE, "exec")
    except (SyntaxError, RecursionError):
        return None
    exec(code, w.env)        # noqa: S102 - our own code, written from the AST
    return w.env[name]
