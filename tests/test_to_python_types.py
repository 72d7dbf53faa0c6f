"""x.to(float), x.to(int), x.to(bool) and x.to(..., copy=true), as torch."""
from __future__ import annotations

import pytest

import autodsl as ad

torch = pytest.importorskip("torch")


@pytest.mark.parametrize("py", [float, int, bool])
def test_python_types_stand_for_torchs_dtypes(py):
    a, t = ad.ones(3, dtype=ad.float32).to(py), torch.ones(3).to(py)
    assert a.dtype.name == str(t.dtype).removeprefix("torch.")
    assert ad.ones(3, dtype=ad.float32).to(dtype=py).dtype is a.dtype


def test_copy_gives_a_new_tensor_with_a_gradient():
    x = ad.ones(3, dtype=ad.float32, requires_grad=True)
    assert x.to(ad.float32) is x
    y = x.to(ad.float32, copy=True)
    assert y is not x and y.grad_fn is not None
    (y * 2.0).sum().backward()
    assert x.grad.numpy().tolist() == [2.0, 2.0, 2.0]
    with pytest.raises(ad.DSLError, match="copy"):
        x.to(ad.float32, copy=1)
