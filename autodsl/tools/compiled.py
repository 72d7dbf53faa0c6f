"""``compile(fn)``: a function whose calls replay one captured program of array operations.

The first call runs ``fn`` eagerly and captures what it does (``core/capture.py``): every
op, the backward the call runs, ``.grad`` accumulation, updates under ``no_grad``. Later
calls run the program (``core/program.py``) while its guards hold: the same shapes,
dtypes, devices and ``requires_grad`` of the tensor arguments and of the tensors it reads
from outside (found again through the same variables), the same other arguments, the same
plain values (numbers, strings) in the outside variables it and the functions it calls read
(a replay has them built in: ``w -= lr * w.grad``), and the same outcome of every branch on
a tensor value. A call whose guards fail runs eagerly and is captured again, up to
``MAX_CAPTURES`` times (a failed guard first tries the other programs); then the function
stays eager and says why, once. Effects reach each call's own tensors: the arguments it
was given, not the first call's. Calls run eagerly while a trace is printed, anomaly mode is
on, or another capture records (a compiled function called from a compiled one is part of
the outer program). Python reading a tensor's values (``item``, ``if``, ``tolist``,
``numpy``) or finding a ``.grad`` none is a guard too.

What Python does besides tensor operations (printing, appending to a list) happens during
the captured call only, as with ``jax.jit``; a function whose result must be recomputed
from fresh random numbers, or that reads or writes a file (``load``, ``save``, ``include``),
cannot be compiled (it runs eagerly, and says so).
"""
from __future__ import annotations

import dataclasses
import types

from autodsl.context import call_in, current, current_or_none
from autodsl.core.capture import Capture, CaptureError
from autodsl.core.program import GuardFailed, Program, code_of
from autodsl.core.tensor import Tensor, new_tensor
from autodsl.errors import TypeError_
from autodsl.source import warn_user

__all__ = ["compile", "CompiledFunction", "MAX_CAPTURES"]

MAX_CAPTURES = 8
_SIMPLE = (bool, int, float, str, type(None))


