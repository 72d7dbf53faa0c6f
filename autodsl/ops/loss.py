"""Losses: mean squared error, negative log-likelihood, cross-entropy."""
from __future__ import annotations

from functools import partial

from autodsl import backend
from autodsl.backend import int64
from autodsl.backend import getitem, namespace_of
from autodsl.core import deferred
from autodsl.core.grad_mode import is_grad_enabled
from autodsl.core.tensor import Tensor, as_tensor
from autodsl.core.words import shown
from autodsl.errors import AutogradError, DTypeError, ShapeError, ValueError_
from autodsl.source import warn_user
from autodsl.ops import compare as C
from autodsl.ops import elementwise as E
from autodsl.ops import movement as M
from autodsl.ops import reduce as R
from autodsl.ops.creation import arange
from autodsl.ops.formula import define
from autodsl.ops.promotion import promote_types
from autodsl.ops.registry import Op, apply, defop

__all__ = ["cross_entropy", "mse_loss", "nll_loss"]

_REDUCTIONS = ("mean", "sum", "none")


def _check_reduction(reduction):
    if not isinstance(reduction, str) or reduction not in _REDUCTIONS:     # (a tensor's == is elementwise)
        raise ValueError_(f"reduction must be one of {', '.join(map(shown, _REDUCTIONS))}, not {shown(reduction)}")


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
        if self.reduction == "mean" and not self.count:
            return None         # (nan has no literal: the formula runs)
        scale = self._scale()       # (a float: repr is exact)
        d = f"({{0}} - {{1}}) * ({{g}} * {scale!r})"
        return d, "-(" + d + ")"

    def _scale(self) -> float:
        # the mean of nothing is nan (torch's loss and its empty gradient), not a division error
        if self.reduction != "mean":
            return 2.0
        return 2.0 / self.count if self.count else float("nan")

    def formula(self, F, g, x, y):
        scale = self._scale()
        d = (x - y) * (g * scale)                     # d/dx (x-y)^2 = 2(x-y)
        ea, eb = self.next_edges
        return (d if ea is not None else None), (-d if eb is not None else None)


