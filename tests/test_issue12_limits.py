"""Issue 12, break 5: resource limits an embedding application can set.

``Session(time_limit=, step_limit=, memory_limit=)`` and ``autodsl --time-limit/--memory-limit/
--step-limit``: a run past a limit stops with LimitError at the line it reached, and the session
stays usable. Times here are generous bounds on runs that would otherwise never end; no test
asserts a speed.
"""
from __future__ import annotations

import subprocess
import sys
import threading

import numpy as np
import pytest

import autodsl
from autodsl import Session

# (getattr: so that on a version without limits each test fails on what it checks)
LimitError = getattr(autodsl, "LimitError", autodsl.DSLError)

LOOP = "x = 1\nfor i in range(10^12) {}\ny = 2"
EXPONENTIAL = "def f(n) {\n  if n == 0 { return 1 }\n  return f(n - 1) + f(n - 1)\n}\nr = f(100)"


def _limit_error(session, source) -> LimitError:
    with pytest.raises(LimitError) as info:
        session.run(source)
    return info.value


# -- steps ---------------------------------------------------------------------

def test_step_limit_stops_an_endless_loop_at_its_line_and_keeps_the_session():
    s = Session(step_limit=10_000)
    e = _limit_error(s, LOOP)
    assert "step limit of 10,000 steps" in e.message
    assert (e.line, e.column) == (2, 1)
    assert "^" in e.render() and "for i in range(10^12)" in e.render()
    assert s["x"] == 1 and "y" not in s          # bindings before the failing statement stay
    assert 0 < s["i"] < 10_000
    assert s.run("x + 41") == 42                 # a new run counts from zero again
    assert s.run("t = 0\nfor k in range(1000) { t = t + k }\nt") == sum(range(1000))


def test_step_limit_counts_calls_of_an_exponential_recursion():
    s = Session(step_limit=5_000)
    e = _limit_error(s, EXPONENTIAL)
    assert "step limit" in e.message
    assert e.line in (2, 3)                      # inside f's body, where it had got to
    assert any("in f()" in c for c in e.calls)
    assert s.run("f(4)") == 16                   # the function is still there and works


def test_while_true_with_an_empty_body_counts_iterations():
    s = Session(step_limit=100)
    e = _limit_error(s, "while true {}")
    assert (e.line, e.column) == (1, 1)


# -- time ----------------------------------------------------------------------

def test_time_limit_stops_an_endless_loop():
    s = Session(time_limit=0.3)
    e = _limit_error(s, LOOP)
    assert "time limit of 0.3 s" in e.message
    assert e.line == 2
    assert s["x"] == 1
    assert s.run("x * 3") == 3                   # a fresh deadline for the next run


def test_time_limit_stops_an_exponential_recursion():
    s = Session(time_limit=0.3)
    e = _limit_error(s, EXPONENTIAL)
    assert "time limit" in e.message and e.line in (2, 3)


def test_time_limit_holds_in_a_thread_without_signals():
    out = {}

    def work():
        s = Session(time_limit=0.3)
        try:
            s.run(LOOP)
        except LimitError as e:
            out["error"] = e
        out["after"] = s.run("x + 1")

    t = threading.Thread(target=work)
    t.start()
    t.join(60)                                  # generous: the run itself stops after 0.3 s
    assert not t.is_alive()
    assert "time limit" in out["error"].message and out["after"] == 2


def test_time_limit_holds_for_a_host_call_into_a_script_function():
    s = Session(time_limit=0.3)
    s.run("def spin() { while true {} }\ndef ok(a) { return a * 2 }")
    with pytest.raises(LimitError, match="time limit"):
        s["spin"]()
    assert s["ok"](21) == 42                    # each host call has its own deadline


def test_a_host_hook_run_by_backward_counts_steps():
    s = Session(step_limit=1_000)
    s.run("w = tensor(1.0, requires_grad=true)\n"
          "def h(g) { for i in range(10^9) {}\n return g }\n"
          "w.register_hook(h)\nloss = w * 3")
    with pytest.raises(LimitError, match="step limit"):
        s["loss"].backward()


def test_time_limit_holds_between_the_nodes_of_a_long_backward_and_commits_nothing():
    s = Session()
    s.run("w = tensor(1.0, requires_grad=true)\ny = w\nfor i in range(50000) { y = y * 1.0 }")
    s.time_limit = 0.01
    e = _limit_error(s, "y.backward()")
    assert "time limit" in e.message and (e.line, e.column) == (1, 1)
    assert s["w"].grad is None                  # a pass stopped halfway leaves .grad as it was
    s.time_limit = None
    s.run("y.backward()")
    assert s["w"].grad.item() == 1.0


def test_no_limits_by_default_and_from_the_python_api():
    s = Session()
    assert (s.time_limit, s.step_limit, s.memory_limit) == (None, None, None)
    with s.context() as inside:
        assert inside._ctx.limits is None
    assert autodsl.context.current().limits is None
    assert s.run("t = 0\nfor k in range(20000) { t = t + 1 }\nt") == 20000


