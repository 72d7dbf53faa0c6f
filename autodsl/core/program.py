"""A captured call as a program: straight-line Python over arrays, and its listing.

Note [replay]: ``Program(capture, ...)`` turns the steps of ``core/capture.py`` into the
source of one Python function, one line per step (``v7 = forward(node, v3, v5)``), compiled
once with ``compile``/``exec``. Calling it runs the same array functions on the same kinds
of values in the same order as the eager call did, so its results are bit-identical to
eager autodsl's; what it skips is everything eager autodsl does besides the arithmetic:
Tensor and node objects, promotion, the engine's bookkeeping. The steps that change state
outside the program (``.grad``, in-place updates, version counters, the undo journal) call
the helpers below, which do what eager autodsl does.

Inside the program a 0-d result stays what NumPy gives, a NumPy scalar, where eager autodsl
wraps it back into a 0-d array (``new_tensor``): the arithmetic on either is the same IEEE
operation in the same dtype, and every forward and formula takes both. Values become arrays
where they leave the program: ``.grad``, the returned tensors, a Tensor-level backward.

A guard inside the program (a value Python branched on, a ``.grad`` it reads) raises
``GuardFailed`` when it does not hold. When such a guard follows a step that changed state,
the run is a transaction: everything is put back before the call runs eagerly instead.
"""
from __future__ import annotations

import gc

import autodsl.backend as backend
from autodsl.context import current
from autodsl.core.journal import record_grad, record_values, transaction
from autodsl.core.node import SavedOutput, add_saved
from autodsl.core.tensor import Tensor, new_tensor
from autodsl.core.watch import note_write
from autodsl.names import caller_namespace, names_by_id
from autodsl.source import format_pos

__all__ = ["Program", "GuardFailed", "code_of"]

_EFFECTS = frozenset({"acc", "grad_none", "ufunc", "write"})


_CODE: dict = {}


def code_of(source: str, filename: str):
    """``compile(source, filename, "exec")``, remembered: the same function compiled again
    (a script run twice, a fresh ``compile(step)``) generates the same source, and compiling
    a long program costs more than capturing it."""
    key = (source, filename)
    code = _CODE.get(key)
    if code is None:
        if len(_CODE) >= 256:
            _CODE.clear()
        code = _CODE[key] = compile(source, filename, "exec")
    return code


class GuardFailed(Exception):
    """A guard inside the program did not hold (``args[0]``: what)."""


