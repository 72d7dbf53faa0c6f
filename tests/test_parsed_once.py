"""Note [parsed once] (session.py): Session.run keeps the Programs it parsed, so running one
source again skips the parser, and gives what a fresh parse gives: the same values, the same
error positions, and a parse error every time the text has one."""
import numpy as np
import pytest

import autodsl as ad
from autodsl import session as session_module

LOOP = """\
x = tensor(x0, requires_grad=true, dtype=float64)
y = x
for i in range(n) { y = relu(y*0.999 + 0.001) }
y.backward()
x.grad
"""


@pytest.fixture
def parses(monkeypatch):
    """The texts the session's parser was given, in order."""
    seen = []
    real = session_module.parse

    def counting(source, filename="<string>"):
        seen.append(source)
        return real(source, filename)
    monkeypatch.setattr(session_module, "parse", counting)
    return seen


def _chain_grad(x0: float, n: int) -> float:
    """d/dx of n steps of y = relu(0.999 y + 0.001), from x0, in float64."""
    y, g = x0, 1.0
    for _ in range(n):
        z = y * 0.999 + 0.001
        g = g * 0.999 if z > 0 else 0.0
        y = max(z, 0.0)
    return g


def test_a_source_run_again_is_parsed_once_and_computes_as_the_first_time(parses):
    s = ad.Session(echo=False)
    got = []
    for x0, n in ((0.5, 100), (-3.0, 100), (0.25, 70)):     # (a compiled loop body from 64 iterations)
        s["x0"], s["n"] = x0, n
        got.append(float(s.run(LOOP).numpy()))
    assert parses == [LOOP]
    np.testing.assert_allclose(got, [_chain_grad(0.5, 100), _chain_grad(-3.0, 100), _chain_grad(0.25, 70)],
                               rtol=1e-12)
    assert got[1] == 0.0 and got[0] != got[2]


def test_an_error_in_a_rerun_names_its_line_and_column_as_the_first_run_did():
    s = ad.Session(echo=False)
    source = "a = tensor([1.0, 2.0])\nb = a + tensor([1.0, 2.0, 3.0])\n"
    errors = []
    for _ in range(2):
        with pytest.raises(ad.DSLError) as info:
            s.run(source)
        errors.append(str(info.value))
    assert errors[0] == errors[1]
    assert errors[0].startswith("<string>:2:7:") and "b = a + tensor([1.0, 2.0, 3.0])\n          ^" in errors[0]


def test_a_parse_error_is_raised_on_every_run_and_nothing_is_kept(parses):
    s = ad.Session(echo=False)
    for _ in range(2):
        with pytest.raises(ad.ParseError):
            s.run("x = (1 +\n")
    assert len(parses) == 2
    assert s.run("1 + 2") == 3


def test_the_file_name_is_part_of_what_is_kept(parses):
    s = ad.Session(echo=False)
    for name in ("a.ad", "b.ad", "a.ad"):
        with pytest.raises(ad.DSLError) as info:
            s.run("y = undefined_name + 1", filename=name)
        assert name in str(info.value)
    assert len(parses) == 2


def test_a_session_keeps_a_bounded_number_of_sources(parses):
    s = ad.Session(echo=False)
    sources = [f"v = {i} * 2" for i in range(session_module._KEPT_PROGRAMS + 4)]
    for src in sources:
        s.run(src)
    assert s["v"] == 2 * (len(sources) - 1)
    assert len(parses) == len(sources)
    s.run(sources[-1])                  # kept: the newest ones stay
    s.run(sources[0])                   # dropped: parsed again
    assert parses[len(sources):] == [sources[0]]
    big = "w = 1\n" + "# filler\n" * (session_module._KEPT_SOURCE // 9 + 1)
    s.run(big)
    s.run(big)
    assert parses.count(big) == 2       # too long to keep
    assert s["w"] == 1


def test_a_program_run_from_a_host_function_gives_the_outer_one_its_positions_back():
    # the outer program's later nodes cut their positions from its own text, on the run with the
    # inner one and on a rerun of the kept Program without it
    s = ad.Session(echo=False)
    calls = []

    def helper():
        if not calls:
            s.run("a = 1\nb = 2\nc = 3\n", filename="inner.ad")
        calls.append(1)
        return 0.0
    s["helper"] = helper
    source = "helper()\nw = tensor(2.0, requires_grad=true)\ny = w * 3\n"
    for _ in range(2):
        s.run(source, filename="outer.ad")
        pos = s["y"].grad_fn.pos
        assert (pos[0], pos[1], pos[3]) == ("outer.ad", 3, "w * 3")
    assert len(calls) == 2 and s["c"] == 3
