"""Data in and out: ``load(path)`` and ``save(x, path)``, and where a relative path starts.

The format is the file's extension: ``.csv`` (numbers separated by commas, with an optional
header row), ``.npy`` (one array), ``.npz`` (a checkpoint: several arrays, each under a name)
and ``.json`` (nested lists of numbers, or an object whose values are those). NumPy's readers
parse (``np.loadtxt``; ``np.load`` with ``allow_pickle=False``, so a data file never runs code)
and ``json`` reads JSON; their failures become sentences that name the file, the line and the
column, in the language's words.

Paths: a relative path starts at the directory of the script file whose line makes the call
(the run context's ``pos``: an included file's own directory, see ``autodsl/lang/include.py``);
for the REPL, ``-c`` and ``Session.run`` strings, at the run context's ``base_dir`` (a
Session's ``base_dir=``), else at the current directory, as Python's ``open`` does. A session
made with ``files=False`` refuses every read and every write.
"""
from __future__ import annotations

import csv
import difflib
import json
import os
import zipfile

import numpy as np

from autodsl import backend
from autodsl.context import current
from autodsl.core.journal import record_file
from autodsl.core.tensor import Tensor
from autodsl.core.text_input import DEFAULT_SOURCE_LIMIT, TextInputError
from autodsl.core.text_input import read_text as bounded_text
from autodsl.core.words import kind as value_kind
from autodsl.errors import (
    DeviceError,
    DSLError,
    DTypeError,
    IndexError_,
    RuntimeError_,
    ShapeError,
    TypeError_,
    ValueError_,
)
from autodsl.names import names_of
from autodsl.ops.creation import tensor

__all__ = ["FORMATS", "Checkpoint", "base_dir", "check_files", "load", "resolve_path", "save"]

FORMATS = (".csv", ".npy", ".npz", ".json")
_KNOWN = ", ".join(FORMATS)


# ---- paths and permission ----------------------------------------------------

def check_files(what: str) -> None:
    """Raise RuntimeError_ when the running session may not read or write files."""
    if not current().files_allowed:
        raise RuntimeError_(f"{what}(): this session may not read or write files (Session(files=False)); "
                            "pass the data in as variables instead")


def base_dir() -> str:
    """Where a relative path starts now ("" is the current directory): the directory of the
    script file running the call, else the run context's ``base_dir``."""
    ctx = current()
    root = ctx.base_dir or ""
    pos = ctx.pos
    script = pos[0] if pos else None
    if script and not script.startswith("<"):      # "<string>", "<stdin>", "<input 3>": no file
        return os.path.join(root, os.path.dirname(script))
    return root


def resolve_path(path, what: str) -> str:
    """``path`` (a string) made relative to ``base_dir()``, after the files permission check;
    inside a capture of ``compile`` the call then runs eagerly for good (a file is read or
    written on every call, which a replay would skip).

    Raises TypeError_ for a path that is not a string, RuntimeError_ under ``files=False``."""
    if isinstance(path, os.PathLike):
        path = os.fspath(path)
    if not isinstance(path, str) or not path:
        example = "lib.ad" if what == "include" else "data.csv"
        raise TypeError_(f'{what}(): the path must be a file name in quotes such as "{example}", '
                         f"not {_kind(path)}")
    check_files(what)
    cap = current().capture
    if cap is not None:     # inside compile(fn): a replay would not read or write the file again
        cap.fail(f"it calls {what}(), which reads or writes a file on every call")
    return os.path.join(base_dir(), os.path.expanduser(path))


def _q(path: str) -> str:
    """A path as the language writes a string."""
    return f'"{path}"'


def _kind(v) -> str:
    if isinstance(v, Tensor):
        return "a tensor"
    if isinstance(v, str):
        return "a string" if v else "an empty string"
    if isinstance(v, bool):
        return "a boolean"
    if isinstance(v, (int, float)):
        return "a number"
    return value_kind(v)


def _extension(fname: str, what: str) -> str:
    ext = os.path.splitext(fname)[1].lower()
    if ext not in FORMATS:
        said = f"the extension {ext}" if ext else "no extension"
        raise ValueError_(f"{what}(): cannot tell the format of {_q(fname)} ({said}); "
                          f"end the file name in one of {_KNOWN}")
    return ext


