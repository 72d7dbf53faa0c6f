"""Forward values, dtypes and shapes of every sample against NumPy; dtype rules; method forms."""
import math

import numpy as np
import pytest

import autodsl as ad
from helpers import to_ad
from op_samples import NP, SAMPLES

FWD = [s for s in SAMPLES if s.numpy]


@pytest.mark.parametrize("sample", FWD, ids=[s.id for s in FWD])
def test_forward_matches_numpy(sample):
    expected = np.asarray(sample.fn(NP, *sample.args))
    out = sample.fn(ad, *[to_ad(a) for a in sample.args])
    assert isinstance(out, ad.Tensor)
    got = out.numpy()
    assert got.shape == expected.shape
    assert got.dtype == expected.dtype
    np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("sample", FWD, ids=[s.id for s in FWD])
def test_forward_with_grad_matches_forward_without(sample):
    """Recording the graph never changes the values."""
    plain = sample.fn(ad, *[to_ad(a) for a in sample.args]).numpy()
    recorded = sample.fn(ad, *[to_ad(a, requires_grad=True) for a in sample.args]).numpy()
    np.testing.assert_array_equal(plain, recorded)


def test_number_literals_are_float64():
    assert ad.tensor([1, 2]).dtype is ad.float64
    assert ad.tensor(3).dtype is ad.float64
    assert ad.tensor([[1.5, 2]]).dtype is ad.float64
    assert ad.tensor([1, 2]).numpy().dtype == np.float64


def test_explicit_dtypes():
    assert ad.tensor([1, 2], dtype=ad.int64).dtype is ad.int64
    assert ad.tensor([1, 2], dtype=ad.int64).numpy().dtype == np.int64
    assert ad.tensor([True, False]).dtype is ad.bool
    assert ad.tensor([1.0], dtype=ad.float32).numpy().dtype == np.float32


def test_float32_stays_float32():
    x32 = ad.tensor([1.0, 2.0, 3.0], dtype=ad.float32)
    for y in (x32 * 2.5, 2.5 * x32, x32 + 1, x32 / 3.0, x32 - x32, ad.exp(x32), x32.sum(),
              ad.softmax(x32, dim=0), x32 ** 2, ad.relu(x32), x32[1:], ad.where(x32 > 1, x32, 0.0)):
        assert y.dtype is ad.float32, y
    np.testing.assert_allclose((x32 * 2.5).numpy(), np.float32([2.5, 5.0, 7.5]))


def test_float32_grad_is_float32():
    x32 = ad.tensor([1.0, 2.0], dtype=ad.float32, requires_grad=True)
    (x32 * 2.5).sum().backward()
    assert x32.grad.dtype is ad.float32
    np.testing.assert_array_equal(x32.grad.numpy(), np.float32([2.5, 2.5]))


def test_int_tensors():
    i = ad.tensor([1, 2, 3], dtype=ad.int64)
    assert (i + 1).dtype is ad.int64
    np.testing.assert_array_equal((i + 1).numpy(), [2, 3, 4])
    assert (i * 2).dtype is ad.int64
    assert i.sum().dtype is ad.int64 and i.sum().item() == 6
    assert (i + 0.5).dtype is ad.float64           # int tensor with a float number: default float
    np.testing.assert_array_equal((i + 0.5).numpy(), [1.5, 2.5, 3.5])
    assert (i / 2).dtype.is_floating                 # true division
    np.testing.assert_array_equal((i / 2).numpy(), [0.5, 1.0, 1.5])


def test_int_plus_float_tensor_promotes():
    i = ad.tensor([1, 2], dtype=ad.int64)
    f = ad.tensor([0.5, 0.25])
    y = i + f
    assert y.dtype is ad.float64
    np.testing.assert_array_equal(y.numpy(), [1.5, 2.25])


def test_comparisons_give_bool():
    x = ad.tensor([1.0, 2.0, 3.0])
    for y in (x < 2, x <= 2, x > 2, x >= 2, x == 2, x != 2, (x > 1) & (x < 3), (x < 2) | (x > 2), ~(x > 2)):
        assert y.dtype is ad.bool
    np.testing.assert_array_equal((x < 2).numpy(), [True, False, False])
    np.testing.assert_array_equal(((x > 1) & (x < 3)).numpy(), [False, True, False])
    np.testing.assert_array_equal((~(x > 2)).numpy(), [True, True, False])


def test_reductions_return_0d_tensors():
    x = ad.tensor([[1.0, 2.0], [3.0, 4.0]])
    for y in (x.sum(), x.mean(), x.prod(), x.max(), x.min(), x.norm(), x.var(), x.std()):
        assert isinstance(y, ad.Tensor) and y.shape == ()
        assert isinstance(y.numpy(), np.ndarray)
    assert x.sum().item() == 10.0
    assert x.prod().item() == 24.0
    assert x.max().item() == 4.0 and x.min().item() == 1.0
    assert x.mean().item() == 2.5
    assert math.isclose(x.norm().item(), math.sqrt(30))
    assert math.isclose(x.var().item(), np.var([1, 2, 3, 4], ddof=1))
    assert math.isclose(x.std(unbiased=False).item(), np.std([1, 2, 3, 4]))


