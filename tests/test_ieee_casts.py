"""Found by a session that ran the API with warnings as errors: casts and creation functions
give IEEE results without NumPy's RuntimeWarning (1e300 in float32 is inf, as torch stores it),
or refuse in the library's words what torch refuses (full() and an optimizer's lr beyond the
dtype, arange over an infinite range); gradcheck of a function that is infinite near the point,
round with a huge decimals, clamp of an integer tensor with a float bound, det of a matrix
holding a nan."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import autodsl as ad

INF, NAN = float("inf"), float("nan")


@pytest.fixture(autouse=True)
def warnings_are_errors():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        yield


def test_a_value_beyond_float32_is_stored_as_inf():
    assert ad.tensor([1e300], dtype=ad.float32).tolist() == [INF]
    assert ad.tensor(-1e300, dtype=ad.float32).item() == -INF
    assert ad.tensor(ad.tensor([1e300]), dtype=ad.float32).tolist() == [INF]
    x = ad.tensor(np.zeros(2, np.float32))
    x[0] = np.float64(1e300)
    x += ad.tensor([0.0, 1e300])
    assert x.tolist() == [INF, INF]
    assert (ad.tensor(np.zeros(2, np.float32)) + np.float64(1e300)).tolist() == [INF, INF]


def test_full_refuses_a_value_its_dtype_cannot_hold():
    for value, dtype in ((1e300, ad.float32), (INF, ad.int64), (NAN, ad.int64), (2.0 ** 70, ad.int64)):
        with pytest.raises(ad.DSLError, match="does not fit"):
            ad.full([2], value, dtype=dtype)
    assert ad.full([2], INF, dtype=ad.float32).tolist() == [INF, INF]
    assert np.isnan(ad.full([1], NAN, dtype=ad.float32).item())


def test_an_optimizer_refuses_a_learning_rate_its_parameters_cannot_hold_and_keeps_its_own():
    w = ad.tensor(np.ones(2, np.float32), requires_grad=True)
    with pytest.raises(ad.DSLError, match="lr=1e\\+300 does not fit in float32"):
        ad.sgd([w], lr=1e300)
    opt = ad.sgd([w], lr=0.5)
    with pytest.raises(ad.DSLError, match="does not fit"):
        opt.lr = 1e300
    assert opt.lr == 0.5
    (w * 2).sum().backward()
    opt.step()
    assert w.tolist() == [0.0, 0.0]


def test_arange_over_an_infinite_range_is_refused_in_words():
    for args in ((0, INF), (-INF, 0.0, 1.0), (0.0, 1.0, NAN)):
        with pytest.raises(ad.DSLError, match="finite numbers"):
            ad.arange(*args)


def test_linspace_and_eye_at_the_edges():
    got = ad.linspace(-1e308, 1e308, 3).tolist()       # the step overflows: IEEE, quietly
    # torch's: start + 0*inf and end - 0*inf are nan, end - 1*inf is -inf
    assert np.isnan(got[0]) and got[1] == -INF and np.isnan(got[2])
    for n in (INF, NAN):
        with pytest.raises(ad.ShapeError):
            ad.eye(n)


def test_gradcheck_of_a_function_infinite_around_the_point_says_false_quietly():
    w = ad.tensor([1000.0], requires_grad=True)
    assert ad.gradcheck(lambda t: ad.exp(t).sum(), [w], raise_exception=False) is False


@pytest.mark.parametrize("decimals", [400, -400])
def test_round_with_decimals_past_floats_range_is_nan_as_torch(decimals):
    assert np.isnan(ad.round(ad.tensor([1.5]), decimals=decimals).item())
    torch = pytest.importorskip("torch")
    assert np.isnan(torch.round(torch.tensor([1.5], dtype=torch.float64), decimals=decimals).item())


def test_clamp_of_an_integer_tensor_with_a_float_bound_is_floating_as_torch():
    x = ad.tensor([1, 2], dtype=ad.int64)
    assert ad.clamp(x, min=1.5).tolist() == [1.5, 2.0] and ad.clamp(x, min=1.5).dtype.is_floating
    assert ad.clamp(x, max=INF).tolist() == [1.0, 2.0]
    assert np.isnan(ad.clamp(x, min=NAN).numpy()).all()
    assert ad.clamp(x, min=0, max=1).tolist() == [1, 1] and ad.clamp(x, min=0, max=1).dtype == ad.int64


def test_det_of_a_matrix_holding_a_nan_is_nan_with_a_nan_gradient():
    a = np.stack([[[NAN, 1.0], [1.0, 1.0]], [[2.0, 1.0], [1.0, 3.0]]])
    A = ad.tensor(a, requires_grad=True)
    d = ad.det(A)
    d.sum().backward()
    assert np.isnan(d.numpy()[0]) and d.numpy()[1] == pytest.approx(5.0)
    assert np.isnan(A.grad.numpy()[0]).all()
    np.testing.assert_allclose(A.grad.numpy()[1], [[3.0, -1.0], [-1.0, 2.0]], rtol=1e-12)


def test_an_integer_beyond_an_integer_tensors_dtype_is_refused_in_words():
    with pytest.raises(ad.DSLError, match="does not fit in int32.*x.to\\(int64\\)"):
        ad.tensor([5], dtype=ad.int32) + 2 ** 40
    with pytest.raises(ad.DSLError, match="does not fit in int64.*x.to\\(float64\\)"):
        ad.tensor([5], dtype=ad.int64) == 2 ** 70
    assert (ad.tensor([5], dtype=ad.int32) + 7).tolist() == [12]
    s = ad.Session(echo=False)
    with pytest.raises(ad.DSLError, match="does not fit in int32"):
        s.run("x = tensor([5], dtype=int32)\nx + 2^40")
    assert s.run("x.tolist()") == [5]


def test_inverse_and_solve_of_a_matrix_holding_a_nan_are_nan_as_torch():
    a = np.stack([[[NAN, 1.0], [1.0, 1.0]], [[2.0, 1.0], [1.0, 3.0]]])
    inv = ad.inverse(ad.tensor(a)).numpy()
    assert np.isnan(inv[0]).all()
    np.testing.assert_allclose(inv[1], np.linalg.inv(a[1]), rtol=1e-12)
    sol = ad.solve(ad.tensor(a), ad.tensor(np.ones((2, 2, 1)))).numpy()
    assert np.isnan(sol[0]).all()
    np.testing.assert_allclose(sol[1], np.linalg.solve(a[1], np.ones((2, 1))), rtol=1e-12)
    with pytest.raises(ad.DSLError, match="singular"):         # a singular one beside it still raises
        ad.inverse(ad.tensor(np.stack([a[0], np.ones((2, 2))])))
    torch = pytest.importorskip("torch")
    assert np.isnan(torch.linalg.inv(torch.tensor(a)).numpy()[0]).all()


def test_clamp_refuses_an_integer_bound_its_integer_tensor_cannot_hold():
    x = ad.tensor([1, 2], dtype=ad.int64)
    for kw in ({"max": 2 ** 70}, {"min": -(2 ** 70)}, {"min": 0, "max": 2 ** 63}):
        with pytest.raises(ad.DSLError, match="does not fit in int64"):
            ad.clamp(x, **kw)
    assert ad.clamp(x, min=0, max=1).tolist() == [1, 1]
    assert ad.clamp(ad.tensor([1.0, 5.0]), max=2 ** 70).tolist() == [1.0, 5.0]


def test_check_at_an_infinite_input_says_so():
    w = ad.tensor([INF, 1.0], requires_grad=True)
    with pytest.raises(ad.DSLError, match="holds inf at \\(0,\\): no finite difference"):
        ad.check(lambda t: (t * 2).sum(), [w])
