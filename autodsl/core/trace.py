"""The step-by-step backward trace: plain records from the engine, text for people.

The engine asks ``new_recorder()`` for a recorder at the start of each
backward; it gets None (and records nothing) unless tracing is on or a sink
(a Session) wants the trace. Records hold node names, dependency counts and
gradient tensors; the text is built only when the trace is printed.

Leaves are shown by the variables that hold them: a Session sets ``Trace.names``
from its namespace; from the Python API, ``Recorder.finish`` keeps copies of the
caller's globals and locals (the frame that called ``backward()`` or ``grad()``),
read only when the trace is shown (``LazyNames``). An untraced backward makes no
Recorder, so it never walks frames.
"""
from __future__ import annotations

import contextlib

import numpy as np

import autodsl.backend as backend
from autodsl.context import DEFAULT, current, scoped
import autodsl.names as _names
from autodsl.names import frame_namespaces, named_tensors
from autodsl.errors import AutogradError
from autodsl.textfmt import format_array
from autodsl.source import format_pos, pos_text
from autodsl.core import html
from autodsl.core.step_log import StepLog, real_edges
from autodsl.core.rules import LiveOutputs, operand_names, rule_text, scalar_values, with_numbers, with_operands
from autodsl.errors import TypeError_
from autodsl.core.node import AccumulateGrad, dependency_counts

__all__ = ["Trace", "Step", "trace", "tracing", "is_trace_enabled", "set_trace_enabled",
           "last_trace", "new_recorder", "walk", "node_labels", "leaf_label", "leaf_labels", "LazyNames"]

def is_trace_enabled() -> bool:
    """True when every backward prints its trace."""
    return current().trace_enabled


def set_trace_enabled(flag: bool) -> None:
    current().trace_enabled = bool(flag)


def trace(enabled: bool = True) -> None:
    """Turn the backward trace on or off: when on, each backward prints, step by step,
    every node run, its dependency count, the gradient in, what it sends to each next
    node, and each leaf's accumulated ``.grad``.

    Example (language)::

        trace(true); y.backward(); trace(false)

    Raises TypeError_ for a string (``trace("off")``: use false).
    """
    if isinstance(enabled, str):      # trace("off") would turn it on
        raise TypeError_(f"trace() takes true or false, not the string {enabled!r}")
    set_trace_enabled(enabled)


def last_trace():
    """The Trace of the most recent traced backward in this run context (the Python API's,
    or a Session's while its code runs), or None."""
    return current().last_trace


@contextlib.contextmanager
def tracing(enabled: bool, sink=None, printer=None):
    """Scope the trace flag, a sink ``sink(trace)`` called after every backward, and
    ``printer(text)`` that prints the trace when it is on (default: print to stdout)."""
    with scoped(trace_enabled=bool(enabled), trace_sink=sink, trace_printer=printer):
        yield


def new_recorder():
    ctx = current()
    if ctx.trace_enabled or ctx.trace_sink is not None:
        return Recorder()
    return None


class Step:
    """One node run: ``kind`` is "node" or "leaf".

    Gradients are kept as the engine's arrays (its buffers are never written
    in place; Note [trace records]) and copied to host arrays only when read, so
    recording costs little when nobody prints the trace.
    """

    __slots__ = ("kind", "node", "deps", "_g", "_sends", "leaf", "_after", "_cache", "_hooked",
                 "values")

    def __init__(self, kind, node, deps, g, outs=(), leaf=None):
        self.kind = kind
        self.node = node
        self.deps = deps
        self._g = g
        self._sends = outs          # what the node sent along each of its real_edges (see _pairs)
        self.leaf = leaf
        self._after = None      # the leaf's .grad when the pass ended: a host copy, or (tensor, version)
        self._cache = None
        self._hooked = None     # the gradient before a register_hook hook replaced it
        self.values = None      # scalar inputs/output of the node, for its rule's numbers

    @property
    def grad_before_hook(self):
        """The summed gradient before a tensor hook replaced it (a host array), or None
        when no hook changed it."""
        return None if self._hooked is None else _snap(self._hooked)

    @property
    def grad_after(self):
        """The leaf's ``.grad`` as the pass left it (a host array), or None when it was none.

        Raises AutogradError when a large ``.grad`` was changed in place since (only
        small ones are copied when the pass ends; large ones are read when asked for).
        """
        after = self._after
        if after is None or not isinstance(after, tuple):
            return after
        t, version = after
        if t._version[0] != version:
            raise AutogradError("this .grad was changed in place after the traced backward, and the "
                                "trace keeps only small gradients; print the trace before changing it")
        self._after = _snap(t._data)
        return self._after

    @property
    def grad_in(self):
        """The summed gradient that came into the node (a host array)."""
        return _snap(self._g)

    @property
    def _pairs(self):
        """``((next node, gradient array or None), ...)`` for the edges that lead somewhere."""
        return tuple(zip(real_edges(self.node), self._sends))

    @property
    def sends(self):
        """``((next node, host array or None), ...)``: what the node sent along each edge."""
        if self._cache is None:
            self._cache = tuple((nxt, None if og is None else _snap(og)) for nxt, og in self._pairs)
        return self._cache


