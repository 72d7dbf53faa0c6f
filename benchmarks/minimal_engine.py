"""The least a Python engine does for W4: a reference for benchmarks/w4_budget.py.

A Tensor and nodes with ``__slots__``, the NumPy calls autodsl makes for W4's ops (the
bias add, matmul, relu, log_softmax and nll_loss) and a dependency-counted backward.
Nothing else: no source positions, version counters, promotion, checks, hooks,
observers, views or NumPy error state. Only float32 and float64 W4 batches; not a
library, and never imported by autodsl.
"""

import numpy as np

_add_r, _max_r, _min_r = np.add.reduce, np.maximum.reduce, np.minimum.reduce
_SAME_BITS = {4: np.int32, 8: np.int64}     # relu's gradient by a select on the bits, as autodsl
_grad_on = [True]      # (the least an engine does: one grad mode for the process)


class Tensor:
    __slots__ = ("data", "requires_grad", "grad", "grad_fn", "_acc")

    def __init__(self, data, requires_grad=False):
        self.data, self.requires_grad, self.grad, self.grad_fn, self._acc = data, requires_grad, None, None, None

    def _edge(self):
        if self.grad_fn is not None:
            return self.grad_fn
        if self._acc is None:
            self._acc = _Accumulate(self)
        return self._acc

    def __matmul__(self, other):
        return _binary(_Matmul, self, other)

    def __add__(self, other):
        return _binary(_Add, self, other)

    def __rmul__(self, c):
        return Tensor(self.data * np.asarray(c, self.data.dtype))

    def __isub__(self, other):
        np.subtract(self.data, other.data, out=self.data)
        return self

    def backward(self):
        _backward(self.grad_fn, np.asarray(1.0, self.data.dtype))


class _Node:
    __slots__ = ("next", "saved")


class _Accumulate(_Node):
    __slots__ = ("t",)

    def __init__(self, t):
        self.t, self.next = t, ()

    def apply(self, g):
        t = self.t
        t.grad = g if t.grad is None else t.grad + g
        return ()


def _binary(cls, a, b):
    node = cls.__new__(cls)
    record = _grad_on[0] and (a.requires_grad or b.requires_grad)
    out = Tensor(node.forward(a.data, b.data, record))
    if record:
        node.next = (a._edge() if a.requires_grad else None, b._edge() if b.requires_grad else None)
        out.grad_fn, out.requires_grad = node, True
    return out


class _Matmul(_Node):
    __slots__ = ()

    def forward(self, a, b, record):
        if record:
            self.saved = (a, b)
        return a @ b

    def apply(self, g):
        a, b = self.saved
        ea, eb = self.next
        return (g @ b.swapaxes(-1, -2) if ea is not None else None,
                a.swapaxes(-1, -2) @ g if eb is not None else None)


class _Add(_Node):
    __slots__ = ()

    def forward(self, a, b, record):
        self.saved = (a.shape, b.shape)
        return a + b

    def apply(self, g):     # a bias: the batch dim summed
        sa, sb = self.saved
        return (g if sa == g.shape else _add_r(g, axis=0), g if sb == g.shape else _add_r(g, axis=0))


class _Relu(_Node):
    __slots__ = ()

    def apply(self, g):
        h = self.saved
        bits = _SAME_BITS[g.dtype.itemsize]
        return (np.multiply(g.view(bits), np.not_equal(h, 0).view(np.uint8), dtype=bits).view(g.dtype),)


def relu(x):
    out = Tensor(np.maximum(x.data, np.zeros((), x.data.dtype)))
    if _grad_on[0] and x.requires_grad:
        node = _Relu.__new__(_Relu)
        node.saved, node.next = out.data, (x._edge(),)
        out.grad_fn, out.requires_grad = node, True
    return out


class _LogSoftmax(_Node):
    __slots__ = ()

    def apply(self, g):
        return (g - np.exp(self.saved) * _add_r(g, axis=1, keepdims=True),)


class _Nll(_Node):
    __slots__ = ()

    def apply(self, g):
        index, shape, scale = self.saved
        d = np.zeros(shape, g.dtype)
        np.add.at(d, index, g * scale)
        return (d,)


def cross_entropy(x, y):
    """The mean cross-entropy of logits (N, C) and int64 classes (N,), as two nodes."""
    z, t = x.data, y.data
    shifted = z - _max_r(z, axis=1, keepdims=True)
    logp = shifted - np.log(_add_r(np.exp(shifted), axis=1, keepdims=True))
    lsm = _LogSoftmax.__new__(_LogSoftmax)
    lsm.saved, lsm.next = logp, (x._edge(),)
    if _min_r(t, axis=None) < 0 or _max_r(t, axis=None) >= z.shape[1]:
        raise IndexError("a class index outside the logits")
    index = (np.arange(len(t)), t)
    n = np.asarray(len(t), z.dtype)
    loss = Tensor(-_add_r(logp[index], axis=None) / n, True)
    nll = _Nll.__new__(_Nll)
    nll.saved, nll.next = (index, logp.shape, np.asarray(-1.0 / len(t), z.dtype)), (lsm,)
    loss.grad_fn = nll
    return loss


def _backward(root, seed):
    deps = {}
    stack, seen = [root], {root}
    while stack:
        for e in stack.pop().next:
            if e is not None:
                deps[e] = deps.get(e, 0) + 1
                if e not in seen:
                    seen.add(e)
                    stack.append(e)
    grads, ready = {root: seed}, [root]
    while ready:
        node = ready.pop()
        outs = node.apply(grads.pop(node))
        if type(node) is not _Accumulate:
            node.saved = None
        for e, g in zip(node.next, outs):
            if e is not None and g is not None:
                grads[e] = g if e not in grads else grads[e] + g
                deps[e] -= 1
                if deps[e] == 0:
                    ready.append(e)


class no_grad:
    def __enter__(self):
        _grad_on[0] = False

    def __exit__(self, *exc):
        _grad_on[0] = True
