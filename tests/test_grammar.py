"""The grammar: precedence, associativity, separators, comments, keywords, syntax errors."""
from __future__ import annotations

import pytest

import autodsl as ad
from autodsl.errors import ParseError
from autodsl.lang import ast as A
from autodsl.lang.parser import is_incomplete, parse


def ev(src: str):
    return ad.Session(echo=False).run(src)


# ---- precedence and associativity -----------------------------------------

@pytest.mark.parametrize("src, expected", [
    ("2^3^2", 512),            # right-associative
    ("(2^3)^2", 64),
    ("-2^2", -4),              # unary minus is looser than ^
    ("(-2)^2", 4),
    ("2^-1", 0.5),             # the exponent is a unary-level factor
    ("2^-1^2", 0.5),           # 2^(-(1^2))
    ("-2^-2", -0.25),
    ("10-4-3", 3),             # left-associative
    ("8/4/2", 1.0),
    ("2*3^2", 18),
    ("1+2*3", 7),
    ("(1+2)*3", 9),
    ("1+2*3-4/2", 5.0),
    ("--3", 3),
    ("-+-3", 3),
    ("2*-3", -6),
    ("1 + 2 < 4", True),        # comparison is looser than +
    ("1 + 2 == 3", True),
    ("3 != 3", False),
    ("2 <= 2", True),
    ("2 >= 3", False),
    ("1 < 2 and 2 < 3", True),
    ("1 > 2 or 2 < 3", True),
    ("not 1 > 2", True),
    ("not true and false", False),
    ("1e-3", 0.001),
    ("2.5", 2.5),
    (".5 + 1.", 1.5),
    ("7", 7),
])
def test_precedence_values(src, expected):
    value = ev(src)
    assert value == expected
    assert type(value) is type(expected)


def test_power_tree_shape():
    e = parse("2^3^2").body[0].expr
    assert isinstance(e, A.Power) and isinstance(e.exponent, A.Power)
    e = parse("-x^2").body[0].expr
    assert isinstance(e, A.Unary) and isinstance(e.operand, A.Power)
    e = parse("x^-1").body[0].expr
    assert isinstance(e, A.Power) and isinstance(e.exponent, A.Unary)


def test_left_assoc_chain_is_flat():
    e = parse("a-b-c").body[0].expr
    assert isinstance(e, A.Chain)
    assert [op for op, *_ in e.ops] == ["-", "-"]
    assert ev("a = 10; b = 4; c = 3; a-b-c") == 3


def test_postfix_chain_tree():
    e = parse("x.sum(dim=0).exp()").body[0].expr
    assert isinstance(e, A.Call) and isinstance(e.func, A.Attribute) and e.func.name == "exp"
    inner = e.func.obj
    assert isinstance(inner, A.Call) and inner.func.name == "sum"
    assert inner.keywords[0].name == "dim" and inner.keywords[0].value.value == 0
    e = parse("x[1:3, ::2, 0].T").body[0].expr
    assert isinstance(e, A.Attribute) and e.name == "T"
    keys = e.obj.keys
    assert isinstance(keys[0], A.Slice) and keys[0].lower.value == 1 and keys[0].upper.value == 3
    assert isinstance(keys[1], A.Slice) and keys[1].lower is None and keys[1].step.value == 2
    assert isinstance(keys[2], A.Number)


def test_postfix_chain_value():
    v = ev("x = tensor([[1.0, 2.0], [3.0, 4.0]]); x.sum(dim=0).exp()")
    assert v.numpy().tolist() == pytest.approx([pytest.approx(2.718281828459045 ** 4), 2.718281828459045 ** 6])


def test_postfix_binds_tighter_than_power_and_unary():
    assert ev("x = tensor([1.0, 2.0, 3.0]); -x[1]^2").item() == -4.0
    assert ev("s = tensor([2.0, 3.0]).shape; s[0]") == 2


# ---- separators, comments, blank lines -------------------------------------

def test_semicolons_newlines_comments():
    src = """
# a comment on its own line
a = 1; b = 2   # trailing comment

c = a + b;;
;
c   # the value
"""
    assert ev(src) == 3


def test_crlf_and_line_continuation():
    assert ev("a = 1\r\nb = a + \\\n 2\r\nb") == 3


def test_multiline_brackets():
    v = ev("x = tensor([[1.0, 2.0],\n               [3.0, 4.0]])\nx.sum(\n  dim=1\n)")
    assert v.numpy().tolist() == [3.0, 7.0]


def test_lists_nested_and_trailing_comma():
    assert ev("[[1, 2], [3, 4],]") == [[1, 2], [3, 4]]
    assert ev("[]") == []


def test_strings():
    assert ev('"text"') == "text"
    assert ev('"a\\tb"') == "a\tb"


def test_literals_true_false_none():
    assert ev("true") is True
    assert ev("false") is False
    assert ev("none") is None


# ---- keywords vs identifiers -------------------------------------------------