def _open_error(fname: str, what: str, err: OSError) -> DSLError:
    if isinstance(err, FileNotFoundError):
        where = os.path.dirname(fname) or "."
        if what == "save":
            return ValueError_(f"save(): cannot write {_q(fname)}: the directory {_q(where)} does not exist; "
                               "create it first")
        return ValueError_(f"{what}(): there is no file {_q(fname)} (relative paths start at the script's "
                           "directory, or at the current directory outside a script file)")
    if isinstance(err, IsADirectoryError):
        return ValueError_(f"{what}(): {_q(fname)} is a directory, not a file")
    if isinstance(err, PermissionError):
        return ValueError_(f"{what}(): permission denied for {_q(fname)}")
    if isinstance(err, NotADirectoryError):
        parent = os.path.dirname(fname)
        while parent and not os.path.isfile(parent):
            parent = os.path.dirname(parent)
        return ValueError_(f"{what}(): {_q(parent or fname)} is a file, not a directory, so {_q(fname)} "
                           "cannot be under it; check the path")
    return ValueError_(f"{what}(): cannot {'write' if what == 'save' else 'read'} {_q(fname)}: "
                       f"{err.strerror or err}")


def read_text(fname: str, what: str) -> str:
    """The UTF-8 text of a file, with the language's errors (also ``include``'s reader): at most
    the run context's ``source_limit`` bytes (16 MB), refused before reading when the file is
    larger, and at its first byte when it is not text (core/text_input.py)."""
    limit = current().source_limit or DEFAULT_SOURCE_LIMIT
    try:
        with open(fname, "rb") as f:
            return bounded_text(f, limit, bom=True)
    except TextInputError as e:
        if e.kind == "utf8":
            raise ValueError_(f"{what}(): {_q(fname)} is not UTF-8 text ({e.detail})") from None
        if e.kind == "large":
            raise ValueError_(f"{what}(): {_q(fname)} {e.message}; raise the limit with "
                              "Session(source_limit=...) or autodsl --source-limit SIZE") from None
        raise ValueError_(f"{what}(): {_q(fname)} {e.message}") from None
    except OSError as e:
        raise _open_error(fname, what, e) from None


def _as_dtype(dtype):
    return None if dtype is None else backend.as_dtype(dtype)


def _close(name: str, options) -> list[str]:
    """The options a misspelt ``name`` may have meant (a different case first)."""
    same = [o for o in options if o.lower() == name.lower()]
    return same or difflib.get_close_matches(name, list(options), n=3, cutoff=0.6)


# ---- checkpoints ---------------------------------------------------------------

class Checkpoint(tuple):
    """The tensors of a ``.npz`` file (or of a JSON object), in stored order, each with a name.

    It is a tuple (``ckpt[0]``, ``len(ckpt)``, ``for t in ckpt``, and in Python
    ``w1, b1 = load("ckpt.npz")``) whose entries are also found by name: ``ckpt["w1"]``.
    ``ckpt.names`` lists the names in order.
    """

    LANG_ATTRIBUTES = frozenset({"names"})      # what a script may read (the interpreter's rule)

    def __new__(cls, items):
        items = list(items)
        self = super().__new__(cls, (t for _, t in items))
        self.names = tuple(n for n, _ in items)
        return self

    def __getnewargs__(self):           # copy and pickle make it again from its (name, tensor) pairs
        return (self.items(),)

    def by_name(self, name: str) -> Tensor:
        """The tensor stored under ``name``; IndexError_ naming the stored ones otherwise."""
        try:
            return tuple.__getitem__(self, self.names.index(name))
        except ValueError:
            close = _close(name, self.names)
            hint = (" (did you mean " + " or ".join(f"`{c}`" for c in close) + "?)") if close else ""
            stored = ", ".join(self.names) or "nothing"
            raise IndexError_(f"this checkpoint has no tensor named `{name}`{hint}; it holds {stored}") from None

    def __getitem__(self, key):
        if isinstance(key, str):
            return self.by_name(key)
        return tuple.__getitem__(self, key)

    def items(self):
        """``(name, tensor)`` pairs in stored order."""
        return list(zip(self.names, self))

    def keys(self):
        return list(self.names)

    def __repr__(self) -> str:
        return "Checkpoint(" + ", ".join(f"{n}={t!r}" for n, t in self.items()) + ")"


# ---- load ----------------------------------------------------------------------

