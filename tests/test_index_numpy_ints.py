"""NumPy's integer scalars index a tensor as Python ints do, as in torch (x[np.int64(1)]), in
reads, writes and gradients."""
from __future__ import annotations

import numpy as np
import pytest

import autodsl as ad

torch = pytest.importorskip("torch")

KEYS = [np.int64(1), np.int32(-1), (np.int64(0), np.int16(2)), (slice(None), np.uint8(1)),
        (np.int64(1), [0, 2]), (Ellipsis, np.int64(2))]


@pytest.mark.parametrize("key", KEYS, ids=repr)
def test_reads_and_gradients_are_torchs(key):
    base = np.arange(6.0).reshape(2, 3)
    x = ad.tensor(base, requires_grad=True)
    t = torch.tensor(base, requires_grad=True)
    y, u = x[key], t[key]
    assert y.shape == tuple(u.shape)
    np.testing.assert_array_equal(y.detach().numpy(), u.detach().numpy())
    (y * 2.0).sum().backward()
    (u * 2.0).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), t.grad.numpy())


def test_writes_take_numpy_ints():
    x = ad.zeros(2, 3)
    x[np.int64(1), np.int32(2)] = 5.0
    assert x.tolist() == [[0.0, 0.0, 0.0], [0.0, 0.0, 5.0]]


def test_numpy_bools_and_floats_are_still_refused():
    x = ad.zeros(2, 3)
    with pytest.raises(ad.DSLError):
        x[np.float64(1.0)]
    with pytest.raises(ad.DSLError):
        x[np.int64(5)]
