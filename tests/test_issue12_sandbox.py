"""Issue 12, breaks 1 and 10: a session's code runs under the session's context wherever the
host calls it from (files permission, dtype, recursion limit), and each session draws its
random numbers from its own generator (a script's seed() leaves the host's numbers alone)."""
import sys
import threading

import numpy as np
import pytest

import autodsl
from autodsl.context import DEFAULT, current
from autodsl.errors import DSLError


@pytest.fixture
def sandbox(tmp_path, monkeypatch):
    """A session that may not write files, run from an empty directory."""
    monkeypatch.chdir(tmp_path)
    return autodsl.Session(files=False, echo=False)


def _no_files(path):
    return sorted(p.name for p in path.iterdir()) == []


# ---- break 1: the sandbox holds outside run() --------------------------------------------

def test_script_function_called_from_python_may_not_write_files(sandbox, tmp_path):
    sandbox.run('def f(x) { dot(x, "e.dot"); return x * 2 }')
    with pytest.raises(DSLError, match="may not write files"):
        sandbox["f"](autodsl.ones(2, requires_grad=True))
    assert _no_files(tmp_path)


def test_hook_run_by_the_hosts_backward_may_not_write_files(sandbox, tmp_path):
    sandbox.run('x = tensor([1., 2.], requires_grad=true)\n'
                'def h(g) { dot(g, "escaped.dot"); return g }\n'
                'x.register_hook(h)\n'
                'loss = (x * x).sum()')
    with pytest.raises(DSLError, match="may not write files"):
        sandbox["loss"].backward()
    assert _no_files(tmp_path)


def test_hook_run_by_the_hosts_grad_may_not_write_files(sandbox, tmp_path):
    sandbox.run('x = tensor([1., 2.], requires_grad=true)\n'
                'def h(g) { dot(g, "escaped.dot"); return g }\n'
                'x.register_hook(h)\n'
                'loss = (x * x).sum()')
    with pytest.raises(DSLError, match="may not write files"):
        autodsl.grad(sandbox["loss"], [sandbox["x"]])
    assert _no_files(tmp_path)


def test_hook_run_by_the_hosts_backward_gives_its_gradient():
    s = autodsl.Session(echo=False)
    s.run('x = tensor([1., 2.], requires_grad=true)\n'
          'def h(g) { return g * 100 }\n'
          'x.register_hook(h)\n'
          'loss = (x * x).sum()')
    s["loss"].backward()
    np.testing.assert_array_equal(s["x"].grad.numpy(), [200.0, 400.0])


def test_compiled_function_called_from_python_may_not_write_files(sandbox, tmp_path):
    sandbox.run('def f(x) { dot(x, "c.dot"); return x * 2 }\ng = compile(f)')
    for _ in range(2):
        with pytest.raises(DSLError, match="may not write files"):
            sandbox["g"](autodsl.ones(2, requires_grad=True))
    assert _no_files(tmp_path)


def test_script_function_called_from_python_uses_the_sessions_dtype():
    s = autodsl.Session(dtype="float32", echo=False)
    s.run("def f() { return ones(2) + 0.5 }")
    y = s["f"]()
    assert y.dtype is autodsl.float32
    np.testing.assert_array_equal(y.numpy(), np.array([1.5, 1.5], dtype=np.float32))
    # the host's own default is untouched, before and after the call
    assert autodsl.ones(2).dtype is autodsl.float64


def test_compiled_function_called_from_python_uses_the_sessions_dtype():
    s = autodsl.Session(dtype="float32", echo=False)
    s.run("def f(x) { return x * 2 + ones(2) }\ng = compile(f)")
    x = autodsl.tensor([1.0, 2.0], dtype="float32")
    results = [s["g"](x) for _ in range(3)]          # a capture, then replays
    for y in results:
        assert y.dtype is autodsl.float32
        np.testing.assert_array_equal(y.numpy(), np.array([3.0, 5.0], dtype=np.float32))
    assert s["g"].stats["replayed"] >= 1


def test_a_session_function_compiled_by_the_host_runs_in_the_session(sandbox, tmp_path):
    sandbox.dtype = "float32"
    sandbox.run('def f(x) { return x * 2 + ones(2) }\ndef w(x) { dot(x, "w.dot"); return x }')
    g = autodsl.compile(sandbox["f"])
    x = autodsl.tensor([1.0, 2.0], dtype="float32")
    for _ in range(3):
        assert g(x).dtype is autodsl.float32
    assert g.stats["replayed"] >= 1
    with pytest.raises(DSLError, match="may not write files"):
        autodsl.compile(sandbox["w"])(x)
    assert _no_files(tmp_path)