def load(path, dtype=None, columns=None, header=None, chunks=None, device=None):
    """Read a data file into a tensor (or a checkpoint of named tensors); the format is the
    extension (.csv, .npy, .npz, .json).

    * ``.csv``: numbers separated by commas, one row per line (blank lines and ``#`` comments
      skipped). ``header=None`` takes the first row as column names when any of its cells is
      not a number; ``true``/``false`` say so. ``columns=`` picks columns by name or by number
      (0 is the first): one (a name or a number) gives a 1-D tensor, a list gives a 2-D one.
      Without ``columns``, a file of one column gives a 1-D tensor, else 2-D (rows, columns).
      The values are the default float dtype unless ``dtype`` says otherwise.
    * ``.npy``: one array, its dtype kept where a tensor has it (other integers become
      int64, float16 becomes float32).
    * ``.npz``: a checkpoint (``save([w1, b1], "ckpt.npz")``): a tuple of its tensors in
      stored order, also indexed by name (``ckpt["w1"]``; ``ckpt.names``).
    * ``.json``: nested lists of numbers (a tensor, as ``tensor(data)``), or an object whose
      values are those (a checkpoint under its keys).

    * ``.zarr``: a zarr array (a directory written by zarr; needs the dask extra).

    On the "dask" device (the default device, set by ``--device dask``), ``.npy`` and ``.zarr``
    are read lazily: memory-mapped or chunk by chunk, only when a computation needs the values,
    in ``chunks`` (dask's meaning; "auto" for .npy, zarr's own for .zarr, when not given).
    ``device`` puts the tensors there instead of the default device (``load(f, device="dask")``
    from Python, as the creation functions take it).

    ``dtype`` converts every tensor read. A relative path starts at the script's directory
    (the current directory, or the session's ``base_dir``, for the REPL and ``-c``).

    Raises ValueError_ (a missing or unreadable file, an unknown extension, a cell that is not
    a number, naming its line and column, rows of different lengths, invalid JSON), IndexError_
    (a column out of range or not in the header), TypeError_ (a path that is not a string,
    ``columns``/``header`` for a file that is not .csv), DTypeError (an array of strings or
    complex numbers; values that are not whole numbers for an integer dtype), ShapeError (JSON
    lists of different lengths), RuntimeError_ (in a session made with ``files=False``).

    Example: ``x = load("iris.csv", columns=[0, 1, 2, 3])``
    """
    if device is not None:
        with backend.defaults(device=device):
            return load(path, dtype, columns, header, chunks)
    fname = resolve_path(path, "load")
    dt = _as_dtype(dtype)
    if _is_zarr(fname):
        return _load_zarr(fname, _q(fname), dt, chunks, backend.get_default_device())
    ext = _extension(fname, "load")
    if ext != ".csv" and (columns is not None or header is not None):
        which = "columns=" if columns is not None else "header="
        raise TypeError_(f"load(): {which} is for .csv files, and {_q(fname)} is a {ext} file")
    if ext == ".csv":
        return _load_csv(fname, dt, columns, header)
    if ext == ".json":
        return _load_json(fname, dt)
    if ext == ".npy" and backend.get_default_device() == "dask":
        return _load_npy_lazy(fname, _q(fname), dt, chunks, lambda fn: _opened(fname, fn))
    return _load_numpy(fname, dt)


def _opened(fname: str, fn):
    """``fn()`` (which opens ``fname`` with NumPy), its errors in load's words."""
    try:
        return fn()
    except OSError as e:
        raise _open_error(fname, "load", e) from None
    except (ValueError, EOFError):
        raise ValueError_(f"load(): {_q(fname)} is not a NumPy file that load() can read (it may be damaged, "
                          "of another format, or hold Python objects, which load() never reads)") from None


def _load_numpy(fname: str, dt):
    try:
        data = np.load(fname, allow_pickle=False)
    except OSError as e:
        raise _open_error(fname, "load", e) from None
    except (ValueError, EOFError, zipfile.BadZipFile):
        raise ValueError_(f"load(): {_q(fname)} is not a NumPy file that load() can read (it may be damaged, "
                          "of another format, or hold Python objects, which load() never reads)") from None
    if isinstance(data, np.ndarray):
        return _tensor_of(data, dt, _q(fname))
    try:
        with data:
            items = [(name, _tensor_of(data[name], dt, f"{_q(fname)}, entry `{name}`")) for name in data.files]
    except (ValueError, OSError, zipfile.BadZipFile):
        raise ValueError_(f"load(): {_q(fname)} is not a NumPy file that load() can read (it may be damaged, "
                          "or hold Python objects, which load() never reads)") from None
    return Checkpoint(items)


