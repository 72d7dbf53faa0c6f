"""The local rule of a node, as text a student reads: ``grad_a = grad * b * a^(b-1) = 1 * 3 * (-4.5)^2``.

Each op declares its rule next to its backward (``rule`` on the op class:
one formula per input, or one sentence for all inputs), written with
``grad`` (the gradient flowing into the node), ``out`` (the node's output)
and the input names ``a``, ``b``, ``c`` (``rule_inputs`` renames them, e.g.
``where``'s ``cond``). The formula is documentation, never evaluated: the
numbers the node sent come from its backward. Where every name in a formula
is a scalar, the formula is repeated with the numbers put in.
"""
from __future__ import annotations

import gc
import re

import autodsl.backend as backend
from autodsl.textfmt import format_number
from autodsl.core.node import AccumulateGrad, const_entries
import autodsl.names as _names
from autodsl.source import pos_text

__all__ = ["rule_text", "input_names", "input_value", "output_value", "scalar_values", "with_numbers",
           "operand_names", "with_operands", "enclosed", "LiveOutputs"]

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
# functions a formula may call: they are left as they are when numbers go in
_FUNCTIONS = frozenset({"cos", "sin", "log", "exp", "sign", "sqrt", "sum", "mean", "where"})


def rule_text(node, i: int) -> str | None:
    """The formula (or sentence) for the gradient ``node`` sends to its input ``i``, or None."""
    rule = getattr(node, "rule", None)
    if rule is None:
        return None
    if isinstance(rule, str):
        return rule
    return rule[i] if i < len(rule) else None


_ndarray = backend.HOST_ARRAY     # (a host array's number is its item(): no backend call per value)


def input_names(node) -> tuple:
    return getattr(node, "rule_inputs", ("a", "b", "c"))


class LiveOutputs:
    """The tensors still alive that op nodes made, looked up once per display.

    Note [live outputs]: a node does not reference its output (that would be a cycle, and a
    weak reference costs 80 bytes per node: most of a recorded graph is nodes), and keeps only
    a 0-d output's array (``_out_scalar``). A display that wants a non-scalar intermediate's
    value or variable name asks the collector, on first use, which tensors are alive and maps
    each node to the tensors whose ``grad_fn`` it is. One walk serves a whole display, and none
    is made when nothing asks. A tensor made after the walk, or frozen out of the collector's
    view (``gc.freeze``), is not seen: it shows by its shape, as an output nothing holds.
    """

    __slots__ = ("_by_node",)

    def __init__(self):
        self._by_node = None

    def tensors(self, node) -> tuple:
        """The live tensors whose ``grad_fn`` is ``node`` (usually one; none when nothing holds it)."""
        by_node = self._by_node
        if by_node is None:
            by_node = self._by_node = {}
            kinds = {}          # type -> is a tensor type (by the type alone: an object's own
            for o in gc.get_objects():      # __class__ may be a property that does anything)
                t = type(o)
                k = kinds.get(t)
                if k is None:
                    k = kinds[t] = issubclass(t, _names.TENSOR_TYPES)
                if k:
                    fn = o.grad_fn
                    if fn is not None:
                        got = by_node.get(fn)
                        by_node[fn] = (o,) if got is None else got + (o,)
        return by_node.get(node, ())

    def output(self, node):
        """One live tensor ``node`` made, or None."""
        ts = self.tensors(node)
        return ts[0] if ts else None

    def named_output(self, node, names) -> tuple:
        """``(tensor, name)``: a live tensor ``node`` made that ``names`` ({id(tensor): name})
        names, else ``(any live one or None, None)``."""
        ts = self.tensors(node)
        for t in ts:
            name = names.get(id(t))
            if name is not None:
                return t, name
        return (ts[0] if ts else None), None


def input_value(node, i: int, live: LiveOutputs | None = None):
    """The (backend) array ``node``'s input ``i`` had, where the graph still knows it: a leaf's
    data, a scalar constant, or the output of the node that made it (``output_value``); else None."""
    edges = node.next_edges
    nxt = edges[i] if i < len(edges) else None
    if nxt is None:
        consts = const_entries(node)
        return consts[i] if i < len(consts) else None
    if isinstance(nxt, AccumulateGrad):
        return nxt.variable._data
    return output_value(nxt, live)


def output_value(node, live: LiveOutputs | None = None):
    """The (backend) array ``node`` produced: a leaf's data, a 0-d output's kept array, or the
    data of a live output found through ``live`` (Note [live outputs]); else None."""
    if isinstance(node, AccumulateGrad):
        return node.variable._data
    arr = getattr(node, "_out_scalar", None)
    if arr is not None or live is None:
        return arr
    out = live.output(node)
    return out._data if out is not None else None


