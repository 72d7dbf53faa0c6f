"""Issue 12, breaks 4, 6 and 7: source positions in O(1) memory per node, a huge integer
literal, and ``autodsl -c '-pi'``.

4. A 100,000-term sum kept a copy of its growing source text per `+` (5.9 GB, then "out of
   memory"): positions are now offsets into the one source text (``SourcePos``), read as the
   ``(file, line, column, text)`` tuple they replace. Deep nesting is a syntax error with a
   position, found before anything runs.
6. A 5,000-digit integer literal was "internal error: VisitError", and from Python a Lark
   exception: it is a ParseError at the literal, and no exception of Lark's leaves parse().
7. ``-c`` takes any source, also one that starts with `-`.
"""
from __future__ import annotations

import pickle
import subprocess
import sys
import textwrap

import pytest

import autodsl
from autodsl import Session
from autodsl.errors import DSLError, ParseError
from autodsl.lang import parser as P
from autodsl.source import format_pos, pos_text


def session():
    return Session(echo=False)


# ---- 4. positions cost O(1) memory per node ----------------------------------

# Run in a child process: its peak memory is its own, and an address-space bound makes a
# quadratic blow-up (gigabytes before) fail at once instead of swapping the machine.
_CHILD = textwrap.dedent("""
    import resource, sys
    import autodsl
    vm = int(open("/proc/self/status").read().split("VmSize:")[1].split()[0]) * 1024
    resource.setrlimit(resource.RLIMIT_AS, (vm + 2 * 1024 ** 3, resource.RLIM_INFINITY))
    n, kind = int(sys.argv[1]), sys.argv[2]
    if kind == "numbers":
        src = "y = " + "+".join(["1"] * n) + "\\ny"
    else:
        src = ("x = tensor(1.0, requires_grad=true)\\ny = " + "+".join(["x"] * n)
               + "\\ny.backward()\\nx.grad.item()")
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    s = autodsl.Session(echo=False)
    value = s.run(src)
    extra = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) * 1024
    text = s["y"].grad_fn.pos[3] if kind == "tensors" else "x+x"
    print(value, extra, len(text), text[:7])
""")


@pytest.mark.parametrize("kind", ["numbers", "tensors"])
def test_a_100000_term_sum_parses_and_runs_in_bounded_memory(kind):
    pytest.importorskip("resource")
    if not sys.platform.startswith("linux"):
        pytest.skip("reads /proc/self/status")
    n = 100_000
    # a hang guard, not a speed test: this takes seconds, and took minutes before
    p = subprocess.run([sys.executable, "-c", _CHILD, str(n), kind], capture_output=True, text=True, check=False,
                       timeout=600)
    assert p.returncode == 0, p.stderr[-2000:]
    value, extra, length, head = p.stdout.split()
    assert float(value) == n                    # 100,000 ones; x.grad of x+x+...+x
    assert int(extra) < 500 * 1024 ** 2         # about 150 MB here; gigabytes before
    if kind == "tensors":                       # the last node's text is the whole sum, read on demand
        assert int(length) == 2 * n - 1 and head == "x+x+x+x"


def test_a_position_reads_as_the_tuple_it_replaces():
    s = session()
    s.run("x = tensor([1.0, 2.0], requires_grad=true)\ny = (x * 2).sum() + x[0]")
    pos = s["y"].grad_fn.pos
    assert pos == ("<string>", 2, 19, "(x * 2).sum() + x[0]")        # at its `+`
    assert tuple(pos) == ("<string>", 2, 19, "(x * 2).sum() + x[0]")
    file, line, col, text = pos
    assert (file, line, col) == ("<string>", 2, 19) and text == "(x * 2).sum() + x[0]"
    assert pos[:3] == ("<string>", 2, 19) and pos[3] == pos[-1] == text and len(pos) == 4
    assert hash(pos) == hash(("<string>", 2, 19, text)) and pos in {("<string>", 2, 19, text)}
    assert pos != ("<string>", 2, 19, "x") and pos != "x"
    assert repr(pos) == repr(("<string>", 2, 19, text))
    assert pickle.loads(pickle.dumps(pos)) == pos
    assert type(pickle.loads(pickle.dumps(pos))) is tuple       # a pickle holds no source text
    assert format_pos(pos) == "2:19 `(x * 2).sum() + x[0]`" and pos_text(pos) == text


def test_long_expressions_are_shown_cut_as_before():
    s = session()
    s.run("x = tensor(1.0, requires_grad=true)\ny = " + " + ".join(["x"] * 40))
    pos = s["y"].grad_fn.pos
    whole = " + ".join(["x"] * 40)
    assert pos[3] == whole
    assert format_pos(pos) == f"2:{5 + whole.rfind('+')} `{whole[:57]}...`"


def test_the_backward_of_a_node_is_named_after_its_text():
    s = session()
    s.run("x = tensor(2.0, requires_grad=true)\ny = sin(x) * x * x\n"
          "g = grad(y, x, create_graph=true)[0]\nh = grad(g, x, create_graph=true)[0]")
    g = {n.pos for n in _walk(s["g"].grad_fn) if n.pos is not None}
    h = {n.pos for n in _walk(s["h"].grad_fn) if n.pos is not None}
    assert ("<string>", 2, 16, "backward of sin(x) * x * x") in g
    assert ("<string>", 2, 5, "backward of sin(x)") in g
    assert ("<string>", 2, 16, "backward of backward of sin(x) * x * x") in h
    assert ("<string>", 2, 5, "backward of backward of sin(x)") in h
    assert ("<string>", 4, 5, "grad(g, x, create_graph=true)") in h


