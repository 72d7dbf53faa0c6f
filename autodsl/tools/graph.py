"""The graph behind a tensor, to look at: a text tree (``graph``) and Graphviz DOT (``dot``).

Both show every node the tensor depends on, named as the backward trace names
them (``MulBackward#1``, ``AccumulateGrad(w1)``: ``autograd.trace.node_labels``),
with the source ``line:col`` that made each op, its shape, its value (a number
for scalars, min/max otherwise) and ``.grad`` where backward left one.

Where values come from: a node does not own its output. ``ops.registry.apply``
leaves on each op node a 0-d output's array (``node._out_scalar``); a non-scalar
output is found among the live tensors (``core.rules.LiveOutputs``, Note [live
outputs]), and one that nothing holds any more is shown by its shape alone. Leaves are read from
``AccumulateGrad.variable``, the root from the tensor itself.

Every walk uses an explicit stack (DESIGN §1.5): a 100,000-node chain prints.
"""
from __future__ import annotations


import functools
import os
import shutil
import subprocess
from pathlib import Path

import numpy as np

import autodsl.backend as backend
from autodsl.core.html import RichDisplay
from autodsl.core.journal import record_file
from autodsl.core.node import AccumulateGrad, const_entries
from autodsl.core.rules import LiveOutputs
from autodsl.source import format_pos, pos_text, warn_user
from autodsl.core.trace import leaf_label, node_labels, walk
from autodsl.context import current
from autodsl.names import name_maps, user_names
from autodsl.errors import RuntimeError_, TypeError_, ValueError_
from autodsl.core.tensor import Tensor
from autodsl.textfmt import format_array, format_number
from autodsl.core.words import kind as value_kind, shown as value_shown

__all__ = ["graph", "dot", "Graph", "RENDER_FORMATS"]

RENDER_FORMATS = ("svg", "png", "pdf")   # what dot() renders through Graphviz
SVG_MAX_NODES = 400                      # larger graphs show as the text tree in a notebook
_INDENT_WINDOW = 24                      # tree levels drawn before the indentation restarts
_INSTALL_HINT = "install Graphviz (apt-get install graphviz, or brew install graphviz)"


# -- what is known about one node ------------------------------------------------------------

class _Facts:
    """What the tree line and the DOT node of one graph node show."""

    __slots__ = ("label", "name", "shape", "value", "grad", "marks", "pos", "leaf")

    def __init__(self, label, name=None, shape=None, value=None, grad=None, marks=(), pos=None,
                 leaf=False):
        self.label = label
        self.name = name
        self.shape = shape
        self.value = value
        self.grad = grad
        self.marks = marks
        self.pos = pos
        self.leaf = leaf

    def head(self) -> str:
        """``f = PowBackward#1 at 8:5``"""
        at = format_pos(self.pos)
        at = f" at {at}" if at else ""
        named = f"{self.name} = " if self.name and not self.leaf else ""
        return f"{named}{self.label}{at}"

    def details(self) -> list[str]:
        """``["scalar", "-4.5", "grad 182.25", "leaf", "requires_grad"]`` (what is known)."""
        parts = [] if self.shape is None else [_shape_text(self.shape)]
        if self.value is not None:
            parts.append(self.value)
        if self.grad is not None:
            parts.append(f"grad {self.grad}")
        parts.extend(self.marks)
        return parts

    def line(self) -> str:
        return "  ".join([self.head()] + self.details())


def _shape_text(shape) -> str:
    return "scalar" if tuple(shape) == () else str(tuple(shape))


def _value_text(arr) -> str:
    """A number for one element; a short 1-d list up to 4 elements; else min and max."""
    host = np.asarray(backend.to_host(arr))
    if host.ndim == 0:
        return format_number(host.item())
    if host.size == 0:
        return "empty"
    if host.ndim == 1 and host.size <= 4:
        return format_array(host)
    return f"min {_short(host.min())} max {_short(host.max())}"


def _short(v) -> str:
    """Six significant digits for a summary (``1.23457e+13``); whole numbers as ``2.0``."""
    if isinstance(v, (float, np.floating)) and np.isfinite(v) and v != int(v):
        return f"{float(v):.6g}"
    return format_number(v)


def _grad_text(t) -> str | None:
    g = t._grad
    return None if g is None else _value_text(g._data)


