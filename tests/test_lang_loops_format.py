"""The language's `while` / `break` / `continue`, `%` and `//`, f-strings and `format`, and the
errors for Python forms it leaves out (each with its message and position)."""
from __future__ import annotations

import io
import signal

import numpy as np
import pytest

import autodsl as ad
from autodsl.cli import repl as repl_mod
from autodsl.cli.repl import Repl
from autodsl.errors import DSLError, NameError_, ParseError, TypeError_, ValueError_
from autodsl.lang import ast as A
from autodsl.lang.parser import KEYWORDS, is_incomplete, parse
from helpers.interrupt import sigint_after


def session():
    out = io.StringIO()
    return ad.Session(out=out, echo=False), out


def ev(src: str):
    return ad.Session(echo=False).run(src)


def err(src: str, kind=DSLError) -> DSLError:
    with pytest.raises(kind) as info:
        ad.Session(echo=False).run(src)
    return info.value


def where(e: DSLError) -> tuple:
    return e.line, e.column, e.end_column


# ---- while, break, continue ------------------------------------------------------------

def test_while_runs_until_its_condition_is_false():
    s, out = session()
    s.run("i = 0\ntotal = 0\nwhile i < 5 {\n    total += i\n    i += 1\n}")
    assert (s["i"], s["total"]) == (5, 10)
    s.run("while false { print(1) }")
    assert out.getvalue() == ""


def test_while_condition_is_truthy_like_if():
    s, _ = session()
    # a one-element tensor, a number, a bool: as `if` takes them
    s.run("x = tensor([3.0]); n = 0\nwhile x > 0 { x -= 1; n += 1 }")
    assert s["n"] == 3 and s["x"].tolist() == [0.0]
    s.run("k = 4; m = 0\nwhile k { k -= 1; m += 1 }")
    assert (s["k"], s["m"]) == (0, 4)
    e = err("x = tensor([1.0, 2.0])\nwhile x > 0 { x -= 1 }")
    assert e.line == 2 and e.column == 7          # at the condition
    assert "one element" in e.message or "element" in e.message
    e = err('while "yes" { 1 }', TypeError_)
    assert "a condition must be" in e.message and where(e) == (1, 7, 12)


def test_break_and_continue_in_for_and_while():
    s, out = session()
    s.run("for i in range(10) {\n  if i % 2 == 1 { continue }\n  if i > 6 { break }\n  print(i)\n}")
    assert out.getvalue().split() == ["0", "2", "4", "6"]
    assert s["i"] == 8                             # 7 continued, 8 broke out
    s.run("n = 0\nwhile true { n += 1; if n == 3 { break } }")
    assert s["n"] == 3
    s.run("n = 0; odd = 0\nwhile n < 6 { n += 1; if n % 2 == 0 { continue }; odd += 1 }")
    assert (s["n"], s["odd"]) == (6, 3)


def test_break_and_continue_leave_the_innermost_loop_only():
    s, _ = session()
    s.run("pairs = 0\nfor i in range(4) {\n  j = 0\n  while true {\n    j += 1\n"
          "    if j > i { break }\n    if j == 2 { continue }\n    pairs += 1\n  }\n}")
    # i=0: none; i=1: j=1; i=2: j=1 (j=2 skipped); i=3: j=1, 3
    assert s["pairs"] == 4
    s.run("hits = 0\nwhile hits < 2 { for k in range(10) { if k == 1 { break } }; hits += 1 }")
    assert (s["hits"], s["k"]) == (2, 1)


def test_break_inside_a_function_leaves_the_functions_loop():
    s, _ = session()
    s.run("def first_above(xs, t) {\n  found = none\n  for x in xs {\n    if x > t { found = x; break }\n"
          "  }\n  return found\n}\nr = first_above([1, 5, 7], 4)")
    assert s["r"] == 5
    s.run("def count() { n = 0; while true { n += 1; if n == 5 { return n } } }\nc = count()")
    assert s["c"] == 5