def _tensor_of(arr: np.ndarray, dt, where: str) -> Tensor:
    if arr.dtype.kind not in "biuf":
        raise DTypeError(f"load(): {where} holds {arr.dtype.name} values, which a tensor cannot hold; "
                         "tensors hold numbers (float32, float64, int64) or booleans")
    if dt is not None and dt.kind in "iu" and arr.dtype.kind in "fiu":
        _check_whole(arr, where, dt)
    elif dt is None and arr.dtype.kind == "u":      # becomes int64: the largest uint64s do not fit
        _check_range(arr, where, np.dtype(np.int64))
    return tensor(arr, dtype=dt)


def _check_whole(arr: np.ndarray, where: str, dt) -> None:
    if arr.dtype.kind == "f":
        bad = ~np.isfinite(arr) | (arr != np.round(arr))
        if bad.any():
            v = arr[np.unravel_index(int(np.argmax(bad)), arr.shape)]
            raise DTypeError(f"load(): {where} holds {float(v)}, which is not a whole number, so it cannot be "
                             f"{dt.name}; load it with a float dtype")
    _check_range(arr, where, np.dtype(dt.name))


def _check_range(arr: np.ndarray, where: str, target: np.dtype) -> None:
    # NumPy's conversion to a narrower integer wraps around without a word: 3e9 as int32 is negative
    if arr.size == 0 or target.kind not in "iu":
        return
    info = np.iinfo(target)
    lo, hi = arr.min(), arr.max()
    if arr.dtype.kind == "f":
        bad = hi if hi >= float(info.max) + 1 else lo if lo < float(info.min) else None
    else:
        bad = hi if int(hi) > info.max else lo if int(lo) < info.min else None
    if bad is not None:
        text = f"{int(bad)}"
        wider = "int64 or a float dtype" if target.itemsize < 8 else "a float dtype (dtype=float64)"
        raise DTypeError(f"load(): {where} holds {text}, outside {target.name}'s range ({info.min} to "
                         f"{info.max}); load it as {wider}")


# ---- csv ----

def _is_number(cell: str) -> bool:
    try:
        float(cell)
    except ValueError:
        return False
    return True


def _cells(line: str) -> list[str]:
    return [c.strip() for c in next(csv.reader([line], skipinitialspace=True), [])]


def _data_lines(lines: list[str], start: int):
    """``(line number, text)`` of the rows at or after index ``start`` (blank and ``#`` lines skipped)."""
    for i in range(start, len(lines)):
        text = lines[i].split("#", 1)[0]
        if text.strip():
            yield i + 1, text


def _load_csv(fname: str, dt, columns, header):
    if header is not None and not isinstance(header, bool):
        raise TypeError_(f"load(): header= is true (the first row names the columns), false (it is data) "
                         f"or none (decide from the first row), not {_kind(header)}")
    lines = read_text(fname, "load").splitlines()
    first = next(_data_lines(lines, 0), None)
    if first is None:
        raise ValueError_(f"load(): {_q(fname)} holds no rows of numbers")
    first_line, first_text = first
    first_cells = _cells(first_text)
    if header is None:
        header = not all(_is_number(c) for c in first_cells)
    names = first_cells if header else None
    start = first_line if header else first_line - 1        # the index of the first data line
    data_start = next(_data_lines(lines, start), None)
    ncols = len(_cells(data_start[1])) if data_start is not None else len(first_cells)
    if names is not None and data_start is not None and len(names) != ncols:
        raise ValueError_(f"load(): {_q(fname)}: the header on line {first_line} names {len(names)} columns "
                          f"but line {data_start[0]} holds {ncols} values; give every row the same columns")
    usecols, one = _pick_columns(columns, names, ncols, fname)
    if data_start is None:           # a header and no rows: an empty table of those columns
        width = len(usecols) if usecols is not None else ncols
        return tensor(np.zeros((0,) if one else (0, width)), dtype=dt)
    try:
        arr = np.loadtxt(lines[start:], delimiter=",", quotechar='"', comments="#", ndmin=2,
                         usecols=usecols, dtype=np.float64, encoding=None)
    except ValueError:
        raise _csv_error(fname, lines, start, names, usecols, ncols) from None
    if one or (columns is None and arr.shape[1] == 1):
        arr = arr[:, 0]
    if dt is not None and dt.kind in "iub":
        where = f"{_q(fname)}" if one or columns is None else f"{_q(fname)} (the columns picked)"
        if dt.kind != "b":
            _check_whole(arr, where, dt)
    return tensor(arr, dtype=dt if dt is not None else backend.get_default_dtype())