def scalar_values(node) -> dict | None:
    """``{"a": 2.0, "b": 3.0, "out": 8.0}`` for the scalar inputs and output of ``node``
    (host floats, copied now: later in-place writes do not change them); None if the
    node has no formula that could use them."""
    rule = getattr(node, "rule", None)
    if rule is None or isinstance(rule, str):
        return None
    values = {}
    for i, name in enumerate(input_names(node)[:len(node.next_edges)]):
        arr = input_value(node, i)        # (0-d outputs are kept: no live lookup needed)
        if arr is not None and arr.ndim == 0:
            values[name] = arr.item() if type(arr) is _ndarray else _kept_scalar(arr)
    arr = output_value(node)
    if arr is not None and arr.ndim == 0:
        values["out"] = arr.item() if type(arr) is _ndarray else _kept_scalar(arr)
    return values


def operand_names(node, names=None, labels=None, live: LiveOutputs | None = None) -> list:
    """How a person would call each input of ``node``: the variable name (``names``:
    ``{id(tensor): name}``; an op's output is found through ``live``, Note [live outputs]), a
    scalar constant's value, the source text of the expression that made it (in brackets when
    it has operators), or else its node's label in angle brackets (``labels``: {node: label});
    None when nothing is known."""
    names = names if names is not None else {}
    consts = const_entries(node)
    out = []
    for i, nxt in enumerate(node.next_edges):
        label = None
        if nxt is None:
            c = consts[i] if i < len(consts) else None
            label = None if c is None or c.ndim != 0 else _number(_host_scalar(c))
        elif isinstance(nxt, AccumulateGrad):
            label = names.get(id(nxt.variable))
        else:
            if live is not None and len(names):
                label = live.named_output(nxt, names)[1]
            if label is None and nxt.pos and nxt.pos[2] is not None:    # language text only
                text = pos_text(nxt.pos)
                if text and len(text) <= 30:
                    label = text if _atomic(text) else f"({text})"
        if label is None:
            if nxt is None:
                label = "<constant>"
            elif labels is not None and nxt in labels:
                label = f"<{labels[nxt]}>"
        out.append(label)
    return out


def _atomic(text: str) -> bool:
    """True when ``text`` needs no brackets as an operand: a name, a number, a call, an
    index or attribute (``sin(t)``, ``x[0]``, ``x.sum(dim=0)``) or one bracketed whole."""
    depth = 0
    for ch in text:
        if ch in "([":
            depth += 1
        elif ch in ")]":
            depth -= 1
        elif depth == 0 and not (ch.isalnum() or ch in "_."):
            return False
    return bool(text) and depth == 0


def with_operands(formula: str, node, labels: list) -> str:
    """``formula`` with the input names replaced by ``labels`` (from ``operand_names``) where known."""
    table = {n: lab for n, lab in zip(input_names(node), labels) if lab is not None}
    if not table:
        return formula

    def put(m):
        lab = table.get(m.group(0))
        if lab is None:
            return m.group(0)
        if formula[m.start() - 1:m.start()] == "(" and formula[m.end():m.end() + 1] == ")" \
                and enclosed(lab):
            return lab[1:-1]        # `sin(a)` with a = `(t + 1)`: sin(t + 1), not sin((t + 1))
        return lab
    return _NAME.sub(put, formula)


def enclosed(text: str) -> bool:
    """True when ``text`` is one bracketed whole, ``(a+b)``; not ``(a).sum()`` or ``(a)*(b)``."""
    if not text.startswith("("):
        return False
    depth = 0
    for i, ch in enumerate(text):
        depth += (ch == "(") - (ch == ")")
        if depth == 0:
            return i == len(text) - 1
    return False


def _host_scalar(arr):
    v = backend.to_host(arr)
    return v.item() if hasattr(v, "item") else v


class _Later:
    """A 0-d device array's value kept for a trace, read to the host only when the trace is shown."""

    __slots__ = ("arr",)

    def __init__(self, arr):
        self.arr = arr


def _kept_scalar(arr):
    """The number of a 0-d array as it is now: a host number where reading it is free, else a
    copy on the device (no host sync in every backward of a Session on "cuda"), read when shown."""
    if backend.on_host(arr):
        return _host_scalar(arr)
    return _Later(backend.copy(arr))


def with_numbers(formula: str, values: dict, grad) -> str | None:
    """``formula`` with every name replaced by its number, or None when a name has no scalar value."""
    if values is None or grad is None or getattr(grad, "ndim", 0) != 0 or formula.strip() == "grad":
        return None
    values = {k: _host_scalar(v.arr) if type(v) is _Later else v for k, v in values.items()}
    values["grad"] = _host_scalar(grad)
    missing = False

    def put(m):
        nonlocal missing
        name = m.group(0)
        if name in _FUNCTIONS:
            return name
        if name not in values:
            missing = True
            return name
        return _number(values[name])

    text = _NAME.sub(put, formula)
    return None if missing or text == formula else text


def _number(v) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    s = format_number(v)
    return f"({s})" if s.startswith("-") else s
