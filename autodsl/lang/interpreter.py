"""Evaluates the AST: binding, scopes, control flow and nothing else.

The interpreter is a thin skin over the Python API (DESIGN §5): `a + b` is
Python's `+` on autodsl Tensors (their dunders do the work), `a ^ b` is
``autodsl.pow``, `x[i] = e` is ``x.__setitem__``, `x += e` is the in-place
op, `no_grad { ... }` is ``with no_grad():``. It computes no tensor semantics
itself; plain Python numbers stay numbers (`2^3^2` is the int 512).

What a script can reach is limited: names in its scopes and the built-ins;
on a tensor only ``PUBLIC_ATTRIBUTES`` and ``PUBLIC_METHODS``; on a graph
node only ``name`` and ``next_functions``; nothing whose name starts with `_`.

Errors are translated once, here: a DSLError gets the position of the
innermost AST node it passed through (``with_position`` keeps an existing
one); any other Python exception becomes the closest DSLError subclass. An
error leaving a user function's body gets a line saying where that call was
(``DSLError.calls``: ``in f(), called at 7:5 `f(w)```, or for a tensor hook
``in the hook f() on `x`, run by `y.backward()` at 9:1``).

Statement lists are walked by loops and `+ - * / @` chains are flat, so long
scripts and 3000-term sums need no deep recursion; user-function recursion is
capped at ``MAX_CALL_DEPTH``. A loop that runs ``COMPILE_AT`` times or more runs
its body as one generated function that does what this module does, inline
(Note [compiled loop bodies], lang/loop_body.py).
"""
from __future__ import annotations

import inspect
import operator
import types
from typing import Any, Callable

from autodsl.errors import DSLError, IndexError_, NameError_, RuntimeError_, TypeError_, ValueError_
from autodsl.backend import is_host_array
from autodsl.core.tensor import PUBLIC_ATTRIBUTES, PUBLIC_METHODS, Tensor, as_tensor
from autodsl.lang import ast as A
from autodsl.lang.loop_body import COMPILE_AT, compile_body, compile_for
from autodsl.lang.python_words import NAME_HINTS, TENSOR_ATTRIBUTE_HINTS
from autodsl.lang.values import (describe, describe_value, number_pow, param_text, suggest, translate_exception,
                     truth)

from autodsl.context import call_in, current, scoped
from autodsl.source import SOURCE_POS  # the language records where each graph node came from
from autodsl.source import SourcePos, caller_pos, format_pos
from autodsl.core.node import Node as _GraphNode
from autodsl.core.grad_mode import no_grad
from autodsl.core.limits import BIG_ALLOCATION, reserve
from autodsl.core.journal import record_items, record_setter
from autodsl.core.words import plain
from autodsl.ops.elementwise import pow as tensor_pow
from autodsl.tools.formatting import format as format_field

__all__ = ["Interpreter", "UserFunction", "Scope", "MAX_CALL_DEPTH", "translate_exception",
           "NODE_ATTRIBUTES", "SETTABLE_ATTRIBUTES", "describe", "loop_progress"]

MAX_CALL_DEPTH = 200
ROW_BYTES = 400         # about what one row view of a tensor a `for` loop makes takes (Python objects)
NODE_ATTRIBUTES = frozenset({"name", "next_functions"})
SETTABLE_ATTRIBUTES = frozenset({"grad", "requires_grad"})

_BINOPS = {"+": operator.add, "-": operator.sub, "*": operator.mul, "/": operator.truediv,
           "@": operator.matmul, "%": operator.mod, "//": operator.floordiv}
_INPLACE = {"+=": operator.iadd, "-=": operator.isub, "*=": operator.imul, "/=": operator.itruediv,
            "%=": operator.imod, "//=": operator.ifloordiv}
_COMPARE = {"<": operator.lt, "<=": operator.le, ">": operator.gt, ">=": operator.ge,
            "==": operator.eq, "!=": operator.ne}
_NUMBER = (bool, int, float)

# The one hook for progress display: a callback ``(done, total)`` in the run context that
# the outermost running `for` loop calls after each iteration (``total`` is None when the
# length is unknown). The REPL and the command line install one only when stderr is a
# terminal, so scripts' output never changes.

def loop_progress(callback: Callable[[int, int | None], None] | None):
    """While open, the outermost `for` loop reports ``callback(done, total)`` after each iteration."""
    return scoped(loop_progress=callback)


def _is_number(v) -> bool:
    return isinstance(v, _NUMBER)


# The types of a built-in's function (plain Python, C, or compiled by Cython): never a user
# function, a tensor or a class, and not a tensor's bound method (register_hook): the checks
# that a call of anything else goes through can be skipped (Interpreter.call).
_FUNCTION_TYPES = frozenset((types.FunctionType, types.BuiltinFunctionType, type(tensor_pow)))


class _Return(BaseException):
    """Carries a `return` value out of a function body (never escapes a call)."""

    def __init__(self, value):
        super().__init__()
        self.value = value


class _Break(BaseException):
    """`break`: leaves the innermost loop (the parser allows it only inside one)."""


class _Continue(BaseException):
    """`continue`: ends this iteration of the innermost loop."""


