"""load() and save(): every format's round trip, CSV headers and columns, checkpoints by
variable name, paths relative to the script and to a session's base_dir, files=False, and
errors in the language's words (with the script's position)."""
from __future__ import annotations

import io
import json
import os

import numpy as np
import pytest

import autodsl as ad
from autodsl.errors import (
    DSLError,
    DTypeError,
    IndexError_,
    RuntimeError_,
    ShapeError,
    TypeError_,
    ValueError_,
)


def session(tmp_path, **kw):
    return ad.Session(out=io.StringIO(), base_dir=tmp_path, **kw)


def vals(t):
    return np.asarray(t.numpy()).tolist()


IRIS = ("sepal_length,sepal_width,petal_length,petal_width,species\n"
        "5.1,3.5,1.4,0.2,0\n"
        "4.9,3.0,1.4,0.2,0\n"
        "\n"
        "# a comment line is skipped\n"
        "7.0,3.2,4.7,1.4,1\n")


@pytest.fixture
def iris(tmp_path):
    (tmp_path / "iris.csv").write_text(IRIS)
    return tmp_path


# ---- csv -------------------------------------------------------------------------

def test_csv_header_detected_and_whole_table(iris):
    s = session(iris)
    x = s.run('load("iris.csv")')
    assert x.shape == (3, 5) and x.dtype == ad.float64
    assert vals(x) == [[5.1, 3.5, 1.4, 0.2, 0.0], [4.9, 3.0, 1.4, 0.2, 0.0], [7.0, 3.2, 4.7, 1.4, 1.0]]
    assert x.is_leaf and not x.requires_grad


def test_csv_columns_by_name_and_index(iris):
    s = session(iris)
    s.run('X = load("iris.csv", columns=[0, "sepal_width", -2])\n'
          'y = load("iris.csv", columns="species", dtype=int64)\n'
          'c = load("iris.csv", columns=[4])')
    assert vals(s["X"]) == [[5.1, 3.5, 0.2], [4.9, 3.0, 0.2], [7.0, 3.2, 1.4]]
    assert s["y"].dtype == ad.int64 and vals(s["y"]) == [0, 0, 1]       # one column: 1-D
    assert s["c"].shape == (3, 1)                                        # a list of one: 2-D


def test_csv_without_header_and_header_flag(tmp_path):
    (tmp_path / "m.csv").write_text("1,2\n3,4\n")
    (tmp_path / "col.csv").write_text("1.5\n-2\n1e3\nnan\n")
    s = session(tmp_path)
    assert vals(s.run('load("m.csv")')) == [[1.0, 2.0], [3.0, 4.0]]
    assert vals(s.run('load("m.csv", header=true)')) == [[3.0, 4.0]]      # the first row names the columns
    assert vals(s.run('load("m.csv", header=true, columns="2")')) == [4.0]
    col = s.run('load("col.csv")')
    assert col.shape == (4,) and vals(col)[:3] == [1.5, -2.0, 1000.0] and np.isnan(vals(col)[3])


def test_csv_default_dtype_of_the_session(iris):
    s = session(iris, dtype="float32")
    assert s.run('load("iris.csv")').dtype == ad.float32
    assert s.run('load("iris.csv", dtype=float64)').dtype == ad.float64


def test_csv_quoted_cells_and_spaces(tmp_path):
    (tmp_path / "q.csv").write_text('"a", "b"\n"1", 2.5 \n')
    x = session(tmp_path).run('load("q.csv", columns=["b", "a"])')
    assert vals(x) == [[2.5, 1.0]]


def test_csv_header_only_is_empty(tmp_path):
    (tmp_path / "h.csv").write_text("a,b,c\n")
    assert session(tmp_path).run('load("h.csv")').shape == (0, 3)


def test_csv_bad_cell_names_line_and_column(tmp_path):
    (tmp_path / "bad.csv").write_text("a,b\n1,2\n3,setosa\n")
    s = session(tmp_path)
    with pytest.raises(ValueError_) as e:
        s.run('x = 1\nX = load("bad.csv")')
    msg = e.value.message
    assert 'line 3, column "b" (number 1): "setosa" is not a number' in msg and "bad.csv" in msg
    assert e.value.line == 2 and e.value.column == 5          # the script's position of the call
    assert "X" not in s


