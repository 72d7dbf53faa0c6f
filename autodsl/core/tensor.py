"""Tensor: an n-d array with the autograd state PyTorch users know.

Storage is an array of its device's Array API namespace (NumPy, or
array_api_strict in tests, on "cpu"; CuPy on "cuda"; see ``backend``). Views (basic
indexing, transpose, reshape where possible) and ``detach()`` share storage
*and* the version counter with the tensor they came from, so an in-place
write through any alias is seen by all of them and by the saved-tensor check.

Operator dunders and op methods (``__mul__``, ``.relu()``, ``.sum()``) are
installed on the class by ``autodsl.ops.registry``; this module never imports
the ops.
"""
from __future__ import annotations

import gc
import sys
import weakref

import autodsl.backend as backend
try:
    import cython
except ImportError:
    from autodsl._pure import cython
from autodsl.context import current, current_or_none
from autodsl.core.deferred import settle
from autodsl.core.engine import GraphTask
from autodsl.core.journal import record_attrs, record_grad
from autodsl.core.limits import reserve
from autodsl.core.node import AccumulateGrad
from autodsl.core.tensor_fields import TensorFields
from autodsl.core.tensor_repr import tensor_repr
from autodsl.source import SOURCE_POS, caller_pos, warn_user
from autodsl.names import register_tensor_type
from autodsl.errors import AutogradError, DeviceError, IndexError_, DTypeError, ShapeError, TypeError_, ValueError_
from autodsl.core.words import kind as _kind

__all__ = ["Tensor", "TensorBase", "new_tensor", "as_tensor", "array_from_data", "make_seeds", "run_backward", "PUBLIC_ATTRIBUTES", "PUBLIC_METHODS"]

_Scalar = backend.SCALAR_TYPES
_scalar_array = backend.scalar_array
_ndarray, _F64, _f64_array = backend.HOST_ARRAY, backend.HOST_F64, backend.f64_scalar_array
_HOST_NUMBER = backend.HOST_BOOL + backend.HOST_INT + backend.HOST_FLOAT

# What the language may read on a tensor; the op registry adds its methods to
# PUBLIC_METHODS. Anything else is unreachable from a script.
PUBLIC_ATTRIBUTES = frozenset({
    "shape", "dtype", "device", "requires_grad", "is_leaf", "grad", "grad_fn",
    "retains_grad", "T", "ndim", "data", "version",
})
PUBLIC_METHODS = {
    "backward", "detach", "retain_grad", "zero_grad", "item", "tolist",
    "requires_grad_", "size", "dim", "numel", "register_hook",
}

_gc_isenabled, _gc_disable, _gc_enable = gc.isenabled, gc.disable, gc.enable


