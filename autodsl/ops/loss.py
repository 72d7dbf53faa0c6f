"""Losses: mean squared error, negative log-likelihood, cross-entropy."""
from __future__ import annotations

from ..backend import namespace_of
from ..errors import DTypeError, ShapeError, ValueError_
from .registry import Op, apply, defop

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
            return sq.mean()
        if reduction == "sum":
            return sq.sum()
        return sq

    def backward(self, g):
        x, y = self.saved_tensors
        scale = 2.0 / self.count if self.reduction == "mean" else 2.0
        d = (x - y) * (g * scale)                     # d/dx (x-y)^2 = 2(x-y)
        na, nb = self.needs_input_grad
        return (d if na else None), (-d if nb else None)


@defop("nll_loss")
class NllLoss(Op):
    """-logp[i, target[i]], averaged (or summed) over the batch."""
    differentiable = (0,)

    def forward(self, logp, target, reduction="mean"):
        xp = namespace_of(logp)
        self.reduction = reduction
        self.shape = logp.shape
        t = target.astype("int64", copy=False)
        if logp.ndim == 1:
            picked = -logp[t]
            self.index = (t,)
        else:
            rows = xp.arange(logp.shape[0])
            picked = -logp[rows, t]
            self.index = (rows, t)
        self.count = picked.size
        if reduction == "mean":
            return picked.mean()
        if reduction == "sum":
            return picked.sum()
        return picked

    def backward(self, g):
        from .movement import IndexAdd  # noqa: PLC0415
        scale = -1.0 / self.count if self.reduction == "mean" else -1.0
        gg = g * scale
        if self.reduction != "none" and len(self.index) == 2:
            gg = gg.expand(self.index[0].shape[0])
        return apply(IndexAdd, gg, key=self.index, shape=self.shape, basic=False), None


def mse_loss(input, target, reduction="mean"):
    """Mean squared error between two tensors of one shape (broadcasting allowed).
    ``reduction``: "mean" (default), "sum" or "none". Example: ``mse_loss(pred, y)``
    """
    _check_reduction(reduction)
    return apply(MseLoss, input, target, reduction=reduction)


def nll_loss(input, target, reduction="mean"):
    """Negative log-likelihood of class indices. ``input``: log-probabilities, shape (N, C)
    or (C,); ``target``: int64 class indices, shape (N,) or (). Example: ``nll_loss(logp, y)``
    """
    from ..tensor import as_tensor  # noqa: PLC0415
    _check_reduction(reduction)
    x = as_tensor(input)
    t = as_tensor(target)
    if t.dtype.is_floating:
        raise DTypeError("nll_loss needs integer class indices as target (dtype=int64)")
    if x.ndim not in (1, 2) or t.ndim != x.ndim - 1 or (x.ndim == 2 and t.shape[0] != x.shape[0]):
        raise ShapeError(f"nll_loss: input of shape {x.shape} needs a target of shape "
                         f"{x.shape[:1] if x.ndim == 2 else ()}, got {t.shape}")
    n_classes = x.shape[-1]
    td = t.numpy()
    if td.size and (td.min() < 0 or td.max() >= n_classes):
        raise ValueError_(f"nll_loss: class indices must be in 0..{n_classes - 1}, got {td.min()}..{td.max()}")
    return apply(NllLoss, x, t, reduction=reduction)


def cross_entropy(input, target, reduction="mean"):
    """Softmax cross-entropy of logits ``input`` (N, C) or (C,) against class indices
    (int64, shape (N,) or ()) or class probabilities (floating, the shape of input).
    Computed as nll_loss(log_softmax(input, dim=-1), target), stable for large logits.
    Example: ``cross_entropy(logits, labels)``
    """
    from ..tensor import as_tensor  # noqa: PLC0415
    from .reduce import log_softmax, mean, sum  # noqa: PLC0415
    _check_reduction(reduction)
    x = as_tensor(input)
    t = as_tensor(target, like=None)
    logp = log_softmax(x, dim=-1)
    if t.dtype.is_floating:
        if t.shape != x.shape:
            raise ShapeError(f"cross_entropy with probabilities needs a target of shape {x.shape}, got {t.shape}")
        per = -sum(t * logp, dim=-1)
        if reduction == "mean":
            return mean(per)
        return sum(per) if reduction == "sum" else per
    return nll_loss(logp, t, reduction=reduction)