class Scope:
    """A dict of bindings and the enclosing scope (None for the session's globals)."""

    __slots__ = ("vars", "parent")

    def __init__(self, vars: dict, parent: "Scope | None" = None):
        self.vars = vars
        self.parent = parent


class UserFunction:
    """A function defined with `def`: a closure over the scope it was defined in.

    ``run_context``: the run context it was defined in (a Session's). Called from outside it
    (Python calling ``s["f"](x)``, another session), it runs inside it (``call_in``): the
    session's files permission, dtype, device, generator, names and limits hold there too."""

    def __init__(self, name: str, params: list[A.Param], defaults: dict, body: list[A.Stmt],
                 closure: Scope, source: A.Source | None, interpreter: "Interpreter"):
        self.name = name
        self.params = params
        self.defaults = defaults
        self.body = body
        self.closure = closure
        self.source = source
        self._interp = interpreter
        self.run_context = current()

    def signature_text(self) -> str:
        parts = []
        for p in self.params:
            parts.append(p.name if p.name not in self.defaults
                         else f"{p.name}={describe_value(self.defaults[p.name])}")
        return f"({', '.join(parts)})"

    def __call__(self, *args, **kwargs):
        return call_in(self.run_context, self._interp.call_user, self, list(args), kwargs)

    def __repr__(self) -> str:         # its defaults are shown as the session shows them
        return call_in(self.run_context, lambda: f"<function {self.name}{self.signature_text()}>")

    __str__ = __repr__


# ---- the interpreter -------------------------------------------------------

def _position(obj, key, writing: bool = False) -> int:
    """``key`` as a position in the list, string, shape or range ``obj`` (TypeError_ for a key that
    is not an integer, IndexError_ out of range); a write takes no slice."""
    if isinstance(key, bool) or not isinstance(key, (int, Tensor)):
        what = "an integer" if writing else "an integer or a slice"
        raise TypeError_(f"{describe(obj)} is indexed by {what}, not {describe(key)}")
    i = operator.index(key)
    if not -len(obj) <= i < len(obj):
        raise IndexError_(f"index {i} is out of range for {describe(obj)} of length {len(obj)}")
    return i