def test_csv_bad_cell_outside_the_picked_columns_is_fine(tmp_path):
    (tmp_path / "mixed.csv").write_text("x,name\n1,ab\n2,cd\n")
    assert vals(session(tmp_path).run('load("mixed.csv", columns="x")')) == [1.0, 2.0]


def test_csv_errors(tmp_path):
    (tmp_path / "ragged.csv").write_text("1,2\n3\n")
    (tmp_path / "empty.csv").write_text("\n\n")
    (tmp_path / "hole.csv").write_text("1,,3\n")
    (tmp_path / "frac.csv").write_text("1.5,2\n")
    (tmp_path / "mismatch.csv").write_text("a,b,c\n1,2\n")
    (tmp_path / "good.csv").write_text("a,b\n1,2\n")
    s = session(tmp_path)
    cases = [
        ('load("ragged.csv")', ValueError_, "line 2 holds 1 values but the rows before hold 2"),
        ('load("empty.csv")', ValueError_, "holds no rows of numbers"),
        ('load("hole.csv", header=false)', ValueError_, "line 1, column number 1 (counting from 0) is empty"),
        ('load("frac.csv", dtype=int64)', DTypeError, "1.5, which is not a whole number"),
        ('load("mismatch.csv")', ValueError_, "the header on line 1 names 3 columns but line 2 holds 2"),
        ('load("ragged.csv", columns=2)', IndexError_, "column 2 is out of range"),
        ('load("ragged.csv", columns="a")', IndexError_, "has no header row"),
        ('load("good.csv", columns="d")', IndexError_, 'no column named "d"; its columns are "a", "b"'),
        ('load("good.csv", columns="A")', IndexError_, 'no column named "A" (did you mean "a"?)'),
        ('load("good.csv", columns=[])', ValueError_, "empty list"),
        ('load("good.csv", columns=1.5)', TypeError_, "columns= is a column's name or number"),
        ('load("good.csv", header=1)', TypeError_, "header= is true"),
    ]
    for src, cls, words in cases:
        with pytest.raises(cls) as e:
            s.run(src)
        assert words in e.value.message, (src, e.value.message)
        assert e.value.line == 1


# ---- paths, formats, permission -----------------------------------------------------

def test_missing_file_and_unknown_extension(tmp_path):
    s = session(tmp_path)
    with pytest.raises(ValueError_, match="there is no file") as e:
        s.run('load("nope.csv")')
    assert str(tmp_path / "nope.csv") in e.value.message
    with pytest.raises(ValueError_, match=r"\.csv, \.npy, \.npz, \.json"):
        s.run('load("data.xlsx")')
    with pytest.raises(ValueError_, match="no extension"):
        s.run('save(tensor(1.0), "data")')
    with pytest.raises(TypeError_, match="the path must be a file name in quotes"):
        s.run("load(3)")
    (tmp_path / "d.csv").mkdir()
    with pytest.raises(ValueError_, match="is a directory"):
        s.run('load("d.csv")')
    with pytest.raises(ValueError_, match="does not exist; create it first"):
        s.run('save(tensor(1.0), "no/such/dir/x.npy")')


def test_files_false_refuses_reads_and_writes(tmp_path):
    (tmp_path / "m.csv").write_text("1,2\n")
    s = session(tmp_path, files=False)
    for src in ('load("m.csv")', 'save(tensor([1.0]), "out.npy")'):
        with pytest.raises(RuntimeError_, match=r"may not read or write files \(Session\(files=False\)\)"):
            s.run(src)
    assert not (tmp_path / "out.npy").exists()


def test_paths_start_at_the_script_directory(tmp_path, monkeypatch):
    sub = tmp_path / "proj"
    sub.mkdir()
    (sub / "data.csv").write_text("1,2\n")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    s = ad.Session(out=io.StringIO())
    # a script file's paths start at its directory, wherever the process runs
    s.run('x = load("data.csv")\nsave(x * 2, "twice.npy")', filename=str(sub / "train.ad"))
    assert vals(s["x"]) == [[1.0, 2.0]]              # one row of two columns
    assert np.load(sub / "twice.npy").tolist() == [[2.0, 4.0]]
    # a string's paths start at the current directory ...
    with pytest.raises(ValueError_, match="there is no file"):
        s.run('load("data.csv")')
    # ... or at the session's base_dir
    s.base_dir = sub
    assert vals(s.run('load("data.csv")')) == [[1.0, 2.0]]
    assert s.base_dir == str(sub)


