"""Checking a derivative: analytic gradients (backward) against numeric ones (central
differences in float64).

- ``check(f, [w1, b])``: a table, element by element, of a scalar function's
  gradient: analytic against numeric, absolute and relative error, the worst
  element, and PASS/FAIL with the tolerances (``CheckResult``).
- ``gradcheck(fn, inputs)`` / ``gradgradcheck(fn, inputs)``: PyTorch's
  ``torch.autograd.gradcheck`` / ``gradgradcheck``: the full Jacobian of every
  output with respect to every input that requires grad (of the gradient, for
  ``gradgradcheck``); True, or an AutogradError naming the input, the element
  and both numbers (False with ``raise_exception=false``).

The numeric derivative of ``f`` along element ``j`` of an input is
``(f(x + eps e_j) - f(x - eps e_j)) / (2 eps)``: ``f`` is computed again at nudged
inputs. ``check`` takes three kinds of ``f``: a tensor (its recorded graph is
evaluated again at nudged float64 copies of the inputs, ``core/replay.py``, also
after a ``backward()`` freed its saved values), a function of the inputs
(``def f(w1, b) { ... }``, run on float64 copies) or a function of no arguments
that reads the inputs where they live (``def loss() { return mse_loss(x @ w1 + b,
y) }``, whose inputs are nudged in place and restored exactly, version counters
untouched). ``gradcheck`` and ``gradgradcheck`` take functions.

Criterion (PyTorch's, elementwise): ``|analytic - numeric| <= atol + rtol * |numeric|``.
"""
from __future__ import annotations

import inspect

import numpy as np

import autodsl.backend as backend
from autodsl.core.grad_mode import enable_grad
from autodsl.core.trace import tracing
from autodsl.core.quiet import ieee
from autodsl.core.watch import quiet
from autodsl.names import caller_namespace
from autodsl.ops.creation import zeros_like
from autodsl.source import warn_user
from autodsl.errors import AutogradError, DTypeError, TypeError_, ValueError_
from autodsl.core.autograd import grad
from autodsl.core import html, replay
from autodsl.context import current
from autodsl.core.tensor import Tensor
from autodsl.core.words import kind as value_kind, shown as value_shown

__all__ = ["check", "gradcheck", "gradgradcheck", "CheckResult", "CheckRow"]

EPS, ATOL, RTOL = 1e-6, 1e-5, 1e-3
_FIRST_ROWS = 3        # a large input shows its first elements, its worst and its failures
_MAX_FAILS_SHOWN = 3
_SMALL = 8             # an input with at most this many elements is shown whole


# ---- small helpers ----------------------------------------------------------------------------

def _describe(v) -> str:
    if v is None:
        return "none"
    if isinstance(v, bool):
        return "a boolean"
    if isinstance(v, (int, float)):
        return f"the number {v!r}"
    if isinstance(v, Tensor):
        return f"a tensor of shape {v.shape}"
    return value_kind(v)


def _fn_name(fn) -> str:
    name = getattr(fn, "name", None) or getattr(fn, "__name__", None)
    return name if isinstance(name, str) and name.isidentifier() else "f"


def _param_info(fn):
    """(positional parameter names, how many are required, how many at most (None: any)) or None."""
    params, defaults = getattr(fn, "params", None), getattr(fn, "defaults", None)
    if isinstance(params, list) and isinstance(defaults, dict) and all(hasattr(p, "name") for p in params):
        names = [p.name for p in params]          # a language function (lang.interpreter.UserFunction)
        return names, sum(n not in defaults for n in names), len(names)
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        return None
    names, required, most = [], 0, 0
    for p in sig.parameters.values():
        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD):
            names.append(p.name)
            most += 1
            required += p.default is p.empty
        elif p.kind is p.VAR_POSITIONAL:
            most = None
    return names, required, most


def _as_inputs(inputs, what: str) -> list:
    items = list(inputs) if isinstance(inputs, (list, tuple)) else [inputs]
    if not items:
        raise ValueError_(f"{what}() needs at least one input tensor to differentiate with respect to")
    return items


def _copy64(t: Tensor) -> Tensor:
    """A float64 copy of t's values with t's requires_grad, on t's device (integers stay integers)."""
    floating = t.dtype.is_floating
    arr = backend.asarray(t._data, backend.float64 if floating else t.dtype, t.device, copy=True)
    c = Tensor(arr, _device=t.device)
    if floating and t.requires_grad:
        c.requires_grad_(True)
    return c


def _host(t: Tensor) -> np.ndarray:
    return np.asarray(backend.to_host(t._data), dtype=np.float64)