class Recorder(StepLog):
    """The trace's observer of a pass (core/observer.py): one Step per node run or leaf.

    The pass fills a StepLog (core/step_log.py, Note [trace records]); the Step objects are
    made when the steps are first read (``steps``), so that a Session's backward, which
    always keeps its trace for ``last_trace()``, costs little more than an untraced one when
    nobody reads it."""

    __slots__ = ("_steps", "_afters", "_values")
    takes_floats = True     # (core/observer.py: it keeps a float as it came, an array when read)

    def start(self, roots, create_graph):
        StepLog.start(self, roots, create_graph)
        self._steps = []        # the Steps made of the first len(_steps) entries
        self._afters = None     # {index: a leaf's .grad as the pass left it}
        self._values = None     # {index: a node's scalar values (rules.scalar_values)}

    @property
    def steps(self) -> list:
        """The Steps so far, in the order the nodes ran."""
        made, nodes = self._steps, self._nodes
        if len(made) < len(nodes):
            deps = self.deps
            if deps is None:        # (a copy of the engine's counts per pass cost a Session's
                # every backward a dict of all its nodes, most of which nobody reads)
                deps = self.deps = dependency_counts(self.roots)
            afters, hooks, leaves, grads = self._afters, self.hooks, self._leaves, self._grads
            values = self._values
            for i in range(len(made), len(nodes)):
                node = nodes[i]
                leaf = leaves.get(i)
                if leaf is None:
                    st = Step("node", node, deps.get(node, 0), _array(grads[i]),
                              tuple([_array(s) for s in self.sent(i)]))
                    if values is not None:
                        st.values = values.get(i)
                else:
                    st = Step("leaf", node, deps.get(node, 0), _array(grads[i]), leaf=leaf)
                    if afters is not None:
                        st._after = afters.get(i)
                if hooks:
                    st._hooked = _array(hooks.get(node))
                made.append(st)
        return made

    def finish(self, staged):
        # Copy now what later in-place writes could change: the accumulated .grad, and the
        # scalar values the rules' numbers use (a trace too long to read skips those). The
        # Steps are made when they are read (a Session keeps the trace of every backward).
        nodes, leaves = self._nodes, self._leaves
        afters = self._afters = {i: _grad_after(leaf) for i, leaf in leaves.items()}
        values = None
        if len(nodes) <= _MAX_RULE_STEPS:
            values = self._values = {i: scalar_values(nodes[i]) for i in range(len(nodes)) if i not in leaves}
        for i, st in enumerate(self._steps):      # (any a stepper has read already)
            if st.kind == "leaf":
                st._after = afters.get(i)
            elif values is not None:
                st.values = values.get(i)
        tr = Trace(lambda: self.steps, self.create_graph, count=len(self._nodes))
        ctx = current()
        if ctx.names is None:       # the Python API (a Session names leaves in its sink)
            tr.names = LazyNames(*frame_namespaces(_names.caller_frame()))
        ctx.last_trace = DEFAULT.last_trace = tr      # last_trace() from Python: any run's
        sink = ctx.trace_sink
        if sink is not None:
            sink(tr)
        if ctx.trace_enabled:
            printer = ctx.trace_printer
            if printer is None:
                print(tr.format(), flush=True)
            else:
                printer(tr.format())


def _after_text(st) -> str:
    try:
        after = st.grad_after
    except AutogradError:
        return "(changed in place since this backward; large gradients are not copied)"
    return "none" if after is None else format_array(after)


