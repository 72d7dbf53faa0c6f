"""How values print: scalars as numbers, small arrays NumPy-style, large ones summarized,
requires_grad / grad_fn / a non-default dtype shown as PyTorch shows them."""
from __future__ import annotations

import autodsl as ad
from autodsl.core.display import format_value


def test_zero_dim_tensor_prints_as_torch_and_a_number_plainly():
    assert format_value(ad.tensor(2.5)) == "tensor(2.5000)"
    assert format_value(ad.tensor(3.0)) == "tensor(3.)"
    assert format_value(ad.tensor(7, dtype=ad.int64)) == "tensor(7)"
    assert format_value(ad.tensor(2.5).item()) == "2.5"


def test_autograd_state_is_shown():
    x = ad.tensor([1.0, 2.0], requires_grad=True)
    assert format_value(x) == "tensor([1., 2.], requires_grad=true)"
    assert format_value(x * 2) == "tensor([2., 4.], grad_fn=<MulBackward>)"
    assert format_value((x * 2).sum()) == "tensor(6., grad_fn=<SumBackward>)"
    assert repr(x) == "tensor([1., 2.], requires_grad=True)"            # Python spelling


def test_float32_shows_its_dtype():
    assert format_value(ad.tensor([1.0], dtype=ad.float32)) == "tensor([1.], dtype=float32)"


def test_large_tensors_are_summarized():
    assert format_value(ad.arange(1000)).count("\n") > 10       # torch's threshold: 1000 elements
    text = format_value(ad.arange(1001))
    assert text == "tensor([   0,    1,    2,  ...,  998,  999, 1000])"


def test_language_values():
    assert [format_value(v) for v in (None, True, [1, 2.5], (3,), "s")] == \
        ["none", "true", "[1, 2.5]", "(3,)", "s"]
    assert format_value(ad.tensor([True, False])) == "tensor([ true, false])"
