"""``why(x)``: why ``x.grad`` is none, zero or not finite after the last backward.

The answer is one of these reasons (``Why.reason``), checked in this order:

* ``"non_leaf"``: x was made by an op; backward fills ``.grad`` of leaves only
  (call ``x.retain_grad()`` before backward).
* ``"no_requires_grad"``: x is a leaf that does not require grad; says where it
  was made (a creation function, ``detach()``, an op inside ``no_grad``, a
  comparison, an integer cast).
* ``"ok"`` / ``"nonfinite"``: ``.grad`` is set with no zero, or it holds nan/inf
  (anomaly mode finds where that started).
* ``"no_backward"``: no backward has run yet.
* ``"root_gone"``: the last backward's output is gone, so its graph cannot be
  searched.
* ``"not_reached"``: x is not in the graph of the last backward; says where the
  path from x was cut (``detach()``, a ``no_grad`` block, a comparison, an
  integer cast) when that was recorded.
* ``"graph_freed"``: the last backward failed because an earlier one freed the
  graph (``retain_graph=true``).
* ``"grad_call"`` / ``"not_in_inputs"``: the last pass was ``grad()`` (which does
  not touch ``.grad``) or ``backward(inputs=...)`` without x.
* ``"empty"``: the gradient reached x, which has no elements, so its gradient (of
  x's shape) has none either.
* ``"zero"``, ``"partly_zero"``, ``"no_gradient"``: the gradient reached x's
  part of the graph but was zeroed (or became none) on the way; ``Why.node``
  is the node that did it: the first one, walking from the root down towards
  x, whose incoming gradient had nonzero entries but whose gradient towards x
  has more zeros (a relu that was off, a clamp at its bound, a ``where`` branch
  not taken, a max that was not the maximum, a factor that was 0), or, when
  gradients cancelled, the node where they summed to 0.
* ``"reset"``: the last backward sent x a gradient, but ``.grad`` was reset
  afterwards (or that backward stopped with an error).

Where the numbers come from: the last backward's per-node gradients are in its
trace when one was recorded (always inside a Session, or with ``trace(true)``);
otherwise ``why`` runs the pass again, capturing gradients without touching any
``.grad`` (``retain_graph`` keeps what that needs; tensor hooks run again). When
that backward freed the graph's saved values, the graph is first made again by a
recorded replay at the current values (``core/replay.py``): the same numbers, as
long as the output's value comes out the same (else ``why`` says it cannot tell). The
engine itself does no extra work for ``why``: it only remembers the roots of
the last backward (``autograd.watch``).
"""
from __future__ import annotations

import numpy as np

import autodsl.backend as backend
from autodsl.core import watch
from autodsl.core.node import AccumulateGrad, const_entries, saved_entries
from autodsl.source import format_pos, pos_text
from autodsl.core.rules import LiveOutputs, input_value, output_value
from autodsl.core import replay
from autodsl.core.trace import last_trace, node_labels, walk
from autodsl.names import caller_namespace
from autodsl.errors import DSLError, TypeError_
from autodsl.context import current
from autodsl.names import name_maps
from autodsl.core.tensor import Tensor
from autodsl.textfmt import format_array, format_number
from autodsl.core.anomaly import get_anomaly_mode
from autodsl.core.anomaly import anomaly_scope
from autodsl.core.html import Markup, RichDisplay, block, pre
from autodsl.core.engine import GraphTask
from autodsl.core.trace import Recorder
from autodsl.core.words import kind as value_kind

__all__ = ["why", "Why", "REASONS"]

REASONS = ("non_leaf", "no_requires_grad", "ok", "nonfinite", "no_backward", "root_gone",
           "not_reached", "graph_freed", "grad_call", "not_in_inputs", "zero", "partly_zero",
           "no_gradient", "reset", "empty", "step_paused", "step_aborted")