class CompiledFunction:
    """What ``compile(fn)`` returns: call it as you would call ``fn``.

    ``program``: the program of the last capture (None before the first call; ``print`` it
    to read what backprop turned the call into); ``stats``: {"replayed", "eager",
    "captures"} counts; ``eager_reason``: why calls run eagerly for good, or None.
    """

    LANG_ATTRIBUTES = frozenset({"program", "stats", "eager_reason"})     # what a script may read

    def __init__(self, fn, name: str | None = None):
        if not callable(fn):
            raise TypeError_("compile() needs a function, e.g. compile(train_step)")
        self.fn = fn
        self.name = name or getattr(fn, "name", None) or getattr(fn, "__name__", "fn")
        self._programs = []         # (binder, program, guards), newest first
        self.stats = {"replayed": 0, "eager": 0, "captures": 0}
        self.eager_reason = None
        self.__doc__ = getattr(fn, "__doc__", None)
        # a session's function (or one compiled in a session's code) runs in that session
        # wherever it is called from: capture, replay and eager calls alike (``call_in``)
        self.run_context = getattr(fn, "run_context", None) or current()

    @property
    def program(self):
        return self._programs[0][1] if self._programs else None

    def __call__(self, *args, **kwargs):
        home = self.run_context
        if home.host_entry is not None and current_or_none() is not home:
            return call_in(home, self.__call__, *args, **kwargs)
        ctx = current()
        if self.eager_reason is not None or ctx.capture is not None or ctx.trace_enabled \
                or ctx.anomaly is not None:
            self.stats["eager"] += 1
            return self.fn(*args, **kwargs)
        for bind, program, guards in self._programs:
            bound = bind(args, kwargs)      # the arguments' guards, and what the program takes
            if bound is None or not guards():
                continue
            arrays, tensors, leaves = bound
            try:
                out = program.run(arrays, tensors)
            except GuardFailed:
                continue            # nothing changed: another program may fit
            except Exception:
                if program.changed_something():
                    raise
                break               # nothing changed: eager autodsl says what is wrong
            self.stats["replayed"] += 1
            if program.trace is not None and ctx.names is not None:     # in a Session
                ctx.last_trace = program.trace
                if ctx.trace_sink is not None:      # what the Session keeps (s.last_trace)
                    ctx.trace_sink(program.trace)
            return _rebuild(program.result, out, leaves)
        leaves, key = _flatten((args, kwargs))
        return self._capture(ctx, args, kwargs, leaves, key)

    def _capture(self, ctx, args, kwargs, leaves, key):
        self.stats["eager"] += 1
        if key is None:
            return self._give_up("an argument is neither a tensor, a number, a string, none, nor a "
                                 "list of those", args, kwargs)
        if self.stats["captures"] >= MAX_CAPTURES:
            return self._give_up(f"its guards failed on {MAX_CAPTURES} captures (shapes, dtypes or "
                                 "branches change between calls)", args, kwargs)
        checks = _argument_checks(args, kwargs)         # as they are before the call
        cap = Capture()
        for path, t in leaves.items():
            if isinstance(t, Tensor):
                cap.arg(t, path)
        trace_before = ctx.last_trace
        ctx.capture = cap
        try:
            result = self.fn(*args, **kwargs)
        finally:
            ctx.capture = None
        if cap.failed is not None:          # the call went on eagerly from there: its result stands
            self._stay_eager(cap.failed)
            return result
        self.stats["captures"] += 1
        try:
            spec = _result_spec(result, cap, leaves)
            names, meta = _outside_guards(self.fn, cap, leaves)
            values = _value_guards(self.fn)
        except CaptureError as e:
            self._stay_eager(str(e))
            return result
        program = Program(cap, spec, self.name)
        if ctx.last_trace is not trace_before:
            program.trace = ctx.last_trace
            program.trace.captured_by = self.name
        bind = _binder(checks, program, _held_arguments(self.fn, leaves))
        self._programs.insert(0, (bind, program, _guard_function(names, meta, values)))
        del self._programs[MAX_CAPTURES:]
        return result

    def _give_up(self, reason, args, kwargs):
        self._stay_eager(reason)
        return self.fn(*args, **kwargs)

    def _stay_eager(self, reason):
        if self.eager_reason is None:
            self.eager_reason = reason
            warn_user(f"compile: {self.name} runs eagerly: {reason}")

    def __repr__(self) -> str:
        return f"<compiled {self.name}: {self.stats['replayed']} replayed, {self.stats['eager']} eager>"


def compile(fn):
    """Compile ``fn`` (a Python function, or a function defined in the language): calls replay
    the tensor operations its first call did, forward, backward and updates, as one flat
    program of array operations, with bit-identical results. Usable as a decorator.

    Returns a CompiledFunction. Raises TypeError_ when ``fn`` is not callable.
    Example: ``train = compile(train_step)``, then ``train(x, y)``; ``print(train.program)``.
    """
    return CompiledFunction(fn)


# -- guards -----------------------------------------------------------------------------------

def _meta(t: Tensor):
    return (t._data.shape, t._data.dtype, t.device, t._requires_grad, t.grad_fn is None)


def _flatten(value):
    """({path: leaf}, key): the tensors and plain values of the arguments, and a key that is
    equal for two calls exactly when their structure, plain values and tensors' metadata are;
    key None for an argument the program cannot take. (It runs before every replay: one
    explicit stack, no per-value closures.)"""
    leaves = {}
    parts = []
    alias = {}          # the same tensor or storage twice: part of the key
    stack = [(value, ())]
    pop, push, add = stack.pop, stack.append, parts.append
    while stack:
        v, path = pop()
        tv = type(v)
        if tv is Tensor or isinstance(v, Tensor):
            leaves[path] = v
            d = v._data
            add((alias.setdefault(id(v), len(alias)), alias.setdefault(-id(d) - 1, len(alias)),
                 d.shape, d.dtype, v.device, v._requires_grad, v.grad_fn is None))
        elif tv is list or tv is tuple or isinstance(v, (list, tuple)):
            add((tv, len(v)))
            for i in range(len(v) - 1, -1, -1):         # left to right, as the key is read
                push((v[i], path + (i,)))
        elif isinstance(v, _SIMPLE):
            add(_snapshot(v))
        elif isinstance(v, dict):
            add((dict, tuple(v)))
            for k in reversed(tuple(v)):
                push((v[k], path + (k,)))
        else:
            return leaves, None
    return leaves, tuple(parts)


