"""``explain(f, x)``: the chain rule for df/dx written out, one line per path from f to x.

Every path from ``f``'s node down to ``x`` is a product of local derivatives,
one per node on the way; the gradient is the sum over paths. For scalars
each factor is a number (``df/dw1 = df/dk * dk/dq * dq/dw1 = 60.75 * (-1.5) *
4.0 = -364.5``). For tensors a factor is a Jacobian, so each path is shown as
the vector-Jacobian products along it (the gradient as it leaves each node),
summarized, and exactly for one element of ``x`` with ``element=``.

The numbers come from the nodes' own backward functions (each node applied to
the gradient along the path), so they are what ``backward()`` computes, and
the paths add up to ``grad(f, x)``. After a ``backward()`` freed the values the
nodes saved, f's graph is made again by a recorded replay at the current values
(``core/replay.py``), which gives the same numbers as long as nothing f was
computed from has changed since (checked: f's value must come out bit for bit).
"""
from __future__ import annotations

import autodsl.backend as backend
from autodsl.core import grad_mode
from autodsl.core.html import RichDisplay, pre, table
from autodsl.core.node import AccumulateGrad
from autodsl.source import pos_text
from autodsl.core.rules import LiveOutputs, enclosed
from autodsl.core.quiet import ieee
from autodsl.core.trace import node_labels, tracing
from autodsl.core.watch import quiet
from autodsl.names import caller_namespace
from autodsl.errors import AutogradError, IndexError_, TypeError_, ValueError_
from autodsl.context import current
from autodsl.names import names_by_id
from autodsl.core.tensor import Tensor
from autodsl.textfmt import format_array, format_number
from autodsl.core.autograd import grad
from autodsl.core import replay
from autodsl.core.words import shown

__all__ = ["explain", "Explanation", "PathTerm"]

_MAX_LISTABLE = 10_000     # more paths than this: do not suggest listing them all
_MAX_FACTORS = 24          # a longer path is shown by its first and last _KEEP factors
_KEEP = 10


class PathTerm:
    """One path from f to x: ``names`` (f, the intermediates, x), ``factors`` (the local
    derivatives as host scalars when everything on the path is a scalar, else None),
    ``flows`` (the gradient leaving each node along the path, host arrays) and
    ``contribution`` (this path's share of df/dx, a host array of x's shape)."""

    def __init__(self, names, factors, flows, contribution):
        self.names = names
        self.factors = factors
        self.flows = flows
        self.contribution = contribution