class Why(RichDisplay):
    """The answer of ``why(x)``; ``str()`` is the explanation.

    ``reason``: one of ``REASONS``. ``node``: the graph node the answer is about
    (the one that zeroed the gradient, or that cut the path, or x's own), else
    none. ``label``: that node as the trace and graph name it
    (``ReluBackward#1``). ``pos``: the source position that matters, or none.
    ``culprits``: every ``(node, label, sentence)`` found on the way (zero
    cases). ``breaks``: where x's value left the graph (not_reached).
    """

    LANG_ATTRIBUTES = frozenset({"reason", "node", "label", "line", "lines"})

    def __init__(self, reason, lines, node=None, label=None, pos=None, culprits=(), breaks=()):
        if reason not in REASONS:     # pragma: no cover - a bug in this module
            raise ValueError(f"unknown reason {reason!r}")
        self.reason = reason
        self.lines = list(lines)
        self.node = node
        self.label = label
        self.pos = pos
        self.culprits = list(culprits)
        self.breaks = list(breaks)

    @property
    def line(self):
        """The source line of ``pos``, or None."""
        return None if not self.pos else self.pos[1]

    def __str__(self) -> str:
        return "\n".join(self.lines)

    __repr__ = __str__

    def _repr_html_(self) -> str:
        """The explanation as HTML: its first line (the answer) in bold, the rest below it."""
        head, *rest = self.lines or [""]
        return block(Markup("<div><b>"), head, Markup("</b></div>"), pre("\n".join(rest)) if rest else "")


def why(x, names=None) -> Why:
    """Explain why ``x.grad`` is none, zero (or partly zero) or not finite after the last
    backward: x is not a leaf (call retain_grad()), does not require grad (and where it
    was made), is not reached from the last backward's output (and where the path was
    cut: detach(), no_grad, a comparison, an integer cast), the graph had been freed, or
    the gradient reached it and was zeroed on the way (naming the node: a relu that was
    off, a clamp at its bound, a where branch not taken, a max that was not the maximum).

    ``x``: a tensor of any shape and dtype. Returns a Why: ``str()`` is the explanation;
    ``.reason`` (a code such as "zero", "not_reached", "non_leaf"), ``.node`` (the graph
    node), ``.label`` (its name in the trace, ``ReluBackward#1``), ``.line`` and ``.lines``
    (the explanation's lines) are the facts. ``names``: {name: tensor} or {id(tensor):
    name}, to name variables (a Session passes its own; from Python, the caller's
    variables are used). Raises TypeError_ when x is not a tensor. Changes nothing: no
    ``.grad``, no graph.

    Example (language)::

        w = tensor(-1.0, requires_grad=true)
        relu(w * 2).backward()
        why(w)        # w.grad is 0: ReluBackward#1 ... relu was off
    """
    if not isinstance(x, Tensor):
        raise TypeError_(f"why() takes a tensor, not {value_kind(x)}; for example why(w)")
    return _Explainer(x, names).explain()


# -- the explanation ----------------------------------------------------------------------------

def _is_zero(arr) -> bool:
    return arr is None or not np.any(arr)


def _zero_fraction(arr) -> float:
    if arr is None:
        return 1.0
    a = np.asarray(arr)
    return 1.0 if a.size == 0 else float(np.count_nonzero(a == 0)) / a.size


def _host(t):
    return None if t is None else np.asarray(backend.to_host(t._data))


def _value(arr) -> str:
    a = np.asarray(backend.to_host(arr))
    if a.ndim == 0 or a.size == 1:
        return format_number(a.reshape(()).item())
    if a.size <= 6:
        return format_array(a)
    return f"(shape {tuple(a.shape)}, min {format_number(a.min())} max {format_number(a.max())})"