class Interpreter:
    """Runs programs against a global namespace (the session's dict) and a built-ins table."""

    def __init__(self, globals: dict, builtins: dict, echo: Callable[[Any], None] | None = None,
                 max_depth: int = MAX_CALL_DEPTH):
        self.globals = Scope(globals)
        self.builtins = builtins
        self.echo = echo
        self.max_depth = max_depth
        self.scope = self.globals
        self.source: A.Source | None = None
        self.depth = 0
        self.current_stmt: A.Stmt | None = None
        self.loop_depth = 0     # loops running now (only the outermost reports progress)
        self._runs = 0          # programs running now: above 1, a host function ran another
        # the session's resource limits while its code runs (core/limits.py; set by
        # Session.context), else None: a statement, an iteration and a call each count a step
        self.limits = None

    # -- entry point -----------------------------------------------------------
    def run(self, program: A.Program):
        """Execute a parsed program; returns (value, is_expression) of the last statement.
        A program run from inside another (a host function calling ``Session.run``) gives the
        outer one back its scope, source and depths when it ends: the outer program's next
        positions are cut from its own text (and a Program kept for a rerun, Note [parsed once]
        in session.py, caches its positions on its nodes)."""
        outer = (self.scope, self.source, self.depth, self.loop_depth, self.current_stmt) if self._runs else None
        self._runs += 1
        try:
            self.scope = self.globals
            self.source = program.source
            self.depth = 0
            self.loop_depth = 0
            value, is_expr = None, False
            for stmt in program.body:
                self.current_stmt = stmt
                value = self.exec(stmt)
                is_expr = isinstance(stmt, A.ExprStmt)
            return (value if is_expr else None), is_expr
        finally:
            self._runs -= 1
            if outer is not None:
                self.scope, self.source, self.depth, self.loop_depth, self.current_stmt = outer

    # -- positions -------------------------------------------------------------
    def position(self, node: A.Node) -> dict:
        src = self.source
        return {"file": src.filename if src else None, "line": node.line or None,
                "column": node.column or None,
                "source_line": src.line_text(node.line) if src else None,
                "end_column": node.end_column}

    def _attach(self, err: DSLError, node: A.Node) -> DSLError:
        if node.line:
            err.with_position(**self.position(node))
        return err

    def _pos_token(self, node: A.Node):
        """Set SOURCE_POS to ``node``'s position and text (cached on the node: loops re-run it)."""
        return SOURCE_POS.set(self._node_pos(node))

    def _node_pos(self, node: A.Node) -> tuple:
        """``node``'s ``(file, line, column, text)`` in the current source, cached on the node."""
        pos = node.__dict__.get("_pos")
        if pos is None:
            pos = node._pos = self._make_pos(node.line, node.column, node.line, node.column, node.end_column)
        return pos

    def _make_pos(self, line, column, start_line, start_column, end_column):
        """``(file, line, column, text)``: text is the source from the start to ``end_column``
        when the expression fits on one line, else None. A ``SourcePos``: the text is cut from
        the one source when shown, so a position costs the same for `x` and for a 100,000-term sum."""
        src = self.source
        if src is None:
            return (None, line, column, None)
        if end_column and start_line == line:
            return SourcePos(src.filename, line, column, src, start_column, end_column)
        return (src.filename, line, column, None)

    # -- statements ------------------------------------------------------------
    def exec_block(self, stmts: list[A.Stmt]) -> None:
        for stmt in stmts:
            self.exec(stmt)

    def exec(self, stmt: A.Stmt):
        try:
            if self.limits is not None:
                self.limits.step()
            return _STMT[type(stmt)](self, stmt)
        except DSLError as e:
            raise self._attach(e, stmt)
        except BrokenPipeError:
            raise                   # the reader went away (`| head`): the CLI exits quietly
        except Exception as e:  # noqa: BLE001 - the boundary: translate everything
            raise self._attach(translate_exception(e), stmt) from None

    def exec_ExprStmt(self, stmt: A.ExprStmt):
        value = self.eval(stmt.expr)
        if value is not None and self.echo is not None:
            self.echo(value)
        return value

    def exec_Assign(self, stmt: A.Assign):
        value = self.eval(stmt.value)
        name = stmt.name
        if name[0] != "_":          # (bind's check, without its call: loops assign)
            self.scope.vars[name] = value
        else:
            self.bind(name, value, stmt)

    def exec_SetItem(self, stmt: A.SetItem):
        obj = self.eval(stmt.obj)
        key = self.eval_key(stmt.keys)
        value = self.eval(stmt.value)
        if isinstance(obj, Tensor):
            tok = self._pos_token(stmt)
            try:
                obj[key] = value
            finally:
                if tok is not None:
                    SOURCE_POS.reset(tok)
        elif isinstance(obj, list):
            i = _position(obj, key, writing=True)
            record_items(obj)           # an interrupted input's write is undone
            obj[i] = value
        else:
            raise TypeError_(f"cannot assign into an element of {describe(obj)}; only tensors "
                             "(and lists) support `x[i] = value`")

    def exec_SetAttr(self, stmt: A.SetAttr):
        obj = self.eval(stmt.obj)
        name = stmt.name
        self._check_private(name, "attribute")
        value = self.eval(stmt.value)
        if not isinstance(obj, Tensor):
            settable = getattr(type(obj), "LANG_SETTABLE", None)      # an optimizer's lr opts in
            if settable is not None and name in settable:
                record_setter(obj, name)    # (opt.lr = ...: an undo sets the old one back)
                setattr(obj, name, value)
                return
            if settable is not None:
                raise TypeError_(f"cannot set attribute `{name}` on {describe(obj)}; only "
                                 + ", ".join(f"`{n}`" for n in sorted(settable)) + " can be assigned")
            raise TypeError_(f"cannot set attribute `{name}` on {describe(obj)}; only a tensor's "
                             "`grad` and `requires_grad` can be assigned")
        if name not in SETTABLE_ATTRIBUTES:
            readable = name in PUBLIC_ATTRIBUTES or name in PUBLIC_METHODS
            raise (TypeError_ if readable else NameError_)(
                f"cannot assign to `{name}` on a tensor: only `grad` and `requires_grad` can be assigned"
                + ("" if readable else suggest(name, SETTABLE_ATTRIBUTES)))
        setattr(obj, name, value)

    def exec_AugAssign(self, stmt: A.AugAssign):
        target = stmt.target
        value = self.eval(stmt.value)
        if isinstance(target, A.Name):
            current = self.lookup(target.id, target)
            new = self.inplace(stmt.op, current, value, stmt)
            self.bind(target.id, new, stmt)
        else:  # Index: read, update in place, write back (Python's semantics)
            obj = self.eval(target.obj)
            key = self.eval_key(target.keys)
            current = self.index(obj, key, target)
            new = self.inplace(stmt.op, current, value, stmt)
            if isinstance(obj, Tensor):
                obj[key] = new
            elif isinstance(obj, list):
                i = _position(obj, key, writing=True)
                record_items(obj)
                obj[i] = new
            else:
                raise TypeError_(f"cannot assign into an element of {describe(obj)}")

    def exec_FuncDef(self, stmt: A.FuncDef):
        self._check_private(stmt.name, "name")
        seen = set()
        defaults = {}
        for p in stmt.params:
            self._check_private(p.name, "parameter")
            if p.name in seen:
                raise self._attach(NameError_(f"parameter `{p.name}` appears twice in `def {stmt.name}`"), p)
            seen.add(p.name)
            if p.default is not None:
                defaults[p.name] = self.eval(p.default)
            elif defaults:
                raise self._attach(TypeError_(
                    f"parameter `{p.name}` has no default but follows one that has; "
                    "put parameters with defaults last"), p)
        fn = UserFunction(stmt.name, stmt.params, defaults, stmt.body, self.scope,
                          stmt.source or self.source, self)
        self.bind(stmt.name, fn, stmt)

    def exec_For(self, stmt: A.For):
        self._check_private(stmt.var, "name")
        iterable = self.eval(stmt.iterable)
        if isinstance(iterable, (Tensor, range, list, tuple)):
            try:
                total = len(iterable)
                if isinstance(iterable, Tensor):
                    # its rows (views), all made first, as PyTorch's unbind(0) does; made "at" the iterable
                    tok = self._pos_token(stmt.iterable)
                    try:
                        reserve(ROW_BYTES * total, "the rows this loop goes over")   # (each a view)
                        items = iter(list(iterable))
                    finally:
                        SOURCE_POS.reset(tok)
                else:
                    items = iter(iterable)
            except DSLError as e:
                raise self._attach(e, stmt.iterable) from None
        else:
            raise self._attach(TypeError_(f"`for` needs a range, a list or a tensor to loop over, "
                                          f"not {describe(iterable)}"), stmt.iterable)
        scope = self.scope
        report = current().loop_progress if self.loop_depth == 0 else None
        run = stmt.__dict__.get("_run")
        if run is None and total >= COMPILE_AT:
            # Note [compiled loop bodies] (lang/loop_body.py): the loop written out once (False:
            # Python could not compile it, and will not be asked again)
            run = stmt._run = compile_for(stmt, self, _FUNCTION_TYPES, _Break, _Continue) or False
        self.loop_depth += 1
        try:
            if run:
                run(self, items, scope.vars, self.builtins, scope.parent is None, report, total)
                return
            for done, item in enumerate(items, 1):
                scope.vars[stmt.var] = item
                if not self._iteration(stmt.body):
                    break
                if report is not None:
                    report(done, total)
        finally:
            self.loop_depth -= 1

    def exec_While(self, stmt: A.While):
        # Ctrl-C stops it as it stops a `for`: KeyboardInterrupt is no Exception, so it
        # passes exec()'s translation, and the REPL rolls the input back
        report = current().loop_progress if self.loop_depth == 0 else None
        self.loop_depth += 1
        done = 0
        body = stmt.__dict__.get("_body")
        try:
            while True:
                cond = self.eval(stmt.cond)
                try:
                    ok = truth(cond)
                except DSLError as e:
                    raise self._attach(e, stmt.cond)
                if not ok:
                    break
                if not body:
                    if not self._iteration(stmt.body):
                        break
                    if body is None and done + 1 >= COMPILE_AT:      # Note [compiled loop bodies]
                        body = stmt._body = compile_body(stmt.body, self, _FUNCTION_TYPES) or False
                else:
                    if self.limits is not None:
                        self.limits.step()
                    scope = self.scope
                    try:
                        body(self, scope.vars, self.builtins, scope.parent is None)
                    except _Continue:
                        pass
                    except _Break:
                        break
                done += 1
                if report is not None:
                    report(done, None)
        finally:
            self.loop_depth -= 1

    def _iteration(self, body) -> bool:
        """Run one pass of a loop's body; False when `break` left the loop."""
        if self.limits is not None:         # (an empty body is still a step)
            self.limits.step()
        try:
            for stmt in body:
                self.exec(stmt)
        except _Continue:
            pass
        except _Break:
            return False
        return True

    def exec_Break(self, stmt: A.Break):
        raise _Break

    def exec_Continue(self, stmt: A.Continue):
        raise _Continue

    def exec_If(self, stmt: A.If):
        cond = self.eval(stmt.cond)
        try:
            ok = truth(cond)
        except DSLError as e:
            raise self._attach(e, stmt.cond)
        if ok:
            self.exec_block(stmt.body)
        elif stmt.orelse is not None:
            self.exec_block(stmt.orelse)

    def exec_NoGrad(self, stmt: A.NoGrad):
        with no_grad():
            self.exec_block(stmt.body)

    def exec_Return(self, stmt: A.Return):
        raise _Return(None if stmt.value is None else self.eval(stmt.value))

    # -- names -----------------------------------------------------------------
    @staticmethod
    def _check_private(name: str, what: str) -> None:
        if name.startswith("_"):
            raise NameError_(f"`{name}`: {what}s that start with `_` are private and cannot be used "
                             "in a script; choose a name that starts with a letter")

    def bind(self, name: str, value, node: A.Node) -> None:
        self._check_private(name, "name")
        self.scope.vars[name] = value

    def lookup(self, name: str, node: A.Node):
        self._check_private(name, "name")
        scope = self.scope
        while scope is not None:
            vars = scope.vars
            if name in vars:
                return vars[name]
            scope = scope.parent
        if name in self.builtins:
            return self.builtins[name]
        if name in NAME_HINTS:
            raise NameError_(f"`{name}` is not defined: {NAME_HINTS[name]}")
        raise NameError_(f"`{name}` is not defined" + suggest(name, self.visible_names()))

    def visible_names(self) -> set[str]:
        names = set(self.builtins)
        scope = self.scope
        while scope is not None:
            names.update(scope.vars)
            scope = scope.parent
        return {n for n in names if not n.startswith("_")}

    # -- expressions -----------------------------------------------------------
    def eval(self, node: A.Expr):
        try:
            return _EXPR[type(node)](self, node)
        except DSLError as e:
            raise self._attach(e, node)
        except BrokenPipeError:
            raise
        except Exception as e:  # noqa: BLE001 - the boundary: translate everything
            raise self._attach(translate_exception(e), node) from None

    def eval_Number(self, node):
        return node.value

    def eval_String(self, node):
        return node.value

    def eval_Const(self, node):
        return node.value

    def eval_Name(self, node):
        name = node.id
        vars = self.scope.vars          # (the innermost scope first, as lookup: loops read it)
        if name in vars and name[0] != "_":
            return vars[name]
        return self.lookup(name, node)

    def eval_FString(self, node: A.FString):
        out = []
        for part in node.parts:
            if isinstance(part, str):
                out.append(part)
                continue
            value = self.eval(part.value)
            try:
                out.append(format_field(value, part.spec))
            except DSLError as e:
                raise self._attach(e, part)
        n = sum(map(len, out))
        if self.limits is not None or n > BIG_ALLOCATION:
            reserve(n, "this string")
        return "".join(out)

    def eval_ListExpr(self, node):
        if self.limits is not None:
            self.limits.reserve(8 * len(node.items) + 56, "this list")
        return [self.eval(item) for item in node.items]

    def eval_Chain(self, node: A.Chain):
        first = node.first
        vars = self.scope.vars
        # a variable of the innermost scope read without eval's call (loops read them); any
        # other name, hit or miss, goes the general way, which positions its errors
        if type(first) is A.Name and first.id in vars and first.id[0] != "_":
            value = vars[first.id]
        else:
            value = self.eval(first)
        positions = node.__dict__.get("_pos") or self._chain_positions(node)
        for i, (op, operand, line, column) in enumerate(node.ops):
            tp = type(operand)
            if tp is A.Number:
                right = operand.value
            elif tp is A.Name and operand.id in vars and operand.id[0] != "_":
                right = vars[operand.id]
            else:
                right = self.eval(operand)
            try:
                ta, tb = type(value), type(right)
                if ((ta is Tensor and (tb is Tensor or tb is float or tb is int))
                        or (tb is Tensor and (ta is float or ta is int))) and op != "@":
                    # binop's usual case without its call: the node remembers where it was written
                    ctx = current()
                    outer = ctx.pos
                    ctx.pos = positions[i]
                    try:
                        value = _BINOPS[op](value, right)
                    finally:
                        ctx.pos = outer
                else:
                    value = self.binop(op, value, right, positions[i])
            except Exception as exc:  # noqa: BLE001 - translated and positioned at the operator
                e = self._operator_error(exc, line, column)
                if e is exc:
                    raise
                raise e from None
        return value

    def _chain_positions(self, node: A.Chain) -> list:
        """The position of each operator's node in ``node`` (cached on it): the node made by the
        i-th operator computes `first op1 e1 ... op_i e_i`."""
        first = node.first
        positions = node._pos = [
            self._make_pos(line, column, first.line, first.column,
                           operand.end_column if operand.line == first.line else None)
            for _, operand, line, column in node.ops]
        return positions

    def _operator_error(self, exc: Exception, line: int, column: int) -> DSLError:
        """``exc``, raised by the operator at ``line``:``column`` of a chain, as a DSLError
        positioned there (unless it has a position already)."""
        e = translate_exception(exc)
        if not e.has_position and self.source is not None:
            e.with_position(file=self.source.filename, line=line, column=column,
                            source_line=self.source.line_text(line), end_column=column + 1)
        return e

    def eval_Compare(self, node: A.Compare):
        a = self.eval(node.left)
        b = self.eval(node.right)
        op = node.op
        if a is None or b is None:
            if op in ("==", "!="):
                return (a is b) == (op == "==")
            raise TypeError_(f"cannot compare {describe(a)} and {describe(b)} with `{op}`")
        if op in ("==", "!=") and not isinstance(a, (Tensor, list)) and not isinstance(b, (Tensor, list)):
            return (a == b) == (op == "==")    # dtypes, strings, shapes, numbers: plain equality
        a, b = self._operands(op, a, b)
        tok = self._pos_token(node)
        try:
            return _COMPARE[op](a, b)
        finally:
            if tok is not None:
                SOURCE_POS.reset(tok)

    def eval_BoolOp(self, node: A.BoolOp):
        want = node.op == "or"
        for sub in node.values:
            value = self.eval(sub)
            try:
                t = truth(value)
            except DSLError as e:
                raise self._attach(e, sub)
            if t == want:
                return want
        return not want

    def eval_Not(self, node: A.Not):
        value = self.eval(node.operand)
        return not truth(value)

    def eval_Unary(self, node: A.Unary):
        value = self.eval(node.operand)
        if isinstance(value, list):
            value = as_tensor(value)
        if not (isinstance(value, Tensor) or _is_number(value)):
            raise TypeError_(f"cannot apply unary `{node.op}` to {describe(value)}")
        if node.op == "+":
            return value if not isinstance(value, bool) else int(value)
        tok = self._pos_token(node)
        try:
            return -value
        finally:
            if tok is not None:
                SOURCE_POS.reset(tok)

    def eval_Power(self, node: A.Power):
        base = self.eval(node.base)
        exponent = self.eval(node.exponent)
        base, exponent = self._operands("^", base, exponent)
        if isinstance(base, Tensor) or isinstance(exponent, Tensor):
            tok = self._pos_token(node)
            try:
                return tensor_pow(base, exponent)
            finally:
                if tok is not None:
                    SOURCE_POS.reset(tok)
        return number_pow(base, exponent)

    def eval_Call(self, node: A.Call):
        f = node.func
        scope = self.scope
        # a built-in called at the top level (no scope but the session's, which does not hold
        # the name), without eval's call and lookup's walk; anything else the general way
        if type(f) is A.Name and scope.parent is None and f.id not in scope.vars \
                and f.id in self.builtins and f.id[0] != "_":
            func = self.builtins[f.id]
        else:
            func = self.eval(f)
        args = node.args
        args = [self.eval(args[0])] if len(args) == 1 else [self.eval(a) for a in args]
        kwargs = {}
        for kw in node.keywords:
            if kw.name.startswith("_"):
                raise self._attach(NameError_(f"keyword `{kw.name}`: names that start with `_` are private"), kw)
            kwargs[kw.name] = self.eval(kw.value)
        return self.call(func, args, kwargs, node)

    def eval_Attribute(self, node: A.Attribute):
        obj = self.eval(node.obj)
        if not isinstance(obj, Tensor):
            return self.getattr(obj, node.name)
        tok = self._pos_token(node)          # `.T` makes a node; `.grad` may warn
        try:
            return self.getattr(obj, node.name)
        finally:
            if tok is not None:
                SOURCE_POS.reset(tok)

    def eval_Index(self, node: A.Index):
        obj = self.eval(node.obj)
        key = self.eval_key(node.keys)
        return self.index(obj, key, node)

    def eval_Slice(self, node: A.Slice):
        def part(e):
            if e is None:
                return None
            v = self.eval(e)
            if isinstance(v, Tensor):
                return operator.index(v)
            if v is not None and not isinstance(v, int):
                raise self._attach(TypeError_(f"slice bounds must be integers, not {describe(v)}"), e)
            return v
        return slice(part(node.lower), part(node.upper), part(node.step))

    def eval_key(self, keys: list[A.Expr]):
        values = [self.eval(k) for k in keys]
        return values[0] if len(values) == 1 else tuple(values)

    # -- operations ------------------------------------------------------------
    def _operands(self, op: str, a, b):
        """Check the operand kinds and turn lists into tensors (a list literal is data)."""
        a_t, b_t = isinstance(a, Tensor), isinstance(b, Tensor)
        if isinstance(a, list):
            a = as_tensor(a, like=b if b_t else None)
            a_t = True
        if isinstance(b, list):
            b = as_tensor(b, like=a if a_t else None)
            b_t = True
        ok_a = a_t or _is_number(a)
        ok_b = b_t or _is_number(b)
        if ok_a and ok_b:
            if op == "@" and not (a_t and b_t):
                raise TypeError_("`@` (matrix product) needs two tensors; use `*` to multiply by a number")
            return a, b
        if isinstance(a, str) and isinstance(b, str) and op in ("+", "==", "!=", "<", "<=", ">", ">="):
            return a, b
        hint = ""
        if op in ("+", "%") and (isinstance(a, str) or isinstance(b, str)) and (ok_a or ok_b):
            hint = ": use f\"loss {x}\" to put a number into a string (`{x:.4f}` for 4 decimals)"
        elif a is None or b is None:
            hint = " (one side is `none`: for example `.grad` is none until backward has run)"
        elif any(isinstance(v, tuple) and hasattr(v, "values") and hasattr(v, "indices") for v in (a, b)):
            hint = (": sort, topk and max/min over a dim give (values, indices); pick one with "
                    "`.values` or `[0]` (`max(x, 1).values + 1`)")
        raise TypeError_(f"cannot apply `{op}` to {describe(a)} and {describe(b)}{hint}")

    def binop(self, op: str, a, b, pos: tuple):
        a, b = self._operands(op, a, b)     # (eval_Chain runs a tensor with a tensor or a number itself)
        if not (isinstance(a, Tensor) or isinstance(b, Tensor)):
            if op in ("%", "//") and b == 0:
                raise ValueError_(f"`{op}` by zero: the {'remainder' if op == '%' else 'floor'} of a "
                                  "division by zero is undefined for plain numbers; check the divisor first")
            if type(a) is str and (self.limits is not None or len(a) + len(b) > BIG_ALLOCATION):
                reserve(len(a) + len(b), "this string")         # before Python allocates it
            if self.limits is not None and type(a) is int and type(b) is int and op == "*":
                self.limits.reserve((a.bit_length() + b.bit_length()) // 8, "this integer")
            return _BINOPS[op](a, b)
        ctx = current()             # the op's node remembers where it was written
        outer = ctx.pos
        ctx.pos = pos
        try:
            return _BINOPS[op](a, b)
        finally:
            ctx.pos = outer

    def inplace(self, op: str, current, value, node: A.Node):
        if isinstance(current, Tensor):
            if isinstance(value, list):
                value = as_tensor(value, like=current)
            if not (isinstance(value, Tensor) or _is_number(value)):
                raise TypeError_(f"cannot apply `{op}` to a tensor and {describe(value)}")
            tok = self._pos_token(node)
            try:
                return _INPLACE[op](current, value)
            finally:
                if tok is not None:
                    SOURCE_POS.reset(tok)
        pos = node.__dict__.get("_pos")
        if pos is None:
            pos = node._pos = self._make_pos(node.line, node.column, node.line, node.column, node.end_column)
        return self.binop(op[:-1], current, value, pos)

    def getattr(self, obj, name: str):
        self._check_private(name, "attribute")
        if isinstance(obj, Tensor):
            if name in PUBLIC_ATTRIBUTES or name in PUBLIC_METHODS:
                return getattr(obj, name)
            options = set(PUBLIC_ATTRIBUTES) | set(PUBLIC_METHODS)
            if name in TENSOR_ATTRIBUTE_HINTS:
                raise NameError_(f"a tensor has no attribute `{name}`: {TENSOR_ATTRIBUTE_HINTS[name]}")
            raise NameError_(f"a tensor has no attribute `{name}`" + (suggest(name, options) or
                             "; it has: " + ", ".join(sorted(options))))
        if _GraphNode and isinstance(obj, _GraphNode):
            if name in NODE_ATTRIBUTES:
                return getattr(obj, name)
            raise NameError_(f"a graph node has no attribute `{name}`; it has: name, next_functions")
        allowed = getattr(type(obj), "LANG_ATTRIBUTES", None)   # small result types opt in (max(x, dim=))
        if allowed is not None:
            if name in allowed:
                value = getattr(obj, name)
                # a result's host array (explain(...).total) is a tensor in the language
                return as_tensor(value) if is_host_array(value) else value
            raise NameError_(f"{describe(obj)} has no attribute `{name}`; it has: " + ", ".join(sorted(allowed)))
        raise NameError_(f"{describe(obj)} has no attribute `{name}`"
                         + ("; it has no attributes" if not isinstance(obj, Tensor) else ""))

    def index(self, obj, key, node: A.Node):
        if isinstance(obj, Tensor):
            tok = self._pos_token(node)
            try:
                return obj[key]
            finally:
                if tok is not None:
                    SOURCE_POS.reset(tok)
        if isinstance(key, str) and hasattr(type(obj), "by_name"):     # a checkpoint: ckpt["w1"]
            return obj.by_name(key)
        if isinstance(obj, (tuple, list, str, range)):
            if isinstance(key, slice):
                return obj[key]
            return obj[_position(obj, key)]
        raise TypeError_(f"cannot index {describe(obj)}")

    def call(self, func, args: list, kwargs: dict, node: A.Call | None = None):
        if type(func) not in _FUNCTION_TYPES:
            if isinstance(func, UserFunction) and func._interp is self:
                return self.call_user(func, args, kwargs, node)
            if not callable(func) or isinstance(func, (Tensor, type)):
                raise TypeError_(f"{describe(func)} is not a function and cannot be called")
            if getattr(func, "__name__", None) == "register_hook" and isinstance(getattr(func, "__self__", None), Tensor):
                args, kwargs = self._hook_args(args, kwargs, node)
        ctx = current()
        outer = ctx.pos
        if node is not None:
            pos = node.__dict__.get("_pos")      # (_node_pos's cache read, without its call)
            ctx.pos = pos if pos is not None else self._node_pos(node)
        try:
            # (one argument and no keywords, the usual call, spelled out: a call with * and **
            # builds a tuple and copies the dict)
            return func(args[0]) if len(args) == 1 and not kwargs else func(*args, **kwargs)
        except TypeError as e:
            raise self._call_type_error(func, args, kwargs, node, e) from None
        finally:
            ctx.pos = outer

    def _func_name(self, func, node) -> str:
        if node is not None and isinstance(node.func, A.Name):
            return node.func.id
        if node is not None and isinstance(node.func, A.Attribute):
            text = self.source.line_text(node.func.obj.line) if self.source else None
            obj = node.func.obj
            if text and obj.end_column and obj.line == node.func.line and obj.end_column - obj.column <= 30:
                return text[obj.column - 1: obj.end_column - 1] + "." + node.func.name
            return "." + node.func.name
        return getattr(func, "__name__", "function")

    def _call_type_error(self, func, args, kwargs, node, err: TypeError) -> DSLError:
        name = self._func_name(func, node)
        try:
            sig = inspect.signature(func)
        except (TypeError, ValueError):
            return TypeError_(f"{name}(): {plain(str(err))}")
        try:
            sig.bind(*args, **kwargs)
        except TypeError as bad:
            why = plain(str(bad))
            unknown = [k for k in kwargs if k not in sig.parameters]
            if unknown and not any(p.kind is p.VAR_KEYWORD for p in sig.parameters.values()):
                why = f"unknown keyword `{unknown[0]}`" + suggest(unknown[0], sig.parameters)
            return TypeError_(f"wrong arguments for {name}(): {why}; it accepts ({param_text(sig)})")
        return translate_exception(err)

    def _hook_args(self, args: list, kwargs: dict, node: A.Call | None):
        """``x.register_hook(f)`` with a user function: register it wrapped, so that an error in
        it says it ran as the hook on `x` (see ``call_user``)."""
        on = None
        if node is not None and isinstance(node.func, A.Attribute) and self.source is not None:
            obj = node.func.obj
            text = self.source.line_text(obj.line)
            if text and obj.end_column and obj.line == node.func.line and obj.end_column - obj.column <= 30:
                on = text[obj.column - 1: obj.end_column - 1].strip() or None
        if args and callable(args[0]) and not isinstance(args[0], _Hook):
            args = [_Hook(args[0], on)] + list(args[1:])
        elif callable(kwargs.get("hook")) and not isinstance(kwargs["hook"], _Hook):
            kwargs = dict(kwargs, hook=_Hook(kwargs["hook"], on))
        return args, kwargs

    def _call_line(self, fn: UserFunction, site, called_here: bool, hook, err: DSLError) -> str:
        """One call-context line for an error leaving ``fn``: where it was called (``site``: the
        call's position; else SOURCE_POS's when the call came from a built-in or a backward)."""
        if hook is False:
            name, verb = f"{fn.name}()", "called by"
        else:
            name, verb = f"the hook {fn.name}()" + (f" on `{hook}`" if hook else ""), "run by"
        if site is None or site[1] is None:         # called from Python, outside the language
            where = format_pos(caller_pos(), text=False)
            return f"in {name}, called from Python" + (f" at {where}" if where else "")
        if called_here:             # a call written in the language: `f(w)`
            return f"in {name}, called at {format_pos(site, file=site[0] != err.file)}"
        text = site[3] if site[2] is not None else None
        where = format_pos(site, text=False, file=site[0] != err.file)
        return f"in {name}, {verb} " + (f"`{text}` at {where}" if text else where)

    def call_user(self, fn: UserFunction, args: list, kwargs: dict, node: A.Node | None = None,
                  hook=False):
        """Run ``fn``'s body in a new scope. ``node``: the call in the language (None when a
        built-in or Python calls it); ``hook``: the tensor's text when it runs as a tensor hook
        (None if unknown; False when it is no hook). An error leaving the body gets a line
        saying where the call was (``DSLError.calls``)."""
        if self.limits is not None:
            self.limits.step()
        if self.depth >= self.max_depth:
            raise RuntimeError_(f"too many nested calls of user functions (more than {self.max_depth}) "
                                f"while calling `{fn.name}`: does it call itself without ever stopping?")
        names = [p.name for p in fn.params]
        sig = f"{fn.name}{fn.signature_text()}"
        if len(args) > len(names):
            raise TypeError_(f"{fn.name}() takes {len(names)} argument{'s' if len(names) != 1 else ''} "
                             f"but {len(args)} were given; it is defined as {sig}")
        local = dict(zip(names, args))
        for k, v in kwargs.items():
            if k not in names:
                raise TypeError_(f"{fn.name}() has no parameter `{k}`" + suggest(k, names)
                                 + f"; it is defined as {sig}")
            if k in local:
                raise TypeError_(f"{fn.name}() got two values for `{k}`; it is defined as {sig}")
            local[k] = v
        for p in names:
            if p not in local:
                if p not in fn.defaults:
                    raise TypeError_(f"{fn.name}() is missing the argument `{p}`; it is defined as {sig}")
                local[p] = fn.defaults[p]
        site = self._node_pos(node) if node is not None and node.line else SOURCE_POS.get()
        saved = (self.scope, self.source)
        self.scope = Scope(local, fn.closure)
        self.source = fn.source or self.source
        self.depth += 1
        try:
            self.exec_block(fn.body)
            return None
        except _Return as r:
            return r.value
        except DSLError as e:
            e.add_call(self._call_line(fn, site, node is not None and bool(node.line), hook, e))
            raise
        finally:
            self.depth -= 1
            self.scope, self.source = saved


class _Hook:
    """A function a script registered with ``x.register_hook(f)``: runs it as the hook on `x`,
    inside the run context it was registered in, wherever the backward that runs it was called
    (the host's ``loss.backward()`` too: ``call_in``)."""

    __slots__ = ("fn", "on", "run_context")

    def __init__(self, fn, on: str | None):
        self.fn = fn
        self.on = on
        self.run_context = current()

    @property
    def name(self) -> str:          # what messages about the hook call it
        fn = self.fn
        return getattr(fn, "name", None) or getattr(fn, "__name__", None) or "hook"

    def __call__(self, *args, **kwargs):
        fn = self.fn
        if isinstance(fn, UserFunction):
            return call_in(self.run_context, fn._interp.call_user, fn, list(args), kwargs, hook=self.on)
        return call_in(self.run_context, fn, *args, **kwargs)

    def __repr__(self) -> str:
        return repr(self.fn)


_STMT = {getattr(A, name[5:]): fn for name, fn in vars(Interpreter).items()
         if name.startswith("exec_") and name[5].isupper()}
_EXPR = {getattr(A, name[5:]): fn for name, fn in vars(Interpreter).items()
         if name.startswith("eval_") and name[5].isupper()}

# pylox's check: every visit method names a node class, and every node class has one
assert set(_STMT) == {c for c in vars(A).values() if isinstance(c, type) and issubclass(c, A.Stmt)
                      and c is not A.Stmt}, "exec_* methods and Stmt classes disagree"
assert set(_EXPR) == {c for c in vars(A).values() if isinstance(c, type) and issubclass(c, A.Expr)
                      and c is not A.Expr}, "eval_* methods and Expr classes disagree"
