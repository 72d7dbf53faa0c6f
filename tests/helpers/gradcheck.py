"""Central finite differences in float64 against autodsl's analytic gradients.

``gradcheck(fn, inputs)`` compares, for a random vector ``v`` of the output's
shape, the vector-Jacobian product ``ad.grad(fn(*xs), xs, grad_outputs=v)``
with the numeric ``(f(x + eps e_j) - f(x - eps e_j)) · v / (2 eps)`` for
every element ``j`` of every differentiable input.

``gradgradcheck`` runs the same check on the first-order VJP computed with
``create_graph=True``, contracted with a second random vector, so that the
second derivative (the backward of the backward) is checked too.

Inputs are given as NumPy arrays (or plain Python values). Floating arrays
are the differentiable inputs; integer and bool arrays become constant
tensors of their dtype; anything else is passed through. Every evaluation
builds fresh, independent leaf tensors, and an input whose memory aliases
another input (or is a zero-stride broadcast view) is refused: perturbing one
element of it would perturb several.
"""
from __future__ import annotations

import numpy as np

import autodsl as ad

__all__ = ["gradcheck", "gradgradcheck", "directional_check", "GradcheckError", "to_ad"]

EPS = 1e-6
ATOL = 1e-5
RTOL = 1e-3


class GradcheckError(AssertionError):
    """The analytic and numeric gradients disagree."""


def to_ad(value, requires_grad=False):
    """A NumPy array (or Python value) as an autodsl leaf; other values pass through."""
    if isinstance(value, np.ndarray):
        if value.dtype.kind == "f":
            return ad.tensor(value.astype(np.float64).tolist(), dtype=ad.float64,
                             requires_grad=requires_grad)
        if value.dtype.kind == "b":
            return ad.tensor(value.tolist(), dtype=ad.bool)
        if value.dtype.kind in "iu":
            return ad.tensor(value.astype(np.int64).tolist(), dtype=ad.int64)
        raise TypeError(f"unsupported array dtype {value.dtype}")
    return value


def _float_indices(inputs):
    return [i for i, v in enumerate(inputs) if isinstance(v, np.ndarray) and v.dtype.kind == "f"]


def _check_no_alias(inputs, wrt):
    for i in wrt:
        a = inputs[i]
        if not isinstance(a, np.ndarray) or a.dtype.kind != "f":
            raise ValueError(f"input {i} is not a floating NumPy array; it cannot be perturbed")
        if a.size and 0 in a.strides and a.ndim:
            raise ValueError(f"input {i} is a broadcast view (zero stride); pass a copy")
        for j, b in enumerate(inputs):
            if j != i and isinstance(b, np.ndarray) and np.may_share_memory(a, b):
                raise ValueError(f"inputs {i} and {j} share memory; perturbing one perturbs both")


def _as_np(t):
    if isinstance(t, ad.Tensor):
        return np.asarray(t.numpy(), dtype=np.float64)
    return np.asarray(t, dtype=np.float64)


def _analytic(fn, inputs, wrt, v, create_graph=False):
    """(output value, list of VJP gradients as Tensors or None)."""
    ts = [to_ad(x, requires_grad=(i in wrt)) for i, x in enumerate(inputs)]
    out = fn(*ts)
    if not isinstance(out, ad.Tensor):
        raise TypeError(f"the function returned {type(out).__name__}, not a Tensor")
    if not out.requires_grad:
        return out, ts, [None] * len(wrt)
    vt = ad.tensor(np.asarray(v, dtype=np.float64).tolist(), dtype=out.dtype)
    grads = ad.grad(out, [ts[i] for i in wrt], grad_outputs=[vt], create_graph=create_graph,
                    allow_unused=True)
    return out, ts, grads


def _scalar(fn, inputs, wrt, v):
    ts = [to_ad(x, requires_grad=(i in wrt)) for i, x in enumerate(inputs)]
    out = fn(*ts)
    return float(np.sum(_as_np(out) * v))


def _numeric(fn, inputs, wrt, v, eps):
    result = []
    for i in wrt:
        base = inputs[i]
        g = np.zeros(base.shape, dtype=np.float64)
        flat = g.reshape(-1)
        for j in range(base.size):
            plus = [x.copy() if isinstance(x, np.ndarray) else x for x in inputs]
            minus = [x.copy() if isinstance(x, np.ndarray) else x for x in inputs]
            plus[i].reshape(-1)[j] += eps
            minus[i].reshape(-1)[j] -= eps
            flat[j] = (_scalar(fn, plus, wrt, v) - _scalar(fn, minus, wrt, v)) / (2 * eps)
        result.append(g)
    return result


