"""The interpreter: binding, in-place statements, functions, control flow, errors, limits."""
from __future__ import annotations

import io

import numpy as np
import pytest

import autodsl as ad
from autodsl.errors import (DSLError, NameError_, RuntimeError_, TypeError_,
                            ValueError_)
from autodsl.lang.builtins import LANGUAGE_BUILTINS, core_functions, make_builtins


def session(**kw):
    out = io.StringIO()
    return ad.Session(out=out, **kw), out


def vals(t):
    return np.asarray(t.numpy()).tolist()


# ---- binding and in-place --------------------------------------------------

def test_assignment_never_copies():
    s, _ = session()
    s.run("x = tensor([1.0, 2.0, 3.0])\ny = x\ny[0] = 5")
    assert s["x"] is s["y"]
    assert vals(s["x"]) == [5.0, 2.0, 3.0]


def test_inplace_statements():
    s, _ = session()
    s.run("x = tensor([1.0, 2.0])\nkeep = x\nx += 1\nx *= 3\nx -= 1\nx /= 2")
    assert vals(s["x"]) == [2.5, 4.0]
    assert s["keep"] is s["x"]                     # same storage, same object
    s.run("n = 1; n += 2; n *= 4")
    assert s["n"] == 12


def test_setitem_with_slices_and_tensor_index():
    s, _ = session()
    s.run("x = zeros(5)\nx[1:3] = 7\nx[::2] = 1")
    assert vals(s["x"]) == [1.0, 7.0, 1.0, 0.0, 1.0]
    s.run("m = tensor([[1.0, 2.0], [3.0, 4.0]])\ncol = m[:, 0]")
    assert vals(s["col"]) == [1.0, 3.0]


def test_grad_and_requires_grad_assignment():
    s, _ = session()
    s.run("x = tensor([1.0, 2.0], requires_grad=true)\n(x*x).sum().backward()")
    assert vals(s["x"].grad) == [2.0, 4.0]
    s.run("x.grad = none")
    assert s["x"].grad is None
    s.run("w = tensor([1.0])\nw.requires_grad = true")
    assert s["w"].requires_grad is True
    with pytest.raises(DSLError) as info:
        s.run("w.shape = 3")
    assert "only `grad` and `requires_grad`" in info.value.message


def test_backward_example_from_spec():
    s, _ = session()
    v = s.run("x = tensor([1.0, 2.0], requires_grad=true); (x*x).sum().backward(); x.grad")
    assert vals(v) == [2.0, 4.0]


def test_power_on_tensors_uses_pow():
    s, _ = session()
    s.run("w1 = tensor(2.0, requires_grad=true)\nf = (3*w1^2)^2\nf.backward()")
    # f = 9 w^4, df/dw = 36 w^3 = 288
    assert s["f"].item() == pytest.approx(144.0)
    assert s["w1"].grad.item() == pytest.approx(288.0)


# ---- functions -------------------------------------------------------------

def test_def_return_defaults_keywords():
    s, _ = session()
    assert s.run("def f(a, b=10) { return a + b }\nf(1) + f(1, 2) + f(b=3, a=4)") == 11 + 3 + 7


def test_function_without_return_gives_none():
    s, _ = session()
    assert s.run("def g(a) { b = a }\ng(1)") is None
    assert "b" not in s                       # locals stay local


def test_closures_and_scopes():
    s, _ = session()
    s.run("""
k = 2
def make(m) {
    def inner(v) { return v * m * k }
    return inner
}
times3 = make(3)
k = 5
r = times3(2)
""")
    assert s["r"] == 30                      # reads k at call time, m from the closure


def test_recursion_and_its_limit():
    s, _ = session()
    assert s.run("def fact(n) { if n <= 1 { return 1 } return n * fact(n - 1) }\nfact(10)") == 3628800
    with pytest.raises(RuntimeError_) as info:
        s.run("def forever(n) { return forever(n + 1) }\nforever(0)")
    assert "nested calls" in info.value.message
    assert info.value.line == 1
    assert s.run("fact(150) > 0") is True    # still usable afterwards


def test_function_argument_errors():
    s, _ = session()
    s.run("def f(a, b=1) { return a }")
    with pytest.raises(TypeError_) as info:
        s.run("f(1, 2, 3)")
    assert "f(a, b=1)" in info.value.message
    with pytest.raises(TypeError_) as info:
        s.run("f(c=1)")
    assert "`c`" in info.value.message
    with pytest.raises(TypeError_):
        s.run("f()")


# ---- control flow ----------------------------------------------------------

def test_for_over_range_list_and_tensor():
    s, out = session()
    s.run("t = 0\nfor i in range(5) { t += i }")
    assert s["t"] == 10
    s.run("u = 0\nfor v in [1, 2, 3] { u += v }")
    assert s["u"] == 6
    s.run("rows = tensor([[1.0, 2.0], [3.0, 4.0]])\nacc = 0\nfor r in rows { acc = acc + r.sum() }")
    assert s["acc"].item() == 10.0
    s.run("for r in rows { print(r.shape) }")
    assert out.getvalue() == "(2,)\n(2,)\n"
    s.run("c = 0; for i in range(2, 10, 3) { c += 1 }")
    assert s["c"] == 3


