"""Tensors print as PyTorch 2.x prints them (SPEC section 1): repr, print and the REPL's echo.

Each case builds the same data in autodsl and in torch under the same default dtype and
compares the text; the only differences allowed are the language's words (a dtype is
``float32``, not ``torch.float32``; booleans are ``true``/``false`` in the language's style).
"""
from __future__ import annotations

import io
import math

import numpy as np
import pytest

import autodsl as ad
from autodsl import Session
from autodsl.backend import defaults

torch = pytest.importorskip("torch")

_TORCH_DTYPE = {"float32": torch.float32, "float64": torch.float64, "int64": torch.int64,
                "int32": torch.int32, "bool": torch.bool}

_rng = np.random.default_rng(7)

# (data, dtype): every kind of value torch's formatter distinguishes
CASES = [
    (2.0, "float64"), (-364.5, "float64"), (0.0, "float64"), (-0.0, "float64"), (1e-5, "float64"),
    (123456789.0, "float64"), (1.0 / 3, "float64"), (float("nan"), "float64"), (float("-inf"), "float64"),
    (7, "int64"), (-3, "int32"), (True, "bool"), (2.5, "float32"), (0.1, "float32"),
    ([1.0, 2.0], "float64"), ([1e-5, 1e3], "float64"), ([1.5, -2.25, 3.0], "float64"),
    ([1.0, 2000.0], "float64"), ([1.0, 1e9], "float64"), ([0.5, 1e-5], "float64"),
    ([1.0, float("nan"), float("inf"), -float("inf")], "float64"), ([0.25, float("nan")], "float64"),
    ([float("nan"), float("nan")], "float64"), ([0.0, 0.0], "float64"), ([-0.0, 1.0], "float64"),
    ([1, 2, -30], "int64"), ([1, 2], "int32"), ([True, False], "bool"), ([0.1, 0.2], "float32"),
    ([[1, 2], [3, 4]], "float64"), ([[1.5, 2.0], [3.0, -4.125]], "float64"),
    ([[[1.0, 2.0], [3.0, 4.0]], [[5.0, 6.0], [7.0, 8.0]]], "float64"),
    ([[True, False], [False, True]], "bool"), ([[1e-8, 1.0], [2.0, 3.0]], "float32"),
    (list(range(40)), "float64"), (list(range(-20, 20)), "int64"),
    (_rng.standard_normal(30).tolist(), "float64"), (_rng.standard_normal((4, 9)).tolist(), "float64"),
    ((_rng.standard_normal((3, 4, 5)) * 1e4).tolist(), "float64"),
    (_rng.standard_normal(2000).tolist(), "float64"), (_rng.standard_normal((50, 40)).tolist(), "float64"),
    (_rng.integers(-1000, 1000, (10, 200)).tolist(), "int64"),
    (_rng.standard_normal((12, 10, 11)).tolist(), "float32"), (np.arange(1200.0).tolist(), "float64"),
    ((_rng.standard_normal((8, 130)) > 0).tolist(), "bool"),
]


def _ours_and_torch(data, dtype, default):
    with defaults(dtype=default):
        ours = repr(ad.tensor(data, dtype=dtype))
    previous = torch.get_default_dtype()
    torch.set_default_dtype(_TORCH_DTYPE[default])
    try:
        theirs = repr(torch.tensor(data, dtype=_TORCH_DTYPE[dtype]))
    finally:
        torch.set_default_dtype(previous)
    return ours, theirs.replace("torch.", "")


@pytest.mark.parametrize("default", ["float64", "float32"])
@pytest.mark.parametrize("data, dtype", CASES, ids=[f"{i}-{d}" for i, (_, d) in enumerate(CASES)])
def test_repr_matches_torch(data, dtype, default):
    ours, theirs = _ours_and_torch(data, dtype, default)
    assert ours == theirs


@pytest.mark.parametrize("shape, dtype", [((0,), "float64"), ((0,), "float32"), ((0,), "int64"),
                                          ((0, 3), "float64"), ((2, 0, 4), "bool")])
def test_empty_matches_torch(shape, dtype):
    with defaults(dtype="float64"):
        ours = repr(ad.zeros(*shape, dtype=dtype))
    previous = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    try:
        theirs = repr(torch.zeros(*shape, dtype=_TORCH_DTYPE[dtype])).replace("torch.", "")
    finally:
        torch.set_default_dtype(previous)
    assert ours == theirs


def test_grad_suffixes_match_torch():
    torch.set_default_dtype(torch.float64)
    try:
        w = ad.tensor(2.0, requires_grad=True)
        tw = torch.tensor(2.0, requires_grad=True)
        assert repr(w) == repr(tw)
        assert repr(w * 3) == repr(tw * 3).replace("MulBackward0", "MulBackward")
        long = ad.arange(20.0, requires_grad=True)
        tlong = torch.arange(20.0, requires_grad=True)
        assert repr(long) == repr(tlong)                     # the suffix wraps to its own line
        assert repr(long * 1) == repr(tlong * 1).replace("MulBackward0", "MulBackward")
    finally:
        torch.set_default_dtype(torch.float32)