def test_script_function_called_from_python_has_the_sessions_recursion_limit():
    s = autodsl.Session(echo=False)
    s.run("def depth(n) { if n == 0 { return 0 }\n return depth(n - 1) + 1 }")
    limit = sys.getrecursionlimit()
    assert s["depth"](150) == 150       # as deep as inside run(): 150 nested calls
    assert sys.getrecursionlimit() == limit     # the host's limit is back
    assert s.run("depth(150)") == 150
    with pytest.raises(DSLError, match="too many nested calls"):
        s["depth"](1000)


def test_function_of_one_session_called_by_another_runs_in_its_own():
    sandbox = autodsl.Session(files=False, dtype="float32", echo=False)
    sandbox.run('def f(x) { return ones(2) }')
    other = autodsl.Session(echo=False)
    other["g"] = sandbox["f"]
    assert other.run("g(1)").dtype is autodsl.float32


def test_repr_str_and_format_of_a_session_function_show_it_as_the_session_does():
    s = autodsl.Session(dtype="float32", echo=False)
    s.run("def f(w=ones(2)) { return w }")
    inside = s.run("f")
    assert repr(s["f"]) == str(s["f"]) == f"{s['f']}" == str(inside)
    assert "float32" not in repr(s["f"]), repr(s["f"])     # the session's own dtype is not noted
    assert repr(s["f"]) == "<function f(w=tensor([1., 1.]))>"


def test_host_call_from_another_thread_runs_in_the_session(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    s = autodsl.Session(files=False, dtype="float32", echo=False)
    s.run('def f() { return ones(2) }\ndef w(x) { dot(x, "t.dot") }')
    seen = {}

    def work():
        seen["dtype"] = s["f"]().dtype
        try:
            s["w"](autodsl.ones(2, requires_grad=True))
            seen["w"] = "wrote the file"
        except DSLError as e:
            seen["w"] = str(e)

    t = threading.Thread(target=work)
    t.start()
    t.join()
    assert seen["dtype"] is autodsl.float32
    assert "may not write files" in seen["w"]
    assert _no_files(tmp_path)


def test_a_host_call_leaves_the_hosts_context_as_it_was():
    s = autodsl.Session(dtype="float32", echo=False)
    s.run("def f() { set_default_dtype(float32)\n return rand(2) }")
    before = sys.getrecursionlimit()
    assert s["f"]().dtype is autodsl.float32
    assert current() is DEFAULT
    assert autodsl.get_default_dtype() is autodsl.float64
    assert autodsl.rand(2).dtype is autodsl.float64
    assert sys.getrecursionlimit() == before


def test_python_api_calls_run_under_the_default_context():
    # code that is not a session's runs as before, under the Python API's context
    g = autodsl.compile(lambda x: x * 2 + autodsl.ones(2))
    y = g(autodsl.tensor([1.0, 2.0]))
    assert y.dtype is autodsl.float64
    np.testing.assert_array_equal(y.numpy(), [3.0, 5.0])


# ---- break 10: per-session random generators ---------------------------------------------

def _draws(n=4):
    return autodsl.rand(n).numpy()


def test_a_scripts_seed_does_not_reset_the_hosts_generator():
    autodsl.seed(0)
    first = _draws()
    expected_next = _draws()
    autodsl.seed(0)
    assert np.array_equal(_draws(), first)
    s = autodsl.Session(echo=False)
    s.run("seed(1)\nr = rand(4)")
    assert np.array_equal(_draws(), expected_next)      # as if the session had not run


def test_the_python_api_stays_reproducible():
    autodsl.seed(0)
    a = autodsl.randn(3, dtype=autodsl.float64).numpy()
    autodsl.seed(0)
    np.testing.assert_array_equal(autodsl.randn(3, dtype=autodsl.float64).numpy(), a)
    np.testing.assert_array_equal(a, np.random.default_rng(0).standard_normal(3))


def test_sessions_seeded_alike_draw_the_same_numbers_and_apart_from_each_other():
    a, b = autodsl.Session(echo=False), autodsl.Session(echo=False)
    a.run("seed(7)\nu = rand(5)")
    b.run("seed(7)")
    b.run("u = rand(5)")
    np.testing.assert_array_equal(a["u"].numpy(), b["u"].numpy())
    np.testing.assert_array_equal(a["u"].numpy(), np.random.default_rng(7).random(5))
    # two sessions share no generator: drawing in one does not move the other's
    a.run("seed(3)")
    b.run("seed(3)")
    a.run("skip = rand(10)")
    np.testing.assert_array_equal(b.run("rand(2)").numpy(), np.random.default_rng(3).random(2))


def test_a_session_function_called_from_python_draws_from_the_sessions_generator():
    s = autodsl.Session(echo=False)
    s.run("def draw() { return rand(3) }\nseed(5)")
    autodsl.seed(0)
    host_next = np.random.default_rng(0).random(3)
    np.testing.assert_array_equal(s["draw"]().numpy(), np.random.default_rng(5).random(3))
    np.testing.assert_array_equal(_draws(3), host_next)