def test_keepdim_shapes():
    x = ad.tensor(np.arange(6.0).reshape(2, 3).tolist())
    assert x.sum(dim=1).shape == (2,)
    assert x.sum(dim=1, keepdim=True).shape == (2, 1)
    assert x.sum(dim=[0, 1], keepdim=True).shape == (1, 1)
    assert x.max(dim=0).values.shape == (3,)
    np.testing.assert_array_equal(x.max(dim=0).values.numpy(), [3.0, 4.0, 5.0])
    np.testing.assert_array_equal(x.max(dim=0).indices.numpy(), [1, 1, 1])
    np.testing.assert_array_equal(x.min(dim=1, keepdim=True)[0].numpy(), [[0.0], [3.0]])
    np.testing.assert_array_equal(x.min(dim=1, keepdim=True)[1].numpy(), [[0], [0]])


def test_method_forms_match_function_forms():
    x = ad.tensor([[0.5, 1.5, 2.0], [1.0, 0.25, 3.0]])
    pairs = [
        (x.exp(), ad.exp(x)), (x.log(), ad.log(x)), (x.sqrt(), ad.sqrt(x)), (x.sin(), ad.sin(x)),
        (x.cos(), ad.cos(x)), (x.tan(), ad.tan(x)), (x.tanh(), ad.tanh(x)),
        (x.sigmoid(), ad.sigmoid(x)), (x.relu(), ad.relu(x)), (x.abs(), ad.abs(x)),
        (x.neg(), ad.neg(x)), (x.sign(), ad.sign(x)), (x.clamp(min=1.0), ad.clamp(x, min=1.0)),
        (x.pow(2), ad.pow(x, 2)), (x.sum(dim=0), ad.sum(x, dim=0)), (x.mean(), ad.mean(x)),
        (x.prod(dim=1), ad.prod(x, dim=1)), (x.max(), ad.max(x)), (x.min(dim=1)[0], ad.min(x, dim=1)[0]),
        (x.norm(), ad.norm(x)), (x.var(dim=1), ad.var(x, dim=1)), (x.std(), ad.std(x)),
        (x.logsumexp(dim=1), ad.logsumexp(x, dim=1)), (x.softmax(dim=0), ad.softmax(x, dim=0)),
        (x.log_softmax(dim=1), ad.log_softmax(x, dim=1)), (x.reshape(3, 2), ad.reshape(x, 3, 2)),
        (x.view(-1), ad.view(x, -1)), (x.transpose(0, 1), ad.transpose(x, 0, 1)),
        (x.permute(1, 0), ad.permute(x, 1, 0)), (x.T, ad.transpose(x, 0, 1)),
        (x.unsqueeze(0), ad.unsqueeze(x, 0)), (x.flatten(), ad.flatten(x)),
        (x[0].expand(2, 3), ad.expand(x[0], 2, 3)), (x @ x.T, ad.matmul(x, x.T)),
        (x.matmul(x.T), ad.matmul(x, x.T)), (x.maximum(x.T.T * 0.5), ad.maximum(x, x * 0.5)),
        (x.amax(dim=0), ad.amax(x, dim=0)), (x.clone(), ad.clone(x)),
    ]
    for a, b in pairs:
        assert a.shape == b.shape
        np.testing.assert_array_equal(a.numpy(), b.numpy())


def test_operators():
    a = ad.tensor([2.0, 3.0])
    b = ad.tensor([4.0, 0.5])
    np.testing.assert_array_equal((a + b).numpy(), [6.0, 3.5])
    np.testing.assert_array_equal((a - b).numpy(), [-2.0, 2.5])
    np.testing.assert_array_equal((a * b).numpy(), [8.0, 1.5])
    np.testing.assert_array_equal((a / b).numpy(), [0.5, 6.0])
    np.testing.assert_array_equal((a ** b).numpy(), [16.0, 3.0 ** 0.5])
    np.testing.assert_array_equal((2 ** a).numpy(), [4.0, 8.0])
    np.testing.assert_array_equal((1 - a).numpy(), [-1.0, -2.0])
    np.testing.assert_array_equal((6 / a).numpy(), [3.0, 2.0])
    np.testing.assert_array_equal((-a).numpy(), [-2.0, -3.0])
    assert (a @ b).item() == 9.5


def test_shape_errors():
    with pytest.raises(ad.ShapeError):
        ad.tensor([[1.0, 2.0, 3.0]]) + ad.tensor([1.0, 2.0])
    with pytest.raises(ad.ShapeError):
        ad.matmul(ad.ones(2, 3), ad.ones(2, 3))
    with pytest.raises(ad.ShapeError):
        ad.ones(2, 3).reshape(4, 2)
    with pytest.raises(ad.ShapeError):
        ad.cat([ad.ones(2, 3), ad.ones(2, 2)], dim=0)
    with pytest.raises(ad.ShapeError):
        ad.stack([ad.ones(3), ad.ones(2)])
    with pytest.raises(ad.ShapeError):
        ad.ones(2, 3).expand(3, 3)
    with pytest.raises(ad.IndexError_):
        ad.ones(2, 3)[5]
    with pytest.raises(ad.IndexError_):
        ad.ones(2, 3).sum(dim=2)