def _index_text(idx: tuple) -> str:
    return "[" + ", ".join(str(int(i)) for i in idx) + "]" if idx else "-"


def _element(name: str, idx: tuple) -> str:
    return name + (_index_text(idx) if idx else "")


def _num(v: float) -> str:
    if v != v:
        return "nan"
    if v in (float("inf"), float("-inf")):
        return "inf" if v > 0 else "-inf"
    text = f"{v:.8g}"
    if text in ("0", "-0"):
        return "0.0"
    return text if any(c in text for c in ".e") else text + ".0"


def _err(v: float) -> str:
    if v != v:
        return "nan"
    if v == float("inf"):
        return "inf"
    return "0" if v == 0 else f"{v:.1e}"


class _Nudge:
    """Nudges one element of a tensor's storage and puts the exact old value back (no version bump)."""

    def __init__(self, t: Tensor, label: str, what: str):
        arr = self.arr = t._data
        strides = getattr(arr, "strides", ())
        if not backend.writeable(arr) or (arr.size > 1 and 0 in strides):
            raise AutogradError(f"{what}(): {label} shares memory between its elements (an expanded or "
                                "broadcast tensor), so one element cannot be nudged alone; clone() it first")

    def central(self, idx, eps: float, evaluate):
        """(f at x + eps, f at x - eps, the step actually taken) along element ``idx``.

        The step is read back from storage: in float32 ``x + eps`` rounds, and
        dividing by the rounded step instead of ``2 eps`` keeps the quotient honest.
        """
        arr = self.arr
        old = backend.copy(arr[idx])
        x = float(old)
        with ieee():        # (x + eps past float32's range is stored as inf: no NumPy warning)
            try:
                arr[idx] = x + eps
                hi = float(arr[idx])
                plus = evaluate()
                arr[idx] = x - eps
                lo = float(arr[idx])
                minus = evaluate()
            finally:
                arr[idx] = old
        if hi == lo:
            if not np.isfinite(x):
                raise ValueError_(f"the input holds {x:g} at {idx}: no finite difference can be taken "
                                  "there; check at finite values")
            raise ValueError_(f"eps={eps:g} is too small to change a {arr.dtype} value of {x:g}; "
                              "use a larger eps")
        return plus, minus, hi - lo


def _ratio(abs_err: float, numeric: float, atol: float, rtol: float) -> float:
    """How far past the tolerance an element is (> 1: it fails); nan counts as failing."""
    if abs_err != abs_err:
        return float("inf")
    tol = atol + rtol * abs(numeric)
    if tol > 0:
        return abs_err / tol
    return 0.0 if abs_err == 0 else float("inf")


def _check_tolerances(eps, atol, rtol, what: str) -> tuple:
    try:
        eps, atol, rtol = float(eps), float(atol), float(rtol)
    except (TypeError, ValueError):
        raise TypeError_(f"{what}(): eps, atol and rtol must be numbers") from None
    if not eps > 0:
        raise ValueError_(f"{what}(): eps must be a small positive number (1e-6 is usual), not {value_shown(eps)}")
    if atol < 0 or rtol < 0:
        raise ValueError_(f"{what}(): atol and rtol must not be negative")
    return eps, atol, rtol


# ---- check(): the table -----------------------------------------------------------------------

class CheckRow:
    """One element of one input in a ``check`` table."""

    __slots__ = ("name", "input", "index", "analytic", "numeric", "abs_err", "rel_err", "ok", "ratio")

    def __init__(self, name, input, index, analytic, numeric, atol, rtol):
        self.name = name                 # the input's name (variable, parameter, or "input i")
        self.input = input               # its position in the inputs
        self.index = tuple(int(i) for i in index)
        self.analytic = float(analytic)
        self.numeric = float(numeric)
        diff = abs(self.analytic - self.numeric)
        self.abs_err = diff if diff == diff else float("nan")
        scale = max(abs(self.analytic), abs(self.numeric))
        self.rel_err = 0.0 if diff == 0 else (diff / scale if scale > 0 else float("nan"))
        self.ratio = _ratio(self.abs_err, self.numeric, atol, rtol)
        self.ok = self.ratio <= 1.0

    @property
    def element(self) -> str:
        """``w1[0, 1]`` (the name alone for a scalar input)."""
        return _element(self.name, self.index)

    def __repr__(self) -> str:
        return (f"CheckRow({self.element}: analytic={self.analytic!r}, numeric={self.numeric!r}, "
                f"abs_err={self.abs_err:.3g}, ok={self.ok})")