class _Describer:
    """Builds (and caches) the ``_Facts`` of each node reached from one root tensor."""

    def __init__(self, root: Tensor, labels: dict, names):
        self.root = root
        self.labels = labels
        self.by_id, self.by_node = name_maps(names)
        self.cache = {}
        self.live = LiveOutputs()

    def of_root_leaf(self) -> _Facts:
        x = self.root
        name = self.by_id.get(id(x))
        if x.requires_grad:
            return _Facts(leaf_label(x, self.by_id), name, x.shape, _value_text(x._data), _grad_text(x),
                          ("leaf", "requires_grad"), leaf=True)
        return _Facts(name or "tensor", None, x.shape, _value_text(x._data), None,
                      ("leaf", "requires_grad=false: nothing was recorded, so there is no graph"),
                      leaf=True)

    def of(self, node, shape_hint=None) -> _Facts:
        facts = self.cache.get(node)
        if facts is None:
            facts = self.cache[node] = self._build(node, shape_hint)
        return facts

    def _build(self, node, shape_hint) -> _Facts:
        label = self.labels[node]
        if isinstance(node, AccumulateGrad):
            t = node.variable
            return _Facts(label, self.by_id.get(id(t)), t.shape, _value_text(t._data), _grad_text(t),
                          ("leaf", "requires_grad"), leaf=True)
        out, data = None, None
        name = self.by_node.get(node)
        if node is self.root.grad_fn:
            out = self.root
        elif node._retained:
            out = node._retained[0]
        else:
            data = getattr(node, "_out_scalar", None)    # a scalar output's array, kept
            if data is None or name is None and self.by_id:
                out = self.live.named_output(node, self.by_id)[0]     # (Note [live outputs])
        if out is not None:
            data = out._data
        if name is None and out is not None:
            name = self.by_id.get(id(out))
        shape = tuple(data.shape) if data is not None else shape_hint
        grad, marks = None, ()
        retained = [t for t in (node._retained or ()) if t._grad is not None]
        if out is not None and out._retains_grad:
            marks = ("retains_grad",)
            grad = _grad_text(out)
        elif retained:
            marks = ("retains_grad",)
            grad = _grad_text(retained[0])
        value = None if data is None else _value_text(data)
        return _Facts(label, name, shape, value, grad, marks, node.pos)


def _roots_and_labels(x: Tensor, names):
    by_id, _ = name_maps(names)
    if x.grad_fn is None:
        return None, {}
    return x.grad_fn, node_labels([x.grad_fn], by_id)


def _check_tensor(x, fn: str) -> None:
    if not isinstance(x, Tensor):
        raise TypeError_(f"{fn}() takes a tensor, not {value_kind(x)}; "
                         f"for example {fn}(f) after f = (w*x + b)^2")


# -- the text tree ----------------------------------------------------------------------------

class Graph(RichDisplay):
    """The graph of a tensor as a text tree; ``str()`` (and ``repr()``) is the tree.

    Attributes: ``labels`` ({node: label}, the trace's labels, for every node of
    the graph), ``lines`` (the tree's lines), ``shown`` (how many nodes the tree
    prints; the rest are summarized in its last line).

    In a notebook it is a picture: ``_repr_svg_`` draws ``dot(x)`` with Graphviz's ``dot``
    program (None, so the tree is shown, when Graphviz is not installed, it fails, or the
    graph has more than ``SVG_MAX_NODES`` nodes).
    """

    def __init__(self, lines: list[str], labels: dict, shown: int, dot_text=None):
        self.lines = lines
        self.labels = labels
        self.shown = shown
        self._dot_text = dot_text       # () -> the DOT text of the same graph, or None
        self._svg = None

    def _repr_svg_(self) -> str | None:
        if self._svg is None and self._dot_text is not None and len(self.labels) <= SVG_MAX_NODES:
            self._svg = svg_of(self._dot_text()) or ""
        return self._svg or None

    def __len__(self) -> int:
        """The number of nodes in the graph (ops and leaves)."""
        return len(self.labels)

    def __str__(self) -> str:
        return "\n".join(self.lines)

    __repr__ = __str__


