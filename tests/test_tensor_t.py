"""``x.t()``, as torch's: a matrix's transpose (a view), a tensor of 0 or 1 dims as it is, and a
ShapeError for more than 2 dims; from Python and in the language."""
from __future__ import annotations

import io

import numpy as np
import pytest

import autodsl as ad

pytestmark = pytest.mark.usefixtures("torch_float64")


@pytest.mark.parametrize("shape", [(), (3,), (2, 3), (1, 4)])
def test_values_and_gradient_are_torchs(shape):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(0)
    v = rng.standard_normal(shape)
    w = rng.standard_normal(shape[::-1])
    x = ad.tensor(v.tolist(), requires_grad=True)
    tx = torch.tensor(v, requires_grad=True)
    y, ty = x.t(), tx.t()
    assert y.shape == tuple(ty.shape)
    np.testing.assert_array_equal(y.detach().numpy(), ty.detach().numpy())
    (y * ad.tensor(w.tolist())).sum().backward()
    (ty * torch.tensor(w)).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), tx.grad.numpy())


def test_a_matrixs_t_is_a_view():
    x = ad.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    y = x.t()
    y[2, 0] = 30.0                   # torch: writes x[0, 2]
    assert x.tolist() == [[1.0, 2.0, 30.0], [4.0, 5.0, 6.0]]


def test_more_than_two_dims_is_a_shape_error():
    with pytest.raises(ad.ShapeError, match=r"t\(\) transposes a tensor of at most 2 dims, not 3"):
        ad.zeros(2, 2, 2).t()


def test_in_the_language():
    out = io.StringIO()
    s = ad.Session(out=out)
    s.run("x = tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=true)\n"
          "y = (x.t() * tensor([[1.0, 10.0], [100.0, 1000.0]])).sum()\n"
          "y.backward()\n", "t.ad")
    assert s.get("x").grad.tolist() == [[1.0, 100.0], [10.0, 1000.0]]
    with pytest.raises(ad.ShapeError) as info:
        s.run("zeros(2, 2, 2).t()\n", "t3.ad")
    assert (info.value.file, info.value.line) == ("t3.ad", 1)
