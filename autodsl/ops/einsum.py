"""einsum: PyTorch's equation strings (``"ij,jk->ik"``, ``"...ij,...jk"``, ``"ii->i"``).

Note [one einsum]: the op works on a parsed equation in which every subscript is an int
(a letter's code; the dims an ellipsis covers get 256, 257, ...), and it accepts two forms a
user's equation never has: a subscript repeated in the output (the values are put on that
diagonal, zeros elsewhere) and an output subscript no operand has (its size given in
``sizes``; the values are repeated along it). With those, the gradient of every operand is
again one einsum: of the output's gradient and the other operands, to that operand's
subscripts (a repeated subscript there is a diagonal, a subscript only that operand has is a
broadcast), and so is every higher derivative.

The contraction is done as PyTorch does: the operands' diagonals taken, the subscripts only
one operand has summed first, then operand by operand, left to right, a batched matrix
product over (shared and kept, left's own, summed) x (shared and kept, summed, right's own).
Only the Array API standard's functions are used (it has no einsum).
"""
from __future__ import annotations

import math

from autodsl.backend import copy as _copy
from autodsl.backend import may_share_memory, namespace_of, writeable
from autodsl.core.tensor import Tensor, as_tensor
from autodsl.errors import ShapeError, TypeError_, ValueError_
from autodsl.ops import chunked
from autodsl.ops.formula import define
from autodsl.ops.registry import Op, apply, defop

__all__ = ["einsum"]

_ELLIPSIS = 256          # the subscripts an ellipsis stands for: 256, 257, ... (right-aligned)


# -- the equation ----------------------------------------------------------------------------------

def _term(text: str, which: str) -> tuple:
    """The subscripts of one term: letter codes, with ``None`` where the ellipsis is."""
    subs = []
    i = 0
    while i < len(text):
        c = text[i]
        if c == ".":
            if text[i:i + 3] != "..." or None in subs:
                raise ValueError_(f"einsum: '.' in {which} is not part of one '...'; write an ellipsis "
                                  "as three dots, at most once per operand")
            subs.append(None)
            i += 3
            continue
        if not ("a" <= c <= "z" or "A" <= c <= "Z"):
            raise ValueError_(f"einsum: {c!r} in {which} is not a subscript; subscripts are the "
                              "letters a-z and A-Z")
        subs.append(ord(c))
        i += 1
    return tuple(subs)


def parse(equation: str, shapes) -> tuple:
    """(subscripts of each operand, subscripts of the output) of ``equation``, ellipses expanded."""
    if not isinstance(equation, str):
        raise TypeError_("einsum needs the equation as its first argument, a string like \"ij,jk->ik\"")
    eq = equation.replace(" ", "")
    lhs, arrow, rhs = eq.partition("->")
    if "->" in rhs or "-" in lhs or ">" in lhs:
        raise ValueError_("einsum: the equation has at most one '->', with the output's subscripts after it")
    terms = [_term(t, f"operand {k}") for k, t in enumerate(lhs.split(","))]
    if len(terms) != len(shapes):
        raise ValueError_(f"einsum: the equation {equation!r} has {len(terms)} operand(s) but "
                          f"{len(shapes)} tensor(s) were given; give one tensor per comma-separated term")
    spans = []
    for k, (t, shape) in enumerate(zip(terms, shapes)):
        named = len(t) - (None in t)
        if (None in t and named > len(shape)) or (None not in t and named != len(shape)):
            raise ShapeError(f"einsum: operand {k} has {len(shape)} dim(s) but its subscripts "
                             f"{''.join('...' if s is None else chr(s) for s in t)!r} name {named}; "
                             "give one letter per dim, or '...' for the leading ones")
        spans.append(len(shape) - named)
    n_ell = max(spans, default=0)
    ins = []
    for t, span in zip(terms, spans):
        subs = []
        for s in t:
            subs.extend(range(_ELLIPSIS + n_ell - span, _ELLIPSIS + n_ell) if s is None else (s,))
        ins.append(tuple(subs))
    seen = {s for t in ins for s in t}
    if arrow:
        o = _term(rhs, "the output")
        out = []
        for s in o:
            if s is not None and o.count(s) > 1:
                raise ValueError_(f"einsum: the output subscript {chr(s)!r} appears more than once; "
                                  "name each output dim once (a diagonal is taken with 'ii->i')")
            if s is not None and s not in seen:
                raise ValueError_(f"einsum: the output subscript {chr(s)!r} is in no operand; "
                                  "the output can only keep subscripts the operands have")
            out.extend(range(_ELLIPSIS, _ELLIPSIS + n_ell) if s is None else (s,))
    else:       # implicit: the ellipsis, then the subscripts seen once, in alphabetical (ASCII) order
        once = sorted(s for s in seen if s < _ELLIPSIS and sum(t.count(s) for t in ins) == 1)
        out = list(range(_ELLIPSIS, _ELLIPSIS + n_ell)) + once
    _sizes(ins, shapes)         # (the sizes' checks)
    return tuple(ins), tuple(out)


