"""Optimizers: ``sgd`` and ``adam``, step for step what ``torch.optim.SGD`` and ``torch.optim.Adam``
do (their single-tensor code paths, which PyTorch runs on the CPU).

Note [optimizers under compile]: every number a step depends on that changes from one step to
the next lives in a tensor the optimizer keeps (the learning rate, Adam's step count and
moments, SGD's momentum buffer), and every update is an in-place write into such a tensor or
into a parameter under ``no_grad``. So ``compile(train_step)`` records a step like any other
array arithmetic and a replay advances the same state: Adam's bias correction is computed from
the step-count tensor, not from a Python number the program would have built in, and ``opt.lr
= 0.01`` writes into the learning-rate tensor the program reads. The state tensors are made
when the optimizer is (zeros, as PyTorch's first step makes them; SGD's first momentum step,
``buf = grad``, is ``buf = momentum * 0 + 1 * grad`` with a 0/1 tensor saying the buffer has
started), and ``held_tensors()`` lists them, so that ``compile`` finds them again through the
variable that holds the optimizer. The hyperparameters other than ``lr`` are fixed when the
optimizer is made.
"""
from __future__ import annotations

import math

import autodsl.backend as backend
from autodsl.backend import float64
from autodsl.core.grad_mode import no_grad
from autodsl.core.tensor import Tensor
from autodsl.core.words import kind as value_kind
from autodsl.errors import TypeError_, ValueError_
from autodsl.ops.creation import full, zeros_like
from autodsl.ops.elementwise import maximum, sqrt
from autodsl.ops.inplace import inplace

__all__ = ["SGD", "Adam", "Optimizer", "adam", "sgd"]


def _assign(target: Tensor, value: Tensor) -> None:
    """``target[...] = value`` as an in-place write (version bump; ``compile`` records it)."""
    inplace(lambda t, v: v, target, value, what="an optimizer's update")


def _number(v, name: str, what: str) -> float:
    if isinstance(v, Tensor) and v.numel() == 1:
        v = v.item()
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise TypeError_(f"{what}'s {name} must be a number, not {value_kind(v)}")
    v = float(v)
    if math.isnan(v):
        raise ValueError_(f"{what}'s {name} is nan; give a number such as {name}=0.01")
    return v


def _params(params, what: str) -> list:
    if isinstance(params, Tensor):
        raise TypeError_(f"{what}() takes a list of tensors to optimize, not one tensor: write "
                         f"{what}([w], ...)")
    if not isinstance(params, (list, tuple)):
        raise TypeError_(f"{what}() takes a list of tensors to optimize, e.g. {what}([w, b], lr=0.1)")
    out, seen = [], set()
    for i, p in enumerate(params):
        if not isinstance(p, Tensor):
            raise TypeError_(f"{what}(): parameter {i + 1} is {value_kind(p)}, not a tensor; "
                             "pass the tensors to optimize")
        if p.grad_fn is not None:
            raise ValueError_(f"{what}(): parameter {i + 1} is not a leaf (it was computed, by "
                              f"{p.grad_fn.name}); optimize the tensor it was computed from, or "
                              "use p = x.detach() and p.requires_grad = true")
        if not p.requires_grad:
            raise ValueError_(f"{what}(): parameter {i + 1} does not require grad, so it never gets "
                              "a .grad to step with; set p.requires_grad = true first")
        if id(p) in seen:
            raise ValueError_(f"{what}(): parameter {i + 1} appears twice in the list; pass each "
                              "tensor once")
        seen.add(id(p))
        out.append(p)
    if not out:
        raise ValueError_(f"{what}() got an empty list of parameters; pass the tensors to optimize")
    return out


def _scalar(value: float, like: Tensor, what: str = "lr") -> Tensor:
    """A 0-d tensor holding ``value`` in ``like``'s dtype and on its device. Raises ValueError_
    for a value that dtype cannot hold (torch: "value cannot be converted ... without overflow")."""
    if not backend.value_fits(value, like._data.dtype, backend.namespace_of(like._data)):
        raise ValueError_(f"{what}={value!r} does not fit in {like.dtype.name}, the dtype of the parameters; "
                          "give a smaller value, or make the parameters float64")
    return full((), value, dtype=like.dtype, device=like.device)