class Program:
    """The replayable form of one captured call.

    ``capture``: the Capture of the eager call; ``arg_slots``: {path: slot} of the tensor
    arguments; ``result``: the returned value with each tensor replaced by its slot
    (``("slot", s, device)``), built by the caller. ``run(args)`` returns the result.
    """

    def __init__(self, capture, result, name: str = "fn"):
        self.name = name
        self.steps = capture.steps
        self.result = result
        self.ext = dict(capture.ext)
        self.formula_ns = capture.formula_ns
        self.arg_paths = [st[2] for st in self.steps if st[0] == "arg"]
        self.tensor_paths = []      # the arguments whose tensors (not only arrays) effects reach
        self.trace = None
        self.transactional = _guard_after_effect(self.steps)
        self._started = [False]     # an effect step ran (then an error cannot be retried eagerly)
        self._fn = self._build(capture)

    # -- code ----------------------------------------------------------------------------
    def _build(self, cap):
        env = {"_GF": GuardFailed, "_mT": backend.swap_last,
               "_opf": _op_recording, "_opb": _backward, "_acc": _accumulate, "_gnone": _grad_none,
               "_rgrad": _read_grad, "_rv": record_values, "_nw": note_write, "_write": _write, "_item": _item, "_tolist": _tolist,
               "_F": self.formula_ns, "_cp": backend.copy, "_E": self._started}
        results = set(_result_slots(self.result))
        last_read = _last_reads(self.steps, results)
        lines = ["def _program(A, L, J):"]
        emit = lines.append
        n_args = 0
        first_effect = next((i for i, st in enumerate(self.steps) if st[0] in _EFFECTS), None)

        def target(t, i):
            """The expression that finds the tensor ``t`` an effect step changes: the call's own
            argument, or the tensor from outside (its variables are guarded by compile)."""
            path = cap.args.get(id(t))
            if path is None:
                env[f"T{i}"] = t
                return f"T{i}"
            if path not in self.tensor_paths:
                self.tensor_paths.append(path)
            return f"L[{self.tensor_paths.index(path)}]"

        def owner(t, i):
            """Whose version counter a write into ``t`` bumps (None: a counter of the call's own)."""
            got = cap.version_owner(t)
            if got is None:
                return None
            if got[0] == "grad":
                return target(got[1], i) + "._grad"
            if got[0] == "arg":
                if got[1] not in self.tensor_paths:
                    self.tensor_paths.append(got[1])
                return f"L[{self.tensor_paths.index(got[1])}]"
            env[f"O{i}"] = got[1]
            return f"O{i}"

        def made(t):
            return id(t) not in cap.args and not cap._outside(t)

        # a tensor the call made that it writes into may be a view of a creation's constant
        own_writes = any(st[0] in ("ufunc", "write") and made(st[2] if st[0] == "ufunc" else st[1])
                         for st in self.steps)
        # a leaf the call made (zeros(3, requires_grad=true)) starts each call without a .grad
        for st in self.steps:
            t = st[2] if st[0] == "read_grad" else st[1] if st[0] in ("acc", "grad_none", "grad_is_none") else None
            if t is not None and made(t) and f"R{id(t)}" not in env:
                env[f"R{id(t)}"] = t
                emit(f"    R{id(t)}._grad = None")

        filled = set()      # the .grad fields an earlier step of the program accumulated into
        cleared = set()     # ... and those it set to none
        # a large array is let go after its last read, as eager autodsl frees it when its last
        # tensor goes: the allocator reuses its memory for the next one (small ones wait)
        drop = {}
        for s, j in last_read.items():
            if s in cap.big and s not in results:
                drop.setdefault(j, []).append(s)
        for i, st in enumerate(self.steps):
            if i - 1 in drop:
                emit(f"    del {', '.join(f'v{s}' for s in drop[i - 1])}")
            k = st[0]
            if i == first_effect and not self.transactional:
                emit("    _E[0] = True")
            if k == "arg":
                emit(f"    v{st[1]} = A[{n_args}]")
                n_args += 1
            elif k == "ext":
                env[f"T{i}"] = st[2]
                emit(f"    v{st[1]} = T{i}._data")
            elif k == "const":
                env[f"C{i}"] = st[2]
                if st[1] in cap.fresh and (own_writes or st[1] in results):
                    emit(f"    v{st[1]} = _cp(C{i})")      # zeros(3) is new on every call
                else:
                    emit(f"    v{st[1]} = C{i}")
            elif k == "op":
                out, cls, rnode, ins, params, opaque = st[1:7]
                env[f"N{i}"], env[f"F{i}"] = rnode, cls.forward
                args = ", ".join(f"v{s}" for s in ins)
                if opaque:
                    env[f"P{i}"] = params or {}
                    emit(f"    v{out} = _opf(N{i}, F{i}, ({args}{',' if len(ins) == 1 else ''}), P{i}, "
                         f"{st[8]!r})")
                elif st[9] is not None:        # the forward is this operator (Op.expr)
                    emit(f"    v{out} = " + st[9].format(*(f"v{s}" for s in ins)))
                elif st[10] is not None:       # the forward for these shapes (Op.specialize)
                    env[f"F{i}"] = st[10]
                    emit(f"    v{out} = F{i}({args})")
                else:
                    if params:
                        env[f"P{i}"] = params
                    emit(f"    v{out} = F{i}(N{i}{', ' if ins else ''}{args}{', **P' + str(i) if params else ''})")
            elif k == "formula":
                res, cls, rnode, g, sv = st[1:6]
                if cls.passes_gradient:         # its formula is `return g, g`: nothing to run
                    continue
                written = _written_formula(rnode, res, g, sv)
                if written is not None:         # the formula's operators, written out (Op.formula_expr)
                    lines.extend(written)
                    continue
                env[f"N{i}"], env[f"Q{i}"] = rnode, cls.formula
                saved = "" if sv is None else "".join(", None" if s is None else f", v{s}" for s in sv)
                lhs = ", ".join("_" if s is None else f"v{s}" for s in res)
                emit(f"    {lhs}{',' if len(res) == 1 else ''} = Q{i}(N{i}, _F, v{g}{saved})")
            elif k == "backward":
                res, rnode, g, device = st[1:5]
                env[f"N{i}"] = rnode
                emit(f"    _r = _opb(N{i}, v{g}, {device!r})")
                for j, s in enumerate(res):
                    if s is not None:
                        emit(f"    v{s} = _r[{j}]")
            elif k == "add":
                emit(f"    v{st[1]} = v{st[2]} + v{st[3]}")
            elif k == "acc":
                t = target(st[1], i)
                # Note [stealing a gradient]: an array this call computed, that owns its memory
                # and that no later step reads, becomes .grad as it is
                steal = st[3] and last_read.get(st[2], -1) <= i
                emit(f"    _acc({t}, v{st[2]}, {steal!r}, J)")
                filled.add(id(st[1]))
                cleared.discard(id(st[1]))
            elif k == "grad_none":
                emit(f"    _gnone({target(st[1], i)}, J)")
                filled.discard(id(st[1]))
                cleared.add(id(st[1]))
            elif k == "grad_is_none":
                if id(st[1]) not in cleared:    # (after the program's own `= none` it is none)
                    emit(f"    if {target(st[1], i)}._grad is not None: raise _GF({i})")
            elif k == "read_grad":
                if id(st[2]) in filled:         # the program accumulated into it: it is there
                    emit(f"    v{st[1]} = {target(st[2], i)}._grad._data")
                else:
                    emit(f"    v{st[1]} = _rgrad({target(st[2], i)})")
            elif k == "ufunc":
                name, t, s, v, is_slot, pos = st[1:7]
                # the capture found that NumPy computes this update in place (backend.ufunc_inplace);
                # the guards keep the dtypes and shapes that decided it
                env[f"W{i}"], env[f"U{i}"] = pos, backend.inplace_ufunc(name, t.device)
                if not is_slot:
                    env[f"K{i}"] = v
                value = f"v{v}" if is_slot else f"K{i}"
                o = owner(t, i)
                if o is None:           # a tensor the call made: only its array changes
                    emit(f"    U{i}(v{s}, {value}, out=v{s})")
                else:
                    emit(f"    if J is not None: _rv({o})")
                    emit(f"    U{i}(v{s}, {value}, out=v{s}); {o}._version[0] += 1; _nw({o}, W{i})")
            elif k == "write":
                # (a position per write: st[4], None for now)
                emit(f"    _write({owner(st[1], i)}, v{st[2]}, v{st[3]}, J)")
            elif k == "guard":
                env[f"E{i}"] = st[2]
                emit(f"    if not (_{st[3]}(v{st[1]}) == E{i}): raise _GF({i})")
            else:  # pragma: no cover - every kind above
                raise AssertionError(k)
        slots = sorted(_result_slots(self.result))
        emit(f"    return ({''.join(f'v{s}, ' for s in slots)})")
        self._result_order = slots
        source = "\n".join(lines) + "\n"
        self.source = source
        exec(code_of(source, f"<program of {self.name}>"), env)   # noqa: S102 - our own code
        return env["_program"]

    # -- running -----------------------------------------------------------------------
    def run(self, arg_arrays, arg_tensors=()):
        """Run the program on the arrays of the tensor arguments (in ``arg_paths`` order) and
        the tensors whose ``.grad`` or version it changes (``tensor_paths``); returns the slots
        of the result by slot. Raises GuardFailed (nothing changed then)."""
        ctx = current()
        self._started[0] = False
        gc_on = gc.isenabled()
        if gc_on:
            gc.disable()
        token = None if ctx.ieee_depth else backend.fp_errors_off()
        try:
            if self.transactional:      # (inside a Session's transaction, its entries go there too)
                with transaction() as log:
                    values = self._fn(arg_arrays, arg_tensors, log)
            else:
                values = self._fn(arg_arrays, arg_tensors, ctx.journal)
        finally:
            if token is not None:
                backend.fp_errors_restore(token)
            if gc_on:
                gc.enable()
        return dict(zip(self._result_order, values))

    # -- the listing ---------------------------------------------------------------------
    def changed_something(self) -> bool:
        """After ``run`` raised: did it change anything it did not put back?"""
        return self._started[0]

    def listing(self, names=None) -> str:
        """The program as numbered array operations with where each was written, the values
        the backward keeps, and the guards (``print(train.program)``)."""
        names = names or {}
        ext_name = {s: names.get(id(t)) or f"t{s}" for s, t in self.ext.items()}

        def v(s):
            return ext_name.get(s, f"v{s}")

        out, saved, n = [], set(), 0
        for st in self.steps:
            k = st[0]
            text = None
            pos = None
            if k == "arg":
                text = f"{v(st[1])} = argument {_path_text(st[2])}"
            elif k == "ext":
                continue
            elif k == "const":
                text = f"{v(st[1])} = constant {_short(st[2])}"
            elif k == "op":
                out_s, cls, _, ins, params = st[1:6]
                args = ", ".join(v(s) for s in ins)
                extra = "" if not params else ", " + ", ".join(f"{a}={_short(b)}" for a, b in params.items())
                text = f"{v(out_s)} = {cls.op_name}({args}{extra})"
                pos = st[7]
            elif k in ("formula", "backward"):
                res = st[1]
                rnode = st[3] if k == "formula" else st[2]
                g = st[4] if k == "formula" else st[3]
                sv = st[5] if k == "formula" else None
                if sv:
                    saved.update(s for s in sv if s is not None)
                lhs = ", ".join("_" if s is None else v(s) for s in res)
                keep = "" if not sv else "; saved " + ", ".join(v(s) for s in sv if s is not None)
                text = f"{lhs} = {rnode.name}({v(g)}{keep})"
                pos = rnode.pos
            elif k == "add":
                text = f"{v(st[1])} = {v(st[2])} + {v(st[3])}  (gradients summed)"
            elif k == "acc":
                text = f"{names.get(id(st[1])) or 'leaf'}.grad += {v(st[2])}"
            elif k == "grad_none":
                text = f"{names.get(id(st[1])) or 'leaf'}.grad = none"
            elif k == "read_grad":
                text = f"{v(st[1])} = {names.get(id(st[2])) or 'leaf'}.grad"
            elif k == "grad_is_none":
                text = f"guard: {names.get(id(st[1])) or 'leaf'}.grad is none (Python read it)"
            elif k == "ufunc":
                op = {"add": "+=", "subtract": "-=", "multiply": "*=", "divide": "/="}.get(st[1], st[1])
                text = f"{names.get(id(st[2])) or v(st[3])} {op} {v(st[4]) if st[5] else _short(st[4])}  (in place)"
            elif k == "write":
                text = f"{names.get(id(st[1])) or v(st[2])}[...] = {v(st[3])}  (in place)"
            elif k == "guard":
                text = f"guard: {v(st[1])} is {_short(st[2])} (Python branched on it)"
            n += 1
            where = format_pos(pos) if pos else ""
            out.append(f"{n:4}  {text}" + (f"    # {where}" if where else ""))
        head = [f"program of {self.name}: {n} steps, {len(self.arg_paths)} tensor argument(s), "
                f"{len(saved)} value(s) saved for the backward"]
        return "\n".join(head + out)

    def __str__(self) -> str:
        names = names_by_id()
        if not names:     # from Python: the caller's variables
            names = names_by_id(caller_namespace())
        return self.listing(names)

    def __repr__(self) -> str:
        return f"<program of {self.name}: {len(self.steps)} steps>"