class CheckResult(html.RichDisplay):
    """What ``check`` found: printed as a table; the data for programs.

    Attributes: ``ok`` (every element within tolerance), ``rows`` (a ``CheckRow``
    per element of every input, in order), ``worst`` (the row farthest from, or
    past, its tolerance ``atol + rtol*|numeric|``), ``failures`` (the failing rows),
    ``names`` (the inputs' names), ``value`` (f at the inputs), ``function``,
    ``eps``, ``atol``, ``rtol``, ``dtype`` (what the numeric side ran in).
    """

    LANG_ATTRIBUTES = frozenset({"ok", "value", "eps", "atol", "rtol"})     # what a script may read

    def __init__(self, function, names, rows, value, eps, atol, rtol, dtype, replayed=False):
        self.function = function
        self.replayed = replayed      # f was a tensor: its graph was replayed
        self.names = list(names)
        self.rows = rows
        self.value = value
        self.eps, self.atol, self.rtol = eps, atol, rtol
        self.dtype = dtype
        self.failures = [r for r in rows if not r.ok]
        self.ok = not self.failures
        self.worst = max(rows, key=lambda r: r.ratio) if rows else None
        self.notes = []         # lines printed after the verdict

    def __bool__(self) -> bool:
        return self.ok

    def _shown(self) -> list:
        """The rows the table shows: all of a small input; else its first ones, worst and failures."""
        shown = []
        for k in range(len(self.names)):
            block = [r for r in self.rows if r.input == k]
            if len(block) <= _SMALL:
                shown.extend(block)
                continue
            keep = set(range(_FIRST_ROWS))
            worst = max(range(len(block)), key=lambda i: block[i].ratio)
            keep.add(worst)
            fails = [i for i, r in enumerate(block) if not r.ok]
            keep.update(sorted(fails, key=lambda i: -block[i].ratio)[:_MAX_FAILS_SHOWN])
            last = -1
            for i in sorted(keep):
                if i != last + 1:
                    shown.append(None)     # a gap
                shown.append(block[i])
                last = i
            if last != len(block) - 1:
                shown.append(None)
        return shown

    _HEAD = ("input", "index", "analytic", "numeric", "abs err", "rel err", "")

    def _body(self) -> list:
        """The table's rows as cell texts (None for a gap), with the rows they show."""
        body = []
        for r in self._shown():
            if r is None:
                body.append((None, None))
                continue
            mark = []
            if not r.ok:
                mark.append("FAIL")
            if r is self.worst:
                mark.append("<- worst")
            body.append(([r.name, _index_text(r.index), _num(r.analytic), _num(r.numeric),
                          _err(r.abs_err), _err(r.rel_err), " ".join(mark)], r))
        return body

    def _more_line(self, body) -> str | None:
        n_shown = sum(r is not None for _, r in body)
        if n_shown < len(self.rows):
            return (f"  (showing {n_shown} of {len(self.rows)} elements: the first of each large "
                    "input, its worst and its failures)")
        return None

    def table(self) -> str:
        head = list(self._HEAD)
        lines = []
        pairs = self._body()
        body = [cells for cells, _ in pairs]
        cells = [head] + [b for b in body if b is not None]
        widths = [max(len(c[i]) for c in cells) for i in range(len(head))]

        def fmt(row):
            return "  ".join(c.ljust(w) for c, w in zip(row, widths)).rstrip()

        lines.append(fmt(head))
        for b in body:
            lines.append("  ..." if b is None else fmt(b))
        more = self._more_line(pairs)
        if more:
            lines.append(more)
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        """The table in HTML: a row per element shown, failing rows in red, the verdict below."""
        pairs = self._body()
        rows = [cells if cells is not None else ["..."] + [""] * (len(self._HEAD) - 1) for cells, _ in pairs]
        styles = [None if r is None or r.ok else "background:#fbe3e3;color:#8a1010" for _, r in pairs]
        more = self._more_line(pairs)
        footer = ([more.strip()] if more else []) + [self.verdict()] + self.notes
        return html.table(self._HEAD, rows, caption=self._heading(), footer=footer,
                          css_class="autodsl-check", row_styles=styles)

    def verdict(self) -> str:
        rule = "|analytic - numeric| <= atol + rtol*|numeric|"
        tol = f"(atol={self.atol:g}, rtol={self.rtol:g})"
        n, w = len(self.rows), self.worst
        if self.ok:
            worst = f"; worst {w.element}: abs err {_err(w.abs_err)}" if w is not None else ""
            return f"PASS: {rule} for all {n} elements {tol}{worst}"
        return (f"FAIL: {rule} fails for {len(self.failures)} of {n} elements {tol}; worst {w.element}: "
                f"analytic {_num(w.analytic)}, numeric {_num(w.numeric)}")

    def _heading(self) -> str:
        value = f" = {_num(self.value)}" if self.value is not None else ""
        how = f" of replays of {self.function}'s graph" if self.replayed else ""
        return (f"check {self.function}{value}: analytic (backward) vs numeric (central differences{how}, "
                f"eps={self.eps:g}, {self.dtype})")

    def __str__(self) -> str:
        return "\n".join([self._heading(), self.table(), self.verdict()] + self.notes)

    __repr__ = __str__


