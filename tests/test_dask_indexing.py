"""NumPy's indexing rules on dask arrays (autodsl/backend/dask_index.py): reads, writes and
scatter-adds with every kind of key, against NumPy on the same values, with the index arrays
given on the host and as dask arrays."""
import numpy as np
import pytest

da = pytest.importorskip("dask.array")

import autodsl as ad
from autodsl.backend import dask_index

X = np.arange(60.0).reshape(3, 4, 5) * 0.5 - 7.0

I2 = np.array([2, 0, 2])
J2 = np.array([1, -1, 3])

KEYS = {
    "two-arrays": (np.array([1, 1]), np.array([0, 0]), Ellipsis),
    "three-arrays": (I2, J2, np.array([4, 0, -5])),
    "slice-then-adjacent-arrays": (slice(None), J2, np.array([0, 1, 2])),
    "arrays-around-a-slice": (I2, slice(1, 3), np.array([0, 4, 4])),
    "int-and-array-apart": (0, slice(None), np.array([1, 3])),
    "int-and-array-adjacent": (slice(None), 2, np.array([1, 3])),
    "broadcast-2d-with-1d": (np.array([[0], [2]]), np.array([1, 2, 3]), Ellipsis),
    "none-first": (None, I2, J2, Ellipsis),
    "none-between": (I2, None, J2, Ellipsis),
    "ellipsis-then-arrays": (Ellipsis, np.array([0, 3]), np.array([4, 4])),
    "mask-whole": (X > 3.0, Ellipsis),
    "mask-first-two-dims": (np.arange(12).reshape(3, 4) % 5 == 1, Ellipsis),
    "slice-then-mask": (slice(None), np.array([True, False, True, True]), Ellipsis),
    "one-1d-array": (np.array([2, 0, -1, 2]), Ellipsis),
    "one-2d-array": (np.array([[0, 1], [2, 2]]), Ellipsis),
    "basic": (1, slice(None, None, -2), Ellipsis),
}


def _lazy(key):
    """The key with its arrays as dask arrays (a tensor index on the dask device)."""
    return tuple(da.from_array(k, chunks=2) if isinstance(k, np.ndarray) else k for k in key)


@pytest.mark.parametrize("lazy", [False, True], ids=["host-index", "dask-index"])
@pytest.mark.parametrize("name", list(KEYS))
def test_getitem_matches_numpy(name, lazy):
    key = KEYS[name]
    expected = X[key]
    got = dask_index.getitem(da.from_array(X, chunks=2), _lazy(key) if lazy else key)
    assert got.shape == expected.shape            # known, also after a mask
    np.testing.assert_array_equal(got.compute(), expected)


@pytest.mark.parametrize("lazy", [False, True], ids=["host-index", "dask-index"])
@pytest.mark.parametrize("name", list(KEYS))
def test_setitem_matches_numpy(name, lazy):
    key = KEYS[name]
    for value in (2.5, None):
        expected = X.copy()
        v = np.arange(float(expected[key].size)).reshape(expected[key].shape) if value is None else value
        expected[key] = v
        arr = da.from_array(X, chunks=2)
        dask_index.setitem(arr, _lazy(key) if lazy else key, v if value is not None else da.from_array(v))
        np.testing.assert_array_equal(arr.compute(), expected)


@pytest.mark.parametrize("name", ["two-arrays", "three-arrays", "broadcast-2d-with-1d", "mask-whole",
                                  "arrays-around-a-slice", "one-1d-array", "basic"])
def test_scatter_add_adds_repeated_positions_as_numpy_add_at(name):
    key = KEYS[name]
    expected = X.copy()
    shape = X[key].shape
    values = np.linspace(-1.0, 2.0, int(np.prod(shape))).reshape(shape)
    np.add.at(expected, key, values)
    arr = da.from_array(X, chunks=2)
    dask_index.scatter_add(arr, _lazy(key), da.from_array(values))
    np.testing.assert_allclose(arr.compute(), expected, rtol=1e-15, atol=1e-15)


def test_scatter_add_keeps_float32():
    arr = da.from_array(np.zeros(4, dtype=np.float32))
    dask_index.scatter_add(arr, (np.array([1, 1, 3]),), np.float32([0.5, 0.25, 1.0]))
    assert arr.dtype == np.float32
    np.testing.assert_array_equal(arr.compute(), np.float32([0.0, 0.75, 0.0, 1.0]))


def test_a_host_index_out_of_range_raises_numpys_index_error():
    arr = da.from_array(X, chunks=2)
    with pytest.raises(IndexError, match="out of bounds for axis 1 with size 4"):
        dask_index.getitem(arr, (np.array([0, 1]), np.array([0, 4]), Ellipsis))
    with pytest.raises(IndexError, match="too many indices"):
        dask_index.getitem(arr, (np.array([0]), np.array([0]), np.array([0]), np.array([0])))


@pytest.mark.parametrize("key", ["x[i]", "x[i, i]", "x[:, j]", "index_put"])
def test_a_lazy_index_out_of_range_is_an_error_when_the_values_are_read(key):
    # dask does not test the range of an index it computes (it would clip): the op leaves the
    # test for the next read, which raises the op's IndexError_ there
    x = ad.tensor([[1.0, 2.0], [3.0, 4.0]], device="dask")
    i = ad.tensor([0, 5], dtype=ad.int64, device="dask")
    j = ad.tensor([-3], dtype=ad.int64, device="dask")
    run = {"x[i]": lambda: x[i], "x[i, i]": lambda: x[i, i], "x[:, j]": lambda: x[:, j],
           "index_put": lambda: ad.index_put(x, (i,), 0.0)}[key]
    y = run()
    bad = -3 if key == "x[:, j]" else 5
    with pytest.raises(ad.IndexError_, match=f"index {bad} is out of range for dim .*found when the values"):
        y.numpy()


def test_negative_lazy_indices_count_from_the_end():
    x = ad.tensor([[1.0, 2.0], [3.0, 4.0]], device="dask")
    i = ad.tensor([1, -1, -2], dtype=ad.int64, device="dask")
    np.testing.assert_array_equal(x[i].numpy(), [[3.0, 4.0], [3.0, 4.0], [1.0, 2.0]])
    np.testing.assert_array_equal(x[i, i].numpy(), [4.0, 4.0, 1.0])
