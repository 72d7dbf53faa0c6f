"""dot() calls Graphviz safely: a user's file name never reaches its command line as an option.

Issue 12, break 11: ``dot(y, "-Tx.svg")`` passed ``-Tx.dot`` to Graphviz, which read it as
``-T`` with the format ``x.dot``. The DOT text now goes in on stdin and the picture comes out
through an absolute path. Skipped where Graphviz's ``dot`` is not installed.
"""
from __future__ import annotations

import shutil

import pytest

import autodsl as ad

pytestmark = pytest.mark.skipif(shutil.which("dot") is None, reason="Graphviz's dot is not installed")

SRC = "x = tensor([1.0, 2.0], requires_grad=true)\ny = (x * x).sum()\n"


@pytest.mark.parametrize("name", ["-Tx.svg", "-o.png", "--help.svg"])
def test_a_file_name_that_looks_like_an_option_is_drawn_under_that_name(tmp_path, monkeypatch, name):
    monkeypatch.chdir(tmp_path)
    s = ad.Session(echo=False)
    s.run(SRC)
    out = s.run(f'dot(y, "{name}")')
    assert out == name
    picture = (tmp_path / name).read_bytes()
    if name.endswith(".svg"):
        assert b"<svg" in picture and b"SumBackward" in picture
    else:
        assert picture.startswith(b"\x89PNG")
    dot_text = (tmp_path / name).with_suffix(".dot").read_text()
    assert dot_text.startswith("// The graph of y") and "digraph" in dot_text
    # nothing else appeared: no file named after the format Graphviz would have read, no partial file
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([name, (tmp_path / name).with_suffix(".dot").name])


def test_a_file_in_a_folder_whose_name_starts_with_a_dash(tmp_path):
    folder = tmp_path / "-Tpng"
    folder.mkdir()
    s = ad.Session(echo=False)
    s.run(SRC)
    out = ad.dot(s["y"], str(folder / "g.svg"))
    assert out == str(folder / "g.svg")
    assert "<svg" in (folder / "g.svg").read_text()
