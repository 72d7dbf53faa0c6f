"""Found by a session that compared empty and 0-d tensors with PyTorch: max/min over a dim
whose kept dims include a 0, einsum with a subscript another operand has at size 1 (0 or n
in this one), all/any over dim 0 or -1 of a 0-d tensor, eye with a negative size."""
from __future__ import annotations

import numpy as np
import pytest

import autodsl as ad


def _grads(fn_ad, fn_torch, arrays):
    torch = pytest.importorskip("torch")
    xs = [ad.tensor(a, requires_grad=True) for a in arrays]
    ts = [torch.tensor(a, requires_grad=True) for a in arrays]
    fn_ad(*xs).sum().backward()
    fn_torch(torch, *ts).sum().backward()
    return [(x.grad.numpy(), t.grad.numpy()) for x, t in zip(xs, ts)]


@pytest.mark.parametrize("pick", ["max", "min"])
@pytest.mark.parametrize("shape, dim, keepdim", [((2, 0, 5), 0, False), ((2, 0, 5), 2, True),
                                                 ((2, 3, 0, 4), 1, False), ((2, 3, 5), 1, True)])
def test_max_and_min_over_a_dim_send_a_gradient_of_the_inputs_shape(pick, shape, dim, keepdim):
    x = np.arange(float(np.prod(shape))).reshape(shape) % 3
    for got, want in _grads(lambda a: getattr(ad, pick)(a, dim=dim, keepdim=keepdim)[0],
                            lambda torch, a: getattr(torch, pick)(a, dim=dim, keepdim=keepdim)[0], [x]):
        assert got.shape == shape
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("equation, shapes", [
    ("ij,jk->ik", [(3, 0), (1, 4)]), ("i,i->", [(0,), (1,)]), ("ij,j->i", [(3, 0), (1,)]),
    ("ij,jk,kl->il", [(2, 0), (1, 3), (3, 2)]), ("ij,jk->ik", [(3, 4), (1, 2)]),
    ("ij,jk->ik", [(3, 1), (4, 2)]), ("bij,bjk->bik", [(1, 2, 3), (5, 3, 1)])])
def test_einsum_gradients_along_a_subscript_another_operand_broadcasts(equation, shapes):
    rng = np.random.default_rng(7)
    arrays = [rng.standard_normal(s) for s in shapes]
    for (got, want), shape in zip(_grads(lambda *a: ad.einsum(equation, *a),
                                         lambda torch, *a: torch.einsum(equation, *a), arrays), shapes):
        assert got.shape == shape
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


def test_einsum_broadcast_second_derivatives_match_finite_differences():
    rng = np.random.default_rng(8)
    a = ad.tensor(rng.standard_normal((3, 4)), requires_grad=True)
    b = ad.tensor(rng.standard_normal((1, 2)), requires_grad=True)
    assert ad.gradgradcheck(lambda x, y: ad.einsum("ij,jk->ik", x, y), (a, b))


@pytest.mark.parametrize("fn", ["all", "any"])
@pytest.mark.parametrize("dim", [0, -1, [0]])
@pytest.mark.parametrize("keepdim", [False, True])
def test_all_and_any_over_dim_0_of_a_0d_tensor_are_the_tensor_itself(fn, dim, keepdim):
    for v in (0.0, 2.0):
        got = getattr(ad, fn)(ad.tensor(v), dim=dim, keepdim=keepdim)
        assert got.shape == () and got.item() is bool(v)


def test_all_over_a_dim_a_0d_tensor_lacks_is_still_an_error():
    with pytest.raises(ad.DSLError, match="out of range"):
        ad.all(ad.tensor(1.0), dim=1)


@pytest.mark.parametrize("args", [(-1,), (2, -1), (2.5,)])
def test_eye_refuses_a_size_that_is_not_a_whole_number_of_at_least_0(args):
    with pytest.raises(ad.ShapeError, match="non-negative integer"):
        ad.eye(*args)
    assert ad.eye(0).shape == (0, 0) and ad.eye(2, 0).shape == (2, 0) and ad.eye(2.0).shape == (2, 2)


@pytest.fixture
def dask_device():
    pytest.importorskip("dask", reason="the dask device needs dask: pip install 'autodsl[dask]'")
    return "dask"


@pytest.mark.parametrize("shape, dim", [((0, 4), 1), ((3, 0), 0), ((2, 0, 5), 2)])
def test_prod_of_an_empty_tensor_on_dask_sends_an_empty_gradient(dask_device, shape, dim):
    x = ad.tensor(np.zeros(shape), requires_grad=True, device=dask_device)
    x.prod(dim).sum().backward()
    assert x.grad.shape == shape


@pytest.mark.parametrize("device", ["cpu", "dask"])
@pytest.mark.parametrize("key", [np.s_[2:1], np.s_[:, 4:], np.s_[..., 3:1]])
def test_an_empty_slice_sends_zeros_back(device, key):
    if device == "dask":
        pytest.importorskip("dask", reason="the dask device needs dask: pip install 'autodsl[dask]'")
    x = ad.tensor(np.ones((3, 4)), requires_grad=True, device=device)
    x[key].sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), np.zeros((3, 4)))


@pytest.mark.parametrize("src, name", [("max([])", "max"), ("min([])", "min")])
def test_the_language_names_max_and_min_of_nothing_as_written(src, name):
    with pytest.raises(ad.DSLError) as info:
        ad.Session(echo=False).run(src)
    assert str(info.value).splitlines()[0].split(": ", 1)[1].startswith(f"{name} of an empty tensor")


def test_anomaly_mode_names_an_empty_mean_and_a_var_without_enough_elements():
    import warnings
    with ad.detect_anomaly(), warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        ad.tensor([]).mean()
        ad.tensor([1.0]).var()
    texts = [str(w.message) for w in seen]
    assert len(texts) == 2
    assert "the mean of no elements is 0/0" in texts[0]
    assert "too few elements for the correction" in texts[1]


def test_why_of_an_empty_leaf_says_it_is_empty():
    x = ad.tensor(np.zeros((0, 3)), requires_grad=True)
    y = (x * 2).sum()
    y.backward()
    w = ad.why(x)
    from autodsl.tools.why import REASONS
    assert w.reason == "empty" and "empty" in REASONS
    assert "no elements (shape (0, 3))" in str(w) and "zeroed" not in str(w)