def test_break_continue_and_while_with_no_grad_and_return():
    s, _ = session()
    s.run("w = tensor(1.0, requires_grad=true)\nsteps = 0\nwhile true {\n  loss = (w - 3)^2\n"
          "  w.grad = none\n  loss.backward()\n  no_grad { w -= 0.25 * w.grad }\n  steps += 1\n"
          "  if loss.item() < 1e-6 { break }\n}")
    w = 1.0
    for steps in range(1, 100):          # the same descent in plain Python
        loss = (w - 3) ** 2
        w -= 0.25 * 2 * (w - 3)
        if loss < 1e-6:
            break
    assert s["steps"] == steps
    assert s["w"].item() == pytest.approx(w, rel=1e-6)


@pytest.mark.parametrize("src, word, pos", [
    ("break", "break", (1, 1, 6)),
    ("x = 1\n  continue", "continue", (2, 3, 11)),
    ("if true { break }", "break", (1, 11, 16)),
    ("no_grad { continue }", "continue", (1, 11, 19)),
])
def test_break_continue_outside_a_loop_is_a_syntax_error(src, word, pos):
    e = err(src, ParseError)
    assert e.message.startswith(f"`{word}` outside a loop: it can only appear inside a `for` or `while` block")
    assert "same function" not in e.message
    assert where(e) == pos


def test_break_in_a_function_but_outside_its_loop_is_an_error():
    e = err("def f() { continue }", ParseError)
    assert "of the same function" in e.message and where(e) == (1, 11, 19)
    # a loop around the `def` does not count: the body runs where it is called
    e = err("for i in range(3) {\n  def g() { if i > 1 { break } }\n}", ParseError)
    assert "`break` outside a loop" in e.message and where(e) == (2, 24, 29)
    s, _ = session()
    s.run("ran = 0\nfor i in range(3) { ran += 1 }")    # the error above ran nothing
    assert s["ran"] == 3


def test_a_syntax_error_in_a_loop_runs_nothing():
    s, _ = session()
    with pytest.raises(ParseError):
        s.run("a = 1\nwhile true { break }\nbreak")
    assert "a" not in s.namespace


def test_return_inside_while_inside_def_is_allowed_and_outside_refused():
    assert ev("def f() { while true { return 7 } }\nf()") == 7
    e = err("while true { return 1 }", ParseError)
    assert "`return` outside a function" in e.message and where(e)[:2] == (1, 14)


def test_while_break_continue_are_keywords():
    assert {"while", "break", "continue"} <= KEYWORDS
    e = err("while = 3", ParseError)
    assert e.line == 1 and e.column == 7
    assert ev("whiles = 2; breaker = 3; continued = 4; whiles + breaker + continued") == 9


def test_while_parses_to_its_node_and_incomplete_input_asks_for_more():
    stmt = parse("while x > 0 { x -= 1; break }").body[0]
    assert isinstance(stmt, A.While) and isinstance(stmt.cond, A.Compare)
    assert isinstance(stmt.body[1], A.Break) and (stmt.body[1].line, stmt.body[1].column) == (1, 23)
    assert is_incomplete("while true {")
    assert is_incomplete("while x > 0 {\n  x -= 1")
    assert not is_incomplete("while true { break }")


def test_while_loop_in_the_repl_is_interrupted_and_rolled_back():
    out = io.StringIO()
    r = Repl(ad.Session(out=out), out=out)
    r.handle("n = 0")
    calls = []

    def tick():
        calls.append(1)
        if len(calls) == 20:
            raise KeyboardInterrupt
    r.session["tick"] = tick
    r.handle("while true { n += 1; tick() }")
    assert len(calls) == 20
    assert repl_mod.INTERRUPTED in out.getvalue()
    assert r.session["n"] == 0                      # the input is undone, as for a `for` loop
    r.handle("n + 1")
    assert out.getvalue().rstrip().endswith("1")


@pytest.mark.skipif(not hasattr(signal, "pthread_kill"), reason="needs POSIX signals")
def test_sigint_stops_an_empty_while_true():
    out = io.StringIO()
    r = Repl(ad.Session(out=out), out=out)
    r.handle("x = 5")
    with sigint_after(0.3):
        r.handle("x = 6\nwhile true {}")
    assert repl_mod.INTERRUPTED in out.getvalue()
    assert r.session["x"] == 5


