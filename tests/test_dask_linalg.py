"""Batched square-matrix linear algebra on the dask device (backend/dask_linalg.py): det,
inverse, solve and det's gradient per block of whole matrices, batch dims chunked and
broadcast, against NumPy."""
import numpy as np
import pytest

pytest.importorskip("dask.array")

import autodsl as ad

_rng = np.random.default_rng(3)
A = _rng.standard_normal((4, 3, 3)) + 3 * np.eye(3)
B = _rng.standard_normal((2, 1, 3, 2))


def _dask(x, chunks):
    return ad.tensor(x.tolist(), device="dask", chunks=chunks, requires_grad=x.dtype.kind == "f")


def test_det_inverse_solve_of_chunked_batches_match_numpy():
    a = _dask(A, (1, 2, 2))              # matrices split across chunks, batch in four
    b = _dask(B, (1, 1, 2, 1))
    np.testing.assert_allclose(ad.det(a).numpy(), np.linalg.det(A), rtol=1e-13)
    np.testing.assert_allclose(ad.inverse(a).numpy(), np.linalg.inv(A), rtol=1e-12)
    # batch dims broadcast: (4,) with (2, 1) -> (2, 4)
    np.testing.assert_allclose(ad.solve(a, b).numpy(), np.linalg.solve(A, B), rtol=1e-12)
    v = _dask(B[0, 0, :, 0], 2)          # a vector b
    np.testing.assert_allclose(ad.solve(a, v).numpy(), np.linalg.solve(A, B[0, 0, :, 0][..., None])[..., 0],
                               rtol=1e-12)


def test_det_gradient_on_dask_is_the_cofactor_matrix():
    a = _dask(A, (2, 3, 3))
    ad.det(a).sum().backward()
    np.testing.assert_allclose(a.grad.numpy(), np.linalg.det(A)[:, None, None] * np.linalg.inv(A).transpose(0, 2, 1),
                               rtol=1e-12)


def test_det_of_an_integer_matrix_on_dask_is_floating():
    d = ad.det(ad.tensor([[2, 1], [1, 3]], dtype=ad.int64, device="dask"))
    assert d.dtype is ad.float64
    assert d.item() == pytest.approx(5.0)


def test_a_singular_matrix_on_dask_gives_nan_for_it_alone():
    # found only when computed, so not raised at the op (as on cuda): that matrix's result is nan
    a = ad.tensor([[[1.0, 2.0], [2.0, 4.0]], [[2.0, 0.0], [0.0, 2.0]]], dtype=ad.float32, device="dask")
    inv = ad.inverse(a)
    assert inv.dtype is ad.float32
    got = inv.numpy()
    assert np.isnan(got[0]).all()
    np.testing.assert_array_equal(got[1], np.float32([[0.5, 0.0], [0.0, 0.5]]))
    x = ad.solve(a, ad.tensor([[1.0, 1.0], [1.0, 1.0]], dtype=ad.float32, device="dask")).numpy()
    assert np.isnan(x[0]).all()
    np.testing.assert_array_equal(x[1], np.float32([0.5, 0.5]))
    np.testing.assert_allclose(ad.det(a).numpy(), [0.0, 4.0], atol=1e-6)