def _names_from_session(inputs) -> list:
    """The variable names the running Session (from Python: the caller) binds to each input
    (None where there is none)."""
    provider = current().names
    namespace = provider() if provider is not None else caller_namespace()    # Python API: the caller's
    out = []
    for t in inputs:
        name = None
        if namespace is not None:
            for k, v in namespace.items():
                if v is t and isinstance(k, str) and not k.startswith("_"):
                    name = k
                    break
        out.append(name)
    return out


def _scalar_of(out, fname: str, what: str) -> Tensor:
    if not isinstance(out, Tensor):
        raise TypeError_(f"{what}(): {fname} returned {_describe(out)}, but it must return a tensor "
                         "with a single element (a loss)")
    if out.numel() != 1:
        raise ValueError_(f"{what}(): {fname} returned a tensor of shape {out.shape}, but check compares "
                          "the gradient of a single number; reduce it (.sum(), .mean()) or use "
                          "gradcheck(f, inputs) to check its whole Jacobian")
    if not out.dtype.is_floating:
        raise DTypeError(f"{what}(): {fname} returned a {out.dtype.name} tensor, which has no gradient; "
                         "compute it in floating point")
    return out


def check(f, inputs, eps=None, atol=None, rtol=None, names=None):
    """Check the gradient of a scalar tensor or function element by element: analytic (backward)
    against numeric (central differences). Returns a ``CheckResult``, printed as a table.

    ``f``: a tensor with one element (a loss) computed from the inputs: its graph is
    evaluated again (replayed) at float64 copies of the inputs, nudged, so it works after
    ``f.backward()`` too and touches nothing; the analytic side is backward on that graph
    made again. An input may be a leaf or an intermediate result (the graph is cut there);
    one that f does not depend on gets zeros. Notes under the table say when f's graph
    keeps a value computed from an input without recording (a detach(), no_grad code:
    both sides leave its share out) or when the inputs changed since f was computed.
    Or ``f`` is a function returning such a tensor, either
    - of the inputs: ``def f(w1, b) { ... }`` is called as ``f(w1, b)`` on float64
      copies of the inputs (float32 inputs are checked in float64: the formulas,
      not float32 rounding), or
    - of no arguments, reading the inputs where they are: ``def loss() { ... }``;
      each input element is nudged in place by ``±eps`` and restored exactly
      afterwards (version counters untouched). Such inputs must require grad;
      with float32 inputs the numeric side runs in float32 (a warning says so),
      with float32 defaults for the tolerances.

    ``eps``, ``atol``, ``rtol``: the step and tolerances; by default 1e-6, 1e-5,
    1e-3 (PyTorch's gradcheck), or 1e-3, 1e-3, 1e-2 when the numeric side runs in
    float32. ``inputs``: a tensor or a list of tensors (floating). ``names``: optional list
    of names for the table; by default the variable names of the running
    session (from Python: the caller's variables), else the function's parameter names, else ``input 0``, ...

    Each row: input, index, analytic, numeric, abs err ``|a - n|``, rel err
    ``|a - n| / max(|a|, |n|)``. An element passes when
    ``|a - n| <= atol + rtol*|n|`` (PyTorch's gradcheck rule); the worst is the
    one closest to (or farthest past) that bound. Large inputs are summarized
    (first elements, worst, failures). The result has ``.ok``, ``.value``, ``.eps``,
    ``.atol``, ``.rtol`` for programs (and, from Python, ``.rows``, ``.worst``,
    ``.failures``); ``check`` itself never raises on a mismatch (``gradcheck`` does).

    Raises TypeError_ / ValueError_ / DTypeError for a wrong ``f`` or inputs (a leaf
    ``f``: ValueError_), AutogradError for a tensor ``f`` without a graph, and for inputs
    that do not require grad of a tensor or a no-argument ``f``.

    Examples: ``f.backward(); check(f, [w1, b])``;
    ``def loss() { return ((x @ w + b - y)^2).mean() }; check(loss, [w, b])``
    """
    if not isinstance(f, Tensor) and not callable(f):
        raise TypeError_(f"check() needs a function or a tensor as its first argument, not {_describe(f)}")
    inputs = _as_inputs(inputs, "check")
    for i, t in enumerate(inputs):
        if not isinstance(t, Tensor):
            raise TypeError_(f"check(): input {i} is {_describe(t)}, not a tensor")
        if not t.dtype.is_floating:
            raise DTypeError(f"check(): input {i} is {t.dtype.name}; only floating tensors have gradients")
    if isinstance(f, Tensor):
        return _check_graph(f, inputs, eps, atol, rtol, names)
    fname = _fn_name(f)
    info = _param_info(f)
    n = len(inputs)
    positional = info is None or (info[1] <= n and (info[2] is None or n <= info[2]))
    if not positional and info[1] != 0:
        raise TypeError_(
            f"check(): {fname} takes {info[1]} argument{'s' if info[1] != 1 else ''} but {n} input"
            f"{'s were' if n != 1 else ' was'} given; give a function of the inputs (def {fname}(w1, b) "
            f"{{ ... }}, one parameter per input) or of no arguments that reads them (def {fname}() {{ ... }})")
    label = list(names) if names is not None else [None] * n
    if len(label) != n:
        raise ValueError_(f"check(): {len(label)} names for {n} inputs; give one name per input")
    session_names = _names_from_session(inputs)
    for i in range(n):
        if label[i] is None:
            label[i] = session_names[i] or (info[0][i] if positional and info and i < len(info[0]) else None) \
                or f"input {i}"
        label[i] = str(label[i])

    with enable_grad(), tracing(False), quiet():      # hundreds of backward passes: no trace of each
        if positional:
            work = [_copy64(t).requires_grad_(True) for t in inputs]
            call = lambda: f(*work)  # noqa: E731
            dtype = "float64"
        else:
            for i, t in enumerate(inputs):
                if not t.requires_grad:
                    raise AutogradError(
                        f"check(): {label[i]} does not require grad, so {fname}() has no gradient for it; "
                        f"make it with requires_grad=true, or give {fname} a parameter per input")
            work = list(inputs)
            call = f
            narrow = [label[i] for i, t in enumerate(inputs) if t.dtype.name != "float64"]
            if narrow:
                dtype = next(t.dtype.name for t in inputs if t.dtype.name != "float64")
                warn_user(
                    f"check(): {', '.join(narrow)} {'is' if len(narrow) == 1 else 'are'} {dtype}, so the "
                    f"numeric gradient is computed in {dtype}, with looser defaults (eps=1e-3, atol=1e-3, "
                    "rtol=1e-2); make the inputs float64 for a strict check, or give "
                    f"{fname} one parameter per input (it then runs on float64 copies)")
            else:
                dtype = "float64"
        loose = dtype != "float64"
        eps, atol, rtol = _check_tolerances(
            (1e-3 if loose else EPS) if eps is None else eps, (1e-3 if loose else ATOL) if atol is None else atol,
            (1e-2 if loose else RTOL) if rtol is None else rtol, "check")
        out = _scalar_of(call(), fname, "check")
        value = float(_host(out).reshape(()))
        if out.requires_grad:
            grads = grad(out, work, allow_unused=True)
        else:
            grads = [None] * n
        analytic = [np.zeros(t.shape) if g is None else _host(g) for g, t in zip(grads, work)]
        unreached = {k for k, g in enumerate(grads) if g is None}
        del out, grads

        def value_of():
            return float(_host(_scalar_of(call(), fname, "check")).reshape(()))

        rows = _rows(work, label, analytic, eps, atol, rtol, value_of)
    result = CheckResult(fname, label, rows, value, eps, atol, rtol, dtype)
    # an input backward cannot reach, yet nudging it moves f: f reads another tensor that shares
    # its storage (`:check loss w[0]` with a loss that reads w): a false FAIL without this note
    moved = [label[k] for k in sorted(unreached) if any(not r.ok for r in rows if r.input == k)]
    if moved:
        result.notes.append(
            f"note: backward does not reach {', '.join(moved)}: {fname}() does not use "
            f"{'that tensor' if len(moved) == 1 else 'those tensors'} itself but another one that shares "
            "its storage, so the analytic side is 0 while nudging it moves the result: a slice such as "
            "w[0] is a new tensor (check w itself), and a detach() carries no gradient")
    return result