def _name(s: int) -> str:
    return chr(s) if s < _ELLIPSIS else f"'...' dim {s - _ELLIPSIS}"


def _sizes(ins, shapes) -> dict:
    """Each subscript's size; sizes of one subscript must be equal or 1 (1 broadcasts), as in PyTorch."""
    size = {}
    for k, (subs, shape) in enumerate(zip(ins, shapes)):
        mine = {}
        for s, n in zip(subs, shape):
            if s in mine and mine[s] != n:
                raise ShapeError(f"einsum: subscript {_name(s)} is repeated in operand {k} with sizes "
                                 f"{mine[s]} and {n}; a repeated subscript (a diagonal) needs equal sizes")
            mine[s] = n
        for s, n in mine.items():
            m = size.get(s, 1)
            if n != m and n != 1 and m != 1:
                raise ShapeError(f"einsum: subscript {_name(s)} has size {n} in operand {k} but {m} in an "
                                 "earlier operand; sizes of one subscript must be equal (or 1, which broadcasts)")
            if m == 1:
                size[s] = n
    return size


# -- the contraction, on arrays ------------------------------------------------------------------

def _permute(xp, a, labels, order):
    perm = tuple(labels.index(s) for s in order)
    return a if perm == tuple(range(a.ndim)) else xp.permute_dims(a, perm)


def _diagonals(xp, a, labels):
    """``a`` with each repeated subscript replaced by its diagonal (at the end)."""
    labels = list(labels)
    while len(set(labels)) < len(labels):
        s = next(s for s in labels if labels.count(s) > 1)
        p = labels.index(s)
        q = labels.index(s, p + 1)
        rest = [i for i in range(len(labels)) if i not in (p, q)]
        a = xp.linalg.diagonal(xp.permute_dims(a, tuple(rest) + (p, q)))
        labels = [labels[i] for i in rest] + [s]
    return a, labels


def _sum(xp, a, labels, drop):
    axes = tuple(i for i, s in enumerate(labels) if s in drop)
    if not axes:
        return a, labels
    return xp.sum(a, axis=axes), [s for s in labels if s not in drop]


def _pair(xp, a, la, b, lb, keep, size):
    """The product of two operands with the subscripts in neither ``keep`` nor only one operand summed."""
    batch = [s for s in la if s in lb and s in keep]
    summed = [s for s in la if s in lb and s not in keep]
    left = [s for s in la if s not in lb]
    right = [s for s in lb if s not in la]

    def prod(subs):
        return math.prod(size[s] for s in subs)
    a2 = xp.reshape(_permute(xp, a, la, batch + left + summed), (prod(batch), prod(left), prod(summed)))
    b2 = xp.reshape(_permute(xp, b, lb, batch + summed + right), (prod(batch), prod(summed), prod(right)))
    c = chunked.matmul(a2, b2) if a2.size * b2.size > chunked.LARGE else xp.matmul(a2, b2)   # huge: in tiles
    labels = batch + left + right
    return xp.reshape(c, tuple(size[s] for s in labels)), labels


def einsum_arrays(arrays, ins, out, sizes=()):
    """The einsum of ``arrays`` with parsed subscripts (Note [one einsum]); ``sizes``: pairs
    (subscript, size) for the output subscripts no operand has. A fresh array."""
    xp = namespace_of(arrays[0])
    ops = [_diagonals(xp, a, subs) for a, subs in zip(arrays, ins)]
    size = _sizes([lab for _, lab in ops], [a.shape for a, _ in ops])
    size.update(sizes)
    ops = [(a if all(size[s] == n for s, n in zip(lab, a.shape)) else
            xp.broadcast_to(a, tuple(size[s] for s in lab)), lab) for a, lab in ops]
    wanted = set(out)
    for k in range(len(ops)):       # subscripts only one operand has and the output drops: summed first
        a, lab = ops[k]
        elsewhere = {s for j, (_, lj) in enumerate(ops) if j != k for s in lj}
        ops[k] = _sum(xp, a, lab, {s for s in lab if s not in wanted and s not in elsewhere})
    acc, la = ops[0]
    for k in range(1, len(ops)):
        keep = wanted | {s for _, lj in ops[k + 1:] for s in lj}
        acc, la = _pair(xp, acc, la, *ops[k], keep, size)
    acc, la = _sum(xp, acc, la, {s for s in la if s not in wanted})
    res = _output(xp, acc, la, out, size)
    if not hasattr(res, "__dlpack__"):     # NumPy's 0-d sum is a scalar: a fresh value already
        return xp.asarray(res)
    if not writeable(res) or any(may_share_memory(res, a) for a in arrays):
        res = _copy(res)         # the output owns its memory (not a view of an input, not a broadcast)
    return res


