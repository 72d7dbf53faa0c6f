"""linspace as torch.linspace: the step in the dtype (float64 for an integer dtype, whose start
and end are made integers first, truncated toward 0), the first half of the values from start,
the rest from end; a start or end an integer dtype cannot hold, and bool, refused. (torch's
floating values can differ in the last bits from machine to machine: its kernel is vectorized.)"""
from __future__ import annotations

import math

import numpy as np
import pytest

import autodsl as ad

torch = pytest.importorskip("torch")


pytestmark = pytest.mark.usefixtures("torch_float64")     # autodsl's default float dtype


def _both(args, dtype):
    a = ad.linspace(*args, **({} if dtype is None else {"dtype": getattr(ad, dtype)}))
    t = torch.linspace(*args, **({} if dtype is None else {"dtype": getattr(torch, dtype)}))
    assert a.dtype.name == str(t.dtype).removeprefix("torch.")
    return a.numpy(), t.numpy()


@pytest.mark.parametrize("args, dtype, want", [
    ((-10, 0, 4), "int64", [-10, -6, -3, 0]),          # truncated toward 0, not floored
    ((-1.3, 2.7, 5), "int64", [-1, 0, 0, 1, 2]),       # start and end truncated first
    ((0, math.inf, 1), None, [0.0]),
    ((2, 2, 1), "int32", [2]),
    ((0, 1, 0), None, []),
    ((0, 1, 5), None, [0.0, 0.25, 0.5, 0.75, 1.0]),
    ((0, 10, 4), None, [0.0, 10 / 3, 20 / 3 - 8.881784197001252e-16, 10.0]),   # the third from the end
])
def test_the_cases_where_numpy_differs(args, dtype, want):
    a, t = _both(args, dtype)
    assert a.tolist() == t.tolist() == want


def test_infinite_ends_give_torchs_nans():
    a, t = _both((0, math.inf, 3), None)
    assert np.isnan(a).all() and np.isnan(t).all()


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("dtype", [None, "float32"])
def test_random_ranges_are_torchs_to_the_last_bits(seed, dtype):
    rng = np.random.default_rng(seed)
    for _ in range(200):
        start, end = (float(v) for v in rng.uniform(-100, 100, 2))
        steps = int(rng.integers(0, 40))
        a, t = _both((start, end, steps), dtype)
        assert a.shape == t.shape
        tol = 4 * np.finfo(a.dtype).eps * (abs(start) + abs(end))
        assert np.all(np.abs(a.astype(np.float64) - t.astype(np.float64)) <= tol), (start, end, steps)


@pytest.mark.parametrize("args, dtype, words", [((0, math.inf, 3), "int64", "does not fit"),
                                                ((0, 1, 3), "bool", "not bools")])
def test_what_torch_refuses(args, dtype, words):
    with pytest.raises((RuntimeError, NotImplementedError)):
        torch.linspace(*args, dtype=getattr(torch, dtype))
    with pytest.raises(ad.DSLError, match=words):
        ad.linspace(*args, dtype=getattr(ad, dtype))


def test_dask_and_the_language_make_the_same_values():
    s = ad.Session(echo=False)
    s.run("a = linspace(-10, 0, 4, dtype=int64)")
    assert s["a"].numpy().tolist() == [-10, -6, -3, 0]
    pytest.importorskip("dask")
    assert ad.linspace(0, 10, 4, device="dask").numpy().tolist() == ad.linspace(0, 10, 4).numpy().tolist()
