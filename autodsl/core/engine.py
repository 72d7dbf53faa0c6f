"""The dependency-counted reverse-mode engine (PyTorch's engine, OneFlow's GraphTask).

The engine knows nodes, edges and gradient tensors (through the few methods
it calls on them: ``+``, ``sum_to_size``, ``to``); nothing of ops or of the
language. Op-specific work (formulas, saved values) lives in the nodes. The
callers (``Tensor.backward``, ``autodsl.grad``) check the roots and make the
seed gradients.
"""
from __future__ import annotations

import heapq
from itertools import count

try:
    import cython
except ImportError:
    from autodsl._pure import cython
from autodsl.core import trace as _trace
from autodsl.context import current
from autodsl.core.node import AccumulateGrad, Node, dependency_counts, release_nodes
from autodsl.source import SOURCE_POS, backward_pos
from autodsl.core.watch import note_backward
from autodsl.core.quiet import pass_state
from autodsl.core.grad_sums import add as _add, as_gradient, stage as _stage

__all__ = ["GraphTask"]


# Note [why counting]
# The recursive form everybody writes first,
#     def backprop(node, g):
#         for child, cg in zip(node.next_edges, node.apply(g)): backprop(child, cg)
# runs a node once per path that reaches it (exponential on a diamond ladder),
# applies a node before all its incoming gradients are summed (wrong for any
# node whose backward is not linear in g, and wrong for .grad hooks), and dies
# at the interpreter's recursion limit on a long chain. Instead we count, for
# every node reachable from the roots, how many edges point at it; a node runs
# once, when its count reaches zero, on the sum of everything sent to it. The
# ready set is a heap on -seq_nr (the node made last runs first), which is a
# valid topological order and makes the run deterministic. Work is O(V + E).

