"""Binary cross-entropy of probabilities and of logits: each an elementwise op with torch's
forward and gradients (its weight and reduction are ops of their own around it)."""
from __future__ import annotations

from functools import partial

from autodsl import backend
from autodsl.backend import namespace_of
from autodsl.core import deferred
from autodsl.core.grad_mode import is_grad_enabled
from autodsl.core.tensor import as_tensor
from autodsl.errors import AutogradError, DTypeError, ShapeError, ValueError_
from autodsl.ops import elementwise as E
from autodsl.ops import reduce as R
from autodsl.ops.loss import _check_reduction
from autodsl.ops.registry import Op, apply, defop
from autodsl.ops.special import log_sigmoid_array, logsigmoid
from autodsl.ops.elementwise import sigmoid
from autodsl.ops.compare import logical_and

__all__ = ["binary_cross_entropy", "binary_cross_entropy_with_logits"]

# torch's EPSILON in binary_cross_entropy's gradient: 1e-12 as a C float, read as a double
_EPSILON = 9.999999960041972e-13


def _range_error(name):
    raise ValueError_(f"{name}: every input value must be a probability, between 0 and 1 (nan is not); "
                      "apply sigmoid first, or give the raw scores to binary_cross_entropy_with_logits")


def _target_range_error(name):
    raise ValueError_(f"{name}: every target value must be between 0 and 1 (a label or a soft label; "
                      "nan is not)")


def _check_range(x, fail):
    """``fail()`` where a value of ``x`` is outside [0, 1] or nan (torch's test): at once on the
    host, at the next read elsewhere (core/deferred.py)."""
    xp = namespace_of(x)
    bad = xp.any(~((x >= 0) & (x <= 1)))
    if backend.on_host(x):
        if bad:
            fail()
    else:
        deferred.check(bad, fail)


@defop("binary_cross_entropy_terms", public=False)
class BinaryCrossEntropyTerms(Op):
    """-(y log x + (1 - y) log(1 - x)) elementwise, each log at least -100: torch's
    binary_cross_entropy before its weight and reduction. ValueError_ where x or y is outside
    [0, 1]."""
    __slots__ = ()
    floating = True

    def forward(self, x, y):
        self.save_for_backward(*self.inputs)
        name = "binary_cross_entropy"
        _check_range(x, partial(_range_error, name))
        _check_range(y, partial(_target_range_error, name))
        xp = namespace_of(x)
        # torch's kernel: (y - 1) * max(log1p(-x), -100) - y * max(log(x), -100)
        return (y - 1) * xp.maximum(xp.log1p(-x), -100) - y * xp.maximum(xp.log(x), -100)

    rule = ("grad * (a - b) / ((1 - a) * a)", "-grad * log(a / (1 - a))")

    def backward(self, g):
        # torch (binary_cross_entropy_backward, _target_backward): its own backward op for x,
        # -logit(x) * grad for y
        x, y = self.saved_tensors
        na, nb = self.needs_input_grad
        return (apply(BinaryCrossEntropyBackward, g, x, y) if na else None,
                -(apply(Logit, x) * g) if nb else None)


@defop("binary_cross_entropy_backward", public=False)
class BinaryCrossEntropyBackward(Op):
    """grad * (x - y) / max((1 - x) x, EPSILON): binary_cross_entropy's gradient as one op, with
    torch's second derivatives (a clamp there would give 0 where (1 - x) x < EPSILON)."""
    __slots__ = ()
    floating = True

    def forward(self, g, x, y):
        self.save_for_backward(*self.inputs)
        xp = namespace_of(x)
        return g * (x - y) / xp.maximum((1 - x) * x, _EPSILON)

    rule = ("grad * (b - c) / ((1 - b) * b)", "grad * a * (b^2 - 2*b*c + c) / (b^2 * (1 - b)^2)",
            "-grad * a / ((1 - b) * b)")

    def backward(self, gg):
        # torch (FunctionsManual.cpp): binary_cross_entropy_double_backward_grad_output,
        # _double_backward and _double_backward_target, each with its eps = 1e-12 (a double)
        g, x, y = self.saved_tensors
        ng, nx, ny = self.needs_input_grad
        eps = 1e-12
        return ((gg * (x - y) / ((x + eps) * (1 - x + eps))) if ng else None,
                ((x * x - 2 * x * y + y) / ((x + eps) ** 2 * (1 - x + eps) ** 2) * (gg * g)) if nx else None,
                ((-gg * g) / E.clamp((1 - x) * x, min=eps)) if ny else None)


