"""Bugs found by trying the newest features as a new user would (f-strings, round, int32,
load, param/--set, Session settings, the REPL's :vars): each test is one input that gave a
wrong value or a message in Python's or NumPy's words, with the value or sentence now given."""
from __future__ import annotations

import io

import numpy as np
import pytest

import autodsl as ad
from autodsl.cli.params import literal_value
from autodsl.errors import DSLError, NameError_, ParseError, TypeError_, ValueError_


def session(**kw):
    out = io.StringIO()
    return ad.Session(out=out, **kw), out


def message(src: str, **kw) -> str:
    s, _ = session(**kw)
    with pytest.raises(DSLError) as e:
        s.run(src)
    return str(e.value)


# ---- round() of a plain nan or inf --------------------------------------------------

@pytest.mark.parametrize("name", ["nan", "inf", "-inf"])
def test_round_of_plain_nan_or_inf_is_a_sentence(name):
    # was: "cannot convert float NaN to integer" / "... (cannot convert float infinity to integer)"
    s, _ = session()
    with pytest.raises(ValueError_) as e:
        s.run(f"round({name})")
    msg = str(e.value)
    assert "convert float" not in msg and "integer" not in msg.split(":")[0]
    assert "whole number" in msg and "round(tensor(" in msg


def test_round_of_plain_nan_with_decimals_and_of_tensors_keep_nan():
    s, _ = session()
    assert np.isnan(s.run("round(nan, 2)"))
    v = s.run("round(tensor([nan, inf, 2.5]))").numpy()
    assert np.isnan(v[0]) and v[1] == np.inf and v[2] == 2.0
    assert s.run("round(2.5)") == 2 and s.run("round(-3.5)") == -4


# ---- tensor(..., dtype=int32) out of range ------------------------------------------------

@pytest.mark.parametrize("src, dtype, lo, hi", [
    ("tensor([3000000000], dtype=int32)", "int32", -2 ** 31, 2 ** 31 - 1),
    ("tensor([2^70], dtype=int64)", "int64", -2 ** 63, 2 ** 63 - 1),
])
def test_integer_tensor_out_of_range_names_the_range(src, dtype, lo, hi):
    # was: "cannot make a int32 tensor from this data: Python integer 3000000000 out of bounds
    # for int32" and "... Python int too large to convert to C long"
    msg = message(src)
    assert "Python" not in msg and "C long" not in msg and "a int" not in msg
    assert f"an {dtype} tensor" in msg and f"{lo} to {hi}" in msg


# ---- load(): integers out of int64's or the asked dtype's range ------------------------------

def test_load_uint64_beyond_int64_is_refused(tmp_path):
    # was: tensor([-9223372036854775808]), the uint64 2**63 wrapped around silently
    np.save(tmp_path / "u.npy", np.array([1, 2 ** 63], dtype=np.uint64))
    s, _ = session(base_dir=tmp_path)
    with pytest.raises(DSLError) as e:
        s.run('load("u.npy")')
    assert "int64" in str(e.value) and "9223372036854775808" in str(e.value)
    # in range, or read as floats: fine
    np.save(tmp_path / "ok.npy", np.array([1, 2 ** 62], dtype=np.uint64))
    assert s.run('load("ok.npy")').tolist() == [1, 2 ** 62]
    assert s.run('load("u.npy", dtype=float64)').tolist() == [1.0, 2.0 ** 63]


@pytest.mark.parametrize("fname, write", [
    ("big.csv", lambda p: p.write_text("3000000000\n1\n")),
    ("big.npy", lambda p: np.save(p, np.array([3e9, 1.0]))),
    ("i64.npy", lambda p: np.save(p, np.array([3000000000, 1]))),
])
def test_load_with_int32_out_of_range_is_refused(tmp_path, fname, write):
    # was: tensor([-2147483648, 1], dtype=int32) / tensor([-1294967296, 1], dtype=int32)
    write(tmp_path / fname)
    s, _ = session(base_dir=tmp_path)
    with pytest.raises(DSLError) as e:
        s.run(f'load("{fname}", dtype=int32)')
    msg = str(e.value)
    assert "3000000000" in msg and "int32" in msg and "int64" in msg
    assert s.run(f'load("{fname}", dtype=int64)').tolist() == [3000000000, 1]


# ---- param() and --set -------------------------------------------------------------------------