def _guard_after_effect(steps) -> bool:
    """Can a guard fail after the program changed something? (Then it runs as a transaction.)
    A ``.grad`` read after the program accumulated into that ``.grad`` cannot fail, nor can
    one found none after the program set it to none."""
    effect, filled, cleared = False, set(), set()
    for st in steps:
        k = st[0]
        if k == "acc":
            filled.add(id(st[1]))
            cleared.discard(id(st[1]))
        elif k == "grad_none":
            filled.discard(id(st[1]))
            cleared.add(id(st[1]))
        if effect and (k == "guard" or k == "read_grad" and id(st[2]) not in filled
                       or k == "grad_is_none" and id(st[1]) not in cleared):
            return True
        effect = effect or k in _EFFECTS
    return False


def _written_formula(rnode, res, g, saved):
    """The lines that compute a formula's results with its ``formula_exprs``, or None."""
    exprs = rnode.formula_exprs()
    if exprs is None:
        return None
    names = ["None" if s is None else f"v{s}" for s in saved or ()]
    try:
        return [f"    v{s} = " + e.format(*names, g=f"v{g}") for s, e in zip(res, exprs) if s is not None]
    except (IndexError, AttributeError):    # a value this node did not save, a fact it lacks
        return None


def _last_reads(steps, results=()) -> dict:
    """{slot: index of the last step that reads it} (``len(steps)`` for what the call returns):
    a step may give away a slot it is the last reader of."""
    reads = []
    for st in steps:
        k = st[0]
        if k == "op":
            r = set(st[4])
        elif k == "formula":
            r = {st[4]} | {s for s in (st[5] or ()) if s is not None}
        elif k == "backward":
            r = {st[3]}
        elif k == "add":
            r = {st[2], st[3]}
        elif k in ("acc", "guard"):
            r = {st[2] if k == "acc" else st[1]}
        elif k == "ufunc":
            r = {st[3]} | ({st[4]} if st[5] else set())
        elif k == "write":
            r = {st[2], st[3]}
        else:
            r = set()
        reads.append(r)
    last = {s: len(steps) for s in results}
    for i, r in enumerate(reads):
        for s in r:
            if last.get(s, -1) < i:
                last[s] = i
    return last