def graph(x, names=None, max_nodes: int = 200) -> Graph:
    """The graph of everything tensor ``x`` depends on, as a text tree.

    One line per node, the result at the top and each node's inputs below it:
    the op (``MulBackward#2``, numbered as in the backward trace) and the source
    ``line:col`` that made it, the shape, the value (a number for a scalar, min
    and max otherwise), ``grad`` after a backward (leaves, and non-leaves that
    called ``retain_grad()``) and the marks ``leaf`` / ``requires_grad``. A node
    with several consumers is printed once; later uses read
    ``-> see MulBackward#2 above``. ``constant`` is an input that needs no
    gradient. After ``max_nodes`` nodes the rest is summarized in one line.

    ``names``: {id(tensor): name} or {name: tensor}, to show variable names; without
    it, a Session's variables, or from Python the caller's (its local and global
    tensors). Unnamed leaves of one shape are numbered (``AccumulateGrad(leaf 2 #1)``),
    as in the trace. Raises TypeError_ when ``x`` is not a
    tensor, ValueError_ when ``max_nodes`` < 1.

    Example: ``graph(f)``; after ``w = tensor(2.0, requires_grad=true)`` and, on
    line 2, ``f = (w*3)^2``, it prints::

        f = PowBackward#1 at 2:5  scalar  36.0
        ├─ MulBackward#1 at 2:7  scalar  6.0
        │  ├─ AccumulateGrad(w)  scalar  2.0  leaf  requires_grad
        │  └─ constant  scalar  3.0  requires_grad=false
        └─ constant  scalar  2.0  requires_grad=false
    """
    _check_tensor(x, "graph")
    if isinstance(max_nodes, bool) or not isinstance(max_nodes, (int, np.integer)) or max_nodes < 1:
        raise ValueError_(f"graph(): max_nodes must be a whole number >= 1, got {value_shown(max_nodes)}")
    names = user_names(names)
    if names is None:       # a Session's variables, kept for the picture drawn later (outside its run)
        names = dict(current().names())
    root, labels = _roots_and_labels(x, names)
    desc = _Describer(x, labels, names)
    picture = functools.partial(dot_source, x, names)
    if root is None:
        return Graph([desc.of_root_leaf().line()], labels, 0, picture)
    lines = []
    shown = set()
    # (node or None for a constant input, shape hint, depth, this line's branch mark, the
    # parent's indentation as a linked list (parent link, piece): shared, so a deep chain
    # keeps O(depth) text in memory, not O(depth^2))
    stack = [(root, None, 0, "", None)]
    while stack:
        node, hint, depth, branch, cont = stack.pop()
        if node is None:
            shape, value = hint
            text = "  ".join(p for p in ("constant", None if shape is None else _shape_text(shape), value,
                                         "requires_grad=false") if p)
        elif node in shown:
            text = f"-> see {labels[node]} above"
        elif len(shown) >= max_nodes:
            break
        else:
            shown.add(node)
            text = desc.of(node, hint).line()
            edges = node.next_edges
            shapes = node.input_shapes
            child_cont = None
            for i in range(len(edges) - 1, -1, -1):
                last = i == len(edges) - 1
                if depth > 0:
                    child_cont = (cont, "   " if _is_last(branch) else "│  ")
                shape = shapes[i] if i < len(shapes) else None
                stack.append((edges[i], shape if edges[i] is not None else (shape, _const_value(node, i)),
                              depth + 1, "└─ " if last else "├─ ", child_cont))
        lines.append(_prefix(cont, branch, depth) + text)
    if len(shown) < len(labels):
        more = len(labels) - len(shown)
        lines.append(f"... {more} more node{'s' if more != 1 else ''} "
                     f"(graph(x, max_nodes={len(labels)}) shows all)")
    return Graph(lines, labels, len(shown), picture)


def _const_value(node, i):
    """The value of a scalar constant input of ``node`` (``x * 0.5`` -> "0.5"), or None."""
    consts = const_entries(node)
    arr = consts[i] if i < len(consts) else None
    return None if arr is None or arr.ndim != 0 else format_array(backend.to_host(arr))


def _is_last(branch: str) -> bool:
    return branch.startswith("└")


def _prefix(cont, branch: str, depth: int) -> str:
    """The indentation of a line at ``depth``. Very deep lines restart their indentation every
    _INDENT_WINDOW levels, marked ``[+24]``, so only the last few pieces are ever built."""
    skip = 0 if depth <= _INDENT_WINDOW else (depth - 1) // _INDENT_WINDOW * _INDENT_WINDOW
    pieces = []
    link = cont
    for _ in range(depth - 1 - skip):
        if link is None:
            break
        link, piece = link
        pieces.append(piece)
    text = "".join(reversed(pieces)) + branch
    return f"[+{skip}] " + text if skip else text


# -- Graphviz DOT -----------------------------------------------------------------------------

def _q(text: str) -> str:
    """A DOT double-quoted string; newlines become DOT line breaks."""
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