class TensorBase(TensorFields):
    """The methods of ``Tensor`` on its fields (``Tensor``'s base class, as ``torch._C.TensorBase``
    is torch.Tensor's; core/tensor_fields.py): the compiled build makes it an extension type
    (core/tensor.pxd), whose methods read the fields as struct members; ``Tensor`` stays a
    Python class, so that the ops can install their methods on it."""

    __slots__ = ()

    __array_priority__ = 1000  # numpy scalars defer to our dunders

    def __init__(self, data, requires_grad: bool = False, *, _device: str | None = None):
        if isinstance(data, _Scalar):      # NumPy's 0-d arithmetic gives scalars: keep arrays
            data = _scalar_array(data)
        self._data = data
        self._version = [0]
        self._base = None
        self._view_chain = None   # for a view: the (op, params) steps that make it from _base
        self._gen = 0             # bumped when an in-place op gives this tensor a new history
        self._base_gen = 0        # for a view: the _gen of its base when its grad_fn was made
        self.grad_fn = None
        self._grad = None
        self._retains_grad = False
        self._accumulate = None
        self._pos = None          # where a leaf was made (creation functions, detach): see Node.pos
        self._views = None        # on a lazy device, the live views of this base (ops/inplace.py)
        self._alias = None        # on a lazy device, for a detach() of a view: that view (_share_views)
        self.device = _device or backend.device_of(data)
        self._requires_grad = False
        if requires_grad is not False:
            self._set_requires_grad(requires_grad)      # a new tensor: nothing for an undo to put back

    # -- basic properties -----------------------------------------------------------
    @property
    def data(self) -> "Tensor":
        """The same storage without history or version counter (PyTorch's ``.data``).

        Unlike ``detach()``, an in-place write through it is not seen by the
        saved-tensor check, exactly as in PyTorch; prefer ``detach()``.
        """
        out = Tensor(self._data, _device=self.device)
        _share_views(self, out)
        return out

    @property
    def shape(self) -> tuple:
        return tuple(self._data.shape)

    @property
    def ndim(self) -> int:
        return self._data.ndim

    @property
    def dtype(self) -> backend.DType:
        return backend.dtype_of(self._data)

    @property
    def version(self) -> int:
        """How many in-place writes this tensor's storage has seen."""
        return self._version[0]

    def dim(self) -> int:
        """Number of dimensions."""
        return self._data.ndim

    def numel(self) -> int:
        """Number of elements."""
        return int(self._data.size)

    def size(self, dim: int | None = None):
        """The shape, or the length of dimension ``dim``."""
        if dim is None:
            return self.shape
        if self.ndim == 0:      # torch: "dimension specified as 0 but tensor has no dimensions"
            raise IndexError_(f"size({dim}): this 0-d tensor (a single number) has no dimensions; "
                              "its shape is ()")
        return self.shape[_norm_dim(dim, self.ndim)]

    def __len__(self) -> int:
        if self.ndim == 0:
            raise TypeError_("len() of a 0-d tensor (a single number) is not defined; use x.shape")
        return self._data.shape[0]

    # -- autograd state --------------------------------------------------------------
    @property
    def is_leaf(self) -> bool:
        """True for tensors made by the user, and for op outputs when no input requires grad."""
        return self.grad_fn is None

    @property
    def requires_grad(self) -> bool:
        return self._requires_grad

    @requires_grad.setter
    def requires_grad(self, flag) -> None:
        log = current().journal
        if log is not None:         # an undo puts the flag back, and the sink that holds the hooks
            record_attrs(self, "_requires_grad", "_accumulate", log=log)
        self._set_requires_grad(flag)

    def _set_requires_grad(self, flag) -> None:
        if not isinstance(flag, backend.HOST_BOOL):     # torch: "requires_grad must be a bool"
            raise TypeError_(f"requires_grad must be true or false, not {_kind(flag)}")
        flag = bool(flag)
        if current().capture is not None and flag != self._requires_grad:
            current().capture.fail("it changes requires_grad")
        if self.grad_fn is not None:
            if not flag:
                raise AutogradError(
                    "requires_grad can only be changed on a leaf tensor; this one was made by "
                    f"{self.grad_fn.name}. Use y = x.detach() to get a tensor that does not require grad")
            return
        if flag and not self.dtype.is_floating:
            raise DTypeError(
                f"only floating-point tensors can require grad, and this one is {self.dtype.name}; "
                "make it with dtype=float64 (or float32)")
        self._requires_grad = flag
        if not flag:
            self._accumulate = None

    def requires_grad_(self, requires_grad: bool = True) -> "Tensor":
        """Set ``requires_grad`` in place (leaves only) and return the tensor."""
        self.requires_grad = requires_grad
        return self

    @property
    def retains_grad(self) -> bool:
        """True when ``retain_grad()`` was called on this non-leaf."""
        return self._retains_grad

    def retain_grad(self) -> None:
        """Ask backward to fill ``.grad`` of this non-leaf tensor too (a no-op on leaves)."""
        if self.grad_fn is None:
            if not self._requires_grad:
                raise AutogradError("retain_grad() on a tensor that does not require grad; "
                                    "set requires_grad=true first")
            return
        if self._retains_grad:
            return
        node = self.grad_fn
        record_attrs(self, "_retains_grad")
        record_attrs(node, "_retained")
        self._retains_grad = True
        # a new list, not an append: an undo puts the old one back, and a pass that is going
        # through the old one is not changed under it
        node._retained = [*(node._retained or ()), self]

    @property
    def grad(self):
        """The accumulated gradient (a Tensor of this tensor's shape) or None.

        Reading it on a non-leaf that did not call ``retain_grad()`` warns and
        gives None, as in PyTorch.
        """
        if self.grad_fn is not None and not self._retains_grad and self._grad is None:
            warn_user("the .grad of a non-leaf tensor is not kept by backward, so it is none; "
                      "call retain_grad() on it before backward if you want it")
        g = self._grad
        cap = (current_or_none() or current()).capture
        if cap is not None:             # compile() is recording: the program reads it here too
            if g is None:
                cap.grad_is_none(self)  # (a guard: `if w.grad is not none` may branch on it)
            else:
                cap.read_grad(self, g)
        return g

    @grad.setter
    def grad(self, value) -> None:
        if value is None:
            record_grad(self)
            self._grad = None
            cap = (current_or_none() or current()).capture
            if cap is not None:
                cap.grad_none(self)
            return
        if current().capture is not None:
            current().capture.fail("it sets a .grad to a tensor")
        if not isinstance(value, Tensor):
            raise TypeError_("a gradient must be a tensor or none")
        if value.shape != self.shape:
            raise ShapeError(f"the gradient has shape {value.shape}, but the tensor has shape {self.shape}; "
                             "they must match")
        if value.device != self.device:
            raise DeviceError(f"the gradient is on {value.device}, the tensor on {self.device}")
        if value.dtype is not self.dtype:
            raise DTypeError(f"the gradient is {value.dtype.name} but the tensor is {self.dtype.name}; "
                             f"convert it with .to(dtype={self.dtype.name})")
        record_grad(self)
        self._grad = value

    def zero_grad(self) -> None:
        """Forget the accumulated gradient (sets ``.grad`` to none)."""
        record_grad(self)
        self._grad = None
        if current().capture is not None:
            current().capture.grad_none(self)

    def _plus(self, other: "Tensor") -> "Tensor":
        """``self + other``, unrecorded, of two arrays of one device: the engine's sums of the
        gradients sent to one node."""
        x, y = self._data, other._data
        if type(self) is not Tensor:
            return type(self)(x + y, _device=self.device)
        if type(x) is _ndarray and type(y) is _ndarray and x.dtype is _F64 and y.dtype is _F64 \
                and x.ndim == 0 and y.ndim == 0:        # Note [0-d fast path] (ops/registry.py)
            return new_tensor(_f64_array(float(x) + float(y)), self.device)
        return new_tensor(x + y, self.device)

    def _grad_update(self, g: "Tensor", create_graph: bool):
        """AccumulateGrad, first half: what ``.grad`` becomes, computed without changing anything.

        The first gradient is owned (copied, or cloned into the graph under
        create_graph), never shared with another leaf or with the caller's
        seed; later ones are added, in place unless create_graph or the
        buffer cannot be written.
        """
        old = self._grad
        if create_graph:
            return (g.clone() if old is None else old + g), None
        if old is None:
            # Note [stealing a gradient]: a gradient that only the engine holds (the staged
            # entry, the engine's loop variable, this call's argument: sys.getrefcount sees
            # those 3 and its own argument) and whose array nothing else holds or views
            # becomes .grad as it is, as PyTorch's AccumulateGrad does; anything else (the
            # caller's seed, a gradient a hook or the trace kept, one sent to two leaves) is copied.
            if (g.grad_fn is None and g._base is None and sys.getrefcount(g) <= _STEAL_REFS[0]
                    and backend.unshared(g._data, _STEAL_REFS[1])):
                return new_tensor(g._data, g.device), None
            return new_tensor(backend.grad_copy(g._data, self._data), g.device), None
        if self.grad_fn is not None or not backend.writeable(old._data):
            # (a retained non-leaf's .grad is a new tensor each time, as torch's retain_grad hook
            # makes it: grad + new; a leaf's is added into in place)
            return new_tensor(old._data + g._data, g.device), None
        return old, old._data + g._data

    def _grad_commit(self, update) -> None:
        """AccumulateGrad, second half: assignments only (they cannot fail)."""
        new, values = update
        record_grad(self)
        if values is None:
            self._grad = new
        else:
            new._data[...] = values
            new._version[0] += 1

    def _gradient_edge(self):
        """The node a gradient for this tensor goes to: its grad_fn, or its AccumulateGrad."""
        if self._base is not None and self._base_gen != self._base._gen:
            self._refresh_view()
        return self.grad_fn if self.grad_fn is not None else self._accumulate_node()

    def _refresh_view(self) -> None:  # pragma: no cover - replaced by autodsl.ops.registry
        """Rebuild a view's history after its base got a new one (installed by the ops)."""

    def _accumulate_node(self) -> AccumulateGrad:
        acc = self._accumulate
        if acc is None:
            acc = self._accumulate = AccumulateGrad(self)
        return acc

    def register_hook(self, hook):
        """Call ``hook(grad)`` with this tensor's gradient during every backward (PyTorch semantics).

        ``hook``: a Python callable or a language function of one argument, the
        gradient (a tensor of this tensor's shape). Returning a tensor of the
        same shape, dtype and device replaces the gradient: for a leaf, before
        it is added into ``.grad`` (and in what ``grad()`` returns); for a
        non-leaf, it is what flows on to the inputs (and what ``retain_grad()``
        keeps). Returning none keeps it. A tensor used several times gets one
        call, with the summed gradient. Hooks run in the order registered; under
        ``create_graph=true`` what they compute is differentiable. A hook must
        not modify its argument in place (return a new tensor instead).

        Returns a handle: ``handle.remove()`` unregisters the hook. Raises
        AutogradError when this tensor does not require grad and TypeError_
        when ``hook`` is not callable. A hook that raises makes the backward
        fail with every ``.grad`` as it was before.

        Example (language): ``def double(g) { return 2 * g }; h = x.register_hook(double)``
        """
        if not callable(hook) or isinstance(hook, Tensor):
            raise TypeError_(f"register_hook() needs a function of one argument (the gradient), "
                             f"not {_kind(hook)}")
        if not self._requires_grad:
            raise AutogradError("cannot register a hook on a tensor that does not require grad: no "
                                "gradient will ever reach it; make it with requires_grad=true (or "
                                "register the hook on a tensor computed from one)")
        node = self._gradient_edge()        # grad_fn, or the leaf's AccumulateGrad (Note [tensor hooks])
        if self.grad_fn is not None:
            what = f"the output of {node.name}"
        else:
            what = "a scalar leaf" if self.ndim == 0 else f"a leaf of shape {self.shape}"
        return node.register_prehook(hook, what)

    def detach(self) -> "Tensor":
        """A tensor that shares this one's storage and version counter, with no history.

        It has ``requires_grad=false`` and ``is_leaf=true``; writes through it
        are seen by this tensor (``x = y.detach(); x[0] = 4`` sets ``y[0]``).
        """
        # Shares data and version counter, but is not an autograd view: writing
        # through it is allowed even when self is a leaf that requires grad.
        out = Tensor(self._data, _device=self.device)
        out._version = self._version
        out._pos = SOURCE_POS.get() or caller_pos()
        _share_views(self, out)
        return out

    def backward(self, gradient=None, retain_graph=None, create_graph: bool = False, inputs=None) -> None:
        """Accumulate d(self)/d(leaf) into ``.grad`` of every leaf that requires grad.

        ``gradient``: needed when self is not a scalar; a tensor of self's
        shape (the vector of the vector-Jacobian product). ``retain_graph``
        (default: ``create_graph``) keeps saved tensors for another backward.
        ``create_graph`` makes the gradients themselves differentiable.
        ``inputs``: accumulate only into these tensors (a non-leaf one keeps its
        ``.grad`` from then on, as after ``retain_grad()``: PyTorch's rule).

        Raises AutogradError (non-scalar without gradient, freed graph, a saved
        tensor modified in place, self does not require grad) and ShapeError
        (gradient of the wrong shape). On error no ``.grad`` changes.
        """
        # The collector is held off from before anything is allocated (Note [the cost of an op]:
        # the forward's allocations were counted with it off, so the first allocation here would
        # trigger a collection that walks the whole graph; after the pass the graph is freed
        # by reference counting, and usually no collection is due at all).
        held = _gc_isenabled()
        if held:
            _gc_disable()
        try:
            run_backward([self], None if gradient is None else [gradient], retain_graph, create_graph,
                         inputs=inputs)
        finally:
            if held:
                _gc_enable()

    # -- host conversion ---------------------------------------------------------------
    def numpy(self) -> "numpy.ndarray":  # noqa: F821
        """A NumPy copy of the values on the host (for a CPU tensor: a copy, never an alias)."""
        if current().deferred is not None:     # ops' value checks wait for this read (core/deferred.py)
            settle()
        out = backend.to_host(self._data, copy=True)
        if current().capture is not None:      # compile() is recording: Python reads the values
            current().capture.value(self, out.tolist(), "tolist")
        return out

    def item(self):
        """The single value of a one-element tensor as a Python number."""
        if self._data.size != 1:
            raise ValueError_(f"item() needs a tensor with one element, this one has shape {self.shape}; "
                              "reduce it first (e.g. .sum())")
        if current().deferred is not None:     # ops' value checks wait for this read (core/deferred.py)
            settle()
        value = backend.to_host(self._data).reshape(()).item()
        if current().capture is not None:      # compile() is recording: Python reads a value here
            current().capture.value(self, value)
        return value

    def tolist(self):
        """The values as (nested) Python lists. LimitError when they would not fit in the session's
        memory limit (or the machine's memory): about 32 bytes a number."""
        reserve(32 * self.numel(), "tolist()")
        if current().deferred is not None:     # ops' value checks wait for this read (core/deferred.py)
            settle()
        out = backend.to_host(self._data).tolist()
        if current().capture is not None:      # compile() is recording: Python reads the values
            current().capture.value(self, out, "tolist")
        return out

    def __float__(self) -> float:
        return float(self.item())

    def __int__(self) -> int:
        return int(self.item())

    def __index__(self) -> int:
        if self.dtype.is_floating or self._data.size != 1:
            raise TypeError_("only a one-element integer tensor can be used as an index")
        return int(self.item())

    def __bool__(self) -> bool:
        if self._data.size != 1:
            raise ValueError_(f"the truth value of a tensor with {self._data.size} elements is ambiguous; "
                              "use .any() or .all(), or compare a single element")
        return bool(self.item())

    def __iter__(self):
        """The rows (views along the first dim); a TypeError_ at once for a 0-d tensor."""
        if self.ndim == 0:
            raise TypeError_("cannot loop over a 0-d tensor (a single number); use range(n) or a "
                             "tensor with at least one dimension")
        return (self[i] for i in range(self._data.shape[0]))

    __hash__ = object.__hash__

    def _format(self, style: str = "dsl") -> str:
        """The tensor as PyTorch prints it (core/tensor_repr.py); ``style`` spells booleans."""
        if current().deferred is not None:     # ops' value checks wait for this read (core/deferred.py)
            settle()
        return tensor_repr(backend.to_host(self._data), dtype=self.dtype.name,
                           default_dtype=backend.get_default_dtype().name, device=self.device,
                           grad_fn=None if self.grad_fn is None else self.grad_fn.name,
                           requires_grad=self._requires_grad, style=style)

    def __repr__(self) -> str:
        return self._format("python")

    __str__ = __repr__

    def __format__(self, spec: str) -> str:
        """Python's ``format``/f-strings as for a torch tensor: a 0-d tensor formats as its
        number (``f"{loss:.4f}"``; ``f"{t}"`` is ``2.5``), another tensor without a spec as
        its repr. Raises TypeError_ for a spec given to a tensor with dims (index or reduce
        it to a 0-d one first) and ValueError_ for a spec that does not apply to the number."""
        if self.ndim == 0:
            value = self.item()
            try:
                return format(value, spec)
            except ValueError:
                raise ValueError_(f"`{spec}` is not a format spec for a {self.dtype.name} number; "
                                  "use Python's format mini-language, e.g. `.4f`, `.3e`, `d` for "
                                  "whole numbers") from None
        if spec:
            raise TypeError_(f"the format spec `{spec}` needs a 0-d tensor, but this one has shape "
                             f"{tuple(self.shape)}: index it (`x[0]`) or reduce it (`x.sum()`) first, or "
                             "leave the spec out to show the whole tensor")
        return repr(self)

    def _repr_pretty_(self, p, cycle) -> None:
        """IPython's and Jupyter's text of a tensor: what the REPL shows (the language's form)."""
        p.text(self._format("dsl"))


