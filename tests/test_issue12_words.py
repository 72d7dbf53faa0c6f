"""Errors speak the language's words: Python's and NumPy's never reach a user (issue 12, break 8).

Three parts: the cases the break-it pass found, each with the sentence it gives now; a table
of bad inputs across built-ins, methods, operators and statements (wrong types, wrong arity,
bad keywords), each of which must raise a DSLError whose message holds none of Python's or
NumPy's words; and the translation of Python's own messages (``autodsl.core.words.plain``),
which is what catches a message no op spelled out.
"""
from __future__ import annotations

import io

import numpy as np
import pytest

import autodsl as ad
from autodsl.core.words import kind, plain, shown

# words of Python and NumPy, not of the language (a user never wrote a tuple or a ufunc)
PYTHON_WORDS = ("object", "NoneType", "numpy", "ufunc", "tuple", "iterable", "dtype('", "int64'>",
                "Traceback", "argument of type", "positional argument", "__", "<class", "np.",
                "'int'", "'float'", "'str'", "'list'", " not int", " not float", " not str",
                # Python class names of autodsl's own results
                "a Why", "a DType", "RemovableHandle", "MinMaxResult", "an Explanation", "CheckResult",
                "BackwardStepper", "a Graph", "an Info", "a Plot", "True", "False", "None")

SETUP = ("x = tensor([1.0, 2.0, 3.0])\nm = tensor([[1.0, 2.0], [3.0, 4.0]])\nb = tensor([true, false])\n"
         "def f(a) { return a }\n")


def error_of(src: str) -> ad.DSLError:
    s = ad.Session(echo=False, out=io.StringIO())
    s.run(SETUP)
    with pytest.raises(ad.DSLError) as info:
        s.run(src, filename="t.ad")
    return info.value


def assert_plain(e: ad.DSLError) -> None:
    leaked = [w for w in PYTHON_WORDS if w in e.message]
    assert not leaked, f"{leaked} in: {e.message}"


# -- the cases the break-it pass found ----------------------------------------------------------

@pytest.mark.parametrize("src, kind_, words", [
    # NumPy's advice was to use `^`, which is power here
    ("b - b", ad.DTypeError, ["bool", "logical_xor"]),
    ("tensor([true]) - tensor([true])", ad.DTypeError, ["bool", "logical_xor"]),
    # torch: "dimension specified as 0 but tensor has no dimensions"
    ("tensor(1.0).size(0)", ad.IndexError_, ["0-d", "no dimensions"]),
    ("tensor(1.0).size(-1)", ad.IndexError_, ["0-d", "no dimensions"]),
    # torch: "zero-dimensional tensor (at position 0) cannot be concatenated"
    ("cat([tensor(1.0), tensor(2.0)])", ad.ShapeError, ["0-d", "position 0", "stack"]),
    ("cat([x, tensor(2.0)])", ad.ShapeError, ["0-d", "position 1", "stack"]),
    ("cat([x, 1.0])", ad.ShapeError, ["0-d", "position 1"]),
    # 'float' object is not iterable / 'NoneType' object is not iterable
    ("grad(x.sum(), 1.5)", ad.TypeError_, ["a number", "list"]),
    ("grad(none, x)", ad.TypeError_, ["none", "list"]),
    # got NoneType: none where a tensor is expected, named as none, with the op
    ("exp(none)", ad.TypeError_, ["exp", "got none"]),
    ("matmul(x, none)", ad.TypeError_, ["matmul", "got none"]),
    ("tensor([1, none])", ad.TypeError_, ["not none"]),
    ("zeros(none)", ad.TypeError_, ["none"]),
    ("zeros_like(none)", ad.TypeError_, ["zeros_like", "tensor", "none"]),
    # numpy.newaxis
    ('x["a"]', ad.IndexError_, ["a string", "none", "slices"]),
    ("x[f]", ad.IndexError_, ["a function"]),
])
def test_the_messages_found_speak_the_language(src, kind_, words):
    e = error_of(src)
    assert isinstance(e, kind_), (type(e).__name__, e.message)
    for w in words:
        assert w in e.message, (w, e.message)
    assert_plain(e)
    assert e.has_position and e.line == 1


def test_sign_of_a_bool_tensor_is_itself_as_in_torch():
    s = ad.Session(echo=False)
    y = s.run("sign(tensor([true, false, true]))")
    assert y.dtype is ad.bool and y.tolist() == [True, False, True]
    torch = pytest.importorskip("torch")
    assert torch.sign(torch.tensor([True, False, True])).tolist() == y.tolist()


