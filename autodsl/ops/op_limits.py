"""What an op is about to allocate, checked against the run's limits before it runs.

``ops/registry.apply`` calls ``check_op`` only when the run context has limits (a Session
made with ``time_limit``, ``step_limit`` or ``memory_limit``); without them an op pays one
attribute read. The time limit is checked at every op; the memory limit against an
estimate of the op's result, from the input shapes alone:

* views (``expand``, ``reshape``, indexing...) allocate nothing;
* reductions and other ops whose result is no larger than a reduction's (``sum``, ``max``,
  ``det``, losses...) are not checked before: their result is at most their input, which is
  already counted, and a long reduction of an ``expand``ed input runs in pieces
  (``ops/chunked.py``);
* a matrix product: the broadcast batch times rows times columns;
* ``cat`` and ``stack``: the sum of the inputs;
* ``einsum``: the sizes of the output's subscripts (``"i,j->ij"`` is an outer product);
* anything else (elementwise ops, with broadcasting): the broadcast shape of the inputs, so
  ``ones([1]).expand([10^12]).exp()`` fails at once with its size, before NumPy tries.

Bytes are elements times the widest input element (8 for an op that computes in floats).
"""
from __future__ import annotations

import math

from autodsl.backend import broadcast_shapes, dtype_of

__all__ = ["check_op", "result_bytes"]

# ops whose result is never larger than their largest input (reductions, losses, selections)
_SHRINKING = frozenset({
    "all", "any", "amax", "amin", "argmax", "argmin", "max_all", "min_all", "max_dim", "mean",
    "norm", "pnorm", "prod", "std", "sum", "sum_to", "var", "logsumexp", "mse_loss", "nll_loss",
    "det", "topk", "sort", "argsort", "getitem", "to",
})
_MATMUL = frozenset({"matmul"})
_JOIN = frozenset({"cat", "stack"})


def _numel(shape) -> int:
    return math.prod(shape)


def result_bytes(cls, arrays, params=None) -> int:
    """An estimate of the bytes the result of op ``cls`` on ``arrays`` (and its keyword
    ``params``) takes (see the module doc); 0 when it allocates nothing worth checking."""
    name = cls.op_name
    if cls.view or name in _SHRINKING or not arrays:
        return 0
    # through autodsl's dtype: array_api_strict's dtypes have no itemsize
    itemsize = max(dtype_of(a).np.itemsize for a in arrays)
    if cls.floating:
        itemsize = max(itemsize, 8)
    if name in _MATMUL and len(arrays) == 2:
        a, b = arrays[0].shape, arrays[1].shape
        if len(a) < 1 or len(b) < 1:
            return 0
        rows = a[-2] if len(a) >= 2 else 1
        cols = b[-1] if len(b) >= 2 else 1
        try:
            batch = broadcast_shapes(a[:-2], b[:-2])
        except Exception:  # noqa: BLE001 - the op says what does not fit
            return 0
        return _numel(batch) * rows * cols * itemsize
    if name == "einsum" and params and "ins" in params:
        sizes: dict = {}
        for sub, a in zip(params["ins"], arrays):
            for code, d in zip(sub, a.shape):
                sizes[code] = max(sizes.get(code, 1), d)
        return _numel(sizes.get(code, 1) for code in params["out"]) * itemsize
    if name in _JOIN:
        return sum(_numel(a.shape) for a in arrays) * itemsize
    if len(arrays) == 1:
        return _numel(arrays[0].shape) * itemsize
    try:
        shape = broadcast_shapes(*(a.shape for a in arrays))
    except Exception:  # noqa: BLE001 - shapes that do not broadcast (gather, index ops)
        return max(_numel(a.shape) for a in arrays) * itemsize
    return _numel(shape) * itemsize


def check_op(lim, cls, arrays, params=None) -> None:
    """Before op ``cls`` runs on ``arrays`` and ``params``: LimitError past the time limit, or
    when its result does not fit in the memory limit (``Limits.reserve``)."""
    if lim.memory_limit is None:
        lim.check_time()
        return
    n = result_bytes(cls, arrays, params)
    if n:
        lim.reserve(n, f"{cls.op_name}'s result")
    else:
        lim.check_time()