class _Explainer:
    def __init__(self, x, names):
        self.x = x
        if names is None and current().names is None:
            names = caller_namespace()       # the Python API: the caller's variables
        self.by_id, self.by_node = name_maps(names)
        self.namespace = _namespace(names)
        nm = self.by_id.get(id(x))
        self.name = nm
        self.me = f"`{nm}`" if nm else "this tensor"
        self.grad_of = f"{nm}.grad" if nm else "its .grad"
        self.labels = {}
        self.live = LiveOutputs()        # (Note [live outputs])

    # -- naming --------------------------------------------------------------------------------
    def label(self, node) -> str:
        lab = self.labels.get(node)
        if lab is None:
            lab = node.name
        return lab

    def describe(self, node) -> str:
        """``ReluBackward#1 (h) at 3:5 `relu(w*x)```"""
        text = self.label(node)
        nm = self.by_node.get(node)
        if nm and not isinstance(node, AccumulateGrad):
            text += f" (`{nm}`)"
        at = format_pos(node.pos)
        return text + (f" at {at}" if at else "")

    def tensor_name(self, t) -> str | None:
        return self.by_id.get(id(t))

    def input_text(self, node, i) -> str | None:
        """The user's text for a node's input ``i``: a variable name or the source of the expression."""
        edges = node.next_edges
        child = edges[i] if i < len(edges) else None
        if child is None:           # a constant input: a variable whose values the node kept?
            consts = const_entries(node)
            data = consts[i] if i < len(consts) else None
            if data is not None:
                for k, v in self.namespace:
                    if v._data is data:
                        return k
            return None
        if isinstance(child, AccumulateGrad):
            return self.tensor_name(child.variable)
        nm = self.by_node.get(child)
        if nm:
            return nm
        pos = child.pos
        return pos_text(pos) if pos and pos[2] is not None else None    # not a whole Python line

    def input_value(self, node, i):
        """The array ``node``'s input ``i`` had, where the graph still knows it; else None."""
        return input_value(node, i, self.live)

    def backward_text(self, last) -> str:
        roots = last.roots
        names = [self.by_node.get(r) for r in roots]
        what = ", ".join(f"`{n}`" for n in names if n) or ", ".join(self.label(r) for r in roots)
        call = "grad()" if not last.accumulate else "backward()"
        at = format_pos(last.pos)
        return f"the last {call}" + (f" (from {what}" if what else " (") + (f", at {at})" if at else ")")

    # -- the cases -----------------------------------------------------------------------------
    def explain(self) -> Why:
        x = self.x
        if x.grad_fn is not None and not x._retains_grad:
            return self.non_leaf()
        if x.grad_fn is None and not x._requires_grad:
            return self.no_requires_grad()
        g = _host(x._grad)
        if g is not None and g.size and np.all(np.isfinite(g)) and np.all(g != 0):
            return Why("ok", [f"{self.grad_of} is set and has no zero entries: {_value(g)}"])
        if g is not None and not np.all(np.isfinite(g)):
            hint = ("Anomaly mode is on: its report (printed once per site, where the computation or "
                    "the backward ran) names the op, forward or backward, that first made a nan or inf "
                    "from finite values." if get_anomaly_mode() else
                    "Turn on anomaly mode (anomaly(true), or :anomaly on) and run the computation and "
                    "backward again: it names the op, forward or backward, that first made a nan or inf "
                    "from finite values.")
            return Why("nonfinite", [f"{self.grad_of} holds nan or inf: {_value(g)}", hint])
        last = watch.last_backward()
        if last is None:
            return Why("no_backward", [f"{self.grad_of} is none because no backward has run yet: call "
                                       "backward() on a scalar computed from it (e.g. loss.backward())"])
        roots = last.roots
        if not roots or not last.roots_alive:
            return Why("root_gone", [
                f"{self.grad_of} is {'none' if g is None else 'zero'}, and the output of the last "
                "backward no longer exists, so its graph cannot be searched; keep the output in a "
                "variable (loss = ...; loss.backward()) and ask again"])
        graph = list(walk(roots))
        self.labels = node_labels(roots, self.by_id)
        target = x.grad_fn if x.grad_fn is not None else x._accumulate
        if target is None or target not in set(graph):
            return self.not_reached(last, target, graph)
        if last.freed_before:
            return Why("graph_freed", [
                f"{self.grad_of} is {'none' if g is None else 'unchanged'}: {self.backward_text(last)} "
                "stopped with an error, because an earlier backward had freed that graph's saved "
                "values. Pass retain_graph=true to the first backward to run backward twice through "
                "the same graph (or compute the output again)"], node=roots[0], label=self.label(roots[0]),
                pos=last.pos)
        if not last.accumulate:
            return Why("grad_call", [
                f"{self.grad_of} is {'none' if g is None else 'unchanged'}: {self.backward_text(last)} "
                "returns the gradients and leaves .grad alone; use backward() to fill .grad"], pos=last.pos)
        if last.targets is not None and target not in last.targets:
            return Why("not_in_inputs", [
                f"{self.grad_of} is {'none' if g is None else 'unchanged'}: {self.backward_text(last)} "
                f"was given inputs=[...] without {self.me}, so only those inputs got .grad"], pos=last.pos)
        if last.stepping is not None:
            state = "none" if g is None else "unchanged"
            how = ("is paused (step(), :step): .grad is written when it finishes (:continue, or "
                   ".finish() on the stepper)" if last.stepping == "paused" else
                   "was aborted (:abort, .abort(), or an error in one of its steps), so it wrote no .grad")
            return Why("step_" + last.stepping, [f"{self.grad_of} is {state}: {self.backward_text(last)} {how}"],
                       pos=last.pos)
        return self.reached(last, target, g)

    def non_leaf(self) -> Why:
        node = self.x.grad_fn
        at = format_pos(node.pos)
        call = f"{self.name}.retain_grad()" if self.name else "retain_grad() on it"
        return Why("non_leaf", [
            f"{self.grad_of} is none: {self.me} is not a leaf, it was made by {node.name}"
            + (f" at {at}" if at else "") + ", and backward fills .grad only for leaves (tensors you made "
            "with requires_grad=true).",
            f"Call {call} before backward to keep its gradient too."],
            node=node, label=node.name, pos=node.pos)

    def no_requires_grad(self) -> Why:
        x = self.x
        call = f"{self.name}.requires_grad_()" if self.name else "requires_grad_() on it"
        head = f"{self.grad_of} is none: {self.me} does not require grad, and only tensors that require grad get .grad."
        # (first: a comparison's or an integer cast's result is not floating either, and the site
        # it came out of says more than its dtype)
        brk = watch.made_by(x)
        if brk is not None:
            return Why("no_requires_grad", [head, self.break_sentence(brk, made=True)], pos=brk.pos,
                       breaks=[brk])
        if not x.dtype.is_floating:
            return Why("no_requires_grad", [head, f"It is {x.dtype.name}: only floating-point tensors can "
                                            "require grad; make it with dtype=float64 (or float32)."],
                       pos=x._pos)
        # detach(): shares the storage and version counter of a tensor that requires grad
        for other, onm in self._tensors_sharing(x):
            if other._requires_grad:
                at = format_pos(x._pos)
                return Why("no_requires_grad", [head, (
                    f"{self.me} is a detach() of `{onm}`" + (f", made at {at}" if at else "")
                    + f": it shares `{onm}`'s values but not its gradient path. Use `{onm}` itself "
                    f"where you want its gradient.")], pos=x._pos)
        at = format_pos(x._pos)
        if at and "detach" in (pos_text(x._pos) or ""):
            return Why("no_requires_grad", [head, (
                f"{self.me} was made by detach() at {at}: it has the values of the tensor it came from "
                "but not its gradient path. Use that tensor itself where you want its gradient.")],
                pos=x._pos)
        if at:
            return Why("no_requires_grad", [head, (
                f"{self.me} was made at {at} without requires_grad=true. Make it with "
                f"requires_grad=true, or call {call} before computing with it.")],
                pos=x._pos)
        return Why("no_requires_grad", [head, (
            f"{self.me} was computed from tensors that do not require grad (or is a copy such as "
            ".data), so it has no graph. Give requires_grad=true to the leaves it is computed from.")])

    def _tensors_sharing(self, x):
        """(tensor, name) of the user's variables that share x's version counter (views, detach)."""
        return [(v, k) for k, v in self.namespace if v is not x and v._version is x._version]

    # -- not reached ---------------------------------------------------------------------------
    def break_sentence(self, brk, made=False) -> str:
        """``at 4:9 `w * 2`, `w` was used inside a no_grad block, ...`` (made: ``... was computed ...``)."""
        at = format_pos(brk.pos)
        at = f"at {at}, " if at else ""
        srcs = [s for s in (self.source_name(n) for n in brk.source_nodes()) if s]
        src = " and ".join(srcs) if srcs else "a tensor that requires grad"
        if made and brk.out is not None and brk.out() is not self.x:
            # computed from that site's result by ops that recorded nothing (core/watch.follow_break)
            start = f"{self.me} was computed from the value made {at.rstrip(', ')} from {src}".replace("  ", " ")
        elif made:
            start = f"{self.me} was computed {at.rstrip(', ')} from {src}".replace("  ", " ")
        else:
            start = f"{at}{src} {'was' if len(srcs) < 2 else 'were'} used"
        if brk.kind == "no_grad":
            return f"{start} inside a no_grad block, where nothing is recorded; compute it outside no_grad to keep the gradient path."
        if brk.kind == "comparison":
            return f"{start} in a comparison ({brk.op}), whose boolean result carries no gradient."
        return f"{start} in a cast to an integer dtype; integer tensors carry no gradient."

    def source_name(self, node) -> str | None:
        if isinstance(node, AccumulateGrad):
            nm = self.tensor_name(node.variable)
            return f"`{nm}`" if nm else None
        nm = self.by_node.get(node)
        if nm:
            return f"`{nm}`"
        t = pos_text(node.pos)
        return f"`{t}`" if t else None

    def not_reached(self, last, target, graph) -> Why:
        x = self.x
        g = x._grad
        state = "none" if g is None else "unchanged by it"
        lines = [f"{self.grad_of} is {state}: {self.me} is not in the graph of {self.backward_text(last)}, "
                 "so no gradient could reach it."]
        breaks = []
        node = None
        pos = None
        # 1. detach() copies of x that the graph (or a variable) uses
        aliases = self._detached_aliases(graph)
        for t, nm, used in aliases:
            if t is None:           # only the graph's constant shows it: a detach() or .data of x
                lines.append(f"The path is cut: {used} (a detach() or .data of it), which carry no "
                             f"gradient path. Use {self.me} itself there.")
                continue
            at = format_pos(t._pos)
            who = f"`{nm}`" if nm else "a detach() of it"
            lines.append(
                f"The path is cut by detach(){f' at {at}' if at else ''}: {who} has {self.me}'s values "
                "but not its gradient path" + (f", and {used}." if used else ".")
                + (f" Use {self.me} itself there." if self.name else ""))
            pos = pos or t._pos
        # 2. values computed from x without a graph (no_grad, comparisons, integer casts)
        if target is not None:
            reach = _reaching(watch.all_breaks(), target)
            for brk in reach[-4:]:
                breaks.append(brk)
                lines.append("Where its value left the graph: " + self.break_sentence(brk))
                pos = pos or brk.pos
        if target is None and not aliases:
            lines.append(f"{self.me} was never used by an op that records a graph since it started to "
                         "require grad.")
        if not aliases and not breaks:
            lines.append(
                "Nothing recorded shows where the path was cut: check that the output is computed from "
                f"{self.me}, and not from a copy of its value (.item(), tolist(), .data, tensor(...)).")
        return Why("not_reached", lines, node=node, pos=pos, breaks=breaks)

    def _detached_aliases(self, graph):
        """(tensor, name, how the graph uses it) for detach() copies of x: tensors that share x's
        version counter but have no history, found among variables and the graph's leaves and saved
        tensors."""
        x = self.x
        counter = x._version
        found = {}
        used_by = {}
        const_users = []          # nodes that kept x's own array as a constant input (scalars)
        for node in graph:
            if isinstance(node, AccumulateGrad):
                continue
            for s in saved_entries(node):
                t = getattr(s, "tensor", None)
                if t is not None and t is not x and t._version is counter and t.grad_fn is None \
                        and not t._requires_grad:
                    found.setdefault(id(t), t)
                    used_by.setdefault(id(t), node)
            if any(c is x._data for c in const_entries(node)):
                const_users.append(node)
        for k, v in self.namespace:
            if v is not x and v._version is counter and v.grad_fn is None \
                    and not v._requires_grad and v._pos is not None:
                found.setdefault(id(v), v)
        out = []
        for tid, t in found.items():
            user = used_by.get(tid)
            if user is None:
                user = next((n for n in const_users if t._data is x._data), None)
            used = f"{self.describe(user)} uses it" if user is not None else None
            out.append((t, self.tensor_name(t), used))
        if not out:
            out.extend((None, None, f"{self.describe(n)} uses {self.me}'s values as a constant")
                       for n in const_users)
        return out

    # -- reached: follow the gradient ----------------------------------------------------------
    def reached(self, last, target, g) -> Why:
        if g is not None and np.asarray(g).size == 0:     # (nothing of it can be 0 or otherwise)
            return Why("empty", [
                f"{self.grad_of} is an empty tensor: {self.me} has no elements (shape {tuple(self.x.shape)}), "
                f"so its gradient has none either; {self.backward_text(last)} reached it."], pos=last.pos)
        steps, got, problem = self.gradients(last, target)
        state = "none" if g is None else ("0" if _is_zero(g) else "partly 0")
        if steps is None:
            return Why("zero" if g is not None and _is_zero(g) else ("partly_zero" if g is not None
                                                                     else "no_gradient"), [
                f"{self.grad_of} is {state}: {self.me} is in the graph of {self.backward_text(last)}, "
                f"but I cannot tell where the gradient was lost: {problem}."], pos=last.pos)
        if g is None and got is not None and not _is_zero(got):
            return Why("reset", [
                f"{self.grad_of} is none, but {self.backward_text(last)} sent {self.me} the gradient "
                f"{_value(got)}: .grad was reset afterwards ({self.name or 'x'}.grad = none or zero_grad()), "
                "or that backward stopped with an error before it finished."], pos=last.pos)
        culprits = self.culprits(steps, target)
        if g is None:
            reason, head = "no_gradient", (f"{self.grad_of} is none: {self.me} is in the graph of "
                                           f"{self.backward_text(last)}, but no gradient arrived")
        elif _is_zero(g):
            reason, head = "zero", (f"{self.grad_of} is 0: the gradient of {self.backward_text(last)} "
                                    f"reached {self.me}'s part of the graph but was zeroed on the way")
        else:
            frac = _zero_fraction(g)
            reason, head = "partly_zero", (
                f"{self.grad_of} has {np.count_nonzero(g == 0)} of {g.size} entries zero ({frac:.0%}): "
                f"the gradient of {self.backward_text(last)} was zeroed there on the way")
        if not culprits:
            return Why(reason, [head + ".", "No single node zeroed it: the gradients that reached it "
                                "were 0 from the start (the seed of backward, or a gradient you passed)."],
                       pos=last.pos)
        lines = [head + ":"]
        for node, _, sentence in culprits[:4]:
            lines.append(f"- {sentence}")
        if len(culprits) > 4:
            lines.append(f"- ... and {len(culprits) - 4} more nodes")
        first = culprits[0][0]
        return Why(reason, lines, node=first, label=self.label(first), pos=first.pos, culprits=culprits)

    def gradients(self, last, target):
        """(steps, gradient that reached target, problem): the per-node gradients of the last
        backward, from its trace or by running it again; steps is None when neither works."""
        rec = last.recorder
        lt = last_trace()
        if rec is not None and lt is not None and getattr(lt, "steps", None) is getattr(rec, "steps", 0):
            steps = lt.steps
            got = None
            for st in steps:
                if st.node is target:
                    got = st.grad_in
            return steps, got, None
        return self.rerun(last, target)

    def rerun(self, last, target):
        seeds = []
        for ref, data, device in last.seeds:
            node = ref()
            if node is None:
                return None, None, "the output of the last backward no longer exists"
            seeds.append((node, Tensor(data, _device=device)))
        orig = None
        if any(getattr(node, "_released", False) for node in walk([n for n, _ in seeds])):
            seeds, target, orig, problem = self.again(seeds, target)     # its saved values were freed
            if problem is not None:
                return None, None, problem

        class _Capture(Recorder):
            __slots__ = ()

            def finish(self, staged):          # keep the steps; publish nothing
                pass

        cap = _Capture()
        try:
            with watch.quiet(), anomaly_scope(None):
                task = GraphTask(seeds, retain_graph=True, create_graph=False,
                                 targets={target: self.x}, accumulate=False, retained=False)
                task.recorder = cap
                captured = task.run()
        except DSLError as e:
            return None, None, f"running that backward again failed ({e.message})"
        got = captured.get(target)
        if orig is not None:        # the steps of the graph made again, told as those of the original
            for st in cap.steps:
                st.node = orig.get(st.node, st.node)
        return cap.steps, (None if got is None else _host(got)), None

    def again(self, seeds, target):
        """(seeds, target, {new node: old}, problem): the freed graph made again by a recorded
        replay at the current values (core/replay.py), or a problem sentence when that cannot
        give the last backward's numbers."""
        roots = [n for n, _ in seeds]
        freed = "its graph was freed by that backward"
        try:
            rep = replay.evaluate(roots, record=True)
        except DSLError as e:
            return seeds, target, None, f"{freed}, and evaluating it again failed ({e.message})"
        for r in roots:
            known = output_value(r, self.live)
            if known is not None and not replay.same_values(rep.outputs[r]._data, known):
                return seeds, target, None, (
                    f"{freed}, and a tensor it was computed from changed since (an in-place update such "
                    "as w -= lr * w.grad), so evaluating it again would not give that backward's numbers; "
                    "ask before the update, or run backward with retain_graph=true (or inside a Session, "
                    "or with trace(true))")
        fresh = rep.fresh
        return ([(fresh.get(n, n), g) for n, g in seeds], fresh.get(target, target),
                {n: o for o, n in fresh.items()}, None)

    def culprits(self, steps, target):
        """The nodes, in the order they ran (root first), that received a gradient with nonzero
        entries and sent one towards ``target`` with more zeros; then, if none, a node where
        nonzero gradients summed to 0."""
        above = _ancestors(target, [st.node for st in steps])
        found = []
        incoming = {}
        for st in steps:
            if st.kind != "node" or st.node not in above:
                continue
            gin = st.grad_in
            zin = _zero_fraction(gin)
            for idx, (nxt, og) in enumerate(st.sends):
                if nxt is not target and nxt not in above:
                    continue
                incoming.setdefault(nxt, []).append(og)
                if zin < 1.0 and _zero_fraction(og) > zin:
                    i = _edge_index(st.node, nxt, idx)
                    found.append((st.node, self.label(st.node), self.zero_sentence(st, i, nxt, og, gin)))
        if found:
            return found
        for st in steps:
            if st.node is target or st.node in above:
                arrived = incoming.get(st.node, [])
                if _is_zero(st.grad_in) and any(not _is_zero(a) for a in arrived):
                    parts = " + ".join(_value(a) for a in arrived if a is not None)
                    return [(st.node, self.label(st.node),
                             f"{self.describe(st.node)}: the gradients arriving there cancelled out "
                             f"({parts} = 0)")]
        return []

    def zero_sentence(self, st, i, nxt, og, gin) -> str:
        node = st.node
        if nxt is self._target_node():
            towards = self.me
        else:
            text = self.input_text(node, i)
            towards = f"`{text}`" if text else self.label(nxt)
        head = (f"{self.describe(node)} got {_value(gin)} and sent "
                f"{'nothing' if og is None else _value(og)} towards {towards}")
        detail = _zero_reason(self, node, i, og)
        return head + (f": {detail}" if detail else "")

    def _target_node(self):
        x = self.x
        return x.grad_fn if x.grad_fn is not None else x._accumulate