def _rows(work, label, analytic, eps, atol, rtol, value_of) -> list:
    """A CheckRow per element of every input: ``analytic`` against central differences of
    ``value_of()`` with that element of ``work`` nudged in place (and put back exactly)."""
    rows = []
    for k, t in enumerate(work):
        nudge = _Nudge(t, label[k], "check")
        for idx in np.ndindex(*t.shape):
            plus, minus, step = nudge.central(idx, eps, value_of)
            rows.append(CheckRow(label[k], k, idx, analytic[k][idx], (plus - minus) / step, atol, rtol))
    return rows


# ---- check(f) for a tensor f: its graph replayed (core/replay.py) --------------------------------

def _check_graph(f: Tensor, inputs, eps, atol, rtol, names) -> CheckResult:
    """``check`` of a tensor: backward's gradient on its graph made again (a recorded replay,
    so a backward that freed it does not matter), against central differences of replays of
    that graph, on float64 copies of the inputs (the originals are not touched)."""
    fname = _names_from_session([f])[0] or "f"
    n = len(inputs)
    label = list(names) if names is not None else [None] * n
    if len(label) != n:
        raise ValueError_(f"check(): {len(label)} names for {n} inputs; give one name per input")
    session_names = _names_from_session(inputs)
    label = [str(label[i] or session_names[i] or f"input {i}") for i in range(n)]
    _scalar_of(f, fname, "check")
    root = f.grad_fn
    if root is None:
        if f.requires_grad:
            raise ValueError_(f"check(): {fname} is a leaf (made directly, not computed from other tensors), "
                              "so there is no derivative to check; check a result computed from it")
        raise AutogradError(f"check(): {fname} has no graph: it was not computed from tensors that require "
                            "grad; make its inputs with requires_grad=true and compute it again (or give "
                            "check the function that computes it)")
    for i, t in enumerate(inputs):
        if not t.requires_grad:
            raise AutogradError(f"check(): {label[i]} does not require grad, so {fname}'s graph holds its values "
                                "as a constant that cannot be nudged; make it with requires_grad=true and "
                                f"compute {fname} again (or give check the function that computes {fname})")
    eps, atol, rtol = _check_tolerances(EPS if eps is None else eps, ATOL if atol is None else atol,
                                        RTOL if rtol is None else rtol, "check")
    keys = [replay.node_of(t) for t in inputs]
    ops, leaves = replay.graph_order([root], [k for k in keys if k is not None])
    in_graph = set(ops) | set(leaves)
    reached = [k is not None and k in in_graph for k in keys]
    work = [_copy64(t).requires_grad_(True) for t in inputs]
    values = {k: w for k, w, r in zip(keys, work, reached) if r}
    with enable_grad(), tracing(False), quiet():      # hundreds of replays: no trace of each
        out = replay.evaluate([root], values, record=True).outputs[root]
        value = float(_host(out).reshape(()))
        used = [w for w, r in zip(work, reached) if r]
        grads = iter(grad(out, used, allow_unused=True) if used and out.requires_grad else [None] * len(used))
        analytic = [_host(g) if r and g is not None else np.zeros(w.shape)
                    for w, r, g in ((w, r, next(grads) if r else None) for w, r in zip(work, reached))]
        del out, grads
        order = replay.graph_order([root], values)

        def value_of():
            return float(_host(replay.evaluate([root], values, order=order).outputs[root]).reshape(()))

        rows = _rows(work, label, analytic, eps, atol, rtol, value_of)
    result = CheckResult(fname, label, rows, value, eps, atol, rtol, "float64", replayed=True)
    now = replay.evaluate([root], order=replay.graph_order([root])).outputs[root]
    if not replay.same_values(now._data, f._data):
        result.notes.append(
            f"note: {fname}'s graph at the inputs' current values gives {_num(float(_host(now).reshape(())))}, "
            f"not {fname}'s value {_num(float(_host(f).reshape(())))}: a tensor it was computed from changed "
            "since (an in-place update); the check is at the current values")
    for fx in replay.fixed_inputs([root], values, ops):
        if fx.kind in ("no_grad", "detach"):
            result.notes.append(
                f"note: {replay.fixed_sentence(fx, f'`{fname}`')}. Backward gives it no gradient and the replays "
                f"keep it fixed, so both sides leave it out; to include its share of the derivative, check "
                f"the function that computes {fname} (def loss() {{ ... }})")
    return result


