"""clamp with tensor bounds as torch's clamp.Tensor: one op whose gradients follow
derivatives.yaml (clamp_backward, clamp_backward_min_max), so at lo == hi and where a bound is
nan they are torch's, not those of max(x, lo) and min(., hi) in turn."""
from __future__ import annotations

import numpy as np
import pytest

import autodsl as ad

torch = pytest.importorskip("torch")

# x below lo == hi (no input gets the gradient), at the bounds, lo > hi, a nan x, lo or hi
X = [0.5, -1.0, 3.0, 2.0, 1.0, 1.0, np.nan, 0.3, 5.0, -2.0, 2.0, 0.0]
LO = [1.0, 1.0, 0.0, 2.5, 1.0, 0.0, 0.0, np.nan, np.nan, 1.0, 2.0, 0.0]
HI = [1.0, 2.0, 2.0, 2.0, 1.0, 1.0, 1.0, 1.0, 1.0, np.nan, 2.0, 0.0]
W = np.arange(1.0, len(X) + 1)


def _run(lib, make):
    x, lo, hi = make(X), make(LO), make(HI)
    y = lib.clamp(x, lo, hi)
    (y * lib.tensor(W)).sum().backward()
    return [np.asarray(t.detach().numpy() if hasattr(t, "detach") else t.numpy())
            for t in (y, x.grad, lo.grad, hi.grad)]


def test_values_and_the_three_gradients_are_torchs():
    got = _run(ad, lambda v: ad.tensor(v, requires_grad=True, dtype=ad.float64))
    want = _run(torch, lambda v: torch.tensor(v, requires_grad=True, dtype=torch.float64))
    for name, g, w in zip(("value", "x.grad", "lo.grad", "hi.grad"), got, want):
        np.testing.assert_array_equal(g, w, err_msg=name)
    # where x < lo == hi the gradient goes nowhere (max then min would give it to lo)
    assert got[1][0] == got[2][0] == got[3][0] == 0.0


def test_lo_greater_than_hi_gives_hi_and_its_gradient():
    x = ad.tensor([0.2, 3.0], requires_grad=True)
    lo = ad.tensor([0.8, 0.8], requires_grad=True)
    hi = ad.tensor([0.4, 0.4], requires_grad=True)
    ad.clamp(x, lo, hi).sum().backward()
    assert x.grad.tolist() == [0.0, 0.0] and lo.grad.tolist() == [0.0, 0.0] and hi.grad.tolist() == [1.0, 1.0]


@pytest.mark.parametrize("dtypes", [("float32", "float64", "float64"), ("float32", "float32", "float64"),
                                    ("int64", "float32", "float32"), ("int64", "int64", "int64")])
@pytest.mark.parametrize("lo_dims", [0, 1])
def test_result_dtype_and_broadcasting_are_torchs(dtypes, lo_dims):
    xs = np.array([[-2.0, 0.0, 3.0], [1.0, 2.0, -1.0]])
    los = np.array([-1.0, 0.5, 1.0]) if lo_dims else np.array(-0.5)
    his = np.array(2.0)
    def make(lib, dt, v):
        return lib.tensor(v, dtype=getattr(lib, dt))
    got = ad.clamp(*(make(ad, d, v) for d, v in zip(dtypes, (xs, los, his))))
    want = torch.clamp(*(make(torch, d, v) for d, v in zip(dtypes, (xs, los, his))))
    assert got.dtype.name == str(want.dtype).removeprefix("torch.")
    assert got.shape == tuple(want.shape)
    np.testing.assert_array_equal(got.numpy(), want.numpy())


def test_a_number_beside_a_tensor_bound_is_a_constant_tensor_bound():
    """torch refuses clamp(x, tensor, number); autodsl takes the number as a 0-d bound."""
    x = ad.tensor([0.5, -1.0, 3.0], requires_grad=True)
    lo = ad.tensor([1.0, 1.0, 0.0], requires_grad=True)
    ad.clamp(x, lo, 1.0).sum().backward()
    x2 = ad.tensor([0.5, -1.0, 3.0], requires_grad=True)
    lo2 = ad.tensor([1.0, 1.0, 0.0], requires_grad=True)
    ad.clamp(x2, lo2, ad.tensor(1.0)).sum().backward()
    assert x.grad.tolist() == x2.grad.tolist() and lo.grad.tolist() == lo2.grad.tolist()
    assert lo.grad.tolist() == [0.0, 0.0, 0.0]      # lo == hi: torch's rule, nothing to lo


def test_the_language_takes_tensor_bounds():
    s = ad.Session()
    s.run("x = tensor([0.5, 3.0], requires_grad=true)\nlo = tensor([1.0, 0.0], requires_grad=true)\n"
          "hi = tensor([1.0, 2.0], requires_grad=true)\ny = clamp(x, lo, hi)\ny.sum().backward()")
    assert s.get("y").tolist() == [1.0, 2.0]
    assert s.get("lo").grad.tolist() == [0.0, 0.0] and s.get("hi").grad.tolist() == [0.0, 1.0]