def test_sign_of_a_bool_tensor_is_a_copy():
    s = ad.Session(echo=False)
    s.run("b = tensor([true, false]); c = sign(b); c[0] = false")
    assert s.run("b").tolist() == [True, False]


def test_an_op_numpy_has_no_bool_loop_for_names_the_dtype():
    e = error_of("floor(b)")
    assert isinstance(e, ad.DTypeError) and "bool" in e.message and ".to(" in e.message
    assert_plain(e)


def test_print_end_and_sep_none_are_the_defaults():
    out = io.StringIO()
    ad.Session(out=out).run('print(1, end=none)\nprint(2, 3, sep=none)\nprint(4, end="")')
    assert out.getvalue() == "1\n2 3\n4"


@pytest.mark.parametrize("src, words", [
    ("print(1, end=5)", ["end", "a string", "a number"]),
    ("print(1, sep=[1])", ["sep", "a string", "a list"]),
])
def test_print_refuses_a_sep_or_end_that_is_not_text(src, words):
    e = error_of(src)
    assert isinstance(e, ad.TypeError_)
    for w in words:
        assert w in e.message


def test_from_python_the_same_words_and_a_dsl_error():
    with pytest.raises(ad.IndexError_, match="0-d"):
        ad.tensor(1.0).size(0)
    with pytest.raises(ad.ShapeError, match="0-d"):
        ad.cat([ad.tensor(1.0), ad.tensor(2.0)])
    with pytest.raises(ad.TypeError_, match="got none") as info:
        ad.exp(None)
    assert_plain(info.value)
    with pytest.raises(ad.DTypeError, match="logical_xor"):
        ad.tensor([True]) - ad.tensor([True])


class _Opaque:
    """A host object the language has no word for."""


@pytest.mark.parametrize("call, error, words", [
    (lambda: ad.Session().run(None), ad.TypeError_, ["a string", "not none"]),
    (lambda: ad.Session().run(b"1 + 1"), ad.TypeError_, ["not bytes", "decode"]),
    (lambda: ad.grad(1, 2), ad.TypeError_, ["a number"]),
    (lambda: ad.grad(ad.tensor([1.0], requires_grad=True).sum(), None), ad.TypeError_, ["not none"]),
    (lambda: ad.zeros(_Opaque()), ad.TypeError_, ["whole number"]),
    (lambda: ad.linspace("a", 1, 3), ad.TypeError_, ["start", "a string"]),
    (lambda: ad.linspace(0, 1, 2.5), ad.TypeError_, ["steps", "2.5"]),
    (lambda: ad.tensor(np.array(["a"])), ad.DTypeError, ["text", "float64"]),
    (lambda: ad.tensor(np.array([1 + 1j])), ad.DTypeError, ["complex numbers"]),
    (lambda: ad.tensor([1.0]) + np.array(["a"]), ad.DTypeError, ["text"]),
    (lambda: ad.tensor([1.0]).to(_Opaque()), ad.DeviceError, ["string", '"cpu"']),
    (lambda: ad.tensor([1.0])[{}], ad.IndexError_, ["a dictionary"]),
    (lambda: ad.exp(_Opaque()), ad.TypeError_, ["exp", "got a"]),
])
def test_from_python_bad_values_raise_dsl_errors_in_these_words(call, error, words):
    with pytest.raises(error) as info:
        call()
    for w in words:
        assert w in info.value.message, (w, info.value.message)
    assert_plain(info.value)


@pytest.mark.parametrize("command", [":info n", ":graph n", ":dot n", ":step n", ":why n", ":info none",
                                     ":check y n", ":graph f"])
def test_repl_commands_given_the_wrong_kind_of_value_say_so_in_these_words(command):
    from autodsl.cli.repl import Repl
    out = io.StringIO()
    repl = Repl(ad.Session(out=out), out=out)
    for line in ("x = tensor([1.0, 2.0], requires_grad=true)", "y = (x * x).sum()", "n = 3",
                 "def f(a) { return a }"):
        repl.handle(line)
    out.seek(0)
    out.truncate()
    repl.handle(command)
    text = out.getvalue()
    assert text.strip() and not [w for w in PYTHON_WORDS if w in text], text
    assert any(w in text for w in ("a number", "none", "a function", "the number 3")), text


