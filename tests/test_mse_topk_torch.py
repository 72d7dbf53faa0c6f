"""mse_loss warns when two tensors of different shapes broadcast (torch's warning: a (3, 1)
input and a (3,) target make a (3, 3) loss), and topk refuses a bool tensor, as torch."""
from __future__ import annotations

import warnings

import pytest

import autodsl as ad

torch = pytest.importorskip("torch")


def _warned(fn):
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        fn()
    return [str(x.message) for x in w if issubclass(x.category, UserWarning)]


@pytest.mark.parametrize("xs, ts, warns", [((3, 1), (3,), True), ((3,), (3,), False), ((2, 3), (3,), True)])
def test_mse_loss_warns_where_torch_does(xs, ts, warns):
    got = _warned(lambda: ad.mse_loss(ad.ones(*xs), ad.ones(*ts)))
    want = _warned(lambda: torch.nn.functional.mse_loss(torch.ones(*xs), torch.ones(*ts)))
    assert bool(got) == bool(want) == warns
    if warns:
        assert "broadcast" in got[0]


def test_mse_loss_of_a_number_target_does_not_warn():
    assert not _warned(lambda: ad.mse_loss(ad.ones(3), 0.0))


def test_topk_of_a_bool_tensor_is_refused():
    with pytest.raises(RuntimeError):
        torch.topk(torch.tensor([True, False]), 1)
    with pytest.raises(ad.DTypeError, match="bool"):
        ad.topk(ad.tensor([True, False]), 1)