def test_python_api_paths_are_the_current_directory(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    w = ad.tensor([[1.0, 2.0], [3.0, 4.0]])
    ad.save(w, "w.csv")
    assert (tmp_path / "w.csv").read_text() == "1.0,2.0\n3.0,4.0\n"
    assert vals(ad.load("w.csv")) == [[1.0, 2.0], [3.0, 4.0]]
    with pytest.raises(ValueError_, match="there is no file"):
        ad.load("missing.npy")


# ---- round trips ----------------------------------------------------------------------

@pytest.mark.parametrize("dtype", ["float64", "float32", "int64", "bool"])
def test_npy_round_trip_keeps_dtype_and_shape(tmp_path, dtype):
    s = session(tmp_path)
    s.run(f'seed(0)\nx = (randn(2, 3, 4) * 10).to({dtype})' if dtype != "bool"
          else "seed(0)\nx = randn(2, 3, 4) > 0")
    s.run('save(x, "x.npy")\ny = load("x.npy")')
    x, y = s["x"], s["y"]
    assert y.dtype == x.dtype and y.shape == (2, 3, 4)
    assert np.array_equal(y.numpy(), x.numpy())
    assert np.array_equal(np.load(tmp_path / "x.npy"), x.numpy())      # NumPy reads it too


def test_npy_of_other_numpy_dtypes(tmp_path):
    np.save(tmp_path / "i16.npy", np.arange(3, dtype=np.int16))
    np.save(tmp_path / "f16.npy", np.array([0.5, 1.5], dtype=np.float16))
    np.save(tmp_path / "c.npy", np.array([1 + 2j]))
    np.save(tmp_path / "obj.npy", np.array([{"a": 1}], dtype=object), allow_pickle=True)
    s = session(tmp_path)
    i16 = s.run('load("i16.npy")')
    assert i16.dtype == ad.int64 and vals(i16) == [0, 1, 2]
    f16 = s.run('load("f16.npy", dtype=float64)')
    assert f16.dtype == ad.float64 and vals(f16) == [0.5, 1.5]
    with pytest.raises(DTypeError, match='c.npy" holds complex128 values, which a tensor cannot hold'):
        s.run('load("c.npy")')
    with pytest.raises(ValueError_, match="Python objects, which load\\(\\) never reads"):
        s.run('load("obj.npy")')
    (tmp_path / "junk.npy").write_text("not numpy")
    with pytest.raises(ValueError_, match="not a NumPy file"):
        s.run('load("junk.npy")')


def test_csv_round_trip_is_exact(tmp_path):
    s = session(tmp_path)
    s.run('seed(1)\nm = randn(5, 3)\nv = randn(4)\ni = arange(6).reshape(2, 3)\nf = randn(3, 2).to(float32)\n'
          'save(m, "m.csv"); save(v, "v.csv"); save(i, "i.csv"); save(f, "f.csv")\n'
          'm2 = load("m.csv"); v2 = load("v.csv"); i2 = load("i.csv", dtype=int64)\n'
          'f2 = load("f.csv", dtype=float32)')
    for a in "mvif":
        x, y = s[a], s[a + "2"]
        assert y.shape == x.shape and y.dtype == x.dtype
        assert np.array_equal(x.numpy(), y.numpy())
    assert (tmp_path / "i.csv").read_text() == "0,1,2\n3,4,5\n"
    assert (tmp_path / "v.csv").read_text().count("\n") == 4        # a 1-D tensor: one value per line


def test_csv_save_needs_1d_or_2d(tmp_path):
    s = session(tmp_path)
    for src, shape in (('save(tensor(1.0), "s.csv")', r"0-D \(shape \(\)\)"),
                       ('save(zeros(2, 2, 2), "c.csv")', r"3-D \(shape \(2, 2, 2\)\)")):
        with pytest.raises(ShapeError, match="a .csv file holds a 1-D or 2-D tensor, and this one is " + shape):
            s.run(src)
    assert not list(tmp_path.iterdir())          # nothing half-written


def test_save_writes_values_not_the_graph(tmp_path):
    s = session(tmp_path)
    s.run('w = tensor([1.0, 2.0], requires_grad=true)\ny = w * 3\nsave(y, "y.npy")\nz = load("y.npy")')
    assert vals(s["z"]) == [3.0, 6.0] and s["z"].grad_fn is None and not s["z"].requires_grad


def test_save_returns_nothing_and_replaces_the_file(tmp_path):
    s = session(tmp_path)
    out = s.out
    s.run('save(tensor([1.0]), "a.npy")\nsave(tensor([2.0, 3.0]), "a.npy")')
    assert out.getvalue() == ""                  # a bare save() prints nothing
    assert np.load(tmp_path / "a.npy").tolist() == [2.0, 3.0]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.npy"]


def test_save_errors(tmp_path):
    s = session(tmp_path)
    with pytest.raises(TypeError_, match="a .npy file holds one tensor; save several in a .npz"):
        s.run('save([tensor(1.0), tensor(2.0)], "x.npy")')
    with pytest.raises(TypeError_, match="cannot save a string"):
        s.run('save("abc", "x.npy")')
    with pytest.raises(TypeError_, match=".npz checkpoint holds a list of tensors"):
        s.run('save(3, "x.npz")')


# ---- checkpoints ------------------------------------------------------------------------

def test_npz_checkpoint_names_tensors_by_variable(tmp_path):
    s = session(tmp_path)
    s.run("seed(0)\nw1 = randn(3, 2, requires_grad=true)\nb1 = zeros(2, requires_grad=true)\n"
          'save([w1, b1, w1 * 2], "ckpt.npz")')
    with np.load(tmp_path / "ckpt.npz") as z:
        assert z.files == ["w1", "b1", "t2"]                    # variable names, in order
        assert np.array_equal(z["w1"], s["w1"].numpy()) and np.array_equal(z["t2"], 2 * s["w1"].numpy())
    s.run('ckpt = load("ckpt.npz")\na = ckpt["w1"]\nb = ckpt[1]\nn = len(ckpt)\nnames = ckpt.names\n'
          "total = 0\nfor t in ckpt { total = total + t.numel() }")
    assert np.array_equal(s["a"].numpy(), s["w1"].numpy()) and s["a"] is not s["w1"]
    assert vals(s["b"]) == [0.0, 0.0]
    assert s["n"] == 3 and s["names"] == ("w1", "b1", "t2") and s["total"] == 6 + 2 + 6
    w1, b1, _ = ad.load(str(tmp_path / "ckpt.npz"))           # Python unpacks it in order
    assert w1.shape == (3, 2) and b1.shape == (2,)


def test_checkpoint_unknown_name(tmp_path):
    s = session(tmp_path)
    s.run('w1 = ones(2)\nsave([w1], "c.npz")\nc = load("c.npz")')
    with pytest.raises(IndexError_, match=r"no tensor named `w` \(did you mean `w1`\?\); it holds w1") as e:
        s.run('c["w"]')
    assert e.value.line == 1


def test_checkpoint_saved_again_keeps_its_names(tmp_path):
    s = session(tmp_path)
    s.run('first = ones(2)\nsecond = zeros(3)\nsave([first, second], "a.npz")\n'
          'save(load("a.npz"), "b.npz")\nsave(first, "one.npz")')
    with np.load(tmp_path / "b.npz") as z:
        assert z.files == ["first", "second"]
    with np.load(tmp_path / "one.npz") as z:
        assert z.files == ["first"]


def test_checkpoint_names_that_clash(tmp_path):
    s = session(tmp_path)
    s.run('t1 = ones(1)\nsave([ones(2), ones(3), t1, t1], "c.npz")')
    with np.load(tmp_path / "c.npz") as z:
        # the unnamed second tensor would be t1, which a variable holds: it moves on
        assert z.files == ["t0", "t5", "t1", "t3"]
        assert [z[k].shape for k in z.files] == [(2,), (3,), (1,), (1,)]


def test_checkpoint_from_python_dict_and_names(tmp_path):
    path = str(tmp_path / "d.npz")
    hidden = ad.tensor([1.0, 2.0])
    ad.save({"file": hidden, "allow_pickle": ad.tensor(3.0)}, path)      # np.savez's own parameter names
    c = ad.load(path)
    assert c.names == ("file", "allow_pickle") and vals(c["file"]) == [1.0, 2.0]
    ad.save([hidden, ad.tensor(0.5)], path)                # Python variables name them too
    assert ad.load(path).names == ("hidden", "t1")
    with pytest.raises(TypeError_, match="names are strings"):
        ad.save({1: hidden}, path)


def test_npz_entry_errors_name_the_entry(tmp_path):
    np.savez(tmp_path / "s.npz", ok=np.ones(1), words=np.array(["a", "b"]))
    with pytest.raises(DTypeError, match='s.npz", entry `words` holds str.* values'):
        session(tmp_path).run('load("s.npz")')


def test_text_that_is_not_utf8(tmp_path):
    (tmp_path / "latin.csv").write_bytes(b"caf\xe9,1\n2,3\n")
    with pytest.raises(ValueError_, match='latin.csv" is not UTF-8 text'):
        session(tmp_path).run('load("latin.csv")')


def test_npz_dtype_conversion(tmp_path):
    np.savez(tmp_path / "m.npz", a=np.arange(3), b=np.ones(2, dtype=np.float32))
    c = session(tmp_path).run('load("m.npz", dtype=float64)')
    assert [t.dtype for t in c] == [ad.float64, ad.float64]


# ---- json ----------------------------------------------------------------------------

def test_json_lists_and_objects(tmp_path):
    (tmp_path / "l.json").write_text("[[1, 2.5], [3, 4]]")
    (tmp_path / "o.json").write_text('{"w": [1, 2], "b": 0.5}')
    s = session(tmp_path)
    x = s.run('load("l.json")')
    assert x.dtype == ad.float64 and vals(x) == [[1.0, 2.5], [3.0, 4.0]]      # as tensor([[1, 2.5], ...])
    assert s.run('load("l.json", dtype=float32)').dtype == ad.float32
    c = s.run('load("o.json")')
    assert c.names == ("w", "b") and vals(c["w"]) == [1.0, 2.0] and vals(c["b"]) == 0.5


def test_json_round_trips(tmp_path):
    s = session(tmp_path)
    s.run('seed(2)\nw = randn(2, 3)\nb = arange(3)\nsave(w, "w.json")\nsave([w, b], "all.json")\n'
          'w2 = load("w.json")\nall = load("all.json")')
    assert np.array_equal(s["w2"].numpy(), s["w"].numpy())
    assert json.loads((tmp_path / "all.json").read_text()) == {"w": s["w"].tolist(), "b": [0, 1, 2]}
    assert s["all"].names == ("w", "b")


def test_json_errors(tmp_path):
    (tmp_path / "bad.json").write_text("[1, 2,,]")
    (tmp_path / "text.json").write_text('[[1, "a"]]')
    (tmp_path / "ragged.json").write_text("[[1, 2], [3]]")
    s = session(tmp_path)
    with pytest.raises(ValueError_, match="is not valid JSON: line 1, column 7"):
        s.run('load("bad.json")')
    with pytest.raises(ValueError_, match=r"holds text at \[0\]\[1\]; a tensor's JSON is a number or nested lists"):
        s.run('load("text.json")')
    with pytest.raises(ShapeError, match="ragged.json"):
        s.run('load("ragged.json")')
    with pytest.raises(TypeError_, match="columns= is for .csv files"):
        s.run('load("ragged.json", columns=0)')


def test_load_and_save_are_builtins_with_docs():
    s = ad.Session(out=io.StringIO())
    assert s.builtins["load"] is ad.load and s.builtins["save"] is ad.save
    for f in (ad.load, ad.save):
        assert "Raises" in f.__doc__ and "Example" in f.__doc__
    assert os.path.basename(ad.load.__code__.co_filename) == "io.py"


def test_errors_are_dsl_errors_from_python(tmp_path):
    with pytest.raises(DSLError) as e:
        ad.load(str(tmp_path / "x.csv"))
    assert e.value.file == __file__            # a Python caller's line


def test_checkpoint_copies_keep_names(tmp_path):
    import copy
    import pickle
    s = session(tmp_path)
    s.run('w = ones(2)\nsave([w], "c.npz")\nc = load("c.npz")')
    c = s["c"]
    for d in (copy.copy(c), copy.deepcopy(c), pickle.loads(pickle.dumps(c))):
        assert d.names == ("w",) and vals(d["w"]) == [1.0, 1.0]
