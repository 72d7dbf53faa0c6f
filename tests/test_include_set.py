"""include("file.ad") (the current scope, positions of the included file, cycles, relative
paths, files=False) and script parameters (Session.run(variables=...), the CLI's --set)."""
from __future__ import annotations

import io
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import autodsl as ad
from autodsl.cli.params import literal_value, parse_sets
from autodsl.errors import (
    NameError_,
    ParseError,
    RuntimeError_,
    TypeError_,
    ValueError_,
)

ROOT = Path(__file__).resolve().parents[1]


def session(**kw):
    out = io.StringIO()
    return ad.Session(out=out, **kw), out


def cli(*args, cwd):
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    p = subprocess.run([sys.executable, "-m", "autodsl", *args], capture_output=True, text=True,
                       env=env, cwd=cwd, timeout=120, check=False)
    assert "Traceback" not in p.stderr, p.stderr
    return p


LAYERS = """\
def dense(x, w, b) {
  return relu(x @ w + b)
}
width = 3
w0 = ones(2, width)
"""


# ---- include ------------------------------------------------------------------------

def test_include_defines_functions_and_variables_in_the_current_scope(tmp_path):
    (tmp_path / "layers.ad").write_text(LAYERS)
    s, _ = session(base_dir=tmp_path)
    s.run('include("layers.ad")\ny = dense(tensor([[1.0, -1.0]]), w0, -0.5)')
    assert s["width"] == 3
    assert np.asarray(s["y"].numpy()).tolist() == [[0.0, 0.0, 0.0]]
    assert np.asarray(s.run("dense(tensor([[2.0, 1.0]]), w0, 0.0)").numpy()).tolist() == [[3.0, 3.0, 3.0]]


def test_include_inside_a_function_binds_in_its_scope(tmp_path):
    (tmp_path / "k.ad").write_text("k = 7\n")
    s, _ = session(base_dir=tmp_path)
    s.run('def f() {\n  include("k.ad")\n  return k * 2\n}\nr = f()')
    assert s["r"] == 14 and "k" not in s


def test_include_prints_bare_expressions_like_a_script(tmp_path):
    (tmp_path / "show.ad").write_text("1 + 1\nprint(\"hi\")\nz = 5\n")
    s, out = session(base_dir=tmp_path)
    assert s.run('include("show.ad")') is None
    assert out.getvalue() == "2\nhi\n"


def test_error_in_included_file_names_its_file_and_line(tmp_path):
    (tmp_path / "bad.ad").write_text("a = 1\nb = a + \"x\"\n")
    s, _ = session(base_dir=tmp_path)
    with pytest.raises(TypeError_) as e:
        s.run('x = 0\ninclude("bad.ad")')
    err = e.value
    assert err.file == str(tmp_path / "bad.ad") and err.line == 2 and err.column == 7
    assert err.source_line == 'b = a + "x"'
    assert err.calls == [f'in "{tmp_path / "bad.ad"}", included at <string>:2:1']
    assert s["a"] == 1 and "b" not in s          # the statements before the error ran


def test_function_from_included_file_reports_its_file(tmp_path):
    (tmp_path / "f.ad").write_text("def f(x) {\n  return x + \"s\"\n}\n")
    s, _ = session(base_dir=tmp_path)
    s.run('include("f.ad")')
    with pytest.raises(TypeError_) as e:
        s.run("f(1)")
    assert e.value.file == str(tmp_path / "f.ad") and e.value.line == 2
    assert e.value.calls == ["in f(), called at <string>:1:1 `f(1)`"]


def test_syntax_error_in_included_file_runs_none_of_it(tmp_path):
    (tmp_path / "syn.ad").write_text("ran = 1\nx = (1 +\n")
    s, _ = session(base_dir=tmp_path)
    with pytest.raises(ParseError) as e:
        s.run('include("syn.ad")')
    assert e.value.file == str(tmp_path / "syn.ad") and e.value.line == 2
    assert "ran" not in s


def test_include_cycle_is_an_error(tmp_path):
    (tmp_path / "a.ad").write_text('include("b.ad")\n')
    (tmp_path / "b.ad").write_text('include("a.ad")\n')
    (tmp_path / "self.ad").write_text('include("self.ad")\n')
    s, _ = session(base_dir=tmp_path)
    with pytest.raises(RuntimeError_, match="include cycle") as e:
        s.run('include("a.ad")')
    assert e.value.file == str(tmp_path / "b.ad") and e.value.line == 1
    assert "a.ad" in e.value.message and "b.ad" in e.value.message
    # a script file that includes itself, from the command line
    p = cli("self.ad", cwd=tmp_path)
    assert p.returncode == 1
    assert 'self.ad:1:1: include(): "self.ad" is already being included' in p.stderr
    # the same file twice, one after the other, is no cycle
    (tmp_path / "n.ad").write_text("n = n + 1\n")
    s.run('n = 0\ninclude("n.ad")\ninclude("n.ad")')
    assert s["n"] == 2