def test_if_else_chains():
    s, _ = session()
    src = "def sgn(v) {\n if v > 0 { return 1 } else if v < 0 { return -1 } else { return 0 }\n}\n"
    s.run(src)
    assert [s.run(f"sgn({v})") for v in (5, -2, 0)] == [1, -1, 0]
    assert s.run("if tensor(3.0) > 2 { r = 1 } else { r = 2 }\nr") == 1


def test_if_needs_single_value():
    s, _ = session()
    with pytest.raises(DSLError) as info:
        s.run("if tensor([1.0, 2.0]) > 0 { r = 1 }")
    assert "2 elements" in info.value.message or "ambiguous" in info.value.message


def test_no_grad_block_and_restore_after_error():
    s, _ = session()
    s.run("x = tensor([1.0], requires_grad=true)\nno_grad { y = x * 2 }\nz = x * 2")
    assert s["y"].requires_grad is False
    assert s["z"].requires_grad is True
    with pytest.raises(DSLError):
        s.run("no_grad { a = x * 2\n undefined_thing }")
    assert s["a"].requires_grad is False
    s.run("b = x * 2")
    assert s["b"].requires_grad is True      # grad mode restored


def test_training_loop_script():
    s, _ = session()
    s.run("""
w = tensor([0.0, 0.0], requires_grad=true)
data = tensor([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])
target = tensor([1.0, 2.0, 3.0])
def loss_fn() { return ((data @ w - target)^2).mean() }
for step in range(100) {
    loss = loss_fn()
    w.grad = none
    loss.backward()
    no_grad { w -= 0.3 * w.grad }
}
""")
    assert vals(s["w"]) == pytest.approx([1.0, 2.0], abs=1e-6)
    assert s["loss"].item() < 1e-10


# ---- printing --------------------------------------------------------------

def test_bare_expressions_print_assignments_do_not():
    s, out = session()
    s.run("a = 3\na + 1\nb = a\nnone\nprint(a, \"text\", true)\n[1, 2]")
    assert out.getvalue() == "4\n3 text true\n[1, 2]\n"


def test_run_returns_last_expression_only():
    s, _ = session()
    assert s.run("a = 1\na + 1") == 2
    assert s.run("a + 1\nb = 1") is None


def test_echo_false_prints_nothing():
    s, out = session(echo=False)
    assert s.run("1 + 1") == 2
    assert out.getvalue() == ""


# ---- what scripts can reach ------------------------------------------------

def test_private_names_unreachable():
    s, _ = session()
    s.run("x = tensor([1.0])")
    for src in ["x._data", "x.__class__", "_secret = 1", "_secret", "x.__dict__", "def _f() { }",
                "for _i in range(2) { }", "tensor(1.0, _device=\"cpu\")"]:
        with pytest.raises(NameError_) as info:
            s.run(src)
        assert "`_" in info.value.message


def test_unknown_attribute_lists_the_real_ones():
    s, _ = session()
    s.run("x = tensor([1.0], requires_grad=true)")
    with pytest.raises(NameError_) as info:
        s.run("x.gard")
    assert "`gard`" in info.value.message and "`grad`" in info.value.message
    assert (info.value.line, info.value.column) == (1, 2)
    with pytest.raises(NameError_):
        s.run("(1).real")
    with pytest.raises(NameError_):
        s.run("\"abc\".upper()")


def test_grad_fn_node_attributes():
    s, _ = session()
    s.run("x = tensor(2.0, requires_grad=true)\ny = x * x")
    assert s.run("y.grad_fn.name") == "MulBackward"
    assert isinstance(s.run("y.grad_fn.next_functions"), tuple)
    with pytest.raises(NameError_):
        s.run("y.grad_fn.apply")


def test_builtins_are_the_public_functions():
    table = make_builtins()
    public = {n for n in ad.__all__
              if callable(getattr(ad, n)) and not isinstance(getattr(ad, n), type)}
    for name in public:
        assert table[name] is getattr(ad, name), name
    assert set(table) - public == LANGUAGE_BUILTINS == {"print", "range", "len", "include", "param", "help"}
    assert set(core_functions()) == public
    for cls in ("Session", "Tensor", "DSLError", "ShapeError"):
        assert cls not in table


def test_len_and_shapes():
    s, _ = session()
    assert s.run("x = zeros(3, 4); len(x) + len(x.shape) + x.shape[1]") == 3 + 2 + 4


def test_predefined_names_rebindable():
    s, _ = session()
    assert s.run("pi > 3.14 and pi < 3.15") is True
    assert s.run("inf > 1e308") is True
    assert s.run("tensor([1, 2], dtype=float32).dtype == float32") is True
    s.run("pi = 3")
    assert s["pi"] == 3


# ---- errors: types, positions, state kept ----------------------------------

