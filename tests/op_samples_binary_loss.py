"""Op-table samples for binary_cross_entropy and binary_cross_entropy_with_logits (see op_samples.py)."""
from __future__ import annotations

import numpy as np
from op_samples import COMPOSITES, NP, TorchNS, add, r

_rng = np.random.default_rng(20261207)


def _prob(*shape):
    """Probabilities well inside (0, 1): finite differences see a smooth loss."""
    return np.asarray(_rng.uniform(0.15, 0.85, size=shape))


def _reduce(loss, reduction):
    return np.asarray(loss.mean() if reduction == "mean" else loss.sum() if reduction == "sum" else loss)


def _np_bce(x, y, weight=None, reduction="mean"):
    loss = (y - 1) * np.maximum(np.log1p(-x), -100) - y * np.maximum(np.log(x), -100)
    return _reduce(loss if weight is None else loss * np.asarray(weight), reduction)


def _np_bce_logits(x, y, weight=None, reduction="mean", pos_weight=None):
    log_sig = -np.logaddexp(0.0, -x)
    if pos_weight is not None:
        log_sig = log_sig * ((np.asarray(pos_weight) - 1) * y + 1)
    loss = (1 - y) * x - log_sig
    return _reduce(loss if weight is None else loss * np.asarray(weight), reduction)


NP.binary_cross_entropy = staticmethod(_np_bce)
NP.binary_cross_entropy_with_logits = staticmethod(_np_bce_logits)


def _torch_weights(t, x, k):
    """torch takes tensors only as weights: the samples' lists made tensors of x's dtype."""
    return {n: t.tensor(v, dtype=x.dtype) if isinstance(v, list) else v for n, v in k.items()}


TorchNS.binary_cross_entropy = lambda x, y, **k: TorchNS._t().nn.functional.binary_cross_entropy(
    x, y, **_torch_weights(TorchNS._t(), x, k))
TorchNS.binary_cross_entropy_with_logits = lambda x, y, **k: (
    TorchNS._t().nn.functional.binary_cross_entropy_with_logits(x, y, **_torch_weights(TorchNS._t(), x, k)))

for _red in ("mean", "sum", "none"):
    add("binary_cross_entropy", _red,
        (lambda k: lambda m, x, y: m.binary_cross_entropy(x, y, reduction=k))(_red), _prob(2, 3), _prob(2, 3))
    add("binary_cross_entropy_with_logits", _red,
        (lambda k: lambda m, x, y: m.binary_cross_entropy_with_logits(x, y, reduction=k))(_red),
        r(2, 3, lo=-3.0, hi=3.0), _prob(2, 3))
add("binary_cross_entropy", "scalar", lambda m, x, y: m.binary_cross_entropy(x, y), _prob(), _prob())
add("binary_cross_entropy", "weight", lambda m, x, y: m.binary_cross_entropy(x, y, weight=[0.5, 2.0, 1.5]),
    _prob(2, 3), _prob(2, 3))
add("binary_cross_entropy_with_logits", "weight-pos-weight",
    lambda m, x, y: m.binary_cross_entropy_with_logits(x, y, weight=[[0.5], [2.0]], pos_weight=[3.0, 0.5, 1.0]),
    r(2, 3), _prob(2, 3))
add("binary_cross_entropy_with_logits", "scalar", lambda m, x, y: m.binary_cross_entropy_with_logits(x, y),
    r(), _prob())
add("binary_cross_entropy_with_logits", "large-logits",
    lambda m, x, y: m.binary_cross_entropy_with_logits(x, y), np.array([-40.0, 35.0, 0.5]), _prob(3))

COMPOSITES.extend(["binary_cross_entropy", "binary_cross_entropy_with_logits"])