def _argument_checks(args, kwargs):
    """The body of a generated ``_bind(args, kwargs)`` that returns None unless the arguments
    have the structure, plain values, tensor metadata and aliasing these have (what
    ``_flatten``'s key compares), binding each leaf to a local ``x<n>``: (lines, env,
    {path: local})."""
    env = {"Tensor": Tensor, "_snap": _snapshot}
    lines = ["def _bind(args, kwargs):"]
    emit = lines.append
    where = {}
    tensors = []            # (local, tensor) in walk order

    def walk(v, expr, path):
        n = len(env)
        var = f"x{n}"
        env[f"_k{n}"] = None        # (reserves the number)
        emit(f"    {var} = {expr}")
        if isinstance(v, Tensor):
            d = v._data
            env[f"S{n}"], env[f"D{n}"], env[f"V{n}"] = d.shape, d.dtype, v.device
            emit(f"    if not isinstance({var}, Tensor): return None")
            emit(f"    d = {var}._data")
            emit(f"    if d.shape != S{n} or d.dtype != D{n} or {var}.device != V{n} or "
                 f"{var}._requires_grad is not {v._requires_grad!r} or "
                 f"({var}.grad_fn is None) is not {(v.grad_fn is None)!r}: return None")
            where[path] = var
            tensors.append((var, v))
        elif isinstance(v, (list, tuple)):
            env[f"T{n}"] = type(v)
            emit(f"    if type({var}) is not T{n} or len({var}) != {len(v)}: return None")
            for i, x in enumerate(v):
                walk(x, f"{var}[{i}]", path + (i,))
        elif isinstance(v, dict):
            env[f"K{n}"] = tuple(v)
            emit(f"    if type({var}) is not dict or tuple({var}) != K{n}: return None")
            for k, x in v.items():
                env[f"K{n}_{len(env)}"] = k
                walk(x, f"{var}[K{n}_{len(env) - 1}]", path + (k,))
        else:                       # a plain value (_flatten took nothing else)
            env[f"T{n}"], env[f"P{n}"] = type(v), _snapshot(v)
            emit(f"    if type({var}) is not T{n} or _snap({var}) != P{n}: return None")

    walk(args, "args", (0,))
    walk(kwargs, "kwargs", (1,))
    for attr in ("", "._data"):     # the same tensor (storage) where it was, distinct ones elsewhere
        groups = {}
        for var, t in tensors:
            groups.setdefault(id(t._data) if attr else id(t), []).append(var)
        for members in groups.values():
            for other in members[1:]:
                emit(f"    if {other}{attr} is not {members[0]}{attr}: return None")
        if len(groups) > 1:
            reps = ", ".join(f"id({m[0]}{attr})" for m in groups.values())
            emit(f"    if len({{{reps}}}) != {len(groups)}: return None")
    return lines, env, where


