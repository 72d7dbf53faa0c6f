"""Graph nodes: the backward functions that the engine runs.

A ``Node`` is the ``grad_fn`` of a tensor made by an op. It holds
``next_edges`` (one per op input: the node that input's gradient goes to, or
None when that input needs no gradient), a ``seq_nr`` (creation order, used by
the engine for a deterministic order), the shapes and dtypes of the inputs
(the engine reduces broadcast gradients back to them), and its saved tensors,
each stamped with the version it had when saved.

A leaf that requires grad gets one ``AccumulateGrad`` node, which is where
its gradients end up.
"""
from __future__ import annotations

import itertools
import re
import sys

try:
    import cython
except ImportError:
    from autodsl._pure import cython

from autodsl.source import SOURCE_POS, caller_pos, format_pos, pos_text
from autodsl.backend import device_of, kind_of
from autodsl.context import current
from autodsl.core.journal import record_attrs, record_items
import autodsl.names as _names
from autodsl.names import names_of
from autodsl.errors import AutogradError, DeviceError, DTypeError, ShapeError, TypeError_
from autodsl.core.words import kind as value_kind
from autodsl.core.tensor_fields import TensorFields
from autodsl.core.grad_sums import as_gradient

__all__ = ["Node", "AccumulateGrad", "dependency_counts", "SavedTensor", "SavedOutput", "saved_constant", "next_seq_nr", "RemovableHandle",
           "write_record", "release_nodes", "saved_entries", "add_saved", "const_entries"]

_seq = itertools.count()
next_seq_nr = _seq.__next__


class SavedTensor:
    """A tensor saved for backward, with the version it had when saved.

    Note [saved tensor versions]: every tensor shares a version counter with
    its views and detached aliases; each in-place write bumps it. If the
    counter moved between save and backward, the value backward would read is
    not the value forward used, so unpacking fails and names the node.

    Note [saved inputs]: a plain op result (a ``Tensor`` with a grad_fn, not a
    view) is kept as its array, version counter and grad_fn, not as the Tensor
    object: in a chain ``y = sin(y)`` that object was a sixth of each node's
    memory (W5), held only for this. ``unpack`` makes an equivalent tensor
    (the same storage, counter and history), as PyTorch does for a saved
    output. A leaf (its identity is where its gradient goes), a view (it knows
    its base) and any other tensor are kept as they are. ``held`` is the kept
    tensor, or the grad_fn when ``data`` is set.

    Note [bare constants]: a Python float beside a 0-d float64 tensor (``x * 0.5``, W3's
    ``x * c``) gets no Tensor in the 0-d lane of ``apply``, only its array; what a node saves
    of it is that array, with ``held`` None (no history) and a version that never moves
    (``saved_constant``). The array is shared by every node of that value, so ``unpack`` gives
    a tensor of a copy, which does not require grad.
    """

    __slots__ = ("held", "version", "data", "counter")

    @cython.locals(tensor=TensorFields)
    def __init__(self, tensor):
        counter = tensor._version
        self.version = counter[0]
        if tensor.grad_fn is not None and tensor._base is None and tensor._views is None \
                and tensor._alias is None and type(tensor) is _names.TENSOR_TYPES[0]:
            self.held = tensor.grad_fn
            self.data = tensor._data
            self.counter = counter
        else:
            self.held = tensor
            self.data = self.counter = None

    @property
    def tensor(self):
        """The tensor kept as it is, or None where only its array and history are."""
        return self.held if self.data is None else None

    @cython.locals(t=TensorFields)
    def unpack(self, node: "Node", index: int):
        data = self.data
        if data is None:
            t = self.held
            _check_version(node, index, t._version, self.version, t._data.shape, tensor=t)
            return t
        if self.held is None:       # a bare constant (Note [bare constants]): the caller's own copy
            return _names.TENSOR_TYPES[0](data.copy(), _device=device_of(data))
        t = _names.TENSOR_TYPES[0](data, _device=device_of(data))
        t._version = self.counter
        t.grad_fn = self.held
        t._requires_grad = True
        _check_version(node, index, self.counter, self.version, data.shape, tensor=t, data=data)
        return t

    @cython.locals(t=TensorFields)
    def unpack_array(self, node: "Node", index: int):
        data = self.data
        if data is None:
            t = self.held
            if t._version[0] != self.version:
                _check_version(node, index, t._version, self.version, t._data.shape, tensor=t)
            return t._data
        if self.counter[0] != self.version:
            self.unpack(node, index)        # raises, naming the tensor
        return data