def test_param_with_a_text_default_keeps_a_number_as_text():
    # was: --set name=3 gave the number 3, so `"run_" + name` failed
    s, _ = session()
    assert s.run('name = param("name", "abc"); "run_" + name', variables={"name": 3}) == "run_3"
    s, _ = session()
    assert s.run('name = param("name", "abc"); name', variables={"name": 2.5}) == "2.5"
    s, _ = session()
    assert s.run('name = param("name", "abc"); name', variables={"name": "x"}) == "x"
    s, _ = session()
    assert s.run('n = param("n", 3); n', variables={"n": 7}) == 7


@pytest.mark.parametrize("text, value", [("inf", float("inf")), ("-inf", float("-inf")),
                                         ("+inf", float("inf"))])
def test_set_reads_inf_as_a_number(text, value):
    # was: the text "inf", which param("tol", 0.1) refused as "not a number"
    assert literal_value(text) == value
    s, _ = session()
    assert s.run('tol = param("tol", 0.1); tol', variables={"tol": literal_value(text)}) == value


def test_set_reads_nan_as_a_number():
    v = literal_value("nan")
    assert isinstance(v, float) and np.isnan(v)
    assert literal_value("infinity") == "infinity" and literal_value("pi") == "pi"


# ---- Session settings from Python --------------------------------------------------------------

@pytest.mark.parametrize("name", ["for", "while", "true", "none", "def"])
def test_session_variables_refuse_keywords(name):
    # was: bound silently (a name no script can read)
    s, _ = session()
    with pytest.raises(NameError_) as e:
        s.run("1", variables={name: 2})
    assert "keyword" in str(e.value)


def test_session_base_dir_not_a_path_is_a_sentence():
    # was: Python's "TypeError: expected str, bytes or os.PathLike object, not int"
    with pytest.raises(TypeError_) as e:
        ad.Session(base_dir=3)
    assert "os.PathLike" not in str(e.value) and "base_dir" in str(e.value)


# ---- f-strings --------------------------------------------------------------------------------

def test_fstring_closed_by_a_quote_before_its_brace():
    # was: "`}` does not match the `(` opened at line 1, column 6; expected `)`"
    msg = message('print(f"{1"})')
    assert "f-string" in msg and "does not match" not in msg
    with pytest.raises(ParseError) as e:
        session()[0].run('x = f"{1:.2f"}')
    assert "f-string" in str(e.value)


# ---- the REPL's :vars names an optimizer in the language's words -------------------------------

def test_vars_names_an_optimizer_in_the_languages_words():
    from autodsl.cli.repl import Repl
    out = io.StringIO()
    s = ad.Session(out=out)
    r = Repl(s, out=out)
    r.handle("w = tensor([1.0], requires_grad=true); opt = sgd([w], lr=0.1); a = adam([w])")
    r.handle(":vars")
    text = out.getvalue()
    assert "opt (an sgd optimizer)" in text and "a (an adam optimizer)" in text
    assert "(SGD)" not in text and "(Adam)" not in text


# ---- max/min of two plain numbers -------------------------------------------------------------

@pytest.mark.parametrize("src, value", [("max(3, 5)", 5), ("min(3, 5)", 3), ("max(-2, 0)", 0),
                                        ("min(7, 9)", 7), ("max(true, 0)", 1)])
def test_max_min_of_two_plain_numbers_is_the_number(src, value):
    # was: "dim 5 is out of range for a tensor with 1 dimensions ...": an integer second argument
    # read as a dim even when the first is a plain number, which has no dims to reduce
    s, _ = session()
    got = s.run(src)        # as maximum(3, 5) gives: a number, or a 0-d tensor in a script
    assert not isinstance(got, tuple) and float(got) == value
    assert s.run(f"n = 0; for i in range({src}) {{ n += 1 }}; n") == value


def test_max_of_a_tensor_and_an_integer_is_still_a_dim():
    s, _ = session()
    v = s.run("max(tensor([[1.0, 5.0], [7.0, 2.0]]), 1)")
    assert v.values.tolist() == [5.0, 7.0] and v.indices.tolist() == [1, 0]
    assert s.run("min(tensor(2.0), 0)").values.item() == 2.0


# ---- index_put with torch's list of index tensors ----------------------------------------------