def test_none_where_a_tensor_is_expected_says_where_none_comes_from():
    e = error_of("exp(x.grad)")
    assert "got none" in e.message and ".grad" in e.message and "backward" in e.message


def test_a_pair_where_a_tensor_is_expected_names_the_built_in_and_the_pick():
    e = error_of("min(sort(x))")
    assert e.message.startswith("min: ") and "(values, indices) pair" in e.message and ".values" in e.message


def test_bool_arithmetic_inside_another_op_is_not_advised_as_xor():
    e = error_of("cross_entropy(b, b)")
    assert isinstance(e, ad.DTypeError) and "bool" in e.message and "xor" not in e.message


def test_numpy_on_a_tensor_says_what_to_write():
    e = error_of("x.numpy()")
    assert isinstance(e, ad.NameError_) and "x.tolist()" in e.message


# -- the table: every bad input raises a DSLError in the language's words ----------------------

TABLE = [
    # none, strings, lists, functions and booleans where a tensor or a number is expected
    "sum(none)", "exp(none)", 'exp("a")', "exp(f)", "sqrt([1, none])", "abs(none)", "floor(none)",
    "mean(none)", "max(none)", 'min("a")', "sort(none)", "softmax(none, 0)", "det(none)",
    "solve(m, none)", "maximum(x, none)", "where(none, x, x)", "where(x > 1, none, x)",
    "matmul(none, x)", 'einsum("i", none)', "round(none)", "isnan(none)", "mse_loss(x, none)",
    "tensor(none)", 'tensor("a")', "tensor(f)", "tensor([[1, 2], [3]])", "tensor([x, x])",
    # creation functions given the wrong kind of size or value
    "zeros(none)", 'zeros("a")', "zeros([2, none])", "ones(f)", "randn(none)", "linspace(0, 1, none)",
    "eye(none)", 'full([2], "a")', "full([2], none)", "zeros_like(1)", 'ones_like("a")',
    "zeros([-1])", "seed(none)", 'seed("a")',
    # lists of tensors
    "cat(1.0)", "cat(none)", "cat([x, none])", "stack([x, none])", "stack([])", "cat([])",
    "cat([tensor(1.0), tensor(2.0)])", "cat([x, m])",
    # methods: dims, shapes and indices of the wrong kind
    "tensor(1.0).size(0)", 'x.size("a")', 'x.sum("a")', "x.sum(1.5)", 'x.sum(dim="a")',
    "x.view(none)", 'x.reshape("a")', "x.reshape(f)", "x.reshape([1.5])", "x.reshape([-2])",
    "x.transpose(none, 0)", "x.permute(none)", "m.permute([0, none])", "x.unsqueeze(none)",
    'x.squeeze("a")', "x.expand(none)", "x.to(f)", "x.triu(none)", 'x.tril("a")', "x.topk(1.5)",
    'x.cumsum("a")', 'x.norm("a")', 'x.var("a")', "x.masked_fill(x > 1, none)",
    'x.masked_fill(x > 1, "a")', "x.scatter(0, none, 1)", "x.register_hook(none)", "x.register_hook(1)",
    "gather(x, 0, none)", "index_select(x, 0, none)", "x.add_(none)", 'x.add_("a")', "x.mul_(f)",
    # indexing
    "x[f]", 'x["a"]', "x[1.5]", "x[[1.5]]", "x[x]", "x[3]", "x[0, 0]", "tensor(1.0)[0]",
    "x.shape[5]", 'x.shape[0] = 1', "x[0] = none", 'x[0] = "a"', "x[tensor([0.5])]",
    '"abc"[5]', '"abc"["a"]', "l = [1]; l[5] = 1", "l = [1]; l[none]", "[1, 2][none]",
    # operators on values that do not take them
    "x + none", 'x + "a"', "x + f", "none + x", '"a" - x', "f * x", "x @ none", "x @ 1", "1 @ x",
    "x ^ none", 'x ^ "a"', "x < none", 'x < "a"', "b - b", "-b", "-none", '-"a"', "x.shape + 1",
    '"a" * "b"', '"a" + 1', '1 + "a"', '"a" < 1', '"a" * 2.5', '"a" - "b"', "f + 1", "m @ x.view(3, 1)",
    "x += none", 'x -= "a"', "x *= f", "x[0] += none", 's = "a"; s += 1',
    # bool tensors where NumPy has no loop
    "floor(b)", "ceil(b)", "trunc(b)", "b // b", "b % b", "mean(b)",
    # calls: wrong arity, unknown or repeated keywords, things that are not functions
    "f(1, 2)", "f()", "f(b=1)", "f(1, a=2)", "exp()", "exp(x, 1)", "exp(x, foo=1)", "exp(x, out=x)",
    "zeros([2], foo=1)", "x.sum(foo=1)", "x.sum(1, 2, 3, 4)", "x.mean(1, 2, 3)", "tensor()",
    "cat([x], 0, 1)", "len()", "len(x, x)", "len(none)", "len(1)", "print(foo=1)", "print(1, end=5)",
    "grad()", "grad(x)", "grad(none, x)", "grad(x.sum(), 1)", "x.item(1)", "x.detach(1)",
    "x.register_hook(f, 1)", "x.size(0, 1)", "range()", "range(none)", 'range("a")', "range(1.5)",
    "matmul(x, x, x)", "none()", "x()", "1()", '"a"()', "x.foo", "none.foo", "f.foo", "x.foo = 1",
    "f.x = 1", "none.sum()", '"a".sum()',
    # statements
    "for i in 1 { }", "for i in none { }", "for i in f { }", "a, b = 1", "a, b = [1, 2, 3]",
    "a, b = none", "if x { }",
    # tools of the language given the wrong kind of argument
    "why(1)", "why(none)", "graph(1)", "dot(none)", "dot(x, 1)", "info(1)", "info(none)",
    "check(none, x)", "check(f, none)", "jacobian(f, none)", "sgd(none)", "adam([x], betas=none)",
    "load(1)", "include(none)", 'param(none, 1)', "format(x, 1)", "compile(1)", "plot(none)",
    'set_default_dtype("a")', 'tensor([1.0]).to("gpu")', "tensor([1.0], dtype=1)",
    'f"{none:.2f}"', 'format("a", ".2f")', 'f"{x:.q}"',
    # flags and numbers of the wrong kind that used to be taken (torch refuses them)
    'tensor([1.0], requires_grad="a")', "x.requires_grad = none", "x.requires_grad_(1)", "arange(none)",
    'arange(0, "a")', "m.sum([0, 0])", "m.mean([1, -1])",
    # the results of tools and ops where a number is expected
    "sort(x) + 1", "max(m, 0) + 1", 'sort(x)["a"]', "why(x) + 1", "graph(x) + 1", "info(x) + 1",
    "int64 + 1", "float32(1)", "w = tensor([1.0], requires_grad=true); h = w.register_hook(f); h + 1",
    "w = tensor([1.0], requires_grad=true); (w * x).grad_fn.next_functions + 1",
    "w = tensor([1.0], requires_grad=true); (w * x).grad_fn.next_functions[5]",
    # values written as the script writes them (true, none), not as Python does (True, None)
    "range(true)", "w = tensor([1.0], requires_grad=true); graph(w * 2, max_nodes=none)",
    'f"{sort(x):.2f}"', 'format(max(m, 0), "d")',
    # NumPy's words from inside an op's forward, from index arrays and from integer casts
    "cross_entropy(b, b)", "m[[0, 1], [0, 1, 0]]", "x[2^70]", "x[-2^70] = 1",
    "tensor([1.0]).to(int32) + 2^40",
    "l = [1, 2]; l[2^70] = 1", 'l = [1, 2]; l["a"] += 1', "l = [1, 2]; l[0:1] = [3]",
    "seed(-1)", "seed(nan)", "seed(f)", "full([2, 3], 1.0, m)", "zeros_like(m, true)", "any(nan, 1)",
    "all(x, int64, 1.5)", "b[[x, m]]", "min(sort(x))", "x < [x, m]", "x + [1, none]",
    "x.div(none, m)", "mse_loss(x, x, reduction=x)", "anomaly(true, mode=x)", "x.sum(keepdim=x)",
    "m.mean(0, keepdim=1)",
    "w = tensor([1.0], requires_grad=true); graph(w * 2, 5)", "w = tensor([1.0], requires_grad=true); graph(w * 2, sort(x))",
]


