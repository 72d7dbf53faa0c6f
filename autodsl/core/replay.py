"""Replay: evaluate a recorded graph again, at new values of its leaves, without touching them.

Note [replay]: a node of an op keeps what running its forward again needs (DESIGN.md section
11): its op (the node's class), the op's parameters (``_params``), its constant inputs by
reference (``_consts``, read with ``const_entries``: the array of each input no edge supplies) and, through
``next_edges``, where every other input comes from: a leaf (its ``AccumulateGrad``) or the node
that made it. ``Op.rerun(inputs)`` runs one node's op again on new input tensors; ``evaluate``
runs every node between the roots and the leaves in creation order (``seq_nr``: an input's
node is always made before the node that uses it, so this is a topological order, and the
order of the original forward), from an explicit list: a 100,000-node chain needs no
recursion. A node's result is kept only until the last node that uses it has run.

What a replay cannot recompute: a value the graph holds as a constant although it was computed
from a leaf without the graph (a comparison such as ``x > 0``, a ``no_grad`` block, an integer
cast, a ``detach()`` or ``.data`` of the leaf) keeps the value it had when the graph was
recorded. ``fixed_inputs`` finds those (from what ``core/watch.py`` recorded where values left
the graph), so that callers can refuse or say so; numbers taken out of tensors (``item()``,
``tolist()``) are not found.
"""
from __future__ import annotations

import autodsl.backend as backend
from autodsl.context import current
from autodsl.core import grad_mode
from autodsl.core import watch
from autodsl.core.node import AccumulateGrad, const_entries
from autodsl.core.quiet import ieee
from autodsl.core.tensor import Tensor, array_from_data, new_tensor
from autodsl.errors import AutogradError, RuntimeError_, TypeError_, ValueError_
from autodsl.names import names_of
from autodsl.source import format_pos
from autodsl.core.words import kind as _words_kind

__all__ = ["replay", "evaluate", "value_kind", "Replayed", "graph_order", "dependents", "fixed_inputs", "FixedInput",
           "node_of", "same_values", "fixed_sentence"]


# -- the walk ------------------------------------------------------------------------------------

def graph_order(roots, cut=()) -> tuple[list, list]:
    """``(op nodes in creation order, leaf nodes)`` of everything reachable from ``roots``
    (nodes), not going below the nodes in ``cut`` (their values are given). A cut node counts
    as a leaf; AccumulateGrad nodes are leaves. Iterative: no recursion depth limit."""
    seen, ops, leaves = set(), [], []
    stack = [r for r in roots if r is not None]
    while stack:
        node = stack.pop()
        if node in seen:
            continue
        seen.add(node)
        if node in cut or isinstance(node, AccumulateGrad):
            leaves.append(node)
            continue
        ops.append(node)
        stack.extend(e for e in node.next_edges if e is not None and e not in seen)
    ops.sort(key=_seq)
    return ops, leaves


def _seq(node) -> int:
    return node.seq_nr


def dependents(ops, keys) -> set:
    """The nodes among ``ops`` (in creation order) whose value depends on a node in ``keys``,
    the keys included."""
    out = set(keys)
    for node in ops:
        for e in node.next_edges:
            if e is not None and e in out:
                out.add(node)
                break
    return out


class Replayed:
    """What ``evaluate`` returns: ``outputs`` ({node: Tensor}: each root's new value and those
    of the nodes asked to be kept) and, when recording, ``fresh`` ({node: its new node}: the
    graph made again, whose nodes hold their saved values)."""

    __slots__ = ("outputs", "fresh")

    def __init__(self, outputs, fresh):
        self.outputs = outputs
        self.fresh = fresh


