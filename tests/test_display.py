"""How values print: scalars as numbers, small arrays NumPy-style, large ones summarized,
requires_grad / grad_fn / a non-default dtype shown as PyTorch shows them."""
from __future__ import annotations

import autodsl as ad
from autodsl.core.display import format_value


def test_plain_scalar_prints_as_a_number():
    assert format_value(ad.tensor(2.5)) == "2.5"
    assert format_value(ad.tensor(3.0)) == "3.0"
    assert format_value(ad.tensor(7, dtype=ad.int64)) == "7"


def test_autograd_state_is_shown():
    x = ad.tensor([1.0, 2.0], requires_grad=True)
    assert format_value(x) == "tensor([1., 2.], requires_grad=true)"
    assert format_value(x * 2) == "tensor([2., 4.], grad_fn=<MulBackward>)"
    assert format_value((x * 2).sum()) == "tensor(6.0, grad_fn=<SumBackward>)"
    assert repr(x) == "tensor([1., 2.], requires_grad=True)"            # Python spelling


def test_float32_shows_its_dtype():
    assert format_value(ad.tensor([1.0], dtype=ad.float32)) == "tensor([1.], dtype=float32)"


def test_large_tensors_are_summarized():
    text = format_value(ad.arange(1000))
    assert text.startswith("tensor([  0,   1,   2, ...,") and text.endswith("997, 998, 999])")
    assert len(text) < 60


def test_language_values():
    assert [format_value(v) for v in (None, True, [1, 2.5], (3,), "s")] == \
        ["none", "true", "[1, 2.5]", "(3,)", "s"]
    assert format_value(ad.tensor([True, False])) == "tensor([ true, false])"