@defop("nll_loss")
class NllLoss(Op):
    """-w[t]·logp[n, t, ...] per target t (class dim 1, or 0 for one sample), targets equal to
    ignore_index counting for nothing; the mean divides by the sum of the counted targets' w."""
    differentiable = (0,)

    def forward(self, logp, target, *weight, reduction="mean", ignore_index=-100):
        if self._record:        # Note [a kept index] (ops/gather.py): the target and the weight
            self.save_for_backward(None, *self.inputs[1:])
        xp = namespace_of(logp)
        n_classes = logp.shape[0 if logp.ndim == 1 else 1]
        on_host = backend.on_host(target)
        if on_host and not weight and reduction != "none" and target.size:
            # (nll_loss() takes int64 targets only: the cast is for a compiled program's replay)
            t = target if target.dtype == xp.int64 else xp.astype(target, xp.int64)
            lo, hi = backend.min_max(t)
            if lo >= 0 and hi < n_classes and not (0 <= ignore_index < n_classes and xp.any(t == ignore_index)):
                return self._forward_all_counted(xp, logp, t, reduction)
        # here, not in nll_loss(): a compiled program runs forward, never the wrapper
        outside = (target != ignore_index) & ((target < 0) | (target >= n_classes))
        if on_host:
            if xp.any(outside):
                _class_index_error(target, ignore_index, n_classes)
        else:       # no host sync: tested when the values are read (core/deferred.py)
            deferred.check(xp.any(outside), partial(_class_index_error, target, ignore_index, n_classes))
        self.reduction = reduction
        self.shape = logp.shape
        t = xp.astype(target, xp.int64, copy=False)
        valid = t != ignore_index
        # (not on the host: a class outside the range, which raises later, reads class 0 till then)
        safe = xp.where(valid if on_host else valid & ~outside, t, 0)
        self.index = _class_index(xp, safe, logp.ndim)
        picked = -getitem(logp, self.index)
        self.valid = valid
        # the weight of each target, 0 where ignored, in logp's dtype (a float32 loss stays float32)
        if weight:
            w = xp.astype(weight[0], logp.dtype, copy=False)
            wt = xp.where(valid, xp.reshape(xp.take(w, xp.reshape(safe, (-1,)), axis=0), safe.shape),
                          xp.zeros((), dtype=logp.dtype))
            picked = picked * wt
        else:
            wt = xp.astype(valid, logp.dtype)
        picked = xp.astype(xp.where(valid, picked, 0.0), logp.dtype, copy=False)
        if reduction == "mean":
            total = xp.sum(wt)
            self.scale = -wt / total          # torch: nan when every target is ignored (0 / 0)
            return xp.sum(picked) / total
        self.scale = -wt
        return xp.sum(picked) if reduction == "sum" else picked

    def _forward_all_counted(self, xp, logp, t, reduction):
        """``forward`` when every target is a class index that counts, without a weight, and the
        loss is reduced (a training batch): the same numbers without the masks (``valid`` None,
        ``scale`` one 0-d value: -1, or -1/N for the mean, in logp's dtype)."""
        self.reduction = reduction
        self.shape = logp.shape
        self.index = _class_index(xp, t, logp.ndim)
        self.valid = None
        total = -backend.reduce_sum(getitem(logp, self.index), None, False)
        if reduction == "sum":
            self.scale = xp.asarray(-1, dtype=logp.dtype)
            return total
        n = t.size
        count = xp.asarray(n, dtype=logp.dtype)
        # -1/n rounded once to logp's dtype: for float32 the double quotient rounded again is the
        # float32 quotient (a double holds more than twice float32's digits), while n is exact
        self.scale = xp.asarray(-1.0 / n, dtype=logp.dtype) if n < 1 << 24 else \
            xp.asarray(-1, dtype=logp.dtype) / count
        return total / count

    rule = ("-grad * weight at each target class (/ the sum of the counted targets' weights for mean)",)

    def formula(self, F, g, *_kept):    # d/dlogp[n, t] of -w[t]·logp[n, t]: -w[t]; ignored targets: 0
        gg = F.mul_array(g, self.scale)
        if self.valid is not None:
            gg = F.where_zero(self.valid, gg)
        return (F.index_add(gg, self.index, self.shape),) + (None,) * (len(self.next_edges) - 1)


def _class_index_error(target, ignore_index, n_classes):
    """nll_loss's error for a class index outside 0..n_classes-1 (reads the target's values)."""
    flat = backend.to_host(target).reshape(-1).tolist()
    used = [v for v in flat if v != ignore_index]
    raise ValueError_(f"nll_loss: class indices must be in 0..{n_classes - 1} (or ignore_index="
                      f"{ignore_index}), got {min(used)}..{max(used)}")


def _class_index(xp, safe, ndim):
    """The index of logp (class dim 1, or 0 when 1-D) that picks each target's class: the
    target's own position in every other dim."""
    if ndim == 1:
        return (safe,)
    k = safe.ndim
    rows = []
    for d, n in enumerate(safe.shape):
        shape = [1] * k
        shape[d] = n
        rows.append(xp.reshape(xp.arange(n), tuple(shape)) if k > 1 else xp.arange(n))
    return (rows[0], safe, *rows[1:])


def mse_loss(input, target, reduction="mean"):
    """Mean squared error between two tensors of one shape (broadcasting allowed).
    ``reduction``: "mean" (default), "sum" or "none". Example: ``mse_loss(pred, y)``
    """
    _check_reduction(reduction)
    x = as_tensor(input)
    y = as_tensor(target, like=x)
    if x.shape != y.shape and isinstance(target, Tensor):     # torch warns too: (3, 1) and (3,) make (3, 3)
        shape = backend.broadcast_shape_or_none(x.shape, y.shape)
        warn_user(f"mse_loss: the target's shape {y.shape} is not the input's {x.shape}; they broadcast "
                  f"to {'nothing (they do not fit)' if shape is None else shape}, which is likely not what "
                  "you want: give both one shape")
    if x.dtype is not y.dtype:
        # torch broadcasts the two first, so a 0-d float64 target makes a float32 input's loss
        # float64 (the 0-d rule of promotion does not apply): both in the wider dtype
        dt = promote_types(x.dtype, y.dtype)
        x, y = (x if x.dtype is dt else x.to(dtype=dt)), (y if y.dtype is dt else y.to(dtype=dt))
    R.floating_input("mse_loss", x)
    return apply(MseLoss, x, y, reduction=reduction)


