"""arange as torch.arange: sizes, values (start + i*step in float64, or in int64 from arguments
truncated toward 0 for an integer dtype), dtypes, and the arguments torch refuses. (torch's
floating values differ in the last bits from machine to machine: its kernel is vectorized.)"""
from __future__ import annotations

import numpy as np
import pytest

import autodsl as ad

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.usefixtures("torch_float64")     # autodsl's default float dtype


def _cases(seed, n=300):
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n):
        kind = rng.integers(4)
        if kind == 0:       # integers
            start, length = (int(v) for v in rng.integers(-50, 50, 2))
            step = int(rng.choice([-7, -3, -1, 1, 2, 5]))
            end = start + step * abs(length) // 3
        else:               # floats, some with big magnitudes or steps that do not divide the range
            start = float(np.round(rng.uniform(-10, 10), int(rng.integers(0, 4))))
            step = float(rng.choice([0.1, 0.25, 0.3, 1.5, -0.1, -0.7, 1e-3]))
            end = start + step * float(rng.uniform(0, 60))
            if kind == 3:
                start, end = start * 1e15, end * 1e15
                step *= 1e15
        dtype = rng.choice([None, "float32", "float64", "int64", "int32"])
        out.append((start, end, step, None if dtype is None else str(dtype)))
    return out


def _both(start, end, step, dtype):
    kw_a = {} if dtype is None else {"dtype": getattr(ad, dtype)}
    kw_t = {} if dtype is None else {"dtype": getattr(torch, dtype)}
    try:
        a = ad.arange(start, end, step, **kw_a)
    except ad.DSLError as e:
        a = e
    try:
        with torch.device("cpu"):
            t = torch.arange(start, end, step, **kw_t) if dtype is not None or not all(
                isinstance(v, int) for v in (start, end, step)) else torch.arange(start, end, step)
    except (RuntimeError, ValueError) as e:
        t = e
    return a, t


@pytest.mark.parametrize("seed", range(4))
def test_random_ranges_give_torchs_values_and_dtypes(seed):
    for start, end, step, dtype in _cases(seed):
        a, t = _both(start, end, step, dtype)
        where = (start, end, step, dtype)
        assert isinstance(a, Exception) == isinstance(t, Exception), (where, a, t)
        if isinstance(t, Exception):
            continue
        assert a.dtype.name == str(t.dtype).removeprefix("torch."), where
        av, tv = a.numpy(), t.numpy()
        assert av.shape == tv.shape, where
        if av.dtype.kind != "f":
            assert av.tolist() == tv.tolist(), where
            continue
        # torch's vectorized kernel adds k*step to the value at the start of each vector of 4,
        # 8 or 16 lanes (as wide as the machine's registers), its scalar tail start + i*step:
        # the last bits depend on the machine; autodsl computes start + i*step for every i
        i = np.arange(len(av))
        tol = 4 * np.finfo(av.dtype).eps * (abs(start) + abs(step) * i)
        assert np.all(np.abs(av.astype(np.float64) - tv.astype(np.float64)) <= tol), where


@pytest.mark.parametrize("args, kw, want", [
    ((5,), {}, [0, 1, 2, 3, 4]),
    ((0, 5, 1.5), {"dtype": "int64"}, [0, 1, 2, 3, 4]),          # step truncated to 1
    ((0, 2.5), {"dtype": "int64"}, [0, 1]),                       # end truncated to 2
    ((0, 2.5), {"dtype": "int32"}, [0, 1, 2]),                    # torch sizes int32 from 2.5
    ((-3.7, 3), {"dtype": "int64"}, [-3, -2, -1, 0, 1, 2]),
    ((1, 1.3, 0.1), {}, [1.0, 1.1, 1.2, 1.3]),                    # 1 + i*0.1, not NumPy's steps
    ((1e16, 1e16 + 4, 1.0), {}, [1e16, 1e16, 1e16 + 2, 1e16 + 4]),
    ((True,), {}, [0]),
    ((10, 0, -3), {}, [10, 7, 4, 1]),
    ((3, 1.5, -0.5), {"dtype": "int32"}, [3, 3, 3]),              # int32: sized as given, step truncated
    ((0, 0.5, 1), {"dtype": "int32"}, [0]),
    ((0, 0.5, 1), {"dtype": "int64"}, []),
])
def test_the_cases_where_numpy_differs(args, kw, want):
    a = ad.arange(*args, **{k: getattr(ad, v) for k, v in kw.items()})
    t = torch.arange(*args, **{k: getattr(torch, v) for k, v in kw.items()})
    assert a.numpy().tolist() == t.tolist() == want
    assert a.dtype.name == str(t.dtype).removeprefix("torch.")


@pytest.mark.parametrize("args, kw, words", [
    ((5, 0), {}, "other side"), ((0, 5, -1), {}, "other side"), ((-2.5,), {}, "other side"),
    ((0, 1, 0.1), {"dtype": "int64"}, "truncates the step"), ((0, 3), {"dtype": "bool"}, "not bools"),
    ((0, 1, 0), {}, "must not be 0"), ((0, float("inf")), {}, "finite"),
])
def test_what_torch_refuses_raises_in_the_languages_words(args, kw, words):
    with pytest.raises(ad.DSLError, match=words):
        ad.arange(*args, **{k: getattr(ad, v) for k, v in kw.items()})
    with pytest.raises((RuntimeError, ValueError, NotImplementedError, TypeError)):
        torch.arange(*args, **{k: getattr(torch, v) for k, v in kw.items()})


def test_end_alone_as_a_keyword():
    assert ad.arange(end=3).numpy().tolist() == torch.arange(end=3).tolist() == [0, 1, 2]
    with pytest.raises(ad.DSLError, match="needs an end"):
        ad.arange()


def test_the_language_and_dask_make_the_same_values():
    s = ad.Session(echo=False)
    s.run("a = arange(1, 1.3, 0.1)\nb = arange(0, 2.5, dtype=int64)")
    assert s["a"].numpy().tolist() == [1.0, 1.1, 1.2, 1.3] and s["b"].numpy().tolist() == [0, 1]
    pytest.importorskip("dask")
    d = ad.arange(1, 1.3, 0.1, device="dask")
    assert d.numpy().tolist() == [1.0, 1.1, 1.2, 1.3]