def _output(xp, acc, la, out, size):
    """``acc`` (subscripts ``la``, each once) laid out as ``out``: absent subscripts broadcast,
    repeated ones on the diagonal."""
    firsts = list(dict.fromkeys(out))
    absent = [s for s in firsts if s not in la]
    for s in absent:
        acc = xp.expand_dims(acc, axis=acc.ndim)
    la = list(la) + absent
    acc = _permute(xp, acc, la, firsts)
    if absent:
        acc = xp.broadcast_to(acc, tuple(size[s] for s in firsts))
    labels = list(firsts)
    axis_of = []        # for each output position, its axis in acc
    for p, s in enumerate(out):
        if out.index(s) == p:
            axis_of.append(labels.index(s))
            continue
        n = size[s]        # a repeated output subscript: a new axis, the values on its diagonal with s's
        eye = xp.eye(n, dtype=acc.dtype)      # (on the current device: CuPy's, or the host's)
        shape = [1] * (acc.ndim + 1)
        shape[labels.index(s)] = shape[-1] = n
        acc = xp.expand_dims(acc, axis=acc.ndim) * xp.reshape(eye, tuple(shape))
        axis_of.append(acc.ndim - 1)
        labels.append(s)
    return acc if axis_of == list(range(acc.ndim)) else xp.permute_dims(acc, tuple(axis_of))


# -- the op ----------------------------------------------------------------------------------------

@defop("einsum")
class Einsum(Op):
    """The einsum of the operands (parsed subscripts ``ins`` -> ``out``): Note [one einsum]."""
    promote = True

    def forward(self, *arrays, ins, out, sizes=()):
        self.spec = (ins, out)
        if self._record:        # operand i's gradient reads every other operand
            needs = self.needs_input_grad
            self.save_for_backward(*(t if any(needs[:j] + needs[j + 1:]) else None
                                     for j, t in enumerate(self.inputs)))
        return einsum_arrays(arrays, ins, out, sizes)

    rule = "each operand's grad: einsum of grad and the other operands, to that operand's subscripts"

    def formula(self, F, g, *xs):
        ins, out = self.spec
        grads = []
        for i, edge in enumerate(self.next_edges):
            if edge is None:
                grads.append(None)
                continue
            gin = (out,) + ins[:i] + ins[i + 1:]
            shapes = (tuple(g.shape),) + self.input_shapes[:i] + self.input_shapes[i + 1:]
            have = {s for t in gin for s in t}
            wide = {s for t, sh in zip(gin, shapes) for s, n in zip(t, sh) if n != 1}
            shape = self.input_shapes[i]
            # a subscript only operand i has was summed, and one the others have only at size 1
            # was broadcast to operand i's size (0 included): its gradient is repeated along it
            sizes = tuple(sorted({(s, n) for s, n in zip(ins[i], shape)
                                  if s not in have or n != 1 and s not in wide}))
            grads.append(F.einsum_spec((g,) + xs[:i] + xs[i + 1:], gin, ins[i], sizes))
        return tuple(grads)


def einsum(equation, *operands):
    """Einstein summation, as torch.einsum: ``equation`` names each operand's dims with letters
    ("ij,jk->ik" is a matrix product, "ii->i" a diagonal, "ii" a trace, "bij,bjk->bik" a batched
    product); subscripts missing from the output are summed; "..." stands for leading dims, which
    broadcast; without "->" the output is the ellipsis and the letters seen once, in alphabetical
    order. The operands may also be given as one list. Dims of one subscript must have equal
    sizes (or 1, which broadcasts); mixed dtypes are promoted. Raises ValueError_ for a malformed
    equation and ShapeError when it does not fit the shapes. Gradients: Note [one einsum].
    Example: ``einsum("ij,jk->ik", a, b)``
    """
    if len(operands) == 1 and isinstance(operands[0], (list, tuple)) and operands[0] \
            and all(isinstance(t, Tensor) for t in operands[0]):
        operands = tuple(operands[0])       # torch's list of operands (a list of numbers is data)
    if not operands:
        raise ValueError_("einsum needs at least one tensor after the equation")
    ts = [as_tensor(t) for t in operands]
    ins, out = parse(equation, [t.shape for t in ts])
    return apply(Einsum, *ts, ins=ins, out=out)


def _einsum_tensors(ts, ins, out, sizes):
    return apply(Einsum, *ts, ins=ins, out=out, sizes=sizes)


define("einsum_spec", lambda arrays, ins, out, sizes: einsum_arrays(arrays, ins, out, sizes), _einsum_tensors)