# -- helpers -------------------------------------------------------------------------------------

def _namespace(names) -> list:
    """[(name, tensor)] of the user's variables: from ``names`` when it maps names to tensors,
    else from the Session's (the run context's ``names``)."""
    if names is None:
        provider = current().names
        try:
            names = provider() if provider is not None else None
        except Exception:  # noqa: BLE001 - names are a nicety
            names = None
    if not hasattr(names, "items"):
        return []
    return [(k, v) for k, v in list(names.items())
            if isinstance(k, str) and not k.startswith("_") and isinstance(v, Tensor)]


def _edge_index(node, nxt, send_index):
    """The input index of the ``send_index``-th non-None edge of ``node``."""
    k = -1
    for i, e in enumerate(node.next_edges):
        if e is not None:
            k += 1
            if k == send_index:
                return i
    return send_index


def _ancestors(target, nodes):
    """The nodes (of ``nodes`` and everything reachable from them) from which ``target`` is reachable."""
    parents = {}
    for node in walk(nodes):
        for nxt in node.next_edges:
            if nxt is not None:
                parents.setdefault(nxt, []).append(node)
    above = set()
    stack = [target]
    while stack:
        n = stack.pop()
        for p in parents.get(n, ()):
            if p not in above:
                above.add(p)
                stack.append(p)
    return above