def _result_slots(result):
    if isinstance(result, tuple) and len(result) == 4 and result[0] == "slot":
        yield result[1]
    elif isinstance(result, (list, tuple)):
        for r in result:
            yield from _result_slots(r)


def _path_text(path) -> str:
    """``(0, 1)`` -> "2" (the second positional argument), ``(1, "lr")`` -> "lr", deeper: "2[0]"."""
    head = str(path[1] + 1) if path[0] == 0 else str(path[1])
    return head + "".join(f"[{p!r}]" for p in path[2:])


def _short(x) -> str:
    if hasattr(x, "shape") and hasattr(x, "dtype"):
        if getattr(x, "ndim", 1) == 0:
            return repr(backend.to_host(x).item())
        return f"<{x.dtype} array {tuple(x.shape)}>"
    if x is None or isinstance(x, bool):        # the language's spelling
        return {None: "none", True: "true", False: "false"}[x]
    text = repr(x)
    return text if len(text) <= 40 else text[:37] + "..."


# -- the helpers the program calls (each does what eager autodsl does) -----------------------

def _op_recording(node, forward, arrays, params, device):
    """An op whose derivative is written on Tensors: its forward on a recording node."""
    node._record = True
    node._saved = None
    node._released = False
    node.inputs = tuple(Tensor(a) for a in arrays)
    try:
        out = forward(node, *arrays, **params)
    finally:
        node.inputs = None
    t = new_tensor(out, device)
    if node.save_output:
        add_saved(node, SavedOutput(t))
    return t._data