def _pick_columns(columns, names, ncols: int, fname: str):
    """``(usecols for np.loadtxt or None, True when one column was asked for as a 1-D tensor)``."""
    if columns is None:
        return None, False
    one = isinstance(columns, (str, int)) and not isinstance(columns, bool)
    picks = [columns] if one else columns
    if isinstance(picks, Tensor) or not isinstance(picks, (list, tuple, range)):
        raise TypeError_("load(): columns= is a column's name or number (0 is the first), or a list of "
                         f"them, not {_kind(columns)}")
    out = []
    for c in picks:
        if isinstance(c, str):
            if names is None:
                raise IndexError_(f"load(): columns= names the column \"{c}\", but {_q(fname)} has no header row; "
                                  "pick columns by number (0 is the first)")
            if c not in names:
                close = _close(c, names)
                hint = (" (did you mean " + " or ".join(f'"{x}"' for x in close) + "?)") if close else ""
                raise IndexError_(f"load(): {_q(fname)} has no column named \"{c}\"{hint}; its columns are "
                                  + ", ".join(f'"{x}"' for x in names))
            where = [i for i, n in enumerate(names) if n == c]
            if len(where) > 1:
                raise IndexError_(f"load(): {_q(fname)} has several columns named \"{c}\" (numbers "
                                  + ", ".join(map(str, where[:-1])) + f" and {where[-1]}); pick one by its "
                                  "number (0 is the first)")
            out.append(where[0])
        elif isinstance(c, int) and not isinstance(c, bool):
            if not -ncols <= c < ncols:
                raise IndexError_(f"load(): column {c} is out of range: {_q(fname)} has {ncols} column"
                                  f"{'s' if ncols != 1 else ''} (0 to {ncols - 1})")
            out.append(c % ncols)
        else:
            raise TypeError_(f"load(): a column is picked by its name or its number, not {_kind(c)}")
    if not out:
        raise ValueError_("load(): columns= is an empty list; pick at least one column")
    return out, one


def _csv_error(fname, lines, start, names, usecols, ncols) -> DSLError:
    """The first cell of a .csv file that np.loadtxt could not read, in words."""
    wanted = set(range(ncols)) if usecols is None else set(usecols)
    for lineno, text in _data_lines(lines, start):
        cells = _cells(text)
        if len(cells) != ncols:
            return ValueError_(f"load(): {_q(fname)}, line {lineno} holds {len(cells)} values but the rows "
                               f"before hold {ncols}; give every row the same number of columns")
        for j, cell in enumerate(cells):
            if j not in wanted or _is_number(cell):
                continue
            col = (f'column "{names[j]}" (number {j})' if names is not None
                   else f"column number {j} (counting from 0)")
            if not cell:
                return ValueError_(f"load(): {_q(fname)}, line {lineno}, {col} is empty; write a number there "
                                   "(nan for a missing value)")
            return ValueError_(f"load(): {_q(fname)}, line {lineno}, {col}: \"{cell}\" is not a number; a .csv file "
                               "for load() holds numbers only (columns= picks the numeric columns)")
    return ValueError_(f"load(): {_q(fname)} could not be read as rows of numbers separated by commas")


# ---- json ----

def _load_json(fname: str, dt):
    text = read_text(fname, "load")
    try:
        data = json.loads(text)
    except json.JSONDecodeError as e:
        raise ValueError_(f"load(): {_q(fname)} is not valid JSON: line {e.lineno}, column {e.colno}: "
                          f"{e.msg.lower()}") from None
    if isinstance(data, dict):
        return Checkpoint((str(k), _json_tensor(v, dt, f"{_q(fname)}, entry \"{k}\"")) for k, v in data.items())
    return _json_tensor(data, dt, _q(fname))