# ---- gradcheck / gradgradcheck ----------------------------------------------------------------

def _outputs_of(value, what: str, fname: str) -> tuple:
    items = tuple(value) if isinstance(value, (list, tuple)) else (value,)
    for i, o in enumerate(items):
        if not isinstance(o, Tensor):
            where = f"output {i}" if len(items) > 1 else "its result"
            raise TypeError_(f"{what}(): {fname} returned {_describe(o)} as {where}; it must return a tensor "
                             "or a list of tensors")
    return items


def _jacobians(fn, args, wrt, eps, what, fname):
    """(analytic, numeric, output shapes): J[o][w] is an (output numel, input numel) float64 array."""
    outs = _outputs_of(fn(*args), what, fname)
    shapes = [o.shape for o in outs]
    sizes = [int(np.prod(s, dtype=np.int64)) for s in shapes]
    analytic = [[np.zeros((m, args[i].numel())) for i in wrt] for m in sizes]
    targets = [args[i] for i in wrt]
    for oi, o in enumerate(outs):
        if not o.requires_grad:
            continue
        flat = o.reshape(-1)
        for r in range(sizes[oi]):
            gs = grad(flat[r], targets, retain_graph=True, allow_unused=True)
            for wi, g in enumerate(gs):
                if g is not None:
                    analytic[oi][wi][r, :] = _host(g).reshape(-1)
    del outs
    numeric = [[np.zeros((m, args[i].numel())) for i in wrt] for m in sizes]

    def values():
        res = _outputs_of(fn(*args), what, fname)
        if [o.shape for o in res] != shapes:
            raise ValueError_(f"{what}(): {fname} returned outputs of other shapes when an input was nudged; "
                              "the function must give outputs of fixed shapes")
        return [_host(o).reshape(-1) for o in res]

    for wi, i in enumerate(wrt):
        t = args[i]
        nudge = _Nudge(t, f"input {i}", what)
        for j, idx in enumerate(np.ndindex(*t.shape)):
            plus, minus, step = nudge.central(idx, eps, values)
            with ieee():        # (inf - inf on both sides of a nudge: nan, no NumPy warning)
                for oi in range(len(sizes)):
                    numeric[oi][wi][:, j] = (plus[oi] - minus[oi]) / step
    return analytic, numeric, shapes