def test_index_put_takes_a_list_of_index_tensors_as_torch():
    # was: "a list used as an index must hold integers or true/false values"; the language has
    # no tuples, so `index_put(x, [i, j], v)` (torch's form) was the only way to write it
    torch = pytest.importorskip("torch")
    s, _ = session()
    src = ("x = zeros(2, 3, requires_grad=true); i = tensor([0, 1, 0], dtype=int64); "
           "j = tensor([2, 0, 2], dtype=int64); v = tensor([1.0, 2.0, 3.0], requires_grad=true); "
           "y = index_put(x * 1, [i, j], v, accumulate=true); (y * y).sum().backward(); y")
    y = s.run(src)
    xt = torch.zeros(2, 3, requires_grad=True)
    vt = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
    it, jt = torch.tensor([0, 1, 0]), torch.tensor([2, 0, 2])
    yt = torch.index_put(xt * 1, [it, jt], vt, accumulate=True)
    (yt * yt).sum().backward()
    assert y.tolist() == yt.tolist()
    assert s.run("x.grad").tolist() == xt.grad.tolist()
    assert s.run("v.grad").tolist() == vt.grad.tolist()
    one = s.run("z = zeros(3); z.index_put_([tensor([0, 0], dtype=int64)], tensor([5.0, 6.0]), "
                "accumulate=true); z")
    assert one.tolist() == [11.0, 0.0, 0.0]
    # a list of integers is still an index of its own (rows 0 and 1), as x[[0, 1]]
    assert s.run("index_put(zeros(2, 2), [0, 1], tensor([5.0, 6.0]))").tolist() == [[5.0, 6.0], [5.0, 6.0]]


# ---- Python's string forms the language leaves out -------------------------------------------

@pytest.mark.parametrize("src, words", [
    ('x = """abc"""', "triple-quoted"),
    ("x = '''abc'''", "triple-quoted"),
    ('x = f"""{1}"""', "triple-quoted"),
    ('x = F"{1}"', 'f"'),
    ('x = r"a\\b"', "prefix"),
    ('x = b"abc"', "prefix"),
    ('x = rf"{1}"', "prefix"),
])
def test_python_string_forms_get_the_languages_form(src, words):
    # was: 'unexpected string "abc": an operator or a `;` / new line is missing before it', and
    # for f"""...""": "this f-string ends at the second \"", which reads as a quoting mistake
    msg = message(src)
    assert words in msg and "an operator or a `;`" not in msg


def test_adjacent_strings_and_a_name_before_a_string_are_not_prefixes():
    assert "an operator or a `;`" in message('x = "a" "b"')
    assert "an operator or a `;`" in message('r = 1; x = r "a"')


# ---- more Python statements and operators the language leaves out ---------------------------

@pytest.mark.parametrize("src, words", [
    ("values, indices = sort(tensor([3.0, 1.0]))", "r[0]"),
    ("a, b = 1, 2", "r[0]"),
    ("for i, j in [[1, 2]] { }", "one name"),
    ("x = 1; x **= 2", "x = x ^ 2"),
    ("x = 1; y = x is none", "=="),
    ("x = 1; y = x is not none", "!="),
    ("try { x = 1 }", "`try`"),
    ("class A { }", "classes"),
    ("x = 1; del x", "`del`"),
    ("assert 1 == 1", "`assert`"),
    ("raise 1", "`raise`"),
    ("def f() { global x; x = 1 }", "`global`"),
    ("nonlocal x", "`nonlocal`"),
    ("yield 3", "`yield`"),
])
def test_python_forms_say_what_to_write(src, words):
    # was: "unexpected `,`; expected ..." / "unexpected name `x`: an operator or a `;` ... is
    # missing before it" / "unexpected `*=`"
    msg = message(src)
    assert words in msg, msg
    assert "an operator or a `;`" not in msg and "unexpected `" not in msg


def test_names_like_the_python_words_still_work():
    s, _ = session()
    assert s.run("try = 4; try + 1") == 5        # not keywords: plain names
    assert s.run("del_x = 2; class_ = 3; del_x + class_") == 5
    assert s.run("def f(a, b) { return a + b }; f(1, 2)") == 3


# ---- Python's and the libraries' names a new user types ------------------------------------

@pytest.mark.parametrize("src, words", [
    ("x = torch.exp(1.0)", "without a prefix"),
    ("x = np.zeros(3)", "without a prefix"),
    ("x = numpy.zeros(3)", "without a prefix"),
    ("x = math.pi", "without a prefix"),
    ("x = str(3)", 'f"{x}"'),
    ("x = int(3.5)", "round(x)"),
    ("x = float(3)", "3.0"),
])
def test_python_and_library_names_get_a_hint(src, words):
    # was: "`torch` is not defined (did you mean `trunc` or `trace`?)", "`str` is not defined (did
    # you mean `std` or `scatter`?)", "`int` is not defined (did you mean `print` ...)"
    msg = message(src)
    assert words in msg, msg
    assert "did you mean" not in msg


