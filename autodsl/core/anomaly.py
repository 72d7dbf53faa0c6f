"""Anomaly mode: find where a NaN or an infinity was born, in the forward and in the backward.

A NaN spreads: once one value is NaN, everything computed from it is too, so
the op that shows it is rarely the op that made it. With anomaly mode on,
every op checks its output, and reports the FIRST op that produced a
non-finite value from finite inputs (the root cause), with its source
position and its inputs summarized; in the backward, every node checks the
gradients it sends, and reports the first node that produced a non-finite
gradient from a finite one (a derivative that is infinite where the forward
was fine, such as sqrt at 0).

    anomaly(true)                    # warn, once per site
    anomaly(true, mode="raise")      # stop with an error at the first one
    anomaly(false)

Cost: when anomaly mode is off, one test of the run context's ``anomaly`` per
op (``ops.registry.apply``) and per node run (the engine); nothing else. The
mode lives in the run context, so that a Session scopes it (each Session has
its own, as with the trace).

Reports are warnings of class ``AnomalyWarning`` (shown by a Session as
``file:line:col: warning: ...``, each site once) or, with ``mode="raise"``,
a ``ValueError_`` (forward) or ``AutogradError`` (backward). Either carries
the facts as ``.report`` (an ``AnomalyReport``).
"""
from __future__ import annotations

import contextlib
import warnings
from functools import partial

import numpy as np

import autodsl.backend as backend
from autodsl.errors import AutogradError, TypeError_, ValueError_
from autodsl.textfmt import format_number
from autodsl.context import current
from autodsl.names import names_of
from autodsl.source import SOURCE_POS, caller_pos, format_pos, pos_text, warn_user
from autodsl.core import deferred
from autodsl.core.observer import PassObserver
from autodsl.core.rules import LiveOutputs, input_value, output_value
from autodsl.core.words import shown

__all__ = ["anomaly", "detect_anomaly", "anomaly_scope", "get_anomaly_mode", "anomaly_state", "AnomalyReport",
           "AnomalyWarning", "check_forward", "check_backward", "MODES"]

MODES = ("warn", "raise")

class _State(PassObserver):
    """The mode of one scope and the sites already reported in it (each site warns once).
    It watches every backward pass while it is the run context's ``anomaly``."""

    __slots__ = ("mode", "seen")

    def __init__(self, mode):
        self.mode = mode
        self.seen = set()

    def step(self, node, grad, outs) -> None:
        check_backward(node, grad, outs)


class AnomalyWarning(UserWarning):
    """A NaN or infinity was produced from finite values; ``.report`` has the facts."""

    def __init__(self, report: "AnomalyReport"):
        super().__init__(str(report))
        self.report = report


def _check_mode(enabled, mode) -> str | None:
    if not isinstance(mode, str) or mode not in MODES:     # (a tensor's == is elementwise)
        raise ValueError_(f"anomaly mode must be \"warn\" or \"raise\", not {shown(mode)}")
    return mode if enabled else None


def _set(state: _State | None):
    ctx = current()
    old = ctx.anomaly
    ctx.anomaly = state
    return ctx, old


def _reset(token) -> None:
    ctx, old = token
    ctx.anomaly = old


def anomaly(enabled: bool = True, mode: str = "warn") -> None:
    """Turn anomaly mode on or off: report the op that first produced a NaN or an
    infinity from finite values, in the forward (the op, its position, its inputs
    summarized: shape, min/max, any nan/inf) and in the backward (the node that made a
    non-finite gradient from a finite one, with the gradient that came in).

    Only floating-point results are checked (integers and bools are always finite).
    ``mode="warn"`` (default) prints a warning once per site and goes on;
    ``mode="raise"`` stops at the first one with an error (ValueError_ in the
    forward, AutogradError in the backward). Raises ValueError_ for another mode,
    TypeError_ for a string as ``enabled`` (``anomaly("off")``: use false).
    Off, it costs nothing. In a Session it lasts for that session.

    Example (language)::

        anomaly(true)
        y = sqrt(x - 1)        # warning: sqrt ... produced nan from finite inputs
    """
    if isinstance(enabled, str):      # anomaly("off") would turn it on
        raise TypeError_(f"anomaly() takes true or false, not the string {enabled!r}; "
                         "anomaly(true, mode=\"raise\") stops at the first nan or inf")
    mode = _check_mode(enabled, mode)
    _set(None if mode is None else _State(mode))