@defop("logit", public=False)
class Logit(Op):
    """log(x / (1 - x)) (torch.logit without eps): binary_cross_entropy's target gradient."""
    __slots__ = ()
    floating = True

    def forward(self, x):
        self.save_for_backward(self.inputs[0])
        xp = namespace_of(x)
        return xp.log(x / (1 - x))

    rule = ("grad / (a * (1 - a))",)

    def backward(self, g):
        # torch (infinitely_differentiable_logit_backward, no eps): g / (x (1 - x)) on [0, 1], nan
        # outside
        (x,) = self.saved_tensors
        inside = logical_and(x >= 0, x <= 1)
        return (E.where(inside, g / (x * (1 - x)), float("nan")),)


@defop("binary_cross_entropy_with_logits_terms", public=False)
class BinaryCrossEntropyWithLogitsTerms(Op):
    """(1 - y) x - logsigmoid(x) elementwise: torch's binary_cross_entropy_with_logits before its
    weight and reduction (no overflow at any logit), in the target's dtype, logsigmoid in x's."""
    __slots__ = ()
    floating = True

    def forward(self, x, y):
        self.save_for_backward(*self.inputs)
        return _in_dtype_of(y, (1 - y) * x - log_sigmoid_array(x))

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
    floating = True
    differentiable = (0, 1)

    def forward(self, x, y, pw):
        self.save_for_backward(*self.inputs)
        log_sig = log_sigmoid_array(x)
        log_sig = _in_dtype_of(log_sig, log_sig * ((pw - 1) * y + 1))    # torch: in place, x's dtype
        return _in_dtype_of(y, (1 - y) * x - log_sig)

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


def _in_dtype_of(like, a):
    """``a`` in ``like``'s dtype (torch's in-place results keep their tensor's dtype)."""
    return a if a.dtype == like.dtype else namespace_of(a).astype(a, like.dtype)


def _weight(name, what, weight, x):
    """``weight`` as a Tensor that broadcasts to x's shape (None stays None; any dtype, as torch).
    torch takes no gradient for it: one that requires grad is refused while grad mode is on."""
    if weight is None:
        return None
    w = as_tensor(weight, like=x)
    if backend.broadcast_shape_or_none(w.shape, x.shape) != x.shape:
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
    shape not input's, a weight that does not broadcast to it), ValueError_ (an input or target
    value outside [0, 1], or nan), AutogradError (a weight that requires grad). Second
    derivatives are torch's (binary_cross_entropy_double_backward), finite at 0 and 1 too.
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
    gradients. ``input``: raw scores, any floating shape; ``target``: the same shape, floating
    (the result has its dtype, as in torch); ``weight`` broadcasts to input's shape;
    ``pos_weight`` (one value per class, the last dim) weighs the positive term. Gradient:
    ``(1 + (pos_weight - 1) * target) * sigmoid(input) - pos_weight * target`` for input.

    Raises DTypeError (a non-floating input or target, a bool pos_weight), ShapeError (target's
    shape not input's, a weight that does not broadcast to it), AutogradError (a weight or
    pos_weight that requires grad).
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
    if pw is not None and pw.dtype is backend.bool_:      # torch: `-` of a bool tensor
        raise DTypeError(f"{name}: pos_weight is bool; give numbers (pos_weight.to(dtype={x.dtype.name}))")
    if pw is None:
        loss = apply(BinaryCrossEntropyWithLogitsTerms, x, y)
    else:
        loss = apply(BinaryCrossEntropyWithLogitsPosWeight, x, y, pw)
    if w is not None:
        loss = loss * (w if w.dtype is loss.dtype else w.to(dtype=loss.dtype))
    return _reduced(loss, reduction)