def _binder(checks, program, pinned=None):
    """The generated ``_bind`` for ``program``: it returns (the arrays of its tensor arguments,
    the argument tensors its effects reach, {path: tensor}) or None. ``pinned``: {path:
    tensor} arguments that must be these very tensors (``_held_arguments``)."""
    lines, env, where = checks
    lines = list(lines)
    for i, (path, t) in enumerate((pinned or {}).items()):
        env[f"PIN{i}"] = t
        lines.append(f"    if {where[path]} is not PIN{i}: return None")
    arrays = ", ".join(f"{where[p]}._data" for p in program.arg_paths)
    tensors = ", ".join(where[p] for p in program.tensor_paths)
    leaves = []
    for i, (path, var) in enumerate(where.items()):
        env[f"PA{i}"] = path
        leaves.append(f"PA{i}: {var}")
    body = lines + [f"    return [{arrays}], [{tensors}], {{{', '.join(leaves)}}}"]
    exec(code_of("\n".join(body) + "\n", "<argument guards>"), env)   # noqa: S102 - our own code
    return env["_bind"]


def _held_arguments(fn, leaves):
    """{path: tensor} of the tensor arguments that an object ``fn`` can see keeps from call to
    call (``held_tensors()``: an optimizer's parameters). Its update writes into the tensor it
    holds, whatever the call was given, while a program's effects reach each call's own
    arguments: so a program is for calls with these very tensors."""
    held = set()
    for scope in _scopes_of(fn):
        for _, v in list(scope.items()):
            get = getattr(type(v), "held_tensors", None)
            if get is not None:
                held.update(id(x) for x in get(v))
    return {p: t for p, t in leaves.items() if isinstance(t, Tensor) and id(t) in held}


def _result_spec(result, cap, leaves):
    by_id = {id(t): p for p, t in leaves.items()}

    def spec(v):
        if isinstance(v, Tensor):
            if id(v) in by_id:
                return ("arg", by_id[id(v)])
            s = cap.slot.get(id(v._data))
            if s in cap.ext:
                return ("same", v)
            if v._requires_grad:
                raise CaptureError("it returns a tensor that requires grad (call backward inside "
                                   "the function, or return loss.detach())")
            if s is None:
                raise CaptureError("it returns a tensor the capture did not see being made")
            # its version counter: an argument's or outside tensor's it shares (detach()), or
            # its own, which the replay sets to what the captured call left in it
            return ("slot", s, v.device, cap.version_owner(v) or v._version[0])
        if isinstance(v, list):
            return [spec(x) for x in v]
        if isinstance(v, tuple):
            items = tuple(spec(x) for x in v)
            if type(v) is tuple:
                return items
            try:            # (values, indices) and named tuples: made again from their items
                again = type(v)(*v)
            except Exception:  # noqa: BLE001 - any constructor that does not take the items
                again = None
            if again is None or len(again) != len(v) or any(a is not b for a, b in zip(again, v)):
                raise CaptureError(f"it returns {type(v).__name__}, which a replay cannot make again")
            return ("tuple", type(v), items)
        if isinstance(v, _SIMPLE):
            return ("value", v)
        raise CaptureError(f"it returns {type(v).__name__}, which a replay cannot make again")

    return spec(result)


def _rebuild(spec, values, leaves):
    if isinstance(spec, list):
        return [_rebuild(s, values, leaves) for s in spec]
    tag = spec[0] if isinstance(spec, tuple) and spec and isinstance(spec[0], str) else None
    if tag == "slot":
        t = new_tensor(values[spec[1]], spec[2])
        version = spec[3]
        if type(version) is int:
            t._version[0] = version
        else:
            t._version = (leaves[version[1]] if version[0] == "arg" else version[1])._version
        return t
    if tag == "arg":
        return leaves[spec[1]]
    if tag in ("same", "value"):
        return spec[1]
    if tag == "tuple":
        return spec[1](*(_rebuild(s, values, leaves) for s in spec[2]))
    return tuple(_rebuild(s, values, leaves) for s in spec)