# -- memory ----------------------------------------------------------------------

def test_memory_limit_refuses_zeros_larger_than_it_at_once_with_the_size():
    s = Session(memory_limit="1M")
    e = _limit_error(s, "a = 1\nz = zeros([10^7])")
    assert "zeros() would need 80.0 MB" in e.message and "memory limit of 1.0 MB" in e.message
    assert (e.line, e.column) == (2, 5)
    assert s["a"] == 1 and "z" not in s
    assert s.run("sum(zeros([1000]) + 1)").item() == 1000.0


def test_memory_limit_counts_what_the_session_holds():
    s = Session(memory_limit=1_000_000)
    s.run("x = zeros([10^5])")                   # 800 KB
    e = _limit_error(s, "y = ones([10^5])")
    assert "already holds about 800.0 KB" in e.message
    s.run("x = none\ny = ones([10^5])")          # x's storage is free again
    assert float(s["y"].sum().item()) == 1e5


def test_memory_limit_counts_the_values_a_graph_saved_for_backward():
    s = Session(memory_limit="200M")
    # each y * w saves y (8 MB) for backward: only the graph holds them, not a variable
    e = _limit_error(s, "w = ones([10^6], requires_grad=true)\ny = w\nfor i in range(1000) { y = y * w }")
    assert "mul's result would need 8.0 MB" in e.message and "already holds about" in e.message
    assert 10 < s["i"] < 30
    s.run("y.sum().backward()")                # what was made is still there and differentiable
    assert s["w"].grad.shape == (10**6,)
    s.run("y = none\nw.grad = none\nz = ones([10^6]) * 2")   # the graph is gone with y


def test_held_bytes_counts_each_storage_once():
    from autodsl.core.limits import held_bytes
    s = Session(echo=False)
    s.run("w = ones([1000], requires_grad=true)\ny = (w * w).exp()\nv = y[0:10]\nd = w.detach()\n"
          "e = w.expand([5, 1000])\nl = [y, y, \"abc\"]\ny.sum().backward()")
    # w, w.grad and y: 8000 bytes each; views, detached aliases, the list's repeats and exp's
    # saved output (y's own storage) add nothing but the list and the string themselves
    n = held_bytes(s.namespace.values())
    assert 24_000 <= n < 24_000 + 1_000


def test_memory_limit_stops_string_doubling_early():
    s = Session(memory_limit="10M")
    e = _limit_error(s, 's = "ab"\nfor i in range(40) { s = s + s }')
    assert "this string would need" in e.message and e.line == 2
    assert 1_000_000 < len(s["s"]) <= 10_000_000     # stopped at the limit, not at 2 TB
    with pytest.raises(LimitError):
        s.run('t = f"{s}{s}{s}"')


def test_memory_limit_stops_integer_squaring_early():
    s = Session(memory_limit="100K")
    e = _limit_error(s, "x = 3\nfor i in range(40) { x = x * x }")
    assert "this integer would need" in e.message and e.line == 2
    assert s["x"] == 3 ** (2 ** s["i"])         # the last product that fitted, exact
    assert s.run("6 * 7") == 42


def test_a_huge_format_width_or_precision_is_checked_before_formatting():
    s = Session(memory_limit="1M")
    e = _limit_error(s, 't = f"{1:>2000000}"')
    assert "this formatted text would need 2.0 MB" in e.message and (e.line, e.column) == (1, 7)
    assert len(s.run('f"{1:>100000}"')) == 100000
    assert s.run('f"{3.14159:8.2f}|{7:>5}"') == "    3.14|    7"
    with pytest.raises(LimitError, match="100.0 GB"):
        Session().run('f"{1.5:.99999999999f}"')


def test_memory_limit_checks_broadcasting_matmul_and_ops_on_expanded_views():
    s = Session(memory_limit="100M")
    s.run("a = zeros([10^4, 1])\nb = zeros([1, 10^4])\nm = zeros([10^4, 10])\nn = zeros([10, 10^4])")
    assert "add's result would need 800.0 MB" in _limit_error(s, "a + b").message
    assert "matmul's result would need 800.0 MB" in _limit_error(s, "m @ n").message
    assert "8.0 TB" in _limit_error(s, "ones([1]).expand([10^12]).exp()").message
    # a reduction of an expanded view allocates nothing large: it runs
    assert s.run("ones([1]).expand([10^7]).sum()").item() == 1e7
    assert s.run("(m @ n[:, :10]).shape") == (10_000, 10)


def test_memory_limit_checks_einsum_outer_products_and_tolist():
    s = Session(memory_limit="100M", echo=False)
    s.run("a = arange(10^4) * 1.0")
    assert "einsum's result would need 800.0 MB" in _limit_error(s, 'einsum("i,j->ij", a, a)').message
    assert s.run('einsum("i,i->", a, a)').item() == float(np.sum(np.arange(10**4, dtype=float) ** 2))
    assert "tolist() would need" in _limit_error(s, "zeros([10^7]).tolist()").message
    assert s.run("len(zeros([1000]).tolist())") == 1000


