"""Binary cross-entropy of probabilities and of logits: each an elementwise op with torch's
forward and gradients (its weight and reduction are ops of their own around it)."""
from __future__ import annotations

from functools import partial

from autodsl import backend
from autodsl.backend import namespace_of
from autodsl.core import deferred
from autodsl.core.grad_mode import is_grad_enabled
from autodsl.core.tensor import Tensor, as_tensor
from autodsl.errors import AutogradError, DTypeError, ShapeError, ValueError_
from autodsl.ops import elementwise as E
from autodsl.ops import reduce as R
from autodsl.ops.loss import _check_reduction
from autodsl.ops.registry import Op, apply, defop
from autodsl.ops.special import logsigmoid
from autodsl.ops.elementwise import sigmoid

__all__ = ["binary_cross_entropy", "binary_cross_entropy_with_logits"]

# torch's EPSILON in binary_cross_entropy's gradient: 1e-12 as a C float, read as a double
_EPSILON = 9.999999960041972e-13


def _range_error(name):
    raise ValueError_(f"{name}: every input value must be a probability, between 0 and 1 (nan is not); "
                      "apply sigmoid first, or give the raw scores to binary_cross_entropy_with_logits")


@defop("binary_cross_entropy_terms", public=False)
class BinaryCrossEntropyTerms(Op):
    """-(y log x + (1 - y) log(1 - x)) elementwise, each log at least -100: torch's
    binary_cross_entropy before its weight and reduction. ValueError_ where x is outside [0, 1]."""
    __slots__ = ()
    floating = True

    def forward(self, x, y):
        self.save_for_backward(*self.inputs)
        xp = namespace_of(x)
        bad = xp.any(~((x >= 0) & (x <= 1)))        # (a nan fails both, as in torch's check)
        if backend.on_host(x):
            if bad:
                _range_error("binary_cross_entropy")
        else:       # no host sync: tested when the values are read (core/deferred.py)
            deferred.check(bad, partial(_range_error, "binary_cross_entropy"))
        # torch's kernel: (y - 1) * max(log1p(-x), -100) - y * max(log(x), -100)
        return (y - 1) * xp.maximum(xp.log1p(-x), -100) - y * xp.maximum(xp.log(x), -100)

    rule = ("grad * (a - b) / ((1 - a) * a)", "-grad * log(a / (1 - a))")

    def backward(self, g):
        # torch (binary_cross_entropy_backward): grad * (x - y) / max((1 - x) * x, EPSILON), finite
        # at x = 0 and 1; (binary_cross_entropy_target_backward): -logit(x) * grad
        x, y = self.saved_tensors
        na, nb = self.needs_input_grad
        return ((g * (x - y) / E.clamp((1 - x) * x, min=_EPSILON)) if na else None,
                -(E.log(x / (1 - x)) * g) if nb else None)


@defop("binary_cross_entropy_with_logits_terms", public=False)
class BinaryCrossEntropyWithLogitsTerms(Op):
    """(1 - y) x - logsigmoid(x) elementwise: torch's binary_cross_entropy_with_logits before its
    weight and reduction (no overflow at any logit)."""
    __slots__ = ()
    promote = True
    floating = True

    def forward(self, x, y):
        self.save_for_backward(*self.inputs)
        return (1 - y) * x - _log_sigmoid(x)

    rule = ("grad * (1 / (1 + exp(-a)) - b)", "-grad * a")

    def backward(self, g):
        # torch (binary_cross_entropy_with_logits_backward): (sigmoid(x) - y) * grad;
        # (..._target_backward): -x * grad
        x, y = self.saved_tensors
        na, nb = self.needs_input_grad
        return ((sigmoid(x) - y) * g) if na else None, (-x * g) if nb else None


@defop("binary_cross_entropy_with_logits_pos_weight", public=False)
class BinaryCrossEntropyWithLogitsPosWeight(Op):
    """(1 - y) x - (1 + (pw - 1) y) logsigmoid(x) elementwise: with torch's pos_weight."""
    __slots__ = ()
    promote = True
    floating = True
    differentiable = (0, 1)

    def forward(self, x, y, pw):
        self.save_for_backward(*self.inputs)
        return (1 - y) * x - _log_sigmoid(x) * ((pw - 1) * y + 1)

    rule = ("grad * ((pw * b + 1 - b) / (1 + exp(-a)) - pw * b)",
            "grad * (log(1 / (1 + exp(a))) - pw * log(1 / (1 + exp(-a))))", None)
    rule_inputs = ("a", "b", "pw")

    def backward(self, g):
        # torch: input: ((pw y + 1 - y) sigmoid(x) - pw y) * grad; target: (logsigmoid(-x) -
        # logsigmoid(x) pw) * grad
        x, y, pw = self.saved_tensors
        na, nb, _ = self.needs_input_grad
        t = pw * y
        return (((t + 1 - y) * sigmoid(x) - t) * g if na else None,
                (logsigmoid(-x) - logsigmoid(x) * pw) * g if nb else None, None)


def _log_sigmoid(x):
    """The arrays' logsigmoid, as ops/special.py's Logsigmoid computes it."""
    xp = namespace_of(x)
    return xp.minimum(x, backend.zero_of(x)) - xp.log1p(xp.exp(-xp.abs(x)))


