"""Bugs found trying the dask device as a new user (issue 14): each case runs on cpu and on
dask and the values must agree."""
import numpy as np
import pytest

pytest.importorskip("dask.array")

import autodsl as ad


@pytest.mark.parametrize("dev", ["cpu", "dask"])
def test_write_through_a_view_with_a_new_dim(dev):
    # dask's own item assignment misreads a key with None (m[None, 1:, 2] = v raised
    # "cannot write a value of shape (1, 2) into a slice of shape (1, 2)")
    m = ad.tensor(np.arange(12.0).reshape(3, 4).tolist(), device=dev)
    n = m[None, 1:, 2]
    n *= 2
    m[None, 0, None, 1:3] = ad.tensor([[[-1.0, -2.0]]], device=dev)
    want = np.arange(12.0).reshape(3, 4)
    want[1:, 2] *= 2
    want[0, 1:3] = [-1.0, -2.0]
    np.testing.assert_array_equal(m.numpy(), want)
    np.testing.assert_array_equal(n.numpy(), want[None, 1:, 2])