_NEVER_WRITTEN = (0,)     # a bare constant's version counter: nothing can write it


@cython.locals(s=SavedTensor)
def saved_constant(arr) -> SavedTensor:
    """What a node saves of a bare constant's array ``arr`` (Note [bare constants])."""
    s = SavedTensor.__new__(SavedTensor)
    s.held = None
    s.data = arr
    s.counter = _NEVER_WRITTEN
    s.version = 0
    return s


class SavedOutput:
    """A node's own output, saved without the Tensor object.

    Note [saved outputs]: keeping the output Tensor would make a reference
    cycle (output -> grad_fn -> saved output), so graphs would wait for the
    cyclic GC instead of being freed when the last tensor goes. Like PyTorch,
    keep the values and the version counter, and rebuild an equivalent tensor
    (same storage, same history: grad_fn is this node) when backward needs it.
    """

    __slots__ = ("data", "counter", "version", "device", "cls")

    @cython.locals(tensor=TensorFields)
    def __init__(self, tensor):
        self.data = tensor._data
        self.counter = tensor._version
        self.version = tensor._version[0]
        self.device = tensor.device
        self.cls = type(tensor)

    def unpack_array(self, node: "Node", index: int):
        if self.counter[0] != self.version:
            _check_version(node, index, self.counter, self.version, self.data.shape, data=self.data)
        return self.data

    def unpack(self, node: "Node", index: int):
        _check_version(node, index, self.counter, self.version, self.data.shape, data=self.data)
        t = self.cls(self.data, _device=self.device)
        t._version = self.counter
        t.grad_fn = node
        t._requires_grad = True
        return t


def write_record(counter):
    """``(version after the write, pos)`` of the last recorded in-place write, or None
    (``core.watch.note_write`` keeps it as the counter's second element)."""
    return counter[1] if len(counter) > 1 else None


def _check_version(node, index, counter, version, shape, tensor=None, data=None):
    if counter[0] != version:
        raise AutogradError(_version_message(node, counter, version, shape, tensor, data))


def _version_message(node, counter, version, shape, tensor, data) -> str:
    """The version error, for people: the variable (when a Session can name it), the node that
    saved it and where, the in-place write that changed it and where, both versions, the fix."""
    names = names_of(tensor, counter, data)
    facts = [f"shape {tuple(shape)}"]
    if tensor is None:
        facts.append(f"the output of {node.name}")
    if len(names) > 1:
        facts.append(", ".join(f"`{n}`" for n in names[1:4]) + (" shares" if len(names) == 2 else " share")
                     + " its storage")
    what = (f"`{names[0]}`" if names else "a tensor") + f" ({'; '.join(facts)})"
    at = format_pos(node.pos)
    saved = f"{node.name}{f' (made at {at})' if at else ''} saved it at version {version}"
    rec = write_record(counter)
    now = counter[0]
    written = pos_text(rec[1]) if rec is not None and rec[1] is not None else None
    if rec is not None and rec[1] is not None:
        wrote = format_pos(rec[1])
        if rec[0] == now:
            change = f"the in-place write at {wrote} changed it to version {now}"
        else:
            change = (f"the last in-place write I know of, at {wrote}, changed it to version {rec[0]}; "
                      f"it is now at version {now}")
    else:
        change = f"an in-place write changed it to version {now}"
    m = _AUGMENTED.match(written or "")
    if tensor is not None and tensor._requires_grad and tensor.grad_fn is None:
        # a leaf that requires grad is written in place only under no_grad (a parameter update):
        # `w = w - lr * g` there would rebind w to a tensor that no longer requires grad
        fix = f"Call backward() before updating {f'`{names[0]}`' if names else 'it'} in place"
    elif m:
        target, op, value = m.groups()
        fix = f"Write it out of place (`{target} = {target} {op} {value}` instead of `{target} {op}= {value}`)"
    else:
        fix = "Write into a copy instead (clone() it first)"
    if tensor is not None:      # an input: the op can be given a copy instead
        where = f" at {format_pos(node.pos, text=False)}" if at else ""
        fix += f", or give the op{where} a copy ({f'{names[0]}.clone()' if names else 'clone() it'})"
    return (f"{what} was modified in place after {node.name} saved it for backward: {saved}, and "
            f"{change}. {fix}, so that the write does not change what backward needs")


