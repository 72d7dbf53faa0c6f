"""Every sample of the op table (tests/op_samples*.py) on "cuda", here the recording CuPy of
tests/helpers/recording_xp.py: its forward and its backward read nothing back to the host, and
give the CPU's values (the branches the GPU path takes instead of reading values: where, the
products of the others, deferred checks)."""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

import autodsl as ad
from autodsl import backend
from autodsl.core import deferred
from tests.helpers.recording_xp import Rec, recording_cuda, stop_recording

sys.path.insert(0, str(Path(__file__).parent))
from op_samples import SAMPLES  # noqa: E402  (the table, with the samples of its other files)


@pytest.fixture(scope="module")
def cuda():
    mp = pytest.MonkeyPatch()
    c = recording_cuda(mp)
    yield c
    deferred.settle()
    stop_recording(c)
    mp.undo()


def _host(v):
    if v is None:
        return None
    d = v._data
    return np.array(d._a if type(d) is Rec else d)


def _run(sample, device, counter=None):
    """The sample's output and its inputs' gradients on ``device`` (syncs counted while it runs)."""
    with backend.defaults(device=device):
        inputs = [ad.tensor(a, device=device, requires_grad=sample.grad and a.dtype.kind == "f")
                  if isinstance(a, np.ndarray) else a for a in sample.args]
        if counter is not None:
            counter.reset()
            counter.on = True
        out = sample.fn(ad, *inputs)
        if isinstance(out, tuple):
            out = out[0]
        grads = []
        leaves = [t for t in inputs if isinstance(t, ad.Tensor) and t.requires_grad]
        if leaves and isinstance(out, ad.Tensor) and out.requires_grad:
            grads = ad.grad(out.sum(), leaves, allow_unused=True)
        n = None
        if counter is not None:
            n = counter.syncs
            counter.on = False
        deferred.settle()
        return _host(out), [_host(g) for g in grads], n


@pytest.mark.parametrize("sample", SAMPLES, ids=[s.id for s in SAMPLES])
def test_the_op_makes_no_host_sync_on_cuda(cuda, sample):
    out, grads, syncs = _run(sample, "cuda", cuda)
    assert syncs == 0, cuda.where[:2]
    ref_out, ref_grads, _ = _run(sample, "cpu")
    np.testing.assert_allclose(out, ref_out, rtol=1e-9, atol=1e-12, equal_nan=True)
    assert len(grads) == len(ref_grads)
    for g, r in zip(grads, ref_grads):
        assert (g is None) == (r is None)
        if g is not None:
            np.testing.assert_allclose(g, r, rtol=1e-9, atol=1e-12, equal_nan=True)