def _reaching(breaks, target):
    """The Breaks whose source nodes are ``target`` or lead to it."""
    out = []
    for brk in breaks:
        for src in brk.source_nodes():
            if src is target or any(n is target for n in walk([src])):
                out.append(brk)
                break
    return out


def _count(mask) -> str:
    m = np.asarray(mask)
    if m.ndim == 0:
        return ""
    return f" at {int(np.count_nonzero(m))} of {m.size} elements"


def _zero_reason(ex: _Explainer, node, i, og) -> str | None:
    """Why ``node`` sent a zero gradient to its input ``i``: a sentence, from the op's rule."""
    name = node.name
    val = ex.input_value(node, i)
    text = ex.input_text(node, i)
    what = f"`{text}`" if text else "its input"
    zeros = None if og is None else (np.asarray(og) == 0)
    where = "" if zeros is None else _count(zeros)
    if name == "ReluBackward":
        v = f" was {_value(val)}" if val is not None and np.asarray(backend.to_host(val)).size == 1 else " was <= 0" + where
        return f"relu was off: {what}{v}, and relu'(x) = 0 for x <= 0"
    if name in ("ClampBackward", "ClampMinBackward", "ClampMaxBackward"):
        lo, hi = getattr(node, "lo", None), getattr(node, "hi", None)
        bounds = []
        if lo is not None:
            bounds.append(f"min={format_number(lo) if not hasattr(lo, 'shape') else 'a tensor'}")
        if hi is not None:
            bounds.append(f"max={format_number(hi) if not hasattr(hi, 'shape') else 'a tensor'}")
        b = f"({', '.join(bounds)})" if bounds else ""
        v = f" ({what} = {_value(val)})" if val is not None and np.asarray(backend.to_host(val)).size == 1 else where
        return f"clamp{b} was at its bound{v}, where its derivative is 0"
    if name == "WhereBackward":
        branch = "false" if i == 1 else "true"
        return f"where() took the other branch: the condition was {branch}{where}"
    if name in ("MaximumBackward", "MinimumBackward"):
        which = "smaller" if name == "MaximumBackward" else "larger"
        return f"{'maximum' if which == 'smaller' else 'minimum'}() picked the other input: {what} was the {which} one{where}"
    if name in ("MaxBackward", "MinBackward"):
        kind = "maximum" if name == "MaxBackward" else "minimum"
        return f"only the {kind} gets the gradient of {kind.replace('imum', '')}(), and these elements were not it{where}"
    if name == "MulBackward":
        j = 1 - i if len(node.next_edges) == 2 else None
        if j is not None:
            other = ex.input_value(node, j)
            ot = ex.input_text(node, j)
            o = f"the other factor `{ot}`" if ot else "the other factor"
            if other is not None and np.asarray(backend.to_host(other)).size == 1:
                return f"{o} was {_value(other)}"
            return f"{o} was 0{where}"
        return "a factor was 0"
    if name == "SignBackward":
        return "sign() has derivative 0 everywhere"
    if name == "AbsBackward":
        return f"abs'(0) = 0, and {what} was 0{where}"
    if name == "PowBackward":
        return "the derivative of x^p is 0 here (x = 0 with p > 1, or p = 0)"
    if name == "IndexBackward":
        return f"indexing picked other elements; the elements not picked get 0{where}"
    if name == "IndexPutBackward":
        return f"those elements were overwritten by an indexed write, so they get 0{where}"
    rule = getattr(node, "rule", None)
    if isinstance(rule, tuple) and i < len(rule) and rule[i]:
        return f"its local derivative ({rule[i]}) was 0{where}"
    return f"its local derivative was 0{where}"