class Optimizer:
    """What ``sgd`` and ``adam`` share: the parameters, the learning rate (one 0-d tensor per
    dtype and device of the parameters), ``zero_grad`` and ``held_tensors``."""

    LANG_SETTABLE = frozenset({"lr"})       # what a script may assign (opt.lr = 0.01)
    _what = "optimizer"

    def __init__(self, params, lr):
        self._params = _params(params, self._what)
        lr = _number(lr, "lr", self._what)
        if lr < 0:
            raise ValueError_(f"{self._what}(): the learning rate lr={lr!r} is negative; give lr >= 0")
        self._lr = lr
        self._lrs = {}          # (dtype, device) -> the 0-d tensor the updates read
        for p in self._params:
            key = (p.dtype, p.device)
            if key not in self._lrs:
                self._lrs[key] = _scalar(lr, p)
        self._state = [self._new_state(p) for p in self._params]

    @property
    def params(self) -> list:
        """The tensors this optimizer updates (a new list; the optimizer keeps its own)."""
        return list(self._params)

    @property
    def lr(self) -> float:
        """The learning rate; assignable (``opt.lr = 0.01``), also inside a compiled step."""
        return self._lr

    @lr.setter
    def lr(self, value) -> None:
        value = _number(value, "lr", self._what)
        if value < 0:
            raise ValueError_(f"the learning rate lr={value!r} is negative; give lr >= 0")
        news = [(t, _scalar(value, t)) for t in self._lrs.values()]     # (may refuse: nothing changed yet)
        self._lr = value
        for t, new in news:
            _assign(t, new)

    def _lr_for(self, p: Tensor) -> Tensor:
        return self._lrs[(p.dtype, p.device)]

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Clear every parameter's ``.grad`` (to none, as PyTorch 2 does by default).

        ``set_to_none=true``: each ``.grad`` becomes none; ``set_to_none=false``: each is filled
        with zeros in place (the same tensor stays). Example: ``opt.zero_grad()``"""
        for p in self._params:
            if set_to_none:
                p.grad = None
                continue
            g = p.grad
            if g is not None:
                with no_grad():
                    _assign(g, zeros_like(g))

    def held_tensors(self) -> list:
        """Every tensor the optimizer keeps across steps (parameters, learning rates, state):
        ``compile`` finds a compiled step's outside tensors through them (Note [optimizers under
        compile])."""
        out = list(self._params) + list(self._lrs.values())
        for st in self._state:
            out.extend(st.values())
        return out

    def _new_state(self, p: Tensor) -> dict:   # pragma: no cover - each optimizer has its own
        raise NotImplementedError

    def __repr__(self) -> str:
        n = len(self._params)
        return f"{self._what}({n} parameter{'s' if n != 1 else ''}, {self._settings()})"


class SGD(Optimizer):
    """Stochastic gradient descent with optional momentum, dampening, weight decay and Nesterov
    momentum, as ``torch.optim.SGD`` (see ``sgd``)."""

    LANG_ATTRIBUTES = frozenset({"step", "zero_grad", "lr", "momentum", "dampening", "weight_decay",
                                 "nesterov", "params"})
    LANG_DESCRIPTION = "an sgd optimizer"                # its name in messages
    _what = "sgd"

    def __init__(self, params, lr=0.001, momentum=0, dampening=0, weight_decay=0, nesterov=False):
        w = self._what
        self.momentum = _number(momentum, "momentum", w)
        self.dampening = _number(dampening, "dampening", w)
        self.weight_decay = _number(weight_decay, "weight_decay", w)
        self.nesterov = bool(nesterov)
        if self.momentum < 0:
            raise ValueError_(f"sgd(): momentum={self.momentum!r} is negative; give momentum >= 0")
        if self.weight_decay < 0:
            raise ValueError_(f"sgd(): weight_decay={self.weight_decay!r} is negative; give weight_decay >= 0")
        if self.nesterov and (self.momentum <= 0 or self.dampening != 0):
            raise ValueError_("sgd(): nesterov=true needs a momentum above 0 and dampening=0")
        super().__init__(params, lr)

    def _new_state(self, p):
        if self.momentum == 0:
            return {}
        st = {"momentum_buffer": zeros_like(p)}
        if self.dampening != 0:
            st["started"] = _scalar(0.0, p)        # 0 until the first step, then 1
        return st

    def step(self) -> None:
        """One SGD update of every parameter that has a ``.grad`` (the others are left alone).

        ``p -= lr * g`` where ``g`` is the gradient plus ``weight_decay * p``, or with momentum
        ``buf = momentum * buf + (1 - dampening) * g`` (``buf = g`` on the first step) and ``g =
        buf`` (Nesterov: ``g + momentum * buf``). Example: ``opt.step()``"""
        m, d, wd = self.momentum, self.dampening, self.weight_decay
        with no_grad():
            for p, st in zip(self._params, self._state):
                g = p.grad
                if g is None:
                    continue
                if wd != 0:
                    g = g + wd * p                      # torch: grad.add(param, alpha=weight_decay)
                if m != 0:
                    buf = st["momentum_buffer"]
                    buf *= m
                    if d == 0:
                        buf += g
                    else:                               # 1 - dampening, or 1 on the first step
                        started = st["started"]
                        buf += (1 - d * started) * g
                        started += 1 - started
                    g = g + m * buf if self.nesterov else buf
                p -= self._lr_for(p) * g               # torch: param.add_(grad, alpha=-lr)

    def _settings(self) -> str:
        parts = [f"lr={self._lr!r}"]
        for name, default in (("momentum", 0.0), ("dampening", 0.0), ("weight_decay", 0.0)):
            if getattr(self, name) != default:
                parts.append(f"{name}={getattr(self, name)!r}")
        if self.nesterov:
            parts.append("nesterov=true")
        return ", ".join(parts)


class Adam(Optimizer):
    """Adam (Kingma and Ba, 2015), with optional L2 weight decay and AMSGrad, as
    ``torch.optim.Adam`` (see ``adam``)."""

    LANG_ATTRIBUTES = frozenset({"step", "zero_grad", "lr", "betas", "eps", "weight_decay", "amsgrad",
                                 "params"})
    LANG_DESCRIPTION = "an adam optimizer"                # its name in messages
    _what = "adam"

    def __init__(self, params, lr=0.001, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, amsgrad=False):
        w = self._what
        if isinstance(betas, Tensor) or not isinstance(betas, (list, tuple)) or len(betas) != 2:
            raise TypeError_("adam(): betas must be a pair of numbers, e.g. betas=[0.9, 0.999]")
        b1, b2 = (_number(b, "betas", w) for b in betas)
        for i, b in enumerate((b1, b2)):
            if not 0 <= b < 1:
                raise ValueError_(f"adam(): betas[{i}]={b!r} is outside [0, 1); give betas such as "
                                  "[0.9, 0.999]")
        self.betas = (b1, b2)
        self.eps = _number(eps, "eps", w)
        self.weight_decay = _number(weight_decay, "weight_decay", w)
        self.amsgrad = bool(amsgrad)
        if self.eps < 0:
            raise ValueError_(f"adam(): eps={self.eps!r} is negative; give eps >= 0, e.g. 1e-8")
        if self.weight_decay < 0:
            raise ValueError_(f"adam(): weight_decay={self.weight_decay!r} is negative; give weight_decay >= 0")
        super().__init__(params, lr)

    def _new_state(self, p):
        # torch keeps the step count as a tensor too; float64: exact counts up to 2^53
        st = {"step": full((), 0.0, dtype=float64, device=p.device), "exp_avg": zeros_like(p), "exp_avg_sq": zeros_like(p)}
        if self.amsgrad:
            st["max_exp_avg_sq"] = zeros_like(p)
        return st

    def step(self) -> None:
        """One Adam update of every parameter that has a ``.grad`` (the others are left alone).

        With ``g`` the gradient plus ``weight_decay * p`` and ``t`` the step count,
        ``m = beta1 * m + (1 - beta1) * g``, ``v = beta2 * v + (1 - beta2) * g^2`` (AMSGrad:
        the running maximum of v), and ``p -= lr / (1 - beta1^t) * m / (sqrt(v) / sqrt(1 -
        beta2^t) + eps)``, computed in the order torch's single-tensor Adam computes it.
        Example: ``opt.step()``"""
        b1, b2 = self.betas
        w = 1 - b1
        with no_grad():
            for p, st in zip(self._params, self._state):
                g = p.grad
                if g is None:
                    continue
                t, m, v = st["step"], st["exp_avg"], st["exp_avg_sq"]
                t += 1
                if self.weight_decay != 0:
                    g = g + self.weight_decay * p       # torch: grad.add(param, alpha=weight_decay)
                # torch: exp_avg.lerp_(grad, 1 - beta1), whose formula depends on the weight's size
                if abs(w) < 0.5:
                    m += w * (g - m)
                else:
                    _assign(m, g - (g - m) * (1 - w))
                v *= b2
                v += (1 - b2) * g * g                   # torch: addcmul_(grad, grad, value=1 - beta2)
                step_size = self._lr_for(p) / (1 - b1 ** t)
                # torch: bias_correction2 ** 0.5 on Python floats; sqrt is what NumPy computes
                # for x ** 0.5 on an array, and is correctly rounded however the value is held
                bias2_sqrt = sqrt(1 - b2 ** t)
                if self.amsgrad:
                    vmax = st["max_exp_avg_sq"]
                    _assign(vmax, maximum(vmax, v))
                    v = vmax
                denom = sqrt(v) / bias2_sqrt + self.eps
                p -= step_size * (m / denom)           # torch: param.addcdiv_(exp_avg, denom, value=-step_size)

    def _settings(self) -> str:
        parts = [f"lr={self._lr!r}"]
        if self.betas != (0.9, 0.999):
            parts.append(f"betas=[{self.betas[0]!r}, {self.betas[1]!r}]")
        if self.eps != 1e-8:
            parts.append(f"eps={self.eps!r}")
        if self.weight_decay != 0:
            parts.append(f"weight_decay={self.weight_decay!r}")
        if self.amsgrad:
            parts.append("amsgrad=true")
        return ", ".join(parts)


def sgd(params, lr=0.001, momentum=0, dampening=0, weight_decay=0, nesterov=False):
    """An SGD optimizer for ``params`` (a list of leaf tensors that require grad), as
    ``torch.optim.SGD``: ``opt.step()`` updates each parameter that has a ``.grad`` in place
    (under no_grad, its version counter counted), ``opt.zero_grad()`` sets the ``.grad``\\ s to none
    (``set_to_none=false``: to zeros), ``opt.lr`` can be read and assigned. Works inside
    ``compile``: a replayed step advances the momentum buffers too.

    Raises TypeError_ when params is not a list of tensors, ValueError_ for a parameter that is
    not a leaf requiring grad, a negative lr, momentum or weight_decay, or nesterov without
    momentum or with dampening.
    Example: ``opt = sgd([w, b], lr=0.1, momentum=0.9)``, then per step ``opt.zero_grad();
    loss.backward(); opt.step()``
    """
    return SGD(params, lr, momentum, dampening, weight_decay, nesterov)


def adam(params, lr=0.001, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, amsgrad=False):
    """An Adam optimizer for ``params`` (a list of leaf tensors that require grad), as
    ``torch.optim.Adam`` (L2 weight decay added to the gradient; ``amsgrad=true`` normalizes by
    the running maximum of the second moment). ``opt.step()``, ``opt.zero_grad()`` and
    ``opt.lr`` as for ``sgd``; the step count and both moments are tensors, so a compiled step
    advances them and bias-corrects every replayed step correctly.

    Raises TypeError_ when params is not a list of tensors or betas not a pair of numbers,
    ValueError_ for a parameter that is not a leaf requiring grad, a negative lr, eps or
    weight_decay, or a beta outside [0, 1).
    Example: ``opt = adam([w, b], lr=0.01)``
    """
    return Adam(params, lr, betas, eps, weight_decay, amsgrad)
