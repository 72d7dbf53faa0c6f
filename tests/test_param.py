"""param(name, default): a script parameter with a default, read from --set / Session.run(variables=)."""
from __future__ import annotations

import io
import subprocess
import sys
from pathlib import Path

import pytest

import autodsl as ad
from autodsl.errors import TypeError_

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = 'lr = param("lr", 0.01)\nname = param("name", "base")\nprint(f"{lr} {name}")\n'


def run(src, **kw):
    out = io.StringIO()
    s = ad.Session(out=out)
    s.run(src, **kw)
    return s, out.getvalue()


def test_default_when_not_given():
    s, out = run(SCRIPT)
    assert out == "0.01 base\n"
    assert s["lr"] == 0.01


def test_value_from_session_variables_wins():
    s, out = run(SCRIPT, variables={"lr": 0.5, "name": "tuned"})
    assert out == "0.5 tuned\n"


def test_value_from_the_command_line(tmp_path):
    f = tmp_path / "p.ad"
    f.write_text(SCRIPT)
    p = subprocess.run([sys.executable, "-m", "autodsl", str(f), "--set", "lr=0.25"], capture_output=True,
                       text=True, cwd=ROOT, timeout=120, check=False)
    assert p.returncode == 0, p.stderr
    assert p.stdout == "0.25 base\n"


def test_text_for_a_number_is_refused_with_how_to_write_it():
    with pytest.raises(TypeError_) as e:
        run(SCRIPT, variables={"lr": "fast"})
    msg = str(e.value)
    assert "`lr`" in msg and '"fast"' in msg and "--set lr=" in msg
    assert "line 1" in msg or ":1:" in msg


def test_name_must_be_a_string():
    with pytest.raises(TypeError_, match="as a string"):
        run("x = param(3, 1)")


def test_iris_sample_runs_with_its_default_optimizer():
    s, out = run((ROOT / "samples" / "iris.ad").read_text(), filename=str(ROOT / "samples" / "iris.ad"))
    assert out.startswith("optimizer: ")
    assert "sgd" in out.splitlines()[0]
    assert s["opt"] == "sgd"
