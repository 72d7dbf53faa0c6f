"""The same ops on "cuda" (CuPy, float32) as on the CPU (float64); skipped without a GPU."""
from __future__ import annotations

import numpy as np
import pytest

import autodsl as ad


def _gpu_reason():
    try:
        ad.zeros(1, device="cuda")
    except ad.DeviceError as e:
        return e.message
    return None


REASON = _gpu_reason()
pytestmark = [pytest.mark.cuda, pytest.mark.skipif(REASON is not None, reason=f"no GPU: {REASON}")]


def test_chain_rule_on_the_gpu():
    s = ad.Session(device="cuda", dtype="float32", echo=False)
    s.run("x = tensor(2.0)\nw1 = tensor(0.5, requires_grad=true)\nw2 = tensor(-1.5, requires_grad=true)\n"
          "b = tensor(1.0, requires_grad=true)\nf = (w2*(w1*x^2+b))^3\nf.backward()")
    assert s["w1"].device == "cuda"
    assert s["w1"].grad.item() == pytest.approx(-364.5, rel=1e-6)
    assert s["w2"].grad.item() == pytest.approx(182.25, rel=1e-6)


def test_op_table_matches_the_cpu():
    from benchmarks.gpu_check import check_ops
    rows, bad = check_ops(ad)
    assert bad == 0, [r for r in rows if r[2] != "ok"]


def test_mixing_devices_is_a_device_error():
    a = ad.ones(2, device="cuda")
    with pytest.raises(ad.DeviceError):
        a + ad.ones(2)
    np.testing.assert_array_equal((a + a.to("cpu").to("cuda")).numpy(), [2.0, 2.0])