def test_language_prints_tensors_as_torch_with_its_own_words():
    out = io.StringIO()
    s = Session(out=out, echo=True)
    s.run('tensor(2.0)\n'
          'w = tensor(2.0, requires_grad=true)\nw\n'
          'w * 3\n'
          'tensor([1, 2], dtype=int64) > 1\n'
          'tensor(2.0, dtype=float32)\n'
          'print(tensor([1e-5, 1e3]), tensor(-364.5))\n'
          'print(f"{tensor([1.0, 2.0])}")\n')
    assert out.getvalue().splitlines() == [
        "tensor(2.)", "tensor(2., requires_grad=true)", "tensor(6., grad_fn=<MulBackward>)",
        "tensor([false,  true])", "tensor(2., dtype=float32)",
        "tensor([1.0000e-05, 1.0000e+03]) tensor(-364.5000)", "tensor([1., 2.])"]


def test_dtype_shown_relative_to_the_session_default():
    out = io.StringIO()
    Session(out=out, echo=True, dtype="float32").run("tensor(2.0)\ntensor(2.0, dtype=float64)")
    assert out.getvalue().splitlines() == ["tensor(2.)", "tensor(2., dtype=float64)"]


def test_numbers_and_formatted_fields_stay_plain():
    # a number is not a tensor, and a format spec formats the tensor's number, as torch's f"{t:.4f}"
    out = io.StringIO()
    Session(out=out, echo=True).run('x = tensor(0.25)\nx.item()\nprint(f"{x:.4f}", 2.5)\n')
    assert out.getvalue().splitlines() == ["0.25", "0.2500 2.5"]
    assert math.isclose(float(ad.format(ad.tensor(0.25), ".2f")), 0.25)


def test_fstring_field_without_spec_follows_torch():
    # torch: f"{t}" of a 0-d tensor is its number (Tensor.__format__ uses item()); other tensors print whole
    assert f"{torch.tensor(2.0)}" == "2.0" and f"{torch.tensor([1.0, 2.0])}" == "tensor([1., 2.])"
    out = io.StringIO()
    Session(out=out).run('x = tensor(2.0)\nprint(f"{x} {tensor([1.0, 2.0])} {tensor(true)}")\n')
    assert out.getvalue() == "2.0 tensor([1., 2.]) true\n"


def test_python_format_of_a_tensor_is_torchs():
    t, v = ad.tensor(2.5), ad.tensor([1.0, 2.0])
    tt, tv = torch.tensor(2.5), torch.tensor([1.0, 2.0])
    assert f"{t} {t:.4f} {t:8.2e}" == f"{tt} {tt:.4f} {tt:8.2e}"
    assert f"{v}" == f"{tv}" == "tensor([1., 2.])"
    assert f"{ad.tensor(7, dtype=ad.int64):03d}" == f"{torch.tensor(7):03d}" == "007"
    with pytest.raises(ad.errors.TypeError_, match="0-d tensor"):
        f"{v:.2f}"
    with pytest.raises(ad.errors.ValueError_, match="not a format spec"):
        f"{t:d}"


def _random_case(rng):
    """Data of a random shape, dtype and kind of values (whole, tiny, huge, nan, inf, zeros, -0)."""
    nd = int(rng.integers(0, 4))
    shape = tuple(int(n) for n in rng.integers(1, 40 if rng.random() < 0.05 else 12, nd))
    dtype = str(rng.choice(list(_TORCH_DTYPE)))
    a = rng.standard_normal(shape) * 10.0 ** int(rng.integers(-9, 12))
    kind = int(rng.integers(0, 6))
    if kind in (1, 5):
        a = np.round(a)
    if kind == 2:
        a = np.where(rng.random(shape) < 0.3, np.nan, a)
    if kind == 3:
        a = np.where(rng.random(shape) < 0.3, np.inf * np.sign(rng.standard_normal(shape)), a)
    if kind == 4:
        a = np.where(rng.random(shape) < 0.5, 0.0, a)
    if kind == 5:
        a = np.where(rng.random(shape) < 0.5, -0.0, a)
    if dtype in ("int64", "int32"):
        a = np.clip(np.nan_to_num(a, posinf=7, neginf=-7), -2e9, 2e9).astype(np.int64)
    if dtype == "bool":
        a = a > 0
    return a.tolist(), dtype


def test_random_tensors_print_as_torch_prints_them():
    rng = np.random.default_rng(2026)
    for _ in range(400):
        data, dtype = _random_case(rng)
        default = str(rng.choice(["float64", "float32"]))
        ours, theirs = _ours_and_torch(data, dtype, default)
        assert ours == theirs, (data, dtype, default)


def test_a_dtype_suffix_wraps_where_torchs_longer_spelling_does():
    # torch wraps `dtype=torch.float32` to its own line where `dtype=float32` would still fit
    data = [4.0195e-05, -6.9145e-06, -5.4196e-05, 4.1649e-05, -3.8776e-05, 1.1324e-04, 3.1261e-05,
            6.1364e-05, -3.0579e-05]
    ours, theirs = _ours_and_torch(data, "float32", "float64")
    assert ours == theirs and ours.endswith("\n       dtype=float32)")