def evaluate(roots, values=None, *, record: bool = False, keep=(), order=None) -> Replayed:
    """Run the graph below ``roots`` (nodes) again; the originals are not touched.

    ``values``: {node: Tensor}: the value to use for that node's output (an AccumulateGrad
    node: its leaf's new value; an op node: the graph is cut there). The leaves not given
    use their current data, constants their recorded arrays. Shapes may differ from the
    recorded ones wherever the ops allow (broadcasting: a batched replay).

    ``record``: False (the default): under no_grad, and no result requires grad. True: grad
    mode on, so the replay records a fresh graph whose nodes hold saved values again (for a
    backward after the first one freed them); its leaves are the original leaf tensors (the
    same AccumulateGrad nodes) and the given values; each new node keeps its original's source
    position and tensor hooks. ``keep``: nodes whose values to return too.
    ``order``: ``graph_order(roots, values)``, when the caller replays one graph many times.

    Returns a ``Replayed``. Raises AutogradError for a node that cannot run again (not one of
    autodsl's ops), and whatever an op raises on the new values (ShapeError, ...).
    """
    roots = list(roots)
    values = dict(values or {})
    if not record:      # under no_grad an input that requires grad would be noted as leaving the graph
        values = {n: (_plain(v) if v._requires_grad else v) for n, v in values.items()}
    ops, leaves = graph_order(roots, values) if order is None else order
    keep = set(keep) | set(roots)
    uses = {}
    for node in ops:
        for e in node.next_edges:
            if e is not None:
                uses[e] = uses.get(e, 0) + 1
    memo = {}
    for leaf in leaves:
        if leaf in values:
            memo[leaf] = values[leaf]
        else:
            var = leaf.variable
            memo[leaf] = var if record else _plain(var)
    fresh = {} if record else None
    ctx = current()
    old_pos = ctx.pos
    try:
        with grad_mode.set_grad_enabled(record), ieee():
            for node in ops:
                out = _rerun(node, memo, record, ctx)
                memo[node] = out
                if record:
                    new = out.grad_fn
                    if new is not None:
                        fresh[node] = new
                        new.pos = node.pos
                        if node._pre_hooks:
                            new._pre_hooks = node._pre_hooks
                for e in node.next_edges:       # a value goes once its last user has run
                    if e is not None:
                        left = uses[e] = uses[e] - 1
                        if left == 0 and e not in keep:
                            del memo[e]
    finally:
        ctx.pos = old_pos
    return Replayed({n: memo[n] for n in keep if n in memo}, fresh)


def _rerun(node, memo, record, ctx):
    edges = node.next_edges
    consts = const_entries(node)
    inputs = []
    for i, e in enumerate(edges):
        if e is not None:
            inputs.append(memo[e])
            continue
        arr = consts[i] if i < len(consts) else None
        if arr is None:     # pragma: no cover - every input is an edge or a constant (ops/registry.py)
            raise RuntimeError_(f"internal error: {node.name} has neither an edge nor a constant for its "
                                f"input {i}, so it cannot be evaluated again")
        inputs.append(new_tensor(arr, backend.device_of(arr)))
    if record and node.pos is not None:
        ctx.pos = node.pos          # the new node's position, without a walk of the frames
    return node.rerun(tuple(inputs))


def _plain(t: Tensor) -> Tensor:
    """A tensor with t's array and device, and nothing else (no history, no requires_grad)."""
    return new_tensor(t._data, t.device)


def same_values(a, b) -> bool:
    """True when backend arrays ``a`` and ``b`` hold the same shape and values, bit for bit
    (nan equal to nan): a replay at unchanged leaves gives exactly what the forward gave."""
    if a is b:
        return True
    ha, hb = backend.to_host(a), backend.to_host(b)
    if ha.shape != hb.shape or ha.dtype != hb.dtype:
        return False
    both = (ha == hb) | ((ha != ha) & (hb != hb))
    return bool(both.all())


# -- values the graph keeps fixed ----------------------------------------------------------------

class FixedInput:
    """An input of ``node`` (``index``; a parameter when ``param`` names it) that the graph holds
    as a constant although it was computed from a replayed value without the graph.
    ``kind``: "comparison", "no_grad", "integer_cast" or "detach"; ``op``: the op that made it;
    ``pos``: where (None for a detach); ``text``: a sentence part naming it."""

    __slots__ = ("node", "index", "param", "kind", "op", "pos", "text")

    def __init__(self, node, index, param, kind, op, pos, text):
        self.node, self.index, self.param = node, index, param
        self.kind, self.op, self.pos, self.text = kind, op, pos, text

    def __repr__(self) -> str:
        return f"FixedInput({self.node.name}, {self.kind}, {self.text})"


def fixed_inputs(roots, keys, ops=None) -> list:
    """The constants of the graph below ``roots`` that were computed from the nodes ``keys``
    (the ones a replay changes) without the graph, as ``FixedInput``s in creation order: the
    results of comparisons, no_grad code and integer casts (the records of ``core/watch.py``)
    and detach()/.data aliases of a key leaf's storage. A replay keeps them as they were.
    ``ops``: the op nodes of that graph, when the caller has them (``graph_order``)."""
    keys = set(keys)
    if not keys:
        return []
    if ops is None:
        ops, _ = graph_order(roots, keys)
    breaks = {}
    for brk in watch.all_breaks():
        for arr in brk.out_arrays():
            breaks[id(arr)] = (arr, brk)
    leaf_arrays = [(k, k.variable._data) for k in keys if isinstance(k, AccumulateGrad)]
    found = []
    for node in ops:
        consts = const_entries(node)
        arrays = [(i, None, c) for i, c in enumerate(consts) if c is not None]
        for name, v in (getattr(node, "_params", None) or {}).items():
            arrays.extend((None, name, a) for a in (v if isinstance(v, (tuple, list)) else (v,))
                          if hasattr(a, "shape") and hasattr(a, "dtype"))
        for i, name, arr in arrays:
            hit = breaks.get(id(arr))
            if hit is not None and hit[0] is arr and _reaches(hit[1].source_nodes(), keys):
                brk = hit[1]
                found.append(FixedInput(node, i, name, brk.kind, brk.op, brk.pos, _break_text(brk)))
            else:
                leaf = next((k.variable for k, a in leaf_arrays if arr is a or backend.may_share_memory(arr, a)),
                            None)
                if leaf is not None:
                    found.append(FixedInput(node, i, name, "detach", None, None,
                                            f"a detach() or .data of {_name(leaf, 'a leaf')}"))
    return found


