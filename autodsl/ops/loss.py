"""Losses: mean squared error, negative log-likelihood, cross-entropy."""
from __future__ import annotations

import autodsl.backend as backend
from autodsl.backend import getitem, namespace_of
from autodsl.errors import DTypeError, ShapeError, ValueError_
from autodsl.ops.registry import Op, apply, defop
from autodsl.core.tensor import as_tensor
from autodsl.ops import reduce as R

__all__ = ["mse_loss", "nll_loss", "cross_entropy"]

_REDUCTIONS = ("mean", "sum", "none")


def _check_reduction(reduction):
    if reduction not in _REDUCTIONS:
        raise ValueError_(f"reduction must be one of {', '.join(map(repr, _REDUCTIONS))}, not {reduction!r}")


@defop("mse_loss")
class MseLoss(Op):
    """Mean (or sum) of (input - target)^2."""
    promote = True
    floating = True

    def forward(self, a, b, reduction="mean"):
        self.save_for_backward(*self.inputs)
        self.reduction = reduction
        d = a - b
        sq = d * d
        self.count = sq.size
        if reduction == "mean":
            return backend.reduce_mean(sq, None, False, sq.size)
        if reduction == "sum":
            return backend.reduce_sum(sq, None, False)
        return sq

    @classmethod
    def specialize(cls, arrays, params):
        reduction = params.get("reduction", "mean")

        def mse(a, b):              # forward's arithmetic (its facts for the formula: shapes only)
            d = a - b
            sq = d * d
            if reduction == "mean":
                return backend.reduce_mean(sq, None, False, sq.size)
            return backend.reduce_sum(sq, None, False) if reduction == "sum" else sq
        return mse

    rule = ("grad * 2 * (a - b) / n", "-grad * 2 * (a - b) / n")

    def formula_exprs(self):
        scale = 2.0 / self.count if self.reduction == "mean" else 2.0      # (a float: repr is exact)
        d = f"({{0}} - {{1}}) * ({{g}} * {scale!r})"
        return d, "-(" + d + ")"

    def formula(self, F, g, x, y):
        scale = 2.0 / self.count if self.reduction == "mean" else 2.0
        d = (x - y) * (g * scale)                     # d/dx (x-y)^2 = 2(x-y)
        ea, eb = self.next_edges
        return (d if ea is not None else None), (-d if eb is not None else None)


@defop("nll_loss")
class NllLoss(Op):
    """-logp[i, target[i]], averaged over the rows whose target is not ignore_index (or summed)."""
    differentiable = (0,)

    def forward(self, logp, target, reduction="mean", ignore_index=-100):
        xp = namespace_of(logp)
        n_classes = logp.shape[-1]
        if xp.any((target != ignore_index) & ((target < 0) | (target >= n_classes))):
            # here, not in nll_loss(): a compiled program runs forward, never the wrapper
            flat = backend.to_host(target).reshape(-1).tolist()
            used = [v for v in flat if v != ignore_index]
            raise ValueError_(f"nll_loss: class indices must be in 0..{n_classes - 1} (or ignore_index="
                              f"{ignore_index}), got {min(used)}..{max(used)}")
        self.reduction = reduction
        self.shape = logp.shape
        t = xp.astype(target, xp.int64, copy=False)
        valid = t != ignore_index
        safe = xp.where(valid, t, 0)
        if logp.ndim == 1:
            self.index = (safe,)
        else:
            self.index = (xp.arange(logp.shape[0]), safe)
        picked = -getitem(logp, self.index)
        self.valid = valid
        picked = xp.astype(xp.where(valid, picked, 0.0), logp.dtype, copy=False)
        self.count = xp.sum(xp.astype(valid, logp.dtype))     # in logp's dtype: a float32 loss stays float32
        if reduction == "mean":
            return xp.sum(picked) / self.count       # torch: nan when every row is ignored
        if reduction == "sum":
            return xp.sum(picked)
        return picked

    rule = ("-grad at each target class (/ number of counted targets for mean)",)

    def formula(self, F, g):
        if self.reduction == "mean":
            gg = F.where_zero(self.valid, g * (-1.0 / float(self.count)) if self.count else g * float("nan"))
        else:
            gg = F.where_zero(self.valid, -g)
        return F.index_add(gg, self.index, self.shape), None


def mse_loss(input, target, reduction="mean"):
    """Mean squared error between two tensors of one shape (broadcasting allowed).
    ``reduction``: "mean" (default), "sum" or "none". Example: ``mse_loss(pred, y)``
    """
    _check_reduction(reduction)
    return apply(MseLoss, input, target, reduction=reduction)


def nll_loss(input, target, reduction="mean", ignore_index=-100):
    """Negative log-likelihood of class indices. ``input``: log-probabilities, shape (N, C)
    or (C,); ``target``: int64 class indices, shape (N,) or (); rows whose target is
    ``ignore_index`` count for nothing (and are left out of the mean). Example: ``nll_loss(logp, y)``
    """
    _check_reduction(reduction)
    x = as_tensor(input)
    t = as_tensor(target)
    if t.dtype.is_floating:
        raise DTypeError("nll_loss needs integer class indices as target: make it with dtype=int64")
    if x.ndim not in (1, 2) or t.ndim != x.ndim - 1 or (x.ndim == 2 and t.shape[0] != x.shape[0]):
        raise ShapeError(f"nll_loss: input of shape {x.shape} needs a target of shape "
                         f"{x.shape[:1] if x.ndim == 2 else ()}, got {t.shape}")
    return apply(NllLoss, x, t, reduction=reduction, ignore_index=ignore_index)


def cross_entropy(input, target, reduction="mean", ignore_index=-100):
    """Softmax cross-entropy of logits ``input`` (N, C) or (C,) against class indices
    (int64, shape (N,) or ()) or class probabilities (floating, the shape of input).
    Computed as nll_loss(log_softmax(input, dim=-1), target), stable for large logits;
    rows whose class index is ``ignore_index`` are left out.
    Example: ``cross_entropy(logits, labels)``
    """
    _check_reduction(reduction)
    x = as_tensor(input)
    t = as_tensor(target, like=None)
    logp = R.log_softmax(x, dim=-1)
    if t.dtype.is_floating:
        if t.shape != x.shape:
            raise ShapeError(
                f"cross_entropy: a floating target holds class probabilities and needs the input's shape "
                f"{x.shape}, got {t.shape}; for class indices make the target an integer tensor "
                "(tensor([...], dtype=int64))")
        per = -R.sum(t * logp, dim=-1)
        if reduction == "mean":
            return R.mean(per)
        return R.sum(per) if reduction == "sum" else per
    return nll_loss(logp, t, reduction=reduction, ignore_index=ignore_index)