def _backward(node, g, device):
    """That op's backward on Tensors, as the engine runs it (no graph, inside a pass)."""
    ctx = current()
    was = ctx.grad_enabled
    ctx.grad_enabled = False
    ctx.in_pass += 1
    try:
        outs = node.backward(new_tensor(g, device))
    finally:
        ctx.grad_enabled = was
        ctx.in_pass -= 1
    node._saved = None
    if type(outs) is not tuple:
        outs = tuple(outs) if isinstance(outs, list) else (outs,)
    return tuple(None if o is None else o._data for o in outs)


def _accumulate(t, g, steal, journal):
    """AccumulateGrad: Tensor._grad_update and _grad_commit on arrays."""
    if journal is not None:
        record_grad(t)
    old = t._grad
    if old is None:
        t._grad = new_tensor(g if steal else backend.copy(g), t.device)
    elif not backend.writeable(old._data):
        t._grad = new_tensor(old._data + g, t.device)
    else:
        old._data[...] = old._data + g
        old._version[0] += 1


def _grad_none(t, journal):
    if journal is not None:
        record_grad(t)
    t._grad = None


def _read_grad(t):
    g = t._grad
    if g is None:
        raise GuardFailed("a .grad the program reads is none")
    return g._data


def _write(t, arr, src, journal):
    """``arr[...] = src``; ``t``: whose version counter counts it (None: the call made it)."""
    if journal is not None and t is not None:
        record_values(t)
    if src.dtype != arr.dtype:
        src = backend.namespace_of(src).astype(src, arr.dtype)
    arr[...] = src
    if t is not None:
        t._version[0] += 1
        note_write(t)


def _tolist(arr):
    return backend.to_host(arr).tolist()


def _item(arr):
    return backend.to_host(arr).reshape(()).item()