@pytest.mark.parametrize("src", TABLE)
def test_a_bad_input_raises_a_dsl_error_in_the_language_s_words(src):
    e = error_of(src)
    assert_plain(e)
    assert e.message.strip() and "\n" not in e.message.strip()
    assert not e.message.startswith("internal error"), e.message


def test_the_table_is_large():
    assert len(TABLE) >= 60 and len(set(TABLE)) == len(TABLE)


# -- Python's messages in the language's words ----------------------------------------------------

@pytest.mark.parametrize("python, words", [
    ("'float' object is not iterable", ["expected a list", "a number"]),
    ("'NoneType' object is not iterable", ["expected a list", "none"]),
    ("'NoneType' object is not subscriptable", ["none cannot be indexed"]),
    ("'int' object is not callable", ["a number is not a function"]),
    ("object of type 'NoneType' has no len()", ["none has no length"]),
    ("argument of type 'int' is not iterable", ["`in`", "a number"]),
    ("unsupported operand type(s) for **: 'NoneType' and 'int'", ["`^`", "none and a number"]),
    ("'<' not supported between instances of 'str' and 'int'", ["compare a string with a number"]),
    ('can only concatenate str (not "int") to str', ["a string", "a number", "f-string"]),
    ("can't multiply sequence by non-int of type 'float'", ["whole number", "a number"]),
    ("float() argument must be a string or a real number, not 'NoneType'", ["expected a number, got none"]),
    ("int() argument must be a string, a bytes-like object or a real number, not 'NoneType'",
     ["expected a number, got none"]),
    ("'float' object cannot be interpreted as an integer", ["whole number", "a number"]),
    ("list indices must be integers or slices, not str", ["a list is indexed", "a string"]),
    ("tuple index out of range", ["out of range"]),
    ("f() takes from 1 to 2 positional arguments but 3 were given", ["at most 2", "3 were given"]),
    ("f() missing 1 required positional argument: 'a'", ["`a`"]),
    ("f() got an unexpected keyword argument 'c'", ["unknown keyword `c`"]),
    ("f() got multiple values for argument 'a'", ["`a` is given twice"]),
    ("too many positional arguments", ["too many arguments"]),
    ("missing a required argument: 'a'", ["`a` is missing"]),
    (("numpy boolean subtract, the `-` operator, is not supported, use the bitwise_xor, the `^` operator, "
      "or the logical_xor function instead."), ["bool", "logical_xor"]),
    (("ufunc 'sign' did not contain a loop with signature matching types "
      "<class 'numpy.dtypes.BoolDType'> -> None"), ["sign", "dtype", ".to("]),
    ("ufunc 'floor' not supported for the input types", ["floor", ".to("]),
    (("only integers, slices (`:`), ellipsis (`...`), numpy.newaxis (`None`) and integer or boolean arrays "
      "are valid indices"), ["none", "slices"]),
    ("Cannot cast ufunc 'add' output from dtype('float64') to dtype('int64') with casting rule 'same_kind'",
     ["float64", "int64"]),
    ("expected <class 'numpy.float64'>, got NoneType", ["a number", "none"]),
])
def test_python_messages_are_said_in_the_language_s_words(python, words):
    said = plain(python)
    for w in words:
        assert w in said, (w, said)
    leaked = [w for w in PYTHON_WORDS if w in said]
    assert not leaked, (leaked, said)
    assert "`^`" not in said or "**" in python      # `^` is power: never advice for a bool operation


