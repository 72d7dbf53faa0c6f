"""An index that mixes ints with tensor (or list) indices selects with the ints first, as torch:
x[1, :, idx] is x[1][:, idx] (NumPy would put the indexed dim first). Shapes, values, gradients
and writes against torch."""
from __future__ import annotations

import numpy as np
import pytest

import autodsl as ad

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.usefixtures("torch_float64")     # autodsl's default float dtype

X = np.arange(1.0, 49.0).reshape(2, 3, 4, 2)
I = [0, 1]


def _keys(m, tensor):
    i = tensor(I)
    j = tensor([2, 0, 1])
    mask = tensor([True, False, True])
    return [
        (1, slice(None), i), (1, slice(None), slice(None), i), (i, 1, j[:2]), (slice(None), 0, slice(None), i),
        (1, Ellipsis, i), (None, 1, slice(None), i), (1, mask), (1, slice(None), [0, 2]), (0, j, 1),
        (i, slice(None), 1), (slice(None), 2, Ellipsis, i), (1, slice(0, 2), None, i),
    ]


def _ad_index(values):
    arr = np.asarray(values)
    return ad.tensor(values, dtype=ad.bool if arr.dtype == bool else ad.int64)


def _torch_index(values):
    return torch.tensor(values)


@pytest.mark.parametrize("n", range(12))
def test_reads_and_their_gradients_are_torchs(n):
    x = ad.tensor(X, requires_grad=True)
    t = torch.tensor(X, requires_grad=True)
    y, ty = x[_keys(ad, _ad_index)[n]], t[_keys(torch, _torch_index)[n]]
    assert y.shape == tuple(ty.shape)
    np.testing.assert_array_equal(y.numpy(), ty.detach().numpy())
    w = np.arange(1.0, y.numel() + 1).reshape(y.shape)
    (y * ad.tensor(w)).sum().backward()
    (ty * torch.tensor(w)).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), t.grad.numpy())


@pytest.mark.parametrize("n", range(12))
def test_writes_are_torchs(n):
    x = ad.tensor(X.copy())
    t = torch.tensor(X.copy())
    shape = tuple(t[_keys(torch, _torch_index)[n]].shape)
    v = np.arange(-1.0, -1.0 - np.prod(shape), -1).reshape(shape)
    x[_keys(ad, _ad_index)[n]] = ad.tensor(v)
    t[_keys(torch, _torch_index)[n]] = torch.tensor(v)
    np.testing.assert_array_equal(x.numpy(), t.numpy())


def test_a_write_through_the_select_records_its_gradient():
    w = ad.tensor(X, requires_grad=True)
    tw = torch.tensor(X, requires_grad=True)
    x, tx = w * 1.0, tw * 1.0
    v = ad.tensor([[5.0, 6.0]] * 3, requires_grad=True)
    tv = torch.tensor([[5.0, 6.0]] * 3, requires_grad=True)
    x[1, :, _ad_index(I), 0] = v
    tx[1, :, _torch_index(I), 0] = tv
    np.testing.assert_array_equal(x.detach().numpy(), tx.detach().numpy())
    (x * x).sum().backward()
    (tx * tx).sum().backward()
    np.testing.assert_array_equal(w.grad.numpy(), tw.grad.numpy())
    np.testing.assert_array_equal(v.grad.numpy(), tv.grad.numpy())


def test_the_graph_has_torchs_two_nodes():
    x = ad.tensor(X, requires_grad=True)
    y = x[1, :, _ad_index(I)]
    assert y.grad_fn.name.startswith("IndexBackward")
    assert y.grad_fn.next_functions[0][0].name.startswith(("SelectBackward", "IndexBackward"))