def _outside_guards(fn, cap, leaves):
    """For every tensor the program reads or whose ``.grad`` it uses from outside: where ``fn``
    finds it (variables of its globals, closure or enclosing scopes, directly, one level
    inside a list, tuple or dict, or among the ``held_tensors()`` of an object such as an
    optimizer), and its metadata. CaptureError when it is found nowhere."""
    arg_arrays = {id(t._data) for t in leaves.values()}
    scopes = _scopes_of(fn)
    names, meta = [], []
    outside = {id(t): t for t in cap.ext.values()}
    outside.update(cap.touched)
    for t in outside.values():
        if id(t._data) in arg_arrays and id(t) not in cap.touched:
            continue
        found = [p for scope in scopes for p in _paths_to(scope, t)]
        if not found:
            raise CaptureError(f"it reads a tensor of shape {tuple(t.shape)} that is neither an argument "
                               "nor a variable it can see; pass it as an argument")
        names.extend((path, t) for path in found)
        meta.append((t, _meta(t)))
    return names, meta


def _scopes_of(fn):
    """The mappings ``fn`` reads variables from: a language function's enclosing scopes, or a
    Python function's closure cells and globals."""
    closure = getattr(fn, "closure", None)
    if closure is not None and hasattr(closure, "vars"):     # a function defined in the language
        scopes = []
        while closure is not None:
            scopes.append(closure.vars)
            closure = closure.parent
        return scopes
    fn = getattr(fn, "__wrapped__", fn)
    scopes = []
    cells = getattr(fn, "__closure__", None) or ()
    free = getattr(getattr(fn, "__code__", None), "co_freevars", ())
    if cells:
        scopes.append(_Cells(dict(zip(free, cells))))
    g = getattr(fn, "__globals__", None)
    if g is not None:
        scopes.append(g)
    return scopes


def _snapshot(v):
    """What a plain value is, for a guard: equal exactly when a replay may use it again (a float
    by its repr: -0.0 is not 0.0, and nan is nan)."""
    if type(v) is float:
        return (float, repr(v))
    if isinstance(v, _SIMPLE):
        return (type(v), v)
    if type(v) in (list, tuple) and len(v) <= 100 and all(isinstance(x, _SIMPLE) for x in v):
        return (type(v), tuple(_snapshot(x) for x in v))
    return None


def _value_guards(fn):
    """[(scope, name, snapshot)]: the plain values (numbers, strings, lists of those) that
    ``fn`` and the functions it calls read from outside variables, as of now. A replay has
    them built in (``w -= lr * w.grad`` multiplies by the captured ``lr``), so a call after
    one of them changed must capture again."""
    out, seen = [], set()

    def visit(f, depth):
        if depth > 8 or id(f) in seen:
            return
        seen.add(id(f))
        if isinstance(f, CompiledFunction):
            f = f.fn
        for scope, name in _reads(f):
            v = scope.get(name)
            snap = _snapshot(v)
            if snap is not None:
                out.append((scope, name, snap))
            elif isinstance(v, CompiledFunction) or hasattr(getattr(v, "closure", None), "vars") or (
                    isinstance(v, types.FunctionType) and not (v.__module__ or "").startswith("autodsl")):
                visit(v, depth + 1)         # a function it calls (autodsl's own read no variables)

    visit(fn, 0)
    return out


def _reads(fn):
    """(scope, name) of each variable ``fn`` may read from an enclosing scope."""
    closure = getattr(fn, "closure", None)
    if closure is not None and hasattr(closure, "vars"):     # a function defined in the language
        names, local = set(), {p.name for p in getattr(fn, "params", ())}
        _language_names(getattr(fn, "body", ()), names, local)
        for name in sorted(names - local):
            scope = closure
            while scope is not None and name not in scope.vars:
                scope = scope.parent
            if scope is not None:
                yield scope.vars, name
        return
    fn = getattr(fn, "__wrapped__", fn)
    code = getattr(fn, "__code__", None)
    if code is None:
        return
    cells = getattr(fn, "__closure__", None) or ()
    if cells:
        scope = _Cells(dict(zip(code.co_freevars, cells)))
        for name in code.co_freevars:
            yield scope, name
    g = getattr(fn, "__globals__", None)
    if g is not None:
        names = set()
        stack = [code]
        while stack:
            c = stack.pop()
            names.update(c.co_names)
            stack.extend(k for k in c.co_consts if isinstance(k, types.CodeType))
        for name in sorted(names):
            if name in g:
                yield g, name