def get_anomaly_mode(ctx=None) -> str | None:
    """None when anomaly mode is off, else "warn" or "raise" (in ``ctx``, default: the current
    run context)."""
    st = (ctx or current()).anomaly
    return None if st is None else st.mode


def anomaly_state(mode: str | None):
    """The run-context value for anomaly mode ``mode`` (None: off); ValueError_ for a bad mode."""
    return None if mode is None else _State(_check_mode(True, mode))


@contextlib.contextmanager
def anomaly_scope(mode: str | None):
    """Anomaly mode ``mode`` (None: off) inside the block, restored after it (a Session's scope)."""
    if mode is not None:
        _check_mode(True, mode)
    token = _set(None if mode is None else _State(mode))
    try:
        yield
    finally:
        _reset(token)


class detect_anomaly:
    """Context manager: anomaly mode inside the block (PyTorch's ``detect_anomaly``).

        with autodsl.detect_anomaly(mode="raise"):
            loss.backward()
    """

    def __init__(self, mode: str = "warn"):
        self.mode = _check_mode(True, mode)
        self._tokens = []

    def __enter__(self):
        self._tokens.append(_set(_State(self.mode)))
        return self

    def __exit__(self, *exc):
        _reset(self._tokens.pop())
        return False


# -- the facts --------------------------------------------------------------------------------

class AnomalyReport:
    """What anomaly mode found.

    ``where``: "forward" or "backward". ``op``: the op name (forward, ``sqrt``)
    or the node name (backward, ``SqrtBackward``). ``node``: the graph node
    (backward; forward when the op was recorded), else None. ``pos``: its
    source position ``(file, line, column, text)`` or None. ``bad``: "nan",
    "inf", "-inf" or several of them joined by "and". ``input``: (backward) which input's gradient went
    bad. ``lines``: the summary lines (inputs, output, gradients).
    """

    def __init__(self, where, op, node, pos, bad, lines, hint=None, input=None):
        self.where = where
        self.op = op
        self.node = node
        self.pos = pos
        self.bad = bad
        self.lines = lines
        self.hint = hint
        self.input = input

    @property
    def line(self):
        """The source line of the op or node, or None."""
        return None if not self.pos else self.pos[1]

    def headline(self) -> str:
        at = format_pos(self.pos)
        at = f" at {at}" if at else ""
        if self.where == "forward":
            return f"anomaly: {self.op}{at} produced {self.bad} from finite inputs"
        return (f"anomaly: {self.op}{at} produced {self.bad} in the gradient for its input "
                f"{self.input} from a finite gradient")

    def __str__(self) -> str:
        out = [self.headline()] + ["  " + ln for ln in self.lines]
        if self.hint:
            out.append("  " + self.hint)
        return "\n".join(out)

    __repr__ = __str__


# -- the checks (called only while the run context has anomaly mode on) ---------------------------------------------------------

def _finite(arr) -> bool:
    """True when every element of a backend array is finite (integers and bools always are)."""
    if backend.kind_of(arr.dtype) != "f":
        return True
    xp = backend.namespace_of(arr)
    return bool(xp.all(xp.isfinite(arr)))


def _non_finite(arr):
    """A 0-d bool array, true when some element of ``arr`` is nan or infinite (no host read);
    None for integers and bools (always finite)."""
    if backend.kind_of(arr.dtype) != "f":
        return None
    xp = backend.namespace_of(arr)
    return ~xp.all(xp.isfinite(arr))


def _bad_kind(host) -> str:
    """"nan", "inf", "-inf", or a list of those joined by "and"."""
    kinds = [w for w, f in (("nan", np.isnan), ("inf", np.isposinf), ("-inf", np.isneginf)) if f(host).any()]
    return " and ".join(kinds)