def _walk(root):
    seen, stack = set(), [root]
    while stack:
        n = stack.pop()
        if n is None or id(n) in seen:
            continue
        seen.add(id(n))
        yield n
        stack.extend(n.next_functions and [f for f, _ in n.next_functions])


def test_deep_nesting_is_a_syntax_error_with_a_position():
    deep = 3200                                 # the limit is 3000 (parser.MAX_NESTING)
    for src in ["-" * deep + "1", "abs(" * deep + "1" + ")" * deep, "[" * deep + "]" * deep,
                "^".join(["2"] * deep), "x = 1\n" + "if true {" * deep + "x" + "}" * deep]:
        with pytest.raises(ParseError) as info:
            P.parse(src)                            # from Python, at Python's own recursion limit
        e = info.value
        assert e.message.startswith("this is nested too deeply: more than 3000 levels")
        assert e.line is not None and e.column is not None and e.source_line is not None
        with pytest.raises(ParseError):
            session().run(src)


def test_nesting_below_the_limit_still_runs():
    s = session()
    assert s.run("-" * 2500 + "1") == 1
    assert s.run("[" * 2000 + "7" + "]" * 2000) is not None
    assert s.run("x = 1\n" + "if true {" * 500 + "x = 2" + "}" * 500 + "\nx") == 2


def test_fstring_fields_keep_their_positions_in_the_script():
    s = session()
    with pytest.raises(DSLError) as info:
        s.run('a = 1\n\n  b = f"x {a} y {a + [1, 2] @ 3:.2f}"')
    e = info.value
    assert (e.line, e.column) == (3, 29) and e.source_line == '  b = f"x {a} y {a + [1, 2] @ 3:.2f}"'
    with pytest.raises(ParseError) as info:     # a syntax error inside a field
        s.run('a = 1\nb = f"{a +}"')
    assert (info.value.line, info.value.column) == (2, 11)
    with pytest.raises(ParseError) as info:     # an error the AST builder raises inside a field
        s.run('a = 1\nb = f"..{max(a, dim=1, dim=2)}"')
    assert (info.value.line, info.value.column, info.value.end_column) == (2, 24, 27)
    assert info.value.source_line == 'b = f"..{max(a, dim=1, dim=2)}"'
    assert s.run('a = 2\nf"{a * 3} {f\'{a + 1}\'}"') == "6 3"


# ---- 6. a huge integer literal ------------------------------------------------

def test_a_5000_digit_integer_is_a_parse_error_at_the_literal():
    digits = "9" * 5000
    for src, col in [(f"x = {digits}", 5), (f"x = 1\ny = 2 + {digits}", 9), (f'x = f"{{{digits}}}"', 8)]:
        with pytest.raises(ParseError) as info:
            session().run(src)
        e = info.value
        assert isinstance(e, DSLError)
        assert e.message.startswith("this integer has 5000 digits, more than the 4300")
        assert (e.line, e.column) == (src.count("\n") + 1, col)
        assert e.end_column == col + 5000
        with pytest.raises(ParseError):
            autodsl.Session(echo=False).parse(src)


def test_the_integer_limit_said_is_the_hosts_where_it_lowered_it():
    old = sys.get_int_max_str_digits()
    sys.set_int_max_str_digits(640)
    try:
        with pytest.raises(ParseError) as info:
            session().run(f"x = {'7' * 1000}")
    finally:
        sys.set_int_max_str_digits(old)
    assert info.value.message.startswith("this integer has 1000 digits, more than the 640 an integer")


def test_integers_beyond_int64_stay_exact_as_in_python():
    s = session()
    assert s.run("99999999999999999999 + 1") == 10 ** 20
    assert s.run("1" + "0" * 4299) == 10 ** 4299         # Python's own limit: 4300 digits
    assert s.run("1" + "0" * 400 + ".0") == float("inf")   # a float literal beyond 1.8e308
    assert s.run("tensor(99999999999999999999)").item() == 1e20


def test_no_lark_exception_leaves_parse(monkeypatch):
    def broken(self, meta, children):
        raise ZeroDivisionError("a rule failed")

    monkeypatch.setattr(P._Builder, "name", P.v_args(meta=True)(broken))
    with pytest.raises(ParseError) as info:
        P.parse("2 + c")
    assert "internal error of the parser" in info.value.message
    assert (info.value.line, info.value.column) == (1, 5)
    monkeypatch.undo()

    class Exploding:
        def parse(self, text):
            raise P.LarkError("something inside Lark")

    monkeypatch.setattr(P, "get_parser", lambda: Exploding())
    with pytest.raises(ParseError) as info:
        P.parse("1 + 1")
    assert "internal error of the parser" in info.value.message
    assert P.is_incomplete("1 +") is False


# ---- 7. -c takes any source -----------------------------------------------------

def _autodsl(*args):
    return subprocess.run([sys.executable, "-m", "autodsl", *args], capture_output=True, text=True, timeout=120,
                          check=False)


@pytest.mark.parametrize("args, out", [
    (["-c", "-pi"], "-3.141592653589793"),
    (["-c", "-1"], "-1"),
    (["-c", "--1"], "1"),
    (["-c=-pi"], "-3.141592653589793"),
    (["--dtype", "float32", "-c", "-x", "--set", "x=2"], "-2"),
])
def test_dash_c_takes_a_source_that_starts_with_a_dash(args, out):
    p = _autodsl(*args)
    assert p.returncode == 0, p.stderr
    assert p.stdout.strip() == out


def test_dash_c_without_a_source_is_still_bad_usage():
    p = _autodsl("-c")
    assert p.returncode == 2 and "-c" in p.stderr and "Traceback" not in p.stderr