def _prepare(fn, inputs, wrt, seed):
    """float64 inputs, the indices to check, a seeded generator and a random output direction v."""
    inputs = [np.array(x, dtype=np.float64) if isinstance(x, float) else x for x in inputs]
    inputs = [x.astype(np.float64, copy=False) if isinstance(x, np.ndarray) and x.dtype.kind == "f" else x
              for x in inputs]
    wrt = _float_indices(inputs) if wrt is None else list(wrt)
    _check_no_alias(inputs, wrt)
    rng = np.random.default_rng(seed)
    probe = fn(*[to_ad(x) for x in inputs])
    return inputs, wrt, rng, rng.standard_normal(probe.shape)


def gradcheck(fn, inputs, wrt=None, *, eps=EPS, atol=ATOL, rtol=RTOL, seed=0):
    """Check fn's first derivatives; returns True or raises GradcheckError.

    ``fn(*tensors) -> Tensor``; ``inputs``: NumPy arrays (float ones are
    differentiable) or other values; ``wrt``: indices to check (default: all
    floating inputs).
    """
    inputs, wrt, rng, v = _prepare(fn, inputs, wrt, seed)
    out, ts, grads = _analytic(fn, inputs, wrt, v)
    numeric = _numeric(fn, inputs, wrt, v, eps)
    for k, i in enumerate(wrt):
        a = np.zeros(inputs[i].shape) if grads[k] is None else _as_np(grads[k])
        n = numeric[k]
        if a.shape != n.shape:
            raise GradcheckError(f"input {i}: analytic gradient has shape {a.shape}, expected {n.shape}")
        if not np.allclose(a, n, atol=atol, rtol=rtol):
            raise GradcheckError(
                f"input {i}: analytic and numeric gradients differ\n"
                f"analytic:\n{a}\nnumeric:\n{n}\nmax abs diff: {np.max(np.abs(a - n))}")
    return True


def gradgradcheck(fn, inputs, wrt=None, *, eps=EPS, atol=ATOL, rtol=RTOL, seed=0):
    """Check fn's second derivatives by gradchecking its create_graph VJP.

    The first-order VJP ``u(x) = sum_k <grad_k(x; v), w_k>`` (random ``v`` and
    ``w_k``) is a scalar function of the inputs; its analytic gradient comes
    from differentiating the ``create_graph=True`` result, its numeric one from
    finite differences of first-order gradients.
    """
    inputs = [np.array(x, dtype=np.float64) if isinstance(x, float) else x for x in inputs]
    inputs = [x.astype(np.float64, copy=False) if isinstance(x, np.ndarray) and x.dtype.kind == "f" else x
              for x in inputs]
    wrt = _float_indices(inputs) if wrt is None else list(wrt)
    _check_no_alias(inputs, wrt)
    rng = np.random.default_rng(seed + 1)
    probe = fn(*[to_ad(x) for x in inputs])
    v = rng.standard_normal(probe.shape)
    ws = [rng.standard_normal(inputs[i].shape) for i in wrt]

    def first_vjp(*ts):
        out = fn(*ts)
        if not out.requires_grad:
            return ad.zeros(())
        vt = ad.tensor(v.tolist(), dtype=out.dtype)
        grads = ad.grad(out, [ts[i] for i in wrt], grad_outputs=[vt], create_graph=True,
                        allow_unused=True)
        total = ad.zeros(())
        for g, w in zip(grads, ws):
            if g is not None:
                total = total + (g * ad.tensor(w.tolist(), dtype=g.dtype)).sum()
        return total

    return gradcheck(first_vjp, inputs, wrt, eps=eps, atol=atol, rtol=rtol, seed=seed + 2)


def directional_check(fn, inputs, wrt=None, *, eps=EPS, atol=ATOL, rtol=RTOL, seed=0):
    """HIPS-style check for larger inputs: one random direction ``d`` over all inputs at once,
    comparing ``sum_i <grad_i, d_i>`` with ``(f(x + eps d) - f(x - eps d)) · v / (2 eps)``."""
    inputs, wrt, rng, v = _prepare(fn, inputs, wrt, seed)
    ds = {i: rng.standard_normal(inputs[i].shape) for i in wrt}
    _, _, grads = _analytic(fn, inputs, wrt, v)
    analytic = sum(0.0 if g is None else float(np.sum(_as_np(g) * ds[i])) for g, i in zip(grads, wrt))
    plus = [x + eps * ds[i] if i in ds else x for i, x in enumerate(inputs)]
    minus = [x - eps * ds[i] if i in ds else x for i, x in enumerate(inputs)]
    numeric = (_scalar(fn, plus, wrt, v) - _scalar(fn, minus, wrt, v)) / (2 * eps)
    if not np.isclose(analytic, numeric, atol=atol, rtol=rtol):
        raise GradcheckError(f"directional derivative: analytic {analytic}, numeric {numeric}")
    return True