def fixed_sentence(fx: FixedInput, fname: str) -> str:
    """``f`` uses ``x > 0`` ... as a constant: the sentence for a FixedInput (no full stop)."""
    at = format_pos(fx.node.pos, text=False)
    return (f"{fname} uses {fx.text} (an input of {fx.node.name}{f' at {at}' if at else ''}), which was "
            "computed without recording a graph: the graph holds it as a constant, so a replay does not "
            "recompute it")


def _reaches(sources, keys) -> bool:
    seen, stack = set(), list(sources)
    while stack:
        node = stack.pop()
        if node in keys:
            return True
        if node in seen:
            continue
        seen.add(node)
        stack.extend(e for e in node.next_edges if e is not None)
    return False


def _break_text(brk) -> str:
    what = {"comparison": f"the result of {brk.op}", "no_grad": "a value computed inside no_grad",
            "integer_cast": "an integer cast"}.get(brk.kind, f"the result of {brk.op}")
    at = format_pos(brk.pos)
    return what + (f" at {at}" if at else "")


# -- the public function -------------------------------------------------------------------------

def node_of(t: Tensor):
    """The graph node that stands for tensor ``t`` (its grad_fn, or its leaf's AccumulateGrad),
    or None when t has none (it requires no grad, or no recorded op has used it)."""
    return t.grad_fn if t.grad_fn is not None else t._accumulate


def replay(f, leaves=None, values=None, *, record=False) -> Tensor:
    """Evaluate f's recorded graph again at new values of some of its leaves, touching nothing.

    ``replay(f, [w1, b], [0.6, 2.0])`` (the language's form), or from Python also
    ``replay(f, {w1: 0.6, b: 2.0})``.

    ``f``: a tensor computed from tensors that require grad (its graph is kept even after a
    ``backward()`` freed its saved values). ``leaves``: {tensor: value}, or a list of tensors
    (or one tensor) with ``values`` a list of values (or one value) in the same order; each
    tensor is a leaf of f's graph that requires grad, or an intermediate result (the graph is
    then cut there). A value is a number, a nested list, an array or a tensor, converted to
    the tensor's dtype and device; its shape may differ from the tensor's wherever the ops
    broadcast (a batch of values). Leaves not given keep their current values; ``replay(f)``
    evaluates f again at the current values (after in-place updates, for example).

    Only the ops recorded in f's graph run again: a value computed from a given leaf without
    the graph (a comparison such as ``x > 0``, ``no_grad`` code, an integer cast, a
    ``detach()``) would keep its old value, so such a graph is refused; numbers taken out of
    tensors with ``item()`` are constants of the graph.

    ``record``: False: the result does not require grad. True: it has a fresh graph (from the
    same leaves, and from the given tensors as leaves), on which ``backward()`` works again.

    Returns a Tensor of f's dtype; its shape is f's, or the broadcast one for batched values.
    Raises TypeError_ (not tensors, or a value that is not a number, list, array or tensor),
    ValueError_ (a tensor that does not require grad or is not in f's graph, a value for a
    constant of the graph, lists of different lengths), AutogradError (f has no graph, or a
    node that is not one of autodsl's ops), and what the ops raise on the new values.

    Example: ``f = (w2*(w1*x^2+b))^3; replay(f, [w1, b], [0.6, 2.0])``
    """
    if not isinstance(f, Tensor):
        raise TypeError_(f"replay() takes a tensor computed from leaves that require grad first, not "
                         f"{value_kind(f)}; for example replay(f, [w1], [0.6])")
    pairs = _pairs(leaves, values)
    fname = _name(f, "f")
    given = {}
    for t, v in pairs:
        node = node_of(t)
        if node is None or not t._requires_grad:
            raise ValueError_(_not_in_graph(t, fname, constant=not t._requires_grad))
        given[node] = (t, v)
    root = f.grad_fn
    if root is None:
        node = node_of(f)
        if node is not None and node in given:           # f is one of the given leaves itself
            t, v = given[node]
            return _value(v, t, record)
        raise AutogradError(f"replay(): {fname} has no graph to evaluate again: it was not computed from "
                            "tensors that require grad; make its leaves with requires_grad=true and "
                            "compute it again")
    ops, leaf_nodes = graph_order([root], given)
    in_graph = set(ops) | set(leaf_nodes)
    for node, (t, _) in given.items():
        if node not in in_graph:
            raise ValueError_(_not_in_graph(t, fname))
    fixed = fixed_inputs([root], given, ops)
    if fixed:
        raise ValueError_(f"replay(): {fixed_sentence(fixed[0], fname)}; compute {fname} again from the "
                          "new values instead")
    new = {node: _value(v, t, record) for node, (t, v) in given.items()}
    out = evaluate([root], new, record=record).outputs[root]
    if not record and (getattr(root, "view", False) or getattr(root, "moves_device", False)):
        out = new_tensor(backend.copy(out._data), out.device)      # never a view of a leaf's storage
    return out