def _language_names(node, names, local):
    """The names a language function's body reads (``names``) and binds (``local``: `=`, `for`,
    `def`); its AST nodes are dataclasses (``lang/ast.py``)."""
    if isinstance(node, (list, tuple)):
        for x in node:
            _language_names(x, names, local)
        return
    if not dataclasses.is_dataclass(node):
        return
    kind = type(node).__name__
    if kind == "Name":
        names.add(node.id)
    elif kind in ("Assign", "FuncDef"):
        local.add(node.name)
    elif kind == "For":
        local.add(node.var)
    for f in dataclasses.fields(node):
        if f.name != "source":
            _language_names(getattr(node, f.name), names, local)


class _Cells:
    """A closure's cells read as a mapping (a cell can be rebound by ``nonlocal``)."""

    def __init__(self, cells):
        self.cells = cells

    def get(self, name, default=None):
        cell = self.cells.get(name)
        try:
            return default if cell is None else cell.cell_contents
        except ValueError:
            return default

    def items(self):
        return ((k, self.get(k)) for k in self.cells)


def _paths_to(scope, t):
    for name, v in list(scope.items()):
        if v is t:
            yield (scope, name, None)
        elif isinstance(v, (list, tuple)) and len(v) <= 1000:
            for i, x in enumerate(v):
                if x is t:
                    yield (scope, name, i)
        elif isinstance(v, dict) and len(v) <= 1000:
            for k, x in v.items():
                if x is t:
                    yield (scope, name, k)
        else:
            # an object that keeps tensors from call to call (an optimizer's state): found
            # again as long as the variable holds the same object
            held = getattr(type(v), "held_tensors", None)
            if held is not None and any(x is t for x in held(v)):
                yield (scope, name, _Held(v))


class _Held:
    """A path's last part: the tensor is one ``held_tensors()`` of the object the variable holds."""

    def __init__(self, holder):
        self.holder = holder


def _guard_function(names, meta, values=()):
    """The guards on outside tensors and values as one generated function (it runs before
    every replay)."""
    env, lines = {"_snap": _snapshot}, ["def _guards():"]
    for i, (scope, name, snap) in enumerate(values):
        env[f"VS{i}"], env[f"VK{i}"], env[f"VV{i}"] = scope, name, snap
        lines.append(f"    if _snap(VS{i}.get(VK{i})) != VV{i}: return False")
    for i, ((scope, name, sub), t) in enumerate(names):
        env[f"S{i}"], env[f"T{i}"], env[f"K{i}"], env[f"I{i}"] = scope, t, name, sub
        get = f"S{i}.get(K{i})"
        if sub is None:
            lines.append(f"    if {get} is not T{i}: return False")
        elif isinstance(sub, _Held):
            env[f"H{i}"] = sub.holder
            lines.append(f"    if {get} is not H{i}: return False")
        else:
            lines.append(f"    try:\n        if {get}[I{i}] is not T{i}: return False\n"
                         f"    except (IndexError, KeyError, TypeError):\n        return False")
    for i, (t, (shape, dtype, device, rg, leaf)) in enumerate(meta):
        env[f"M{i}"], env[f"SH{i}"], env[f"DT{i}"], env[f"DV{i}"] = t, shape, dtype, device
        lines.append(f"    d = M{i}._data")
        lines.append(f"    if d.shape != SH{i} or d.dtype != DT{i} or M{i}.device != DV{i} or "
                     f"M{i}._requires_grad is not {rg!r} or (M{i}.grad_fn is None) is not {leaf!r}: return False")
    lines.append("    return True")
    exec(code_of("\n".join(lines) + "\n", "<guards>"), env)   # noqa: S102 - our own code
    return env["_guards"]