_MAX_RULE_STEPS = 10_000
_MAX_HTML_ROWS = 2_000      # steps the HTML table shows (the text shows all)
_COPY_GRAD_UP_TO = 4096      # elements of a leaf's .grad the trace copies when a pass ends


def _array(g):
    """A recorded gradient as an array: a float (a float gradient, Note [float gradients] in
    core/grad_sums.py, or a 0-d float64 one's value: core/step_log.py's ``_record``) as the 0-d
    float64 host array it stands for."""
    return backend.f64_scalar_array(g) if type(g) is float else g


def _snap(arr):
    """A host copy of a gradient array (a device one is read now)."""
    return np.array(backend.to_host(arr), copy=True)


def _grad_after(leaf):
    """A leaf's ``.grad`` as a pass leaves it, for ``Step.grad_after``: a host copy of a small
    one (off the host a device copy, read when shown: no host sync per backward), else the
    tensor and its version (a network's weights: copying every .grad of every backward costs)."""
    gr = leaf._grad
    if gr is None:
        return None
    if gr._data.size <= _COPY_GRAD_UP_TO:
        return _snap(gr._data) if backend.on_host(gr._data) else (_Copy(backend.copy(gr._data)), 0)
    return (gr, gr._version[0])


class _Copy:
    """A device copy of a small .grad as a backward left it, for ``Step.grad_after`` (never written)."""

    __slots__ = ("_data", "_version")

    def __init__(self, data):
        self._data = data
        self._version = [0]