class Tensor(TensorBase):
    """An n-d array that can record the operations made on it.

    Attributes (read): ``shape`` (tuple of ints), ``dtype`` (float32, float64,
    int64, bool), ``device`` ("cpu" or "cuda"), ``requires_grad``, ``is_leaf``,
    ``grad`` (a Tensor or None), ``grad_fn`` (the node that made it, None for
    leaves), ``retains_grad``, ``version`` (in-place writes so far).

    Make tensors with ``autodsl.core.tensor(...)`` and the other creation functions.
    """

    __slots__ = ()


def make_seeds(tensors, grad_tensors, what: str):
    """Check the roots of a backward and pair each root's node with its seed gradient.

    A scalar root without a gradient is seeded with 1; a non-scalar one needs
    a gradient of its shape (AutogradError / ShapeError otherwise).
    """
    if type(tensors) is list and len(tensors) == 1 and grad_tensors is None:
        # (the usual backward: one 0-d host root that requires grad, seeded with a new 1)
        t = tensors[0]
        if type(t) is Tensor and t._requires_grad:
            d = t._data
            if type(d) is _ndarray and d.ndim == 0:
                return [(t._gradient_edge(), new_tensor(_scalar_array(1, dtype=d.dtype), t.device))]
    if isinstance(tensors, Tensor):
        tensors = [tensors]
    if not isinstance(tensors, (list, tuple)):
        raise TypeError_(f"{what} needs a tensor or a list of tensors as outputs, not {_kind(tensors)}")
    tensors = list(tensors)
    if grad_tensors is None:
        grad_tensors = [None] * len(tensors)
    elif isinstance(grad_tensors, Tensor):
        grad_tensors = [grad_tensors]
    grad_tensors = list(grad_tensors)
    if len(grad_tensors) != len(tensors):
        raise AutogradError(f"{what} got {len(tensors)} outputs but {len(grad_tensors)} gradients; "
                            "give one gradient per output")
    seeds = []
    for i, (t, g) in enumerate(zip(tensors, grad_tensors)):
        if not isinstance(t, Tensor):
            raise AutogradError(f"{what} needs tensors as outputs, got {_kind(t)}")
        if not t.requires_grad:
            raise AutogradError(
                f"{what}: output {i} does not require grad and has no grad_fn, so there is nothing "
                "to differentiate; make an input with requires_grad=true before computing it "
                "(and not inside no_grad)")
        if g is None:
            if t._data.size != 1:
                ones = f"ones({', '.join(map(str, t.shape))})"
                example = {"step()": f"step(y, {ones})", "grad()": f"grad(y, x, grad_outputs={ones})"}.get(
                    what, f"y.backward({ones})")
                raise AutogradError(
                    f"{what} on a non-scalar tensor (shape {t.shape}) needs a gradient of that shape, "
                    f"e.g. {example}, or reduce it first with .sum()")
            d = t._data
            # (a 0-d host root, the usual loss: its 1 made directly, without ones()' wrapper)
            g = Tensor(_scalar_array(1, dtype=d.dtype) if type(d) is _ndarray and d.ndim == 0
                       else backend.xp(t.device).ones(d.shape, dtype=d.dtype), _device=t.device)
        else:
            g = as_tensor(g, like=t)
            if g.shape != t.shape:
                raise ShapeError(f"{what}: the gradient has shape {g.shape} but the output has shape "
                                 f"{t.shape}; pass a gradient of the output's shape")
            if g.dtype is not t.dtype:
                g = g.to(dtype=t.dtype)
        seeds.append((t._gradient_edge(), g))
    return seeds