def test_included_files_paths_start_at_their_directory(tmp_path, monkeypatch):
    lib = tmp_path / "lib"
    lib.mkdir()
    (lib / "data.csv").write_text("1,2\n3,4\n")
    (lib / "more.ad").write_text("m = 10\n")
    (lib / "inner.ad").write_text('include("more.ad")\nd = load("data.csv")\n')
    (tmp_path / "main.ad").write_text('include("lib/inner.ad")\nprint((d.sum() + m).item())\n')
    monkeypatch.chdir(tmp_path.parent)                 # not where the scripts are
    s, out = session()
    s.run((tmp_path / "main.ad").read_text(), filename=str(tmp_path / "main.ad"))
    assert out.getvalue() == "20.0\n"
    p = cli(str(tmp_path / "main.ad"), cwd=tmp_path.parent)
    assert p.returncode == 0 and p.stdout == "20.0\n", p.stderr


def test_include_errors(tmp_path):
    s, _ = session(base_dir=tmp_path)
    with pytest.raises(ValueError_, match='include\\(\\): there is no file ".*nope.ad"') as e:
        s.run('x = 1\ninclude("nope.ad")')
    assert (e.value.file, e.value.line, e.value.column) == ("<string>", 2, 1)
    with pytest.raises(TypeError_, match="the path must be a file name in quotes"):
        s.run("include(1)")
    (tmp_path / "x.ad").write_text("y = 1\n")
    s2, _ = session(base_dir=tmp_path, files=False)
    with pytest.raises(RuntimeError_, match=r"include\(\): this session may not read or write files"):
        s2.run('include("x.ad")')
    assert "y" not in s2


def test_include_from_the_repl_directory(tmp_path, monkeypatch):
    (tmp_path / "v.ad").write_text("v = 41 + 1\n")
    monkeypatch.chdir(tmp_path)
    s, _ = session()
    s.run('include("v.ad")', filename="<input 1>")
    assert s["v"] == 42


# ---- variables= and --set --------------------------------------------------------------

def test_session_run_variables():
    s, out = session()
    s.run("print(N * 2, name)\nw = tensor(x) * lr", variables={"N": 1000, "name": "abc", "lr": 0.5, "x": [2.0]})
    assert out.getvalue() == "2000 abc\n"
    assert s["N"] == 1000 and np.asarray(s["w"].numpy()).tolist() == [1.0]
    with pytest.raises(NameError_, match="cannot be a name"):
        s.run("1", variables={"2x": 1})
    with pytest.raises(NameError_, match="cannot be a name"):
        s.run("1", variables={"_hidden": 1})


def test_literal_values_as_the_language_reads_them():
    assert literal_value("1000") == 1000 and isinstance(literal_value("1000"), int)
    assert literal_value("0.1") == 0.1 and literal_value("1e-3") == 1e-3 and literal_value("-2") == -2
    assert literal_value("true") is True and literal_value("false") is False and literal_value("none") is None
    assert literal_value('"a b"') == "a b"
    for text in ("abc", "runs/iris.csv", "1,2", "", "1 + 1", "x y", "-"):
        assert literal_value(text) == text
    assert parse_sets(["N=1", "s=a=b", "N=2"]) == {"N": 2, "s": "a=b"}
    for bad in ("N", "2x=1", "for=1", "_x=1", "=3"):
        with pytest.raises(ValueError):
            parse_sets([bad])


def test_cli_set(tmp_path):
    (tmp_path / "train.ad").write_text("print(N * 2, lr * 10, name, fast)\n")
    p = cli("train.ad", "--set", "N=1000", "--set", "lr=0.1", "--set", "name=abc", "--set", "fast=true",
            cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    assert p.stdout == "2000 1.0 abc true\n"
    p = cli("--set", "N=3", "-c", "N ^ 2", cwd=tmp_path)
    assert (p.returncode, p.stdout) == (0, "9\n")
    # several files share the names; a script may rebind one
    (tmp_path / "second.ad").write_text("N = N + 1\nprint(N)\n")
    p = cli("second.ad", "second.ad", "--set", "N=1", cwd=tmp_path)
    assert (p.returncode, p.stdout) == (0, "2\n3\n")


def test_cli_set_usage_errors(tmp_path):
    p = cli("-c", "1", "--set", "N", cwd=tmp_path)
    assert p.returncode == 2 and "--set N: write NAME=VALUE" in p.stderr
    p = cli("-c", "1", "--set", "9lives=1", cwd=tmp_path)
    assert p.returncode == 2 and "`9lives` cannot be a name" in p.stderr