def _weight(name, what, weight, x):
    """``weight`` as a Tensor of x's dtype that broadcasts to x's shape (None stays None).
    torch takes no gradient for it: one that requires grad is refused while grad mode is on."""
    if weight is None:
        return None
    w = as_tensor(weight, like=x)
    if not w.dtype.is_floating:
        raise DTypeError(f"{name}: {what} must be floating, got {w.dtype.name}; make it with "
                         f"dtype={x.dtype.name}")
    try:
        fits = backend.broadcast_shapes(w.shape, x.shape) == x.shape
    except ValueError:
        fits = False
    if not fits:
        raise ShapeError(f"{name}: {what} of shape {w.shape} must broadcast to the input's shape {x.shape}")
    if w.requires_grad and is_grad_enabled():
        raise AutogradError(f"{name} has no gradient for its {what}, as in torch; give {what}.detach() "
                            "(or compute it under no_grad)")
    return w


def _reduced(loss, reduction):
    if reduction == "mean":
        return R.mean(loss)
    return R.sum(loss) if reduction == "sum" else loss


def binary_cross_entropy(input, target, weight=None, reduction="mean"):
    """Binary cross-entropy of probabilities, as torch.nn.functional.binary_cross_entropy:
    ``-weight * (target * log(input) + (1 - target) * log(1 - input))``, each log at least -100,
    then ``reduction`` ("mean", "sum" or "none"). ``input``: probabilities in [0, 1], any shape;
    ``target``: the same shape and floating dtype (values in [0, 1], soft labels allowed);
    ``weight``: broadcasts to input's shape. Gradient (torch's): ``(input - target) /
    max((1 - input) * input, 1e-12)`` for input, finite at 0 and 1; ``-logit(input)`` for target.

    Raises DTypeError (a non-floating input, a target of another dtype), ShapeError (target's
    shape not input's, a weight that does not broadcast to it), ValueError_ (an input value
    outside [0, 1]), AutogradError (a weight that requires grad).
    Example: ``binary_cross_entropy(sigmoid(z), y)``
    """
    name = "binary_cross_entropy"
    _check_reduction(reduction)
    x = R.floating_input(name, input)
    y = as_tensor(target, like=x)
    if y.dtype is not x.dtype:      # torch: "Found dtype Double but expected Float"
        raise DTypeError(f"{name}: the target is {y.dtype.name} but the input is {x.dtype.name}; give the "
                         f"target the input's dtype (target.to(dtype={x.dtype.name}))")
    if y.shape != x.shape:
        raise ShapeError(f"{name}: the target's shape {y.shape} must be the input's {x.shape}")
    w = _weight(name, "weight", weight, x)
    loss = apply(BinaryCrossEntropyTerms, x, y)
    if w is not None:
        loss = loss * (w if w.dtype is x.dtype else w.to(dtype=x.dtype))
    return _reduced(loss, reduction)


def binary_cross_entropy_with_logits(input, target, weight=None, reduction="mean", pos_weight=None):
    """Binary cross-entropy of logits, as torch.nn.functional.binary_cross_entropy_with_logits:
    ``weight * ((1 - target) * input - (1 + (pos_weight - 1) * target) * logsigmoid(input))``
    (torch's own formula: no overflow at any logit), then ``reduction``; one op with torch's
    gradients. ``input``: raw scores,
    any floating shape; ``target``: the same shape, floating (the result has its dtype, as in
    torch); ``weight`` broadcasts to input's shape; ``pos_weight`` (one value per class, the last
    dim) weighs the positive term. Gradient: ``(1 + (pos_weight - 1) * target) * sigmoid(input) -
    pos_weight * target`` for input.

    Raises DTypeError (a non-floating input or target), ShapeError (target's shape not input's,
    a weight that does not broadcast to it), AutogradError (a weight that requires grad).
    Example: ``binary_cross_entropy_with_logits(x @ w + b, y)``
    """
    name = "binary_cross_entropy_with_logits"
    _check_reduction(reduction)
    x = R.floating_input(name, input)
    y = as_tensor(target, like=x)
    if not y.dtype.is_floating:     # torch: "result type Float can't be cast to ... Long"
        raise DTypeError(f"{name} needs a floating target (0.0 and 1.0, or soft labels), this one is "
                         f"{y.dtype.name}; convert it with .to(dtype={x.dtype.name})")
    if y.shape != x.shape:
        raise ShapeError(f"{name}: the target's shape {y.shape} must be the input's {x.shape}")
    w = _weight(name, "weight", weight, x)
    pw = _weight(name, "pos_weight", pos_weight, x)
    if pw is None:
        loss = apply(BinaryCrossEntropyWithLogitsTerms, x, y)
    else:
        loss = apply(BinaryCrossEntropyWithLogitsPosWeight, x, y, pw)
    if loss.dtype is not y.dtype:   # torch computes in place in the target's dtype
        loss = loss.to(dtype=y.dtype)
    if w is not None:
        loss = loss * (w if w.dtype is loss.dtype else w.to(dtype=loss.dtype))
    return _reduced(loss, reduction)
