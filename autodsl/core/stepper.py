"""A backward pass run one node at a time: the engine's own loop, paused between nodes.

``BackwardStepper`` drives ``GraphTask.steps()``, the same generator that
``GraphTask.run()`` runs without pausing, so a stepped pass computes exactly
what ``backward()`` would. Between steps it shows the engine's state: the
node about to run and the gradient about to flow into it, the ready queue
(nodes whose gradients have all arrived, in the order they will run), and
each node still waiting with its remaining dependency count. ``abort()``
drops the pass: since the engine writes ``.grad`` only when the whole pass
has succeeded, every ``.grad`` stays as it was.
"""
from __future__ import annotations

from autodsl.textfmt import format_array
from autodsl.source import format_pos
from autodsl.core.rules import LiveOutputs, scalar_values
from autodsl.core.html import RichDisplay, pre
from autodsl.core.trace import Recorder, Trace, node_labels
import autodsl.backend as backend
from autodsl.errors import ValueError_
from autodsl.core.words import shown

__all__ = ["BackwardStepper"]

_SHOW = 12      # nodes listed per section before "... N more"


class BackwardStepper(RichDisplay):
    """A paused backward pass. ``next(n=1)`` runs n nodes, ``finish()`` runs the rest,
    ``abort()`` drops it; ``str()`` shows the state. ``done`` / ``aborted`` tell where it is.

    ``task``: a ``GraphTask`` not yet run; ``names``: {id(tensor): variable name}.
    """

    LANG_ATTRIBUTES = frozenset({"next", "finish", "abort", "done", "aborted", "state", "steps_run"})
    # the last line of the state: the methods here; the REPL's :step puts its commands instead
    hint = "  (.next() runs it, .finish() runs the rest, .abort() leaves every .grad as it was)"
    REPL_HINT = "  (:next runs it, :continue runs the rest, :abort leaves every .grad as it was)"

    def __init__(self, task, names=None):
        self.task = task
        if task.recorder is None:
            task.recorder = Recorder()      # what each step sent is shown after it
        self.names = names if names is not None else {}
        self.done = False
        self.aborted = False
        self.steps_run = 0
        self._labels = node_labels([node for node, _ in task.seeds], self.names)
        self._trace = Trace([], task.create_graph)
        self._trace.names = self.names
        self._paused = None
        self._gen = task.steps()
        self.record = None      # the watch.LastBackward of this pass, told whether it is paused
        self._resume()

    # -- driving ---------------------------------------------------------------------------
    def _note(self):
        if self.record is not None:
            self.record.stepping = "aborted" if self.aborted else (None if self.done else "paused")

    def _resume(self):
        """Run until the engine pauses before its next node, or the pass ends."""
        rec = self.task.recorder
        before = len(rec.steps) if hasattr(rec, "steps") else 0
        try:
            with self.task.running():
                self._paused = next(self._gen)
        except StopIteration:
            self._paused = None
            self.done = True
        except BaseException:
            self._paused = None
            self.done = True
            self.aborted = True
            self._gen.close()
            self._note()
            raise
        self._note()
        new = rec.steps[before:] if hasattr(rec, "steps") else []
        for st in new:
            if st.kind != "leaf":
                st.values = scalar_values(st.node)
        return new

    def next(self, n: int = 1) -> str:
        """Run the next ``n`` nodes (default 1); returns what they did and the new state.

        Raises whatever the node raises (a version error, ...); the pass is then
        over and no ``.grad`` has changed.
        """
        try:
            n = int(n)
        except (TypeError, ValueError):
            raise ValueError_(f"next(n) takes a whole number of nodes to run, not {shown(n)}") from None
        if n < 1:
            raise ValueError_(f"next(n) runs n >= 1 nodes, not {n}")
        if self.done:
            return self._over()
        lines = []
        live = LiveOutputs()
        for _ in range(n):
            if self.done:
                break
            for st in self._resume():
                self.steps_run += 1
                committed = self.done
                lines.extend(self._trace.format_step(st, self.steps_run, self._label_table(st),
                                                     committed=committed, live=live))
        lines.append(self.state)
        return "\n".join(lines)

    def finish(self) -> str:
        """Run every remaining node; the ``.grad`` fields are then written. Returns a summary."""
        if self.done:
            return self._over()
        before = self.steps_run
        while not self.done:
            self.steps_run += len(self._resume())
        ran = self.steps_run - before
        if before == 0:
            return f"finished: {ran} step(s) ran; .grad is written"
        return f"finished: {ran} more step(s) ran, {self.steps_run} in all; .grad is written"

    continue_ = finish

    def abort(self) -> str:
        """Drop the pass: no ``.grad`` changes and no saved tensor is freed."""
        if self.done:
            return self._over()
        self._gen.close()
        self._paused = None
        self.done = self.aborted = True
        self._note()
        return f"aborted after {self.steps_run} step(s); every .grad is as it was before the backward"

    def _over(self) -> str:
        return "this backward is over (aborted)" if self.aborted else "this backward is over; every step has run"

    # -- showing -----------------------------------------------------------------------------
    def _label_table(self, st):
        table = self._labels
        for node in [st.node] + [nxt for nxt, _ in st._pairs]:
            if node not in table:       # cannot happen for a graph walked from the roots; be safe
                table[node] = node.name
        return table

    def _label(self, node) -> str:
        return self._labels.get(node) or node.name

    @property
    def state(self) -> str:
        """The engine's state now: next node, gradient about to flow, ready queue, waiting nodes."""
        if self.done:
            return self._over()
        node, g, heap, deps, buffers = self._paused
        at = format_pos(node.pos)
        lines = [f"paused before step {self.steps_run + 1}",
                 f"  next     {self._label(node)}{' at ' + at if at else ''}",
                 "  grad     " + ("nothing (no gradient reached it; it only passes the count on)"
                                  if g is None else _indent(format_array(_host(g)), 11))
                 + ("  (tensor hooks run on it first)" if g is not None and node._pre_hooks else "")]
        ready = [entry[2] for entry in sorted(heap)]
        lines.append("  ready    " + (", ".join(self._label(n) for n in ready[:_SHOW]) or "(empty)")
                     + _more(len(ready)))
        waiting = [(n, d) for n, d in deps.items() if d > 0]
        waiting.sort(key=lambda nd: -nd[0].seq_nr)
        if waiting:
            lines.append("  waiting  (node: gradients still to come, gradient summed so far)")
            for n, d in waiting[:_SHOW]:
                part = buffers.get(n)
                head = f"           {self._label(n)}: {d} to come, "
                so_far = "nothing yet" if part is None else _indent(format_array(_host(part)), len(head))
                lines.append(head + so_far)
            if len(waiting) > _SHOW:
                lines.append(f"           ... {len(waiting) - _SHOW} more")
        lines.append(self.hint)
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.state

    def _repr_html_(self) -> str:
        return pre(self.state, css_class="autodsl-step")

    def __repr__(self) -> str:
        where = "aborted" if self.aborted else ("done" if self.done else f"paused before step {self.steps_run + 1}")
        return f"<backward stepper: {where}>"


def _host(t):
    return backend.to_host(t._data)


def _more(n: int) -> str:
    return f", ... {n - _SHOW} more" if n > _SHOW else ""


def _indent(text: str, n: int) -> str:
    return text.replace("\n", "\n" + " " * n)