@pytest.mark.parametrize("name", ["define", "iffy", "format", "none_x", "true_value", "falsehood",
                                  "fortune", "inner", "elsewhere", "no_grad2", "returned", "android",
                                  "order", "nothing", "ifelse", "deffer", "in_", "def_"])
def test_keyword_prefixes_are_names(name):
    assert ev(f"{name} = 7\n{name} + 1") == 8


@pytest.mark.parametrize("kw", ["def", "for", "in", "if", "else", "no_grad", "return", "true", "false",
                                "none", "and", "or", "not"])
def test_keywords_are_not_names(kw):
    with pytest.raises(ParseError):
        parse(f"{kw} = 1")


# ---- statements forms -------------------------------------------------------

def test_statement_forms_parse():
    prog = parse("""
def f(a, b=1) {
    return a + b
}
for i in range(3) { x = i }
if x > 1 { y = 1 } else if x > 0 { y = 2 } else { y = 3 }
if x > 1 {
    y = 1
}
else {
    y = 4
}
no_grad { z = 1 }
t[0] = 1
t += 1; t -= 1; t *= 2; t /= 2
t.grad = none
t.requires_grad = true
""")
    kinds = [type(s).__name__ for s in prog.body]
    assert kinds == ["FuncDef", "For", "If", "If", "NoGrad", "SetItem", "AugAssign", "AugAssign",
                     "AugAssign", "AugAssign", "SetAttr", "SetAttr"]
    assert isinstance(prog.body[2].orelse[0], A.If)   # else if
    assert prog.body[3].orelse is not None             # `else` on the next line


def test_block_statements_on_one_line():
    assert ev("s = 0; for i in range(4) { s += i; s += 1 } s") == 10
    assert ev("def sq(v) { return v * v } sq(5)") == 25


# ---- syntax errors ------------------------------------------------------------

def test_syntax_error_reported_before_anything_runs():
    s = ad.Session(echo=False)
    with pytest.raises(ParseError) as info:
        s.run("a = 1\nb = 2\nc = (3 +* 4)\n")
    e = info.value
    assert (e.line, e.column) == (3, 9)
    assert "a" not in s and "b" not in s       # line 1 never ran
    assert e.source_line == "c = (3 +* 4)"
    assert e.render().splitlines()[0].startswith("<string>:3:9: ")
    assert e.render().splitlines()[2].strip() == "^"


def test_missing_closing_bracket():
    with pytest.raises(ParseError) as info:
        parse("x = 1\ny = tensor([1.0, 2.0]\nz = 3\n", "m.ad")
    e = info.value
    assert "missing closing `)`" in e.message
    assert (e.file, e.line, e.column) == ("m.ad", 2, 11)
    with pytest.raises(ParseError) as info:
        parse("y = f(1, 2")
    assert "missing closing `)`" in info.value.message and info.value.column == 6


def test_mismatched_bracket():
    with pytest.raises(ParseError) as info:
        parse("x = [1, 2)")
    assert "expected `]`" in info.value.message and info.value.column == 10


def test_unexpected_token_and_end_of_input():
    with pytest.raises(ParseError) as info:
        parse("x = 1 +")
    assert "unexpected end of input" in info.value.message
    with pytest.raises(ParseError) as info:
        parse("x = * 2")
    assert "unexpected `*`" in info.value.message and "expected an expression" in info.value.message
    assert info.value.column == 5
    with pytest.raises(ParseError) as info:
        parse("x ** 2")
    assert "use `^`" in info.value.message


def test_unterminated_string_and_bad_character():
    with pytest.raises(ParseError) as info:
        parse('x = "abc')
    assert "never closed" in info.value.message
    with pytest.raises(ParseError) as info:
        parse("a && b")
    assert "`and`" in info.value.message


def test_bad_assignment_targets():
    with pytest.raises(ParseError) as info:
        parse("f(1) = 2")
    assert "cannot assign to a call" in info.value.message
    with pytest.raises(ParseError):
        parse("1 = x")
    with pytest.raises(ParseError):
        parse("return 3")                   # outside def
    with pytest.raises(ParseError):
        parse("f(a=1, 2)")                  # positional after keyword


def test_is_incomplete():
    assert is_incomplete("x = (1 +")
    assert is_incomplete("def f(x) {")
    assert is_incomplete("def f(x) {\n  y = x\n")
    assert is_incomplete("x = [1, 2,\n")
    assert not is_incomplete("x = 1 +")       # a new line ends it: no next line could finish it
    assert is_incomplete("x = 1 + \\")
    assert not is_incomplete("x = 1")
    assert not is_incomplete("def f(x) { return x }")
    assert not is_incomplete("x = )")
    assert not is_incomplete('x = "abc')


def test_chained_comparison_says_they_do_not_chain():
    import autodsl as ad
    s = ad.Session(echo=False)
    with pytest.raises(ad.ParseError) as info:
        s.run("a = 1\nb = a < 2 < 3")
    assert "do not chain" in info.value.message and (info.value.line, info.value.column) == (2, 11)
