"""``plot(f, lo, hi)``: a function of one variable and its derivative, drawn in the terminal
(``plot(f, x, lo, hi)`` for a tensor f computed from x: its graph replayed at all the points).

The curve and its derivative come from ONE batched evaluation: ``f`` is called
once on a 1-D tensor of all the sample points, and one vector-Jacobian product
with a vector of ones gives df/dx at every point (for an elementwise ``f`` the
Jacobian is diagonal, so that product is exactly its diagonal). A second, tiny
evaluation on three of the points checks that ``f`` really is elementwise.

The terminal chart is drawn by plotext (a pure-Python terminal plotting
library); ``file="f.svg"`` also writes a picture through matplotlib, an
optional extra (``pip install "autodsl[plot]"``).
"""
from __future__ import annotations

import io
import math
import os
import shutil
import sys
from pathlib import Path

import numpy as np

import autodsl.backend as backend
from autodsl.core.grad_mode import enable_grad
from autodsl.core.html import RichDisplay
from autodsl.core.rules import LiveOutputs
from autodsl.core.trace import tracing
from autodsl.core.watch import quiet
from autodsl.ops.creation import linspace, ones_like, tensor
from autodsl.errors import AutogradError, DSLError, RuntimeError_, ShapeError, TypeError_, ValueError_
from autodsl.core.autograd import grad
from autodsl.context import current
from autodsl.core.journal import record_file
from autodsl.core.tensor import Tensor
from autodsl.core import replay
from autodsl.names import names_of
from autodsl.ops import elementwise
from autodsl.ops.registry import REGISTRY
from autodsl.source import format_pos, pos_text
from autodsl.core.words import kind as value_kind

__all__ = ["plot", "Plot"]

# Without a terminal (tests, pipes, files) the chart has this fixed size, so the output is reproducible.
FIXED_SIZE = (72, 20)
PICTURE_FORMATS = ("svg", "png", "pdf")
_INSTALL_MPL = 'pip install "autodsl[plot]"'


class Plot(RichDisplay):
    """The result of ``plot()``: its text form is the chart (what the language prints).

    Attributes: ``x`` (the sample points), ``y`` (f at them) and ``dy`` (df/dx at
    them): 1-D float64 tensors that do not require grad; ``text``: the chart
    without colors; ``file``: the picture written, or None.

    In a notebook it is a matplotlib figure (``_repr_png_``) when matplotlib is installed,
    the text chart otherwise.
    """

    LANG_ATTRIBUTES = frozenset({"x", "y", "dy", "text", "file"})     # what a script may read

    def __init__(self, x, y, dy, text, colored, file, labels=None):
        self.x = x
        self.y = y
        self.dy = dy
        self.text = text
        self._colored = colored
        self.file = file
        self._labels = labels       # (label_f, label_df, var, title) of the picture
        self._png = None

    def __str__(self) -> str:
        return self._colored or self.text

    __repr__ = __str__

    def _display_text(self) -> str:
        return self.text

    def _repr_png_(self) -> bytes | None:
        if self._png is None and self._labels is not None:
            try:
                fig = _figure(*(np.asarray(backend.to_host(t._data)) for t in (self.x, self.y, self.dy)),
                              *self._labels)
            except ImportError:
                return None
            buf = io.BytesIO()
            fig.savefig(buf, format="png", dpi=96)
            self._png = buf.getvalue()
        return self._png