def test_those_names_can_still_be_bound():
    s, _ = session()
    assert s.run("np = 2; int = 3; np + int") == 5


# ---- a float32 number shown with float32's digits ---------------------------------------------

@pytest.mark.parametrize("src, text, shown", [
    ("tensor(0.1, dtype=float32)", "0.1", "tensor(0.1000, dtype=float32)"),
    ("tensor([0.1, 1/3], dtype=float32)[1]", "0.33333334", "tensor(0.3333, dtype=float32)"),
    ("tensor(0.1).float()", "0.1", "tensor(0.1000, dtype=float32)"),
    ("tensor(2.5, dtype=float32)", "2.5", "tensor(2.5000, dtype=float32)"),
    ("tensor(1e20, dtype=float32)", "1e+20", "tensor(1.0000e+20, dtype=float32)"),
    ("tensor(0.1)", "0.1", "tensor(0.1000)"),
    ("tensor(1/3)", "0.3333333333333333", "tensor(0.3333)"),
])
def test_float32_scalar_shows_float32s_shortest_digits(src, text, shown):
    # was: 0.10000000149011612 (the float32 widened to a double before it was shown), while the
    # same number in a 1-d tensor showed as 0.1. The echo is torch's tensor form; an f-string
    # field shows the number, as torch's f"{t}" does for a 0-d tensor.
    s, out = session()
    s.run(src)
    assert out.getvalue().strip() == shown
    assert s.run(f'f"{{{src}}}"') == text


def test_float32_scalar_with_requires_grad_and_item():
    s, out = session()
    s.run("y = tensor(0.1, dtype=float32, requires_grad=true); y; print(y.item())")
    assert out.getvalue().splitlines() == ["tensor(0.1000, dtype=float32, requires_grad=true)",
                                           "0.10000000149011612"]    # item() is a Python float, as torch's


# ---- load(columns="a") when two columns are named "a" --------------------------------------

def test_load_a_column_name_that_the_header_repeats_is_refused(tmp_path):
    # was: tensor([1.]), the first of the two columns named "a", without a word
    (tmp_path / "dup.csv").write_text("a,b,a\n1,2,3\n4,5,6\n")
    s, _ = session(base_dir=tmp_path)
    with pytest.raises(DSLError) as e:
        s.run('load("dup.csv", columns="a")')
    assert '"a"' in str(e.value) and "0 and 2" in str(e.value)
    assert s.run('load("dup.csv", columns="b")').tolist() == [2.0, 5.0]
    assert s.run('load("dup.csv", columns=[2, 0])').tolist() == [[3.0, 1.0], [6.0, 4.0]]


def test_fstring_field_with_a_comment_sign_is_refused():
    # was: f"{1 # c}" printed 1, the rest of the field read as a comment (Python refuses it)
    msg = message('print(f"{x # the loss}")')
    assert "#" in msg and "f-string" in msg and ":1:12:" in msg
    s, _ = session()
    assert s.run("""f"{'#'} {1}" # a comment after the line""") == "# 1"


def test_help_shows_a_tuple_default_as_the_list_a_script_writes():
    # was: adam(params, lr=0.001, betas=(0.9, 0.999), ...): the language has no tuples
    from autodsl.cli.repl import Repl
    out = io.StringIO()
    r = Repl(ad.Session(out=out), out=out)
    r.handle(":help adam")
    first = out.getvalue().splitlines()[0]
    assert "betas=[0.9, 0.999]" in first and "(0.9, 0.999)" not in first
    s, _ = session()
    w = s.run("w = tensor([1.0], requires_grad=true); o = adam([w], betas=[0.9, 0.999]); o.betas")
    assert list(w) == [0.9, 0.999]