def summarize(arr) -> str:
    """``scalar, value -0.5`` or ``shape (3,), min -1.0 max 2.0, 1 nan of 3``: what a person
    needs to see why an op failed, without printing a large array."""
    host = np.asarray(backend.to_host(arr))
    if host.ndim == 0:
        return f"scalar, value {format_number(host.item())}"
    head = f"shape {tuple(host.shape)}"
    if host.size == 0:
        return head + ", empty"
    if host.dtype.kind != "f":
        return f"{head}, min {format_number(host.min())} max {format_number(host.max())}"
    nan = int(np.isnan(host).sum())
    pinf = int(np.isposinf(host).sum())
    ninf = int(np.isneginf(host).sum())
    bad = ", ".join(f"{n} {w}" for n, w in ((nan, "nan"), (pinf, "inf"), (ninf, "-inf")) if n)
    if host.size <= 4:
        values = ", ".join(format_number(v) for v in host.ravel().tolist())
        return f"{head}, values {values}" + (f" ({bad})" if bad else "")
    finite = host[np.isfinite(host)]
    parts = [head]
    if finite.size:
        parts.append(f"min {_short(finite.min())} max {_short(finite.max())}"
                     + (" (of the finite ones)" if finite.size != host.size else ""))
    parts.append(f"{bad} of {host.size}" if bad else "no nan/inf")
    return ", ".join(parts)


def _short(v) -> str:
    f = float(v)
    return format_number(f) if f == int(f) or not np.isfinite(f) else f"{f:.6g}"


# Why an op commonly makes nan/inf: one short line, by op (forward) and by node (backward).
_FORWARD_HINTS = {
    "sqrt": "sqrt of a negative number is nan",
    "log": "log of a negative number is nan, log(0) is -inf",
    "div": "x/0 is inf (or -inf), 0/0 is nan",
    "pow": "a negative base to a fractional power is nan; 0 to a negative power is inf",
    "exp": "exp overflows to inf above about 709 (float64) or 88 (float32)",
    "tan": "tan is infinite at odd multiples of pi/2",
    "mul": "inf * 0 is nan; a product can overflow to inf",
    "matmul": "the products or their sum overflowed",
    "sum": "the sum overflowed", "prod": "the product overflowed",
    "mean": "the sum overflowed, or there was nothing to average (the mean of no elements is 0/0)",
    "norm": "the squares overflowed",
    "var": "the squares overflowed, or there were too few elements for the correction "
           "(n - correction <= 0 divides by zero or less)",
    "std": "the squares overflowed, or there were too few elements for the correction "
           "(n - correction <= 0 divides by zero or less)",
}
_BACKWARD_HINTS = {
    "SqrtBackward": "the derivative of sqrt, 1/(2*sqrt(x)), is infinite at x = 0",
    "LogBackward": "the derivative of log, 1/x, is infinite at x = 0",
    "DivBackward": "the derivative of a/b divides by b and b^2: infinite where b is 0",
    "PowBackward": "the derivative of x^p, p*x^(p-1), is infinite at x = 0 when p < 1",
    "NormBackward": "the derivative of a norm divides by the norm: infinite where it is 0",
    "StdBackward": "the derivative of std divides by std: infinite where it is 0",
    "TanBackward": "the derivative of tan, 1 + tan^2, is infinite at odd multiples of pi/2",
}


def _site(kind, name, pos, extra=None):
    return (kind, name, pos, extra)


def _emit(st: _State, key, report: AnomalyReport, error_class) -> None:
    if st.mode == "raise":
        err = error_class(str(report) + "\n  (anomaly mode is on: anomaly(false) turns it off)")
        err.report = report
        raise err
    if key in st.seen:
        return
    st.seen.add(key)
    pos = report.pos
    w = AnomalyWarning(report)
    if pos and pos[2] is None and pos[0]:       # a Python caller: point the warning at its line
        warnings.warn_explicit(w, AnomalyWarning, pos[0], pos[1])
    else:
        warn_user(w, AnomalyWarning)


def check_forward(op_name: str, inputs, out, node=None) -> None:
    """After an op: report it when it made a non-finite value from finite inputs.

    ``inputs``: the op's input Tensors; ``out``: its output Tensor; ``node``: its
    graph node when recorded (for the position), else None.
    """
    ctx = current()
    st = ctx.anomaly
    if st is None or ctx.in_pass:     # in a pass: an op of a backward formula, whose node
        return                              # check_backward reports
    arr = out._data
    pos = None
    if not backend.on_host(arr):        # no host sync per op: tested when values are read
        pos = (node.pos if node is not None and node.pos is not None
               else SOURCE_POS.get() or caller_pos())
        flag = _non_finite(arr)
        if flag is None:
            return
        for t in inputs:
            f = _non_finite(t._data)
            if f is not None:
                flag = flag & ~f
        deferred.check(flag, partial(_forward_report, st, op_name, inputs, out, node, pos), pos)
        return
    if _finite(arr):
        return
    for t in inputs:
        if not _finite(t._data):
            return          # not the root cause: a non-finite input came in
    _forward_report(st, op_name, inputs, out, node, pos)