_STYLE_OP = 'shape=box, style="rounded,filled", fillcolor="#f2f2f2"'
_STYLE_ROOT = 'shape=box, style="rounded,filled,bold", fillcolor="#c9ecc9"'
_STYLE_LEAF = 'shape=ellipse, style=filled, fillcolor="#cfe3f7"'
_STYLE_CONST = 'shape=ellipse, style=dashed, color="#999999", fontcolor="#777777", fontsize=9'


def dot_source(x: Tensor, names=None) -> str:
    """The DOT text of ``dot(x)`` (see there)."""
    _check_tensor(x, "dot")
    names = user_names(names)
    root, labels = _roots_and_labels(x, names)
    desc = _Describer(x, labels, names)
    title = desc.by_id.get(id(x)) or "the tensor"
    out = [f"// The graph of {title}, made by autodsl.dot(). Arrows point the way values flow",
           "// (inputs -> op -> result); backward sends gradients against the arrows.",
           "digraph autodsl {",
           '  graph [rankdir=TB, fontname="Helvetica,Arial,sans-serif"];',
           '  node [fontname="Helvetica,Arial,sans-serif", fontsize=11];',
           '  edge [color="#555555", arrowsize=0.7];']
    if root is None:
        f = desc.of_root_leaf()
        out.append(f"  n0 [label={_q(_dot_label(f))}, tooltip={_q(f.label)}, {_STYLE_LEAF}];")
        out.append("}")
        return "\n".join(out) + "\n"
    ids = {node: f"n{i}" for i, node in enumerate(labels)}    # labels are in walk order
    hints = {}
    edges = []
    consts = []
    n_const = 0
    for node in walk([root]):
        for i, nxt in enumerate(node.next_edges):
            shape = node.input_shapes[i] if i < len(node.input_shapes) else None
            if nxt is None:
                cid = f"k{n_const}"
                n_const += 1
                value = _const_value(node, i)
                text = "constant" if shape is None else f"constant\n{_shape_text(shape)}"
                text += f"  {value}" if value else ""
                consts.append(f"  {cid} [label={_q(text)}, {_STYLE_CONST}];")
                edges.append(f"  {cid} -> {ids[node]};")
            else:
                hints.setdefault(nxt, shape)
                edges.append(f"  {ids[nxt]} -> {ids[node]};")
    for node, nid in ids.items():
        f = desc.of(node, hints.get(node))
        style = _STYLE_LEAF if f.leaf else (_STYLE_ROOT if node is root else _STYLE_OP)
        out.append(f"  {nid} [label={_q(_dot_label(f))}, tooltip={_q(f.label)}, {style}];")
    out.extend(consts)
    out.extend(edges)
    out.append("}")
    return "\n".join(out) + "\n"


def _dot_label(f: _Facts) -> str:
    """Leaves: name, shape and value, grad. Ops: [name =] label, at line:col, shape and value, grad."""
    if f.leaf:
        lines = [f.name or _unnamed_leaf(f.label)]
    else:
        lines = [f"{f.name} = {f.label}" if f.name else f.label]
        at = format_pos(f.pos, text=False)
        if at:
            lines.append(f"at {at}")
            text = pos_text(f.pos)
            if text:
                lines.append(text if len(text) <= 40 else text[:37] + "...")
    lines.append("  ".join(p for p in (None if f.shape is None else _shape_text(f.shape), f.value) if p))
    if f.grad is not None:
        lines.append(f"grad {f.grad}")
    if f.leaf and "requires_grad" not in f.marks:
        lines.append("requires_grad=false")
    return "\n".join(ln for ln in lines if ln)


def _unnamed_leaf(label: str) -> str:
    """``leaf``, or ``leaf #2`` for ``AccumulateGrad(leaf 2x3 #2)`` (one of several alike)."""
    head, sep, k = label.rpartition(" #")
    return f"leaf #{k.rstrip(')')}" if sep and head.startswith("AccumulateGrad(leaf ") else "leaf"


