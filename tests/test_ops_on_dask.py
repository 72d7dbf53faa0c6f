"""The op table on the dask device, the part CI runs (a minute on two cores): every forward
sample against NumPy, and the first- and second-order gradient checks of one sample per op,
all with dask's synchronous scheduler. The whole table runs on dask with
``pytest --device dask tests/test_ops_*.py`` (tests/op_device.py; README, "Testing")."""
import numpy as np
import pytest

pytest.importorskip("dask.array")

from helpers import gradcheck, gradgradcheck, to_ad
from op_device import on_device_named
from op_samples import DIFF_SAMPLES, NP, SAMPLES

import autodsl as ad

FWD = [s for s in SAMPLES if s.numpy]


def _first_per_op(samples):
    seen, out = set(), []
    for s in samples:
        if s.op not in seen:
            seen.add(s.op)
            out.append(s)
    return out


GRAD = _first_per_op(DIFF_SAMPLES)
GRADGRAD = _first_per_op([s for s in DIFF_SAMPLES if s.gradgrad and s.op != "sign"])


@pytest.fixture(autouse=True)
def _on_dask():
    with on_device_named("dask"):
        yield


@pytest.mark.parametrize("sample", FWD, ids=[s.id for s in FWD])
def test_forward_on_dask_matches_numpy(sample):
    expected = np.asarray(sample.fn(NP, *sample.args))
    out = sample.fn(ad, *[to_ad(a) for a in sample.args])
    assert out.device == "dask"
    got = out.numpy()
    assert got.shape == expected.shape
    assert got.dtype == expected.dtype
    np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("sample", GRAD, ids=[s.id for s in GRAD])
def test_grad_on_dask(sample):
    assert gradcheck(lambda *ts: sample.fn(ad, *ts), list(sample.args), atol=sample.atol,
                     rtol=sample.rtol, seed=0)


@pytest.mark.parametrize("sample", GRADGRAD, ids=[s.id for s in GRADGRAD])
def test_gradgrad_on_dask(sample):
    assert gradgradcheck(lambda *ts: sample.fn(ad, *ts), list(sample.args), atol=sample.atol,
                         rtol=sample.rtol, seed=0)
