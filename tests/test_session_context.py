"""Session.context(): the one way into a session's run context, as a ``with`` block (entered
again, after or inside its own block) and as a decorator; what it changes while inside (the
run context, Python's recursion limit, the collector's young threshold) comes back as the
host had it when each entry began."""
from __future__ import annotations

import gc
import sys

import pytest

import autodsl as ad
from autodsl.context import current


@pytest.fixture
def host_threshold():
    before = gc.get_threshold()
    if not 0 < before[0] < 300_000:
        pytest.skip("needs a young threshold under the session's")
    yield before
    gc.set_threshold(*before)


def _inside(s) -> bool:
    return current() is s._ctx and gc.get_threshold()[0] == 300_000 and sys.getrecursionlimit() >= 20_000


def test_with_gives_the_session_and_puts_everything_back(host_threshold):
    s = ad.Session(echo=False)
    limit, outer = sys.getrecursionlimit(), current()
    with s.context() as inside:
        assert inside is s and _inside(s)
        assert s.run("2 * 21") == 42
        assert _inside(s)
    assert (gc.get_threshold(), sys.getrecursionlimit(), current()) == (host_threshold, limit, outer)


def test_one_context_entered_again_after_its_block_keeps_what_the_host_set_since(host_threshold):
    s = ad.Session(echo=False)
    cm = s.context()
    with cm:
        assert _inside(s)
    changed = (host_threshold[0] + 1, *host_threshold[1:])
    gc.set_threshold(*changed)
    with cm:
        assert _inside(s)
    assert gc.get_threshold() == changed
    gc.set_threshold(0, *host_threshold[1:])        # the host's collector off: left off inside too
    with cm:
        assert current() is s._ctx and gc.get_threshold()[0] == 0
    assert gc.get_threshold()[0] == 0


def test_one_context_entered_inside_its_own_block_stays_in_the_session_until_the_outer_ends(host_threshold):
    s = ad.Session(echo=False)
    limit, outer = sys.getrecursionlimit(), current()
    cm = s.context()
    with cm:
        with cm:
            assert _inside(s)
        assert _inside(s)
        assert s.run("x = 3\nx * x") == 9
    assert (gc.get_threshold(), sys.getrecursionlimit(), current()) == (host_threshold, limit, outer)


def test_as_a_decorator_each_call_runs_inside_the_session(host_threshold):
    s = ad.Session(echo=False)
    s.run("def twice(x) { return 2 * x }")
    seen = []

    @s.context()
    def work(v):
        """Doubles v."""
        seen.append(_inside(s))
        return s["twice"](v)

    assert work.__name__ == "work" and work.__doc__ == "Doubles v."
    assert work(4) == 8 and work(5) == 10
    assert seen == [True, True]
    assert gc.get_threshold() == host_threshold and current() is not s._ctx


def test_an_error_inside_leaves_nothing_changed_and_the_session_usable(host_threshold):
    s = ad.Session(echo=False)
    s.run("a = 1")
    limit = sys.getrecursionlimit()
    with pytest.raises(ValueError, match="from the block"):
        with s.context():
            raise ValueError("from the block")
    with pytest.raises(ad.DSLError):
        s.run("b = undefined_name")
    assert (gc.get_threshold(), sys.getrecursionlimit()) == (host_threshold, limit)
    assert s.run("a + 1") == 2


def test_what_a_host_function_sets_inside_a_run_is_kept(host_threshold):
    s = ad.Session(echo=False)
    limit = sys.getrecursionlimit()
    mine = (host_threshold[0] + 7, *host_threshold[1:])

    def tune():
        gc.set_threshold(*mine)
        sys.setrecursionlimit(limit + 1234)
        return 1

    s["tune"] = tune
    try:
        assert s.run("tune() + 1") == 2
        assert gc.get_threshold() == mine and sys.getrecursionlimit() == limit + 1234
        s.run("2 * 3")          # and a run that sets nothing puts back what the host has now
        assert gc.get_threshold() == mine and sys.getrecursionlimit() == limit + 1234
    finally:
        sys.setrecursionlimit(limit)


def test_a_host_function_that_sets_the_older_generations_only_keeps_the_young_threshold(host_threshold):
    s = ad.Session(echo=False)
    s["tune"] = lambda: gc.set_threshold(gc.get_threshold()[0], 50, 60)
    s.run("tune()")
    assert gc.get_threshold() == (host_threshold[0], 50, 60)
