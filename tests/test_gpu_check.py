"""benchmarks/gpu_check.py's W4 pair without a GPU: autodsl's steps on the recording "cuda" of
tests/helpers/recording_xp.py (no host sync in them) against the hand-written reference run on
NumPy in CuPy's place; the same arithmetic gives the same parameters."""
from __future__ import annotations

import types

import numpy as np

import autodsl as ad
from benchmarks.gpu_check import autodsl_mlp, cupy_mlp, mlp_data
from tests.helpers.recording_xp import cuda_fixture  # noqa: F401  (the fixture cuda)

# NumPy dressed as CuPy for the reference: the same functions, and a device to synchronize
NUMPY_AS_CUPY = types.SimpleNamespace(**{k: getattr(np, k) for k in dir(np) if not k.startswith("_")})
NUMPY_AS_CUPY.cuda = types.SimpleNamespace(Device=lambda: types.SimpleNamespace(synchronize=lambda: None))




def test_w4_steps_make_no_host_sync_and_match_the_reference(cuda):
    data = mlp_data()
    ours = autodsl_mlp(ad, NUMPY_AS_CUPY, data, 3)
    assert cuda.syncs == 0, cuda.where[:3]
    cuda.on = False
    ref = cupy_mlp(NUMPY_AS_CUPY, data, 3)
    assert len(ours) == len(ref) == 6           # three weights and three biases
    for a, b in zip(ours, ref):
        assert a._a.dtype == b.dtype == np.float32
        np.testing.assert_allclose(a._a, b, rtol=2e-5, atol=2e-6)
    X, Y, W0, B0 = data
    assert not np.allclose(ref[5], B0[2])       # the biases are trained too