def test_wrong_keyword_type_error_with_position():
    s, _ = session()
    s.run("x = tensor([[1.0, 2.0]])")
    with pytest.raises(TypeError_) as info:
        s.run("y = 1\nz = x.sum(dimm=0)")
    e = info.value
    assert "dimm" in e.message and "dim" in e.message and "sum" in e.message
    assert (e.line, e.column) == (2, 5)
    with pytest.raises(TypeError_) as info:
        s.run("exp(x, bogus=1)")
    assert "exp" in info.value.message and "bogus" in info.value.message


def test_unknown_name_with_caret():
    s, _ = session()
    s.run("weight = 1")
    with pytest.raises(NameError_) as info:
        s.run("a = 1\nb = 2 * wieght + 1", filename="t.ad")
    e = info.value
    assert (e.file, e.line, e.column) == ("t.ad", 2, 9)
    assert "`weight`" in e.message                      # suggestion
    lines = e.render().splitlines()
    assert lines[0].startswith("t.ad:2:9: ")
    assert lines[1] == "    b = 2 * wieght + 1"
    assert lines[2] == "            ^^^^^^"


def test_errors_keep_earlier_bindings():
    s, _ = session()
    s.run("a = 1")
    with pytest.raises(DSLError):
        s.run("b = 2\na = 99 + nope\nc = 3")
    assert s["a"] == 1 and s["b"] == 2 and "c" not in s


def test_error_inside_function_points_inside_it():
    s, _ = session()
    s.run("def f(v) {\n  return v + missing\n}")
    with pytest.raises(NameError_) as info:
        s.run("f(1)")
    assert (info.value.line, info.value.column) == (2, 14)
    assert info.value.source_line == "  return v + missing"


def test_number_errors_are_dsl_errors():
    s, _ = session()
    with pytest.raises(ValueError_):
        s.run("0^-1")
    with pytest.raises(ValueError_):
        s.run("1/0")
    with pytest.raises(TypeError_):
        s.run('"a" * 2')
    with pytest.raises(TypeError_) as info:
        s.run("x = tensor([1.0])\nx.grad + 1")
    assert "none" in info.value.message
    assert s.run("2^0.5") == pytest.approx(2 ** 0.5)
    assert s.run("3^-1") == pytest.approx(1 / 3)


def test_calling_a_non_function():
    s, _ = session()
    with pytest.raises(TypeError_):
        s.run("x = 3\nx(1)")


def test_session_getitem_missing_is_name_error_and_key_error():
    s, _ = session()
    with pytest.raises(NameError_):
        s["nothing_here"]
    with pytest.raises(KeyError):
        s["nothing_here"]
    assert "pi" in s and "nothing_here" not in s
    assert "print" in s.names() and "pi" in s.names()


def test_warning_printed_with_position(capsys):
    s, _ = session()
    s.run("x = tensor([1.0], requires_grad=true)\ny = x * 2\n(y * 1).sum().backward()")
    s.run("g = y.grad", filename="w.ad")
    err = capsys.readouterr().err
    assert "w.ad:1:6: warning:" in err and "retain_grad" in err
    assert s["g"] is None


# ---- limits: long scripts, long expressions ---------------------------------

def test_3000_term_expression():
    s, _ = session()
    assert s.run("x = 1\n" + " + ".join(["x"] * 3000)) == 3000
    s.run("t = tensor(1.0, requires_grad=true)\ny = " + " + ".join(["t"] * 3000) + "\ny.backward()")
    assert s["y"].item() == 3000.0
    assert s["t"].grad.item() == 3000.0


def test_deep_nesting():
    s, _ = session()
    assert s.run("(" * 1000 + "1" + ")" * 1000) == 1
    assert s.run("-" * 2000 + "1") == 1
    assert s.run("^".join(["1"] * 2000)) == 1


def test_3000_statement_script():
    s, _ = session()
    src = "x = tensor(0.5, requires_grad=true)\ny = x * 1.0\n" + "y = y + x\n" * 3000 + "y.backward()"
    s.run(src)
    assert s["y"].item() == pytest.approx(1500.5)
    assert s["x"].grad.item() == pytest.approx(3001.0)


# ---- session options ---------------------------------------------------------

def test_trace_builtin_toggles_session_trace_and_last_trace(capsys):
    s, _ = session()
    assert s.trace is False and s.last_trace is None
    s.run("trace(true)")
    assert s.trace is True
    s.run("x = tensor(2.0, requires_grad=true)\ny = x * x\ny.backward()")
    assert s.last_trace is not None and "MulBackward" in str(s.last_trace)
    s.run("trace(false)")
    assert s.trace is False
    capsys.readouterr()


def test_session_default_dtype_and_scoping():
    s, _ = session(dtype="float32")
    assert s.run("tensor([1.0]).dtype == float32") is True
    assert ad.tensor([1.0]).dtype == ad.float64          # only inside run


def test_session_setitem_binds_python_values():
    s, _ = session()
    s["w"] = ad.tensor([1.0, 2.0])
    assert s.run("w.sum().item()") == 3.0
    with pytest.raises(NameError_):
        s["_hidden"] = 1


def test_run_restores_the_gc_threshold_even_after_an_error():
    import gc
    before = gc.get_threshold()
    s = ad.Session(echo=False)
    with pytest.raises(DSLError):
        s.run("x = 1\ny = nope")
    assert gc.get_threshold() == before