class Explanation(RichDisplay):
    """The result of ``explain``; ``str()`` is the written-out chain rule.

    ``paths``: the PathTerms shown; ``n_paths``: how many paths there are in all;
    ``total``: df/dx (a host array), the sum over every path; ``hooks``: the labels of the
    nodes on those paths with tensor hooks (``register_hook``), which backward runs and the
    paths do not (``total`` is then backward's value, with the hooks).
    """

    LANG_ATTRIBUTES = frozenset({"n_paths", "total"})

    def __init__(self, f_name, x_name, paths, n_paths, total, element, x_shape, hooks=()):
        self.hooks = list(hooks)
        self.f_name = f_name
        self.x_name = x_name
        self.paths = paths
        self.n_paths = n_paths
        self.total = total
        self.element = element
        self.x_shape = x_shape
        self.x_after_f = False      # x was computed after f (`explain(f, w[0])`): f cannot use it

    def __str__(self) -> str:
        d = f"d{_wrap(self.f_name)}/d{_wrap(self.x_name)}"
        scalar = all(p.factors is not None for p in self.paths)
        if self.n_paths == 0:
            why = f"why({self.x_name})" if self.x_name.isidentifier() else "why(x)"
            bw = f"{self.f_name}.backward()" if self.f_name.isidentifier() else "f.backward()"
            if self.x_after_f:
                return (f"{d} = 0: {self.x_name} was computed after {self.f_name}, so {self.f_name} cannot "
                        "depend on it" + ("; for one element of a tensor w, use explain(f, w, element=[0])"
                                          if self.x_after_f == "indexed" else ""))
            return (f"{d} = 0: no path leads from {self.f_name} to {self.x_name} "
                    f"({why} after {bw} tells where the graph breaks)")
        lines = []
        if scalar:
            for k, p in enumerate(self.paths, 1):
                if len(p.names) == 1:
                    lines.append(f"{d} = 1 ({self.f_name} is {self.x_name} itself)")
                    continue
                head = f"path {k}: " if self.n_paths > 1 else ""
                # `[operand i]` marks the edge into a name, so only where the name is a denominator
                chain = _join([f"d{_wrap(_bare(a))}/d{_wrap(b)}" for a, b in zip(p.names, p.names[1:])], " * ")
                if len(p.factors) == 1:     # one local derivative: nothing to multiply out
                    what = "" if chain == d else f" = {chain}"
                    lines.append(f"{head}{d}{what} = {_short(_scalar(p.contribution))}")
                    continue
                nums = _join([_num(v) for v in p.factors], " * ")
                lines.append(f"{head}{d} = {chain}")
                lines.append(" " * len(head) + " " * len(d) + f" = {nums}")
                lines.append(" " * len(head) + " " * len(d) + f" = {_short(_scalar(p.contribution))}")
        else:
            el = "" if self.element is None else f"[{', '.join(map(str, self.element))}]"
            lines.append(f"{d}{el}, with {self.x_name} of shape {self.x_shape}: each path's factors are "
                         "Jacobians; shown is the gradient as it leaves each node on the path")
            for k, p in enumerate(self.paths, 1):
                lines.append(f"path {k}: " + _join(p.names, " -> "))
                steps = list(zip(p.names[1:], p.flows))
                if len(steps) > _MAX_FACTORS:
                    cut = len(steps) - 2 * _KEEP
                    steps = steps[:_KEEP] + [(None, cut)] + steps[-_KEEP:]
                for name, flow in steps:
                    if name is None:
                        lines.append(f"    ... ({flow} more nodes)")
                        continue
                    head = f"    into {name}: "
                    lines.append(head + _indent(_summary(flow), len(head)))
                share = p.contribution if self.element is None else p.contribution[self.element]
                head = f"    share of {d}{el}: "
                lines.append(head + _indent(_summary(share), len(head)))
        if self.n_paths > len(self.paths):
            more = self.n_paths - len(self.paths)
            more = more if more < 10 ** 15 else f"about 10^{len(str(more)) - 1}"
            hint = (f"explain(f, x, max_paths={self.n_paths}) lists all" if self.n_paths <= _MAX_LISTABLE
                    else "too many to list; the total below counts every one")
            lines.append(f"... and {more} more path{'s' if more != 1 else ''} ({hint})")
        total = self.total if self.element is None else self.total[self.element]
        el = "" if scalar or self.element is None else f"[{', '.join(map(str, self.element))}]"
        if self.hooks:
            head = f"{d}{el} = backward's value, with the hooks = "
            lines.append(head + _indent(_summary(total), len(head)))
            lines.append(f"(tensor hooks (register_hook) on {', '.join(self.hooks)} change the gradient "
                         "that flows through them; the paths above are without the hooks)")
        elif self.n_paths > 1 or not scalar:
            what = ("the sum over all paths" if self.n_paths == len(self.paths)
                    else "the sum over all paths (also those not shown)")
            if self.n_paths == 1:
                what = "the one path's share"
            shares = " + ".join(_num(_scalar(p.contribution)) for p in self.paths) if scalar and \
                self.n_paths == len(self.paths) else None
            head = f"{d}{el} = {what}" + (f" = {shares}" if shares else "") + " = "
            lines.append(head + _indent(_summary(total), len(head)))
        return "\n".join(lines)

    __repr__ = __str__

    def _repr_html_(self) -> str:
        """A table of the paths when every factor is a number (the path, its chain rule, the
        local derivatives, its share), with the total below; the text otherwise."""
        scalar = self.paths and all(p.factors is not None and len(p.names) > 1 for p in self.paths)
        if not scalar or self.hooks:
            return pre(str(self), css_class="autodsl-explain")
        d = f"d{_wrap(self.f_name)}/d{_wrap(self.x_name)}"
        rows = []
        for k, p in enumerate(self.paths, 1):
            chain = _join([f"d{_wrap(_bare(a))}/d{_wrap(b)}" for a, b in zip(p.names, p.names[1:])], " * ")
            rows.append([str(k), _join([_bare(n) for n in p.names], " -> "), chain,
                         _join([_num(v) for v in p.factors], " * "), _short(_scalar(p.contribution))])
        footer = []
        if self.n_paths > len(self.paths):
            footer.append(f"... and {self.n_paths - len(self.paths)} more paths (explain(f, x, "
                          "max_paths=...) lists more); the total counts every one")
        shares = " + ".join(_num(_scalar(p.contribution)) for p in self.paths)
        total = _short(_scalar(self.total))
        footer.append(f"{d} = {total}" if len(self.paths) == 1 or self.n_paths > len(self.paths)
                      else f"{d} = {shares} = {total}")
        return table(["path", "through", "chain rule", "local derivatives", "share"], rows,
                     caption=f"{d}: one term per path, the product of the local derivatives along it",
                     footer=footer, css_class="autodsl-explain")