def test_vars_describes_every_value_in_the_languages_words():
    # was: g (CompiledFunction), c (Checkpoint), r (MinMaxResult) for sort's result, l (list),
    # s (str), n (NoneType), rg (range): Python's class names
    from autodsl.cli.repl import Repl
    out = io.StringIO()
    r = Repl(ad.Session(out=out), out=out)
    for line in ['def f() { return 1 }', 'g = compile(f)', 'r = sort(tensor([2.0, 1.0]))',
                 'l = [1, 2]', 's = "abc"', 'n = none', 'rg = range(3)', 'k = 3', ':vars']:
        r.handle(line)
    text = out.getvalue()
    for py in ("CompiledFunction", "MinMaxResult", "(list)", "(str)", "NoneType", "(range)"):
        assert py not in text, text
    for words in ("f (def f())", "g (a function)", "r (a (values, indices) pair)", "l (a list)", "s (a string)",
                  "n (none)", "rg (a range)", "k (3)"):
        assert words in text, text


# ---- x.to(other): torch's form that takes another tensor's dtype and device ------------------

def test_to_another_tensor_takes_its_dtype():
    # was: "expected a tensor or a number, got str" (the tensor compared with dtype names)
    s, _ = session()
    y = s.run("x = tensor([1.5, 2.5], requires_grad=true); y = x.to(tensor([1], dtype=int32)); y")
    assert y.dtype == ad.int32 and y.tolist() == [1, 2]
    z = s.run("z = x.to(tensor(0.0, dtype=float32)); (z * 2).sum().backward(); z")
    assert z.dtype == ad.float32 and s.run("x.grad").tolist() == [2.0, 2.0]
    assert s.run("x.to(x).dtype") == ad.float64


def test_to_an_unknown_name_lists_devices_and_dtypes():
    msg = message('tensor([1.0]).to("float16")')
    assert "float16" in msg and "cpu" in msg and "float32" in msg


def test_arithmetic_on_a_values_indices_pair_says_to_pick_one():
    # was: "cannot apply `+` to a tuple and a number", with no word of .values
    msg = message("r = max(tensor([[1.0, 5.0]]), 1); r + 1")
    assert "r.values" in msg or ".values" in msg
    assert "values" in message("sort(tensor([2.0, 1.0])) * tensor([1.0, 1.0])")


# ---- compile(fn) and files: a replay would skip the read or the write ------------------------

def test_compiled_function_that_saves_writes_every_call(tmp_path):
    # was: the file held the first call's tensor ([1.]) after three calls: replays skipped save()
    s, out = session(base_dir=tmp_path)
    s.run('def f(x) { save(x, "c.npy"); return x * 2 }; g = compile(f); '
          'for v in [1.0, 2.0, 3.0] { g(tensor([v])) }')
    assert np.load(tmp_path / "c.npy").tolist() == [3.0]
    assert s.run("g.stats")["replayed"] == 0 and "save()" in s.run("g.eager_reason")


def test_compiled_function_that_writes_a_dot_file_writes_every_call(tmp_path):
    # was: replays skipped dot(), so the file kept the first call's graph
    s, out = session()
    f = (tmp_path / "g.dot").as_posix()
    s.run(f'def f(x) {{ y = (x * 2).sum(); dot(y, "{f}"); return y }}; g = compile(f); '
          'w = tensor([1.0], requires_grad=true); g(w); g(w)')
    first = (tmp_path / "g.dot").read_text()
    (tmp_path / "g.dot").unlink()
    s.run("g(w)")
    assert (tmp_path / "g.dot").read_text() == first
    assert s.run("g.stats")["replayed"] == 0 and "dot()" in s.run("g.eager_reason")


def test_compiled_function_that_loads_reads_the_file_again(tmp_path):
    # was: tensor([1.]) after the file was saved with [10.]: the replay kept the first read
    np.save(tmp_path / "c.npy", np.array([1.0]))
    s, _ = session(base_dir=tmp_path)
    s.run('def f(x) { return x * load("c.npy") }; g = compile(f); a = g(tensor([1.0]))')
    np.save(tmp_path / "c.npy", np.array([10.0]))
    assert s.run("g(tensor([1.0]))").tolist() == [10.0]
    assert s.run("a").tolist() == [1.0]


def test_include_path_example_names_a_script():
    msg = message("include(3)")
    assert '"lib.ad"' in msg and "data.csv" not in msg


def test_compiled_function_that_reads_a_param_sees_a_new_value():
    # was: tensor([1.]) after s = 5.0: the replay kept the value param() gave at the capture
    s, _ = session()
    s.run('def f(x) { return x * param("s", 1.0) }; g = compile(f); a = g(tensor([1.0]))')
    s.run("s = 5.0")
    assert s.run("g(tensor([1.0]))").tolist() == [5.0]
    assert s.run("a").tolist() == [1.0] and "param()" in s.run("g.eager_reason")