def plot(f, *bounds, points=201, width=None, height=None, file=None, title=None) -> Plot:
    """Draw ``f(x)`` and its derivative df/dx for x from ``lo`` to ``hi``, in the terminal:
    ``plot(f, lo, hi)`` for a function f, ``plot(f, x, lo, hi)`` for a tensor f computed from x.

    ``f``: a function of one tensor argument that acts elementwise (a language
    ``def``, a Python callable, or a built-in such as ``tanh``); it is called
    ONCE, on a 1-D float64 tensor of ``points`` evenly spaced values from
    ``lo`` to ``hi`` (both included), and must return a tensor of the same
    shape (or a number, for a constant). df/dx at every point comes from one
    backward pass of ``f(x)`` with a gradient of ones (``.grad`` fields are not
    touched). So ``f`` may not mix the points: no ``sum``/``mean``/``max`` over
    ``x``, no ``if x > 0`` (use ``where(x > 0, a, b)``). This is checked by
    evaluating ``f`` again on three of the points; a function that mixes them
    (or gives different values each time) is refused.

    Or ``f`` is a tensor with one element computed from ``x``, a leaf with one element that
    requires grad (``x = tensor(0.5, requires_grad=true); f = x^3 - 2*x``): f's recorded
    graph is evaluated again at all the points at once (one batched replay, core/replay.py;
    it works after ``f.backward()`` too), and df/dx comes from one backward of that replay.
    Every op between x and f must then be elementwise (``+ - * / ^``, ``exp``, ``tanh``,
    ``relu``, ``where``, ...: a sum, a matmul or an index is refused, naming it), and f may not
    use a value computed from x without recording (``x > 0`` as a ``where`` condition: plot
    the function instead). Other leaves keep their values; nothing is touched.

    ``width``/``height``: the chart's size in characters (default: fit the
    terminal; without a terminal a fixed 72 x 20, so output is reproducible).
    ``title``: the chart's title (default: ``f(x) = <the expression>`` when
    ``f`` is a language function that returns one expression or a tensor made by one
    expression, else ``f(x)``).
    ``file``: also write the picture to ``"f.svg"`` (or ``.png``, ``.pdf``)
    with matplotlib. Colors only on a terminal (and not when NO_COLOR is set).

    Returns a Plot: printed, it is the chart (with a line on where df/dx
    changes sign); ``.x``, ``.y``, ``.dy`` are the sampled values (tensors).

    Raises TypeError_ (``f`` not a function or a tensor, the wrong number of bounds, a wrong
    option), ValueError_ (bad range or sizes, an unknown picture format, ``f`` not
    elementwise, a tensor ``f`` or ``x`` with more than one element, ``x`` not a leaf of f's
    graph), ShapeError (``f`` changes the shape), AutogradError (a tensor ``f`` with no
    graph), RuntimeError_ (matplotlib not installed for ``file=``, or the file cannot be
    written); errors raised inside ``f`` pass through with a note.

    Examples (language): ``def f(x) { return x^3 - 2*x }; plot(f, -2, 2)``;
    ``x = tensor(0.5, requires_grad=true); y = x^3 - 2*x; plot(y, x, -2, 2)``
    """
    if isinstance(f, Tensor):
        if len(bounds) != 3:
            raise TypeError_(
                "plot(f, x, lo, hi): f is a tensor, so give the leaf x it is computed from before the "
                "range, as in plot(f, x, -2, 2) (or plot a function: def f(x) { ... }, then plot(f, -2, 2))")
        x, lo, hi = bounds
        root, x_node = _graph_of(f, x)
    else:
        _check_function(f)
        if len(bounds) != 2:
            raise TypeError_(f"plot(f, lo, hi) takes a function and two numbers, the range, but got "
                             f"{len(bounds) + 1} arguments before the options")
        lo, hi = bounds
    lo, hi = _bound(lo, "lo"), _bound(hi, "hi")
    if not lo < hi:
        raise ValueError_(f"plot(): the range must go from a smaller to a larger number, got lo={_num(lo)} "
                          f"and hi={_num(hi)}")
    n = _int_option(points, "points", 3, 1_000_000)
    if title is not None and not isinstance(title, str):
        raise TypeError_(f"plot(): title must be a string, not {value_kind(title)}")
    ext = None
    if file is not None:
        ext = _check_file(file)
    terminal = _on_terminal()
    default_w, default_h = _terminal_size() if terminal else FIXED_SIZE
    w = default_w if width is None else _int_option(width, "width", 30, 1000)
    h = default_h if height is None else _int_option(height, "height", 8, 500)

    if isinstance(f, Tensor):
        xs, ys, dys, ytext = _evaluate_graph(root, x_node, x, lo, hi, n)
        name, var = _tensor_name(f, "f"), _tensor_name(x, "x")
    else:
        xs, ys, dys, ytext = _evaluate(f, lo, hi, n)
        name, var = _names(f)
    label_f, label_df = f"{name}({var})", f"d{name}/d{var}"
    if title is None:
        title = f"{label_f} = {ytext}" if ytext else label_f

    notes = _notes(xs, ys, dys, label_f, label_df, var)
    plain = _chart(xs, ys, dys, label_f, label_df, var, title, w, h, color=False)
    colored = None
    if terminal and not os.environ.get("NO_COLOR"):
        colored = _chart(xs, ys, dys, label_f, label_df, var, title, w, h, color=True)
    written = None
    if file is not None:
        written = _picture(xs, ys, dys, label_f, label_df, var, title, Path(file), ext)
        notes.append(f"wrote {written}")
    tail = "\n".join(notes)
    as_tensor = lambda a: Tensor(np.array(a, dtype=np.float64, copy=True))  # noqa: E731
    return Plot(as_tensor(xs), as_tensor(ys), as_tensor(dys), plain + "\n" + tail,
                None if colored is None else colored + "\n" + tail, written, (label_f, label_df, var, title))