_AUGMENTED = re.compile(r"^\s*([A-Za-z_][A-Za-z0-9_.]*)\s*([-+*/])=\s*(.+?)\s*;?\s*$")


class Node:
    """A backward function in the graph (the ``grad_fn`` of a non-leaf tensor).

    Subclasses set ``name`` (``MulBackward``) and implement ``apply(grad)``,
    which takes the gradient of the node's output (a Tensor) and returns one
    gradient per entry of ``next_edges`` (Tensor or None).
    """

    name = "Node"
    # ``_saved``: the saved tensors; ``_released``: a backward freed them; ``_retained``: the
    # non-leaf outputs that called retain_grad(); ``_pre_hooks``: tensor hooks
    # (``register_hook``), run on the summed gradient before the node uses it: None, or
    # {handle id: (hook, what it is on)} in registration order.
    __slots__ = ("next_edges", "seq_nr", "input_shapes", "input_dtypes", "pos", "_saved", "_released",
                 "_retained", "_pre_hooks", "__weakref__")

    def __init__(self):
        self.next_edges = ()
        self.seq_nr = next_seq_nr()
        self.input_shapes = ()
        self.input_dtypes = ()
        self.pos = SOURCE_POS.get() or caller_pos()
        self._saved = None
        self._released = False
        self._retained = None   # the non-leaf outputs that called retain_grad()
        self._pre_hooks = None

    # -- saved tensors ---------------------------------------------------------
    def save_for_backward(self, *tensors) -> None:
        """Keep ``tensors`` (Tensors or None) for backward, stamped with their versions."""
        if len(tensors) == 1 and tensors[0] is not None:
            self._saved = SavedTensor(tensors[0])      # (bare, not in a tuple: Note [node memory])
        elif len(tensors) == 2:         # (the usual pair spelled out: no generator to run)
            a, b = tensors
            self._saved = (None if a is None else SavedTensor(a), None if b is None else SavedTensor(b))
        else:
            self._saved = tuple(None if t is None else SavedTensor(t) for t in tensors)

    @property
    def saved_tensors(self) -> tuple:
        """The saved tensors, after checking that none was modified in place.

        Raises AutogradError when the graph was freed by an earlier backward
        (the fix: ``retain_graph=true``) or when a saved tensor changed.
        """
        if self._released:
            raise AutogradError(
                f"tried to run backward through {self.name} a second time, but its saved values "
                f"were freed by the first backward; pass retain_graph=true to the first backward "
                f"(or to grad()) if you need to backward twice through the same graph")
        saved = self._saved
        if saved is None:
            return ()
        if type(saved) is not tuple:
            return (saved.unpack(self, 0),)
        return tuple(None if s is None else s.unpack(self, i) for i, s in enumerate(saved))

    @property
    def saved_arrays(self) -> tuple:
        """The saved values as backend arrays (None where nothing was saved), after the same
        checks as ``saved_tensors``: what a formula computes on without create_graph."""
        if self._released:
            return self.saved_tensors       # raises the retain_graph error
        saved = self._saved
        if saved is None:
            return ()
        if type(saved) is not tuple:    # (the usual counts spelled out: this runs for every node of a backward)
            return (saved.unpack_array(self, 0),)
        if len(saved) == 1:
            s = saved[0]
            return (None if s is None else s.unpack_array(self, 0),)
        if len(saved) == 2:
            s, t = saved
            return (None if s is None else s.unpack_array(self, 0), None if t is None else t.unpack_array(self, 1))
        return tuple(None if s is None else s.unpack_array(self, i) for i, s in enumerate(saved))

    def release(self) -> None:
        """Free saved tensors (after a backward without retain_graph)."""
        if self._saved is not None:
            self._saved = None
            self._released = True

    @cython.locals(g=TensorFields, og=TensorFields)
    def validate_outputs(self, outs, g):
        """What ``apply(g)`` returned, as one gradient per edge reduced to each input's shape and
        cast to its floating dtype (PyTorch's validate_outputs: ops never un-broadcast).
        Raises AutogradError for a gradient that cannot be reduced to its input's shape."""
        if type(outs) is not tuple:
            outs = tuple(outs) if isinstance(outs, list) else (outs,)
        edges = self.next_edges
        if len(outs) != len(edges):
            raise AutogradError(f"internal error: {self.name} returned {len(outs)} gradients for {len(edges)} inputs")
        fixed = None
        dts = self.input_dtypes                # None: every input has the output's dtype
        shapes = self.input_shapes
        gdt = g._data.dtype
        for i, og in enumerate(outs):
            if og is None or edges[i] is None:
                continue
            shape = shapes[i]
            d = og._data
            if d.shape == shape and d.dtype == (gdt if dts is None else dts[i]):
                continue            # (the usual gradient: nothing to reduce or cast)
            if d.shape != shape:
                try:
                    og = og.sum_to_size(shape)
                except Exception as e:  # noqa: BLE001
                    raise AutogradError(
                        f"{self.name} produced a gradient of shape {og.shape} for its input {i}, "
                        f"which has shape {shape}, and it cannot be reduced to it") from e
                fixed = fixed or list(outs)
                fixed[i] = og
            dt = gdt if dts is None else dts[i]     # the input's array dtype
            if og._data.dtype != dt and kind_of(dt) == "f":
                fixed = fixed or list(outs)
                fixed[i] = og.to(dtype=dt)
        return tuple(fixed) if fixed else outs

    # -- public view -------------------------------------------------------------
    @property
    def next_functions(self) -> tuple:
        """PyTorch's view of the edges: ``((node, 0), ...)``, None where no gradient flows."""
        return tuple((n, 0) if n is not None else (None, 0) for n in self.next_edges)

    def apply(self, grad):  # pragma: no cover - every subclass overrides it
        raise NotImplementedError

    def evaluate(self, grad, floats=False):
        """What the engine runs for this node in a backward without create_graph: ``apply``
        and then ``validate_outputs`` (one gradient per edge, of its input's shape and dtype).
        An op's 0-d float64 formula skips the check, whose answer it knows, and takes and sends
        Python floats where ``floats`` allows (Note [float gradients], core/grad_sums.py); any
        other node gets a float gradient as the Tensor it stands for."""
        grad = as_gradient(grad)
        return self.validate_outputs(self.apply(grad), grad)

    def rerun(self, inputs: tuple):
        """The forward of this node again on ``inputs`` (Tensors), for a replay of the graph.
        Raises AutogradError: a node that is not an op's (a custom one) cannot run again."""
        raise AutogradError(f"{self.name} cannot be evaluated again (it is not one of autodsl's ops); "
                            "call the function that computes the tensor instead")

    # -- hooks (Note [tensor hooks]) ---------------------------------------------------
    def register_prehook(self, hook, what: str | None = None) -> "RemovableHandle":
        """Call ``hook(grad)`` on the gradient summed for this node, before the node uses it.

        ``what`` names the tensor in messages (default: the node's name).
        Returns a handle whose ``remove()`` unregisters the hook.
        """
        hooks = self._pre_hooks
        if hooks is None:
            record_attrs(self, "_pre_hooks")     # an interrupted input's hook goes with it
            hooks = self._pre_hooks = {}
        else:
            record_items(hooks)
        what = what or self.name
        handle = RemovableHandle(hooks, hook, what)
        hooks[handle.id] = (hook, what)
        return handle

    def run_pre_hooks(self, grad, observers=()):
        """Run the hooks in registration order; each gets the gradient so far and may return
        a replacement (a tensor of the same shape, dtype and device) or None (keep it).

        Returns the gradient the node then uses. ``observers`` (the pass's) are told
        when a hook replaced the gradient. Raises whatever a hook raises, and
        TypeError_/ShapeError/DTypeError/DeviceError for a replacement that does not fit.
        """
        before = grad
        for hook, what in tuple(self._pre_hooks.values()):
            out = hook(grad)
            if out is not None:
                grad = _check_hook_result(f"the hook {_hook_name(hook)} on {what}", grad, out)
        if grad is not before:
            for o in observers:
                o.hooked(self, before)
        return grad

    def __repr__(self) -> str:
        return f"<{self.name}>"