class Trace(html.RichDisplay):
    """The record of one backward pass; ``str()`` gives the text a student reads.

    ``steps``: the nodes in the order they ran. ``names``: optional
    ``{id(tensor): "w1"}`` so that leaves are shown by their variable names (a
    Session's variables; from Python, the variables of the code that called
    ``backward()``: a ``LazyNames``). Unnamed leaves of one shape are numbered.
    """

    def __init__(self, steps, create_graph=False, count=None):
        self._steps = steps     # a list, or a function that makes it (when first read)
        self._count = count     # len(steps) when steps is a function
        self.create_graph = create_graph
        self.names = {}
        self.captured_by = None     # a compiled function's name: the trace of its captured call

    @property
    def steps(self) -> list:
        """The Steps, in the order the nodes ran."""
        steps = self._steps
        if callable(steps):
            steps = self._steps = steps()
        return steps

    def __len__(self) -> int:
        return self._count if callable(self._steps) else len(self._steps)

    def node_names(self) -> list:
        """The name of each node run, in order (``AccumulateGrad`` for leaves)."""
        return [s.node.name for s in self.steps]

    def _labels(self):
        # The roots (deps 0) first, so that the numbering is the one graph(root) shows;
        # every node run is listed too, in case a root had incoming edges. The op labels
        # do not depend on names: walk the graph once; leaves are named afresh each time.
        base = self.__dict__.get("_base_labels")
        if base is None:
            roots = [st.node for st in self.steps if st.deps == 0] + [st.node for st in self.steps]
            base = self._base_labels = node_labels(roots)
            self._leaf_nodes = [n for n in base if isinstance(n, AccumulateGrad)]
        labels = dict(base)
        labels.update(leaf_labels(self._leaf_nodes, self.names))
        return labels

    def _heading(self) -> str:
        return (f"backward trace: {len(self.steps)} steps; each node runs once, when all "
                "gradients into it (deps) have arrived and been summed"
                + ("\n(create_graph: the gradients are themselves differentiable)" if self.create_graph else "")
                + (f"\n(the captured call of the compiled {self.captured_by}: its replays run the same "
                   "steps on new values and record no trace)" if self.captured_by else ""))

    def format(self) -> str:
        labels = self._labels()
        lines = [self._heading()]
        width = len(str(len(self.steps)))
        live = LiveOutputs()
        for i, st in enumerate(self.steps, 1):
            lines.extend(self.format_step(st, i, labels, width, live=live))
        return "\n".join(lines)

    def format_step(self, st, i: int, labels: dict, width: int = 1, committed: bool = True,
                    live: LiveOutputs | None = None) -> list[str]:
        """The lines of step number ``i`` (``labels``: {node: label}). ``committed=False``
        (a pass still running) says what a leaf will get instead of its final ``.grad``.
        ``live``: the display's live outputs (Note [live outputs]), shared by its steps."""
        live = live if live is not None else LiveOutputs()
        pad = " " * (width + 7)
        at = format_pos(st.node.pos)
        at = f" at {at}" if at else ""
        root = " (root)" if st.deps == 0 else ""
        lines = [f"step {i:>{width}}  {labels[st.node]}{at}  deps {st.deps}{root}",
                 f"{pad}grad in  {_indent(format_array(st.grad_in), len(pad) + 9)}"]
        if st._hooked is not None:
            lines.append(f"{pad}(a hook replaced it; before the hook it was "
                         f"{_indent(format_array(st.grad_before_hook), len(pad) + 43)})")
        if st.kind == "leaf":
            nm = self.names.get(id(st.leaf)) or "leaf"
            if committed:
                after = _after_text(st)
                lines.append(f"{pad}{nm}.grad = {_indent(after, len(pad) + len(nm) + 8)}")
            else:
                lines.append(f"{pad}{nm}.grad += grad in  (written when the whole pass has succeeded)")
        else:
            sentence = getattr(st.node, "rule", None)
            if isinstance(sentence, str):
                # the input's name in place of `a` ("grad expanded to w's shape")
                lines.append(f"{pad}rule: "
                             f"{with_operands(sentence, st.node, operand_names(st.node, self.names, labels, live))}")
            for (nxt, og), (k, formula) in zip(st.sends, _sent_rules(st)):
                val = "nothing" if og is None else format_array(og)
                lines.append(f"{pad}-> {labels[nxt]}  {_indent(val, len(pad) + len(labels[nxt]) + 5)}")
                if formula is not None and og is not None:
                    lines.append(f"{pad}   {_rule_line(st, k, formula, self.names, labels, live)}")
        return lines

    # -- the trace in a notebook ---------------------------------------------------------
    def _display_text(self) -> str:
        return self.format()

    def _repr_html_(self) -> str:
        """The trace as an HTML table, one row per step: step, node, position, deps, the gradient
        in, what went to each next node (a leaf: its ``.grad``) and the rule with the numbers."""
        labels = self._labels()
        rows, styles = [], []
        live = LiveOutputs()
        for i, st in enumerate(self.steps[:_MAX_HTML_ROWS], 1):
            rows.append(self._html_cells(st, i, labels, live))
            styles.append("background:#eef6ee" if st.deps == 0 else None)
        more = len(self.steps) - len(rows)
        footer = [f"... {more} more steps (print(trace) shows them all)"] if more > 0 else []
        return html.table(["step", "node", "at", "deps", "grad in", "sent to", "rule"], rows,
                          caption=self._heading(), footer=footer, css_class="autodsl-trace",
                          row_styles=styles)

    def _html_cells(self, st, i: int, labels: dict, live: LiveOutputs) -> list:
        """The cells of step ``i``'s row (text: the table escapes it)."""
        at = format_pos(st.node.pos)
        grad_in = format_array(st.grad_in)
        if st._hooked is not None:
            grad_in += f"\n(a hook replaced it; before: {format_array(st.grad_before_hook)})"
        deps = f"{st.deps} (root)" if st.deps == 0 else str(st.deps)
        if st.kind == "leaf":
            nm = self.names.get(id(st.leaf)) or "leaf"
            after = _after_text(st)
            return [str(i), labels[st.node], at, deps, grad_in,
                    f"{nm}.grad = {_indent(after, len(nm) + 8)}", f"{nm}.grad += grad in"]
        sent, rules = [], []
        sentence = getattr(st.node, "rule", None)
        if isinstance(sentence, str):
            rules.append(with_operands(sentence, st.node, operand_names(st.node, self.names, labels, live)))
        for (nxt, og), (k, formula) in zip(st.sends, _sent_rules(st)):
            head = f"-> {labels[nxt]}  "
            sent.append(head + _indent("nothing" if og is None else format_array(og), len(head)))
            if formula is not None and og is not None:
                rules.append(f"{labels[nxt]}: {_rule_line(st, k, formula, self.names, labels, live)[2:]}")
        return [str(i), labels[st.node], at, deps, grad_in, "\n".join(sent), "\n".join(rules)]

    # -- the trace as data ---------------------------------------------------------------
    def records(self) -> list[dict]:
        """One dict per step, in execution order: ``step``, ``node`` (label), ``op`` (node name),
        ``pos`` (``{"file", "line", "column", "text"}`` or None), ``deps``, ``root``,
        ``grad_in`` (nested lists), and either ``sends`` (``[{"to", "grad", "rule",
        "numbers"}]``; ``rule`` is the op's formula for that input, or its one sentence for
        all inputs, or None; ``numbers`` the formula with scalar values put in) for an op
        node, or ``leaf`` and ``grad_after`` for an AccumulateGrad. ``trace[i]`` makes one."""
        labels = self._labels()
        return [self._record(i, st, labels) for i, st in enumerate(self.steps, 1)]

    def _record(self, i: int, st, labels) -> dict:
        """One step's record (see ``records``)."""
        pos = st.node.pos
        rec = {"step": i, "node": labels[st.node], "op": st.node.name,
               "pos": None if not pos else {"file": pos[0], "line": pos[1], "column": pos[2],
                                            "text": pos_text(pos)},
               "deps": st.deps, "root": st.deps == 0, "grad_in": _plain(st.grad_in)}
        if st._hooked is not None:
            rec["grad_before_hook"] = _plain(st.grad_before_hook)
        if st.kind == "leaf":
            rec["leaf"] = self.names.get(id(st.leaf))
            try:
                rec["grad_after"] = None if st.grad_after is None else _plain(st.grad_after)
            except AutogradError:
                rec["grad_after"] = "changed since"
        else:
            sends = []
            sentence = getattr(st.node, "rule", None)      # one sentence for every input
            sentence = sentence if isinstance(sentence, str) else None
            for (nxt, og), (i_in, formula) in zip(st.sends, _sent_rules(st)):
                sends.append({"to": labels[nxt], "grad": None if og is None else _plain(og),
                              "rule": formula if formula is not None else sentence,
                              "numbers": None if formula is None or og is None
                              else with_numbers(formula, st.values, st.grad_in)})
            rec["sends"] = sends
        return rec

    def to_json(self, **kwargs) -> str:
        """The records as JSON text (``kwargs`` go to ``json.dumps``, e.g. ``indent=2``);
        non-finite numbers are written as the strings "nan", "inf", "-inf"."""
        import json  # noqa: PLC0415
        return json.dumps({"create_graph": self.create_graph, "steps": self.records()}, **kwargs)

    def __iter__(self):
        return iter(self.records())

    def __getitem__(self, i):
        labels = self._labels()
        if isinstance(i, slice):
            return [self._record(k + 1, self.steps[k], labels) for k in range(*i.indices(len(self.steps)))]
        k = range(len(self.steps))[i]       # IndexError / TypeError as a list's
        return self._record(k + 1, self.steps[k], labels)

    __str__ = format

    def __repr__(self) -> str:
        return f"<Trace of {len(self.steps)} steps>"