# -- evaluation ---------------------------------------------------------------------------------

# the ops a batched replay may run between x and f: one value per point in, one out
_ELEMENTWISE = frozenset(info.cls for info in REGISTRY.values()
                         if info.cls.__module__ == elementwise.__name__ or info.name == "to")


def _graph_of(f: Tensor, x) -> tuple:
    """(f's graph node, x's node) for ``plot(f, x, lo, hi)``, after checking both."""
    fname, xname = _tensor_name(f, "f"), _tensor_name(x, "x")
    if not isinstance(x, Tensor):
        raise TypeError_(f"plot(f, x, lo, hi): x must be the tensor {fname} is computed from, not {replay.value_kind(x)}")
    if f.numel() != 1 or x.numel() != 1:
        which, t = (fname, f) if f.numel() != 1 else (xname, x)
        raise ValueError_(f"plot(f, x, lo, hi) draws a function of one number: {which} must have one element, "
                          f"but it has shape {t.shape}; plot one element, such as {which}[0], or the sum")
    if not x.requires_grad or x.grad_fn is not None:
        raise ValueError_(f"plot(f, x, lo, hi): {xname} must be a leaf that requires grad (made with "
                          f"requires_grad=true), so that {fname}'s graph records what it does with {xname}"
                          + ("" if x.requires_grad else f"; {xname} does not require grad"))
    root, x_node = f.grad_fn, replay.node_of(x)
    if root is None and f is not x:
        raise AutogradError(f"plot(): {fname} has no graph: it was not computed from {xname}; compute it "
                            f"from {xname} (made with requires_grad=true)")
    return root, x_node


def _evaluate_graph(root, x_node, x, lo, hi, n):
    """(x, f(x), df/dx, the expression text or None) for a tensor f: one batched replay of its
    graph at all the points (recorded), and one backward of it."""
    fname, xname = _tensor_name(_output(root), "f"), _tensor_name(x, "x")
    xs = linspace(lo, hi, n, dtype=backend.float64, device=x.device)
    if root is None:                                  # f is x itself
        return backend.to_host(xs._data), backend.to_host(xs._data), np.ones(n), None
    ops, leaves = replay.graph_order([root], [x_node])
    if x_node not in leaves:
        raise ValueError_(f"plot(f, x, lo, hi): {fname} is not computed from {xname} (it is not in "
                          f"{fname}'s graph); give the leaf {fname} depends on")
    on_x = replay.dependents(ops, [x_node])
    for node in ops:
        if node in on_x and type(node) not in _ELEMENTWISE:
            at = format_pos(node.pos)
            raise ValueError_(
                f"plot(): {fname} is not elementwise in {xname}: {node.name}{f' at {at}' if at else ''} lies "
                f"between {xname} and {fname}, and plot() evaluates {fname} at all {n} points in one batched "
                "replay, where only elementwise ops (+ - * / ^, exp, tanh, relu, where, ...) keep the points "
                f"apart; write {fname} with elementwise ops of {xname}")
    fixed = replay.fixed_inputs([root], [x_node], ops)
    if fixed:
        raise ValueError_(f"plot(): {replay.fixed_sentence(fixed[0], fname)} at the other points; plot a "
                          f"function instead (def f({xname}) {{ ... }}, then plot(f, lo, hi)), which computes "
                          "it again at every point")
    with tracing(False), quiet(), enable_grad():
        xs.requires_grad_(True)
        xb = xs if x.ndim <= 1 else xs.reshape(n, *([1] * (x.ndim - 1)))
        out = replay.evaluate([root], {x_node: xb}, record=True).outputs[root]
        ys = out.reshape(n) if out.requires_grad else out
        (dys,) = grad(ys, xs, grad_outputs=ones_like(ys), allow_unused=True) if ys.requires_grad else (None,)
    text = pos_text(root.pos) if root.pos and root.pos[2] is not None else None
    text = text if text is None or len(text) <= 50 else text[:47] + "..."
    return (backend.to_host(xs._data), _host(ys, n), np.zeros(n) if dys is None else _host(dys, n), text)