def _json_tensor(data, dt, where: str) -> Tensor:
    stack = [(data, "")]
    while stack:                    # no recursion: a JSON file may nest deeply
        v, at = stack.pop()
        if isinstance(v, list):
            stack.extend((x, f"{at}[{i}]") for i, x in enumerate(v))
        elif not isinstance(v, (int, float, bool)):
            what = "null" if v is None else "text" if isinstance(v, str) else "an object"
            raise ValueError_(f"load(): {where} holds {what} at {at or 'the top'}; a tensor's JSON is a "
                              "number or nested lists of numbers")
    try:
        return tensor(data, dtype=dt)
    except DSLError as e:
        raise type(e)(f"load(): {where}: {e.message}") from None


# ---- save ----------------------------------------------------------------------

def save(x, path) -> None:
    """Write ``x`` to a file; the format is the extension.

    * ``.npy``: one tensor, with its dtype and shape.
    * ``.csv``: a 1-D tensor (one value per line) or a 2-D one (one row per line), values
      separated by commas, each written so that it reads back as the same number.
    * ``.npz``: a checkpoint: a list of tensors, each stored under the name of the variable
      that holds it (``save([w1, b1], "ckpt.npz")`` stores ``w1`` and ``b1``) and an unnamed
      one under ``t`` and its place in the list (``t0``, ``t1``, ...); a checkpoint that
      ``load`` returned keeps its names; from Python a dict stores under its keys. A single
      tensor is a list of one.
    * ``.json``: one tensor as nested lists, or, like ``.npz``, several as an object.

    The values are written, not the graph (as ``x.detach()``). A relative path starts at the
    script's directory; the file is replaced whole, or not at all.

    Raises TypeError_ (not a tensor, a path that is not a string), ShapeError (a .csv tensor
    that is not 1-D or 2-D), ValueError_ (an unknown extension, a missing
    directory), RuntimeError_ (in a session made with ``files=False``).

    Example: ``save([w1, b1], "ckpt.npz")``
    """
    fname = resolve_path(path, "save")
    ext = _extension(fname, "save")
    if ext == ".npz":
        items = _named(x)
        _write(fname, lambda f: _write_npz(f, items))
    elif ext == ".json":
        if isinstance(x, Tensor) or _is_plain(x):
            obj = _host(x, "save").tolist()
        else:
            obj = {name: arr.tolist() for name, arr in _named(x)}
        _write(fname, lambda f: f.write(json.dumps(obj).encode("utf-8")))
    else:
        arr = _host(x, "save", single=ext)
        if ext == ".npy":
            _write(fname, lambda f: np.save(f, arr, allow_pickle=False))
        else:
            if arr.ndim not in (1, 2):
                raise ShapeError(f"save(): a .csv file holds a 1-D or 2-D tensor, and this one is {arr.ndim}-D "
                                  f"(shape {tuple(arr.shape)}); reshape it, or save it as .npy")
            _write(fname, lambda f: f.write(_csv_text(arr).encode("utf-8")))


def _is_plain(x) -> bool:
    """A number or a (nested) list of numbers: data for one tensor."""
    if isinstance(x, (int, float, bool)):
        return True
    return isinstance(x, list) and all(not isinstance(v, (Tensor, tuple)) for v in x) \
        and all(_is_plain(v) for v in x[:1])


def _host(x, what: str, single: str | None = None) -> np.ndarray:
    if isinstance(x, Tensor):
        return backend.to_host(x._data)
    if single is not None and isinstance(x, (list, tuple, dict)) and not _is_plain(x):
        raise TypeError_(f"{what}(): a {single} file holds one tensor; save several in a .npz checkpoint: "
                         'save([w1, b1], "ckpt.npz")')
    if _is_plain(x):
        return backend.to_host(tensor(x)._data)
    raise TypeError_(f"{what}(): cannot save {_kind(x)}; save a tensor, or a list of tensors as .npz")


def _named(x) -> list[tuple[str, np.ndarray]]:
    """``(name, array)`` for each tensor of a checkpoint to write (see ``save``)."""
    if isinstance(x, Checkpoint):
        return [(n, _host(t, "save")) for n, t in x.items()]
    if isinstance(x, dict):
        for k in x:
            if not isinstance(k, str) or not k:
                raise TypeError_(f"save(): a checkpoint's names are strings, not {_kind(k)}")
        return [(k, _host(v, "save")) for k, v in x.items()]
    if isinstance(x, Tensor):
        x = [x]
    if not isinstance(x, (list, tuple)):
        raise TypeError_(f"save(): a .npz checkpoint holds a list of tensors, not {_kind(x)}")
    arrays = [_host(t, "save") for t in x]
    names: list[str | None] = []
    used: set[str] = set()
    for t in x:                         # the variables' names first, so an unnamed one avoids them
        name = next((n for n in (names_of(tensor=t) if isinstance(t, Tensor) else ()) if n not in used), None)
        names.append(name)
        used.update((name,) if name else ())
    for i, name in enumerate(names):
        if name is None:
            name, k = f"t{i}", i
            while name in used:          # a variable may be called t1 too
                k += len(x)
                name = f"t{k}"
            names[i] = name
            used.add(name)
    return list(zip(names, arrays))


