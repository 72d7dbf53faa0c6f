"""Tensor.fill_ and Tensor.zero_ as PyTorch's: every element set (cast to the tensor's dtype),
the version moved, views writing into their base, refused on a leaf that requires grad while
recording, and through them a zero gradient to the tensor and the sum to a 0-d tensor value."""
from __future__ import annotations

import io

import numpy as np
import pytest

import autodsl as ad

torch = pytest.importorskip("torch")


def test_zero_and_fill_set_every_element_even_inf_and_nan():
    x = ad.tensor([1.0, np.inf, np.nan, -0.0])
    v0 = x._version[0]
    assert x.zero_() is x
    assert x.numpy().tobytes() == np.zeros(4).tobytes()      # +0.0 everywhere
    assert x._version[0] == v0 + 1
    x.fill_(-2.5)
    assert np.array_equal(x.numpy(), np.full(4, -2.5))


@pytest.mark.parametrize("value", [2.7, -3, 0])
def test_fill_casts_to_the_tensors_dtype_as_torch(value):
    for dt, tdt in ((ad.int64, torch.int64), (ad.float32, torch.float32)):
        x = ad.tensor([1, 2, 3], dtype=dt)
        t = torch.tensor([1, 2, 3], dtype=tdt)
        x.fill_(value)
        t.fill_(value)
        assert x.numpy().dtype == t.numpy().dtype and x.numpy().tobytes() == t.numpy().tobytes()


def test_a_view_writes_into_its_base():
    b = ad.tensor([[1.0, 2.0], [3.0, 4.0]])
    b[1].zero_()
    b[:, 0].fill_(7.0)
    tb = torch.tensor([[1.0, 2.0], [3.0, 4.0]], dtype=torch.float64)
    tb[1].zero_()
    tb[:, 0].fill_(7.0)
    assert np.array_equal(b.numpy(), tb.numpy())


def test_a_leaf_that_requires_grad_only_under_no_grad():
    w = ad.tensor([1.0, 2.0], requires_grad=True)
    with pytest.raises(ad.AutogradError, match="zero_ on a leaf tensor that requires grad"):
        w.zero_()
    with pytest.raises(ad.AutogradError, match="fill_ on a leaf tensor that requires grad"):
        w.fill_(1.0)
    with ad.no_grad():
        w.fill_(3.0)
    assert np.array_equal(w.numpy(), [3.0, 3.0]) and w.requires_grad and w.is_leaf


def test_gradients_through_fill_are_torchs():
    a = ad.tensor([1.0, 2.0], requires_grad=True)
    v = ad.tensor(3.0, requires_grad=True)
    y = a * 2.0
    y.fill_(v)
    z = a * a
    z.zero_()
    ((y + z) * ad.tensor([1.0, 5.0])).sum().backward()
    ta = torch.tensor([1.0, 2.0], dtype=torch.float64, requires_grad=True)
    tv = torch.tensor(3.0, dtype=torch.float64, requires_grad=True)
    ty = ta * 2.0
    ty.fill_(tv)
    tz = ta * ta
    tz.zero_()
    ((ty + tz) * torch.tensor([1.0, 5.0], dtype=torch.float64)).sum().backward()
    assert np.array_equal(a.grad.numpy(), ta.grad.numpy()) and a.grad.numpy().tobytes() == ta.grad.numpy().tobytes()
    assert v.grad.item() == tv.grad.item() == 6.0


def test_zeroing_a_grad_between_backwards_accumulates_as_torch():
    w = ad.tensor([1.0, -2.0], requires_grad=True)
    tw = torch.tensor([1.0, -2.0], dtype=torch.float64, requires_grad=True)
    for _ in range(3):
        (w * w * 3.0).sum().backward()
        (tw * tw * 3.0).sum().backward()
        assert np.array_equal(w.grad.numpy(), tw.grad.numpy())
        w.grad.zero_()
        tw.grad.zero_()
        assert np.array_equal(w.grad.numpy(), np.zeros(2))
    (w * w).sum().backward()
    (tw * tw).sum().backward()
    assert np.array_equal(w.grad.numpy(), tw.grad.numpy())


def test_bad_values_are_refused_in_the_languages_words():
    x = ad.tensor([1.0, 2.0])
    with pytest.raises(ad.TypeError_, match="fill_: value must be a number or a 0-d tensor, not a string"):
        x.fill_("a")


def test_in_the_language():
    out = io.StringIO()
    s = ad.Session(out=out)
    s.run("g = tensor([1.0, 2.0])\ng.zero_()\ng.fill_(4)\nprint(g)\n")
    assert np.array_equal(s["g"].numpy(), [4.0, 4.0])


@pytest.mark.parametrize("dt, tdt, value", [
    ("int64", "int64", float("nan")), ("int64", "int64", float("inf")), ("int64", "int64", 2 ** 63),
    ("int32", "int32", 2 ** 31), ("float32", "float32", 1e40), ("float32", "float32", -1e39)])
def test_a_value_the_dtype_cannot_hold_is_refused_as_torch_does(dt, tdt, value):
    x = ad.zeros(2, dtype=getattr(ad, dt))
    with pytest.raises(ad.ValueError_, match=f"fill_: .* does not fit in {dt}"):
        x.fill_(value)
    assert np.array_equal(x.numpy(), np.zeros(2))       # unchanged
    with pytest.raises(RuntimeError, match="without overflow"):
        torch.zeros(2, dtype=getattr(torch, tdt)).fill_(value)
    m = ad.tensor([True, False])
    with pytest.raises(ad.ValueError_, match=f"masked_fill: .* does not fit in {dt}"):
        ad.masked_fill(x, m, value)


@pytest.mark.parametrize("value", [float("inf"), float("nan"), -(2 ** 63), 2 ** 63 - 1, 3.4e38])
def test_values_at_the_edge_of_the_range_are_written_as_torch(value):
    dt = "float32" if isinstance(value, float) else "int64"
    x = ad.zeros(2, dtype=getattr(ad, dt)).fill_(value)
    t = torch.zeros(2, dtype=getattr(torch, dt)).fill_(value)
    assert x.numpy().tobytes() == t.numpy().tobytes()


def test_bools_and_numpy_scalars_are_numbers_as_in_torch():
    for value in (True, False, np.float32(2.5), np.int64(-3), np.bool_(True)):
        for dt in ("float64", "int64", "bool"):
            x = ad.zeros(3, dtype=getattr(ad, dt)).fill_(value)
            t = torch.zeros(3, dtype=getattr(torch, dt)).fill_(value.item() if isinstance(value, np.generic) else value)
            assert x.numpy().dtype == t.numpy().dtype and x.numpy().tobytes() == t.numpy().tobytes()


def test_a_value_tensor_must_be_0d_and_the_message_names_fill():
    with pytest.raises(ad.ShapeError, match=r"fill_: the value must be a number or a 0-d tensor, not a tensor of shape \(1,\)"):
        ad.zeros(2).fill_(ad.tensor([1.0]))