class GraphTask:
    """The state of one backward call: dependency counts, gradient buffers, results.

    ``seeds``: (root node, gradient) pairs. ``targets``: node -> tensor for
    ``grad()``/``backward(inputs=...)``; the graph is pruned to what reaches
    them, and gradients arriving there are captured. ``accumulate``: write
    ``.grad`` (backward) or only capture (grad()).
    """

    def __init__(self, seeds, retain_graph: bool, create_graph: bool, targets=None, accumulate=True,
                 retained=True):
        self.retained = retained and not current().quiet    # (why()'s, explain()'s: no .grad changes)
        self.retain_graph, self.create_graph = retain_graph, create_graph
        self.seeds, self.targets, self.accumulate = seeds, targets, accumulate
        self.recorder = _trace.new_recorder()
        if current().capture is not None and (create_graph or targets is not None):
            current().capture.fail("it calls grad() or backward() with create_graph or inputs")
        note_backward(self)         # why() starts from the last backward's roots (core/watch.py)

    def _needed(self, roots, deps):
        """Nodes that must run because a target lies below them (OneFlow's need_execute)."""
        # Kahn's order from the roots; then a reverse sweep marks ancestors of targets.
        remaining = dict(deps)
        topo = []
        stack = [n for n in roots if remaining.get(n, 0) == 0]
        while stack:
            node = stack.pop()
            topo.append(node)
            for nxt in node.next_edges:
                if nxt is not None:
                    remaining[nxt] -= 1
                    if remaining[nxt] == 0:
                        stack.append(nxt)
        targets = self.targets
        needed = set()
        for node in reversed(topo):
            if any(n in needed or n in targets for n in node.next_edges if n is not None):
                needed.add(node)
        if self.accumulate:     # backward(inputs=): a non-leaf input's own node runs too, as in torch
            needed.update(n for n in targets if type(n) is not AccumulateGrad)
        return needed

    def run(self):
        """Run the backward pass; returns the captured gradients (node -> Tensor)."""
        with self.running():
            gen = self._run(stepping=False)
            try:
                next(gen)           # without stepping the pass never stops on the way
            except StopIteration as done:
                return done.value
        raise AssertionError("unreachable: a backward pass without stepping paused")  # pragma: no cover

    def running(self):
        """The state the pass runs in (core/quiet.py's pass_state: grad mode as create_graph
        asks, IEEE arithmetic, the cyclic GC paused). A stepped pass enters it around each step."""
        return pass_state(self.create_graph)

    def steps(self):
        """The pass as a generator for a step-by-step debugger (``autodsl.core.stepper``).

        It pauses before each node runs, yielding ``(node, gradient about to flow, ready
        heap, remaining dependency counts, gradient buffers)``; the caller must resume it
        inside ``running()``. Closing it early commits nothing: every ``.grad`` stays as
        it was and no saved tensor is freed. Its return value is ``run()``'s.
        """
        return self._run(stepping=True)

    # Note [observers]: the trace's recorder and anomaly mode watch the pass through
    # core/observer.py's PassObserver; the stepper pauses it at the one ``yield`` below.
    #
    # Note [the one ready node]: a node that becomes ready while no other is (a chain, most
    # nodes of a graph) runs next without going through the heap, as it would come out of it
    # first anyway; a second one ready beside it sends both to the heap, in the order they came
    # (their ticks), so the order of the pass is the heap's.
    @cython.locals(node=Node, nxt=Node, ready=Node)
    def _run(self, stepping):
        seeds = self.seeds      # (one root, the usual backward, without the dedupe of several)
        roots = (seeds[0][0],) if len(seeds) == 1 else tuple(dict.fromkeys([node for node, _ in seeds]))
        deps = dependency_counts(roots)
        self._needed_nodes = self._needed(roots, deps) if self.targets is not None else None
        ctx = current()
        anomaly, limits = ctx.anomaly, ctx.limits   # (a Session's time limit holds between nodes too)
        obs = self._observers = tuple([o for o in (self.recorder, anomaly) if o is not None])
        for o in obs:
            o.start(roots, self.create_graph)
        create_graph, buffers, heap, tick = self.create_graph, {}, [], count()
        for node, g in seeds:
            prev = buffers.get(node)
            buffers[node] = g if prev is None else _add(prev, g, create_graph)
        for node in roots:
            if deps.get(node, 0) == 0:
                heapq.heappush(heap, (-node.seq_nr, next(tick), node))
        self._captured, self._staged, self._ran = {}, {}, []
        # Note [float gradients] (core/grad_sums.py): where nothing needs Tensors on the way
        floats = not (stepping or create_graph or ctx.capture is not None) and all([o.takes_floats for o in obs])
        plain = self.targets is None and not create_graph   # (_evaluate's usual case, inline)
        ready = None        # Note [the one ready node]
        while heap or ready is not None:
            if ready is not None:
                node, ready = ready, None
            else:
                node = heapq.heappop(heap)[2]
            if limits is not None:
                limits.check_time()     # (before anything of the node runs: nothing is committed)
            g = buffers.pop(node, None)
            if stepping:        # pause before anything of the node runs, its hooks included
                yield node, g, heap, deps, buffers
            if plain and g is not None and not (node._pre_hooks or node._retained):
                if type(node) is AccumulateGrad:    # (_evaluate's leaf, inline: no edges to send along)
                    if node.variable._requires_grad:
                        self._accumulate(node, node.variable, as_gradient(g))
                    continue
                outs = node.evaluate(g, floats)
                self._ran.append(node)
                for o in obs:
                    o.step(node, g, outs)
            else:
                outs = None if g is None else self._evaluate(node, g, floats)
            for i, nxt in enumerate(node.next_edges):      # send: each edge's gradient, one count less
                if nxt is None:
                    continue
                d = deps[nxt] - 1
                deps[nxt] = d
                if outs is not None:
                    og = outs[i]
                    if og is not None:
                        prev = buffers.get(nxt)
                        buffers[nxt] = og if prev is None else _add(prev, og, create_graph)
                if d == 0:
                    if ready is None and not heap:
                        ready = nxt
                    else:
                        if ready is not None:
                            heapq.heappush(heap, (-ready.seq_nr, next(tick), ready))
                            ready = None
                        heapq.heappush(heap, (-nxt.seq_nr, next(tick), nxt))
        g = outs = og = prev = None     # the loop's last gradients: Note [stealing a gradient]
        return self._commit()

    @cython.locals(node=Node)
    def _evaluate(self, node, g, floats):
        """Run one node on its summed gradient in PyTorch's evaluate_function order: grad()'s
        capture of a target that runs (before its hooks), its hooks, retain_grad()'s .grad, the
        accumulation of a leaf or target (or the capture of a target that does not run), its
        formula and the validation of what it sends; a node that reaches no target is not
        visited. Returns one gradient per edge, or None where nothing is sent on: floats
        where ``floats`` allows them (Note [float gradients]), which only ``node.evaluate`` takes."""
        obs, targets, needed = self._observers, self.targets, self._needed_nodes
        is_acc = type(node) is AccumulateGrad
        target = targets is not None and node in targets
        runs = not is_acc and (needed is None or node in needed)
        if not (runs or target or needed is None):
            return None
        if type(g) is float and (target or not runs or node._pre_hooks or node._retained):
            g = as_gradient(g)
        if target and runs and not self.accumulate:
            self._captured[node] = g
        if node._pre_hooks:      # register_hook: may replace g (Note [tensor hooks])
            if current().capture is not None:
                current().capture.fail("a hook registered with register_hook runs in its backward")
            g = node.run_pre_hooks(g, obs)
        if node._retained and self.retained:
            own = targets[node] if target and self.accumulate else None
            for t in node._retained:
                if t is not own:
                    _stage(self._staged, t, g, self.create_graph)
        if target:
            if self.accumulate:
                self._accumulate(node, targets[node], g)
            elif not runs:
                self._captured[node] = g
        elif is_acc and targets is None and node.variable._requires_grad:
            # (a leaf set to requires_grad=false after use gets nothing, as in PyTorch)
            self._accumulate(node, node.variable, g)
        if not runs:
            return None
        if self.create_graph:        # the nodes the formula records are "the backward of" this one
            tok = SOURCE_POS.set(backward_pos(node.pos, node.name))
            try:
                outs = node.validate_outputs(node.apply(g), g)
            finally:
                SOURCE_POS.reset(tok)
        else:
            outs = node.evaluate(g, floats)
        self._ran.append(node)
        for o in obs:
            o.step(node, g, outs)
        return outs

    def _accumulate(self, node, tensor, g):
        _stage(self._staged, tensor, g, self.create_graph)
        for o in self._observers:
            o.accumulate(node, tensor, g)

    def _commit(self):
        """Only now do .grad fields change, so a failed pass changes none. Every new value is
        computed first; the assignments that follow cannot fail. Saved values are freed unless
        retain_graph. Returns the captured gradients."""
        create_graph, staged = self.create_graph, self._staged
        updates = [(t, t._grad_update(g, create_graph)) for t, g in staged.values()]
        if current().capture is not None:     # compile() is recording: how each .grad changes
            current().capture.accumulated(staged.values(), updates)
        for t, update in updates:
            t._grad_commit(update)
        if not self.retain_graph:
            release_nodes(self._ran)
        for o in self._observers:
            o.finish(staged)
        return self._captured