def run_backward(tensors, grad_tensors=None, retain_graph=None, create_graph=False, inputs=None):
    """Accumulate the gradients of ``tensors`` into ``.grad`` of the leaves they depend on.

    See ``Tensor.backward``. All or nothing: when it raises, no ``.grad`` has changed.
    """
    if retain_graph is None:
        retain_graph = create_graph
    seeds = make_seeds(tensors, grad_tensors, "backward()")
    targets = None
    if inputs is not None:
        inputs = [inputs] if isinstance(inputs, Tensor) else list(inputs)
        if not inputs:
            raise AutogradError("backward(inputs=...) got an empty list; leave inputs out to reach every leaf")
        targets = {}
        for t in inputs:
            if not isinstance(t, Tensor) or not t.requires_grad:
                raise AutogradError("backward(inputs=...): every input must be a tensor that requires grad")
            targets[t._gradient_edge()] = t
        for t in inputs:
            t.retain_grad()         # a non-leaf input keeps its .grad from now on, as in torch
    GraphTask(seeds, retain_graph, create_graph, targets=targets, accumulate=True).run()


def _norm_dim(dim, ndim: int) -> int:
    d = int(dim)
    n = max(ndim, 1)
    if not -n <= d < n:
        raise IndexError_(f"dim {dim} is out of range for a tensor with {ndim} dimensions "
                          f"(valid: {-n} to {n - 1})")
    return d % n


