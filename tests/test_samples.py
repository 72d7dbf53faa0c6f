"""Every samples/*.ad runs and prints exactly the output written in its closing comment.

The expected output is the block that starts with ``# ---- expected output``
at the end of each sample. Numbers are compared with a relative tolerance
of 1e-9 (last-digit noise between NumPy builds), everything else exactly.
Set AUTODSL_REGEN_SAMPLES=1 to rewrite the blocks after a deliberate change,
then read the diff. A sample that takes script parameters names them on the marker line
(``# ---- expected output (--set opt=sgd) ----``) and runs with them.
"""
from __future__ import annotations

import contextlib
import io
import math
import os
import re
from pathlib import Path

import pytest

from autodsl.cli import main as cli

SAMPLES = sorted((Path(__file__).resolve().parent.parent / "samples").glob("*.ad"))
MARK = "# ---- expected output"
NUM = re.compile(r"-?(?:\d+\.\d*|\.\d+|\d+)(?:[eE][-+]?\d+)?|-?inf|nan")


def split(text: str):
    """(script, expected lines, expected exit status) of a sample file."""
    head, sep, tail = text.partition(MARK)
    if not sep:
        return text, None, 0
    first, _, rest = tail.partition("\n")
    m = re.search(r"exit status (\d+)", first)
    lines = [ln[2:] if ln.startswith("# ") else ln[1:] for ln in rest.splitlines() if ln.startswith("#")]
    return head, lines, int(m.group(1)) if m else 0


def sets_of(text: str) -> list[str]:
    """The ``--set NAME=VALUE`` arguments named on a sample's marker line."""
    _, sep, tail = text.partition(MARK)
    return re.findall(r"--set (\S+?)\)?(?=\s|$)", tail.partition("\n")[0]) if sep else []


def run_sample(path: Path, sets=()):
    buf = io.StringIO()
    args = [a for item in sets for a in ("--set", item)]
    with contextlib.redirect_stdout(buf), contextlib.redirect_stderr(buf):
        status = cli.main([str(path.relative_to(path.parent.parent)), *args])
    return buf.getvalue().rstrip("\n").splitlines(), status


def same_line(got: str, want: str) -> bool:
    if got == want:
        return True
    if NUM.sub("#", got) != NUM.sub("#", want):
        return False
    for a, b in zip(NUM.findall(got), NUM.findall(want)):
        fa, fb = float(a), float(b)
        if not (fa == fb or (math.isnan(fa) and math.isnan(fb)) or math.isclose(fa, fb, rel_tol=1e-9, abs_tol=1e-12)):
            return False
    return True


@pytest.mark.parametrize("path", SAMPLES, ids=[p.name for p in SAMPLES])
def test_sample_output(path, monkeypatch):
    monkeypatch.chdir(path.parent.parent)
    script, expected, want_status = split(path.read_text())
    sets = sets_of(path.read_text())
    got, status = run_sample(path, sets)
    if os.environ.get("AUTODSL_REGEN_SAMPLES"):
        note = f" (exit status {status})" if status else ""
        note += "".join(f" (--set {item})" for item in sets)
        block = "\n".join(["# " + ln if ln else "#" for ln in got])
        path.write_text(script.rstrip("\n") + f"\n\n{MARK}{note} ----\n{block}\n")
        pytest.skip("expected output rewritten")
    assert expected is not None, f"{path.name} has no '{MARK}' block"
    assert status == want_status, "\n".join(got)
    assert len(got) == len(expected), "\n".join(got)
    for i, (g, w) in enumerate(zip(got, expected), 1):
        assert same_line(g, w), f"line {i}: got {g!r}, expected {w!r}"


def test_chain_rule_values():
    """The numbers the chain-rule sample promises, computed by hand:
    u = w1*x^2 + b = 3, v = w2*u = -4.5, f = v^3; df/dv = 3v^2 = 60.75."""
    import autodsl as ad
    s = ad.Session()
    with contextlib.redirect_stdout(io.StringIO()):
        s.run((Path(__file__).resolve().parent.parent / "samples" / "chain_rule.ad").read_text())
    dv = 3 * (-1.5 * (0.5 * 4 + 1)) ** 2
    assert s["w1"].grad.item() == pytest.approx(dv * -1.5 * 4)      # -364.5
    assert s["w2"].grad.item() == pytest.approx(dv * 3)             # 182.25
    assert s["b"].grad.item() == pytest.approx(dv * -1.5)           # -91.125
    assert s["w1"].grad.item() == -364.5 and s["w2"].grad.item() == 182.25 and s["b"].grad.item() == -91.125
