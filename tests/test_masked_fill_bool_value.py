"""masked_fill takes true/false as its value, as torch does (for a bool tensor its own values,
for a number tensor 1 and 0)."""
from __future__ import annotations

import numpy as np
import pytest

import autodsl as ad

torch = pytest.importorskip("torch")


@pytest.mark.parametrize("dtype", ["bool", "int64", "float64"])
@pytest.mark.parametrize("value", [True, False])
def test_a_bool_value_fills_as_torchs(dtype, value):
    data, mask = [True, False, True], [True, True, False]
    a = ad.tensor(data, dtype=getattr(ad, dtype)).masked_fill(ad.tensor(mask), value)
    t = torch.tensor(data, dtype=getattr(torch, dtype)).masked_fill(torch.tensor(mask), value)
    assert a.dtype.name == dtype
    np.testing.assert_array_equal(a.numpy(), t.numpy())