# Note [node memory]
# A recorded graph is mostly nodes (W5: a million-op chain), so what a node costs is
# counted. An op node holds its edges, interned input shapes (one tuple serves every node
# with the same shapes), its position, and what it saved; it holds no reference to its output
# (Note [live outputs], core/rules.py) and keeps a 0-d output's array only. Its two flags
# (``_released``, ``_record``) are C ints side by side in the compiled build, and ``seq_nr``
# a C integer: there an op node is 128 bytes of struct, 144 with the collector's header. One
# saved value is kept bare in ``_saved`` (a SavedTensor or SavedOutput, not a 1-tuple: 48
# bytes less per node); more than one as a tuple with None where an input was not needed.
# Readers that do not run per node use ``saved_entries``.

def saved_entries(node) -> tuple:
    """``node``'s saved values as a tuple (SavedTensor, SavedOutput or None each; empty when
    nothing is saved or a backward freed them), however ``_saved`` holds them."""
    saved = getattr(node, "_saved", None)      # (a node made outside apply may lack it)
    if saved is None:
        return ()
    return saved if type(saved) is tuple else (saved,)


def const_entries(node) -> tuple:
    """The arrays of ``node``'s inputs that no edge supplies (an op's ``_consts``), one entry
    per edge (None where an edge does); empty when there are none. A node of two inputs keeps
    its one constant bare (no tuple: Note [trace records], core/step_log.py), at the index of
    its edge that leads nowhere."""
    consts = getattr(node, "_consts", None)
    if consts is None:
        return ()
    if type(consts) is tuple:
        return consts
    return (consts, None) if node.next_edges[0] is None else (None, consts)