def test_without_a_memory_limit_an_allocation_larger_than_the_machine_fails_with_its_size():
    s = Session()
    e = _limit_error(s, "zeros([10^12])")
    assert "zeros() would need 8.0 TB" in e.message and "MemoryError" not in e.render()
    e = _limit_error(s, "zeros([10^6, 1]) + zeros([1, 10^7])")
    assert "80.0 TB" in e.message and "add" in e.message
    with pytest.raises(LimitError, match="8.0 TB"):
        autodsl.zeros(10**12)                   # the Python API too


def test_a_for_loop_over_a_huge_number_of_rows_is_refused_before_making_them():
    # (first: before issue 12 this made 10^9 row views until the machine ran out of memory)
    assert hasattr(autodsl, "LimitError")
    e = _limit_error(Session(), "for r in zeros([10^9, 0]) {}")
    assert "the rows this loop goes over would need 400.0 GB" in e.message and e.column == 10
    e = _limit_error(Session(memory_limit="1M"), "for r in zeros([10^5, 0]) {}")
    assert "memory limit of 1.0 MB" in e.message
    assert Session(memory_limit="1M").run("t = 0\nfor r in ones([3, 2]) { t = t + r.sum() }\nt").item() == 6.0


def test_memory_limit_spellings():
    from autodsl.core.limits import format_size, parse_size
    assert Session(memory_limit="512M").memory_limit == 512_000_000
    assert Session(memory_limit="2G").memory_limit == 2_000_000_000
    assert Session(memory_limit="64KiB").memory_limit == 65_536
    assert Session(memory_limit=12345).memory_limit == 12345
    assert Session(memory_limit=1e9).memory_limit == 10**9
    assert Session(step_limit=1e6).step_limit == 10**6
    assert parse_size("1.5GB") == 1_500_000_000 and format_size(8 * 10**12) == "8.0 TB"
    for bad in ("lots", "-1", "0", "5X", True, 1.5):
        with pytest.raises(autodsl.ValueError_, match="memory_limit"):
            Session(memory_limit=bad)
    with pytest.raises(autodsl.ValueError_, match="time_limit"):
        Session(time_limit=-1)
    with pytest.raises(autodsl.ValueError_, match="step_limit"):
        Session(step_limit=2.5)


def test_limits_leave_results_unchanged():
    src = "w = tensor([1.0, 2.0, 3.0], requires_grad=true)\nl = (w * w).sum()\nl.backward()\nw.grad"
    free = Session().run(src)
    bounded = Session(time_limit=60, step_limit=10**6, memory_limit="1G").run(src)
    np.testing.assert_array_equal(np.asarray(bounded.tolist()), np.asarray(free.tolist()))


def test_the_repl_gives_each_input_its_own_limits_and_goes_on():
    import io

    from autodsl.cli.repl import Repl
    out = io.StringIO()
    r = Repl(Session(out=out, step_limit=1_000), out=out)
    for text in ("x = 5", "for i in range(10^12) {}", "x + 1", "for i in range(500) {}", "i"):
        r.handle(text)
    shown = out.getvalue()
    assert "<input 2>:1:1: the run took more than its step limit of 1,000 steps" in shown
    assert shown.rstrip().splitlines()[-2:] == ["6", "499"]   # a fresh count for each input


# -- the command line ------------------------------------------------------------

def _autodsl(*args, timeout=120):
    return subprocess.run([sys.executable, "-m", "autodsl", *args], check=False, capture_output=True, text=True,
                          timeout=timeout)


def test_cli_step_and_time_limits():
    r = _autodsl("--step-limit", "1000", "-c", "for i in range(10^12) {}")
    assert r.returncode == 1 and "step limit of 1,000 steps" in r.stderr and "Traceback" not in r.stderr
    r = _autodsl("--time-limit", "0.5", "-c", "x = 1\nwhile true {}")
    assert r.returncode == 1 and "<string>:2:1: the run took longer than its time limit of 0.5 s" in r.stderr


def test_cli_memory_limit_and_bad_sizes():
    r = _autodsl("--memory-limit", "1M", "-c", "x = zeros([10^7])")
    assert r.returncode == 1 and "zeros() would need 80.0 MB, more than the memory limit of 1.0 MB" in r.stderr
    r = _autodsl("--memory-limit", "512M", "-c", "print(sum(ones([10])))")
    assert r.returncode == 0 and r.stdout.strip() == "tensor(10.)"
    for bad in ("lots", "0", "12Q"):
        r = _autodsl("--memory-limit", bad, "-c", "1")
        assert r.returncode == 2 and "is not a size" in r.stderr and "Traceback" not in r.stderr
    r = _autodsl("--time-limit", "soon", "-c", "1")
    assert r.returncode == 2 and "not a number of seconds" in r.stderr
    r = _autodsl("--step-limit", "-3", "-c", "1")
    assert r.returncode == 2 and "not a number of steps" in r.stderr