def _output(node):
    """A live tensor ``node`` made, a named one first (Note [live outputs]); else None."""
    ts = LiveOutputs().tensors(node) if node is not None else ()
    for t in ts:
        if names_of(t):
            return t
    return ts[0] if ts else None


def _tensor_name(t, default: str) -> str:
    names = names_of(t) if t is not None else []
    return names[0] if names else default


def _check_function(f) -> None:
    if not callable(f) or isinstance(f, type):
        raise TypeError_(f"plot() needs a function of one variable as its first argument (or a tensor, "
                         f"with the leaf it is computed from: plot(f, x, lo, hi)), not {replay.value_kind(f)}; for "
                         "example def f(x) { return x^3 - 2*x }, then plot(f, -2, 2)")


def _evaluate(f, lo, hi, n):
    """(x, f(x), df/dx as host float64 arrays, the expression text or None): one batched pass."""
    device = backend.get_default_device()
    # plot's own backward passes are not the user's: keep them out of the trace and last_trace,
    # and out of what why() explains (quiet)
    with tracing(False), quiet(), enable_grad():
        xs = linspace(lo, hi, n, dtype=backend.float64, device=device, requires_grad=True)
        ys, dys = _value_and_derivative(f, xs, first=True)
        x_host = backend.to_host(xs._data)
        # The check: f on three of the points, alone, must give the same values and slopes.
        pick = np.unique(np.array([0, n // 3, n - 1]))
        probe = tensor(x_host[pick], requires_grad=True, device=device)
        yp, dyp = _value_and_derivative(f, probe, first=False)
    y_host, dy_host = _host(ys, n), _host(dys, n)
    if not (_same(_host(yp, len(pick)), y_host[pick]) and _same(_host(dyp, len(pick)), dy_host[pick])):
        raise ValueError_(
            "plot(): f is not elementwise: its value or slope at a point depends on the other points "
            f"(f on all {n} points and f on 3 of them disagree), or it is not deterministic (random "
            "numbers). plot() evaluates f on all points at once, so f must not mix them: no sum, "
            "mean, max, softmax or indexing over x")
    return x_host, y_host, dy_host, _expression_text(f, ys)


def _value_and_derivative(f, xs, first):
    n = xs.shape[0]
    try:
        ys = f(xs)
    except DSLError as e:
        if first:
            e.message += (f" (plot() calls f once, on a tensor of all {n} points; f must work elementwise "
                          "on a tensor: where(x > 0, a, b) instead of if)")
        raise
    if isinstance(ys, bool) or ys is None or not isinstance(ys, (Tensor, int, float)):
        what = "none (did it forget `return`?)" if ys is None else replay.value_kind(ys)
        raise TypeError_(f"plot(): f must return a tensor (or a number), but it returned {what}")
    if not isinstance(ys, Tensor):
        return np.full(n, float(ys)), np.zeros(n)
    if ys.shape != xs.shape:
        if first:
            raise ShapeError(
                f"plot(): f is not elementwise: on a tensor of {n} points it returned shape {ys.shape} "
                f"instead of ({n},), one value per point. plot() evaluates f on all points at once, so "
                "f must not reduce over x (no sum, mean or max of x)")
        return None, None         # the check below reports it
    if not ys.dtype.is_floating:
        return ys, np.zeros(n)
    if not ys.requires_grad:
        return ys, np.zeros(n)
    (dys,) = grad(ys, xs, grad_outputs=ones_like(ys), allow_unused=True)
    return ys, (np.zeros(n) if dys is None else dys)


def _host(v, n):
    if v is None:
        return np.full(n, np.nan)
    if isinstance(v, Tensor):
        v = backend.to_host(v._data)
    return np.asarray(v, dtype=np.float64).reshape(n)


def _same(a, b) -> bool:
    return a.shape == b.shape and bool(np.allclose(a, b, rtol=1e-6, atol=1e-9, equal_nan=True))


def _expression_text(f, ys) -> str | None:
    """The source text of what a one-statement language function returns (``x^3 - 2*x``).

    The language records each node's source text in ``Node.pos``; it is the
    expression of ``f`` only when ``f``'s body is a single ``return`` (a body that
    first assigns names would show them, so then there is no text).
    """
    body = getattr(f, "body", None)
    if not isinstance(body, list) or len(body) != 1 or type(body[0]).__name__ != "Return":
        return None
    pos = getattr(getattr(ys, "grad_fn", None), "pos", None)
    if not pos or len(pos) < 4 or not isinstance(pos[3], str):
        return None
    return pos[3] if len(pos[3]) <= 50 else pos[3][:47] + "..."


def _names(f):
    """(function name, variable name) for the labels: ("f", "x") for def f(x), "f" for a lambda."""
    name = getattr(f, "name", None) if isinstance(getattr(f, "name", None), str) else None
    name = name or getattr(f, "__name__", None) or "f"
    if not name.isidentifier():
        name = "f"
    var = "x"
    params = getattr(f, "params", None)         # a language function
    if isinstance(params, list) and params and isinstance(getattr(params[0], "name", None), str):
        var = params[0].name
    elif not str(getattr(f, "__module__", "")).startswith("autodsl"):    # autodsl's own: (input, ...)
        import inspect  # noqa: PLC0415
        try:
            first = next(iter(inspect.signature(f).parameters.values()), None)
        except (TypeError, ValueError):
            first = None
        if first is not None and first.kind in (first.POSITIONAL_ONLY, first.POSITIONAL_OR_KEYWORD):
            var = first.name
    return name.rstrip("_") or "f", var


# -- text -----------------------------------------------------------------------------------------

def _notes(xs, ys, dys, label_f, label_df, var):
    n = len(xs)
    lines = [f"{n} points, {var} from {_num(xs[0])} to {_num(xs[-1])}: "
             f"{label_f} from {_range(ys)}, {label_df} from {_range(dys)}"]
    roots = _sign_changes(xs, dys)
    if roots:
        shown = ", ".join(_num(r) for r in roots[:6]) + (", ..." if len(roots) > 6 else "")
        lines.append(f"{label_df} changes sign (a minimum or maximum of {label_f}) near {var} = {shown}")
    bad_y, bad_dy = int(np.sum(~np.isfinite(ys))), int(np.sum(~np.isfinite(dys)))
    if bad_y or bad_dy:
        parts = [f"{label_f} at {bad_y}" if bad_y else "", f"{label_df} at {bad_dy}" if bad_dy else ""]
        lines.append("not finite (not drawn): " + " and ".join(p for p in parts if p)
                     + f" of the {n} points")
    return lines


def _sign_changes(xs, dys):
    """Where df/dx changes sign: between two neighbouring points (linear interpolation), or
    across a run of exact zeros (its middle). Not across a point where it is not finite (a pole)."""
    d = dys
    nz = np.flatnonzero(np.isfinite(d) & (d != 0))
    roots = []
    for i, j in zip(nz[:-1], nz[1:]):
        if np.sign(d[i]) == np.sign(d[j]):
            continue
        if j == i + 1:
            roots.append(xs[i] - d[i] * (xs[j] - xs[i]) / (d[j] - d[i]))
        elif np.all(d[i + 1:j] == 0):
            roots.append((xs[i + 1] + xs[j - 1]) / 2)
    return roots


def _range(a):
    a = a[np.isfinite(a)]
    if a.size == 0:
        return "(no finite value)"
    return f"{_num(a.min())} to {_num(a.max())}"


def _num(v) -> str:
    v = float(v)
    if v == 0:
        return "0"
    text = f"{v:.4g}"
    return text.replace("e+0", "e+").replace("e-0", "e-")


def _chart(xs, ys, dys, label_f, label_df, var, title, width, height, color):
    plt = _plotext()
    plt.clear_figure()
    try:
        plt.plotsize(width, height)
        plt.theme("clear")
        drawn = []
        for vals, label, marker, col in ((ys, label_f, "•", "blue"), (dys, label_df, "+", "red")):
            ok = np.isfinite(vals)
            if ok.any():
                kw = {"marker": "braille", "color": col} if color else {"marker": marker}
                plt.plot(xs[ok].tolist(), vals[ok].tolist(), label=label, **kw)
                drawn.append(vals[ok])
        if drawn:
            both = np.concatenate(drawn)
            if both.min() < 0 < both.max():
                plt.horizontal_line(0, color="gray" if color else "default")
        plt.title(title)
        plt.xlabel(var)
        text = plt.build()
    finally:
        plt.clear_figure()
    if not color:
        text = plt.uncolorize(text)
    return "\n".join(line.rstrip() for line in text.rstrip("\n").split("\n"))


def _plotext():
    try:
        import plotext  # noqa: PLC0415
    except ImportError:
        raise RuntimeError_("plot() draws with the plotext library, which is not installed: "
                            "pip install plotext (it is a dependency of autodsl)") from None
    return plotext


def _on_terminal() -> bool:
    try:
        return bool(sys.stdout.isatty())
    except (AttributeError, ValueError):
        return False


def _terminal_size():
    cols, rows = shutil.get_terminal_size(FIXED_SIZE)
    return max(40, min(cols - 1, 160)), max(12, min(rows - 6, 32))


# -- picture ------------------------------------------------------------------------------------

def _check_file(file) -> str:
    if not isinstance(file, (str, os.PathLike)) or isinstance(file, bytes):
        raise TypeError_(f"plot(): file must be a string such as \"f.svg\", not {replay.value_kind(file)}")
    ext = Path(file).suffix.lower().lstrip(".")
    if ext not in PICTURE_FORMATS:
        raise ValueError_(f"plot(): cannot tell the picture format of {str(file)!r}; end the file name in "
                          + ", ".join("." + e for e in PICTURE_FORMATS))
    if not current().files_allowed:
        raise RuntimeError_("plot(): this session may not write files (Session(files=False)); "
                            "leave out file= to draw in the terminal only")
    try:
        import matplotlib  # noqa: F401, PLC0415
    except ImportError:
        raise RuntimeError_(f"plot(file=...) writes pictures with matplotlib, which is not installed: "
                            f"{_INSTALL_MPL} (or leave out file= to draw in the terminal only)") from None
    return ext


def _figure(xs, ys, dys, label_f, label_df, var, title):
    """The picture as a matplotlib Figure, made with its object API (no pyplot: no global
    backend is changed); ImportError without matplotlib."""
    from matplotlib.figure import Figure  # noqa: PLC0415
    fig = Figure(figsize=(7, 4.5), layout="tight")
    ax = fig.add_subplot()
    with np.errstate(invalid="ignore"):
        ax.plot(xs, np.where(np.isfinite(ys), ys, np.nan), label=label_f, color="tab:blue")
        ax.plot(xs, np.where(np.isfinite(dys), dys, np.nan), label=label_df, color="tab:red")
    ax.axhline(0, color="0.6", linewidth=0.8)
    ax.set_xlabel(var)
    ax.set_title(title)
    ax.grid(True, alpha=0.3)
    ax.legend()
    return fig


def _picture(xs, ys, dys, label_f, label_df, var, title, path: Path, ext: str) -> str:
    """Write the picture (``_figure``) to ``path`` in format ``ext``."""
    fig = _figure(xs, ys, dys, label_f, label_df, var, title)
    partial = path.with_name(f".{path.name}.partial")
    try:
        fig.savefig(partial, format=ext)
        os.replace(partial, path)          # all or nothing, even when interrupted
        record_file(path)                  # (an interrupted input's undo cannot take it back)
    except OSError as e:
        raise RuntimeError_(f"plot(): cannot write {path}: {e.strerror or e}") from None
    finally:
        if partial.exists():
            partial.unlink()
    return str(path)


# -- arguments ----------------------------------------------------------------------------------

def _bound(v, what) -> float:
    if isinstance(v, Tensor):
        if v.numel() != 1:
            raise TypeError_(f"plot(): {what} must be a number, not a tensor of shape {v.shape}")
        v = v.item()
    if isinstance(v, bool) or not isinstance(v, (int, float, np.integer, np.floating)):
        raise TypeError_(f"plot(): {what} must be a number, not {replay.value_kind(v)}")
    v = float(v)
    if not math.isfinite(v):
        raise ValueError_(f"plot(): {what} must be a finite number, not {_num(v)}")
    return v


def _int_option(v, what, lo, hi) -> int:
    if isinstance(v, Tensor) and v.numel() == 1:
        v = v.item()
    if isinstance(v, bool) or not isinstance(v, (int, np.integer)) and not (
            isinstance(v, float) and v.is_integer()):
        raise TypeError_(f"plot(): {what} must be a whole number, not {replay.value_kind(v)}")
    v = int(v)
    if not lo <= v <= hi:
        raise ValueError_(f"plot(): {what} must be between {lo} and {hi}, not {v}")
    return v