def add_saved(node, value) -> None:
    """Keep one more saved value (a SavedOutput: an op that saves its output) on ``node``."""
    saved = node._saved
    node._saved = value if saved is None else saved_entries(node) + (value,)


def dependency_counts(roots) -> dict:
    """``{node: how many edges point at it}`` over the graph reachable from ``roots`` (Node
    objects), roots included where an edge reaches them: the engine's counts (Note [why
    counting], core/engine.py), and the trace's, made again from the same graph when its
    steps are read (a graph's edges never change)."""
    # the counts are the seen set too: a set of every node beside them was a third of the
    # pass's own memory on a long chain (W5)
    deps, stack = {}, list(roots)
    start = set(stack)
    while stack:
        for nxt in stack.pop().next_edges:
            if nxt is not None:
                d = deps.get(nxt, 0)
                deps[nxt] = d + 1
                if d == 0 and nxt not in start:
                    stack.append(nxt)
    return deps


def release_nodes(nodes) -> None:
    """Free the saved values of the nodes a backward ran (without retain_graph). An open undo
    journal saves them first, so that an undone backward leaves its graph usable again."""
    log = current().journal
    if log is not None:
        for node in nodes:
            record_attrs(node, "_saved", "_released", log=log)
    for node in nodes:
        node.release()