def explain(f, x, element=None, names=None, max_paths: int = 16) -> Explanation:
    """The chain rule for df/dx written out, with the user's names for intermediates.

    ``f``: a scalar tensor (any dtype that requires grad), before or after ``backward()``
    (when a backward freed its saved values, its graph is evaluated again at the current
    values of its leaves, which must not have changed since f was computed). ``x``: a tensor
    that ``f`` depends on (a leaf or an intermediate). ``element``: an index into ``x``
    (``[0, 1]``) to see each path's share of that element; without it a tensor's paths
    are summarized. ``names``: {name: tensor} (a Session supplies its variables; from
    Python, the caller's variables are used).
    ``max_paths``: how many paths to list (the total is always over every path).

    The paths apply each node's backward without tensor hooks; when a node on them has a
    hook (``register_hook``), the total is backward's, with the hooks, and the text says so.

    Intermediates are named by the variable that holds them, else by their source
    text, else by their node (``<MulBackward#1>``).

    Returns an Explanation: printed, the chain rule; ``.total`` (df/dx, of x's shape: a
    NumPy array from Python, a tensor in the language) and ``.n_paths`` (how many paths
    lead from f to x) for programs; from Python also ``.paths`` (PathTerms).

    Raises TypeError_ for non-tensors, ValueError_ when f is not a scalar or does not
    require grad, IndexError_ for a bad ``element``, AutogradError when a backward freed
    the graph's saved values and a tensor f was computed from has changed since (an
    in-place update), or a node of the graph cannot be evaluated again.

    Example: ``explain(f, w1)``
    """
    if not isinstance(f, Tensor) or not isinstance(x, Tensor):
        raise TypeError_("explain(f, x) takes two tensors: f (a scalar) and x (what f depends on)")
    if f.requires_grad and f.grad_fn is None:
        raise ValueError_("explain(f, x): f is a leaf (made directly, not computed from other tensors), "
                          "so there is no chain rule to write out; explain a result computed from it")
    if not f.requires_grad or f.grad_fn is None:
        raise ValueError_("explain(f, x): f has no graph (it does not require grad); compute it from "
                          "tensors made with requires_grad=true")
    if f._data.size != 1:
        raise ValueError_(f"explain(f, x) needs a scalar f, but f has shape {f.shape}; "
                          "explain f.sum() or one element such as f[0]")
    if not x.requires_grad:
        raise ValueError_("explain(f, x): x does not require grad, so df/dx is not computed; "
                          "why(x) tells why")
    try:
        max_paths = max(int(max_paths), 1)
    except (TypeError, ValueError):
        raise TypeError_(f"explain(..., max_paths=) takes a whole number, not {shown(max_paths)}") from None
    if names is None and current().names is None:
        names = caller_namespace()       # the Python API: the caller's variables (as why())
    by_id = names_by_id(names)
    labels = node_labels([f.grad_fn], by_id)
    live = LiveOutputs()
    target = x._gradient_edge()
    if element is not None:
        element = _element(element, x.shape)

    f_name = _tensor_name(f, by_id) or _node_name(f.grad_fn, by_id, labels, live)
    x_name = _tensor_name(x, by_id) or (_node_name(x.grad_fn, by_id, labels, live) if x.grad_fn is not None
                                        else "x")
    root, f_now, x_now, orig = f.grad_fn, f, x, None
    reach = _reaching(root, target)
    if any(n._released for n in reach):         # a backward freed the saved values: make the graph again
        root, target, f_now, x_now, orig = _again(f, x, target, f_name)
        reach = _reaching(root, target)
    n_paths = _count_paths(root, target, reach)
    paths = []
    with grad_mode.no_grad(), ieee():
        seed = Tensor(backend.xp(f.device).ones(f._data.shape, dtype=f._data.dtype), _device=f.device)
        for route in _paths(root, target, reach, max_paths):
            paths.append(_term(route, seed, by_id, labels, live, orig))
        hooked = sorted((n for n in reach if n._pre_hooks), key=lambda n: -n.seq_nr)
        total = _total(f_now, x_now, n_paths, paths, with_hooks=bool(hooked))
    if orig:
        hooked = [orig.get(n, n) for n in hooked]
    for p in paths:
        if len(p.names) == 1:       # x is f itself: the empty path, df/df = 1
            p.names[0] = f_name
            continue
        mark = p.names[-1].rpartition(" [operand ")
        p.names[0] = f_name
        p.names[-1] = x_name + (" [operand " + mark[2] if mark[1] else "")
    e = Explanation(f_name, x_name, paths, n_paths, total, element, x.shape,
                    [_node_name(n, by_id, labels, live) for n in hooked])
    if n_paths == 0 and x.grad_fn is not None and x.grad_fn.seq_nr > f.grad_fn.seq_nr:
        e.x_after_f = "indexed" if x.grad_fn.name.startswith("Index") else True
    return e