def _sent_rules(st):
    """``(input index, formula or None)`` for each edge a step sent along, in ``sends`` order."""
    rule = getattr(st.node, "rule", None)
    per_input = rule is not None and not isinstance(rule, str)
    return [(i, rule_text(st.node, i) if per_input else None)
            for i, nxt in enumerate(st.node.next_edges) if nxt is not None]


def _rule_line(st, i, formula, names, labels, live) -> str:
    """``= grad * 3.0 * (w2*(w1*x^2+b))^(3.0-1) = 1.0 * 3.0 * (-4.5)^(3.0-1)``: the rule
    with the user's names for the inputs, then with the numbers."""
    text = "= " + with_operands(formula, st.node, operand_names(st.node, names, labels, live))
    numbers = with_numbers(formula, st.values, st.grad_in)
    return text + (f" = {numbers}" if numbers else "")


def _plain(arr):
    """A host array as JSON-ready numbers (nested lists; nan/inf as strings)."""
    if arr is None:
        return None

    def one(v):
        f = float(v)
        if f != f:
            return "nan"
        if f in (float("inf"), float("-inf")):
            return "inf" if f > 0 else "-inf"
        return v
    a = np.asarray(arr)
    if a.dtype.kind == "b":
        return a.tolist()
    if a.ndim == 0:
        return one(a.item())
    flat = [one(v) for v in a.ravel().tolist()]
    return np.array(flat, dtype=object).reshape(a.shape).tolist()