# Note [tensor hooks]
# As in PyTorch, ``x.register_hook(fn)`` puts fn on the node x's gradient goes to:
# its grad_fn for a non-leaf (so what fn returns is what flows on; a retain_grad()
# .grad sees it too), its AccumulateGrad for a leaf (so fn runs before .grad is
# accumulated, and on what grad() captures). The engine calls ``run_pre_hooks`` once
# per node, on the summed gradient: a tensor used twice gets its hook called once.
# A hook registered before an in-place op stays with the old node, as in PyTorch.

def _hook_name(hook) -> str:
    name = getattr(hook, "name", None) or getattr(hook, "__name__", None) or "hook"
    return "a lambda" if name == "<lambda>" else f"`{name}`"


def _check_hook_result(who: str, grad, out):
    """What a hook returned, checked against the gradient it got (PyTorch's check_single_result)."""
    if not isinstance(out, type(grad)):
        kind = "a number" if isinstance(out, (bool, int, float)) else value_kind(out)
        raise TypeError_(f"{who} returned {kind}; a hook must return a tensor of the gradient's "
                         f"shape {tuple(grad._data.shape)} to replace the gradient, or none to keep it")
    if out._data.shape != grad._data.shape:
        raise ShapeError(f"{who} returned a tensor of shape {tuple(out._data.shape)}, but the gradient "
                         f"has shape {tuple(grad._data.shape)}; a hook may change the values, not the shape")
    if out._data.dtype != grad._data.dtype:
        raise DTypeError(f"{who} returned a {out._data.dtype} tensor, but the gradient is "
                         f"{grad._data.dtype}; convert it with .to(dtype=...) before returning it")
    if out.device != grad.device:
        raise DeviceError(f"{who} returned a tensor on {out.device}, but the gradient is on "
                          f"{grad.device}; move it with .to(\"{grad.device}\")")
    return out


_hook_ids = itertools.count(1)


class RemovableHandle:
    """What ``register_hook`` returns; ``handle.remove()`` unregisters the hook (twice is fine)."""

    LANG_ATTRIBUTES = frozenset({"remove"})     # what a script may use on it
    __slots__ = ("_hooks", "id", "_text")

    def __init__(self, hooks: dict, hook, what: str):
        self._hooks = hooks
        self.id = next(_hook_ids)
        self._text = f"{_hook_name(hook)} on {what}"

    def remove(self) -> None:
        """Unregister the hook; later backward passes do not call it."""
        if self.id in self._hooks:
            record_items(self._hooks)            # undone: the hook is back, in its place in the order
            del self._hooks[self.id]

    def __repr__(self) -> str:
        state = "" if self.id in self._hooks else " (removed)"
        return f"<hook {self._text}{state}>"

    __str__ = __repr__


class AccumulateGrad(Node):
    """The sink of a leaf that requires grad: the engine adds what reaches it into ``.grad``."""

    name = "AccumulateGrad"
    __slots__ = ("variable",)

    def __init__(self, variable):
        # (Node.__init__'s fields set here: its sequence number and source position would be
        # overwritten, and the position's frame walk was most of a leaf's first op)
        self.next_edges = ()
        self._saved = self._retained = self._pre_hooks = None
        self._released = False
        self.variable = variable
        self.pos = None
        self.input_shapes = (tuple(variable.shape),)
        self.input_dtypes = (variable._data.dtype,)
        # torch: AccumulateGrad has the highest priority, so a leaf's .grad is
        # settled as soon as every gradient into it has arrived.
        self.seq_nr = sys.maxsize

    def apply(self, grad):
        return ()