def test_the_outermost_while_reports_progress_without_a_total():
    from autodsl.lang.interpreter import loop_progress
    seen = []
    s, _ = session()
    with s.context(), loop_progress(lambda done, total: seen.append((done, total))):
        s.run("i = 0\nwhile i < 3 { i += 1; for j in range(2) { } }")
    assert seen == [(1, None), (2, None), (3, None)]


# ---- % and // --------------------------------------------------------------------------

@pytest.mark.parametrize("src, expected", [
    ("7 % 3", 1), ("-7 % 3", 2), ("7 % -3", -2), ("-7.5 % 2", 0.5), ("7.5 % -2", -0.5),
    ("7 // 2", 3), ("-7 // 2", -4), ("7 // -2", -4), ("-7.5 // 2", -4.0), ("7.0 // 2", 3.0),
    ("2 * 7 % 4", 2),             # left to right at the level of `*`: (2*7) % 4
    ("17 // 5 * 2", 6),           # (17 // 5) * 2
    ("2 + 7 % 4", 5),             # tighter than +
    ("9 // 2 / 2", 2.0), ("9 / 2 // 2", 2.0),
    ("2^3 % 5", 3),               # ^ is tighter
    ("-(7 % 3)", -1),
    ("true % 2", 1),
])
def test_mod_and_floordiv_on_numbers_are_pythons(src, expected):
    value = ev(src)
    assert value == expected and type(value) is type(expected)


