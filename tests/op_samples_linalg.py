"""Op-table samples for linear algebra (einsum, det, inverse, solve) and the losses' keywords (see op_samples.py)."""
from __future__ import annotations

import numpy as np
from op_samples import COMPOSITES, NP, TorchNS, add, r  # noqa: F401

_rng = np.random.default_rng(20261201)


def _wc(*shape):
    """Well-conditioned square matrices: 2·I plus small noise (det far from 0)."""
    n = shape[-1]
    return np.asarray(_rng.uniform(-0.3, 0.3, size=shape) + 2.0 * np.eye(n))


def _np_solve(a, b):
    vec = b.ndim == 1 or (b.ndim == a.ndim - 1 and b.shape == a.shape[:-1])     # torch.linalg.solve's rule
    return np.linalg.solve(a, b[..., None])[..., 0] if vec else np.linalg.solve(a, b)


NP.einsum = lambda eq, *ops: np.asarray(np.einsum(eq, *(ops[0] if isinstance(ops[0], list) else ops)))
NP.det = lambda a: np.asarray(np.linalg.det(a))
NP.inverse = np.linalg.inv
NP.solve = _np_solve
TorchNS.solve = lambda a, b: TorchNS._t().linalg.solve(a, b)

# -- einsum ---------------------------------------------------------------------------------------
_EINSUM = [
    ("matmul", "ij,jk->ik", [(2, 3), (3, 4)]),
    ("implicit-matmul", "ij,jk", [(2, 3), (3, 2)]),
    ("batched", "bij,bjk->bik", [(2, 2, 3), (2, 3, 2)]),
    ("ellipsis-broadcast", "...ij,...jk->...ik", [(2, 2, 3), (3, 2)]),
    ("diagonal", "ii->i", [(3, 3)]),
    ("trace", "ii", [(3, 3)]),
    ("diagonal-batch", "bii->bi", [(2, 3, 3)]),
    ("sum-all", "ij->", [(2, 3)]),
    ("transpose", "ij->ji", [(2, 3)]),
    ("outer", "i,j->ij", [(2,), (3,)]),
    ("dot", "i,i->", [(3,), (3,)]),
    ("three-operands", "ijk,jl,kl->il", [(2, 3, 2), (3, 2), (2, 2)]),
    ("repeated-in-two", "ij,ij->i", [(2, 3), (2, 3)]),
    ("scalar", "", [()]),
    ("scalars", ",->", [(), ()]),
    ("scalar-times-vector", ",i->i", [(), (3,)]),
    ("empty-dot", "i,i", [(0,), (0,)]),
    ("empty-rows", "ij->j", [(2, 0)]),
]


def _einsum_of(equation):
    return lambda m, *xs: m.einsum(equation, *xs)


for _desc, _eq, _shapes in _EINSUM:
    add("einsum", _desc, _einsum_of(_eq), *[r(*s) for s in _shapes])
add("einsum", "list-of-operands", lambda m, a, b: m.einsum("ij,j->i", [a, b]), r(2, 3), r(3))
add("einsum", "empty-contraction", lambda m, a, b: m.einsum("ij,jk->ik", a, m.reshape(b, (0, 3))),
    r(2, 0), r(0))

# -- det, inverse, solve ------------------------------------------------------------------------------
add("det", "3x3", lambda m, a: m.det(a), _wc(3, 3))
add("det", "1x1", lambda m, a: m.det(a), _wc(1, 1))
add("det", "batched", lambda m, a: m.det(a), _wc(2, 3, 3))
add("det", "empty-batch", lambda m, a: m.det(m.reshape(a, (0, 2, 2))), r(0))
add("det", "0x0", lambda m, a: m.det(m.reshape(a, (0, 0))), r(0))
add("inverse", "3x3", lambda m, a: m.inverse(a), _wc(3, 3))
add("inverse", "batched", lambda m, a: m.inverse(a), _wc(2, 2, 2))
# (the output flattened again: the tests build gradients from nested lists, which cannot hold (0, 2, 2))
add("inverse", "empty-batch", lambda m, a: m.reshape(m.inverse(m.reshape(a, (0, 2, 2))), (0,)), r(0))
add("solve", "vector", lambda m, a, b: m.solve(a, b), _wc(3, 3), r(3))
add("solve", "matrix", lambda m, a, b: m.solve(a, b), _wc(3, 3), r(3, 2))
add("solve", "batched-vectors", lambda m, a, b: m.solve(a, b), _wc(2, 3, 3), r(2, 3))
add("solve", "vector-broadcast-batch", lambda m, a, b: m.solve(a, b), _wc(2, 3, 3), r(3))
add("solve", "matrix-broadcast-batch", lambda m, a, b: m.solve(a, b), _wc(3, 3), r(2, 3, 2))
add("solve", "empty-columns", lambda m, a, b: m.solve(a, b), _wc(2, 2), r(2, 0))