def test_a_numpy_array_given_as_a_variable_is_named_so():
    # was: "a ndarray has no attribute `sum`; it has no attributes" (NumPy's class name)
    s, _ = session()
    with pytest.raises(DSLError) as e:
        s.run("y.sum()", variables={"y": np.array([1.0, 2.0])})
    msg = str(e.value)
    assert "ndarray" not in msg and "NumPy array" in msg and "tensor(" in msg
    assert s.run("y.sum()", variables={"y": ad.tensor(np.array([1.0, 2.0]))}).item() == 3.0


def test_einsum_of_one_list_literal_is_one_operand():
    # was: "einsum: the equation 'ii' has 1 operand(s) but 2 tensor(s) were given": the rows of
    # the list literal were read as torch's list of operands
    s, _ = session()
    assert s.run('einsum("ii", [[1.0, 2.0], [3.0, 4.0]])').item() == 5.0
    assert s.run('einsum("i,i", [1.0, 2.0], [3.0, 4.0])').item() == 11.0
    a = s.run('a = tensor([[1.0, 2.0], [3.0, 4.0]]); einsum("ij,jk", [a, a])')
    assert a.tolist() == [[7.0, 10.0], [15.0, 22.0]]


@pytest.mark.parametrize("word", ["while", "break", "for", "no_grad", "%", "//", "f-string", "^"])
def test_help_on_a_keyword_or_operator_shows_the_language(word):
    # was: "no built-in or topic named 'while' (did you mean `where`?); :help lists them"
    from autodsl.cli.repl import TOPICS, Repl
    out = io.StringIO()
    r = Repl(ad.Session(out=out), out=out)
    r.handle(f":help {word}")
    text = out.getvalue()
    assert "no built-in or topic" not in text and f"`{word}` is part of the language" in text
    assert TOPICS["language"] in text


@pytest.mark.parametrize("fn", ["cumsum", "cumprod"])
@pytest.mark.parametrize("src, dtype", [("tensor([1, 2], dtype=int64)", "int32"),
                                        ("tensor([true, true])", "int32"),
                                        ("tensor([1.5, 2.0])", "int32"),
                                        ("tensor([1, 2], dtype=int32)", "int32")])
def test_cumsum_cumprod_with_an_integer_dtype_keep_it(fn, src, dtype):
    # was: int64 whatever dtype= said (the input converted, then summed in int64 as without dtype)
    torch = pytest.importorskip("torch")
    s, _ = session()
    got = s.run(f"{fn}({src}, 0, dtype={dtype})")
    ref = getattr(torch, fn)(torch.tensor(s.run(src).tolist()), 0, dtype=getattr(torch, dtype))
    assert got.dtype.name == dtype and got.tolist() == ref.tolist()
    assert s.run(f"{fn}({src}, 0).dtype").name in ("int64", "float64")


def test_save_under_a_file_as_if_a_directory_says_so(tmp_path):
    # was: 'save(): cannot write "ok.csv/x.npy": Not a directory' (the system's words)
    (tmp_path / "ok.csv").write_text("1\n")
    s, _ = session(base_dir=tmp_path)
    for src in ('save(tensor([1.0]), "ok.csv/x.npy")', 'load("ok.csv/x.npy")'):
        with pytest.raises(DSLError) as e:
            s.run(src)
        msg = str(e.value)
        assert "Not a directory" not in msg and "is a file, not a directory" in msg and '"' in msg


@pytest.mark.parametrize("ch, code", [("\x00", "U+0000"), ("\u200b", "U+200B"), ("\x07", "U+0007")])
def test_an_invisible_character_is_named_by_its_code(ch, code):
    # was: "unexpected character ` `" with the invisible character between the backticks
    msg = message(f"x = 1{ch}\n")
    assert code in msg and ch not in msg.splitlines()[0]


def test_cuda_without_cupy_says_so_in_the_languages_words():
    # was: "... not installed or failed to import (ModuleNotFoundError: No module named 'cupy') ..."
    import importlib.util
    if importlib.util.find_spec("cupy") is not None:
        pytest.skip("CuPy is installed here: the message for a missing CuPy cannot be seen")
    msg = message('x = tensor([1.0]); x.to("cuda")')
    assert "CuPy, which is not installed" in msg and "pip install autodsl[gpu]" in msg
    assert "ModuleNotFoundError" not in msg and "No module named" not in msg
