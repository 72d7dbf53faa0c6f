"""The cases real users hit (copied from the shared bug-report list into tests/data).

Each case is a script and the values PyTorch gives for it in float64, or the
line that must raise a DSLError of a given kind and what must be unchanged
after it. Values may be "nan", "inf", "-inf".
"""
from __future__ import annotations

import contextlib
import io
import json
import warnings
from pathlib import Path

import numpy as np
import pytest

import autodsl as ad

CASES = [json.loads(line) for line in
         (Path(__file__).parent / "data" / "user_cases.jsonl").read_text().splitlines() if line.strip()]

CATEGORY = {"autograd": ad.AutogradError, "dtype": ad.DTypeError, "shape": ad.ShapeError,
            "parse": ad.ParseError, "name": ad.NameError_, "device": ad.DeviceError}


def decode(v):
    if isinstance(v, str):
        return float(v)
    if isinstance(v, list):
        return [decode(x) for x in v]
    return v


def run(session, src):
    if src.strip():
        with contextlib.redirect_stdout(io.StringIO()), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return session.run(src)
    return None


def value_of(session, key):
    with contextlib.redirect_stdout(io.StringIO()), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return session.run(key)


def check(session, expected, tol):
    for key, want in expected.items():
        got = value_of(session, key)
        if want is None:
            assert got is None, f"{key}: expected none, got {got!r}"
            continue
        if isinstance(want, bool):
            assert bool(got.item() if isinstance(got, ad.Tensor) else got) is want, key
            continue
        arr = got.numpy() if isinstance(got, ad.Tensor) else np.asarray(got, dtype=np.float64)
        np.testing.assert_allclose(arr.astype(np.float64), np.asarray(decode(want), dtype=np.float64),
                                   rtol=tol, atol=tol, err_msg=key)


@pytest.mark.parametrize("case", CASES, ids=[c["id"] for c in CASES])
def test_user_case(case):
    s = ad.Session()
    exp = case["expected"]
    tol = float(case.get("tol", 1e-9))
    lines = case["script"].split("\n")
    if case["kind"] == "error":
        line = int(exp["line"])
        run(s, "\n".join(lines[: line - 1]))
        with pytest.raises(ad.DSLError) as info:
            run(s, lines[line - 1])
        assert isinstance(info.value, CATEGORY[exp["error"]]), type(info.value).__name__
        wanted = exp.get("message_contains_any")
        if wanted:
            assert any(w.lower() in str(info.value).lower() for w in wanted), str(info.value)
        check(s, exp.get("after", {}), tol)
    else:
        run(s, case["script"])
        check(s, exp, tol)