def _forward_report(st, op_name, inputs, out, node, pos) -> None:
    """check_forward's report (warning or error) of an op that made nan or inf from finite inputs."""
    arr = out._data
    pos = pos or (node.pos if node is not None and node.pos is not None
                  else SOURCE_POS.get() or caller_pos())
    host = np.asarray(backend.to_host(arr))
    lines = []
    for i, t in enumerate(inputs):
        child = getattr(t, "grad_fn", None)
        text = _source_text(child.pos) if child is not None else None
        if text is None:
            names = _names_of(t)
            text = names[0] if names else None
        what = f" `{text}`" if text else ""
        lines.append(f"input {i}{what}: {summarize(t._data)}")
    lines.append(f"output: {summarize(arr)}")
    report = AnomalyReport("forward", op_name, node, pos, _bad_kind(host), lines,
                           hint=_FORWARD_HINTS.get(op_name))
    _emit(st, _site("forward", op_name, pos), report, ValueError_)


def _input_text(node, i):
    """The source text of a node's input ``i``: the expression that made it, or the leaf's name."""
    edges = node.next_edges
    child = edges[i] if i < len(edges) else None
    if child is None:
        return None
    var = getattr(child, "variable", None)
    if var is not None:
        names = _names_of(var)
        return names[0] if names else None
    return _source_text(child.pos)


def _source_text(pos):
    """The expression's text in the language; None for a Python caller (its whole line)."""
    return pos_text(pos) if pos and pos[2] is not None else None


def _names_of(t):
    return names_of(t)


def check_backward(node, grad, outs) -> None:
    """After a node's backward: report it when a gradient it sends is non-finite while the
    gradient it got was finite. ``grad``: the gradient in (Tensor); ``outs``: one Tensor or
    None per input."""
    st = current().anomaly
    if st is None or grad is None:
        return
    if not backend.on_host(grad._data):     # no host sync per node: tested when values are read
        flag = None
        for og in outs:
            f = None if og is None else _non_finite(og._data)
            if f is not None:
                flag = f if flag is None else flag | f
        if flag is None:
            return
        f = _non_finite(grad._data)
        if f is not None:
            flag = flag & ~f
        deferred.check(flag, partial(_backward_now, st, node, grad, outs), node.pos)
        return
    _backward_now(st, node, grad, outs)


def _inputs_finite(node, live) -> bool:
    """No input of ``node`` that the graph still knows is non-finite, so its forward check saw
    finite inputs and reported a non-finite value itself; False for ``sin(inf)``, whose nan
    nobody reported, so its backward may. (An input the graph no longer knows counts as finite:
    no second report of what the forward check may have said.)"""
    for j in range(len(node.next_edges)):
        inp = input_value(node, j, live)
        if inp is not None and not _finite(inp):
            return False
    return True


def _backward_now(st, node, grad, outs) -> None:
    """check_backward on values at hand (NumPy's, or a deferred check's that failed)."""
    bad = [i for i, og in enumerate(outs) if og is not None and not _finite(og._data)]
    if not bad or not _finite(grad._data):
        return
    live = LiveOutputs()        # (Note [live outputs]: looked up only now, for the report)
    out = output_value(node, live)
    if out is not None and not _finite(out) and _inputs_finite(node, live):
        return      # a non-finite value from finite inputs: the forward check reported that
    i = bad[0]
    og = outs[i]
    host = np.asarray(backend.to_host(og._data))
    lines = []
    for j in bad:
        inp = input_value(node, j, live)
        if inp is not None:
            text = _input_text(node, j)
            lines.append(f"input {j}{f' `{text}`' if text else ''} (forward): {summarize(inp)}")
    if out is not None:
        lines.append(f"output (forward): {summarize(out)}")
    lines.append(f"grad in: {summarize(grad._data)}")
    for j in bad:
        lines.append(f"grad for input {j}: {summarize(outs[j]._data)}")
    report = AnomalyReport("backward", node.name, node, node.pos, _bad_kind(host), lines,
                           hint=_BACKWARD_HINTS.get(node.name), input=i)
    _emit(st, _site("backward", node.name, node.pos, i), report, AutogradError)