def _check_weight(name, weight, n_classes, dtype=None):
    """The weight as a Tensor of one value per class; with ``dtype`` (class-index targets), of
    the input's dtype, as torch requires there (DTypeError otherwise)."""
    if weight is None:
        return None
    w = as_tensor(weight)
    if w.ndim != 1 or w.shape[0] != n_classes:
        raise ShapeError(f"{name}: weight needs one value per class, shape ({n_classes},), got {w.shape}")
    if not w.dtype.is_floating:
        raise DTypeError(f"{name}: weight must be floating, got {w.dtype}; make it with dtype=float64")
    if dtype is not None and w.dtype is not dtype:
        raise DTypeError(f"{name}: weight is {w.dtype.name} but the input is {dtype.name}; give both one "
                         f"dtype, e.g. weight.to(dtype={dtype.name})")
    return w


def _class_indices(name, t):
    """DTypeError unless ``t`` holds class indices as torch takes them: int64."""
    if t.dtype is not int64:
        raise DTypeError(f"{name} needs int64 class indices as target, got {t.dtype.name}; convert it "
                         "with .to(dtype=int64)")


def nll_loss(input, target, weight=None, ignore_index=-100, reduction="mean"):
    """Negative log-likelihood of class indices, as torch.nn.functional.nll_loss. ``input``:
    log-probabilities (N, C), (C,) or (N, C, d1, ...); ``target``: int64 class indices of shape
    (N,), () or (N, d1, ...). ``weight``: one value per class (C,), multiplying each target's
    term; targets equal to ``ignore_index`` count for nothing. ``reduction="mean"`` divides by
    the sum of the counted targets' weights (their number without weight; nan when all are
    ignored, as torch), "sum" or "none". A weight that requires grad raises AutogradError (torch has no gradient
    for it either).
    Example: ``nll_loss(logp, y)``, ``nll_loss(logp, y, weight=w, ignore_index=0)``
    """
    _check_reduction(reduction)
    x = R.floating_input("nll_loss", input)
    t = as_tensor(target)
    if t.dtype.is_floating:
        raise DTypeError("nll_loss needs integer class indices as target: make it with dtype=int64")
    _class_indices("nll_loss", t)
    if x.ndim == 0:
        raise ShapeError("nll_loss needs input of shape (N, C), (C,) or (N, C, d1, ...), got a scalar")
    _target_shape(x, t)
    w = _check_weight("nll_loss", weight, x.shape[0 if x.ndim == 1 else 1], x.dtype)
    return _nll(x, t, w, ignore_index, reduction)


def _target_shape(x, t):
    """ShapeError unless the class indices ``t`` fit the input ``x`` (at least one dim)."""
    want = () if x.ndim == 1 else x.shape[:1] + x.shape[2:]
    if t.shape != want:
        raise ShapeError(f"nll_loss: input of shape {x.shape} needs a target of shape {want}, got {t.shape}")


def _nll(x, t, w, ignore_index, reduction):
    """nll_loss of a floating input of at least one dim, int64 class indices ``t`` of the
    shape it needs and the checked weight ``w`` (or None)."""
    if w is None:
        return apply(NllLoss, x, t, reduction=reduction, ignore_index=ignore_index)
    if w.requires_grad and is_grad_enabled():     # torch refuses it too
        raise AutogradError("nll_loss has no gradient for weight, which requires grad; pass weight.detach()")
    return apply(NllLoss, x, t, w, reduction=reduction, ignore_index=ignore_index)