def test_a_message_without_python_words_is_unchanged():
    text = "shapes (2,) and (3,) do not broadcast; reshape one operand"
    assert plain(text) == text


@pytest.mark.parametrize("value, words", [
    (None, "none"), (True, "a boolean"), (2, "a number"), (2.5, "a number"), ("a", "a string"),
    ([1], "a list"), ((2, 3), "a shape"), (len, "a function"), (lambda g: g, "a function"),
    (np.float32(1), "a number"), (ad.tensor([1.0]), "a tensor"), (np.zeros(2), "a NumPy array (give the session a tensor instead: autodsl.tensor(array))"),
    ((1, "a"), "a sequence"), (ad.int64, "a dtype"),
])
def test_kind_names_a_value_as_the_language_does(value, words):
    assert kind(value) == words


def test_kind_names_results_and_graph_nodes():
    w = ad.tensor([1.0], requires_grad=True)
    assert kind(ad.sort(ad.tensor([2.0, 1.0]))) == "a (values, indices) pair"
    assert kind((w * 2).grad_fn) == "a graph node"
    assert kind(w.register_hook(lambda g: g)) == "a hook handle"


def test_shown_writes_a_value_as_a_script_would():
    assert [shown(v) for v in (None, True, False, 3, 1.5, "a", [1, None])] == \
        ["none", "true", "false", "3", "1.5", '"a"', "[1, none]"]
    assert shown("a\nb") == '"a\\nb"'         # as the script writes it, on one line
