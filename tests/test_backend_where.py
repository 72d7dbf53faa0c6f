"""backend.where: the bitwise select for where(mask, g, 0) must equal NumPy's where exactly."""
import numpy as np
import pytest

import autodsl as ad
from autodsl import backend
from autodsl.ops.formula import ARRAYS


@pytest.mark.parametrize("dt", [np.float32, np.float64])
def test_bitwise_select_is_exactly_where(dt):
    rng = np.random.default_rng(1)
    a = rng.standard_normal((7, 5)).astype(dt)
    a.flat[:5] = [np.inf, -np.inf, np.nan, -0.0, 0.0]
    c = rng.random((7, 5)) > 0.5
    c.flat[:5] = True
    got = backend.where(c, a, np.zeros((), dt))
    want = np.where(c, a, dt(0))
    assert got.dtype == want.dtype
    assert np.array_equal(got, want, equal_nan=True)
    assert np.array_equal(np.signbit(got), np.signbit(want))     # -0.0 kept where selected


@pytest.mark.parametrize("other", [np.array(-0.0), np.array(1.0), np.zeros(3)])
def test_other_forms_fall_back_to_where(other):
    a = np.array([1.0, np.nan, -2.0])
    c = np.array([False, True, False])
    got = backend.where(c, a, other)
    want = np.where(c, a, other)
    assert np.array_equal(got, want, equal_nan=True)
    assert np.array_equal(np.signbit(got), np.signbit(want))


def test_relu_gradient_with_non_finite_upstream_matches_torch():
    torch = pytest.importorskip("torch")
    vals = [-1.0, 2.0, 0.0, 3.0]
    up = [np.inf, np.nan, 5.0, -0.0]
    x = ad.tensor(vals, requires_grad=True)
    ad.relu(x).backward(ad.tensor(up))
    tx = torch.tensor(vals, dtype=torch.float64, requires_grad=True)
    torch.relu(tx).backward(torch.tensor(up, dtype=torch.float64))
    got, want = x.grad.numpy(), tx.grad.numpy()
    assert np.array_equal(got, want, equal_nan=True)
    assert np.array_equal(np.signbit(got), np.signbit(want))


@pytest.mark.parametrize("dt", [np.float32, np.float64])
@pytest.mark.parametrize("layout", ["contiguous", "transposed", "0-d"])
def test_both_forms_give_where_bit_for_bit(dt, layout):
    # where(c, a, +0) and where(c, +0, b): a's bits kept or +0.0, whatever the mask's layout
    rng = np.random.default_rng(2)
    a = rng.standard_normal((5, 7)).astype(dt)
    a.flat[:6] = [np.inf, -np.inf, np.nan, -0.0, 0.0, -np.nan]
    c = rng.random((7, 5)).T > 0.5
    c.flat[:6] = [True, False, True, True, False, True]
    if layout == "contiguous":
        c = np.ascontiguousarray(c)
    elif layout == "0-d":
        a, c = a[0, 3].copy().reshape(()), np.array(True)
    z = np.zeros((), dt)
    for got, want in ((backend.where(c, a, z), np.where(c, a, z)), (backend.where(c, z, a), np.where(c, z, a)),
                      (backend.where(~c, a, z), np.where(~c, a, z)), (backend.where(~c, z, a), np.where(~c, z, a))):
        assert np.asarray(got).dtype == want.dtype and np.shape(got) == want.shape
        assert np.asarray(got).tobytes() == want.tobytes()


@pytest.mark.parametrize("dt", [np.float32, np.float64])
@pytest.mark.parametrize("layout", ["contiguous", "transposed", "broadcast g"])
def test_where_nonzero_is_relus_where_bit_for_bit(dt, layout):
    # relu's backward keeps g where its output x is not <= 0: for an output (>= 0, -0.0 or
    # nan) that is x != 0, and the select must equal where(x <= 0, +0, g) bit for bit
    rng = np.random.default_rng(3)
    z = rng.standard_normal((6, 8)).astype(dt)
    z.flat[:8] = [np.inf, -np.inf, np.nan, -0.0, 0.0, -np.nan, -3.0, 2.0]
    x = np.maximum(z, dt(0))
    g = rng.standard_normal((8, 6)).astype(dt).T
    g.flat[:6] = [np.nan, -0.0, np.inf, 1.0, -np.inf, -np.nan]
    if layout == "contiguous":
        g = np.ascontiguousarray(g)
    elif layout == "broadcast g":
        g = np.broadcast_to(g[:1], g.shape)
    got = ARRAYS.threshold_backward(g, x)
    want = np.where(x <= 0, np.zeros((), dt), g)
    assert got.dtype == want.dtype and got.shape == want.shape
    assert got.tobytes() == want.tobytes()
    assert backend.where_nonzero(x, g).tobytes() == want.tobytes()


def test_where_nonzero_falls_back_off_the_fast_form():
    x = np.array([0.0, np.nan, 2.0, -0.0])
    for a in (np.array([1, 2, 3, 4]), np.array([1.0, 2.0, 3.0, 4.0], dtype=np.float16)):
        got = backend.where_nonzero(x, a)
        want = np.where(x != 0, a, np.zeros((), a.dtype))
        assert got.dtype == want.dtype and got.tobytes() == want.tobytes()


@pytest.mark.parametrize("dt", ["float32", "float64"])
def test_relu_backward_matches_torch_and_central_differences(dt):
    rng = np.random.default_rng(4)
    v = rng.standard_normal((5, 6))
    v.flat[:3] = [0.0, -0.0, 1e-300]
    up = rng.standard_normal((5, 6))
    x = ad.tensor(v, requires_grad=True, dtype=getattr(ad, dt))
    ad.relu(x).backward(ad.tensor(up, dtype=getattr(ad, dt)))
    torch = pytest.importorskip("torch")
    tx = torch.tensor(v, dtype=getattr(torch, dt), requires_grad=True)
    torch.relu(tx).backward(torch.tensor(up, dtype=getattr(torch, dt)))
    assert x.grad.numpy().tobytes() == tx.grad.numpy().tobytes()
    if dt == "float64":     # away from the kink, against central differences
        h = 1e-6
        for i in (5, 11, 17):
            e = np.zeros_like(v)
            e.flat[i] = h
            f = lambda w: float((ad.relu(ad.tensor(w)) * ad.tensor(up)).sum().item())  # noqa: E731
            assert x.grad.numpy().flat[i] == pytest.approx((f(v + e) - f(v - e)) / (2 * h), abs=1e-7)
