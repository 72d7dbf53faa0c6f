"""Note [one formula] (ops/formula.py): without create_graph, formulas run on the
arrays directly; they must give exactly what the recorded formulas give under create_graph."""
from __future__ import annotations

import numpy as np
import pytest

import autodsl as ad

FUNCS = {
    "mul": lambda x, y: (x * y * 1.5).sum(),
    "sub": lambda x, y: (x - y).sum() + (0.5 - x).sum(),
    "exp": lambda x, y: ad.exp(x * y).sum(),
    "sin": lambda x, y: ad.sin(x * y).sum(),
    "cos": lambda x, y: ad.cos(x - y).sum(),
    "relu": lambda x, y: ad.relu(x * y - 0.5).sum(),
    "broadcast": lambda x, y: (x * y[0] - ad.exp(y[:1]) * x).sum(),
}


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("name", sorted(FUNCS))
def test_plain_and_recorded_formulas_agree_exactly(name, dtype):
    rng = np.random.default_rng(3)
    xv, yv = rng.standard_normal(5), rng.standard_normal(5)
    xv[0] = 0.0                                             # relu's kink, an exact zero product
    x = ad.tensor(xv, dtype=dtype, requires_grad=True)
    y = ad.tensor(yv, dtype=dtype, requires_grad=True)
    plain = ad.grad(FUNCS[name](x, y), [x, y])               # no create_graph: the array path
    recorded = ad.grad(FUNCS[name](x, y), [x, y], create_graph=True)
    for p, r in zip(plain, recorded):
        assert p.dtype is r.dtype
        assert np.array_equal(p.numpy(), r.numpy())
        assert np.array_equal(np.signbit(p.numpy()), np.signbit(r.numpy()))