def _write_npz(f, items) -> None:
    # np.savez would refuse names such as "file" (its own parameter): write the zip directly,
    # one .npy member per tensor, in order, as np.savez does.
    with zipfile.ZipFile(f, "w", compression=zipfile.ZIP_STORED, allowZip64=True) as zf:
        for name, arr in items:
            with zf.open(name + ".npy", "w", force_zip64=True) as member:
                np.lib.format.write_array(member, np.ascontiguousarray(arr), allow_pickle=False)


def _csv_text(arr: np.ndarray) -> str:
    if arr.dtype.kind == "b":
        arr = arr.astype(np.int64)
    rows = arr.reshape(-1, 1) if arr.ndim == 1 else arr
    # str() of a NumPy scalar is its shortest text that reads back as the same value (float32 too)
    return "".join(",".join(str(v) for v in row) + "\n" for row in rows)


def _write(fname: str, write) -> None:
    """Write through ``write(binary file)`` into a temporary file beside ``fname``, then rename it:
    an interrupted or failed save never leaves a half-written file."""
    folder, base = os.path.split(fname)
    partial = os.path.join(folder, f".{base}.partial")
    try:
        with open(partial, "wb") as f:
            write(f)
        os.replace(partial, fname)
        record_file(fname)                  # (an interrupted input's undo cannot take it back)
    except OSError as e:
        raise _open_error(fname, "save", e) from None
    finally:
        if os.path.exists(partial):
            os.remove(partial)


# ---- the "dask" device: .npy memory-mapped and zarr stores, read lazily, chunk by chunk ----
# Nothing is read until a computation needs a chunk (a file larger than the machine's memory can
# be a tensor); on "cpu" and "cuda" zarr is read whole.

def _is_zarr(fname: str) -> bool:
    """A zarr store: a name ending in .zarr (a directory, as zarr writes one)."""
    return fname.rstrip("/\\").lower().endswith(".zarr")


def _checked(arr, where: str):
    if np.dtype(arr.dtype).kind not in "biuf":
        raise DTypeError(f"load(): {where} holds {np.dtype(arr.dtype).name} values, which a tensor cannot "
                         "hold; tensors hold numbers (float32, float64, int64) or booleans")
    return arr


def _load_npy_lazy(fname: str, shown: str, dt, chunks, opened):
    """A dask tensor of the ``.npy`` file ``fname``, memory-mapped (read when computed);
    ``opened(fn)`` runs ``fn`` turning load's errors into its words."""
    arr = _checked(opened(lambda: np.load(fname, mmap_mode="r", allow_pickle=False)), shown)
    return tensor(backend.asarray(arr, None, "dask", chunks=chunks), dtype=dt, device="dask")


def _load_zarr(fname: str, shown: str, dt, chunks, device: str):
    """A tensor of the zarr array at ``fname``: lazy on "dask" (zarr's chunks unless ``chunks``),
    read whole elsewhere."""
    try:
        import zarr  # (optional: the dask extra)
    except ImportError:
        raise DeviceError('load(): reading a zarr store needs zarr; install it with '
                          '`pip install "autodsl[dask]"`') from None
    try:
        z = zarr.open_array(fname, mode="r")
    except Exception:  # noqa: BLE001  (zarr's errors differ between its versions)
        raise ValueError_(f"load(): {shown} is not a zarr array that load() can read (a .zarr store "
                          "written by zarr, holding one array)") from None
    _checked(z, shown)
    if device == "dask":
        import dask.array as da  # (optional: the dask extra)
        arr = da.from_zarr(z) if chunks is None else da.from_zarr(z, chunks=chunks)
        return tensor(arr, dtype=dt, device="dask")
    return tensor(np.asarray(z[...]), dtype=dt, device=device)