# -- node labels, shared with autodsl.tools.graph ---------------------------------------------------

def walk(roots):
    """Every node reachable from ``roots``, each once, in depth-first pre-order.

    Children are visited in ``next_edges`` order, so the order is deterministic;
    an explicit stack, so a 100,000-node chain needs no recursion.
    """
    seen = set()
    for root in roots:
        stack = [root]
        while stack:
            node = stack.pop()
            if node is None or node in seen:
                continue
            seen.add(node)
            yield node
            stack.extend(reversed(node.next_edges))


def leaf_label(tensor, names=None) -> str:
    """``AccumulateGrad(w1)``, or ``AccumulateGrad(leaf 2x3)`` when the leaf has no name."""
    nm = (names or {}).get(id(tensor))
    return f"AccumulateGrad({nm})" if nm else f"AccumulateGrad(leaf {_shape(tensor.shape)})"


def leaf_labels(leaves, names=None) -> dict:
    """{AccumulateGrad node: label} for ``leaves`` (in walk order): ``leaf_label``, except
    that unnamed leaves sharing a label are numbered in that order so that each label
    names one leaf: ``AccumulateGrad(leaf 2 #1)``, ``AccumulateGrad(leaf 2 #2)``."""
    labels = {n: leaf_label(n.variable, names) for n in leaves}
    seen = {}
    for lab in labels.values():
        seen[lab] = seen.get(lab, 0) + 1
    shared = {lab for lab, k in seen.items() if k > 1 and lab.startswith("AccumulateGrad(leaf ")}
    if shared:
        count = {}
        for n, lab in labels.items():
            if lab in shared:
                k = count[lab] = count.get(lab, 0) + 1
                labels[n] = f"{lab[:-1]} #{k})"
    return labels


class LazyNames(dict):
    """{id(tensor): variable name} from ``{name: value}`` namespaces (later ones win for a
    name: locals after globals), built when first read: a trace is kept at every traced
    backward but read only when shown. The namespaces are the caller's copies, so the
    names are those of the moment of the backward, and the tensors named stay alive
    while the trace is kept (an id then names no other object)."""

    def __init__(self, *namespaces):
        super().__init__()
        self._namespaces = namespaces

    def _fill(self):
        if self._namespaces is not None:
            for k, v in named_tensors(*self._namespaces).items():
                self[id(v)] = k
            self._namespaces = None

    def get(self, key, default=None):
        self._fill()
        return super().get(key, default)

    def __getitem__(self, key):
        self._fill()
        return super().__getitem__(key)

    def __contains__(self, key):
        self._fill()
        return super().__contains__(key)

    def __len__(self):
        self._fill()
        return super().__len__()

    def __iter__(self):
        self._fill()
        return super().__iter__()

    def keys(self):
        self._fill()
        return super().keys()

    def values(self):
        self._fill()
        return super().values()

    def items(self):
        self._fill()
        return super().items()

    def __repr__(self):
        self._fill()
        return super().__repr__()


def node_labels(roots, names=None) -> dict:
    """{node: label} for everything reachable from ``roots``: ``MulBackward#1``,
    ``MulBackward#2``, ... numbered per name in the order of ``walk(roots)``, and
    ``AccumulateGrad(w1)`` for leaves (``names``: {id(tensor): variable name});
    unnamed leaves of one shape are numbered too (``leaf_labels``).

    The trace and ``autodsl.tools.graph`` both use it, so they name nodes alike.
    """
    labels = {}
    counts = {}
    leaves = []
    for node in walk(roots):
        if isinstance(node, AccumulateGrad):
            labels[node] = None         # (its place in walk order; labelled below)
            leaves.append(node)
        else:
            k = counts.get(node.name, 0) + 1
            counts[node.name] = k
            labels[node] = f"{node.name}#{k}"
    labels.update(leaf_labels(leaves, names))
    return labels


def _indent(text, pad):
    """Continuation lines of a multi-line array line up under its first line."""
    width = pad if isinstance(pad, int) else len(pad)
    return text.replace("\n", "\n" + " " * width)


def _shape(shape):
    return "scalar" if shape == () else "x".join(map(str, shape))