def _run_gradcheck(fn, inputs, eps, atol, rtol, raise_exception, what, fname, in_labels, out_label):
    args = [_copy64(t) if isinstance(t, Tensor) else t for t in inputs]
    wrt = [i for i, a in enumerate(args) if isinstance(a, Tensor) and a.requires_grad]
    if not wrt:
        raise ValueError_(f"{what}(): no input requires grad, so there is nothing to check; create the "
                          "inputs to check with requires_grad=true")
    with enable_grad(), tracing(False), quiet():
        analytic, numeric, out_shapes = _jacobians(fn, args, wrt, eps, what, fname)
    for oi, shape in enumerate(out_shapes):
        for wi, i in enumerate(wrt):
            a, n = analytic[oi][wi], numeric[oi][wi]
            diff = np.abs(a - n)
            bad = ~(diff <= atol + rtol * np.abs(n))       # nan counts as a mismatch
            if not bad.any():
                continue
            if not raise_exception:
                return False
            with np.errstate(divide="ignore", invalid="ignore"):
                ratio = np.where(bad, diff / (atol + rtol * np.abs(n)), 0.0)
            ratio = np.nan_to_num(ratio, nan=np.inf)
            r, j = np.unravel_index(int(np.argmax(ratio)), ratio.shape)
            in_shape = args[i].shape
            in_idx = np.unravel_index(j, in_shape) if in_shape else ()
            out_idx = np.unravel_index(r, shape) if shape else ()
            name = in_labels[i]
            label = f"input {i}" + (f" ({name})" if name else "")
            elem = _element(name or "input", in_idx)
            out_el = _element(out_label(oi), out_idx)
            raise AutogradError(
                f"{what}(): the derivative of output {oi} with respect to {label} is wrong at "
                f"d {out_el} / d {elem}: analytic {_num(float(a[r, j]))}, numeric {_num(float(n[r, j]))} "
                f"(|difference| {_err(float(diff[r, j]))} > atol + rtol*|numeric| = "
                f"{_err(atol + rtol * abs(float(n[r, j])))}); {int(bad.sum())} of {bad.size} entries of this "
                "Jacobian differ. A backward formula, or a detach()/no_grad in the function, is wrong here; "
                "check(f, inputs) shows every element")
    return True


def _labels(fn, inputs) -> list:
    info = _param_info(fn)
    names = info[0] if info else []
    return [names[i] if i < len(names) else None for i in range(len(inputs))]