def array_from_data(data, dtype, device: str):
    """A backend array from a number or nested lists of numbers (0-d tensors allowed inside).

    Without ``dtype``, numbers give the default float dtype and true/false give
    bool, as ``tensor()`` promises. Raises ShapeError for ragged lists and
    TypeError_ for anything that is not a number.
    """
    plain = _plain_numbers(data)
    if dtype is None:
        probe = backend.asarray(plain, None, "cpu")
        dtype = backend.bool_ if backend.kind_of(probe.dtype) == "b" else backend.get_default_dtype()
    try:
        return backend.asarray(plain, dtype, device)
    except (ValueError, OverflowError) as e:
        article = "an" if dtype.name[0] in "aeiou" else "a"
        if dtype.name in ("int32", "int64") and (isinstance(e, OverflowError) or "out of bounds" in str(e)):
            bits = int(dtype.name[3:])
            raise ValueError_(f"cannot make {article} {dtype.name} tensor from this data: a number in it is "
                              f"outside {dtype.name}'s range, {-2 ** (bits - 1)} to {2 ** (bits - 1) - 1}; "
                              "make it a floating tensor (dtype=float64), or keep the numbers in range"
                              ) from None
        raise ValueError_(f"cannot make {article} {dtype.name} tensor from this data: {e}") from None