def _pairs(leaves, values) -> list:
    if leaves is None:
        if values is not None:
            raise TypeError_("replay(f, leaves, values): values were given without the tensors they are for")
        return []
    if isinstance(leaves, dict):
        if values is not None:
            raise TypeError_("replay(f, {w: value, ...}) takes the values in the dict; leave out the third "
                             "argument")
        pairs = list(leaves.items())
    elif isinstance(leaves, Tensor):
        pairs = [(leaves, values)]
    elif isinstance(leaves, (list, tuple)):
        if not isinstance(values, (list, tuple)):
            raise TypeError_("replay(f, [w1, b], [0.6, 2.0]): give the new values as a list, one per tensor")
        if len(values) != len(leaves):
            raise ValueError_(f"replay(): {len(leaves)} tensors but {len(values)} values; give one value "
                              "per tensor, in the same order")
        pairs = list(zip(leaves, values))
    else:
        raise TypeError_(f"replay(f, leaves, values): leaves must be a list of tensors (or a dict from "
                         f"tensors to values), not {value_kind(leaves)}")
    for t, _ in pairs:
        if not isinstance(t, Tensor):
            raise TypeError_(f"replay(): the values are for tensors of f's graph, but one key is {value_kind(t)}; "
                             "give the tensors themselves: replay(f, [w1, b], [0.6, 2.0])")
    return pairs


def _value(v, like: Tensor, record: bool) -> Tensor:
    """``v`` as a tensor of ``like``'s dtype and device (a tensor that fits is used as it is)."""
    dt, device = like.dtype, like.device
    if isinstance(v, Tensor):
        if v.dtype is dt and v.device == device:
            # recording: a tensor that requires grad is the fresh graph's leaf itself (its .grad
            # fills on backward); never change the caller's tensor
            t = v if record and v._requires_grad else _plain(v)
        else:
            arr = v._data if v.device == device else backend.to_host(v._data)
            t = new_tensor(backend.asarray(arr, dt, device), device)
    elif isinstance(v, backend.HOST_BOOL) or v is None or isinstance(v, str):
        raise TypeError_(f"replay(): a new value must be a number, a list of numbers or a tensor, not "
                         f"{value_kind(v)}")
    elif isinstance(v, (list, tuple)):
        t = new_tensor(array_from_data(v, dt, device), device)
    elif isinstance(v, backend.HOST_INT + backend.HOST_FLOAT) or backend.is_host_array(v):
        t = new_tensor(backend.asarray(v, dt, device), device)
    else:
        raise TypeError_(f"replay(): a new value must be a number, a list of numbers or a tensor, not "
                         f"{value_kind(v)}")
    if record and not t._requires_grad and dt.is_floating:
        t._requires_grad = True         # a new leaf of the fresh graph
    return t


def _name(t, default: str) -> str:
    names = names_of(t)
    return f"`{names[0]}`" if names else default


def _not_in_graph(t, fname, constant=False) -> str:
    who = _name(t, "a tensor")
    if constant:
        return (f"replay(): {who} does not require grad, so {fname}'s graph holds its values as a constant "
                "that a replay cannot change; make it with requires_grad=true and compute "
                f"{fname} again")
    return (f"replay(): {who} is not in {fname}'s graph ({fname} was not computed from it, or it was "
            f"made after {fname}); give new values only to tensors {fname} depends on")


def value_kind(v) -> str:
    """The kind of a Python value in the language's words ("a number", "none", ...)."""
    return _words_kind(v)