def dot(x, file=None, names=None) -> str:
    """The graph of tensor ``x`` in Graphviz DOT; with ``file``, written (and drawn) there.

    The same nodes and labels as ``graph(x)``: ops are boxes (the result in
    green, with its source ``line:col``, shape and value), leaves are blue
    ellipses (name, shape, value, and ``grad`` after a backward), inputs that
    need no gradient are dashed ``constant`` ellipses. Arrows point the way
    values flow (inputs -> op -> result); backward runs against them.

    ``file`` (a string): ``"g.dot"`` (or ``.gv``) writes the DOT text;
    ``"g.svg"``, ``"g.png"`` or ``"g.pdf"`` writes ``g.dot`` next to it and
    draws it with Graphviz's ``dot`` program. When that program is not
    installed, ``g.dot`` is still written and a warning says how to install it.
    Returns the DOT text without ``file``; with ``file``, the path of the file
    made (the picture, or the ``.dot`` file when nothing could be drawn).
    ``names``: as for ``graph``.

    Raises TypeError_ (``x`` not a tensor, ``file`` not a string), ValueError_
    (an unknown file extension), RuntimeError_ (the file cannot be written, or
    Graphviz fails).

    Example: ``dot(f, "f.svg")``
    """
    text = dot_source(x, names)
    if file is None:
        return text
    if not isinstance(file, (str, os.PathLike)) or isinstance(file, bytes):
        raise TypeError_(f"dot(): the file must be a string such as \"graph.svg\", not {value_kind(file)}")
    if not current().files_allowed:
        raise RuntimeError_("dot(): this session may not write files (Session(files=False)); "
                            "call dot(x) without a file to get the DOT text")
    cap = current().capture
    if cap is not None:     # inside compile(fn): a replay would not write the file again
        cap.fail("it calls dot() with a file, which is written on every call")
    path = Path(file)
    ext = path.suffix.lower().lstrip(".")
    if ext in ("dot", "gv"):
        _write(path, text)
        return str(path)
    if ext not in RENDER_FORMATS:
        raise ValueError_(f"dot(): cannot tell the format of {str(file)!r}; end the file name in .dot, .gv, "
                          + ", ".join("." + f for f in RENDER_FORMATS))
    dot_path = path.with_suffix(".dot")
    _write(dot_path, text)
    exe = shutil.which("dot")
    if exe is None:
        warn_user(f"Graphviz's dot program was not found, so {path} was not drawn; the graph is in "
                  f"{dot_path}. To draw it, {_INSTALL_HINT}")
        return str(dot_path)
    # Draw into a temporary file next to the target and rename it at the end, so an
    # interrupted or failed run never leaves a half-written picture.
    partial = path.with_name(f".{path.name}.partial")
    try:
        # The DOT text goes in on stdin and the picture out through an absolute path: a file name
        # on Graphviz's command line that began with `-` (`-Tx.svg`) would be read as an option.
        # (Graphviz reads and writes UTF-8, whatever the locale's encoding is)
        proc = subprocess.run([exe, f"-T{ext}", "-o", os.path.abspath(partial)], input=text,
                              capture_output=True, encoding="utf-8", errors="replace", timeout=300,
                              check=False)
        if proc.returncode == 0:
            os.replace(partial, path)
            record_file(path)                # (an interrupted input's undo cannot take it back)
    except (OSError, subprocess.TimeoutExpired) as e:
        raise RuntimeError_(f"dot(): running Graphviz on {dot_path} failed ({e}); the DOT text is in {dot_path}") from None
    finally:
        if partial.exists():
            partial.unlink()
    if proc.returncode != 0:
        why = (proc.stderr or "").strip().splitlines()
        raise RuntimeError_(f"dot(): Graphviz could not draw {path}" + (f": {why[0]}" if why else "")
                            + f"; the DOT text is in {dot_path}")
    return str(path)


def svg_of(dot_text: str) -> str | None:
    """The SVG picture (from ``<svg`` on) Graphviz's ``dot`` draws of ``dot_text``, or None when
    the program is not installed or fails (a notebook then shows the text tree)."""
    exe = shutil.which("dot")
    if exe is None:
        return None
    try:
        proc = subprocess.run([exe, "-Tsvg"], input=dot_text, capture_output=True, encoding="utf-8",
                              errors="replace", timeout=60, check=False)      # (UTF-8, as Graphviz)
    except (OSError, subprocess.TimeoutExpired):
        return None
    start = proc.stdout.find("<svg") if proc.returncode == 0 else -1
    return proc.stdout[start:] if start >= 0 else None


def _write(path: Path, text: str) -> None:
    partial = path.with_name(f".{path.name}.partial")
    try:
        partial.write_text(text, encoding="utf-8")
        os.replace(partial, path)            # all or nothing, even when interrupted
        record_file(path)
    except OSError as e:
        raise RuntimeError_(f"dot(): cannot write {path}: {e.strerror or e}") from None
    finally:
        if partial.exists():
            partial.unlink()