def _plain_numbers(data):
    """Nested lists with 0-d tensors replaced by numbers; checked for raggedness. No recursion."""
    if not isinstance(data, (list, tuple)):
        return _number(data)
    root = []
    stack = [(data, root)]
    while stack:
        src, dst = stack.pop()
        if len({len(x) if isinstance(x, (list, tuple)) else -1 for x in src}) > 1:
            raise ShapeError("the nested lists have different lengths (a ragged list); "
                             "every row must have the same number of elements")
        for x in src:
            if isinstance(x, (list, tuple)):
                inner = []
                dst.append(inner)
                stack.append((x, inner))
            else:
                dst.append(_number(x))
    return root


def _number(x):
    if isinstance(x, Tensor):
        if x.ndim:
            raise TypeError_("tensor(...) takes numbers or nested lists of numbers; "
                             "use stack([...]) to combine tensors")
        return x.item()
    if isinstance(x, _HOST_NUMBER):
        return x
    raise TypeError_(f"tensor(...) takes numbers or nested lists of numbers, not {_kind(x)}")



def _share_views(t: Tensor, out: Tensor) -> None:
    """On a lazy device, ``out`` (t's detach() or .data: the same array object) gets t's set of
    live views, so that a write through either remakes the views of both (ops/inplace.py's
    Note [writes on a lazy device]; on the cpu they share memory)."""
    if not backend.is_lazy(t._data):
        return
    alias = t._alias
    if alias is not None:               # a detach() of a detach() of a view
        out._alias = alias
    elif t._base is not None:
        # a detach() of a view: a write into it is a write into the view (ops/inplace.py's
        # _write puts it back), here a copy of the view without its history (m[0].data is of
        # a view nothing else holds)
        view = Tensor(t._data, _device=t.device)
        view._base, view._view_chain, view._base_gen = t._base, t._view_chain, t._base_gen
        out._alias = view
    else:
        if t._views is None:
            t._views = weakref.WeakSet()
        out._views = t._views