def gradcheck(fn, inputs, eps=EPS, atol=ATOL, rtol=RTOL, raise_exception=True):
    """Check the gradients of ``fn`` at ``inputs`` against central finite differences, as
    PyTorch's ``torch.autograd.gradcheck``: True when they match.

    ``fn(*inputs)`` returns a tensor or a list of tensors (a Python callable or a
    ``def`` function). ``inputs``: a tensor or a list; the tensors that require
    grad are checked, other entries are passed through. Every output's full
    Jacobian with respect to every such input is computed twice: analytically
    (one backward per output element) and numerically, column by column,
    ``(fn(x + eps e_j) - fn(x - eps e_j)) / (2 eps)``. An entry matches when
    ``|analytic - numeric| <= atol + rtol*|numeric|``.

    float64: ``fn`` runs on float64 copies of the inputs (a float32 input is
    widened; the caller's tensors are never modified), so the check tests the
    derivative formulas, not float32 rounding.

    Raises AutogradError on a mismatch, naming the output, the input (and its
    parameter name), the element, the analytic and numeric values and how many
    entries differ; with ``raise_exception=false`` returns False instead.
    ValueError_ when no input requires grad.

    Example: ``def f(x) { return x^3 }; gradcheck(f, [tensor([1.0, 2.0], requires_grad=true)])``
    """
    eps, atol, rtol = _check_tolerances(eps, atol, rtol, "gradcheck")
    if not callable(fn) or isinstance(fn, Tensor):
        raise TypeError_(f"gradcheck() needs a function as its first argument, not {_describe(fn)}")
    inputs = _as_inputs(inputs, "gradcheck")
    fname = _fn_name(fn)
    return _run_gradcheck(fn, inputs, eps, atol, rtol, raise_exception, "gradcheck", fname,
                          _labels(fn, inputs), lambda oi: "output")


def gradgradcheck(fn, inputs, grad_outputs=None, eps=EPS, atol=ATOL, rtol=RTOL, raise_exception=True):
    """Check second derivatives, as PyTorch's ``torch.autograd.gradgradcheck``: gradcheck of
    the function ``(inputs, grad_outputs) -> grad(fn(inputs), inputs, grad_outputs,
    create_graph=true)``, so the backward of the backward is compared with finite
    differences of the first derivative.

    ``grad_outputs``: one tensor per output of ``fn``, of its shape; by default
    random values in [-1, 1) from a fixed seed (reproducible; the session's
    ``seed`` is not touched). They are checked as inputs too, as in PyTorch.
    Other arguments, float64 copies and errors as in ``gradcheck``.

    Example: ``def f(x) { return (x^3).sum() }; gradgradcheck(f, [x])``
    """
    eps, atol, rtol = _check_tolerances(eps, atol, rtol, "gradgradcheck")
    if not callable(fn) or isinstance(fn, Tensor):
        raise TypeError_(f"gradgradcheck() needs a function as its first argument, not {_describe(fn)}")
    inputs = _as_inputs(inputs, "gradgradcheck")
    fname = _fn_name(fn)
    args = [_copy64(t) if isinstance(t, Tensor) else t for t in inputs]
    with enable_grad(), tracing(False), quiet():
        outs = _outputs_of(fn(*args), "gradgradcheck", fname)
    if grad_outputs is None:
        rng = np.random.default_rng(0)
        gos = []
        for o in outs:
            arr = backend.asarray(rng.uniform(-1.0, 1.0, size=o.shape), backend.float64, o.device)
            gos.append(Tensor(arr, _device=o.device).requires_grad_(True))
    else:
        gos = _as_inputs(grad_outputs, "gradgradcheck")
        if len(gos) != len(outs):
            raise ValueError_(f"gradgradcheck(): {len(gos)} grad_outputs for {len(outs)} outputs of {fname}; "
                              "give one per output")
        for k, (g, o) in enumerate(zip(gos, outs)):
            if not isinstance(g, Tensor) or g.shape != o.shape:
                raise ValueError_(f"gradgradcheck(): grad_outputs[{k}] must be a tensor of shape {o.shape} "
                                  f"(output {k}'s), not {_describe(g)}")
        gos = [_copy64(g).requires_grad_(True) for g in gos]
    del outs
    n_in = len(inputs)

    def first_derivative(*all_args):
        xs, g_out = all_args[:n_in], all_args[n_in:]
        outs = _outputs_of(fn(*xs), "gradgradcheck", fname)
        pairs = [(o, g) for o, g in zip(outs, g_out) if o.requires_grad]
        diff = [x for x in xs if isinstance(x, Tensor) and x.requires_grad]
        if not pairs or not diff:
            return []
        gs = grad([o for o, _ in pairs], diff, grad_outputs=[g for _, g in pairs], create_graph=True,
                  allow_unused=True)
        return [zeros_like(x) if g is None else g for g, x in zip(gs, diff)]

    params = _labels(fn, inputs)
    labels = params + [f"grad_outputs[{k}]" for k in range(len(gos))]
    diff_names = [params[i] or f"input{i}" for i, t in enumerate(inputs)
                  if isinstance(t, Tensor) and t.requires_grad]
    return _run_gradcheck(first_derivative, list(inputs) + gos, eps, atol, rtol, raise_exception,
                          "gradgradcheck", fname, labels,
                          lambda oi: f"grad_{diff_names[oi]}")
