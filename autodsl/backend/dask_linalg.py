"""Square-matrix linear algebra on dask arrays: a NumPy function run per block of whole matrices.

Dask's linalg has no ``det``, and its ``inv`` and ``solve`` take one 2-d matrix only; autodsl's
det, inverse, solve and det's gradient (the cofactor matrix) work on batches (..., n, n). Here
the matrix dims are made one chunk each (a matrix is never split) and the batch dims keep
their chunks, so a batch of matrices is a batch of tasks, each calling NumPy on its matrices.

A singular matrix is found only when its block is computed, so it cannot raise at the op
(that would compute the matrix there): its inverse or solution is nan instead, as on "cuda",
and the other matrices of its block are computed as usual.
"""
from __future__ import annotations

import numpy as np

__all__ = ["per_matrix"]


def per_matrix(fn, arrays, core: int, dtype):
    """``fn(*host_blocks)`` over blocks of whole matrices: ``arrays`` are dask arrays of
    matrices (..., n, m) whose batch dims broadcast; the result has the batch shape and
    ``core`` matrix dims: 0 (det's number per matrix) or 2, of the last operand's matrix shape
    (inverse's, the cofactor's; solve's X has B's)."""
    import dask.array as da  # (only with dask arrays, which means dask is installed)
    batch = tuple(np.broadcast_shapes(*(tuple(a.shape[:-2]) for a in arrays)))
    nb = len(batch)
    parts = [da.broadcast_to(a, batch + tuple(a.shape[-2:])).rechunk({nb: -1, nb + 1: -1}) for a in arrays]
    first = parts[0].chunks[:nb]        # the batch dims chunked alike in every operand
    parts = [p.rechunk(first + p.chunks[nb:]) for p in parts]
    block = _nan_where_singular(fn, core)
    if core == 0:
        return da.map_blocks(block, *parts, dtype=dtype, drop_axis=[nb, nb + 1])
    return da.map_blocks(block, *parts, dtype=dtype, chunks=first + parts[-1].chunks[nb:])


def _nan_where_singular(fn, core: int):
    def block(*parts):
        try:
            return fn(*parts)
        except np.linalg.LinAlgError:       # a singular matrix in this block: nan for it alone
            batch = tuple(np.broadcast_shapes(*(p.shape[:-2] for p in parts)))
            parts = [np.broadcast_to(p, batch + p.shape[-2:]) for p in parts]
            out = np.full(batch + (tuple(parts[-1].shape[-2:]) if core else ()), np.nan,
                          dtype=np.result_type(parts[-1].dtype, 1.0))
            for i in np.ndindex(*batch):
                try:
                    out[i] = fn(*(p[i] for p in parts))
                except np.linalg.LinAlgError:
                    pass
            return out
    return block