# -- the graph between f and x ------------------------------------------------------------

def _reaching(root, target) -> set:
    """The nodes from which ``target`` can be reached (``target`` included), in O(V + E):
    the parents of every node below ``root``, then a walk up them from ``target``."""
    parents, seen, stack = {}, {root}, [root]
    while stack:
        node = stack.pop()
        for nxt in node.next_edges:
            if nxt is not None:
                parents.setdefault(nxt, []).append(node)
                if nxt not in seen:
                    seen.add(nxt)
                    stack.append(nxt)
    if target not in seen:
        return set()
    reach, stack = {target}, [target]
    while stack:
        for up in parents.get(stack.pop(), ()):
            if up not in reach:
                reach.add(up)
                stack.append(up)
    return reach


def _count_paths(root, target, reach) -> int:
    if root not in reach:
        return 0
    memo = {target: 1}
    stack = [(root, False)]
    while stack:
        node, done = stack.pop()
        if node in memo:
            continue
        kids = [n for n in node.next_edges if n is not None and n in reach]
        if done:
            memo[node] = sum(memo[n] for n in kids)
        else:
            stack.append((node, True))
            stack.extend((n, False) for n in kids if n not in memo)
    return memo[root]


def _paths(root, target, reach, limit):
    """Up to ``limit`` paths as lists of ``(node, input index)`` edges, depth first, in input order."""
    if root not in reach:
        return
    found = 0
    stack = [(root, None)]      # a route is a linked list ((node, i), rest), shared by siblings
    while stack and found < limit:
        node, link = stack.pop()
        if node is target:
            found += 1
            route = []
            while link is not None:
                route.append(link[0])
                link = link[1]
            route.reverse()
            yield route
            continue
        for i in reversed(range(len(node.next_edges))):
            nxt = node.next_edges[i]
            if nxt is not None and nxt in reach:
                stack.append((nxt, ((node, i), link)))


def _again(f, x, target, f_name):
    """(root, target, f, x, {new node: old}) of f's graph made again by a recorded replay at
    the current values (core/replay.py), whose nodes hold saved values again. Raises
    AutogradError when that does not give f's value: a tensor it came from changed since."""
    rep = replay.evaluate([f.grad_fn], record=True, keep=[target])
    f_now = rep.outputs[f.grad_fn]
    if not replay.same_values(f_now._data, f._data):
        raise AutogradError(
            f"explain needs the values inside {f_name}'s graph, which a backward freed, and evaluating that "
            f"graph again gives {_summary(backend.to_host(f_now._data))}, not {f_name}'s value "
            f"{_summary(backend.to_host(f._data))}: a tensor it was computed from changed since (an in-place "
            "update such as w -= lr * w.grad); call explain before changing it, or use "
            "backward(retain_graph=true)")
    fresh = rep.fresh
    x_now = rep.outputs[target] if x.grad_fn is not None and target in rep.outputs else x
    return fresh[f.grad_fn], fresh.get(target, target), f_now, x_now, {n: o for o, n in fresh.items()}


def _term(route, seed, by_id, labels, live, orig=None) -> PathTerm:
    g = seed
    flows, factors = [], []
    scalar = True
    for node, i in route:
        if node._released:
            raise AutogradError(
                f"explain needs the graph, but its saved values were freed by an earlier backward "
                f"({node.name}); call explain before backward(), or use backward(retain_graph=true)")
        outs = node.validate_outputs(node.apply(g), g)
        nxt = outs[i]
        if nxt is None:     # the node sends nothing this way (e.g. a constant exponent): zero
            shape = node.input_shapes[i]
            nxt = Tensor(backend.xp(g.device).zeros(shape, dtype=g._data.dtype), _device=g.device)
        if scalar and g._data.size == 1 and nxt._data.size == 1:
            gv = _scalar(backend.to_host(g._data))
            nv = _scalar(backend.to_host(nxt._data))
            factors.append(nv / gv if gv != 0 else _local(node, i, g))
        else:
            scalar = False
        flows.append(backend.to_host(nxt._data))
        g = nxt
    names = [None]
    for n, i in route:
        nxt = n.next_edges[i]
        name = _node_name(orig.get(nxt, nxt) if orig else nxt, by_id, labels, live)
        if n.next_edges.count(n.next_edges[i]) > 1:      # x * x: say which factor the path goes through
            name += f" [operand {i + 1}]"
        names.append(name)
    return PathTerm(names, factors if scalar else None, flows, backend.to_host(g._data))