def cross_entropy(input, target, weight=None, ignore_index=-100, reduction="mean", label_smoothing=0.0):
    """Softmax cross-entropy of logits, as torch.nn.functional.cross_entropy. ``input``: (N, C),
    (C,) or (N, C, d1, ...), classes along dim 1 (dim 0 for one sample); ``target``: int64 class
    indices (N,), () or (N, d1, ...), or floating class probabilities of the input's shape.
    ``weight``: one value per class; ``ignore_index``: class-index targets left out;
    ``reduction``: "mean" (for indices divided by the sum of the counted targets' weights, for
    probabilities by the number of samples N·d1·...), "sum" or "none"; ``label_smoothing`` in
    [0, 1] mixes the target with the uniform distribution over the C classes (below 0, or nan,
    it mixes nothing, as torch; above 1 raises). Computed from
    log_softmax(input, dim=class dim), stable for large logits. Example: ``cross_entropy(logits, labels)``
    """
    _check_reduction(reduction)
    x = R.floating_input("cross_entropy", input)
    t = as_tensor(target, like=None)
    if x.ndim == 0:
        raise ShapeError("cross_entropy needs input of shape (N, C), (C,) or (N, C, d1, ...), got a scalar")
    if isinstance(label_smoothing, bool) or not isinstance(label_smoothing, (int, float)) \
            or label_smoothing > 1.0:      # (torch: at most 1; below 0, or nan, it smooths nothing)
        raise ValueError_(f"cross_entropy: label_smoothing must be a number in [0, 1], not {shown(label_smoothing)}")
    cdim = 0 if x.ndim == 1 else 1
    n_classes = x.shape[cdim]
    if not t.dtype.is_floating:
        _class_indices("cross_entropy", t)
    w = _check_weight("cross_entropy", weight, n_classes, None if t.dtype.is_floating else x.dtype)
    wb = None if w is None else w if x.ndim == 1 else M.reshape(w, (1, n_classes) + (1,) * (x.ndim - 2))
    logp = apply(R.LogSoftmax, x, dim=cdim)     # (x is floating: R.log_softmax's check is done)
    eps = float(label_smoothing) if label_smoothing > 0.0 else 0.0
    per_class = eps / n_classes if n_classes else 0.0      # (no class: nothing to spread it over)
    if t.dtype.is_floating:
        if t.shape != x.shape:
            raise ShapeError(
                f"cross_entropy: a floating target holds class probabilities and needs the input's shape "
                f"{x.shape}, got {t.shape}; for class indices make the target an integer tensor "
                "(tensor([...], dtype=int64))")
        if ignore_index >= 0:       # torch: refused (a class index means nothing for probabilities)
            raise ValueError_("cross_entropy: ignore_index is for class-index targets, not class probabilities; "
                              "leave it out, or give the target as int64 class indices")
        if eps > 0.0:
            t = t * (1.0 - eps) + per_class
        terms = logp * t if wb is None else logp * t * wb
        if reduction == "none":
            return -R.sum(terms, dim=cdim)
        total = -R.sum(terms)
        if reduction == "sum":
            return total
        return total / (x.numel() / n_classes) if x.numel() else total * float("nan")    # torch: nan
    _target_shape(x, t)
    nll = _nll(logp, t, w, ignore_index, reduction)     # (t is int64 and w checked, as nll_loss() would)
    if eps == 0.0:
        return nll
    # torch: (1 - eps)·nll + eps/C · (the sum over classes of -w·logp, 0 for ignored targets)
    valid = C.ne(t, ignore_index)
    smooth = E.where(valid, -R.sum(logp if wb is None else logp * wb, dim=cdim), 0.0)
    if reduction == "mean":
        if w is None:
            counted = E.where(valid, 1.0, 0.0).to(dtype=logp.dtype)     # (a float32 loss stays float32)
        else:       # each target's weight through a one-hot mask (an index computed from t: no replay)
            hit = C.eq(M.unsqueeze(t, cdim), M.reshape(arange(n_classes), tuple(wb.shape)))
            counted = E.where(valid, R.sum(E.where(hit, wb, 0.0), dim=cdim), 0.0)
        smooth = R.sum(smooth) / R.sum(counted)
    elif reduction == "sum":
        smooth = R.sum(smooth)
    return nll * (1.0 - eps) + smooth * per_class


# g times an array the forward left on the node (nll_loss's per-target scale): on Tensors a constant
define("mul_array", lambda a, c: a * c, lambda t, c: t * Tensor(c))
