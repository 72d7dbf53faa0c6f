"""Bugs found by trying the restructured package as a new user would (branch `try`).

Each test states the behaviour that should hold and is marked ``xfail(strict=True)``
while the bug is there: the suite stays green, and a fix makes the test pass, which
fails the run until the mark is removed. The reproducers are deterministic (threads
are ordered with events, not timing).
"""
from __future__ import annotations

import io
import threading
import warnings

import numpy as np
import pytest

import autodsl as ad


# -- create_graph through prod -------------------------------------------------------------

def test_prod_with_a_zero_is_twice_differentiable():
    # d/dx prod(x) at x = (0, 2, 3) is (6, 0, 0); the Hessian is PyTorch's [[0,3,2],[3,0,0],[2,0,0]]
    x = ad.tensor([0.0, 2.0, 3.0], requires_grad=True)
    g, = ad.grad(ad.prod(x), [x], create_graph=True)
    assert g.requires_grad
    h = ad.hessian(ad.prod, ad.tensor([0.0, 2.0, 3.0]))
    np.testing.assert_allclose(h.numpy(), [[0.0, 3.0, 2.0], [3.0, 0.0, 0.0], [2.0, 0.0, 0.0]])


@pytest.mark.parametrize("values, dim", [([[0.0, 2.0, 3.0], [1.5, 0.0, 0.0]], 1),
                                         ([[0.0, 2.0, 3.0], [1.5, 0.0, 0.5]], 0),
                                         ([[0.0, 2.0], [0.0, 3.0]], None)])
def test_prod_with_zeros_second_order_matches_torch(values, dim):
    torch = pytest.importorskip("torch")

    def objective(m):
        return (lambda v: m.prod(v)) if dim is None else (lambda v: m.prod(v, dim=dim).sum())
    x = ad.tensor(values, requires_grad=True)
    tx = torch.tensor(values, dtype=torch.float64, requires_grad=True)
    g, = ad.grad(objective(ad)(x), [x], create_graph=True)
    tg, = torch.autograd.grad(objective(torch)(tx), [tx], create_graph=True)
    np.testing.assert_allclose(g.numpy(), tg.detach().numpy())
    w = np.arange(1.0, 1.0 + np.size(values)).reshape(np.shape(values))
    gg, = ad.grad((g * ad.tensor(w)).sum(), [x])
    tgg, = torch.autograd.grad((tg * torch.tensor(w)).sum(), [tx])
    np.testing.assert_allclose(gg.numpy(), tgg.numpy())


def test_prod_without_zeros_is_twice_differentiable():
    h = ad.hessian(ad.prod, ad.tensor([1.0, 2.0, 3.0]))
    np.testing.assert_allclose(h.numpy(), [[0.0, 3.0, 2.0], [3.0, 0.0, 1.0], [2.0, 1.0, 0.0]])


# -- sessions in threads --------------------------------------------------------------------

@pytest.mark.xfail(strict=True, reason="Session.run swaps warnings.showwarning and the filters "
                   "with warnings.catch_warnings, which is not thread-safe (session.py)")
def test_sessions_in_two_threads_restore_the_warning_handler():
    original_show, original_filters = warnings.showwarning, list(warnings.filters)
    a_in, b_in, a_out = threading.Event(), threading.Event(), threading.Event()
    sa, sb = ad.Session(echo=False), ad.Session(echo=False)
    sa["pause"] = lambda: (a_in.set(), b_in.wait(10)) and None
    sb["pause"] = lambda: (b_in.set(), a_out.wait(10)) and None

    def run_a():
        sa.run("pause()")
        a_out.set()

    ta = threading.Thread(target=run_a)
    tb = threading.Thread(target=lambda: (a_in.wait(10), sb.run("pause()")))
    ta.start(); tb.start(); ta.join(10); tb.join(10)
    try:
        # A entered, then B; A left, then B: both handlers must be gone
        assert warnings.showwarning is original_show
        assert warnings.filters == original_filters
    finally:
        warnings.showwarning = original_show
        warnings.filters[:] = original_filters


def test_no_grad_in_one_thread_does_not_reach_a_session_in_another():
    entered, done = threading.Event(), threading.Event()

    def hold_no_grad():
        with ad.no_grad():
            entered.set()
            done.wait(10)

    t = threading.Thread(target=hold_no_grad)
    t.start()
    entered.wait(10)
    try:
        s = ad.Session(echo=False)
        recorded = s.run("x = tensor(1.0, requires_grad=true); (x * 2).requires_grad")
    finally:
        done.set()
        t.join(10)
    assert recorded is True


def test_a_backward_in_one_thread_does_not_make_numpy_warn_in_another():
    inside, release = threading.Event(), threading.Event()
    x = ad.tensor(1.0, requires_grad=True)

    def hook(g):
        inside.set()
        release.wait(10)

    x.register_hook(hook)
    t = threading.Thread(target=lambda: (x * 2).backward())
    t.start()
    inside.wait(10)
    try:
        with np.errstate(all="warn"), warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            ad.tensor([1.0]) / ad.tensor([0.0])
    finally:
        release.set()
        t.join(10)
    assert [str(w.message) for w in caught] == []


# -- the language ---------------------------------------------------------------------------

def test_print_end_none_is_the_default_newline():
    out = io.StringIO()
    ad.Session(out=out).run('print(1, end=none)\nprint(2, 3, sep=none)')
    assert out.getvalue() == "1\n2 3\n"


# -- what why() explains ----------------------------------------------------------------------

def test_jacobian_does_not_replace_the_last_backward():
    s = ad.Session(echo=False)
    s.run("w = tensor([1.0, -2.0], requires_grad=true)\nloss = relu(w).sum()\nloss.backward()")
    before = s.run("why(w).reason")
    s.run("def sq(t) { return t * t }\nj = jacobian(sq, w)")
    assert s.run("why(w).reason") == before