def test_mod_and_floordiv_chain_flat_and_left_associative():
    e = parse("a % b // c * d").body[0].expr
    assert isinstance(e, A.Chain) and [op for op, *_ in e.ops] == ["%", "//", "*"]
    assert ev("100 % 7 // 2") == (100 % 7) // 2
    assert ev("100 // 7 % 4") == (100 // 7) % 4


def test_mod_and_floordiv_assignments():
    s, _ = session()
    s.run("n = 17; n //= 5; m = 17; m %= 5; f = -7.5; f %= 2")
    assert (s["n"], s["m"], s["f"]) == (3, 2, 0.5)
    s.run("x = 9; x /= 2")                         # `/=` still lexes as itself
    assert s["x"] == 4.5


@pytest.mark.parametrize("src, op, col", [("1 % 0", "%", 3), ("1.5 // 0", "//", 5), ("n = 3; n %= 0", "%", 8),
                                          ("7 // 0.0", "//", 3)])
def test_mod_and_floordiv_by_zero_on_numbers_is_a_language_error(src, op, col):
    e = err(src, ValueError_)
    assert e.message.startswith(f"`{op}` by zero:") and "plain numbers" in e.message
    assert "ZeroDivision" not in e.message and "modulo" not in e.message
    assert e.line == 1 and e.column == col


def test_mod_on_strings_is_refused_with_the_fstring_hint():
    e = err('"%d items" % 3', TypeError_)
    assert "cannot apply `%` to a string and a number" in e.message and 'f"loss {x}"' in e.message
    assert where(e) == (1, 12, 13)


def _torch():
    return pytest.importorskip("torch")


@pytest.mark.parametrize("a, b", [
    ([-7.0, 7.5, 3.0, -0.5, 5.0], [2.0, -2.0, 3.0, 2.0, -1.5]),
    ([[-3.0, 4.0], [9.0, -10.0]], [3.0, -4.0]),
])
def test_mod_and_floordiv_on_tensors_match_pytorch(a, b):
    torch = _torch()
    s, _ = session()
    s["a"], s["b"] = ad.tensor(a, dtype=ad.float64), ad.tensor(b, dtype=ad.float64)
    ta, tb = torch.tensor(a, dtype=torch.float64), torch.tensor(b, dtype=torch.float64)
    np.testing.assert_array_equal(s.run("a % b").numpy(), torch.remainder(ta, tb).numpy())
    np.testing.assert_array_equal(s.run("a // b").numpy(), torch.floor_divide(ta, tb).numpy())
    np.testing.assert_array_equal(s.run("a % 2.5").numpy(), torch.remainder(ta, 2.5).numpy())
    np.testing.assert_array_equal(s.run("-7 % b").numpy(), torch.remainder(-7, tb).numpy())
    np.testing.assert_array_equal(s.run("7 // b").numpy(), torch.floor_divide(7, tb).numpy())
    np.testing.assert_array_equal(s.run("[1.5, -1.5] % 1").numpy(), torch.remainder(torch.tensor([1.5, -1.5]), 1).numpy())


def test_mod_on_integer_tensors_and_in_place_match_pytorch():
    torch = _torch()
    s, _ = session()
    s.run("i = tensor([-7, 7, 9, -9], dtype=int64); r = i % 4; q = i // 4; keep = i; i %= 5")
    ti = torch.tensor([-7, 7, 9, -9])
    assert s["r"].tolist() == torch.remainder(ti, 4).tolist()
    assert s["q"].tolist() == torch.floor_divide(ti, 4).tolist()
    assert str(s["q"].dtype) == "int64"
    assert s["i"].tolist() == torch.remainder(ti, 5).tolist()
    s.run("z = tensor([7.0, -7.0]); z //= 2")
    assert s["z"].tolist() == torch.floor_divide(torch.tensor([7.0, -7.0]), 2).tolist()


def test_mod_gradient_matches_pytorch():
    torch = _torch()
    s, _ = session()
    s.run("x = tensor([-7.0, 7.5, 3.2], requires_grad=true, dtype=float64)\n((x % 2) * x).sum().backward()")
    tx = torch.tensor([-7.0, 7.5, 3.2], dtype=torch.float64, requires_grad=True)
    (torch.remainder(tx, 2) * tx).sum().backward()
    np.testing.assert_allclose(s["x"].grad.numpy(), tx.grad.numpy())


def test_mod_error_on_a_tensor_points_at_the_operator():
    e = err("x = tensor([1.0, 2.0])\ny = x % none", TypeError_)
    assert "cannot apply `%`" in e.message and (e.line, e.column) == (2, 7)


# ---- f-strings and format --------------------------------------------------------------

def test_fstring_fields_specs_and_escapes():
    s, _ = session()
    s.run('loss = tensor(0.123456); i = 3; t = f"loss {loss:.4f} at {i}"')
    assert s["t"] == "loss 0.1235 at 3"
    assert ev('f"{{literal}} {1 + 2} }}{{"') == "{literal} 3 }{"
    assert ev("f'{2.5:8.3f}|{7:>4}|{7:04d}|{1234567:,}|{0.000123:.2e}|{0.25:.0%}'") == \
        f"{2.5:8.3f}|{7:>4}|{7:04d}|{1234567:,}|{0.000123:.2e}|{0.25:.0%}"
    assert ev('f"{\'ab\':>5}|{true}|{none}|{[1, 2]}"') == "   ab|true|none|[1, 2]"
    assert ev('f"tab\\t{1}\\n"') == "tab\t1\n"
    assert ev('f""') == "" and ev('f"plain"') == "plain"


def test_fstring_expressions_are_language_expressions():
    s, _ = session()
    s.run("x = tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=true)\n"
          "def sq(v) { return v^2 }\n"
          "t = f\"{x[1, 0]:.1f} {x.sum():.2f} {sq(3)} {x[:, 1].mean().item():.3f} {x.shape} {len(x) % 2}\"")
    assert s["t"] == "3.0 10.00 9 3.000 (2, 2) 0"


def test_fstring_without_a_spec_shows_values_as_print_does():
    # but a 0-d tensor shows its number, as torch's f"{t}" does (Tensor.__format__ uses item())
    s, out = session()
    s.run("x = tensor([1.5, 2.0]); y = tensor(2.5); print(x, y, 0.1, true)\nt = f\"{x} {y} {0.1} {true}\"")
    assert out.getvalue() == "tensor([1.5000, 2.0000]) tensor(2.5000) 0.1 true\n"
    assert s["t"] == "tensor([1.5000, 2.0000]) 2.5 0.1 true"


def test_fstring_of_one_element_tensors_of_each_dtype_uses_the_number():
    torch = _torch()
    s, _ = session()
    s.run("a = tensor([[2.71828]], dtype=float64); b = tensor([7], dtype=int64); c = tensor([true]); "
          "t = f\"{a:.3f} {b:03d} {c:d} {a:e}\"")
    ta, tb = torch.tensor([[2.71828]], dtype=torch.float64), torch.tensor([7])
    assert s["t"] == f"{ta.item():.3f} {tb.item():03d} {1:d} {ta.item():e}"  # torch formats only 0-d ones


def test_format_builtin():
    assert ad.format(3.14159, ".2f") == "3.14"
    assert ad.format(ad.tensor([1.5]), "+.1e") == "+1.5e+00"
    assert ad.format(ad.tensor([1.5, 2.0])) == "tensor([1.5000, 2.0000])"
    assert ad.format("ab", "^6") == "  ab  "
    assert ev('format(2 / 3, ".3f") + "!"') == "0.667!"
    assert ev("format(tensor(0.5))") == "0.5"
    e = err('format(1, 2)', TypeError_)
    assert "format spec must be a string" in e.message
    e = err('format(tensor([1.0, 2.0]), ".2f")', TypeError_)
    assert "has 2 elements" in e.message and where(e) == (1, 1, 34)


@pytest.mark.parametrize("src, kind, msg, pos", [
    ('x = tensor([1.0, 2.0]); s = f"{x:.2f}"', TypeError_,
     "the format spec `.2f` needs a number, but this tensor has 2 elements (shape (2,)): index it", (1, 31, 38)),
    ('s = f"a {2.5:d} b"', ValueError_, "`d` is not a format spec for a number (`d` needs a whole number", (1, 9, 16)),
    ("s = f\"{'ab':.2f}\"", ValueError_, "`.2f` is not a format spec for a string", (1, 7, 17)),
    ('s = f"{none:.1f}"', TypeError_, "applies to numbers, strings and one-element tensors, not to none", (1, 7, 17)),
    ('s = f"{nope}"', NameError_, "`nope` is not defined", (1, 8, 12)),
    ('s = f"ok {1 / 0:.1f}"', ValueError_, "division by zero", (1, 13, 14)),
])
def test_fstring_errors_at_the_field(src, kind, msg, pos):
    e = err(src, kind)
    assert msg in e.message
    assert where(e) == pos


@pytest.mark.parametrize("src, msg, pos", [
    ('s = f"{x"', "this `{` in an f-string is never closed: add the `}`, or write `{{`", (1, 7, 8)),
    ('s = f"a } b"', "a single `}` in an f-string must be doubled", (1, 9, 10)),
    ('s = f"{}"', "an f-string field `{}` is empty", (1, 7, 9)),
    ('s = f"{  }"', "an f-string field `{}` is empty", (1, 7, 11)),
    ('s = f"{x!r}"', "`!r` / `!s` conversions are not supported", (1, 9, 11)),
    ('s = f"{1:{2}}"', "a format spec cannot hold another `{ }` field", (1, 10, 11)),
    ('s = f"{x = 1}"', "only an expression can go inside the `{ }` of an f-string", (1, 8, 13)),
    ('s = f"{a; b}"', "only an expression can go inside the `{ }` of an f-string", (1, 8, 12)),
    ('s = f"{1 +}"', "unexpected end of input", (1, 11, None)),
    ('s = f"{(1 + 2}"', "missing closing `)`", (1, 8, 9)),
    ('s = f"{"a"}"', ("this f-string ends at the second \": a string inside its `{ }` is written with "
                      "the other quote ('...')"), (1, 5, 10)),
    ('s = f"{x\\n}"', "a `\\` cannot appear inside the `{ }` of an f-string", (1, 9, 10)),
])
def test_fstring_syntax_errors_are_positioned_in_the_script(src, msg, pos):
    e = err(src, ParseError)
    assert msg in e.message
    assert where(e) == pos
    assert e.source_line == src


def test_fstring_on_a_later_line_keeps_the_lines_position():
    e = err('a = 1\nb = 2\nc = f"{a} and {b +* 2}"', ParseError)
    assert (e.line, e.column) == (3, 19) and e.source_line == 'c = f"{a} and {b +* 2}"'
    e = err('a = 1\nc = f"{a} {undefined_thing}"', NameError_)
    assert (e.line, e.column, e.end_column) == (2, 12, 27)


def test_f_is_still_a_name():
    assert ev("f = 2; f * 3") == 6
    assert ev("def f(x) { return x + 1 }\nf(1)") == 2
    e = err('f = 1; f "x"', ParseError)
    assert "an operator or a `;` / new line is missing" in e.message


def test_fstring_parses_to_literal_text_and_fields():
    e = parse('f"a{x:.2f}b{y}"').body[0].expr
    assert isinstance(e, A.FString)
    assert e.parts[0] == "a" and e.parts[2] == "b"
    field = e.parts[1]
    assert isinstance(field, A.FormatField) and field.spec == ".2f" and isinstance(field.value, A.Name)
    assert (field.value.line, field.value.column) == (1, 5)
    assert e.parts[3].spec == ""


def test_string_plus_number_or_tensor_is_refused_with_the_fstring_form():
    e = err('s = "loss " + 1.5', TypeError_)
    assert e.message == ('cannot apply `+` to a string and a number: use f"loss {x}" to put a number '
                      'into a string (`{x:.4f}` for 4 decimals)')
    assert where(e) == (1, 13, 14)
    e = err('x = tensor([1.0]); s = x + "!"', TypeError_)
    assert "cannot apply `+` to a tensor and a string: use f\"loss {x}\"" in e.message
    assert ev('"a" + "b"') == "ab"                 # strings still join


# ---- what Python has and the language leaves out ---------------------------------------

@pytest.mark.parametrize("src, msg, pos", [
    ("if x > 0: 3", "a block is written in braces, not after a `:`: `if x > 0 { ... }`", (1, 9, 10)),
    ("def f(x):\n  return x", "a block is written in braces, not after a `:`", (1, 9, 10)),
    ("for i in range(3): i", "a block is written in braces", (1, 18, 19)),
    ("while true: 1", "a block is written in braces", (1, 11, 12)),
    ("f = lambda x: x^2", "there is no `lambda`: define a function with `def name(x) { return ... }`", (1, 5, 11)),
    ("y = 1 if 2 > 1 else 0", ("there is no `a if c else b` expression: write `if c { y = a } else { y = b }`, "
                               "or `where(c, a, b)` for tensors"), (1, 7, 9)),
    ("for i in range(2) { }\nelse { 1 }", "`else` after a `for` loop is not part of the language", (2, 1, 5)),
    ("while false { 1 } else { 2 }", "`else` after a `while` loop is not part of the language", (1, 19, 23)),
    ("if true { 1 } elif false { 2 }", "there is no `elif`: write `else if cond { ... }`", (1, 15, 19)),
    ("xs = [i^2 for i in range(3)]", ("there are no comprehensions (`[f(x) for x in xs]`): fill a list in "
                                      "a `for` loop"), (1, 11, 14)),
    ("import numpy as np", "there is no `import`: the built-ins (tensor, zeros, exp, ...) are always there",
     (1, 1, 7)),
    ("with no_grad():\n  1", "there is no `with`: write `no_grad { ... }`", (1, 1, 5)),
])
def test_python_forms_get_what_to_write_instead(src, msg, pos):
    e = err(src, ParseError)
    assert e.message.startswith(msg)
    assert where(e) == pos


@pytest.mark.parametrize("name, hint", [
    ("pass", "the language needs no `pass`, a block may be empty (`{ }`)"),
    ("None", "write `none`"), ("True", "write `true`"), ("False", "write `false`"),
])
def test_python_names_get_what_to_write_instead(name, hint):
    e = err(f"x = 1\nif x {{ {name} }}", NameError_)
    assert e.message == f"`{name}` is not defined: {hint}"
    assert (e.line, e.column) == (2, 8)


def test_empty_blocks_and_else_after_if_still_work():
    assert ev("if true { } else { }\nfor i in range(2) { }\nwhile false { }\n1") == 1
    assert ev("x = 0\nif x > 1 { x = 1 }\nelse { x = 2 }\nx") == 2
    assert ev("pass = 4; pass") == 4               # a name like any other once it is bound


def test_the_highlighter_knows_the_new_words_and_operators():
    from pygments.token import Keyword, Name, Operator, String

    from autodsl.cli.lexer import AutodslLexer
    tokens = [(t, v) for t, v in AutodslLexer().get_tokens('while n // 2 %= 1 { break }; f"a {b}"; int32')
              if v.strip()]
    assert (Keyword, "while") in tokens and (Keyword, "break") in tokens
    assert (Operator, "//") in tokens and (Operator, "%=") in tokens
    assert (String.Double, 'f"a {b}"') in tokens
    assert (Name.Builtin.Pseudo, "int32") in tokens