def _local(node, i, like):
    """The local derivative d out/d input i of a scalar node: its backward applied to a one."""
    one = Tensor(backend.xp(like.device).ones(like._data.shape, dtype=like._data.dtype), _device=like.device)
    outs = node.validate_outputs(node.apply(one), one)
    return 0.0 if outs[i] is None else _scalar(backend.to_host(outs[i]._data))


def _total(f, x, n_paths, paths, with_hooks=False):
    if n_paths == len(paths) and not with_hooks:
        total = None
        for p in paths:
            total = p.contribution if total is None else total + p.contribution
        if total is None:
            return backend.to_host(backend.xp("cpu").zeros(x.shape))
        return total
    # neither traced nor recorded as the user's last backward (for why())
    with grad_mode.enable_grad(), tracing(False), quiet():
        (g,) = grad(f, [x], retain_graph=True, allow_unused=True)
    return backend.to_host(g._data) if g is not None else backend.to_host(backend.xp("cpu").zeros(x.shape))


# -- names ---------------------------------------------------------------------------------

def _tensor_name(t, by_id):
    return by_id.get(id(t))


def _node_name(node, by_id, labels, live) -> str:
    """The variable that holds ``node``'s output (``live``: Note [live outputs]), else the
    source text that made it, else its label."""
    if isinstance(node, AccumulateGrad):
        return by_id.get(id(node.variable)) or labels.get(node, "leaf")
    name = live.named_output(node, by_id)[1] if by_id else None
    if name is not None:
        return name
    if node.pos and node.pos[2] is not None:        # language source text
        text = pos_text(node.pos)
        if text and len(text) <= 40:
            return text
    return f"<{labels.get(node, node.name)}>"


def _bare(name: str) -> str:
    """A path name without its ``[operand i]`` mark."""
    return name.partition(" [operand ")[0]


def _wrap(name: str) -> str:
    base, mark, which = name.partition(" [operand ")
    if mark:
        return _wrap(base) + " [operand " + which
    return name if name.isidentifier() or name.startswith("<") or enclosed(name) else f"({name})"


# -- numbers -------------------------------------------------------------------------------

def _join(parts: list, sep: str) -> str:
    """``parts`` joined by ``sep``; a long path keeps its first and last _KEEP parts
    around ``... (N more) ...`` (the PathTerm keeps every factor)."""
    if len(parts) > _MAX_FACTORS:
        parts = parts[:_KEEP] + [f"... ({len(parts) - 2 * _KEEP} more) ..."] + parts[-_KEEP:]
    return sep.join(parts)


def _scalar(arr) -> float:
    return float(arr.reshape(-1)[0]) if hasattr(arr, "reshape") else float(arr)


def _num(v) -> str:
    s = _short(v)
    return f"({s})" if s.startswith("-") else s


def _short(v) -> str:
    """A number as a person writes it down: 60.75, -1.5, 0.877583 (6 significant digits)."""
    s = format_number(v)
    if len(s) > 10 and "e" not in s and s not in ("nan", "inf", "-inf"):
        s = f"{float(v):.6g}"
    return s


def _indent(text: str, n: int) -> str:
    return text.replace("\n", "\n" + " " * n)


def _summary(arr) -> str:
    if getattr(arr, "ndim", 0) == 0:
        return _short(_scalar(arr))
    if getattr(arr, "size", 1) <= 12:
        return format_array(arr)
    return f"shape {tuple(arr.shape)}, min {format_number(arr.min())}, max {format_number(arr.max())}, " \
           f"sum {format_number(arr.sum())}"


def _element(element, shape) -> tuple:
    if isinstance(element, int):
        element = (element,)
    try:
        element = tuple(int(e) for e in element)
    except (TypeError, ValueError):
        raise TypeError_("explain(..., element=) takes an index such as 0 or [0, 1]") from None
    if len(element) != len(shape) or any(not -n <= e < n for e, n in zip(element, shape)):
        raise IndexError_(f"element={list(element)} is not an index into x of shape {shape}")
    return element