_new_object = object.__new__


@cython.locals(t=TensorBase)
def new_tensor(data, device: str) -> Tensor:
    """``Tensor(data, _device=device)`` without the keyword handling: an op's output (``data`` an
    array of ``device``, or a NumPy scalar from 0-d arithmetic, kept as a 0-d array)."""
    if isinstance(data, _Scalar):
        data = _scalar_array(data)
    if cython.compiled:     # (the fields start as None, 0 and False: core/tensor.pxd)
        t = TensorBase.__new__(Tensor)
        t._data = data
        t._version = [0]
        t.device = device
        return t
    t = _new_object(Tensor)
    t._data = data
    t._version = [0]
    t._base = None
    t._view_chain = None
    t._gen = 0
    t._base_gen = 0
    t.grad_fn = None
    t._grad = None
    t._retains_grad = False
    t._accumulate = None
    t._pos = None
    t._views = None
    t._alias = None
    t.device = device
    t._requires_grad = False
    return t

register_tensor_type(Tensor)      # names.is_tensor: the resolver sits below this module


def as_tensor(value, like: Tensor | None = None) -> Tensor:
    """Turn a Tensor, Python number, bool or nested list into a Tensor.

    A Python number next to a tensor takes that tensor's dtype when it fits
    (``x32 * 2.5`` stays float32), as PyTorch's scalar promotion does; an
    integer tensor combined with a float number gives the default float dtype.
    """
    if isinstance(value, Tensor):
        return value
    device = like.device if like is not None else backend.get_default_device()
    if isinstance(value, backend.HOST_BOOL):
        dt = backend.bool_ if like is None else like.dtype
    elif isinstance(value, backend.HOST_INT):
        dt = backend.int64 if like is None or like.dtype is backend.bool_ else like.dtype
    elif isinstance(value, backend.HOST_FLOAT):
        dt = like.dtype if like is not None and like.dtype.is_floating else backend.get_default_dtype()
    elif type(value) is list or type(value) is tuple:
        try:
            return Tensor(array_from_data(value, None, device), _device=device)
        except TypeError_ as e:     # its words are tensor()'s, which this caller did not write
            raise TypeError_("a list used as a tensor " + e.message.removeprefix("tensor(...) ")) from None
    elif backend.is_host_array(value):
        return Tensor(backend.asarray(value, backend.as_dtype(value.dtype), device), _device=device)
    else:
        hint = (" (`.grad` is none until backward has run, and a function without `return` gives none)"
                if value is None else "; pick one with `.values` or `.indices`"
                if "values" in getattr(type(value), "LANG_ATTRIBUTES", ()) else "")
        raise TypeError_(f"expected a tensor, a number or a list of numbers, got {_kind(value)}{hint}")
    return Tensor(backend.asarray(value, dt, device), _device=device)


# Note [stealing a gradient], compiled: Cython's code holds one reference fewer on the tensor
# and one more on its array than the interpreter's frames do.
_STEAL_REFS = (4, 2) if type(Tensor._grad_update).__name__ == "function" else (3, 3)
